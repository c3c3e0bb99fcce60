package launch

import (
	"context"
	"fmt"
	"time"

	"github.com/kevolve/kevolve-mcp/harness/sol"
	"github.com/kevolve/kevolve-mcp/search"
	"github.com/kevolve/kevolve-mcp/search/brief"
	"github.com/kevolve/kevolve-mcp/search/memory"
	"github.com/kevolve/kevolve-mcp/search/operator"
)

// ClientOperator is the operator an MCP client plays itself (evolve_next,
// evolve_submit): Prepare builds no operator for it.
const ClientOperator = "mcp"

// DefaultContextTokens is a model or agent operator's context budget when
// a request gives none.
const DefaultContextTokens = brief.DefaultBudget

// OperatorSettings are a request's settings for model and agent operators
// and for the cross-run memory.
type OperatorSettings struct {
	// ContextTokens is the context's token budget (0 = the default).
	ContextTokens int
	// Novelty is the similarity at which a proposal is rejected (0 =
	// the default; >1 = off).
	Novelty float64
	// Deadline per proposal (0 = the operator's default).
	Deadline time.Duration
	// WorkDir holds cmd: operators' per-proposal directories.
	WorkDir string
	// NoMemory: no earlier runs' kernels (neither seeded nor shown).
	NoMemory bool
	// NoWriteBack: the run's best kernel is not written as knowledge.
	NoWriteBack bool
}

// OperatorInput is what an operator's context is built from.
type OperatorInput struct {
	Name     string
	Settings OperatorSettings
	Problem  search.Problem
	Devices  []string
	Ceilings *sol.Ceilings
	Priors   []memory.Prior
}

// Operator builds the operator in.Name names with its full context; env is
// what it was given (nil for the tuner, which reads no context).
func (l *Launcher) Operator(ctx context.Context, in OperatorInput) (search.Operator, *operator.Env, error) {
	if in.Name == "" || in.Name == "tuner" {
		op, err := operator.ByName(in.Name)
		return op, nil, err
	}
	env := l.operatorEnv(ctx, in)
	op, err := operator.ByNameWith(in.Name, env)
	if err != nil {
		return nil, nil, err
	}
	return op, &env, nil
}

// operatorEnv is a model or agent operator's context: the device and its
// ceilings, the knowledge index, ports from earlier runs and this server's
// command line for an agent's MCP config.
func (l *Launcher) operatorEnv(ctx context.Context, in OperatorInput) operator.Env {
	s := in.Settings
	env := operator.Env{Deadline: s.Deadline, WorkRoot: s.WorkDir, Novelty: s.Novelty,
		Context: brief.Options{Budget: s.ContextTokens, Device: device(in.Problem.Target, in.Devices, in.Ceilings)},
		Server:  l.Server}
	for _, p := range in.Priors {
		if p.Port && p.Node != nil {
			env.Context.Ports = append(env.Context.Ports, brief.Port{Problem: p.Problem, Arch: p.Arch, Language: p.Node.Language, Fitness: p.Fitness, Code: p.Node.Code})
		}
	}
	if l.Knowledge == nil {
		return env
	}
	if ix, err := l.Knowledge(ctx); err == nil && ix != nil {
		env.Context.Retriever = ix // never a typed nil in the interface
	} else {
		l.note("operator %s: no knowledge in its context: %v", in.Name, err)
	}
	return env
}

// device describes the run's device for the context: the first device's
// name on a GPU, and its peak rate and bandwidth when calibrated.
func device(target string, devices []string, c *sol.Ceilings) brief.Device {
	dev := brief.Device{Name: target}
	if target != "cpu" && len(devices) > 0 {
		dev.Name = devices[0]
	}
	if c == nil {
		return dev
	}
	for _, k := range []string{"bf16", "fp16", "fp32"} {
		if v := c.PeakFLOPS[k]; v > 0 {
			dev.PeakTFLOPs = v / 1e12
			break
		}
	}
	dev.PeakGBs = c.MemBandwidth / 1e9
	return dev
}

// Priors finds the best kernels of earlier runs on problems like p
// (search/memory); none when the settings turn memory off.
func (l *Launcher) Priors(ctx context.Context, s OperatorSettings, p search.Problem, devices []string, runID string) []memory.Prior {
	if s.NoMemory || l.Store == nil {
		return nil
	}
	priors, err := memory.Find(ctx, l.Store, p, devices, runID, 3)
	if err != nil {
		l.note("memory: %v", err)
	}
	return priors
}

// seed writes this arch's priors into a new run's draft phase.
func (l *Launcher) seed(ctx context.Context, st search.Store, runID string, priors []memory.Prior) {
	nodes, err := memory.Seed(ctx, st, runID, priors)
	if err != nil {
		l.note("memory: seeding: %v", err)
	}
	for _, n := range nodes {
		l.note("memory: node %d: %s", n.ID, n.Notes)
	}
}

// errNoStore is Prepare's answer on a launcher without a store.
var errNoStore = fmt.Errorf("launch: no search store")
