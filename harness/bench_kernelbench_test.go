package harness

// The side-by-side benchmark of issue 3: our Evaluator (warm worker) and
// KernelBench's own eval_kernel_against_ref, on the same KernelBench problems
// and the same candidates (corpus/kernelbench/level<N>/<stem>/<flavor>.py),
// in one run on the GPU machine, with Nsight Compute as the referee for the
// kernel time. It prints one table and then fails if a target is missed.
//
// Needs KEVOLVE_GPU=1 and KEVOLVE_KB_DIR (a KernelBench copy made by
// testdata/kernelbench/prepare.sh: src/, KernelBench/level1..2, site/).
// Optional: KEVOLVE_BENCH_ONLY (regexp on "level1/<stem>/<flavor>"),
// KEVOLVE_BENCH_CANDIDATES (default ../corpus/kernelbench),
// KEVOLVE_BENCH_OUT (folder for bench.json / bench.md; default $OUT),
// KEVOLVE_BENCH_SKIP_KB=1 (our timings and ncu's only),
// KEVOLVE_NCU (path of ncu).

import (
	"bufio"
	"bytes"
	"context"
	"encoding/csv"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/kevolve/kevolve-mcp/harness/toolchain"
)

// Targets from issue 3.
const (
	benchWallFastCUDA   = 2.0  // s, warm worker, fast-loader CUDA
	benchWallTriton     = 2.5  // s, warm worker, Triton
	benchWallInlineWarm = 2.0  // s, load_inline source compiled before
	benchInlineColdFrac = 0.5  // load_inline cold wall / KernelBench's
	benchNcuTol         = 0.05 // |ours/ncu - 1|
	benchCVMax          = 0.01 // for kernels >= benchCVMinS
	benchCVMinS         = 50e-6
	benchWarmRuns       = 3
	benchNcuReps        = 3
)

var benchFlavors = []string{"fast_cuda", "triton", "load_inline"}

type benchPair struct {
	Level, Stem, Flavor string
	Ref, Cand           string
}

func (p benchPair) key() string { return p.Level + "/" + p.Stem + "/" + p.Flavor }

// benchRow is one line of the table; times in seconds unless named _us.
type benchRow struct {
	Key         string    `json:"key"`
	Flavor      string    `json:"flavor"`
	OursVerdict string    `json:"ours_verdict"`
	OursColdS   float64   `json:"ours_cold_s"`
	OursWarmS   []float64 `json:"ours_warm_s"`
	OursWarmMed float64   `json:"ours_warm_median_s"`
	// Candidate medians of the warm evaluations, their median, the median of
	// their per-iteration CVs, and their spread (max-min)/median.
	OursMedUS     []float64          `json:"ours_median_us_runs"`
	OursMedianUS  float64            `json:"ours_median_us"`
	OursCV        float64            `json:"ours_cv"`
	OursRunSpread float64            `json:"ours_run_spread"`
	OursRunCV     float64            `json:"ours_run_cv"` // stdev/mean of the warm medians: the repeated-measurement CV
	OursIters     int                `json:"ours_iters"`
	OursSpeedup   float64            `json:"ours_speedup_vs_eager"`
	OursStages    map[string]float64 `json:"ours_stage_s,omitempty"`
	OursColdStage map[string]float64 `json:"ours_cold_stage_s,omitempty"`
	OursWarnings  []string           `json:"ours_warnings,omitempty"`

	KBWallS     float64 `json:"kb_wall_s"`
	KBCompiled  bool    `json:"kb_compiled"`
	KBCorrect   bool    `json:"kb_correct"`
	KBRuntimeUS float64 `json:"kb_runtime_us"`
	KBStdUS     float64 `json:"kb_std_us"`
	KBRefUS     float64 `json:"kb_ref_runtime_us"`
	KBRefStdUS  float64 `json:"kb_ref_std_us"`
	KBSpeedup   float64 `json:"kb_speedup"`
	KBError     string  `json:"kb_error,omitempty"`

	NcuUS      float64 `json:"ncu_us"`
	NcuKernels int     `json:"ncu_kernels"`
	NcuError   string  `json:"ncu_error,omitempty"`

	Failures []string `json:"failures,omitempty"`
}

type benchReport struct {
	Device         string             `json:"device"`
	KernelBench    string             `json:"kernelbench_commit"`
	WorkerStartS   float64            `json:"worker_start_s"`
	KBImportS      float64            `json:"kb_import_s"`
	KBTorchImportS float64            `json:"kb_torch_import_s"`
	PhaseS         map[string]float64 `json:"phase_s"`
	Rows           []*benchRow        `json:"rows"`
}

func TestBenchKernelBench(t *testing.T) {
	kbDir := os.Getenv("KEVOLVE_KB_DIR")
	if kbDir == "" || os.Getenv("KEVOLVE_GPU") != "1" {
		t.Skip("needs KEVOLVE_GPU=1 and KEVOLVE_KB_DIR (a copy made by testdata/kernelbench/prepare.sh)")
	}
	kbDir, _ = filepath.Abs(kbDir)
	candRoot := os.Getenv("KEVOLVE_BENCH_CANDIDATES")
	if candRoot == "" {
		candRoot = filepath.Join("..", "corpus", "kernelbench")
	}
	pairs, err := benchPairs(candRoot, kbDir, os.Getenv("KEVOLVE_BENCH_ONLY"))
	if err != nil {
		t.Fatal(err)
	}
	py := toolchain.Python()
	// KEVOLVE_BENCH_DEADLINE_S bounds the whole run, so the table is still
	// printed when the machine's time is short: KernelBench stops early
	// (keeping 90 s for ncu), and so does ncu.
	deadline := time.Now().Add(24 * time.Hour)
	if v, err := strconv.ParseFloat(os.Getenv("KEVOLVE_BENCH_DEADLINE_S"), 64); err == nil && v > 0 {
		deadline = time.Now().Add(time.Duration(v * float64(time.Second)))
	}
	work := t.TempDir()
	outDir := os.Getenv("KEVOLVE_BENCH_OUT")
	if outDir == "" {
		outDir = os.Getenv("OUT")
	}
	if outDir == "" {
		outDir = filepath.Join(work, "out")
	}
	if err := os.MkdirAll(outDir, 0o755); err != nil {
		t.Fatal(err)
	}
	// Fresh caches, so "cold" is cold: ours and KernelBench's apart.
	ours := filepath.Join(work, "ours")
	t.Setenv("KEVOLVE_CACHE_DIR", ours)
	t.Setenv("TRITON_CACHE_DIR", filepath.Join(work, "ours-triton"))
	t.Setenv("TORCH_EXTENSIONS_DIR", filepath.Join(ours, "torch_extensions"))

	rep := &benchReport{PhaseS: map[string]float64{}}
	if b, err := os.ReadFile(filepath.Join(kbDir, "COMMIT")); err == nil {
		rep.KernelBench = strings.TrimSpace(string(b))
	}
	rows := map[string]*benchRow{}
	for _, p := range pairs {
		r := &benchRow{Key: p.key(), Flavor: p.Flavor}
		rows[p.key()] = r
		rep.Rows = append(rep.Rows, r)
	}
	ctx := context.Background()
	// Saved after every phase too, so a run cut short still leaves numbers.
	save := func() {
		if b, err := json.MarshalIndent(rep, "", "  "); err == nil {
			if err := os.WriteFile(filepath.Join(outDir, "bench.json"), b, 0o644); err != nil {
				t.Errorf("write bench.json: %v", err)
			}
		}
	}

	// (a) ours, warm worker.
	tA := time.Now()
	ev, err := NewEvaluator(EvalConfig{Python: py, CacheDir: ours,
		Logger: slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))})
	if err != nil {
		t.Fatal(err)
	}
	defer ev.Close()
	t0 := time.Now()
	target, dev, err := ev.Device(ctx)
	if err != nil || target != "nvidia" {
		t.Fatalf("device probe: target %q, err %v", target, err)
	}
	rep.Device = dev
	rep.WorkerStartS = time.Since(t0).Seconds()
	benchOurs(t, ev, pairs, rows)
	rep.PhaseS["ours"] = time.Since(tA).Seconds()
	save()
	pyDir := benchPyDir(ours)

	// (b) KernelBench's eval_kernel_against_ref, in its own process;
	// KEVOLVE_BENCH_SKIP_KB=1 leaves it out when only our own timings are
	// wanted (a regression check against an earlier table): it is half the
	// run, mostly KernelBench's cold load_inline builds.
	skipKB := os.Getenv("KEVOLVE_BENCH_SKIP_KB") == "1"
	if !skipKB {
		tB := time.Now()
		benchKB(t, py, kbDir, pyDir, work, outDir, pairs, rows, rep, deadline.Add(-90*time.Second))
		rep.PhaseS["kernelbench"] = time.Since(tB).Seconds()
		save()
	}

	// (c) Nsight Compute's gpu__time_duration for the same forwards.
	tC := time.Now()
	benchNcu(t, py, pyDir, ours, work, outDir, pairs, rows, deadline.Add(-10*time.Second))
	rep.PhaseS["ncu"] = time.Since(tC).Seconds()

	for _, r := range rep.Rows {
		r.Failures = append(r.Failures, benchGates(r, !skipKB)...)
	}
	table := benchTable(rep)
	fmt.Print(table)
	save()
	if err := os.WriteFile(filepath.Join(outDir, "bench.md"), []byte(table), 0o644); err != nil {
		t.Errorf("write bench.md: %v", err)
	}
	for _, r := range rep.Rows {
		for _, f := range r.Failures {
			t.Errorf("%s: %s", r.Key, f)
		}
	}
}

// benchPairs lists candidate files whose KernelBench problem exists.
func benchPairs(candRoot, kbDir, only string) ([]benchPair, error) {
	var re *regexp.Regexp
	if only != "" {
		var err error
		if re, err = regexp.Compile(only); err != nil {
			return nil, fmt.Errorf("KEVOLVE_BENCH_ONLY: %w", err)
		}
	}
	dirs, err := filepath.Glob(filepath.Join(candRoot, "level*", "*"))
	if err != nil {
		return nil, fmt.Errorf("list candidates: %w", err)
	}
	var out []benchPair
	for _, d := range dirs {
		level, stem := filepath.Base(filepath.Dir(d)), filepath.Base(d)
		for _, fl := range benchFlavors {
			cand := filepath.Join(d, fl+".py")
			if _, err := os.Stat(cand); err != nil {
				continue
			}
			p := benchPair{Level: level, Stem: stem, Flavor: fl}
			if re != nil && !re.MatchString(p.key()) {
				continue
			}
			p.Ref = filepath.Join(kbDir, "KernelBench", level, stem+".py")
			if _, err := os.Stat(p.Ref); err != nil {
				return nil, fmt.Errorf("candidate %s has no KernelBench problem: %w", cand, err)
			}
			p.Cand, _ = filepath.Abs(cand)
			out = append(out, p)
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("no candidates under %s (filter %q)", candRoot, only)
	}
	sort.Slice(out, func(i, j int) bool { return benchLess(out[i], out[j]) })
	return out, nil
}

// benchLess orders by level, problem number, then flavor.
func benchLess(a, b benchPair) bool {
	if a.Level != b.Level {
		return a.Level < b.Level
	}
	na, _ := strconv.Atoi(strings.SplitN(a.Stem, "_", 2)[0])
	nb, _ := strconv.Atoi(strings.SplitN(b.Stem, "_", 2)[0])
	if na != nb {
		return na < nb
	}
	return a.Flavor < b.Flavor
}

// benchTimeout gives a cold load_inline build its longer budget.
func benchTimeout(p benchPair, cold bool) time.Duration {
	if p.Flavor == "load_inline" && cold {
		return 180 * time.Second
	}
	return 60 * time.Second
}

func benchOurs(t *testing.T, ev *Evaluator, pairs []benchPair, rows map[string]*benchRow) {
	ctx := context.Background()
	eval := func(p benchPair, cold bool) (*EvalResult, error) {
		// KernelBench does not time torch.compile of the reference: neither
		// do these evaluations, so the walls compare like with like.
		noCompile := false
		return ev.EvaluateRequest(ctx, EvalRequest{Reference: Source{Path: p.Ref}, Candidate: Source{Path: p.Cand},
			Target: "nvidia", Timeout: benchTimeout(p, cold), CompileReference: &noCompile}, nil)
	}
	cold := map[string]*EvalResult{}
	record := func(p benchPair, res *EvalResult, err error) {
		r := rows[p.key()]
		if err != nil {
			r.OursVerdict = "harness_error"
			r.Failures = append(r.Failures, "ours: "+err.Error())
			return
		}
		cold[p.key()] = res
		r.OursVerdict = res.Verdict
		r.OursColdS = res.WallS
		r.OursColdStage = res.StageS
		if res.Verdict != VerdictPass {
			r.Failures = append(r.Failures, "ours: cold evaluation "+res.Verdict+": "+benchFailedChecks(res))
		}
	}
	// Cold load_inline builds are timed one at a time and alone, as
	// KernelBench builds them: a build running beside other evaluations
	// would count their CPU and GPU time as its own.
	for _, flavor := range []string{"load_inline", ""} {
		for _, p := range pairs {
			if (p.Flavor == "load_inline") != (flavor == "load_inline") {
				continue
			}
			res, err := eval(p, true)
			record(p, res, err)
			if res != nil {
				t.Logf("ours cold %s: %s %.2fs", p.key(), res.Verdict, res.WallS)
			}
			benchWarm(t, eval, p, rows[p.key()], cold[p.key()])
		}
	}
}

func benchWarm(t *testing.T, eval func(benchPair, bool) (*EvalResult, error), p benchPair, r *benchRow, cold *EvalResult) {
	if cold == nil || cold.Verdict != VerdictPass {
		return
	}
	var cvs, speedups []float64
	for i := 0; i < benchWarmRuns; i++ {
		res, err := eval(p, false)
		if err != nil {
			r.Failures = append(r.Failures, fmt.Sprintf("ours warm %d: %v", i, err))
			return
		}
		if res.Verdict != VerdictPass || res.Candidate == nil {
			r.Failures = append(r.Failures, fmt.Sprintf("ours warm %d: %s: %s", i, res.Verdict, benchFailedChecks(res)))
			return
		}
		r.OursWarmS = append(r.OursWarmS, res.WallS)
		r.OursMedUS = append(r.OursMedUS, res.Candidate.MedianS*1e6)
		cvs = append(cvs, res.Candidate.CV)
		r.OursIters = res.Candidate.Iters
		if res.SpeedupVsEager != nil {
			speedups = append(speedups, *res.SpeedupVsEager)
		}
		r.OursStages = res.StageS
		r.OursWarnings = res.Warnings
		t.Logf("ours warm %s #%d: %.2fs median %.1fus cv %.4f iters %d stages %v judge %s", p.key(), i, res.WallS,
			res.Candidate.MedianS*1e6, res.Candidate.CV, res.Candidate.Iters, res.StageS, benchJudgePhases(res))
	}
	r.OursWarmMed = benchMedian(r.OursWarmS)
	r.OursMedianUS = benchMedian(r.OursMedUS)
	r.OursCV = benchMedian(cvs)
	r.OursSpeedup = benchMedian(speedups)
	lo, hi := benchMinMax(r.OursMedUS)
	if r.OursMedianUS > 0 {
		r.OursRunSpread = (hi - lo) / r.OursMedianUS
	}
	r.OursRunCV = benchCV(r.OursMedUS)
}

func benchFailedChecks(res *EvalResult) string {
	var parts []string
	for _, c := range res.Checks {
		if !c.Passed {
			d := c.Detail
			if len(d) > 600 {
				d = d[len(d)-600:]
			}
			parts = append(parts, c.Name+": "+d)
		}
	}
	if len(parts) == 0 && res.Log != "" {
		l := res.Log
		if len(l) > 600 {
			l = l[len(l)-600:]
		}
		parts = append(parts, "log: "+l)
	}
	return strings.Join(parts, "; ")
}

// kevolvePyDir is the folder holding the kevolve package: the worker's
// unpacked copy, else the source tree.
func benchPyDir(cache string) string {
	if m, _ := filepath.Glob(filepath.Join(cache, "worker", "*", "kevolve", "__init__.py")); len(m) > 0 {
		return filepath.Dir(filepath.Dir(m[0]))
	}
	d, _ := filepath.Abs(filepath.Join("worker", "py"))
	return d
}

type benchJob struct {
	Key       string `json:"key"`
	Reference string `json:"reference"`
	Candidate string `json:"candidate"`
	Backend   string `json:"backend"`
}

type benchKBResult struct {
	Event        string            `json:"event"`
	ImportS      float64           `json:"import_s"`
	TorchImportS float64           `json:"torch_import_s"`
	Key          string            `json:"key"`
	WallS        float64           `json:"wall_s"`
	Compiled     bool              `json:"compiled"`
	Correctness  bool              `json:"correctness"`
	RuntimeMS    float64           `json:"runtime_ms"`
	RuntimeStats map[string]any    `json:"runtime_stats"`
	RefMS        float64           `json:"ref_runtime_ms"`
	RefStats     map[string]any    `json:"ref_runtime_stats"`
	Metadata     map[string]string `json:"metadata"`
	Error        string            `json:"error"`
}

// benchKB runs every pair through KernelBench in one process (import paid
// once, reported apart), starting a new one for the rest if it dies.
func benchKB(t *testing.T, py, kbDir, pyDir, work, outDir string, pairs []benchPair, rows map[string]*benchRow, rep *benchReport, deadline time.Time) {
	script, _ := filepath.Abs(filepath.Join("testdata", "kernelbench", "kb_eval.py"))
	var jobs []benchJob
	for _, p := range pairs {
		b := "cuda"
		if p.Flavor == "triton" {
			b = "triton"
		}
		jobs = append(jobs, benchJob{Key: p.key(), Reference: p.Ref, Candidate: p.Cand, Backend: b})
	}
	logf, err := os.Create(filepath.Join(outDir, "kb_stdout.log"))
	if err != nil {
		t.Fatal(err)
	}
	defer logf.Close()
	done := map[string]bool{}
	for attempt := 0; len(jobs) > 0 && attempt < 4 && time.Now().Before(deadline); attempt++ {
		jf := filepath.Join(work, fmt.Sprintf("kb_jobs_%d.json", attempt))
		rf := filepath.Join(work, fmt.Sprintf("kb_results_%d.jsonl", attempt))
		b, _ := json.Marshal(jobs)
		if err := os.WriteFile(jf, b, 0o644); err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithDeadline(context.Background(), deadline)
		cmd := exec.CommandContext(ctx, py, script, jf, rf)
		cmd.Env = append(os.Environ(), "KB_SRC="+filepath.Join(kbDir, "src"), "KB_SITE="+filepath.Join(kbDir, "site"),
			"PYTHONPATH="+pyDir, "KEVOLVE_CACHE_DIR="+filepath.Join(work, "kb-kevolve"),
			"TRITON_CACHE_DIR="+filepath.Join(work, "kb-triton"), "TORCH_EXTENSIONS_DIR="+filepath.Join(work, "kb-ext"))
		cmd.Stdout, cmd.Stderr = logf, logf
		runErr := cmd.Run()
		cancel()
		results, err := benchReadKB(rf)
		if err != nil {
			t.Fatalf("kernelbench results: %v", err)
		}
		for _, res := range results {
			if res.Event == "import" {
				if rep.KBImportS == 0 {
					rep.KBImportS, rep.KBTorchImportS = res.ImportS, res.TorchImportS
				}
				continue
			}
			r := rows[res.Key]
			if r == nil {
				continue
			}
			done[res.Key] = true
			r.KBWallS, r.KBCompiled, r.KBCorrect, r.KBError = res.WallS, res.Compiled, res.Correctness, res.Error
			if res.Error == "" && (!res.Compiled || !res.Correctness) {
				r.KBError = benchKBMeta(res.Metadata)
			}
			if res.RuntimeMS > 0 {
				r.KBRuntimeUS = res.RuntimeMS * 1e3
				r.KBStdUS = benchStatMS(res.RuntimeStats, "std") * 1e3
			}
			if res.RefMS > 0 {
				r.KBRefUS = res.RefMS * 1e3
				r.KBRefStdUS = benchStatMS(res.RefStats, "std") * 1e3
			}
			if r.KBRuntimeUS > 0 && r.KBRefUS > 0 {
				r.KBSpeedup = r.KBRefUS / r.KBRuntimeUS
			}
		}
		var rest []benchJob
		for _, j := range jobs {
			if !done[j.Key] {
				rest = append(rest, j)
			}
		}
		if len(rest) > 0 {
			// The process died on rest[0] (or before it): record that, go on.
			msg := "kernelbench process ended before this job"
			if runErr != nil {
				msg += ": " + runErr.Error()
			}
			rows[rest[0].Key].KBError = msg
			done[rest[0].Key] = true
			rest = rest[1:]
		}
		jobs = rest
	}
}

func benchKBMeta(m map[string]string) string {
	var keys []string
	for k := range m {
		if k != "hardware" && k != "device" {
			keys = append(keys, k)
		}
	}
	sort.Strings(keys)
	var parts []string
	for _, k := range keys {
		v := m[k]
		if len(v) > 300 {
			v = v[:300]
		}
		parts = append(parts, k+"="+v)
	}
	return strings.Join(parts, "; ")
}

func benchStatMS(m map[string]any, k string) float64 {
	if v, ok := m[k].(float64); ok {
		return v
	}
	return 0
}

func benchReadKB(path string) ([]benchKBResult, error) {
	f, err := os.Open(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("open %s: %w", path, err)
	}
	defer f.Close()
	var out []benchKBResult
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 16<<20)
	for sc.Scan() {
		var r benchKBResult
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
			return nil, fmt.Errorf("decode %s: %w", path, err)
		}
		out = append(out, r)
	}
	return out, sc.Err()
}

func benchFindNcu() string {
	if p := os.Getenv("KEVOLVE_NCU"); p != "" {
		return p
	}
	if p, err := exec.LookPath("ncu"); err == nil {
		return p
	}
	for _, pat := range []string{"/usr/local/cuda/bin/ncu", "/usr/local/cuda-*/bin/ncu", "/opt/nvidia/nsight-compute/*/ncu"} {
		if m, _ := filepath.Glob(pat); len(m) > 0 {
			sort.Strings(m)
			return m[len(m)-1]
		}
	}
	return ""
}

// benchNcu profiles every passing candidate's forward in one process.
func benchNcu(t *testing.T, py, pyDir, ours, work, outDir string, pairs []benchPair, rows map[string]*benchRow, deadline time.Time) {
	var jobs []benchJob
	for _, p := range pairs {
		if rows[p.key()].OursVerdict == VerdictPass {
			jobs = append(jobs, benchJob{Key: p.key(), Reference: p.Ref, Candidate: p.Cand})
		}
	}
	if len(jobs) == 0 {
		return
	}
	ncu := benchFindNcu()
	if ncu == "" {
		for _, j := range jobs {
			rows[j.Key].NcuError = "ncu not found (set KEVOLVE_NCU)"
		}
		return
	}
	script, _ := filepath.Abs(filepath.Join("testdata", "kernelbench", "ncu_forward.py"))
	jf := filepath.Join(work, "ncu_jobs.json")
	b, _ := json.Marshal(jobs)
	if err := os.WriteFile(jf, b, 0o644); err != nil {
		t.Fatal(err)
	}
	csvPath := filepath.Join(outDir, "ncu.csv")
	ctx, cancel := context.WithDeadline(context.Background(), deadline)
	defer cancel()
	cmd := exec.CommandContext(ctx, ncu, "--clock-control", "none", "--cache-control", "all",
		"--profile-from-start", "off", "--metrics", "gpu__time_duration.sum", "--csv",
		"--print-units", "base", "--log-file", csvPath, py, script, jf, strconv.Itoa(benchNcuReps))
	cmd.Env = append(os.Environ(), "PYTHONPATH="+pyDir, "KEVOLVE_CACHE_DIR="+ours)
	var stdout bytes.Buffer
	cmd.Stdout = &stdout
	cmd.Stderr = &stdout
	runErr := cmd.Run()
	_ = os.WriteFile(filepath.Join(outDir, "ncu_stdout.log"), stdout.Bytes(), 0o644)
	// Per-job errors the driver reported.
	for _, line := range strings.Split(stdout.String(), "\n") {
		var st struct {
			Key   string `json:"key"`
			OK    bool   `json:"ok"`
			Error string `json:"error"`
		}
		if json.Unmarshal([]byte(line), &st) == nil && st.Key != "" && !st.OK {
			rows[st.Key].NcuError = st.Error
		}
	}
	// The report goes to the log file; should a version print it to stdout
	// instead, that is parsed next.
	report, _ := os.ReadFile(csvPath)
	per, err := benchParseNcu(bytes.NewReader(report))
	if err != nil || len(per) == 0 {
		per, err = benchParseNcu(bytes.NewReader(stdout.Bytes()))
	}
	if err != nil {
		for _, j := range jobs {
			rows[j.Key].NcuError = fmt.Sprintf("parse ncu csv: %v (run: %v)", err, runErr)
		}
		return
	}
	for i, j := range jobs {
		reps := per[i]
		if len(reps) == 0 {
			if rows[j.Key].NcuError == "" {
				rows[j.Key].NcuError = fmt.Sprintf("no kernels profiled (run: %v)", runErr)
			}
			continue
		}
		var sums []float64
		for _, rp := range reps {
			sums = append(sums, rp.ns)
		}
		rows[j.Key].NcuUS = benchMedian(sums) / 1e3
		rows[j.Key].NcuKernels = reps[0].n
	}
}

type benchNcuRep struct {
	ns float64
	n  int
}

var benchGridRE = regexp.MustCompile(`\d+`)

// parseNcuCSV groups kernels by the marker launched before each forward:
// job -> rep -> summed gpu__time_duration.
func benchParseNcu(r io.Reader) (map[int][]benchNcuRep, error) {
	// ncu's log has ==PROF== lines before the CSV; keep the quoted ones.
	var buf bytes.Buffer
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<20), 64<<20)
	for sc.Scan() {
		if strings.HasPrefix(sc.Text(), `"`) {
			buf.WriteString(sc.Text())
			buf.WriteByte('\n')
		}
	}
	recs, err := csv.NewReader(&buf).ReadAll()
	if err != nil {
		return nil, err
	}
	if len(recs) < 1 {
		return nil, errors.New("empty csv")
	}
	col := map[string]int{}
	for i, h := range recs[0] {
		col[h] = i
	}
	for _, need := range []string{"Kernel Name", "Grid Size", "Metric Name", "Metric Unit", "Metric Value"} {
		if _, ok := col[need]; !ok {
			return nil, fmt.Errorf("csv has no %q column (header %v)", need, recs[0])
		}
	}
	out := map[int][]benchNcuRep{}
	job, rep := -1, -1
	for _, rec := range recs[1:] {
		if len(rec) != len(recs[0]) || rec[col["Metric Name"]] != "gpu__time_duration.sum" {
			continue
		}
		if strings.Contains(rec[col["Kernel Name"]], "kv_ncu_marker") {
			g := benchGridRE.FindAllString(rec[col["Grid Size"]], -1)
			if len(g) < 2 {
				return nil, fmt.Errorf("marker grid %q", rec[col["Grid Size"]])
			}
			a, _ := strconv.Atoi(g[0])
			b, _ := strconv.Atoi(g[1])
			job, rep = a-1, b-1
			for len(out[job]) <= rep {
				out[job] = append(out[job], benchNcuRep{})
			}
			continue
		}
		if job < 0 {
			continue
		}
		v, err := strconv.ParseFloat(strings.ReplaceAll(rec[col["Metric Value"]], ",", ""), 64)
		if err != nil {
			return nil, fmt.Errorf("metric value %q: %w", rec[col["Metric Value"]], err)
		}
		switch u := strings.ToLower(rec[col["Metric Unit"]]); {
		case strings.HasPrefix(u, "us"):
			v *= 1e3
		case strings.HasPrefix(u, "ms"):
			v *= 1e6
		case u == "s" || u == "second":
			v *= 1e9
		}
		out[job][rep].ns += v
		out[job][rep].n++
	}
	return out, nil
}

// benchGates checks one row against issue 3's targets.
// benchGates lists the targets a row misses; those against KernelBench's
// own figures only where it ran (kb).
func benchGates(r *benchRow, kb bool) []string {
	var f []string
	if r.OursVerdict != VerdictPass || len(r.OursWarmS) < benchWarmRuns {
		return f // already recorded
	}
	switch r.Flavor {
	case "fast_cuda":
		if r.OursWarmMed > benchWallFastCUDA {
			f = append(f, fmt.Sprintf("warm wall %.2fs > %.1fs (fast-loader CUDA)", r.OursWarmMed, benchWallFastCUDA))
		}
	case "triton":
		if r.OursWarmMed > benchWallTriton {
			f = append(f, fmt.Sprintf("warm wall %.2fs > %.1fs (Triton)", r.OursWarmMed, benchWallTriton))
		}
	case "load_inline":
		if r.OursWarmMed > benchWallInlineWarm {
			f = append(f, fmt.Sprintf("warm wall %.2fs > %.1fs (load_inline compiled before)", r.OursWarmMed, benchWallInlineWarm))
		}
		if r.KBWallS > 0 && r.OursColdS > benchInlineColdFrac*r.KBWallS {
			f = append(f, fmt.Sprintf("cold wall %.1fs > %.0f%% of KernelBench's %.1fs", r.OursColdS, 100*benchInlineColdFrac, r.KBWallS))
		}
	}
	if kb && !r.KBCorrect {
		f = append(f, "KernelBench did not pass it: "+r.KBError)
	}
	if r.NcuUS <= 0 {
		f = append(f, "no ncu measurement: "+r.NcuError)
	} else if d := r.OursMedianUS/r.NcuUS - 1; math.Abs(d) > benchNcuTol {
		f = append(f, fmt.Sprintf("median %.1fus is %+.1f%% off ncu's %.1fus (limit %.0f%%)", r.OursMedianUS, 100*d, r.NcuUS, 100*benchNcuTol))
	}
	// The gate is the CV of the medians of repeated evaluations; the CV of
	// one evaluation's iterations is reported beside it.
	if r.OursMedianUS*1e-6 >= benchCVMinS && r.OursRunCV > benchCVMax {
		f = append(f, fmt.Sprintf("repeated-measurement CV %.2f%% > %.0f%%", 100*r.OursRunCV, 100*benchCVMax))
	}
	// Speedups are held to agree only where both harnesses time right: a
	// KernelBench time off ncu's by more than the tolerance is its error,
	// and disagreeing with it is the point (the table shows both).
	if r.KBCorrect && r.KBSpeedup > 0 && r.OursSpeedup > 0 && !benchKBOffNcu(r) {
		tol := benchKBNoise(r)
		if d := r.OursSpeedup/r.KBSpeedup - 1; math.Abs(d) > tol {
			f = append(f, fmt.Sprintf("speedup %.3f vs KernelBench's %.3f: %+.1f%%, beyond its noise %.1f%%", r.OursSpeedup, r.KBSpeedup, 100*d, 100*tol))
		}
	}
	return f
}

// benchKBOffNcu: KernelBench's candidate time is further from ncu's than
// ours is allowed to be.
func benchKBOffNcu(r *benchRow) bool {
	return r.NcuUS > 0 && r.KBRuntimeUS > 0 && math.Abs(r.KBRuntimeUS/r.NcuUS-1) > benchNcuTol
}

// benchKBNoise: twice the relative spread of KernelBench's speedup, from
// the per-trial standard deviations of its two timings, but at least 3%
// (it rounds to three digits and reports a mean where we report a median).
func benchKBNoise(r *benchRow) float64 {
	var a, b float64
	if r.KBRuntimeUS > 0 {
		a = r.KBStdUS / r.KBRuntimeUS
	}
	if r.KBRefUS > 0 {
		b = r.KBRefStdUS / r.KBRefUS
	}
	return math.Max(0.03, 2*math.Hypot(a, b))
}

func benchTable(rep *benchReport) string {
	var b strings.Builder
	fmt.Fprintf(&b, "\n## KernelBench side by side — %s, KernelBench %s\n\n", rep.Device, benchShort(rep.KernelBench))
	fmt.Fprintf(&b, "worker start %.1fs (once) · KernelBench import %.1fs (torch %.1fs, once) · phases: ours %.0fs, KernelBench %.0fs, ncu %.0fs\n\n",
		rep.WorkerStartS, rep.KBImportS, rep.KBTorchImportS, rep.PhaseS["ours"], rep.PhaseS["kernelbench"], rep.PhaseS["ncu"])
	b.WriteString("| problem | flavor | ours cold s | ours warm s | KB s | cold/KB | warm/KB | ours µs | KB µs | ncu µs (k) | ours/ncu | KB/ncu | iter CV % | run CV % | speedup ours | speedup KB | ok |\n")
	b.WriteString("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|\n")
	for _, r := range rep.Rows {
		prob := strings.TrimSuffix(r.Key, "/"+r.Flavor)
		ok := "✓"
		if len(r.Failures) > 0 {
			ok = "✗"
		}
		ratio := func(a, b float64, pct bool) string {
			switch {
			case a <= 0 || b <= 0:
				return "-"
			case pct:
				return fmt.Sprintf("%.1f%%", 100*a/b)
			}
			return fmt.Sprintf("%.2f", a/b)
		}
		fmt.Fprintf(&b, "| %s | %s | %s | %s | %s | %s | %s | %s | %s | %s (%d) | %s | %s | %s | %s | %s | %s | %s |\n",
			prob, r.Flavor, benchNum(r.OursColdS, 2), benchNum(r.OursWarmMed, 2), benchNum(r.KBWallS, 2),
			ratio(r.OursColdS, r.KBWallS, false), ratio(r.OursWarmMed, r.KBWallS, false),
			benchNum(r.OursMedianUS, 1), benchNum(r.KBRuntimeUS, 1), benchNum(r.NcuUS, 1), r.NcuKernels,
			ratio(r.OursMedianUS, r.NcuUS, true), ratio(r.KBRuntimeUS, r.NcuUS, true),
			benchNum(100*r.OursCV, 2), benchNum(100*r.OursRunCV, 3), benchNum(r.OursSpeedup, 3), benchNum(r.KBSpeedup, 3), ok)
	}
	var fails []string
	for _, r := range rep.Rows {
		for _, f := range r.Failures {
			fails = append(fails, "- "+r.Key+": "+f)
		}
	}
	b.WriteString("\n" + buildBenchTable(rep.Device, benchStageRows(rep.Rows)))
	if len(fails) > 0 {
		b.WriteString("\nTargets missed:\n" + strings.Join(fails, "\n") + "\n")
	} else {
		b.WriteString("\nAll targets met.\n")
	}
	return b.String()
}

// benchStageRows is the stage breakdown per flavor: the median of each
// stage over its problems, cold and warm, and KernelBench's wall beside.
func benchStageRows(rows []*benchRow) []buildBenchRow {
	var out []buildBenchRow
	for _, flavor := range benchFlavors {
		cold, warm := map[string][]float64{}, map[string][]float64{}
		var coldWall, warmWall, kbWall []float64
		for _, r := range rows {
			if r.Flavor != flavor {
				continue
			}
			for k, v := range r.OursColdStage {
				cold[k] = append(cold[k], v)
			}
			for k, v := range r.OursStages {
				warm[k] = append(warm[k], v)
			}
			coldWall, warmWall = append(coldWall, r.OursColdS), append(warmWall, r.OursWarmMed)
			if r.KBWallS > 0 {
				kbWall = append(kbWall, r.KBWallS)
			}
		}
		if len(coldWall) == 0 {
			continue
		}
		med := func(m map[string][]float64) map[string]float64 {
			o := map[string]float64{}
			for k, v := range m {
				o[k] = benchMedian(v)
			}
			return o
		}
		out = append(out,
			buildBenchRow{Kind: flavor, Case: "ours cold", Stages: med(cold), WallS: benchMedian(coldWall), Verdict: "median"},
			buildBenchRow{Kind: flavor, Case: "ours warm", Stages: med(warm), WallS: benchMedian(warmWall), Verdict: "median"},
			buildBenchRow{Kind: flavor, Case: "KernelBench eval_kernel_against_ref", WallS: benchMedian(kbWall), Verdict: "median"})
	}
	return out
}

func benchNum(v float64, prec int) string {
	if v == 0 || math.IsNaN(v) {
		return "-"
	}
	return strconv.FormatFloat(v, 'f', prec, 64)
}

func benchShort(s string) string {
	if len(s) > 12 {
		return s[:12]
	}
	return s
}

func benchMedian(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := append([]float64(nil), xs...)
	sort.Float64s(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

func benchCV(xs []float64) float64 {
	if len(xs) < 2 {
		return 0
	}
	var m float64
	for _, x := range xs {
		m += x
	}
	m /= float64(len(xs))
	var v float64
	for _, x := range xs {
		v += (x - m) * (x - m)
	}
	if m == 0 {
		return 0
	}
	return math.Sqrt(v/float64(len(xs)-1)) / m
}

func benchMinMax(xs []float64) (lo, hi float64) {
	if len(xs) == 0 {
		return 0, 0
	}
	lo, hi = xs[0], xs[0]
	for _, x := range xs {
		lo, hi = math.Min(lo, x), math.Max(hi, x)
	}
	return lo, hi
}

// The benchmark's own logic, checked without a GPU: the ncu report is split
// at the markers and summed per forward, and the gates fire.
func TestBenchParseNcu(t *testing.T) {
	const head = `==PROF== Connected to process 123 (/opt/torch/.venv/bin/python3.12)
"ID","Process ID","Process Name","Host Name","Kernel Name","Context","Stream","Block Size","Grid Size","Device","CC","Section Name","Metric Name","Metric Unit","Metric Value"
`
	row := func(id int, name, grid, unit, val string) string {
		return fmt.Sprintf(`"%d","123","python3.12","127.0.0.1","%s","1","7","(256, 1, 1)","%s","0","9.0","Command line profiler metrics","gpu__time_duration.sum","%s","%s"`+"\n", id, name, grid, unit, val)
	}
	csvText := head +
		row(0, "kv_ncu_marker", "(1, 1, 1)", "nsecond", "1,216") +
		row(1, "ln_partial", "(256, 16, 1)", "nsecond", "100,000") +
		row(2, "ln_apply", "(1024, 16, 1)", "usecond", "200.5") +
		row(3, "kv_ncu_marker", "(1, 2, 1)", "nsecond", "1,100") +
		row(4, "ln_partial", "(256, 16, 1)", "nsecond", "101000") +
		row(5, "ln_apply", "(1024, 16, 1)", "nsecond", "199500") +
		"==PROF== Disconnected from process 123\n" +
		row(6, "kv_ncu_marker", "(2, 1, 1)", "nsecond", "1,000") +
		row(7, "gemm_fp32", "(64, 32, 1)", "msecond", "8.25")
	got, err := benchParseNcu(strings.NewReader(csvText))
	if err != nil {
		t.Fatal(err)
	}
	want := map[int][]benchNcuRep{0: {{300500, 2}, {300500, 2}}, 1: {{8.25e6, 1}}}
	if len(got) != len(want) {
		t.Fatalf("jobs: got %v, want %v", got, want)
	}
	for j, reps := range want {
		if len(got[j]) != len(reps) {
			t.Fatalf("job %d: got %v, want %v", j, got[j], reps)
		}
		for i := range reps {
			if math.Abs(got[j][i].ns-reps[i].ns) > 1e-6 || got[j][i].n != reps[i].n {
				t.Errorf("job %d rep %d: got %+v, want %+v", j, i, got[j][i], reps[i])
			}
		}
	}
	if _, err := benchParseNcu(strings.NewReader(`"ID","Kernel Name"` + "\n")); err == nil {
		t.Error("a report without the metric columns parsed")
	}
}

func TestBenchGates(t *testing.T) {
	good := func() *benchRow {
		return &benchRow{Key: "level1/x/fast_cuda", Flavor: "fast_cuda", OursVerdict: VerdictPass,
			OursWarmS: []float64{1, 1, 1}, OursWarmMed: 1, OursMedianUS: 100, OursCV: 0.05, OursRunCV: 0.002, OursSpeedup: 2.0,
			KBCorrect: true, KBWallS: 3, KBRuntimeUS: 101, KBStdUS: 1, KBRefUS: 202, KBRefStdUS: 2, KBSpeedup: 2.0, NcuUS: 98}
	}
	cases := []struct {
		name  string
		edit  func(r *benchRow)
		fails int
		noKB  bool // KernelBench's phase skipped (KEVOLVE_BENCH_SKIP_KB)
	}{
		{"all met", func(r *benchRow) {}, 0, false},
		{"slow wall", func(r *benchRow) { r.OursWarmMed = 2.5 }, 1, false},
		{"triton allowance", func(r *benchRow) { r.Flavor = "triton"; r.OursWarmMed = 2.4 }, 0, false},
		{"off ncu", func(r *benchRow) { r.NcuUS = 90 }, 1, false},
		{"no ncu", func(r *benchRow) { r.NcuUS = 0; r.NcuError = "x" }, 1, false},
		{"noisy", func(r *benchRow) { r.OursRunCV = 0.02 }, 1, false},
		{"noisy but short", func(r *benchRow) { r.OursRunCV = 0.02; r.OursMedianUS = 20; r.NcuUS = 20 }, 0, false},
		{"speedup disagrees", func(r *benchRow) { r.OursSpeedup = 2.2 }, 1, false},
		{"speedup disagrees with a KB time off ncu", func(r *benchRow) { r.OursSpeedup = 2.2; r.KBRuntimeUS = 115 }, 0, false},
		{"kb wrong", func(r *benchRow) { r.KBCorrect = false }, 1, false},
		{"kb skipped", func(r *benchRow) {
			*r = benchRow{Key: r.Key, Flavor: r.Flavor, OursVerdict: r.OursVerdict, OursWarmS: r.OursWarmS,
				OursWarmMed: r.OursWarmMed, OursMedianUS: r.OursMedianUS, OursRunCV: r.OursRunCV, OursSpeedup: r.OursSpeedup, NcuUS: 98}
		}, 0, true},
		{"kb skipped, slow wall", func(r *benchRow) { r.KBCorrect = false; r.OursWarmMed = 2.5 }, 1, true},
		{"inline cold too slow", func(r *benchRow) { r.Flavor = "load_inline"; r.OursColdS = 40; r.KBWallS = 60 }, 1, false},
		{"inline cold fast", func(r *benchRow) { r.Flavor = "load_inline"; r.OursColdS = 25; r.KBWallS = 60 }, 0, false},
	}
	for _, c := range cases {
		r := good()
		c.edit(r)
		if got := benchGates(r, !c.noKB); len(got) != c.fails {
			t.Errorf("%s: got %d failures %v, want %d", c.name, len(got), got, c.fails)
		}
	}
}

// benchJudgePhases is the judge's own time per phase of a result, for the
// log: what the judge adds to a warm evaluation.
func benchJudgePhases(res *EvalResult) string {
	if res.Judge == nil {
		return "none"
	}
	return fmt.Sprintf("%s %v", res.Judge.Status, res.Judge.PhaseS)
}
