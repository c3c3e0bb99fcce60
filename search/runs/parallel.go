package runs

import (
	"fmt"
	"runtime"

	"github.com/kevolve/kevolve-mcp/search/engine"
	"github.com/kevolve/kevolve-mcp/search/fleet"
)

// Parallelism is the engine's slot count: asked (--parallel) when given,
// else what the fleet (nil: none) is known to take at once, else 1. On the
// CPU that is a slot per worker slot (the workers' count times their
// slots). On GPUs it is two per GPU (each GPU's device phase stays busy
// while the next candidate builds): GPUsPerNode per worker where given,
// else this host's GPUs (localGPUs, asked only then) split over local
// workers, else a whole node of nodeGPUsGuess for remote ones; a floor
// where workers hold more.
func Parallelism(asked int, target string, f *fleet.Options, localGPUs func() int) (int, error) {
	if asked < 0 || asked > engine.MaxParallel {
		return 0, fmt.Errorf("--parallel %d: give 1..%d", asked, engine.MaxParallel)
	}
	if asked > 0 {
		return asked, nil
	}
	if f == nil || f.Workers == "" {
		return localParallel(target, localGPUs, runtime.NumCPU()), nil
	}
	spec, err := fleet.ParseWorkers(f.Workers)
	if err != nil {
		return 0, err
	}
	if target == "cpu" || target == "" {
		return min(spec.N*max(1, f.Slots), engine.MaxParallel), nil
	}
	gpus := f.GPUsPerNode
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
