package harness

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/kevolve/kevolve-mcp/harness/lease"
	"github.com/kevolve/kevolve-mcp/harness/problem"
	"github.com/kevolve/kevolve-mcp/harness/sol"
	"github.com/kevolve/kevolve-mcp/harness/target"
)

func quietLogger() *slog.Logger {
	return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
}

// Bad input is a typed error naming the argument, before anything runs;
// a target without devices is a NoDeviceError, not a verdict.
func TestServiceInputErrors(t *testing.T) {
	ev := evaluator(t)
	ctx := context.Background()
	good := Candidate{Code: candidate("", normBody+"        return x / n")}
	ref := Problem{Reference: Source{Code: refNormalize}}
	big := strings.Repeat("#", problem.MaxSourceBytes+1)
	bigFile := filepath.Join(t.TempDir(), "big.py")
	if err := os.WriteFile(bigFile, []byte(big), 0o644); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name    string
		p       Problem
		c       Candidate
		o       Options
		arg     string // the InputError's argument
		msgHas  string
		noInput bool // another error type is expected
	}{
		{"both_forms", ref, Candidate{Code: "x", Path: "/y.py"}, Options{Target: "cpu"}, "candidate", "not both", false},
		{"no_candidate", ref, Candidate{}, Options{Target: "cpu"}, "candidate", "no path or code", false},
		{"missing_file", ref, Candidate{Path: "/nonexistent/c.py"}, Options{Target: "cpu"}, "candidate", "no such file", false},
		{"device_file", ref, Candidate{Path: "/dev/zero"}, Options{Target: "cpu"}, "candidate", "not a regular file", false},
		{"inline_over_cap", ref, Candidate{Code: big}, Options{Target: "cpu"}, "candidate", "4 MiB limit", false},
		{"file_over_cap", ref, Candidate{Path: bigFile}, Options{Target: "cpu"}, "candidate", "4 MiB limit", false},
		{"reference_over_cap", Problem{Reference: Source{Code: big}}, good, Options{Target: "cpu"}, "reference", "4 MiB limit", false},
		{"bad_target", ref, good, Options{Target: "tpu"}, "target", "unknown target", false},
		{"bad_device", ref, good, Options{Target: "cpu", Device: "9"}, "device", `no such cpu device`, false},
		{"bad_trials", ref, good, Options{Target: "cpu", Trials: 101}, "trials", "between 1 and 100", false},
		{"bad_timeout", ref, good, Options{Target: "cpu", Timeout: 2 * time.Hour}, "timeout_s", "3600", false},
		{"amd_absent", ref, good, Options{Target: "amd"}, "", "no AMD device found", true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t0 := time.Now()
			_, err := ev.Evaluate(ctx, tc.p, tc.c, nil, tc.o)
			if err == nil {
				t.Fatal("no error")
			}
			if !strings.Contains(err.Error(), tc.msgHas) {
				t.Errorf("error %q lacks %q", err, tc.msgHas)
			}
			var ie *InputError
			if tc.noInput {
				var nd *lease.NoDeviceError
				if !errors.As(err, &nd) || errors.As(err, &ie) {
					t.Errorf("want a NoDeviceError, got %T %v", err, err)
				}
				return
			}
			if !errors.As(err, &ie) || ie.Arg != tc.arg {
				t.Errorf("want *InputError for %q, got %T %v", tc.arg, err, err)
			}
			if time.Since(t0) > 2*time.Second && tc.name != "bad_device" {
				t.Errorf("rejecting bad input took %s", time.Since(t0))
			}
		})
	}
	// Resolution shares the cap and the typed errors.
	if _, err := problem.Resolve(ctx, problem.Ref{ReferenceSource: big}, nil); err == nil || !strings.Contains(err.Error(), "4 MiB") {
		t.Errorf("resolve over cap: %v", err)
	}
	if _, err := problem.Resolve(ctx, problem.Ref{Reference: "llm/x", Shapes: "huge"}, nil); err == nil || !strings.HasPrefix(err.Error(), "shapes:") {
		t.Errorf("bad shapes: %v", err)
	}
}

// Three fake CPU devices: three concurrent evaluations land on three
// distinct leases, and each child runs with its own lease's variables.
func TestEvaluationsSpreadOverLeases(t *testing.T) {
	py := testPython(t)
	devs := []lease.Device{{Index: 0, Name: "fake cpu 0"}, {Index: 1, Name: "fake cpu 1"}, {Index: 2, Name: "fake cpu 2"}}
	ev, err := NewEvaluator(EvalConfig{Python: py, CacheDir: t.TempDir(), Logger: quietLogger(),
		Devices: map[target.Name][]lease.Device{target.CPU: devs}})
	if err != nil {
		t.Fatal(err)
	}
	defer ev.Close()
	if _, err := ev.WorkerInfo(context.Background()); err != nil { // start the parent before the clock matters
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	results := make([]Result, 3)
	errs := make([]error, 3)
	for i := 0; i < 3; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			// Each candidate prints the device index its process was given
			// (its folder is all it may write), and sleeps so the three overlap.
			c := candidate("import os, time\n", "        if self.cache is None:\n            self.cache = 1\n            print('DEVICE_INDEX=' + os.environ.get('KEVOLVE_DEVICE_INDEX', '?'), flush=True)\n            time.sleep(1.5)\n"+normBody+"        return x / n")
			results[i], errs[i] = ev.Evaluate(context.Background(), Problem{Reference: Source{Code: refNormalize}}, Candidate{Code: c}, nil,
				Options{Target: "cpu", SkipTiming: true, Trials: 1})
		}(i)
	}
	wg.Wait()
	seen := map[int]bool{}
	for i, r := range results {
		if errs[i] != nil {
			t.Fatal(errs[i])
		}
		if r.Verdict != VerdictPass {
			t.Fatalf("evaluation %d: %s %+v\n%s", i, r.Verdict, r.Checks, r.Log)
		}
		if !strings.Contains(r.Log, fmt.Sprintf("DEVICE_INDEX=%d\n", r.DeviceIndex)) || r.Device != devs[r.DeviceIndex].Name {
			t.Errorf("evaluation %d reports device %d (%s) but its child printed %q", i, r.DeviceIndex, r.Device, r.Log)
		}
		seen[r.DeviceIndex] = true
	}
	if len(seen) != 3 {
		t.Errorf("three concurrent evaluations on three devices used %v", seen)
	}
	// An explicit device is honoured.
	r, err := ev.Evaluate(context.Background(), Problem{Reference: Source{Code: refNormalize}},
		Candidate{Code: candidate("", normBody+"        return x / n")}, nil, Options{Target: "cpu", Device: "2", SkipTiming: true, Trials: 1})
	if err != nil || r.DeviceIndex != 2 {
		t.Fatalf("device 2: %v %+v", err, r.DeviceIndex)
	}
}

// Every timed evaluation is bounded by the speed of light of the device
// it ran on; one measured faster than that is an integrity violation.
func TestSOLOnEveryTimedEvaluation(t *testing.T) {
	if gpuMode() {
		t.Skip("CPU ceilings: the GPU run covers SOL in the bench")
	}
	py := testPython(t)
	ctx := context.Background()
	db, err := sql.Open("sqlite3", filepath.Join(t.TempDir(), "k.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	ev, err := NewEvaluator(EvalConfig{Python: py, CacheDir: t.TempDir(), DB: db, Logger: quietLogger()})
	if err != nil {
		t.Fatal(err)
	}
	defer ev.Close()
	good := Candidate{Code: candidate("", normBody+"        return x / n")}
	ref := Problem{Reference: Source{Code: refNormalize}}

	// Before calibration the CPU has no ceilings: no SOL, said so.
	r, err := ev.Evaluate(ctx, ref, good, nil, Options{Target: "cpu", Trials: 1})
	if err != nil {
		t.Fatal(err)
	}
	if r.Verdict != VerdictPass || r.SOL == nil || r.TSolS != nil || !strings.Contains(strings.Join(r.SOL.Notes, " "), "never calibrated") {
		t.Fatalf("uncalibrated: %s %+v", r.Verdict, r.SOL)
	}

	if _, err := sol.CalibrateAndStore(ctx, db, sol.CalibrateOptions{Python: py, Device: "cpu", Quick: true, Timeout: 2 * time.Minute}); err != nil {
		t.Fatal(err)
	}
	// F.normalize of 64x256 fp32: read and write 64 KiB each, ~4 FLOP per element.
	honest := problem.Work{FLOPs: 4 * 64 * 256, Bytes: 2 * 64 * 256 * 4}
	impossible := problem.Work{FLOPs: 1e16, Bytes: 1e14} // hours of work on any CPU
	cases := []struct {
		name    string
		work    problem.Work
		seed    int64
		verdict string
		source  string
	}{
		{"declared", honest, 1, VerdictPass, "declared"},
		{"traced", problem.Work{}, 2, VerdictPass, "traced"},
		{"faster_than_sol", impossible, 3, VerdictIntegrityViolation, "declared"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			p := ref
			p.Work = tc.work
			r, err := ev.Evaluate(ctx, p, good, nil, Options{Target: "cpu", Trials: 1, Seed: tc.seed})
			if err != nil {
				t.Fatal(err)
			}
			if r.Verdict != tc.verdict {
				t.Fatalf("verdict %s, want %s: %+v", r.Verdict, tc.verdict, r.Checks)
			}
			s := r.SOL
			if s == nil || r.TSolS == nil || *r.TSolS <= 0 || r.PctOfSol == nil || r.SolScore == nil || s.WorkSource != tc.source || !strings.HasPrefix(s.Ceilings, "measured") {
				t.Fatalf("SOL figures missing: %+v", s)
			}
			var check *Check
			for i := range r.Checks {
				if r.Checks[i].Name == "faster_than_sol" {
					check = &r.Checks[i]
				}
			}
			if check == nil {
				t.Fatalf("no faster_than_sol check: %+v", r.Checks)
			}
			if tc.verdict == VerdictPass {
				if !check.Passed || r.Fitness.SpeedupVsEager <= 0 || r.Fitness.SolScore <= 0 || *r.PctOfSol >= 100 {
					t.Fatalf("honest kernel flagged or unscored: %+v fitness %+v pct %.3g", check, r.Fitness, *r.PctOfSol)
				}
				return
			}
			if check.Passed || !strings.Contains(check.Detail, "faster than physically possible") || r.Fitness != (Fitness{}) || r.SpeedupVsEager != nil {
				t.Fatalf("impossible candidate: %+v fitness %+v", check, r.Fitness)
			}
			// Above 100% of the traced bound: said in a note, on every target.
			if !strings.Contains(strings.Join(r.Notes, "\n"), "above the traced speed of light") {
				t.Fatalf("no note for a result above the traced bound: %q", r.Notes)
			}
			t.Logf("flagged: %s", check.Detail)
		})
	}
}
