package compile

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sync"
	"time"

	"github.com/kevolve/kevolve-mcp/harness/device"
	"github.com/kevolve/kevolve-mcp/harness/target"
	"github.com/kevolve/kevolve-mcp/harness/toolchain"
)

var archRE = regexp.MustCompile(`^sm_[0-9]{2,3}[af]?$`)

var (
	detectOnce sync.Once
	detected   string
)

// DefaultArch is the arch to compile for when a request names none:
// KEVOLVE_ARCH if set, else the first NVIDIA GPU's as discovery (NVML, the
// one discovery doctor and the evaluator use) reports it, else sm_90.
func DefaultArch() string {
	if a := os.Getenv("KEVOLVE_ARCH"); archRE.MatchString(a) {
		return a
	}
	detectOnce.Do(func() {
		detected = "sm_90"
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		gpus, _, _ := device.GPUs(ctx, device.Options{})
		for _, g := range gpus {
			if g.Vendor != "nvidia" || g.ComputeCapability == "" {
				continue
			}
			if a := target.MustGet(target.NVIDIA).Arch(g.ComputeCapability); archRE.MatchString(a) {
				detected = a
			}
			return
		}
	})
	return detected
}

// runOut is what one tool run gave.
type runOut struct {
	Stdout, Stderr string
	ExitCode       int
	TimedOut       bool
	Err            error // could not start or was killed for another reason
}

// run executes a tool in dir, in its own process group so that a timeout
// kills the compiler's children too (nvcc runs cicc and ptxas).
func run(ctx context.Context, dir string, env []string, stdin string, name string, args ...string) runOut {
	o, err := toolchain.Run(ctx, toolchain.Cmd{Name: name, Args: args, Dir: dir, Env: env, Stdin: stdin})
	out := runOut{Stdout: o.Stdout, Stderr: o.Stderr, ExitCode: o.ExitCode, TimedOut: o.TimedOut}
	var exit *exec.ExitError
	if err != nil && (!errors.As(err, &exit) || out.TimedOut) {
		out.Err = err
	}
	return out
}

// runCompiler runs one compiler command for res: it records the time, the
// trimmed log and the parsed diagnostics, and sets OK when the command
// succeeded. done is true when the result is already final (a timeout or a
// compile error, which are results, not errors); log is the untrimmed output
// for parsers that need all of it (ptxas' resource lines).
func runCompiler(ctx context.Context, res *Result, dir, compiler string, args []string) (log string, done bool, err error) {
	start := time.Now()
	out := run(ctx, dir, nil, "", compiler, args...)
	res.CompileSeconds = time.Since(start).Seconds()
	log = out.Stdout + out.Stderr
	res.Log = trimLog(log, 8000)
	res.Diagnostics = ParseDiagnostics(log)
	name := filepath.Base(compiler)
	switch {
	case out.TimedOut:
		res.Status = StatusTimeout
		return log, true, nil
	case out.Err != nil:
		return log, true, fmt.Errorf("compile %s: run %s: %w", res.Language, name, out.Err)
	case out.ExitCode != 0:
		if len(res.Diagnostics) == 0 {
			res.Diagnostics = []Diagnostic{{Severity: "error", Message: fmt.Sprintf("%s exited with status %d: %s", name, out.ExitCode, toolchain.LastLine(log))}}
		}
		return log, true, nil
	}
	res.OK = true
	return log, false, nil
}
