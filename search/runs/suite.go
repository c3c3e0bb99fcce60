package runs

import (
	"context"
	"fmt"
	"io"
	"time"

	"github.com/kevolve/kevolve-mcp/search/launch"
	"github.com/kevolve/kevolve-mcp/search/suite"
)

// SuiteRequest is a foreground suite: one search per problem under one
// budget (evolve --suite). Start.Budget.Evals is the whole suite's, and
// its SOLEpsilon and Plateau stop a problem where Given says so (else
// launch.SuiteEpsilon and SuitePlateau).
type SuiteRequest struct {
	launch.Request
	Given BudgetGiven
	// Suite is corpus[:tag] or kernelbench:DIR[:levels]; ID an earlier
	// suite's to resume it ("" = a new one); Chunk the evaluations a
	// problem gets per turn.
	Suite, ID string
	Chunk     int
	Remote    bool
	Stderr    io.Writer
}

// SuiteResult is a suite's report under its id; its JSON is what
// `evolve --suite --json` prints.
type SuiteResult struct {
	Suite string `json:"suite"`
	*suite.Report
}

// WriteText is the suite's table.
func (r *SuiteResult) WriteText(w io.Writer) error { return suite.WriteTable(w, r.Report) }

// Suite runs a suite on h: its leftover budget goes to the problems with
// the most headroom (search/suite). The result is nil when no report was
// made; otherwise it comes with the suite's error.
func Suite(ctx context.Context, h *launch.Host, req SuiteRequest) (*SuiteResult, error) {
	st, err := h.Store(ctx)
	if err != nil {
		return nil, err
	}
	l := h.Launcher(st, req.Stderr, req.Remote)
	if err := launch.Preflight(ctx, req.Operator); err != nil {
		return nil, err
	}
	sp, err := suite.ParseSpec(req.Suite)
	if err != nil {
		return nil, err
	}
	p, err := l.PrepareSuite(ctx, suiteRequest(req))
	if err != nil {
		return nil, err
	}
	probs, skipped, err := suite.Resolve(ctx, h.Registry(), sp, p.Target, req.Spec.Language, launch.CorpusRoot())
	for _, s := range skipped {
		fmt.Fprintf(req.Stderr, "suite: skipped %s\n", s)
	}
	if err != nil {
		return nil, err
	}
	b := p.Budget
	if !req.Given.Evals {
		b.Total = 12 * len(probs)
	}
	id := req.ID
	if id == "" {
		id = "s-" + time.Now().UTC().Format("20060102-150405")
	}
	r := p.Runner(b, 0, func(s suite.State) {
		fmt.Fprintf(req.Stderr, "suite %s: %s: %d evaluations, best %.2fx%s\n", id, s.Name, s.Used, s.BestFitness, map[bool]string{true: " (" + s.Stopped + ")", false: ""}[s.Stopped != ""])
	})
	fmt.Fprintf(req.Stderr, "suite %s: %d problems on %s, %d evaluations, operator %s (resume with --suite-id %s)\n", id, len(probs), p.Target, b.Total, p.Operator.Name(), id)
	report, err := r.Run(ctx, id, probs)
	if report == nil {
		return nil, err
	}
	p.Finish(context.WithoutCancel(ctx), report)
	return &SuiteResult{id, report}, err
}

// suiteRequest is the suite as a launch request: the suite's stopping
// rules apply where the epsilon and the plateau were not given.
func suiteRequest(req SuiteRequest) launch.SuiteRequest {
	r := launch.SuiteRequest{Request: req.Request, Chunk: req.Chunk}
	if req.Given.SOLEpsilon {
		r.Epsilon = &req.Start.Budget.SOLEpsilon
	}
	if req.Given.Plateau {
		r.Plateau = &req.Start.Budget.Plateau
	}
	return r
}
