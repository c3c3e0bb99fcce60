// Package device discovers the hardware kevolve-mcp can run kernels on:
// NVIDIA GPUs through NVML, AMD GPUs through amd-smi or rocm-smi, the CPU, and
// the toolchains that go with them. doctor prints it; device_info returns it.
package device

import (
	"context"
	"sync"

	"github.com/kevolve/kevolve-mcp/harness/spec"
	"github.com/kevolve/kevolve-mcp/harness/target"
	"github.com/kevolve/kevolve-mcp/harness/toolchain"
)

// GPU is one accelerator as discovered.
type GPU struct {
	Index             int     `json:"index"`
	Vendor            string  `json:"vendor"`
	Name              string  `json:"name"`
	UUID              string  `json:"uuid,omitempty"`
	Arch              string  `json:"arch,omitempty"`
	ComputeCapability string  `json:"compute_capability,omitempty"`
	Units             int     `json:"units,omitempty"` // SMs or CUs
	MemBytes          int64   `json:"mem_bytes,omitempty"`
	MaxSMClockMHz     int     `json:"max_sm_clock_mhz,omitempty"`
	MaxMemClockMHz    int     `json:"max_mem_clock_mhz,omitempty"`
	MemBusWidthBits   int     `json:"mem_bus_width_bits,omitempty"`
	PowerLimitW       float64 `json:"power_limit_w,omitempty"`
	// SpecKey names the matched row of the hardware spec table; empty when no
	// row matches, in which case SpecNote says so.
	SpecKey  string    `json:"spec_key,omitempty"`
	SpecNote string    `json:"spec_note,omitempty"`
	Spec     *spec.Row `json:"spec,omitempty"`
}

// Source says whether one discovery path worked and, if not, why.
type Source struct {
	Available bool   `json:"available"`
	Detail    string `json:"detail"`
}

// Report is everything discovery found.
type Report struct {
	GPUs    []GPU                `json:"gpus"`
	NVIDIA  Source               `json:"nvidia"`
	AMD     Source               `json:"amd"`
	CPU     CPU                  `json:"cpu"`
	Driver  string               `json:"driver,omitempty"`
	Tools   []toolchain.Tool     `json:"toolchains"`
	Python  *toolchain.PythonEnv `json:"python,omitempty"`
	Targets []string             `json:"targets"` // what run_kernel's target=auto can choose from
	// TargetTable describes each of Targets: torch device type, the
	// visible-devices variable a leased job is pinned with, kernel
	// languages, profilers and arch naming.
	TargetTable []target.Target `json:"target_table"`
}

// Options tune discovery.
type Options struct {
	// NVMLLibrary overrides the NVML shared library path (tests use it to
	// make NVML absent on purpose).
	NVMLLibrary string
	// Python is the interpreter to probe; empty means toolchain.FindPython.
	Python string
	// SkipPython skips the torch probe, which costs seconds.
	SkipPython bool
}

// Discover runs every discovery path. It never fails: a missing driver,
// library or tool is reported in the Report, with the reason.
func Discover(ctx context.Context, opt Options) Report {
	var r Report
	var wg sync.WaitGroup
	wg.Add(1)
	go func() { // the torch probe is the slow part: overlap it
		defer wg.Done()
		if opt.SkipPython {
			return
		}
		py := toolchain.ProbePython(ctx, opt.Python)
		r.Python = &py
	}()
	nv, driver, nvSrc := discoverNVIDIA(opt.NVMLLibrary)
	amd, amdSrc := discoverAMD(ctx)
	r.GPUs = append(nv, amd...)
	r.NVIDIA, r.AMD, r.Driver = nvSrc, amdSrc, driver
	r.CPU = discoverCPU()
	r.Tools = toolchain.Tools(ctx)
	wg.Wait()
	for i := range r.GPUs {
		g := &r.GPUs[i]
		if g.Units == 0 && r.Python != nil && r.Python.SMCount > 0 && g.Index == 0 {
			g.Units = r.Python.SMCount
		}
		matchSpec(g)
	}
	r.Targets = targets(r)
	for _, n := range r.Targets {
		r.TargetTable = append(r.TargetTable, target.MustGet(target.Name(n)))
	}
	return r
}

func matchSpec(g *GPU) {
	row, ok := spec.Lookup(g.Name, g.MemBytes)
	if !ok {
		g.SpecNote = "no row in the spec table for " + g.Name + ": SOL analysis needs `kevolve-mcp calibrate` (measured ceilings)"
		return
	}
	g.SpecKey = row.Key
	g.Spec = &row
	if g.Arch == "" {
		g.Arch = row.Arch
	}
}

func targets(r Report) []string {
	var t []string
	for _, g := range r.GPUs {
		if g.Vendor == "nvidia" {
			t = append(t, string(target.NVIDIA))
			break
		}
	}
	for _, g := range r.GPUs {
		if g.Vendor == "amd" {
			t = append(t, string(target.AMD))
			break
		}
	}
	return append(t, string(target.CPU))
}

// ArchForCC maps an NVIDIA compute capability to its architecture name.
func ArchForCC(major, minor int) string {
	switch {
	case major == 7 && minor == 0:
		return "volta"
	case major == 7:
		return "turing"
	case major == 8 && minor == 9:
		return "ada"
	case major == 8:
		return "ampere"
	case major == 9:
		return "hopper"
	case major >= 10:
		return "blackwell"
	}
	return ""
}

// GPUs runs the GPU discovery paths alone (NVML, then amd-smi or
// rocm-smi), each GPU matched to its spec row: what the lease pool and the
// ceilings need, without the torch probe or the toolchain search that
// Discover adds for doctor.
func GPUs(ctx context.Context, opt Options) (gpus []GPU, nvidia, amd Source) {
	nv, _, nvSrc := discoverNVIDIA(opt.NVMLLibrary)
	am, amdSrc := discoverAMD(ctx)
	gpus = append(nv, am...)
	for i := range gpus {
		matchSpec(&gpus[i])
	}
	return gpus, nvSrc, amdSrc
}

// DeviceNames names the devices a target runs on here: the GPUs of its
// vendor, or the CPU's model for the cpu target.
func (r Report) DeviceNames(target string) []string {
	if target == "cpu" {
		return []string{r.CPU.Model}
	}
	var names []string
	for _, g := range r.GPUs {
		if g.Vendor == target {
			names = append(names, g.Name)
		}
	}
	return names
}
