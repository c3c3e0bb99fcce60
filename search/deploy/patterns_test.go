package deploy

import (
	"encoding/json"
	"os/exec"
	"strings"
	"testing"

	"github.com/kevolve/kevolve-mcp/harness/toolchain/toolchaintest"
)

// patternScript prints, for each model forward given on stdin (JSON list
// of [name, init code, forward body]), the signatures of the regions the
// exported region finder sees, in graph order.
const patternScript = `
import json, sys
import torch, torch.nn as nn, torch.nn.functional as F
sys.path.insert(0, sys.argv[1])
from kevolve_kernels import _patterns as mp
out = {}
for name, init, body in json.load(sys.stdin):
    ns = {"torch": torch, "nn": nn, "F": F}
    src = "class M(nn.Module):\n    def __init__(self):\n        super().__init__()\n"
    src += "".join("        %s\n" % l for l in init.split(";") if l) + "        pass\n"
    src += "    def forward(self, x):\n" + "".join("        %s\n" % l for l in body.split(";"))
    exec(src, ns)
    gm = mp.trace(ns["M"]())
    out[name] = [r.sig for r in mp.find_regions(gm)]
print(json.dumps(out))
`

// TestRegionPatterns: the region finder the optimizer and the exported
// runtime share, over the forms each pattern takes and the near misses it
// must leave alone.
func TestRegionPatterns(t *testing.T) {
	py := toolchaintest.Python(t)
	cases := []struct {
		name, init, body string
		want             []string
	}{
		{"swiglu chunk method", "self.p = nn.Linear(8, 16, bias=False)", "g, u = self.p(x).chunk(2, dim=-1);return F.silu(g) * u", []string{"linear", "swiglu"}},
		{"swiglu torch.chunk, up first", "", "g, u = torch.chunk(x, 2, dim=-1);return u * F.silu(g)", []string{"swiglu"}},
		{"swiglu with nn.SiLU", "self.act = nn.SiLU()", "g, u = x.chunk(2, dim=-1);return self.act(g) * u", []string{"swiglu"}},
		{"chunk over dim 0 is not swiglu", "", "g, u = x.chunk(2, dim=0);return F.silu(g) * u", []string{"silu_mul"}},
		{"silu(g) * u of two projections", "self.g = nn.Linear(8, 8);self.u = nn.Linear(8, 8)", "return F.silu(self.g(x)) * self.u(x)", []string{"linear", "silu_mul"}},
		{"gate reused elsewhere", "", "g, u = x.chunk(2, dim=-1);return F.silu(g) * u + g", []string{"silu_mul"}},
		{"linear + exact gelu", "self.fc = nn.Linear(8, 8)", "return F.gelu(self.fc(x))", []string{"gemm_bias_gelu"}},
		{"linear + tanh gelu is a lone linear", "self.fc = nn.Linear(8, 8)", "return F.gelu(self.fc(x), approximate='tanh')", []string{"linear"}},
		{"linear + relu module", "self.fc = nn.Linear(8, 8);self.act = nn.ReLU()", "return self.act(self.fc(x))", []string{"linear_relu"}},
		{"linear output used twice", "self.fc = nn.Linear(8, 8)", "h = self.fc(x);return torch.relu(h) + h", []string{"linear"}},
		{"no bias gelu is generic", "self.fc = nn.Linear(8, 8, bias=False)", "return F.gelu(self.fc(x))", []string{"linear_gelu"}},
		{"layernorm", "self.ln = nn.LayerNorm(8)", "return self.ln(x)", []string{"layernorm"}},
		{"layernorm without affine", "self.ln = nn.LayerNorm(8, elementwise_affine=False)", "return self.ln(x) + 1", []string{}},
		{"torch RMSNorm", "self.n = nn.RMSNorm(8)", "return self.n(x)", []string{"rmsnorm"}},
	}
	var in [][3]string
	for _, c := range cases {
		in = append(in, [3]string{c.name, c.init, c.body})
	}
	dir := t.TempDir()
	if _, err := Export(dir, nil); err != nil {
		t.Fatal(err)
	}
	js, _ := json.Marshal(in)
	cmd := exec.Command(py, "-c", patternScript, dir)
	cmd.Stdin = strings.NewReader(string(js))
	b, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%v\n%s", err, b)
	}
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	var got map[string][]string
	if err := json.Unmarshal([]byte(lines[len(lines)-1]), &got); err != nil {
		t.Fatalf("%v: %s", err, b)
	}
	for _, c := range cases {
		if strings.Join(got[c.name], ",") != strings.Join(c.want, ",") {
			t.Errorf("%s: regions %v, want %v", c.name, got[c.name], c.want)
		}
	}
}
