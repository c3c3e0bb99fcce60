// Package sol computes speed-of-light (SOL) bounds for a problem: the work it
// must do (FLOPs and the fewest bytes that must move), the ceilings of a
// device (datasheet or measured), and how close a candidate's time comes.
package sol

import (
	"context"
	_ "embed"
	"fmt"
	"time"

	"github.com/kevolve/kevolve-mcp/harness/toolchain"
	"github.com/kevolve/kevolve-mcp/harness/worker"
)

// OpCount is one line of how a count was derived.
type OpCount struct {
	Op     string  `json:"op"`
	Calls  int     `json:"calls,omitempty"`
	FLOPs  float64 `json:"flops,omitempty"`
	Bytes  float64 `json:"bytes,omitempty"`
	Method string  `json:"method"`
}

// Work is what a problem must do, whatever kernel does it.
type Work struct {
	FLOPs  float64   `json:"flops"`
	Bytes  float64   `json:"bytes"`
	Dtype  string    `json:"dtype"`  // sets the compute ceiling: fp32, tf32, bf16, fp16, fp8, fp64
	Source string    `json:"source"` // "declared" | "traced"
	Detail []OpCount `json:"detail,omitempty"`
}

// EvalFunc evaluates a declared formula such as "2*M*N*K" with the given
// variables. corpus.FormulaValue has this shape; it is passed in so sol does not
// depend on the corpus package.
type EvalFunc func(expr string, vars map[string]float64) (float64, error)

// Declared computes Work from formulas in problem metadata. Either formula
// may be empty; the caller then traces for the missing count (see Count).
func Declared(flopsExpr, bytesExpr, dtype string, vars map[string]float64, eval EvalFunc) (Work, error) {
	if eval == nil {
		return Work{}, fmt.Errorf("declared work: no formula evaluator")
	}
	w := Work{Dtype: dtype, Source: "declared"}
	if flopsExpr != "" {
		v, err := eval(flopsExpr, vars)
		if err != nil {
			return Work{}, fmt.Errorf("declared flops %q: %w", flopsExpr, err)
		}
		w.FLOPs = v
		w.Detail = append(w.Detail, OpCount{Op: "flops", FLOPs: v, Method: "declared: " + flopsExpr})
	}
	if bytesExpr != "" {
		v, err := eval(bytesExpr, vars)
		if err != nil {
			return Work{}, fmt.Errorf("declared bytes %q: %w", bytesExpr, err)
		}
		w.Bytes = v
		w.Detail = append(w.Detail, OpCount{Op: "bytes", Bytes: v, Method: "declared: " + bytesExpr})
	}
	if w.FLOPs < 0 || w.Bytes < 0 {
		return Work{}, fmt.Errorf("declared work is negative (flops %g, bytes %g)", w.FLOPs, w.Bytes)
	}
	return w, nil
}

//go:embed trace.py
var traceScript string

// TraceOptions control tracing a reference.
type TraceOptions struct {
	Python  string        // interpreter; toolchain.Python() when empty
	Shapes  string        // exported to the reference as KEVOLVE_SHAPES when set
	Device  string        // "auto" (meta, then cpu), "meta" or "cpu"
	Timeout time.Duration // default 120 s
}

type traceOut struct {
	FLOPs  float64 `json:"flops"`
	Bytes  float64 `json:"bytes"`
	Dtype  string  `json:"dtype"`
	Device string  `json:"device"`
	Note   string  `json:"note"`
	Ops    []struct {
		Op     string  `json:"op"`
		Calls  int     `json:"calls"`
		FLOPs  float64 `json:"flops"`
		Method string  `json:"method"`
	} `json:"ops"`
	BytesDetail []OpCount `json:"bytes_detail"`
}

// Trace derives Work by running the reference's forward once under a torch
// dispatch mode (on meta tensors when the reference allows, else on CPU):
// matmul/bmm/conv/attention exactly, other ops by output elements times a
// per-op cost stated in trace.py; bytes = inputs + parameters read once +
// outputs written once.
func Trace(ctx context.Context, refPath string, opt TraceOptions) (Work, error) {
	if opt.Python == "" {
		opt.Python = toolchain.Python()
	}
	if opt.Device == "" {
		opt.Device = "auto"
	}
	if opt.Timeout == 0 {
		opt.Timeout = 120 * time.Second
	}
	ctx, cancel := context.WithTimeout(ctx, opt.Timeout)
	defer cancel()
	var env []string
	if opt.Shapes != "" {
		env = append(env, "KEVOLVE_SHAPES="+opt.Shapes)
	}
	// Tracing is CPU/meta work: hide GPUs so a reference cannot grab one.
	env = append(env, "CUDA_VISIBLE_DEVICES=", "HIP_VISIBLE_DEVICES=")
	var out traceOut
	// The counting core is the worker's evaluate/workcount.py (written here as a flat workcount.py), shared with the
	// evaluation child (which counts the reference on its real inputs).
	core, err := worker.PyFile("evaluate/workcount.py")
	if err != nil {
		return Work{}, fmt.Errorf("trace %s: %w", refPath, err)
	}
	if err := runScriptWith(ctx, opt.Python, "kevolve_trace.py", traceScript, map[string][]byte{"workcount.py": core}, env, &out, refPath, "--device", opt.Device); err != nil {
		return Work{}, fmt.Errorf("trace %s: %w", refPath, err)
	}
	w := Work{FLOPs: out.FLOPs, Bytes: out.Bytes, Dtype: out.Dtype, Source: "traced"}
	for _, o := range out.Ops {
		if o.FLOPs == 0 {
			continue // views and copies: listed only when they cost something
		}
		w.Detail = append(w.Detail, OpCount{Op: o.Op, Calls: o.Calls, FLOPs: o.FLOPs, Method: o.Method + " (traced on " + out.Device + ")"})
	}
	w.Detail = append(w.Detail, out.BytesDetail...)
	if out.Note != "" {
		w.Detail = append(w.Detail, OpCount{Op: "note", Method: out.Note})
	}
	return w, nil
}

// Count returns declared work where formulas are given and traced work for
// whatever is missing: a declared FLOP formula with traced bytes, say.
// Declared figures always win over traced ones.
func Count(ctx context.Context, refPath, flopsExpr, bytesExpr, dtype string, vars map[string]float64, eval EvalFunc, opt TraceOptions) (Work, error) {
	var d Work
	if flopsExpr != "" || bytesExpr != "" {
		var err error
		if d, err = Declared(flopsExpr, bytesExpr, dtype, vars, eval); err != nil {
			return Work{}, err
		}
		if flopsExpr != "" && bytesExpr != "" && dtype != "" {
			return d, nil
		}
	}
	t, err := Trace(ctx, refPath, opt)
	if err != nil {
		return Work{}, err
	}
	if flopsExpr == "" && bytesExpr == "" {
		if dtype != "" {
			t.Dtype = dtype
		}
		return t, nil
	}
	// Mixed: declared where given, traced otherwise.
	m := Work{Dtype: t.Dtype, Source: "declared"}
	if dtype != "" {
		m.Dtype = dtype
	}
	if flopsExpr != "" {
		m.FLOPs = d.FLOPs
	} else {
		m.FLOPs = t.FLOPs
		m.Source = "declared+traced"
	}
	if bytesExpr != "" {
		m.Bytes = d.Bytes
	} else {
		m.Bytes = t.Bytes
		m.Source = "declared+traced"
	}
	m.Detail = append(d.Detail, t.Detail...)
	return m, nil
}
