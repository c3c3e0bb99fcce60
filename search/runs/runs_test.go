package runs

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/kevolve/kevolve-mcp/harness/target"
	"github.com/kevolve/kevolve-mcp/search"
	"github.com/kevolve/kevolve-mcp/search/engine"
	"github.com/kevolve/kevolve-mcp/search/store"
)

// speedEval stands in for the evaluation service where the subject is the
// run manager's concurrency, not kernels: a candidate's "SPEED = n" line is
// its speedup, "BROKEN" makes it incorrect, and each evaluation takes delay.
// The harness itself is exercised end to end by the tools and cmd tests.
type speedEval struct {
	delay time.Duration
	calls atomic.Int64
}

var speedRe = regexp.MustCompile(`(?m)^SPEED = (\d+)`)

func (e *speedEval) Evaluate(ctx context.Context, p search.Problem, code string) (*search.Result, error) {
	e.calls.Add(1)
	select {
	case <-time.After(e.delay):
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	if strings.Contains(code, "NOSERVICE") {
		return nil, errors.New("no worker for this target")
	}
	if strings.Contains(code, "BROKEN") {
		return &search.Result{Verdict: search.VerdictIncorrect, Checks: []search.Check{{Name: "allclose", Detail: "max abs err 1"}}}, nil
	}
	s := 1
	if m := speedRe.FindStringSubmatch(code); m != nil {
		s, _ = strconv.Atoi(m[1])
	}
	return &search.Result{Verdict: search.VerdictPass, Correct: true, TimeS: 1e-3 / float64(s), EagerS: 1e-3, SOLSeconds: 1e-4}, nil
}

func kernel(speed int) string { return fmt.Sprintf("SPEED = %d\nclass ModelNew: pass\n", speed) }

type fixture struct {
	st   *store.SQLite
	ev   *speedEval
	ref  string
	work string
}

func newFixture(t *testing.T, delay time.Duration) *fixture {
	t.Helper()
	dir := t.TempDir()
	db, err := store.Open(filepath.Join(dir, "k.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	st, err := store.New(context.Background(), db)
	if err != nil {
		t.Fatal(err)
	}
	ref := filepath.Join(dir, "ref.py")
	if err := os.WriteFile(ref, []byte("class Model: pass\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	return &fixture{st: st, ev: &speedEval{delay: delay}, ref: ref, work: dir}
}

func (f *fixture) manager(t *testing.T) *Manager {
	t.Helper()
	m, err := New(Options{Store: f.st, WorkDir: f.work,
		Evaluator: func(context.Context) (search.Evaluator, error) { return f.ev, nil },
		Resolve: func(_ context.Context, s engine.ProblemSpec) (search.Problem, string, error) {
			if s.Name != "test/speed" {
				return search.Problem{}, "", fmt.Errorf("unknown problem %q", s.Name)
			}
			return search.Problem{Name: s.Name, ReferencePath: f.ref, Target: s.Target, Language: "c"}, kernel(1), nil
		}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(m.Close)
	return m
}

func next(t *testing.T, m *Manager, id string) *Task {
	t.Helper()
	for i := 0; i < 20; i++ {
		r, err := m.Next(context.Background(), id, 5*time.Second)
		if err != nil {
			t.Fatalf("next: %v", err)
		}
		if r.State == NextReady {
			return r.Task
		}
	}
	t.Fatal("no task")
	return nil
}

func TestAgentLoop(t *testing.T) {
	f := newFixture(t, 10*time.Millisecond)
	m := f.manager(t)
	ctx := context.Background()
	run, err := m.Start(ctx, StartRequest{Problem: "test/speed", Target: "cpu", Budget: search.Budget{Evals: 4}})
	if err != nil {
		t.Fatal(err)
	}
	if run.Operator != OperatorName {
		t.Fatalf("operator %s", run.Operator)
	}
	task := next(t, m, run.ID)
	if task.Parent.Result == nil || task.Parent.Result.Verdict != search.VerdictPass || task.Problem.Reference == "" || task.EvalsLeft != 3 {
		t.Fatalf("first task: %+v", task)
	}
	// A wrong node id is refused with the node to use.
	if _, err := m.Submit(ctx, SubmitRequest{RunID: run.ID, NodeID: task.NodeID + 10, Code: kernel(2), Wait: time.Second}); err == nil ||
		!strings.Contains(err.Error(), fmt.Sprintf("child of node %d", task.NodeID)) {
		t.Fatalf("wrong node: %v", err)
	}
	for i, code := range []string{kernel(3), "BROKEN\n" + kernel(9), kernel(5)} {
		task := next(t, m, run.ID)
		var beats atomic.Int64
		res, err := m.Submit(ctx, SubmitRequest{RunID: run.ID, NodeID: task.NodeID, Code: code, Notes: fmt.Sprintf("try %d", i), Wait: 10 * time.Second,
			Progress: func(string) { beats.Add(1) }})
		if err != nil {
			t.Fatalf("submit %d: %v", i, err)
		}
		if res.State != SubmitEvaluated || res.Node == nil || res.Node.Result == nil || beats.Load() == 0 {
			t.Fatalf("submit %d: %+v", i, res)
		}
		if i == 1 && (res.Node.Result.Verdict != search.VerdictIncorrect || len(res.Node.FailedChecks) == 0 || res.NewBest) {
			t.Fatalf("broken kernel: %+v", res.Node)
		}
		if i == 0 && (!res.NewBest || res.Best.Fitness < 2.9) {
			t.Fatalf("first improvement not the best: %+v", res)
		}
	}
	// The budget of 4 evaluations is spent: the run ends and says so.
	if _, err := m.Next(ctx, run.ID, 10*time.Second); err == nil || !strings.Contains(err.Error(), "evolve_best") {
		t.Fatalf("next after the budget: %v", err)
	}
	if _, err := m.Submit(ctx, SubmitRequest{RunID: run.ID, NodeID: 1, Code: kernel(7), Wait: time.Second}); err == nil || !strings.Contains(err.Error(), "has ended") {
		t.Fatalf("submit to a finished run: %v", err)
	}
	st, err := m.Status(ctx, run.ID, 0, time.Second, nil)
	if err != nil {
		t.Fatal(err)
	}
	if st.Status != search.RunDone || st.Summary.Evaluations != 4 || len(st.Events) == 0 || st.NextSince == 0 {
		t.Fatalf("status: %+v", st)
	}
	best, err := m.Best(ctx, run.ID)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(best.Node.Code, "SPEED = 5") {
		t.Fatalf("best: %+v", best.Node)
	}
	// The siblings of a later task show what was tried.
	if n := f.ev.calls.Load(); n != 4 {
		t.Fatalf("%d evaluations, want 4", n)
	}
}

func TestSubmitSurvivesTheClientLeaving(t *testing.T) {
	f := newFixture(t, 300*time.Millisecond)
	m := f.manager(t)
	ctx := context.Background()
	run, err := m.Start(ctx, StartRequest{Problem: "test/speed", Target: "cpu", Budget: search.Budget{Evals: 5}})
	if err != nil {
		t.Fatal(err)
	}
	task := next(t, m, run.ID)
	cctx, cancel := context.WithTimeout(ctx, 50*time.Millisecond)
	defer cancel()
	if _, err := m.Submit(cctx, SubmitRequest{RunID: run.ID, NodeID: task.NodeID, Code: kernel(4), Wait: time.Minute}); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("submit with a client gone: %v", err)
	}
	task = next(t, m, run.ID)
	// Greedy expands the new best: the kernel whose caller left.
	if task.Parent.Result == nil || task.Parent.Result.Fitness < 3.9 || !strings.Contains(task.Parent.Code, "SPEED = 4") {
		t.Fatalf("the kernel submitted by a client that left was lost: %+v", task.Parent)
	}
	// Submitting twice for one task: the second waits for the run to be
	// ready, then is refused because the run expands another node.
	if _, err := m.Submit(ctx, SubmitRequest{RunID: run.ID, NodeID: task.NodeID, Code: kernel(6), Wait: 10 * time.Millisecond}); err != nil {
		t.Fatal(err)
	}
	if _, err := m.Submit(ctx, SubmitRequest{RunID: run.ID, NodeID: task.NodeID, Code: kernel(8), Wait: 5 * time.Second}); err == nil || !strings.Contains(err.Error(), "evolve_next") {
		t.Fatalf("second submit: %v", err)
	}
	// Submitting for the start kernel before its evaluation ends waits.
	run2, err := m.Start(ctx, StartRequest{Problem: "test/speed", Target: "cpu", Budget: search.Budget{Evals: 2}})
	if err != nil {
		t.Fatal(err)
	}
	res, err := m.Submit(ctx, SubmitRequest{RunID: run2.ID, NodeID: 1 + mustRoot(t, f, run2.ID), Code: kernel(2), Wait: 5 * time.Second})
	if err == nil || !strings.Contains(err.Error(), "not the node to expand") {
		t.Fatalf("early submit for the wrong node: %+v %v", res, err)
	}
	res, err = m.Submit(ctx, SubmitRequest{RunID: run2.ID, NodeID: mustRoot(t, f, run2.ID), Code: kernel(2), Wait: 5 * time.Second})
	if err != nil || res.State != SubmitEvaluated {
		t.Fatalf("early submit: %+v %v", res, err)
	}
}

func TestServerRestartPausesAndResumes(t *testing.T) {
	f := newFixture(t, 10*time.Millisecond)
	m1 := f.manager(t)
	ctx := context.Background()
	run, err := m1.Start(ctx, StartRequest{Problem: "test/speed", Target: "cpu", Budget: search.Budget{Evals: 3}})
	if err != nil {
		t.Fatal(err)
	}
	task := next(t, m1, run.ID)
	if _, err := m1.Submit(ctx, SubmitRequest{RunID: run.ID, NodeID: task.NodeID, Code: kernel(2), Wait: 10 * time.Second}); err != nil {
		t.Fatal(err)
	}
	next(t, m1, run.ID)
	m1.Close() // the server ends while the run waits for its agent
	r, err := f.st.Run(ctx, run.ID)
	if err != nil {
		t.Fatal(err)
	}
	if r.Status != search.RunPaused {
		t.Fatalf("after the server ended: %s (%s)", r.Status, r.StopReason)
	}
	m2 := f.manager(t)
	// submit does not resume on its own: the node to expand may change.
	if _, err := m2.Submit(ctx, SubmitRequest{RunID: run.ID, NodeID: task.NodeID, Code: kernel(3), Wait: time.Second}); err == nil || !strings.Contains(err.Error(), "evolve_next") {
		t.Fatalf("submit to a paused run: %v", err)
	}
	nr, err := m2.Next(ctx, run.ID, 5*time.Second)
	if err != nil || !nr.Resumed || nr.State != NextReady {
		t.Fatalf("next on a paused run: %+v %v", nr, err)
	}
	if _, err := m2.Submit(ctx, SubmitRequest{RunID: run.ID, NodeID: nr.Task.NodeID, Code: kernel(3), Wait: 10 * time.Second}); err != nil {
		t.Fatal(err)
	}
	st, err := m2.Status(ctx, run.ID, 0, 5*time.Second, nil)
	if err != nil {
		t.Fatal(err)
	}
	for st.Status != search.RunDone {
		time.Sleep(20 * time.Millisecond)
		if st, err = m2.Status(ctx, run.ID, 0, 0, nil); err != nil {
			t.Fatal(err)
		}
	}
	if st.Summary.Evaluations != 3 || f.ev.calls.Load() != 3 {
		t.Fatalf("after resume: %d evaluations, %d evaluator calls", st.Summary.Evaluations, f.ev.calls.Load())
	}
}

func TestStopAndErrors(t *testing.T) {
	f := newFixture(t, 10*time.Millisecond)
	m := f.manager(t)
	ctx := context.Background()
	if _, err := m.Next(ctx, "r-nope", time.Second); err == nil || !strings.Contains(err.Error(), "evolve_start") {
		t.Fatalf("unknown run: %v", err)
	}
	if _, err := m.Start(ctx, StartRequest{Problem: "test/speed", Target: "cpu"}); err == nil || !strings.Contains(err.Error(), "budget") {
		t.Fatalf("no budget: %v", err)
	}
	// Names and sources are bounded, and so is what a refusal says.
	for _, req := range []StartRequest{
		{Problem: strings.Repeat("p", 4<<20), Target: "cpu", Budget: search.Budget{Evals: 2}},
		{ProblemSource: strings.Repeat("#", 5<<20), Target: "cpu", Budget: search.Budget{Evals: 2}},
		{Problem: "test/speed", StartSource: "# ModelNew\n" + strings.Repeat("#", 5<<20), Target: "cpu", Budget: search.Budget{Evals: 2}},
	} {
		if _, err := m.Start(ctx, req); err == nil || len(err.Error()) > 1024 || !strings.Contains(err.Error(), "at most") && !strings.Contains(err.Error(), "limit") {
			t.Fatalf("oversized start: %.300v", err)
		}
	}
	if _, err := m.Start(ctx, StartRequest{Problem: "test/speed", Target: "tpu", Budget: search.Budget{Evals: 2}}); err == nil {
		t.Fatal("bad target accepted")
	}
	if _, err := m.Start(ctx, StartRequest{Problem: "test/speed", Operator: "tuner", Budget: search.Budget{Evals: 2}}); err == nil || !strings.Contains(err.Error(), "evolve_start") {
		t.Fatalf("server-side operator without one: %v", err)
	}
	run, err := m.Start(ctx, StartRequest{Problem: "test/speed", Target: "cpu", Budget: search.Budget{Evals: 10}})
	if err != nil {
		t.Fatal(err)
	}
	next(t, m, run.ID)
	// A kernel file that is not a regular file is refused, unread.
	for _, p := range []string{"/dev/zero", t.TempDir()} {
		if _, err := m.Submit(ctx, SubmitRequest{RunID: run.ID, Path: p}); err == nil || !strings.Contains(err.Error(), "not a regular file") {
			t.Fatalf("submit %s: %v", p, err)
		}
	}
	// A long poll with nothing new waits its time, with heartbeats.
	st, err := m.Status(ctx, run.ID, 0, 0, nil)
	if err != nil || st.AwaitingNode == 0 {
		t.Fatalf("status: %+v %v", st, err)
	}
	var beats atomic.Int64
	t0 := time.Now()
	st, err = m.Status(ctx, run.ID, st.NextSince, 6*time.Second, func(string) { beats.Add(1) })
	if err != nil || len(st.Events) != 0 || time.Since(t0) < 6*time.Second || beats.Load() == 0 {
		t.Fatalf("long poll: %d events after %s, %d heartbeats, %v", len(st.Events), time.Since(t0), beats.Load(), err)
	}
	r, err := m.Stop(ctx, run.ID, "")
	if err != nil || r.Status != search.RunStopped {
		t.Fatalf("stop: %+v %v", r, err)
	}
	if _, err := m.Next(ctx, run.ID, time.Second); err == nil || !strings.Contains(err.Error(), "stopped") {
		t.Fatalf("next on a stopped run: %v", err)
	}
	if _, err := m.Resume(ctx, run.ID, nil); err == nil {
		t.Fatal("resumed a stopped run")
	}
}

// A server killed with kill -9 leaves its run marked running: the next
// server says so and evolve_resume takes it over.
func TestTakeOverARunWhoseServerDied(t *testing.T) {
	f := newFixture(t, 10*time.Millisecond)
	ctx := context.Background()
	m1 := f.manager(t)
	run, err := m1.Start(ctx, StartRequest{Problem: "test/speed", Target: "cpu", Budget: search.Budget{Evals: 3}})
	if err != nil {
		t.Fatal(err)
	}
	next(t, m1, run.ID)
	m1.Close()
	r, _ := f.st.Run(ctx, run.ID)
	r.Status = search.RunRunning // what a killed server leaves behind
	if err := f.st.UpdateRun(ctx, r); err != nil {
		t.Fatal(err)
	}
	m2 := f.manager(t)
	if _, err := m2.Submit(ctx, SubmitRequest{RunID: run.ID, NodeID: 1, Code: kernel(2), Wait: time.Second}); err == nil || !strings.Contains(err.Error(), "take it over") {
		t.Fatalf("submit on an orphaned run: %v", err)
	}
	st, err := m2.Status(ctx, run.ID, 0, 0, nil)
	if err != nil || st.Active || !strings.Contains(st.Hint, "evolve_resume") {
		t.Fatalf("status of an orphaned run: %+v %v", st, err)
	}
	if nr, err := m2.Next(ctx, run.ID, 5*time.Second); err != nil || !nr.Resumed {
		t.Fatalf("next on an orphaned run: %+v %v", nr, err)
	}
	task := next(t, m2, run.ID)
	if _, err := m2.Submit(ctx, SubmitRequest{RunID: run.ID, NodeID: task.NodeID, Code: kernel(2), Wait: 10 * time.Second}); err != nil {
		t.Fatal(err)
	}
	// Extending a finished run's budget continues it.
	task = next(t, m2, run.ID)
	if _, err := m2.Submit(ctx, SubmitRequest{RunID: run.ID, NodeID: task.NodeID, Code: kernel(3), Wait: 10 * time.Second}); err != nil {
		t.Fatal(err)
	}
	if _, err := m2.Next(ctx, run.ID, 5*time.Second); err == nil {
		t.Fatal("run did not end on its budget")
	}
	if _, err := m2.ResumeWith(ctx, run.ID, &BudgetView{Evals: 4}); err != nil {
		t.Fatal(err)
	}
	task = next(t, m2, run.ID)
	if task.EvalsLeft != 1 {
		t.Fatalf("after extending the budget: %d evaluations left", task.EvalsLeft)
	}
}

// Inline sources become files the harness can read, and a start kernel
// without ModelNew is refused before anything runs.
func TestInlineSources(t *testing.T) {
	f := newFixture(t, 10*time.Millisecond)
	var got engine.ProblemSpec
	m, err := New(Options{Store: f.st, WorkDir: f.work,
		Evaluator: func(context.Context) (search.Evaluator, error) { return f.ev, nil },
		Resolve: func(_ context.Context, s engine.ProblemSpec) (search.Problem, string, error) {
			got = s
			b, err := os.ReadFile(s.StartFile)
			return search.Problem{Name: s.Name, ReferencePath: s.Name, Target: s.Target, Language: "c"}, string(b), err
		}})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	ctx := context.Background()
	if _, err := m.Start(ctx, StartRequest{ProblemSource: "class Model: pass\n", StartSource: "x = 1\n", Budget: search.Budget{Evals: 2}}); err == nil || !strings.Contains(err.Error(), "ModelNew") {
		t.Fatalf("start without ModelNew: %v", err)
	}
	if _, err := m.Start(ctx, StartRequest{Problem: "a", ProblemSource: "b", Budget: search.Budget{Evals: 2}}); err == nil {
		t.Fatal("problem and problem_source both accepted")
	}
	run, err := m.Start(ctx, StartRequest{ProblemSource: "class Model: pass\n", StartSource: kernel(1), Budget: search.Budget{Evals: 2}})
	if err != nil {
		t.Fatal(err)
	}
	ref, err := os.ReadFile(got.Name)
	if err != nil || string(ref) != "class Model: pass\n" || got.Target != "cpu" {
		t.Fatalf("inline reference: %q %v (%+v)", ref, err, got)
	}
	if task := next(t, m, run.ID); task.Problem.Reference != "class Model: pass\n" {
		t.Fatalf("task reference: %q", task.Problem.Reference)
	}
}

func mustRoot(t *testing.T, f *fixture, runID string) int64 {
	t.Helper()
	nodes, err := f.st.Nodes(context.Background(), runID)
	if err != nil || len(nodes) == 0 {
		t.Fatalf("nodes of %s: %v", runID, err)
	}
	return nodes[0].ID
}

// A start kernel the service cannot evaluate ends the run with a reason an
// agent can act on; a target the server lacks is refused up front.
func TestStartKernelFailureAndMissingTarget(t *testing.T) {
	f := newFixture(t, 10*time.Millisecond)
	m, err := New(Options{Store: f.st, WorkDir: f.work,
		Evaluator: func(context.Context) (search.Evaluator, error) { return f.ev, nil },
		// This host's answer, as the harness gives it for a GPU it lacks.
		ResolveTarget: func(_ context.Context, s string) (string, error) {
			if n, err := target.Parse(s); err != nil || n != target.CPU && n != target.Auto {
				return "", fmt.Errorf("no %s device found: none on this host", s)
			}
			return "cpu", nil
		},
		Resolve: func(_ context.Context, s engine.ProblemSpec) (search.Problem, string, error) {
			b, err := os.ReadFile(s.StartFile)
			return search.Problem{Name: "p", ReferencePath: f.ref, Target: s.Target, Language: "c"}, string(b), err
		}})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	ctx := context.Background()
	if _, err := m.Start(ctx, StartRequest{Problem: "p", StartSource: kernel(1), Target: "nvidia", Budget: search.Budget{Evals: 2}}); err == nil || !strings.Contains(err.Error(), "no nvidia device found") {
		t.Fatalf("nvidia on a CPU server: %v", err)
	}
	run, err := m.Start(ctx, StartRequest{Problem: "p", StartSource: "NOSERVICE\n" + kernel(1), Budget: search.Budget{Evals: 2}})
	if err != nil {
		t.Fatal(err)
	}
	_, err = m.Next(ctx, run.ID, 5*time.Second)
	if err == nil || !strings.Contains(err.Error(), "start kernel could not be evaluated: no worker for this target") {
		t.Fatalf("next after the start kernel failed: %v", err)
	}
}

// A run another live process drives is refused with the reason, not
// driven twice.
func TestRunDrivenElsewhereIsRefused(t *testing.T) {
	f := newFixture(t, 10*time.Millisecond)
	ctx := context.Background()
	m := f.manager(t)
	run, err := m.Start(ctx, StartRequest{Problem: "test/speed", Target: "cpu", Budget: search.Budget{Evals: 3}})
	if err != nil {
		t.Fatal(err)
	}
	next(t, m, run.ID)
	m.Close()
	// Another host's process claims it (alive until its heartbeat is stale).
	if err := f.st.AcquireRun(ctx, run.ID, "elsewhere:1:1", time.Minute, nil); err != nil {
		t.Fatal(err)
	}
	m2 := f.manager(t)
	_, err = m2.Next(ctx, run.ID, time.Second)
	if !errors.Is(err, search.ErrRunBusy) || !strings.Contains(err.Error(), "elsewhere") {
		t.Fatalf("next on a run driven elsewhere: %v", err)
	}
	if m2.Active(run.ID) {
		t.Fatal("the refused drive is still registered")
	}
}

// A corpus reference removed since the run started (a cache cleanup) is
// written again when the run resumes.
func TestResumeRewritesAMissingReference(t *testing.T) {
	f := newFixture(t, 10*time.Millisecond)
	ctx := context.Background()
	opts := func() Options {
		return Options{Store: f.st, WorkDir: f.work,
			Evaluator: func(context.Context) (search.Evaluator, error) { return f.ev, nil },
			Resolve: func(_ context.Context, s engine.ProblemSpec) (search.Problem, string, error) {
				if err := os.WriteFile(f.ref, []byte("class Model: pass\n"), 0o644); err != nil {
					return search.Problem{}, "", err
				}
				return search.Problem{Name: s.Name, ReferencePath: f.ref, Target: s.Target, Language: "c"}, kernel(1), nil
			}}
	}
	m1, err := New(opts())
	if err != nil {
		t.Fatal(err)
	}
	run, err := m1.Start(ctx, StartRequest{Problem: "test/speed", Target: "cpu", Budget: search.Budget{Evals: 3}})
	if err != nil {
		t.Fatal(err)
	}
	next(t, m1, run.ID)
	m1.Close()
	if err := os.Remove(f.ref); err != nil {
		t.Fatal(err)
	}
	m2, err := New(opts())
	if err != nil {
		t.Fatal(err)
	}
	defer m2.Close()
	if task := next(t, m2, run.ID); task.Problem.Reference == "" {
		t.Fatal("the reference was not written again")
	}
}

// An mcp run whose agent went away pauses after AgentIdle, and evolve_next
// resumes it with the same node to expand.
func TestIdleAgentRunPauses(t *testing.T) {
	f := newFixture(t, 10*time.Millisecond)
	ctx := context.Background()
	m, err := New(Options{Store: f.st, WorkDir: f.work, AgentIdle: 300 * time.Millisecond,
		Evaluator: func(context.Context) (search.Evaluator, error) { return f.ev, nil },
		Resolve: func(_ context.Context, s engine.ProblemSpec) (search.Problem, string, error) {
			return search.Problem{Name: s.Name, ReferencePath: f.ref, Target: s.Target, Language: "c"}, kernel(1), nil
		}})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	run, err := m.Start(ctx, StartRequest{Problem: "p", Budget: search.Budget{Evals: 3}})
	if err != nil {
		t.Fatal(err)
	}
	first := next(t, m, run.ID)
	var st StatusResult
	for deadline := time.Now().Add(10 * time.Second); st.Status != search.RunPaused; {
		if time.Now().After(deadline) {
			t.Fatalf("idle run not paused: %+v", st)
		}
		if st, err = m.Status(ctx, run.ID, st.NextSince, time.Second, nil); err != nil {
			t.Fatal(err)
		}
	}
	all, err := m.Status(ctx, run.ID, 0, 0, nil)
	if err != nil {
		t.Fatal(err)
	}
	idle := false
	for _, e := range all.Events {
		idle = idle || e.Kind == EventAgentIdle
	}
	if !idle || all.Active {
		t.Fatalf("paused run: %+v", all)
	}
	nr, err := m.Next(ctx, run.ID, 5*time.Second)
	if err != nil || !nr.Resumed || nr.State != NextReady || nr.Task.NodeID != first.NodeID {
		t.Fatalf("next after the idle pause: %+v %v", nr, err)
	}
	if _, err := m.Submit(ctx, SubmitRequest{RunID: run.ID, NodeID: nr.Task.NodeID, Code: kernel(2), Wait: 5 * time.Second}); err != nil {
		t.Fatal(err)
	}
}
