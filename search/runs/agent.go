package runs

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/kevolve/kevolve-mcp/search"
)

// OperatorName is the operator of runs whose MCP client proposes kernels.
const OperatorName = "mcp"

// EventAgentIdle is the event of an mcp run paused for want of a kernel.
const EventAgentIdle = "agent_idle"

// agentDeadline is how long the run loop waits for a client's kernel. An
// agent may think for a long time; a run nobody drives costs one blocked
// goroutine, and evolve_stop or the server's end releases it.
const agentDeadline = 7 * 24 * time.Hour

// submission is a client's kernel for the pending task.
type submission struct {
	ticket   int64
	code     string
	language string
	notes    string
}

// agentOperator is the search.Operator of an mcp run: Propose publishes a
// task (the selected parent and everything an agent needs about it) and
// waits for evolve_submit to hand back a kernel. It runs inside the
// engine's loop, so selection, duplicates, budgets, checkpoints and resume
// are the engine's, exactly as for the tuner.
type agentOperator struct {
	changed *broadcast
	// idle, when positive, is how long a task may wait for its kernel
	// before onIdle pauses the run (evolve_next resumes it).
	idle   time.Duration
	onIdle func(nodeID int64)

	mu      sync.Mutex
	seq     int64
	pending *Task
	inbox   chan submission // capacity 1: a submission is accepted at most once per task
	nodes   map[int64]int64 // ticket -> node id, once the engine wrote the node
}

func newAgentOperator(changed *broadcast) *agentOperator {
	return &agentOperator{changed: changed, inbox: make(chan submission, 1), nodes: map[int64]int64{}}
}

func (o *agentOperator) Name() string            { return OperatorName }
func (o *agentOperator) Deadline() time.Duration { return agentDeadline }

func (o *agentOperator) Propose(ctx context.Context, c search.Context) (search.Proposal, error) {
	o.mu.Lock()
	o.seq++
	task := buildTask(c, o.seq)
	o.pending = task
	o.mu.Unlock()
	o.changed.notify()
	defer o.changed.notify()
	var idle <-chan time.Time
	if o.idle > 0 && o.onIdle != nil {
		t := time.NewTimer(o.idle)
		defer t.Stop()
		idle = t.C
	}
	select {
	case <-idle:
		// Nobody is driving this run: pause it rather than hold it (and
		// its claim in the store) forever. onIdle cancels ctx.
		o.onIdle(task.NodeID)
		<-ctx.Done()
		o.mu.Lock()
		if o.pending == task {
			o.pending = nil
		}
		o.mu.Unlock()
		return search.Proposal{}, ctx.Err()
	case sub := <-o.inbox:
		inputs, _ := json.Marshal(map[string]any{"ticket": sub.ticket, "parent": task.NodeID})
		return search.Proposal{Code: sub.code, Language: sub.language, Notes: sub.notes, Inputs: inputs}, nil
	case <-ctx.Done():
		o.mu.Lock()
		if o.pending == task {
			o.pending = nil
		}
		o.mu.Unlock()
		return search.Proposal{}, ctx.Err()
	}
}

// current returns the task waiting for a kernel, nil when the loop is
// elsewhere (evaluating, between steps, ended).
func (o *agentOperator) current() *Task {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.pending
}

// submit hands a kernel to the waiting Propose; it returns the ticket the
// node will carry. It never blocks.
func (o *agentOperator) submit(nodeID int64, code, language, notes string) (int64, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	t := o.pending
	if t == nil {
		return 0, errors.New("the run is not waiting for a kernel right now (it is evaluating one, or has just ended)")
	}
	if t.NodeID != nodeID {
		return 0, fmt.Errorf("node %d is not the node to expand: the run waits for a child of node %d", nodeID, t.NodeID)
	}
	select {
	case o.inbox <- submission{ticket: t.Ticket, code: code, language: language, notes: notes}:
	default:
		return 0, fmt.Errorf("a kernel for node %d was already submitted", nodeID)
	}
	o.pending = nil
	return t.Ticket, nil
}

func (o *agentOperator) recordNode(ticket, nodeID int64) {
	o.mu.Lock()
	o.nodes[ticket] = nodeID
	o.mu.Unlock()
}

// nodeFor returns the node written for a ticket (0 = not yet).
func (o *agentOperator) nodeFor(ticket int64) int64 {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.nodes[ticket]
}
