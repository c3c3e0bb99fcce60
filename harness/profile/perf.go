package profile

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
)

// perfEvents are the counters asked of perf: hardware ones (in VMs and
// containers they often read <not supported>, which is reported, not
// fatal) and software ones every kernel counts.
var perfEvents = []string{"task-clock", "context-switches", "cpu-migrations", "page-faults",
	"cycles", "instructions", "cache-references", "cache-misses", "branches", "branch-misses"}

// countCPU reads perf counters over the candidate's timed loop into cp and
// reports whether perf ran; where no hardware counter could be read,
// cp.CountersUnavailable says why in words, never a made-up figure.
func countCPU(ctx context.Context, d *driverRun, opt Options, cp *CPUProfile) bool {
	perf := lookPath(opt.Perf, "perf")
	if perf == "" {
		cp.CountersUnavailable = "perf is not installed (package linux-perf or linux-tools): no hardware counters were read; " + pmuState()
		return false
	}
	if err := perfStat(ctx, perf, d, opt, cp); err != nil {
		cp.CountersUnavailable = "perf stat failed, no counters were read: " + err.Error()
		return false
	}
	cp.HardwareCounters = cp.Perf["cycles"] > 0 && cp.Perf["instructions"] > 0
	if !cp.HardwareCounters {
		cp.CountersUnavailable = fmt.Sprintf("perf counted only software events (task-clock, context switches); hardware events read <not supported>: %s. %s",
			strings.Join(cp.PerfMissing, ", "), pmuState())
	}
	return true
}

// perfStat runs the candidate's forward in a loop for a few seconds under
// `perf stat -x,`, counting only the loop: perf starts with its events off
// (-D -1) and the driver turns them on and off through perf's control
// FIFOs around the loop, so torch's import and the build are not counted.
func perfStat(ctx context.Context, perf string, d *driverRun, opt Options, cp *CPUProfile) error {
	// In the driver's own folder: the jailed driver writes only there.
	ctl, ack := filepath.Join(d.work, "perf-ctl.fifo"), filepath.Join(d.work, "perf-ack.fifo")
	for _, f := range []string{ctl, ack} {
		if err := syscall.Mkfifo(f, 0o600); err != nil {
			return fmt.Errorf("perf control fifo: %w", err)
		}
	}
	args := append([]string{"stat", "-x,", "-e", strings.Join(perfEvents, ","), "-D", "-1", "--control", "fifo:" + ctl + "," + ack, "--", opt.Python},
		d.args("loop", opt)...)
	args = append(args, "--seconds", "2", "--perf-ctl", ctl, "--perf-ack", ack)
	res, err := run(ctx, append(shapesEnv(opt), "CUDA_VISIBLE_DEVICES="), perf, args...)
	if err != nil {
		return fmt.Errorf("%w: %s", err, clip(res.stderr, 600))
	}
	var loop struct {
		Iters   int     `json:"iters"`
		Seconds float64 `json:"seconds"`
	}
	if err := driverJSON(res.stdout, &loop); err != nil {
		return fmt.Errorf("loop under perf: %w", err)
	}
	counters, missing := ParsePerfStat(res.stderr)
	if len(counters) == 0 {
		return fmt.Errorf("perf printed no counters: %s", clip(res.stderr, 400))
	}
	cp.Perf, cp.PerfMissing = counters, missing
	if loop.Iters == 0 {
		return fmt.Errorf("the loop under perf made no call in %.1f s", loop.Seconds)
	}
	if c, i := counters["cycles"], counters["instructions"]; c > 0 && i > 0 {
		cp.IPC = f64(i / c)
	}
	if r, m := counters["cache-references"], counters["cache-misses"]; r > 0 {
		cp.CacheMissPct = f64(100 * m / r)
	}
	return nil
}

// pmuState says whether this kernel exposes a CPU performance-monitoring
// unit to perf and, if so, what may keep perf from it.
func pmuState() string {
	ents, err := os.ReadDir("/sys/bus/event_source/devices")
	if err != nil {
		return "cannot read /sys/bus/event_source/devices: " + err.Error()
	}
	var names []string
	pmu := false
	for _, e := range ents {
		n := e.Name()
		names = append(names, n)
		// x86 names its core PMU cpu (cpu_core/cpu_atom on hybrids); ARM armv8_*.
		pmu = pmu || n == "cpu" || strings.HasPrefix(n, "cpu_") || strings.HasPrefix(n, "armv")
	}
	if !pmu {
		return fmt.Sprintf("this kernel exposes no CPU performance-monitoring unit (event sources: %s), as in a VM whose hypervisor does not pass the counters through; "+
			"only the host, or a VM with a virtual PMU, can count cycles and cache misses", strings.Join(names, ", "))
	}
	if b, err := os.ReadFile("/proc/sys/kernel/perf_event_paranoid"); err == nil {
		if lvl, err := strconv.Atoi(strings.TrimSpace(string(b))); err == nil && lvl > 2 && os.Geteuid() != 0 {
			return fmt.Sprintf("a CPU PMU is exposed but kernel.perf_event_paranoid=%d forbids unprivileged counting (2 or lower allows it, or CAP_PERFMON)", lvl)
		}
	}
	return "a CPU PMU is exposed, yet perf could not count these events here"
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
