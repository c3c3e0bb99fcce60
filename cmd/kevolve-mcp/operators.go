package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"github.com/kevolve/kevolve-mcp/harness/sol"
	"github.com/spf13/pflag"

	"github.com/kevolve/kevolve-mcp/retrieval"
	"github.com/kevolve/kevolve-mcp/search"
	searchctx "github.com/kevolve/kevolve-mcp/search/context"
	"github.com/kevolve/kevolve-mcp/search/memory"
	"github.com/kevolve/kevolve-mcp/search/operator"
)

// operatorFlags are the model and agent operators' settings on evolve.
type operatorFlags struct {
	contextTokens int
	novelty       float64
	deadline      time.Duration
	workDir       string
	noMemory      bool
	noWriteBack   bool
}

func registerOperatorFlags(fs *pflag.FlagSet, f *operatorFlags) {
	fs.IntVar(&f.contextTokens, "context-tokens", searchctx.DefaultBudget, "token budget of the context given to a model or agent operator")
	fs.Float64Var(&f.novelty, "novelty", 0, "reject proposals at least this similar to an existing kernel (0 = 0.98; 1.01 = off)")
	fs.DurationVar(&f.deadline, "op-deadline", 0, "limit per proposal of a model or agent operator (default: cmd 15m, openai 5m)")
	fs.StringVar(&f.workDir, "op-workdir", "", "where cmd: operators get their per-proposal directories (default: the temp dir)")
	fs.BoolVar(&f.noMemory, "no-memory", false, "do not seed the run with the best kernels of earlier runs on similar problems")
	fs.BoolVar(&f.noWriteBack, "no-writeback", false, "do not write the run's best kernel into the user's knowledge directory")
}

// userKnowledgeDir is where the search writes what it learns (examples/
// documents): beside the database, never the embedded base. The knowledge
// index always includes it once it exists.
func userKnowledgeDir(g globalFlags) string { return filepath.Join(filepath.Dir(g.db), "knowledge") }

// memorySources adds the user's knowledge directory to the --kb sources
// when it exists and was not named already.
func memorySources(g globalFlags, sources []retrieval.Source) []retrieval.Source {
	dir := userKnowledgeDir(g)
	if st, err := os.Stat(dir); err != nil || !st.IsDir() {
		return sources
	}
	for _, d := range g.kbDirs {
		if a, _ := filepath.Abs(d); a == dir {
			return sources
		}
	}
	return append(sources, retrieval.DirSource(dir))
}

// priorsFor finds the best kernels of earlier runs on problems similar to
// p (search/memory); none with --no-memory.
func priorsFor(ctx context.Context, st search.Store, f *operatorFlags, p search.Problem, devices []string, runID string) []memory.Prior {
	if f.noMemory {
		return nil
	}
	priors, err := memory.Find(ctx, st, p, devices, runID, 3)
	if err != nil {
		fmt.Fprintf(os.Stderr, "memory: %v\n", err)
	}
	return priors
}

// seedMemory writes this arch's priors into a new run's draft phase.
func seedMemory(ctx context.Context, st search.Store, runID string, priors []memory.Prior, stderr io.Writer) {
	nodes, err := memory.Seed(ctx, st, runID, priors)
	if err != nil {
		fmt.Fprintf(stderr, "memory: seeding: %v\n", err)
	}
	for _, n := range nodes {
		fmt.Fprintf(stderr, "memory: node %d: %s\n", n.ID, n.Notes)
	}
}

// writeBack stores the run's best kernel as knowledge and re-indexes the
// user's directory so that search_knowledge finds it at once.
func writeBack(ctx context.Context, a *app, st search.Store, runID string, f *operatorFlags, stderr io.Writer) {
	if f.noWriteBack {
		return
	}
	w, err := memory.WriteBack(ctx, st, runID, userKnowledgeDir(a.g))
	switch {
	case err != nil:
		fmt.Fprintf(stderr, "write-back: %v\n", err)
		return
	case w.Path == "":
		return
	case w.Kept:
		fmt.Fprintf(stderr, "knowledge: kept %s (an earlier run did better)\n", w.Path)
		return
	}
	if _, err := a.knowledge(ctx); err != nil {
		fmt.Fprintf(stderr, "write-back: wrote %s but could not index it: %v\n", w.Path, err)
		return
	}
	fmt.Fprintf(stderr, "knowledge: wrote and indexed %s\n", w.Path)
}

// operatorWithContext builds the operator a run uses, with what the model
// and agent operators need: the knowledge index (--kb dirs included), the
// device and its ceilings for the context, and this binary's own command
// line (same --db, --kb, --python) for the agent's KEVOLVE_MCP_CONFIG.
func operatorWithContext(ctx context.Context, a *app, name string, f *operatorFlags, target string, devices []string, c *sol.Ceilings, priors []memory.Prior) (search.Operator, error) {
	if name == "" || name == "tuner" {
		return operator.ByName(name)
	}
	env := operator.Env{Deadline: f.deadline, WorkRoot: f.workDir, Novelty: f.novelty,
		Context: searchctx.Options{Budget: f.contextTokens}}
	for _, p := range priors {
		if p.Port && p.Node != nil {
			env.Context.Ports = append(env.Context.Ports, searchctx.Port{Problem: p.Problem, Arch: p.Arch, Language: p.Node.Language, Fitness: p.Fitness, Code: p.Node.Code})
		}
	}
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
