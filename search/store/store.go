// Package store keeps the search graph in SQLite: runs, nodes, edges and
// events in the one database file, with versioned migrations (migrate.go).
// Every write is one transaction, so a process killed at any moment leaves
// the graph as of its last completed call.
package store

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/mattn/go-sqlite3" // SQLite driver (built with -tags sqlite_fts5 everywhere)

	"github.com/kevolve/kevolve-mcp/search"
)

// SQLite implements search.Store.
type SQLite struct {
	db *sql.DB
}

var _ search.Store = (*SQLite)(nil)

// New migrates the search tables in db and returns a store over it. db
// should be opened in WAL mode with a busy timeout (see Open).
func New(ctx context.Context, db *sql.DB) (*SQLite, error) {
	if err := Migrate(ctx, db); err != nil {
		return nil, err
	}
	return &SQLite{db: db}, nil
}

// Open opens (creating) a database file the way the CLI does: WAL, so
// readers never block the writer; a busy timeout, so brief contention
// between processes waits instead of failing; immediate transactions, so
// two writers never deadlock upgrading a read lock.
func Open(path string) (*sql.DB, error) {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return nil, fmt.Errorf("database folder: %w", err)
	}
	db, err := sql.Open("sqlite3", "file:"+path+"?_journal_mode=WAL&_busy_timeout=10000&_foreign_keys=on&_txlock=immediate&_synchronous=NORMAL")
	if err != nil {
		return nil, fmt.Errorf("open %s: %w", path, err)
	}
	// Processes opening a new database at once (a coordinator and its
	// workers, parallel tests) race to switch it to WAL, and SQLite answers
	// the loser SQLITE_BUSY at once, without its busy timeout: try again
	// for as long as that timeout would have waited.
	deadline := time.Now().Add(10 * time.Second)
	for backoff := 5 * time.Millisecond; ; backoff = min(2*backoff, 200*time.Millisecond) {
		err = db.Ping()
		var se sqlite3.Error
		if err == nil || !errors.As(err, &se) || se.Code != sqlite3.ErrBusy || time.Now().After(deadline) {
			break
		}
		time.Sleep(backoff)
	}
	if err != nil {
		db.Close()
		return nil, fmt.Errorf("open %s: %w", path, err)
	}
	return db, nil
}

// DB is the underlying database.
func (s *SQLite) DB() *sql.DB { return s.db }

func now() time.Time { return time.Now().UTC() }

const tsFormat = "2006-01-02T15:04:05.000000Z07:00"

func ts(t time.Time) string { return t.UTC().Format(tsFormat) }

func parseTS(s string) time.Time {
	t, _ := time.Parse(tsFormat, s)
	return t
}

// NewRunID is a sortable, readable, unique run id: r-YYYYMMDD-HHMMSS-xxxx.
func NewRunID() string {
	var b [3]byte
	rand.Read(b[:])
	return "r-" + now().Format("20060102-150405") + "-" + hex.EncodeToString(b[:])
}

func mustJSON(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		panic(fmt.Sprintf("store: marshal %T: %v", v, err)) // only our own types reach here
	}
	return string(b)
}

func rawOr(r json.RawMessage, def string) string {
	if len(r) == 0 {
		return def
	}
	return string(r)
}

func (s *SQLite) tx(ctx context.Context, fn func(*sql.Tx) error) error {
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	if err := fn(tx); err != nil {
		tx.Rollback()
		return err
	}
	return tx.Commit()
}

// CreateRun inserts r, giving it an id when it has none.
func (s *SQLite) CreateRun(ctx context.Context, r *search.Run) error {
	return s.tx(ctx, func(tx *sql.Tx) error { return insertRun(ctx, tx, r) })
}

// CreateRunWithRoot inserts r and its root node in one transaction, so that
// a kill between the two can never leave a run without nodes (which resume
// could not continue: the start code lives only in the root).
func (s *SQLite) CreateRunWithRoot(ctx context.Context, r *search.Run, root *search.Node) error {
	return s.tx(ctx, func(tx *sql.Tx) error {
		if err := insertRun(ctx, tx, r); err != nil {
			return err
		}
		root.RunID = r.ID
		return insertNode(ctx, tx, root)
	})
}

func insertRun(ctx context.Context, tx *sql.Tx, r *search.Run) error {
	if r.ID == "" {
		r.ID = NewRunID()
	}
	r.CreatedAt, r.UpdatedAt = now(), now()
	if r.Status == "" {
		r.Status = search.RunRunning
	}
	_, err := tx.ExecContext(ctx, `INSERT INTO search_runs
		(id, problem_key, problem, target, devices, policy, operator, baseline, budget, seed, config, status, stop_reason, best_node, elapsed_s, created_at, updated_at)
		VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)`,
		r.ID, r.Problem.Key(), mustJSON(r.Problem), r.Problem.Target, mustJSON(nonNil(r.Devices)), r.Policy, r.Operator, r.Baseline,
		mustJSON(r.Budget), r.Seed, rawOr(r.Config, "{}"), string(r.Status), r.StopReason, nullID(r.BestNode), r.ElapsedS, ts(r.CreatedAt), ts(r.UpdatedAt))
	if err != nil {
		return fmt.Errorf("create run: %w", err)
	}
	return nil
}

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

func nullID(id int64) any {
	if id == 0 {
		return nil
	}
	return id
}

// UpdateRun saves a run's mutable fields.
func (s *SQLite) UpdateRun(ctx context.Context, r *search.Run) error {
	r.UpdatedAt = now()
	res, err := s.db.ExecContext(ctx, `UPDATE search_runs SET policy=?, operator=?, budget=?, config=?, status=?, stop_reason=?, best_node=?, elapsed_s=?, devices=?, updated_at=? WHERE id=?`,
		r.Policy, r.Operator, mustJSON(r.Budget), rawOr(r.Config, "{}"), string(r.Status), r.StopReason, nullID(r.BestNode), r.ElapsedS, mustJSON(nonNil(r.Devices)), ts(r.UpdatedAt), r.ID)
	if err != nil {
		return fmt.Errorf("update run %s: %w", r.ID, err)
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return fmt.Errorf("update run %s: %w", r.ID, search.ErrNotFound)
	}
	return nil
}

const runCols = `id, problem, devices, policy, operator, baseline, budget, seed, config, status, stop_reason, best_node, elapsed_s, created_at, updated_at`

func scanRun(sc interface{ Scan(...any) error }) (*search.Run, error) {
	var r search.Run
	var problem, devices, budget, config, status, created, updated string
	var best sql.NullInt64
	if err := sc.Scan(&r.ID, &problem, &devices, &r.Policy, &r.Operator, &r.Baseline, &budget, &r.Seed, &config, &status, &r.StopReason, &best, &r.ElapsedS, &created, &updated); err != nil {
		return nil, err
	}
	if err := json.Unmarshal([]byte(problem), &r.Problem); err != nil {
		return nil, fmt.Errorf("run %s: problem: %w", r.ID, err)
	}
	if err := json.Unmarshal([]byte(devices), &r.Devices); err != nil {
		return nil, fmt.Errorf("run %s: devices: %w", r.ID, err)
	}
	if err := json.Unmarshal([]byte(budget), &r.Budget); err != nil {
		return nil, fmt.Errorf("run %s: budget: %w", r.ID, err)
	}
	r.Config = json.RawMessage(config)
	r.Status = search.RunStatus(status)
	r.BestNode = best.Int64
	r.CreatedAt, r.UpdatedAt = parseTS(created), parseTS(updated)
	return &r, nil
}

// Run loads a run by id.
func (s *SQLite) Run(ctx context.Context, id string) (*search.Run, error) {
	r, err := scanRun(s.db.QueryRowContext(ctx, `SELECT `+runCols+` FROM search_runs WHERE id = ?`, id))
	if errors.Is(err, sql.ErrNoRows) {
		return nil, fmt.Errorf("run %q: %w", id, search.ErrNotFound)
	}
	if err != nil {
		return nil, fmt.Errorf("load run %s: %w", id, err)
	}
	return r, nil
}

// Runs lists every run, newest first.
func (s *SQLite) Runs(ctx context.Context) ([]*search.Run, error) {
	rows, err := s.db.QueryContext(ctx, `SELECT `+runCols+` FROM search_runs ORDER BY created_at DESC, id DESC`)
	if err != nil {
		return nil, fmt.Errorf("list runs: %w", err)
	}
	defer rows.Close()
	var out []*search.Run
	for rows.Next() {
		r, err := scanRun(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, r)
	}
	return out, rows.Err()
}
