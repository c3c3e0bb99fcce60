package profile

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
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
}

// run executes a command in its own process group; a context deadline kills
// the whole group (ncu, the Python it launched and anything under that).
func run(ctx context.Context, env []string, name string, args ...string) (procResult, error) {
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Env = append(os.Environ(), env...)
	toolchain.KillGroupOnCancel(cmd)
	cmd.WaitDelay = 3 * time.Second
	var so, se bytes.Buffer
	cmd.Stdout, cmd.Stderr = &so, &se
	t0 := time.Now()
	err := cmd.Run()
	res := procResult{stdout: so.String(), stderr: se.String(), wall: time.Since(t0)}
	if err != nil && errors.Is(ctx.Err(), context.DeadlineExceeded) {
		return res, fmt.Errorf("%s timed out after %s: %w", filepath.Base(name), res.wall.Round(time.Second), ctx.Err())
	}
	return res, err
}

// driverJSON decodes the driver's last stdout line; a {"error": ...} line
// becomes an error carrying the candidate's own message.
func driverJSON(stdout string, out any) error {
	// ncu and rocprofv3 print their own lines after the driver's, so take
	// the last line that is a JSON object.
	lines := strings.Split(strings.TrimSpace(stdout), "\n")
	s := ""
	for i := len(lines) - 1; i >= 0; i-- {
		if l := strings.TrimSpace(lines[i]); strings.HasPrefix(l, "{") {
			s = l
			break
		}
	}
	var probe struct {
		Error string `json:"error"`
	}
	if err := json.Unmarshal([]byte(s), &probe); err != nil {
		return fmt.Errorf("driver printed no result (output ends %q)", clip(stdout, 200))
	}
	if probe.Error != "" {
		return fmt.Errorf("driver: %s", probe.Error)
	}
	if out != nil {
		if err := json.Unmarshal([]byte(s), out); err != nil {
			return fmt.Errorf("driver result: %w", err)
		}
	}
	return nil
}

func clip(s string, n int) string {
	s = strings.TrimSpace(s)
	if len(s) > n {
		return "…" + s[len(s)-n:]
	}
	return s
}

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

// shapesEnv is the profiled process's environment: the shape set and the
// lease's variables that pin it to its device.
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
	return env
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
