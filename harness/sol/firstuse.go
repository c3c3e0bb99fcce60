package sol

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"sync"

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

	sem chan struct{} // one calibration in flight: make a FirstUse with NewFirstUse or FirstUseOf
}

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
// when it has none. It returns the run it made, or nil when the figures
// were there already (stored earlier, or by the call it waited for).
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
	if _, ok, err := CPUCalibrationUUID(ctx, f.DB); err != nil || ok {
		return nil, err
	}
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
	return fmt.Sprintf("this database had no figures for this CPU, so it was calibrated first, in %.1f s (quick: copy bandwidth and matmul rates, stored for later calls; "+
		"lower bounds: `kevolve-mcp calibrate --db FILE` measures longer and keeps the best)", c.DurationS)
}
