package sol

import (
	"context"
	"database/sql"
	_ "embed"
	"errors"
	"fmt"
	"os"
	"sort"
	"strings"
	"time"

	"github.com/kevolve/kevolve-mcp/harness/spec"
	"github.com/kevolve/kevolve-mcp/harness/toolchain"
)

// Ceilings are the rates a device can sustain: FLOP/s per dtype key
// (spec.FP32, spec.BF16, ...) and memory bandwidth in bytes/s.
type Ceilings struct {
	PeakFLOPS    map[string]float64 `json:"peak_flops"`
	MemBandwidth float64            `json:"mem_bandwidth_bytes_per_s"`
	Source       string             `json:"source"` // "measured" | "spec:<key>" | "measured+spec:<key>"
	DeviceUUID   string             `json:"device_uuid,omitempty"`
	// Calibrated is the calibration FirstUse ran to answer this call (nil:
	// the figures were stored already).
	Calibrated *Calibration `json:"calibrated,omitempty"`
}

// MetricMemBandwidth is the calibration metric name for copy bandwidth; every
// other metric is a dtype key of PeakFLOPS.
const MetricMemBandwidth = "mem_bandwidth"

// FromSpec turns a datasheet row into ceilings.
func FromSpec(row spec.Row) Ceilings {
	c := Ceilings{PeakFLOPS: map[string]float64{}, MemBandwidth: row.MemBandwidth, Source: "spec:" + row.Key}
	for k, v := range row.PeakFLOPS {
		c.PeakFLOPS[k] = v
	}
	return c
}

// Resolve merges measured ceilings over datasheet ones: a measured figure
// wins for its metric, the datasheet fills what was not measured (fp8 on a
// box where _scaled_mm failed, say). Either side may be absent.
func Resolve(measured *Ceilings, row *spec.Row) (Ceilings, error) {
	switch {
	case measured == nil && row == nil:
		return Ceilings{}, fmt.Errorf("no ceilings: the device was never calibrated (run `kevolve-mcp calibrate`) and has no spec row; pass a device key")
	case row == nil:
		return *measured, nil
	case measured == nil:
		return FromSpec(*row), nil
	}
	c := FromSpec(*row)
	c.DeviceUUID = measured.DeviceUUID
	mixed := false
	for k := range c.PeakFLOPS {
		if _, ok := measured.PeakFLOPS[k]; !ok {
			mixed = true
		}
	}
	for k, v := range measured.PeakFLOPS {
		c.PeakFLOPS[k] = v
	}
	if measured.MemBandwidth > 0 {
		c.MemBandwidth = measured.MemBandwidth
	} else {
		mixed = true
	}
	c.Source = "measured"
	if mixed {
		c.Source = "measured+spec:" + row.Key
	}
	return c, nil
}

//go:embed calibrate.py
var calibrateScript string

// Calibration is one run of the micro-benchmarks.
type Calibration struct {
	DeviceUUID string             `json:"device_uuid"`
	DeviceName string             `json:"device_name"`
	Kind       string             `json:"kind"` // cuda | cpu
	Metrics    map[string]float64 `json:"metrics"`
	Notes      []string           `json:"notes,omitempty"`
	MeasuredAt time.Time          `json:"measured_at"`
	// DurationS is how long the measurement took (CalibrateAndStore).
	DurationS float64 `json:"duration_s,omitempty"`
}

// Ceilings returns the calibration as ceilings.
func (c Calibration) Ceilings() Ceilings {
	out := Ceilings{PeakFLOPS: map[string]float64{}, Source: "measured", DeviceUUID: c.DeviceUUID}
	for k, v := range c.Metrics {
		if k == MetricMemBandwidth {
			out.MemBandwidth = v
		} else {
			out.PeakFLOPS[k] = v
		}
	}
	return out
}

// CalibrateOptions control a calibration run.
type CalibrateOptions struct {
	Python  string        // toolchain.Python() when empty
	Device  string        // auto | cuda | cpu
	Quick   bool          // small sizes (tests); figures are then lower bounds
	Timeout time.Duration // default 5 min
	// Env is added to the benchmark's environment: a device lease's
	// variables pin it to one GPU (its UUID names the stored figures).
	Env []string
	// Replace stores this run's figures over earlier ones; by default the
	// best figure of each metric is kept.
	Replace bool
}

// Calibrate measures the device's ceilings: device-to-device copy bandwidth
// (read+write bytes) and GEMM rate per dtype on CUDA/ROCm, copy bandwidth and
// fp32 matmul rate on all threads on the CPU.
func Calibrate(ctx context.Context, opt CalibrateOptions) (Calibration, error) {
	if opt.Python == "" {
		opt.Python = toolchain.Python()
	}
	if opt.Device == "" {
		opt.Device = "auto"
	}
	if opt.Timeout == 0 {
		opt.Timeout = 5 * time.Minute
	}
	ctx, cancel := context.WithTimeout(ctx, opt.Timeout)
	defer cancel()
	args := []string{"--device", opt.Device}
	if opt.Quick {
		args = append(args, "--quick")
	}
	var c Calibration
	if err := runScript(ctx, opt.Python, "kevolve_calibrate.py", calibrateScript, opt.Env, &c, args...); err != nil {
		return Calibration{}, fmt.Errorf("calibrate: %w", err)
	}
	if len(c.Metrics) == 0 || c.DeviceUUID == "" {
		return Calibration{}, fmt.Errorf("calibrate: no measurements returned")
	}
	c.MeasuredAt = time.Now().UTC()
	return c, nil
}

// Migrate creates the calibration table.
func Migrate(ctx context.Context, db *sql.DB) error {
	_, err := db.ExecContext(ctx, `CREATE TABLE IF NOT EXISTS calibration (
		device_uuid TEXT NOT NULL,
		device_name TEXT NOT NULL,
		metric      TEXT NOT NULL, -- mem_bandwidth (bytes/s) or a dtype key (FLOP/s)
		value       REAL NOT NULL,
		measured_at TEXT NOT NULL, -- RFC 3339, UTC
		PRIMARY KEY (device_uuid, metric)
	)`)
	if err != nil {
		return fmt.Errorf("migrate calibration: %w", err)
	}
	return nil
}

// SaveCalibration stores c, keeping for each metric the best figure ever
// measured on the device: a ceiling is what the device can attain, and a
// recalibration on a loaded machine must not lower it. ReplaceCalibration
// discards earlier figures (new hardware, driver or settings).
func SaveCalibration(ctx context.Context, db *sql.DB, c Calibration) error {
	return saveCalibration(ctx, db, c, `INSERT INTO calibration (device_uuid, device_name, metric, value, measured_at)
		VALUES (?, ?, ?, ?, ?) ON CONFLICT(device_uuid, metric) DO UPDATE SET
		device_name = excluded.device_name, value = excluded.value, measured_at = excluded.measured_at
		WHERE excluded.value > calibration.value`)
}

// ReplaceCalibration stores c over the device's earlier figures.
func ReplaceCalibration(ctx context.Context, db *sql.DB, c Calibration) error {
	return saveCalibration(ctx, db, c, `INSERT OR REPLACE INTO calibration
		(device_uuid, device_name, metric, value, measured_at) VALUES (?, ?, ?, ?, ?)`)
}

func saveCalibration(ctx context.Context, db *sql.DB, c Calibration, upsert string) error {
	if err := Migrate(ctx, db); err != nil {
		return err
	}
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("save calibration: %w", err)
	}
	defer tx.Rollback()
	at := c.MeasuredAt
	if at.IsZero() {
		at = time.Now().UTC()
	}
	keys := make([]string, 0, len(c.Metrics))
	for k := range c.Metrics {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		if _, err := tx.ExecContext(ctx, upsert,
			c.DeviceUUID, c.DeviceName, k, c.Metrics[k], at.Format(time.RFC3339)); err != nil {
			return fmt.Errorf("save calibration %s/%s: %w", c.DeviceUUID, k, err)
		}
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("save calibration: %w", err)
	}
	return nil
}

// LoadCalibration returns the stored figures of a device; ok is false when
// the device was never calibrated.
func LoadCalibration(ctx context.Context, db *sql.DB, deviceUUID string) (c Calibration, ok bool, err error) {
	if err := Migrate(ctx, db); err != nil {
		return Calibration{}, false, err
	}
	rows, err := db.QueryContext(ctx, `SELECT device_name, metric, value, measured_at FROM calibration WHERE device_uuid = ?`, deviceUUID)
	if err != nil {
		return Calibration{}, false, fmt.Errorf("load calibration %s: %w", deviceUUID, err)
	}
	defer rows.Close()
	c = Calibration{DeviceUUID: deviceUUID, Metrics: map[string]float64{}}
	for rows.Next() {
		var metric, at string
		var v float64
		if err := rows.Scan(&c.DeviceName, &metric, &v, &at); err != nil {
			return Calibration{}, false, fmt.Errorf("load calibration %s: %w", deviceUUID, err)
		}
		c.Metrics[metric] = v
		if t, err := time.Parse(time.RFC3339, at); err == nil && t.After(c.MeasuredAt) {
			c.MeasuredAt = t
		}
	}
	if err := rows.Err(); err != nil {
		return Calibration{}, false, fmt.Errorf("load calibration %s: %w", deviceUUID, err)
	}
	c.Kind = "cuda"
	if strings.HasPrefix(deviceUUID, "cpu:") {
		c.Kind = "cpu"
	}
	return c, len(c.Metrics) > 0, nil
}

// CalibrateAndStore runs the micro-benchmarks and stores the figures under
// the device's UUID (`kevolve-mcp calibrate`).
func CalibrateAndStore(ctx context.Context, db *sql.DB, opt CalibrateOptions) (Calibration, error) {
	t0 := time.Now()
	c, err := Calibrate(ctx, opt)
	if err != nil {
		return Calibration{}, err
	}
	save := SaveCalibration
	if opt.Replace {
		save = ReplaceCalibration
	}
	if err := save(ctx, db, c); err != nil {
		return Calibration{}, err
	}
	stored, ok, err := LoadCalibration(ctx, db, c.DeviceUUID)
	if err != nil || !ok {
		return c, err
	}
	// What is kept: the best of this run and earlier ones, saying which.
	for k, v := range stored.Metrics {
		if m, measured := c.Metrics[k]; measured && v > m {
			c.Notes = append(c.Notes, fmt.Sprintf("%s: kept the earlier %.3g (this run measured %.3g)", k, v, m))
			c.Metrics[k] = v
		}
	}
	c.DurationS = time.Since(t0).Seconds()
	return c, nil
}

// CPUCalibrationUUID returns the device UUID under which this host's CPU was
// last calibrated ("cpu:<host>:<model>", as calibrate.py names it); ok is
// false when it never was.
func CPUCalibrationUUID(ctx context.Context, db *sql.DB) (uuid string, ok bool, err error) {
	if err := Migrate(ctx, db); err != nil {
		return "", false, err
	}
	host, err := os.Hostname()
	if err != nil {
		return "", false, fmt.Errorf("cpu calibration: %w", err)
	}
	err = db.QueryRowContext(ctx, `SELECT device_uuid FROM calibration WHERE device_uuid LIKE ? ORDER BY measured_at DESC LIMIT 1`,
		"cpu:"+host+":%").Scan(&uuid)
	if errors.Is(err, sql.ErrNoRows) {
		return "", false, nil
	}
	if err != nil {
		return "", false, fmt.Errorf("cpu calibration: %w", err)
	}
	return uuid, true, nil
}
