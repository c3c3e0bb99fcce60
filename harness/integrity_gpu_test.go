package harness

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"
)

// GPU integrity cases (KEVOLVE_GPU=1): work hidden outside the measured
// stream by every launcher, the call-count trick with a custom kernel, and
// honest candidates of the same shapes that must still pass.
func TestIntegrityGPU(t *testing.T) {
	if !gpuMode() {
		t.Skip("KEVOLVE_GPU=1 not set")
	}
	ev := evaluator(t)
	cases := []struct {
		name, ref, cand string
		honest          bool
		// The verdicts a hostile candidate may get: never pass.
		allowed []string
	}{
		{"side_stream_cublas_mm_out", "gpu_ref_matmul_relu.py", "gpu_side_stream_mm.py", false, []string{VerdictIntegrityViolation}},
		{"call_count_custom_kernel", "gpu_ref_scale.py", "gpu_call_count_kernel.py", false, []string{VerdictIntegrityViolation}},
		{"kernel_from_python_thread", "gpu_ref_scale.py", "gpu_thread_launch.py", false, []string{VerdictIntegrityViolation, VerdictIncorrect}},
		{"cuda_graph_on_side_stream", "gpu_ref_scale.py", "gpu_graph_side_stream.py", false, []string{VerdictIntegrityViolation, VerdictIncorrect}},
		{"triton_on_side_stream", "gpu_ref_scale.py", "gpu_triton_side_stream.py", false, []string{VerdictIntegrityViolation, VerdictIncorrect}},
		{"raw_allocation_half_written", "gpu_ref_scale.py", "gpu_raw_alloc_partial.py", false, []string{VerdictIncorrect, VerdictIntegrityViolation}},
		{"honest_side_stream_ordered", "gpu_ref_matmul_relu.py", "gpu_side_stream_mm_honest.py", true, nil},
		{"honest_custom_kernel", "gpu_ref_scale.py", "gpu_kernel_honest.py", true, nil},
	}
	eval := func(t *testing.T, ref, cand string) *EvalResult {
		t.Helper()
		// One device, so each evaluation may run in the child the one before left.
		res, err := ev.EvaluateRequest(context.Background(), EvalRequest{Reference: Source{Code: readTestdata(t, ref)},
			Candidate: Source{Code: readTestdata(t, cand)}, Target: "nvidia", Device: "0", Timeout: 170 * time.Second,
			CompileReference: new(bool)}, nil)
		if err != nil {
			t.Fatalf("Evaluate: %v", err)
		}
		return res
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if !tc.honest {
				// An honest evaluation first leaves a clean child: the hostile
				// candidate then runs where earlier evaluations ran.
				if before := eval(t, "gpu_ref_scale.py", "gpu_kernel_honest.py"); before.Process == nil || !before.Process.Kept {
					t.Logf("the honest evaluation's child was not kept: %+v", before.Process)
				}
			}
			res := eval(t, tc.ref, tc.cand)
			if res.Process != nil {
				t.Logf("process: job %d in its child, kept %v %s", res.Process.Job, res.Process.Kept, res.Process.Why)
			}
			t.Logf("verdict %s stage %s wall %.2fs stages %v memory %s", res.Verdict, res.Stage, res.WallS, res.StageS, memLine(res.Memory))
			for _, c := range res.Checks {
				if !c.Passed || c.Name == "audit" || c.Name == "stream_work" {
					t.Logf("  check %s passed=%v: %s", c.Name, c.Passed, c.Detail)
				}
			}
			if res.Candidate != nil && res.RefEager != nil {
				t.Logf("  candidate median %.1f us, eager %.1f us", res.Candidate.MedianS*1e6, res.RefEager.MedianS*1e6)
			}
			if tc.honest {
				if res.Verdict != VerdictPass {
					t.Fatalf("honest candidate got %s\n%s", res.Verdict, dump(res))
				}
				return
			}
			ok := false
			for _, v := range tc.allowed {
				ok = ok || res.Verdict == v
			}
			if !ok {
				t.Fatalf("hostile candidate got %s, want one of %v\n%s", res.Verdict, tc.allowed, dump(res))
			}
		})
	}
}

func memLine(m *MemoryUse) string {
	if m == nil {
		return "none"
	}
	f := func(p *int64) string {
		if p == nil {
			return "null"
		}
		return fmt.Sprintf("%.1f MiB", float64(*p)/(1<<20))
	}
	return "reference " + f(m.ReferencePeakBytes) + ", candidate " + f(m.CandidatePeakBytes)
}

// The corpus's start kernels (CUDA and Triton) are honest: with audits,
// refreshed inputs and the stream check they must still pass on the GPU.
func TestIntegrityGPUCorpusStartKernels(t *testing.T) {
	if !gpuMode() {
		t.Skip("KEVOLVE_GPU=1 not set")
	}
	ev := evaluator(t)
	for _, s := range corpusStartKernels(t, "start_cuda.py", "start_triton.py") {
		checkStartKernel(t, ev, s, "nvidia", "")
	}
}

// corpusStartKernels lists the corpus's start kernels with these file
// names, sorted; KEVOLVE_START_ONLY=SUBSTRING narrows them.
func corpusStartKernels(t *testing.T, names ...string) []string {
	t.Helper()
	var starts []string
	for _, pat := range names {
		m, _ := filepath.Glob(filepath.Join("..", "corpus", "problems", "*", "*", pat))
		starts = append(starts, m...)
	}
	sort.Strings(starts)
	if len(starts) == 0 {
		t.Fatal("no corpus start kernels found")
	}
	if only := os.Getenv("KEVOLVE_START_ONLY"); only != "" {
		var keep []string
		for _, s := range starts {
			if strings.Contains(s, only) {
				keep = append(keep, s)
			}
		}
		starts = keep
	}
	return starts
}

// checkStartKernel evaluates a start kernel against its problem's
// reference, with the problem's tolerance, in a subtest that wants a pass.
func checkStartKernel(t *testing.T, ev *Evaluator, start, target, shapes string) {
	dir := filepath.Dir(start)
	name := strings.TrimPrefix(dir, filepath.Join("..", "corpus", "problems")+"/") + "/" + filepath.Base(start)
	t.Run(name, func(t *testing.T) {
		res, err := ev.EvaluateRequest(context.Background(), EvalRequest{Reference: Source{Path: filepath.Join(dir, "reference.py")},
			Candidate: Source{Path: start}, Target: target, Shapes: shapes, Timeout: 170 * time.Second, CompileReference: new(bool),
			Tolerance: metaTolerance(t, filepath.Join(dir, "meta.yaml"))}, nil)
		if err != nil {
			t.Fatalf("Evaluate: %v", err)
		}
		line := fmt.Sprintf("%s: %s wall %.2fs", name, res.Verdict, res.WallS)
		if res.Candidate != nil && res.RefEager != nil {
			line += fmt.Sprintf(" cand %.1fus eager %.1fus", res.Candidate.MedianS*1e6, res.RefEager.MedianS*1e6)
		}
		t.Log(line, " memory ", memLine(res.Memory))
		if res.Verdict != VerdictPass {
			for _, c := range res.Checks {
				if !c.Passed {
					t.Logf("  failed %s: %s", c.Name, c.Detail)
				}
			}
			t.Errorf("start kernel got %s", res.Verdict)
		}
	})
}

var toleranceLine = regexp.MustCompile(`(?m)^tolerance:\s*\{atol:\s*([0-9.eE+-]+),\s*rtol:\s*([0-9.eE+-]+)\}`)

// metaTolerance reads a corpus problem's declared tolerance (the resolver
// passes it in real runs; this test evaluates the files directly).
func metaTolerance(t *testing.T, path string) *Tolerance {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil
	}
	m := toleranceLine.FindSubmatch(b)
	if m == nil {
		return nil
	}
	atol, err1 := strconv.ParseFloat(string(m[1]), 64)
	rtol, err2 := strconv.ParseFloat(string(m[2]), 64)
	if err1 != nil || err2 != nil {
		t.Fatalf("%s: tolerance %q", path, m[0])
	}
	return &Tolerance{Atol: atol, Rtol: rtol}
}
