package kernelbench

import (
	"context"

	"github.com/kevolve/kevolve-mcp/harness"
)

var _ harness.CostReader = HarnessEvaluator{}

// StoredCost is the harness's measured cost of a pair.
func (h HarnessEvaluator) StoredCost(ctx context.Context, refCode, candCode, target string) (harness.Cost, bool) {
	return h.Ev.StoredCost(ctx, refCode, candCode, target)
}

// costReader is the sweep's evaluator as a reader of stored costs (the
// harness's eval_cost table), nil where it keeps none: the sweep starts the
// costliest pairs first by it.
func (s *sweep) costReader() harness.CostReader {
	cr, _ := s.ev.(harness.CostReader)
	return cr
}
