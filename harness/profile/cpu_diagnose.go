package profile

import (
	"fmt"
	"sort"
)

// A CPU profile is read the way one reads a roofline, with the call's own
// timing as the measure: near the speed of light the kernel is at its
// roof (memory- or compute-bound); a call of a few tens of µs pays fixed
// costs (Python, dispatch, allocation, OpenMP's fork and join) comparable
// to its work (launch-bound, the CPU's launch overhead); cores left idle
// are the CPU's partial wave (tail-effect); what is neither is waiting on
// latency. Hardware counters, where the host exposes them, add IPC and
// cache misses. There is always a diagnosis, and its evidence says which
// figures it rests on.
const (
	atRoofPct      = 60.0 // % of SOL from which the roof is the limit (Nsight's busy threshold)
	shortCallUs    = 50.0 // a call this short is dominated by fixed per-call costs
	idleCoresFrac  = 0.6  // under this fraction of usable cores busy: parallelism is short
	stallMeanRatio = 3.0  // mean call over median beyond this: some calls stall
)

// CPU findings search the knowledge base's CPU documents.
var cpuTopics = map[string][]string{
	MemoryBound:  {"memory", "bandwidth", "vectorization", "cache-blocking", "fusion"},
	ComputeBound: {"simd", "vectorization", "fma", "compute"},
	LaunchBound:  {"launch-overhead", "fusion", "openmp", "threads"},
	TailEffect:   {"openmp", "threads", "parallelism"},
	LatencyBound: {"latency", "ilp", "cache-blocking", "simd"},
}

func addCPU(out *[]Finding, b string, sev float64, ev ...string) {
	*out = append(*out, Finding{Bottleneck: b, Kernel: "(cpu)", Severity: clamp01(sev), Evidence: ev, Topics: cpuTopics[b]})
}

// diagnoseCPU turns a CPU profile into findings, most severe first.
func diagnoseCPU(cp CPUProfile) []Finding {
	var out []Finding
	roofFinding(&out, cp)
	callOverhead(&out, cp)
	parallelism(&out, cp)
	counterFindings(&out, cp)
	if len(out) == 0 {
		byElimination(&out, cp)
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].Severity > out[j].Severity })
	return out
}

// roofFinding: a call near the speed of light is at its roof.
func roofFinding(out *[]Finding, cp CPUProfile) {
	rf, pct := cp.Roofline, deref(cp.PctOfSol)
	if rf == nil || pct < atRoofPct {
		return
	}
	ev := []string{fmt.Sprintf("median call %.1f µs against a speed of light of %.1f µs: %.3g%% of SOL (%s-bound: %.4g B at %.3g GB/s, %.4g FLOP at %.3g GFLOP/s; %s)",
		cp.WallUsPerIter, rf.TSolUs, pct, rf.Bound, rf.Bytes, rf.MemBandwidth/1e9, rf.FLOPs, rf.PeakFLOPS/1e9, rf.Source)}
	if pct > 100 {
		ev = append(ev, "faster than the calibrated roof: its working set is served from the caches, whose bandwidth the copy benchmark does not measure")
	}
	b := MemoryBound
	if rf.Bound == "compute" {
		b = ComputeBound
	}
	addCPU(out, b, pct/100, ev...)
}

// callOverhead: a short call pays fixed costs comparable to its work.
func callOverhead(out *[]Finding, cp CPUProfile) {
	t := cp.WallUsPerIter
	if t <= 0 || t >= shortCallUs {
		return
	}
	ev := []string{fmt.Sprintf("a %.1f µs call (median of %d, min %.1f µs): Python, dispatch, allocation and the OpenMP fork/join cost a few µs each per call, comparable to the work", t, cp.CallsTimed, cp.WallMinUs)}
	if n := len(cp.Ops); n > 0 {
		ev = append(ev, fmt.Sprintf("%d op kind(s) per forward (top: %s, %.0f%% of profiled self time)", n, cp.Ops[0].Op, 100*cp.Ops[0].Share))
	}
	sev := 0.5
	if rf := cp.Roofline; rf != nil && rf.TSolUs > 0 {
		// What the work cannot explain is what the call costs beyond it.
		sev = 1 - rf.TSolUs/t
		ev = append(ev, fmt.Sprintf("the work itself needs %.1f µs at SOL: %.1f µs of the call is beyond it", rf.TSolUs, max(0, t-rf.TSolUs)))
	}
	addCPU(out, LaunchBound, sev, ev...)
}

// parallelism: cores left idle over the timed calls.
func parallelism(out *[]Finding, cp CPUProfile) {
	usable := min(cp.Threads, cp.CPUs)
	if cp.CPUs > 1 && cp.Threads == 1 {
		usable = cp.CPUs // torch was held to one thread, the kernel's own threads may use more
	}
	stalls := cp.WallMeanUs > stallMeanRatio*cp.WallUsPerIter && cp.WallUsPerIter > 0
	if usable <= 1 || cp.CoresBusy <= 0 || cp.CoresBusy >= idleCoresFrac*float64(usable) || (cp.WallUsPerIter < shortCallUs && !stalls) {
		return
	}
	ev := []string{fmt.Sprintf("%.2f of %d cores busy over the timed calls (the process's CPU time over their wall time): part of the CPU idles", cp.CoresBusy, usable)}
	if stalls {
		ev = append(ev, fmt.Sprintf("some calls stall: mean %.1f µs against a median of %.1f µs (a thread descheduled at a barrier holds the others)", cp.WallMeanUs, cp.WallUsPerIter))
	}
	if cp.HostLoad > 0 {
		ev = append(ev, fmt.Sprintf("host load average %.1f on %d CPUs before the run: other processes may hold the idle cores", cp.HostLoad, cp.CPUs))
	}
	addCPU(out, TailEffect, 1-cp.CoresBusy/float64(usable), ev...)
}

// counterFindings read IPC and cache misses where the host counts them:
// low IPC with many misses is memory-bound, high IPC compute-bound.
func counterFindings(out *[]Finding, cp CPUProfile) {
	if cp.IPC == nil {
		return
	}
	ipc, miss := *cp.IPC, deref(cp.CacheMissPct)
	switch {
	case ipc < 1 && miss > 10:
		addCPU(out, MemoryBound, 1-ipc, fmt.Sprintf("IPC %.2f with %.1f%% cache misses", ipc, miss))
	case ipc >= 2:
		addCPU(out, ComputeBound, ipc/4, fmt.Sprintf("IPC %.2f", ipc))
	case ipc < 1:
		addCPU(out, LatencyBound, 1-ipc, fmt.Sprintf("IPC %.2f, cache misses %.1f%%", ipc, miss))
	}
}

// byElimination: a call that is neither near its roof, nor short, nor
// short of cores waits on latency (dependent reductions, transcendental
// math, cache misses, serial code); the evidence says what it rests on.
func byElimination(out *[]Finding, cp CPUProfile) {
	ev := []string{fmt.Sprintf("median call %.1f µs, %.2f cores busy", cp.WallUsPerIter, cp.CoresBusy)}
	sev := 0.5
	if rf := cp.Roofline; rf != nil && rf.TSolUs > 0 {
		pct := deref(cp.PctOfSol)
		sev = 1 - pct/100
		ev = append(ev, fmt.Sprintf("%.3g%% of its %s-bound speed of light (%.1f µs): neither the memory nor the compute roof limits it", pct, rf.Bound, rf.TSolUs))
	} else {
		ev = append(ev, "no speed-of-light figures for this problem here, so the roof cannot be ruled in or out: by elimination only")
	}
	if !cp.HardwareCounters {
		ev = append(ev, "no hardware counters to confirm it (counters_unavailable says why)")
	}
	addCPU(out, LatencyBound, sev, ev...)
}
