package harness

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/kevolve/kevolve-mcp/harness/target"
)

// Reference baselines measured once (issue 34): torch.compile of a
// reference costs 11-14 s per evaluation on the H100 box and depends only
// on the reference, its shapes and where it runs, so it is kept in the
// database by everything that decides it and reused until stale or asked
// again (retime). The eager reference is not kept: the speedup's
// denominator is the judge's own timing in the same evaluation (issue 36).

// BaselineTorchCompile is the torch.compile timing of a reference.
const BaselineTorchCompile = "torch_compile"

// DefaultBaselineMaxAge is how long a stored baseline serves: long enough
// for a week of sweeps, short enough that a host's slow drift (clocks,
// thermals, a neighbour's load) is measured again.
const DefaultBaselineMaxAge = 7 * 24 * time.Hour

// baseline is a stored reference timing and what measuring it cost.
type baseline struct {
	Stats      *Stats
	MeasuredAt time.Time
	Where      string  // the device and host that measured it
	MeasureS   float64 // the stage's seconds: compile and timed calls
}

// BaselineReuse says that a result's baseline was measured by an earlier
// evaluation: when, where, and the seconds this one saved.
type BaselineReuse struct {
	Kind       string  `json:"kind"`
	MeasuredAt string  `json:"measured_at"`
	AgeS       float64 `json:"age_s"`
	Where      string  `json:"where"`
	SavedS     float64 `json:"saved_s,omitempty"`
}

func migrateBaselines(db *sql.DB) error {
	_, err := db.Exec(`CREATE TABLE IF NOT EXISTS baseline_timing (
		kind TEXT NOT NULL,
		key TEXT NOT NULL,
		stats TEXT NOT NULL,
		measured_at TEXT NOT NULL,
		measured_where TEXT NOT NULL,
		measure_s REAL NOT NULL,
		PRIMARY KEY (kind, key)
	)`)
	if err != nil {
		return fmt.Errorf("migrate baseline_timing: %w", err)
	}
	return nil
}

// baselineKey hashes everything that decides a baseline of kind: the
// harness (its timer and timing settings), the reference and its shapes
// and seed, the device model, driver and torch. A change to any of them
// measures again.
func baselineKey(kind, refCode, tgt, device, driver, torch string, req EvalRequest) string {
	return hashFields(kind, HarnessVersion(), tgt, device, driver, torch, refCode, req.Seed, req.Shapes)
}

// refKey is the reference's torch.compile key for this evaluation.
func (e *Evaluator) refKey(ctx context.Context, r *evalRun) string {
	return baselineKey(BaselineTorchCompile, r.refCode, string(r.tgt), r.dev.Name, driverVersion(r.tgt), e.torchVersion(ctx), r.req)
}

// torchVersion is the worker's torch (its parent's start report).
func (e *Evaluator) torchVersion(ctx context.Context) string {
	info, err := e.w.Info(ctx)
	if err != nil {
		return ""
	}
	v, _ := info["torch"].(string)
	return v
}

var driverOnce sync.Map // target.Name → string

// driverVersion is the GPU driver's version as the kernel module reports
// it ("" on the CPU or where the module does not say).
func driverVersion(t target.Name) string {
	if v, ok := driverOnce.Load(t); ok {
		return v.(string)
	}
	path := map[target.Name]string{target.NVIDIA: "/sys/module/nvidia/version", target.AMD: "/sys/module/amdgpu/version"}[t]
	v := ""
	if b, err := os.ReadFile(path); path != "" && err == nil {
		v = strings.TrimSpace(string(b))
	}
	driverOnce.Store(t, v)
	return v
}

// fresh says whether b still serves: younger than the age limit.
func (e *Evaluator) fresh(b *baseline) bool {
	return b != nil && time.Since(b.MeasuredAt) < e.cfg.BaselineMaxAge
}

// reuseOf is what a result says of a baseline it did not measure.
func reuseOf(kind string, b *baseline, now time.Time) BaselineReuse {
	return BaselineReuse{Kind: kind, MeasuredAt: b.MeasuredAt.UTC().Format(time.RFC3339), AgeS: round4(now.Sub(b.MeasuredAt).Seconds()),
		Where: b.Where, SavedS: round4(b.MeasureS)}
}

// measuredWhere names the device and host of an evaluation.
func measuredWhere(r *evalRun) string {
	host, _ := os.Hostname()
	w := r.dev.Name
	if r.dev.UUID != "" {
		w += " (" + r.dev.UUID + ")"
	}
	return w + " on " + host
}

func encodeStats(s *Stats) string {
	b, _ := json.Marshal(s)
	return string(b)
}
