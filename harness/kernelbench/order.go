package kernelbench

import (
	"context"
	"os"

	"github.com/kevolve/kevolve-mcp/harness"
)

// A sweep's makespan is set by its last evaluation to finish: it starts the
// pairs expected to take longest first (harness.CostliestFirst, by
// harness.OrderCost), the same ranking a suite and the fleet use.

// dispatchOrder returns the indices of pairs in the order to start them:
// by cost, highest first, and in their own order among equals. A pair's
// cost is what its last evaluation on target took where cr (nil: none)
// kept it, else what its source's words say. A candidate file that cannot
// be read counts as 0 (its evaluation reports why).
func dispatchOrder(ctx context.Context, pairs []Pair, cr harness.CostReader, target string) []int {
	cost := make([]float64, len(pairs))
	for i, p := range pairs {
		cost[i] = pairCost(ctx, p, cr, target)
	}
	return harness.CostliestFirst(cost)
}

// pairCost reads the pair's programs as the harness will (the keys of its
// stored cost are their contents) and ranks them.
func pairCost(ctx context.Context, p Pair, cr harness.CostReader, target string) float64 {
	code := p.Code
	if p.CandidatePath != "" {
		if b, err := os.ReadFile(p.CandidatePath); err == nil {
			code = string(b)
		}
	}
	var ref []byte
	if cr != nil {
		ref, _ = os.ReadFile(p.Problem.Path) // unreadable: no stored cost, words alone
	}
	return harness.OrderCost(ctx, cr, string(ref), code, target)
}
