package profile

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
)

// WriteTable prints a report as `kevolve-mcp profile` shows it: the
// diagnosis first (what to fix), then the figures per kernel.
func WriteTable(w io.Writer, r Report) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	p := func(format string, a ...any) { fmt.Fprintf(tw, format+"\n", a...) }
	p("profiler\t%s (mode %s, %.1f s)", r.Profiler, r.Mode, r.WallS)
	if !r.Available {
		p("missing\t%s", r.Missing)
		return tw.Flush()
	}
	if len(r.Findings) > 0 {
		p("DIAGNOSIS\t")
	}
	for i, f := range r.Findings {
		p("  %d. %s\t%s (severity %.2f)", i+1, f.Bottleneck, shortName(f.Kernel), f.Severity)
		for _, e := range f.Evidence {
			p("     \t- %s", e)
		}
		if len(f.Topics) > 0 {
			p("     \tsearch_knowledge: %s", strings.Join(f.Topics, ", "))
		}
	}
	for _, k := range r.Kernels {
		p("KERNEL\t%s", shortName(k.Name))
		p("  duration\t%s", fmtOrDash(k.DurationNs, "%.2f us", 1e-3))
		p("  throughput\tSM %s, memory %s, DRAM %s", pctOrDash(k.SMThroughputPct), pctOrDash(k.MemThroughputPct), pctOrDash(k.DRAMThroughputPct))
		p("  caches\tL1 hit %s, L2 hit %s", pctOrDash(k.L1HitPct), pctOrDash(k.L2HitPct))
		p("  occupancy\tachieved %s of theoretical %s (limited by %s)", pctOrDash(k.AchievedOccupancyPct), pctOrDash(k.TheoreticalOccupancyPct), orDash(k.OccupancyLimiter))
		p("  resources\t%s registers/thread, %s shared/block, spills %s", fmtOrDash(k.RegistersPerThread, "%.0f", 1), fmtOrDash(k.SharedMemPerBlock, "%.0f B", 1), fmtOrDash(k.SpillBytes, "%.0f B", 1))
		p("  global access\tload %s sectors/request (%s efficient), store %s sectors/request", fmtOrDash(k.GlobalLoadSectorsPerReq, "%.1f", 1), pctOrDash(k.GlobalLoadEfficiencyPct), fmtOrDash(k.GlobalStoreSectorsPerReq, "%.1f", 1))
		if k.TensorPipePct != nil {
			p("  tensor pipe\t%s", pctOrDash(k.TensorPipePct))
		}
		if len(k.Stalls) > 0 {
			var s []string
			for _, st := range k.Stalls {
				s = append(s, fmt.Sprintf("%s %.0f%%", st.Reason, st.Pct))
			}
			p("  top stalls\t%s", strings.Join(s, ", "))
		}
	}
	writeOps := func(title string, ops []OpTime) {
		p("%s\t", title)
		for i, op := range ops {
			if i == 12 {
				p("  ...\t%d more", len(ops)-i)
				break
			}
			h := "-"
			if op.AmdahlHeadroom != nil {
				h = fmt.Sprintf("%.2fx", *op.AmdahlHeadroom)
			}
			p("  %5.1f%%  %s\t%.1f us/forward, %d calls, Amdahl headroom %s", op.Share*100, op.Op, op.TimeUs, op.Calls, h)
			for j, k := range op.Kernels {
				if j == 4 {
					p("           ...\t%d more kernels", len(op.Kernels)-j)
					break
				}
				p("           %5.1f%%  %s\t%.1f us/forward, %d launches", k.Share*100, shortName(k.Name), k.TimeUs, k.Calls)
			}
		}
	}
	if r.Model != nil {
		writeOps(fmt.Sprintf("OPERATORS (%s, %s)", r.Model.Device, r.Model.TimeBasis), r.Model.Ops)
	}
	if c := r.CPU; c != nil {
		p("CALL	%.1f us median (min %.1f, mean %.1f) over %d un-profiled calls; set-up %.1f s apart", c.WallUsPerIter, c.WallMinUs, c.WallMeanUs, c.CallsTimed, c.SetupS)
		if c.TimedUsPerIter > 0 {
			p("TIMED	%.1f us median over %d calls as run_kernel times them (a cache flush before each)", c.TimedUsPerIter, c.TimedIters)
		}
		p("  cores	%.2f of %d busy (%d torch threads)", c.CoresBusy, c.CPUs, c.Threads)
		if rf := c.Roofline; rf != nil {
			p("  roofline	%s-bound, SOL %.1f us: the median call is %.3g%% of it (%s)", rf.Bound, rf.TSolUs, deref(c.PctOfSol), rf.Source)
		}
		if c.IPC != nil {
			p("  counters	IPC %.2f, cache misses %s", *c.IPC, pctOrDash(c.CacheMissPct))
		} else if c.CountersUnavailable != "" {
			p("  counters	none: %s", c.CountersUnavailable)
		}
		writeOps("CPU TIME (profiled self time, profiler overhead included)", c.Ops)
	}
	for _, n := range r.Notes {
		p("note\t%s", n)
	}
	return tw.Flush()
}

// shortName trims a mangled or templated kernel name to what a person reads.
func shortName(s string) string {
	if i := strings.IndexByte(s, '('); i > 0 {
		s = s[:i]
	}
	if len(s) > 80 {
		s = s[:77] + "..."
	}
	return s
}

func pctOrDash(v *float64) string {
	if v == nil {
		return "-"
	}
	return fmt.Sprintf("%.1f%%", *v)
}

func fmtOrDash(v *float64, format string, scale float64) string {
	if v == nil {
		return "-"
	}
	return fmt.Sprintf(format, *v*scale)
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
