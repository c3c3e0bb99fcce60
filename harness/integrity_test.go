package harness

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// Hostile candidates and failing references, evaluated by the real worker.
// The files live in testdata/hostile: each is a candidate for the reference
// named in the table.

func readTestdata(t *testing.T, name string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", "hostile", name))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// failedCheck returns the detail of a failed check of that name, and whether one exists.
func failedCheck(res *EvalResult, name string) (string, bool) {
	for _, c := range res.Checks {
		if c.Name == name && !c.Passed {
			return c.Detail, true
		}
	}
	return "", false
}

func dump(res *EvalResult) string {
	r := *res
	r.Log = ""
	b, _ := json.MarshalIndent(r, "", "  ")
	return string(b)
}

// hostileCase is a candidate (a file in testdata/hostile, or "rename:" a
// reference renamed ModelNew) for a reference, and the verdict it must get
// through the named check.
type hostileCase struct {
	name, ref, cand string
	want, check     string
	gpuOnly         bool
}

// The classes of issue 9: skipping work once timed, caching outputs, and
// the reference renamed as the candidate.
var hostileCases = []hostileCase{
	// Correct for its first calls (correctness trials and the cache
	// check), then torch.empty_like without computing.
	{"stop_after_n_calls", "ref_normalize.py", "stop_after_n.py", VerdictIntegrityViolation, "audit", false},
	// Correct, then keeps returning its own output buffer unchanged.
	{"stale_buffer_after_n_calls", "ref_normalize.py", "stale_buffer.py", VerdictIntegrityViolation, "audit", false},
	// From its 8th call on, a cache keyed by the input's data_ptr.
	{"cache_by_data_ptr_once_timed", "ref_normalize.py", "cache_data_ptr.py", VerdictIntegrityViolation, "audit", false},
	// Computes only for inputs it has not seen (by pointer and shape):
	// inputs seen before get the earlier output.
	{"compute_only_unseen_inputs", "ref_normalize.py", "seen_inputs.py", VerdictIntegrityViolation, "memoization", false},
	// Looks for the timing loop on the call stack and skips the work there.
	{"cheats_inside_the_timing_loop", "ref_normalize.py", "timed_by_stack.py", VerdictIntegrityViolation, "audit", false},
	// Replaces the auditor's settle and torch.equal from inside the process.
	{"patches_the_harness", "ref_normalize.py", "patches_harness.py", VerdictIntegrityViolation, "harness_patched", false},
	// Changes what the reference runs on: torch's thread count at import
	// (a slower reference), the operator it computes with (zeros on both
	// sides), the reference model's forward (found through gc), and a
	// function replaced on the way out of each call and restored on the
	// way in.
	{"slows_the_reference", "ref_normalize.py", "slows_reference.py", VerdictIntegrityViolation, "reference_tampered", false},
	{"patches_the_reference_op", "ref_diag_matmul.py", "patches_reference_op.py", VerdictIntegrityViolation, "reference_tampered", false},
	{"hijacks_the_reference_model", "ref_normalize.py", "hijacks_reference_model.py", VerdictIntegrityViolation, "reference_tampered", false},
	{"patches_between_calls", "ref_normalize.py", "patches_between_calls.py", VerdictIntegrityViolation, "reference_tampered", false},
	{"starves_the_reference_between_calls", "ref_normalize.py", "starves_reference_between_calls.py", VerdictIntegrityViolation, "reference_tampered", false},
	// Once timed, starts a thread that holds the CPU and Python's lock only
	// while the reference is timed.
	{"slows_the_reference_timing", "ref_normalize.py", "slows_reference_timing.py", VerdictIntegrityViolation, "threads", false},
	// Writes a passing result file itself and ends the process.
	{"forges_the_result", "ref_normalize.py", "forges_result.py", VerdictIntegrityViolation, "result_forged", false},
	// The judge in its own process (issue 19): the in-process checks are
	// rewritten from inside, so only the judge can decide. Wrong, with
	// every compare* function's __code__ swapped for one that agrees; the
	// same swap made with ctypes.memmove into the function objects; right,
	// with the timing statistics rewritten to report a thousandth of the
	// candidate's time (judge_inflates_reference, which rewrites the
	// reference's, is TestJudgeOwnsReferenceTiming); a forged result file
	// reported with a forged "done" event on the worker's pipe.
	{"judge_code_swap", "ref_normalize.py", "judge_code_swap.py", VerdictIncorrect, "judge", false},
	{"judge_ctypes_patch", "ref_normalize.py", "judge_ctypes_patch.py", VerdictIncorrect, "judge", false},
	{"judge_timing_stats", "ref_normalize.py", "judge_timing_stats.py", VerdictIntegrityViolation, "timer_tampered", false},
	{"judge_forges_done", "ref_normalize.py", "judge_forges_done.py", VerdictIntegrityViolation, "judge_missing", false},
	// The statistics rewritten as above, and the previous output returned
	// whenever the same input tensor comes again: the judge's loop from
	// outside must not be one a replay shortens.
	{"judge_timing_stats_outside_replay", "ref_normalize.py", "replays_outside_loop.py", VerdictIntegrityViolation, "timer_tampered", false},
	// The statistics rewritten, and the harness's server of the outside
	// timing in the candidate's process replaced: no calls made, a slow
	// empty round trip to subtract.
	{"judge_timing_stats_outside_skipped", "ref_normalize.py", "skips_outside_calls.py", VerdictIntegrityViolation, "timer_tampered", false},
	// And the judge's checked calls answered at once, their outputs left to
	// a thread to write later.
	{"judge_checked_calls_skipped", "ref_normalize.py", "skips_checked_calls.py", VerdictIncorrect, "judge", false},
	// A jagged problem (shapes change with the seed): a cache keyed by
	// pointer and shape, and a replay of the previous output once timed.
	{"jagged_cache_by_pointer", "ref_jagged_sum.py", "jagged_seen.py", VerdictIntegrityViolation, "memoization", false},
	{"jagged_replay_once_timed", "ref_jagged_sum.py", "jagged_replay.py", VerdictIntegrityViolation, "audit", false},
	// KernelBench level 1 problem 12 (CPU-sized), Model renamed ModelNew.
	{"reference_as_candidate_diag_matmul", "ref_diag_matmul.py", "rename:ref_diag_matmul.py", VerdictIntegrityViolation, "reference_ops", false},
	{"reference_as_candidate_conv_relu", "ref_conv_relu.py", "rename:ref_conv_relu.py", VerdictIntegrityViolation, "reference_ops", false},
	{"reference_as_candidate_layernorm", "ref_layernorm.py", "rename:ref_layernorm.py", VerdictIntegrityViolation, "reference_ops", false},
	// The reference's GEMM under another name: torch.ops.aten.mm, einsum (bmm).
	{"reference_gemm_by_another_name", "ref_matmul_relu_small.py", "matmul_by_another_name.py", VerdictIntegrityViolation, "reference_ops", false},
	{"reference_gemm_by_einsum", "ref_matmul_relu_small.py", "matmul_by_einsum.py", VerdictIntegrityViolation, "reference_ops", false},
	// The reference with glue added (.contiguous(), a clone) is still the reference.
	{"reference_with_glue_added", "ref_diag_matmul.py", "diag_matmul_glue.py", VerdictIntegrityViolation, "reference_ops", false},
	// Its own formulation through the correctness trials, the reference's
	// ops once timed: from its 13th call on, or whenever the timing loop is
	// on the call stack. Every output is right.
	{"reference_ops_after_n_calls", "ref_diag_matmul.py", "ref_ops_once_timed.py", VerdictIntegrityViolation, "reference_ops", false},
	{"reference_ops_inside_the_timing_loop", "ref_diag_matmul.py", "ref_ops_in_timing_loop.py", VerdictIntegrityViolation, "reference_ops", false},
	// ModelNew.__call__ = forward skips nn.Module's hooks (issue 36): no
	// verdict may rest on them, so these are caught as without it.
	{"call_is_forward_reference", "ref_diag_matmul.py", "call_is_forward_reference.py", VerdictIntegrityViolation, "reference_ops", false},
	{"reference_ops_once_timed_call_is_forward", "ref_diag_matmul.py", "call_is_forward_once_timed.py", VerdictIntegrityViolation, "reference_ops", false},
}

// harnessReports says whether the harness itself reports this case's
// verdict (with its memory figures and process record): not so for a
// candidate that ends the process before the harness can.
func (tc hostileCase) harnessReports() bool {
	return tc.check != "result_forged" && tc.check != "judge_missing"
}

// onceTimed says whether this case's reference ops show only in calls
// made once timed (the cases named reference_ops_*).
func (tc hostileCase) onceTimed() bool { return strings.HasPrefix(tc.name, "reference_ops_") }

// candidateSource reads a hostileCase's candidate.
func (tc hostileCase) candidateSource(t *testing.T) string {
	if f, ok := strings.CutPrefix(tc.cand, "rename:"); ok {
		// Every use of the name, as a KernelBench sweep renames it (super(Model, self) included).
		return strings.ReplaceAll(readTestdata(t, f), "Model", "ModelNew")
	}
	return readTestdata(t, tc.cand)
}

// The corpus's C and Triton start kernels (Triton through its interpreter)
// are honest: on the CPU, with the small shape sets, every integrity check
// (the traced calls once timed, the reference guard, the threads around the
// reference's timing among them) must let them pass.
func TestIntegrityCPUCorpusStartKernels(t *testing.T) {
	if gpuMode() {
		t.Skip("the GPU test runs the CUDA and Triton starts")
	}
	ev := evaluator(t)
	for _, s := range corpusStartKernels(t, "start_c.py", "start_triton.py") {
		checkStartKernel(t, ev, s, "cpu", "small")
	}
}

// Each hostile case must get its verdict through the named check; none may pass.
func TestIntegrityHostileCandidates(t *testing.T) {
	ev := evaluator(t)
	ctx := context.Background()
	cases := hostileCases
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if tc.gpuOnly && !gpuMode() {
				t.Skip("GPU only")
			}
			ref := readTestdata(t, tc.ref)
			cand := tc.candidateSource(t)
			res, err := ev.EvaluateRequest(ctx, EvalRequest{Reference: Source{Code: ref}, Candidate: Source{Code: cand},
				Target: testTarget(), Timeout: 150 * time.Second}, nil)
			if err != nil {
				t.Fatalf("Evaluate: %v", err)
			}
			if res.Verdict != tc.want {
				t.Fatalf("verdict %q, want %q\n%s", res.Verdict, tc.want, dump(res))
			}
			d, ok := failedCheck(res, tc.check)
			if !ok {
				t.Fatalf("no failed check %q\n%s", tc.check, dump(res))
			}
			t.Logf("%s: %s", tc.check, d)
			if tc.check == "audit" && !strings.Contains(d, "iteration") && !strings.Contains(d, "after timing") && !strings.Contains(d, "traced call") {
				t.Errorf("audit detail does not say which call failed: %s", d)
			}
			if res.Memory == nil && tc.harnessReports() {
				t.Errorf("result lacks memory figures")
			}
			if tc.onceTimed() {
				if !strings.HasPrefix(d, "once timed") && !strings.HasPrefix(d, "after timing") {
					t.Errorf("reference_ops detail does not say the call was made once timed: %s", d)
				}
			} else if tc.check == "reference_ops" {
				// The verdict is final once the candidate is the reference:
				// no memoization calls, no timing.
				if _, ran := res.StageS["timing"]; ran || res.Candidate != nil {
					t.Errorf("timing ran after reference_ops decided: stages %v", res.StageS)
				}
				for _, c := range res.Checks {
					if c.Name == "memoization" || c.Name == "audit" {
						t.Errorf("check %s ran after reference_ops decided", c.Name)
					}
				}
			}
		})
	}
}

// Honest candidates still pass with timing, audits and refreshed inputs on:
// a plain-torch one that computes differently (allowed, with the warning)
// and one that keeps a persistent output buffer it rewrites every call.
func TestIntegrityHonestCandidatesPass(t *testing.T) {
	ev := evaluator(t)
	for _, tc := range []struct{ name, ref, cand, warn string }{
		{"plain_torch_other_ops", "ref_diag_matmul.py", "diag_matmul_broadcast.py", "no custom kernel"},
		{"persistent_output_buffer", "ref_normalize.py", "persistent_buffer.py", ""},
		// __call__ = forward (no nn.Module hooks run) is judged as any call.
		{"call_is_forward", "ref_diag_matmul.py", "call_is_forward_honest.py", "no custom kernel"},
		// The generic ops a composite reference decomposes into (F.rms_norm:
		// pow, mean, rsqrt) are not its own ops.
		{"plain_torch_composite_written_out", "ref_rms_norm.py", "rms_norm_plain_torch.py", "no custom kernel"},
		// Shapes change with the seed: the memoization check rotates values
		// in the same buffers, timing gives every call a new input set.
		{"jagged_inputs", "ref_jagged_sum.py", "jagged_sum_honest.py", "each timed call got a new input set"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res, err := ev.EvaluateRequest(context.Background(), EvalRequest{Reference: Source{Code: readTestdata(t, tc.ref)},
				Candidate: Source{Code: readTestdata(t, tc.cand)}, Target: testTarget(), Timeout: 150 * time.Second}, nil)
			if err != nil {
				t.Fatalf("Evaluate: %v", err)
			}
			if res.Verdict != VerdictPass {
				t.Fatalf("verdict %s\n%s", res.Verdict, dump(res))
			}
			d, _ := json.Marshal(res.Checks)
			if !strings.Contains(string(d), `"name":"audit","passed":true`) {
				t.Errorf("no passed audit check: %s", d)
			}
			if tc.warn != "" && !strings.Contains(strings.Join(res.Warnings, "\n"), tc.warn) {
				t.Errorf("warnings %q lack %q", res.Warnings, tc.warn)
			}
			if res.Memory == nil {
				t.Fatalf("no memory figures")
			}
			if gpuMode() && (res.Memory.CandidatePeakBytes == nil || *res.Memory.CandidatePeakBytes <= 0 ||
				res.Memory.ReferencePeakBytes == nil || *res.Memory.ReferencePeakBytes <= 0) {
				t.Errorf("GPU peaks missing: %+v", res.Memory)
			}
			if !gpuMode() && res.Memory.ProcessPeakRSS <= 0 {
				t.Errorf("CPU peak RSS missing: %+v", res.Memory)
			}
		})
	}
}

// A failing reference is a reference_error verdict naming the reference's
// file and line, never a Go error; the candidate is not blamed.
func TestReferenceErrors(t *testing.T) {
	ev := evaluator(t)
	good := readTestdata(t, "persistent_buffer.py")
	base := readTestdata(t, "ref_normalize.py")
	cases := []struct {
		name, ref, stage, want string
	}{
		{"syntax_error", "def get_inputs(:\n", "reference_import", "kevolve_reference.py:1"},
		{"import_fails", "import torch\nimport no_such_module_kevolve_ref\n" + base, "reference_import", "kevolve_reference.py:2"},
		{"no_model", "def get_inputs(): return []\ndef get_init_inputs(): return []\n", "reference_import", "defines no Model"},
		{"get_init_inputs_raises", strings.Replace(base, "def get_init_inputs():\n    return []", "def get_init_inputs():\n    raise ValueError('no init for you')", 1),
			"reference_init", "in get_init_inputs"},
		{"constructor_raises", strings.Replace(base, "super().__init__()", "super().__init__()\n        raise RuntimeError('bad ctor')", 1),
			"reference_init", "in __init__"},
		{"get_inputs_raises", strings.Replace(base, "def get_inputs():\n", "def get_inputs():\n    raise KeyError('shape')\n", 1),
			"reference_inputs", "in get_inputs"},
		{"get_inputs_returns_dict", strings.Replace(base, "return [torch.randn(64, 256)]", "return {'x': torch.randn(64, 256)}", 1),
			"reference_inputs", "returned a dict"},
		{"forward_fails", strings.Replace(base, "return F.normalize(x, dim=1)", "return x @ torch.ones(3, 3)", 1),
			"reference_forward", "in forward"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			res, err := ev.EvaluateRequest(context.Background(), EvalRequest{Reference: Source{Code: tc.ref}, Candidate: Source{Code: good},
				Target: testTarget(), Timeout: 120 * time.Second}, nil)
			if err != nil {
				t.Fatalf("a reference failure must be a verdict, got the Go error %v", err)
			}
			if res.Verdict != VerdictReferenceError || res.Stage != tc.stage {
				t.Fatalf("verdict %s stage %s, want %s %s\n%s", res.Verdict, res.Stage, VerdictReferenceError, tc.stage, dump(res))
			}
			d, ok := failedCheck(res, tc.stage)
			if !ok || !strings.Contains(d, tc.want) {
				t.Fatalf("check %s detail %q lacks %q", tc.stage, d, tc.want)
			}
			if len(d) > 2600 {
				t.Errorf("reference error detail is %d bytes, want at most ~2 KB", len(d))
			}
			if res.Correct {
				t.Errorf("correct with a reference error")
			}
			t.Logf("%s", firstLine(d))
		})
	}
}

// Running out of memory, on either side, is runtime_error with check
// out_of_memory naming the side, not a Go error or a crash.
func TestOutOfMemoryVerdict(t *testing.T) {
	ev := evaluator(t)
	base := readTestdata(t, "ref_normalize.py")
	honest := readTestdata(t, "persistent_buffer.py")
	huge := "torch.empty(1 << 44, dtype=torch.uint8, device=x.device)"
	cases := []struct {
		name, ref, cand, side string
	}{
		{"candidate_torch_alloc", base, strings.Replace(honest, "def forward(self, x):\n", "def forward(self, x):\n        "+huge+"\n", 1), "candidate"},
		{"candidate_memory_error", base, strings.Replace(honest, "def forward(self, x):\n", "def forward(self, x):\n        bytearray(1 << 44)\n", 1), "candidate"},
		{"reference_torch_alloc", strings.Replace(base, "def forward(self, x):\n", "def forward(self, x):\n        "+huge+"\n", 1), honest, "reference"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			res, err := ev.EvaluateRequest(context.Background(), EvalRequest{Reference: Source{Code: tc.ref}, Candidate: Source{Code: tc.cand},
				Target: testTarget(), Timeout: 120 * time.Second, SkipTiming: true}, nil)
			if err != nil {
				t.Fatalf("out of memory must be a verdict, got the Go error %v", err)
			}
			if res.Verdict != VerdictRuntimeError {
				t.Fatalf("verdict %s, want runtime_error\n%s", res.Verdict, dump(res))
			}
			d, ok := failedCheck(res, "out_of_memory")
			if !ok || !strings.Contains(d, "the "+tc.side+" ran out of memory") || !strings.Contains(d, "peak device memory") {
				t.Fatalf("out_of_memory detail %q does not name the %s and the peaks\n%s", d, tc.side, dump(res))
			}
			if res.Stage == "" || res.Memory == nil {
				t.Errorf("stage %q memory %+v", res.Stage, res.Memory)
			}
			t.Logf("stage %s: %s", res.Stage, d)
		})
	}
}

// count_work: the child counts the reference forward's FLOPs and bytes on
// the real inputs, the same way sol.Trace does.
func TestCountWork(t *testing.T) {
	ev := evaluator(t)
	res, err := ev.EvaluateRequest(context.Background(), EvalRequest{Reference: Source{Code: readTestdata(t, "ref_diag_matmul.py")},
		Candidate: Source{Code: readTestdata(t, "diag_matmul_broadcast.py")}, Target: testTarget(), SkipTiming: true, CountWork: true}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if res.Work == nil || res.Work.Method != "traced" {
		t.Fatalf("no traced work: %s", dump(res))
	}
	// diag(A) @ B with A (N,), B (N, M): the matmul is 2*N*N*M FLOPs.
	n, m := 256.0, 512.0
	if res.Work.FLOPs < 2*n*n*m || res.Work.FLOPs > 2*n*n*m*1.01 {
		t.Errorf("flops %g, want about %g", res.Work.FLOPs, 2*n*n*m)
	}
	// Bytes: A and B read, the N x M output written, fp32.
	wantBytes := 4 * (n + n*m + n*m)
	if res.Work.Bytes != wantBytes || res.Work.Dtype != "fp32" {
		t.Errorf("bytes %g dtype %s, want %g fp32", res.Work.Bytes, res.Work.Dtype, wantBytes)
	}
	// Without the flag, nothing is counted.
	res2, err := ev.EvaluateRequest(context.Background(), EvalRequest{Reference: Source{Code: readTestdata(t, "ref_diag_matmul.py")},
		Candidate: Source{Code: readTestdata(t, "diag_matmul_broadcast.py")}, Target: testTarget(), SkipTiming: true}, nil)
	if err != nil || res2.Work != nil {
		t.Fatalf("work without count_work: %v %+v", err, res2.Work)
	}
}
