package profile

import (
	"bytes"
	"encoding/json"
	"math"
	"os/exec"
	"strings"
	"testing"
)

// nestOps runs the driver's nest_ops on launches and device kernels as
// torch.profiler reports them, and decodes its ranking.
func nestOps(t *testing.T, launches [][3]any, opCalls map[string]int, device [][2]any, iters int) ([]OpTime, float64) {
	t.Helper()
	dir := t.TempDir()
	if _, err := writeDriver(dir); err != nil {
		t.Fatal(err)
	}
	in, _ := json.Marshal(map[string]any{"launches": launches, "op_calls": opCalls, "device": device, "iters": iters})
	script := `import json, sys
sys.path.insert(0, sys.argv[1])
import kevolve_profile_driver as d
a = json.loads(sys.stdin.read())
rows, total = d.nest_ops([tuple(x) for x in a["launches"]], a["op_calls"], [tuple(x) for x in a["device"]], a["iters"], 25)
print(json.dumps({"ops": rows, "total_us": total}))`
	cmd := exec.Command(python(t), "-c", script, dir)
	cmd.Stdin = bytes.NewReader(in)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("nest_ops: %v\n%s", err, out)
	}
	var res struct {
		Ops     []OpTime `json:"ops"`
		TotalUs float64  `json:"total_us"`
	}
	if err := json.Unmarshal(out, &res); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	return res.Ops, res.TotalUs
}

// The case seen on a KernelBench level-3 block: aten::addmm and its cuBLAS
// kernel were ranked side by side with the same 29.7% each. Ranked one level,
// the kernel sits under its op, shares add to at most 1, and kernels no op
// launched are still counted, as a group of their own.
func TestNestOpsRanksOneLevel(t *testing.T) {
	const gemm = "sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x128x64_warpgroupsize1x1x1_execute_segment_k_off_kernel__5x_cublas"
	launches := [][3]any{
		{"aten::addmm", gemm, 297.0}, {"aten::addmm", gemm, 297.0},
		{"aten::addmm", "splitKreduce_kernel", 20.0},
		{"aten::gelu", "vectorized_elementwise_kernel<gelu>", 150.0}, {"aten::gelu", "vectorized_elementwise_kernel<gelu>", 150.0},
		{"aten::layer_norm", "layer_norm_kernel", 86.0},
	}
	device := [][2]any{{gemm, 297.0}, {gemm, 297.0}, {"splitKreduce_kernel", 20.0},
		{"vectorized_elementwise_kernel<gelu>", 150.0}, {"vectorized_elementwise_kernel<gelu>", 150.0},
		{"layer_norm_kernel", 86.0}, {"triton_poi_fused_add_0", 100.0}}
	calls := map[string]int{"aten::addmm": 2, "aten::gelu": 2, "aten::layer_norm": 1, "aten::linear": 2}
	ops, total := nestOps(t, launches, calls, device, 2)

	if math.Abs(total-550) > 1e-9 { // 1100 us over 2 forwards
		t.Errorf("total %v us/forward, want 550", total)
	}
	sum := 0.0
	names := map[string]bool{}
	for i, o := range ops {
		names[o.Op] = true
		sum += o.Share
		if i > 0 && o.TimeUs > ops[i-1].TimeUs {
			t.Errorf("not ranked: %s after %s", o.Op, ops[i-1].Op)
		}
		ks := 0.0
		for _, k := range o.Kernels {
			ks += k.Share
		}
		if math.Abs(ks-o.Share) > 1e-9 {
			t.Errorf("%s: kernel shares add to %v, op share %v", o.Op, ks, o.Share)
		}
	}
	if math.Abs(sum-1) > 1e-9 {
		t.Errorf("shares add to %v, want 1", sum)
	}
	for _, k := range []string{gemm, "splitKreduce_kernel", "layer_norm_kernel", "triton_poi_fused_add_0"} {
		if names[k] {
			t.Errorf("kernel %s ranked beside the operators", k)
		}
	}
	top := ops[0]
	if top.Op != "aten::addmm" || top.Calls != 2 || math.Abs(top.TimeUs-307) > 1e-9 || len(top.Kernels) != 2 || top.Kernels[0].Name != gemm || top.Kernels[0].Calls != 2 {
		t.Fatalf("top op %+v", top)
	}
	if math.Abs(top.Share-614.0/1100) > 1e-9 || top.AmdahlHeadroom == nil || math.Abs(*top.AmdahlHeadroom-1/(1-top.Share)) > 1e-9 {
		t.Errorf("top share %v headroom %v", top.Share, fmtp(top.AmdahlHeadroom))
	}
	var orphan *OpTime
	for i := range ops {
		if strings.HasPrefix(ops[i].Op, "(kernels launched outside") {
			orphan = &ops[i]
		}
	}
	if orphan == nil || len(orphan.Kernels) != 1 || orphan.Kernels[0].Name != "triton_poi_fused_add_0" || math.Abs(orphan.TimeUs-50) > 1e-9 {
		t.Errorf("unattributed kernels: %+v", orphan)
	}
	if names["aten::linear"] {
		t.Error("aten::linear launched nothing itself and must not be ranked")
	}

	// The table shows the kernels under their op.
	var b bytes.Buffer
	_ = WriteTable(&b, Report{Mode: "model", Profiler: "torch.profiler", Available: true,
		Model: &ModelProfile{Device: "cuda", TimeBasis: "device time", Ops: ops, TotalUs: total}})
	out := b.String()
	iOp, iK := strings.Index(out, "aten::addmm"), strings.Index(out, "sm90_xmma_gemm")
	if iOp < 0 || iK < iOp || !strings.Contains(out, "launches") {
		t.Errorf("kernels not nested under their op:\n%s", out)
	}
}
