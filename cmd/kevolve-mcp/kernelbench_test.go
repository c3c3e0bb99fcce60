package main

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kevolve/kevolve-mcp/harness/kernelbench"
	"github.com/kevolve/kevolve-mcp/harness/toolchain"
	"github.com/kevolve/kevolve-mcp/harness/toolchain/toolchaintest"
)

const kbTestdata = "../../harness/kernelbench/testdata"

func TestKernelBenchRunCLI(t *testing.T) {
	bad := []struct {
		name string
		args []string
		want string
	}{
		{"no run", []string{"kernelbench"}, "name a subcommand: run"},
		{"no kb", []string{"kernelbench", "run", "--reference-as-candidate"}, "--kb DIR is required"},
		{"both candidate kinds", []string{"kernelbench", "run", "--kb", kbTestdata + "/kb", "--candidates", "x", "--reference-as-candidate"}, "either --candidates"},
		{"neither candidate kind", []string{"kernelbench", "run", "--kb", kbTestdata + "/kb"}, "either --candidates"},
		{"bad level", []string{"kernelbench", "run", "--kb", kbTestdata + "/kb", "--level", "x", "--reference-as-candidate"}, "--level"},
		{"unquoted glob", []string{"kernelbench", "run", "--kb", kbTestdata + "/kb", "--candidates", "a.py", "b.py"}, "quote a glob"},
	}
	for _, tc := range bad {
		t.Run(tc.name, func(t *testing.T) {
			out, err := exec.Command(binary, append([]string{"--db", filepath.Join(t.TempDir(), "k.db")}, tc.args...)...).CombinedOutput()
			if err == nil || !strings.Contains(string(out), tc.want) {
				t.Fatalf("err %v, output lacks %q:\n%s", err, tc.want, out)
			}
		})
	}

	py, err := toolchain.FindPython()
	toolchaintest.Require(t, err)
	dir := t.TempDir()
	cmd := exec.Command(binary, "--python", py, "--db", filepath.Join(dir, "k.db"), "kernelbench", "run",
		"--kb", kbTestdata+"/kb", "--level", "1,2", "--candidates", kbTestdata+"/candidates/level*/*.py",
		"--target", "cpu", "--jsonl", filepath.Join(dir, "r.jsonl"), "--json")
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	var sum kernelbench.Summary
	if err := json.Unmarshal(out, &sum); err != nil {
		t.Fatalf("summary %s: %v", out, err)
	}
	// KernelBench's rule is the sweep's default (issue 32): the correct
	// Softplus candidate is plain torch, no kernel of its own, so it is
	// integrity_violation (no_own_kernel), not fast_0 (it passed before).
	m := sum.Metrics
	if m.Pairs != 3 || m.Correct != 0 || m.Verdicts["integrity_violation"] != 1 || m.Verdicts["incorrect"] != 1 || m.Verdicts["runtime_error"] != 1 ||
		sum.Memory == nil || sum.Memory.PeakRSSWorkerBytes < 50<<20 {
		t.Errorf("summary %s", out)
	}
	b, err := os.ReadFile(filepath.Join(dir, "r.jsonl"))
	if err != nil || !strings.Contains(string(b), `"name":"no_own_kernel","passed":false`) {
		t.Errorf("no failed no_own_kernel check in the records (%v)", err)
	}
}
