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

// CPUProfile is the CPU target's profile: what one call of the forward
// costs (timed without the profiler, after warm-up), where its time goes
// (torch.profiler's ops, whose own records inflate short ops), how many
// cores it kept busy and, where the host exposes them, hardware counters.
type CPUProfile struct {
	Ops []OpTime `json:"ops"`
	// TotalUs is the profiled forward's summed self CPU time, profiler
	// overhead included: it ranks the ops; WallUsPerIter is the call's time.
	TotalUs float64 `json:"total_us"`
	// WallUsPerIter is the median wall time of one un-profiled call, after
	// warm-up; loading, building and warm-up are SetupS, not in it.
	WallUsPerIter float64 `json:"wall_us_per_iter"`
	// TimedUsPerIter is the same call's median as run_kernel times it (a
	// cache flush before each call, undisturbed calls on a busy host):
	// the figure to set beside an evaluation's; 0 where not measured.
	TimedUsPerIter float64 `json:"timed_us_per_iter,omitempty"`
	TimedIters     int     `json:"timed_iters,omitempty"`
	WallMinUs      float64 `json:"wall_min_us"`
	WallMeanUs     float64 `json:"wall_mean_us"` // far above the median: some calls stall (threads descheduled on a loaded host)
	CallsTimed     int     `json:"calls_timed"`
	SetupS         float64 `json:"setup_s"`
	// CoresBusy is the process's CPU time (all threads) over the timed
	// calls' wall time: 1 is one core's worth. OpenMP threads spin while
	// they wait, so it can overstate the work; a low figure is telling.
	CoresBusy float64 `json:"cores_busy"`
	Threads   int     `json:"threads"`                // torch's intra-op threads in the profiled process
	CPUs      int     `json:"cpus"`                   // the cores it may use
	HostLoad  float64 `json:"host_load_1m,omitempty"` // load average before the run: other work on the host
	// HardwareCounters says whether cycles and instructions were counted;
	// CountersUnavailable says why not, in words.
	HardwareCounters    bool               `json:"hardware_counters"`
	CountersUnavailable string             `json:"counters_unavailable,omitempty"`
	Perf                map[string]float64 `json:"perf,omitempty"`         // over the timed loop only
	PerfMissing         []string           `json:"perf_missing,omitempty"` // events perf could not count here
	IPC                 *float64           `json:"ipc,omitempty"`
	CacheMissPct        *float64           `json:"cache_miss_pct,omitempty"`
	// Roofline is the problem's speed of light on this CPU where it is
	// known (work declared or traced, ceilings calibrated), and PctOfSol
	// how close the median call comes to it.
	Roofline *Roofline `json:"roofline,omitempty"`
	PctOfSol *float64  `json:"pct_of_sol,omitempty"`
}

// Roofline is the speed-of-light bound of the profiled problem on this
// device, as the harness computes it for sol_analysis.
type Roofline struct {
	Bound        string  `json:"bound"` // memory | compute
	TSolUs       float64 `json:"t_sol_us"`
	TMemoryUs    float64 `json:"t_memory_us"`
	TComputeUs   float64 `json:"t_compute_us"`
	FLOPs        float64 `json:"flops"`
	Bytes        float64 `json:"bytes"`
	MemBandwidth float64 `json:"mem_bandwidth_bytes_per_s"`
	PeakFLOPS    float64 `json:"peak_flops"`
	Source       string  `json:"source"` // where the work and ceilings came from
}

func runCPU(ctx context.Context, ref, cand string, opt Options) (Report, error) {
	ctx, cancel := context.WithTimeout(ctx, opt.Timeout)
	defer cancel()
	t0 := time.Now()
	d, err := newDriverRun("kevolve-cpuprof-", ref, cand)
	if err != nil {
		return Report{}, err
	}
	defer d.close()
	res, runErr := run(ctx, append(shapesEnv(opt), "CUDA_VISIBLE_DEVICES="), opt.Python, d.args("cpu", opt)...)
	if errors.Is(runErr, context.DeadlineExceeded) {
		return Report{}, fmt.Errorf("cpu profile: %w", runErr)
	}
	var cp CPUProfile
	if err := driverJSON(res.stdout, &cp); err != nil {
		return Report{}, fmt.Errorf("cpu profile: %w (stderr: %s; exit: %v)", err, clip(res.stderr, 800), runErr)
	}
	cp.HostLoad = loadAverage()
	rep := Report{Mode: "kernel", Profiler: "torch.profiler", Available: true, CPU: &cp, Notes: jailNotes(opt, res.stdout)}
	if rf := opt.Roofline; rf != nil {
		cp.Roofline = rf
		if rf.TSolUs > 0 && cp.WallUsPerIter > 0 {
			cp.PctOfSol = f64(100 * rf.TSolUs / cp.WallUsPerIter)
		}
	}
	if countCPU(ctx, d, opt, &cp) {
		rep.Profiler = "torch.profiler+perf"
	}
	rep.Findings = diagnoseCPU(cp)
	rep.WallS = time.Since(t0).Seconds()
	return rep, nil
}

// loadAverage is the host's one-minute load average (0 where unknown).
func loadAverage() float64 {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return 0
	}
	f := strings.Fields(string(b))
	if len(f) == 0 {
		return 0
	}
	v, _ := strconv.ParseFloat(f[0], 64)
	return v
}
