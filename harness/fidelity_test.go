package harness

import (
	"context"
	"strings"
	"testing"
	"time"
)

// Verdicts that follow the work (issue 20): library calls beside the
// candidate's own kernels pass with a note, the reference under any
// disguise is caught, degenerate references are named, another dense
// layout passes. Real candidates in testdata/hostile, the real worker.

type fidelityCase struct {
	name, ref, cand string
	policy          string
	want, check     string
	// note is a substring of a note (pass) or of the failed check's detail.
	note string
	// slow marks load_inline candidates (a C++ build the first time).
	slow bool
}

var fidelityCases = []fidelityCase{
	// The library's GEMM with the epilogue fused into a C kernel of its own.
	{"library_gemm_fused_c_epilogue", "ref_gemm_epilogue.py", "gemm_fused_c_epilogue.py", "", VerdictPass, "reference_ops", "library calls beside its own kernels", false},
	// The same under kernel_policy strict: the GEMM must be its own.
	{"library_gemm_strict_policy", "ref_gemm_epilogue.py", "gemm_fused_c_epilogue.py", KernelPolicyStrict, VerdictIntegrityViolation, "reference_ops", "kernel_policy strict", false},
	// The epilogue in torch ops and no kernel of its own: still the reference.
	{"library_gemm_torch_epilogue", "ref_gemm_epilogue.py", "gemm_torch_epilogue.py", "", VerdictIntegrityViolation, "reference_ops", "no kernel of its own ran", false},
	// The reference renamed, alone and beside a decoy kernel of its own.
	{"reference_renamed", "ref_gemm_epilogue.py", "rename:ref_gemm_epilogue.py", "", VerdictIntegrityViolation, "reference_ops", "the candidate is the reference", false},
	{"reference_beside_decoy_kernel", "ref_gemm_epilogue.py", "gemm_reference_with_decoy.py", "", VerdictIntegrityViolation, "reference_ops", "every compute op of the reference", false},
	// Library calls from C++ inside a load_inline extension are traced: the
	// whole reference in at:: calls is the reference; at::mm with its own
	// epilogue loop passes with the note.
	{"inline_cpp_whole_reference", "ref_gemm_epilogue.py", "gemm_inline_cpp_library.py", "", VerdictIntegrityViolation, "reference_ops", "the candidate is the reference", true},
	{"inline_cpp_library_gemm_own_epilogue", "ref_gemm_epilogue.py", "gemm_inline_cpp_fused.py", "", VerdictPass, "reference_ops", "library calls beside its own kernels", true},
	// diag(A) @ B as a row scaling: plain torch, other ops, passes.
	{"diag_matmul_row_scaling", "ref_diag_matmul.py", "diag_matmul_broadcast.py", "", VerdictPass, "reference_ops", "", false},
	// Degenerate references: a constant output whatever the inputs.
	{"degenerate_max_minus_mean", "ref_degenerate_max_mean.py", "degenerate_zeros.py", "", VerdictReferenceError, "degenerate_reference", "every element 0", false},
	{"degenerate_softmax_over_one", "ref_degenerate_softmax1.py", "ones_like_output.py", "", VerdictReferenceError, "degenerate_reference", "every element 1", false},
	// The reference itself as the candidate of a degenerate problem (the sweep).
	{"degenerate_reference_as_candidate", "ref_degenerate_softmax1.py", "rename:ref_degenerate_softmax1.py", "", VerdictReferenceError, "degenerate_reference", "bitwise identical", false},
	// Nearly constant, yet its outputs differ between trials beyond the
	// comparison's tolerance: not degenerate. (Its reference was 1 + 1e-4
	// tanh(x), which the constant 1 passes within tolerance: now 1e-3.)
	{"nearly_constant_not_degenerate", "ref_nearly_constant.py", "nearly_constant_honest.py", "", VerdictPass, "", "", false},
	// Zero up to rounding (level-2 41's GroupNorm, mean over channels,
	// ReLU): degenerate by tolerance, not by bits (issue 32). The honest
	// candidate's rounding fails the relative norm against the reference's
	// (was `incorrect`); the trials it cut short run the reference alone.
	{"degenerate_within_tolerance", "ref_degenerate_groupnorm_mean.py", "groupnorm_mean_manual.py", "", VerdictReferenceError, "degenerate_reference", "within the comparison's tolerance", false},
	// Both models in the mode they were built in (issue 32): training, as
	// KernelBench, so a BatchNorm uses its batch's statistics. Folding it
	// into running statistics was `pass` under the old eval(); now
	// `incorrect`, as in KernelBench.
	{"batchnorm_batch_statistics", "ref_batchnorm.py", "batchnorm_batch_stats.py", "", VerdictPass, "", "", false},
	{"batchnorm_folded_running_stats", "ref_batchnorm.py", "batchnorm_folded_running.py", "", VerdictIncorrect, "allclose", "", false},
	// KernelBench level-1 87 with a legacy-constructor weight: the judge
	// builds the reference as the evaluation does (its re-check passes).
	{"legacy_constructor_weight", "ref_conv_pointwise.py", "conv_pointwise_legacy.py", "", VerdictPass, "", "", false},
	// Blame where it belongs (issue 32): a candidate that breaks what the
	// reference's inputs are made with owns the failure of the next
	// get_inputs() (level-2 85 got reference_error, reference_inputs).
	{"candidate_breaks_generator", "ref_nearly_constant.py", "breaks_generator.py", "", VerdictRuntimeError, "run_candidate", "before the candidate was imported", false},
	// The same, with the harness's blame rewritten from inside: still the candidate's.
	{"candidate_breaks_generator_and_blame", "ref_nearly_constant.py", "breaks_generator_patches_blame.py", "", VerdictRuntimeError, "run_candidate", "before the candidate was imported", false},
	{"candidate_patches_randn", "ref_nearly_constant.py", "patches_randn.py", "", VerdictIntegrityViolation, "reference_tampered", "randn", false},
	// Policies named by their rule (issue 32): a faster plain-torch rewrite
	// passes run_kernel's default, noted as having no kernel of its own;
	// KernelBench's rule (kernelbench run's default) fails it.
	{"plain_torch_rewrite_default_policy", "ref_rms_norm.py", "rms_norm_plain_torch.py", "", VerdictPass, "", "no kernel of its own", false},
	{"plain_torch_rewrite_kernelbench_policy", "ref_rms_norm.py", "rms_norm_plain_torch.py", KernelPolicyKernelBench, VerdictIntegrityViolation, "no_own_kernel", "plain torch or library calls only", false},
	// Level-1 12's load_inline that can never build (functions= with an
	// empty cpp_sources) and its torch fallback: was `pass` at 47x with
	// nothing said; now the build's failure is named (default: a note),
	// and KernelBench's rule fails it.
	{"inline_never_builds_default_policy", "ref_rms_norm.py", "rms_norm_inline_never_builds.py", "", VerdictPass, "", "after its build failed: cpp_extension.load_inline(name='kv_rms_never_builds')", true},
	{"inline_never_builds_kernelbench_policy", "ref_rms_norm.py", "rms_norm_inline_never_builds.py", KernelPolicyKernelBench, VerdictIntegrityViolation, "no_own_kernel", "its build failed (cpp_extension.load_inline(name='kv_rms_never_builds'): Error building extension", true},
	// Own kernels under KernelBench's rule: library calls beside them pass.
	{"library_gemm_fused_c_epilogue_kernelbench_policy", "ref_gemm_epilogue.py", "gemm_fused_c_epilogue.py", KernelPolicyKernelBench, VerdictPass, "reference_ops", "library calls beside its own kernels", false},
	// The reference itself as the candidate: passes every trial, same verdict.
	{"degenerate_within_tolerance_as_candidate", "ref_degenerate_groupnorm_mean.py", "rename:ref_degenerate_groupnorm_mean.py", "", VerdictReferenceError, "degenerate_reference", "within tolerance of the constant", false},
	// A random reference (a Dropout in training mode, as built): its own
	// code as the candidate, and a candidate without the Dropout, both
	// fail a trial; the reference called twice on those inputs differs
	// from itself, so the failure is the reference's. (A wrong candidate
	// of a deterministic reference stays incorrect:
	// batchnorm_folded_running_stats.)
	{"random_reference_as_candidate", "ref_random_dropout.py", "rename:ref_random_dropout.py", "", VerdictReferenceError, "nondeterministic_reference", "called twice on the same inputs", false},
	{"random_reference_dropout_left_out", "ref_random_dropout.py", "dropout_left_out.py", "", VerdictReferenceError, "nondeterministic_reference", "a Dropout in training mode", false},
}

func TestFidelityVerdicts(t *testing.T) {
	if gpuMode() {
		t.Skip("CPU candidates (the kevolve C loader, C++ load_inline)")
	}
	ev := evaluator(t)
	for _, tc := range fidelityCases {
		t.Run(tc.name, func(t *testing.T) {
			if tc.slow && testing.Short() {
				t.Skip("load_inline build")
			}
			hc := hostileCase{cand: tc.cand}
			res, err := ev.EvaluateRequest(context.Background(), EvalRequest{Reference: Source{Code: readTestdata(t, tc.ref)},
				Candidate: Source{Code: hc.candidateSource(t)}, Target: "cpu", Timeout: 300 * time.Second, KernelPolicy: tc.policy}, nil)
			if err != nil {
				t.Fatalf("Evaluate: %v", err)
			}
			if res.Verdict != tc.want {
				t.Fatalf("verdict %q, want %q\n%s", res.Verdict, tc.want, dump(res))
			}
			if tc.want != VerdictPass {
				d, ok := failedCheck(res, tc.check)
				if !ok || !strings.Contains(d, tc.note) {
					t.Fatalf("no failed check %q with %q\n%s", tc.check, tc.note, dump(res))
				}
				t.Logf("%s: %s", tc.check, d)
				return
			}
			notes := strings.Join(res.Notes, "\n")
			if !strings.Contains(notes, tc.note) {
				t.Fatalf("notes %q lack %q", res.Notes, tc.note)
			}
			if strings.Contains(tc.note, "library calls") && !strings.Contains(notes, "% of the wall time") {
				t.Errorf("the library note gives no share of the time: %q", res.Notes)
			}
			t.Logf("notes: %q", res.Notes)
		})
	}
}

// A reference whose output repeats one row mean across each row: an
// expanded view (stride 0) holds the right values but is not a tensor a
// caller can write or hand to a kernel expecting dense memory.
const refRowMean = `
import torch
import torch.nn as nn

class Model(nn.Module):
    def __init__(self):
        super().__init__()
    def forward(self, x):
        return x.mean(dim=1, keepdim=True).repeat(1, 256)

def get_inputs():
    return [torch.randn(64, 256)]

def get_init_inputs():
    return []
`

const refConv = `
import torch
import torch.nn as nn

class Model(nn.Module):
    def __init__(self):
        super().__init__()
    def forward(self, x):
        return torch.tanh(x) * 2.0

def get_inputs():
    return [torch.randn(4, 8, 16, 16)]

def get_init_inputs():
    return []
`

// Outputs in other layouts: dense ones pass with a note, expanded or
// gapped ones fail contiguity; values, shape and dtype are checked as ever.
func TestFidelityLayouts(t *testing.T) {
	ev := evaluator(t)
	cases := []struct {
		name, ref, cand string
		want, check     string
	}{
		{"transposed", refNormalize, candidate("", normBody+"        return (x / n).t().contiguous().t()"), VerdictPass, "another dense layout"},
		{"channels_last", refConv, candidate("", "        y = (2 * torch.sigmoid(2 * x) - 1) * 2.0\n        return y.contiguous(memory_format=torch.channels_last)"), VerdictPass, "another dense layout"},
		{"expanded_stride_0", refRowMean, candidate("", "        return (x.sum(dim=1, keepdim=True) / 256).expand(-1, 256)"), VerdictIncorrect, "expanded or overlapping"},
		{"gapped_slice", refNormalize, candidate("", normBody+"        y = torch.empty(64, 512, device=x.device)\n        y[:, ::2] = x / n\n        return y[:, ::2]"), VerdictIncorrect, "not dense"},
		{"transposed_wrong_values", refNormalize, candidate("", normBody+"        return (x / n * 1.01).t().contiguous().t()"), VerdictIncorrect, "outside atol"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			res, err := ev.EvaluateRequest(context.Background(), EvalRequest{Reference: Source{Code: tc.ref}, Candidate: Source{Code: tc.cand},
				Target: testTarget(), SkipTiming: true, Trials: 2}, nil)
			if err != nil {
				t.Fatal(err)
			}
			if res.Verdict != tc.want {
				t.Fatalf("verdict %s, want %s\n%s", res.Verdict, tc.want, dump(res))
			}
			if tc.want == VerdictPass {
				if !strings.Contains(strings.Join(res.Notes, "\n"), tc.check) {
					t.Fatalf("notes %q lack %q", res.Notes, tc.check)
				}
				return
			}
			name := "contiguity"
			if tc.check == "outside atol" {
				name = "allclose"
			}
			if d, ok := failedCheck(res, name); !ok || !strings.Contains(d, tc.check) {
				t.Fatalf("no failed %s check with %q\n%s", name, tc.check, dump(res))
			}
		})
	}
}

// The kernelbench-v0 tolerance profile: ours decides the verdict, the
// verdict under KernelBench v0's allclose (1e-2 for every dtype, no
// relative norm) is reported beside it, with the checks still run.
func TestFidelityToleranceProfile(t *testing.T) {
	ev := evaluator(t)
	cases := []struct {
		name, cand string
		want, v0   string
	}{
		// Off by 0.3% of each value: outside our fp32 1e-4, inside v0's 1e-2.
		{"within_v0_only", candidate("", normBody+"        return x / n * 1.003"), VerdictIncorrect, VerdictPass},
		{"exact", candidate("", normBody+"        return x / n"), VerdictPass, VerdictPass},
		{"wrong_for_both", candidate("", normBody+"        return x / n * 1.5"), VerdictIncorrect, VerdictIncorrect},
		// Caught by an integrity check under either rule.
		{"reference_called", candidate("", "        return F.normalize(x, dim=1) * 1.003"), VerdictIntegrityViolation, VerdictIntegrityViolation},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			res, err := ev.EvaluateRequest(context.Background(), EvalRequest{Reference: Source{Code: refNormalize}, Candidate: Source{Code: tc.cand},
				Target: testTarget(), Trials: 2, ToleranceRule: ToleranceKernelBenchV0, Timeout: 300 * time.Second}, nil)
			if err != nil {
				t.Fatal(err)
			}
			if res.Verdict != tc.want || res.VerdictKernelBenchV0 != tc.v0 {
				t.Fatalf("verdict %s (v0 %s), want %s (v0 %s)\n%s", res.Verdict, res.VerdictKernelBenchV0, tc.want, tc.v0, dump(res))
			}
			if tc.want == VerdictIncorrect && tc.v0 == VerdictPass {
				// The rest of the evaluation ran under v0's rule: timed, audited.
				if res.Candidate == nil {
					t.Errorf("no timing under the v0 rule")
				}
				if d, ok := failedCheck(res, "allclose"); !ok || !strings.Contains(d, "atol=0.0001") {
					t.Errorf("our allclose failure not reported: %q", d)
				}
			}
		})
	}
	// Without the profile there is no v0 verdict; an unknown one is the caller's error.
	if _, err := ev.EvaluateRequest(context.Background(), EvalRequest{Reference: Source{Code: refNormalize},
		Candidate: Source{Code: candidate("", normBody+"        return x / n")}, Target: testTarget(), ToleranceRule: "kernelbench-v9"}, nil); err == nil ||
		!strings.Contains(err.Error(), "tolerance") {
		t.Fatalf("unknown profile: %v", err)
	}
}
