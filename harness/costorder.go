package harness

import (
	"context"
	"sort"
	"strings"
)

// Work that runs on several workers at once (a kernelbench sweep's jobs, a
// suite's turns, the fleet's queue) ends when its last piece does. Started
// in arrival order, a candidate that compiles for a minute before its first
// call (CUDA-L1's level 2 problem 91 runs torch.compile with max-autotune:
// 95 s on the H100 box) came last and ran alone for its last minute, the
// device and 15 of 16 cores idle. Starting the pieces expected to take
// longest first (longest processing time first) puts such work in the first
// wave, beside everything else. Every scheduler ranks by OrderCost, so the
// same pair ranks the same way wherever it is scheduled.

// costWords are what a candidate's source says about the work before its
// first timed call: the compile it will run and a rough weight. The
// weights only order work never measured.
var costWords = []struct {
	word   string
	weight int
}{
	{"max-autotune", 8},  // torch.compile benchmarking many kernels
	{"torch.compile", 4}, // dynamo and inductor at the first call
	{"torch._dynamo", 4},
	{"load_inline", 2}, // a torch extension: host compiler and nvcc
	{"cpp_extension", 2},
	{"triton", 1}, // a JIT at the first call
	{"cupy", 1},
	{"kevolve import load", 1}, // NVRTC at the first call
}

// ExpectedCost is the weight of the slowest compile a candidate's source
// names (0 for plain torch).
func ExpectedCost(code string) int {
	c := 0
	for _, w := range costWords {
		if w.weight > c && strings.Contains(code, w.word) {
			c = w.weight
		}
	}
	return c
}

// WordSeconds turns a word weight into seconds, to rank a pair never
// measured beside measured ones: load_inline (2) about 20 s of build,
// max-autotune (8) about 80 s (95 s measured on the H100 box).
const WordSeconds = 10

// OrderCost is the seconds a pair is expected to take, to order work by:
// the build and device seconds of its latest evaluation on target where cr
// (nil: none) kept them, the work that sets when it ends; else what the
// candidate's words say.
func OrderCost(ctx context.Context, cr CostReader, refCode, candCode, target string) float64 {
	if cr != nil {
		if c, ok := cr.StoredCost(ctx, refCode, candCode, target); ok {
			return c.BuildS + c.DeviceS
		}
	}
	return float64(WordSeconds * ExpectedCost(candCode))
}

// CostliestFirst returns the indices of cost in the order to start their
// work: highest cost first, in their own order among equals (so work
// of unknown and equal cost keeps the order its scheduler gave it).
func CostliestFirst(cost []float64) []int {
	order := make([]int, len(cost))
	for i := range order {
		order[i] = i
	}
	sort.SliceStable(order, func(a, b int) bool { return cost[order[a]] > cost[order[b]] })
	return order
}
