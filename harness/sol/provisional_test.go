package sol

import (
	"context"
	"database/sql"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

func openDB(t *testing.T) *sql.DB {
	t.Helper()
	db, err := sql.Open("sqlite3", filepath.Join(t.TempDir(), "k.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

// The provisional mark follows the runs stored: loaded runs alone leave it,
// one run that was not loaded clears it, and a loaded run never demotes
// figures a quiet run measured (unless it replaces them).
func TestProvisionalMark(t *testing.T) {
	type save struct {
		loaded, replace bool
		bw              float64
	}
	for _, tc := range []struct {
		name   string
		saves  []save
		want   bool
		wantBW float64
	}{
		{"loaded first", []save{{true, false, 1}}, true, 1},
		{"quiet first", []save{{false, false, 1}}, false, 1},
		{"loaded then quiet", []save{{true, false, 1}, {false, false, 3}}, false, 3},
		{"loaded then quiet lower keeps best", []save{{true, false, 2}, {false, false, 1}}, false, 2},
		{"loaded twice", []save{{true, false, 1}, {true, false, 2}}, true, 2},
		{"quiet then loaded stays final", []save{{false, false, 3}, {true, false, 1}}, false, 3},
		{"loaded replace marks", []save{{false, false, 3}, {true, true, 1}}, true, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx, db := context.Background(), openDB(t)
			for _, s := range tc.saves {
				c := Calibration{DeviceUUID: "cpu:h:m", DeviceName: "m", Loaded: s.loaded, HostBusyShare: 0.5,
					Metrics: map[string]float64{MetricMemBandwidth: s.bw}}
				save := SaveCalibration
				if s.replace {
					save = ReplaceCalibration
				}
				if err := save(ctx, db, c); err != nil {
					t.Fatal(err)
				}
			}
			got, ok, err := LoadCalibration(ctx, db, "cpu:h:m")
			if err != nil || !ok {
				t.Fatal(ok, err)
			}
			ceil := got.Ceilings()
			if got.Provisional != tc.want || ceil.Provisional != tc.want || ceil.MemBandwidth != tc.wantBW || len(ceil.PeakFLOPS) != 0 {
				t.Errorf("provisional %v, ceilings %+v; want provisional %v, bandwidth %g", got.Provisional, ceil, tc.want, tc.wantBW)
			}
			a := Analyze(Work{Bytes: 1, Dtype: "fp32"}, ceil, 0.5, 0, true)
			if hasNote(a.Notes, ProvisionalNote) != tc.want {
				t.Errorf("notes %q: provisional note should be there: %v", a.Notes, tc.want)
			}
		})
	}
}

func hasNote(notes []string, s string) bool {
	for _, n := range notes {
		if strings.Contains(n, s) {
			return true
		}
	}
	return false
}

// A database made before the provisional marks loads: its figures are
// final, and a first use does not calibrate them again.
func TestCalibrationOldSchema(t *testing.T) {
	ctx, db := context.Background(), openDB(t)
	host, _ := os.Hostname()
	uuid := "cpu:" + host + ":old model"
	if _, err := db.Exec(`CREATE TABLE calibration (device_uuid TEXT NOT NULL, device_name TEXT NOT NULL, metric TEXT NOT NULL,
		value REAL NOT NULL, measured_at TEXT NOT NULL, PRIMARY KEY (device_uuid, metric));
		INSERT INTO calibration VALUES (?, 'old model', 'mem_bandwidth', 5e9, '2024-01-01T00:00:00Z')`, uuid); err != nil {
		t.Fatal(err)
	}
	c, err := CeilingsFor(ctx, db, uuid, "", "")
	if err != nil || c.MemBandwidth != 5e9 || c.Provisional {
		t.Fatalf("%+v %v", c, err)
	}
	cal, err := NewFirstUse(db, "/nonexistent/python").CPU(ctx)
	if cal != nil || err != nil {
		t.Errorf("final figures calibrated again: %+v %v", cal, err)
	}
}

// First uses with real Python and SQLite, the load state forced through
// KEVOLVE_CALIBRATE_LOAD (a real host's load is not the test's to set). A
// step with fresh=true is a later first use (a new FirstUse: the next
// server start); without, the same FirstUse again within ProvisionalRetry.
func TestFirstUseProvisional(t *testing.T) {
	py := python(t)
	type step struct {
		load            string
		fresh           bool
		ran, again, pro bool // calibrated, as a recalibration, figures provisional after
	}
	for _, tc := range []struct {
		name  string
		steps []step
	}{
		{"loaded then quiet", []step{
			{"loaded", true, true, false, true},
			{"quiet", false, false, false, true}, // within ProvisionalRetry
			{"quiet", true, true, true, false},
			{"loaded", true, false, false, false}, // final: not repeated
		}},
		{"quiet is final", []step{{"quiet", true, true, false, false}, {"quiet", true, false, false, false}}},
		{"loaded twice", []step{{"loaded", true, true, false, true}, {"loaded", true, true, true, true}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx, db := context.Background(), openDB(t)
			var f *FirstUse
			var first map[string]float64
			for i, s := range tc.steps {
				t.Setenv("KEVOLVE_CALIBRATE_LOAD", s.load)
				if s.fresh {
					f = NewFirstUse(db, py)
				}
				c, err := f.CPUCeilings(ctx)
				if err != nil {
					t.Fatalf("step %d: %v", i, err)
				}
				cal := c.Calibrated
				if (cal != nil) != s.ran || (cal != nil && cal.Recalibrated != s.again) || c.Provisional != s.pro {
					t.Fatalf("step %d: calibrated %+v, provisional %v; want ran %v again %v provisional %v", i, cal, c.Provisional, s.ran, s.again, s.pro)
				}
				if cal != nil && cal.Recalibrated != strings.Contains(FirstUseNote(cal), "calibrated again") {
					t.Errorf("step %d: note %q", i, FirstUseNote(cal))
				}
				if first == nil {
					first = map[string]float64{MetricMemBandwidth: c.MemBandwidth, "fp32": c.PeakFLOPS["fp32"]}
				} else if c.MemBandwidth < first[MetricMemBandwidth] || c.PeakFLOPS["fp32"] < first["fp32"] {
					t.Errorf("step %d lowered the figures: %+v, first %v", i, c, first)
				}
			}
		})
	}
}

// Real outside load: four busy loops on the host make the calibration
// report itself loaded, whatever else the host runs.
func TestCalibrateUnderRealLoad(t *testing.T) {
	py := python(t)
	if _, err := os.Stat("/proc/stat"); err != nil {
		t.Skip("no /proc/stat")
	}
	t.Setenv("KEVOLVE_CALIBRATE_LOAD", "")
	for i := 0; i < 4; i++ {
		cmd := exec.Command("sh", "-c", "while :; do :; done")
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { cmd.Process.Signal(syscall.SIGKILL); cmd.Wait() })
	}
	time.Sleep(200 * time.Millisecond)
	c, err := Calibrate(context.Background(), CalibrateOptions{Python: py, Device: "cpu", Quick: true})
	if err != nil {
		t.Fatal(err)
	}
	if !c.Loaded || c.HostBusyShare < 0.25 {
		t.Errorf("four busy loops, calibration not loaded: share %.2f, notes %v", c.HostBusyShare, c.Notes)
	}
}
