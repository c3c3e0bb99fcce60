package harness

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"syscall"
	"time"

	"github.com/kevolve/kevolve-mcp/harness/device"
	"github.com/kevolve/kevolve-mcp/harness/lease"
	"github.com/kevolve/kevolve-mcp/harness/problem"
	"github.com/kevolve/kevolve-mcp/harness/sandbox"
	"github.com/kevolve/kevolve-mcp/harness/sol"
	"github.com/kevolve/kevolve-mcp/harness/target"
	"github.com/kevolve/kevolve-mcp/harness/toolchain"
	"github.com/kevolve/kevolve-mcp/harness/worker"
)

// Evaluator is the evaluation service: problem + candidate + device lease
// -> verdict, timing, SOL and fitness, through one warm Python worker that
// serves every device of the host.
type Evaluator struct {
	cfg EvalConfig
	w   *worker.Worker
	log *slog.Logger

	probeMu sync.Mutex
	probe   *deviceProbe

	poolMu sync.Mutex
	pools  map[target.Name]*lease.Pool

	// torch.compile of a reference costs ~10 s per evaluation on the H100
	// box; its timing depends only on the reference, device and shapes, so
	// it is measured once and reused.
	compileMu    sync.Mutex
	compileStats map[string]*Stats

	workMu sync.Mutex
	work   map[string]*workCall
}

// NewEvaluator unpacks the worker and prepares the cache tables. The
// Python parent starts on the first evaluation.
func NewEvaluator(cfg EvalConfig) (*Evaluator, error) {
	if cfg.Python == "" {
		cfg.Python = toolchain.Python()
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.NewTextHandler(os.Stderr, nil))
	}
	if cfg.DefaultTimeout <= 0 {
		cfg.DefaultTimeout = 180 * time.Second
	}
	if cfg.Reuse == ReuseGPU && os.Getenv("KEVOLVE_FRESH_PROCESS") == "1" {
		cfg.Reuse = ReuseNever
	}
	if cfg.CPUMemLimit == 0 {
		cfg.CPUMemLimit = 16 << 30
	}
	if cfg.HostMemLimit == 0 {
		cfg.HostMemLimit = defaultHostMemLimit(device.HostMemBytes())
	}
	if cfg.CacheDir == "" {
		cfg.CacheDir = toolchain.CacheDir()
	}
	if cfg.DiscoverGPUs == nil {
		cfg.DiscoverGPUs = discoverGPUs
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
	return &Evaluator{cfg: cfg, w: w, log: cfg.Logger, pools: map[target.Name]*lease.Pool{},
		compileStats: map[string]*Stats{}, work: map[string]*workCall{}}, nil
}

// PyDir is the folder holding the worker's Python, the kevolve package
// included; other harness jobs (profiling) put it on sys.path.
func (e *Evaluator) PyDir() string { return e.w.PyDir() }

// WorkerInfo is the warm parent's start report (versions, import seconds,
// what was preloaded), starting it if needed.
func (e *Evaluator) WorkerInfo(ctx context.Context) (map[string]any, error) { return e.w.Info(ctx) }

// Close stops the worker and every evaluation in flight.
func (e *Evaluator) Close() error { return e.w.Close() }

// pyResult is what evaluate.py returns.
type pyResult struct {
	HarnessError string `json:"harness_error"`
	Error        string `json:"error"`
	ErrorType    string `json:"error_type"`
	Verdict      string `json:"verdict"`
	Stage        string `json:"stage"`
	VerdictKBV0  string `json:"verdict_kernelbench_v0"`
	Checks       []Check
	Warnings     []string
	Candidate    *Stats             `json:"candidate"`
	RefEager     *Stats             `json:"ref_eager"`
	RefCompile   *Stats             `json:"ref_compile"`
	StageS       map[string]float64 `json:"stage_s"`
	Memory       *MemoryUse         `json:"memory"`
	Work         *TracedWork        `json:"work"`
	Process      *ProcessUse        `json:"process"`
	Notes        []string           `json:"notes"`
}

// Evaluate checks and times a candidate for a problem on a leased device
// (nil: one is leased for the call from o.Target and o.Device). A Go error
// means the harness could not do its job: an *InputError for the caller's
// mistakes (errors.As), a *lease.NoDeviceError where the target has no
// device here, otherwise the harness's own failure. Whatever the candidate
// does is a verdict in the result.
func (e *Evaluator) Evaluate(ctx context.Context, p Problem, c Candidate, l *Lease, o Options) (Result, error) {
	req := EvalRequest{Reference: p.Reference, Candidate: c, Target: o.Target, Device: o.Device, Trials: o.Trials,
		Seed: o.Seed, Timeout: o.Timeout, SkipTiming: o.SkipTiming, Tolerance: p.Tolerance, SOLSeconds: o.SOLSeconds,
		Shapes: p.Shapes, Work: p.Work, CompileReference: o.CompileReference, KernelPolicy: o.KernelPolicy,
		Retime: o.Retime, ToleranceRule: o.ToleranceRule}
	r, err := e.evaluate(ctx, req, p.Dtype, l, o.Progress)
	if err != nil {
		return Result{}, err
	}
	return *r, nil
}

// EvaluateRequest is Evaluate for a flat request.
func (e *Evaluator) EvaluateRequest(ctx context.Context, req EvalRequest, progress func(stage string, done, total int)) (*EvalResult, error) {
	return e.evaluate(ctx, req, "", nil, progress)
}

// CheckKernelPolicy rejects a kernel policy the harness does not know.
func CheckKernelPolicy(p string) error {
	switch p {
	case "", KernelPolicyDefault, KernelPolicyStrict:
		return nil
	}
	return problem.Inputf("kernel_policy", "%q: use %s or %s", p, KernelPolicyDefault, KernelPolicyStrict)
}

func validate(req *EvalRequest) error {
	switch {
	case req.Trials < 0 || req.Trials > 100:
		return problem.Inputf("trials", "must be between 1 and 100 (0 = default 5), got %d", req.Trials)
	case req.Timeout < 0 || req.Timeout > time.Hour:
		return problem.Inputf("timeout_s", "must be between 0 and 3600 seconds, got %s", req.Timeout)
	case req.ToleranceRule != "" && req.ToleranceRule != ToleranceDefault && req.ToleranceRule != ToleranceKernelBenchV0:
		return problem.Inputf("tolerance_rule", "must be %s or %s, got %q", ToleranceDefault, ToleranceKernelBenchV0, req.ToleranceRule)
	}
	if err := CheckKernelPolicy(req.KernelPolicy); err != nil {
		return err
	}
	if req.KernelPolicy == KernelPolicyDefault {
		req.KernelPolicy = "" // one cache key for the default, named or not
	}
	if req.Trials == 0 {
		req.Trials = 5
	}
	if req.Seed == 0 {
		req.Seed = 42
	}
	return nil
}

func (e *Evaluator) evaluate(ctx context.Context, req EvalRequest, dtype string, l *Lease, progress func(string, int, int)) (*EvalResult, error) {
	t0 := time.Now()
	if err := validate(&req); err != nil {
		return nil, err
	}
	if req.Timeout == 0 {
		req.Timeout = e.cfg.DefaultTimeout
	}
	refCode, refPath, err := problem.Read(req.Reference, "reference")
	if err != nil {
		return nil, err
	}
	candCode, candPath, err := problem.Read(req.Candidate, "candidate")
	if err != nil {
		return nil, err
	}
	if l == nil {
		if l, err = e.Acquire(ctx, req.Target, req.Device, false); err != nil {
			return nil, err
		}
		defer l.Release()
	}
	tgt, dev := l.Target(), l.Device()

	if req.Shapes == "" && tgt == target.CPU {
		// Problems with shape sets default to production sizes that fill a
		// GPU; on a CPU their small set is what runs in seconds. KernelBench
		// files ignore the variable.
		req.Shapes = "small"
	}
	key := cacheKey(refCode, candCode, string(tgt), dev.Name, req)
	if r := e.cacheGet(ctx, key); r != nil && !req.Retime {
		r.Cached = true
		r.Shapes = req.Shapes // part of the key; results cached before the field existed lack it
		r.DeviceIndex, r.DeviceUUID = dev.Index, dev.UUID
		r.WallS = time.Since(t0).Seconds()
		return r, nil
	}

	// The work to bound against: declared, else counted by the child
	// (count_work), else traced here after the evaluation (a separate
	// Python on meta tensors, cached per reference and shape set). The
	// fallback runs only when the child could not count: tracing ahead
	// "in case" started a torch import per evaluation, cancelled as soon as
	// the child's count arrived, so it was never cached and came back on
	// the next evaluation, competing with the child for the host's cores.
	trace := func(ctx context.Context) (sol.Work, error) {
		// The code read and hashed, not the file, which may have changed since.
		path, err := writeTemp(e.cfg.CacheDir, refCode)
		if err != nil {
			return sol.Work{}, err
		}
		defer os.Remove(path)
		return e.tracedWork(ctx, workKey(refCode, req.Shapes), func(ctx context.Context) (sol.Work, error) {
			return sol.Trace(ctx, path, sol.TraceOptions{Python: e.cfg.Python, Shapes: req.Shapes, Timeout: 120 * time.Second})
		})
	}

	// The child's arguments. evaluate.py knows "nvidia" and "cpu": an AMD
	// GPU under ROCm torch is driven through the same torch.cuda calls.
	pyTarget := "cpu"
	if tgt != target.CPU {
		pyTarget = "nvidia"
	}
	args := map[string]any{
		"reference":   sourceArg(refPath, refCode),
		"candidate":   sourceArg(candPath, candCode),
		"target":      pyTarget,
		"trials":      req.Trials,
		"seed":        req.Seed,
		"skip_timing": req.SkipTiming,
		"sol_seconds": req.SOLSeconds,
		"budget_s":    req.Timeout.Seconds(),
		"count_work":  req.CountWork || (!req.SkipTiming && !declaredFor(req.Work, req.Shapes)),
	}
	if req.Tolerance != nil {
		args["tolerance"] = req.Tolerance
	}
	if req.KernelPolicy != "" {
		args["kernel_policy"] = req.KernelPolicy
	}
	if req.ToleranceRule != "" && req.ToleranceRule != ToleranceDefault {
		args["tolerance_rule"] = req.ToleranceRule
	}
	if judgeOff() {
		args["judge"] = false
	}
	rkey := refKey(refCode, string(tgt), dev.Name, req)
	var knownCompile *Stats
	if !req.Retime {
		knownCompile = e.compileGet(ctx, rkey)
	}
	if knownCompile != nil || tgt == target.CPU || (req.CompileReference != nil && !*req.CompileReference) {
		// Measured before (or CPU, where inductor's C++ build is too slow to pay per evaluation).
		args["compile_reference"] = false
	}
	env := l.Env() // pins the child to its device before its first GPU call
	if req.Shapes != "" {
		env["KEVOLVE_SHAPES"] = req.Shapes
	}
	var mem int64
	if tgt == target.CPU {
		// Triton kernels run in its interpreter on the CPU.
		env["TRITON_INTERPRET"] = "1"
		mem = e.cfg.CPUMemLimit
	}
	job := worker.Job{
		Module: "evaluate", Func: "main", Args: args, Env: env, Timeout: req.Timeout, MemLimit: mem, RSSLimit: max(e.cfg.HostMemLimit, 0),
		Progress: progress,
		Gate:     l.Exclusive, // loading and compiling overlap; the device phase runs alone on its device
		Reuse:    e.cfg.Reuse == ReuseAll || (e.cfg.Reuse == ReuseGPU && tgt != target.CPU),
		KeepIf:   keepAfterJudge,
	}
	var childWork *TracedWork
	prepS := e.prepareBuilds(ctx, candCode) // the shared build caches, written by the harness
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
	res := &EvalResult{Target: string(tgt), Shapes: req.Shapes, Device: dev.Name, DeviceIndex: dev.Index, DeviceUUID: dev.UUID,
		HarnessVersion: HarnessVersion(), Log: out.Log, Checks: []Check{}, Sandbox: sandboxReport(out),
		MeasuredAt: t0.UTC().Format(time.RFC3339Nano)}
	switch {
	case out.RSSExceeded > 0:
		// Killed by the host memory limit: the board says which program ran.
		res.Verdict = VerdictRuntimeError
		res.Stage = out.Stage
		who := runningSide(out.Board)
		if who == "" {
			who = "evaluation process"
		}
		res.Checks = append(res.Checks, Check{Name: "out_of_memory", Passed: false,
			Detail: fmt.Sprintf("the %s ran out of memory in stage %s: host memory: the evaluation process reached %s resident, over its limit of %s, and was killed; peak device memory: not recorded (the process was killed)",
				who, out.Stage, gib(out.RSSExceeded), gib(e.cfg.HostMemLimit))})
		res.Memory = &MemoryUse{ProcessPeakRSS: out.RSSExceeded}
	case out.TimedOut:
		res.Verdict = VerdictTimeout
		res.Stage = out.Stage
		res.Checks = append(res.Checks, Check{Name: "deadline", Passed: false,
			Detail: fmt.Sprintf("killed after %s in stage %q", req.Timeout, out.Stage) + loadGrant(out.LoadGrant) + whileRunning(out.Board)})
	case out.Unreported:
		// The harness reports its result before the process ends; a
		// result file with no report is something else's (a candidate
		// that wrote one and ended the process), whatever it says.
		res.Verdict = VerdictIntegrityViolation
		res.Stage = out.Stage
		res.Checks = append(res.Checks, Check{Name: "result_forged", Passed: false,
			Detail: fmt.Sprintf("the evaluation process ended (code %d) in stage %q before the harness reported a result, yet a result file was there: it was not the harness's", out.Code, out.Stage)})
	case out.Result == nil:
		res.Verdict = VerdictCrash
		res.Stage = out.Stage
		detail := fmt.Sprintf("the evaluation process exited with code %d", out.Code)
		if out.Signal != 0 {
			detail = fmt.Sprintf("the evaluation process died of signal %d (%s)", int(out.Signal), out.Signal)
			if out.Signal == syscall.SIGKILL && tgt == target.CPU {
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
		res.Verdict, res.Stage, res.VerdictKernelBenchV0 = pr.Verdict, pr.Stage, pr.VerdictKBV0
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
		if prepS > 0 && res.StageS != nil {
			res.StageS[StagePrepareBuild] = prepS
		}
		res.Memory, res.Work = pr.Memory, pr.Work
		res.Process = pr.Process
		res.Notes = pr.Notes
		childWork = pr.Work
		applyJudge(res, out.Judge, judgeOff())
	}
	res.Correct = res.Verdict == VerdictPass
	setSpeedups(res)
	if res.Candidate != nil {
		traced := trace
		if childWork != nil && childWork.FLOPs+childWork.Bytes > 0 {
			cw := *childWork
			traced = func(context.Context) (sol.Work, error) {
				w := sol.Work{FLOPs: cw.FLOPs, Bytes: cw.Bytes, Dtype: cw.Dtype, Source: "traced"}
				for _, o := range cw.Ops {
					if o.FLOPs > 0 {
						w.Detail = append(w.Detail, sol.OpCount{Op: o.Op, Calls: o.Calls, FLOPs: o.FLOPs, Method: o.Method + " (counted by the evaluation)"})
					}
				}
				return w, nil
			}
		}
		w, err := e.workFor(ctx, req.Shapes, dtype, req.Work, traced)
		e.applySOL(ctx, tgt, dev, res, w, err, e.ownWorkFor(tgt, req.Reference, req.Candidate, req.Shapes, env))
	}
	setFitness(res)
	res.WallS = time.Since(t0).Seconds()
	// Timeouts and crashes can be the machine's fault (load, OOM): not cached.
	if res.Verdict != VerdictTimeout && res.Verdict != VerdictCrash {
		e.cachePut(ctx, key, res)
	}
	return res, nil
}

// sourceArg ships a program as the code that was read and hashed: the child
// runs these bytes, not the file again. A file's path goes with it: its
// folder stays importable and its __file__ is kept (load_module).
func sourceArg(path, code string) map[string]string {
	if path != "" {
		return map[string]string{"path": path, "code": code}
	}
	return map[string]string{"code": code}
}

func setSpeedups(res *EvalResult) {
	if !res.Correct || res.Candidate == nil || res.Candidate.MedianS <= 0 {
		return
	}
	if res.RefEager != nil {
		s := res.RefEager.MedianS / res.Candidate.MedianS
		res.SpeedupVsEager = &s
	}
	if res.RefCompile != nil {
		s := res.RefCompile.MedianS / res.Candidate.MedianS
		res.SpeedupVsCompile = &s
	}
}

// setFitness: speedups for a passing candidate, 0 for anything else (a
// faster_than_sol flag included), the SOL score beside them.
func setFitness(res *EvalResult) {
	res.Fitness = Fitness{}
	if res.RefCompile != nil {
		zero := 0.0
		res.Fitness.SpeedupVsCompile = &zero
	}
	if !res.Correct || res.Verdict != VerdictPass {
		res.SpeedupVsEager, res.SpeedupVsCompile = nil, nil
		return
	}
	if res.SpeedupVsEager != nil {
		res.Fitness.SpeedupVsEager = *res.SpeedupVsEager
	}
	if s := res.SpeedupVsCompile; s != nil {
		v := *s
		res.Fitness.SpeedupVsCompile = &v
	}
	if res.SolScore != nil {
		res.Fitness.SolScore = *res.SolScore
	}
}

// writeTemp puts inline reference source in a file for the tracer.
func writeTemp(dir, code string) (string, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	f, err := os.CreateTemp(dir, "kevolve-ref-*.py")
	if err != nil {
		return "", err
	}
	if _, err := f.WriteString(code); err != nil {
		f.Close()
		os.Remove(f.Name())
		return "", err
	}
	return f.Name(), f.Close()
}

// sandboxReport is the job's sandbox as its process entered it, with the
// layers Go applies to every job (the environment allowlist, the output
// cap) added.
func sandboxReport(out *worker.Outcome) *sandbox.Report {
	if len(out.Sandbox) == 0 {
		return nil
	}
	var r sandbox.Report
	if err := json.Unmarshal(out.Sandbox, &r); err != nil {
		return nil
	}
	r.Active = append(r.Active, "env", "output_cap")
	r.Detail = nil // what each layer does is doctor's to say; a result says what was missing
	if out.LogDropped > 0 {
		r.Detail = map[string]string{"output_cap": fmt.Sprintf("%d bytes of output dropped", out.LogDropped)}
	}
	return &r
}

// loadGrant says how much longer than its deadline a timed-out job ran
// because it had waited for a CPU (worker/load.go).
func loadGrant(d time.Duration) string {
	if d <= 0 {
		return ""
	}
	return fmt.Sprintf(" (plus %.1fs granted for the time it waited for a CPU on a loaded host)", d.Seconds())
}
