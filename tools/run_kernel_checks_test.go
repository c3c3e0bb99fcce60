package tools

import (
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/mark3labs/mcp-go/server"

	"github.com/kevolve/kevolve-mcp/harness"
	"github.com/kevolve/kevolve-mcp/harness/toolchain/toolchaintest"
	"github.com/kevolve/kevolve-mcp/harness/worker"
	"github.com/kevolve/kevolve-mcp/tools/toolstest"
)

// alwaysNoted is a check that exists only in this test: one module laid
// over the embedded worker Python, in the integrity stage.
const alwaysNoted = `"""A check only the test has: it passes, and says so."""
NAME = "always_noted"
STAGE = "integrity"
VERDICT = "integrity_violation"
DESCRIPTION = "A check that exists only in the registry test; it always passes."


def run(st):
    return True, "noted by the test's own check module"
`

// A check added as one module, with no other file edited, runs in a real
// evaluation (its result lists it), the kevolve://checks catalogue lists
// it and run_kernel's description counts it.
func TestRunKernelListsAnAddedCheck(t *testing.T) {
	src := worker.Overlay(worker.Embedded(), fstest.MapFS{"checks/always_noted.py": {Data: []byte(alwaysNoted)}})
	ev, err := harness.NewEvaluatorWithSource(harness.EvalConfig{Python: toolchaintest.Python(t), CacheDir: t.TempDir(),
		Logger: slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))}, src)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ev.Close() })

	const listed = "- always_noted (integrity): A check that exists only in the registry test; it always passes."
	tool := RunKernel(ev, nil)
	srv := server.NewMCPServer("test", "0", server.WithToolCapabilities(false), server.WithResourceCapabilities(false, false))
	srv.AddTools(tool)
	srv.AddResources(ChecksResource(ev))
	c := toolstest.Connect(t, srv)
	if catalogue := toolstest.ReadText(t, c, checksURI); !strings.Contains(catalogue, listed) {
		t.Errorf("%s does not list the added check:\n%s", checksURI, catalogue)
	}
	embedded, err := harness.EmbeddedChecks()
	if err != nil {
		t.Fatal(err)
	}
	added := fmt.Sprintf("all %d checks", len(embedded)+1)
	if !strings.Contains(tool.Tool.Description, added) || !strings.Contains(tool.Tool.Description, checksURI) {
		t.Errorf("run_kernel's description does not count the added check (%q) or name %s:\n%s", added, checksURI, tool.Tool.Description)
	}
	if strings.Contains(checksMarkdown(embedded), "always_noted") {
		t.Error("the embedded registry lists the test's check")
	}

	hostile := filepath.Join("..", "harness", "testdata", "hostile")
	target := "cpu"
	if os.Getenv("KEVOLVE_GPU") == "1" {
		target = "nvidia"
	}
	res := toolstest.Call(t, c, "run_kernel", map[string]any{"reference": filepath.Join(hostile, "ref_normalize.py"),
		"candidate": filepath.Join(hostile, "persistent_buffer.py"), "target": target, "skip_timing": true})
	var r harness.EvalResult
	toolstest.Decode(t, res, &r)
	if r.Verdict != harness.VerdictPass {
		t.Fatalf("verdict %s: %s", r.Verdict, toolstest.Text(res))
	}
	for _, ch := range r.Checks {
		if ch.Name == "always_noted" {
			if !ch.Passed || ch.Detail != "noted by the test's own check module" {
				t.Errorf("always_noted: %+v", ch)
			}
			return
		}
	}
	t.Errorf("the result's checks lack always_noted: %+v", r.Checks)
}
