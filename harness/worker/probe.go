package worker

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"time"

	"github.com/kevolve/kevolve-mcp/harness/sandbox"
	"github.com/kevolve/kevolve-mcp/harness/toolchain"
)

// ProbeSandbox enters the job sandbox in a throwaway process over a
// temporary folder (python -m sandbox.layers --probe), as a job's child would on this
// host, and returns which layers it got (for doctor).
func ProbeSandbox(ctx context.Context, python, cacheDir string) (sandbox.Report, error) {
	return probe(ctx, python, cacheDir, "sandbox.layers", "--probe")
}

// ProbeProfiledSandbox enters the jail of a process a profiler launches
// (python -m sandbox.profiled --probe), as the profile driver does: inside
// a cgroup alone where byCgroup (under Nsight Compute or rocprofv3), else
// in a PID namespace inside one (for doctor).
func ProbeProfiledSandbox(ctx context.Context, python, cacheDir string, byCgroup bool) (sandbox.Report, error) {
	args := []string{"--probe"}
	if byCgroup {
		args = append(args, "--cgroup")
	}
	return probe(ctx, python, cacheDir, "sandbox.profiled", args...)
}

// probe runs a sandbox module's probe from the unpacked worker and decodes
// the report it prints last.
func probe(ctx context.Context, python, cacheDir, module string, args ...string) (sandbox.Report, error) {
	var r sandbox.Report
	if cacheDir == "" {
		cacheDir = toolchain.CacheDir()
	}
	dir, _, err := unpack(cacheDir)
	if err != nil {
		return r, err
	}
	ctx, cancel := context.WithTimeout(ctx, 60*time.Second)
	defer cancel()
	// The build cache as the evaluator sets it (NewEvaluator).
	env := []string{"KEVOLVE_CACHE_DIR=" + filepath.Join(cacheDir, "kernels")}
	o, err := toolchain.Run(ctx, toolchain.Cmd{Name: python, Args: append([]string{"-m", module}, args...), Dir: dir, Env: env})
	if err != nil {
		return r, fmt.Errorf("%s probe: %w (%s)", module, err, toolchain.Tail(o.Stderr, 300))
	}
	line := toolchain.LastJSONLine(o.Stdout)
	if err := json.Unmarshal([]byte(line), &r); err != nil {
		return r, fmt.Errorf("%s probe: decode %q: %w", module, toolchain.Tail(line, 200), err)
	}
	return r, nil
}
