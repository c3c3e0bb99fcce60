package kernelbench

import (
	"os"
	"sort"
	"strings"
)

// A sweep's makespan is set by its last evaluation to finish. Started in
// the problems' order, a candidate that compiles for a minute before its
// first call (CUDA-L1's level 2 problem 91 runs torch.compile with
// max-autotune: 95 s on the H100 box) came last and ran alone for its last
// minute, the device and 15 of 16 cores idle. Starting the pairs expected
// to take longest first (longest processing time first) puts such work in
// the first wave, beside everything else.

// costWords are what a candidate's source says about the work before its
// first timed call: the compile it will run and a rough weight. The
// weights only order the pairs.
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

// expectedCost is the weight of the slowest compile a candidate's source
// names (0 for plain torch).
func expectedCost(code string) int {
	c := 0
	for _, w := range costWords {
		if w.weight > c && strings.Contains(code, w.word) {
			c = w.weight
		}
	}
	return c
}

// wordSeconds turns a word weight into seconds, to rank a pair never
// measured beside measured ones: load_inline (2) about 20 s of build,
// max-autotune (8) about 80 s (95 s measured on the H100 box).
const wordSeconds = 10

// costFunc is a pair's measured cost in seconds (build and device time of
// its latest evaluation); ok is false for a pair never measured.
type costFunc func(p Pair, ref, cand string) (seconds float64, ok bool)

// dispatchOrder returns the indices of pairs in the order to start them:
// by cost, highest first, and in their own order among equals. A pair's
// cost is what its last evaluation took where measured is given and knows
// it, else what its source's words say. A candidate file that cannot be
// read counts as 0 (its evaluation reports why).
func dispatchOrder(pairs []Pair, measured costFunc) []int {
	cost := make([]float64, len(pairs))
	order := make([]int, len(pairs))
	for i, p := range pairs {
		order[i] = i
		cost[i] = pairCost(p, measured)
	}
	sort.SliceStable(order, func(a, b int) bool { return cost[order[a]] > cost[order[b]] })
	return order
}

func pairCost(p Pair, measured costFunc) float64 {
	code := p.Code
	if p.CandidatePath != "" {
		if b, err := os.ReadFile(p.CandidatePath); err == nil {
			code = string(b)
		}
	}
	if measured != nil {
		ref, _ := os.ReadFile(p.Problem.Path)
		if s, ok := measured(p, string(ref), code); ok {
			return s
		}
	}
	return float64(wordSeconds * expectedCost(code))
}
