package harness

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"strings"
	"time"

	"github.com/kevolve/kevolve-mcp/harness/target"
	"github.com/kevolve/kevolve-mcp/harness/toolchain"
	"github.com/kevolve/kevolve-mcp/harness/worker"
)

// The reference's torch.compile baseline is measured by a worker job of its
// own (evaluate/baseline.py), never in the candidate's process: there a
// candidate could patch torch.compile or Inductor's configuration, or queue
// work on the device while the compiled reference was timed, and the slowed
// figure would be kept (baseline.go) for every later evaluation of the
// reference. On a GPU the job starts beside the candidate's build step, so
// its compile (10-15 s of CPU a problem on the H200 host, the last stage of
// every first evaluation before) is off the evaluation's path; the compiled
// code's first run (Triton's autotuning) and the timed calls take the
// device gate.

// stageCompileBaseline is the stage_s entry of the baseline job's seconds
// (the name of the stage that measured it inside the evaluation before).
const stageCompileBaseline = "timing_compile"

// compileJobSlack is what the baseline job may take beyond torch.compile's
// own cap: its child's start, the reference's construction and the timed calls.
const compileJobSlack = 60 * time.Second

// compileRun is a baseline measurement in flight.
type compileRun struct {
	done   chan struct{}
	cancel context.CancelFunc
	b      *baseline // set when done, nil on failure
	warn   string    // why there is no baseline, when there is none
}

// compileJobArgs is evaluate/baseline.py's main's arguments.
type compileJobArgs struct {
	CompileCapS float64   `json:"compile_cap_s"` // what torch.compile's first call may take
	Reference   jobSource `json:"reference"`
	Seed        int64     `json:"seed"`
	Target      string    `json:"target"` // "nvidia" or "cpu", as evalJob's
}

// compileArgs is the baseline job's arguments for r's reference.
func compileArgs(r *evalRun) compileJobArgs {
	return compileJobArgs{CompileCapS: compileCap(r.tgt).Seconds(), Reference: jobSource{Code: r.refCode, Path: r.refPath},
		Seed: r.req.Seed, Target: pyTarget(r.tgt)}
}

// startCompile starts measuring the reference's torch.compile baseline
// where this evaluation claimed it (workerJob); nil otherwise.
func (e *Evaluator) startCompile(ctx context.Context, r *evalRun) *compileRun {
	if !r.compileClaimed {
		return nil
	}
	ctx, cancel := context.WithCancel(ctx)
	c := &compileRun{done: make(chan struct{}), cancel: cancel}
	go func() {
		defer close(c.done)
		c.b, c.warn = e.measureCompile(ctx, r)
	}()
	return c
}

// measureCompile runs the baseline job on the evaluation's device.
func (e *Evaluator) measureCompile(ctx context.Context, r *evalRun) (*baseline, string) {
	if err := e.w.Start(ctx); err != nil {
		return nil, "no torch.compile timing: " + err.Error()
	}
	env := maps.Clone(r.env)
	var mem int64
	if r.tgt == target.CPU {
		mem = e.cfg.CPUMemLimit
	}
	out, err := e.w.Run(ctx, worker.Job{Module: "evaluate.baseline", Func: "main",
		Args:    compileArgs(r),
		Env:     env,
		Timeout: compileCap(r.tgt) + compileJobSlack, MemLimit: mem, RSSLimit: max(e.cfg.HostMemLimit, 0),
		Gate: r.lease.Exclusive})
	if err != nil {
		return nil, fmt.Sprintf("no torch.compile timing: its job failed: %v", err)
	}
	var res struct {
		RefCompile *Stats  `json:"ref_compile"`
		Seconds    float64 `json:"seconds"`
		Warning    string  `json:"warning"`
		Error      string  `json:"error"`
	}
	switch {
	case out.Result == nil || json.Unmarshal(out.Result, &res) != nil:
		return nil, fmt.Sprintf("no torch.compile timing: its job ended without a result (exit %d, stage %q)", out.Code, out.Stage)
	case res.RefCompile == nil:
		if res.Warning != "" {
			return nil, res.Warning
		}
		return nil, "no torch.compile timing: " + strings.TrimSpace(toolchain.Tail(res.Error, 300))
	}
	return &baseline{Stats: res.RefCompile, MeasuredAt: time.Now(), Where: measuredWhere(r), MeasureS: res.Seconds}, ""
}

// compileCap is what torch.compile's first call of a reference may take:
// Inductor's C++ build on a loaded CPU took 79 s of the 90 a GPU's Triton
// build is allowed.
func compileCap(t target.Name) time.Duration {
	if t == target.CPU {
		return 240 * time.Second
	}
	return 90 * time.Second
}

// wait is the measurement's outcome once it is done, or a warning when the
// evaluation's deadline (until) comes first; the job is then stopped.
func (c *compileRun) wait(ctx context.Context, until time.Duration) (*baseline, string) {
	t := time.NewTimer(max(until, 0))
	defer t.Stop()
	select {
	case <-c.done:
		return c.b, c.warn
	case <-t.C:
	case <-ctx.Done():
	}
	c.stop()
	return nil, "no torch.compile timing: its measurement was still running at the evaluation's deadline"
}

// stop ends the job (a measurement nobody will read) and waits for it;
// one that is done, or none, is left as it is.
func (c *compileRun) stop() {
	if c == nil {
		return
	}
	c.cancel()
	<-c.done
}
