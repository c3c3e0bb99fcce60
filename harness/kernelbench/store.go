package kernelbench

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
)

// Store keeps sweep results in the shared SQLite file, one row per pair
// key, so a sweep resumes where it stopped. Tool errors are not stored: the
// next run tries those pairs again.
type Store struct{ db *sql.DB }

// OpenStore migrates the kernelbench_results table.
func OpenStore(db *sql.DB) (*Store, error) {
	if db == nil {
		return nil, errors.New("kernelbench store: nil database")
	}
	_, err := db.Exec(`CREATE TABLE IF NOT EXISTS kernelbench_results (
		key             TEXT PRIMARY KEY,
		harness_version TEXT NOT NULL,
		target          TEXT NOT NULL,
		level           INTEGER NOT NULL,
		problem         TEXT NOT NULL,
		candidate       TEXT NOT NULL,
		verdict         TEXT NOT NULL,
		speedup_eager   REAL,
		speedup_compile REAL,
		record          TEXT NOT NULL,
		created_at      TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ','now'))
	)`)
	if err != nil {
		return nil, fmt.Errorf("kernelbench store: migrate kernelbench_results: %w", err)
	}
	return &Store{db: db}, nil
}

// Get returns the stored record for a key, if any.
func (s *Store) Get(ctx context.Context, key string) (*Record, error) {
	var js string
	err := s.db.QueryRowContext(ctx, `SELECT record FROM kernelbench_results WHERE key = ?`, key).Scan(&js)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("kernelbench store: read %s: %w", key, err)
	}
	var r Record
	if err := json.Unmarshal([]byte(js), &r); err != nil {
		return nil, fmt.Errorf("kernelbench store: decode %s: %w", key, err)
	}
	return &r, nil
}

// Put stores a judged record (one with a verdict).
func (s *Store) Put(ctx context.Context, r Record) error {
	if r.Verdict == "" {
		return fmt.Errorf("kernelbench store: %s has no verdict", r.Problem)
	}
	r.Resumed = false
	b, err := json.Marshal(r)
	if err != nil {
		return fmt.Errorf("kernelbench store: encode %s: %w", r.Problem, err)
	}
	_, err = s.db.ExecContext(ctx, `INSERT OR REPLACE INTO kernelbench_results
		(key, harness_version, target, level, problem, candidate, verdict, speedup_eager, speedup_compile, record)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
		r.Key, r.HarnessVersion, r.Target, r.Level, r.Problem, r.Candidate, r.Verdict, r.SpeedupVsEager, r.SpeedupVsCompile, string(b))
	if err != nil {
		return fmt.Errorf("kernelbench store: write %s: %w", r.Problem, err)
	}
	return nil
}
