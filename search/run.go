package search

import (
	"encoding/json"
	"time"
)

// RunStatus is a run's life: running while a process drives it, paused when
// that process ended without finishing (resume continues it), then done,
// stopped (by a user) or failed.
type RunStatus string

const (
	RunRunning RunStatus = "running"
	RunPaused  RunStatus = "paused"
	RunDone    RunStatus = "done"
	RunStopped RunStatus = "stopped"
	RunFailed  RunStatus = "failed"
)

// Budget is when a run stops (see search/termination); a zero field is no
// limit.
type Budget struct {
	Evals  int           `json:"evals,omitempty"`
	Time   time.Duration `json:"time,omitempty"`
	Tokens int           `json:"tokens,omitempty"`
	// Plateau stops after this many evaluations without a new best.
	Plateau int `json:"plateau,omitempty"`
	// SOLEpsilon stops once the best beats the baseline and
	// t_best <= (1+SOLEpsilon)*t_SOL (μCUTLASS's rule); 0 = off.
	SOLEpsilon float64 `json:"sol_epsilon,omitempty"`
	// TargetSpeedup stops once the best fitness reaches it; 0 = off.
	TargetSpeedup float64 `json:"target_speedup,omitempty"`
}

// Run is one search: its problem, how it searches and where it stands.
type Run struct {
	ID       string   `json:"id"`
	Problem  Problem  `json:"problem"`
	Devices  []string `json:"devices,omitempty"`
	Policy   string   `json:"policy"`
	Operator string   `json:"operator"`
	Baseline string   `json:"baseline"`
	Budget   Budget   `json:"budget"`
	// Seed makes a run's random choices repeatable (and resumable).
	Seed int64 `json:"seed"`
	// Config holds the rest of the run's settings (policy parameters,
	// draft size, supervisor), as JSON so a new field needs no migration.
	Config json.RawMessage `json:"config,omitempty"`

	Status     RunStatus `json:"status"`
	StopReason string    `json:"stop_reason,omitempty"`
	BestNode   int64     `json:"best_node,omitempty"`
	// ElapsedS is wall time spent running, summed over every process that
	// drove the run (so a resumed run's time budget counts what went before).
	ElapsedS  float64   `json:"elapsed_s"`
	CreatedAt time.Time `json:"created_at"`
	UpdatedAt time.Time `json:"updated_at"`
}

// Event is one line of a run's feed (evolve_status, the CLI's progress).
type Event struct {
	RunID   string          `json:"run_id"`
	Seq     int64           `json:"seq"`
	Kind    string          `json:"kind"`
	Message string          `json:"message"`
	Data    json.RawMessage `json:"data,omitempty"`
	At      time.Time       `json:"at"`
}

// Event kinds.
const (
	EventStart      = "start"
	EventResume     = "resume"
	EventEvaluated  = "evaluated"
	EventDuplicate  = "duplicate"
	EventNewBest    = "new_best"
	EventProposeErr = "propose_error"
	EventEvalErr    = "eval_error"
	EventSupervisor = "supervisor"
	EventStop       = "stop"
)
