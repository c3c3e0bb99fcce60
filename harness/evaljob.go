package harness

// The job evaluate/main.py's main(args, ctx) runs: its arguments as a typed
// struct, and the worker job (environment, limits, gate, reuse) around it.

import (
	"context"
	"strconv"

	"github.com/kevolve/kevolve-mcp/harness/target"
	"github.com/kevolve/kevolve-mcp/harness/worker"
)

// evalJob is the arguments of evaluate/main.py's main. Its fields are in the
// order of their JSON keys: the map it replaced was encoded with its keys
// sorted, and the child reads the same bytes (evaljob_test.go pins them).
// A key with omitempty was set only in some cases; the others always were.
type evalJob struct {
	BudgetS   float64   `json:"budget_s"` // the job's deadline, for the child's own caps
	Candidate jobSource `json:"candidate"`
	CountWork bool      `json:"count_work"`
	// Judge is only ever false: KEVOLVE_JUDGE=off (judgeOff).
	Judge         *bool      `json:"judge,omitempty"`
	KernelPolicy  string     `json:"kernel_policy,omitempty"`
	Reference     jobSource  `json:"reference"`
	Seed          int64      `json:"seed"`
	SkipTiming    bool       `json:"skip_timing"`
	SOLSeconds    float64    `json:"sol_seconds"`
	Target        string     `json:"target"` // "nvidia" or "cpu": what evaluate/main.py knows
	Tolerance     *Tolerance `json:"tolerance,omitempty"`
	ToleranceRule string     `json:"tolerance_rule,omitempty"` // set only for a rule other than the default
	Trials        int        `json:"trials"`
}

// jobSource ships a program as the code that was read and hashed: the
// child runs these bytes, not the file again. A file's path goes with it:
// its folder stays importable and its __file__ is kept (load_module).
type jobSource struct {
	Code string `json:"code"`
	Path string `json:"path,omitempty"`
}

// newEvalJob is the child's arguments for an evaluation whose request has
// its defaults.
func newEvalJob(r *evalRun) evalJob {
	req := r.req
	j := evalJob{
		Reference:    jobSource{Code: r.refCode, Path: r.refPath},
		Candidate:    jobSource{Code: r.candCode, Path: r.candPath},
		Target:       pyTarget(r.tgt),
		Trials:       req.Trials,
		Seed:         req.Seed,
		SkipTiming:   req.SkipTiming,
		SOLSeconds:   req.SOLSeconds,
		BudgetS:      req.Timeout.Seconds(),
		CountWork:    req.CountWork || (!req.SkipTiming && !declaredFor(req.Work, req.Shapes)),
		Tolerance:    req.Tolerance,
		KernelPolicy: req.KernelPolicy,
	}
	if req.ToleranceRule != ToleranceDefault {
		j.ToleranceRule = req.ToleranceRule
	}
	no := false
	if judgeOff() {
		j.Judge = &no
	}
	return j
}

// pyTarget is the target as evaluate/ knows it, "nvidia" or "cpu": an AMD
// GPU under ROCm torch is driven through the same torch.cuda calls.
func pyTarget(t target.Name) string {
	if t == target.CPU {
		return "cpu"
	}
	return "nvidia"
}

// workerJob is the worker job that runs an evaluation: its child pinned to
// the leased device, its shape set and limits, the device gate, and reuse
// of a warm child where the configuration allows it. It looks up the
// reference's compile stats first: known ones are not measured again.
func (e *Evaluator) workerJob(ctx context.Context, r *evalRun, progress func(string, int, int)) worker.Job {
	r.rkey = e.refKey(ctx, r)
	if !r.req.Retime {
		r.knownCompile = e.compileGet(ctx, r.rkey)
	} else {
		// Measured again: the candidate is. The reference's torch.compile
		// timing this evaluator measured itself serves a search's later
		// evaluations (each compiled and timed it again, 9 s of CPU each
		// on the H100 for llm/softmax); only the database's is not reused.
		r.knownCompile = e.compileMeasured(r.rkey)
	}
	if r.knownCompile == nil && wantsCompile(r) {
		r.compileClaimed = e.claimCompile(r.rkey)
		r.compileWaived = !r.compileClaimed
	}
	r.env = r.lease.Env() // pins the child to its device before its first GPU call
	if r.tgt != target.CPU {
		// How many jobs may keep device memory beside this one: the
		// child empties its cache on hand-back unless all of them could
		// keep as much (evaluate/main.py _holders).
		r.env["KEVOLVE_DEVICE_HOLDERS"] = strconv.Itoa(r.lease.MaxHolders())
	}
	if r.req.Shapes != "" {
		r.env["KEVOLVE_SHAPES"] = r.req.Shapes
	}
	var mem int64
	if r.tgt == target.CPU {
		// Triton kernels run in its interpreter on the CPU.
		r.env["TRITON_INTERPRET"] = "1"
		mem = e.cfg.CPUMemLimit
	}
	return worker.Job{
		Module: "evaluate.main", Func: "main", Args: newEvalJob(r), Env: r.env, Timeout: r.req.Timeout, MemLimit: mem,
		RSSLimit: max(e.cfg.HostMemLimit, 0),
		Progress: progress,
		Gate:     r.lease.Exclusive, // loading and compiling overlap; the device phase runs alone on its device
		Reuse:    e.cfg.Reuse == ReuseAll || (e.cfg.Reuse == ReuseGPU && r.tgt != target.CPU),
		KeepIf:   keepAfterJudge,
		// As many children may wait for the next wave on this device as
		// the pool places jobs on it: a search's slots that end together
		// (its first wave, a wave after a pause, the other searches'
		// slots on the device) find their children again instead of
		// making a CUDA context each, and their judges one each, which
		// the driver makes one process at a time across the host's GPUs.
		// They never outnumber the jobs the device holds at once now (its
		// limit falls while its memory is crowded). The limit stays out of
		// the environment above: that is the children's reuse key.
		IdleMax: r.lease.Limit(),

		// The candidate's builds: their time lost to the host is granted (buildload.go).
		BuildStages: evalBuildStages,
	}
}

// wantsCompile says whether the evaluation's result carries torch.compile
// of the reference, timed: asked for, or by default on a GPU where the
// candidate is timed (on the CPU inductor's C++ build takes a minute, too
// slow to pay unasked).
func wantsCompile(r *evalRun) bool {
	if r.req.SkipTiming {
		return false
	}
	if c := r.req.CompileReference; c != nil {
		return *c
	}
	return r.tgt != target.CPU
}
