package retrieval

import (
	"context"
	"database/sql"
	"fmt"
	"strings"
)

// FTS5Fix says how to get a binary whose SQLite has FTS5.
const FTS5Fix = "rebuild with the sqlite_fts5 tag: `make build`, or `go build -tags sqlite_fts5 ./cmd/kevolve-mcp`"

// FTS5Available reports whether db's SQLite was built with FTS5, which the
// knowledge index needs (go-sqlite3 includes it only under the
// sqlite_fts5 build tag). It probes with a temporary table.
func FTS5Available(ctx context.Context, db *sql.DB) error {
	if _, err := db.ExecContext(ctx, `CREATE VIRTUAL TABLE temp.kevolve_fts5_probe USING fts5(x)`); err != nil {
		if strings.Contains(err.Error(), "no such module") {
			return fmt.Errorf("this binary's SQLite lacks FTS5, so the knowledge base (search_knowledge, kb search, the operators' retrieved knowledge) is off; %s", FTS5Fix)
		}
		return fmt.Errorf("probe FTS5: %w", err)
	}
	_, err := db.ExecContext(ctx, `DROP TABLE temp.kevolve_fts5_probe`)
	return err
}
