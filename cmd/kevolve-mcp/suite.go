package main

import (
	"context"
	"fmt"
	"io"
	"time"

	"github.com/spf13/pflag"

	"github.com/kevolve/kevolve-mcp/search/engine"
	"github.com/kevolve/kevolve-mcp/search/harnesseval"
	"github.com/kevolve/kevolve-mcp/search/store"
	"github.com/kevolve/kevolve-mcp/search/suite"
)

// suiteFlags are evolve's suite settings.
type suiteFlags struct {
	spec  string
	id    string
	chunk int
}

func registerSuiteFlags(fs *pflag.FlagSet, f *suiteFlags) {
	fs.StringVar(&f.spec, "suite", "", "run one search per problem under one budget: corpus[:tag] or kernelbench:DIR[:levels]")
	fs.StringVar(&f.id, "suite-id", "", "the suite's id; give an earlier one to resume it (default: a new one)")
	fs.IntVar(&f.chunk, "suite-chunk", 4, "evaluations a problem gets per turn in a suite")
}

// evolveSuite runs a suite: --budget is the whole suite's, --sol-eps and
// --plateau stop a problem (defaults 0.1 and 8 here), and its leftover
// goes to the problems with the most headroom (search/suite).
func evolveSuite(ctx context.Context, c *cli, a *app, eo *evolveOptions, st *store.SQLite, fs *pflag.FlagSet, stdout, stderr io.Writer) error {
	sp, err := suite.ParseSpec(eo.suite.spec)
	if err != nil {
		return err
	}
	ev, err := a.evaluator()
	if err != nil {
		return err
	}
	rep := a.devices.Get(ctx, false)
	target, err := resolveTarget(ctx, ev, eo.target, eo.fleet.remote())
	if err != nil {
		return err
	}
	probs, skipped, err := suite.Resolve(ctx, a.registry(), sp, target, eo.spec.Language, corpusRoot())
	for _, s := range skipped {
		fmt.Fprintf(stderr, "suite: skipped %s\n", s)
	}
	if err != nil {
		return err
	}
	devices := rep.DeviceNames(target)
	adapter := &harnesseval.Adapter{Ev: ev, Timeout: eo.evalTO, KernelPolicy: eo.kernelPolicy}
	if ceil, err := ceilingsFor(ctx, a, eo.calibrate, stderr); err == nil {
		adapter.Ceilings = &ceil
	}
	op, err := operatorWithContext(ctx, a, eo.operator, &eo.ops, target, devices, adapter.Ceilings, nil)
	if err != nil {
		return err
	}
	b := suite.Budgeter{Total: eo.start.Budget.Evals, Chunk: eo.suite.chunk, Epsilon: eo.start.Budget.SOLEpsilon, Plateau: eo.start.Budget.Plateau}
	if !fs.Changed("sol-eps") {
		b.Epsilon = 0.1
	}
	if !fs.Changed("plateau") {
		b.Plateau = 8
	}
	if !fs.Changed("budget") {
		b.Total = 12 * len(probs)
	}
	id := eo.suite.id
	if id == "" {
		id = "s-" + time.Now().UTC().Format("20060102-150405")
	}
	cfg := eo.start.Config
	if cfg.Policy.Draft < 0 {
		cfg.Policy.Draft = 0
	}
	r := &suite.Runner{Engine: &engine.Engine{Store: st, Eval: adapter, Operator: op, Log: c.logger}, Budget: b, Policy: eo.start.Policy,
		Config: cfg, Baseline: eo.start.Baseline, Seed: eo.start.Seed, Devices: devices,
		OnTurn: func(s suite.State) {
			fmt.Fprintf(stderr, "suite %s: %s: %d evaluations, best %.2fx%s\n", id, s.Name, s.Used, s.BestFitness, map[bool]string{true: " (" + s.Stopped + ")", false: ""}[s.Stopped != ""])
		}}
	fmt.Fprintf(stderr, "suite %s: %d problems on %s, %d evaluations, operator %s (resume with --suite-id %s)\n", id, len(probs), target, b.Total, op.Name(), id)
	report, err := r.Run(ctx, id, probs)
	if report == nil {
		return err
	}
	for _, row := range report.Rows {
		if row.RunID != "" {
			writeBack(context.WithoutCancel(ctx), a, st, row.RunID, &eo.ops, stderr)
		}
	}
	if eo.asJSON {
		out := struct {
			Suite string `json:"suite"`
			*suite.Report
		}{id, report}
		if perr := printJSON(stdout, out); perr != nil {
			return perr
		}
		return err
	}
	if terr := suite.WriteTable(stdout, report); terr != nil {
		return terr
	}
	return err
}
