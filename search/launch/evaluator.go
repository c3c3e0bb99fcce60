package launch

import (
	"context"
	"fmt"
	"time"

	"github.com/kevolve/kevolve-mcp/harness"
	"github.com/kevolve/kevolve-mcp/harness/sol"
	"github.com/kevolve/kevolve-mcp/search/harnesseval"
)

// EvalSettings are what a request may set on its evaluations.
type EvalSettings struct {
	// Timeout per evaluation (0 = the harness's default).
	Timeout time.Duration
	// KernelPolicy is the harness's reference_ops policy ("" = default).
	KernelPolicy string
	// Calibrate lets an uncalibrated CPU be measured once (quick) so the
	// run gets speed-of-light figures.
	Calibrate bool
}

// NewAdapter is a request's harness evaluation adapter: the in-process
// evaluator's and a fleet worker's.
func NewAdapter(ev *harness.Evaluator, ceil *sol.Ceilings, s EvalSettings) *harnesseval.Adapter {
	return harnesseval.New(ev, ceil, s.Timeout, s.KernelPolicy)
}

// NewEvaluator builds the in-process evaluator for s, with the device's
// ceilings when it has them (a run without them is still a run: the note
// says why its report has no SOL figures).
func (l *Launcher) NewEvaluator(ctx context.Context, s EvalSettings) (*harnesseval.Adapter, error) {
	if err := harness.CheckKernelPolicy(s.KernelPolicy); err != nil {
		return nil, err
	}
	if l.Harness == nil {
		return nil, fmt.Errorf("no evaluation service in this process")
	}
	ev, err := l.Harness()
	if err != nil {
		return nil, err
	}
	return NewAdapter(ev, l.ceilings(ctx, s.Calibrate), s), nil
}

// ceilings asks the host for the device's ceilings; nil (with a note) when
// it has none.
func (l *Launcher) ceilings(ctx context.Context, calibrate bool) *sol.Ceilings {
	if l.Ceilings == nil {
		return nil
	}
	c, err := l.Ceilings(ctx, calibrate)
	if err != nil {
		l.note("no speed-of-light figures: %v", err)
		return nil
	}
	if c.Provisional {
		l.note("speed-of-light figures: %s", sol.ProvisionalNote)
	}
	return c
}
