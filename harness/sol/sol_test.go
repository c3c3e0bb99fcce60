package sol

import (
	"context"
	"database/sql"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	_ "github.com/mattn/go-sqlite3"

	"github.com/kevolve/kevolve-mcp/harness/spec"
	"github.com/kevolve/kevolve-mcp/harness/toolchain/toolchaintest"
)

func python(t *testing.T) string { return toolchaintest.Python(t) }

func within(got, want, rel float64) bool {
	if want == 0 {
		return got == 0
	}
	return math.Abs(got-want)/math.Abs(want) <= rel
}

// TestTraceCounts checks traced FLOPs and bytes of small references against
// values computed by hand from the shapes and the stated per-op costs.
func TestTraceCounts(t *testing.T) {
	py := python(t)
	const f4, h2 = 4.0, 2.0 // bytes per fp32 and per fp16/bf16 element
	cases := []struct {
		file, shapes  string
		flops, bytes  float64
		dtype         string
		mustHaveOpSub string
	}{
		{"matmul.py", "", 2 * 256 * 128 * 512, f4 * (256*512 + 512*128 + 256*128), "fp32", "mm"},
		{"linear.py", "", 2 * 64 * 256 * 512, f4 * (64*512 + 256*512 + 256 + 64*256), "fp32", "addmm"},
		{"bmm.py", "", 2 * 8 * 64 * 48 * 32, f4 * (8*64*32 + 8*32*48 + 8*64*48), "fp32", "bmm"},
		// conv: 2*N*Cout*Hout*Wout*Cin*kh*kw; the bias add is not counted.
		{"conv2d.py", "", 2 * 2 * 16 * 32 * 32 * 3 * 9, f4 * (2*3*32*32 + 16*3*9 + 16 + 2*16*32*32), "fp32", "convolution"},
		{"relu.py", "", 16 * 4096, f4 * 2 * 16 * 4096, "fp32", "relu"},
		{"add_bf16.py", "", 1 << 20, h2 * 3 * (1 << 20), "bf16", "add"},
		{"softmax.py", "", 7 * 32 * 1000, f4 * 2 * 32 * 1000, "fp32", "softmax"},
		{"layernorm.py", "", 8 * 64 * 768, f4 * (2*64*768 + 2*768), "fp32", "layer_norm"},
		{"gelu.py", "", 8 * 128 * 1024, f4 * 2 * 128 * 1024, "fp32", "gelu"},
		{"sum_dim.py", "", 128 * 4096, f4 * (128*4096 + 128), "fp32", "sum"},
		// attention: 4*B*H*S*S*D for QK^T and PV, plus 7 per score for softmax.
		{"attention.py", "", 4*2*4*256*256*64 + 7*2*4*256*256, h2 * 4 * 2 * 4 * 256 * 64, "fp16", "attention"},
		// mean((a-b)**2): sub, pow, mean over 4096*64 elements each.
		{"mse.py", "", 3 * 4096 * 64, f4 * (2*4096*64 + 1), "fp32", "mean"},
		{"shapes_env.py", "large", 1 << 20, f4 * 2 * (1 << 20), "fp32", "mul"},
		{"shapes_env.py", "small", 1024, f4 * 2 * 1024, "fp32", "mul"},
	}
	for _, c := range cases {
		t.Run(strings.TrimSuffix(c.file, ".py")+c.shapes, func(t *testing.T) {
			t.Parallel()
			w, err := Trace(context.Background(), filepath.Join("testdata", "problems", c.file), TraceOptions{Python: py, Shapes: c.shapes})
			if err != nil {
				t.Fatal(err)
			}
			if !within(w.FLOPs, c.flops, 0.01) {
				t.Errorf("flops = %g, want %g (detail %+v)", w.FLOPs, c.flops, w.Detail)
			}
			if !within(w.Bytes, c.bytes, 0.01) {
				t.Errorf("bytes = %g, want %g", w.Bytes, c.bytes)
			}
			if w.Dtype != c.dtype || w.Source != "traced" {
				t.Errorf("dtype/source = %s/%s, want %s/traced", w.Dtype, w.Source, c.dtype)
			}
			found := false
			for _, d := range w.Detail {
				if strings.Contains(d.Op, c.mustHaveOpSub) && d.Method != "" {
					found = true
				}
			}
			if !found {
				t.Errorf("detail lacks an op containing %q: %+v", c.mustHaveOpSub, w.Detail)
			}
		})
	}
}

// TestTraceGathers checks that a tensor read only through gathers counts the
// distinct rows or elements its indices name (on CPU tensors, where the
// indices have values), or at most the looked-up bytes (on meta tensors),
// and a tensor also read by another op counts whole.
func TestTraceGathers(t *testing.T) {
	py := python(t)
	const f4, i8 = 4.0, 8.0
	cases := []struct {
		file, device string
		bytes        float64
	}{
		// 300 ids naming 100 distinct rows of a (1000, 64) table, 10 offsets, (10, 64) out.
		{"embedding_bag.py", "cpu", f4*100*64 + i8*(300+10) + f4*10*64},
		{"embedding_bag.py", "meta", f4*300*64 + i8*(300+10) + f4*10*64},
		// index_select of 50 distinct columns of (400, 500) and 20 distinct
		// rows: the larger of the two reads, plus both index lists and a scalar.
		{"gather_rows.py", "cpu", f4*50*400 + i8*(200+80) + f4},
		{"gather_rows.py", "meta", f4*200*400 + i8*(200+80) + f4},
		{"gather_and_read.py", "cpu", f4*1000*64 + i8*300 + f4*64},
	}
	for _, c := range cases {
		t.Run(strings.TrimSuffix(c.file, ".py")+"_"+c.device, func(t *testing.T) {
			t.Parallel()
			w, err := Trace(context.Background(), filepath.Join("testdata", "problems", c.file), TraceOptions{Python: py, Device: c.device})
			if err != nil {
				t.Fatal(err)
			}
			if !within(w.Bytes, c.bytes, 1e-9) {
				t.Errorf("bytes = %g, want %g (detail %+v)", w.Bytes, c.bytes, w.Detail)
			}
		})
	}
}

func TestTraceBrokenReference(t *testing.T) {
	py := python(t)
	dir := t.TempDir()
	bad := filepath.Join(dir, "bad.py")
	os.WriteFile(bad, []byte("raise RuntimeError('boom in reference')\n"), 0o644)
	_, err := Trace(context.Background(), bad, TraceOptions{Python: py})
	if err == nil || !strings.Contains(err.Error(), "boom in reference") {
		t.Fatalf("want the reference's error surfaced, got %v", err)
	}
}

// evalProducts is a test-only formula evaluator for sums of products of
// numbers and variables ("2*M*N*K", "4*M*K+4*K*N"); corpus.FormulaValue is the real one.
func evalProducts(expr string, vars map[string]float64) (float64, error) {
	total := 0.0
	for _, term := range strings.Split(strings.ReplaceAll(expr, " ", ""), "+") {
		p := 1.0
		for _, f := range strings.Split(term, "*") {
			if v, ok := vars[f]; ok {
				p *= v
			} else if n, err := strconv.ParseFloat(f, 64); err == nil {
				p *= n
			} else {
				return 0, fmt.Errorf("unknown factor %q", f)
			}
		}
		total += p
	}
	return total, nil
}

// TestDeclaredWins checks the declared path and that declared formulas beat
// tracing, including the mixed case (declared FLOPs, traced bytes).
func TestDeclaredWins(t *testing.T) {
	py := python(t)
	ref := filepath.Join("testdata", "problems", "matmul.py")
	vars := map[string]float64{"M": 256, "N": 128, "K": 512}
	opt := TraceOptions{Python: py}
	ctx := context.Background()

	full, err := Count(ctx, ref, "2*M*N*K", "4*M*K+4*K*N+4*M*N", "fp32", vars, evalProducts, opt)
	if err != nil {
		t.Fatal(err)
	}
	if full.Source != "declared" || full.FLOPs != 2*256*128*512 || full.Bytes != 917504 {
		t.Fatalf("declared: %+v", full)
	}
	// A declared figure that differs from the trace must win.
	odd, err := Count(ctx, ref, "3*M*N*K", "", "", vars, evalProducts, opt)
	if err != nil {
		t.Fatal(err)
	}
	if odd.Source != "declared+traced" || odd.FLOPs != 3*256*128*512 || !within(odd.Bytes, 917504, 0.01) || odd.Dtype != "fp32" {
		t.Fatalf("mixed: %+v", odd)
	}
	traced, err := Count(ctx, ref, "", "", "", nil, nil, opt)
	if err != nil {
		t.Fatal(err)
	}
	if traced.Source != "traced" || !within(traced.FLOPs, full.FLOPs, 0.01) || !within(traced.Bytes, full.Bytes, 0.01) {
		t.Fatalf("traced %+v disagrees with declared %+v", traced, full)
	}
	if _, err := Declared("2*Q", "", "fp32", vars, evalProducts); err == nil {
		t.Fatal("unknown variable accepted")
	}
	if _, err := Declared("2*M", "", "fp32", vars, nil); err == nil {
		t.Fatal("missing evaluator accepted")
	}
}

func TestScore(t *testing.T) {
	cases := []struct {
		name         string
		tk, tb, tsol float64
		correct      bool
		want         float64
		wantNote     bool
	}{
		{"at reference", 2, 2, 1, true, 0.5, false},
		{"at SOL", 1, 2, 1, true, 1, false},
		{"halfway in time", 1.5, 2, 1, true, 1 / (1 + 0.5/1.0), false},
		{"slower than reference", 3, 2, 1, true, 1 / (1 + 2.0/1.0), false},
		{"incorrect", 1, 2, 1, false, 0, true},
		{"faster than SOL capped", 0.5, 2, 1, true, 1, false},
		{"reference at SOL", 1, 1, 1, true, 0.5, true},
		{"reference below SOL", 0.5, 1, 2, true, 1.0 / 1.5, true},
		{"no reference", 1, 0, 0.5, true, 0, true},
		{"zero candidate", 0, 2, 1, true, 0, true},
		{"NaN candidate", math.NaN(), 2, 1, true, 0, true},
		{"Inf candidate", math.Inf(1), 2, 1, true, 0, true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, note := Score(c.tk, c.tb, c.tsol, c.correct)
			if !within(got, c.want, 1e-12) {
				t.Errorf("score = %v, want %v", got, c.want)
			}
			if (note != "") != c.wantNote {
				t.Errorf("note = %q, want note: %v", note, c.wantNote)
			}
			if got < 0 || got > 1 {
				t.Errorf("score %v outside [0,1]", got)
			}
		})
	}
}

func TestAnalyze(t *testing.T) {
	ceil := Ceilings{PeakFLOPS: map[string]float64{"bf16": 800e12, "fp32": 50e12}, MemBandwidth: 3e12, Source: "measured"}
	gemm := Work{FLOPs: 2 * 8192 * 8192 * 8192, Bytes: 2 * 3 * 8192 * 8192, Dtype: "bf16", Source: "traced"}
	copyW := Work{FLOPs: 0, Bytes: 2 * 4 * (1 << 28), Dtype: "fp32", Source: "traced"}

	r := Analyze(gemm, ceil, 0, 0, true)
	if r.Bound != "compute" || !within(r.TSolS, gemm.FLOPs/800e12, 1e-12) || r.CandidateS != nil || r.SolScore != nil {
		t.Fatalf("gemm without candidate: %+v", r)
	}
	if !within(r.ArithmeticIntensity, gemm.FLOPs/gemm.Bytes, 1e-12) {
		t.Fatalf("AI = %v", r.ArithmeticIntensity)
	}
	m := Analyze(copyW, ceil, 1e-3, 2e-3, true)
	tsol := copyW.Bytes / 3e12
	if m.Bound != "memory" || !within(m.TSolS, tsol, 1e-12) {
		t.Fatalf("copy bound: %+v", m)
	}
	if !within(*m.PctOfSol, tsol/1e-3*100, 1e-12) || !within(*m.Headroom, 1e-3/tsol, 1e-12) || *m.FasterThanSol {
		t.Fatalf("copy figures: %+v", m)
	}
	if want, _ := Score(1e-3, 2e-3, tsol, true); *m.SolScore != want {
		t.Fatalf("sol_score %v want %v", *m.SolScore, want)
	}
	// 20% under the bound is flagged; 5% under is within the margin.
	fast := Analyze(copyW, ceil, 0.8*tsol, 2e-3, true)
	if !*fast.FasterThanSol || !strings.Contains(fast.Summary, "FASTER THAN SOL") {
		t.Fatalf("not flagged: %+v", fast)
	}
	near := Analyze(copyW, ceil, 0.95*tsol, 2e-3, true)
	if *near.FasterThanSol {
		t.Fatalf("5%% under flagged: %+v", near)
	}
	bad := Analyze(copyW, ceil, 1e-3, 2e-3, false)
	if *bad.SolScore != 0 {
		t.Fatalf("incorrect scored %v", *bad.SolScore)
	}
	// No ceiling for the dtype: the bound falls back to memory with a note.
	fp8 := Analyze(Work{FLOPs: 1e12, Bytes: 1e9, Dtype: "fp8"}, ceil, 0, 0, true)
	if fp8.TComputeS != 0 || fp8.Bound != "memory" || len(fp8.Notes) == 0 {
		t.Fatalf("missing dtype: %+v", fp8)
	}
}

func TestResolveCeilings(t *testing.T) {
	row := spec.Row{Key: "h100-sxm", PeakFLOPS: map[string]float64{"bf16": 989e12, "fp8": 1979e12}, MemBandwidth: 3.35e12}
	meas := Ceilings{PeakFLOPS: map[string]float64{"bf16": 760e12}, MemBandwidth: 3.0e12, Source: "measured", DeviceUUID: "GPU-x"}
	c, err := Resolve(&meas, &row)
	if err != nil {
		t.Fatal(err)
	}
	if c.PeakFLOPS["bf16"] != 760e12 || c.PeakFLOPS["fp8"] != 1979e12 || c.MemBandwidth != 3.0e12 || c.Source != "measured+spec:h100-sxm" {
		t.Fatalf("merge: %+v", c)
	}
	s, _ := Resolve(nil, &row)
	if s.Source != "spec:h100-sxm" || s.MemBandwidth != 3.35e12 {
		t.Fatalf("spec only: %+v", s)
	}
	if _, err := Resolve(nil, nil); err == nil {
		t.Fatal("no ceilings accepted")
	}
}

// TestCalibrateCPUAndStore runs the real CPU micro-benchmarks (quick sizes),
// stores them in a real SQLite file and reads them back by device id.
func TestCalibrateCPUAndStore(t *testing.T) {
	py := python(t)
	ctx := context.Background()
	cal, err := Calibrate(ctx, CalibrateOptions{Python: py, Device: "cpu", Quick: true, Timeout: 2 * time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	bw, fl := cal.Metrics[MetricMemBandwidth], cal.Metrics["fp32"]
	// Any machine since 2005 copies faster than 1 GB/s and multiplies faster
	// than 1 GFLOP/s; none copies 10 TB/s from DRAM on a CPU.
	if bw < 1e9 || bw > 1e13 || fl < 1e9 || fl > 1e15 {
		t.Fatalf("implausible CPU ceilings: %+v", cal.Metrics)
	}
	if !strings.HasPrefix(cal.DeviceUUID, "cpu:") || cal.Kind != "cpu" {
		t.Fatalf("device id: %+v", cal)
	}
	t.Logf("CPU calibration (quick): copy %.1f GB/s, fp32 %.1f GFLOP/s", bw/1e9, fl/1e9)

	db, err := sql.Open("sqlite3", filepath.Join(t.TempDir(), "k.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, ok, err := LoadCalibration(ctx, db, cal.DeviceUUID); err != nil || ok {
		t.Fatalf("empty db: ok=%v err=%v", ok, err)
	}
	if err := SaveCalibration(ctx, db, cal); err != nil {
		t.Fatal(err)
	}
	// A recalibration keeps the best figure of each metric: a faster copy
	// replaces the stored one, a slower GEMM (a loaded machine) does not.
	cal2 := cal
	cal2.Metrics = map[string]float64{MetricMemBandwidth: bw * 2, "fp32": fl / 3}
	if err := SaveCalibration(ctx, db, cal2); err != nil {
		t.Fatal(err)
	}
	got, ok, err := LoadCalibration(ctx, db, cal.DeviceUUID)
	if err != nil || !ok {
		t.Fatalf("load: ok=%v err=%v", ok, err)
	}
	if got.Metrics[MetricMemBandwidth] != bw*2 || got.Metrics["fp32"] != fl || got.Kind != "cpu" || got.DeviceName != cal.DeviceName {
		t.Fatalf("loaded %+v: want the better copy and the earlier, better fp32", got)
	}
	var n int
	db.QueryRow(`SELECT COUNT(*) FROM calibration`).Scan(&n)
	if n != len(cal.Metrics) {
		t.Fatalf("rows = %d, want %d (one per metric)", n, len(cal.Metrics))
	}
	c := got.Ceilings()
	if c.Source != "measured" || c.MemBandwidth != bw*2 || c.PeakFLOPS["fp32"] != fl {
		t.Fatalf("ceilings: %+v", c)
	}
	// --replace: this run's figures, worse or not.
	if err := ReplaceCalibration(ctx, db, cal2); err != nil {
		t.Fatal(err)
	}
	if got, _, _ := LoadCalibration(ctx, db, cal.DeviceUUID); got.Metrics["fp32"] != fl/3 {
		t.Fatalf("replace kept %g, want %g", got.Metrics["fp32"], fl/3)
	}
}

// A CPU has a compute ceiling per dtype: a bf16 problem is bounded by bf16
// matmul's rate, not left "memory-bound with 0 FLOP/s"; CalibrateAndStore
// reports its duration and which earlier, better figures it kept.
func TestCalibrateCPUHalfTypesAndBest(t *testing.T) {
	py := python(t)
	ctx := context.Background()
	db, err := sql.Open("sqlite3", filepath.Join(t.TempDir(), "k.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	opt := CalibrateOptions{Python: py, Device: "cpu", Quick: true, Timeout: 2 * time.Minute}
	cal, err := CalibrateAndStore(ctx, db, opt)
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"bf16", "fp16"} {
		if v := cal.Metrics[k]; !(v > 1e7) {
			t.Errorf("%s ceiling %g: want a measured rate (notes %v)", k, v, cal.Notes)
		}
	}
	if !(cal.DurationS > 0) {
		t.Errorf("duration %g", cal.DurationS)
	}
	// An impossibly good earlier figure stands against this run's.
	high := Calibration{DeviceUUID: cal.DeviceUUID, DeviceName: cal.DeviceName, Kind: "cpu", Metrics: map[string]float64{"bf16": 1e18}}
	if err := SaveCalibration(ctx, db, high); err != nil {
		t.Fatal(err)
	}
	again, err := CalibrateAndStore(ctx, db, opt)
	if err != nil {
		t.Fatal(err)
	}
	if again.Metrics["bf16"] != 1e18 || !strings.Contains(strings.Join(again.Notes, "\n"), "bf16: kept the earlier") {
		t.Errorf("bf16 %g, notes %v: want the earlier figure kept and said", again.Metrics["bf16"], again.Notes)
	}
	r := Analyze(Work{FLOPs: 2 * 512 * 512 * 512, Bytes: 3 * 512 * 512 * 2, Dtype: "bf16"}, cal.Ceilings(), 0, 0, true)
	if !(r.PeakFLOPS > 0) || !(r.TComputeS > 0) {
		t.Errorf("a bf16 GEMM on this CPU: peak %g, compute time %g", r.PeakFLOPS, r.TComputeS)
	}
}

// TestCalibrateGPU runs the full benchmarks on the GPU box (KEVOLVE_GPU=1).
// It checks the figures against DESIGN.md's H100 measurements loosely.
func TestCalibrateGPU(t *testing.T) {
	if os.Getenv("KEVOLVE_GPU") != "1" {
		t.Skip("needs KEVOLVE_GPU=1")
	}
	cal, err := Calibrate(context.Background(), CalibrateOptions{Python: python(t), Device: "cuda"})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("GPU calibration %s (%s): %+v notes %v", cal.DeviceName, cal.DeviceUUID, cal.Metrics, cal.Notes)
	if !strings.HasPrefix(cal.DeviceUUID, "GPU-") || cal.Metrics[MetricMemBandwidth] < 1e11 || cal.Metrics["bf16"] < 1e13 {
		t.Fatalf("implausible: %+v", cal)
	}
}

func TestRequestAndCeilingsFor(t *testing.T) {
	ctx := context.Background()
	db, err := sql.Open("sqlite3", filepath.Join(t.TempDir(), "k.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	h100, ok := spec.Get("h100")
	if !ok {
		t.Fatal("spec has no h100")
	}
	c, err := CeilingsFor(ctx, db, "GPU-abc", "NVIDIA H100 80GB HBM3", "")
	if err != nil || c.Source != "spec:"+h100.Key {
		t.Fatalf("uncalibrated: %+v %v", c, err)
	}
	cal := Calibration{DeviceUUID: "GPU-abc", DeviceName: "NVIDIA H100 80GB HBM3", Metrics: map[string]float64{MetricMemBandwidth: 3.0e12, "bf16": 7.7e14}}
	if err := SaveCalibration(ctx, db, cal); err != nil {
		t.Fatal(err)
	}
	c, err = CeilingsFor(ctx, db, "GPU-abc", "NVIDIA H100 80GB HBM3", "")
	if err != nil || c.MemBandwidth != 3.0e12 || c.PeakFLOPS["bf16"] != 7.7e14 || !strings.HasPrefix(c.Source, "measured") {
		t.Fatalf("calibrated: %+v %v", c, err)
	}
	// Asking for another device's datasheet must not borrow these measurements.
	c, err = CeilingsFor(ctx, db, "GPU-abc", "NVIDIA H100 80GB HBM3", "mi300x")
	if err != nil || !strings.HasPrefix(c.Source, "spec:mi300x") {
		t.Fatalf("other key: %+v %v", c, err)
	}
	if _, err := CeilingsFor(ctx, db, "", "", "no-such-gpu"); err == nil {
		t.Fatal("unknown key accepted")
	}
	if _, err := CeilingsFor(ctx, nil, "", "", ""); err == nil {
		t.Fatal("no ceilings at all accepted")
	}
	rep, err := AnalyzeRequest(ctx, Request{FLOPs: 1e12, Bytes: 1e9, Dtype: "bfloat16", CandidateS: 2e-3, ReferenceS: 4e-3, Correct: true}, cal.Ceilings())
	if err != nil || rep.Dtype != "bf16" || rep.Bound != "compute" || rep.SolScore == nil || len(rep.Detail) != 2 {
		t.Fatalf("declared request: %+v %v", rep, err)
	}
	if _, err := AnalyzeRequest(ctx, Request{FLOPs: 1e12}, cal.Ceilings()); err == nil {
		t.Fatal("no reference and half the work accepted")
	}
}
