package harness

// An evaluation job's outcome as a result: a verdict of the harness's own
// where the child did not report one (memory limit, deadline, a forged
// result, a crash), else what evaluate/main.py returned, with the judge's
// report applied.

import (
	"context"
	"encoding/json"
	"fmt"
	"syscall"
	"time"

	"github.com/kevolve/kevolve-mcp/harness/target"
	"github.com/kevolve/kevolve-mcp/harness/worker"
)

// pyResult is what evaluate/main.py returns.
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
	StageS       map[string]float64 `json:"stage_s"`
	Memory       *MemoryUse         `json:"memory"`
	Work         *TracedWork        `json:"work"`
	Process      *ProcessUse        `json:"process"`
	Notes        []string           `json:"notes"`
}

// convert turns the job's outcome into a result, and returns the work the
// child counted (nil if it counted none) for the speed of light. A Go
// error is the harness's failure, not the candidate's.
func (e *Evaluator) convert(ctx context.Context, r *evalRun, out *worker.Outcome) (*EvalResult, *TracedWork, error) {
	res := &EvalResult{Target: string(r.tgt), Shapes: r.req.Shapes, Device: r.dev.Name, DeviceIndex: r.dev.Index, DeviceUUID: r.dev.UUID,
		HarnessVersion: HarnessVersion(), Log: out.Log, Checks: []Check{}, Sandbox: sandboxReport(out),
		MeasuredAt: r.t0.UTC().Format(time.RFC3339Nano)}
	if err := buildLoadTimeout(r, out); err != nil {
		return nil, nil, err
	}
	if e.unreported(r, res, out) {
		addPartial(r, res, out)
		processLimit(res, out)
		return res, nil, nil
	}
	u := unseal(out.Result, out.Judge)
	if u.Forged != "" {
		res.Verdict, res.Stage = VerdictIntegrityViolation, "verify"
		res.Checks = append(res.Checks, Check{Name: "result_forged", Passed: false, Detail: u.Forged})
		return res, nil, nil
	}
	pr, err := decodePyResult(u.Raw)
	if err != nil {
		return nil, nil, err
	}
	if u.Process != nil {
		pr.Process = u.Process
	}
	if u.VerifyS != nil {
		if pr.StageS == nil {
			pr.StageS = map[string]float64{}
		}
		pr.StageS["verify"] = *u.VerifyS
	}
	if pr.Verdict == "" {
		// A MemoryError escaped evaluate/main.py's own handling (a memory limit
		// was reached): a crash, not the harness's failure.
		res.Verdict, res.Stage = VerdictCrash, out.Stage
		res.Checks = append(res.Checks, Check{Name: "memory", Passed: false, Detail: pr.Error})
		return res, nil, nil
	}
	e.fromPython(ctx, r, res, pr)
	addDevicePhase(res, out)
	addBuildGrant(res, out)
	applyJudge(res, out.Judge, judgeOff())
	processLimit(res, out)
	return res, pr.Work, nil
}

// processLimit fails a job whose cgroup refused a fork or a thread at its
// pids.max: an honest job never comes near it (sandbox/cgroup.py's pids_max), so
// one that did started processes or threads without bound. A pass
// becomes a runtime_error; any other verdict stands, with the check.
func processLimit(res *EvalResult, out *worker.Outcome) {
	cg := out.Cgroup
	if cg == nil || cg.ForksRefused == 0 {
		return
	}
	res.Checks = append(res.Checks, Check{Name: "process_limit", Passed: false,
		Detail: fmt.Sprintf("the job's processes and threads reached its cgroup's pids.max (%d): %d fork(s) or thread start(s) refused; what it started is killed with the job", cg.PidsMax, cg.ForksRefused)})
	if res.Verdict == VerdictPass {
		res.Verdict = VerdictRuntimeError
	}
}

// outOfMemory is the verdict of a job killed for its memory: which
// program ran (the board says) in which stage, and why.
func outOfMemory(res *EvalResult, out *worker.Outcome, why string) {
	res.Verdict = VerdictRuntimeError
	res.Stage = out.Stage
	who := runningSide(out.Board)
	if who == "" {
		who = "evaluation process"
	}
	res.Checks = append(res.Checks, Check{Name: "out_of_memory", Passed: false,
		Detail: fmt.Sprintf("the %s ran out of memory in stage %s: %s", who, out.Stage, why)})
}

// unreported gives the verdict of a child that reported no result: killed
// by the host memory limit or the deadline, ended after something else
// wrote its result file, or dead. False if the child reported one.
func (e *Evaluator) unreported(r *evalRun, res *EvalResult, out *worker.Outcome) bool {
	switch {
	case out.RSSExceeded > 0:
		// Killed by the host memory limit: the board says which program ran.
		outOfMemory(res, out, fmt.Sprintf("host memory: the evaluation process reached %s resident, over its limit of %s, and was killed; peak device memory: not recorded (the process was killed)",
			gib(out.RSSExceeded), gib(e.cfg.HostMemLimit)))
		res.Memory = &MemoryUse{ProcessPeakRSS: out.RSSExceeded}
	case out.TimedOut:
		res.Verdict = VerdictTimeout
		res.Stage = out.Stage
		res.Checks = append(res.Checks, Check{Name: "deadline", Passed: false,
			Detail: fmt.Sprintf("killed after %s in stage %q", r.req.Timeout, out.Stage) + loadGrant(out.LoadGrant) + buildGrant(out.Build) +
				whileRunning(out.Board) + stepsDone(out.Steps)})
	case out.Unreported:
		// The harness reports its result before the process ends; a
		// result file with no report is something else's (a candidate
		// that wrote one and ended the process), whatever it says.
		res.Verdict = VerdictIntegrityViolation
		res.Stage = out.Stage
		res.Checks = append(res.Checks, Check{Name: "result_forged", Passed: false,
			Detail: fmt.Sprintf("the evaluation process ended (code %d) in stage %q before the harness reported a result, yet a result file was there: it was not the harness's", out.Code, out.Stage)})
	case out.Emptied:
		res.Verdict = VerdictIntegrityViolation
		res.Stage = out.Stage
		res.Checks = append(res.Checks, Check{Name: "result_forged", Passed: false,
			Detail: fmt.Sprintf("the evaluation process reported its result in stage %q, yet the result file was empty when read: it was truncated after the harness wrote it", out.Stage)})
	case out.Result == nil && out.Cgroup != nil && out.Cgroup.OOMKills > 0:
		// Killed by the kernel at the job's cgroup's memory limit: what its
		// processes hold and what they wrote to its tmpfs /tmp and /dev/shm.
		outOfMemory(res, out, fmt.Sprintf("the job's cgroup reached its memory limit of %s (its processes' memory and what they wrote to its /tmp and /dev/shm, peak %s) and the kernel's OOM killer ended it",
			gib(out.Cgroup.MemLimit), gib(out.Cgroup.MemPeak)))
	case out.Result == nil:
		res.Verdict = VerdictCrash
		res.Stage = out.Stage
		detail := fmt.Sprintf("the evaluation process exited with code %d", out.Code)
		if out.Signal != 0 {
			detail = fmt.Sprintf("the evaluation process died of signal %d (%s)", int(out.Signal), out.Signal)
			if out.Signal == syscall.SIGKILL && r.tgt == target.CPU {
				detail += "; a memory limit or the OOM killer may have ended it"
			}
		}
		res.Checks = append(res.Checks, Check{Name: "process", Passed: false, Detail: detail + " in stage " + out.Stage})
	default:
		return false
	}
	return true
}

// decodePyResult reads evaluate/main.py's result. An error is the harness's
// failure; an empty verdict is left only for a MemoryError, which the
// candidate can cause.
func decodePyResult(b json.RawMessage) (*pyResult, error) {
	var pr pyResult
	if err := json.Unmarshal(b, &pr); err != nil {
		return nil, fmt.Errorf("evaluate: decode worker result: %w", err)
	}
	if pr.HarnessError != "" {
		return nil, fmt.Errorf("evaluate: %s", pr.HarnessError)
	}
	if pr.Verdict == "" && pr.ErrorType != "MemoryError" {
		return nil, fmt.Errorf("evaluate: the harness's Python failed: %s", pr.Error)
	}
	return &pr, nil
}

// fromPython fills the result from evaluate/main.py's: verdicts, checks,
// timings, memory and work. A torch.compile timing measured now is kept
// for the reference's later evaluations; one measured before stands in.
func (e *Evaluator) fromPython(ctx context.Context, r *evalRun, res *EvalResult, pr *pyResult) {
	res.Verdict, res.Stage, res.VerdictKernelBenchV0 = pr.Verdict, pr.Stage, pr.VerdictKBV0
	if pr.Checks != nil {
		res.Checks = pr.Checks
	}
	res.Warnings = pr.Warnings
	if pr.Error != "" {
		res.Warnings = append(res.Warnings, pr.Error)
	}
	res.Candidate, res.RefEager = pr.Candidate, pr.RefEager
	res.StageS = pr.StageS
	e.compileBaseline(ctx, r, res)
	if r.prepS > 0 && res.StageS != nil {
		res.StageS[StagePrepareBuild] = r.prepS
	}
	res.Memory, res.Work = pr.Memory, pr.Work
	res.Process = pr.Process
	res.Notes = pr.Notes
	if r.prepNote != "" {
		res.Notes = append(res.Notes, r.prepNote)
	}
}

// compileBaseline takes the torch.compile timing this evaluation's own
// job measured (keeping it, with the job's seconds, what the next
// evaluation saves), or stands in the one an earlier evaluation measured
// and says so: when and where. A candidate with no timing of its own has
// nothing to compare with: its measurement is stopped, and the next
// evaluation of the reference claims it again.
func (e *Evaluator) compileBaseline(ctx context.Context, r *evalRun, res *EvalResult) {
	known := r.knownCompile
	switch {
	case res.Candidate == nil:
		r.compile.stop()
		return
	case r.compileClaimed:
		if r.compile == nil {
			r.compile = e.startCompile(ctx, r) // the CPU's, after the candidate's timing
		}
		b, warn := r.compile.wait(ctx, r.jobDeadline())
		if b == nil {
			res.Warnings = append(res.Warnings, warn)
			return
		}
		e.compilePut(ctx, r.rkey, b)
		res.RefCompile = b.Stats
		if res.StageS != nil {
			// Beside the build, not on the evaluation's path: what measuring it took.
			res.StageS[stageCompileBaseline] = b.MeasureS
		}
		return
	case known == nil && r.compileWaived:
		known = e.compileMeasured(r.rkey) // measured by the evaluation that claimed it, if done by now
		if known == nil {
			res.Warnings = append(res.Warnings, "no torch.compile timing: another evaluation of this reference was measuring it")
		}
	}
	if known != nil {
		res.RefCompile = known.Stats
		res.BaselinesReused = append(res.BaselinesReused, reuseOf(BaselineTorchCompile, known, time.Now()))
	}
}
