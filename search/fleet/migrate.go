package fleet

import (
	"context"
	"database/sql"

	"github.com/kevolve/kevolve-mcp/search/store"
)

// component names the fleet's rows in schema_migrations, the table the
// search store shares with every package that migrates its own tables.
const component = "fleet"

// migrations are append-only: a released one is never edited or removed.
var migrations = []store.Migration{
	{Version: 1, Name: "workers, jobs, job log", Stmts: []string{
		`CREATE TABLE fleet_workers (
			id TEXT PRIMARY KEY,
			name TEXT NOT NULL,
			host TEXT NOT NULL,
			pid INTEGER NOT NULL DEFAULT 0,
			version TEXT NOT NULL DEFAULT '',
			devices TEXT NOT NULL DEFAULT '[]',   -- JSON []Device
			registered_at REAL NOT NULL,          -- unix seconds
			last_seen REAL NOT NULL,
			jobs_done INTEGER NOT NULL DEFAULT 0,
			busy_s REAL NOT NULL DEFAULT 0,
			leases_lost INTEGER NOT NULL DEFAULT 0,
			state TEXT NOT NULL DEFAULT 'alive')`, // alive | gone (deregistered)
		`CREATE TABLE fleet_jobs (
			id TEXT PRIMARY KEY,
			job_key TEXT NOT NULL UNIQUE,          -- problem key, kind, code hash
			problem_key TEXT NOT NULL,
			code_hash TEXT NOT NULL,
			kind TEXT NOT NULL,                    -- JSON Kind
			kind_label TEXT NOT NULL,
			problem TEXT NOT NULL,                 -- JSON search.Problem
			reference TEXT NOT NULL,
			code TEXT NOT NULL,
			timeout_s REAL NOT NULL DEFAULT 0,
			skip_timing INTEGER NOT NULL DEFAULT 0,
			state TEXT NOT NULL,                   -- queued | claimed | done | failed
			worker_id TEXT,
			device INTEGER,
			lease_token TEXT NOT NULL DEFAULT '',
			lease_expires REAL NOT NULL DEFAULT 0,
			claims INTEGER NOT NULL DEFAULT 0,
			lost INTEGER NOT NULL DEFAULT 0,
			errors INTEGER NOT NULL DEFAULT 0,
			late_results INTEGER NOT NULL DEFAULT 0,
			completions INTEGER NOT NULL DEFAULT 0,
			result TEXT,                           -- JSON search.Result
			verdict TEXT,
			error TEXT NOT NULL DEFAULT '',
			done_by TEXT,
			created_at REAL NOT NULL,
			finished_at REAL)`,
		`CREATE INDEX fleet_jobs_state ON fleet_jobs(state, created_at)`,
		`CREATE INDEX fleet_jobs_code ON fleet_jobs(problem_key, code_hash)`,
		// Every claim, lease loss, requeue, release and result, for status,
		// the report's fleet panel and the fault tests.
		`CREATE TABLE fleet_job_log (
			seq INTEGER PRIMARY KEY AUTOINCREMENT,
			job_id TEXT NOT NULL,
			worker_id TEXT NOT NULL DEFAULT '',
			what TEXT NOT NULL,                    -- claimed | lease_lost | requeued | crashed | released | done | late | failed
			detail TEXT NOT NULL DEFAULT '',
			at REAL NOT NULL)`,
		`CREATE INDEX fleet_job_log_job ON fleet_job_log(job_id)`,
	}},
	// Device-seconds each job took on its worker, for per-run utilization.
	{Version: 2, Name: "job busy seconds", Stmts: []string{
		`ALTER TABLE fleet_jobs ADD COLUMN busy_s REAL NOT NULL DEFAULT 0`,
	}},
	// A lost lease's blame, shared among the jobs its worker held then.
	{Version: 3, Name: "job blame", Stmts: []string{
		`ALTER TABLE fleet_jobs ADD COLUMN blame REAL NOT NULL DEFAULT 0`,
		`CREATE INDEX fleet_job_log_worker ON fleet_job_log(worker_id, what, at)`,
	}},
}

// Migrate brings the fleet tables up to the newest version, through the
// search store's migration runner (safe from several processes at once).
func Migrate(ctx context.Context, db *sql.DB) error {
	return store.MigrateComponent(ctx, db, component, migrations)
}
