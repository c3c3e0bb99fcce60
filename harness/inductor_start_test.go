package harness

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// torchCompileCandidate compiles the reference with torch.compile at its
// first call: Inductor's kernels, but generated at run time from the
// reference, not carried in the candidate's source.
const torchCompileCandidate = `

class ModelNew(Model):
    def forward(self, *args):
        f = self.__dict__.get("_compiled")
        if f is None:
            f = self.__dict__["_compiled"] = torch.compile(super().forward)
        return f(*args)
`

// TestInductorStartIsOwnKernel: the model_starts job writes a problem's
// Inductor start (the code torch.compile generated for it, carried in the
// candidate); under KernelBench's rule it passes, its kernels counted as
// the candidate's own and the library GEMM beside them noted. A candidate
// that runs torch.compile on the reference itself gets no such credit.
func TestInductorStartIsOwnKernel(t *testing.T) {
	ev := evaluator(t)
	target := "cpu"
	if gpuMode() {
		target = "nvidia"
	}
	ref := readTestdata(t, "ref_gemm_epilogue.py")
	dir := t.TempDir()
	problem := filepath.Join(dir, "gemm_epilogue.py")
	if err := os.WriteFile(problem, []byte(ref), 0o644); err != nil {
		t.Fatal(err)
	}
	var res struct {
		Starts map[string]string `json:"starts"`
		Errors map[string]string `json:"errors"`
	}
	if err := ev.ModelJob(context.Background(), ModelJobRequest{Module: "model_starts", Target: target,
		Args: map[string]any{"problems": []string{problem}, "out_dir": dir}}, &res); err != nil {
		t.Fatal(err)
	}
	if res.Starts[problem] == "" {
		t.Fatalf("no Inductor start: %v", res.Errors)
	}
	start, err := os.ReadFile(res.Starts[problem])
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(start), "TUNABLES") || !strings.Contains(string(start), "class ModelNew") {
		t.Fatalf("the start is not a tunable candidate:\n%s", start)
	}
	for _, c := range []struct {
		name, cand string
		verdict    string
		check      string
	}{
		{"inductor_start", string(start), VerdictPass, ""},
		{"torch_compile_at_run_time", ref + torchCompileCandidate, VerdictIntegrityViolation, "no_own_kernel"},
	} {
		t.Run(c.name, func(t *testing.T) {
			r, err := ev.EvaluateRequest(context.Background(), EvalRequest{Reference: Source{Code: ref}, Candidate: Source{Code: c.cand},
				Target: target, Timeout: 300 * time.Second, KernelPolicy: KernelPolicyKernelBench}, nil)
			if err != nil {
				t.Fatal(err)
			}
			if r.Verdict != c.verdict {
				t.Fatalf("verdict %q, want %q\n%s", r.Verdict, c.verdict, dump(r))
			}
			if c.check != "" {
				if _, ok := failedCheck(r, c.check); !ok {
					t.Fatalf("no failed check %q\n%s", c.check, dump(r))
				}
				return
			}
			if notes := strings.Join(r.Notes, "\n"); !strings.Contains(notes, "library calls beside its own kernels") {
				t.Errorf("the start's library GEMM is not noted beside its own kernels: %q", r.Notes)
			}
		})
	}
}
