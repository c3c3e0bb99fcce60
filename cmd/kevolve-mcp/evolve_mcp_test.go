package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/kevolve/kevolve-mcp/harness/toolchain/toolchaintest"
	"github.com/kevolve/kevolve-mcp/search/store"
)

// evolveLoopResult is what client.mjs's evolve scenario reports.
type evolveLoopResult struct {
	RunID    string `json:"runId"`
	Operator string `json:"operator"`
	Submits  []struct {
		Parent  int64   `json:"parent"`
		Node    int64   `json:"node"`
		State   string  `json:"state"`
		Verdict string  `json:"verdict"`
		Fitness float64 `json:"fitness"`
	} `json:"submits"`
	Progress       int    `json:"progress"`
	WrongNodeError string `json:"wrongNodeError"`
	Status         string `json:"status"`
	Evaluations    int    `json:"evaluations"`
	Events         int    `json:"events"`
	Best           struct {
		Node    int64  `json:"node"`
		Verdict string `json:"verdict"`
		HasCode bool   `json:"hasCode"`
	} `json:"best"`
	FinishedError string `json:"finishedError"`
}

// runEvolveScenario runs client.mjs's evolve scenario from a copy of its
// own in the shared Node folder, so other tests rewriting client.mjs there
// cannot swap the script under it.
func runEvolveScenario(t *testing.T, node, dir string, args ...string) evolveLoopResult {
	t.Helper()
	src, err := os.ReadFile(filepath.Join("testdata", "node", "client.mjs"))
	if err != nil {
		t.Fatal(err)
	}
	script := filepath.Join(dir, fmt.Sprintf("client-evolve-%d-%d.mjs", os.Getpid(), time.Now().UnixNano()))
	if err := os.WriteFile(script, src, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.Remove(script) })
	ctx, cancel := context.WithCancel(toolchaintest.Context(t))
	defer cancel()
	cmd := exec.CommandContext(ctx, node, append([]string{script}, args...)...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "KEVOLVE_SCENARIO=evolve")
	out, err := cmd.Output()
	if err != nil {
		stderr := ""
		if ee, ok := err.(*exec.ExitError); ok {
			stderr = string(ee.Stderr)
		}
		t.Fatalf("TypeScript SDK evolve scenario %v: %v\n%s\n%s", args, err, out, stderr)
	}
	var r struct {
		Server  string           `json:"server"`
		IsError bool             `json:"isError"`
		Evolve  evolveLoopResult `json:"evolve"`
	}
	if err := json.Unmarshal(out, &r); err != nil {
		t.Fatalf("client output %q: %v", out, err)
	}
	if r.Server != "kevolve-mcp" || r.IsError {
		t.Fatalf("client saw %s", out)
	}
	t.Logf("evolve scenario: %s", out)
	return r.Evolve
}

func checkEvolveLoop(t *testing.T, e evolveLoopResult, dbPath string) {
	t.Helper()
	if e.RunID == "" || e.Operator != "mcp" || len(e.Submits) != 3 {
		t.Fatalf("loop: %+v", e)
	}
	for i, s := range e.Submits {
		if s.State != "evaluated" || s.Verdict != "pass" || s.Node <= s.Parent || !(s.Fitness > 0) {
			t.Errorf("submit %d: %+v%s", i, s, failedChecks(t, dbPath, e.RunID, s.Node))
		}
	}
	if !strings.Contains(e.WrongNodeError, "evolve_next") {
		t.Errorf("a wrong node id: %q", e.WrongNodeError)
	}
	if e.Status != "done" || e.Evaluations != 4 || e.Events == 0 {
		t.Errorf("status: %+v", e)
	}
	if e.Best.Verdict != "pass" || !e.Best.HasCode || e.Best.Node == 0 {
		t.Errorf("best: %+v", e.Best)
	}
	if !strings.Contains(e.FinishedError, "has ended") {
		t.Errorf("next on the finished run: %q", e.FinishedError)
	}
	if e.Progress == 0 {
		t.Errorf("no progress notifications during submits")
	}
}

// failedChecks reads a node's (0: every node's) failed checks from the server's database:
// what a verdict other than pass rests on.
func failedChecks(t *testing.T, dbPath, runID string, node int64) string {
	ctx := context.Background()
	db, err := store.Open(dbPath)
	if err != nil {
		return fmt.Sprintf(" (database: %v)", err)
	}
	defer db.Close()
	st, err := store.New(ctx, db)
	if err != nil {
		return fmt.Sprintf(" (store: %v)", err)
	}
	nodes, err := st.Nodes(ctx, runID)
	if err != nil {
		return fmt.Sprintf(" (nodes: %v)", err)
	}
	var b strings.Builder
	for _, n := range nodes {
		if (node != 0 && n.ID != node) || n.Result == nil {
			continue
		}
		fmt.Fprintf(&b, "\n  #%d stage %s, time %.3g s, eager %.3g s", n.ID, n.Result.Stage, n.Result.TimeS, n.Result.EagerS)
		for _, c := range n.Result.Checks {
			if !c.Passed {
				fmt.Fprintf(&b, "\n  check %s failed: %s", c.Name, c.Detail)
			}
		}
	}
	return b.String()
}

// The agent loop through the official TypeScript SDK, over stdio and over
// HTTP: start, three next/submit rounds on C kernels on the CPU, status,
// best; the SDK checks each result against its tool's output schema.
func TestIndependentClientEvolveLoop(t *testing.T) {
	dir, node := nodeDir(t)
	py := toolchaintest.Python(t)
	t.Run("stdio", func(t *testing.T) {
		// The SDK passes the server a minimal environment: say where the
		// database and Python are with flags.
		dbPath := filepath.Join(t.TempDir(), "k.db")
		e := runEvolveScenario(t, node, dir, "stdio", binary, "--db", dbPath, "--python", py, "--stdio")
		checkEvolveLoop(t, e, dbPath)
	})
	t.Run("http", func(t *testing.T) {
		dbPath := filepath.Join(t.TempDir(), "k.db")
		s := startHTTP(t, "--db", dbPath, "--python", py, "--http", "127.0.0.1:0")
		checkEvolveLoop(t, runEvolveScenario(t, node, dir, "http", s.url), dbPath)
	})
}

func callTool(t *testing.T, c *client.Client, name string, args map[string]any, out any) string {
	t.Helper()
	req := mcp.CallToolRequest{}
	req.Params.Name, req.Params.Arguments = name, args
	res, err := c.CallTool(context.Background(), req)
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	text := ""
	for _, ct := range res.Content {
		if tc, ok := ct.(mcp.TextContent); ok {
			text += tc.Text
		}
	}
	if res.IsError {
		return text
	}
	b, _ := json.Marshal(res.StructuredContent)
	if err := json.Unmarshal(b, out); err != nil {
		t.Fatalf("%s: %s: %v", name, b, err)
	}
	return ""
}

// A server that ends pauses its runs; the next server resumes one where
// it stopped, with nothing evaluated twice.
func TestEvolveRunPausesWithItsServer(t *testing.T) {
	py := toolchaintest.Python(t)
	db := filepath.Join(t.TempDir(), "k.db")
	open := func() *client.Client {
		c, err := client.NewStdioMCPClient(binary, nil, "--db", db, "--python", py, "--stdio")
		if err != nil {
			t.Fatal(err)
		}
		req := mcp.InitializeRequest{}
		req.Params.ProtocolVersion = mcp.LATEST_PROTOCOL_VERSION
		if _, err := c.Initialize(context.Background(), req); err != nil {
			t.Fatal(err)
		}
		return c
	}
	type task struct {
		State string `json:"state"`
		Task  *struct {
			NodeID int64 `json:"node_id"`
			Parent struct {
				Code string `json:"code"`
			} `json:"parent"`
		} `json:"task"`
		Resumed bool `json:"resumed"`
	}
	next := func(c *client.Client, id string) task {
		for i := 0; i < 10; i++ {
			var r task
			if msg := callTool(t, c, "evolve_next", map[string]any{"run_id": id, "wait_s": 45, "include_code": true}, &r); msg != "" {
				t.Fatalf("evolve_next: %s", msg)
			}
			if r.State == "ready" {
				return r
			}
		}
		t.Fatal("never ready")
		return task{}
	}
	c := open()
	var info struct {
		RunID   string   `json:"run_id"`
		Devices []string `json:"devices"`
	}
	if msg := callTool(t, c, "evolve_start", map[string]any{"problem": "other/relu", "target": "cpu", "budget": 2}, &info); msg != "" {
		t.Fatal(msg)
	}
	if len(info.Devices) != 1 || info.Devices[0] == "" {
		t.Fatalf("the run records no CPU: %+v", info)
	}
	first := next(c, info.RunID)
	c.Close() // the server sees EOF on stdin and ends
	time.Sleep(2 * time.Second)

	c = open()
	defer c.Close()
	var st struct {
		Status  string `json:"status"`
		Active  bool   `json:"active"`
		Summary struct {
			Evaluations int `json:"evaluations"`
		} `json:"summary"`
	}
	if msg := callTool(t, c, "evolve_status", map[string]any{"run_id": info.RunID}, &st); msg != "" {
		t.Fatal(msg)
	}
	if st.Status != "paused" || st.Active || st.Summary.Evaluations != 1 {
		t.Fatalf("after its server ended: %+v", st)
	}
	again := next(c, info.RunID)
	if !again.Resumed || again.Task.NodeID != first.Task.NodeID {
		t.Fatalf("resumed task: %+v (first: node %d)", again, first.Task.NodeID)
	}
	var sub struct {
		State string `json:"state"`
	}
	code := strings.Replace(again.Task.Parent.Code, "THREADS = 0", "THREADS = 2", 1)
	if msg := callTool(t, c, "evolve_submit", map[string]any{"run_id": info.RunID, "node_id": again.Task.NodeID, "code": code, "wait_s": 300}, &sub); msg != "" {
		t.Fatal(msg)
	}
	for deadline := time.Now().Add(time.Minute); st.Status != "done" && time.Now().Before(deadline); {
		if msg := callTool(t, c, "evolve_status", map[string]any{"run_id": info.RunID, "wait_s": 5}, &st); msg != "" {
			t.Fatal(msg)
		}
	}
	if st.Status != "done" || st.Summary.Evaluations != 2 {
		t.Fatalf("resumed run: %+v", st)
	}
}

// A server SIGKILLed while a submitted kernel is being evaluated: the next
// server takes the run over (its driver is dead), evaluates that kernel
// again (the one in flight), and the run goes on with nothing lost.
func TestEvolveServerKilledMidSubmit(t *testing.T) {
	py := toolchaintest.Python(t)
	db := filepath.Join(t.TempDir(), "k.db")
	open := func() (*client.Client, *exec.Cmd) {
		var proc *exec.Cmd
		tr := transport.NewStdioWithOptions(binary, nil, []string{"--db", db, "--python", py, "--stdio"},
			transport.WithCommandFunc(func(ctx context.Context, command string, env, args []string) (*exec.Cmd, error) {
				proc = exec.CommandContext(ctx, command, args...)
				proc.Env = append(os.Environ(), env...)
				return proc, nil
			}))
		c := client.NewClient(tr)
		if err := c.Start(context.Background()); err != nil {
			t.Fatal(err)
		}
		req := mcp.InitializeRequest{}
		req.Params.ProtocolVersion = mcp.LATEST_PROTOCOL_VERSION
		if _, err := c.Initialize(context.Background(), req); err != nil {
			t.Fatal(err)
		}
		return c, proc
	}
	type nextResult struct {
		State   string `json:"state"`
		Resumed bool   `json:"resumed"`
		Task    *struct {
			NodeID int64 `json:"node_id"`
			Parent struct {
				Code string `json:"code"`
			} `json:"parent"`
		} `json:"task"`
	}
	next := func(c *client.Client, id string) nextResult {
		resumed := false
		for i := 0; i < 10; i++ {
			var r nextResult
			if msg := callTool(t, c, "evolve_next", map[string]any{"run_id": id, "wait_s": 45, "include_code": true}, &r); msg != "" {
				t.Fatalf("evolve_next: %s", msg)
			}
			resumed = resumed || r.Resumed
			if r.State == "ready" {
				r.Resumed = resumed
				return r
			}
		}
		t.Fatal("never ready")
		return nextResult{}
	}
	c, proc := open()
	var info struct {
		RunID string `json:"run_id"`
	}
	if msg := callTool(t, c, "evolve_start", map[string]any{"problem": "other/relu", "target": "cpu", "budget": 3}, &info); msg != "" {
		t.Fatal(msg)
	}
	task := next(c, info.RunID)
	var sub struct {
		State string `json:"state"`
		Node  struct {
			ID int64 `json:"id"`
		} `json:"node"`
	}
	code := strings.Replace(task.Task.Parent.Code, "THREADS = 0", "THREADS = 1", 1)
	if msg := callTool(t, c, "evolve_submit", map[string]any{"run_id": info.RunID, "node_id": task.Task.NodeID, "code": code, "wait_s": 0.5}, &sub); msg != "" {
		t.Fatal(msg)
	}
	if sub.State != "evaluating" || sub.Node.ID == 0 {
		t.Fatalf("submit answered %+v: the evaluation was not in flight when the server was killed", sub)
	}
	if err := proc.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	_ = proc.Wait()
	c.Close()

	c, _ = open()
	defer c.Close()
	var st struct {
		Status  string `json:"status"`
		Active  bool   `json:"active"`
		Summary struct {
			Evaluations int `json:"evaluations"`
			InFlight    int `json:"in_flight"`
		} `json:"summary"`
	}
	if msg := callTool(t, c, "evolve_status", map[string]any{"run_id": info.RunID}, &st); msg != "" {
		t.Fatal(msg)
	}
	if st.Status != "running" || st.Active || st.Summary.InFlight != 1 {
		t.Fatalf("after the kill: %+v", st)
	}
	again := next(c, info.RunID)
	if !again.Resumed {
		t.Fatalf("the killed server's run was not taken over: %+v", again)
	}
	if msg := callTool(t, c, "evolve_status", map[string]any{"run_id": info.RunID}, &st); msg != "" {
		t.Fatal(msg)
	}
	if st.Summary.Evaluations != 2 || st.Summary.InFlight != 0 || !st.Active {
		t.Fatalf("after the takeover: %+v", st)
	}
	code = strings.Replace(again.Task.Parent.Code, "THREADS = 1", "THREADS = 2", 1)
	code = strings.Replace(code, "THREADS = 0", "THREADS = 2", 1)
	if msg := callTool(t, c, "evolve_submit", map[string]any{"run_id": info.RunID, "node_id": again.Task.NodeID, "code": code, "wait_s": 300}, &sub); msg != "" {
		t.Fatal(msg)
	}
	for deadline := time.Now().Add(time.Minute); st.Status != "done" && time.Now().Before(deadline); {
		if msg := callTool(t, c, "evolve_status", map[string]any{"run_id": info.RunID, "wait_s": 5}, &st); msg != "" {
			t.Fatal(msg)
		}
	}
	if st.Status != "done" || st.Summary.Evaluations != 3 {
		t.Fatalf("the run after the kill: %+v", st)
	}
}
