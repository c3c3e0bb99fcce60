package kernelbench

import (
	"bufio"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	_ "github.com/mattn/go-sqlite3"

	"github.com/kevolve/kevolve-mcp/harness"
	"github.com/kevolve/kevolve-mcp/harness/toolchain"
	"github.com/kevolve/kevolve-mcp/harness/toolchain/toolchaintest"
)

// counting wraps an evaluator and counts the evaluations it was asked for,
// so a resumed sweep can be shown to evaluate nothing.
type counting struct {
	Evaluator
	n atomic.Int64
}

func (c *counting) Evaluate(ctx context.Context, req Request) (*harness.EvalResult, error) {
	c.n.Add(1)
	return c.Evaluator.Evaluate(ctx, req)
}

func realEvaluator(t *testing.T) *counting {
	t.Helper()
	py, err := toolchain.FindPython()
	toolchaintest.Require(t, err)
	ev, err := harness.NewEvaluator(harness.EvalConfig{Python: py, CacheDir: t.TempDir(),
		Logger: slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ev.Close() })
	return &counting{Evaluator: HarnessEvaluator{Ev: ev}}
}

func openDB(t *testing.T) *sql.DB {
	t.Helper()
	db, err := sql.Open("sqlite3", "file:"+filepath.Join(t.TempDir(), "kevolve.db")+"?_journal_mode=WAL&_busy_timeout=10000")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

func readJSONL(t *testing.T, path string) map[string]Record {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	out := map[string]Record{}
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 16<<20)
	for sc.Scan() {
		var r Record
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
			t.Fatalf("jsonl line %q: %v", sc.Text(), err)
		}
		out[r.Problem] = r
	}
	return out
}

// The sweep over a fake KernelBench tree on the CPU, through the real warm
// worker: a correct, a wrong and a failing candidate, a problem without one,
// a file naming no problem; then the same sweep resumed from SQLite.
func TestRunFakeKernelBench(t *testing.T) {
	ev := realEvaluator(t)
	db := openDB(t)
	out := t.TempDir()
	var progress strings.Builder
	opt := Options{KB: "testdata/kb", Levels: []int{1, 2}, Candidates: "testdata/candidates", Target: "cpu",
		Timeout: 2 * time.Minute, Jobs: 2, DB: db, JSONL: filepath.Join(out, "run1.jsonl"), Log: &progress}
	sum, err := Run(context.Background(), ev, opt)
	if err != nil {
		t.Fatal(err)
	}
	var text strings.Builder
	sum.WriteText(&text)
	t.Logf("progress:\n%s\nsummary:\n%s", progress.String(), text.String())

	want := map[string]string{"level1/1_Softplus": "pass", "level1/2_ReLU": "incorrect", "level2/1_Scale_Tanh": "runtime_error"}
	recs := readJSONL(t, opt.JSONL)
	if len(recs) != len(want) {
		t.Fatalf("jsonl has %d records, want %d: %v", len(recs), len(want), recs)
	}
	for p, v := range want {
		r := recs[p]
		if r.Verdict != v || r.ToolError != "" || r.Resumed || r.Result == nil || r.Key == "" {
			t.Errorf("%s: verdict %q tool error %q resumed %v (want %s)", p, r.Verdict, r.ToolError, r.Resumed, v)
		}
	}
	if r := recs["level1/1_Softplus"]; r.SpeedupVsEager == nil || *r.SpeedupVsEager <= 0 {
		t.Errorf("the passing candidate has no speedup: %+v", r)
	}
	m := sum.Metrics
	if m.Pairs != 3 || m.Correct != 1 || m.FastEager[0].Count != 1 || m.Verdicts["incorrect"] != 1 ||
		m.Verdicts["runtime_error"] != 1 || m.ToolErrors != 0 || m.Eager == nil || m.Eager.N != 1 {
		t.Errorf("metrics %+v", m)
	}
	if sum.Planned != 3 || sum.Evaluated != 3 || sum.Resumed != 0 || len(sum.Missing) != 1 || sum.Missing[0] != "level1/3_Sum_rows" ||
		len(sum.Unmatched) != 1 || !strings.HasSuffix(sum.Unmatched[0], "9_No_such_problem.py") {
		t.Errorf("summary %+v", sum)
	}
	if n := strings.Count(progress.String(), "\n"); n != 3 || !strings.Contains(progress.String(), "[3/3]") {
		t.Errorf("progress (not a terminal) should be one line per pair:\n%s", progress.String())
	}
	for _, s := range []string{"fast_0", "fast_1.5", "geomean speedup over the 1 correct pairs", "incorrect 1", "runtime_error 1", "tool errors 0"} {
		if !strings.Contains(text.String(), s) {
			t.Errorf("summary text lacks %q", s)
		}
	}
	var rows int
	if err := db.QueryRow(`SELECT count(*) FROM kernelbench_results WHERE harness_version = ?`, harness.HarnessVersion()).Scan(&rows); err != nil || rows != 3 {
		t.Errorf("kernelbench_results rows %d (%v), want 3", rows, err)
	}

	// Resumed: nothing is evaluated again, and the figures are the same.
	calls := ev.n.Load()
	opt.JSONL = filepath.Join(out, "run2.jsonl")
	progress.Reset()
	sum2, err := Run(context.Background(), ev, opt)
	if err != nil {
		t.Fatal(err)
	}
	if ev.n.Load() != calls || sum2.Resumed != 3 || sum2.Evaluated != 0 {
		t.Errorf("resume evaluated %d pairs (resumed %d)", ev.n.Load()-calls, sum2.Resumed)
	}
	if sum2.Metrics.Correct != 1 || sum2.Metrics.Verdicts["incorrect"] != 1 {
		t.Errorf("resumed metrics %+v", sum2.Metrics)
	}
	for p, r := range readJSONL(t, opt.JSONL) {
		if !r.Resumed || r.Verdict != want[p] {
			t.Errorf("resumed record %s: %+v", p, r)
		}
	}
}

// Every problem of the tree, renamed Model→ModelNew, gets a verdict and
// none passes: the reference is not a kernel.
func TestRunReferenceAsCandidate(t *testing.T) {
	ev := realEvaluator(t)
	jsonl := filepath.Join(t.TempDir(), "ref.jsonl")
	sum, err := Run(context.Background(), ev, Options{KB: "testdata/kb", Levels: []int{1, 2}, ReferenceAsCandidate: true,
		Target: "cpu", Timeout: 2 * time.Minute, Jobs: 2, JSONL: jsonl})
	if err != nil {
		t.Fatal(err)
	}
	var text strings.Builder
	sum.WriteText(&text)
	t.Log(text.String())
	m := sum.Metrics
	if m.Pairs != 4 || m.ToolErrors != 0 || m.Correct != 0 || m.Verdicts["integrity_violation"] != 4 {
		t.Errorf("reference as candidate: %+v tool errors %v", m, sum.ToolErrors)
	}
	for p, r := range readJSONL(t, jsonl) {
		if r.Candidate != ReferenceAsCandidate || !slices.Contains(r.FailedChecks, "reference_ops") {
			t.Errorf("%s: candidate %q failed checks %v, want reference_ops among them", p, r.Candidate, r.FailedChecks)
		}
	}
}

// errEvaluator fails in the ways a harness can: an error for one problem,
// a panic for another. The sweep lists both and goes on.
type errEvaluator struct{}

func (errEvaluator) Version() string { return "test" }

func (errEvaluator) Evaluate(_ context.Context, req Request) (*harness.EvalResult, error) {
	switch req.Pair.Problem.ID {
	case 1:
		if req.Pair.Problem.Level == 1 {
			return nil, errors.New("evaluate: the harness's Python failed: OutOfMemoryError")
		}
		panic("a bug in the evaluator")
	case 2:
		return nil, nil
	}
	s := 1.7
	return &harness.EvalResult{Verdict: harness.VerdictPass, Correct: true, SpeedupVsEager: &s}, nil
}

func TestRunToolErrors(t *testing.T) {
	db := openDB(t)
	opt := Options{KB: "testdata/kb", Levels: []int{1, 2}, ReferenceAsCandidate: true, DB: db,
		JSONL: filepath.Join(t.TempDir(), "r.jsonl"), Only: regexp.MustCompile(`.`)}
	sum, err := Run(context.Background(), errEvaluator{}, opt)
	if err != nil {
		t.Fatal(err)
	}
	if len(sum.ToolErrors) != 3 || sum.Metrics.ToolErrors != 3 || sum.Metrics.Pairs != 4 || sum.Metrics.FastEager[1].Count != 1 {
		t.Fatalf("summary %+v", sum)
	}
	var text strings.Builder
	sum.WriteText(&text)
	for _, s := range []string{"TOOL ERROR level1/1_Softplus", "OutOfMemoryError", "panicked: a bug in the evaluator", "no result and no error"} {
		if !strings.Contains(text.String(), s) {
			t.Errorf("summary lacks %q:\n%s", s, text.String())
		}
	}
	// Tool errors are not stored: a resumed sweep tries them again.
	var rows int
	_ = db.QueryRow(`SELECT count(*) FROM kernelbench_results`).Scan(&rows)
	if rows != 1 {
		t.Errorf("%d rows stored, want the 1 judged pair", rows)
	}
	sum2, err := Run(context.Background(), errEvaluator{}, opt)
	if err != nil || sum2.Resumed != 1 || sum2.Evaluated != 3 {
		t.Errorf("resume: %+v %v", sum2, err)
	}
}

func TestRunBadInput(t *testing.T) {
	cases := []struct {
		name string
		opt  Options
		err  string
	}{
		{name: "no kb", opt: Options{KB: "testdata/nowhere", Levels: []int{1}, ReferenceAsCandidate: true}, err: "no such file"},
		{name: "absent level", opt: Options{KB: "testdata/kb", Levels: []int{3}, ReferenceAsCandidate: true}, err: "level 3"},
		{name: "no candidates", opt: Options{KB: "testdata/kb", Levels: []int{1}}, err: "no candidates"},
		{name: "only matches nothing", opt: Options{KB: "testdata/kb", Levels: []int{1}, ReferenceAsCandidate: true, Only: regexp.MustCompile("zzz")}, err: "matches"},
		{name: "no pair", opt: Options{KB: "testdata/kb", Levels: []int{1}, Candidates: "testdata/candidates/level2/*.py"}, err: "no candidate matches"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Run(context.Background(), errEvaluator{}, tc.opt)
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Fatalf("err %v, want %q", err, tc.err)
			}
		})
	}
}

// cancelling stops the sweep at its second pair, as Ctrl-C would.
type cancelling struct {
	cancel context.CancelFunc
	n      atomic.Int64
}

func (*cancelling) Version() string { return "test" }

func (c *cancelling) Evaluate(ctx context.Context, _ Request) (*harness.EvalResult, error) {
	if c.n.Add(1) == 2 {
		c.cancel()
		<-ctx.Done()
		return nil, ctx.Err()
	}
	return &harness.EvalResult{Verdict: harness.VerdictIncorrect}, nil
}

// An interrupted sweep returns what it finished, marked interrupted; the
// pair cut short is neither a result nor a tool error.
func TestRunInterrupted(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	sum, err := Run(ctx, &cancelling{cancel: cancel}, Options{KB: "testdata/kb", Levels: []int{1, 2}, ReferenceAsCandidate: true})
	if !errors.Is(err, context.Canceled) || sum == nil {
		t.Fatalf("err %v summary %v", err, sum)
	}
	var text strings.Builder
	sum.WriteText(&text)
	if !sum.Interrupted || sum.Planned != 4 || sum.Metrics.Pairs != 1 || sum.Metrics.ToolErrors != 0 ||
		!strings.Contains(text.String(), "INTERRUPTED: 1 of 4") {
		t.Errorf("summary %+v\n%s", sum, text.String())
	}
}

// `kernelbench run` judges by KernelBench's rule unless told otherwise
// (issue 32): the correct plain-torch Softplus candidate, which the
// harness's default passes (TestRunFakeKernelBench), has no kernel of its
// own and is integrity_violation (no_own_kernel).
func TestRunDefaultPolicyIsKernelBenchs(t *testing.T) {
	if DefaultKernelPolicy != harness.KernelPolicyKernelBench {
		t.Fatalf("kernelbench run's default policy is %q", DefaultKernelPolicy)
	}
	ev := realEvaluator(t)
	hev := ev.Evaluator.(HarnessEvaluator)
	hev.KernelPolicy = DefaultKernelPolicy
	out := filepath.Join(t.TempDir(), "r.jsonl")
	sum, err := Run(context.Background(), hev, Options{KB: "testdata/kb", Levels: []int{1}, Candidates: "testdata/candidates",
		Only: regexp.MustCompile("Softplus"), Target: "cpu", Timeout: 2 * time.Minute, Jobs: 1, JSONL: out, Log: io.Discard})
	if err != nil {
		t.Fatal(err)
	}
	r := readJSONL(t, out)["level1/1_Softplus"]
	if r.Verdict != harness.VerdictIntegrityViolation || r.Result == nil {
		t.Fatalf("verdict %q, want integrity_violation; summary %+v", r.Verdict, sum.Metrics)
	}
	for _, c := range r.Result.Checks {
		if c.Name == "no_own_kernel" && !c.Passed {
			t.Logf("no_own_kernel: %s", c.Detail)
			return
		}
	}
	t.Fatalf("no failed no_own_kernel check: %+v", r.Result.Checks)
}
