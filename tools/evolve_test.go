package tools

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/kevolve/kevolve-mcp/corpus"
	"github.com/kevolve/kevolve-mcp/search"
	"github.com/kevolve/kevolve-mcp/search/engine"
	"github.com/kevolve/kevolve-mcp/search/harnesseval"
	"github.com/kevolve/kevolve-mcp/search/launch"
	"github.com/kevolve/kevolve-mcp/search/runs"
	"github.com/kevolve/kevolve-mcp/search/store"
	"github.com/kevolve/kevolve-mcp/tools/toolstest"
)

// evolveServer is an MCP server with the search tools over a real store,
// the real harness (CPU, C kernels) and the tuner, and a client on it.
func evolveServer(t *testing.T) (*client.Client, *runs.Manager) {
	t.Helper()
	ev := rkEvaluator(t)
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
	corpusRoot := filepath.Join(dir, "corpus")
	m, err := runs.New(runs.Options{Store: st, WorkDir: dir,
		Evaluator: func(context.Context) (search.Evaluator, error) { return &harnesseval.Adapter{Ev: ev}, nil },
		Resolve: func(ctx context.Context, s engine.ProblemSpec) (search.Problem, string, error) {
			s.CorpusRoot = corpusRoot
			return engine.ResolveProblem(ctx, nil, s)
		},
		Launch: &launch.Launcher{},
		Report: func(ctx context.Context, st search.Store, id string) (string, error) {
			return engine.WriteReport(ctx, st, id, filepath.Join(dir, "runs", id), nil)
		}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(m.Close)
	// Output validation: every answer must fit the compacted output schemas.
	srv := server.NewMCPServer("test", "0", server.WithToolCapabilities(false), server.WithResourceCapabilities(false, false),
		server.WithInputSchemaValidation(), server.WithOutputSchemaValidation())
	srv.AddTools(Evolve(m), EvolveStart(m), EvolveNext(m), EvolveSubmit(m), EvolveStatus(m), EvolveStop(m), EvolveResume(m), EvolveBest(m))
	srv.AddResourceTemplates(RunResources(m)...)
	return toolstest.Connect(t, srv), m
}

func reluStart(t *testing.T) string {
	t.Helper()
	p, err := corpus.Get("other/relu")
	if err != nil {
		t.Fatal(err)
	}
	src, err := p.StartSource("c")
	if err != nil {
		t.Fatal(err)
	}
	return src
}

// nextTask waits for the run's next task; includeCode asks for the
// parent's code and the reference inline.
func nextTask(t *testing.T, c *client.Client, runID string, includeCode bool) *runs.Task {
	t.Helper()
	for i := 0; i < 10; i++ {
		var nr runs.NextResult
		toolstest.Decode(t, toolstest.Call(t, c, "evolve_next", map[string]any{"run_id": runID, "wait_s": 45, "include_code": includeCode}), &nr)
		if nr.State == runs.NextReady {
			return nr.Task
		}
	}
	t.Fatal("evolve_next never became ready")
	return nil
}

// The agent loop through a real MCP client on the CPU with C kernels:
// start, next/submit three times (one caller leaves mid-submit, one kernel
// does not compile), a wrong node id, the finished run, status, best and
// the run:// resource.
func TestEvolveAgentLoopOverMCP(t *testing.T) {
	c, _ := evolveServer(t)
	start := reluStart(t)
	var info runs.RunInfo
	toolstest.Decode(t, toolstest.Call(t, c, "evolve_start", map[string]any{"problem": "other/relu", "target": "cpu", "budget": 4}), &info)
	if info.Operator != runs.OperatorName || info.Status == "" || info.RunID == "" || info.Budget.Evals != 4 {
		t.Fatalf("evolve_start: %+v", info)
	}
	id := info.RunID

	task := nextTask(t, c, id, true)
	if task.Parent.Code != start || task.Parent.Result == nil || task.Parent.Result.Verdict != search.VerdictPass || task.Problem.Reference == "" || task.EvalsLeft != 3 {
		t.Fatalf("first task: %+v", task)
	}
	res := toolstest.Call(t, c, "evolve_submit", map[string]any{"run_id": id, "node_id": task.NodeID + 7, "code": start})
	if !res.IsError || !strings.Contains(toolstest.Text(res), "evolve_next") {
		t.Fatalf("wrong node id: %s", toolstest.Text(res))
	}

	// 1: the caller goes away a second into the evaluation; nothing is lost.
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	req := mcp.CallToolRequest{}
	req.Params.Name = "evolve_submit"
	req.Params.Arguments = map[string]any{"run_id": id, "node_id": task.NodeID, "notes": "one thread",
		"code": strings.Replace(start, "THREADS = 0", "THREADS = 1", 1)}
	// The in-process transport hands the call's context to the handler:
	// the caller's end shows as an error or as the handler's tool error.
	left, err := c.CallTool(ctx, req)
	cancel()
	if !errors.Is(err, context.DeadlineExceeded) && (left == nil || !left.IsError || !strings.Contains(toolstest.Text(left), "deadline")) {
		t.Fatalf("submit whose caller left: %v %+v", err, left)
	}
	var st runs.StatusResult
	deadline := time.Now().Add(3 * time.Minute)
	for seen := false; !seen; {
		if time.Now().After(deadline) {
			t.Fatalf("the left caller's kernel never finished: %+v", st)
		}
		toolstest.Decode(t, toolstest.Call(t, c, "evolve_status", map[string]any{"run_id": id, "since": st.NextSince, "wait_s": 45}), &st)
		for _, e := range st.Events {
			seen = seen || (e.Kind == search.EventEvaluated && strings.Contains(e.Message, "one thread"))
		}
	}

	// 2: with a progress token, progress notifications arrive.
	var mu sync.Mutex
	var notes []string
	c.OnNotification(func(n mcp.JSONRPCNotification) {
		if n.Method == "notifications/progress" {
			mu.Lock()
			notes = append(notes, fmt.Sprint(n.Params.AdditionalFields["message"]))
			mu.Unlock()
		}
	})
	task = nextTask(t, c, id, false)
	if len(task.Lineage)+len(task.Siblings) == 0 && task.Parent.Operator == "start" {
		t.Fatalf("second task shows no history: %+v", task)
	}
	req.Params.Arguments = map[string]any{"run_id": id, "node_id": task.NodeID, "notes": "two threads",
		"code": strings.Replace(start, "THREADS = 0", "THREADS = 2", 1)}
	req.Params.Meta = &mcp.Meta{ProgressToken: "submit-2"}
	r2, err := c.CallTool(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	var sub runs.SubmitResult
	toolstest.Decode(t, r2, &sub)
	if sub.State != runs.SubmitEvaluated || sub.Node == nil || sub.Node.Result == nil || sub.Node.Result.Verdict != search.VerdictPass || sub.Best == nil {
		t.Fatalf("submit 2: %+v", sub)
	}
	mu.Lock()
	if len(notes) == 0 || !strings.Contains(notes[0], "accepted") {
		t.Errorf("no progress notifications for a submit with a token: %q", notes)
	}
	mu.Unlock()

	// 3: a kernel that does not compile gets its verdict, not a tool error.
	task = nextTask(t, c, id, false)
	toolstest.Decode(t, toolstest.Call(t, c, "evolve_submit", map[string]any{"run_id": id, "node_id": task.NodeID, "notes": "typo",
		"code": strings.Replace(start, "float v = x[i];", "float v = x[i]", 1)}), &sub)
	if sub.Node == nil || sub.Node.Result == nil || sub.Node.Result.Verdict != search.VerdictCompileError || sub.NewBest {
		t.Fatalf("broken kernel: %+v", sub.Node)
	}

	// The budget is spent: the run is done and says what to do.
	res = toolstest.Call(t, c, "evolve_next", map[string]any{"run_id": id, "wait_s": 45})
	if !res.IsError || !strings.Contains(toolstest.Text(res), "evolve_best") {
		t.Fatalf("next on a finished run: %s", toolstest.Text(res))
	}
	res = toolstest.Call(t, c, "evolve_submit", map[string]any{"run_id": id, "node_id": 1, "code": start})
	if !res.IsError || !strings.Contains(toolstest.Text(res), "has ended") {
		t.Fatalf("submit to a finished run: %s", toolstest.Text(res))
	}
	toolstest.Decode(t, toolstest.Call(t, c, "evolve_status", map[string]any{"run_id": id}), &st)
	if st.Status != search.RunDone || st.Summary.Evaluations != 4 || st.Summary.Passed != 3 {
		t.Fatalf("status: %+v", st.Summary)
	}
	var best runs.BestResult
	toolstest.Decode(t, toolstest.Call(t, c, "evolve_best", map[string]any{"run_id": id}), &best)
	if best.Node.Result == nil || best.Node.Result.Verdict != search.VerdictPass || !strings.Contains(best.Node.Code, "ModelNew") {
		t.Fatalf("best: %+v", best.Node)
	}
	rr := mcp.ReadResourceRequest{}
	rr.Params.URI = "run://" + id
	rc, err := c.ReadResource(context.Background(), rr)
	if err != nil || len(rc.Contents) != 1 || !strings.Contains(rc.Contents[0].(mcp.TextResourceContents).Text, `"evaluations": 4`) {
		t.Fatalf("run resource: %+v %v", rc, err)
	}
	// Stopping a finished run changes nothing; a larger budget continues
	// it, and evolve_stop ends a run waiting for its agent at once.
	var ri runs.RunInfo
	toolstest.Decode(t, toolstest.Call(t, c, "evolve_stop", map[string]any{"run_id": id}), &ri)
	if ri.Status != search.RunDone {
		t.Fatalf("stop of a finished run: %+v", ri)
	}
	res = toolstest.Call(t, c, "evolve_resume", map[string]any{"run_id": id})
	if !res.IsError || !strings.Contains(toolstest.Text(res), "larger budget") {
		t.Fatalf("resume of a finished run: %s", toolstest.Text(res))
	}
	toolstest.Decode(t, toolstest.Call(t, c, "evolve_resume", map[string]any{"run_id": id, "budget": 5}), &ri)
	if !ri.Active || ri.Budget.Evals != 5 {
		t.Fatalf("resume with a budget: %+v", ri)
	}
	if task := nextTask(t, c, id, false); task.EvalsLeft != 1 {
		t.Fatalf("after the new budget: %+v", task)
	}
	toolstest.Decode(t, toolstest.Call(t, c, "evolve_stop", map[string]any{"run_id": id, "reason": "enough"}), &ri)
	if ri.Status != search.RunStopped || ri.StopReason != "enough" || ri.Active {
		t.Fatalf("stop: %+v", ri)
	}
	// The report resource: search/report's self-contained page.
	rr.Params.URI = "run://" + id + "/report.html"
	rc, err = c.ReadResource(context.Background(), rr)
	if err != nil {
		t.Fatalf("report.html: %v", err)
	}
	if tc := rc.Contents[0].(mcp.TextResourceContents); tc.MIMEType != "text/html" || !strings.Contains(tc.Text, "<html") || !strings.Contains(tc.Text, id) {
		t.Fatalf("report.html is not the run's page: %s %.200s", tc.MIMEType, tc.Text)
	}
	rr.Params.URI = "run://r-missing"
	if _, err := c.ReadResource(context.Background(), rr); err == nil {
		t.Fatal("an unknown run's resource was served")
	}
	res = toolstest.Call(t, c, "evolve_status", map[string]any{"run_id": "r-missing"})
	if !res.IsError || !strings.Contains(toolstest.Text(res), "evolve_start") {
		t.Fatalf("unknown run: %s", toolstest.Text(res))
	}
}

// evolve runs the tuner on the server and returns at once; evolve_status
// follows it to the end.
func TestEvolveServerSideTuner(t *testing.T) {
	c, _ := evolveServer(t)
	var info runs.RunInfo
	t0 := time.Now()
	toolstest.Decode(t, toolstest.Call(t, c, "evolve", map[string]any{"problem": "other/relu", "target": "cpu", "budget": 2}), &info)
	if info.Operator != "tuner" || !info.Active || time.Since(t0) > 10*time.Second {
		t.Fatalf("evolve: %+v after %s", info, time.Since(t0))
	}
	res := toolstest.Call(t, c, "evolve_next", map[string]any{"run_id": info.RunID})
	if !res.IsError || !strings.Contains(toolstest.Text(res), "tuner") {
		t.Fatalf("next on a tuner run: %s", toolstest.Text(res))
	}
	var st runs.StatusResult
	for deadline := time.Now().Add(3 * time.Minute); st.Status != search.RunDone; {
		if time.Now().After(deadline) {
			t.Fatalf("tuner run never finished: %+v", st)
		}
		toolstest.Decode(t, toolstest.Call(t, c, "evolve_status", map[string]any{"run_id": info.RunID, "since": st.NextSince, "wait_s": 45}), &st)
	}
	if st.Summary.Evaluations != 2 || st.Active {
		t.Fatalf("tuner run: %+v", st)
	}
	var best runs.BestResult
	toolstest.Decode(t, toolstest.Call(t, c, "evolve_best", map[string]any{"run_id": info.RunID}), &best)
	res = toolstest.Call(t, c, "evolve", map[string]any{"problem": "other/relu", "operator": "mcp", "budget": 2})
	if !res.IsError || !strings.Contains(toolstest.Text(res), "evolve_start") {
		t.Fatalf("evolve with operator mcp: %s", toolstest.Text(res))
	}
}
