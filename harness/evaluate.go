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
	compileStats map[string]*baseline
	compileOwn   map[string]bool // measured by this evaluator, not read from the database
	compileBusy  map[string]bool // being measured by an evaluation in flight

	workMu sync.Mutex
	work   map[string]*workCall

	// phases are the fresh evaluations' device and timed seconds, in the
	// order they finished (Throughput).
	phaseMu sync.Mutex
	phases  []map[string]float64
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
	if cfg.BaselineMaxAge <= 0 {
		cfg.BaselineMaxAge = DefaultBaselineMaxAge
	}
	if cfg.DiscoverGPUs == nil {
		cfg.DiscoverGPUs = discoverGPUs
	}
	// Compiled kernels (kevolve loaders, load_inline builds) live beside the
	// worker's files, under the same cache root.
	w, err := worker.New(worker.Config{Python: cfg.Python, CacheDir: cfg.CacheDir, Logger: cfg.Logger,
		Env: map[string]string{"KEVOLVE_CACHE_DIR": kernelCache(cfg.CacheDir)}})
	if err != nil {
		return nil, fmt.Errorf("evaluator: %w", err)
	}
	if cfg.DB != nil {
		if err := migrateEvalCache(cfg.DB); err != nil {
			return nil, err
		}
	}
	return &Evaluator{cfg: cfg, w: w, log: cfg.Logger, pools: map[target.Name]*lease.Pool{},
		compileStats: map[string]*baseline{}, compileOwn: map[string]bool{}, compileBusy: map[string]bool{}, work: map[string]*workCall{}}, nil
}

// kernelCache is the compiled kernels' folder under the cache root.
func kernelCache(root string) string { return filepath.Join(root, "kernels") }

// PyDir is the folder holding the worker's Python, the kevolve package
// included; other harness jobs (profiling) put it on sys.path.
func (e *Evaluator) PyDir() string { return e.w.PyDir() }

// WorkerInfo is the warm parent's start report (versions, import seconds,
// what was preloaded), starting it if needed.
func (e *Evaluator) WorkerInfo(ctx context.Context) (map[string]any, error) { return e.w.Info(ctx) }

// Close stops the worker and every evaluation in flight.
func (e *Evaluator) Close() error { return e.w.Close() }

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
	return *withWarnings(r), nil
}

// EvaluateRequest is Evaluate for a flat request.
func (e *Evaluator) EvaluateRequest(ctx context.Context, req EvalRequest, progress func(stage string, done, total int)) (*EvalResult, error) {
	r, err := e.evaluate(ctx, req, "", nil, progress)
	if err != nil {
		return nil, err
	}
	return withWarnings(r), nil
}

// withWarnings gives a result an empty warning list where it has none, so
// the field is in every answer (every path that makes a result, cached,
// timed out or judged, ends here).
func withWarnings(r *EvalResult) *EvalResult {
	if r != nil && r.Warnings == nil {
		r.Warnings = []string{}
	}
	return r
}

// CheckKernelPolicy rejects a kernel policy the harness does not know.
func CheckKernelPolicy(p string) error {
	switch p {
	case "", KernelPolicyDefault, KernelPolicyStrict, KernelPolicyKernelBench:
		return nil
	}
	return problem.Inputf("kernel_policy", "%q: use %s, %s or %s", p, KernelPolicyDefault, KernelPolicyKernelBench, KernelPolicyStrict)
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

// evalRun is one evaluation in flight: the request with its defaults, the
// programs as read and hashed, the lease and the cache keys its stages share.
type evalRun struct {
	req      EvalRequest
	dtype    string // the problem's, for the work's dtype when declared
	t0       time.Time
	refCode  string
	refPath  string
	candCode string
	candPath string
	lease    *Lease
	tgt      target.Name
	dev      lease.Device
	key      string // the evaluation cache's
	rkey     string // the reference's compile stats' (workerJob)
	// knownCompile is the reference's torch.compile timing measured by an
	// earlier evaluation, nil if it is measured now.
	knownCompile *baseline
	// compileClaimed: this evaluation measures the reference's compile
	// timing; compileWaived: another one in flight does, so this one
	// does not (claimCompile).
	compileClaimed, compileWaived bool
	compile                       *compileRun       // the claimed baseline's measurement (startCompile)
	env                           map[string]string // the child's environment (workerJob)
	prepS                         float64           // seconds the harness spent on the shared build caches
	prep                          time.Duration     // the wall of that build step (prepare), outside the deadline
	prepNote                      string            // what the build step made, when it made something
	leaseWait                     time.Duration     // the wait for a free device (resolve), outside the deadline
	// ownLease: resolve acquired the lease (the caller gave none);
	// alone: it is an Alone lease (retryAlone), this run's second.
	ownLease, alone bool
}

// evaluate is Evaluate's pipeline: resolve the request, answer from the
// cache, build and run the worker job, convert its outcome into a result
// (the judge's report applied), bound it by the speed of light, and cache it.
func (e *Evaluator) evaluate(ctx context.Context, req EvalRequest, dtype string, l *Lease, progress func(string, int, int)) (*EvalResult, error) {
	r, release, err := e.resolve(ctx, req, dtype, l)
	if err != nil {
		return nil, err
	}
	defer release()
	if res := e.cached(ctx, r); res != nil {
		return res, nil
	}
	job := e.workerJob(ctx, r, progress)
	defer e.unclaimCompile(r)
	if r.tgt != target.CPU {
		// Beside the build; on the CPU it would share the cores with the
		// candidate's timing, so there it starts after it (compileBaseline).
		r.compile = e.startCompile(ctx, r)
	}
	defer func() { r.compile.stop() }() // a measurement convert did not wait for
	e.prepare(ctx, r)
	out, err := e.runJob(ctx, r, job)
	if err != nil {
		return nil, err
	}
	res, childWork, err := e.convert(ctx, r, out)
	if err != nil {
		return nil, err
	}
	if crowdedOOM(r, res, out) {
		if res, childWork, err = e.retryAlone(ctx, r, job, res); err != nil {
			return nil, err
		}
	}
	res.Correct = res.Verdict == VerdictPass
	setSpeedups(res)
	e.bound(ctx, r, res, childWork)
	setFitness(res)
	setNoise(res)
	res.WallS = time.Since(r.t0).Seconds()
	e.costPut(ctx, r, res)
	e.notePhase(res)
	// Timeouts and crashes can be the machine's fault (load, OOM): not cached.
	if res.Verdict != VerdictTimeout && res.Verdict != VerdictCrash {
		e.cachePut(ctx, r.key, res)
	}
	return res, nil
}

// resolve checks the request and fills its defaults, reads both programs
// (the bytes hashed are the bytes run), and leases a device unless the
// caller holds one; release hands back a lease taken here.
func (e *Evaluator) resolve(ctx context.Context, req EvalRequest, dtype string, l *Lease) (r *evalRun, release func(), err error) {
	r = &evalRun{req: req, dtype: dtype, t0: time.Now()}
	if err := validate(&r.req); err != nil {
		return nil, nil, err
	}
	if r.req.Timeout == 0 {
		r.req.Timeout = e.cfg.DefaultTimeout
	}
	if r.refCode, r.refPath, err = problem.Read(r.req.Reference, "reference"); err != nil {
		return nil, nil, err
	}
	if r.candCode, r.candPath, err = problem.Read(r.req.Candidate, "candidate"); err != nil {
		return nil, nil, err
	}
	release = func() {}
	if l == nil {
		if l, r.leaseWait, err = e.acquire(ctx, r.req.Target, r.req.Device, false); err != nil {
			return nil, nil, err
		}
		// r.lease, not l: retryAlone may have replaced it.
		r.ownLease, release = true, func() { r.lease.Release() }
	}
	r.lease, r.tgt, r.dev = l, l.Target(), l.Device()
	if r.req.Shapes == "" && r.tgt == target.CPU {
		// Problems with shape sets default to production sizes that fill a
		// GPU; on a CPU their small set is what runs in seconds. KernelBench
		// files ignore the variable.
		r.req.Shapes = "small"
	}
	r.key = cacheKey(r.refCode, r.candCode, string(r.tgt), r.dev.Name, r.req)
	return r, release, nil
}

// cached is the cached result for the evaluation, nil if there is none or
// the caller asked to measure again.
func (e *Evaluator) cached(ctx context.Context, r *evalRun) *EvalResult {
	res := e.cacheGet(ctx, r.key)
	if res == nil || r.req.Retime {
		return nil
	}
	res.Cached = true
	res.Shapes = r.req.Shapes // part of the key; results cached before the field existed lack it
	res.DeviceIndex, res.DeviceUUID = r.dev.Index, r.dev.UUID
	res.WallS = time.Since(r.t0).Seconds()
	return res
}

// prepare readies the shared build caches (written by the harness, not
// the candidate) for the evaluation's source, once however often its job runs.
func (e *Evaluator) prepare(ctx context.Context, r *evalRun) {
	t0 := time.Now()
	r.prepS, r.prepNote = e.prepareBuilds(ctx, r.candCode, r.dev)
	r.prep = time.Since(t0)
}

// runJob runs the job in what is left of the deadline; a parent that died
// under it gets one retry on a fresh one (rare: children die alone).
func (e *Evaluator) runJob(ctx context.Context, r *evalRun, job worker.Job) (*worker.Outcome, error) {
	if err := e.w.Start(ctx); err != nil {
		return nil, fmt.Errorf("evaluate: start the python worker: %w", err)
	}
	job.Timeout = r.jobDeadline()
	out, err := e.w.Run(ctx, job)
	if errors.Is(err, worker.ErrWorkerDied) {
		e.log.Warn("python worker died during an evaluation; retrying once")
		out, err = e.w.Run(ctx, job)
	}
	if err != nil {
		return nil, fmt.Errorf("evaluate: %w", err)
	}
	return out, nil
}

// jobDeadline is what is left of the request's timeout for its job:
// timeout_s is the answer's deadline, so the time since the call (finding
// the target's devices, the cache, starting the worker's parent: seconds
// each, first time, on a loaded host) counts, except the wait for a free
// device and the harness's shared build step (prep, the same for every
// candidate's first build: not this one's time).
func (r *evalRun) jobDeadline() time.Duration {
	spent := time.Since(r.t0) - r.leaseWait - r.prep
	return max(r.req.Timeout-spent, time.Millisecond)
}

// bound computes the speed of light of a timed result and flags a
// candidate faster than it (applySOL). The work to bound against:
// declared, else counted by the child (count_work), else traced here
// after the evaluation (traceReference).
func (e *Evaluator) bound(ctx context.Context, r *evalRun, res *EvalResult, childWork *TracedWork) {
	if res.Candidate == nil {
		return
	}
	traced := e.traceReference(r)
	if childWork != nil && childWork.FLOPs+childWork.Bytes > 0 {
		traced = countedWork(*childWork)
	}
	w, err := e.workFor(ctx, r.req.Shapes, r.dtype, r.req.Work, traced)
	e.applySOL(ctx, r.tgt, r.dev, res, w, err, e.ownWorkFor(r.tgt, r.req.Reference, r.req.Candidate, r.req.Shapes, r.env, r.lease.Exclusive))
}

// traceReference traces the reference's work in a separate Python on meta
// tensors, cached per reference and shape set. It runs only when the child
// could not count: tracing ahead "in case" started a torch import per
// evaluation, cancelled as soon as the child's count arrived, so it was
// never cached and came back on the next evaluation, competing with the
// child for the host's cores.
func (e *Evaluator) traceReference(r *evalRun) func(context.Context) (sol.Work, error) {
	return func(ctx context.Context) (sol.Work, error) {
		// The code read and hashed, not the file, which may have changed since.
		path, err := writeTemp(e.cfg.CacheDir, r.refCode)
		if err != nil {
			return sol.Work{}, err
		}
		defer os.Remove(path)
		return e.tracedWork(ctx, workKey(r.refCode, r.req.Shapes), func(ctx context.Context) (sol.Work, error) {
			return sol.Trace(ctx, path, sol.TraceOptions{Python: e.cfg.Python, Shapes: r.req.Shapes, Timeout: 120 * time.Second})
		})
	}
}

// countedWork is the work the child counted on the real inputs, as the
// tracer would have reported it.
func countedWork(cw TracedWork) func(context.Context) (sol.Work, error) {
	return func(context.Context) (sol.Work, error) {
		w := sol.Work{FLOPs: cw.FLOPs, Bytes: cw.Bytes, Dtype: cw.Dtype, Source: "traced"}
		for _, o := range cw.Ops {
			if o.FLOPs > 0 {
				w.Detail = append(w.Detail, sol.OpCount{Op: o.Op, Calls: o.Calls, FLOPs: o.FLOPs, Method: o.Method + " (counted by the evaluation)"})
			}
		}
		return w, nil
	}
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
	return fmt.Sprintf(" (plus %.1fs granted for the time it waited for a CPU on a loaded host, at most a tenth of the timeout)", d.Seconds())
}
