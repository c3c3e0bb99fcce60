package retrieval

import (
	"context"
	"database/sql"
	"path/filepath"
	"testing"

	_ "github.com/mattn/go-sqlite3"
)

// openDB opens a fresh SQLite file in a temp dir: the real driver, with
// FTS5 (tests run with -tags sqlite_fts5).
func openDB(t testing.TB) *sql.DB {
	t.Helper()
	return openDBAt(t, filepath.Join(t.TempDir(), "kb.db"))
}

func openDBAt(t testing.TB, path string) *sql.DB {
	t.Helper()
	db, err := sql.Open("sqlite3", "file:"+path+"?_busy_timeout=5000&_journal_mode=WAL")
	if err != nil {
		t.Fatalf("open sqlite: %v", err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

// openBuiltin indexes the embedded knowledge base into a fresh database.
func openBuiltin(t testing.TB) *Index {
	t.Helper()
	ix, err := Open(context.Background(), openDB(t), nil)
	if err != nil {
		t.Fatalf("open index: %v", err)
	}
	return ix
}
