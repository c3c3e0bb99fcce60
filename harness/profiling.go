package harness

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/kevolve/kevolve-mcp/harness/problem"
	"github.com/kevolve/kevolve-mcp/harness/profile"
)

// ProfileOptions are how to profile.
type ProfileOptions struct {
	Mode    string        // kernel (default): the candidate's kernels; model: rank the reference's operators
	Backend string        // auto (default), ncu, rocprof or cpu
	Device  string        // index or UUID of the device to hold ("" = any free one)
	Timeout time.Duration // default 120 s
	// Base carries the profiler's own settings (interpreter, tool paths).
	Base profile.Options
	// Progress receives "profiling" and "done"; may be nil.
	Progress func(stage string, done, total int)
}

// Profile profiles a candidate (mode kernel) or ranks a reference's
// operators (mode model) with the device's profiler, holding a device
// lease alone for the run: counters taken while another kernel runs are
// meaningless, and so would be that kernel's timing. ev may be nil (no
// Python worker: no lease, the profiler says what is missing).
//
// Nsight Compute and rocprofv3 launch the process they profile, so a
// profile cannot be a fork of the warm worker; it starts its own Python.
func Profile(ctx context.Context, ev *Evaluator, p Problem, c Candidate, o ProfileOptions) (profile.Report, error) {
	mode := strings.ToLower(o.Mode)
	if mode == "" {
		mode = "kernel"
	}
	if mode != "kernel" && mode != "model" {
		return profile.Report{}, problem.Inputf("mode", "%q: use kernel or model", o.Mode)
	}
	backend := strings.ToLower(o.Backend)
	switch backend {
	case "":
		backend = "auto"
	case "auto", "ncu", "rocprof", "cpu":
	default:
		return profile.Report{}, problem.Inputf("backend", "%q: use auto, ncu, rocprof or cpu", o.Backend)
	}
	if o.Timeout < 0 || o.Timeout > time.Hour {
		return profile.Report{}, problem.Inputf("timeout_s", "must be between 0 and 3600 seconds")
	}
	if err := problem.CheckShapes(p.Shapes); err != nil {
		return profile.Report{}, err
	}
	if mode == "kernel" && c.Path == "" && c.Code == "" {
		return profile.Report{}, problem.Inputf("candidate", "required in mode kernel (a file defining ModelNew); use mode model to rank the reference's operators")
	}
	refPath, cleanRef, err := profile.ReferenceFile(p.Reference)
	if err != nil {
		return profile.Report{}, err
	}
	defer cleanRef()
	candPath := ""
	if mode == "kernel" {
		if _, _, err := problem.Read(c, "candidate"); err != nil {
			return profile.Report{}, err
		}
		path, cleanCand, err := profile.ReferenceFile(c)
		if err != nil {
			return profile.Report{}, err
		}
		defer cleanCand()
		candPath = path
	}
	opt := o.Base
	var notes []string
	if ev != nil && mode == "kernel" && ev.profilesCPU(ctx, backend) {
		if p.Shapes == "" {
			p.Shapes = cpuShapes()
			notes = append(notes, fmt.Sprintf("shapes %s: the CPU target's default", p.Shapes))
		}
		var more []string
		opt.Roofline, more = ev.cpuRoofline(ctx, p, refPath)
		notes = append(notes, more...)
	}
	opt.Backend, opt.Shapes = backend, p.Shapes
	if o.Timeout > 0 {
		opt.Timeout = o.Timeout
	}
	if ev != nil {
		l, err := ev.Acquire(ctx, profile.Target(backend), o.Device, true)
		if err != nil {
			return profile.Report{}, err
		}
		defer l.Release()
		opt.Env = l.Env()
		if opt.PyDir == "" {
			opt.PyDir = ev.PyDir()
		}
		opt.CacheDir = kernelCache(ev.cfg.CacheDir)
	}
	progress := o.Progress
	if progress == nil {
		progress = func(string, int, int) {}
	}
	progress("profiling", 0, 1)
	defer progress("done", 1, 1)
	if mode == "model" {
		return profile.ProfileModel(ctx, refPath, opt)
	}
	rep, err := profile.Profile(ctx, refPath, candPath, opt)
	rep.Notes = append(notes, rep.Notes...)
	return rep, err
}
