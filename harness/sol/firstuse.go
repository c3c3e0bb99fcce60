package sol

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/kevolve/kevolve-mcp/harness/device"
)

// ErrCPUUncalibrated is ForDevice's answer where only this host's CPU could
// be bounded and it has no stored figures: FirstUse calibrates on it.
var ErrCPUUncalibrated = errors.New("no GPU here and this CPU was never calibrated: run `kevolve-mcp calibrate --db FILE` with the server's database FILE (seconds on a CPU), or pass a device key such as h100 to bound against its datasheet")

// FirstUse calibrates this host's CPU the first time its ceilings are asked
// for, so a client on a fresh database gets a bound without a shell step.
// The quick benchmark takes seconds (most of it importing torch); its
// figures are lower bounds of the best ever measured, which a later
// `kevolve-mcp calibrate` raises. One calibration runs at a time: callers
// that arrive while one is in flight wait for it and read what it stored.
type FirstUse struct {
	DB     *sql.DB
	Python string // toolchain.Python() when empty
	// Hold, when set, holds the CPU for the benchmark (an exclusive
	// lease): a calibration beside a timed evaluation would slow both, and
	// lower the ceilings it stores.
	Hold func(ctx context.Context) (release func(), err error)

	sem   chan struct{} // one calibration in flight: make a FirstUse with NewFirstUse or FirstUseOf
	tried time.Time     // the last calibration this FirstUse ran (under sem)
}

// ProvisionalRetry is how long a FirstUse waits after its last calibration
// before it measures provisional figures again: on a host that stays busy
// each try costs seconds of CPU and still reads low.
const ProvisionalRetry = 10 * time.Minute

// ProvisionalNote goes with a % of SOL from provisional ceilings.
const ProvisionalNote = "calibrated while the host was busy: the ceilings are low, % of SOL reads high; `kevolve-mcp calibrate` on a quiet host measures them"

// NewFirstUse returns a FirstUse on db.
func NewFirstUse(db *sql.DB, python string) *FirstUse {
	return &FirstUse{DB: db, Python: python, sem: make(chan struct{}, 1)}
}

// firstUses holds one calibrator per database, so every caller on it (the
// sol_analysis tool, a profile's roofline) shares the one in flight.
var firstUses sync.Map // *sql.DB -> *FirstUse

// FirstUseOf returns db's calibrator, made by the first caller with its
// python and hold.
func FirstUseOf(db *sql.DB, python string, hold func(ctx context.Context) (func(), error)) *FirstUse {
	f := NewFirstUse(db, python)
	f.Hold = hold
	got, _ := firstUses.LoadOrStore(db, f)
	return got.(*FirstUse)
}

// Ceilings is ForDevice that calibrates an uncalibrated CPU first. The
// ceilings of the call that calibrated carry the run (Calibrated), so its
// answer can say so and how long it took.
func (f *FirstUse) Ceilings(ctx context.Context, r device.Report, key string) (Ceilings, error) {
	c, err := ForDevice(ctx, f.DB, r, key)
	if !errors.Is(err, ErrCPUUncalibrated) || f.DB == nil {
		return c, err
	}
	return f.CPUCeilings(ctx)
}

// CPUCeilings are this host's CPU's measured ceilings, calibrated first
// where the database has none (Calibrated then carries the run).
func (f *FirstUse) CPUCeilings(ctx context.Context) (Ceilings, error) {
	if f.DB == nil {
		return Ceilings{}, ErrCPUUncalibrated
	}
	cal, err := f.CPU(ctx)
	if err != nil {
		return Ceilings{}, fmt.Errorf("%w; calibrating it on first use failed: %v", ErrCPUUncalibrated, err)
	}
	uuid, ok, err := CPUCalibrationUUID(ctx, f.DB)
	if err != nil {
		return Ceilings{}, err
	}
	if !ok {
		return Ceilings{}, fmt.Errorf("%w (the calibration stored nothing under this host's name)", ErrCPUUncalibrated)
	}
	c, err := CeilingsFor(ctx, f.DB, uuid, "", "")
	if err != nil {
		return Ceilings{}, err
	}
	c.Calibrated = cal
	return c, nil
}

// CPU makes sure this host's CPU has stored figures, calibrating it (quick)
// when it has none, or again when they are provisional (measured while the
// host was busy) and ProvisionalRetry has passed since this FirstUse last
// calibrated. It returns the run it made, or nil when the figures were
// there already (stored earlier, or by the call it waited for).
func (f *FirstUse) CPU(ctx context.Context) (*Calibration, error) {
	if f.DB == nil || f.sem == nil {
		return nil, fmt.Errorf("%w (no database to store the figures in)", ErrCPUUncalibrated)
	}
	select {
	case f.sem <- struct{}{}:
	case <-ctx.Done():
		return nil, fmt.Errorf("waiting for the calibration in flight: %w", ctx.Err())
	}
	defer func() { <-f.sem }()
	uuid, ok, err := CPUCalibrationUUID(ctx, f.DB)
	if err != nil {
		return nil, err
	}
	if !ok {
		return f.calibrate(ctx)
	}
	if again, err := f.retryDue(ctx, uuid); err != nil || !again {
		return nil, err
	}
	c, err := f.calibrate(ctx)
	if err != nil {
		// The provisional figures still answer: a failed retry is no
		// reason to fail the call, and the next one is ProvisionalRetry away.
		return nil, nil
	}
	c.Recalibrated = true
	return c, nil
}

// retryDue says whether uuid's figures are provisional and this FirstUse
// has not calibrated within ProvisionalRetry.
func (f *FirstUse) retryDue(ctx context.Context, uuid string) (bool, error) {
	if !f.tried.IsZero() && time.Since(f.tried) < ProvisionalRetry {
		return false, nil
	}
	return provisional(ctx, f.DB, uuid)
}

// calibrate runs the quick CPU calibration and stores it (caller holds sem).
func (f *FirstUse) calibrate(ctx context.Context) (*Calibration, error) {
	f.tried = time.Now()
	if f.Hold != nil {
		release, err := f.Hold(ctx)
		if err != nil {
			return nil, fmt.Errorf("holding the CPU for the calibration: %w", err)
		}
		defer release()
	}
	c, err := CalibrateAndStore(ctx, f.DB, CalibrateOptions{Python: f.Python, Device: "cpu", Quick: true})
	if err != nil {
		return nil, err
	}
	return &c, nil
}

// FirstUseNote says in an answer that c was measured to give it.
func FirstUseNote(c *Calibration) string {
	if c.Recalibrated {
		return fmt.Sprintf("this CPU's figures were measured while the host was busy, so it was calibrated again, in %.1f s (quick; the best figure per metric is kept)", c.DurationS)
	}
	return fmt.Sprintf("this database had no figures for this CPU, so it was calibrated first, in %.1f s (quick: copy bandwidth and matmul rates, stored for later calls; "+
		"lower bounds: `kevolve-mcp calibrate --db FILE` measures longer and keeps the best)", c.DurationS)
}
