package optimize

import (
	"cmp"
	"context"
	"fmt"

	"github.com/kevolve/kevolve-mcp/harness/target"
	"github.com/kevolve/kevolve-mcp/search/operator"
)

// DefaultMinShare is the share of the model's time under which a region is
// listed but not searched.
const DefaultMinShare = 0.02

// Request is a model job as a front end asks for it: the optimize
// command's flags or a model tool's arguments. Service.Options resolves
// it for both, so the command line and MCP profile, rank and verify a
// model alike (TestModelFlowParity).
type Request struct {
	Model    string
	Target   string // a target word ("" is auto: this host's)
	Language string // "" is the target's first
	Export   string
	MinShare float64 // 0 is DefaultMinShare
	// Operator is who searches the regions, as evolve names it ("" is the
	// tuner, which can only tune a region's bundled start kernel).
	Operator string
	// Compile times torch.compile of the original too; nil: on a GPU,
	// where it is the baseline worth beating (it is slow on a CPU).
	Compile *bool
}

// Options resolves r on this host: the target (auto is this host's), the
// start language and the compile baseline by that target, the device's
// ceilings and the data directory.
func (s *Service) Options(ctx context.Context, r Request) (Options, error) {
	o := Options{Model: r.Model, Target: cmp.Or(r.Target, "auto"), Language: r.Language, DataDir: s.DataDir, Export: r.Export,
		MinShare: cmp.Or(r.MinShare, DefaultMinShare), Tuner: operator.Kind(r.Operator) == "tuner"}
	if s.ResolveTarget != nil {
		t, err := s.ResolveTarget(ctx, o.Target)
		if err != nil {
			return o, fmt.Errorf("target %q: %w", o.Target, err)
		}
		o.Target = t
	}
	tg, known := target.Get(target.Name(o.Target))
	if known && o.Language == "" {
		o.Language = tg.DefaultLanguage()
	}
	o.Compile = known && tg.GPU()
	if r.Compile != nil {
		o.Compile = *r.Compile
	}
	if s.Ceilings != nil {
		o.Ceilings = s.Ceilings(ctx)
	}
	return o, nil
}
