package toolchain

import (
	"context"
	"os"
	"strings"
	"testing"
)

func TestGCCFoundWithVersion(t *testing.T) {
	g := Find(context.Background(), "gcc")
	if !g.Found || g.Version == "" || !strings.Contains(g.Version, ".") {
		t.Fatalf("gcc: %+v", g)
	}
}

// A tool that is not installed must say so, with a hint, not fail.
func TestMissingToolSaysWhy(t *testing.T) {
	t.Setenv("PATH", t.TempDir())
	h := Find(context.Background(), "hipcc")
	if _, err := os.Stat("/opt/rocm/bin/hipcc"); err == nil {
		t.Skip("ROCm installed here")
	}
	if h.Found || !strings.Contains(h.Missing, "ROCm") {
		t.Fatalf("hipcc: %+v", h)
	}
}

func TestProbePython(t *testing.T) {
	py := os.Getenv(EnvPython)
	if py == "" {
		if os.Getenv("KEVOLVE_TEST_STRICT") != "" {
			t.Fatal("KEVOLVE_PYTHON not set")
		}
		t.Skip("KEVOLVE_PYTHON not set")
	}
	env := ProbePython(context.Background(), py)
	if !env.Found || !strings.HasPrefix(env.Torch, "2.") {
		t.Fatalf("probe: %+v", env)
	}
	if os.Getenv("KEVOLVE_GPU") == "1" && !env.CUDAUsable {
		t.Fatalf("GPU expected: %+v", env)
	}
	bad := ProbePython(context.Background(), "/nonexistent/python")
	if bad.Found || bad.Missing == "" {
		t.Fatalf("bad python: %+v", bad)
	}
}
