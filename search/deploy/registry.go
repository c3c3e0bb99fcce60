package deploy

import (
	"context"
	"crypto/sha256"
	"database/sql"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/kevolve/kevolve-mcp/search/store"
)

// Entry is one deployed kernel: where it was verified (op, shapes, dtype,
// constants, arch) and how fast it was there.
type Entry struct {
	ID     string    `json:"id"`
	Op     string    `json:"op"`     // the region signature (rmsnorm, swiglu, ...)
	Shapes [][]int64 `json:"shapes"` // of the kernel's tensor arguments, in order
	Dtype  string    `json:"dtype"`
	Init   []any     `json:"init"` // constants (eps); a weight is its name
	Arch   string    `json:"arch"` // sm_90, gfx942, cpu-x86_64
	Device string    `json:"device,omitempty"`
	// Speedup is over the operators it replaces (eager), Spread the
	// measurement's relative spread it had to beat.
	Speedup  float64 `json:"speedup"`
	Spread   float64 `json:"spread"`
	PctOfSOL float64 `json:"pct_of_sol,omitempty"`
	Model    string  `json:"model,omitempty"` // the model file it was found in
	RunID    string  `json:"run_id,omitempty"`
	NodeID   int64   `json:"node_id,omitempty"`
	Problem  string  `json:"problem,omitempty"` // the extracted problem file
	Source   string  `json:"source,omitempty"`  // the kernel (a ModelNew file)
	Created  string  `json:"created_at,omitempty"`
}

// Key is what the guard matches: everything but the kernel and its figures.
func (e Entry) Key() string {
	b, _ := json.Marshal([]any{e.Op, e.Shapes, e.Dtype, e.Init, e.Arch})
	h := sha256.Sum256(b)
	return hex.EncodeToString(h[:8])
}

// MinSpeedup is the least gain worth a deployment.
const MinSpeedup = 1.02

// Deployable says whether a kernel measured speedup times faster with
// relative spread cv (candidate and reference together) replaces what it
// replaces: faster by more than the spread, and by at least MinSpeedup.
func Deployable(speedup, cv float64) (bool, string) {
	need := max(MinSpeedup, 1+cv)
	if speedup > need {
		return true, ""
	}
	return false, fmt.Sprintf("%.3fx is within %.3fx (2%% or the measurement's spread %.1f%%)", speedup, need, 100*cv)
}

var migrations = []store.Migration{
	{Version: 1, Name: "deploy entries", Stmts: []string{
		`CREATE TABLE deploy_entries (
			id TEXT PRIMARY KEY,          -- Entry.Key(): one kernel per op, shapes, dtype, constants, arch
			op TEXT NOT NULL,
			shapes TEXT NOT NULL,         -- JSON [[int]]
			dtype TEXT NOT NULL,
			init TEXT NOT NULL,           -- JSON
			arch TEXT NOT NULL,
			device TEXT NOT NULL DEFAULT '',
			speedup REAL NOT NULL,
			spread REAL NOT NULL,
			pct_of_sol REAL NOT NULL DEFAULT 0,
			model TEXT NOT NULL DEFAULT '',
			run_id TEXT NOT NULL DEFAULT '',
			node_id INTEGER NOT NULL DEFAULT 0,
			problem TEXT NOT NULL DEFAULT '',
			source TEXT NOT NULL,
			created_at TEXT NOT NULL)`,
		`CREATE INDEX deploy_entries_op ON deploy_entries(op, arch)`,
	}},
}

// Registry is the deploy_entries table of the one SQLite file.
type Registry struct{ db *sql.DB }

// Open migrates the registry's table and returns it.
func Open(ctx context.Context, db *sql.DB) (*Registry, error) {
	if err := store.MigrateComponent(ctx, db, "deploy", migrations); err != nil {
		return nil, err
	}
	return &Registry{db: db}, nil
}

// Put stores an entry unless one for the same key is already faster; it
// reports whether e is now the entry.
func (r *Registry) Put(ctx context.Context, e Entry) (bool, error) {
	if e.Source == "" || e.Op == "" || e.Arch == "" {
		return false, errors.New("deploy: an entry needs an op, an arch and a kernel")
	}
	e.ID = e.Key()
	if old, err := r.Get(ctx, e.ID); err == nil && old.Speedup >= e.Speedup {
		return false, nil
	}
	shapes, _ := json.Marshal(e.Shapes)
	init, _ := json.Marshal(e.Init)
	_, err := r.db.ExecContext(ctx, `INSERT OR REPLACE INTO deploy_entries
		(id, op, shapes, dtype, init, arch, device, speedup, spread, pct_of_sol, model, run_id, node_id, problem, source, created_at)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
		e.ID, e.Op, string(shapes), e.Dtype, string(init), e.Arch, e.Device, e.Speedup, e.Spread, e.PctOfSOL,
		e.Model, e.RunID, e.NodeID, e.Problem, e.Source, time.Now().UTC().Format(time.RFC3339))
	if err != nil {
		return false, fmt.Errorf("deploy: store entry: %w", err)
	}
	return true, nil
}

// Filter narrows List ("" = any).
type Filter struct{ Op, Arch, Model string }

const cols = `id, op, shapes, dtype, init, arch, device, speedup, spread, pct_of_sol, model, run_id, node_id, problem, source, created_at`

// List returns the entries that pass f, by op, arch and id.
func (r *Registry) List(ctx context.Context, f Filter) ([]Entry, error) {
	q := `SELECT ` + cols + ` FROM deploy_entries`
	var where []string
	var args []any
	for _, c := range []struct{ col, v string }{{"op", f.Op}, {"arch", f.Arch}, {"model", f.Model}} {
		if c.v != "" {
			where = append(where, c.col+" = ?")
			args = append(args, c.v)
		}
	}
	if len(where) > 0 {
		q += " WHERE " + strings.Join(where, " AND ")
	}
	rows, err := r.db.QueryContext(ctx, q+" ORDER BY op, arch, id", args...)
	if err != nil {
		return nil, fmt.Errorf("deploy: list: %w", err)
	}
	defer rows.Close()
	var out []Entry
	for rows.Next() {
		e, err := scan(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, e)
	}
	return out, rows.Err()
}

// ErrNotFound is an id the registry does not hold.
var ErrNotFound = errors.New("deploy: no such entry")

// Get returns one entry by id (a unique prefix is enough).
func (r *Registry) Get(ctx context.Context, id string) (Entry, error) {
	rows, err := r.db.QueryContext(ctx, `SELECT `+cols+` FROM deploy_entries WHERE id LIKE ? || '%' LIMIT 2`, id)
	if err != nil {
		return Entry{}, fmt.Errorf("deploy: get: %w", err)
	}
	defer rows.Close()
	var out []Entry
	for rows.Next() {
		e, err := scan(rows)
		if err != nil {
			return Entry{}, err
		}
		out = append(out, e)
	}
	switch {
	case id == "" || len(out) == 0:
		return Entry{}, fmt.Errorf("%w: %q", ErrNotFound, id)
	case len(out) > 1:
		return Entry{}, fmt.Errorf("deploy: %q names several entries: give more of the id", id)
	}
	return out[0], rows.Err()
}

// Remove deletes one entry by id (or unique prefix).
func (r *Registry) Remove(ctx context.Context, id string) error {
	e, err := r.Get(ctx, id)
	if err != nil {
		return err
	}
	_, err = r.db.ExecContext(ctx, `DELETE FROM deploy_entries WHERE id = ?`, e.ID)
	return err
}

func scan(rows *sql.Rows) (Entry, error) {
	var e Entry
	var shapes, init string
	if err := rows.Scan(&e.ID, &e.Op, &shapes, &e.Dtype, &init, &e.Arch, &e.Device, &e.Speedup, &e.Spread, &e.PctOfSOL,
		&e.Model, &e.RunID, &e.NodeID, &e.Problem, &e.Source, &e.Created); err != nil {
		return e, fmt.Errorf("deploy: read entry: %w", err)
	}
	if err := json.Unmarshal([]byte(shapes), &e.Shapes); err != nil {
		return e, fmt.Errorf("deploy: entry %s shapes: %w", e.ID, err)
	}
	if err := json.Unmarshal([]byte(init), &e.Init); err != nil {
		return e, fmt.Errorf("deploy: entry %s init: %w", e.ID, err)
	}
	return e, nil
}
