package harness

import (
	"context"

	"github.com/kevolve/kevolve-mcp/harness/target"
)

// runsOnCPU reports whether work for this target name (auto: where an
// evaluation would run) runs on the CPU here.
func (e *Evaluator) runsOnCPU(ctx context.Context, name string) bool {
	t, err := e.resolveTarget(ctx, name)
	return err == nil && t == target.CPU
}

// profilesCPU reports whether a profile with this backend runs on the CPU.
func (e *Evaluator) profilesCPU(ctx context.Context, backend string) bool {
	return backend == "cpu" || backend == "auto" && e.runsOnCPU(ctx, "auto")
}

// cpuShapes is the shape set work on the CPU takes when none is named, as
// an evaluation there does: the large sets are sized for GPUs.
func cpuShapes() string { return target.MustGet(target.CPU).DefaultShapes() }
