package harness

import (
	"context"
	"crypto/sha256"
	"database/sql"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/kevolve/kevolve-mcp/harness/toolchain"

	"github.com/kevolve/kevolve-mcp/harness/worker"
)

// Verdicts of an evaluation.
const (
	VerdictPass               = "pass"
	VerdictIncorrect          = "incorrect"
	VerdictCompileError       = "compile_error"
	VerdictRuntimeError       = "runtime_error"
	VerdictTimeout            = "timeout"
	VerdictCrash              = "crash"
	VerdictIntegrityViolation = "integrity_violation"
	// VerdictReferenceError: the reference (not the candidate) failed to
	// import, construct, make inputs or run; Stage says which
	// (reference_import|reference_init|reference_inputs|reference_forward).
	VerdictReferenceError = "reference_error"
)

// evalVersion changes whenever the meaning of a result changes; the
// embedded Python's content hash is appended, so editing it invalidates
// cached evaluations too.
const evalVersion = "eval-1"

// HarnessVersion names this evaluator's code for caches and results.
func HarnessVersion() string { return evalVersion + "+" + worker.SourceHash() }

// Source is a Python program given as a file path or inline code.
type Source struct {
	Path string `json:"path,omitempty"`
	Code string `json:"code,omitempty"`
}

// Tolerance overrides the dtype defaults (fp32 1e-4, bf16/fp16 ~1e-2).
// A zero field keeps the default.
type Tolerance struct {
	Atol    float64 `json:"atol,omitempty"`
	Rtol    float64 `json:"rtol,omitempty"`
	RelNorm float64 `json:"rel_norm,omitempty"`
}

// EvalRequest is one candidate against one reference.
type EvalRequest struct {
	Reference  Source        `json:"reference"`
	Candidate  Source        `json:"candidate"`
	Target     string        `json:"target,omitempty"` // cpu | nvidia | auto (default)
	Trials     int           `json:"trials,omitempty"` // default 5
	Seed       int64         `json:"seed,omitempty"`   // default 42
	Timeout    time.Duration `json:"timeout,omitempty"`
	SkipTiming bool          `json:"skip_timing,omitempty"`
	Tolerance  *Tolerance    `json:"tolerance,omitempty"`
	SOLSeconds float64       `json:"sol_seconds,omitempty"`
	Shapes     string        `json:"shapes,omitempty"` // shape-set name, passed to get_inputs as env KEVOLVE_SHAPES
	// CompileReference times torch.compile of the reference too (default:
	// on NVIDIA, once per reference; the result is cached). false skips it.
	CompileReference *bool `json:"compile_reference,omitempty"`
	// CountWork asks the child to count the reference forward's FLOPs and
	// bytes on the real inputs (EvalResult.Work), for SOL.
	CountWork bool `json:"count_work,omitempty"`
}

// MemoryUse is the peak device memory each side allocated while it ran
// (torch.cuda.max_memory_allocated). On CPU the sides are null and the
// child's peak RSS is given instead.
type MemoryUse struct {
	ReferencePeakBytes *int64 `json:"reference_peak_bytes"`
	CandidatePeakBytes *int64 `json:"candidate_peak_bytes"`
	DeviceTotalBytes   int64  `json:"device_total_bytes,omitempty"`
	ProcessPeakRSS     int64  `json:"process_peak_rss_bytes,omitempty"`
	// StagePeakBytes is the CUDA allocator's peak per stage (correctness,
	// integrity, timing, stream_check, after_timing...): where the
	// harness's memory goes on multi-GB problems.
	StagePeakBytes map[string]int64 `json:"stage_peak_bytes,omitempty"`
	// StagePeakRSS is, on CPU, the process's peak RSS so far at the end of
	// each stage (it only grows).
	StagePeakRSS map[string]int64 `json:"stage_peak_rss_bytes,omitempty"`
}

// TracedWork is the reference forward's work counted by the child
// (workcount.py) when EvalRequest.CountWork is set.
type TracedWork struct {
	FLOPs  float64 `json:"flops"`
	Bytes  float64 `json:"bytes"`
	Dtype  string  `json:"dtype"`
	Method string  `json:"method"` // "traced"
	Ops    []struct {
		Op     string  `json:"op"`
		Calls  int     `json:"calls"`
		FLOPs  float64 `json:"flops"`
		Method string  `json:"method"`
	} `json:"ops,omitempty"`
}

// Check is one named correctness or integrity check.
type Check struct {
	Name   string `json:"name"`
	Passed bool   `json:"passed"`
	Detail string `json:"detail,omitempty"`
}

// Stats summarizes the timed iterations of one program.
type Stats struct {
	MedianS float64 `json:"median_s"`
	P10S    float64 `json:"p10_s"`
	P90S    float64 `json:"p90_s"`
	// CV is robust, 1.4826·MAD/median, so one iteration preempted by the OS
	// does not make a steady kernel look noisy; CVRaw is stdev/mean.
	CV    float64 `json:"cv"`
	CVRaw float64 `json:"cv_raw"`
	Iters int     `json:"iters"`
}

// EvalResult is everything an agent needs to fix or accept a kernel.
type EvalResult struct {
	Verdict string `json:"verdict"`
	Correct bool   `json:"correct"`
	Stage   string `json:"stage,omitempty"` // the stage that failed
	Target  string `json:"target"`
	// Shapes is the shape set the evaluation ran ("" = the problem's default):
	// a SOL analysis of the same run must count the same shapes.
	Shapes           string   `json:"shapes,omitempty"`
	Device           string   `json:"device"`
	Checks           []Check  `json:"checks"`
	Candidate        *Stats   `json:"candidate,omitempty"`
	RefEager         *Stats   `json:"ref_eager,omitempty"`
	RefCompile       *Stats   `json:"ref_compile,omitempty"`
	SpeedupVsEager   *float64 `json:"speedup_vs_eager,omitempty"`
	SpeedupVsCompile *float64 `json:"speedup_vs_compile,omitempty"`
	Warnings         []string `json:"warnings,omitempty"`
	Log              string   `json:"log,omitempty"`
	// StageS is the child's seconds per stage (load_candidate, correctness, timing...).
	StageS map[string]float64 `json:"stage_s,omitempty"`
	// Memory and Work: added for issue 9 (integrity/memory helper).
	Memory         *MemoryUse  `json:"memory,omitempty"`
	Work           *TracedWork `json:"work,omitempty"`
	WallS          float64     `json:"wall_s"`
	Cached         bool        `json:"cached"`
	HarnessVersion string      `json:"harness_version"`
}

// EvalConfig configures an Evaluator.
type EvalConfig struct {
	Python   string  // interpreter with torch; default toolchain.Python()
	CacheDir string  // default KEVOLVE_CACHE_DIR or ~/.cache/kevolve
	DB       *sql.DB // optional: caches evaluations in table eval_cache
	Logger   *slog.Logger
	GPUSlots int // concurrent device phases per GPU; default 1
	// DefaultTimeout applies when a request has none; default 180 s.
	DefaultTimeout time.Duration
	// CPUMemLimit bounds a CPU job's extra address space; default 16 GiB.
	// GPU jobs get none: CUDA reserves terabytes of virtual address space.
	CPUMemLimit int64
}

// Evaluator runs evaluations through a warm Python worker.
type Evaluator struct {
	cfg    EvalConfig
	w      *worker.Worker
	log    *slog.Logger
	gpuSem chan struct{}
	cpuSem chan struct{}

	probeMu sync.Mutex
	probe   *deviceProbe

	// torch.compile of a reference costs ~10 s per evaluation on the H100
	// box; its timing depends only on the reference, device and shapes, so
	// it is measured once and reused.
	compileMu    sync.Mutex
	compileStats map[string]*Stats
}

type deviceProbe struct {
	CUDA       bool   `json:"cuda"`
	DeviceName string `json:"device_name"`
	CPUName    string `json:"cpu_name"`
	Error      string `json:"error"`
}

// NewEvaluator unpacks the worker and prepares the cache table. The Python
// parent starts on the first evaluation.
func NewEvaluator(cfg EvalConfig) (*Evaluator, error) {
	if cfg.Python == "" {
		cfg.Python = toolchain.Python()
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.NewTextHandler(os.Stderr, nil))
	}
	if cfg.GPUSlots <= 0 {
		cfg.GPUSlots = 1
	}
	if cfg.DefaultTimeout <= 0 {
		cfg.DefaultTimeout = 180 * time.Second
	}
	if cfg.CPUMemLimit == 0 {
		cfg.CPUMemLimit = 16 << 30
	}
	if cfg.CacheDir == "" {
		cfg.CacheDir = worker.DefaultCacheDir()
	}
	// Compiled kernels (kevolve loaders, load_inline builds) live beside the
	// worker's files, under the same cache root.
	w, err := worker.New(worker.Config{Python: cfg.Python, CacheDir: cfg.CacheDir, Logger: cfg.Logger,
		Env: map[string]string{"KEVOLVE_CACHE_DIR": filepath.Join(cfg.CacheDir, "kernels")}})
	if err != nil {
		return nil, fmt.Errorf("evaluator: %w", err)
	}
	if cfg.DB != nil {
		if err := migrateEvalCache(cfg.DB); err != nil {
			return nil, err
		}
	}
	return &Evaluator{cfg: cfg, w: w, log: cfg.Logger,
		gpuSem: make(chan struct{}, cfg.GPUSlots), cpuSem: make(chan struct{}, 1),
		compileStats: map[string]*Stats{}}, nil
}

func migrateEvalCache(db *sql.DB) error {
	_, err := db.Exec(`CREATE TABLE IF NOT EXISTS eval_cache (
		key TEXT PRIMARY KEY,
		harness_version TEXT NOT NULL,
		verdict TEXT NOT NULL,
		result TEXT NOT NULL,
		created_at TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ','now'))
	)`)
	if err != nil {
		return fmt.Errorf("migrate eval_cache: %w", err)
	}
	_, err = db.Exec(`CREATE TABLE IF NOT EXISTS ref_compile_timing (
		key TEXT PRIMARY KEY,
		stats TEXT NOT NULL,
		created_at TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ','now'))
	)`)
	if err != nil {
		return fmt.Errorf("migrate ref_compile_timing: %w", err)
	}
	return nil
}

func refKey(refCode, target, device string, req EvalRequest) string {
	h := sha256.New()
	for _, f := range []string{HarnessVersion(), target, device, refCode, fmt.Sprint(req.Seed), req.Shapes} {
		h.Write([]byte(f))
		h.Write([]byte{0})
	}
	return hex.EncodeToString(h.Sum(nil))
}

func (e *Evaluator) compileGet(ctx context.Context, key string) *Stats {
	e.compileMu.Lock()
	s := e.compileStats[key]
	e.compileMu.Unlock()
	if s != nil || e.cfg.DB == nil {
		return s
	}
	var js string
	if err := e.cfg.DB.QueryRowContext(ctx, `SELECT stats FROM ref_compile_timing WHERE key = ?`, key).Scan(&js); err != nil {
		return nil
	}
	var st Stats
	if json.Unmarshal([]byte(js), &st) != nil {
		return nil
	}
	e.compileMu.Lock()
	e.compileStats[key] = &st
	e.compileMu.Unlock()
	return &st
}

func (e *Evaluator) compilePut(ctx context.Context, key string, s *Stats) {
	e.compileMu.Lock()
	e.compileStats[key] = s
	e.compileMu.Unlock()
	if e.cfg.DB == nil {
		return
	}
	b, _ := json.Marshal(s)
	if _, err := e.cfg.DB.ExecContext(ctx, `INSERT OR REPLACE INTO ref_compile_timing (key, stats) VALUES (?, ?)`, key, string(b)); err != nil {
		e.log.Warn("ref compile timing cache write", "err", err)
	}
}

// AcquireGPU takes the GPU the evaluator times on, for other jobs that need
// it alone (a profiler's counters, a calibration), and returns its release.
func (e *Evaluator) AcquireGPU(ctx context.Context) (func(), error) { return acquire(ctx, e.gpuSem) }

func acquire(ctx context.Context, sem chan struct{}) (func(), error) {
	select {
	case sem <- struct{}{}:
		return func() { <-sem }, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// PyDir is the folder holding the worker's Python, the kevolve package
// included; other harness jobs (profiling) put it on sys.path.
func (e *Evaluator) PyDir() string { return e.w.PyDir() }

// WorkerInfo is the warm parent's start report (versions, import seconds,
// what was preloaded), starting it if needed.
func (e *Evaluator) WorkerInfo(ctx context.Context) (map[string]any, error) { return e.w.Info(ctx) }

// Close stops the worker and every evaluation in flight.
func (e *Evaluator) Close() error { return e.w.Close() }

// Device reports the target auto resolves to and the device's name,
// probing once in a forked child (the parent never touches CUDA).
func (e *Evaluator) Device(ctx context.Context) (target, name string, err error) {
	p, err := e.deviceProbe(ctx)
	if err != nil {
		return "", "", err
	}
	if p.CUDA {
		return "nvidia", p.DeviceName, nil
	}
	return "cpu", p.CPUName, nil
}

func (e *Evaluator) deviceProbe(ctx context.Context) (*deviceProbe, error) {
	e.probeMu.Lock()
	defer e.probeMu.Unlock()
	if e.probe != nil {
		return e.probe, nil
	}
	out, err := e.w.Run(ctx, worker.Job{Module: "probe", Func: "main", Timeout: 60 * time.Second})
	if err != nil {
		return nil, fmt.Errorf("device probe: %w", err)
	}
	var p deviceProbe
	if out.Result == nil {
		return nil, fmt.Errorf("device probe died (signal %d, code %d): %s", out.Signal, out.Code, out.Log)
	}
	if err := json.Unmarshal(out.Result, &p); err != nil {
		return nil, fmt.Errorf("device probe result: %w", err)
	}
	e.probe = &p
	return &p, nil
}

func readSource(s Source, what string) (code, path string, err error) {
	switch {
	case s.Code != "" && s.Path != "":
		return "", "", fmt.Errorf("%s: give a path or inline code, not both", what)
	case s.Code != "":
		return s.Code, "", nil
	case s.Path != "":
		abs, err := filepath.Abs(s.Path)
		if err != nil {
			return "", "", fmt.Errorf("%s path %q: %w", what, s.Path, err)
		}
		b, err := os.ReadFile(abs)
		if err != nil {
			return "", "", fmt.Errorf("read %s: %w", what, err)
		}
		return string(b), abs, nil
	default:
		return "", "", fmt.Errorf("%s: no path or code given", what)
	}
}

// sourceArg ships a program once: its path where the child can read the
// file (imports beside it keep working), else its code.
func sourceArg(path, code string) map[string]string {
	if path != "" {
		return map[string]string{"path": path}
	}
	return map[string]string{"code": code}
}

// cacheKey hashes everything that decides a result.
func cacheKey(refCode, candCode, target, device string, req EvalRequest) string {
	h := sha256.New()
	fields := []any{HarnessVersion(), target, device, refCode, candCode, req.Trials, req.Seed,
		req.SkipTiming, req.Tolerance, req.SOLSeconds, req.Shapes, req.CountWork}
	for _, f := range fields {
		b, _ := json.Marshal(f)
		h.Write(b)
		h.Write([]byte{0})
	}
	return hex.EncodeToString(h.Sum(nil))
}

// pyResult is what evaluate.py returns.
type pyResult struct {
	HarnessError string `json:"harness_error"`
	Error        string `json:"error"`
	ErrorType    string `json:"error_type"`
	Verdict      string `json:"verdict"`
	Stage        string `json:"stage"`
	Checks       []Check
	Warnings     []string
	Candidate    *Stats             `json:"candidate"`
	RefEager     *Stats             `json:"ref_eager"`
	RefCompile   *Stats             `json:"ref_compile"`
	StageS       map[string]float64 `json:"stage_s"`
	Memory       *MemoryUse         `json:"memory"`
	Work         *TracedWork        `json:"work"`
}

// Evaluate checks and times a candidate. A Go error means the harness could
// not do its job (no Python, unreadable file, broken reference); whatever
// the candidate does is a verdict in the result.
func (e *Evaluator) Evaluate(ctx context.Context, req EvalRequest, progress func(stage string, done, total int)) (*EvalResult, error) {
	t0 := time.Now()
	refCode, refPath, err := readSource(req.Reference, "reference")
	if err != nil {
		return nil, err
	}
	candCode, candPath, err := readSource(req.Candidate, "candidate")
	if err != nil {
		return nil, err
	}
	if req.Trials <= 0 {
		req.Trials = 5
	}
	if req.Seed == 0 {
		req.Seed = 42
	}
	if req.Timeout <= 0 {
		req.Timeout = e.cfg.DefaultTimeout
	}
	target := strings.ToLower(req.Target)
	if target == "" {
		target = "auto"
	}
	probe, err := e.deviceProbe(ctx)
	if err != nil {
		return nil, err
	}
	switch target {
	case "auto":
		target = "cpu"
		if probe.CUDA {
			target = "nvidia"
		}
	case "cpu":
	case "nvidia", "cuda":
		target = "nvidia"
		if !probe.CUDA {
			return nil, fmt.Errorf("target nvidia: no CUDA device visible to the worker's torch (%s)", probe.Error)
		}
	default:
		return nil, fmt.Errorf("unknown target %q (want cpu, nvidia or auto)", req.Target)
	}
	device := probe.CPUName
	if target == "nvidia" {
		device = probe.DeviceName
	}

	if req.Shapes == "" && target == "cpu" {
		// Problems with shape sets default to production sizes that fill a
		// GPU; on a CPU their small set is what runs in seconds. KernelBench
		// files ignore the variable.
		req.Shapes = "small"
	}
	key := cacheKey(refCode, candCode, target, device, req)
	if r := e.cacheGet(ctx, key); r != nil {
		r.Cached = true
		r.Shapes = req.Shapes // part of the key; results cached before the field existed lack it
		r.WallS = time.Since(t0).Seconds()
		return r, nil
	}

	args := map[string]any{
		"reference":   sourceArg(refPath, refCode),
		"candidate":   sourceArg(candPath, candCode),
		"target":      target,
		"trials":      req.Trials,
		"seed":        req.Seed,
		"skip_timing": req.SkipTiming,
		"sol_seconds": req.SOLSeconds,
		"budget_s":    req.Timeout.Seconds(),
		"count_work":  req.CountWork,
	}
	if req.Tolerance != nil {
		args["tolerance"] = req.Tolerance
	}
	rkey := refKey(refCode, target, device, req)
	knownCompile := e.compileGet(ctx, rkey)
	if knownCompile != nil || target != "nvidia" || (req.CompileReference != nil && !*req.CompileReference) {
		// Measured before (or CPU, where inductor's C++ build is too slow to pay per evaluation).
		args["compile_reference"] = false
	}
	env := map[string]string{}
	if req.Shapes != "" {
		env["KEVOLVE_SHAPES"] = req.Shapes
	}
	var mem int64
	if target == "cpu" {
		// Triton kernels run in its interpreter on the CPU.
		env["TRITON_INTERPRET"] = "1"
		mem = e.cfg.CPUMemLimit
	}
	sem := e.cpuSem
	if target == "nvidia" {
		sem = e.gpuSem
	}
	job := worker.Job{
		Module: "evaluate", Func: "main", Args: args, Env: env, Timeout: req.Timeout, MemLimit: mem,
		Progress: progress,
		Gate:     func(ctx context.Context) (func(), error) { return acquire(ctx, sem) },
	}
	out, err := e.w.Run(ctx, job)
	if errors.Is(err, worker.ErrWorkerDied) {
		// The parent died under this job (rare: children die alone). One retry
		// on a fresh parent, then report.
		e.log.Warn("python worker died during an evaluation; retrying once")
		out, err = e.w.Run(ctx, job)
	}
	if err != nil {
		return nil, fmt.Errorf("evaluate: %w", err)
	}
	res := &EvalResult{Target: target, Shapes: req.Shapes, Device: device, HarnessVersion: HarnessVersion(), Log: out.Log, Checks: []Check{}}
	switch {
	case out.TimedOut:
		res.Verdict = VerdictTimeout
		res.Stage = out.Stage
		res.Checks = append(res.Checks, Check{Name: "deadline", Passed: false,
			Detail: fmt.Sprintf("killed after %s in stage %q", req.Timeout, out.Stage)})
	case out.Result == nil:
		res.Verdict = VerdictCrash
		res.Stage = out.Stage
		detail := fmt.Sprintf("the evaluation process exited with code %d", out.Code)
		if out.Signal != 0 {
			detail = fmt.Sprintf("the evaluation process died of signal %d (%s)", int(out.Signal), out.Signal)
			if out.Signal == syscall.SIGKILL && target == "cpu" {
				detail += "; a memory limit or the OOM killer may have ended it"
			}
		}
		res.Checks = append(res.Checks, Check{Name: "process", Passed: false, Detail: detail + " in stage " + out.Stage})
	default:
		var pr pyResult
		if err := json.Unmarshal(out.Result, &pr); err != nil {
			return nil, fmt.Errorf("evaluate: decode worker result: %w", err)
		}
		if pr.HarnessError != "" {
			return nil, fmt.Errorf("evaluate: %s", pr.HarnessError)
		}
		if pr.Verdict == "" {
			if pr.ErrorType == "MemoryError" {
				res.Verdict, res.Stage = VerdictCrash, out.Stage
				res.Checks = append(res.Checks, Check{Name: "memory", Passed: false, Detail: pr.Error})
				break
			}
			return nil, fmt.Errorf("evaluate: the harness's Python failed: %s", pr.Error)
		}
		res.Verdict, res.Stage = pr.Verdict, pr.Stage
		if pr.Checks != nil {
			res.Checks = pr.Checks
		}
		res.Warnings = pr.Warnings
		if pr.Error != "" {
			res.Warnings = append(res.Warnings, pr.Error)
		}
		res.Candidate, res.RefEager, res.RefCompile = pr.Candidate, pr.RefEager, pr.RefCompile
		if res.RefCompile != nil {
			e.compilePut(ctx, rkey, res.RefCompile)
		} else if knownCompile != nil && res.Candidate != nil {
			res.RefCompile = knownCompile
		}
		res.StageS = pr.StageS
		res.Memory, res.Work = pr.Memory, pr.Work
	}
	res.Correct = res.Verdict == VerdictPass
	if res.Correct && res.Candidate != nil && res.Candidate.MedianS > 0 {
		if res.RefEager != nil {
			s := res.RefEager.MedianS / res.Candidate.MedianS
			res.SpeedupVsEager = &s
		}
		if res.RefCompile != nil {
			s := res.RefCompile.MedianS / res.Candidate.MedianS
			res.SpeedupVsCompile = &s
		}
	}
	res.WallS = time.Since(t0).Seconds()
	// Timeouts and crashes can be the machine's fault (load, OOM): not cached.
	if res.Verdict != VerdictTimeout && res.Verdict != VerdictCrash {
		e.cachePut(ctx, key, res)
	}
	return res, nil
}

func (e *Evaluator) cacheGet(ctx context.Context, key string) *EvalResult {
	if e.cfg.DB == nil {
		return nil
	}
	var s string
	err := e.cfg.DB.QueryRowContext(ctx, `SELECT result FROM eval_cache WHERE key = ?`, key).Scan(&s)
	if err != nil {
		if !errors.Is(err, sql.ErrNoRows) {
			e.log.Warn("eval cache read", "err", err)
		}
		return nil
	}
	var r EvalResult
	if err := json.Unmarshal([]byte(s), &r); err != nil {
		e.log.Warn("eval cache decode", "err", err)
		return nil
	}
	return &r
}

func (e *Evaluator) cachePut(ctx context.Context, key string, r *EvalResult) {
	if e.cfg.DB == nil {
		return
	}
	b, err := json.Marshal(r)
	if err != nil {
		return
	}
	_, err = e.cfg.DB.ExecContext(ctx, `INSERT OR REPLACE INTO eval_cache (key, harness_version, verdict, result) VALUES (?, ?, ?, ?)`,
		key, r.HarnessVersion, r.Verdict, string(b))
	if err != nil {
		e.log.Warn("eval cache write", "err", err)
	}
}
