package harness

import (
	"context"
	"database/sql"
	"log/slog"
	"time"

	"github.com/kevolve/kevolve-mcp/harness/lease"
	"github.com/kevolve/kevolve-mcp/harness/problem"
	"github.com/kevolve/kevolve-mcp/harness/sandbox"
	"github.com/kevolve/kevolve-mcp/harness/target"
	"github.com/kevolve/kevolve-mcp/harness/worker"
)

// Verdicts of an evaluation (defined in harness/problem, shared with the search).
const (
	VerdictPass               = problem.VerdictPass
	VerdictIncorrect          = problem.VerdictIncorrect
	VerdictCompileError       = problem.VerdictCompileError
	VerdictRuntimeError       = problem.VerdictRuntimeError
	VerdictTimeout            = problem.VerdictTimeout
	VerdictCrash              = problem.VerdictCrash
	VerdictIntegrityViolation = problem.VerdictIntegrityViolation
	VerdictReferenceError     = problem.VerdictReferenceError
	VerdictShapeSpecialized   = problem.VerdictShapeSpecialized
)

// evalVersion changes whenever the meaning of a result changes; the
// embedded Python's content hash is appended, so editing it invalidates
// cached evaluations too.
const evalVersion = "eval-2"

// HarnessVersion names this evaluator's code for caches and results.
func HarnessVersion() string { return evalVersion + "+" + worker.SourceHash() }

// The problem vocabulary, re-exported so callers of the evaluator need one
// import.
type (
	Source     = problem.Source
	Candidate  = problem.Candidate
	Tolerance  = problem.Tolerance
	Problem    = problem.Problem
	InputError = problem.InputError
	Lease      = lease.Lease
)

// Tolerance rules (EvalRequest.ToleranceRule). The harness's own is
// dtype-aware with a relative norm beside allclose; KernelBench today
// uses 1e-4 for fp32 and 1e-2 for fp16/bf16, and its v0 and v0.1 (under
// which CUDA-L1 and the public leaderboard reported) 1e-2 for fp32 too.
const (
	ToleranceDefault       = "default"
	ToleranceKernelBenchV0 = "kernelbench-v0"
)

// EvalRequest is one candidate against one reference, as flat fields (the
// form tests and older callers use); Evaluate is the service's call.
type EvalRequest struct {
	Reference  Source        `json:"reference"`
	Candidate  Source        `json:"candidate"`
	Target     string        `json:"target,omitempty"` // cpu | nvidia | amd | auto (default)
	Device     string        `json:"device,omitempty"` // index or UUID; default any free device of the target
	Trials     int           `json:"trials,omitempty"` // default 5
	Seed       int64         `json:"seed,omitempty"`   // default 42
	Timeout    time.Duration `json:"timeout,omitempty"`
	SkipTiming bool          `json:"skip_timing,omitempty"`
	Tolerance  *Tolerance    `json:"tolerance,omitempty"`
	// SOLSeconds, when set, is the speed-of-light time the child checks the
	// candidate against itself (tests); the evaluator bounds every timed
	// evaluation anyway.
	SOLSeconds float64 `json:"sol_seconds,omitempty"`
	Shapes     string  `json:"shapes,omitempty"` // shape-set name, passed to get_inputs as env KEVOLVE_SHAPES
	// Work is declared work (0 = trace the reference).
	Work problem.Work `json:"work,omitempty"`
	// CompileReference times torch.compile of the reference too (default:
	// on NVIDIA, once per reference; the result is cached). false skips it.
	CompileReference *bool `json:"compile_reference,omitempty"`
	// CountWork asks the child to count the reference forward's FLOPs and
	// bytes on the real inputs (EvalResult.Work), for SOL.
	CountWork bool `json:"count_work,omitempty"`
	// KernelPolicy is how much of the reference's work may go through
	// torch or a library: KernelPolicyDefault ("" too), KernelPolicyStrict
	// or KernelPolicyKernelBench.
	KernelPolicy string `json:"kernel_policy,omitempty"`
	// ToleranceRule asks the worker to judge the outputs under a named rule
	// beside the harness's own: "" or "default" (ours only), or
	// "kernelbench-v0" (KernelBench v0/v0.1: atol = rtol = 1e-2 for every
	// dtype), whose verdict comes back in EvalResult.VerdictKernelBenchV0.
	// (EvalRequest.Tolerance already names the problem's tolerance.)
	ToleranceRule string `json:"tolerance_rule,omitempty"`
	// Retime measures again instead of answering from the evaluation
	// cache (and times torch.compile of the reference again); the fresh
	// result replaces the cached one.
	Retime bool `json:"retime,omitempty"`
}

// Kernel policies (the reference_ops and no_own_kernel checks); what each
// passes and fails is the one table in evaluate/guards/refops.py's docstring.
const (
	// KernelPolicyDefault (run_kernel, evolve, eval): a candidate whose own
	// kernels run may call some of the reference's heavy ops through torch
	// or a library (a cuBLAS GEMM with a fused epilogue of its own), with a
	// note; one that dispatches all of the reference's compute ops, or has
	// no kernel of its own and calls its heavy ops, is the reference. A
	// faster plain-torch rewrite with other ops passes, noted no_own_kernel.
	KernelPolicyDefault = "default"
	// KernelPolicyStrict: every heavy op in the candidate's own kernels.
	KernelPolicyStrict = "strict"
	// KernelPolicyKernelBench (kernelbench run's default): KernelBench's
	// rule, the work in kernels of the candidate's own with library calls
	// beside them allowed; no kernel of its own is integrity_violation
	// (no_own_kernel), a load_inline that failed and fell back included.
	KernelPolicyKernelBench = "kernelbench"
)

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
// (evaluate/workcount.py) when EvalRequest.CountWork is set.
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

// Options are how to evaluate, apart from what (Problem, Candidate) and
// where (Lease).
type Options struct {
	// Target and Device choose the lease when Evaluate is given none:
	// target cpu, nvidia, amd or auto ("" = auto); device an index or UUID
	// ("" = any free device of the target).
	Target string
	Device string

	Trials     int           // correctness trials; default 5
	Seed       int64         // default 42
	Timeout    time.Duration // the whole evaluation; default EvalConfig.DefaultTimeout
	SkipTiming bool
	// CompileReference: nil = time torch.compile of the reference on GPUs
	// (once per reference, cached); false = never.
	CompileReference *bool
	// SOLSeconds makes the child check the candidate against this bound too
	// (see EvalRequest.SOLSeconds).
	SOLSeconds float64
	// KernelPolicy: see EvalRequest.
	KernelPolicy string
	// Retime measures again rather than answering from the cache (see
	// EvalRequest.Retime).
	Retime bool
	// ToleranceRule: see EvalRequest.ToleranceRule.
	ToleranceRule string
	// Progress receives stage events; may be nil.
	Progress func(stage string, done, total int)
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
	// QuietIters: on a CPU shared with other programs, the calls in which
	// no thread of the timing process waited for a CPU; the figures above
	// are theirs once there are enough, and MedianAllS is every call's
	// median (both 0: every call counted). evaluate.timing.Undisturbed.
	QuietIters int     `json:"quiet_iters,omitempty"`
	MedianAllS float64 `json:"median_all_s,omitempty"`
	// Host is the host's load over the timed loop (absent from the
	// judge's timing of the reference).
	Host *HostLoad `json:"host,omitempty"`
}

// HostLoad is the host's load over one timed loop, as the timing process
// saw it. WaitShare is the share of the time its threads were runnable
// that they spent waiting for a CPU: other programs on the CPUs. The
// 1-minute load average (which lags, and counts the timing process too)
// and the CPUs the process may use are context.
type HostLoad struct {
	WaitShare float64 `json:"wait_share"`
	LoadAvg1m float64 `json:"loadavg_1m"`
	CPUs      int     `json:"cpus"`
}

// Noise says whether a result's speedups can be trusted (noise.go).
type Noise struct {
	Noisy bool   `json:"noisy"`
	Why   string `json:"why,omitempty"`
	// The robust CVs of the timings the speedups divide (0 = not timed),
	// and the wait share of the candidate's timed loop (Stats.Host).
	CandidateCV float64 `json:"candidate_cv"`
	EagerCV     float64 `json:"eager_cv,omitempty"`
	CompileCV   float64 `json:"compile_cv,omitempty"`
	WaitShare   float64 `json:"wait_share"`
}

// SOL is the speed-of-light bound of the problem on the device the
// evaluation ran on, and where the candidate stands against it.
type SOL struct {
	TSolS      float64 `json:"t_sol_s"`
	TComputeS  float64 `json:"t_compute_s"`
	TMemoryS   float64 `json:"t_memory_s"`
	Bound      string  `json:"bound"` // compute | memory
	FLOPs      float64 `json:"flops"`
	Bytes      float64 `json:"bytes"`
	Dtype      string  `json:"dtype"`
	WorkSource string  `json:"work_source"` // declared | traced | declared+traced
	// Ceilings are the rates bounded against: measured on this device's UUID
	// where calibrated, else the datasheet ("measured", "spec:h100-sxm", ...).
	Ceilings     string  `json:"ceilings"`
	PeakFLOPS    float64 `json:"peak_flops"`
	MemBandwidth float64 `json:"mem_bandwidth_bytes_per_s"`
	DeviceUUID   string  `json:"device_uuid,omitempty"`
	// PctOfSol is t_sol / candidate time × 100; SolScore SOL-ExecBench's
	// score (0.5 at the eager reference, 1 at SOL, 0 when incorrect).
	PctOfSol *float64 `json:"pct_of_sol,omitempty"`
	SolScore *float64 `json:"sol_score,omitempty"`
	// CheckTSolS is the bound the faster_than_sol check uses: the same work
	// under the most generous ceilings an honest kernel could reach (see
	// sol.go).
	CheckTSolS float64  `json:"check_t_sol_s,omitempty"`
	Notes      []string `json:"notes,omitempty"`
	// OwnWork is the candidate's own work, measured once it beat the
	// traced bound (NVIDIA: Nsight Compute; see sol_shortcut.go).
	OwnWork *OwnWork `json:"own_work,omitempty"`
}

// Fitness is what a search maximizes: speedup over eager and over
// torch.compile, 0 for anything not passing; the SOL score beside it.
// SpeedupVsCompile is absent when torch.compile was not timed (the CPU,
// compile_reference false): a figure never measured is not a 0.
type Fitness struct {
	SpeedupVsEager   float64  `json:"speedup_vs_eager"`
	SpeedupVsCompile *float64 `json:"speedup_vs_compile,omitempty"`
	SolScore         float64  `json:"sol_score"`
}

// EvalResult is everything an agent needs to fix or accept a kernel.
type EvalResult struct {
	Verdict string `json:"verdict"`
	Correct bool   `json:"correct"`
	Stage   string `json:"stage,omitempty"` // the stage that failed
	Target  string `json:"target"`
	// VerdictKernelBenchV0 is the verdict under KernelBench v0's tolerance
	// (ToleranceRule kernelbench-v0), where the worker gave one.
	VerdictKernelBenchV0 string `json:"verdict_kernelbench_v0,omitempty"`
	// Shapes is the shape set the evaluation ran ("" = the problem's default):
	// a SOL analysis of the same run must count the same shapes.
	Shapes string `json:"shapes,omitempty"`
	Device string `json:"device"`
	// DeviceIndex and DeviceUUID say which device of the host ran it.
	DeviceIndex      int      `json:"device_index"`
	DeviceUUID       string   `json:"device_uuid,omitempty"`
	Checks           []Check  `json:"checks"`
	Candidate        *Stats   `json:"candidate,omitempty"`
	RefEager         *Stats   `json:"ref_eager,omitempty"`
	RefCompile       *Stats   `json:"ref_compile,omitempty"`
	SpeedupVsEager   *float64 `json:"speedup_vs_eager,omitempty"`
	SpeedupVsCompile *float64 `json:"speedup_vs_compile,omitempty"`
	// Noise says whether those speedups can be trusted, with its figures
	// (nil where there are none).
	Noise *Noise `json:"noise,omitempty"`
	// TSolS, SolScore and PctOfSol repeat SOL's figures at the top, where
	// every timed result has them.
	TSolS    *float64 `json:"t_sol_s,omitempty"`
	SolScore *float64 `json:"sol_score,omitempty"`
	PctOfSol *float64 `json:"pct_of_sol,omitempty"`
	SOL      *SOL     `json:"sol,omitempty"`
	Fitness  Fitness  `json:"fitness"`
	// Warnings is always in the answer ([] where there are none): an agent
	// that never saw the field could not tell "no warnings" from "not
	// checked" (issue 36).
	Warnings []string `json:"warnings"`
	// Notes are what a pass should still say: library calls beside the
	// candidate's own kernels, an output in another layout, a result above
	// 100% of the traced bound, an algorithmic shortcut.
	Notes []string `json:"notes,omitempty"`
	Log   string   `json:"log,omitempty"`
	// StageS is the child's seconds per stage (load_candidate, correctness, timing...);
	// load_candidate_cpu is the CPU seconds of the compilers the candidate's
	// import ran, prepare_build the harness's build step before it.
	StageS map[string]float64 `json:"stage_s,omitempty"`
	// BaselinesReused lists the reference timings (torch.compile) taken
	// from an earlier evaluation rather than measured in this one: when,
	// where, and the seconds saved. The eager reference is always this
	// evaluation's own.
	BaselinesReused []BaselineReuse `json:"baselines_reused,omitempty"`
	// Partial is what an evaluation that never reported a result (timeout,
	// host memory limit, crash) had done: the stage it was in, how far
	// each stage got and the timing figures so far (partial.go); its
	// stage_s then holds the seconds of the stages it reached.
	Partial *Partial `json:"partial,omitempty"`
	// Memory is peak device memory per side and stage; Work the reference
	// forward's FLOPs and bytes as the child counted them (count_work).
	Memory *MemoryUse  `json:"memory,omitempty"`
	Work   *TracedWork `json:"work,omitempty"`
	WallS  float64     `json:"wall_s"`
	Cached bool        `json:"cached"`
	// MeasuredAt is when this result's evaluation ran (UTC, RFC 3339): a
	// cached answer keeps the time it was measured.
	MeasuredAt     string `json:"measured_at,omitempty"`
	HarnessVersion string `json:"harness_version"`
	// Process says which process ran the evaluation (nil: a fresh one that
	// was not asked to stay).
	Process *ProcessUse `json:"process,omitempty"`
	// Sandbox says which sandbox layers the candidate ran under and which
	// this host lacked (nil: the process died before it entered one).
	Sandbox *sandbox.Report `json:"sandbox,omitempty"`
	// Judge is what the evaluation's judge process found (judge.go).
	Judge *JudgeReport `json:"judge,omitempty"`
}

// ProcessUse is how an evaluation's process was used: a child kept from
// earlier evaluations on the same device saves making a CUDA context.
type ProcessUse struct {
	// Job is 1 for a fresh child, N for a child's Nth evaluation.
	Job int `json:"job"`
	// Kept says the child stays for a later evaluation; Why, when not,
	// names what the evaluation changed (a verdict, a patched function...).
	Kept bool   `json:"kept"`
	Why  string `json:"why,omitempty"`
}

// ReusePolicy says when an evaluation may run in a child that served
// earlier evaluations on the same device.
type ReusePolicy int

const (
	// ReuseGPU (the default): on GPU targets, where a fresh child costs a
	// CUDA context that the driver makes one process at a time host-wide.
	ReuseGPU ReusePolicy = iota
	// ReuseNever: a fresh process for every evaluation
	// (KEVOLVE_FRESH_PROCESS=1 selects it).
	ReuseNever
	// ReuseAll: every target, the CPU included (a kept CPU child keeps the
	// address-space limit set when it started).
	ReuseAll
)

// Result is the service's name for an evaluation's result.
type Result = EvalResult

// EvalConfig configures an Evaluator.
type EvalConfig struct {
	Python   string  // interpreter with torch; default toolchain.Python()
	CacheDir string  // default KEVOLVE_CACHE_DIR or ~/.cache/kevolve
	DB       *sql.DB // optional: caches evaluations; holds measured ceilings
	Logger   *slog.Logger
	// DefaultTimeout applies when a request has none; default 180 s.
	DefaultTimeout time.Duration
	// CPUMemLimit bounds a CPU job's extra address space; default 16 GiB.
	// GPU jobs get none: CUDA reserves terabytes of virtual address space.
	CPUMemLimit int64
	// HostMemLimit bounds the anonymous resident memory of one evaluation
	// process and its children, on every target: over it the process is
	// killed and the evaluation is a runtime_error (out_of_memory). Default:
	// half the host's memory, at most 32 GiB; negative: none.
	HostMemLimit int64
	// Devices replaces discovery for the targets it names (tests pool fake
	// CPU devices; a fleet worker may pass a subset of its GPUs).
	Devices map[target.Name][]lease.Device
	// MaxPerDevice bounds the evaluations placed on one device at once
	// (their CPU-side stages overlap, device phases queue); default
	// lease.HoldersPerGPU on a GPU, lease.DefaultMaxHolders on the CPU.
	MaxPerDevice int
	// DiscoverGPUs lists the host's GPUs; default device.GPUs.
	DiscoverGPUs func(ctx context.Context) []lease.Device
	// Reuse says when a child that ran a clean evaluation runs the next on
	// its device (the child's Python decides what clean is: evaluate/guards/taint.py).
	Reuse ReusePolicy
	// BaselineMaxAge is how long a stored reference baseline serves
	// before it is measured again; default DefaultBaselineMaxAge.
	BaselineMaxAge time.Duration
}

// Measured is what a timed evaluation measured, for a SOL analysis of the
// same run: the shape set timed (a CPU run defaults to the small one, so the
// bound must count that), the medians and correctness.
type Measured struct {
	Shapes     string
	CandidateS float64
	ReferenceS float64
	Correct    bool
}

// Measured returns the run's measurements; ok is false when the candidate
// or the eager reference was not timed.
func (r *EvalResult) Measured() (m Measured, ok bool) {
	if r.Candidate == nil || r.RefEager == nil {
		return Measured{}, false
	}
	return Measured{Shapes: r.Shapes, CandidateS: r.Candidate.MedianS, ReferenceS: r.RefEager.MedianS, Correct: r.Correct}, true
}
