package main

import (
	"context"
	"fmt"
	"io"
	"time"

	"github.com/spf13/pflag"

	"github.com/kevolve/kevolve-mcp/search/launch"
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
// --plateau stop a problem (defaults launch.SuiteEpsilon and SuitePlateau),
// and its leftover goes to the problems with the most headroom (search/suite).
func evolveSuite(ctx context.Context, a *app, l *launch.Launcher, eo *evolveOptions, fs *pflag.FlagSet, stdout, stderr io.Writer) error {
	sp, err := suite.ParseSpec(eo.suite.spec)
	if err != nil {
		return err
	}
	p, err := l.PrepareSuite(ctx, suiteRequest(eo, fs))
	if err != nil {
		return err
	}
	probs, skipped, err := suite.Resolve(ctx, a.registry(), sp, p.Target, eo.spec.Language, corpusRoot())
	for _, s := range skipped {
		fmt.Fprintf(stderr, "suite: skipped %s\n", s)
	}
	if err != nil {
		return err
	}
	b := p.Budget
	if !fs.Changed("budget") {
		b.Total = 12 * len(probs)
	}
	id := eo.suite.id
	if id == "" {
		id = "s-" + time.Now().UTC().Format("20060102-150405")
	}
	op := p.Operator
	r := p.Runner(b, 0, func(s suite.State) {
		fmt.Fprintf(stderr, "suite %s: %s: %d evaluations, best %.2fx%s\n", id, s.Name, s.Used, s.BestFitness, map[bool]string{true: " (" + s.Stopped + ")", false: ""}[s.Stopped != ""])
	})
	fmt.Fprintf(stderr, "suite %s: %d problems on %s, %d evaluations, operator %s (resume with --suite-id %s)\n", id, len(probs), p.Target, b.Total, op.Name(), id)
	report, err := r.Run(ctx, id, probs)
	if report == nil {
		return err
	}
	p.Finish(context.WithoutCancel(ctx), report)
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

// suiteRequest is evolve --suite's flags as a launch request: the suite's
// stopping rules apply where --sol-eps and --plateau were not given.
func suiteRequest(eo *evolveOptions, fs *pflag.FlagSet) launch.SuiteRequest {
	r := launch.SuiteRequest{Request: evolveRequest(eo), Chunk: eo.suite.chunk}
	if fs.Changed("sol-eps") {
		r.Epsilon = &eo.start.Budget.SOLEpsilon
	}
	if fs.Changed("plateau") {
		r.Plateau = &eo.start.Budget.Plateau
	}
	return r
}
