package store

import (
	"context"
	"database/sql"
	"fmt"
)

// component names this package's rows in schema_migrations, a table other
// packages may share: each migrates its own tables under its own name.
const component = "search"

// Migration is one numbered, append-only schema change of a component's
// tables. A released migration is never edited or removed: the search graph
// is a record, not a cache, so the schema moves forward and never drops and
// rebuilds.
type Migration struct {
	Version int
	Name    string
	Stmts   []string
}

// migrations run in version order, each in one transaction with its
// schema_migrations row. The fleet (jobs, leases, workers) appends its own.
var migrations = []Migration{
	{1, "runs, nodes, edges, events", []string{
		`CREATE TABLE search_runs (
			id TEXT PRIMARY KEY,
			problem_key TEXT NOT NULL,
			problem TEXT NOT NULL,          -- JSON search.Problem
			target TEXT NOT NULL,
			devices TEXT NOT NULL DEFAULT '[]',
			policy TEXT NOT NULL,
			operator TEXT NOT NULL,
			baseline TEXT NOT NULL,
			budget TEXT NOT NULL,           -- JSON search.Budget
			seed INTEGER NOT NULL,
			config TEXT NOT NULL DEFAULT '{}',
			status TEXT NOT NULL,
			stop_reason TEXT NOT NULL DEFAULT '',
			best_node INTEGER,
			elapsed_s REAL NOT NULL DEFAULT 0,
			created_at TEXT NOT NULL,
			updated_at TEXT NOT NULL)`,
		`CREATE INDEX search_runs_problem ON search_runs(problem_key)`,
		`CREATE TABLE search_nodes (
			id INTEGER PRIMARY KEY AUTOINCREMENT,
			run_id TEXT NOT NULL REFERENCES search_runs(id),
			parents TEXT NOT NULL DEFAULT '[]',
			depth INTEGER NOT NULL DEFAULT 0,
			island INTEGER NOT NULL DEFAULT 0,
			code TEXT NOT NULL,
			hash TEXT NOT NULL,
			language TEXT NOT NULL DEFAULT '',
			operator TEXT NOT NULL DEFAULT '',
			operator_input TEXT,
			state TEXT NOT NULL,
			result TEXT,                    -- JSON search.Result
			verdict TEXT,                   -- copied out of result for queries
			fitness REAL,
			duplicate_of INTEGER,
			eval_seq INTEGER,
			profile TEXT NOT NULL DEFAULT '',
			diagnosis TEXT NOT NULL DEFAULT '',
			notes TEXT NOT NULL DEFAULT '',
			error TEXT NOT NULL DEFAULT '',
			eval_s REAL NOT NULL DEFAULT 0,
			operator_s REAL NOT NULL DEFAULT 0,
			tokens INTEGER NOT NULL DEFAULT 0,
			created_at TEXT NOT NULL,
			updated_at TEXT NOT NULL)`,
		`CREATE INDEX search_nodes_run ON search_nodes(run_id, id)`,
		`CREATE INDEX search_nodes_hash ON search_nodes(hash)`,
		// One row per "derived from" edge, beside the parents column, so
		// reports and the fleet can walk the graph in SQL.
		`CREATE TABLE search_edges (
			run_id TEXT NOT NULL,
			parent_id INTEGER NOT NULL REFERENCES search_nodes(id),
			child_id INTEGER NOT NULL REFERENCES search_nodes(id),
			PRIMARY KEY (child_id, parent_id))`,
		`CREATE TABLE search_events (
			run_id TEXT NOT NULL REFERENCES search_runs(id),
			seq INTEGER NOT NULL,
			kind TEXT NOT NULL,
			message TEXT NOT NULL,
			data TEXT,
			at TEXT NOT NULL,
			PRIMARY KEY (run_id, seq))`,
	}},
	// An evaluation's seq is unique within its run: the invariant the
	// kill -9 tests check, enforced by the database as well.
	{2, "unique evaluation order per run", []string{
		`CREATE UNIQUE INDEX search_nodes_eval_seq ON search_nodes(run_id, eval_seq) WHERE eval_seq IS NOT NULL`,
	}},
	// One process drives a run at a time: its id and heartbeat (see lease.go).
	{3, "run driver lease", []string{
		`ALTER TABLE search_runs ADD COLUMN driver TEXT NOT NULL DEFAULT ''`,
		`ALTER TABLE search_runs ADD COLUMN driver_seen TEXT NOT NULL DEFAULT ''`,
	}},
	// Proposals the run turned away before evaluating them (novelty), with
	// their context and cost; a node counts the rejected asks before it.
	{4, "rejected proposals", []string{
		`CREATE TABLE search_rejected (
			id INTEGER PRIMARY KEY AUTOINCREMENT,
			run_id TEXT NOT NULL REFERENCES search_runs(id),
			parents TEXT NOT NULL DEFAULT '[]',
			operator TEXT NOT NULL DEFAULT '',
			try INTEGER NOT NULL DEFAULT 1,
			code TEXT NOT NULL,
			reason TEXT NOT NULL,
			similar_to INTEGER,
			similarity REAL NOT NULL DEFAULT 0,
			tokens INTEGER NOT NULL DEFAULT 0,
			operator_input TEXT,
			feedback TEXT NOT NULL DEFAULT '',
			seed INTEGER NOT NULL DEFAULT 0,
			created_at TEXT NOT NULL)`,
		`CREATE INDEX search_rejected_run ON search_rejected(run_id, id)`,
		`ALTER TABLE search_nodes ADD COLUMN rejected INTEGER NOT NULL DEFAULT 0`,
		`ALTER TABLE search_nodes ADD COLUMN rejected_tokens INTEGER NOT NULL DEFAULT 0`,
	}},
}

// Migrate brings the search tables up to the newest version.
func Migrate(ctx context.Context, db *sql.DB) error {
	return MigrateComponent(ctx, db, component, migrations)
}

// MigrateComponent applies a component's migrations in version order, each
// recorded in the shared schema_migrations table under the component's
// name (the fleet migrates its tables through it too). It is safe to call
// from several processes at once: each migration runs in an immediate
// transaction that re-checks the version inside it.
func MigrateComponent(ctx context.Context, db *sql.DB, component string, ms []Migration) error {
	if _, err := db.ExecContext(ctx, `CREATE TABLE IF NOT EXISTS schema_migrations (
		component TEXT NOT NULL,
		version INTEGER NOT NULL,
		name TEXT NOT NULL,
		applied_at TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ','now')),
		PRIMARY KEY (component, version))`); err != nil {
		return fmt.Errorf("migrate %s: schema_migrations: %w", component, err)
	}
	for _, m := range ms {
		if err := apply(ctx, db, component, m); err != nil {
			return fmt.Errorf("migrate %s to version %d (%s): %w", component, m.Version, m.Name, err)
		}
	}
	return nil
}

func apply(ctx context.Context, db *sql.DB, component string, m Migration) error {
	conn, err := db.Conn(ctx)
	if err != nil {
		return err
	}
	defer conn.Close()
	// BEGIN IMMEDIATE takes the write lock up front, so two processes
	// migrating at once serialize instead of both applying a version.
	if _, err := conn.ExecContext(ctx, `BEGIN IMMEDIATE`); err != nil {
		return err
	}
	done := false
	defer func() {
		if !done {
			conn.ExecContext(context.Background(), `ROLLBACK`)
		}
	}()
	var n int
	if err := conn.QueryRowContext(ctx, `SELECT COUNT(*) FROM schema_migrations WHERE component = ? AND version = ?`, component, m.Version).Scan(&n); err != nil {
		return err
	}
	if n == 0 {
		for _, s := range m.Stmts {
			if _, err := conn.ExecContext(ctx, s); err != nil {
				return err
			}
		}
		if _, err := conn.ExecContext(ctx, `INSERT INTO schema_migrations(component, version, name) VALUES (?, ?, ?)`, component, m.Version, m.Name); err != nil {
			return err
		}
	}
	if _, err := conn.ExecContext(ctx, `COMMIT`); err != nil {
		return err
	}
	done = true
	return nil
}
