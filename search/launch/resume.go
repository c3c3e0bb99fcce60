package launch

import (
	"context"

	"github.com/kevolve/kevolve-mcp/search"
)

// PrepareResume assembles the evaluator and operator to continue run: the
// same parts as Prepare, built for the run's recorded problem and devices
// (its own nodes are not offered back to it as memory).
func (l *Launcher) PrepareResume(ctx context.Context, run *search.Run, req Request) (*Prepared, error) {
	p := &Prepared{req: req, l: l}
	if err := p.evaluator(ctx); err != nil {
		return nil, err
	}
	p.Start.Problem, p.Start.Devices, p.Start.RunID = run.Problem, run.Devices, run.ID
	return p, p.operator(ctx, run.ID)
}
