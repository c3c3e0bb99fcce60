package fleet

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"time"
)

// Options start a fleet for a search (`evolve --workers SPEC --listen ADDR`).
type Options struct {
	DB *sql.DB
	// Workers is the launcher spec (local:N, ssh:..., slurm:..., k8s:...);
	// empty starts none (workers are started by hand with `kevolve-mcp
	// worker --coordinator URL`).
	Workers string
	// Listen is the coordinator's address. Default: 127.0.0.1:0 for local
	// workers, 0.0.0.0:8787 for remote ones.
	Listen string
	// Token authenticates workers. Remote workers need one; when empty and
	// the address is not loopback, a random one is made and handed to the
	// workers this fleet launches.
	Token string
	// Advertise is the URL workers reach the coordinator at (default: from
	// Listen, with this host's name for a wildcard address).
	Advertise string
	// Kinds are the device kinds every node is evaluated on (empty: the
	// problem's target).
	Kinds []Kind
	// KindsSpec is --targets as given (CheckOptions parses it).
	KindsSpec string
	// Target, Slots and JobsPerDevice are passed to launched workers
	// (--target, --slots, --jobs-per-device; 0 = the worker's default).
	Target        string
	Slots         int
	JobsPerDevice int
	// EvalHostMemGiB is passed to launched workers as --eval-host-mem (0 =
	// each worker's default, from its own host's memory).
	EvalHostMemGiB float64
	// Lease overrides the lease length (default DefaultLease).
	Lease       time.Duration
	GPUsPerNode int
	SlurmArgs   []string
	Name        string
	LogDir      string
	Timeout     time.Duration
	Log         *slog.Logger
}

// Fleet is a running coordinator with its launched workers.
type Fleet struct {
	Queue       *Queue
	Coordinator *Coordinator
	Launcher    Launcher
	Evaluator   *Evaluator
	URL         string
	cancel      context.CancelFunc
}

// CheckOptions validates the options' flags (workers spec, address,
// token, kinds) without starting anything.
func CheckOptions(o Options) error {
	_, err := resolve(&o)
	return err
}

// resolve parses and defaults o in place.
func resolve(o *Options) (WorkersSpec, error) {
	var spec WorkersSpec
	if o.Workers != "" {
		var err error
		if spec, err = ParseWorkers(o.Workers); err != nil {
			return spec, err
		}
	}
	if o.KindsSpec != "" && len(o.Kinds) == 0 {
		kinds, err := ParseKinds(o.KindsSpec)
		if err != nil {
			return spec, err
		}
		o.Kinds = kinds
	}
	if o.Listen == "" {
		o.Listen = "127.0.0.1:0"
		if spec.Engine != "" && spec.Engine != "local" {
			o.Listen = "0.0.0.0:8787"
		}
	}
	if _, _, err := net.SplitHostPort(o.Listen); err != nil {
		return spec, fmt.Errorf("fleet: --listen %q: want HOST:PORT", o.Listen)
	}
	if spec.Engine != "" && spec.Engine != "local" && IsLoopback(o.Listen) {
		return spec, fmt.Errorf("fleet: %s workers cannot reach a coordinator on loopback %s: give --listen HOST:PORT (with --token)", spec.Engine, o.Listen)
	}
	if o.Token == "" && !IsLoopback(o.Listen) {
		if spec.Engine == "" {
			return spec, fmt.Errorf("fleet: listening on %s: %w", o.Listen, ErrNeedToken)
		}
		// Launched workers get it through their environment or stdin.
		o.Token = randomID("") + randomID("")
	}
	return spec, nil
}

// Start migrates the fleet tables, serves the coordinator and launches
// the workers.
func Start(ctx context.Context, o Options) (*Fleet, error) {
	if o.DB == nil {
		return nil, errors.New("fleet: no database")
	}
	if o.Log == nil {
		o.Log = slog.Default()
	}
	spec, err := resolve(&o)
	if err != nil {
		return nil, err
	}
	q, err := NewQueue(ctx, o.DB)
	if err != nil {
		return nil, err
	}
	if o.Lease > 0 {
		q.Lease = o.Lease
	}
	cctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	c := &Coordinator{Queue: q, Token: o.Token, Log: o.Log}
	if err := c.Listen(cctx, o.Listen); err != nil {
		cancel()
		return nil, err
	}
	url := o.Advertise
	if url == "" {
		url = advertiseURL(c.Addr())
	}
	f := &Fleet{Queue: q, Coordinator: c, URL: url, cancel: cancel,
		Evaluator: &Evaluator{Queue: q, Kinds: o.Kinds, Timeout: o.Timeout, Log: o.Log}}
	if spec.Engine == "" {
		o.Log.Info("fleet coordinator ready: start workers with `kevolve-mcp worker --coordinator URL` (token in KEVOLVE_TOKEN)", "url", url)
		return f, nil
	}
	args := workerArgs(o)
	name := o.Name
	if name == "" {
		name = "kevolve"
	}
	l, err := NewLauncher(spec, LaunchConfig{Coordinator: url, Token: o.Token, WorkerArgs: args, Name: name,
		GPUsPerNode: o.GPUsPerNode, SlurmArgs: o.SlurmArgs, LogDir: o.LogDir, Log: o.Log})
	if err != nil {
		cancel()
		return nil, err
	}
	if err := l.Start(ctx); err != nil {
		cancel()
		return nil, err
	}
	f.Launcher = l
	o.Log.Info("fleet workers started", "workers", l.Describe(), "coordinator", url)
	return f, nil
}

// Close stops the launched workers (they drain) and the coordinator.
func (f *Fleet) Close(ctx context.Context) error {
	var err error
	if f.Launcher != nil {
		err = f.Launcher.Stop(ctx)
	}
	f.cancel()
	return err
}

// advertiseURL turns a bound address into one other hosts can dial.
func advertiseURL(addr string) string {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return "http://" + addr
	}
	if ip := net.ParseIP(host); ip != nil && ip.IsUnspecified() {
		if h, err := os.Hostname(); err == nil {
			host = h
		}
	}
	return "http://" + net.JoinHostPort(host, port)
}

// StatusOf reads the fleet's status from a database, or nil when no fleet
// ever ran there (no tables). It never migrates: evolve_status and the CLI
// call it read-only.
func StatusOf(ctx context.Context, db *sql.DB) (*FleetStatus, error) {
	var n int
	if err := db.QueryRowContext(ctx, `SELECT COUNT(*) FROM sqlite_master WHERE type = 'table' AND name = 'fleet_jobs'`).Scan(&n); err != nil {
		return nil, err
	}
	if n == 0 {
		return nil, nil
	}
	return Snapshot(ctx, &Queue{db: db, Lease: DefaultLease, now: time.Now})
}

// workerArgs are the flags a launched worker gets from the options.
func workerArgs(o Options) []string {
	var args []string
	if o.Target != "" {
		args = append(args, "--target", o.Target)
	}
	if o.Slots > 0 {
		args = append(args, "--slots", fmt.Sprint(o.Slots))
	}
	if o.JobsPerDevice > 0 {
		args = append(args, "--jobs-per-device", fmt.Sprint(o.JobsPerDevice))
	}
	if o.EvalHostMemGiB != 0 {
		args = append(args, "--eval-host-mem", fmt.Sprint(o.EvalHostMemGiB))
	}
	return args
}
