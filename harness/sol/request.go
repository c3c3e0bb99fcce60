package sol

import (
	"context"
	"database/sql"
	"fmt"

	"github.com/kevolve/kevolve-mcp/harness/spec"
)

// Request is one SOL question, as the CLI (`kevolve-mcp sol`) and the
// sol_analysis tool ask it.
type Request struct {
	Reference  string  // KernelBench-format file; traced when FLOPs/Bytes are not given
	FLOPs      float64 // declared work (0 = derive)
	Bytes      float64
	Dtype      string // overrides the traced dtype (torch or short spelling)
	CandidateS float64
	ReferenceS float64
	Correct    bool
	Trace      TraceOptions
}

// Report is a Result with the counts' provenance.
type Report struct {
	Result
	Detail []OpCount `json:"detail,omitempty"`
	// Calibration is the CPU calibration this answer ran first (a fresh
	// database): its figures and duration_s.
	Calibration *Calibration `json:"calibration,omitempty"`
}

// Work resolves a request's work: declared numbers win, tracing fills in
// whatever was not declared.
func (r Request) Work(ctx context.Context) (Work, error) {
	dtype := ""
	if r.Dtype != "" {
		dtype = spec.NormalizeDtype(r.Dtype)
	}
	if r.FLOPs > 0 && r.Bytes > 0 {
		if dtype == "" {
			dtype = spec.FP32
		}
		return Work{FLOPs: r.FLOPs, Bytes: r.Bytes, Dtype: dtype, Source: "declared",
			Detail: []OpCount{{Op: "flops", FLOPs: r.FLOPs, Method: "declared by the caller"}, {Op: "bytes", Bytes: r.Bytes, Method: "declared by the caller"}}}, nil
	}
	if r.Reference == "" {
		return Work{}, fmt.Errorf("give a reference file to trace, or both flops and bytes")
	}
	w, err := Trace(ctx, r.Reference, r.Trace)
	if err != nil {
		return Work{}, err
	}
	if r.FLOPs > 0 {
		w.FLOPs, w.Source = r.FLOPs, "declared+traced"
		w.Detail = append([]OpCount{{Op: "flops", FLOPs: r.FLOPs, Method: "declared by the caller (wins over the trace)"}}, w.Detail...)
	}
	if r.Bytes > 0 {
		w.Bytes, w.Source = r.Bytes, "declared+traced"
		w.Detail = append([]OpCount{{Op: "bytes", Bytes: r.Bytes, Method: "declared by the caller (wins over the trace)"}}, w.Detail...)
	}
	if dtype != "" {
		w.Dtype = dtype
	}
	return w, nil
}

// AnalyzeRequest counts the work and bounds it under ceil.
func AnalyzeRequest(ctx context.Context, r Request, ceil Ceilings) (Report, error) {
	w, err := r.Work(ctx)
	if err != nil {
		return Report{}, err
	}
	return Report{Result: Analyze(w, ceil, r.CandidateS, r.ReferenceS, r.Correct), Detail: w.Detail}, nil
}

// CeilingsFor resolves a device's ceilings: figures measured on deviceUUID
// (db may be nil) over the datasheet row named by specKey (spec.Get, which
// takes aliases such as "h100"), else the row matching deviceName
// (spec.Lookup). Measured wins for every metric it has.
func CeilingsFor(ctx context.Context, db *sql.DB, deviceUUID, deviceName, specKey string) (Ceilings, error) {
	var row *spec.Row
	if specKey != "" {
		r, ok := spec.Get(specKey)
		if !ok {
			return Ceilings{}, fmt.Errorf("unknown device key %q (known: %s)", specKey, knownKeys())
		}
		row = &r
	} else if deviceName != "" {
		if r, ok := spec.Lookup(deviceName, 0); ok {
			row = &r
		}
	}
	var measured *Ceilings
	if db != nil && deviceUUID != "" {
		cal, ok, err := LoadCalibration(ctx, db, deviceUUID)
		if err != nil {
			return Ceilings{}, err
		}
		// A device key naming another device than the calibrated one must
		// not borrow its measurements.
		if ok && (specKey == "" || deviceName == "" || sameRow(specKey, deviceName)) {
			c := cal.Ceilings()
			measured = &c
		}
	}
	return Resolve(measured, row)
}

func sameRow(key, deviceName string) bool {
	a, ok1 := spec.Get(key)
	b, ok2 := spec.Lookup(deviceName, 0)
	return ok1 && ok2 && a.Key == b.Key
}

func knownKeys() string {
	var s string
	for i, r := range spec.All() {
		if i > 0 {
			s += ", "
		}
		s += r.Key
	}
	return s
}
