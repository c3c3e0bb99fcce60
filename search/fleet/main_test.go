package fleet

import (
	"context"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/kevolve/kevolve-mcp/harness"
	"github.com/kevolve/kevolve-mcp/search"
	"github.com/kevolve/kevolve-mcp/search/engine"
	"github.com/kevolve/kevolve-mcp/search/operator/tuner"
	"github.com/kevolve/kevolve-mcp/search/policy"
	"github.com/kevolve/kevolve-mcp/search/store"
)

// This test binary doubles as a worker and as a coordinator process, so
// the fault tests can kill -9 and SIGSTOP real processes:
// KEVOLVE_FLEET_ROLE=worker runs `worker ...` flags as the CLI does,
// KEVOLVE_FLEET_ROLE=coordinator drives a search with a fleet evaluator.
const roleEnv = "KEVOLVE_FLEET_ROLE"

func TestMain(m *testing.M) {
	switch os.Getenv(roleEnv) {
	case "worker":
		os.Exit(workerRole(os.Args[1:]))
	case "coordinator":
		os.Exit(coordinatorRole())
	}
	os.Exit(m.Run())
}

func roleLogger() *slog.Logger {
	return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelInfo}))
}

// workerRole parses the flags the launchers pass (the same the CLI's
// worker command takes) and serves.
func workerRole(args []string) int {
	if len(args) > 0 && args[0] == "worker" {
		args = args[1:]
	}
	fs := flag.NewFlagSet("worker", flag.ContinueOnError)
	var o WorkerOptions
	fs.StringVar(&o.Coordinator, "coordinator", "", "")
	fs.StringVar(&o.Name, "name", "", "")
	fs.StringVar(&o.Target, "target", "cpu", "")
	fs.IntVar(&o.Slots, "slots", 0, "") // as the CLI: cpu 1 slot, GPUs all
	fs.IntVar(&o.JobsPerDevice, "jobs-per-device", 0, "")
	fs.DurationVar(&o.Drain, "drain", 20*time.Second, "")
	fs.StringVar(&o.Share, "share", "", "")
	hostMem := fs.Float64("eval-host-mem", 0, "")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	o.HostMemLimit = harness.HostMemLimitGiB(*hostMem)
	o.Token = os.Getenv("KEVOLVE_TOKEN")
	o.CacheDir = os.Getenv("FLEET_CACHE")
	o.Log = roleLogger()
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	if err := ServeWorker(ctx, o); err != nil {
		fmt.Fprintln(os.Stderr, "worker:", err)
		return 1
	}
	return 0
}

// coordinatorRole creates or resumes run "fleet" in FLEET_DB and drives it
// with a fleet evaluator served at FLEET_ADDR.
func coordinatorRole() int {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	log := roleLogger()
	fail := func(err error) int { fmt.Fprintln(os.Stderr, "coordinator:", err); return 1 }
	db, err := store.Open(os.Getenv("FLEET_DB"))
	if err != nil {
		return fail(err)
	}
	st, err := store.New(ctx, db)
	if err != nil {
		return fail(err)
	}
	q, err := NewQueue(ctx, db)
	if err != nil {
		return fail(err)
	}
	q.Lease = testLease
	c := &Coordinator{Queue: q, Token: os.Getenv("KEVOLVE_TOKEN"), Log: log, ClaimWait: 2 * time.Second}
	if err := c.Listen(ctx, os.Getenv("FLEET_ADDR")); err != nil {
		return fail(err)
	}
	eng := &engine.Engine{Store: st, Eval: &Evaluator{Queue: q, SkipTiming: os.Getenv("FLEET_SKIP_TIMING") == "1"}, Operator: tuner.New(), Log: log}
	var budget int
	fmt.Sscan(os.Getenv("FLEET_BUDGET"), &budget)
	if _, err := st.Run(ctx, "fleet"); err == nil {
		// FLEET_BUDGET extends a finished run (the test wants more kills).
		err = eng.Resume(ctx, "fleet", &search.Budget{Evals: budget})
		if err != nil && !strings.Contains(err.Error(), "already finished") {
			return fail(err)
		}
		return 0
	}
	p, code, err := testSearchProblem(os.Getenv("FLEET_CORPUS"))
	if err != nil {
		return fail(err)
	}
	if _, err := eng.Run(ctx, searchOptions("fleet", p, code, budget)); err != nil {
		return fail(err)
	}
	return 0
}

// testLease is short so that lost workers are noticed within seconds.
const testLease = 2 * time.Second

// testSearchProblem is llm/rmsnorm on the CPU with its C start kernel,
// given one more (inert) tunable so the space holds 192 kernels: enough
// distinct jobs for the fault trials, which need the run to last while ten
// workers are stopped one after another past their lease (96 were too few
// once jobs returned on their result instead of their child's exit).
func testSearchProblem(corpusRoot string) (search.Problem, string, error) {
	p, code, err := engine.ResolveProblem(context.Background(), nil, engine.ProblemSpec{Name: "llm/rmsnorm", Target: "cpu", Language: "c", CorpusRoot: corpusRoot})
	if err != nil {
		return p, "", err
	}
	old := `TUNABLES = {"THREADS": [0, 1, 2, 4], "SCHEDULE": ["static", "dynamic, 8", "guided"]}`
	if !strings.Contains(code, old) {
		return p, "", fmt.Errorf("the rmsnorm C start kernel's TUNABLES changed: update testSearchProblem")
	}
	code = strings.Replace(code, old, "PAD = 0  # inert: widens the tuner's space for the fault trials\n"+
		`TUNABLES = {"THREADS": [0, 1, 2, 4], "SCHEDULE": ["static", "dynamic, 8", "guided"], "PAD": [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15]}`, 1)
	return p, code, nil
}

// searchOptions makes every node an independent draft from the start
// kernel (the space holds 192): proposals then depend on the seed alone,
// not on measured timings, so a fleet run and an in-process run evaluate
// the same set, and a run extended to a larger budget continues exactly
// as a run given that budget from the start.
func searchOptions(id string, p search.Problem, code string, budget int) engine.StartOptions {
	return engine.StartOptions{RunID: id, Problem: p, StartCode: code, Policy: "greedy",
		Config: engine.Config{Policy: policyDraft(maxDraft)}, Budget: search.Budget{Evals: budget}, Seed: 77}
}

// maxDraft is the test space's size less the start kernel.
const maxDraft = 191

func policyDraft(budget int) policy.Config { return policy.Config{Draft: budget} }
