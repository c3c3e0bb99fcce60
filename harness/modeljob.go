package harness

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"time"

	"github.com/kevolve/kevolve-mcp/harness/target"
	"github.com/kevolve/kevolve-mcp/harness/worker"
)

// ModelJobs are the worker's whole-model jobs: model_profile (profile a
// model, extract its hot regions as problems), model_starts (Inductor's
// generated code for extracted problems, as start kernels) and
// model_verify (a patched model against the original, correct and timed),
// each the worker module (worker/py/whole_model/) that runs it.
var ModelJobs = map[string]string{"model_profile": "whole_model.profile", "model_verify": "whole_model.verify",
	"model_starts": "whole_model.starts"}

// ModelJobRequest is one whole-model job.
type ModelJobRequest struct {
	Module  string         // one of ModelJobs
	Target  string         // auto, cpu, nvidia, amd
	Device  string         // index or UUID ("" = any free one)
	Args    map[string]any // the job's arguments; "device" is set here
	Timeout time.Duration  // default 10 minutes
}

// ModelJob runs a whole-model job in a forked child of the warm worker, as
// an evaluation runs, holding its device alone: a profile or an end-to-end
// timing shares the device with nothing. The job's JSON result is decoded
// into out; a result with an "error" field is a Go error.
func (e *Evaluator) ModelJob(ctx context.Context, r ModelJobRequest, out any) error {
	module, ok := ModelJobs[r.Module]
	if !ok {
		return fmt.Errorf("model job %q: unknown", r.Module)
	}
	l, err := e.Acquire(ctx, r.Target, r.Device, true)
	if err != nil {
		return err
	}
	defer l.Release()
	args := map[string]any{}
	for k, v := range r.Args {
		args[k] = v
	}
	env := l.Env()
	var mem int64
	args["device"] = "cuda"
	if l.Target() == target.CPU {
		args["device"] = "cpu"
		env["TRITON_INTERPRET"] = "1"
		mem = e.cfg.CPUMemLimit
	}
	if r.Timeout <= 0 {
		r.Timeout = 10 * time.Minute
	}
	writable, err := modelJobFolders(args)
	if err != nil {
		return fmt.Errorf("%s: %w", r.Module, err)
	}
	o, err := e.w.Run(ctx, worker.Job{Module: module, Func: "main", Args: args, Env: env, Timeout: r.Timeout,
		MemLimit: mem, RSSLimit: max(e.cfg.HostMemLimit, 0), Writable: writable})
	if err != nil {
		return fmt.Errorf("%s: %w", r.Module, err)
	}
	switch {
	case o.TimedOut:
		return fmt.Errorf("%s: killed after %s in stage %q", r.Module, r.Timeout, o.Stage)
	case o.Result == nil:
		return fmt.Errorf("%s: the job's process died (code %d, signal %d) in stage %q: %s", r.Module, o.Code, o.Signal, o.Stage, clipLog(o.Log))
	}
	var failed struct {
		Error string `json:"error"`
	}
	if json.Unmarshal(o.Result, &failed) == nil && failed.Error != "" {
		return fmt.Errorf("%s: %s", r.Module, failed.Error)
	}
	if err := json.Unmarshal(o.Result, out); err != nil {
		return fmt.Errorf("%s: decode result: %w", r.Module, err)
	}
	return nil
}

// modelJobFolders are the folders a model job writes (the extracted
// problems, the package it verifies and builds kernels in): made here, and
// the only ones its sandbox may write besides its own work folder.
func modelJobFolders(args map[string]any) ([]string, error) {
	var out []string
	for _, k := range []string{"out_dir", "package_dir"} {
		d, ok := args[k].(string)
		if !ok || d == "" {
			continue
		}
		if err := os.MkdirAll(d, 0o755); err != nil {
			return nil, fmt.Errorf("%s: %w", k, err)
		}
		out = append(out, d)
	}
	return out, nil
}

// clipLog keeps the end of a job's log, where a traceback ends.
func clipLog(s string) string {
	const n = 2000
	if len(s) > n {
		return "..." + s[len(s)-n:]
	}
	return s
}
