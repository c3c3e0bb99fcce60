package harness

import (
	"context"
	"fmt"
	"os"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// A compute-bound problem (bf16 GEMM, ~0.2 ms on an H200): one GPU's worth
// of work per evaluation, so throughput scales only if evaluations really
// run on different GPUs at once.
const refGemm = `
import torch
import torch.nn as nn

class Model(nn.Module):
    def __init__(self):
        super().__init__()
    def forward(self, a, b):
        return torch.relu(a @ b)

def get_inputs():
    return [torch.randn(4096, 4096, dtype=torch.bfloat16), torch.randn(4096, 4096, dtype=torch.bfloat16)]

def get_init_inputs():
    return []
`

// candGemm differs by a comment per evaluation so nothing is cached.
func candGemm(i int) string {
	return fmt.Sprintf(`# evaluation %d
import torch
import torch.nn as nn

class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
    def forward(self, a, b):
        return torch.clamp_min(torch.einsum("ik,kj->ij", a, b), 0)
`, i)
}

// TestMultiGPUThroughput runs the same 96 evaluations on one GPU and on
// every visible GPU and reports evaluations per hour and each child's CV.
// Acceptance (issue 10): >= 1.8x on 2 GPUs, >= 3.5x on 4, every CV <= 1%.
//
//	KEVOLVE_GPU=1 go test -tags sqlite_fts5 -run TestMultiGPUThroughput -v ./harness/
func TestMultiGPUThroughput(t *testing.T) {
	if !gpuMode() {
		t.Skip("needs KEVOLVE_GPU=1 (and 2+ GPUs)")
	}
	py := testPython(t)
	ctx := context.Background()
	ev, err := NewEvaluator(EvalConfig{Python: py, CacheDir: t.TempDir(), Logger: quietLogger()})
	if err != nil {
		t.Fatal(err)
	}
	defer ev.Close()
	devs, err := ev.Devices(ctx, "nvidia")
	if err != nil {
		t.Fatal(err)
	}
	if len(devs) < 2 {
		t.Skipf("one GPU visible (%d): nothing to scale over", len(devs))
	}
	// Enough evaluations that the first wave's start (every child creating
	// its CUDA context at once) is a small part of the run, as in a search:
	// with children kept between evaluations, 48 took under 5 s on two
	// H200s, a third of it the first wave.
	n := 96
	if v, err := strconv.Atoi(os.Getenv("KEVOLVE_MULTIGPU_EVALS")); err == nil && v > 0 {
		n = v
	}
	noCompile := false
	run := func(label, device string, offset int) (time.Duration, []Result) {
		results := make([]Result, n)
		var wg sync.WaitGroup
		t0 := time.Now()
		for i := 0; i < n; i++ {
			wg.Add(1)
			go func(i int) {
				defer wg.Done()
				r, err := ev.Evaluate(ctx, Problem{Reference: Source{Code: refGemm}}, Candidate{Code: candGemm(offset + i)}, nil,
					Options{Target: "nvidia", Device: device, Trials: 2, CompileReference: &noCompile})
				if err != nil {
					t.Errorf("%s evaluation %d: %v", label, i, err)
				}
				results[i] = r
			}(i)
		}
		wg.Wait()
		return time.Since(t0), results
	}
	// Warm every device (CUDA context, cuBLAS handles, the parent's imports).
	for _, d := range devs {
		if _, err := ev.Evaluate(ctx, Problem{Reference: Source{Code: refGemm}}, Candidate{Code: candGemm(-1 - d.Index)}, nil,
			Options{Target: "nvidia", Device: fmt.Sprint(d.Index), Trials: 1, CompileReference: &noCompile}); err != nil {
			t.Fatal(err)
		}
	}
	one, r1 := run("1 GPU", fmt.Sprint(devs[0].Index), 0)
	all, rN := run(fmt.Sprintf("%d GPUs", len(devs)), "", 1000)
	perHour := func(d time.Duration) float64 { return float64(n) / d.Hours() }
	ratio := perHour(all) / perHour(one)
	t.Logf("1 GPU: %d evaluations in %.1f s = %.0f/h; %d GPUs: %.1f s = %.0f/h; ratio %.2fx",
		n, one.Seconds(), perHour(one), len(devs), all.Seconds(), perHour(all), ratio)
	for label, rs := range map[string][]Result{"1gpu": r1, "all": rN} {
		used := map[int]int{}
		var cvs []string
		for i, r := range rs {
			used[r.DeviceIndex]++
			if r.Candidate == nil {
				t.Errorf("%s evaluation %d was not timed: %s %+v", label, i, r.Verdict, r.Checks)
				continue
			}
			cvs = append(cvs, fmt.Sprintf("%.2f%%", r.Candidate.CV*100))
			if r.Candidate.CV > 0.01 {
				t.Errorf("%s evaluation %d on device %d: CV %.2f%% > 1%%: it did not run alone on its GPU", label, i, r.DeviceIndex, r.Candidate.CV*100)
			}
		}
		sort.Strings(cvs)
		t.Logf("%s: evaluations per device %v; candidate CVs %s", label, used, strings.Join(cvs, " "))
		reused, dropped := 0, map[string]int{}
		for _, r := range rs {
			if r.Process != nil && r.Process.Job > 1 {
				reused++
			}
			if r.Process != nil && !r.Process.Kept {
				dropped[r.Process.Why]++
			}
		}
		t.Logf("%s: %d of %d evaluations ran in a reused child; children not kept, by reason: %v", label, reused, len(rs), dropped)
		t.Logf("%s: median wall %.2f s; median stage seconds %s", label, medianOf(rs, func(r Result) float64 { return r.WallS }), stageMedians(rs))
		if label == "all" && len(used) != len(devs) {
			t.Errorf("evaluations used %d of %d GPUs", len(used), len(devs))
		}
	}
	if want := 0.875 * float64(len(devs)); ratio < want {
		t.Errorf("throughput ratio %.2fx on %d GPUs, want >= %.2fx", ratio, len(devs), want)
	}
	if os.Getenv("KEVOLVE_BENCH_OUT") != "" {
		_ = os.WriteFile(os.Getenv("KEVOLVE_BENCH_OUT"), []byte(fmt.Sprintf("gpus %d one_s %.2f all_s %.2f ratio %.3f\n", len(devs), one.Seconds(), all.Seconds(), ratio)), 0o644)
	}
}

// medianOf is the median of f over the results.
func medianOf(rs []Result, f func(Result) float64) float64 {
	xs := make([]float64, 0, len(rs))
	for _, r := range rs {
		xs = append(xs, f(r))
	}
	return benchMedian(xs)
}

// stageMedians says where the evaluations spent their time, stage by stage.
func stageMedians(rs []Result) string {
	names := map[string]bool{}
	for _, r := range rs {
		for k := range r.StageS {
			names[k] = true
		}
	}
	var keys []string
	for k := range names {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var b strings.Builder
	for _, k := range keys {
		fmt.Fprintf(&b, "%s %.3f ", k, medianOf(rs, func(r Result) float64 { return r.StageS[k] }))
	}
	return b.String()
}
