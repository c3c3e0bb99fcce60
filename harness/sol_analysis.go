package harness

import (
	"context"
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/kevolve/kevolve-mcp/harness/device"
	"github.com/kevolve/kevolve-mcp/harness/problem"
	"github.com/kevolve/kevolve-mcp/harness/sol"
	"github.com/kevolve/kevolve-mcp/harness/target"
)

// The speed-of-light question as the sol_analysis tool and `kevolve-mcp
// sol` ask it: the bound of a problem on a device and, given a candidate
// (a file evaluated first, or its measured times), how close it comes.
// Both front ends parse their arguments into a SOLQuery, call SOLAnalysis
// and render the report; the flow itself (resolve the problem and its
// shape set, evaluate the candidate, count the work, bound it) is here.

// SOLQuery is one speed-of-light question. The numbers are named after the
// tool's arguments in the errors that reject them.
type SOLQuery struct {
	// Reference is a KernelBench-format file (traced) or a corpus name
	// (its declared counts for the shape set asked for).
	Reference string
	// FLOPs and Bytes, when given, win over the declared and traced counts.
	FLOPs, Bytes float64
	Dtype        string // the compute dtype of the FLOP ceiling ("" = the work's)
	Device       string // spec-table key to bound against ("" = this machine's device)
	Shapes       string // shape set ("" = SOLDeps.DefaultShapes, else the problem's default)
	// Candidate is a ModelNew file to check and time first, on Target; its
	// measured times, correctness and shape set replace the fields below.
	Candidate string
	Target    string
	// CandidateS and ReferenceS are measured medians in seconds; Correct
	// (nil = true) is whether the candidate passed.
	CandidateS, ReferenceS float64
	Correct                *bool
	TimeoutS               float64 // limit for tracing the reference (0 = sol's default)
	// Progress receives the candidate evaluation's stage events; may be nil.
	Progress func(stage string, done, total int)
}

// WithMeasured puts a timed evaluation's shape set, medians and
// correctness into q, so the bound counts the work that was timed (a CPU
// run defaults to the small set); an untimed one leaves q unchanged.
func (q *SOLQuery) WithMeasured(r *EvalResult) bool {
	m, ok := r.Measured()
	if ok {
		q.Shapes, q.CandidateS, q.ReferenceS = m.Shapes, m.CandidateS, m.ReferenceS
		q.Correct = &m.Correct
	}
	return ok
}

// CeilingsFunc returns the ceilings of a spec-table device key ("" = the
// detected device, measured figures over the datasheet).
type CeilingsFunc func(ctx context.Context, deviceKey string) (sol.Ceilings, error)

// SOLDeps are what SOLAnalysis calls into.
type SOLDeps struct {
	Evaluator *Evaluator       // evaluates a query's Candidate; nil: a candidate is refused
	Resolve   problem.Resolver // corpus names; nil: files only
	Ceilings  CeilingsFunc
	Trace     sol.TraceOptions // how a reference is traced (Shapes and Timeout come from the query)
	// DefaultShapes is the shape set bounded when a query names none, no
	// device key and no candidate ("" = the problem's default, large).
	DefaultShapes string
}

// EvalShapes is the shape set an evaluation on this machine runs when none
// is named: with no usable GPU it runs on the CPU, which takes the small
// set. A `sol` that should bound what an `eval` here times passes it as
// SOLDeps.DefaultShapes.
func EvalShapes(r device.Report) string {
	if r.Python != nil && (r.Python.CUDAUsable || r.Python.ROCmUsable) {
		return ""
	}
	return target.MustGet(target.CPU).DefaultShapes()
}

// SOLAnalysis answers q: a caller's mistake is a *problem.InputError named
// by the argument at fault; anything else is the flow's failure, wrapped
// with the step that failed.
func SOLAnalysis(ctx context.Context, q SOLQuery, d SOLDeps) (sol.Report, error) {
	if err := q.check(); err != nil {
		return sol.Report{}, err
	}
	var notes []string
	if q.Candidate != "" {
		if err := d.measure(ctx, &q); err != nil {
			return sol.Report{}, err
		}
	} else if q.Shapes == "" && q.Device == "" {
		q.Shapes = d.DefaultShapes
		if q.Shapes == "" && d.Evaluator != nil && d.Evaluator.runsOnCPU(ctx, "auto") {
			// Bound what an evaluation here times (run_kernel on a CPU).
			q.Shapes = cpuShapes()
			notes = append(notes, "shapes "+q.Shapes+": what an evaluation on this CPU times (pass shapes to bound another set)")
		}
	}
	r, err := d.request(ctx, q)
	if err != nil {
		return sol.Report{}, err
	}
	if d.Ceilings == nil {
		return sol.Report{}, errors.New("no ceilings provider is configured")
	}
	ceil, err := d.Ceilings(ctx, q.Device)
	switch {
	case errors.Is(err, sol.ErrCPUUncalibrated):
		return sol.Report{}, fmt.Errorf("ceilings: %w", err) // says what to do already
	case err != nil:
		return sol.Report{}, fmt.Errorf("ceilings: %w (pass device, e.g. \"h100\", or run `kevolve-mcp calibrate --db FILE` with the server's database)", err)
	}
	rep, err := sol.AnalyzeRequest(ctx, r, ceil)
	if err != nil {
		return rep, err
	}
	if ceil.Calibrated != nil {
		// This call calibrated the CPU: the answer says so, and how long it took.
		rep.Calibration = ceil.Calibrated
		notes = append(notes, sol.FirstUseNote(ceil.Calibrated))
	}
	rep.Notes = append(rep.Notes, notes...)
	return rep, nil
}

// maxTraceS bounds a trace a caller may ask for.
const maxTraceS = 3600

// check rejects what no flow can answer, before anything runs.
func (q SOLQuery) check() error {
	for _, v := range []struct {
		name string
		v    float64
	}{{"flops", q.FLOPs}, {"bytes", q.Bytes}, {"candidate_s", q.CandidateS}, {"reference_s", q.ReferenceS}, {"timeout_s", q.TimeoutS}} {
		if v.v < 0 || math.IsNaN(v.v) || math.IsInf(v.v, 0) {
			return problem.Inputf(v.name, "must be a finite number >= 0")
		}
	}
	switch {
	case q.TimeoutS > maxTraceS:
		return problem.Inputf("timeout_s", "must be at most %d", maxTraceS)
	case q.Candidate != "" && (q.CandidateS > 0 || q.ReferenceS > 0 || q.Correct != nil):
		return problem.Inputf("candidate", "give candidate (a file to evaluate) or measured candidate_s/reference_s/correct, not both")
	case q.Candidate != "" && q.Reference == "":
		return problem.Inputf("reference", "candidate needs reference: the problem it is evaluated against (a file or a corpus name)")
	case q.Reference == "" && (q.FLOPs == 0 || q.Bytes == 0):
		return problem.Inputf("reference", "give reference (a file to trace) or both flops and bytes")
	}
	return nil
}

// measure evaluates q.Candidate as run_kernel would and puts what was
// measured into q: the shape set that was timed (a CPU run defaults to the
// small one, so the bound must count that), the candidate's and the eager
// reference's medians, and correctness.
func (d SOLDeps) measure(ctx context.Context, q *SOLQuery) error {
	if d.Evaluator == nil {
		return problem.Inputf("candidate", "cannot be evaluated here: no Python with torch was found (see device_info); pass candidate_s instead")
	}
	p, err := problem.Resolve(ctx, problem.Ref{Reference: q.Reference, Shapes: q.Shapes}, d.Resolve)
	if err != nil {
		return err
	}
	c, err := problem.ParseCandidate(q.Candidate, "")
	if err != nil {
		return err
	}
	res, err := d.Evaluator.Evaluate(ctx, p, c, nil, Options{Target: q.Target, Progress: q.Progress})
	if err != nil {
		return fmt.Errorf("evaluating candidate: %w", err)
	}
	if !q.WithMeasured(&res) {
		return fmt.Errorf("candidate %q was not timed (verdict %s): evaluate it alone (run_kernel, `kevolve-mcp eval`) to see why", q.Candidate, res.Verdict)
	}
	return nil
}

// request resolves q's problem into a sol.Request: a corpus problem's
// declared counts for the shape set asked for win over tracing, and what
// the caller gave wins over both.
func (d SOLDeps) request(ctx context.Context, q SOLQuery) (sol.Request, error) {
	if q.Reference != "" {
		p, err := problem.Resolve(ctx, problem.Ref{Reference: q.Reference, Shapes: q.Shapes}, d.Resolve)
		if err != nil {
			return sol.Request{}, err
		}
		if p.Name != "" {
			q.Reference = p.Reference.Path
			if q.FLOPs == 0 && q.Bytes == 0 && p.Work.Shapes == shapesOrLarge(q.Shapes) {
				q.FLOPs, q.Bytes = p.Work.FLOPs, p.Work.Bytes
			}
			if q.Dtype == "" {
				q.Dtype = p.Work.Dtype
			}
		}
	}
	trace := d.Trace
	trace.Shapes = q.Shapes
	if q.TimeoutS > 0 {
		trace.Timeout = time.Duration(q.TimeoutS * float64(time.Second))
	}
	correct := q.Correct == nil || *q.Correct
	return sol.Request{Reference: q.Reference, FLOPs: q.FLOPs, Bytes: q.Bytes, Dtype: q.Dtype,
		CandidateS: q.CandidateS, ReferenceS: q.ReferenceS, Correct: correct, Trace: trace}, nil
}

// shapesOrLarge is the set a corpus name resolves to: "" is large.
func shapesOrLarge(s string) string {
	if s == "" {
		return "large"
	}
	return s
}
