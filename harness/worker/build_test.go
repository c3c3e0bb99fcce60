package worker

import (
	"context"
	"strings"
	"testing"
	"time"
)

// The build grant's arithmetic: what the build lost beyond the load grant,
// within MaxBuildGrant, never granted twice; a kill in a build stage that
// lost more than it got is the host's.
func TestBuildAllowanceArithmetic(t *testing.T) {
	const timeout = 10 * time.Second
	if got, want := MaxBuildGrant(timeout), timeout-MaxLoadGrant(timeout); got != want {
		t.Fatalf("MaxBuildGrant(%s) = %s, want %s (2x the timeout with the load grant)", timeout, got, want)
	}
	s := time.Second
	cases := []struct {
		name                     string
		lost, loadGranted, prior time.Duration
		in                       bool
		want                     time.Duration
		hostsFault               bool // killed now, it ran out of time because of the host
	}{
		{"nothing lost", 0, 0, 0, true, 0, false},
		{"all lost granted", 4 * s, 0, 0, true, 4 * s, false},
		{"the load grant already gave part", 4 * s, s, 0, true, 3 * s, false},
		{"earlier grants count", 4 * s, s, 2 * s, true, s, false},
		{"capped", 30 * s, 0, 0, true, MaxBuildGrant(timeout), true},
		{"cap reached before", 30 * s, 0, MaxBuildGrant(timeout), true, 0, true},
		{"below a timer round", 4*s + 10*time.Millisecond, 0, 4 * s, true, 0, false},
		{"capped, not building now", 30 * s, 0, MaxBuildGrant(timeout), false, 0, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			b := newBuildAllowance([]string{"load_candidate"}, timeout)
			b.g.Lost, b.g.Granted = tc.lost, tc.prior
			if got := b.extend(0, tc.loadGranted); got != tc.want {
				t.Fatalf("extend = %s, want %s", got, tc.want)
			}
			b.in = tc.in
			if got := b.loadTimeout(tc.loadGranted); got != tc.hostsFault {
				t.Fatalf("loadTimeout = %v, want %v (lost %s, granted %s)", got, tc.hostsFault, b.g.Lost, b.g.Granted)
			}
		})
	}
}

// A real build stage under an artificial load: short-lived processes burn
// 0.3 s of CPU each, one after another, on a CPU shared with three
// spinners, so the build takes about four times its CPU time and each
// process has exited before the deadline looks. Without build stages the
// load grant (a tenth of the deadline) is all there is: a timeout. With
// them the time its processes waited extends the deadline beyond that
// tenth, and the result says so: four processes finish (or, on a host
// loaded beyond the test's own spinners, use the whole allowance and are
// the host's timeout); eight cannot finish within twice the deadline and
// are reported as the host's timeout, not the candidate's.
func TestBuildGrantUnderLoad(t *testing.T) {
	if testing.Short() {
		t.Skip("spinners and builds of several seconds")
	}
	const spinners, cpuS = 3, 0.3
	w := newWorker(t)
	ctx := context.Background()
	if err := w.Start(ctx); err != nil {
		t.Fatal(err)
	}
	cpu := firstAllowedCPU(t)
	startSpinners(t, cpu, spinners)
	build := []string{"load_candidate"}
	cases := []struct {
		name    string
		procs   int
		timeout time.Duration
		stages  []string
		// finishes: it must finish, or use the whole allowance and be the
		// host's timeout; hosts: it must be the host's timeout.
		finishes, hosts bool
	}{
		{"no build stages", 4, 3 * time.Second, nil, false, false},
		{"build stages", 4, 3500 * time.Millisecond, build, true, false},
		{"beyond twice the deadline", 8, 4 * time.Second, build, false, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			args := map[string]any{"cpu": cpu, "cpu_s": cpuS, "procs": tc.procs}
			o, err := w.Run(ctx, Job{Module: "selftest", Func: "build_under_load", Args: args, Timeout: tc.timeout, BuildStages: tc.stages})
			if err != nil {
				t.Fatal(err)
			}
			t.Logf("wall %s, timed out %v, load grant %s, build: %s; host's timeout %v; result %s",
				o.Wall, o.TimedOut, o.LoadGrant, o.Build, o.BuildLoadTimeout, o.Result)
			capped := o.Build.Granted >= MaxBuildGrant(tc.timeout)-minExtension
			switch {
			case tc.stages == nil:
				if !o.TimedOut || o.Build != (BuildGrant{}) || o.BuildLoadTimeout {
					t.Fatalf("without build stages: timed out %v (want true), build %+v (want none)", o.TimedOut, o.Build)
				}
			case tc.hosts:
				if !o.TimedOut || !o.BuildLoadTimeout || !capped {
					t.Fatalf("want the host's timeout with the whole allowance: timed out %v, host's %v, granted %s of %s",
						o.TimedOut, o.BuildLoadTimeout, o.Build.Granted, MaxBuildGrant(tc.timeout))
				}
			case o.TimedOut && !(o.BuildLoadTimeout && capped):
				t.Fatalf("timed out with %s of %s granted, host's timeout %v: the build's waits were not granted",
					o.Build.Granted, MaxBuildGrant(tc.timeout), o.BuildLoadTimeout)
			}
			if tc.stages != nil {
				if o.Build.Granted <= 0 || !strings.Contains(o.Build.String(), "waited") {
					t.Fatalf("no build grant stated: %+v", o.Build)
				}
				if beyond := tc.timeout + MaxLoadGrant(tc.timeout); o.Wall <= beyond {
					t.Fatalf("answered after %s: not extended beyond the load grant's %s", o.Wall, beyond)
				}
			}
			// 3 s for the kill and the exit on a loaded host.
			if bound := time.Duration(BuildDeadlineFactor*float64(tc.timeout)) + 3*time.Second; o.Wall > bound {
				t.Fatalf("answered after %s, beyond %s", o.Wall, bound)
			}
		})
	}
}
