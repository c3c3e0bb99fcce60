package deploy

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kevolve/kevolve-mcp/corpus"
	"github.com/kevolve/kevolve-mcp/harness/toolchain/toolchaintest"
)

// patchScript patches a model with the exported package in a new Python
// and reports, for the verified shape and for another one, whether the
// outputs match the original and how often the kernel ran.
const patchScript = `
import importlib.util, json, sys
import torch
sys.path.insert(0, sys.argv[1])
import kevolve_kernels
spec = importlib.util.spec_from_file_location("m", sys.argv[2])
m = importlib.util.module_from_spec(spec); spec.loader.exec_module(m)
torch.manual_seed(0)
model = m.Model(*m.get_init_inputs()).eval()
patched = kevolve_kernels.patch(model)
out = {}
with torch.no_grad():
    for name, x in (("verified", torch.randn(64, 32)), ("other", torch.randn(48, 32)), ("other_dtype", torch.randn(64, 32, dtype=torch.float64))):
        if x.dtype == torch.float64:
            model, patched = model.double(), patched.double()
        before = sum(s["hits"] for s in kevolve_kernels.stats(patched))
        same = torch.allclose(model(x), patched(x), atol=1e-5, rtol=1e-5)
        out[name] = {"same": bool(same), "kernel": sum(s["hits"] for s in kevolve_kernels.stats(patched)) - before}
# Grad needed: the kernel has no backward, the original op runs.
model, patched = model.float(), patched.float()
x = torch.randn(64, 32, requires_grad=True)
before = sum(s["hits"] for s in kevolve_kernels.stats(patched))
patched(x).sum().backward()
out["grad"] = {"same": x.grad is not None, "kernel": sum(s["hits"] for s in kevolve_kernels.stats(patched)) - before}
print(json.dumps(out))
`

// TestRuntimePatch: an exported layernorm entry (the bundled C kernel)
// patches a traceable model (torch.fx) and one torch.fx cannot trace
// (module replacement) in a new process; the kernel serves exactly the
// verified shape and dtype, and every other call (another shape, another
// dtype, a call that needs gradients) runs the original module.
func TestRuntimePatch(t *testing.T) {
	py := toolchaintest.Python(t)
	p, err := corpus.Get("llm/layernorm")
	if err != nil {
		t.Fatal(err)
	}
	src, err := p.StartSource("c")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	e := Entry{Op: "layernorm", Shapes: [][]int64{{64, 32}, {32}, {32}}, Dtype: "float32", Init: []any{1e-5}, Arch: "cpu-" + goarch(t, py), Speedup: 1.5, Source: src}
	if _, err := Export(dir, []Entry{e}); err != nil {
		t.Fatal(err)
	}
	for _, model := range []string{"traceable.py", "untraceable.py"} {
		t.Run(model, func(t *testing.T) {
			abs, _ := filepath.Abs(filepath.Join("testdata", model))
			cmd := exec.Command(py, "-c", patchScript, dir, abs)
			cmd.Env = append(os.Environ(), "KEVOLVE_CACHE_DIR="+t.TempDir())
			b, err := cmd.CombinedOutput()
			if err != nil {
				t.Fatalf("%v\n%s", err, b)
			}
			lines := strings.Split(strings.TrimSpace(string(b)), "\n")
			var got map[string]struct {
				Same   bool `json:"same"`
				Kernel int  `json:"kernel"`
			}
			if err := json.Unmarshal([]byte(lines[len(lines)-1]), &got); err != nil {
				t.Fatalf("%v: %s", err, b)
			}
			want := map[string]int{"verified": 1, "other": 0, "other_dtype": 0, "grad": 0}
			for k, n := range want {
				if !got[k].Same || got[k].Kernel != n {
					t.Errorf("%s: %+v, want the same output and %d kernel calls", k, got[k], n)
				}
			}
		})
	}
}

// goarch is the machine name Python reports (the CPU arch key's suffix).
func goarch(t *testing.T, py string) string {
	b, err := exec.Command(py, "-c", "import platform; print(platform.machine())").Output()
	if err != nil {
		t.Fatal(err)
	}
	return strings.TrimSpace(string(b))
}
