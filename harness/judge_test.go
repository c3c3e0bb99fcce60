package harness

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/kevolve/kevolve-mcp/harness/toolchain/toolchaintest"
	"github.com/kevolve/kevolve-mcp/harness/worker"
)

// The judge process works for the problem shapes the harness supports:
// several inputs with non-tensor arguments and a tuple output, a
// reference that writes its input, jagged inputs (in the honest table).
// Each honest candidate passes with the judge's verification in the
// result; the same problems with a candidate wrong only where the judge
// looks (the in-process comparison silenced) are caught by the judge.

const refTupleArgs = `import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self, scale):
        super().__init__()
        self.scale = scale

    def forward(self, x, y, k, alpha):
        return torch.cumsum(x, dim=1) * alpha + k * self.scale, torch.amax(y, dim=1)


def get_inputs():
    return [torch.randn(32, 64), torch.randn(32, 16), 3, 0.5]


def get_init_inputs():
    return [2.0]
`

const candTupleArgs = `import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self, scale):
        super().__init__()
        self.scale = scale

    def forward(self, x, y, k, alpha):
        tri = torch.triu(torch.ones(x.shape[1], x.shape[1], dtype=x.dtype, device=x.device))
        first = (x @ tri) * alpha + k * self.scale
        second = torch.sort(y, dim=1).values[:, -1].contiguous()
        return first, second%s
`

const refWritesInput = `import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        x.mul_(2.0)
        return x.sum(dim=1)


def get_inputs():
    return [torch.randn(64, 128)]


def get_init_inputs():
    return []
`

const candWritesInput = `import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def forward(self, x):
        return (x @ torch.ones(x.shape[1], 1, dtype=x.dtype, device=x.device)).squeeze(1) * 2.0%s
`

// silenced: the in-process comparison always agrees (judge_code_swap.py's swap).
const silenced = `
import sys as _sys


def _agree(*args, **kwargs):
    return True, "allclose", ""


for _n, _m in list(_sys.modules.items()):
    if _n.startswith("evaluate"):
        for _a, _f in list(vars(_m).items()):
            if "compare" in _a and callable(_f) and hasattr(_f, "__code__"):
                _f.__code__ = _agree.__code__
`

func TestJudgeProblemShapes(t *testing.T) {
	ev := evaluator(t)
	cases := []struct {
		name, ref, cand string
		want            string
	}{
		{"tuple_output_non_tensor_args", refTupleArgs, strings.Replace(candTupleArgs, "%s", "", 1), VerdictPass},
		{"reference_writes_its_input", refWritesInput, strings.Replace(candWritesInput, "%s", "", 1), VerdictPass},
		// Wrong only in the second output (the max's neighbour), compared in-process by a silenced compare.
		{"tuple_second_output_wrong", refTupleArgs, strings.Replace(candTupleArgs, "values[:, -1]", "values[:, -2]", 1) + silenced, VerdictIncorrect},
		{"wrong_after_input_written", refWritesInput, strings.Replace(candWritesInput, "* 2.0", "* 2.5", 1) + silenced, VerdictIncorrect},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			cand := strings.Replace(tc.cand, "%s", "", 1)
			res, err := ev.EvaluateRequest(context.Background(), EvalRequest{Reference: Source{Code: tc.ref}, Candidate: Source{Code: cand},
				Target: testTarget(), Timeout: 150 * time.Second}, nil)
			if err != nil {
				t.Fatalf("Evaluate: %v", err)
			}
			if res.Verdict != tc.want || res.Judge == nil {
				t.Fatalf("verdict %s, want %s; judge %+v\n%s", res.Verdict, tc.want, res.Judge, dump(res))
			}
			t.Logf("judge: %s trials %d outside %+v bounds %+v", res.Judge.Status, res.Judge.Trials, res.Judge.Outside, res.Judge.Bounds)
			if tc.want == VerdictPass {
				if res.Judge.Status != "verified" || res.Judge.Trials < 2 || res.Judge.Bounds == nil {
					t.Fatalf("a pass without the judge's verification: %+v", res.Judge)
				}
				return
			}
			if d, ok := failedCheck(res, "judge"); !ok || !strings.Contains(d, "judge trial") {
				t.Fatalf("not caught by the judge: %s", dump(res))
			}
		})
	}
}

// applyJudge: a pass stands only with the judge's verification and timings
// within its bounds; anything else, or no report, is not a pass.
func TestApplyJudge(t *testing.T) {
	verified := `{"status":"verified","trials":2,"reference_s":{"median_s":0.001},"outside":{"per_call_s":0.0005,"basis_s":0.0005,"calls":40},
		"bounds":{"cand_min_s":0.00025,"ref_max_s":0.0025,"cand_factor":0.5,"ref_factor":2.5}}`
	cases := []struct {
		name, raw     string
		cand, ref     float64
		verdict       string
		check         string
		inProcessFail bool
	}{
		{"verified", verified, 0.0004, 0.001, VerdictPass, "judge", false},
		{"candidate_too_fast", verified, 0.0001, 0.001, VerdictIntegrityViolation, "timer_tampered", false},
		{"reference_too_slow", verified, 0.0004, 0.01, VerdictIntegrityViolation, "timer_tampered", false},
		{"verified_jagged_unbounded", `{"status":"verified","trials":2,"unbounded":"jagged"}`, 0.0004, 0.001, VerdictPass, "judge", false},
		{"verified_without_timing", `{"status":"verified","trials":2}`, 0.0004, 0.001, VerdictIntegrityViolation, "timer_tampered", false},
		{"incorrect", `{"status":"incorrect","check":"allclose","detail":"judge trial 0: bad"}`, 0.0004, 0.001, VerdictIncorrect, "judge", false},
		{"candidate_raised", `{"status":"failed","check":"judge_run","detail":"ValueError"}`, 0.0004, 0.001, VerdictRuntimeError, "judge", false},
		{"judge_out_of_memory", `{"status":"failed","check":"judge_oom","detail":"CUDA out of memory"}`, 0.0004, 0.001, VerdictRuntimeError, "out_of_memory", false},
		{"judge_timeout", `{"status":"failed","check":"judge_timeout","detail":"budget"}`, 0.0004, 0.001, VerdictTimeout, "judge", false},
		{"protocol", `{"status":"failed","check":"judge_protocol","detail":"closed"}`, 0.0004, 0.001, VerdictIntegrityViolation, "judge_missing", false},
		{"skipped_yet_pass", `{"status":"skipped","reason":"in-process verdict incorrect"}`, 0.0004, 0.001, VerdictIntegrityViolation, "judge_missing", false},
		{"missing", ``, 0.0004, 0.001, VerdictIntegrityViolation, "judge_missing", false},
		{"garbage", `{"status":`, 0.0004, 0.001, VerdictIntegrityViolation, "judge_missing", false},
		{"unverifiable_keeps_pass", `{"status":"unverifiable","detail":"inputs"}`, 0.0004, 0.001, VerdictPass, "", false},
		// The in-process verdict stands when it is not a pass: never made better.
		{"in_process_incorrect", verified, 0.0004, 0.001, VerdictIncorrect, "", true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			res := &EvalResult{Verdict: VerdictPass, Candidate: &Stats{MedianS: tc.cand}, RefEager: &Stats{MedianS: tc.ref}}
			if tc.inProcessFail {
				res.Verdict = VerdictIncorrect
			}
			applyJudge(res, []byte(tc.raw), false)
			if res.Verdict != tc.verdict {
				t.Fatalf("verdict %s, want %s: %+v", res.Verdict, tc.verdict, res.Checks)
			}
			if tc.check != "" {
				found := false
				for _, c := range res.Checks {
					found = found || (c.Name == tc.check && c.Passed == (tc.verdict == VerdictPass))
				}
				if !found {
					t.Fatalf("no check %s: %+v", tc.check, res.Checks)
				}
			}
			if res.Judge == nil {
				t.Fatalf("no judge report in the result")
			}
		})
	}
}

// A candidate that forges the judge's report as well as the result: only
// the sandbox's read-only judge folder stops it (issue 19 item 1).
func TestJudgeReportForged(t *testing.T) {
	// Without Landlock nothing keeps the candidate out of the judge's
	// folder (the result says the layer was missing).
	if probe, err := worker.ProbeSandbox(context.Background(), toolchaintest.Python(t), ""); err != nil || !slices.Contains(probe.Active, "landlock") {
		t.Skipf("no Landlock on this host (%v %v): the judge's folder is not out of the candidate's reach", err, probe.Missing)
	}
	ev := evaluator(t)
	res, err := ev.EvaluateRequest(context.Background(), EvalRequest{Reference: Source{Code: readTestdata(t, "ref_normalize.py")},
		Candidate: Source{Code: readTestdata(t, "judge_forges_judge_file.py")}, Target: testTarget(), Timeout: 150 * time.Second}, nil)
	if err != nil {
		t.Fatalf("Evaluate: %v", err)
	}
	if res.Verdict == VerdictPass {
		t.Fatalf("a forged judge report passed\n%s", dump(res))
	}
	t.Logf("verdict %s", res.Verdict)
}

// A kept child keeps its judge: forked at the child's first job, before
// anything of a candidate's ran, it verifies the child's later jobs too; a
// wrong candidate in the kept child is still the judge's to catch.
func TestJudgeKeptChild(t *testing.T) {
	ev := reuseEvaluator(t)
	first := evalNormalize(t, ev, candNormalize, true)
	second := evalNormalize(t, ev, candNormalize+"\n# another candidate\n", true)
	for i, r := range []*EvalResult{first, second} {
		if r.Verdict != VerdictPass || r.Judge == nil || r.Judge.Status != "verified" {
			t.Fatalf("evaluation %d: verdict %s judge %+v\n%s", i+1, r.Verdict, r.Judge, dump(r))
		}
	}
	if second.Process.Job != 2 {
		t.Fatalf("the second evaluation ran as job %d of its child, want 2 (kept): %+v", second.Process.Job, first.Process)
	}
	// The reference's time is the judge's, kept for the child's next job.
	for i, r := range []*EvalResult{first, second} {
		if r.RefEager == nil || r.Judge.RefTime == nil || r.RefEager.MedianS != r.Judge.RefTime.MedianS || r.RefEager.Iters < 25 {
			t.Fatalf("evaluation %d: the reference's timing is not the judge's: ref_eager %+v judge %+v", i+1, r.RefEager, r.Judge.RefTime)
		}
	}
	if first.Judge.RefTime.Reused || !second.Judge.RefTime.Reused {
		t.Fatalf("reference timing reused: first %v, second %v; want false, true", first.Judge.RefTime.Reused, second.Judge.RefTime.Reused)
	}
	third := evalNormalize(t, ev, readTestdata(t, "judge_code_swap.py"), true)
	if third.Verdict != VerdictIncorrect || third.Process.Job != 3 {
		t.Fatalf("wrong candidate in the kept child: verdict %s job %d\n%s", third.Verdict, third.Process.Job, dump(third))
	}
}

// TestJudgeOverheadCPU measures what the judge adds to an evaluation's
// wall time (KEVOLVE_JUDGE_BENCH=1; a measurement, not a check): the same
// honest candidate evaluated with the judge off and on, alternately, in
// one evaluator (a warm worker), fresh children each time.
func TestJudgeOverheadCPU(t *testing.T) {
	if os.Getenv("KEVOLVE_JUDGE_BENCH") != "1" {
		t.Skip("KEVOLVE_JUDGE_BENCH=1 not set")
	}
	ev := evaluator(t)
	walls := map[bool][]float64{}
	var verify []float64
	for i := range 8 {
		on := i%2 == 1
		if on {
			os.Unsetenv("KEVOLVE_JUDGE")
		} else {
			os.Setenv("KEVOLVE_JUDGE", "off")
		}
		res, err := ev.EvaluateRequest(context.Background(), EvalRequest{Reference: Source{Code: readTestdata(t, "ref_normalize.py")},
			Candidate: Source{Code: readTestdata(t, "persistent_buffer.py") + fmt.Sprintf("\n# run %d\n", i)}, Target: "cpu", Timeout: 150 * time.Second}, nil)
		if err != nil || res.Verdict != VerdictPass {
			t.Fatalf("run %d: %v %v", i, err, res)
		}
		walls[on] = append(walls[on], res.WallS)
		if on {
			verify = append(verify, res.StageS["verify"])
		}
	}
	os.Unsetenv("KEVOLVE_JUDGE")
	med := func(xs []float64) float64 { s := slices.Clone(xs); slices.Sort(s); return s[len(s)/2] }
	t.Logf("wall off %v (median %.2f s), on %v (median %.2f s); verify stage %v (median %.2f s)",
		walls[false], med(walls[false]), walls[true], med(walls[true]), verify, med(verify))
}

// The reference's time is the judge's: a candidate that rewrites the
// in-process timing statistics to report the reference a hundred times
// slower (judge_inflates_reference.py; before the judge owned that
// timing, the judge's bound caught it as timer_tampered) has nothing left
// to inflate. It is correct and honest in its computation, so it passes,
// with the speedup the judge's timing gives.
func TestJudgeOwnsReferenceTiming(t *testing.T) {
	ev := evaluator(t)
	res, err := ev.EvaluateRequest(context.Background(), EvalRequest{Reference: Source{Code: readTestdata(t, "ref_normalize.py")},
		Candidate: Source{Code: readTestdata(t, "judge_inflates_reference.py")}, Target: testTarget(), Timeout: 150 * time.Second}, nil)
	if err != nil {
		t.Fatalf("Evaluate: %v", err)
	}
	if res.Verdict != VerdictPass || res.Judge == nil || res.Judge.RefTime == nil || res.RefEager == nil {
		t.Fatalf("verdict %s, judge %+v\n%s", res.Verdict, res.Judge, dump(res))
	}
	if res.RefEager.MedianS != res.Judge.RefTime.MedianS {
		t.Fatalf("the reference's median %.4g s is not the judge's %.4g s", res.RefEager.MedianS, res.Judge.RefTime.MedianS)
	}
	// Both compute the same norm: a speedup near 100 would be the forged one.
	if res.SpeedupVsEager == nil || *res.SpeedupVsEager > 20 {
		t.Fatalf("speedup %v: inflated", res.SpeedupVsEager)
	}
}

// A candidate whose own process keeps a CPU busy through the verify stage
// (busy_process.py, correct outputs) is stopped, with that process, while
// the judge times the reference: it cannot slow the speedup's
// denominator, and its honest verdict stands.
func TestJudgeFreezesCandidateTree(t *testing.T) {
	ev := evaluator(t)
	res, err := ev.EvaluateRequest(context.Background(), EvalRequest{Reference: Source{Code: readTestdata(t, "ref_normalize.py")},
		Candidate: Source{Code: readTestdata(t, "busy_process.py")}, Target: testTarget(), Timeout: 150 * time.Second}, nil)
	if err != nil {
		t.Fatalf("Evaluate: %v", err)
	}
	if res.Verdict != VerdictPass || res.Judge == nil || res.Judge.RefTime == nil {
		t.Fatalf("verdict %s, judge %+v\n%s", res.Verdict, res.Judge, dump(res))
	}
	if res.Judge.RefTime.Frozen < 2 {
		t.Fatalf("the judge stopped %d processes while timing the reference, want the candidate's and its spinner", res.Judge.RefTime.Frozen)
	}
}

// A candidate slow only when its calls follow each other with no pause
// (stalls_back_to_back.py: 50 ms of CPU spin before a call that starts within 100 us of
// the last one's end, as a thread pool stalls at its barriers on a loaded
// host) reads many times its in-process median in the judge's batches.
// The judge's second opinion, its calls one request each, agrees with the
// in-process median: an honest pass, not timer_tampered. The timing
// rewrite of judge_timing_stats (TestHostileCandidates) is still caught
// after that second opinion.
func TestJudgePacedSecondOpinion(t *testing.T) {
	if gpuMode() {
		t.Skip("a CPU candidate's stalls")
	}
	ev := evaluator(t)
	res, err := ev.EvaluateRequest(context.Background(), EvalRequest{Reference: Source{Code: readTestdata(t, "ref_normalize.py")},
		Candidate: Source{Code: readTestdata(t, "stalls_back_to_back.py")}, Target: "cpu", Timeout: 150 * time.Second}, nil)
	if err != nil {
		t.Fatalf("Evaluate: %v", err)
	}
	if res.Verdict != VerdictPass || res.Judge == nil || res.Judge.Outside == nil {
		t.Fatalf("verdict %s, judge %+v\n%s", res.Verdict, res.Judge, dump(res))
	}
	if !res.Judge.Outside.Paced {
		t.Fatalf("the judge's outside time %+v is a batch's: the back-to-back stall did not show, so the paced path was not exercised", *res.Judge.Outside)
	}
}
