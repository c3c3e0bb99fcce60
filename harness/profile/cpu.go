package profile

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"
)

// OpTime is one operator's time in a torch.profiler breakdown.
type OpTime struct {
	Op             string   `json:"op"`
	Calls          int      `json:"calls"`
	TimeUs         float64  `json:"time_us"` // per forward
	Share          float64  `json:"share"`   // of the summed self time
	AmdahlHeadroom *float64 `json:"amdahl_headroom,omitempty"`
	// Kernels are the device kernels this operator launched (model mode on
	// a GPU), nested so that each kernel's time is counted once, under its
	// operator: Share ranks operators, and their kernels' shares add up to it.
	Kernels []KernelTime `json:"kernels,omitempty"`
}

// KernelTime is one device kernel launched by an operator.
type KernelTime struct {
	Name   string  `json:"name"`
	Calls  int     `json:"calls"`
	TimeUs float64 `json:"time_us"` // per forward
	Share  float64 `json:"share"`   // of the model's total device time
}

// CPUProfile is the CPU target's profile: where a forward's time goes and,
// where perf can read them, hardware counters.
type CPUProfile struct {
	Ops           []OpTime           `json:"ops"`
	TotalUs       float64            `json:"total_us"`
	WallUsPerIter float64            `json:"wall_us_per_iter"`
	Perf          map[string]float64 `json:"perf,omitempty"`
	PerfMissing   []string           `json:"perf_missing,omitempty"` // events perf could not count here
	IPC           *float64           `json:"ipc,omitempty"`
	CacheMissPct  *float64           `json:"cache_miss_pct,omitempty"`
}

func runCPU(ctx context.Context, ref, cand string, opt Options) (Report, error) {
	ctx, cancel := context.WithTimeout(ctx, opt.Timeout)
	defer cancel()
	t0 := time.Now()
	dir, err := os.MkdirTemp("", "kevolve-cpuprof-")
	if err != nil {
		return Report{}, fmt.Errorf("cpu profile: temp dir: %w", err)
	}
	defer os.RemoveAll(dir)
	driver, err := writeDriver(dir)
	if err != nil {
		return Report{}, err
	}
	res, runErr := run(ctx, append(shapesEnv(opt), "CUDA_VISIBLE_DEVICES="), opt.Python, driverArgs(driver, "cpu", opt, ref, cand)...)
	if errors.Is(runErr, context.DeadlineExceeded) {
		return Report{}, fmt.Errorf("cpu profile: %w", runErr)
	}
	var cp CPUProfile
	if err := driverJSON(res.stdout, &cp); err != nil {
		return Report{}, fmt.Errorf("cpu profile: %w (stderr: %s; exit: %v)", err, clip(res.stderr, 800), runErr)
	}
	rep := Report{Mode: "kernel", Profiler: "torch.profiler", Available: true, CPU: &cp}
	if perf := lookPath(opt.Perf, "perf"); perf != "" {
		if err := perfStat(ctx, perf, driver, ref, cand, opt, &cp); err != nil {
			rep.Notes = append(rep.Notes, "perf stat failed: "+err.Error())
		} else {
			rep.Profiler = "torch.profiler+perf"
		}
	} else {
		rep.Notes = append(rep.Notes, "perf not found: no hardware counters (install linux-perf for IPC and cache misses)")
	}
	rep.Findings = diagnoseCPU(cp)
	rep.WallS = time.Since(t0).Seconds()
	return rep, nil
}

// perfEvents are the counters asked of perf; in VMs and containers many read
// <not supported>, which is reported, not fatal.
var perfEvents = []string{"task-clock", "cycles", "instructions", "cache-references", "cache-misses", "branches", "branch-misses"}

// perfStat runs the candidate's forward in a loop for a few seconds under
// `perf stat -x,` so steady state outweighs the interpreter's start-up.
func perfStat(ctx context.Context, perf, driver, ref, cand string, opt Options, cp *CPUProfile) error {
	args := append([]string{"stat", "-x,", "-e", strings.Join(perfEvents, ","), "--", opt.Python}, driverArgs(driver, "loop", opt, ref, cand)...)
	args = append(args, "--seconds", "2")
	res, err := run(ctx, append(shapesEnv(opt), "CUDA_VISIBLE_DEVICES="), perf, args...)
	if err != nil {
		return fmt.Errorf("%w: %s", err, clip(res.stderr, 600))
	}
	counters, missing := ParsePerfStat(res.stderr)
	if len(counters) == 0 {
		return fmt.Errorf("perf printed no counters: %s", clip(res.stderr, 400))
	}
	cp.Perf, cp.PerfMissing = counters, missing
	if c, i := counters["cycles"], counters["instructions"]; c > 0 && i > 0 {
		cp.IPC = f64(i / c)
	}
	if r, m := counters["cache-references"], counters["cache-misses"]; r > 0 {
		cp.CacheMissPct = f64(100 * m / r)
	}
	return nil
}

// ParsePerfStat reads `perf stat -x,` lines (value,unit,event,run-time,pct,...)
// into event -> value; events shown as <not supported>/<not counted> are
// returned as missing.
func ParsePerfStat(out string) (map[string]float64, []string) {
	counters := map[string]float64{}
	var missing []string
	for _, line := range strings.Split(out, "\n") {
		f := strings.Split(strings.TrimSpace(line), ",")
		if len(f) < 3 || f[2] == "" {
			continue
		}
		ev := f[2]
		if i := strings.IndexByte(ev, ':'); i > 0 {
			ev = ev[:i] // cycles:u -> cycles
		}
		if strings.HasPrefix(f[0], "<") {
			missing = append(missing, ev)
			continue
		}
		if v, err := strconv.ParseFloat(f[0], 64); err == nil {
			counters[ev] = v
		}
	}
	return counters, missing
}

// diagnoseCPU reads the counters the way one reads a roofline: low IPC with
// many cache misses is memory-bound, high IPC is compute-bound; a forward
// made of many tiny ops is launch(dispatch)-bound.
func diagnoseCPU(cp CPUProfile) []Finding {
	var out []Finding
	if cp.IPC != nil {
		ipc := *cp.IPC
		miss := deref(cp.CacheMissPct)
		switch {
		case ipc < 1 && miss > 10:
			add(&out, MemoryBound, "(cpu)", 1-ipc, fmt.Sprintf("IPC %.2f with %.1f%% cache misses", ipc, miss))
		case ipc >= 2:
			add(&out, ComputeBound, "(cpu)", ipc/4, fmt.Sprintf("IPC %.2f", ipc))
		case ipc < 1:
			add(&out, LatencyBound, "(cpu)", 1-ipc, fmt.Sprintf("IPC %.2f, cache misses %.1f%%", ipc, miss))
		}
	}
	if n := len(cp.Ops); n > 0 && cp.WallUsPerIter > 0 && cp.WallUsPerIter < 50 && n >= 3 {
		add(&out, LaunchBound, "(cpu)", 0.5, fmt.Sprintf("%d ops in a %.1f µs forward: per-op dispatch overhead dominates", n, cp.WallUsPerIter))
	}
	return out
}
