package store

import (
	"context"
	"fmt"
	"time"

	"github.com/kevolve/kevolve-mcp/search"
)

// AcquireRun makes me the run's driver. It succeeds when nobody drives the
// run, when me already does, when the driver's heartbeat is older than
// staleAfter, or when alive says the recorded driver is gone (a process on
// this host that was killed). Otherwise it returns search.ErrRunBusy. Each
// step is one conditional UPDATE, so two processes racing for a run cannot
// both win.
func (s *SQLite) AcquireRun(ctx context.Context, runID, me string, staleAfter time.Duration, alive func(driver string) bool) error {
	t := now()
	res, err := s.db.ExecContext(ctx, `UPDATE search_runs SET driver=?, driver_seen=? WHERE id=? AND (driver='' OR driver=? OR driver_seen < ?)`,
		me, ts(t), runID, me, ts(t.Add(-staleAfter)))
	if err != nil {
		return fmt.Errorf("claim run %s: %w", runID, err)
	}
	if k, _ := res.RowsAffected(); k == 1 {
		return nil
	}
	var cur, seen string
	if err := s.db.QueryRowContext(ctx, `SELECT driver, driver_seen FROM search_runs WHERE id=?`, runID).Scan(&cur, &seen); err != nil {
		return fmt.Errorf("claim run %s: %w", runID, search.ErrNotFound)
	}
	if alive != nil && !alive(cur) {
		res, err := s.db.ExecContext(ctx, `UPDATE search_runs SET driver=?, driver_seen=? WHERE id=? AND driver=?`, me, ts(t), runID, cur)
		if err != nil {
			return fmt.Errorf("claim run %s: %w", runID, err)
		}
		if k, _ := res.RowsAffected(); k == 1 {
			return nil
		}
	}
	return fmt.Errorf("run %s is driven by %s (last seen %s): %w", runID, cur, seen, search.ErrRunBusy)
}

// HeartbeatRun refreshes me's claim on the run.
func (s *SQLite) HeartbeatRun(ctx context.Context, runID, me string) error {
	_, err := s.db.ExecContext(ctx, `UPDATE search_runs SET driver_seen=? WHERE id=? AND driver=?`, ts(now()), runID, me)
	return err
}

// ReleaseRun gives the run up, if me drives it.
func (s *SQLite) ReleaseRun(ctx context.Context, runID, me string) error {
	_, err := s.db.ExecContext(ctx, `UPDATE search_runs SET driver='', driver_seen='' WHERE id=? AND driver=?`, runID, me)
	return err
}
