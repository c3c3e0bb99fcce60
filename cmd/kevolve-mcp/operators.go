package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"time"

	"github.com/kevolve/kevolve-mcp/harness/sol"
	"github.com/kevolve/kevolve-mcp/search"
	searchctx "github.com/kevolve/kevolve-mcp/search/context"
	"github.com/kevolve/kevolve-mcp/search/operator"
)

// operatorFlags are the model and agent operators' settings on evolve.
type operatorFlags struct {
	contextTokens int
	novelty       float64
	deadline      time.Duration
	workDir       string
}

func operatorFlagsOn(fs *flag.FlagSet) *operatorFlags {
	f := &operatorFlags{}
	fs.IntVar(&f.contextTokens, "context-tokens", searchctx.DefaultBudget, "token budget of the context given to a model or agent operator")
	fs.Float64Var(&f.novelty, "novelty", 0, "reject proposals at least this similar to an existing kernel (0 = 0.98; 1.01 = off)")
	fs.DurationVar(&f.deadline, "op-deadline", 0, "limit per proposal of a model or agent operator (default: cmd 15m, openai 5m)")
	fs.StringVar(&f.workDir, "op-workdir", "", "where cmd: operators get their per-proposal directories (default: the temp dir)")
	return f
}

// operatorWithContext builds the operator a run uses, with what the model
// and agent operators need: the knowledge index (--kb dirs included), the
// device and its ceilings for the context, and this binary's own command
// line (same --db, --kb, --python) for the agent's KEVOLVE_MCP_CONFIG.
func operatorWithContext(ctx context.Context, a *app, name string, f *operatorFlags, target string, devices []string, c *sol.Ceilings) (search.Operator, error) {
	if name == "" || name == "tuner" {
		return operator.ByName(name)
	}
	env := operator.Env{Deadline: f.deadline, WorkRoot: f.workDir, Novelty: f.novelty,
		Context: searchctx.Options{Budget: f.contextTokens}}
	dev := searchctx.Device{Name: target}
	if target == "cpu" {
		dev.Name = "cpu"
	} else if len(devices) > 0 {
		dev.Name = devices[0]
	}
	if c != nil {
		for _, k := range []string{"bf16", "fp16", "fp32"} {
			if v := c.PeakFLOPS[k]; v > 0 {
				dev.PeakTFLOPs = v / 1e12
				break
			}
		}
		dev.PeakGBs = c.MemBandwidth / 1e9
	}
	env.Context.Device = dev
	if ix, err := a.knowledge(ctx); err == nil {
		env.Context.Retriever = ix
	} else {
		fmt.Fprintf(os.Stderr, "operator %s: no knowledge in its context: %v\n", name, err)
	}
	exe, err := os.Executable()
	if err != nil {
		return nil, fmt.Errorf("operator %s: cannot name this server for the agent: %w", name, err)
	}
	env.Server = []string{exe, "--db", a.g.db}
	for _, d := range a.g.kbDirs {
		env.Server = append(env.Server, "--kb", d)
	}
	if a.g.python != "" {
		env.Server = append(env.Server, "--python", a.g.python)
	}
	env.Server = append(env.Server, "--stdio")
	return operator.ByNameWith(name, env)
}
