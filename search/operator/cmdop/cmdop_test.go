package cmdop

import (
	"context"
	"database/sql"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	_ "github.com/mattn/go-sqlite3"

	"github.com/kevolve/kevolve-mcp/harness"
	"github.com/kevolve/kevolve-mcp/harness/toolchain/toolchaintest"
	"github.com/kevolve/kevolve-mcp/search"
	"github.com/kevolve/kevolve-mcp/search/engine"
	"github.com/kevolve/kevolve-mcp/search/harnesseval"
	"github.com/kevolve/kevolve-mcp/search/operator/novelty"
	"github.com/kevolve/kevolve-mcp/search/store"
)

func agent(t *testing.T, name string) string {
	t.Helper()
	p, err := filepath.Abs(filepath.Join("testdata", "agents", name))
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// rmsnorm resolves the corpus problem on the CPU with its C start kernel.
func rmsnorm(t *testing.T) (search.Problem, string) {
	t.Helper()
	p, start, err := engine.ResolveProblem(context.Background(), nil, engine.ProblemSpec{Name: "llm/rmsnorm", Target: "cpu", CorpusRoot: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	return p, start
}

func rootContext(p search.Problem, start string) search.Context {
	root := &search.Node{ID: 1, Code: start, Language: "c", Operator: "start", State: search.NodeDone,
		Result: &search.Result{Verdict: "pass", Correct: true, TimeS: 1e-3, EagerS: 1e-3, Fitness: 1}}
	return search.Context{Run: &search.Run{ID: "run-test"}, Problem: p, Parents: []*search.Node{root},
		Graph: search.NewGraph([]*search.Node{root}), Selection: search.Selection{Parents: []int64{1}}}
}

func newOp(t *testing.T, spec string, deadline time.Duration) *Op {
	t.Helper()
	o, err := New(spec, Config{Deadline: deadline, WorkRoot: t.TempDir(), Server: []string{"/bin/false"}})
	if err != nil {
		t.Fatal(err)
	}
	return o
}

func propose(o *Op, c search.Context) (search.Proposal, time.Duration, error) {
	ctx, cancel := context.WithTimeout(context.Background(), o.Deadline())
	defer cancel()
	t0 := time.Now()
	p, err := o.Propose(ctx, c)
	return p, time.Since(t0), err
}

func TestProposeContract(t *testing.T) {
	p, start := rmsnorm(t)
	c := rootContext(p, start)
	t.Run("faster", func(t *testing.T) {
		prop, _, err := propose(newOp(t, "cmd:"+agent(t, "faster.sh"), time.Minute), c)
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(prop.Code, "float acc = 0.0f") || prop.Tokens != 1540 || prop.Notes != "float accumulator" {
			t.Errorf("proposal: tokens %d, notes %q", prop.Tokens, prop.Notes)
		}
		var in Input
		if err := json.Unmarshal(prop.Inputs, &in); err != nil {
			t.Fatal(err)
		}
		if in.ContextVersion == "" || len(in.ContextHash) != 64 || in.ContextTokens == 0 || in.CostUSD != 0.004 || !strings.Contains(in.Context, "# Task: llm/rmsnorm") {
			t.Errorf("inputs %+v", in)
		}
		if _, err := os.Stat(in.WorkDir); !os.IsNotExist(err) {
			t.Errorf("a successful proposal's working dir stays: %v", err)
		}
	})
	t.Run("wrong", func(t *testing.T) {
		prop, _, err := propose(newOp(t, "cmd:"+agent(t, "wrong.sh"), time.Minute), c)
		if err != nil || !strings.Contains(prop.Code, "yr[j] = xr[j] * w[j];") || prop.Tokens != 500 {
			t.Fatalf("%v %d", err, prop.Tokens)
		}
	})
	failures := []struct {
		script   string
		deadline time.Duration
		want     []string
	}{
		{"fail.sh", time.Minute, []string{"exit status 3", "model quota exhausted", "reading kernel.py", "kept"}},
		{"unchanged.sh", time.Minute, []string{"unchanged", "looks good to me"}},
		{"hang.sh", 2 * time.Second, []string{"deadline", "working on it", "process group killed"}},
	}
	for _, f := range failures {
		t.Run(f.script, func(t *testing.T) {
			o := newOp(t, "cmd:"+agent(t, f.script), f.deadline)
			_, took, err := propose(o, c)
			if err == nil {
				t.Fatal("a failed proposal was accepted")
			}
			for _, w := range f.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error lacks %q: %v", w, err)
				}
			}
			if took > f.deadline+10*time.Second {
				t.Errorf("took %s past a %s deadline", took, f.deadline)
			}
			if f.script == "hang.sh" {
				assertGrandchildDead(t, o.cfg.WorkRoot)
			}
		})
	}
}

// assertGrandchildDead finds the pid the hanging agent's own child wrote
// and checks that the process group kill reached it.
func assertGrandchildDead(t *testing.T, root string) {
	t.Helper()
	m, _ := filepath.Glob(filepath.Join(root, "*", "*", "grandchild.pid"))
	if len(m) != 1 {
		t.Fatalf("grandchild.pid: %v", m)
	}
	b, _ := os.ReadFile(m[0])
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(5 * time.Second)
	for {
		// A zombie is dead too: its parent (the killed shell) is gone and
		// init reaps it.
		st, _ := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
		if syscall.Kill(pid, 0) != nil || strings.Contains(string(st), ") Z ") {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("grandchild %d still alive after the deadline", pid)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func TestBadSpecs(t *testing.T) {
	for _, s := range []string{"cmd:", "cmd:   ", "gpt", ""} {
		if _, err := New(s, Config{Server: []string{"x"}}); err == nil {
			t.Errorf("%q accepted", s)
		}
	}
}

// TestEngineWithScriptedAgents runs whole searches with the real harness:
// the faster agent's kernel passes, the wrong agent's is judged incorrect,
// and the failing agent's proposals are recorded as events while the run
// ends with its evaluated start kernel intact.
func TestEngineWithScriptedAgents(t *testing.T) {
	py := toolchaintest.Python(t)
	ev, err := harness.NewEvaluator(harness.EvalConfig{Python: py, CacheDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	defer ev.Close()
	p, start := rmsnorm(t)
	cases := []struct {
		script  string
		verdict string
	}{
		{"faster.sh", search.VerdictPass},
		{"wrong.sh", search.VerdictIncorrect},
		{"fail.sh", ""},
	}
	for _, tc := range cases {
		t.Run(tc.script, func(t *testing.T) {
			st := newStore(t) // a store each: runs of one problem share evaluations by code hash
			op := newOp(t, "cmd:"+agent(t, tc.script), time.Minute)
			e := &engine.Engine{Store: st, Eval: &harnesseval.Adapter{Ev: ev, Trials: 2}, Operator: op}
			run, err := e.Run(context.Background(), engine.StartOptions{Problem: p, StartCode: start, Policy: "greedy", Budget: search.Budget{Evals: 2}, Seed: 1})
			nodes, nerr := st.Nodes(context.Background(), run.ID)
			if nerr != nil {
				t.Fatal(nerr)
			}
			if tc.verdict == "" {
				if err == nil || !strings.Contains(err.Error(), "quota exhausted") {
					t.Fatalf("run error %v", err)
				}
				if !nodes[0].Evaluated() {
					t.Fatal("start kernel lost")
				}
				// Each failed proposal is a failed node with the agent's output.
				for _, n := range nodes[1:] {
					var in Input
					json.Unmarshal(n.OperatorInput, &in)
					if n.State != search.NodeFailed || !strings.Contains(n.Error, "quota exhausted") || !strings.Contains(in.Output, "quota exhausted") {
						t.Errorf("node %d: %s %q", n.ID, n.State, n.Error)
					}
				}
				if len(nodes) != 6 {
					t.Errorf("%d nodes, want the start and 5 failed proposals", len(nodes))
				}
				evs, _ := st.Events(context.Background(), run.ID, 0, 100)
				n := 0
				for _, e := range evs {
					if e.Kind == search.EventProposeErr && strings.Contains(e.Message, "quota exhausted") {
						n++
					}
				}
				if n == 0 {
					t.Error("failed proposals not recorded as events")
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if len(nodes) != 2 || nodes[1].Result == nil || nodes[1].Result.Verdict != tc.verdict {
				t.Fatalf("nodes %d, child %+v", len(nodes), nodes[len(nodes)-1].Result)
			}
			if nodes[1].Operator != op.Name() || nodes[1].Cost.Tokens == 0 || len(nodes[1].OperatorInput) == 0 {
				t.Errorf("child node %+v", nodes[1])
			}
		})
	}
}

func newStore(t *testing.T) search.Store {
	t.Helper()
	db, err := sql.Open("sqlite3", "file:"+filepath.Join(t.TempDir(), "k.db")+"?_busy_timeout=5000&_journal_mode=WAL")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	st, err := store.New(context.Background(), db)
	if err != nil {
		t.Fatal(err)
	}
	return st
}

// TestAgentCallsRunKernelThroughMCPConfig: the agent starts the real
// server binary from KEVOLVE_MCP_CONFIG, calls run_kernel on its kernel,
// and only then finishes.
func TestAgentCallsRunKernelThroughMCPConfig(t *testing.T) {
	py := toolchaintest.Python(t)
	bin := os.Getenv("KEVOLVE_BIN")
	if bin == "" {
		bin = filepath.Join(t.TempDir(), "kevolve-mcp")
		out, err := exec.Command("go", "build", "-tags", "sqlite_fts5", "-o", bin, "../../../cmd/kevolve-mcp").CombinedOutput()
		if err != nil {
			t.Fatalf("build: %v\n%s", err, out)
		}
	}
	t.Setenv("XDG_DATA_HOME", t.TempDir())
	t.Setenv("KEVOLVE_PYTHON", py)
	p, start := rmsnorm(t)
	o, err := New("cmd:"+agent(t, "mcp_agent.py"), Config{Deadline: 4 * time.Minute, WorkRoot: t.TempDir(), KeepDirs: true,
		Server: []string{bin, "--stdio"}})
	if err != nil {
		t.Fatal(err)
	}
	prop, _, err := propose(o, rootContext(p, start))
	if err != nil {
		t.Fatal(err)
	}
	if prop.Notes != "run_kernel said pass; guided schedule" || !strings.Contains(prop.Code, `SCHEDULE = "guided"`) {
		t.Errorf("notes %q", prop.Notes)
	}
	var in Input
	json.Unmarshal(prop.Inputs, &in)
	b, err := os.ReadFile(filepath.Join(in.WorkDir, "run_kernel.json"))
	if err != nil || !strings.Contains(string(b), `"verdict": "pass"`) {
		t.Errorf("run_kernel answer: %v %.400s", err, b)
	}
}

// TestEngineAcceptsSmallFixes: a one-line fix of a failed start and a
// one-tunable change of a passing one are evaluated, with the operator
// wrapped in novelty rejection as the CLI wraps it (issue 20: both were
// rejected as near-duplicates and the run ended failed).
func TestEngineAcceptsSmallFixes(t *testing.T) {
	py := toolchaintest.Python(t)
	ev, err := harness.NewEvaluator(harness.EvalConfig{Python: py, CacheDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	defer ev.Close()
	p, start := rmsnorm(t)
	broken := strings.Replace(start, "double acc = 0.0;", "double acc = 0.0", 1)
	if broken == start {
		t.Fatal("the start kernel changed: no semicolon to remove")
	}
	cases := []struct {
		name, start, script, startVerdict string
	}{
		{"missing semicolon fixed", broken, "fix_semicolon.sh", search.VerdictCompileError},
		{"one tunable changed", start, "one_tunable.sh", search.VerdictPass},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			st := newStore(t)
			op := &novelty.Op{Inner: newOp(t, "cmd:"+agent(t, tc.script), time.Minute)}
			e := &engine.Engine{Store: st, Eval: &harnesseval.Adapter{Ev: ev, Trials: 2}, Operator: op}
			run, err := e.Run(context.Background(), engine.StartOptions{Problem: p, StartCode: tc.start, Policy: "greedy",
				Budget: search.Budget{Evals: 2}, Seed: 1})
			if err != nil {
				t.Fatal(err)
			}
			nodes, err := st.Nodes(context.Background(), run.ID)
			if err != nil || len(nodes) != 2 {
				t.Fatalf("%d nodes, %v", len(nodes), err)
			}
			if r := nodes[0].Result; r == nil || r.Verdict != tc.startVerdict {
				t.Fatalf("start: %+v", r)
			}
			if r := nodes[1].Result; r == nil || r.Verdict != search.VerdictPass {
				t.Fatalf("child: %s %s %+v", nodes[1].State, nodes[1].Error, r)
			}
			if rej, _ := st.Rejected(context.Background(), run.ID); len(rej) != 0 || nodes[1].Cost.Rejected != 0 {
				t.Errorf("%d proposals rejected", len(rej))
			}
		})
	}
}
