package main

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/kevolve/kevolve-mcp/harness/kernelbench"
	"github.com/kevolve/kevolve-mcp/harness/toolchain/toolchaintest"
	"github.com/kevolve/kevolve-mcp/search"
	"github.com/kevolve/kevolve-mcp/search/store"
)

// exitCode runs the real binary and returns its exit status and output.
func exitCode(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	cmd := exec.Command(binary, args...)
	var out, errb strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		return ee.ExitCode(), out.String(), errb.String()
	}
	if err != nil {
		t.Fatal(err)
	}
	return 0, out.String(), errb.String()
}

const twiceRef = "import torch\nimport torch.nn as nn\n\n\nclass Model(nn.Module):\n    def forward(self, x):\n        return x * 2\n\n\n" +
	"def get_inputs():\n    return [torch.randn(64)]\n\n\ndef get_init_inputs():\n    return []\n"

// eval's exit status is the verdict's: 0 pass, 1 any other verdict (the
// table still printed, with --verbose the traceback whole), 2 when nothing
// could be evaluated.
func TestEvalExitStatus(t *testing.T) {
	py := toolchaintest.Python(t)
	dir := t.TempDir()
	ref := filepath.Join(dir, "ref.py")
	os.WriteFile(ref, []byte(twiceRef), 0o644)
	// A long traceback line: the short table cuts it, --verbose does not.
	long := strings.Repeat("the candidate failed on purpose ", 12) + "END-OF-MESSAGE"
	cands := map[string]string{
		"pass":      "import torch.nn as nn\n\n\nclass ModelNew(nn.Module):\n    def forward(self, x):\n        return x + x\n",
		"incorrect": "import torch.nn as nn\n\n\nclass ModelNew(nn.Module):\n    def forward(self, x):\n        return x * 3\n",
		"runtime_error": "import torch.nn as nn\n\n\nclass ModelNew(nn.Module):\n    def forward(self, x):\n        raise RuntimeError(" +
			"\"" + long + "\")\n",
	}
	cases := []struct {
		cand    string
		verbose bool
		rc      int
		want    []string
		not     []string
	}{
		{"pass", false, 0, []string{"PASS"}, nil},
		{"incorrect", false, 1, []string{"INCORRECT"}, nil},
		{"runtime_error", false, 1, []string{"RUNTIME_ERROR"}, []string{"END-OF-MESSAGE"}},
		{"runtime_error", true, 1, []string{"RUNTIME_ERROR", "END-OF-MESSAGE", "Traceback"}, nil},
	}
	for _, c := range cases {
		path := filepath.Join(dir, c.cand+".py")
		os.WriteFile(path, []byte(cands[c.cand]), 0o644)
		args := []string{"--python", py, "--db", filepath.Join(dir, "k.db"), "eval", "--ref", ref, "--candidate", path,
			"--target", "cpu", "--skip-timing", "--trials", "1"}
		if c.verbose {
			args = append(args, "--verbose")
		}
		rc, out, errOut := exitCode(t, args...)
		if rc != c.rc {
			t.Errorf("%s (verbose %v): exit %d, want %d\n%s\n%s", c.cand, c.verbose, rc, c.rc, out, errOut)
		}
		for _, w := range c.want {
			if !strings.Contains(out, w) {
				t.Errorf("%s (verbose %v): output lacks %q:\n%s", c.cand, c.verbose, w, out)
			}
		}
		for _, w := range c.not {
			if strings.Contains(out, w) {
				t.Errorf("%s (verbose %v): the short table shows %q whole:\n%s", c.cand, c.verbose, w, out)
			}
		}
		if c.rc == 1 && !strings.Contains(errOut, "verdict "+c.cand) {
			t.Errorf("%s: stderr does not name the verdict: %s", c.cand, errOut)
		}
	}
	rc, _, errOut := exitCode(t, "--db", filepath.Join(dir, "k.db"), "eval", "--ref", "no/such_problem", "--candidate", ref)
	if rc != 2 {
		t.Errorf("an unknown reference: exit %d, want 2 (%s)", rc, errOut)
	}
}

// --reference-as-candidate: every pair caught exits 0 and says so.
func TestKernelBenchReferenceAsCandidateExit(t *testing.T) {
	py := toolchaintest.Python(t)
	dir := t.TempDir()
	rc, out, errOut := exitCode(t, "--python", py, "--db", filepath.Join(dir, "k.db"), "kernelbench", "run",
		"--kb", kbTestdata+"/kb", "--level", "1", "--only", "2_ReLU", "--reference-as-candidate",
		"--target", "cpu", "--jsonl", filepath.Join(dir, "r.jsonl"))
	if rc != 0 || !strings.Contains(out, "1 of 1 judged pairs caught") {
		t.Fatalf("exit %d\n%s\n%s", rc, out, errOut)
	}
}

// Summary.Uncaught decides kernelbench run's exit with --reference-as-candidate.
func TestKernelBenchUncaught(t *testing.T) {
	cases := []struct {
		rac      bool
		pairs    int
		tool     int
		verdicts map[string]int
		want     int
	}{
		{true, 3, 0, map[string]int{"integrity_violation": 3}, 0},
		{true, 3, 1, map[string]int{"integrity_violation": 2}, 0},
		{true, 3, 0, map[string]int{"integrity_violation": 2, "pass": 1}, 1},
		{false, 3, 0, map[string]int{"pass": 1, "incorrect": 2}, 0},
	}
	for i, c := range cases {
		s := kernelbench.Summary{ReferenceAsCandidate: c.rac, Metrics: kernelbench.Metrics{Pairs: c.pairs, ToolErrors: c.tool, Verdicts: c.verdicts}}
		if got := s.Uncaught(); got != c.want {
			t.Errorf("case %d: uncaught %d, want %d", i, got, c.want)
		}
	}
}

// Run ids: `evolve show` takes the short id the progress line prints and a
// prefix, says which runs an ambiguous one matches, prints the nodes with
// --json, and the shell completes the ids.
func TestRunIDsShortJSONAndCompletion(t *testing.T) {
	ctx := context.Background()
	dbPath := filepath.Join(t.TempDir(), "k.db")
	db, err := store.Open(dbPath)
	if err != nil {
		t.Fatal(err)
	}
	st, err := store.New(ctx, db)
	if err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{"r-20261124-010101-f7c4ce", "r-20261124-010101-0a0b0c"} {
		run := &search.Run{ID: id, Problem: search.Problem{Name: "llm/rmsnorm", Target: "cpu"}, Policy: "greedy",
			Operator: "tuner", Baseline: "eager", Budget: search.Budget{Evals: 5}}
		root := &search.Node{Code: "X = 1\n", Language: "c", State: search.NodeEvaluating}
		if err := st.CreateRunWithRoot(ctx, run, root); err != nil {
			t.Fatal(err)
		}
	}
	db.Close()
	rc, out, errOut := exitCode(t, "--db", dbPath, "evolve", "show", "f7c4ce", "--json")
	var shown struct {
		RunID string `json:"run_id"`
		Nodes []struct {
			ID   int64  `json:"id"`
			Code string `json:"code"`
		} `json:"nodes"`
	}
	if rc != 0 || json.Unmarshal([]byte(out), &shown) != nil || len(shown.Nodes) != 1 || shown.Nodes[0].Code != "X = 1\n" {
		t.Fatalf("evolve show f7c4ce --json: exit %d\n%s\n%s", rc, out, errOut)
	}
	if rc, out, _ := exitCode(t, "--db", dbPath, "evolve", "best", "r-20261124-010101-f"); rc != 1 || strings.Contains(out, "ambiguous") {
		t.Errorf("a prefix resolved, but a run without a best node should fail: exit %d %s", rc, out)
	}
	rc, _, errOut = exitCode(t, "--db", dbPath, "evolve", "show", "r-20261124")
	if rc == 0 || !strings.Contains(errOut, "ambiguous") || !strings.Contains(errOut, "0a0b0c") {
		t.Errorf("an ambiguous prefix: exit %d, %s", rc, errOut)
	}
	_, out, _ = exitCode(t, "__complete", "--db", dbPath, "evolve", "show", "r-")
	for _, id := range []string{"r-20261124-010101-f7c4ce\tllm/rmsnorm", "r-20261124-010101-0a0b0c"} {
		if !strings.Contains(out, id) {
			t.Errorf("completion lacks %q:\n%s", id, out)
		}
	}
	_, out, _ = exitCode(t, "__complete", "--db", dbPath, "evolve", "--resume", "r-20261124-010101-0")
	if !strings.Contains(out, "0a0b0c") || strings.Contains(out, "f7c4ce") {
		t.Errorf("--resume completion:\n%s", out)
	}
}

// --version names the commit and build date the Makefile stamps.
func TestVersionStamped(t *testing.T) {
	bin := filepath.Join(t.TempDir(), "kv")
	ld := "-X main.version=v9.9.9 -X main.commit=0123456789abcdef0123 -X main.buildDate=2026-11-24T00:00:00Z"
	if out, err := exec.Command("go", "build", "-tags", "sqlite_fts5", "-ldflags", ld, "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("build: %v\n%s", err, out)
	}
	out, err := exec.Command(bin, "--version").Output()
	want := "kevolve-mcp version v9.9.9 (commit 0123456789ab, built 2026-11-24T00:00:00Z)"
	if err != nil || strings.TrimSpace(string(out)) != want {
		t.Fatalf("--version: %q, %v; want %q", out, err, want)
	}
	if v := buildVersion(); !strings.HasPrefix(v, "0.1.0-dev (") {
		t.Errorf("an unstamped build: %q", v)
	}
}

// `evolve --operator claude|codex` without a login stops before anything
// is evaluated, within the preflight's 10 s, with the command that fixes
// it and the exact line that continues the run (which was recorded,
// nothing evaluated); a resume may change the operator within its kind.
func TestEvolveAgentPreflight(t *testing.T) {
	fake, err := filepath.Abs("../../search/operator/cmdop/testdata/fakecli")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	db := filepath.Join(dir, "k.db")
	for _, c := range []struct{ op, fix string }{{"claude", "claude auth login"}, {"codex", "codex login"}} {
		cmd := exec.Command(binary, "--db", db, "evolve", "--problem", "llm/rmsnorm", "--target", "cpu", "--operator", c.op, "--budget", "3")
		cmd.Env = append(os.Environ(), "PATH="+fake+string(os.PathListSeparator)+os.Getenv("PATH"), "FAKE_LOGGED_IN=0", "KEVOLVE_NODE_DIR=")
		t0 := time.Now()
		out, err := cmd.CombinedOutput()
		took := time.Since(t0)
		if err == nil || took > 20*time.Second {
			t.Fatalf("%s logged out: err %v after %s\n%s", c.op, err, took, out)
		}
		m := regexp.MustCompile(`kevolve-mcp evolve --resume (r-\S+) --operator ` + c.op).FindStringSubmatch(string(out))
		if !strings.Contains(string(out), "fix: "+c.fix) || m == nil {
			t.Fatalf("%s: no fix or resume line:\n%s", c.op, out)
		}
		if strings.Contains(string(out), "calibrat") {
			t.Errorf("%s: calibrated before the preflight:\n%s", c.op, out)
		}
		// The recorded run: paused, its start kernel not evaluated.
		rc, js, _ := exitCode(t, "--db", db, "evolve", "show", m[1], "--json")
		var shown struct {
			Nodes []struct {
				State string `json:"state"`
			} `json:"nodes"`
		}
		if rc != 0 || json.Unmarshal([]byte(js), &shown) != nil || len(shown.Nodes) != 1 || shown.Nodes[0].State == "done" {
			t.Errorf("%s: the recorded run: exit %d %s", c.op, rc, js)
		}
		// Another kind of operator is refused on resume.
		rc, _, errOut := exitCode(t, "--db", db, "evolve", "--resume", m[1], "--operator", "tuner")
		if rc == 0 || !strings.Contains(errOut, "resume it with --operator "+c.op) {
			t.Errorf("%s: resume with the tuner: exit %d %s", c.op, rc, errOut)
		}
	}
}

// On a CPU, `sol` bounds the shape set an evaluation runs (small) by
// default, as `sol --candidate` does after evaluating; `calibrate` says how
// long it took.
func TestSolDefaultShapesOnCPU(t *testing.T) {
	py := toolchaintest.Python(t)
	db := filepath.Join(t.TempDir(), "k.db")
	rc, out, errOut := exitCode(t, "--python", py, "--db", db, "calibrate", "--quick", "--device", "cpu")
	if rc != 0 || !regexp.MustCompile(`measured in \d+\.\d s`).MatchString(out) || strings.Contains(errOut, "about a minute") {
		t.Fatalf("calibrate: exit %d\n%s\n%s", rc, out, errOut)
	}
	flops := func(args ...string) float64 {
		rc, out, errOut := exitCode(t, append([]string{"--python", py, "--db", db, "sol", "--ref", "llm/rmsnorm", "--json"}, args...)...)
		var r struct {
			FLOPs float64 `json:"flops"`
		}
		if rc != 0 || json.Unmarshal([]byte(out), &r) != nil || r.FLOPs <= 0 {
			t.Fatalf("sol %v: exit %d\n%s\n%s", args, rc, out, errOut)
		}
		return r.FLOPs
	}
	def, small, large := flops(), flops("--shapes", "small"), flops("--shapes", "large")
	if def != small || small == large {
		t.Errorf("FLOPs: default %g, small %g, large %g: the default must be the small set on a CPU", def, small, large)
	}
}

// `profile` on a CPU announces a CPU profile, not Nsight Compute.
func TestProfilingNote(t *testing.T) {
	cases := []struct {
		backend string
		gpu     bool
		nsight  bool
	}{{"auto", false, false}, {"", false, false}, {"cpu", true, false}, {"auto", true, true}, {"ncu", false, true}}
	for _, c := range cases {
		if got := profilingNote(c.backend, c.gpu); strings.Contains(got, "Nsight") != c.nsight {
			t.Errorf("backend %q, gpu %v: %q", c.backend, c.gpu, got)
		}
	}
}
