package report

import (
	"fmt"
	"math/rand"
	"strings"
	"time"
)

func fp(v float64) *float64 { return &v }

// startKernel is a Triton RMSNorm-like start kernel with tunables; the
// synthetic run's nodes rewrite its tunables and now and then a line.
const startKernel = `import torch
import triton
import triton.language as tl

TUNABLES = {"BLOCK": [256, 512, 1024, 2048], "NUM_WARPS": [2, 4, 8, 16]}
BLOCK = 1024
NUM_WARPS = 4


@triton.jit
def rmsnorm_kernel(x_ptr, w_ptr, y_ptr, n_cols, eps, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    offs = tl.arange(0, BLOCK)
    mask = offs < n_cols
    x = tl.load(x_ptr + row * n_cols + offs, mask=mask, other=0.0).to(tl.float32)
    var = tl.sum(x * x, axis=0) / n_cols
    rstd = 1.0 / tl.sqrt(var + eps)
    w = tl.load(w_ptr + offs, mask=mask, other=0.0)
    tl.store(y_ptr + row * n_cols + offs, (x * rstd * w).to(y_ptr.dtype.element_ty), mask=mask)


class ModelNew(torch.nn.Module):
    def __init__(self, dim, eps=1e-6):
        super().__init__()
        self.weight = torch.nn.Parameter(torch.ones(dim))
        self.eps = eps

    def forward(self, x):
        y = torch.empty_like(x)
        rmsnorm_kernel[(x.shape[0],)](x, self.weight, y, x.shape[1], self.eps, BLOCK=BLOCK, num_warps=NUM_WARPS)
        return y
`

// synthRun is a deterministic run of n nodes: a start node, a draft phase
// of children of the root, then expansions of good nodes, with a mix of
// verdicts (pass, incorrect, compile_error, integrity_violation, timeout,
// and one pending node at the end).
func synthRun(n int, seed int64) (Run, []Node, Ceilings) {
	rng := rand.New(rand.NewSource(seed))
	t0 := time.Date(2026, 11, 22, 12, 0, 0, 0, time.UTC)
	run := Run{
		ID: "r-7f3a", Problem: "llm/rmsnorm", Target: "cuda:sm_90", Device: "NVIDIA H100 80GB HBM3",
		Policy: "evolve", Operator: "tuner", Baseline: "eager", Status: "done",
		BudgetEvals: n + 10, StartedAt: t0, TSolS: fp(21e-6),
	}
	const flops, bytes = 5 * 8192 * 4096.0, 2 * 2 * 8192 * 4096.0
	eagerS := 180e-6
	ceil := Ceilings{PeakFLOPS: map[string]float64{"bf16": 770e12, "fp32": 60e12}, MemBandwidth: 3.0e12, Dtype: "bf16", Source: "measured"}
	var nodes []Node
	t := t0
	evals := 0
	mk := func(id int, parent int, code string, verdict string, speed float64) Node {
		t = t.Add(time.Duration(5+rng.Intn(20)) * time.Second)
		nd := Node{ID: fmt.Sprint(id), Code: code, Language: "triton", Operator: "tuner", CreatedAt: t, Verdict: verdict}
		if parent >= 0 {
			nd.Parents = []string{fmt.Sprint(parent)}
		} else {
			nd.Operator = "start"
		}
		if verdict != "" {
			nd.FinishedAt = t.Add(time.Duration(2+rng.Intn(4)) * time.Second)
			nd.Cost = Cost{EvalS: 1 + rng.Float64()*2}
			evals++
			nd.EvalSeq = evals
		}
		nd.Island = id % 4
		nd.FLOPs, nd.Bytes, nd.TSolS = flops, bytes, fp(21e-6)
		nd.Checks = []Check{{"shape_dtype", true, ""}, {"allclose", true, "max abs err 3.1e-3 (tol 1.6e-2)"}, {"nan_inf", true, ""}, {"op_trace", true, "no reference ops"}, {"stream_work", true, ""}}
		switch verdict {
		case "pass":
			med := eagerS / speed
			nd.Timing = &Timing{MedianS: med, P10S: med * 0.97, P90S: med * 1.05, CV: 0.02 + rng.Float64()*0.03, Iters: 200}
			nd.SpeedupEager = fp(speed)
			nd.SpeedupCompile = fp(speed / 1.35)
			nd.SpeedupStart = fp(speed / 1.1)
			nd.Fitness = speed
			nd.PctOfSol = fp(100 * 21e-6 / med)
			nd.SolScore = fp(0.5 + 0.5*(1-med/eagerS)/(1-21e-6/eagerS))
			nd.Diagnosis = fmt.Sprintf("memory-bound: %.0f%% of peak DRAM bandwidth; one row per program leaves SMs idle for short rows", 100*bytes/med/3.0e12)
		case "incorrect":
			nd.Checks[1] = Check{"allclose", false, "max abs err 0.41 at [17, 2048] (tol 1.6e-2)"}
			nd.Message = "output mismatch: 0.9% of elements outside tolerance"
		case "compile_error":
			nd.Checks = nil
			nd.Message = "triton.compiler.errors.CompilationError: at 12:4: BLOCK must be a power of 2"
		case "integrity_violation":
			nd.Checks[3] = Check{"op_trace", false, "calls aten::rms_norm (the reference's op)"}
			nd.Message = "the candidate called the reference's ops"
			med := 30e-6
			nd.Timing = &Timing{MedianS: med, P10S: med, P90S: med * 1.1, CV: 0.03}
		case "timeout":
			nd.Checks = nil
			nd.Message = "evaluation exceeded 120 s"
		case "":
			nd.Checks = nil
		}
		return nd
	}
	nodes = append(nodes, mk(0, -1, startKernel, "pass", 1.1))
	speedOf := map[int]float64{0: 1.1}
	verdicts := []string{"pass", "pass", "pass", "pass", "incorrect", "pass", "compile_error", "pass", "integrity_violation", "pass", "timeout", "pass"}
	blocks := []int{256, 512, 1024, 2048}
	warps := []int{2, 4, 8, 16}
	for id := 1; id < n; id++ {
		parent := 0
		if id > 6 { // after the draft phase, expand one of the better nodes
			var good []int
			for k, s := range speedOf {
				if s > 1.2 {
					good = append(good, k)
				}
			}
			if len(good) == 0 {
				good = []int{0}
			}
			// Map iteration is random: sort for determinism.
			sortInts(good)
			parent = good[rng.Intn(len(good))]
		}
		pcode := nodes[parent].Code
		code := strings.Replace(pcode, fmt.Sprintf("BLOCK = %d", blockOf(pcode)), fmt.Sprintf("BLOCK = %d", blocks[rng.Intn(4)]), 1)
		code = strings.Replace(code, fmt.Sprintf("NUM_WARPS = %d", warpsOf(code)), fmt.Sprintf("NUM_WARPS = %d", warps[rng.Intn(4)]), 1)
		v := verdicts[rng.Intn(len(verdicts))]
		switch id {
		case 3:
			v = "incorrect"
		case 5:
			v = "compile_error"
		case 9:
			v = "integrity_violation"
		case n - 1:
			v = "" // in flight
		}
		if v == "integrity_violation" {
			code = strings.Replace(code, "        y = torch.empty_like(x)\n", "        return torch.nn.functional.rms_norm(x, x.shape[-1:], self.weight, self.eps)\n", 1)
		}
		speed := speedOf[parent] * (0.85 + rng.Float64()*0.35)
		nd := mk(id, parent, code, v, speed)
		if v == "pass" {
			speedOf[id] = speed
		}
		nodes = append(nodes, nd)
	}
	return run, nodes, ceil
}

func blockOf(code string) int {
	var b int
	for _, l := range strings.Split(code, "\n") {
		if _, err := fmt.Sscanf(l, "BLOCK = %d", &b); err == nil {
			return b
		}
	}
	return 0
}

func warpsOf(code string) int {
	var b int
	for _, l := range strings.Split(code, "\n") {
		if _, err := fmt.Sscanf(l, "NUM_WARPS = %d", &b); err == nil {
			return b
		}
	}
	return 0
}

func sortInts(a []int) {
	for i := 1; i < len(a); i++ {
		for j := i; j > 0 && a[j] < a[j-1]; j-- {
			a[j], a[j-1] = a[j-1], a[j]
		}
	}
}
