package harness

import (
	"encoding/json"
	"fmt"
	"os"

	"github.com/kevolve/kevolve-mcp/harness/worker"
)

// The judge (worker/py/evaluate/judge/judge.py) is a process of each evaluation
// that the candidate cannot reach: forked before any candidate code runs,
// non-dumpable, with its own secret seed and its own copy of the
// reference. It re-checks a passing candidate on inputs only it knows,
// with its own comparison, and measures from outside the times the
// in-process timer reported. It writes judge.json in a folder only it
// writes, and what it says decides: the in-process result can make a
// verdict worse, never better.

// JudgeReport is the judge's report (judge.json), or what the harness
// concluded without one (status missing, off).
type JudgeReport struct {
	// Status: verified (the candidate matched the judge's trials; bounds
	// apply), incorrect, failed (ModelNew raised on the judge's inputs, or
	// its process broke the protocol), unverifiable (the judge itself found
	// the problem's inputs cannot cross processes: the in-process verdict
	// stands), skipped (the in-process verdict was not a pass), error,
	// unavailable, missing (no report), off (KEVOLVE_JUDGE=off).
	Status  string        `json:"status"`
	Check   string        `json:"check,omitempty"`
	Detail  string        `json:"detail,omitempty"`
	Trials  int           `json:"trials,omitempty"`
	RefTime *JudgeTime    `json:"reference_s,omitempty"`
	Outside *JudgeOutside `json:"outside,omitempty"`
	// Verified is the candidate's time over the calls whose outputs the
	// judge checked (nothing skipped or replayed there).
	Verified *JudgeVerified `json:"verified,omitempty"`
	Bounds   *JudgeBounds   `json:"bounds,omitempty"`
	Notes    []string       `json:"notes,omitempty"`
	// Unbounded says why the judge, of its own finding, bounded no timing
	// (jagged inputs); the result's timings then stand with a warning.
	Unbounded string `json:"unbounded,omitempty"`
	// PhaseS is the judge's own time per phase of its verification.
	PhaseS map[string]float64 `json:"phase_s,omitempty"`
	// OutputBytes is what the reference's outputs take, as the judge made
	// them: writing them is the least any candidate does (applySOL).
	OutputBytes float64 `json:"output_bytes,omitempty"`
	// ShapesTried are the input shapes the judge's trials ran at: the shown
	// one, then those the candidate was not shown (evaluate.compare.unseen), each
	// with whether the candidate matched there; ShapesNotTried says which
	// were left out and why (the reference failed there, or varying a
	// size was unsafe).
	ShapesTried    []JudgeShape `json:"shapes_tried,omitempty"`
	ShapesNotTried []string     `json:"shapes_not_tried,omitempty"`
	// ResultSHA256 is the hash of the result the evaluation process sealed
	// before the verify stage (seal.go).
	ResultSHA256 string `json:"result_sha256,omitempty"`
}

// JudgeShape is one shape set the judge's trials ran at.
type JudgeShape struct {
	Label  string  `json:"label"`
	Shapes [][]int `json:"shapes"`
	Passed bool    `json:"passed"`
}

// JudgeTime is the judge's own timing of the reference (its process, its
// timer, inputs the candidate never saw): the reference's time of the
// result. A kept child's judge keeps it across jobs (Reused, with the age
// of the last measurement) and reports the smallest median of its last
// Measurements.
type JudgeTime struct {
	MedianS      float64 `json:"median_s"`
	P10S         float64 `json:"p10_s,omitempty"`
	P90S         float64 `json:"p90_s"`
	Iters        int     `json:"iters"`
	CV           float64 `json:"cv"`
	CVRaw        float64 `json:"cv_raw,omitempty"`
	QuietIters   int     `json:"quiet_iters,omitempty"`
	MedianAllS   float64 `json:"median_all_s,omitempty"`
	Measurements int     `json:"measurements,omitempty"`
	Reused       bool    `json:"reused,omitempty"`
	AgeS         float64 `json:"age_s,omitempty"`
	// Frozen: processes of the candidate's tree stopped while the judge
	// measured (0 when the timing was kept from an earlier job).
	Frozen int `json:"frozen,omitempty"`
}

// stats is the judge's timing as the result's reference timing.
func (t *JudgeTime) stats() *Stats {
	return &Stats{MedianS: t.MedianS, P10S: t.P10S, P90S: t.P90S, CV: t.CV, CVRaw: t.CVRaw, Iters: t.Iters,
		QuietIters: t.QuietIters, MedianAllS: t.MedianAllS}
}

// JudgeOutside is the candidate's time as the judge's clock saw it: k
// calls in the candidate's process, less the empty round trips, per call
// (PerCallS). BasisS is what bounds the in-process median: the whole
// per-call time on the CPU; on a GPU the device time left once the host
// had launched the calls (LaunchPerCallS, during which the candidate's
// process used LaunchCPUShare of a CPU), or the whole time when that
// process sat idle instead of launching.
type JudgeOutside struct {
	PerCallS       float64 `json:"per_call_s"`
	BasisS         float64 `json:"basis_s"`
	LaunchPerCallS float64 `json:"launch_per_call_s"`
	LaunchCPUShare float64 `json:"launch_cpu_share"`
	Calls          int     `json:"calls"`
	// Paced: the calls were made one request each (the judge's second
	// opinion after every batch disagreed with the in-process median).
	Paced      bool    `json:"paced,omitempty"`
	RoundTripS float64 `json:"round_trip_s"`
	// HostExternalShare (CPU): per outside timing, the share of the host's
	// CPUs that programs other than the evaluation's and the judge's kept
	// busy meanwhile; the bound loosens only where every one was loaded.
	HostExternalShare []float64 `json:"host_external_share,omitempty"`
}

// JudgeVerified is the candidate's time over the judge's checked calls
// (evaluate/judge/batch.py): Calls calls, one request each, each on a
// fresh input set of the judge's seed written just before it with the
// candidate's processes stopped, each output read when the answer came and
// compared with the reference; the least of them (PerCallS and BasisS as
// in JudgeOutside). Nothing there can be skipped, replayed or computed
// ahead, so it bounds the in-process median as the outside batches do, on
// the CPU (on a GPU it is not measured yet).
type JudgeVerified struct {
	Calls      int     `json:"calls"`
	PerCallS   float64 `json:"per_call_s"`
	BasisS     float64 `json:"basis_s"`
	RoundTripS float64 `json:"round_trip_s"`
	// Parallel: the least call ran on more than one thread of the
	// candidate's (threads that wait for each other at a barrier spin
	// through the time slices a loaded host takes; one thread's CPU time
	// does not include them). Only then may the host's load loosen
	// CheckedFactor.
	Parallel bool `json:"parallel"`
	// HostExternalShare: per try of the checked calls, the share of the
	// host's CPUs that programs outside the evaluation kept busy.
	HostExternalShare []float64 `json:"host_external_share"`
}

// JudgeBounds limit the in-process timings: the candidate's median may
// not be under CandMinS,
// the reference's not over RefMaxS.
type JudgeBounds struct {
	CandMinS   float64 `json:"cand_min_s"`
	RefMaxS    float64 `json:"ref_max_s"`
	CandFactor float64 `json:"cand_factor"`
	RefFactor  float64 `json:"ref_factor"`
	// CheckedFactor is CandFactor's counterpart for the checked calls
	// (JudgeVerified): looser, since each is a call started cold.
	CheckedFactor float64 `json:"checked_factor,omitempty"`
}

// judgeOff: KEVOLVE_JUDGE=off runs evaluations without the judge, for
// measuring what it costs; results then say so (judge status off).
func judgeOff() bool { return os.Getenv("KEVOLVE_JUDGE") == "off" }

// applyJudge makes the judge's report authoritative over a result decoded
// from the evaluation process: a pass stands only when the judge verified
// it and the reported timings are within its bounds.
func applyJudge(res *EvalResult, raw []byte, off bool) {
	if off {
		res.Judge = &JudgeReport{Status: "off", Detail: "KEVOLVE_JUDGE=off: verdict and timings are the evaluation process's alone"}
		return
	}
	rep := &JudgeReport{}
	if len(raw) == 0 || json.Unmarshal(raw, rep) != nil || rep.Status == "" {
		rep = &JudgeReport{Status: "missing", Detail: "the judge wrote no readable report"}
	}
	res.Judge = rep
	if res.Verdict != VerdictPass {
		return
	}
	fail := func(verdict, check, detail string) {
		res.Verdict, res.Stage = verdict, "verify"
		res.Checks = append(res.Checks, Check{Name: check, Passed: false, Detail: detail})
		if res.Process != nil { // keepAfterJudge drops the child
			res.Process.Kept, res.Process.Why = false, "the judge overturned its pass ("+check+")"
		}
	}
	switch rep.Status {
	case "verified":
		if msg := outOfBounds(res, rep); msg != "" {
			fail(VerdictIntegrityViolation, "timer_tampered", msg)
			return
		}
		res.Checks = append(res.Checks, Check{Name: "judge", Passed: true, Detail: judgeSummary(rep)})
		useJudgeReference(res, rep)
	case "incorrect":
		if rep.Check == "shape_specialized" {
			fail(VerdictShapeSpecialized, "shape_specialized", rep.Detail)
			return
		}
		fail(VerdictIncorrect, "judge", fmt.Sprintf("%s: %s", rep.Check, rep.Detail))
	case "failed":
		switch rep.Check {
		case "judge_run":
			fail(VerdictRuntimeError, "judge", rep.Detail)
		case "judge_timeout":
			fail(VerdictTimeout, "judge", rep.Detail)
		case "judge_oom":
			fail(VerdictRuntimeError, "out_of_memory", "in the judge's verification: "+rep.Detail)
		default:
			fail(VerdictIntegrityViolation, "judge_missing", rep.Detail)
		}
	case "unverifiable":
		res.Warnings = append(res.Warnings, "the judge could not verify this evaluation out of process: "+rep.Detail)
		useJudgeReference(res, rep)
	default:
		fail(VerdictIntegrityViolation, "judge_missing", fmt.Sprintf(
			"the evaluation process reported a pass but the judge did not verify it (judge status %s): %s", rep.Status, rep.Detail))
	}
}

// useJudgeReference makes the judge's timing of the reference the
// result's. The evaluation process times the reference only where there is
// no judge; a timing it reports anyway has passed the judge's bound by now,
// and is replaced, not kept (within the bound it could still be up to
// RefFactor times the judge's).
func useJudgeReference(res *EvalResult, rep *JudgeReport) {
	if res.Candidate != nil && rep.RefTime != nil {
		res.RefEager = rep.RefTime.stats()
	}
}

// keepAfterJudge: a child whose pass the judge overturned is not kept,
// whatever the child said of itself (the candidate ran in it and got past
// its in-process checks: a rewritten function's code, a C-level patch).
func keepAfterJudge(out *worker.Outcome) bool {
	var pr pyResult
	u := unseal(out.Result, out.Judge)
	if u.Forged != "" || json.Unmarshal(u.Raw, &pr) != nil {
		return false
	}
	res := &EvalResult{Verdict: pr.Verdict, Candidate: pr.Candidate, RefEager: pr.RefEager}
	applyJudge(res, out.Judge, judgeOff())
	return res.Verdict == pr.Verdict
}

// outOfBounds says why the result's timings disagree with the judge's, or "".
func outOfBounds(res *EvalResult, rep *JudgeReport) string {
	if res.Candidate == nil {
		return ""
	}
	b := rep.Bounds
	if b == nil && rep.Unbounded != "" {
		res.Warnings = append(res.Warnings, "timings not bounded by the judge: "+rep.Unbounded)
		return ""
	}
	if b == nil || rep.Outside == nil || rep.RefTime == nil {
		return "the evaluation process reported timings but the judge measured none"
	}
	// The outside time is every call's: so is the median it bounds (on a
	// busy host the result's median is of the undisturbed calls only,
	// Stats.MedianAllS beside it; the outside loop cannot pick those).
	cand := max(res.Candidate.MedianS, res.Candidate.MedianAllS)
	if cand < b.CandMinS {
		if v := rep.Verified; v != nil && b.CheckedFactor*v.BasisS >= b.CandMinS {
			return fmt.Sprintf("the candidate's in-process median %.4g s is under %.2g x its least per-call time in the judge's checked calls %.4g s (%d calls, each on fresh inputs of the judge's, every output compared): the timing was not the kernel's",
				cand, b.CheckedFactor, v.BasisS, v.Calls)
		}
		how := "calls"
		if rep.Outside.Paced {
			how = "calls, one at a time"
		}
		return fmt.Sprintf("the candidate's in-process median %.4g s is under %.2g x the judge's outside per-call time %.4g s (%d %s): the timing was not the kernel's",
			cand, b.CandFactor, rep.Outside.BasisS, rep.Outside.Calls, how)
	}
	if res.RefEager != nil && res.RefEager.MedianS > b.RefMaxS {
		return fmt.Sprintf("the reference's in-process median %.4g s is over %.2g x the judge's own timing of it %.4g s: the reference's timing was inflated",
			res.RefEager.MedianS, b.RefFactor, rep.RefTime.MedianS)
	}
	return ""
}

func judgeSummary(rep *JudgeReport) string {
	s := fmt.Sprintf("the judge process matched the candidate's outputs on %d trials of its own inputs", rep.Trials)
	if rep.Outside != nil && rep.RefTime != nil {
		s += fmt.Sprintf("; outside per-call time %.4g s (%d calls), reference %.4g s in the judge's process", rep.Outside.PerCallS, rep.Outside.Calls, rep.RefTime.MedianS)
		if rep.RefTime.Reused {
			s += fmt.Sprintf(" (kept from an earlier job, measured %.0f s before, the best of %d measurements)", rep.RefTime.AgeS, rep.RefTime.Measurements)
		}
	}
	if v := rep.Verified; v != nil {
		s += fmt.Sprintf("; checked calls %.4g s (the least of %d, each on fresh inputs, every output compared)", v.BasisS, v.Calls)
	}
	for _, n := range rep.Notes {
		s += "; " + n
	}
	return s
}
