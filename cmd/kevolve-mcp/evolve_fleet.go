package main

import (
	"fmt"

	"github.com/spf13/pflag"

	"github.com/kevolve/kevolve-mcp/search/fleet"
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
	return fleet.CheckOptions(fleet.Options{Workers: ff.workers, Listen: ff.listen, Token: ff.fleetToken(c), KindsSpec: ff.targets})
}

// fleetToken is --fleet-token, else the server's (KEVOLVE_TOKEN).
func (ff *fleetFlags) fleetToken(c *cli) string {
	if ff.token != "" {
		return ff.token
	}
	return c.g.token
}

// options are the fleet flags as search/fleet takes them; nil without a
// fleet.
func (ff *fleetFlags) options(c *cli) *fleet.Options {
	if !ff.enabled() {
		return nil
	}
	return &fleet.Options{Workers: ff.workers, Listen: ff.listen, Token: ff.fleetToken(c), Advertise: ff.advertise,
		Slots: ff.slots, JobsPerDevice: ff.perGPU, EvalHostMemGiB: c.g.hostMemGiB, GPUsPerNode: ff.gpus, SlurmArgs: ff.slurmArgs,
		KindsSpec: ff.targets}
}
