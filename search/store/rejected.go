package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/kevolve/kevolve-mcp/search"
)

// InsertRejected records a proposal the run turned away before evaluating
// it and sets its ID and time.
func (s *SQLite) InsertRejected(ctx context.Context, r *search.RejectedProposal) error {
	if r.RunID == "" || r.Reason == "" {
		return errors.New("insert rejected proposal: run id and reason are required")
	}
	r.CreatedAt = now()
	parents := r.Parents
	if parents == nil {
		parents = []int64{}
	}
	res, err := s.db.ExecContext(ctx, `INSERT INTO search_rejected
		(run_id, parents, operator, try, code, reason, similar_to, similarity, tokens, operator_input, feedback, seed, created_at)
		VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?)`,
		r.RunID, mustJSON(parents), r.Operator, max(r.Try, 1), r.Code, r.Reason, nullID(r.SimilarTo), r.Similarity, r.Tokens,
		nullRaw(r.Inputs), r.Feedback, r.Seed, ts(r.CreatedAt))
	if err != nil {
		return fmt.Errorf("insert rejected proposal of run %s: %w", r.RunID, err)
	}
	r.ID, err = res.LastInsertId()
	return err
}

// Rejected returns a run's rejected proposals in the order they were made
// (what `evolve export` writes beside the nodes).
func (s *SQLite) Rejected(ctx context.Context, runID string) ([]*search.RejectedProposal, error) {
	rows, err := s.db.QueryContext(ctx, `SELECT id, run_id, parents, operator, try, code, reason, similar_to, similarity, tokens,
		operator_input, feedback, seed, created_at FROM search_rejected WHERE run_id = ? ORDER BY id`, runID)
	if err != nil {
		return nil, fmt.Errorf("rejected proposals of run %s: %w", runID, err)
	}
	defer rows.Close()
	var out []*search.RejectedProposal
	for rows.Next() {
		var r search.RejectedProposal
		var parents, created string
		var similar sql.NullInt64
		var input sql.NullString
		if err := rows.Scan(&r.ID, &r.RunID, &parents, &r.Operator, &r.Try, &r.Code, &r.Reason, &similar, &r.Similarity, &r.Tokens,
			&input, &r.Feedback, &r.Seed, &created); err != nil {
			return nil, fmt.Errorf("rejected proposals of run %s: %w", runID, err)
		}
		if err := json.Unmarshal([]byte(parents), &r.Parents); err != nil {
			return nil, fmt.Errorf("rejected proposal %d: parents: %w", r.ID, err)
		}
		if len(r.Parents) == 0 {
			r.Parents = nil
		}
		if input.Valid {
			r.Inputs = json.RawMessage(input.String)
		}
		r.SimilarTo, r.CreatedAt = similar.Int64, parseTS(created)
		out = append(out, &r)
	}
	return out, rows.Err()
}
