package main

import (
	"context"
	"fmt"
	"io"
	"path/filepath"
	"runtime"
	"time"

	"github.com/spf13/pflag"

	"github.com/kevolve/kevolve-mcp/harness"
	"github.com/kevolve/kevolve-mcp/harness/target"

	"github.com/kevolve/kevolve-mcp/search"
	"github.com/kevolve/kevolve-mcp/search/engine"
	"github.com/kevolve/kevolve-mcp/search/fleet"
	"github.com/kevolve/kevolve-mcp/search/store"
)

// fleetFlags are evolve's fleet options: where evaluations run.
type fleetFlags struct {
	workers   string
	listen    string
	token     string
	advertise string
	targets   string
	gpus      int
	slots     int
	perGPU    int
	slurmArgs []string
}

func addFleetFlags(f *pflag.FlagSet, ff *fleetFlags) {
	f.StringVar(&ff.workers, "workers", "", "evaluate on a fleet: local:N, ssh:HOST[,HOST...], slurm:PARTITION[:N] or k8s:NAMESPACE[:N]")
	f.StringVar(&ff.listen, "listen", "", "fleet coordinator address `HOST:PORT` (default 127.0.0.1:0 for local workers, 0.0.0.0:8787 for remote ones)")
	f.StringVar(&ff.token, "fleet-token", "", "bearer token workers must send (default $KEVOLVE_TOKEN; made up for launched remote workers)")
	f.StringVar(&ff.advertise, "advertise", "", "the coordinator `URL` workers dial (default: from --listen and this host's name)")
	f.StringVar(&ff.targets, "targets", "", "evaluate every node on each device kind, e.g. nvidia:sm_90,amd:gfx942 or h100,h200 (the first gives the fitness)")
	f.IntVar(&ff.gpus, "worker-gpus", 0, "slurm/k8s: GPUs per worker (--gres=gpu:K; 0 = whole nodes)")
	f.IntVar(&ff.slots, "worker-slots", 0, "local cpu workers: evaluation slots each")
	f.IntVar(&ff.perGPU, "worker-jobs-per-gpu", 0, "GPU workers: evaluations each runs on one GPU at once (default 6; fewer for problems that need most of a GPU's memory)")
	f.StringArrayVar(&ff.slurmArgs, "sbatch-arg", nil, "extra sbatch option for slurm workers (repeatable), e.g. --sbatch-arg=--time=04:00:00")
}

func (ff *fleetFlags) enabled() bool { return ff.workers != "" || ff.listen != "" }

// remote reports whether evaluations run on other hosts (workers that are
// launched elsewhere or join --listen), so this host's devices do not say
// which targets exist.
func (ff *fleetFlags) remote() bool {
	if ff.workers == "" {
		return ff.listen != ""
	}
	spec, err := fleet.ParseWorkers(ff.workers)
	return err != nil || spec.Engine != "local"
}

// resolveTarget reads --target through the harness's one resolution (auto
// picks the GPU torch drives here, else the CPU; a named target without
// its device here fails with the device's message, as eval does), or by
// name alone when remote workers own the devices.
func resolveTarget(ctx context.Context, ev *harness.Evaluator, s string, remote bool) (string, error) {
	if remote {
		t, err := target.Parse(s)
		if err != nil {
			return "", err
		}
		if t != target.Auto {
			return string(t), nil
		}
	}
	t, err := ev.ResolveTarget(ctx, s)
	return string(t), err
}

// parallelism is the engine's slot count: --parallel when given, else
// what the fleet is known to take at once, else 1. On the CPU that is a
// slot per worker slot (--workers' count times --worker-slots). On GPUs it
// is two per GPU (each GPU's device phase stays busy while the next
// candidate builds): --worker-gpus per worker where given, else this
// host's GPUs (localGPUs, asked only then) split over local workers, else
// a whole node of nodeGPUsGuess for remote ones; a floor where workers
// hold more.
func (ff *fleetFlags) parallelism(flag int, target string, localGPUs func() int) (int, error) {
	if flag < 0 || flag > engine.MaxParallel {
		return 0, fmt.Errorf("--parallel %d: give 1..%d", flag, engine.MaxParallel)
	}
	if flag > 0 {
		return flag, nil
	}
	if ff.workers == "" {
		return localParallel(target, localGPUs, runtime.NumCPU()), nil
	}
	spec, err := fleet.ParseWorkers(ff.workers)
	if err != nil {
		return 0, err
	}
	if target == "cpu" || target == "" {
		return min(spec.N*max(1, ff.slots), engine.MaxParallel), nil
	}
	gpus := ff.gpus
	switch {
	case gpus > 0:
	case spec.Engine == "local":
		gpus = max(1, localGPUs()/spec.N)
	default:
		gpus = nodeGPUsGuess
	}
	return min(spec.N*gpus*2, engine.MaxParallel), nil
}

// localPerGPU is the pipelines per GPU of this host for a run without a
// fleet: an evaluation's wall (1.2-2.9 s on the H100) is mostly host work
// (building, loading, correctness, the search's own step) around a device
// phase of a few hundred ms that the lease gate runs one at a time, so a
// few in flight keep the device fed while the others build.
const localPerGPU = 4

// localParallel is the default for a run evaluated in this process: one
// pipeline on the CPU (the timed work takes the cores), else localPerGPU
// per GPU of this host, at most one per core (each pipeline's host work
// takes one).
func localParallel(target string, localGPUs func() int, cpus int) int {
	if target == "cpu" {
		return 1
	}
	gpus := localGPUs()
	if gpus == 0 {
		return 1
	}
	return max(1, min(gpus*localPerGPU, cpus, engine.MaxParallel))
}

// nodeGPUsGuess is the GPUs of a remote whole-node worker when nothing
// says otherwise (the usual 8-GPU node).
const nodeGPUsGuess = 8

// validate checks the fleet flags before any work starts.
func (ff *fleetFlags) validate(c *cli) error {
	if ff.perGPU < 0 || ff.slots < 0 || ff.gpus < 0 {
		return fmt.Errorf("--worker-jobs-per-gpu, --worker-slots and --worker-gpus must not be negative")
	}
	if !ff.enabled() {
		if ff.targets != "" {
			return fmt.Errorf("--targets needs a fleet: add --workers (or --listen)")
		}
		return nil
	}
	token := ff.token
	if token == "" {
		token = c.g.token
	}
	return fleet.CheckOptions(fleet.Options{Workers: ff.workers, Listen: ff.listen, Token: token, KindsSpec: ff.targets})
}

// launch starts the coordinator and the workers --workers asks for, which
// offer target's devices (--target; every kind of --targets where given)
// and write their logs under logDir.
func (ff *fleetFlags) launch(ctx context.Context, a *app, c *cli, target, logDir string) (*fleet.Fleet, error) {
	token := ff.token
	if token == "" {
		token = c.g.token
	}
	o := fleet.Options{DB: a.db, Workers: ff.workers, Listen: ff.listen, Token: token, Advertise: ff.advertise,
		Target: target, Slots: ff.slots, JobsPerDevice: ff.perGPU, EvalHostMemGiB: c.g.hostMemGiB, GPUsPerNode: ff.gpus, SlurmArgs: ff.slurmArgs, Name: "kevolve",
		LogDir: logDir, Log: c.logger}
	if ff.targets != "" {
		o.KindsSpec, o.Target = ff.targets, "auto"
	}
	return fleet.Start(ctx, o)
}

// startFleet starts the coordinator and workers for one evolve run; the
// returned evaluator replaces the in-process one, and stop ends the workers.
func (ff *fleetFlags) startFleet(ctx context.Context, a *app, c *cli, p search.Problem, runDir string, stderr io.Writer) (search.Evaluator, func(), error) {
	f, err := ff.launch(ctx, a, c, p.Target, filepath.Join(runDir, "workers"))
	if err != nil {
		return nil, nil, err
	}
	fmt.Fprintf(stderr, "fleet coordinator at %s\n", f.URL)
	tick := time.NewTicker(30 * time.Second)
	done := make(chan struct{})
	go func() {
		for {
			select {
			case <-done:
				return
			case <-tick.C:
				if s, err := fleet.Snapshot(ctx, f.Queue); err == nil {
					fmt.Fprintf(stderr, "\n%s\n", s.Line())
				}
			}
		}
	}()
	stop := func() {
		tick.Stop()
		close(done)
		if s, err := fleet.Snapshot(context.WithoutCancel(ctx), f.Queue); err == nil {
			s.WriteTable(stderr)
		}
		sctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		f.Close(sctx)
	}
	return f.Evaluator, stop, nil
}

// writeFleetPanel prints, for a run evaluated by a fleet, each worker's
// evaluations and utilization and each node's results by device kind.
func writeFleetPanel(ctx context.Context, st *store.SQLite, run *search.Run, nodes []*search.Node, w io.Writer) error {
	p, err := fleet.RunPanel(ctx, st.DB(), run, nodes)
	if err != nil || p == nil || len(p.Workers) == 0 {
		return err
	}
	fmt.Fprintln(w)
	return p.WriteText(w)
}
