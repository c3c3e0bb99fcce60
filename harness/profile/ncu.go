package profile

import (
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"math"
	"sort"
	"strconv"
	"strings"
)

// ParseNCURaw parses `ncu --import R --csv --page raw`: a header row of
// identification columns ("ID", "Kernel Name", ...) and metric names, a row
// of units, then one row per profiled kernel launch. Lines before the header
// (==PROF== chatter) are skipped.
func ParseNCURaw(r io.Reader) ([]Kernel, error) {
	cr := csv.NewReader(r)
	cr.FieldsPerRecord = -1
	cr.LazyQuotes = true
	var header, units []string
	var kernels []Kernel
	for {
		rec, err := cr.Read()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("ncu csv: %w", err)
		}
		if header == nil {
			if len(rec) > 2 && strings.TrimSpace(rec[0]) == "ID" {
				header = rec
			}
			continue
		}
		if units == nil && (len(rec) == 0 || strings.TrimSpace(rec[0]) == "") {
			units = rec
			continue
		}
		if len(rec) < len(header)/2 {
			continue
		}
		m := map[string]string{}
		u := map[string]string{}
		for i, h := range header {
			if i < len(rec) {
				m[h] = rec[i]
			}
			if i < len(units) {
				u[h] = units[i]
			}
		}
		kernels = append(kernels, kernelFromNCU(m, u))
	}
	if header == nil {
		return nil, fmt.Errorf("ncu csv: no header row starting with \"ID\" (was it made with --csv --page raw?)")
	}
	return kernels, nil
}

// num reads a metric as a float in base units; thousands separators and
// unit prefixes (usecond, Kbyte, ...) are normalized. nil when absent/n/a.
func num(m, u map[string]string, name string) *float64 {
	s, ok := m[name]
	if !ok {
		return nil
	}
	s = strings.TrimSpace(strings.ReplaceAll(s, ",", ""))
	if s == "" || s == "n/a" || s == "N/A" {
		return nil
	}
	v, err := strconv.ParseFloat(s, 64)
	if err != nil || math.IsNaN(v) {
		return nil
	}
	return f64(v * unitScale(u[name]))
}

// unitScale converts ncu's unit names to base units: nanoseconds for time
// (ncu prints "us", "ms" or spelled-out "usecond"), bytes for sizes
// ("Kbyte", "Kbyte/block", ...), cycles and instructions for counts it
// scales ("Mcycle", "Kinst").
func unitScale(unit string) float64 {
	u := strings.TrimSpace(unit)
	switch u {
	case "us", "usecond":
		return 1e3
	case "ms", "msecond":
		return 1e6
	case "s", "second":
		return 1e9
	}
	switch u {
	case "Kcycle", "Kinst":
		return 1e3
	case "Mcycle", "Minst":
		return 1e6
	case "Gcycle", "Ginst":
		return 1e9
	}
	switch {
	case strings.HasPrefix(u, "Kbyte"):
		return 1e3
	case strings.HasPrefix(u, "Mbyte"):
		return 1e6
	case strings.HasPrefix(u, "Gbyte"):
		return 1e9
	}
	return 1
}

func first(m, u map[string]string, names ...string) *float64 {
	for _, n := range names {
		if v := num(m, u, n); v != nil {
			return v
		}
	}
	return nil
}

func ratio(a, b *float64) *float64 {
	if a == nil || b == nil || *b == 0 {
		return nil
	}
	return f64(*a / *b)
}

func kernelFromNCU(m, u map[string]string) Kernel {
	k := Kernel{Name: m["Kernel Name"], VendorWaveSize: 32}
	k.DurationNs = first(m, u, "gpu__time_duration.sum")
	k.BlockSize = first(m, u, "launch__block_size")
	k.GridSize = first(m, u, "launch__grid_size")
	k.SMThroughputPct = first(m, u, "sm__throughput.avg.pct_of_peak_sustained_elapsed")
	k.MemThroughputPct = first(m, u, "gpu__compute_memory_throughput.avg.pct_of_peak_sustained_elapsed")
	k.DRAMThroughputPct = first(m, u, "dram__throughput.avg.pct_of_peak_sustained_elapsed", "gpu__dram_throughput.avg.pct_of_peak_sustained_elapsed")
	k.L1HitPct = first(m, u, "l1tex__t_sector_hit_rate.pct")
	k.L2HitPct = first(m, u, "lts__t_sector_hit_rate.pct")
	k.AchievedOccupancyPct = first(m, u, "sm__warps_active.avg.pct_of_peak_sustained_active")
	k.TheoreticalOccupancyPct = first(m, u, "sm__maximum_warps_per_active_cycle_pct")
	k.RegistersPerThread = first(m, u, "launch__registers_per_thread")
	k.WavesPerSM = first(m, u, "launch__waves_per_multiprocessor")
	k.SMCount = first(m, u, "device__attribute_multiprocessor_count", "launch__sm_count")
	if s, d := first(m, u, "launch__shared_mem_per_block_static"), first(m, u, "launch__shared_mem_per_block_dynamic"); s != nil || d != nil {
		k.SharedMemPerBlock = f64(deref(s) + deref(d))
	}

	// Occupancy limiter: the smallest blocks-per-SM limit; nil limits skipped.
	k.OccupancyLimits = map[string]float64{}
	for _, l := range []string{"registers", "shared_mem", "warps", "blocks", "barriers"} {
		if v := num(m, u, "launch__occupancy_limit_"+l); v != nil {
			k.OccupancyLimits[l] = *v
		}
	}
	k.OccupancyLimiter = limiter(k.OccupancyLimits)
	if len(k.OccupancyLimits) == 0 {
		k.OccupancyLimits = nil
	}

	// Local memory traffic = spills (and local arrays): bytes if reported,
	// else 32-byte sectors.
	ld := first(m, u, "l1tex__t_bytes_pipe_lsu_mem_local_op_ld.sum")
	st := first(m, u, "l1tex__t_bytes_pipe_lsu_mem_local_op_st.sum")
	if ld == nil && st == nil {
		if sl, ss := first(m, u, "l1tex__t_sectors_pipe_lsu_mem_local_op_ld.sum"), first(m, u, "l1tex__t_sectors_pipe_lsu_mem_local_op_st.sum"); sl != nil || ss != nil {
			ld, st = f64(32*deref(sl)), f64(32*deref(ss))
		}
	}
	if ld != nil || st != nil {
		k.SpillBytes = f64(deref(ld) + deref(st))
	}

	k.Stalls = stalls(m, u)
	k.DRAMBytes = sumOf(first(m, u, "dram__bytes_read.sum"), first(m, u, "dram__bytes_write.sum"))
	k.FLOPs = flops(m, u)

	// Tensor pipes: the busiest of whatever tensor-pipe utilization metrics
	// this architecture reports (hmma on Ampere/Hopper, gmma/wgmma on Hopper).
	var names []string
	for name := range m {
		if strings.HasPrefix(name, "sm__pipe_tensor") && strings.Contains(name, "pct_of_peak_sustained_active") {
			names = append(names, name)
		}
	}
	sort.Strings(names)
	for _, name := range names {
		if v := num(m, u, name); v != nil && (k.TensorPipePct == nil || *v > *k.TensorPipePct) {
			k.TensorPipePct = v
		}
	}

	k.GlobalLoadSectorsPerReq = ratio(first(m, u, "l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum"), first(m, u, "l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum"))
	k.GlobalStoreSectorsPerReq = ratio(first(m, u, "l1tex__t_sectors_pipe_lsu_mem_global_op_st.sum"), first(m, u, "l1tex__t_requests_pipe_lsu_mem_global_op_st.sum"))
	k.GlobalLoadEfficiencyPct = sectorUse(m, u, "ld")
	k.GlobalStoreEfficiencyPct = sectorUse(m, u, "st")
	k.ThreadsPerInstr = first(m, u, "smsp__thread_inst_executed_per_inst_executed.ratio")
	k.SharedBankConflicts = sumOf(first(m, u, "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum"), first(m, u, "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_st.sum"))
	k.SharedWavefronts = sumOf(first(m, u, "l1tex__data_pipe_lsu_wavefronts_mem_shared_op_ld.sum"), first(m, u, "l1tex__data_pipe_lsu_wavefronts_mem_shared_op_st.sum"))
	return k
}

// OwnWorkMetrics are the metrics flops and the DRAM traffic read: a profile
// collecting only these (Options.Metrics) takes a fraction of --set full.
var OwnWorkMetrics = func() []string {
	ms := []string{"dram__bytes_read.sum", "dram__bytes_write.sum", "smsp__cycles_elapsed.avg", "gpu__time_duration.sum"}
	for _, p := range []string{"h", "f", "d"} {
		for _, op := range []string{"add", "mul", "fma"} {
			ms = append(ms, "smsp__sass_thread_inst_executed_op_"+p+op+"_pred_on.sum.per_cycle_elapsed")
		}
	}
	return ms
}()

// flops is a launch's floating-point operations on the CUDA cores, as
// Nsight Compute's roofline counts them: per-cycle rates of the add, mul
// and fma instructions executed (fma twice) times the elapsed cycles.
func flops(m, u map[string]string) *float64 {
	cycles := first(m, u, "smsp__cycles_elapsed.avg")
	if cycles == nil {
		return nil
	}
	total, seen := 0.0, false
	for _, p := range []string{"h", "f", "d"} {
		for op, w := range map[string]float64{"add": 1, "mul": 1, "fma": 2} {
			if v := num(m, u, "smsp__sass_thread_inst_executed_op_"+p+op+"_pred_on.sum.per_cycle_elapsed"); v != nil {
				total += w * *v
				seen = true
			}
		}
	}
	if !seen {
		return nil
	}
	return f64(total * *cycles)
}

// sectorUse is the share of each 32-byte global sector a warp's accesses
// actually use: ncu reports bytes used per sector (".ratio", of 32) or, in
// some versions, the percentage directly.
func sectorUse(m, u map[string]string, op string) *float64 {
	base := "smsp__sass_average_data_bytes_per_sector_mem_global_op_" + op
	if v := num(m, u, base+".ratio"); v != nil {
		return f64(*v / 32 * 100)
	}
	return num(m, u, base+".pct")
}

func deref(p *float64) float64 {
	if p == nil {
		return 0
	}
	return *p
}

func sumOf(a, b *float64) *float64 {
	if a == nil && b == nil {
		return nil
	}
	return f64(deref(a) + deref(b))
}

// limiter names the tightest occupancy limit; ties list all, sorted.
func limiter(l map[string]float64) string {
	best := math.Inf(1)
	for _, v := range l {
		best = math.Min(best, v)
	}
	var names []string
	for n, v := range l {
		if v == best {
			names = append(names, n)
		}
	}
	sort.Strings(names)
	return strings.Join(names, "+")
}

// stalls ranks warp stall reasons by their share of PC samples
// (smsp__pcsamp_warps_issue_stalled_*), falling back to the per-issue
// stall averages of the WarpStateStats section.
func stalls(m, u map[string]string) []Stall {
	collect := func(prefix, suffix string) map[string]float64 {
		out := map[string]float64{}
		for name := range m {
			if !strings.HasPrefix(name, prefix) || !strings.HasSuffix(name, suffix) {
				continue
			}
			reason := strings.TrimSuffix(strings.TrimPrefix(name, prefix), suffix)
			if reason == "" || strings.HasSuffix(reason, "_not_issued") {
				continue
			}
			if v := num(m, u, name); v != nil && *v > 0 {
				out[reason] = *v
			}
		}
		return out
	}
	raw := collect("smsp__pcsamp_warps_issue_stalled_", "")
	if len(raw) == 0 {
		raw = collect("smsp__average_warps_issue_stalled_", "_per_issue_active.ratio")
	}
	// "selected" issued and "not_selected" was eligible but lost arbitration:
	// neither is a stall.
	delete(raw, "selected")
	delete(raw, "not_selected")
	total := 0.0
	for _, v := range raw {
		total += v
	}
	if total == 0 {
		return nil
	}
	var out []Stall
	for r, v := range raw {
		out = append(out, Stall{Reason: r, Pct: 100 * v / total})
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Pct != out[j].Pct {
			return out[i].Pct > out[j].Pct
		}
		return out[i].Reason < out[j].Reason
	})
	if len(out) > 5 {
		out = out[:5]
	}
	return out
}
