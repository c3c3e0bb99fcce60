package launch

import (
	"context"
	"fmt"

	"github.com/kevolve/kevolve-mcp/harness/target"
	"github.com/kevolve/kevolve-mcp/search"
	"github.com/kevolve/kevolve-mcp/search/operator"
)

// Record writes a new run without evaluating anything (paused, its root
// not yet run), for a request whose operator cannot run yet: the run to
// continue once it is fixed. Its target must be named (auto would need
// device discovery, which the check comes before).
func (l *Launcher) Record(ctx context.Context, req Request) (*search.Run, error) {
	t, err := target.Parse(req.Spec.Target)
	if err != nil {
		return nil, err
	}
	if t == target.Auto {
		return nil, fmt.Errorf("target auto: not recorded without discovery")
	}
	if l.Store == nil || l.Resolve == nil {
		return nil, errNoStore
	}
	spec, o := req.Spec, req.Start
	spec.Target = string(t)
	if o.Problem, o.StartCode, err = l.Resolve(ctx, spec); err != nil {
		return nil, err
	}
	ApplyDefaults(&o)
	op, err := operator.ByName(req.Operator)
	if err != nil {
		return nil, err
	}
	return NewEngine(l.Store, nil, op, l.Log, 0, nil).Create(ctx, o)
}

// SwitchOperator lets a resumed run change its operator within its kind
// (a new endpoint or model for openai:, another command for cmd:),
// recording the new one on the run; another kind is refused. It reports
// whether the operator changed.
func (l *Launcher) SwitchOperator(ctx context.Context, run *search.Run, name string) (bool, error) {
	if name == "" {
		name = "tuner"
	}
	if run.Operator == name {
		return false, nil
	}
	if operator.Kind(run.Operator) != operator.Kind(name) {
		return false, fmt.Errorf("run %s used operator %s: resume it with --operator %s (or another %s operator: a new endpoint or model)",
			run.ID, run.Operator, run.Operator, operator.Kind(run.Operator))
	}
	run.Operator = name
	return true, l.Store.UpdateRun(ctx, run)
}
