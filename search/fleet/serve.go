package fleet

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"runtime"
	"time"

	"github.com/kevolve/kevolve-mcp/harness"
	"github.com/kevolve/kevolve-mcp/harness/device"
	"github.com/kevolve/kevolve-mcp/harness/lease"
	"github.com/kevolve/kevolve-mcp/harness/sol"
	"github.com/kevolve/kevolve-mcp/harness/toolchain"
	"github.com/kevolve/kevolve-mcp/search/launch"
)

// WorkerOptions are `kevolve-mcp worker`'s settings.
type WorkerOptions struct {
	Coordinator string
	Token       string
	Name        string
	// Target is the device kind offered: auto (every GPU, else the CPU),
	// nvidia, amd or cpu.
	Target string
	// Slots: for cpu, how many CPU device slots (fake device indices) to
	// offer; for a GPU target, at most this many GPUs (0 = all).
	Slots int
	// JobsPerDevice is how many jobs the worker runs on one GPU at once
	// (0 = as many as the in-process service places on one device,
	// lease.HoldersPerGPU): their compiling and loading overlap the
	// device phase of the one that holds the GPU. CPU slots take one each.
	JobsPerDevice int
	// Share "I/N" keeps the GPUs whose index is I modulo N: N local
	// workers on one host split its GPUs instead of sharing them.
	Share    string
	Python   string
	CacheDir string
	// HostMemLimit is harness.EvalConfig.HostMemLimit for the worker's
	// evaluations (0 = the harness default, < 0 = none).
	HostMemLimit int64
	// Ceilings give SOL figures (nil = none).
	Ceilings *sol.Ceilings
	Drain    time.Duration
	Log      *slog.Logger
}

// ServeWorker discovers this host's devices, starts the local evaluation
// service and serves the coordinator until ctx ends (SIGTERM): then it
// drains and returns nil.
func ServeWorker(ctx context.Context, o WorkerOptions) error {
	if o.Coordinator == "" {
		return errors.New("worker: give --coordinator URL (the evolve run's --listen address)")
	}
	if o.Log == nil {
		o.Log = slog.New(slog.NewTextHandler(os.Stderr, nil))
	}
	if o.Python == "" {
		o.Python = toolchain.Python()
	}
	if o.CacheDir == "" {
		o.CacheDir = toolchain.CacheDir()
	}
	dctx, cancel := context.WithTimeout(ctx, 60*time.Second)
	rep := device.Discover(dctx, device.Options{SkipPython: true})
	cancel()
	devs, err := LocalDevices(rep, o.Target, o.Slots)
	if err != nil {
		return err
	}
	if devs, err = ShareDevices(devs, o.Share); err != nil {
		return err
	}
	if o.JobsPerDevice < 0 {
		return fmt.Errorf("worker: --jobs-per-device %d: want 0 (the default) or more", o.JobsPerDevice)
	}
	perGPU := o.JobsPerDevice
	if perGPU == 0 {
		gpus := 0
		for _, d := range devs {
			if d.Target != "cpu" {
				gpus++
			}
		}
		perGPU = lease.HoldersPerGPU(gpus, runtime.NumCPU())
	}
	dropTokenEnv() // before the evaluation service starts its Python (secrets.go)
	cfg := harness.EvalConfig{Python: o.Python, CacheDir: o.CacheDir, Logger: o.Log, HostMemLimit: o.HostMemLimit}
	for i := range devs {
		if devs[i].Target != "cpu" {
			devs[i].Jobs = perGPU
			cfg.MaxPerDevice = perGPU // the pool places what the worker claims
		}
	}
	if o.Ceilings != nil { // this host's measured (or spec) roofline
		c := jsonObject(o.Ceilings)
		for i := range devs {
			devs[i].Ceilings = c
		}
	}
	ev, err := harness.NewEvaluator(cfg)
	if err != nil {
		return fmt.Errorf("worker: %w", err)
	}
	defer ev.Close()
	// Warm before taking work: the Python parent imports torch once here
	// (seconds), so a worker that registers is ready to evaluate.
	wctx, cancel := context.WithTimeout(ctx, 3*time.Minute)
	_, werr := ev.WorkerInfo(wctx)
	cancel()
	if werr != nil {
		if ctx.Err() != nil {
			return nil
		}
		return fmt.Errorf("worker: the evaluation service did not start: %w", werr)
	}
	w := &Worker{Coordinator: o.Coordinator, Token: o.Token, Name: o.Name, Devices: devs, Log: o.Log, Drain: o.Drain,
		Runner: &HarnessRunner{Adapter: launch.NewAdapter(ev, o.Ceilings, launch.EvalSettings{}), Dir: filepath.Join(o.CacheDir, "fleet")},
		Limit:  func(d Device) int { return ev.DeviceLimits()[fmt.Sprintf("%s:%d", d.Target, d.Index)] }}
	return w.Run(ctx)
}
