package sol

import (
	"context"
	"database/sql"

	"github.com/kevolve/kevolve-mcp/harness/device"
)

// ForDevice resolves the ceilings to bound against: for key "" the first GPU
// discovered (measured figures over its spec row), else this host's
// calibrated CPU; for a key (e.g. "h100") that spec row, with measured
// figures only when the key names the discovered GPU.
func ForDevice(ctx context.Context, db *sql.DB, r device.Report, key string) (Ceilings, error) {
	if len(r.GPUs) > 0 {
		g := r.GPUs[0]
		if key == "" {
			key = g.SpecKey
		}
		return CeilingsFor(ctx, db, g.UUID, g.Name, key)
	}
	if key != "" {
		return CeilingsFor(ctx, db, "", "", key)
	}
	if db != nil {
		uuid, ok, err := CPUCalibrationUUID(ctx, db)
		if err != nil {
			return Ceilings{}, err
		}
		if ok {
			return CeilingsFor(ctx, db, uuid, "", "")
		}
	}
	return Ceilings{}, ErrCPUUncalibrated
}
