package report

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/kevolve/kevolve-mcp/harness/toolchain"
	"github.com/kevolve/kevolve-mcp/harness/toolchain/toolchaintest"
)

// findChromium is Debian's chromium (or KEVOLVE_CHROMIUM).
func findChromium() (string, error) {
	if p := os.Getenv("KEVOLVE_CHROMIUM"); p != "" {
		if _, err := exec.LookPath(p); err != nil {
			return "", fmt.Errorf("KEVOLVE_CHROMIUM=%s: %w", p, err)
		}
		return p, nil
	}
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome"} {
		if p, err := exec.LookPath(name); err == nil {
			return p, nil
		}
	}
	return "", fmt.Errorf("no headless Chromium on PATH (Debian: apt-get install -y chromium; or set KEVOLVE_CHROMIUM)")
}

// outDir is where the screenshot stays: KEVOLVE_REPORT_OUT when set (kept
// after the test), else the test's temporary directory.
func outDir(t *testing.T) string {
	if d := os.Getenv("KEVOLVE_REPORT_OUT"); d != "" {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
		return d
	}
	return t.TempDir()
}

// runChromium runs headless Chromium with its own profile directory and a
// deadline; the whole process group dies with the context.
func runChromium(t *testing.T, bin string, args ...string) (stdout, stderr string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	base := []string{"--headless", "--disable-gpu", "--no-sandbox", "--no-first-run", "--no-default-browser-check",
		"--disable-extensions", "--disable-dev-shm-usage", "--hide-scrollbars", "--user-data-dir=" + t.TempDir(),
		"--enable-logging=stderr", "--v=0", "--virtual-time-budget=5000"}
	cmd := exec.CommandContext(ctx, bin, append(base, args...)...)
	toolchain.KillGroupOnCancel(cmd)
	var so, se bytes.Buffer
	cmd.Stdout, cmd.Stderr = &so, &se
	if err := cmd.Run(); err != nil {
		t.Fatalf("chromium %v: %v\nstderr:\n%s", args, err, tail(se.String(), 3000))
	}
	return so.String(), se.String()
}

func tail(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[len(s)-n:]
}

// consoleProblems returns Chromium's console lines from its stderr log
// (`INFO:CONSOLE:1] "Uncaught Error: ...", source: ...`). The page logs
// nothing when all is well, so every console line is a problem.
func consoleProblems(stderr string) []string {
	var out []string
	for _, l := range strings.Split(stderr, "\n") {
		if strings.Contains(l, ":CONSOLE") {
			out = append(out, l)
		}
	}
	return out
}

// The console check is not blind: a page that logs an error and throws is
// caught.
func TestConsoleCheckSeesErrors(t *testing.T) {
	bin, err := findChromium()
	toolchaintest.Require(t, err)
	page := filepath.Join(t.TempDir(), "bad.html")
	os.WriteFile(page, []byte(`<html><body><script>console.error("boom-console"); throw new Error("boom-throw");</script></body></html>`), 0o644)
	_, stderr := runChromium(t, bin, "--dump-dom", "file://"+page)
	p := strings.Join(consoleProblems(stderr), "\n")
	if !strings.Contains(p, "boom-console") || !strings.Contains(p, "Uncaught Error: boom-throw") {
		t.Fatalf("the console check missed a console.error and an uncaught error; stderr:\n%s", tail(stderr, 2000))
	}
}

// A run of a few hundred nodes still loads clean, with every node drawn.
func TestLargeReportInChromium(t *testing.T) {
	bin, err := findChromium()
	toolchaintest.Require(t, err)
	run, nodes, ceil := synthRun(300, 11)
	dir := outDir(t)
	page := filepath.Join(dir, "report-300.html")
	if err := WriteFile(page, run, nodes, ceil); err != nil {
		t.Fatal(err)
	}
	dom, stderr := runChromium(t, bin, "--dump-dom", "file://"+page)
	assertCleanLoad(t, dom, stderr, len(nodes))
	shot := filepath.Join(dir, "report-300.png")
	runChromium(t, bin, "--window-size=1440,1500", "--screenshot="+shot, "file://"+page)
	if st, err := os.Stat(shot); err != nil || st.Size() < 20_000 {
		t.Fatalf("no screenshot: %v", err)
	}
	t.Logf("report: %s\nscreenshot: %s", page, shot)
}

// assertCleanLoad checks that the page's script ran to the end without an
// error of any kind (window errors, rejections, console.error and policy
// violations are written into the DOM by the page itself; Chromium's console
// log is checked too) and drew one tree node per run node.
func assertCleanLoad(t *testing.T, dom, stderr string, nodes int) {
	t.Helper()
	if !strings.Contains(dom, `data-ready="1"`) {
		t.Fatalf("the page's script did not finish (data-ready != 1); console:\n%s\nDOM head:\n%s", strings.Join(consoleProblems(stderr), "\n"), clip(dom, 3000))
	}
	if m := regexp.MustCompile(`data-js-errors="(\d+)"`).FindStringSubmatch(dom); m == nil || m[1] != "0" {
		box := regexp.MustCompile(`(?s)<pre id="js-errors"[^>]*>(.*?)</pre>`).FindStringSubmatch(dom)
		t.Fatalf("the page recorded script errors: %v %v", m, box)
	}
	if p := consoleProblems(stderr); len(p) > 0 {
		t.Fatalf("console errors:\n%s", strings.Join(p, "\n"))
	}
	if got := strings.Count(dom, `<g class="node `); got != nodes {
		t.Fatalf("tree has %d node elements, the run has %d nodes", got, nodes)
	}
	if !strings.Contains(dom, fmt.Sprintf(`data-nodes="%d"`, nodes)) {
		t.Fatalf("the script did not load %d nodes", nodes)
	}
}

func TestReportInChromium(t *testing.T) {
	bin, err := findChromium()
	toolchaintest.Require(t, err)

	run, nodes, ceil := synthRun(32, 7)
	// Hostile strings: code that closes the script element, markup in notes,
	// checks and the problem name. None may run or become an element.
	nodes[4].Code += "\n# </script><script>document.body.setAttribute('data-pwned','1')</script>\n"
	nodes[4].Notes = `<img src=x onerror="document.body.setAttribute('data-pwned','2')">`
	nodes[6].Checks = append(nodes[6].Checks, Check{Name: "<b>bold</b>", Detail: "</textarea><svg onload=alert(1)>"})
	run.Problem = `llm/rmsnorm<script>document.body.setAttribute('data-pwned','3')</script>`

	dir := outDir(t)
	page := filepath.Join(dir, "report.html")
	if err := WriteFile(page, run, nodes, ceil); err != nil {
		t.Fatal(err)
	}
	url := "file://" + page + "#node=4" // select the hostile node so its code is in the DOM

	dom, stderr := runChromium(t, bin, "--dump-dom", url)
	assertCleanLoad(t, dom, stderr, len(nodes))
	if strings.Contains(dom, `data-pwned="`) {
		t.Fatal("injected markup ran")
	}
	if !strings.Contains(dom, `data-selected="4"`) {
		t.Fatalf("the script did not select #4 from the URL")
	}
	// The hostile code is shown as text in the diff pane.
	if !strings.Contains(dom, "# &lt;/script&gt;&lt;script&gt;document.body.setAttribute") {
		t.Fatal("node 4's code (with </script>) is not shown as text in the detail pane")
	}
	if strings.Contains(dom, "<svg onload") || strings.Contains(dom, "<img src=\"x\"") {
		t.Fatal("markup from node data became elements")
	}

	// The screenshot people look at: the same run without the hostile strings.
	run, nodes, ceil = synthRun(32, 7)
	clean := filepath.Join(dir, "report-clean.html")
	if err := WriteFile(clean, run, nodes, ceil); err != nil {
		t.Fatal(err)
	}
	dom, stderr = runChromium(t, bin, "--dump-dom", "file://"+clean+"#selftest")
	assertCleanLoad(t, dom, stderr, len(nodes))
	// Clicks: every tree node, chart and roofline dot and table row selects
	// its node, and the code and diff tabs switch.
	m := regexp.MustCompile(`data-selftest="([^"]*)"`).FindStringSubmatch(dom)
	pv, _, _ := buildPage(run, nodes, ceil, t0)
	clickable := len(pv.Tree.Nodes) + len(pv.Evals.Dots) + len(pv.Time.Dots) + len(pv.Roof.Dots) + len(pv.Top)
	if want := fmt.Sprintf("ok %d/%d", clickable, clickable); m == nil || m[1] != want {
		t.Fatalf("click self-test: %v, want %q", m, want)
	}
	t.Logf("click self-test: %s", m[1])
	shot := filepath.Join(dir, "report.png")
	_, stderr = runChromium(t, bin, "--window-size=1440,1700", "--screenshot="+shot, "file://"+clean)
	st, err := os.Stat(shot)
	if err != nil || st.Size() < 20_000 {
		t.Fatalf("no screenshot (%v); stderr:\n%s", err, tail(stderr, 2000))
	}
	t.Logf("hostile report: %s\nreport: %s\nscreenshot: %s (%d KiB)", page, clean, shot, st.Size()/1024)
}

// The page's own error hook works: corrupt its data block and the DOM says
// so (data-ready stays 0, the error box holds the message), which is what
// assertCleanLoad relies on.
func TestPageReportsItsOwnErrors(t *testing.T) {
	bin, err := findChromium()
	toolchaintest.Require(t, err)
	run, nodes, ceil := synthRun(5, 1)
	var b bytes.Buffer
	if err := WriteHTML(&b, run, nodes, ceil); err != nil {
		t.Fatal(err)
	}
	broken := regexp.MustCompile(`(?s)(<script type="application/json" id="kv-data">).*?(</script>)`).ReplaceAllString(b.String(), "${1}{not json${2}")
	page := filepath.Join(t.TempDir(), "broken.html")
	os.WriteFile(page, []byte(broken), 0o644)
	dom, _ := runChromium(t, bin, "--dump-dom", "file://"+page)
	if !strings.Contains(dom, `data-ready="0"`) || !strings.Contains(dom, `data-js-errors="1"`) || !strings.Contains(dom, "init: SyntaxError") {
		t.Fatalf("a failing init was not reported in the DOM:\n%s", clip(dom, 2000))
	}
}
