package engine

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"math/rand"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/kevolve/kevolve-mcp/search"
	"github.com/kevolve/kevolve-mcp/search/store"
)

// The kill -9 trials run the engine in a child process (this test binary,
// re-executed as a helper), SIGKILL its process group at random moments,
// resume it in a fresh child, and check the store's invariants against a
// journal the children append to (fsynced) around every evaluation.

const helperEnv = "KEVOLVE_ENGINE_KILL_HELPER"

// slowLandscape is the landscape with an evaluation time of 10-60 ms and
// a journal line before and after each evaluation.
type slowLandscape struct {
	landscape
	mu      sync.Mutex // several slots evaluate at once with Parallel > 1
	journal *os.File
	rng     *rand.Rand
}

func (s *slowLandscape) Evaluate(ctx context.Context, p search.Problem, code string) (*search.Result, error) {
	h := search.NormalizedHash(code)
	s.note("start " + h)
	s.mu.Lock()
	wait := time.Duration(10+s.rng.Intn(50)) * time.Millisecond
	s.mu.Unlock()
	select {
	case <-time.After(wait):
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	r, err := s.landscape.Evaluate(ctx, p, code)
	s.note("end " + h)
	return r, err
}

func (s *slowLandscape) note(line string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.journal.WriteString(line + "\n")
	s.journal.Sync()
}

// TestKillHelper is the child: it creates or resumes the run named in the
// environment and drives it.
func TestKillHelper(t *testing.T) {
	if os.Getenv(helperEnv) == "" {
		t.Skip("helper process for TestKill9Resume")
	}
	db, err := store.Open(os.Getenv("KILL_DB"))
	if err != nil {
		t.Fatal(err)
	}
	st, err := store.New(context.Background(), db)
	if err != nil {
		t.Fatal(err)
	}
	j, err := os.OpenFile(os.Getenv("KILL_JOURNAL"), os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	ev := &slowLandscape{journal: j, rng: rand.New(rand.NewSource(time.Now().UnixNano()))}
	parallel, _ := strconv.Atoi(os.Getenv("KILL_PARALLEL"))
	e := &Engine{Store: st, Eval: ev, Operator: newTunerForTest(), Parallel: parallel}
	e.OnProgress = func(s Status) {
		if s.Last != nil {
			ev.note(fmt.Sprintf("finished %d", s.Last.ID))
		}
	}
	runs, _ := st.Runs(context.Background())
	if len(runs) == 0 {
		_, err = e.Run(context.Background(), StartOptions{RunID: "kill", Problem: synthProblem("kill"), StartCode: startCode(4, 4),
			Policy: os.Getenv("KILL_POLICY"), Config: Config{Policy: policyConfigForTest(os.Getenv("KILL_POLICY"))},
			Budget: search.Budget{Evals: killBudget}, Seed: 9})
	} else {
		err = e.Resume(context.Background(), "kill", nil)
		if errors.Is(err, ErrFinished) {
			err = nil // the run ended just before the kill landed
		}
	}
	if err != nil {
		t.Fatal(err)
	}
}

const killBudget = 25

func TestKill9Resume(t *testing.T) { kill9Trials(t, 12, 1) }

// TestKill9ResumeParallel: with three slots a kill leaves up to three
// evaluations in flight; resume repeats those and nothing else, and the
// finished run spent exactly its budget.
func TestKill9ResumeParallel(t *testing.T) { kill9Trials(t, 6, 3) }

func kill9Trials(t *testing.T, trials, parallel int) {
	policies := []string{"greedy", "uct", "evolve"}
	for trial := 0; trial < trials; trial++ {
		pol := policies[trial%len(policies)]
		t.Run(fmt.Sprintf("trial%02d_%s", trial, pol), func(t *testing.T) {
			dir := t.TempDir()
			dbPath, journal := filepath.Join(dir, "k.db"), filepath.Join(dir, "journal")
			rng := rand.New(rand.NewSource(int64(trial)))
			kills := 0
			for attempt := 0; attempt < 40; attempt++ {
				cmd := exec.Command(os.Args[0], "-test.run=^TestKillHelper$", "-test.count=1")
				cmd.Env = append(os.Environ(), helperEnv+"=1", "KILL_DB="+dbPath, "KILL_JOURNAL="+journal, "KILL_POLICY="+pol, "KILL_PARALLEL="+strconv.Itoa(parallel))
				cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
				out := &strings.Builder{}
				cmd.Stdout, cmd.Stderr = out, out
				if err := cmd.Start(); err != nil {
					t.Fatal(err)
				}
				done := make(chan error, 1)
				go func() { done <- cmd.Wait() }()
				// Kill at a random moment: often early (inside start-up and the
				// first transactions), sometimes late.
				wait := time.Duration(rng.Intn(400)) * time.Millisecond
				if attempt >= 6 {
					wait = time.Hour // enough kills: let it finish
				}
				select {
				case err := <-done:
					if err != nil {
						t.Fatalf("helper failed: %v\n%s", err, out)
					}
					checkKillInvariants(t, dbPath, journal, kills, parallel, true)
					return
				case <-time.After(wait):
					syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
					<-done
					kills++
					checkKillInvariants(t, dbPath, journal, kills, parallel, false)
				}
			}
			t.Fatal("the run never finished")
		})
	}
}

// checkKillInvariants: every node a child reported finished is done in the
// store; no code was evaluated more often than once plus the number of
// kills times the slots (each kill may leave one evaluation per slot in
// flight, evaluated again on resume), and only unfinished-at-kill nodes
// were re-evaluated; evaluation order has no gaps or repeats; once
// finished, exactly the budget was spent.
func checkKillInvariants(t *testing.T, dbPath, journal string, kills, parallel int, finished bool) {
	t.Helper()
	ctx := context.Background()
	db, err := store.Open(dbPath)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	st, err := store.New(ctx, db)
	if err != nil {
		t.Fatal(err)
	}
	nodes, err := st.Nodes(ctx, "kill")
	if err != nil {
		if finished {
			t.Fatal(err)
		}
		return
	}
	byID := map[int64]*search.Node{}
	for _, n := range nodes {
		byID[n.ID] = n
	}
	starts, ends := map[string]int{}, map[string]int{}
	finishedHash := map[string]bool{}
	f, err := os.Open(journal)
	if err != nil {
		if os.IsNotExist(err) && !finished {
			return
		}
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		kind, arg, _ := strings.Cut(sc.Text(), " ")
		switch kind {
		case "start":
			if finishedHash[arg] {
				t.Fatalf("code %s evaluated again after its node was recorded finished", arg[:12])
			}
			starts[arg]++
		case "end":
			ends[arg]++
		case "finished":
			var id int64
			fmt.Sscan(arg, &id)
			if n := byID[id]; n == nil || !n.State.Finished() {
				t.Fatalf("node %d was reported finished but the store has it %v: an evaluated node was lost", id, n)
			}
			finishedHash[byID[id].Hash] = true
		}
	}
	repeats := 0
	for h, k := range starts {
		if k > 1 {
			repeats += k - 1
		}
		_ = h
	}
	if repeats > kills*parallel {
		t.Fatalf("%d repeated evaluations after %d kills: some node was evaluated twice without being in flight", repeats, kills)
	}
	seqs := map[int]bool{}
	evals := 0
	for _, n := range nodes {
		if n.State == search.NodeDone {
			if n.EvalSeq <= 0 || seqs[n.EvalSeq] {
				t.Fatalf("node %d: eval seq %d missing or repeated", n.ID, n.EvalSeq)
			}
			seqs[n.EvalSeq] = true
			if n.DuplicateOf == 0 {
				evals++
			}
			if n.Result == nil {
				t.Fatalf("done node %d has no result", n.ID)
			}
		}
	}
	for i := 1; i <= len(seqs); i++ {
		if !seqs[i] {
			t.Fatalf("evaluation order has a gap at %d", i)
		}
	}
	unfinished := 0
	for _, n := range nodes {
		if !n.State.Finished() {
			unfinished++
		}
	}
	if unfinished > parallel {
		t.Fatalf("%d nodes in flight with %d slots", unfinished, parallel)
	}
	if finished {
		t.Logf("%d kills, %d evaluations repeated after a kill, %d nodes", kills, repeats, len(nodes))
		run, _ := st.Run(ctx, "kill")
		if run.Status != search.RunDone || evals != killBudget || unfinished != 0 {
			t.Fatalf("finished run: status %s (%s), %d evaluations (budget %d), %d unfinished", run.Status, run.StopReason, evals, killBudget, unfinished)
		}
		if run.BestNode == 0 {
			t.Fatal("finished run has no best node")
		}
	}
}
