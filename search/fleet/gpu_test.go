package fleet

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/kevolve/kevolve-mcp/harness"
	"github.com/kevolve/kevolve-mcp/harness/device"
	"github.com/kevolve/kevolve-mcp/harness/toolchain/toolchaintest"
	"github.com/kevolve/kevolve-mcp/search"
	"github.com/kevolve/kevolve-mcp/search/engine"
	"github.com/kevolve/kevolve-mcp/search/harnesseval"
	"github.com/kevolve/kevolve-mcp/search/operator/tuner"
	"github.com/kevolve/kevolve-mcp/search/store"
)

func gpuMode() bool { return os.Getenv("KEVOLVE_GPU") == "1" }

// skipInGPUMode keeps the CPU fault trials off the GPU machines' time.
func skipInGPUMode(t *testing.T) {
	if gpuMode() {
		t.Skip("CPU fault trials run in CI, not on the GPU machine")
	}
}

// gpuProblems is the problem set of the GPU benchmark: CUDA starts with
// tunables (KEVOLVE_FLEET_GPU_PROBLEMS overrides, comma-separated). Its
// three sets (warm passes included) take about 250 s on 2 H200s, inside
// one 10-minute device call; gemm_bias_gelu and rmsnorm_backward, whose
// start kernels take 0.1-0.2 s a call, did not fit with them. On 4 GPUs or
// more (wideHost) two more, to keep 48 evaluations in flight.
func gpuProblems() []string {
	if s := os.Getenv("KEVOLVE_FLEET_GPU_PROBLEMS"); s != "" {
		return strings.Split(s, ",")
	}
	ps := []string{"llm/rmsnorm", "llm/softmax", "llm/layernorm", "llm/swiglu", "llm/rope", "llm/cross_entropy"}
	if wideHost() {
		ps = append(ps, "other/relu", "other/sum_reduction")
	}
	return ps
}

// wideHost says whether the benchmark runs on 4 GPUs or more, whose
// default load is larger: 18 evaluations in flight (6 problems, 3 each)
// were sized for 2 GPUs. On 4 H200s (issue 35) 8 problems, 6 each, 20
// evaluations a problem kept every GPU busy (80-94% of the wall in device
// phases) and the three sets fit one 10-minute call (540 s).
var wideHost = sync.OnceValue(func() bool {
	if tgt, _ := benchTarget(); tgt == "cpu" {
		return false
	}
	gpus, _, _ := device.GPUs(context.Background(), device.Options{})
	return len(gpus) >= 4
})

// wideOr is narrow, or wide on a wideHost.
func wideOr(narrow, wide int) int {
	if wideHost() {
		return wide
	}
	return narrow
}

// benchTarget is the target the benchmark runs on: nvidia, or cpu
// (KEVOLVE_FLEET_GPU_TARGET=cpu) to try the benchmark's machinery on a
// machine without a GPU; its figures then mean nothing.
func benchTarget() (target, language string) {
	if os.Getenv("KEVOLVE_FLEET_GPU_TARGET") == "cpu" {
		return "cpu", "c"
	}
	return "nvidia", "cuda"
}

func gpuBudget() int { return envCount("KEVOLVE_FLEET_GPU_BUDGET", wideOr(12, 20)) }

// gpuParallel is each problem's search parallelism (KEVOLVE_FLEET_GPU_PARALLEL,
// default 3, 6 on a wideHost): problems times this is the evaluations in
// flight, which must exceed what one GPU can take for the GPU count to matter.
func gpuParallel() int { return envCount("KEVOLVE_FLEET_GPU_PARALLEL", wideOr(3, 6)) }

// warmWave says whether the warm pass makes a whole wave
// (KEVOLVE_FLEET_GPU_WARM: "wave", the default, or "one").
//
// "one" evaluates each problem's start kernel once: the service pays its
// once-per-problem costs. But the timed part then starts with problems x
// parallel evaluations at once, all but a few in fresh children, each
// making a CUDA context, and its judge one, at the same moment: the
// driver makes (and tears down) contexts one process at a time across the
// host's GPUs, so the first seconds of the clock measured that storm (1-4.5
// s a context under load, warm 1.1-2.2 s), which a short set on several
// GPUs feels far more than one device-bound GPU with a long queue does,
// and which grows with the evaluations in flight. A long search pays it
// once. "wave" evaluates each start kernel parallel times at once, so the
// timed part starts with a kept child for every slot on every device, as
// a long search runs; "one" measures the start storm too.
func warmWave() bool { return os.Getenv("KEVOLVE_FLEET_GPU_WARM") != "one" }

// searchSet runs one tuner search per problem, all at once, and returns
// the evaluations done and the wall time. Before the clock starts, a warm
// pass evaluates every problem's start kernel (warmWave), with a harmless
// line added so that no search node is a cache hit: the evaluation service
// (in process or in the worker) pays its once-per-problem costs there (the
// torch.compile timing of the reference, module loads) and, in a wave, its
// once-per-slot ones (a child, a CUDA context, a judge), and the timed
// part measures evaluations, as a long search sees them. The results of
// the timed part are logged as a phaseReport.
func searchSet(t *testing.T, ev search.Evaluator, dbPath string, atStart func()) (int, time.Duration) {
	t.Helper()
	rec := &recordingEval{Evaluator: ev}
	ev = rec
	ctx := context.Background()
	db := openTestDB(t, dbPath)
	st, err := store.New(ctx, db)
	if err != nil {
		t.Fatal(err)
	}
	corpusRoot := filepath.Join(filepath.Dir(dbPath), "corpus")
	type prob struct {
		p    search.Problem
		code string
	}
	var probs []prob
	for _, name := range gpuProblems() {
		tgt, lang := benchTarget()
		p, code, err := engine.ResolveProblem(ctx, nil, engine.ProblemSpec{Name: name, Target: tgt, Language: lang, CorpusRoot: corpusRoot})
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		probs = append(probs, prob{p, code})
	}
	var wg sync.WaitGroup
	w0 := time.Now()
	per := 1
	if warmWave() {
		per = gpuParallel()
	}
	for _, pr := range probs {
		for i := 1; i <= per; i++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				r, err := ev.Evaluate(ctx, pr.p, pr.code+fmt.Sprintf("\n_KEVOLVE_WARM_PASS = %d\n", i))
				if err != nil || r.Verdict != search.VerdictPass {
					t.Errorf("%s: warm pass: %v %+v", pr.p.Name, err, r)
				}
			}()
		}
	}
	wg.Wait()
	set := filepath.Base(filepath.Dir(dbPath))
	warm := newPhaseReport(resultsOf(rec.take(set+"/warm")), time.Since(w0))
	t.Logf("warm pass: %d problems x %d in %s; %d in kept children, %d fresh (cuda_context median %.2f s)",
		len(probs), per, time.Since(w0).Round(time.Second), warm.Reused, warm.Fresh, warm.ContextS)
	var mu sync.Mutex
	evals := 0
	if atStart != nil {
		atStart()
	}
	t0 := time.Now()
	for i, pr := range probs {
		p, code, name := pr.p, pr.code, pr.p.Name
		wg.Add(1)
		go func() {
			defer wg.Done()
			eng := &engine.Engine{Store: st, Eval: ev, Operator: tuner.New(), Parallel: gpuParallel()}
			run, err := eng.Run(ctx, engine.StartOptions{RunID: fmt.Sprintf("g%d", i), Problem: p, StartCode: code, Policy: "greedy",
				Budget: search.Budget{Evals: gpuBudget()}, Seed: int64(11 + i)})
			if err != nil {
				t.Errorf("%s: %v", name, err)
				return
			}
			nodes, _ := st.Nodes(ctx, run.ID)
			mu.Lock()
			for _, n := range nodes {
				if n.State == search.NodeDone && n.DuplicateOf == 0 {
					evals++
				}
			}
			mu.Unlock()
		}()
	}
	wg.Wait()
	wall := time.Since(t0)
	spans := rec.take(set + "/timed")
	lastReport = newPhaseReport(resultsOf(spans), wall)
	lastReport.Steady = steady(spans)
	for _, l := range lastReport.lines() {
		t.Log(l)
	}
	t.Logf("steady rate (the middle 80%% of completions): %.0f evaluations/hour", lastReport.Steady)
	return evals, wall
}

// lastReport is the phaseReport of the last searchSet's timed part.
var lastReport *phaseReport

// fleetSet runs the same problem set through one local worker offering
// slots GPUs (0 = all).
func fleetSet(t *testing.T, dir string, slots int) (int, time.Duration) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	db := openTestDB(t, filepath.Join(dir, "fleet.db"))
	q, err := NewQueue(ctx, db)
	if err != nil {
		t.Fatal(err)
	}
	coord := &Coordinator{Queue: q, Token: "gpu", Log: slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))}
	if err := coord.Listen(ctx, "127.0.0.1:0"); err != nil {
		t.Fatal(err)
	}
	tgt, _ := benchTarget()
	args := []string{"--target", tgt}
	if slots > 0 {
		args = append(args, "--slots", strconv.Itoa(slots))
	}
	if n := envCount("KEVOLVE_FLEET_GPU_JOBS_PER_DEVICE", 0); n > 0 {
		args = append(args, "--jobs-per-device", strconv.Itoa(n))
	}
	l := &LocalLauncher{N: 1, Config: LaunchConfig{Coordinator: coord.URL(), Token: "gpu", Name: "gpu", Command: []string{os.Args[0], "worker"},
		WorkerArgs: args, LogDir: filepath.Join(dir, "logs")}}
	if err := l.Start(ctx); err != nil {
		t.Fatal(err)
	}
	defer func() {
		sctx, c := context.WithTimeout(context.Background(), time.Minute)
		defer c()
		l.Stop(sctx)
	}()
	// Time from the worker's registration: both sides start warm.
	waitFor(t, 3*time.Minute, "the GPU worker to register", func() bool {
		s, _ := Snapshot(ctx, q)
		return s != nil && len(s.Workers) > 0
	})
	n, d := searchSet(t, &Evaluator{Queue: q}, filepath.Join(dir, "fleet.db"), nil)
	logCrowding(t, filepath.Join(dir, "logs"))
	return n, d
}

// logCrowding logs the worker's word each time a device's memory was
// crowded (harness retryAlone: its limit fell), from its log files.
func logCrowding(t *testing.T, logDir string) {
	files, _ := filepath.Glob(filepath.Join(logDir, "*"))
	var lines []string
	for _, f := range files {
		b, _ := os.ReadFile(f)
		for _, l := range strings.Split(string(b), "\n") {
			if strings.Contains(l, "device memory crowded") {
				lines = append(lines, l)
			}
		}
	}
	t.Logf("worker: a device's memory was crowded %d times", len(lines))
	for _, l := range lines {
		t.Log("  " + l)
	}
}

// TestGPUFleetThroughput (KEVOLVE_GPU=1): a tuner search over a corpus
// problem set, in process and through local:1 worker holding every GPU,
// then through a worker limited to one GPU; evaluations per hour of each
// and their ratios. The acceptance: fleet >= 95% of in-process on
// the same GPUs; all GPUs >= 3.5x one GPU on a 4-GPU host.
//
// Each set also logs (and writes to KEVOLVE_GPU_OUT) where its timed
// evaluations went (phaseReport): per device its busy share and median
// device phase, kept and fresh children, and every stage's seconds inside
// and outside the device phase; the in-process set also the lease pool's
// busy share. KEVOLVE_FLEET_GPU_WARM=one measures the start of the sets
// with fresh children, as before the warm wave (warmWave).
func TestGPUFleetThroughput(t *testing.T) {
	if tgt, _ := benchTarget(); !gpuMode() && tgt != "cpu" {
		t.Skip("GPU benchmark: needs KEVOLVE_GPU=1")
	}
	py := fleetEnv(t)
	t.Setenv(roleEnv, "worker")
	base := t.TempDir()

	ev, err := harness.NewEvaluator(harness.EvalConfig{Python: py, CacheDir: os.Getenv("FLEET_CACHE"),
		Logger: slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := ev.WorkerInfo(context.Background()); err != nil { // warm, as a worker is
		toolchaintest.Require(t, err)
	}
	// Each set's figures are written as soon as it ends (KEVOLVE_GPU_OUT),
	// so a run cut off by a device call's limit keeps what it measured.
	record := func(set string, n int, d time.Duration) {
		t.Logf("%s: %d evaluations in %s", set, n, d.Round(time.Second))
		if out := os.Getenv("KEVOLVE_GPU_OUT"); out != "" {
			f, err := os.OpenFile(out, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
			if err == nil {
				phases, _ := json.Marshal(lastReport)
				fmt.Fprintf(f, "{\"set\": %q, \"evaluations\": %d, \"seconds\": %.1f, \"warm\": %q, \"phases\": %s}\n",
					set, n, d.Seconds(), map[bool]string{true: "wave", false: "one"}[warmWave()], phases)
				f.Close()
			}
		}
	}
	// KEVOLVE_FLEET_GPU_SETS picks the sets and their order (default all
	// three, in process first), so a device call too short for all of them
	// can run them in turns, and the order's own effect (the GPUs warm from
	// the set before) can be seen by reversing it.
	sets := os.Getenv("KEVOLVE_FLEET_GPU_SETS")
	if sets == "" {
		sets = "inproc,all,one"
	}
	rate := func(n int, d time.Duration) float64 { return float64(n) / d.Hours() }
	rates, steadies := map[string]float64{}, map[string]float64{}
	t.Logf("problems %d, budget %d each, parallel %d each, warm pass %s, sets %s", len(gpuProblems()), gpuBudget(), gpuParallel(),
		map[bool]string{true: "wave", false: "one"}[warmWave()], sets)
	fleetSets := map[string]struct {
		label string
		slots int
	}{"all": {"local:1 worker, all GPUs", 0}, "one": {"local:1 worker, one GPU", 1}}
	defer ev.Close()
	for _, key := range strings.Split(sets, ",") {
		key = strings.TrimSpace(key)
		os.MkdirAll(filepath.Join(base, key), 0o755)
		switch key {
		case "inproc":
			var busy0 map[string]time.Duration
			n, d := searchSet(t, &harnesseval.Adapter{Ev: ev}, filepath.Join(base, "inproc", "k.db"), func() { busy0 = ev.DeviceBusy() })
			// The lease pool's own count of the device phases (profiles
			// included), over the timed part.
			share, busy := harness.DeviceShare(busy0, ev.DeviceBusy(), d)
			t.Logf("in-process lease pool: devices held %.0f%% of the wall on average (%s held in all); evaluations each device takes at once now: %v",
				100*share, busy.Round(time.Second), ev.DeviceLimits())
			record("in-process", n, d)
			rates["inproc"] = rate(n, d)
			steadies["inproc"] = lastReport.Steady
			ev.Close() // its children leave the GPUs to the sets after it
		case "all", "one":
			n, d := fleetSet(t, filepath.Join(base, key), fleetSets[key].slots)
			record(fleetSets[key].label, n, d)
			rates[key] = rate(n, d)
			steadies[key] = lastReport.Steady
		default:
			t.Fatalf("KEVOLVE_FLEET_GPU_SETS: unknown set %q (inproc, all, one)", key)
		}
	}
	for _, k := range []string{"inproc", "all", "one"} {
		if r, ok := rates[k]; ok {
			t.Logf("%-7s %8.0f evaluations/hour (steady %.0f)", k, r, steadies[k])
		}
	}
	if rIn, rAll := rates["inproc"], rates["all"]; rIn > 0 && rAll > 0 {
		t.Logf("fleet / in-process: %.3f (acceptance >= 0.95); steady: %.3f", rAll/rIn, steadies["all"]/max(1, steadies["inproc"]))
		if rAll < 0.95*rIn {
			t.Errorf("the fleet worker reached %.1f%% of in-process evaluations/hour (want >= 95%%)", 100*rAll/rIn)
		}
	}
	if rAll, rOne := rates["all"], rates["one"]; rAll > 0 && rOne > 0 {
		t.Logf("all GPUs / one GPU: %.2fx (acceptance on 4 GPUs: >= 3.5x); steady: %.2fx", rAll/rOne, steadies["all"]/max(1, steadies["one"]))
	}
}
