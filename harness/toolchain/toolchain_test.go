package toolchain

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
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
		if StrictTests() {
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

// LookPath finds tools outside PATH in ToolDirs (here CUDA_HOME/bin), the
// way doctor does, and only executable files.
func TestLookPathUsesToolDirs(t *testing.T) {
	home := t.TempDir()
	bin := filepath.Join(home, "bin")
	if err := os.MkdirAll(bin, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(bin, "kevolve-fake-ncu"), []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(bin, "kevolve-fake-noexec"), []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Setenv("CUDA_HOME", home)
	for name, want := range map[string]string{
		"kevolve-fake-ncu":    filepath.Join(bin, "kevolve-fake-ncu"),
		"kevolve-fake-noexec": "",
		"kevolve-no-such":     "",
		"sh":                  mustLook(t, "sh"),
	} {
		if got := LookPath(name); got != want {
			t.Errorf("LookPath(%q) = %q, want %q", name, got, want)
		}
	}
}

func mustLook(t *testing.T, name string) string {
	p, err := exec.LookPath(name)
	if err != nil {
		t.Skipf("%s not on PATH", name)
	}
	return p
}

// LookPathIn is PATH first, then the folders given, in order, and only
// executables; a path is not looked for elsewhere. Which is PATH alone.
func TestLookPathIn(t *testing.T) {
	first, second := t.TempDir(), t.TempDir()
	for _, f := range []struct {
		dir, name string
		mode      os.FileMode
	}{{first, "kevolve-fake-cli", 0o755}, {second, "kevolve-fake-cli", 0o755}, {first, "kevolve-fake-noexec", 0o644}, {second, "kevolve-fake-late", 0o755}} {
		if err := os.WriteFile(filepath.Join(f.dir, f.name), []byte("#!/bin/sh\n"), f.mode); err != nil {
			t.Fatal(err)
		}
	}
	dirs := []string{first, second}
	for name, want := range map[string]string{
		"kevolve-fake-cli":     filepath.Join(first, "kevolve-fake-cli"),
		"kevolve-fake-late":    filepath.Join(second, "kevolve-fake-late"),
		"kevolve-fake-noexec":  "",
		"sub/kevolve-fake-cli": "",
		"sh":                   mustLook(t, "sh"),
	} {
		if got := LookPathIn(name, dirs); got != want {
			t.Errorf("LookPathIn(%q) = %q, want %q", name, got, want)
		}
	}
	if _, err := Which("kevolve-fake-cli"); err == nil {
		t.Error("Which looked outside PATH")
	}
	if p, err := Which(filepath.Join(first, "kevolve-fake-cli")); err != nil || p != filepath.Join(first, "kevolve-fake-cli") {
		t.Errorf("Which(path) = %q, %v", p, err)
	}
}
