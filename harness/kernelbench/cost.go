package kernelbench

import (
	"context"

	"github.com/kevolve/kevolve-mcp/harness"
)

// CostReader is an Evaluator that remembers what earlier evaluations of a
// pair took (the harness's eval_cost table); a sweep starts the costliest
// first by it.
type CostReader interface {
	StoredCost(ctx context.Context, refCode, candCode, target string) (harness.Cost, bool)
}

// StoredCost is the harness's measured cost of a pair.
func (h HarnessEvaluator) StoredCost(ctx context.Context, refCode, candCode, target string) (harness.Cost, bool) {
	return h.Ev.StoredCost(ctx, refCode, candCode, target)
}

// measuredCost reads the sweep's stored costs, nil where its evaluator
// keeps none. A pair's cost is its build and device seconds: the work
// that sets when it ends.
func (s *sweep) measuredCost(ctx context.Context) costFunc {
	cr, ok := s.ev.(CostReader)
	if !ok {
		return nil
	}
	return func(_ Pair, ref, cand string) (float64, bool) {
		c, ok := cr.StoredCost(ctx, ref, cand, s.opt.Target)
		return c.BuildS + c.DeviceS, ok
	}
}
