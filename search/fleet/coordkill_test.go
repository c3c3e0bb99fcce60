package fleet

import (
	"context"
	"math/rand"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/kevolve/kevolve-mcp/harness/toolchain/toolchaintest"
	"github.com/kevolve/kevolve-mcp/search"
	"github.com/kevolve/kevolve-mcp/search/store"
)

func freeAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

// The coordinator (the process running the search) is killed -9 ten times
// at random moments of a run; each time it is restarted on the same
// address and resumes. The workers keep evaluating through the outages
// and report when it is back. Nothing is lost: the run finishes with its
// whole budget, every job completed once, and the same kernels as the
// search in process.
func TestCoordinatorKill9Trials(t *testing.T) {
	skipInGPUMode(t)
	py := fleetEnv(t)
	trials := faultTrials()
	budget := 2*trials + 4

	dir := t.TempDir()
	dbPath := filepath.Join(dir, "fleet.db")
	addr := freeAddr(t)
	ctx, cancel := context.WithCancel(toolchaintest.Context(t))
	defer cancel()
	l := &LocalLauncher{N: 2, Config: LaunchConfig{Coordinator: "http://" + addr, Token: "t0ken", Name: "ck",
		Command: []string{os.Args[0], "worker"}, WorkerArgs: []string{"--target", "cpu", "--slots", "1", "--drain", "5s"},
		LogDir: filepath.Join(dir, "logs")}}
	if err := l.Start(ctx); err != nil {
		t.Fatal(err)
	}
	defer func() {
		sctx, c := context.WithTimeout(context.Background(), 20*time.Second)
		defer c()
		l.Stop(sctx)
		if t.Failed() {
			dumpLogs(t, filepath.Join(dir, "logs"))
		}
	}()
	rng := rand.New(rand.NewSource(5))
	kills := 0
	var lastOut string
	for attempt := 0; ; attempt++ {
		if ctx.Err() != nil {
			t.Fatalf("the run did not finish: %s", lastOut)
		}
		cmd := exec.Command(os.Args[0])
		cmd.Env = append(os.Environ(), roleEnv+"=coordinator", "FLEET_DB="+dbPath, "FLEET_ADDR="+addr, "KEVOLVE_TOKEN=t0ken",
			"FLEET_BUDGET="+itoa(budget), "FLEET_CORPUS="+filepath.Join(dir, "corpus"), "FLEET_SKIP_TIMING=1")
		cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
		out := &strings.Builder{}
		cmd.Stdout, cmd.Stderr = out, out
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		done := make(chan error, 1)
		go func() { done <- cmd.Wait() }()
		wait := time.Hour
		if kills < trials {
			// The first start waits for the workers to warm up.
			wait = time.Duration(200+rng.Intn(1000)) * time.Millisecond
			if attempt == 0 {
				wait += 5 * time.Second
			}
		}
		select {
		case err := <-done:
			lastOut = out.String()
			if err != nil {
				t.Fatalf("coordinator failed: %v\n%s", err, lastOut)
			}
			if kills < trials && budget+10 <= maxDraft {
				budget += 10 // finished early: extend the run for more kills
				t.Logf("the run finished after %d kills: extending it to %d evaluations", kills, budget)
				continue
			}
		case <-time.After(wait):
			syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
			<-done
			kills++
			t.Logf("kill -9 coordinator #%d after %s", kills, wait)
			continue
		case <-ctx.Done():
			syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
			<-done
			t.Fatalf("timed out:\n%s", out.String())
		}
		break
	}
	if kills < trials {
		t.Errorf("the run finished after %d kills; the trials wanted %d (raise the budget)", kills, trials)
	}
	db := openTestDB(t, dbPath)
	st, err := store.New(ctx, db)
	if err != nil {
		t.Fatal(err)
	}
	q, _ := NewQueue(ctx, db)
	run, err := st.Run(ctx, "fleet")
	if err != nil {
		t.Fatal(err)
	}
	if run.Status != search.RunDone {
		t.Fatalf("run %s: %s", run.Status, run.StopReason)
	}
	nodes, _ := st.Nodes(ctx, "fleet")
	evals, seqs := 0, map[int]bool{}
	for _, n := range nodes {
		if n.State == search.NodeDone && n.DuplicateOf == 0 {
			evals++
			if seqs[n.EvalSeq] {
				t.Errorf("evaluation seq %d twice", n.EvalSeq)
			}
			seqs[n.EvalSeq] = true
		}
	}
	if evals != budget {
		t.Errorf("%d evaluations recorded, budget %d", evals, budget)
	}
	jobs := checkJobsOnce(t, q)
	if len(jobs) != budget {
		t.Errorf("%d jobs for %d evaluations: some kernel was enqueued twice or not at all", len(jobs), budget)
	}
	sameSet(t, evaluatedSet(t, st, "fleet"), referenceRun(t, py, budget, true))
}

func itoa(n int) string { return strconv.Itoa(n) }
