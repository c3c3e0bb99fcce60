package search

import (
	"context"
	"errors"
	"time"
)

// ErrNotFound is returned for an unknown run or node.
var ErrNotFound = errors.New("not found")

// ErrRunBusy is returned when another live process drives the run.
var ErrRunBusy = errors.New("another process is driving this run")

// Store persists runs, nodes and events. Every method is one transaction:
// a process killed between two calls loses nothing that a call returned for.
type Store interface {
	CreateRun(ctx context.Context, r *Run) error
	// CreateRunWithRoot writes a run and its root node (RunID filled in)
	// in one transaction: a run is never seen without its start kernel.
	CreateRunWithRoot(ctx context.Context, r *Run, root *Node) error
	Run(ctx context.Context, id string) (*Run, error)
	// UpdateRun saves status, stop reason, best node, elapsed time and config.
	UpdateRun(ctx context.Context, r *Run) error
	Runs(ctx context.Context) ([]*Run, error)

	// InsertNode writes a new node (state pending or evaluating) and sets
	// its ID. It is called before the evaluation starts.
	InsertNode(ctx context.Context, n *Node) error
	// FinishNode writes a node's end state, result, cost and EvalSeq; the
	// run's best node is updated in the same transaction.
	FinishNode(ctx context.Context, n *Node, r *Run) error
	// SetNodeState moves a node between pending and evaluating.
	SetNodeState(ctx context.Context, id int64, s NodeState) error
	Nodes(ctx context.Context, runID string) ([]*Node, error)
	Node(ctx context.Context, id int64) (*Node, error)
	// AcquireRun, HeartbeatRun and ReleaseRun keep one driver per run (a
	// CLI resume and a server must not drive the same run at once).
	AcquireRun(ctx context.Context, runID, me string, staleAfter time.Duration, alive func(driver string) bool) error
	HeartbeatRun(ctx context.Context, runID, me string) error
	ReleaseRun(ctx context.Context, runID, me string) error

	// EvaluatedByHash finds an evaluated node with this code hash, in this
	// run or any run of the same problem key, baseline aside; nil if none.
	EvaluatedByHash(ctx context.Context, runID, problemKey, hash string) (*Node, error)

	// InsertRejected records a proposal the run did not evaluate and sets
	// its ID; Rejected returns a run's, in the order they were made.
	InsertRejected(ctx context.Context, r *RejectedProposal) error
	Rejected(ctx context.Context, runID string) ([]*RejectedProposal, error)

	AppendEvent(ctx context.Context, e *Event) error
	// Events returns up to limit events of a run with Seq > after.
	Events(ctx context.Context, runID string, after int64, limit int) ([]*Event, error)
}
