package profile

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"

	_ "embed"

	"github.com/kevolve/kevolve-mcp/harness/problem"
	"github.com/kevolve/kevolve-mcp/harness/sandbox"
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

// driverRun is the folder of one profile driver process: the driver and
// copies of the reference and the candidate, readable by the jail's
// unprivileged uid, and work/, the only folder the jailed process writes
// (sandbox/profiled.py). The folder itself is traversable but not
// listable by others.
type driverRun struct {
	dir, driver, ref, cand, work string
}

// newDriverRun lays out a driverRun in a new temporary folder; cand may be
// "" (the model mode profiles the reference alone). close removes it.
func newDriverRun(prefix, ref, cand string) (*driverRun, error) {
	dir, err := os.MkdirTemp("", prefix)
	if err != nil {
		return nil, fmt.Errorf("profile: temp dir: %w", err)
	}
	d := &driverRun{dir: dir, work: filepath.Join(dir, "work")}
	if err := d.layOut(ref, cand); err != nil {
		os.RemoveAll(dir)
		return nil, fmt.Errorf("profile: %w", err)
	}
	return d, nil
}

func (d *driverRun) layOut(ref, cand string) error {
	if err := os.Chmod(d.dir, 0o711); err != nil {
		return err
	}
	var err error
	if d.driver, err = writeDriver(d.dir); err != nil {
		return err
	}
	if err := os.Mkdir(d.work, 0o755); err != nil {
		return err
	}
	if d.ref, err = d.copyIn(ref, "reference.py"); err != nil || cand == "" {
		return err
	}
	d.cand, err = d.copyIn(cand, "candidate.py")
	return err
}

// copyIn copies src into the folder as name, readable by every uid.
func (d *driverRun) copyIn(src, name string) (string, error) {
	b, err := os.ReadFile(src)
	if err != nil {
		return "", err
	}
	dst := filepath.Join(d.dir, name)
	return dst, os.WriteFile(dst, b, 0o644)
}

func (d *driverRun) close() { os.RemoveAll(d.dir) }

// args is the driver's command line for mode: jailed (--jail) where the
// harness's py dir, which holds the sandbox, is known. The profilers that
// inject themselves (Nsight Compute, rocprofv3: mode ncu) profile it in a
// cgroup alone rather than a PID namespace inside one (sandbox/profiled.py
// says why). Either cgroup is killed a few seconds before the run's own
// deadline.
func (d *driverRun) args(mode string, opt Options) []string {
	a := []string{d.driver, mode, "--ref", d.ref}
	if d.cand != "" {
		a = append(a, "--candidate", d.cand)
	}
	if !jailed(opt) {
		return a
	}
	a = append(a, "--pydir", opt.PyDir, "--jail", d.work)
	if mode == "ncu" || opt.jailByCgroup {
		a = append(a, "--jail-cgroup")
	}
	return append(a, "--deadline-s", strconv.FormatFloat(jailDeadline(opt.Timeout).Seconds(), 'f', 1, 64))
}

// jailDeadline is when the jail's cgroup is killed: before the run's own
// deadline, which kills the process group, so that the processes the
// group does not hold are killed too.
func jailDeadline(run time.Duration) time.Duration {
	return max(run-5*time.Second, run*3/4)
}

// jailed says whether the driver runs in its jail.
func jailed(opt Options) bool { return opt.PyDir != "" }

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
	if opt.CacheDir != "" {
		// The harness's build caches, read-only to the jailed driver: a
		// load_inline the harness built is loaded, not built again.
		env = append(env, "KEVOLVE_CACHE_DIR="+opt.CacheDir)
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

// jailNotes names the layers of its jail a profiled process ran without
// (the driver's "sandbox" report), nothing where it had them all. Left
// out: the network namespace, which a profiled process runs without for
// its profiler (reported as kept, not missing), and a layer another stood
// in for (the PID namespace, by a cgroup, under Nsight Compute):
// sandbox/profiled.py says why.
func jailNotes(opt Options, stdout string) []string {
	if !jailed(opt) {
		return []string{"the profiled process ran with this process's identity, unjailed: no harness py dir was given"}
	}
	var out struct {
		Sandbox *sandbox.Report `json:"sandbox"`
	}
	if toolchain.DecodeLastJSON(stdout, &out) != nil || out.Sandbox == nil {
		return []string{"the profiled process did not report its jail"}
	}
	names := make([]string, 0, len(out.Sandbox.Missing))
	for name := range out.Sandbox.Missing {
		if _, instead := out.Sandbox.Replaced[name]; !instead {
			names = append(names, name)
		}
	}
	if len(names) == 0 {
		return nil
	}
	sort.Strings(names)
	var why []string
	for _, n := range names {
		why = append(why, n+" ("+out.Sandbox.Missing[n]+")")
	}
	return []string{"the profiled process's jail lacked " + strings.Join(why, "; ")}
}
