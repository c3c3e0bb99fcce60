package main

import (
	"encoding/json"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"

	"github.com/kevolve/kevolve-mcp/harness/toolchain/toolchaintest"
)

// sessionLoadScript is the load beside the session: a process that keeps
// its intra-op thread pool busy with small matrix products, as the torch
// workers of a test run do.
const sessionLoadScript = `
import torch
a = torch.randn(256, 256)
while True:
    for _ in range(50):
        a @ a
`

// TestAgentSessionUnderLoad is issue 36's session as an agent drives it,
// on a host another program keeps busy: the same kernel evaluated again and
// again (retime), then profiled, then submitted in a search. What it holds
// the figures to: eager medians of one problem within 1.5x of each other
// across the run, or flagged noisy; the kernel's timed median within 2x of
// its profiled per-call time; fitness equal to speedup_vs_eager. Minutes of
// evaluations: run with KEVOLVE_SESSION_LOAD=1 (make bench-session).
func TestAgentSessionUnderLoad(t *testing.T) {
	if os.Getenv("KEVOLVE_SESSION_LOAD") == "" {
		t.Skip("KEVOLVE_SESSION_LOAD=1 (make bench-session): minutes of evaluations beside a load of its own")
	}
	py := toolchaintest.Python(t)
	startLoad(t, py, 1)
	c, err := client.NewStdioMCPClient(binary, nil, "--db", filepath.Join(t.TempDir(), "k.db"), "--python", py, "--stdio")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	initialize(t, c)
	start, err := os.ReadFile(filepath.Join("..", "..", "corpus", "problems", "llm", "softmax", "start_c.py"))
	if err != nil {
		t.Fatal(err)
	}
	var evals []sessionEval
	for i := 0; i < 8; i++ {
		var r sessionEval
		if msg := callTool(t, c, "run_kernel", map[string]any{"reference": "llm/softmax", "candidate_source": string(start),
			"target": "cpu", "retime": true}, &r); msg != "" {
			t.Fatalf("run_kernel: %s", msg)
		}
		evals = append(evals, r)
		t.Logf("run_kernel %d: %s", i, r)
	}
	checkEagerSpread(t, evals)
	checkFitness(t, evals)
	// A trivial kernel: the start's loop on one thread (its OpenMP pool of
	// one), timed three times, then profiled.
	trivial := strings.Replace(string(start), "THREADS = 0", "THREADS = 1", 1)
	if trivial == string(start) {
		t.Fatal("start_c.py has no THREADS = 0 to set")
	}
	var timed []sessionEval
	for i := 0; i < 3; i++ {
		var r sessionEval
		if msg := callTool(t, c, "run_kernel", map[string]any{"reference": "llm/softmax", "candidate_source": trivial,
			"target": "cpu", "retime": true}, &r); msg != "" || r.Candidate == nil {
			t.Fatalf("run_kernel (one thread): %s %s", msg, r)
		}
		timed = append(timed, r)
		t.Logf("run_kernel, one thread, %d: %s", i, r)
	}
	checkFitness(t, timed)
	checkProfileAgrees(t, c, trivial, timed)
}

// sessionEval is what the session reads of a run_kernel answer.
type sessionEval struct {
	Verdict string   `json:"verdict"`
	Speedup *float64 `json:"speedup_vs_eager"`
	Fitness struct {
		Speedup float64 `json:"speedup_vs_eager"`
	} `json:"fitness"`
	Candidate *sessionStats `json:"candidate"`
	RefEager  *sessionStats `json:"ref_eager"`
	Noise     *struct {
		Noisy     bool    `json:"noisy"`
		WaitShare float64 `json:"wait_share"`
	} `json:"noise"`
}

type sessionStats struct {
	MedianS    float64 `json:"median_s"`
	Iters      int     `json:"iters"`
	QuietIters int     `json:"quiet_iters"`
	MedianAllS float64 `json:"median_all_s"`
}

func (r sessionEval) noisy() bool { return r.Noise != nil && r.Noise.Noisy }

func (r sessionEval) String() string {
	s := r.Verdict
	if r.RefEager != nil && r.Candidate != nil {
		s += fmt.Sprintf(", eager %.4g s (%d of %d calls, all %.4g s), candidate %.4g s (%d of %d)", r.RefEager.MedianS,
			r.RefEager.QuietIters, r.RefEager.Iters, r.RefEager.MedianAllS, r.Candidate.MedianS, r.Candidate.QuietIters, r.Candidate.Iters)
	}
	if r.Noise != nil {
		s += fmt.Sprintf(", noisy %v (wait share %.2f)", r.Noise.Noisy, r.Noise.WaitShare)
	}
	return s
}

// checkEagerSpread: the eager medians of results not flagged noisy are
// within 1.5x of each other; the spread of every result is logged.
func checkEagerSpread(t *testing.T, evals []sessionEval) {
	t.Helper()
	lo, hi, loAll, hiAll, quiet := math.Inf(1), 0.0, math.Inf(1), 0.0, 0
	for _, r := range evals {
		if r.Verdict != "pass" || r.RefEager == nil {
			t.Fatalf("the start kernel did not pass: %s", r)
		}
		loAll, hiAll = math.Min(loAll, r.RefEager.MedianS), math.Max(hiAll, r.RefEager.MedianS)
		if !r.noisy() {
			quiet++
			lo, hi = math.Min(lo, r.RefEager.MedianS), math.Max(hi, r.RefEager.MedianS)
		}
	}
	t.Logf("eager medians: every result %.4g..%.4g s (%.2fx); %d results not noisy", loAll, hiAll, hiAll/loAll, quiet)
	if quiet > 1 && hi/lo > 1.5 {
		t.Errorf("eager medians of results not flagged noisy span %.4g..%.4g s (%.2fx, over 1.5x)", lo, hi, hi/lo)
	}
}

func checkFitness(t *testing.T, evals []sessionEval) {
	t.Helper()
	for i, r := range evals {
		if r.Speedup != nil && math.Abs(r.Fitness.Speedup-*r.Speedup) > 1e-9*math.Max(1, *r.Speedup) {
			t.Errorf("result %d: fitness %.6g, speedup_vs_eager %.6g", i, r.Fitness.Speedup, *r.Speedup)
		}
	}
}

// checkProfileAgrees: profile_kernel's per-call time of the kernel and the
// timed medians of the session are within 2x of each other (the median of
// the medians, so one loaded evaluation does not decide).
func checkProfileAgrees(t *testing.T, c *client.Client, start string, evals []sessionEval) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "kernel.py")
	if err := os.WriteFile(path, []byte(start), 0o644); err != nil {
		t.Fatal(err)
	}
	var prof map[string]any
	if msg := callTool(t, c, "profile_kernel", map[string]any{"reference": "llm/softmax", "candidate": path, "backend": "cpu"}, &prof); msg != "" {
		t.Fatalf("profile_kernel: %s", msg)
	}
	perCall := profilePerCallS(prof)
	if perCall <= 0 {
		b, _ := json.MarshalIndent(prof, "", " ")
		t.Fatalf("profile_kernel gave no per-call time:\n%s", b)
	}
	var meds []float64
	for _, r := range evals {
		meds = append(meds, r.Candidate.MedianS)
	}
	med := median(meds)
	t.Logf("profiled per call %.4g s; timed median of the session's medians %.4g s (%.2fx)", perCall, med, med/perCall)
	if ratio := med / perCall; ratio > 2 || ratio < 0.5 {
		t.Errorf("timed median %.4g s vs profiled per-call %.4g s: %.2fx, not within 2x", med, perCall, ratio)
	}
}

func median(xs []float64) float64 {
	s := slices.Clone(xs)
	slices.Sort(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

// startLoad runs n load processes until the test ends (their process
// group killed at cleanup).
func startLoad(t *testing.T, py string, n int) {
	t.Helper()
	for i := 0; i < n; i++ {
		cmd := exec.Command(py, "-c", sessionLoadScript)
		cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
			_ = cmd.Wait()
		})
	}
	time.Sleep(2 * time.Second) // the load's torch import, before the first timing
}

// profilePerCallS is the CPU profile's median call timed as run_kernel
// times it (timed_us_per_iter), wherever the answer nests it; 0 if absent.
func profilePerCallS(v any) float64 {
	switch x := v.(type) {
	case map[string]any:
		if us, ok := x["timed_us_per_iter"].(float64); ok && us > 0 {
			return us / 1e6
		}
		for _, c := range x {
			if s := profilePerCallS(c); s > 0 {
				return s
			}
		}
	case []any:
		for _, c := range x {
			if s := profilePerCallS(c); s > 0 {
				return s
			}
		}
	}
	return 0
}
