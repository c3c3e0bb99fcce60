package harness

import (
	"context"
	"fmt"
	"io"

	"github.com/kevolve/kevolve-mcp/harness/device"
	"github.com/kevolve/kevolve-mcp/harness/sandbox"
	"github.com/kevolve/kevolve-mcp/harness/toolchain"
	"github.com/kevolve/kevolve-mcp/harness/worker"
)

// DoctorReport is what the host offers evaluations: its devices and
// toolchains (device.Report) and the sandbox layers candidate code runs
// under here, each active, replaced or missing with what the host loses.
type DoctorReport struct {
	device.Report
	Sandbox []sandbox.Layer `json:"sandbox"`
	// Profiled is the jail of a process a profiler launches
	// (profile_kernel, the own-work check), as each kind of profiler gets it.
	Profiled []sandbox.Profiled `json:"profiled"`
}

// Doctor discovers the host with the evaluation's Python ("" finds one)
// and enters the sandbox for real in a throwaway process. A probe that
// cannot run reports every Python-side layer missing, with why.
func Doctor(ctx context.Context, python string) DoctorReport {
	r := DoctorReport{Report: device.Discover(ctx, device.Options{Python: python})}
	if python == "" {
		python = toolchain.Python()
	}
	rep, err := worker.ProbeSandbox(ctx, python, "")
	if err != nil {
		rep = sandbox.Report{Missing: map[string]string{"all": err.Error()}}
	}
	r.Sandbox = rep.Merge()
	for _, v := range []struct {
		profilers string
		byCgroup  bool
	}{{"perf, CPU, CUPTI", false}, {"Nsight Compute, rocprofv3", true}} {
		rep, err := worker.ProbeProfiledSandbox(ctx, python, "", v.byCgroup)
		if err != nil {
			rep = sandbox.Report{Missing: map[string]string{"all": err.Error()}}
		}
		r.Profiled = append(r.Profiled, sandbox.Profiled{Profilers: v.profilers, Layers: rep.Merge()})
	}
	return r
}

// WriteTable prints the report as two tables: devices and toolchains,
// then the sandbox layers.
func (r DoctorReport) WriteTable(w io.Writer) error {
	if err := device.WriteTable(w, r.Report); err != nil {
		return err
	}
	fmt.Fprintln(w)
	if err := sandbox.WriteTable(w, r.Sandbox); err != nil {
		return err
	}
	fmt.Fprintln(w)
	return sandbox.WriteProfiledTable(w, r.Profiled)
}
