package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/kevolve/kevolve-mcp/search"
)

// AppendEvent adds an event with the run's next sequence number (set on e).
func (s *SQLite) AppendEvent(ctx context.Context, e *search.Event) error {
	e.At = now()
	return s.tx(ctx, func(tx *sql.Tx) error {
		if _, err := tx.ExecContext(ctx, `INSERT INTO search_events(run_id, seq, kind, message, data, at)
			SELECT ?, COALESCE(MAX(seq),0)+1, ?, ?, ?, ? FROM search_events WHERE run_id = ?`,
			e.RunID, e.Kind, e.Message, nullRaw(e.Data), ts(e.At), e.RunID); err != nil {
			return fmt.Errorf("append event to run %s: %w", e.RunID, err)
		}
		return tx.QueryRowContext(ctx, `SELECT MAX(seq) FROM search_events WHERE run_id = ?`, e.RunID).Scan(&e.Seq)
	})
}

// Events returns up to limit events with seq > after, oldest first.
func (s *SQLite) Events(ctx context.Context, runID string, after int64, limit int) ([]*search.Event, error) {
	if limit <= 0 {
		limit = 100
	}
	rows, err := s.db.QueryContext(ctx, `SELECT run_id, seq, kind, message, data, at FROM search_events
		WHERE run_id = ? AND seq > ? ORDER BY seq LIMIT ?`, runID, after, limit)
	if err != nil {
		return nil, fmt.Errorf("events of run %s: %w", runID, err)
	}
	defer rows.Close()
	var out []*search.Event
	for rows.Next() {
		var e search.Event
		var data sql.NullString
		var at string
		if err := rows.Scan(&e.RunID, &e.Seq, &e.Kind, &e.Message, &data, &at); err != nil {
			return nil, err
		}
		if data.Valid {
			e.Data = json.RawMessage(data.String)
		}
		e.At = parseTS(at)
		out = append(out, &e)
	}
	return out, rows.Err()
}

func prefixed(alias, cols string) string {
	parts := strings.Split(cols, ",")
	for i, p := range parts {
		parts[i] = alias + "." + strings.TrimSpace(p)
	}
	return strings.Join(parts, ", ")
}
