package device

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
)

// WriteTable prints the report as `kevolve-mcp doctor` shows it: what was
// found, and for everything missing, why.
func WriteTable(w io.Writer, r Report) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	p := func(format string, a ...any) { fmt.Fprintf(tw, format+"\n", a...) }

	p("ACCELERATORS")
	if len(r.GPUs) == 0 {
		p("  none\t")
	}
	for _, g := range r.GPUs {
		p("  [%d] %s\t%s %s, %d %s, %.1f GiB", g.Index, g.Name, g.Vendor, archCC(g), g.Units, unitName(g.Vendor), float64(g.MemBytes)/(1<<30))
		if g.UUID != "" {
			p("      uuid\t%s", g.UUID)
		}
		if g.MaxSMClockMHz > 0 {
			p("      clocks\tSM %d MHz max, memory %d MHz max, bus %d bit", g.MaxSMClockMHz, g.MaxMemClockMHz, g.MemBusWidthBits)
		}
		if g.PowerLimitW > 0 {
			p("      power limit\t%.0f W", g.PowerLimitW)
		}
		if g.Spec != nil {
			s := g.Spec
			p("      spec row\t%s (%s): bf16 %.0f TFLOP/s, fp32 %.1f TFLOP/s, %.2f TB/s, L2 %d MiB",
				s.Key, s.Name, s.PeakFLOPS["bf16"]/1e12, s.PeakFLOPS["fp32"]/1e12, s.MemBandwidth/1e12, s.L2Bytes>>20)
		} else {
			p("      spec row\t%s", g.SpecNote)
		}
	}
	p("  NVIDIA\t%s", srcText(r.NVIDIA))
	p("  AMD\t%s", srcText(r.AMD))
	p("")
	p("CPU")
	p("  model\t%s (%s)", r.CPU.Model, r.CPU.Arch)
	p("  cores\t%d cores, %d threads, %.1f GiB", r.CPU.Cores, r.CPU.Threads, float64(r.CPU.MemBytes)/(1<<30))
	p("  ISA\t%s", strings.Join(r.CPU.ISA, " "))
	p("")
	p("TOOLCHAINS")
	for _, t := range r.Tools {
		p("  %s\t%s", t.Name, toolText(t.Found, t.Version, t.Path, t.Missing))
	}
	if py := r.Python; py != nil {
		p("  python\t%s", toolText(py.Found, py.Version, py.Path, py.Missing))
		if py.Found {
			p("  torch\t%s (CUDA build %s), GPU usable: %v, devices: %d", py.Torch, orDash(py.TorchCUDA), py.CUDAUsable || py.ROCmUsable, py.DeviceCount)
			p("  triton\t%s", orMissing(py.Triton))
			p("  cupy\t%s", orMissing(py.Cupy))
		}
	}
	p("")
	p("TARGETS\t%s", strings.Join(r.Targets, ", "))
	for _, t := range r.TargetTable {
		pin := t.VisibleDevices
		if pin == "" {
			pin = "-"
		}
		p("  %s\ttorch %q, pinned by %s, languages %s, profilers %s", t.Name, t.TorchDevice, pin, strings.Join(t.Languages, "/"), strings.Join(t.Profilers, "/"))
	}
	return tw.Flush()
}

func archCC(g GPU) string {
	if g.ComputeCapability == "" {
		return g.Arch
	}
	if g.Vendor == "nvidia" {
		return fmt.Sprintf("%s (sm_%s)", g.Arch, strings.ReplaceAll(g.ComputeCapability, ".", ""))
	}
	return fmt.Sprintf("%s (%s)", g.Arch, g.ComputeCapability)
}

func unitName(vendor string) string {
	if vendor == "amd" {
		return "CUs"
	}
	return "SMs"
}

func srcText(s Source) string {
	if s.Available {
		return s.Detail
	}
	return "missing: " + s.Detail
}

func toolText(found bool, version, path, missing string) string {
	if !found {
		return "missing: " + missing
	}
	return fmt.Sprintf("%s  (%s)", version, path)
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func orMissing(s string) string {
	if s == "" {
		return "missing (not importable)"
	}
	return s
}
