package toolchaintest

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// .ci/deps (make test's first step) on a machine missing every optional
// package: --check installs nothing, names each missing package with the
// tests it skips and the install command, and fails only in strict mode.
func TestDepsScriptNamesWhatSkips(t *testing.T) {
	script, err := filepath.Abs("../../../.ci/deps")
	if err != nil {
		t.Fatal(err)
	}
	// A PATH with only what the script itself runs: bash, id and python3.
	bin := t.TempDir()
	for _, name := range []string{"bash", "id", "python3"} {
		p, err := exec.LookPath(name)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if err := os.Symlink(p, filepath.Join(bin, name)); err != nil {
			t.Fatal(err)
		}
	}
	cases := []struct {
		strict string
		wantRC int
	}{{"", 0}, {"0", 0}, {"1", 1}}
	for _, c := range cases {
		cmd := exec.Command(filepath.Join(bin, "bash"), script, "--check")
		cmd.Env = []string{"PATH=" + bin, "KEVOLVE_TEST_STRICT=" + c.strict}
		out, err := cmd.CombinedOutput()
		rc := 0
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			rc = ee.ExitCode()
		} else if err != nil {
			t.Fatal(err)
		}
		if rc != c.wantRC {
			t.Errorf("strict=%q: rc %d, want %d\n%s", c.strict, rc, c.wantRC, out)
		}
		for _, want := range []string{"clang-19: HIP", "chromium: the search report", "TestReportInChromium",
			"slurm-wlm: ", "TestSlurmLocalhost", "munge: ", "apt-get install -y gcc make npm",
			"clang-19 chromium slurm-wlm munge"} {
			if !strings.Contains(string(out), want) {
				t.Errorf("strict=%q: output lacks %q:\n%s", c.strict, want, out)
			}
		}
	}
}

// With everything present (the development machine, CI after installing)
// the script says so and succeeds even in strict mode.
func TestDepsScriptAllPresent(t *testing.T) {
	for _, b := range []string{"gcc", "make", "npm", "clang-19", "chromium", "slurmctld", "munged"} {
		if _, err := exec.LookPath(b); err != nil {
			Require(t, errors.New(b+" missing: run .ci/deps as root"))
		}
	}
	cmd := exec.Command("../../../.ci/deps", "--check")
	cmd.Env = append(os.Environ(), "KEVOLVE_TEST_STRICT=1")
	out, err := cmd.CombinedOutput()
	if err != nil || !strings.Contains(string(out), "every system package the tests need is here") {
		t.Fatalf("deps --check: %v\n%s", err, out)
	}
}
