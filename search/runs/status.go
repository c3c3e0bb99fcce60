package runs

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/kevolve/kevolve-mcp/search"
	"github.com/kevolve/kevolve-mcp/search/fleet"
)

// MaxStatusWait bounds a status long poll: under every client's tool
// timeout (Codex: 60 s), long enough to see a CPU evaluation finish.
const MaxStatusWait = 45 * time.Second

// maxEvents bounds the events one status answer carries.
const maxEvents = 50

// StatusResult is evolve_status's answer.
type StatusResult struct {
	RunID      string           `json:"run_id"`
	Status     search.RunStatus `json:"status"`
	StopReason string           `json:"stop_reason,omitempty"`
	// Active says whether this server drives the run now.
	Active  bool           `json:"active"`
	Summary search.Summary `json:"summary"`
	Budget  BudgetView     `json:"budget"`
	// Events are the run's events after `since`, oldest first; NextSince
	// is the seq to pass next time.
	Events    []EventView `json:"events"`
	NextSince int64       `json:"next_since"`
	// AwaitingNode is the node an mcp run waits for a kernel for (0 = none).
	AwaitingNode int64  `json:"awaiting_node,omitempty"`
	Hint         string `json:"hint,omitempty"`
	// Fleet is the fleet evaluating this server's runs: its workers and
	// their devices, jobs in flight and queued, leases lost (absent when
	// the server evaluates in process).
	Fleet *fleet.FleetStatus `json:"fleet,omitempty"`
}

// Status answers at once when the run has events after since, else waits
// up to wait (at most MaxStatusWait) for one. progress, when set, hears
// about every event while the call waits.
func (m *Manager) Status(ctx context.Context, id string, since int64, wait time.Duration, progress func(string)) (StatusResult, error) {
	if _, err := m.run(ctx, id); err != nil {
		return StatusResult{RunID: id}, err
	}
	wait = min(max(wait, 0), MaxStatusWait)
	deadline := time.NewTimer(wait)
	defer deadline.Stop()
	// Runs driven by another process (the CLI) change the store without
	// waking this one's waiters: look again every second.
	poll := time.NewTicker(time.Second)
	defer poll.Stop()
	t0, lastBeat := time.Now(), time.Now()
	for {
		changed := m.changed.wait()
		evs, err := m.o.Store.Events(ctx, id, since, maxEvents)
		if err != nil {
			return StatusResult{RunID: id}, fmt.Errorf("run %s events: %w", id, err)
		}
		run, err := m.run(ctx, id)
		if err != nil {
			return StatusResult{RunID: id}, err
		}
		if len(evs) > 0 || wait == 0 || finished(run.Status) {
			return m.status(ctx, run, since, evs)
		}
		select {
		case <-changed:
		case <-poll.C:
		case <-deadline.C:
			return m.status(ctx, run, since, evs)
		case <-m.ctx.Done(): // the server is ending: answer now
			return m.status(context.WithoutCancel(ctx), run, since, evs)
		case <-ctx.Done():
			return StatusResult{RunID: id}, ctx.Err()
		}
		// A heartbeat while nothing happens keeps the client's idle timer
		// (Claude Code: 5 min over HTTP) from firing.
		if progress != nil && time.Since(lastBeat) >= heartbeat {
			lastBeat = time.Now()
			progress(fmt.Sprintf("waiting for run %s (%.0f s)", id, time.Since(t0).Seconds()))
		}
	}
}

func (m *Manager) status(ctx context.Context, run *search.Run, since int64, evs []*search.Event) (StatusResult, error) {
	nodes, err := m.o.Store.Nodes(ctx, run.ID)
	if err != nil {
		return StatusResult{RunID: run.ID}, err
	}
	r := StatusResult{RunID: run.ID, Status: run.Status, StopReason: run.StopReason, Summary: search.Summarize(run, nodes),
		Budget: budgetView(run.Budget), Events: []EventView{}, NextSince: since}
	for _, e := range evs {
		r.Events = append(r.Events, EventView{Seq: e.Seq, Kind: e.Kind, Message: e.Message, At: e.At})
	}
	if len(evs) > 0 {
		r.NextSince = evs[len(evs)-1].Seq
	}
	d := m.activeDrive(run.ID)
	if run.Status != search.RunRunning {
		d = nil // its drive is starting, or recording how it ended
	}
	r.Active = d != nil
	if m.o.Fleet != nil {
		if fs, err := m.o.Fleet(ctx); err == nil {
			r.Fleet = fs
		} else {
			m.log.Warn("fleet status unavailable", "err", err)
		}
	}
	if d != nil && d.agent != nil {
		if t := d.agent.current(); t != nil {
			r.AwaitingNode = t.NodeID
			r.Hint = fmt.Sprintf("the run waits for your kernel for node %d: evolve_next shows it", t.NodeID)
		}
	}
	switch {
	case finished(run.Status):
		r.Hint = "the run has ended: evolve_best returns its best kernel"
	case d == nil && run.Status == search.RunPaused:
		r.Hint = "the run is paused: evolve_resume continues it (for a run you drive, evolve_next does)"
	case d == nil && run.Status == search.RunRunning:
		r.Hint = "this server does not drive the run (another process does, or its server was killed): evolve_resume takes it over once its driver is gone"
	}
	return r, nil
}

// EventView is one line of a run's feed.
type EventView struct {
	Seq     int64     `json:"seq"`
	Kind    string    `json:"kind"`
	Message string    `json:"message"`
	At      time.Time `json:"at"`
}

// BudgetView is a run's budget in plain units (0 = no limit).
type BudgetView struct {
	Evals         int     `json:"evals,omitempty"`
	TimeS         float64 `json:"time_s,omitempty"`
	Tokens        int     `json:"tokens,omitempty"`
	Plateau       int     `json:"plateau,omitempty"`
	SOLEpsilon    float64 `json:"sol_epsilon,omitempty"`
	TargetSpeedup float64 `json:"target_speedup,omitempty"`
}

func budgetView(b search.Budget) BudgetView {
	return BudgetView{Evals: b.Evals, TimeS: b.Time.Seconds(), Tokens: b.Tokens, Plateau: b.Plateau, SOLEpsilon: b.SOLEpsilon, TargetSpeedup: b.TargetSpeedup}
}

// BestResult is evolve_best's answer.
type BestResult struct {
	RunID   string           `json:"run_id"`
	Status  search.RunStatus `json:"status"`
	Node    NodeView         `json:"node"`
	Summary search.Summary   `json:"summary"`
}

// Best returns the run's best kernel with its code and result.
func (m *Manager) Best(ctx context.Context, id string) (BestResult, error) {
	run, err := m.run(ctx, id)
	if err != nil {
		return BestResult{RunID: id}, err
	}
	nodes, err := m.o.Store.Nodes(ctx, id)
	if err != nil {
		return BestResult{RunID: id}, err
	}
	g := search.NewGraph(nodes)
	best := g.Node(run.BestNode)
	if best == nil || !best.Evaluated() {
		best = g.Best()
	}
	if best == nil {
		return BestResult{RunID: id}, errors.New("run " + id + " has no correct kernel yet: evolve_status shows its progress")
	}
	return BestResult{RunID: id, Status: run.Status, Node: viewOf(best), Summary: search.Summarize(run, nodes)}, nil
}

// Summary is a run's summary (the run://ID resource).
func (m *Manager) Summary(ctx context.Context, id string) (search.Summary, error) {
	return m.summary(ctx, id)
}

// RunInfo is a run's identity and settings, as evolve_start, evolve,
// evolve_stop and evolve_resume return it.
type RunInfo struct {
	RunID      string           `json:"run_id"`
	Status     search.RunStatus `json:"status"`
	StopReason string           `json:"stop_reason,omitempty"`
	Problem    string           `json:"problem"`
	Target     string           `json:"target"`
	Language   string           `json:"language"`
	ShapeSet   string           `json:"shape_set,omitempty"`
	Devices    []string         `json:"devices,omitempty"`
	Policy     string           `json:"policy"`
	Operator   string           `json:"operator"`
	Baseline   string           `json:"baseline"`
	Budget     BudgetView       `json:"budget"`
	Seed       int64            `json:"seed"`
	// Active says whether this server drives the run now.
	Active  bool   `json:"active"`
	Message string `json:"message"`
}

// Info describes a run.
func (m *Manager) Info(r *search.Run, message string) RunInfo {
	return RunInfo{RunID: r.ID, Status: r.Status, StopReason: r.StopReason, Problem: r.Problem.Name, Target: r.Problem.Target,
		Language: r.Problem.Language, ShapeSet: r.Problem.ShapeSet, Devices: r.Devices, Policy: r.Policy, Operator: r.Operator, Baseline: r.Baseline,
		Budget: budgetView(r.Budget), Seed: r.Seed, Active: m.Active(r.ID) && r.Status == search.RunRunning, Message: message}
}
