package runs

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/kevolve/kevolve-mcp/harness/problem"
	"github.com/kevolve/kevolve-mcp/search"
)

// Next states.
const (
	NextReady = "ready" // Task is the node to expand
	NextBusy  = "busy"  // the run is evaluating; ask again
)

// NextResult is evolve_next's answer.
type NextResult struct {
	RunID string `json:"run_id"`
	State string `json:"state"`
	// Resumed is set when this call resumed a paused run.
	Resumed bool   `json:"resumed,omitempty"`
	Task    *Task  `json:"task,omitempty"`
	Message string `json:"message"`
}

// Next waits up to wait for the run's next node to expand. A paused mcp
// run is resumed; a finished one is an error that says what to do.
func (m *Manager) Next(ctx context.Context, id string, wait time.Duration) (NextResult, error) {
	res := NextResult{RunID: id}
	d, resumed, err := m.agentDrive(ctx, id, true)
	if err != nil {
		return res, err
	}
	res.Resumed = resumed
	deadline := time.NewTimer(wait)
	defer deadline.Stop()
	for {
		changed := m.changed.wait()
		if t := d.agent.current(); t != nil {
			res.State, res.Task = NextReady, t
			res.Message = fmt.Sprintf("write a faster kernel derived from node %d (a Python module with class ModelNew), then call evolve_submit with run_id %s and node_id %d", t.NodeID, id, t.NodeID)
			if t.Draft {
				res.Message = fmt.Sprintf("draft phase: write an independent kernel for the problem (node %d is the start kernel), then call evolve_submit with run_id %s and node_id %d", t.NodeID, id, t.NodeID)
			}
			return res, nil
		}
		select {
		case <-d.done:
			run, err := m.run(ctx, id)
			if err != nil {
				return res, err
			}
			if finished(run.Status) {
				return res, m.endedError(ctx, run)
			}
			return res, fmt.Errorf("run %s paused (%s): call evolve_resume, then evolve_next", id, run.StopReason)
		case <-changed:
		case <-deadline.C:
			res.State = NextBusy
			res.Message = "the run is still evaluating a kernel; call evolve_next again (or evolve_status to watch)"
			return res, nil
		case <-ctx.Done():
			return res, ctx.Err()
		}
	}
}

// agentDrive returns the drive of an mcp run, resuming a paused one when
// allowed.
func (m *Manager) agentDrive(ctx context.Context, id string, resume bool) (*drive, bool, error) {
	run, err := m.run(ctx, id)
	if err != nil {
		return nil, false, err
	}
	if run.Operator != OperatorName {
		return nil, false, fmt.Errorf("run %s is driven by the %s operator on the server, not by you: watch it with evolve_status and read evolve_best; evolve_start creates a run you drive", id, run.Operator)
	}
	if d := m.activeDrive(id); d != nil {
		live, err := m.settle(ctx, d)
		if err != nil {
			return nil, false, err
		}
		if live {
			return d, false, nil
		}
	}
	// No drive of this server holds the run now: decide on it as it now
	// stands. A drive that ended since the read above (its budget spent by
	// the submit just answered) wrote the run's final status first, which
	// that read may have missed: taken for a run still running, it was
	// resumed, and the caller got "give a larger budget" instead of the
	// ended run's answer.
	if run, err = m.run(ctx, id); err != nil {
		return nil, false, err
	}
	switch {
	case finished(run.Status):
		return nil, false, m.endedError(ctx, run)
	case !resume && run.Status == search.RunRunning:
		return nil, false, fmt.Errorf("run %s is marked running but not driven by this server (its server was killed, or another process drives it): call evolve_next or evolve_resume to take it over, then submit for the node evolve_next gives", id)
	case !resume:
		return nil, false, fmt.Errorf("run %s is paused (%s): call evolve_next (it resumes the run) and submit for the node it gives", id, run.StopReason)
	}
	// Paused, or marked running by a process that is gone: continue it
	// here (the engine refuses when another live process drives it).
	if _, err := m.Resume(ctx, id, nil); err != nil {
		return nil, false, err
	}
	d := m.activeDrive(id)
	if d == nil {
		return nil, false, fmt.Errorf("run %s ended as it resumed: see evolve_status", id)
	}
	return d, true, nil
}

// SubmitRequest is a kernel for the pending node.
type SubmitRequest struct {
	RunID  string
	NodeID int64
	// Code is the kernel; Path a file holding it (one of the two).
	Code     string
	Path     string
	Language string
	Notes    string
	// Wait bounds how long Submit waits for the evaluation.
	Wait time.Duration
	// Progress, when set, hears about the evaluation every few seconds.
	Progress func(message string)
}

// Submit states.
const (
	SubmitEvaluated  = "evaluated"  // Node carries its result
	SubmitEvaluating = "evaluating" // still running after Wait: poll evolve_status
)

// SubmitResult is evolve_submit's answer.
type SubmitResult struct {
	RunID string `json:"run_id"`
	State string `json:"state"`
	// Node is the new child (with its result once evaluated).
	Node *NodeView `json:"node,omitempty"`
	// NewBest is set when the child is the run's new best kernel.
	NewBest bool                `json:"new_best"`
	Best    *search.NodeSummary `json:"best,omitempty"`
	Summary search.Summary      `json:"summary"`
	Message string              `json:"message"`
}

// heartbeat is how often a waiting submit reports progress: often enough
// to keep a client's idle timer from firing, rarely enough to be quiet.
const heartbeat = 5 * time.Second

// Submit hands a kernel to the run waiting for it and waits (up to
// req.Wait) for its evaluation. A client that goes away loses nothing: the
// evaluation belongs to the run, not to the call, and its result is in the
// store for evolve_status, evolve_next and evolve_best.
func (m *Manager) Submit(ctx context.Context, req SubmitRequest) (SubmitResult, error) {
	res := SubmitResult{RunID: req.RunID}
	switch {
	case req.Code != "" && req.Path != "":
		return res, fmt.Errorf("give code or path, not both")
	case req.Path != "":
		b, err := problem.ReadFile("path", req.Path)
		if err != nil {
			return res, fmt.Errorf("kernel file: %w", err)
		}
		req.Code = string(b)
	}
	if strings.TrimSpace(req.Code) == "" {
		return res, fmt.Errorf("no kernel: give code (a Python module defining class ModelNew) or a path to one")
	}
	if !strings.Contains(req.Code, "ModelNew") {
		return res, fmt.Errorf("the kernel defines no ModelNew: a candidate is a Python module with class ModelNew (same constructor and forward as the reference's Model)")
	}
	d, _, err := m.agentDrive(ctx, req.RunID, false)
	if err != nil {
		return res, err
	}
	deadline := time.NewTimer(req.Wait)
	defer deadline.Stop()
	say := func(string) {}
	if req.Progress != nil {
		say = req.Progress
	}
	// A kernel submitted while the run is still evaluating (the start
	// kernel, or a kernel whose caller left) waits for the run to be ready
	// for it, then is checked against the node the run actually expands.
	for d.agent.current() == nil {
		changed := m.changed.wait()
		if d.agent.current() != nil {
			break
		}
		select {
		case <-d.done:
			return res, fmt.Errorf("run %s ended before it was ready for your kernel: see evolve_status", req.RunID)
		case <-changed:
		case <-deadline.C:
			return res, fmt.Errorf("run %s is still evaluating and not ready for a kernel: call evolve_next (it waits) and submit for its node", req.RunID)
		case <-ctx.Done():
			return res, ctx.Err()
		}
	}
	ticket, err := d.agent.submit(req.NodeID, req.Code, req.Language, req.Notes)
	if err != nil {
		return res, fmt.Errorf("run %s: %v; call evolve_next for the node to expand", req.RunID, err)
	}
	say(fmt.Sprintf("kernel accepted for node %d; evaluating", req.NodeID))
	t0 := time.Now()
	tick := time.NewTicker(heartbeat)
	defer tick.Stop()
	var nodeID int64
	for {
		changed := m.changed.wait()
		if nodeID == 0 {
			nodeID = d.agent.nodeFor(ticket)
		}
		if nodeID != 0 {
			n, err := m.o.Store.Node(ctx, nodeID)
			if err != nil {
				return res, err
			}
			if n.State.Finished() {
				return m.submitted(ctx, res, n)
			}
		}
		select {
		case <-d.done:
			if nodeID != 0 {
				if n, err := m.o.Store.Node(ctx, nodeID); err == nil && n.State.Finished() {
					return m.submitted(ctx, res, n)
				}
			}
			run, err := m.run(ctx, req.RunID)
			if err != nil {
				return res, err
			}
			if nodeID == 0 {
				return res, fmt.Errorf("run %s ended (%s: %s) before your kernel was recorded: submit it again after evolve_resume", req.RunID, run.Status, run.StopReason)
			}
			return res, fmt.Errorf("run %s ended (%s: %s) while node %d was being evaluated: evolve_resume evaluates it again", req.RunID, run.Status, run.StopReason, nodeID)
		case <-changed:
		case <-tick.C:
			say(fmt.Sprintf("evaluating node %d (%.0f s)", nodeID, time.Since(t0).Seconds()))
		case <-deadline.C:
			res.State = SubmitEvaluating
			if nodeID != 0 {
				n, err := m.o.Store.Node(ctx, nodeID)
				if err == nil {
					v := viewOf(n)
					res.Node = &v
				}
			}
			res.Summary, _ = m.summary(ctx, req.RunID)
			res.Message = fmt.Sprintf("node %d is still being evaluated; its result will be in evolve_status (event evaluated) and in the next evolve_next's siblings", nodeID)
			return res, nil
		case <-ctx.Done():
			return res, ctx.Err()
		}
	}
}

func (m *Manager) submitted(ctx context.Context, res SubmitResult, n *search.Node) (SubmitResult, error) {
	res.State = SubmitEvaluated
	v := viewOf(n)
	res.Node = &v
	run, err := m.run(ctx, res.RunID)
	if err != nil {
		return res, err
	}
	nodes, err := m.o.Store.Nodes(ctx, res.RunID)
	if err != nil {
		return res, err
	}
	res.Summary = search.Summarize(run, nodes)
	res.Best = res.Summary.Best
	res.NewBest = res.Best != nil && res.Best.ID == n.ID
	switch {
	case n.State == search.NodeFailed:
		res.Message = fmt.Sprintf("node %d could not be evaluated: %s", n.ID, firstLine(n.Error))
	case n.DuplicateOf != 0:
		res.Message = fmt.Sprintf("node %d has the same code as node %d: answered from the store, not evaluated again; try something different", n.ID, n.DuplicateOf)
	case n.Result.Verdict != search.VerdictPass:
		res.Message = fmt.Sprintf("node %d: %s; read %s, then call evolve_next", n.ID, n.Result.Verdict, whereToRead(v))
	case res.NewBest:
		res.Message = fmt.Sprintf("node %d passed with fitness %.3f: the run's new best; call evolve_next", n.ID, n.Result.Fitness)
	default:
		res.Message = fmt.Sprintf("node %d passed with fitness %.3f (best %.3f); call evolve_next", n.ID, n.Result.Fitness, bestFitness(res.Best))
	}
	return res, nil
}

// whereToRead names the fields of this answer that say why a node failed:
// only those it has (a compile error's log is in its check's detail, and
// its result has no log).
func whereToRead(v NodeView) string {
	var at []string
	if len(v.FailedChecks) > 0 {
		at = append(at, "node.failed_checks (their detail)")
	}
	if v.Result != nil && v.Result.Log != "" {
		at = append(at, "node.result.log")
	}
	if len(at) == 0 {
		return "node.result (stage " + stageOf(v) + ")"
	}
	return strings.Join(at, " and ")
}

func stageOf(v NodeView) string {
	if v.Result == nil || v.Result.Stage == "" {
		return "unknown"
	}
	return v.Result.Stage
}

func bestFitness(b *search.NodeSummary) float64 {
	if b == nil {
		return 0
	}
	return b.Fitness
}

func (m *Manager) summary(ctx context.Context, id string) (search.Summary, error) {
	run, err := m.run(ctx, id)
	if err != nil {
		return search.Summary{}, err
	}
	nodes, err := m.o.Store.Nodes(ctx, id)
	if err != nil {
		return search.Summary{}, err
	}
	return search.Summarize(run, nodes), nil
}

// endedError is finishedError, with the start kernel's failure when that
// is why the run ended (nothing to expand).
func (m *Manager) endedError(ctx context.Context, run *search.Run) error {
	err := finishedError(run)
	nodes, nerr := m.o.Store.Nodes(ctx, run.ID)
	if nerr != nil || len(nodes) == 0 {
		return err
	}
	g := search.NewGraph(nodes)
	if root := g.Root(); root != nil && root.State == search.NodeFailed && g.EvalCount() == 0 && !strings.Contains(run.StopReason, firstLine(root.Error)) {
		return fmt.Errorf("%w; its start kernel could not be evaluated: %s", err, firstLine(root.Error))
	}
	return err
}

// settle waits until a drive has either taken hold of its run or ended,
// and, when it holds a run that is no longer running (it is pausing or
// has finished), until it has ended. It reports whether the drive lives.
func (m *Manager) settle(ctx context.Context, d *drive) (bool, error) {
	select {
	case <-d.started:
	case <-d.done:
		return false, nil
	case <-ctx.Done():
		return false, ctx.Err()
	}
	run, err := m.run(ctx, d.runID)
	if err != nil {
		return false, err
	}
	if run.Status == search.RunRunning {
		return true, nil
	}
	select {
	case <-d.done:
		return false, nil
	case <-time.After(startTimeout):
		return false, fmt.Errorf("run %s is %s but its drive in this server has not ended: try again shortly", d.runID, run.Status)
	case <-ctx.Done():
		return false, ctx.Err()
	}
}
