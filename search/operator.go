package search

import (
	"context"
	"encoding/json"
	"errors"
	"time"
)

// MemoryMode says how much of the search's history an operator is shown
// (KernelEvolve's context synthesis): the parent's lineage, its siblings
// for comparison, or nothing.
type MemoryMode string

const (
	MemoryInherit    MemoryMode = "inherit"
	MemoryCompare    MemoryMode = "compare"
	MemoryCleanSlate MemoryMode = "clean_slate"
)

// BudgetState is how much of the run's budget is spent, for an operator
// that scales its effort (and for the progress line).
type BudgetState struct {
	Evals      int     `json:"evals"`
	EvalLimit  int     `json:"eval_limit,omitempty"`
	ElapsedS   float64 `json:"elapsed_s"`
	TimeLimitS float64 `json:"time_limit_s,omitempty"`
	Tokens     int     `json:"tokens"`
	TokenLimit int     `json:"token_limit,omitempty"`
}

// Context is everything an operator is given for one proposal.
type Context struct {
	Run     *Run
	Problem Problem
	// Parents are the selected nodes, with their results; Graph is the
	// whole run, read-only, for siblings and ancestors.
	Parents   []*Node
	Selection Selection
	Graph     *Graph
	Budget    BudgetState
	Memory    MemoryMode
	// Seed is this proposal's own random seed (derived from the run's seed
	// and the node count, so a resumed run proposes the same way).
	Seed int64
	// Feedback is what the run says about this proposal's earlier tries
	// (a novelty rejection: "nearly identical to node 7"); "" at first.
	Feedback string
}

// Proposal is an operator's answer: a candidate and what it cost.
type Proposal struct {
	Code     string          `json:"code"`
	Language string          `json:"language,omitempty"` // "" = the parent's
	Inputs   json.RawMessage `json:"inputs,omitempty"`   // stored as the node's OperatorInput
	Notes    string          `json:"notes,omitempty"`
	// Tokens is what this proposal cost, the rejected asks before it
	// included (their own figures are in Rejected).
	Tokens int `json:"tokens,omitempty"`
	// Rejected are the asks turned away before this one (novelty); the
	// run loop stores them.
	Rejected []RejectedProposal `json:"-"`
}

// ErrExhausted is returned by an operator that has nothing new to propose
// from the given parents (every variant it knows is already in the graph).
// The run loop asks the policy again or ends when no parent is left.
var ErrExhausted = errors.New("operator: nothing new to propose from this parent")

// ErrOperatorUnavailable marks a failure no retry can fix (an agent CLI
// that is not logged in, a missing API key, a CLI not installed). The run
// loop pauses the run at once, with the error as its reason, so that
// --resume continues it once the operator works.
var ErrOperatorUnavailable = errors.New("operator unavailable")

// Operator is O: it turns parent kernels into a new candidate. Propose must
// return by ctx's deadline; an operator that runs anything external kills
// its process group when ctx ends (toolchain.KillGroupOnCancel).
type Operator interface {
	Name() string
	// Deadline is the longest one Propose may take; the run loop enforces it.
	Deadline() time.Duration
	Propose(ctx context.Context, c Context) (Proposal, error)
}

// ProposalError is a failed proposal that still has something to record:
// what the operator was asked (the model, the prompt's hash), what it cost
// and its trimmed output. The run loop writes it as a failed node, so the
// tokens count against the budget, a bandit over models sees the failure
// after a resume, and the run's history shows what went wrong.
type ProposalError struct {
	Err    error
	Inputs json.RawMessage
	Tokens int // the rejected asks' tokens included
	// Rejected are the asks turned away (novelty) before the failure.
	Rejected []RejectedProposal
}

func (e *ProposalError) Error() string { return e.Err.Error() }
func (e *ProposalError) Unwrap() error { return e.Err }
