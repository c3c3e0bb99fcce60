// Package trajectory exports a search's proposals as training or
// evaluation data (the CUDA-L1 and LLM Compiler use): one record per
// proposal with the context the operator saw, the code it proposed, the
// harness's verdict and checks, and the timing, as JSON lines or CSV.
package trajectory

import (
	"context"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"time"

	"github.com/kevolve/kevolve-mcp/search"
)

// Record is one proposal.
type Record struct {
	RunID    string         `json:"run_id"`
	Problem  search.Problem `json:"problem"`
	NodeID   int64          `json:"node_id"`
	Parents  []int64        `json:"parents"`
	Depth    int            `json:"depth"`
	Operator string         `json:"operator"`
	// Context is what the operator was given (the node's operator input:
	// the synthesized prompt context), as stored.
	Context json.RawMessage `json:"context,omitempty"`
	// Proposal is the code proposed and the operator's notes.
	Proposal Proposal `json:"proposal"`
	// State is done, failed or, for a proposal the run refused before
	// evaluation, rejected; Verdict the harness's verdict.
	State       string         `json:"state"`
	Verdict     string         `json:"verdict,omitempty"`
	Correct     bool           `json:"correct"`
	Checks      []search.Check `json:"checks,omitempty"`
	Timing      Timing         `json:"timing"`
	DuplicateOf int64          `json:"duplicate_of,omitempty"`
	Error       string         `json:"error,omitempty"`
	CreatedAt   time.Time      `json:"created_at"`
}

// Proposal is a proposed kernel.
type Proposal struct {
	Code     string `json:"code"`
	Language string `json:"language,omitempty"`
	Hash     string `json:"hash,omitempty"`
	Notes    string `json:"notes,omitempty"`
}

// Timing is the evaluation's figures and the proposal's costs.
type Timing struct {
	TimeS            float64 `json:"time_s,omitempty"`
	EagerS           float64 `json:"eager_s,omitempty"`
	CompileS         float64 `json:"compile_s,omitempty"`
	CV               float64 `json:"cv,omitempty"`
	SpeedupVsEager   float64 `json:"speedup_vs_eager,omitempty"`
	SpeedupVsCompile float64 `json:"speedup_vs_compile,omitempty"`
	Fitness          float64 `json:"fitness"`
	PctOfSOL         float64 `json:"pct_of_sol,omitempty"`
	EvalS            float64 `json:"eval_s,omitempty"`
	OperatorS        float64 `json:"operator_s,omitempty"`
	Tokens           int     `json:"tokens,omitempty"`
}

// Records are a run's proposals in node order, then any rejected ones the
// store keeps.
func Records(ctx context.Context, st search.Store, runID string) ([]Record, error) {
	run, err := st.Run(ctx, runID)
	if err != nil {
		return nil, err
	}
	nodes, err := st.Nodes(ctx, runID)
	if err != nil {
		return nil, err
	}
	out := make([]Record, 0, len(nodes))
	for _, n := range nodes {
		r := Record{RunID: run.ID, Problem: run.Problem, NodeID: n.ID, Parents: n.Parents, Depth: n.Depth, Operator: n.Operator,
			Context:  n.OperatorInput,
			Proposal: Proposal{Code: n.Code, Language: n.Language, Hash: n.Hash, Notes: n.Notes},
			State:    string(n.State), DuplicateOf: n.DuplicateOf, Error: n.Error, CreatedAt: n.CreatedAt,
			Timing: Timing{EvalS: n.Cost.EvalS, OperatorS: n.Cost.OperatorS, Tokens: n.Cost.Tokens}}
		if res := n.Result; res != nil {
			r.Verdict, r.Correct, r.Checks = res.Verdict, res.Correct, res.Checks
			r.Timing.TimeS, r.Timing.EagerS, r.Timing.CompileS, r.Timing.CV = res.TimeS, res.EagerS, res.CompileS, res.CV
			r.Timing.SpeedupVsEager, r.Timing.SpeedupVsCompile, r.Timing.Fitness, r.Timing.PctOfSOL = res.SpeedupVsEager, res.SpeedupVsCompile, res.Fitness, res.PctOfSOL
		}
		out = append(out, r)
	}
	rej, err := st.Rejected(ctx, runID)
	if err != nil {
		return nil, fmt.Errorf("trajectory: rejected proposals: %w", err)
	}
	for _, r := range rej {
		out = append(out, rejectedRecord(run, r))
	}
	return out, nil
}

// rejectedRecord is a proposal the run turned away before evaluating it:
// state rejected, the reason as its error, the node it duplicated.
func rejectedRecord(run *search.Run, r *search.RejectedProposal) Record {
	return Record{RunID: run.ID, Problem: run.Problem, Parents: r.Parents, Operator: r.Operator, Context: r.Inputs,
		Proposal: Proposal{Code: r.Code}, State: "rejected", DuplicateOf: r.SimilarTo, Error: r.Reason,
		Timing: Timing{Tokens: r.Tokens}, CreatedAt: r.CreatedAt}
}

// Write writes records as jsonl (one JSON object a line) or csv (a header,
// then one row a record; nested fields as JSON).
func Write(w io.Writer, format string, recs []Record) error {
	switch format {
	case "jsonl", "":
		enc := json.NewEncoder(w)
		enc.SetEscapeHTML(false)
		for _, r := range recs {
			if err := enc.Encode(r); err != nil {
				return fmt.Errorf("trajectory: %w", err)
			}
		}
		return nil
	case "csv":
		return writeCSV(w, recs)
	}
	return fmt.Errorf("trajectory: format %q: use jsonl or csv", format)
}

var csvHeader = []string{"run_id", "problem", "node_id", "parents", "depth", "operator", "context", "code", "language", "notes",
	"state", "verdict", "correct", "checks", "time_s", "eager_s", "compile_s", "cv", "speedup_vs_eager", "speedup_vs_compile",
	"fitness", "pct_of_sol", "eval_s", "operator_s", "tokens", "duplicate_of", "error", "created_at"}

func writeCSV(w io.Writer, recs []Record) error {
	cw := csv.NewWriter(w)
	if err := cw.Write(csvHeader); err != nil {
		return err
	}
	js := func(v any) string { b, _ := json.Marshal(v); return string(b) }
	f := func(v float64) string { return strconv.FormatFloat(v, 'g', -1, 64) }
	for _, r := range recs {
		t := r.Timing
		row := []string{r.RunID, r.Problem.Name, strconv.FormatInt(r.NodeID, 10), js(r.Parents), strconv.Itoa(r.Depth), r.Operator,
			string(r.Context), r.Proposal.Code, r.Proposal.Language, r.Proposal.Notes, r.State, r.Verdict, strconv.FormatBool(r.Correct),
			js(r.Checks), f(t.TimeS), f(t.EagerS), f(t.CompileS), f(t.CV), f(t.SpeedupVsEager), f(t.SpeedupVsCompile), f(t.Fitness),
			f(t.PctOfSOL), f(t.EvalS), f(t.OperatorS), strconv.Itoa(t.Tokens), strconv.FormatInt(r.DuplicateOf, 10), r.Error,
			r.CreatedAt.UTC().Format(time.RFC3339)}
		if err := cw.Write(row); err != nil {
			return err
		}
	}
	cw.Flush()
	return cw.Error()
}
