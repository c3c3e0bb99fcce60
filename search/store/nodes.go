package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/kevolve/kevolve-mcp/search"
)

// InsertNode writes a new node and its edges in one transaction.
func (s *SQLite) InsertNode(ctx context.Context, n *search.Node) error {
	return s.tx(ctx, func(tx *sql.Tx) error { return insertNode(ctx, tx, n) })
}

// insertNode validates n, fills its hash, state and timestamps, and writes
// it and its edges inside tx.
func insertNode(ctx context.Context, tx *sql.Tx, n *search.Node) error {
	if n.RunID == "" || n.Code == "" {
		return errors.New("insert node: run id and code are required")
	}
	if n.Hash == "" {
		n.Hash = search.NormalizedHash(n.Code)
	}
	if n.State == "" {
		n.State = search.NodePending
	}
	n.CreatedAt, n.UpdatedAt = now(), now()
	parents := n.Parents
	if parents == nil {
		parents = []int64{}
	}
	res, err := tx.ExecContext(ctx, `INSERT INTO search_nodes
		(run_id, parents, depth, island, code, hash, language, operator, operator_input, state, notes, operator_s, tokens,
		 rejected, rejected_tokens, created_at, updated_at)
		VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)`,
		n.RunID, mustJSON(parents), n.Depth, n.Island, n.Code, n.Hash, n.Language, n.Operator, nullRaw(n.OperatorInput),
		string(n.State), n.Notes, n.Cost.OperatorS, n.Cost.Tokens, n.Cost.Rejected, n.Cost.RejectedTokens, ts(n.CreatedAt), ts(n.UpdatedAt))
	if err != nil {
		return fmt.Errorf("insert node of run %s: %w", n.RunID, err)
	}
	if n.ID, err = res.LastInsertId(); err != nil {
		return err
	}
	for _, p := range n.Parents {
		if _, err := tx.ExecContext(ctx, `INSERT INTO search_edges(run_id, parent_id, child_id) VALUES (?,?,?)`, n.RunID, p, n.ID); err != nil {
			return fmt.Errorf("insert edge %d->%d: %w", p, n.ID, err)
		}
	}
	return nil
}

func nullRaw(r json.RawMessage) any {
	if len(r) == 0 {
		return nil
	}
	return string(r)
}

// SetNodeState moves a node between pending and evaluating.
func (s *SQLite) SetNodeState(ctx context.Context, id int64, st search.NodeState) error {
	if st.Finished() {
		return fmt.Errorf("set node %d state: use FinishNode for %s", id, st)
	}
	res, err := s.db.ExecContext(ctx, `UPDATE search_nodes SET state=?, updated_at=? WHERE id=? AND state IN ('pending','evaluating')`, string(st), ts(now()), id)
	if err != nil {
		return fmt.Errorf("set node %d state: %w", id, err)
	}
	if k, _ := res.RowsAffected(); k == 0 {
		return fmt.Errorf("set node %d state %s: not an unfinished node: %w", id, st, search.ErrNotFound)
	}
	return nil
}

// FinishNode writes the node's end state, assigns its EvalSeq (the next in
// its run) and saves the run (best node, elapsed time) in the same
// transaction, so an evaluation and the budget it spent are recorded
// together or not at all. Finishing a node twice is an error: that would be
// an evaluation counted twice.
func (s *SQLite) FinishNode(ctx context.Context, n *search.Node, r *search.Run) error {
	if !n.State.Finished() {
		return fmt.Errorf("finish node %d: state %q is not finished", n.ID, n.State)
	}
	n.UpdatedAt = now()
	var result, verdict, fitness any
	if n.Result != nil {
		result, verdict, fitness = mustJSON(n.Result), n.Result.Verdict, n.Result.Fitness
	}
	return s.tx(ctx, func(tx *sql.Tx) error {
		res, err := tx.ExecContext(ctx, `UPDATE search_nodes SET
				state=?, result=?, verdict=?, fitness=?, duplicate_of=?, profile=?, diagnosis=?, notes=?, error=?,
				eval_s=?, operator_s=?, tokens=?, updated_at=?,
				eval_seq=(SELECT COALESCE(MAX(eval_seq),0)+1 FROM search_nodes WHERE run_id=?)
			WHERE id=? AND run_id=? AND state IN ('pending','evaluating')`,
			string(n.State), result, verdict, fitness, nullID(n.DuplicateOf), n.Profile, n.Diagnosis, n.Notes, n.Error,
			n.Cost.EvalS, n.Cost.OperatorS, n.Cost.Tokens, ts(n.UpdatedAt), n.RunID, n.ID, n.RunID)
		if err != nil {
			return fmt.Errorf("finish node %d: %w", n.ID, err)
		}
		if k, _ := res.RowsAffected(); k == 0 {
			return fmt.Errorf("finish node %d: no unfinished node with that id in run %s", n.ID, n.RunID)
		}
		if err := tx.QueryRowContext(ctx, `SELECT eval_seq FROM search_nodes WHERE id=?`, n.ID).Scan(&n.EvalSeq); err != nil {
			return err
		}
		if r != nil {
			r.UpdatedAt = now()
			if _, err := tx.ExecContext(ctx, `UPDATE search_runs SET best_node=?, elapsed_s=?, updated_at=? WHERE id=?`,
				nullID(r.BestNode), r.ElapsedS, ts(r.UpdatedAt), r.ID); err != nil {
				return fmt.Errorf("finish node %d: save run: %w", n.ID, err)
			}
		}
		return nil
	})
}

const nodeCols = `id, run_id, parents, depth, island, code, hash, language, operator, operator_input, state, result,
	duplicate_of, eval_seq, profile, diagnosis, notes, error, eval_s, operator_s, tokens, rejected, rejected_tokens, created_at, updated_at`

func scanNode(sc interface{ Scan(...any) error }) (*search.Node, error) {
	var n search.Node
	var parents, state, created, updated string
	var input, result sql.NullString
	var dup, seq sql.NullInt64
	if err := sc.Scan(&n.ID, &n.RunID, &parents, &n.Depth, &n.Island, &n.Code, &n.Hash, &n.Language, &n.Operator, &input, &state, &result,
		&dup, &seq, &n.Profile, &n.Diagnosis, &n.Notes, &n.Error, &n.Cost.EvalS, &n.Cost.OperatorS, &n.Cost.Tokens, &n.Cost.Rejected, &n.Cost.RejectedTokens, &created, &updated); err != nil {
		return nil, err
	}
	if err := json.Unmarshal([]byte(parents), &n.Parents); err != nil {
		return nil, fmt.Errorf("node %d: parents: %w", n.ID, err)
	}
	if len(n.Parents) == 0 {
		n.Parents = nil
	}
	if input.Valid {
		n.OperatorInput = json.RawMessage(input.String)
	}
	if result.Valid {
		n.Result = &search.Result{}
		if err := json.Unmarshal([]byte(result.String), n.Result); err != nil {
			return nil, fmt.Errorf("node %d: result: %w", n.ID, err)
		}
	}
	n.State = search.NodeState(state)
	n.DuplicateOf, n.EvalSeq = dup.Int64, int(seq.Int64)
	n.CreatedAt, n.UpdatedAt = parseTS(created), parseTS(updated)
	return &n, nil
}

// Nodes returns a run's nodes in id order.
func (s *SQLite) Nodes(ctx context.Context, runID string) ([]*search.Node, error) {
	rows, err := s.db.QueryContext(ctx, `SELECT `+nodeCols+` FROM search_nodes WHERE run_id = ? ORDER BY id`, runID)
	if err != nil {
		return nil, fmt.Errorf("nodes of run %s: %w", runID, err)
	}
	defer rows.Close()
	var out []*search.Node
	for rows.Next() {
		n, err := scanNode(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, n)
	}
	return out, rows.Err()
}

// Node loads one node.
func (s *SQLite) Node(ctx context.Context, id int64) (*search.Node, error) {
	n, err := scanNode(s.db.QueryRowContext(ctx, `SELECT `+nodeCols+` FROM search_nodes WHERE id = ?`, id))
	if errors.Is(err, sql.ErrNoRows) {
		return nil, fmt.Errorf("node %d: %w", id, search.ErrNotFound)
	}
	if err != nil {
		return nil, fmt.Errorf("load node %d: %w", id, err)
	}
	return n, nil
}

// EvaluatedByHash finds the earliest evaluated node with this hash in the
// run, else in another run of the same problem key. Only nodes that were
// evaluated themselves qualify (never a copy of a copy).
func (s *SQLite) EvaluatedByHash(ctx context.Context, runID, problemKey, hash string) (*search.Node, error) {
	row := s.db.QueryRowContext(ctx, `SELECT `+prefixed("n", nodeCols)+` FROM search_nodes n JOIN search_runs r ON r.id = n.run_id
		WHERE n.hash = ? AND n.state = 'done' AND n.result IS NOT NULL AND n.duplicate_of IS NULL
		  AND (n.run_id = ? OR r.problem_key = ?)
		ORDER BY (n.run_id = ?) DESC, n.id LIMIT 1`, hash, runID, problemKey, runID)
	n, err := scanNode(row)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("look up hash %s: %w", hash[:12], err)
	}
	return n, nil
}
