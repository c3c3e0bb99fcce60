package runs

import (
	"context"
	"fmt"
	"io"
	"path/filepath"
	"strings"
	"time"

	"github.com/kevolve/kevolve-mcp/harness/target"
	"github.com/kevolve/kevolve-mcp/search/engine"
	"github.com/kevolve/kevolve-mcp/search/fleet"
	"github.com/kevolve/kevolve-mcp/search/launch"
	"github.com/kevolve/kevolve-mcp/search/optimize"
	"github.com/kevolve/kevolve-mcp/search/suite"
)

// OptimizeRequest is the model flow in the foreground (the optimize
// command): profile, extract, search as one suite, deploy and verify.
type OptimizeRequest struct {
	// Options are the model, its target and language, the search's time,
	// the export and the report; the rest is filled here.
	Options  optimize.Options
	Operator string
	Op       launch.OperatorSettings
	// Budget is the whole job's evaluations, Chunk a problem's per turn.
	Budget, Chunk int
	Policy        string
	Parallel      int // pipelines per problem (0 = Parallelism's default)
	EvalTimeout   time.Duration
	Calibrate     bool
	// CompileGiven says Options.Compile was set; else it is on for a GPU.
	CompileGiven bool
	// Fleet runs the searches' evaluations on workers when set.
	Fleet  *fleet.Options
	Stderr io.Writer
}

// Optimize runs the model flow on h.
func Optimize(ctx context.Context, h *launch.Host, req OptimizeRequest) (*optimize.Summary, error) {
	st, err := h.Store(ctx)
	if err != nil {
		return nil, err
	}
	// The model is profiled and verified on this host's device, so its
	// target is this host's even when a fleet runs the searches.
	p, err := h.Launcher(st, req.Stderr, false).PrepareSuite(ctx, optimizeRequest(req))
	if err != nil {
		return nil, err
	}
	o := modelOptions(h, req, p)
	if req.Fleet != nil {
		f, stop, err := watchedFleet(ctx, h, *req.Fleet, o.Target, req.Stderr)
		if err != nil {
			return nil, err
		}
		defer stop()
		p.Eval = f.Evaluator
	}
	parallel, err := Parallelism(req.Parallel, o.Target, req.Fleet, h.LocalGPUs)
	if err != nil {
		return nil, err
	}
	r := p.Runner(p.Budget, parallel, func(s suite.State) {
		fmt.Fprintf(req.Stderr, "optimize: %s: %d evaluations, best %.2fx\n", filepath.Base(s.Name), s.Used, s.BestFitness)
	})
	fmt.Fprintf(req.Stderr, "optimize %s on %s: profiling...\n", o.Model, o.Target)
	return optimize.Run(ctx, p.Adapter.Ev, h.DB(), r, o)
}

// modelOptions are the request's options with the prepared suite's target
// and ceilings and the defaults of that target.
func modelOptions(h *launch.Host, req OptimizeRequest, p *launch.PreparedSuite) optimize.Options {
	o := req.Options
	o.Target, o.Ceilings = p.Target, p.Adapter.Ceilings
	tg := target.MustGet(target.Name(o.Target))
	if o.Language == "" {
		o.Language = tg.DefaultLanguage()
	}
	if tg.GPU() && !req.CompileGiven {
		o.Compile = true
	}
	o.Tuner = p.Operator.Name() == "tuner"
	o.DataDir = h.DataDir()
	if o.ReportDir == "" {
		// Beside the run reports: runs/<model file's name>.
		o.ReportDir = filepath.Join(o.DataDir, "runs", "model-"+strings.TrimSuffix(filepath.Base(o.Model), ".py"))
	}
	o.Log = h.Log()
	return o
}

// optimizeRequest is the request as a launch request: one suite over the
// model's hot regions, with the suite's stopping rules.
func optimizeRequest(req OptimizeRequest) launch.SuiteRequest {
	r := launch.Request{Spec: engine.ProblemSpec{Target: req.Options.Target, Language: req.Options.Language}, Operator: req.Operator, Op: req.Op,
		Eval: launch.EvalSettings{Timeout: req.EvalTimeout, Calibrate: req.Calibrate}}
	r.Start.Policy, r.Start.Budget.Evals, r.Start.Config.Policy.Draft = req.Policy, req.Budget, launch.DraftUnset
	return launch.SuiteRequest{Request: r, Chunk: req.Chunk}
}
