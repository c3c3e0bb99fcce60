package search

import (
	"encoding/json"
	"time"
)

// RejectedProposal is a proposal the run did not evaluate: the operator's
// code, why it was turned away (a near or exact duplicate of a node) and
// what it cost. It is kept with what the operator had been given, so a
// trajectory export shows every ask, not only the evaluated ones, and its
// tokens are accounted for (they also count in the node the operator's
// next answer made, or in the failed proposal when none was accepted).
type RejectedProposal struct {
	ID       int64   `json:"id"`
	RunID    string  `json:"run_id"`
	Parents  []int64 `json:"parents,omitempty"`
	Operator string  `json:"operator"`
	// Try is the ask's place among the asks for one child (1-based).
	Try    int    `json:"try"`
	Code   string `json:"code"`
	Reason string `json:"reason"`
	// SimilarTo is the node the proposal duplicated; Similarity the
	// normalized-token similarity to it (1 = the same program).
	SimilarTo  int64   `json:"similar_to,omitempty"`
	Similarity float64 `json:"similarity,omitempty"`
	Tokens     int     `json:"tokens"`
	// Inputs is what the operator was asked (its prompt's hash, the model),
	// Feedback what the run had told it about its earlier tries, Seed the
	// ask's seed: the context the proposal was made in.
	Inputs    json.RawMessage `json:"operator_input,omitempty"`
	Feedback  string          `json:"feedback,omitempty"`
	Seed      int64           `json:"seed"`
	CreatedAt time.Time       `json:"created_at"`
}

// RejectedTokens sums the tokens of rejected proposals.
func RejectedTokens(rs []RejectedProposal) int {
	t := 0
	for _, r := range rs {
		t += r.Tokens
	}
	return t
}
