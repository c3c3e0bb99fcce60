package profile

import (
	"context"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/kevolve/kevolve-mcp/harness/toolchain/toolchaintest"
)

func python(t *testing.T) string { return toolchaintest.Python(t) }

// harnessPyDir is the harness's py dir (Options.PyDir): the kevolve
// loaders and the timer resolve there, and a profile given it is jailed.
func harnessPyDir(t *testing.T) string {
	t.Helper()
	d, err := filepath.Abs(filepath.Join("..", "worker", "py"))
	if err != nil {
		t.Fatal(err)
	}
	return d
}

func near(p *float64, want, tol float64) bool { return p != nil && math.Abs(*p-want) <= tol }

func has(fs []Finding, b string) *Finding {
	for i := range fs {
		if fs[i].Bottleneck == b {
			return &fs[i]
		}
	}
	return nil
}

// TestParseNCURecorded parses Nsight Compute 2025.3.1 output recorded on the
// H100 box by testdata/record.sh (raw page, --set full) and checks figures
// read off the same files by hand.
func TestParseNCURecorded(t *testing.T) {
	cases := []struct {
		file                     string
		name                     string
		durNs, sm, mem, dram, l2 float64
		regs, theo, ach, ldEff   float64
		limiter                  string
		topStall                 string
		ldSectorsPerReq          float64
		want, wantNot            []string
	}{
		{"uncoalesced_raw.csv", "transpose_naive", 139008, 19.56198, 93.705315, 26.137278, 87.541476,
			22, 100, 82.366972, 12.5, "warps", "long_scoreboard", 32,
			[]string{Uncoalesced, MemoryBound}, []string{OccupancyLimited, RegisterPressure, LatencyBound}},
		{"coalesced_raw.csv", "copy_coalesced", 190368, 9.443244, 81.444450, 81.444450, 51.339857,
			32, 100, 95.696823, 100, "registers+warps", "long_scoreboard", 4,
			[]string{MemoryBound}, []string{Uncoalesced, OccupancyLimited, RegisterPressure, LatencyBound}},
		{"regheavy_raw.csv", "reg_heavy", 404128, 75.030802, 0, 1.371910, 51.173552,
			168, 12.5, 12.399457, 100, "registers", "long_scoreboard", 4,
			[]string{OccupancyLimited, RegisterPressure, ComputeBound}, []string{Uncoalesced, MemoryBound}},
	}
	for _, c := range cases {
		t.Run(c.file, func(t *testing.T) {
			f, err := os.Open(filepath.Join("testdata", "ncu", c.file))
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			ks, err := ParseNCURaw(f)
			if err != nil {
				t.Fatal(err)
			}
			if len(ks) != 1 {
				t.Fatalf("kernels = %d, want 1", len(ks))
			}
			k := ks[0]
			if k.Name != c.name {
				t.Errorf("name = %q", k.Name)
			}
			checks := []struct {
				what string
				got  *float64
				want float64
			}{
				{"duration ns (from us)", k.DurationNs, c.durNs},
				{"sm %", k.SMThroughputPct, c.sm},
				{"dram %", k.DRAMThroughputPct, c.dram},
				{"l2 hit", k.L2HitPct, c.l2},
				{"regs", k.RegistersPerThread, c.regs},
				{"theoretical occ", k.TheoreticalOccupancyPct, c.theo},
				{"achieved occ", k.AchievedOccupancyPct, c.ach},
				{"global load sector use", k.GlobalLoadEfficiencyPct, c.ldEff},
				{"sectors/request", k.GlobalLoadSectorsPerReq, c.ldSectorsPerReq},
				{"sm count", k.SMCount, 132},
				{"spills", k.SpillBytes, 0},
			}
			for _, ch := range checks {
				if !near(ch.got, ch.want, 1e-3) {
					t.Errorf("%s = %v, want %v", ch.what, fmtp(ch.got), ch.want)
				}
			}
			if c.mem > 0 && !near(k.MemThroughputPct, c.mem, 1e-3) {
				t.Errorf("mem %% = %v, want %v", fmtp(k.MemThroughputPct), c.mem)
			}
			if k.OccupancyLimiter != c.limiter {
				t.Errorf("limiter = %q, want %q (%v)", k.OccupancyLimiter, c.limiter, k.OccupancyLimits)
			}
			if len(k.Stalls) == 0 || k.Stalls[0].Reason != c.topStall {
				t.Errorf("top stall = %+v, want %s", k.Stalls, c.topStall)
			}
			for _, s := range k.Stalls {
				if s.Reason == "selected" || s.Reason == "not_selected" {
					t.Errorf("%s counted as a stall", s.Reason)
				}
			}
			fs := Diagnose(ks)
			if fs[0].Bottleneck != c.want[0] {
				t.Errorf("first finding %s, want %s: %+v", fs[0].Bottleneck, c.want[0], fs)
			}
			for _, w := range c.want {
				f := has(fs, w)
				if f == nil {
					t.Errorf("diagnosis lacks %s: %+v", w, fs)
					continue
				}
				if len(f.Evidence) == 0 || len(f.Topics) == 0 {
					t.Errorf("%s without evidence or topics: %+v", w, f)
				}
			}
			for _, w := range c.wantNot {
				if has(fs, w) != nil {
					t.Errorf("diagnosis wrongly has %s: %+v", w, fs)
				}
			}
		})
	}
}

func fmtp(p *float64) any {
	if p == nil {
		return "nil"
	}
	return *p
}

func TestParseNCUMalformed(t *testing.T) {
	if _, err := ParseNCURaw(strings.NewReader("==PROF== nothing here\n")); err == nil {
		t.Fatal("no header accepted")
	}
	// ncu chatter before the header, n/a values, thousands separators.
	in := "==PROF== Disconnected\n" +
		`"ID","Kernel Name","gpu__time_duration.sum","launch__grid_size","l1tex__t_sector_hit_rate.pct"` + "\n" +
		`"","","msecond","",""` + "\n" +
		`"0","k","1.5","1,024","n/a"` + "\n"
	ks, err := ParseNCURaw(strings.NewReader(in))
	if err != nil || len(ks) != 1 {
		t.Fatalf("ks=%v err=%v", ks, err)
	}
	if !near(ks[0].DurationNs, 1.5e6, 1e-6) || !near(ks[0].GridSize, 1024, 0) || ks[0].L1HitPct != nil {
		t.Fatalf("parsed %+v", ks[0])
	}
}

// TestRocprofFormatSample: testdata/rocprof/counter_collection_sample.csv is
// a FORMAT SAMPLE written from AMD's documented rocprofv3 counter-collection
// CSV layout, not a hardware recording (no AMD GPU was available).
func TestRocprofFormatSample(t *testing.T) {
	f, err := os.Open(filepath.Join("testdata", "rocprof", "counter_collection_sample.csv"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	ks, err := ParseRocprofCounters(f)
	if err != nil {
		t.Fatal(err)
	}
	if len(ks) != 2 || ks[0].Name != "transpose_naive(float const*, float*, int)" {
		t.Fatalf("kernels: %+v", ks)
	}
	a, b := ks[0], ks[1]
	if !near(a.DurationNs, 410000, 0) || !near(a.GridSize, 65536, 0) || !near(a.MemThroughputPct, 91.2, 1e-9) || !near(a.ThreadsPerInstr, 64, 1e-9) || a.VendorWaveSize != 64 {
		t.Errorf("dispatch 1: %+v", a)
	}
	if !near(b.RegistersPerThread, 512, 0) || !near(b.SpillBytes, 128, 0) || !near(b.AchievedOccupancyPct, 12.5, 1e-9) {
		t.Errorf("dispatch 2: %+v", b)
	}
	fs := Diagnose(ks)
	if has(fs, MemoryBound) == nil || has(fs, OccupancyLimited) == nil || has(fs, RegisterPressure) == nil {
		t.Errorf("diagnosis: %+v", fs)
	}
	if _, err := ParseRocprofCounters(strings.NewReader("a,b\n1,2\n")); err == nil {
		t.Error("CSV without counter columns accepted")
	}
}

// TestDiagnoseRules covers the rules the recordings do not reach.
func TestDiagnoseRules(t *testing.T) {
	cases := []struct {
		name string
		k    Kernel
		want string
	}{
		{"latency", Kernel{Name: "k", DurationNs: f64(50000), SMThroughputPct: f64(20), MemThroughputPct: f64(30), Stalls: []Stall{{"long_scoreboard", 70}}}, LatencyBound},
		{"smem limited", Kernel{Name: "k", TheoreticalOccupancyPct: f64(25), OccupancyLimiter: "shared_mem", SharedMemPerBlock: f64(98304)}, SharedMemoryLimited},
		{"spills", Kernel{Name: "k", RegistersPerThread: f64(255), SpillBytes: f64(4096)}, RegisterPressure},
		{"uncoalesced by sectors/request", Kernel{Name: "k", GlobalLoadSectorsPerReq: f64(32)}, Uncoalesced},
		{"uncoalesced stores", Kernel{Name: "k", GlobalStoreEfficiencyPct: f64(12.5)}, Uncoalesced},
		{"bank conflicts", Kernel{Name: "k", SharedBankConflicts: f64(900), SharedWavefronts: f64(1000)}, BankConflicts},
		{"under one wave", Kernel{Name: "k", WavesPerSM: f64(0.3), GridSize: f64(40)}, TailEffect},
		{"divergence", Kernel{Name: "k", ThreadsPerInstr: f64(9), VendorWaveSize: 32}, Divergence},
		{"no tensor cores", Kernel{Name: "k", SMThroughputPct: f64(90), MemThroughputPct: f64(10), TensorPipePct: f64(0)}, LowTensorCoreUse},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			fs := Diagnose([]Kernel{c.k})
			if has(fs, c.want) == nil {
				t.Fatalf("want %s, got %+v", c.want, fs)
			}
		})
	}
	many := []Kernel{{Name: "a", DurationNs: f64(1500)}, {Name: "b", DurationNs: f64(2000)}, {Name: "c", DurationNs: f64(1800)}}
	if has(Diagnose(many), LaunchBound) == nil {
		t.Fatal("three ~2 µs kernels not launch-bound")
	}
	if has(Diagnose([]Kernel{{Name: "big", DurationNs: f64(400000)}}), LaunchBound) != nil {
		t.Fatal("one 400 µs kernel called launch-bound")
	}
	for b := range Topics {
		if !strings.Contains("memory-bound compute-bound latency-bound occupancy-limited register-pressure shared-memory-limited launch-bound uncoalesced bank-conflicts tail-effect divergence low-tensor-core-use", b) {
			t.Errorf("%s is not in the knowledge base's vocabulary", b)
		}
	}
}

func TestParsePerfStatRecorded(t *testing.T) {
	// Recorded on the build VM, where hardware counters are not exposed.
	b, err := os.ReadFile(filepath.Join("testdata", "perf", "stat_vm.txt"))
	if err != nil {
		t.Fatal(err)
	}
	c, missing := ParsePerfStat(string(b))
	if c["task-clock"] <= 0 || len(missing) != 6 || missing[0] != "cycles" {
		t.Fatalf("counters %v missing %v", c, missing)
	}
	c2, _ := ParsePerfStat("123456,,cycles:u,1000,100.00,,\n234567,,instructions:u,1000,100.00,1.90,insn per cycle\n")
	if c2["cycles"] != 123456 || c2["instructions"] != 234567 {
		t.Fatalf("%v", c2)
	}
}

func TestDriverJSONAfterProfilerChatter(t *testing.T) {
	var v struct{ OK bool }
	if err := driverJSON("{\"ok\": true}\n==PROF== Disconnected from process 1\n==PROF== Report: /tmp/r.ncu-rep\n", &v); err != nil || !v.OK {
		t.Fatalf("err=%v v=%v", err, v)
	}
	if err := driverJSON("{\"error\": \"ImportError: no cupy\"}\n", nil); err == nil || !strings.Contains(err.Error(), "no cupy") {
		t.Fatalf("error not surfaced: %v", err)
	}
}

func TestProfileCPU(t *testing.T) {
	py := python(t)
	rep, err := Profile(context.Background(), filepath.Join("testdata", "cpu", "ref_mlp.py"), filepath.Join("testdata", "cpu", "cand_mlp.py"),
		Options{Python: py, Backend: "cpu", Timeout: 2 * time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	if !rep.Available || rep.CPU == nil || len(rep.CPU.Ops) == 0 {
		t.Fatalf("report: %+v", rep)
	}
	if !strings.Contains(rep.CPU.Ops[0].Op, "addmm") {
		t.Errorf("top CPU op %q, want the matmul (addmm)", rep.CPU.Ops[0].Op)
	}
	if lookPath("", "perf") != "" {
		if rep.CPU.Perf["task-clock"] <= 0 {
			t.Errorf("perf present but no task-clock: %+v notes %v", rep.CPU, rep.Notes)
		}
		if _, ok := rep.CPU.Perf["cycles"]; !ok && !contains(rep.CPU.PerfMissing, "cycles") {
			t.Errorf("cycles neither counted nor reported missing: %+v", rep.CPU)
		}
	}
	// The per-call time is the un-profiled calls' (not set-up or profiler
	// start-up); counters are read or said to be missing, with the reason;
	// a diagnosis is always given, on timings alone if need be. The least
	// call bounds the median and the mean from below; the median may exceed
	// the mean (CI read min 65.6, median 103.3, mean 99.8 ms on a loaded
	// host: a few fast calls pull the mean under the median).
	cp := rep.CPU
	if cp.CallsTimed < 5 || cp.WallMinUs <= 0 || cp.WallMinUs > cp.WallUsPerIter || cp.WallMinUs > cp.WallMeanUs*1.0001 {
		t.Errorf("per-call timing: min %.1f median %.1f mean %.1f µs over %d calls", cp.WallMinUs, cp.WallUsPerIter, cp.WallMeanUs, cp.CallsTimed)
	}
	if !cp.HardwareCounters && cp.CountersUnavailable == "" {
		t.Errorf("no hardware counters and no reason: %+v", cp)
	}
	if len(rep.Findings) == 0 {
		t.Errorf("no diagnosis: %+v", cp)
	}
	t.Logf("CPU profile: call %.0f µs, top %s %.0f µs (%.0f%%), perf %v missing %v (%s), findings %v, %.1f s", cp.WallUsPerIter, cp.Ops[0].Op, cp.Ops[0].TimeUs, 100*cp.Ops[0].Share, cp.Perf, cp.PerfMissing, cp.CountersUnavailable, rep.Findings, rep.WallS)
}

func contains(xs []string, s string) bool {
	for _, x := range xs {
		if x == s {
			return true
		}
	}
	return false
}

// TestProfileModelCPU: whole-model mode ranks the MLP's operators; the two
// matmuls dominate and the headroom is Amdahl's 1/(1-share).
func TestProfileModelCPU(t *testing.T) {
	py := python(t)
	pydir := harnessPyDir(t)
	rep, err := ProfileModel(context.Background(), filepath.Join("testdata", "cpu", "ref_mlp.py"), Options{Python: py, Backend: "cpu", PyDir: pydir})
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range rep.Notes {
		if strings.Contains(n, "jail") && os.Geteuid() == 0 {
			t.Errorf("the jail was not whole: %s", n)
		}
	}
	m := rep.Model
	if m == nil || len(m.Ops) < 3 || m.Device != "cpu" {
		t.Fatalf("model profile: %+v", rep)
	}
	top := m.Ops[0]
	if !strings.Contains(top.Op, "addmm") || top.Share < 0.3 {
		t.Errorf("top op %s share %.2f, want addmm with the largest share", top.Op, top.Share)
	}
	sum := 0.0
	for i, o := range m.Ops {
		sum += o.Share
		if i > 0 && o.TimeUs > m.Ops[i-1].TimeUs {
			t.Errorf("not ranked: %s after %s", o.Op, m.Ops[i-1].Op)
		}
		if o.Share < 1 && (o.AmdahlHeadroom == nil || math.Abs(*o.AmdahlHeadroom-1/(1-o.Share)) > 1e-9) {
			t.Errorf("%s headroom %v for share %v", o.Op, fmtp(o.AmdahlHeadroom), o.Share)
		}
	}
	if sum > 1.0001 {
		t.Errorf("shares sum to %v", sum)
	}
	t.Logf("model: %s; %d ops", rep.Notes, len(m.Ops))
}

// TestMissingProfiler: no Python, or no ncu, is a result saying what is
// missing, not an error and not a crash.
func TestMissingProfiler(t *testing.T) {
	ref, cand := filepath.Join("testdata", "cpu", "ref_mlp.py"), filepath.Join("testdata", "cpu", "cand_mlp.py")
	r, err := Profile(context.Background(), ref, cand, Options{Python: "/nonexistent/python3"})
	if err != nil || r.Available || !strings.Contains(r.Missing, "KEVOLVE_PYTHON") {
		t.Fatalf("no python: %+v %v", r, err)
	}
	r, err = Profile(context.Background(), ref, cand, Options{Python: "/bin/sh", Backend: "ncu", NCU: "/nonexistent/ncu"})
	if err != nil || r.Available || !strings.Contains(r.Missing, "ncu") {
		t.Fatalf("no ncu: %+v %v", r, err)
	}
	r, err = Profile(context.Background(), ref, cand, Options{Python: "/bin/sh", Backend: "rocprof", Rocprof: "/nonexistent/rocprofv3"})
	if err != nil || r.Available || !strings.Contains(r.Missing, "rocprofv3") {
		t.Fatalf("no rocprofv3: %+v %v", r, err)
	}
	if _, err := Profile(context.Background(), "/nonexistent/ref.py", cand, Options{}); err == nil {
		t.Fatal("missing reference accepted")
	}
}

// TestNCUFailures drives runNCU's error handling with stand-in executables,
// since ncu itself cannot run without an NVIDIA GPU: a counter-permission
// failure must say how to fix it, and a hang must end at the timeout.
func TestNCUFailures(t *testing.T) {
	dir := t.TempDir()
	perm := filepath.Join(dir, "ncu-perm")
	os.WriteFile(perm, []byte("#!/bin/sh\necho '==ERROR== ERR_NVGPUCTRPERM - The user does not have permission to access NVIDIA GPU Performance Counters'\nexit 1\n"), 0o755)
	hang := filepath.Join(dir, "ncu-hang")
	os.WriteFile(hang, []byte("#!/bin/sh\nsleep 30\n"), 0o755)
	ref, cand := filepath.Join("testdata", "cpu", "ref_mlp.py"), filepath.Join("testdata", "cpu", "cand_mlp.py")

	_, err := Profile(context.Background(), ref, cand, Options{Python: "/bin/sh", Backend: "ncu", NCU: perm})
	if err == nil || !strings.Contains(err.Error(), "NVreg_RestrictProfilingToAdminUsers") {
		t.Fatalf("permission error not explained: %v", err)
	}
	t0 := time.Now()
	_, err = Profile(context.Background(), ref, cand, Options{Python: "/bin/sh", Backend: "ncu", NCU: hang, Timeout: time.Second})
	if err == nil || !strings.Contains(err.Error(), "timed out") || time.Since(t0) > 10*time.Second {
		t.Fatalf("hang: err=%v after %s", err, time.Since(t0))
	}
}

func TestUnitScale(t *testing.T) {
	for u, want := range map[string]float64{"us": 1e3, "usecond": 1e3, "ms": 1e6, "nsecond": 1, "Kbyte/block": 1e3, "byte/block": 1, "%": 1, "": 1} {
		if got := unitScale(u); got != want {
			t.Errorf("unitScale(%q) = %v, want %v", u, got, want)
		}
	}
}

// A C candidate's CPU profile shows its C kernel (named by the kevolve
// loader while the profiler runs), not only the empty_like around it, and
// its table says nothing of Nsight Compute.
func TestProfileCPUShowsCKernel(t *testing.T) {
	py := python(t)
	pydir := harnessPyDir(t)
	rep, err := Profile(context.Background(), filepath.Join("testdata", "cpu", "ref_scale.py"), filepath.Join("testdata", "cpu", "cand_scale_c.py"),
		Options{Python: py, Backend: "cpu", Timeout: 3 * time.Minute, PyDir: pydir})
	if err != nil {
		t.Fatal(err)
	}
	if !rep.Available || rep.CPU == nil {
		t.Fatalf("report: %+v", rep)
	}
	var ops []string
	found := false
	for _, o := range rep.CPU.Ops {
		ops = append(ops, o.Op)
		found = found || strings.Contains(o.Op, "kevolve::c::scale")
	}
	if !found {
		t.Errorf("the C kernel is not in the CPU profile: %v", ops)
	}
	// Timed as run_kernel times it too (the harness's timer, from PyDir):
	// after a cache flush a call reads no faster than back to back.
	if c := rep.CPU; c.TimedUsPerIter <= 0 || c.TimedIters < 10 || c.TimedUsPerIter < 0.5*c.WallMinUs {
		t.Errorf("timed as run_kernel: %.1f µs over %d calls (warm: min %.1f, median %.1f µs)", c.TimedUsPerIter, c.TimedIters, c.WallMinUs, c.WallUsPerIter)
	}
	var b strings.Builder
	if err := WriteTable(&b, rep); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(b.String(), "Nsight") || strings.Contains(b.String(), "ncu") {
		t.Errorf("a CPU profile talks about Nsight Compute:\n%s", b.String())
	}
}
