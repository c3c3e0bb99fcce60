package profile

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// NVTXRange labels the candidate's profiled forward. ncu itself is scoped by
// the driver's cudaProfilerStart/Stop marker (--profile-from-start off),
// which needs no NVTX library in the candidate's process.
const NVTXRange = "kevolve_candidate"

// ncuArgs builds the profiling command. --clock-control none: never touch
// the card's clocks (other jobs share it, and locked base clocks would
// misstate what the kernel achieves in service).
func ncuArgs(report string, launchCount int, metrics []string, python string, driver []string) []string {
	what := []string{"--set", "full"}
	if len(metrics) > 0 {
		what = []string{"--metrics", strings.Join(metrics, ",")}
	}
	a := append([]string{"--clock-control", "none"}, what...)
	a = append(a, "--profile-from-start", "off",
		"--launch-count", strconv.Itoa(launchCount),
		"--target-processes", "all", "-f", "-o", report, python)
	return append(a, driver...)
}

func runNCU(ctx context.Context, ncu, ref, cand string, opt Options) (Report, error) {
	ctx, cancel := context.WithTimeout(ctx, opt.Timeout)
	defer cancel()
	t0 := time.Now()
	d, err := newDriverRun("kevolve-ncu-", ref, cand)
	if err != nil {
		return Report{}, err
	}
	defer d.close()
	// The report is ncu's front end's, outside the jail; the gate is the
	// jailed driver's to mark, so it lies in its folder.
	report := filepath.Join(d.dir, "report")
	dargs, gate := d.args("ncu", opt), filepath.Join(d.work, "gate")
	if opt.Hold != nil {
		if err := os.Mkdir(gate, 0o755); err != nil {
			return Report{}, fmt.Errorf("ncu: %w", err)
		}
		dargs = append(dargs, "--gate", gate)
	}
	args := ncuArgs(report, opt.LaunchCount, opt.Metrics, opt.Python, dargs)
	var res procResult
	var runErr error
	if opt.Hold != nil {
		res, runErr = runHolding(ctx, gate, opt.Hold, shapesEnv(opt), ncu, args...)
	} else {
		res, runErr = run(ctx, shapesEnv(opt), ncu, args...)
	}
	if errors.Is(runErr, context.DeadlineExceeded) {
		return Report{}, fmt.Errorf("ncu: %w", runErr)
	}
	out := res.stdout + "\n" + res.stderr
	if err := ncuFailure(out); err != nil {
		return Report{}, err
	}
	if derr := driverJSON(res.stdout, nil); derr != nil {
		return Report{}, fmt.Errorf("ncu: the candidate did not run: %w (ncu: %s)", derr, clip(res.stderr, 600))
	}
	if runErr != nil {
		return Report{}, fmt.Errorf("ncu failed: %w: %s", runErr, clip(out, 1200))
	}
	if !exists(report + ".ncu-rep") {
		return Report{}, fmt.Errorf("ncu wrote no report: no kernel ran between the driver's profiler start/stop marker (range %q) (does the candidate launch GPU kernels, or did it run on the CPU?): %s", NVTXRange, clip(out, 600))
	}
	imp, err := run(ctx, nil, ncu, "--import", report+".ncu-rep", "--csv", "--page", "raw")
	if err != nil {
		return Report{}, fmt.Errorf("ncu --import: %w: %s", err, clip(imp.stderr, 600))
	}
	if err := record(opt, "ncu_raw.csv", []byte(imp.stdout)); err != nil {
		return Report{}, err
	}
	kernels, err := ParseNCURaw(strings.NewReader(imp.stdout))
	if err != nil {
		return Report{}, err
	}
	rep := Report{Mode: "kernel", Profiler: "ncu", Available: true, Kernels: kernels, Findings: Diagnose(kernels),
		Notes: jailNotes(opt, res.stdout)}
	if len(kernels) >= opt.LaunchCount {
		rep.Notes = append(rep.Notes, fmt.Sprintf("stopped at --launch-count %d: the candidate may launch more kernels", opt.LaunchCount))
	}
	if len(kernels) == 0 {
		rep.Notes = append(rep.Notes, "ncu profiled no kernels inside the candidate's forward")
	}
	rep.WallS, rep.HeldS = time.Since(t0).Seconds(), res.held.Seconds()
	return rep, nil
}

// ncuFailure recognizes ncu's well-known failures and says what to do.
func ncuFailure(out string) error {
	switch {
	case strings.Contains(out, "ERR_NVGPUCTRPERM"):
		return fmt.Errorf("ncu: no permission to read GPU performance counters (ERR_NVGPUCTRPERM): run as root, or set the nvidia module option NVreg_RestrictProfilingToAdminUsers=0")
	case strings.Contains(out, "No kernels were profiled"):
		return fmt.Errorf("ncu: no kernels were profiled in the candidate's forward (range %q): the candidate launched no GPU kernel in its forward", NVTXRange)
	}
	return nil
}
