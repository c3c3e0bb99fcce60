package sol

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/kevolve/kevolve-mcp/harness/toolchain"
)

// timeRef is the eager reference's median forward time on the GPU (CUDA
// events, warm-up, 20 runs); used only to sanity-check the ceilings.
const timeRef = `
import importlib.util, json, statistics, sys, torch
spec = importlib.util.spec_from_file_location("r", sys.argv[1]); m = importlib.util.module_from_spec(spec); spec.loader.exec_module(m)
with torch.device("cuda"):
    model = m.Model(*m.get_init_inputs()); xs = m.get_inputs()
ts = []
with torch.no_grad():
    for _ in range(3): model(*xs)
    for _ in range(20):
        a = torch.cuda.Event(enable_timing=True); b = torch.cuda.Event(enable_timing=True)
        a.record(); model(*xs); b.record(); torch.cuda.synchronize(); ts.append(a.elapsed_time(b) / 1e3)
print(json.dumps({"median_s": statistics.median(ts)}))
`

// TestSOLSanityGPU: on the GPU box the eager reference of a large bf16 GEMM
// and of a large copy-like elementwise op must reach >= 80% of SOL under the
// measured ceilings (issue 4's sanity check of the ceilings).
func TestSOLSanityGPU(t *testing.T) {
	if os.Getenv("KEVOLVE_GPU") != "1" {
		t.Skip("needs KEVOLVE_GPU=1")
	}
	py := python(t)
	ctx := context.Background()
	cal, err := Calibrate(ctx, CalibrateOptions{Python: py, Device: "cuda"})
	if err != nil {
		t.Fatal(err)
	}
	cb, _ := json.Marshal(cal)
	t.Logf("calibration: %s", cb)
	dir := t.TempDir()
	refs := map[string]string{
		"gemm_bf16": `import torch, torch.nn as nn
class Model(nn.Module):
    def forward(self, a, b): return a @ b
def get_inputs(): return [torch.randn(8192, 8192, dtype=torch.bfloat16), torch.randn(8192, 8192, dtype=torch.bfloat16)]
def get_init_inputs(): return []
`,
		"scale_bf16": `import torch, torch.nn as nn
class Model(nn.Module):
    def forward(self, x): return x * 2.0
def get_inputs(): return [torch.randn(1 << 28, dtype=torch.bfloat16)]
def get_init_inputs(): return []
`,
	}
	for name, src := range refs {
		ref := filepath.Join(dir, name+".py")
		os.WriteFile(ref, []byte(src), 0o644)
		w, err := Trace(ctx, ref, TraceOptions{Python: py})
		if err != nil {
			t.Fatal(err)
		}
		cmd := exec.Command(py, "-c", timeRef, ref)
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("%s timing: %v", name, err)
		}
		var tm struct {
			MedianS float64 `json:"median_s"`
		}
		json.Unmarshal([]byte(toolchain.LastLine(string(out))), &tm)
		r := Analyze(w, cal.Ceilings(), tm.MedianS, tm.MedianS, true)
		rb, _ := json.Marshal(r)
		t.Logf("%s: %s", name, rb)
		if d := os.Getenv("KEVOLVE_RECORD_DIR"); d != "" {
			os.MkdirAll(d, 0o755)
			os.WriteFile(filepath.Join(d, "sol_"+name+".json"), rb, 0o644)
			os.WriteFile(filepath.Join(d, "calibration.json"), cb, 0o644)
		}
		if *r.PctOfSol < 80 {
			t.Errorf("%s: eager reference at %.1f%% of SOL, want >= 80%% (%s)", name, *r.PctOfSol, r.Summary)
		}
		if strings.Contains(r.Summary, "FASTER THAN SOL") {
			t.Errorf("%s: reference faster than SOL: ceilings too low", name)
		}
	}
	_ = time.Second
}
