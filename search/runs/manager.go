// Package runs keeps the searches an MCP server drives: it starts runs on
// search/engine in goroutines of the server process, lets an MCP client act
// as the operator of a run (the "mcp" operator: evolve_next hands out the
// node to expand, evolve_submit takes the kernel back), answers long polls
// for status, and pauses every run when the server ends. Every node is
// checkpointed by the engine, so a paused run resumes where it stopped.
//
// It also holds the CLI's side of the same runs, so that cmd only turns
// flags into requests: a search driven in the foreground (Evolve, Suite,
// Optimize, on a fleet where asked), the default parallelism
// (Parallelism) and looking at past runs (Inspect).
package runs

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/kevolve/kevolve-mcp/search"
	"github.com/kevolve/kevolve-mcp/search/engine"
	"github.com/kevolve/kevolve-mcp/search/fleet"
	"github.com/kevolve/kevolve-mcp/search/launch"
)

// Options are the manager's dependencies, injected by the server's wiring.
type Options struct {
	// Store is the search store (required).
	Store search.Store
	// Evaluator returns the evaluation service; it is asked when a run
	// starts, so a server without Python still serves everything else.
	Evaluator func(ctx context.Context) (search.Evaluator, error)
	// Resolve turns a problem spec into a problem and its start kernel
	// (engine.ResolveProblem with the corpus registry).
	Resolve func(ctx context.Context, spec engine.ProblemSpec) (search.Problem, string, error)
	// ResolveTarget turns a run's target word into a target of the table
	// (auto: the device found; a named target without its device is an
	// error); nil parses by name and takes auto as the cpu.
	ResolveTarget func(ctx context.Context, s string) (string, error)
	// Devices names the devices a run on target uses, for its record and
	// report (nil = not recorded).
	Devices func(ctx context.Context, target string) []string
	// Launch is the host's search/launch wiring: server-side operators
	// get their full context from it (device, knowledge, earlier runs'
	// kernels), new runs are seeded from memory and finished runs written
	// back. The fields above, when set, take the place of its own; nil
	// allows only mcp runs.
	Launch *launch.Launcher
	// Op are the operator and memory settings every run gets.
	Op launch.OperatorSettings
	// Report writes a run's report and returns its path (nil = none).
	Report func(ctx context.Context, st search.Store, runID string) (string, error)
	// WorkDir holds inline problems and start kernels given as source.
	WorkDir string
	// Parallel is how many evaluations a run of a server-side operator
	// keeps in flight on target when its request gives none (nil = 1): a
	// fleet's capacity. Runs the client drives propose one node at a time.
	Parallel func(target string) int
	// Fleet reports the fleet that evaluates the runs (nil = none, the
	// in-process service does): evolve_status shows it.
	Fleet func(ctx context.Context) (*fleet.FleetStatus, error)
	// AgentIdle pauses an mcp run whose agent submitted nothing for this
	// long after being offered a node (0 = DefaultAgentIdle, <0 = never).
	AgentIdle time.Duration
	Log       *slog.Logger
}

// parallel is a run's evaluations in flight: the request's, else the
// server's default for the target.
func (m *Manager) parallel(asked int, target string) int {
	if asked > 0 {
		return asked
	}
	if m.o.Parallel != nil {
		return max(m.o.Parallel(target), 1)
	}
	return 1
}

// DefaultAgentIdle is how long an mcp run waits for its agent's kernel
// before pausing.
const DefaultAgentIdle = 2 * time.Hour

// Manager drives runs inside the server process.
type Manager struct {
	o       Options
	log     *slog.Logger
	changed *broadcast
	ctx     context.Context
	cancel  context.CancelFunc

	mu     sync.Mutex
	active map[string]*drive
	closed bool
	wg     sync.WaitGroup
}

// drive is one goroutine driving one run.
type drive struct {
	runID  string
	agent  *agentOperator // nil for server-side operators
	cancel context.CancelFunc
	// started closes once the engine holds the run (its first write);
	// done when the drive ends, with err.
	started   chan struct{}
	startOnce sync.Once
	done      chan struct{}
	err       error
}

func (d *drive) markStarted() { d.startOnce.Do(func() { close(d.started) }) }

// New returns a manager; Close pauses its runs.
func New(o Options) (*Manager, error) {
	if o.Store == nil {
		return nil, errors.New("runs: no store")
	}
	log := o.Log
	if log == nil {
		log = slog.Default()
	}
	ctx, cancel := context.WithCancel(context.Background())
	return &Manager{o: o, log: log, changed: newBroadcast(), ctx: ctx, cancel: cancel, active: map[string]*drive{}}, nil
}

// Close pauses every run this manager drives and waits (bounded) until
// each has recorded it: the run loop sees its context end, leaves the node
// in flight to be evaluated again on resume, and marks the run paused.
func (m *Manager) Close() {
	m.mu.Lock()
	m.closed = true
	m.mu.Unlock()
	m.cancel()
	done := make(chan struct{})
	go func() { m.wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(20 * time.Second):
		m.log.Warn("runs: some runs did not pause within 20 s; they resume from their last checkpoint")
	}
}

func (m *Manager) activeDrive(id string) *drive {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.active[id]
}

// Active reports whether this server drives the run now.
func (m *Manager) Active(id string) bool { return m.activeDrive(id) != nil }

// launch starts a goroutine driving runID with op; resume continues a run
// that existed before (budget, when non-nil, replaces its budget).
func (m *Manager) launch(runID string, op search.Operator, ev search.Evaluator, resume bool, budget *search.Budget, parallel int) (*drive, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		return nil, errors.New("the server is shutting down")
	}
	if d := m.active[runID]; d != nil {
		return d, nil
	}
	ctx, cancel := context.WithCancel(m.ctx)
	d := &drive{runID: runID, cancel: cancel, started: make(chan struct{}), done: make(chan struct{})}
	if a, ok := op.(*agentOperator); ok {
		d.agent = a
		a.idle = m.o.AgentIdle
		if a.idle == 0 {
			a.idle = DefaultAgentIdle
		}
		a.onIdle = func(nodeID int64) {
			msg := fmt.Sprintf("no kernel submitted for node %d in %s: the run pauses; evolve_next resumes it", nodeID, a.idle)
			if err := m.o.Store.AppendEvent(context.Background(), &search.Event{RunID: runID, Kind: EventAgentIdle, Message: msg}); err != nil {
				m.log.Warn("event not recorded", "run", runID, "err", err)
			}
			cancel()
		}
	}
	st := &watchedStore{Store: m.o.Store, changed: m.changed, agent: d.agent, wrote: d.markStarted}
	if d.agent != nil {
		parallel = 1 // the client proposes one node at a time
	}
	eng := launch.NewEngine(st, ev, op, m.log.With("run", runID), max(parallel, 1), nil)
	m.active[runID] = d
	m.wg.Add(1)
	go func() {
		defer m.wg.Done()
		defer cancel()
		var err error
		if resume {
			err = eng.Resume(ctx, runID, budget)
		} else {
			err = eng.Drive(ctx, runID)
		}
		d.err = err
		if err != nil && ctx.Err() == nil {
			m.log.Warn("run ended with an error", "run", runID, "err", err)
		}
		m.mu.Lock()
		if m.active[runID] == d {
			delete(m.active, runID)
		}
		m.mu.Unlock()
		close(d.done)
		m.changed.notify()
		m.writeReport(runID)
		m.finish(runID)
	}()
	return d, nil
}

// startTimeout bounds the wait for a drive to take hold of its run (a
// claim and a few reads of the store).
const startTimeout = 15 * time.Second

// awaitStart waits until d holds its run or has ended; a drive that ended
// at once (another process drives the run) returns why.
func (m *Manager) awaitStart(ctx context.Context, d *drive) error {
	select {
	case <-d.started:
		return nil
	case <-d.done:
		if errors.Is(d.err, search.ErrRunBusy) {
			return fmt.Errorf("%w: wait for that process to finish or pause it, or stop the run there", d.err)
		}
		return d.err
	case <-time.After(startTimeout):
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// writeReport refreshes a run's report when its drive ends (best effort:
// the report is derived from the store and can be written again).
func (m *Manager) writeReport(runID string) {
	if m.o.Report == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if _, err := m.o.Report(ctx, m.o.Store, runID); err != nil {
		m.log.Warn("run report not written", "run", runID, "err", err)
	}
}

// Report writes the run's report now and returns its path.
func (m *Manager) Report(ctx context.Context, runID string) (string, error) {
	if m.o.Report == nil {
		return "", errors.New("reports are not available in this server")
	}
	if _, err := m.run(ctx, runID); err != nil {
		return "", err
	}
	return m.o.Report(ctx, m.o.Store, runID)
}

// run loads a run with an error an agent can act on.
func (m *Manager) run(ctx context.Context, id string) (*search.Run, error) {
	if id == "" {
		return nil, errors.New("run_id is required: evolve_start or evolve return one")
	}
	r, err := m.o.Store.Run(ctx, id)
	if errors.Is(err, search.ErrNotFound) {
		return nil, fmt.Errorf("unknown run %q: evolve_start (you propose the kernels) or evolve (a server-side operator) create runs", id)
	}
	if err != nil {
		return nil, fmt.Errorf("run %s: %w", id, err)
	}
	return r, nil
}

// finished reports whether a run's status is final.
func finished(s search.RunStatus) bool {
	return s == search.RunDone || s == search.RunStopped || s == search.RunFailed
}

// finishedError is the error for acting on a run that has ended.
func finishedError(r *search.Run) error {
	hint := "call evolve_best for its best kernel, or start a new run"
	if r.Status == search.RunDone {
		hint = "call evolve_best for its best kernel, or evolve_resume with a larger budget to continue it"
	}
	return fmt.Errorf("run %s has ended (%s: %s): %s", r.ID, r.Status, r.StopReason, hint)
}
