package fleet

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"os/exec"
	"strconv"
	"strings"
	"time"

	"github.com/kevolve/kevolve-mcp/harness/toolchain"
)

// Launcher starts workers on an existing engine and stops them at the end.
type Launcher interface {
	// Start submits or spawns the workers and returns; the launcher keeps
	// them up (restarting what the engine reports failed) until Stop.
	Start(ctx context.Context) error
	// Stop ends every worker it started (SIGTERM first, so they drain).
	Stop(ctx context.Context) error
	// Describe says what was started, for the progress line and logs.
	Describe() string
}

// LaunchConfig is what every launcher needs to start a worker.
type LaunchConfig struct {
	// Coordinator is the URL workers reach the coordinator at.
	Coordinator string
	// Token is handed to workers through the environment or stdin, never
	// on a command line other users can read.
	Token string
	// Command is the worker program and its leading arguments (default:
	// this executable, "worker").
	Command []string
	// WorkerArgs are extra worker flags (--target, --devices, ...).
	WorkerArgs []string
	// Name prefixes the workers' names and the Slurm job name.
	Name string
	// GPUsPerNode asks Slurm for this many GPUs per worker (--gres=gpu:K);
	// 0 takes whole nodes (--exclusive).
	GPUsPerNode int
	// SlurmArgs are extra sbatch options (--account, --time, ...).
	SlurmArgs []string
	// RemoteBinary is where ssh workers keep the binary
	// (default ~/.cache/kevolve/bin/kevolve-mcp).
	RemoteBinary string
	// LogDir receives worker logs (local and Slurm).
	LogDir string
	// MaxRestarts bounds how often one worker slot is restarted after
	// its engine reported it failed (default 5).
	MaxRestarts int
	Log         *slog.Logger
}

func (c *LaunchConfig) log() *slog.Logger {
	if c.Log == nil {
		return slog.Default()
	}
	return c.Log
}

func (c *LaunchConfig) maxRestarts() int {
	if c.MaxRestarts <= 0 {
		return 5
	}
	return c.MaxRestarts
}

// workerArgv is the worker's command line (no token on it).
func (c *LaunchConfig) workerArgv(binary []string, name string) []string {
	argv := append([]string{}, binary...)
	argv = append(argv, "--coordinator", c.Coordinator, "--name", name)
	return append(argv, c.WorkerArgs...)
}

// WorkersSpec is a parsed --workers value.
type WorkersSpec struct {
	Engine    string // local | ssh | slurm | k8s
	N         int
	Hosts     []string
	Partition string
	Namespace string
}

// ParseWorkers reads --workers: local:N, ssh:HOST[,HOST...],
// slurm:PARTITION[:N] or k8s:NAMESPACE[:N].
func ParseWorkers(s string) (WorkersSpec, error) {
	eng, rest, _ := strings.Cut(strings.TrimSpace(s), ":")
	w := WorkersSpec{Engine: eng, N: 1}
	bad := func(why string) (WorkersSpec, error) {
		return WorkersSpec{}, fmt.Errorf("--workers %q: %s (use local:N, ssh:HOST[,HOST...], slurm:PARTITION[:N] or k8s:NAMESPACE[:N])", s, why)
	}
	count := func(v string) (int, error) {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > 4096 {
			return 0, fmt.Errorf("worker count %q must be 1..4096", v)
		}
		return n, nil
	}
	switch eng {
	case "local":
		if rest == "" {
			return w, nil
		}
		n, err := count(rest)
		if err != nil {
			return bad(err.Error())
		}
		w.N = n
	case "ssh":
		for _, h := range strings.Split(rest, ",") {
			h = strings.TrimSpace(h)
			if h == "" {
				continue
			}
			if strings.HasPrefix(h, "-") || strings.ContainsAny(h, " \t'\"`$;&|") {
				return bad(fmt.Sprintf("host %q is not a host name", h))
			}
			w.Hosts = append(w.Hosts, h)
		}
		if len(w.Hosts) == 0 {
			return bad("name at least one host")
		}
		w.N = len(w.Hosts)
	case "slurm", "k8s":
		name, n, _ := strings.Cut(rest, ":")
		if name == "" || strings.HasPrefix(name, "-") || strings.ContainsAny(name, " \t'\"`$;&|") {
			return bad("name the partition (or namespace)")
		}
		if n != "" {
			k, err := count(n)
			if err != nil {
				return bad(err.Error())
			}
			w.N = k
		}
		if eng == "slurm" {
			w.Partition = name
		} else {
			w.Namespace = name
		}
	default:
		return bad("unknown engine " + strconv.Quote(eng))
	}
	return w, nil
}

// NewLauncher builds the launcher for a parsed spec.
func NewLauncher(spec WorkersSpec, cfg LaunchConfig) (Launcher, error) {
	switch spec.Engine {
	case "local":
		return &LocalLauncher{Config: cfg, N: spec.N}, nil
	case "ssh":
		return &SSHLauncher{Config: cfg, Hosts: spec.Hosts}, nil
	case "slurm":
		return &SlurmLauncher{Config: cfg, Partition: spec.Partition, N: spec.N}, nil
	case "k8s":
		return &K8sLauncher{Config: cfg, Namespace: spec.Namespace, N: spec.N}, nil
	}
	return nil, fmt.Errorf("unknown worker engine %q", spec.Engine)
}

// runTool runs an engine's command (sbatch, squeue, ssh, kubectl) under a
// deadline, in its own process group, and returns its stdout.
func runTool(ctx context.Context, timeout time.Duration, env []string, stdin string, name string, args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, name, args...)
	toolchain.KillGroupOnCancel(cmd)
	cmd.WaitDelay = 2 * time.Second
	if env != nil {
		cmd.Env = env
	}
	if stdin != "" {
		cmd.Stdin = strings.NewReader(stdin)
	}
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	if err != nil {
		msg := strings.TrimSpace(errb.String())
		if ctx.Err() == context.DeadlineExceeded {
			msg = fmt.Sprintf("no answer within %s", timeout)
		}
		return out.String(), fmt.Errorf("%s %s: %w: %s", name, strings.Join(args, " "), err, msg)
	}
	return out.String(), nil
}
