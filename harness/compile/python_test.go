package compile

import (
	"context"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/kevolve/kevolve-mcp/harness/toolchain/toolchaintest"
)

// TestPythonLoaders runs the kevolve package's own unit tests (signature
// parser, the loader base load_cuda and load_hip share, load_c, load_cuda
// compile paths, hipify and load_hip, the load_inline precompiled header;
// launches where a GPU is present) in the harness's Python, so `go test`
// covers them.
func TestPythonLoaders(t *testing.T) {
	py := needPython(t)
	root, err := filepath.Abs(filepath.Join("..", "worker", "py"))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(toolchaintest.Context(t))
	defer cancel()
	cmd := exec.CommandContext(ctx, py, "-m", "unittest", "-v", "kevolve.tests.test_sig", "kevolve.tests.test_loader", "kevolve.tests.test_load_c", "kevolve.tests.test_fastcall", "kevolve.tests.test_load_cuda", "kevolve.tests.test_nvcc", "kevolve.tests.test_load_hip", "kevolve.tests.test_pch", "kevolve.tests.test_inline_ro", "kevolve.tests.test_extcache", "kevolve.tests.test_bindings", "kevolve.tests.test_bindcache", "kevolve.tests.test_precheck")
	cmd.Dir = root
	cmd.Env = append(cmd.Environ(), "PYTHONPATH="+root, "KEVOLVE_CACHE_DIR="+t.TempDir(), "PYTHONDONTWRITEBYTECODE=1")
	out, err := cmd.CombinedOutput()
	t.Logf("%s", out)
	if err != nil {
		t.Fatalf("python unit tests failed: %v", err)
	}
}
