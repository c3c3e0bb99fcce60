package profile

import (
	"context"
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"
)

// RocprofCounters are the rocprofv3 counters asked for: derived metrics of
// AMD's counter definitions (busy percentages, hit rates, occupancy).
var RocprofCounters = []string{"GPUBusy", "VALUBusy", "MemUnitBusy", "L2CacheHit", "VALUUtilization", "LDSBankConflict", "OccupancyPercent"}

// ParseRocprofCounters parses rocprofv3's counter_collection.csv: one row per
// (kernel dispatch, counter) with the dispatch's identity columns
// (Dispatch_Id, Kernel_Name, Grid_Size, Workgroup_Size, LDS_Block_Size,
// Scratch_Size, VGPR_Count, Accum_VGPR_Count, SGPR_Count, Start_Timestamp,
// End_Timestamp) and Counter_Name/Counter_Value. Rows are grouped by
// dispatch and mapped onto the same Kernel fields as Nsight Compute's.
func ParseRocprofCounters(r io.Reader) ([]Kernel, error) {
	cr := csv.NewReader(r)
	cr.FieldsPerRecord = -1
	header, err := cr.Read()
	if err != nil {
		return nil, fmt.Errorf("rocprofv3 csv: header: %w", err)
	}
	col := map[string]int{}
	for i, h := range header {
		col[strings.TrimSpace(h)] = i
	}
	for _, need := range []string{"Dispatch_Id", "Kernel_Name", "Counter_Name", "Counter_Value"} {
		if _, ok := col[need]; !ok {
			return nil, fmt.Errorf("rocprofv3 csv: no %s column (is this counter_collection.csv?)", need)
		}
	}
	type disp struct {
		id       int
		fields   map[string]string
		counters map[string]float64
	}
	byID := map[string]*disp{}
	for {
		rec, err := cr.Read()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("rocprofv3 csv: %w", err)
		}
		get := func(name string) string {
			if i, ok := col[name]; ok && i < len(rec) {
				return strings.TrimSpace(rec[i])
			}
			return ""
		}
		id := get("Dispatch_Id")
		d := byID[id]
		if d == nil {
			n, _ := strconv.Atoi(id)
			d = &disp{id: n, fields: map[string]string{}, counters: map[string]float64{}}
			for name := range col {
				d.fields[name] = get(name)
			}
			byID[id] = d
		}
		if v, err := strconv.ParseFloat(get("Counter_Value"), 64); err == nil {
			d.counters[get("Counter_Name")] += v
		}
	}
	ds := make([]*disp, 0, len(byID))
	for _, d := range byID {
		ds = append(ds, d)
	}
	sort.Slice(ds, func(i, j int) bool { return ds[i].id < ds[j].id })
	var out []Kernel
	for _, d := range ds {
		out = append(out, kernelFromRocprof(d.fields, d.counters))
	}
	return out, nil
}

func fnum(s string) *float64 {
	v, err := strconv.ParseFloat(strings.TrimSpace(s), 64)
	if err != nil {
		return nil
	}
	return f64(v)
}

func counter(c map[string]float64, names ...string) *float64 {
	for _, n := range names {
		if v, ok := c[n]; ok {
			return f64(v)
		}
	}
	return nil
}

func kernelFromRocprof(f map[string]string, c map[string]float64) Kernel {
	k := Kernel{Name: f["Kernel_Name"], VendorWaveSize: 64}
	if s, e := fnum(f["Start_Timestamp"]), fnum(f["End_Timestamp"]); s != nil && e != nil && *e > *s {
		k.DurationNs = f64(*e - *s) // timestamps are in ns
	}
	k.BlockSize = fnum(f["Workgroup_Size"])
	if g := fnum(f["Grid_Size"]); g != nil && k.BlockSize != nil && *k.BlockSize > 0 {
		k.GridSize = f64(*g / *k.BlockSize) // Grid_Size counts work-items
	}
	if v := fnum(f["VGPR_Count"]); v != nil {
		k.RegistersPerThread = f64(*v + deref(fnum(f["Accum_VGPR_Count"])))
	}
	k.SharedMemPerBlock = fnum(f["LDS_Block_Size"])
	if s := fnum(f["Scratch_Size"]); s != nil {
		k.SpillBytes = s // scratch per work-item: non-zero means spills or stack
	}
	k.SMThroughputPct = counter(c, "VALUBusy")
	k.MemThroughputPct = counter(c, "MemUnitBusy")
	k.L2HitPct = counter(c, "L2CacheHit")
	k.AchievedOccupancyPct = counter(c, "OccupancyPercent")
	k.TensorPipePct = counter(c, "MfmaUtil", "MFMA_UTIL")
	if u := counter(c, "VALUUtilization"); u != nil {
		k.ThreadsPerInstr = f64(*u / 100 * 64)
	}
	if b := counter(c, "LDSBankConflict"); b != nil {
		// LDSBankConflict is % of LDS cycles stalled on conflicts: expressed
		// per 100 so the bank-conflict rule (conflicts/wavefronts) reads it.
		k.SharedBankConflicts, k.SharedWavefronts = b, f64(100)
	}
	return k
}

func runRocprof(ctx context.Context, roc, ref, cand string, opt Options) (Report, error) {
	ctx, cancel := context.WithTimeout(ctx, opt.Timeout)
	defer cancel()
	t0 := time.Now()
	d, err := newDriverRun("kevolve-rocprof-", ref, cand)
	if err != nil {
		return Report{}, err
	}
	defer d.close()
	// rocprofv3's library writes its files from inside the profiled
	// process: into the jailed driver's own folder.
	dir := filepath.Join(d.work, "rocprof")
	if err := os.Mkdir(dir, 0o755); err != nil {
		return Report{}, fmt.Errorf("rocprofv3: %w", err)
	}
	// No NVTX filter here: the driver skips warm-up (--warmup 0) so the only
	// dispatches are the candidate's forward (inputs are made on the CPU and
	// copied, which is not a kernel dispatch).
	args := []string{"--pmc"}
	args = append(args, RocprofCounters...)
	args = append(args, "--kernel-trace", "--output-format", "csv", "-d", dir, "-o", "run", "--", opt.Python)
	args = append(args, d.args("ncu", opt)...)
	args = append(args, "--warmup", "0")
	res, runErr := run(ctx, shapesEnv(opt), roc, args...)
	if errors.Is(runErr, context.DeadlineExceeded) {
		return Report{}, fmt.Errorf("rocprofv3: %w", runErr)
	}
	if derr := driverJSON(res.stdout, nil); derr != nil {
		return Report{}, fmt.Errorf("rocprofv3: the candidate did not run: %w (%s)", derr, clip(res.stderr, 600))
	}
	if runErr != nil {
		return Report{}, fmt.Errorf("rocprofv3 failed: %w: %s", runErr, clip(res.stderr, 1200))
	}
	var found string
	filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() && strings.HasSuffix(p, "counter_collection.csv") {
			found = p
		}
		return nil
	})
	if found == "" {
		return Report{}, fmt.Errorf("rocprofv3 wrote no counter_collection.csv under %s: %s", dir, clip(res.stderr, 600))
	}
	data, err := os.ReadFile(found)
	if err != nil {
		return Report{}, fmt.Errorf("rocprofv3: %w", err)
	}
	if err := record(opt, "rocprof_counter_collection.csv", data); err != nil {
		return Report{}, err
	}
	kernels, err := ParseRocprofCounters(strings.NewReader(string(data)))
	if err != nil {
		return Report{}, err
	}
	return Report{Mode: "kernel", Profiler: "rocprofv3", Available: true, Kernels: kernels, Findings: Diagnose(kernels),
		WallS: time.Since(t0).Seconds(), Notes: append(jailNotes(opt, res.stdout),
			"rocprofv3 runner not yet validated on AMD hardware; counter parser tested on a format sample")}, nil
}
