package store

import (
	"context"
	"fmt"
	"sort"
	"strings"

	"github.com/kevolve/kevolve-mcp/search"
)

// ResolveRunID turns what a person typed into a run's id: the id itself, a
// unique prefix of it (r-20261122-13...), or a unique tail (the progress
// line prints the last six characters, f7c4ce). Several matches are an
// error that lists them; none is search.ErrNotFound.
func (s *SQLite) ResolveRunID(ctx context.Context, ref string) (string, error) {
	ref = strings.TrimSpace(ref)
	if ref == "" {
		return "", fmt.Errorf("no run id given: %w", search.ErrNotFound)
	}
	var id string
	if err := s.db.QueryRowContext(ctx, `SELECT id FROM search_runs WHERE id = ?`, ref).Scan(&id); err == nil {
		return id, nil
	}
	esc := strings.NewReplacer(`\`, `\\`, `%`, `\%`, `_`, `\_`).Replace(ref)
	rows, err := s.db.QueryContext(ctx, `SELECT id FROM search_runs WHERE id LIKE ? ESCAPE '\' OR id LIKE ? ESCAPE '\' LIMIT 11`,
		esc+"%", "%"+esc)
	if err != nil {
		return "", fmt.Errorf("resolve run %q: %w", ref, err)
	}
	defer rows.Close()
	var ids []string
	for rows.Next() {
		if err := rows.Scan(&id); err != nil {
			return "", fmt.Errorf("resolve run %q: %w", ref, err)
		}
		ids = append(ids, id)
	}
	if err := rows.Err(); err != nil {
		return "", fmt.Errorf("resolve run %q: %w", ref, err)
	}
	switch len(ids) {
	case 0:
		return "", fmt.Errorf("run %q: %w (see `kevolve-mcp evolve list`)", ref, search.ErrNotFound)
	case 1:
		return ids[0], nil
	}
	sort.Strings(ids)
	more := ""
	if len(ids) > 10 {
		ids, more = ids[:10], ", ..."
	}
	return "", fmt.Errorf("run %q is ambiguous: it matches %s%s; type more of the id", ref, strings.Join(ids, ", "), more)
}
