package runs

import (
	"context"
	"fmt"
	"io"
	"path/filepath"
	"strings"
	"time"

	"github.com/kevolve/kevolve-mcp/search/engine"
	"github.com/kevolve/kevolve-mcp/search/fleet"
	"github.com/kevolve/kevolve-mcp/search/launch"
	"github.com/kevolve/kevolve-mcp/search/optimize"
	"github.com/kevolve/kevolve-mcp/search/suite"
)

// OptimizeRequest is the model flow in the foreground (the optimize
// command): profile, extract, search as one suite, deploy and verify.
type OptimizeRequest struct {
	// Request is what the model tools take too (the model, its target
	// and language, the export, the operator, the compile baseline):
	// ModelService resolves it for both.
	optimize.Request
	// ReportDir (default: runs/model-NAME beside the database), SuiteID and
	// SearchTime are the command's alone.
	ReportDir, SuiteID string
	SearchTime         time.Duration
	Op                 launch.OperatorSettings
	// Budget is the whole job's evaluations, Chunk a problem's per turn.
	Budget, Chunk int
	Policy        string
	Parallel      int // pipelines per problem (0 = Parallelism's default)
	EvalTimeout   time.Duration
	Calibrate     bool
	// Fleet runs the searches' evaluations on workers when set.
	Fleet  *fleet.Options
	Stderr io.Writer
}

// Optimize runs the model flow on h.
func Optimize(ctx context.Context, h *launch.Host, req OptimizeRequest) (*optimize.Summary, error) {
	p, o, err := PrepareOptimize(ctx, h, req)
	if err != nil {
		return nil, err
	}
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

// PrepareOptimize is the command's suite (operator, budget, evaluator) and
// its model options, resolved by ModelService as the model tools resolve
// theirs.
func PrepareOptimize(ctx context.Context, h *launch.Host, req OptimizeRequest) (*launch.PreparedSuite, optimize.Options, error) {
	st, err := h.Store(ctx)
	if err != nil {
		return nil, optimize.Options{}, err
	}
	// The model is profiled and verified on this host's device, so its
	// target is this host's even when a fleet runs the searches.
	p, err := h.Launcher(st, req.Stderr, false).PrepareSuite(ctx, optimizeRequest(req))
	if err != nil {
		return nil, optimize.Options{}, err
	}
	// After the suite's evaluator, which calibrated an uncalibrated CPU
	// when asked, so the ranking reads those figures; and on the suite's
	// target, so the model and its searches share one.
	m := req.Request
	m.Target = p.Target
	o, err := ModelService(h).Options(ctx, m)
	if err != nil {
		return nil, o, err
	}
	o.ReportDir, o.SuiteID, o.SearchTime, o.Log = req.ReportDir, req.SuiteID, req.SearchTime, h.Log()
	if o.ReportDir == "" {
		// Beside the run reports: runs/<model file's name>.
		o.ReportDir = filepath.Join(o.DataDir, "runs", "model-"+strings.TrimSuffix(filepath.Base(o.Model), ".py"))
	}
	return p, o, nil
}

// ModelService is the model flow on h: the model tools' service, and the
// optimize command's options, so both resolve a request one way. nil
// without the Python worker or the database (the tools say so).
func ModelService(h *launch.Host) *optimize.Service {
	ev, err := h.Evaluator()
	if err != nil || h.DB() == nil {
		return nil
	}
	svc := &optimize.Service{Jobs: ev, DB: h.DB(), DataDir: h.DataDir(),
		Ceilings: h.MeasuredCeilings,
		// The model runs on this host's device: auto is its GPU (or CPU).
		ResolveTarget: h.Launcher(nil, nil, false).ResolveTarget}
	if st, err := h.Store(context.Background()); err == nil {
		svc.Store = st
	}
	return svc
}

// optimizeRequest is the request as a launch request: one suite over the
// model's hot regions, with the suite's stopping rules.
func optimizeRequest(req OptimizeRequest) launch.SuiteRequest {
	r := launch.Request{Spec: engine.ProblemSpec{Target: req.Target, Language: req.Language}, Operator: req.Operator, Op: req.Op,
		Eval: launch.EvalSettings{Timeout: req.EvalTimeout, Calibrate: req.Calibrate}}
	r.Start.Policy, r.Start.Budget.Evals, r.Start.Config.Policy.Draft = req.Policy, req.Budget, launch.DraftUnset
	return launch.SuiteRequest{Request: r, Chunk: req.Chunk}
}
