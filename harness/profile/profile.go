package profile

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/kevolve/kevolve-mcp/harness/toolchain"
)

// Options control a profiling run. Zero values pick sensible defaults.
type Options struct {
	Python string // toolchain.Python() when empty
	// PyDir is the harness's py dir, put on sys.path (from kevolve
	// import ...). Where it is set, the profiled process runs in the jail
	// of sandbox/profiled.py, the candidate's code never with the
	// server's identity; where not (a bare profile of files the caller
	// wrote), it runs as the caller.
	PyDir string
	// CacheDir is the harness's kernel cache (KEVOLVE_CACHE_DIR), read-only
	// to the profiled process: the load_inline extensions its build step
	// made are loaded from there instead of built under the profiler.
	CacheDir    string
	Backend     string // auto | ncu | rocprof | cpu
	NCU         string // ncu binary; PATH, then /usr/local/cuda/bin/ncu
	Rocprof     string // rocprofv3 binary; PATH
	Perf        string // perf binary; PATH
	LaunchCount int    // kernels profiled at most (default 20)
	// Metrics, when set, are the only Nsight Compute metrics collected
	// (--metrics) instead of the full set: the speed-of-light check reads
	// OwnWorkMetrics.
	Metrics   []string
	Timeout   time.Duration // whole run (default 120 s)
	Shapes    string        // exported as KEVOLVE_SHAPES
	RecordDir string        // when set, raw profiler output is copied here (recording test data)
	// Roofline, when set, is the problem's speed of light on the CPU being
	// profiled: the CPU diagnosis weighs the call's time against it.
	Roofline *Roofline
	// Env is set in the profiled process: a device lease's variables that
	// pin it to its device (CUDA_VISIBLE_DEVICES, HIP_VISIBLE_DEVICES).
	Env map[string]string
	// Hold, when set, takes the device for the candidate's warm-up and
	// profiled call only, not for its process's start, imports and builds
	// (hold.go; Nsight Compute runs only).
	Hold HoldFunc
	// jailByCgroup holds the profiled process's processes by a cgroup
	// rather than a PID namespace in every mode, not only under the
	// profilers that need it (tests run that jail on the CPU).
	jailByCgroup bool
}

func (o Options) withDefaults() Options {
	if o.Python == "" {
		o.Python = toolchain.Python()
	}
	if o.Backend == "" {
		o.Backend = "auto"
	}
	if o.LaunchCount <= 0 {
		o.LaunchCount = 20
	}
	if o.Timeout <= 0 {
		o.Timeout = 120 * time.Second
	}
	return o
}

// Report is the result of profiling one candidate (mode kernel) or one model
// (mode model). Available=false with Missing set means no profiler could run
// here; that is a result, not an error.
type Report struct {
	Mode      string        `json:"mode"`     // kernel | model
	Profiler  string        `json:"profiler"` // ncu | rocprofv3 | torch.profiler | torch.profiler+perf | none
	Available bool          `json:"available"`
	Missing   string        `json:"missing,omitempty"`
	Kernels   []Kernel      `json:"kernels,omitempty"`
	Findings  []Finding     `json:"findings,omitempty"`
	CPU       *CPUProfile   `json:"cpu,omitempty"`
	Model     *ModelProfile `json:"model,omitempty"`
	WallS     float64       `json:"wall_s"`
	// HeldS is how long the run held the device for the candidate's
	// kernels (Options.Hold; the own-work check reports it); 0 where it
	// held none itself.
	HeldS float64  `json:"-"`
	Notes []string `json:"notes,omitempty"`
}

func lookPath(explicit string, names ...string) string {
	if explicit != "" {
		if p, err := toolchain.Which(explicit); err == nil {
			return p
		}
		return ""
	}
	for _, n := range names {
		if p := toolchain.LookPath(n); p != "" {
			return p
		}
	}
	return ""
}

func exists(p string) bool { _, err := os.Stat(p); return err == nil }

// Profile profiles a candidate against its reference with the best profiler
// this machine has: Nsight Compute on NVIDIA, rocprofv3 on AMD, else
// torch.profiler (and perf) on the CPU.
func Profile(ctx context.Context, ref, cand string, opt Options) (Report, error) {
	opt = opt.withDefaults()
	for _, p := range []string{ref, cand} {
		if !exists(p) {
			return Report{}, fmt.Errorf("profile: %s does not exist", p)
		}
	}
	if r, ok := noPython(opt, "kernel"); !ok {
		return r, nil
	}
	backend := opt.Backend
	ncu := lookPath(opt.NCU, "ncu", "/usr/local/cuda/bin/ncu")
	roc := lookPath(opt.Rocprof, "rocprofv3")
	if backend == "auto" {
		switch {
		case ncu != "" && exists("/dev/nvidiactl"):
			backend = "ncu"
		case roc != "" && exists("/dev/kfd"):
			backend = "rocprof"
		default:
			backend = "cpu"
		}
	}
	switch backend {
	case "ncu":
		if ncu == "" {
			return Report{Mode: "kernel", Profiler: "none", Missing: "Nsight Compute (ncu) not found on PATH or in /usr/local/cuda/bin: install the CUDA toolkit's nsight-compute or pass its path"}, nil
		}
		return runNCU(ctx, ncu, ref, cand, opt)
	case "rocprof":
		if roc == "" {
			return Report{Mode: "kernel", Profiler: "none", Missing: "rocprofv3 not found on PATH: install ROCm's rocprofiler-sdk"}, nil
		}
		return runRocprof(ctx, roc, ref, cand, opt)
	case "cpu":
		return runCPU(ctx, ref, cand, opt)
	}
	return Report{}, fmt.Errorf("profile: unknown backend %q (auto, ncu, rocprof, cpu)", backend)
}

// noPython reports a missing interpreter as a result, not a crash.
func noPython(opt Options, mode string) (Report, bool) {
	if _, err := toolchain.Which(opt.Python); err != nil {
		return Report{Mode: mode, Profiler: "none", Missing: fmt.Sprintf("Python %q not found (%v): set KEVOLVE_PYTHON to an interpreter with torch", opt.Python, err)}, false
	}
	return Report{}, true
}

func record(opt Options, name string, data []byte) error {
	if opt.RecordDir == "" {
		return nil
	}
	if err := os.MkdirAll(opt.RecordDir, 0o755); err != nil {
		return fmt.Errorf("record dir: %w", err)
	}
	if err := os.WriteFile(filepath.Join(opt.RecordDir, name), data, 0o644); err != nil {
		return fmt.Errorf("record %s: %w", name, err)
	}
	return nil
}
