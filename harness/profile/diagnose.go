package profile

import (
	"fmt"
	"sort"
	"strings"
)

// Bottleneck words: exactly the knowledge base's vocabulary (kb_format.md).
const (
	MemoryBound         = "memory-bound"
	ComputeBound        = "compute-bound"
	LatencyBound        = "latency-bound"
	OccupancyLimited    = "occupancy-limited"
	RegisterPressure    = "register-pressure"
	SharedMemoryLimited = "shared-memory-limited"
	LaunchBound         = "launch-bound"
	Uncoalesced         = "uncoalesced"
	BankConflicts       = "bank-conflicts"
	TailEffect          = "tail-effect"
	Divergence          = "divergence"
	LowTensorCoreUse    = "low-tensor-core-use"
)

// Topics maps each bottleneck to knowledge-base topic words that address it;
// retrieval queries with the bottleneck word and these topics.
var Topics = map[string][]string{
	MemoryBound:         {"memory", "bandwidth", "vectorization", "fusion"},
	ComputeBound:        {"compute", "tensor-cores", "instruction-mix"},
	LatencyBound:        {"latency", "occupancy", "ilp", "pipelining"},
	OccupancyLimited:    {"occupancy", "registers", "shared-memory", "block-size"},
	RegisterPressure:    {"registers", "spills", "occupancy", "launch-bounds"},
	SharedMemoryLimited: {"shared-memory", "occupancy", "tiling"},
	LaunchBound:         {"launch-overhead", "fusion", "cuda-graphs", "persistent-kernels"},
	Uncoalesced:         {"coalescing", "memory", "vectorization", "shared-memory"},
	BankConflicts:       {"shared-memory", "bank-conflicts", "padding", "swizzle"},
	TailEffect:          {"waves", "grid-size", "persistent-kernels"},
	Divergence:          {"divergence", "branching", "warp-uniformity"},
	LowTensorCoreUse:    {"tensor-cores", "mma", "wgmma", "gemm"},
}

// Finding is one diagnosed bottleneck with the figures that show it.
type Finding struct {
	Bottleneck string   `json:"bottleneck"`
	Kernel     string   `json:"kernel"`
	Severity   float64  `json:"severity"` // 0..1, for ordering: how much it likely costs
	Evidence   []string `json:"evidence"`
	Topics     []string `json:"topics"`
}

// Thresholds, after Nsight Compute's own guidance: a unit above 60% of peak
// is the limiter; below that on both compute and memory the kernel is
// latency-bound.
const (
	busyPct          = 60.0
	lowOccupancyPct  = 50.0
	poorSectorUse    = 60.0 // % of each fetched 32-byte sector actually used
	sectorsPerReqBad = 16.0 // beyond a float4-per-thread warp access
	shortKernelNs    = 5000.0
)

// Diagnose turns per-kernel metrics into findings, most severe first. Kernels
// are weighted by their share of total duration so a long kernel's problems
// lead; launch-bound is judged on the whole set.
func Diagnose(kernels []Kernel) []Finding {
	var out []Finding
	total := 0.0
	for _, k := range kernels {
		total += deref(k.DurationNs)
	}
	for _, k := range kernels {
		w := 1.0
		if total > 0 && k.DurationNs != nil {
			w = *k.DurationNs / total
		}
		for _, f := range diagnoseKernel(k) {
			f.Severity *= w
			out = append(out, f)
		}
	}
	if f, ok := launchBound(kernels, total); ok {
		out = append(out, f)
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].Severity > out[j].Severity })
	return out
}

func add(out *[]Finding, b, kernel string, sev float64, ev ...string) {
	*out = append(*out, Finding{Bottleneck: b, Kernel: kernel, Severity: clamp01(sev), Evidence: ev, Topics: Topics[b]})
}

func clamp01(v float64) float64 {
	if v < 0 {
		return 0
	}
	if v > 1 {
		return 1
	}
	return v
}

func pct(p *float64) string { return fmt.Sprintf("%.1f%%", deref(p)) }

func diagnoseKernel(k Kernel) []Finding {
	var out []Finding
	name := k.Name
	sm, mem := deref(k.SMThroughputPct), deref(k.MemThroughputPct)
	if k.DRAMThroughputPct != nil && *k.DRAMThroughputPct > mem {
		mem = *k.DRAMThroughputPct
	}
	haveTP := k.SMThroughputPct != nil || k.MemThroughputPct != nil || k.DRAMThroughputPct != nil

	// Coalescing: how much of each fetched sector is used, else sectors per request.
	if e := k.GlobalLoadEfficiencyPct; e != nil && *e < poorSectorUse {
		add(&out, Uncoalesced, name, 1-*e/100, fmt.Sprintf("global loads use %.1f%% of each 32-byte sector fetched (%.1f sectors/request)", *e, deref(k.GlobalLoadSectorsPerReq)))
	} else if s := k.GlobalLoadSectorsPerReq; e == nil && s != nil && *s > sectorsPerReqBad {
		add(&out, Uncoalesced, name, (*s-4)/32, fmt.Sprintf("global loads touch %.1f sectors per warp request (4 for 32 coalesced 4-byte loads, 32 when every thread hits its own sector)", *s))
	}
	if e := k.GlobalStoreEfficiencyPct; e != nil && *e < poorSectorUse {
		add(&out, Uncoalesced, name, 1-*e/100, fmt.Sprintf("global stores use %.1f%% of each 32-byte sector written (%.1f sectors/request)", *e, deref(k.GlobalStoreSectorsPerReq)))
	} else if s := k.GlobalStoreSectorsPerReq; e == nil && s != nil && *s > sectorsPerReqBad {
		add(&out, Uncoalesced, name, (*s-4)/32, fmt.Sprintf("global stores touch %.1f sectors per warp request", *s))
	}

	switch {
	case !haveTP:
	case mem >= busyPct && mem >= sm:
		add(&out, MemoryBound, name, mem/100, fmt.Sprintf("memory throughput %.1f%% of peak (DRAM %s) vs SM %.1f%%", mem, pct(k.DRAMThroughputPct), sm),
			fmt.Sprintf("L1 hit %s, L2 hit %s", pct(k.L1HitPct), pct(k.L2HitPct)))
	case sm >= busyPct:
		add(&out, ComputeBound, name, sm/100, fmt.Sprintf("SM throughput %.1f%% of peak vs memory %.1f%%", sm, mem))
		if t := k.TensorPipePct; t != nil && *t < 10 {
			// Low severity: the profile cannot tell a GEMM from fp32 elementwise math.
			add(&out, LowTensorCoreUse, name, 0.1, fmt.Sprintf("compute-bound with tensor pipes %.1f%% busy: if this is a GEMM/conv in fp16/bf16/fp8, it is not on tensor cores", *t))
		}
	case deref(k.DurationNs) >= shortKernelNs || k.DurationNs == nil:
		ev := []string{fmt.Sprintf("neither compute (SM %.1f%%) nor memory (%.1f%%) is above %.0f%% of peak: warps wait", sm, mem, busyPct)}
		if len(k.Stalls) > 0 {
			ev = append(ev, "top stalls: "+stallList(k.Stalls, 3))
		}
		add(&out, LatencyBound, name, 1-max(sm, mem)/100, ev...)
	}

	// Uncoalesced access is the cause of the memory pressure it creates:
	// rank it above the memory-bound finding it explains.
	if u, m := find(out, Uncoalesced), find(out, MemoryBound); u != nil && m != nil && u.Severity <= m.Severity {
		u.Severity = clamp01(m.Severity + 0.01)
	}

	// Occupancy and what limits it.
	theo, ach := k.TheoreticalOccupancyPct, k.AchievedOccupancyPct
	low := (theo != nil && *theo < lowOccupancyPct) || (ach != nil && *ach < lowOccupancyPct*0.8)
	if low {
		ev := []string{fmt.Sprintf("achieved occupancy %s of theoretical %s", pct(ach), pct(theo))}
		if k.OccupancyLimiter != "" {
			ev = append(ev, fmt.Sprintf("limited by %s (blocks/SM limits: %s)", k.OccupancyLimiter, limitsList(k.OccupancyLimits)))
		}
		occ := deref(theo)
		if ach != nil {
			occ = min(occ, *ach)
			if theo == nil {
				occ = *ach
			}
		}
		add(&out, OccupancyLimited, name, 1-occ/100, ev...)
		if strings.Contains(k.OccupancyLimiter, "shared_mem") && theo != nil && *theo < lowOccupancyPct {
			add(&out, SharedMemoryLimited, name, 1-*theo/100, fmt.Sprintf("shared memory %.0f bytes per block caps theoretical occupancy at %.1f%%", deref(k.SharedMemPerBlock), *theo))
		}
	}
	regLimited := strings.Contains(k.OccupancyLimiter, "registers") && theo != nil && *theo < lowOccupancyPct
	spills := deref(k.SpillBytes) > 0
	if regLimited || spills {
		var ev []string
		if k.RegistersPerThread != nil {
			ev = append(ev, fmt.Sprintf("%.0f registers per thread", *k.RegistersPerThread))
		}
		if regLimited {
			ev = append(ev, fmt.Sprintf("registers cap theoretical occupancy at %.1f%%", *theo))
		}
		if spills {
			ev = append(ev, fmt.Sprintf("%.0f bytes of local-memory (spill) traffic", *k.SpillBytes))
		}
		sev := 0.5
		if regLimited {
			sev = 1 - *theo/100
		}
		add(&out, RegisterPressure, name, sev, ev...)
	}

	// Too few blocks, or a last partial wave.
	if wv := k.WavesPerSM; wv != nil && *wv > 0 {
		if *wv < 1 {
			add(&out, TailEffect, name, 1-*wv, fmt.Sprintf("grid of %.0f blocks is %.2f waves: part of the GPU idles", deref(k.GridSize), *wv))
		} else if frac := *wv - float64(int(*wv)); *wv < 4 && frac > 0 && frac < 0.5 {
			add(&out, TailEffect, name, (1-frac)/(*wv+1), fmt.Sprintf("%.2f waves: the last wave runs %.0f%% full", *wv, frac*100))
		}
	}
	if t := k.ThreadsPerInstr; t != nil && k.VendorWaveSize > 0 && *t < 0.75*float64(k.VendorWaveSize) {
		add(&out, Divergence, name, 1-*t/float64(k.VendorWaveSize), fmt.Sprintf("%.1f of %d threads active per instruction", *t, k.VendorWaveSize))
	}
	if c, w := k.SharedBankConflicts, k.SharedWavefronts; c != nil && w != nil && *w > 0 && *c / *w > 0.2 {
		add(&out, BankConflicts, name, *c / *w, fmt.Sprintf("%.0f shared-memory bank conflicts over %.0f wavefronts", *c, *w))
	}
	return out
}

func find(fs []Finding, b string) *Finding {
	for i := range fs {
		if fs[i].Bottleneck == b {
			return &fs[i]
		}
	}
	return nil
}

func launchBound(ks []Kernel, totalNs float64) (Finding, bool) {
	if len(ks) == 0 || totalNs == 0 {
		return Finding{}, false
	}
	mean := totalNs / float64(len(ks))
	// A launch costs ~2-5 µs of host and driver time; kernels shorter than
	// that, several per forward, leave the GPU idle between them.
	if mean >= shortKernelNs || (len(ks) < 3 && totalNs >= shortKernelNs) {
		return Finding{}, false
	}
	return Finding{Bottleneck: LaunchBound, Kernel: "(all)", Severity: clamp01(1 - mean/shortKernelNs),
		Evidence: []string{fmt.Sprintf("%d kernel launch(es), mean %.2f µs, total %.2f µs: launch overhead is comparable to the work", len(ks), mean/1e3, totalNs/1e3)},
		Topics:   Topics[LaunchBound]}, true
}

func stallList(s []Stall, n int) string {
	var parts []string
	for i, x := range s {
		if i == n {
			break
		}
		parts = append(parts, fmt.Sprintf("%s %.0f%%", x.Reason, x.Pct))
	}
	return strings.Join(parts, ", ")
}

func limitsList(l map[string]float64) string {
	keys := make([]string, 0, len(l))
	for k := range l {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var parts []string
	for _, k := range keys {
		parts = append(parts, fmt.Sprintf("%s %.0f", k, l[k]))
	}
	return strings.Join(parts, ", ")
}
