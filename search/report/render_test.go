package report

import (
	"bytes"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"html"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

func render(t *testing.T, run Run, nodes []Node, ceil Ceilings) string {
	t.Helper()
	var b bytes.Buffer
	if err := writeHTML(&b, run, nodes, ceil, t0); err != nil {
		t.Fatal(err)
	}
	return b.String()
}

// The static half of the XSS and offline guarantees (the Chromium test is
// the live half).
func TestHTMLEscapesEverythingAndFetchesNothing(t *testing.T) {
	run, nodes, ceil := synthRun(12, 3)
	evil := `</script><script>alert("x")</script><!--`
	nodes[2].Code = evil + "\n" + nodes[2].Code
	nodes[3].Notes = `<img src=x onerror=alert(1)>`
	nodes[3].Message = "\u2028</SCRIPT >"
	nodes[4].Checks = []Check{{Name: `"><svg onload=alert(1)>`, Detail: "</style>"}}
	nodes[5].ID = `5"><b>` // ids are attribute values too
	nodes[6].Parents = []string{nodes[5].ID}
	nodes[7].Operator = "</title><script>"
	run.Problem, run.Device = "<b>p</b>", "</title>"
	page := render(t, run, nodes, ceil)

	if n := strings.Count(strings.ToLower(page), "<script"); n != 2 {
		t.Fatalf("%d <script elements, want 2 (the data and the page's own)", n)
	}
	for _, bad := range []string{"<img src=x", "<svg onload", `<b>p</b>`, `5"><b>`, "</title><script>"} {
		if strings.Contains(page, bad) {
			t.Errorf("unescaped %q in the page", bad)
		}
	}
	// The data block is valid JSON that carries the hostile strings intact.
	m := regexp.MustCompile(`(?s)<script type="application/json" id="kv-data">(.*?)</script>`).FindStringSubmatch(page)
	if m == nil {
		t.Fatal("no data block")
	}
	if strings.Contains(m[1], "\u2028") {
		t.Error("raw U+2028 in the data block")
	}
	var d pageData
	if err := json.Unmarshal([]byte(m[1]), &d); err != nil {
		t.Fatalf("data block: %v", err)
	}
	found := false
	for _, n := range d.Nodes {
		if strings.HasPrefix(n.Code, evil) {
			found = true
		}
	}
	if !found || len(d.Nodes) != 12 {
		t.Fatal("the hostile code did not survive the round trip")
	}
	// Offline: nothing is fetched. The only URL is the SVG namespace (and there
	// is none in our templates as the SVG is inline HTML).
	if regexp.MustCompile(`(?i)(src|href)\s*=\s*["']?(https?:|//)|url\(\s*["']?(https?:|//)|@import`).MatchString(page) {
		t.Fatal("the page references an external resource")
	}
	// The CSP names exactly the page's script by hash.
	sm := regexp.MustCompile(`(?s)<script>(.*?)</script>`).FindStringSubmatch(page)
	page = html.UnescapeString(page) // the policy is an attribute value
	sum := sha256.Sum256([]byte(sm[1]))
	if !strings.Contains(page, "script-src 'sha256-"+base64.StdEncoding.EncodeToString(sum[:])+"'") || !strings.Contains(page, "default-src 'none'") {
		t.Fatal("the Content-Security-Policy does not pin the page's script")
	}
}

func TestHTMLOddInputs(t *testing.T) {
	nan, inf := math.NaN(), math.Inf(1)
	cases := map[string][]Node{
		"no nodes":       nil,
		"only pending":   {{ID: "1", CreatedAt: t0}},
		"nothing passed": {{ID: "1", Verdict: "compile_error", FinishedAt: t0}, {ID: "2", Parents: []string{"1"}, Verdict: "crash", FinishedAt: t0}},
		"NaN and Inf everywhere": {{ID: "1", Verdict: "pass", Fitness: nan, SpeedupEager: &nan, PctOfSol: &inf, FLOPs: inf, Bytes: 0,
			Timing: &Timing{MedianS: nan}, FinishedAt: t0}, {ID: "2", Verdict: "pass", Fitness: inf, Timing: &Timing{MedianS: 0}, FLOPs: 1, Bytes: 1, FinishedAt: t0}},
		"unknown verdict and duplicate ids": {{ID: "1", Verdict: "weird verdict!"}, {ID: "1", Verdict: "pass", Fitness: 1}},
	}
	for name, nodes := range cases {
		t.Run(name, func(t *testing.T) {
			for _, ceil := range []Ceilings{{}, {PeakFLOPS: map[string]float64{"fp32": 1e12}, MemBandwidth: 1e11, Dtype: "fp32"}} {
				page := render(t, Run{ID: "r"}, nodes, ceil)
				if strings.Contains(page, "NaN") || strings.Contains(page, "Inf") {
					t.Fatalf("NaN/Inf leaked into the page")
				}
				if got := strings.Count(page, `<g class="node `); got != len(nodes) {
					t.Fatalf("%d tree nodes, want %d", got, len(nodes))
				}
			}
		})
	}
}

func TestRooflinePlacesTimedNodes(t *testing.T) {
	run, nodes, ceil := synthRun(32, 7)
	p, g, _ := buildPage(run, nodes, ceil, t0)
	timed := 0
	for _, n := range g.nodes {
		if n.Verdict != "" && n.Timing != nil {
			timed++
		}
	}
	if p.Roof.Empty != "" || p.Roof.Placed != timed || len(p.Roof.Dots) != timed {
		t.Fatalf("roofline placed %d (%d dots), want %d; empty=%q", p.Roof.Placed, len(p.Roof.Dots), timed, p.Roof.Empty)
	}
	// Every node shares the problem's intensity, so every dot sits on one
	// vertical line, below the roof there (the synthetic run is honest).
	x := p.Roof.Dots[0].X
	for _, d := range p.Roof.Dots {
		if math.Abs(d.X-x) > 0.01 {
			t.Fatalf("dot %s at x=%.1f, want %.1f", d.ID, d.X, x)
		}
	}
	if len(p.Roof.Marks) != 2 {
		t.Fatalf("want the SOL and eager marks, got %+v", p.Roof.Marks)
	}
	if last := p.Roof.Dots[len(p.Roof.Dots)-1]; last.ID != p.BestID || !strings.Contains(last.Class, "best") {
		t.Fatalf("the best node is not drawn last and marked: %+v", last)
	}
	// Without ceilings: no roofline, and a reason.
	p, _, _ = buildPage(run, nodes, Ceilings{}, t0)
	if p.Roof.Empty == "" || len(p.Roof.Dots) != 0 {
		t.Fatal("a roofline was drawn without ceilings")
	}
}

func TestHeaderAndTreeMarks(t *testing.T) {
	run, nodes, ceil := synthRun(32, 7)
	p, g, best := buildPage(run, nodes, ceil, t0)
	b := g.nodes[best]
	for i, n := range g.nodes {
		if n.Verdict == "pass" && fitnessOf(n) > fitnessOf(b) {
			t.Fatalf("node %s beats the best %s", n.ID, b.ID)
		}
		v := p.Tree.Nodes[i]
		if v.ID != n.ID || !strings.Contains(v.Class, "v-"+cssToken(n.Verdict)) {
			t.Fatalf("tree node %d: %+v for %s/%s", i, v, n.ID, n.Verdict)
		}
	}
	lineage := 0
	for _, v := range p.Tree.Nodes {
		if strings.Contains(v.Class, "lineage") {
			lineage++
		}
	}
	if lineage != len(g.lineage(best)) {
		t.Fatalf("%d nodes marked on the lineage, want %d", lineage, len(g.lineage(best)))
	}
	want := map[string]string{"speedup vs start": "2.16×", "vs eager": "2.38×", "evaluations": "31 / 42", "wall time": "7m 24s"}
	for _, c := range p.Cards {
		if w, ok := want[c.Label]; ok && c.Value != w {
			t.Errorf("card %q = %q, want %q", c.Label, c.Value, w)
		}
	}
	total := 0
	for _, v := range p.Verdicts {
		total += v.N
	}
	if total != 32 {
		t.Fatalf("verdict counts sum to %d", total)
	}
}

func TestWriteFile(t *testing.T) {
	run, nodes, ceil := synthRun(32, 7)
	path := filepath.Join(t.TempDir(), "sub", "report.html")
	if err := WriteFile(path, run, nodes, ceil); err != nil {
		t.Fatal(err)
	}
	if b, err := os.ReadFile(path); err != nil || !bytes.HasPrefix(b, []byte("<!DOCTYPE html>")) {
		t.Fatalf("report not written: %v", err)
	}
	if left, _ := filepath.Glob(filepath.Join(filepath.Dir(path), ".report-*")); len(left) != 0 {
		t.Fatalf("temporary files left: %v", left)
	}
	if err := WriteFile(filepath.Join(path, "x.html"), run, nodes, ceil); err == nil {
		t.Fatal("writing under a file succeeded")
	}
}

// Work without FLOPs (a copy) is placed by bandwidth instead.
func TestBandwidthViewForFLOPlessWork(t *testing.T) {
	run, nodes, ceil := synthRun(20, 5)
	for i := range nodes {
		nodes[i].FLOPs = 0
	}
	p, g, _ := buildPage(run, nodes, ceil, t0)
	timed := 0
	for _, n := range g.nodes {
		if n.Verdict != "" && n.Timing != nil {
			timed++
		}
	}
	if p.Roof.Title != "Bandwidth" || p.Roof.Placed != timed || len(p.Roof.Dots) != timed || p.Roof.Empty != "" {
		t.Fatalf("bandwidth view: %q placed %d of %d, empty %q", p.Roof.Title, p.Roof.Placed, timed, p.Roof.Empty)
	}
	for _, d := range p.Roof.Dots {
		if d.Y < p.Roof.Plot.Y || d.Y > p.Roof.Plot.Y+p.Roof.Plot.H || d.X < p.Roof.Plot.X || d.X > p.Roof.Plot.X+p.Roof.Plot.W {
			t.Fatalf("dot %s outside the plot: %+v", d.ID, d)
		}
	}
	page := render(t, run, nodes, ceil)
	if !strings.Contains(page, "attained bytes/s") || strings.Contains(page, `class="ridge"`) {
		t.Fatal("bandwidth view not rendered as such")
	}
}
