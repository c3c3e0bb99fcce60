package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/kevolve/kevolve-mcp/search/fleet"
)

// The container build file makes the image the Kubernetes manifest names,
// on a CPU and a CUDA base, with the FTS5 build and the Python the binary
// looks for first.
func TestDockerfileBuildsTheManifestImage(t *testing.T) {
	b, err := os.ReadFile("Dockerfile")
	if err != nil {
		t.Fatal(err)
	}
	df := string(b)
	repo, _, _ := strings.Cut(fleet.DefaultImage, ":")
	mk, err := os.ReadFile("../../Makefile")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{repo, "ARG BASE=ubuntu:24.04", "nvidia/cuda:", "-tags sqlite_fts5", "/opt/torch/.venv",
		"KEVOLVE_PYTHON=/opt/torch/.venv/bin/python3", `ENTRYPOINT ["kevolve-mcp"]`, "torch==${TORCH}", "ARG TORCH=2.11.0", "ARG TRITON=3.6.0"} {
		if !strings.Contains(df, want) {
			t.Errorf("Dockerfile lacks %q", want)
		}
	}
	for _, want := range []string{"IMAGE ?= " + repo, "-f cmd/kevolve-mcp/Dockerfile", "whl/cu130"} {
		if !strings.Contains(string(mk), want) {
			t.Errorf("Makefile's image targets lack %q", want)
		}
	}
}

// make dist builds a versioned archive for this host (and each other
// architecture whose C cross compiler is installed), with SHA-256 sums
// that check, holding a binary that names its version.
func TestMakeDist(t *testing.T) {
	if testing.Short() {
		t.Skip("builds a release binary")
	}
	out := t.TempDir()
	cmd := exec.Command("make", "-C", "../..", "dist", "DIST_DIR="+out, "VERSION=v0.0.0-test", "DIST_ARCHES=amd64 arm64")
	if o, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("make dist: %v\n%s", err, o)
	}
	name := "kevolve-mcp-v0.0.0-test-linux-" + runtime.GOARCH
	if _, err := os.Stat(filepath.Join(out, name+".tar.gz")); err != nil {
		t.Fatal(err)
	}
	sums := exec.Command("sha256sum", "-c", "SHA256SUMS")
	sums.Dir = out
	if o, err := sums.CombinedOutput(); err != nil || !strings.Contains(string(o), name+".tar.gz: OK") {
		t.Fatalf("sha256sum -c: %v\n%s", err, o)
	}
	if o, err := exec.Command("tar", "-C", out, "-xzf", filepath.Join(out, name+".tar.gz")).CombinedOutput(); err != nil {
		t.Fatalf("untar: %v %s", err, o)
	}
	v, err := exec.Command(filepath.Join(out, name, "kevolve-mcp"), "--version").Output()
	if err != nil || !strings.Contains(string(v), "v0.0.0-test (commit ") {
		t.Fatalf("--version: %q %v", v, err)
	}
}

// A binary built without the sqlite_fts5 tag says so at start-up, with
// the fix, in the server's log and in doctor.
func TestNoFTS5BuildWarns(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary without FTS5")
	}
	bin := filepath.Join(t.TempDir(), "kv-nofts5")
	build := exec.Command("go", "build", "-o", bin, ".")
	build.Env = append(os.Environ(), "GOFLAGS=-buildvcs=false")
	if o, err := build.CombinedOutput(); err != nil {
		t.Fatalf("build: %v\n%s", err, o)
	}
	dir := t.TempDir()
	srv := exec.Command(bin, "--db", filepath.Join(dir, "k.db"), "--stdio")
	srv.Stdin = strings.NewReader("") // the client hangs up at once
	o, _ := srv.CombinedOutput()
	for _, want := range []string{"built without FTS5", "lacks FTS5", "go build -tags sqlite_fts5"} {
		if !strings.Contains(string(o), want) {
			t.Errorf("server log lacks %q:\n%s", want, o)
		}
	}
	doc := exec.Command(bin, "--db", filepath.Join(dir, "k.db"), "--python", "/nonexistent", "doctor")
	o, _ = doc.CombinedOutput()
	if !strings.Contains(string(o), "WARNING: this binary's SQLite lacks FTS5") || !strings.Contains(string(o), "make build") {
		t.Errorf("doctor does not warn:\n%s", o)
	}
	// The tagged build (the test's own binary) does not warn.
	o, _ = exec.Command(binary, "--python", "/nonexistent", "doctor").CombinedOutput()
	if strings.Contains(string(o), "lacks FTS5") {
		t.Errorf("the FTS5 build warns:\n%s", o)
	}
}
