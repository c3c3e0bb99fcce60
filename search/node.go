package search

import (
	"encoding/json"
	"time"
)

// NodeState is where a node is in its life. A node is written as pending
// before its evaluation starts, evaluating while the evaluator holds it, and
// done or failed when the evaluation ends; a crash leaves at most the nodes
// in flight as evaluating, and resume evaluates exactly those again.
type NodeState string

const (
	NodePending    NodeState = "pending"
	NodeEvaluating NodeState = "evaluating"
	NodeDone       NodeState = "done"   // evaluated (any verdict)
	NodeFailed     NodeState = "failed" // the operator or the evaluation service failed; no verdict
)

// Finished reports whether the node's evaluation is over.
func (s NodeState) Finished() bool { return s == NodeDone || s == NodeFailed }

// Cost is what a node took to make and measure.
type Cost struct {
	EvalS     float64 `json:"eval_s"`
	OperatorS float64 `json:"operator_s"`
	Tokens    int     `json:"tokens"`
	// Rejected counts the proposals turned away (novelty) before this
	// node's; RejectedTokens is their share of Tokens.
	Rejected       int `json:"rejected,omitempty"`
	RejectedTokens int `json:"rejected_tokens,omitempty"`
}

// Node is one kernel in a run's graph.
type Node struct {
	ID    int64  `json:"id"`
	RunID string `json:"run_id"`
	// Parents are the nodes this one was derived from (none for the root).
	Parents []int64 `json:"parents,omitempty"`
	Depth   int     `json:"depth"`
	// Island is the evolve policy's island (0 for the other policies).
	Island int `json:"island"`

	Code     string `json:"code"`
	Hash     string `json:"hash"` // NormalizedHash(Code)
	Language string `json:"language"`

	Operator string `json:"operator"`
	// OperatorInput is what the operator was asked or chose (the tuner's
	// assignment of tunables, a prompt's hash), as JSON.
	OperatorInput json.RawMessage `json:"operator_input,omitempty"`

	State  NodeState `json:"state"`
	Result *Result   `json:"result,omitempty"`
	// DuplicateOf is the node whose evaluation answered this one (same
	// normalized code), 0 when it was evaluated itself.
	DuplicateOf int64 `json:"duplicate_of,omitempty"`
	// EvalSeq is the node's place among the run's evaluations (1-based,
	// duplicates included), 0 until it finishes.
	EvalSeq int `json:"eval_seq,omitempty"`

	Profile   string `json:"profile,omitempty"`
	Diagnosis string `json:"diagnosis,omitempty"`
	Notes     string `json:"notes,omitempty"`
	Error     string `json:"error,omitempty"` // why a failed node failed
	Cost      Cost   `json:"cost"`

	CreatedAt time.Time `json:"created_at"`
	UpdatedAt time.Time `json:"updated_at"`
}

// Fitness is the node's fitness, 0 until it has a result.
func (n *Node) Fitness() float64 {
	if n == nil || n.Result == nil {
		return 0
	}
	return n.Result.Fitness
}

// Evaluated reports whether the node carries an evaluation result.
func (n *Node) Evaluated() bool { return n != nil && n.State == NodeDone && n.Result != nil }
