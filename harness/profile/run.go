package profile

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"time"

	_ "embed"

	"github.com/kevolve/kevolve-mcp/harness/problem"
	"github.com/kevolve/kevolve-mcp/harness/toolchain"
)

//go:embed driver.py
var driverScript string

// writeDriver puts the embedded driver in dir and returns its path.
func writeDriver(dir string) (string, error) {
	p := filepath.Join(dir, "kevolve_profile_driver.py")
	if err := os.WriteFile(p, []byte(driverScript), 0o644); err != nil {
		return "", fmt.Errorf("write profile driver: %w", err)
	}
	return p, nil
}

type procResult struct {
	stdout, stderr string
	wall           time.Duration
	held           time.Duration // the device held for its kernels (runHolding)
}

// run executes a command in its own process group; a context deadline kills
// the whole group (ncu, the Python it launched and anything under that).
func run(ctx context.Context, env []string, name string, args ...string) (procResult, error) {
	if env == nil {
		env = []string{}
	}
	o, err := toolchain.Run(ctx, toolchain.Cmd{Name: name, Args: args, Env: env, WaitDelay: 3 * time.Second})
	res := procResult{stdout: o.Stdout, stderr: o.Stderr, wall: o.Wall}
	if err != nil && errors.Is(ctx.Err(), context.DeadlineExceeded) {
		return res, fmt.Errorf("%s timed out after %s: %w", filepath.Base(name), res.wall.Round(time.Second), ctx.Err())
	}
	return res, err
}

// driverJSON decodes the driver's last stdout line; a {"error": ...} line
// becomes an error carrying the candidate's own message.
func driverJSON(stdout string, out any) error {
	// ncu and rocprofv3 print their own lines after the driver's:
	// DecodeLastJSON takes the last line that is a JSON object.
	if err := toolchain.DecodeLastJSON(stdout, out); err != nil {
		if errors.Is(err, toolchain.ErrNoJSON) {
			return fmt.Errorf("driver printed no result (output ends %q)", clip(stdout, 200))
		}
		return fmt.Errorf("driver: %w", err)
	}
	return nil
}

// clip is toolchain.Tail: the end of a long output, where the error is.
func clip(s string, n int) string { return toolchain.Tail(s, n) }

func driverArgs(driver string, mode string, opt Options, ref, cand string) []string {
	a := []string{driver, mode, "--ref", ref}
	if cand != "" {
		a = append(a, "--candidate", cand)
	}
	if opt.PyDir != "" {
		a = append(a, "--pydir", opt.PyDir)
	}
	return a
}

// shapesEnv is the profiled process's environment: the shape set, the
// lease's variables that pin it to its device, no bytecode writing.
func shapesEnv(opt Options) []string {
	var env []string
	keys := make([]string, 0, len(opt.Env))
	for k := range opt.Env {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		env = append(env, k+"="+opt.Env[k])
	}
	if opt.Shapes != "" {
		env = append(env, "KEVOLVE_SHAPES="+opt.Shapes)
	}
	// The harness's py dir is on its sys.path: a __pycache__ written there
	// would be taken for tampering and the judge unpacked again.
	return append(env, "PYTHONDONTWRITEBYTECODE=1")
}

// Target is the device target a backend profiles on (auto: the best found).
func Target(backend string) string {
	switch backend {
	case "ncu":
		return "nvidia"
	case "rocprof":
		return "amd"
	case "cpu":
		return "cpu"
	}
	return "auto"
}

// ReferenceFile returns a reference's file, writing inline source to a
// temporary one (removed by cleanup).
func ReferenceFile(s problem.Source) (path string, cleanup func(), err error) {
	if s.Code == "" {
		return s.Path, func() {}, nil
	}
	f, err := os.CreateTemp("", "kevolve-profile-ref-*.py")
	if err != nil {
		return "", nil, fmt.Errorf("reference file: %w", err)
	}
	if _, err := f.WriteString(s.Code); err != nil {
		f.Close()
		os.Remove(f.Name())
		return "", nil, fmt.Errorf("reference file: %w", err)
	}
	f.Close()
	return f.Name(), func() { os.Remove(f.Name()) }, nil
}
