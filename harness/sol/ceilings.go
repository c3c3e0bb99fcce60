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
	// Provisional: the measured figures were calibrated while the host was
	// busy, so they read low (ProvisionalNote).
	Provisional bool `json:"provisional,omitempty"`
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
	c.DeviceUUID, c.Provisional = measured.DeviceUUID, measured.Provisional
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
	// Loaded: other programs kept HostBusyShare of the host's CPUs busy
	// while this run measured (calibrate.py; CPU only), so its figures read low.
	Loaded        bool    `json:"loaded,omitempty"`
	HostBusyShare float64 `json:"host_busy_share,omitempty"`
	// Provisional: the stored figures come only from loaded runs, so a later
	// first use calibrates again (FirstUse.CPU).
	Provisional bool `json:"provisional,omitempty"`
	// Recalibrated: FirstUse ran this to replace provisional figures.
	Recalibrated bool `json:"recalibrated,omitempty"`
}

// Ceilings returns the calibration as ceilings.
func (c Calibration) Ceilings() Ceilings {
	out := Ceilings{PeakFLOPS: map[string]float64{}, Source: "measured", DeviceUUID: c.DeviceUUID, Provisional: c.Provisional}
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

// Migrate creates the calibration tables. The provisional marks have a
// table of their own: a database made before them gains it empty (its
// figures final), and Ceilings never reads a mark as a metric.
func Migrate(ctx context.Context, db *sql.DB) error {
	_, err := db.ExecContext(ctx, `CREATE TABLE IF NOT EXISTS calibration_provisional (
		device_uuid     TEXT PRIMARY KEY,
		host_busy_share REAL NOT NULL, -- outside load while the last loaded run measured
		measured_at     TEXT NOT NULL
	);
	CREATE TABLE IF NOT EXISTS calibration (
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
	return saveCalibration(ctx, db, c, false, `INSERT INTO calibration (device_uuid, device_name, metric, value, measured_at)
		VALUES (?, ?, ?, ?, ?) ON CONFLICT(device_uuid, metric) DO UPDATE SET
		device_name = excluded.device_name, value = excluded.value, measured_at = excluded.measured_at
		WHERE excluded.value > calibration.value`)
}

// ReplaceCalibration stores c over the device's earlier figures.
func ReplaceCalibration(ctx context.Context, db *sql.DB, c Calibration) error {
	return saveCalibration(ctx, db, c, true, `INSERT OR REPLACE INTO calibration
		(device_uuid, device_name, metric, value, measured_at) VALUES (?, ?, ?, ?, ?)`)
}

func saveCalibration(ctx context.Context, db *sql.DB, c Calibration, replace bool, upsert string) error {
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
	if err := markProvisional(ctx, tx, c, at, replace); err != nil {
		return err
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

// markProvisional records, before c's figures are stored, whether the
// device's figures will be provisional: a loaded run marks a device that
// had no figures (or only provisional ones) or whose figures it replaces,
// a run that was not loaded makes them final. Otherwise a loaded run never
// demotes final figures: a quiet run measured them, and the best per
// metric is kept.
func markProvisional(ctx context.Context, tx *sql.Tx, c Calibration, at time.Time, replace bool) error {
	var q string
	var args []any
	switch {
	case !c.Loaded:
		q, args = `DELETE FROM calibration_provisional WHERE device_uuid = ?`, []any{c.DeviceUUID}
	case replace:
		q = `INSERT OR REPLACE INTO calibration_provisional (device_uuid, host_busy_share, measured_at) VALUES (?, ?, ?)`
		args = []any{c.DeviceUUID, c.HostBusyShare, at.Format(time.RFC3339)}
	default:
		q = `INSERT OR REPLACE INTO calibration_provisional (device_uuid, host_busy_share, measured_at)
			SELECT ?, ?, ? WHERE NOT EXISTS (SELECT 1 FROM calibration WHERE device_uuid = ?)
			OR EXISTS (SELECT 1 FROM calibration_provisional WHERE device_uuid = ?)`
		args = []any{c.DeviceUUID, c.HostBusyShare, at.Format(time.RFC3339), c.DeviceUUID, c.DeviceUUID}
	}
	if _, err := tx.ExecContext(ctx, q, args...); err != nil {
		return fmt.Errorf("save calibration %s: provisional mark: %w", c.DeviceUUID, err)
	}
	return nil
}

// provisional says whether the device's stored figures are provisional.
func provisional(ctx context.Context, db *sql.DB, deviceUUID string) (bool, error) {
	var n int
	err := db.QueryRowContext(ctx, `SELECT COUNT(*) FROM calibration_provisional WHERE device_uuid = ?`, deviceUUID).Scan(&n)
	if err != nil {
		return false, fmt.Errorf("load calibration %s: provisional mark: %w", deviceUUID, err)
	}
	return n > 0, nil
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
	if c.Provisional, err = provisional(ctx, db, deviceUUID); err != nil {
		return Calibration{}, false, err
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
	c.Provisional = stored.Provisional
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
