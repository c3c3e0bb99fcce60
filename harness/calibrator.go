package harness

import (
	"context"

	"github.com/kevolve/kevolve-mcp/harness/sol"
)

// Calibrator is the first-use calibrator of the evaluator's database (nil
// without one): the CPU's ceilings are measured the first time a bound
// needs them, holding the CPU alone (an exclusive lease) so no timed
// evaluation runs beside the benchmark.
func (e *Evaluator) Calibrator() *sol.FirstUse {
	if e.cfg.DB == nil {
		return nil
	}
	return sol.FirstUseOf(e.cfg.DB, e.cfg.Python, func(ctx context.Context) (func(), error) {
		l, err := e.Acquire(ctx, "cpu", "", true)
		if err != nil {
			return nil, err
		}
		return l.Release, nil
	})
}
