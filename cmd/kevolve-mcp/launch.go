package main

import (
	"context"
	"fmt"
	"io"
	"os"

	"github.com/kevolve/kevolve-mcp/harness/sol"
	"github.com/kevolve/kevolve-mcp/search"
	"github.com/kevolve/kevolve-mcp/search/engine"
	"github.com/kevolve/kevolve-mcp/search/launch"
)

// launcher is this process's search/launch wiring, the same for the CLI's
// commands and the server's tools: st keeps the runs, notes go to w (nil:
// the log), remote says a fleet elsewhere owns the targets, and calibrate
// lets an uncalibrated CPU be measured once.
func (a *app) launcher(st search.Store, w io.Writer, remote bool) *launch.Launcher {
	return &launch.Launcher{
		Store:   st,
		Harness: a.evaluator,
		Ceilings: func(ctx context.Context, calibrate bool) (*sol.Ceilings, error) {
			out := w
			if out == nil {
				out = io.Discard
			}
			c, err := ceilingsFor(ctx, a, calibrate, out)
			if err != nil {
				return nil, err
			}
			return &c, nil
		},
		Knowledge:    a.knowledge,
		KnowledgeDir: userKnowledgeDir(a.g),
		Server:       a.serverCommand(),
		ResolveTarget: func(ctx context.Context, s string) (string, error) {
			ev, err := a.evaluator()
			if err != nil {
				return "", err
			}
			return resolveTarget(ctx, ev, s, remote)
		},
		Resolve: func(ctx context.Context, s engine.ProblemSpec) (search.Problem, string, error) {
			s.CorpusRoot = corpusRoot()
			return engine.ResolveProblem(ctx, a.registry(), s)
		},
		Devices: func(ctx context.Context, target string) []string {
			return a.devices.Get(ctx, false).DeviceNames(target)
		},
		Log:   a.log,
		Notes: w,
	}
}

// serverCommand is this binary's own MCP command line (same --db, --kb,
// --python) for an agent operator's KEVOLVE_MCP_CONFIG; nil when the
// executable cannot be named (the operator then uses its default).
func (a *app) serverCommand() []string {
	exe, err := os.Executable()
	if err != nil {
		fmt.Fprintf(os.Stderr, "agent operators: cannot name this server: %v\n", err)
		return nil
	}
	cmd := []string{exe, "--db", a.g.db}
	for _, d := range a.g.kbDirs {
		cmd = append(cmd, "--kb", d)
	}
	if a.g.python != "" {
		cmd = append(cmd, "--python", a.g.python)
	}
	return append(cmd, "--stdio")
}
