package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kevolve/kevolve-mcp/harness/toolchain/toolchaintest"
)

// Every command that takes a target knows every row of the target table:
// on a host without an AMD GPU, eval, evolve and an evolve suite all fail
// on the device (optimize too), with the one message the harness gives, not with "use cpu
// or nvidia". Aliases ("rocm") are the same target.
func TestAMDTargetFailsOnTheDevice(t *testing.T) {
	py := toolchaintest.Python(t)
	dir := t.TempDir()
	db := filepath.Join(dir, "k.db")
	cand := filepath.Join(dir, "cand.py")
	if err := os.WriteFile(cand, []byte("import torch.nn as nn\n\n\nclass ModelNew(nn.Module):\n    pass\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	cmds := map[string][]string{
		"eval":   {"eval", "--ref", "llm/rmsnorm", "--candidate", cand, "--target", "amd"},
		"evolve": {"evolve", "--problem", "llm/rmsnorm", "--operator", "tuner", "--budget", "2", "--target", "amd"},
		"rocm":   {"evolve", "--problem", "llm/rmsnorm", "--operator", "tuner", "--budget", "2", "--target", "rocm"},
		"suite":  {"evolve", "--suite", "corpus:llm/rmsnorm", "--operator", "tuner", "--budget", "2", "--target", "amd"},
		"model":  {"optimize", "--model", cand, "--budget", "2", "--target", "amd"},
	}
	msgs := map[string]string{}
	for name, args := range cmds {
		_, _, err := runCLI(t, append(args, "--python", py, "--db", db)...)
		if err == nil {
			t.Fatalf("%s: --target amd on a host without AMD succeeded", name)
		}
		msg := err.Error()
		i := strings.Index(msg, "no AMD device found")
		if i < 0 || strings.Contains(msg, "use cpu") {
			t.Errorf("%s: %q does not fail on the device", name, msg)
			continue
		}
		msgs[name] = msg[i:]
	}
	for name, m := range msgs {
		if m != msgs["eval"] {
			t.Errorf("%s says %q, eval says %q", name, m, msgs["eval"])
		}
	}
}
