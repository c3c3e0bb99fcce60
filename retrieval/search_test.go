package retrieval

import (
	"github.com/kevolve/kevolve-mcp/harness/spec"

	"context"
	"errors"
	"slices"
	"strings"
	"testing"
)

func TestResolveDevice(t *testing.T) {
	tests := []struct {
		in   string
		want DeviceScope
		ok   bool
	}{
		{"h100", DeviceScope{"nvidia", "hopper"}, true},
		{"NVIDIA H100 80GB HBM3", DeviceScope{"nvidia", "hopper"}, true},
		{"H200", DeviceScope{"nvidia", "hopper"}, true},
		{"a100", DeviceScope{"nvidia", "ampere"}, true},
		{"ada", DeviceScope{"nvidia", "ada"}, true},
		{"NVIDIA L40S", DeviceScope{"nvidia", "ada"}, true},
		{"b200", DeviceScope{"nvidia", "blackwell"}, true},
		{"sm_90a", DeviceScope{"nvidia", "hopper"}, true},
		{"mi300x", DeviceScope{"amd", "cdna3"}, true},
		{"AMD Instinct MI325X", DeviceScope{"amd", "cdna3"}, true},
		{"MI355X", DeviceScope{"amd", "cdna4"}, true},
		{"gfx950", DeviceScope{"amd", "cdna4"}, true},
		{"cpu", DeviceScope{"cpu", ""}, true},
		{"avx512", DeviceScope{"cpu", "x86"}, true},
		{"hopper", DeviceScope{"nvidia", "hopper"}, true},
		{"amd", DeviceScope{"amd", ""}, true},
		{"nvidia", DeviceScope{"nvidia", ""}, true},
		// Every row of the hardware spec table resolves (one vocabulary).
		{"l40s", DeviceScope{"nvidia", "ada"}, true},
		{"NVIDIA L40S", DeviceScope{"nvidia", "ada"}, true},
		{"h100-pcie", DeviceScope{"nvidia", "hopper"}, true},
		{"tpu v5", DeviceScope{}, false},
	}
	for _, tt := range tests {
		got, ok := ResolveDevice(tt.in)
		if got != tt.want || ok != tt.ok {
			t.Errorf("ResolveDevice(%q) = %v %v, want %v %v", tt.in, got, ok, tt.want, tt.ok)
		}
	}
}

func TestSalientError(t *testing.T) {
	err := `Traceback (most recent call last):
  File "/tmp/kevolve/cand_1234/model_new.py", line 42, in forward
RuntimeError: CUDA error: an illegal memory access was encountered at 0x7f3a2c000000`
	got := salientError(err)
	for _, w := range []string{"illegal", "memory", "access", "bounds", "mask"} {
		if !strings.Contains(got, w) {
			t.Errorf("salient words %q lack %q", got, w)
		}
	}
	for _, w := range []string{"7f3a2c", "model_new", "1234", "traceback"} {
		if strings.Contains(got, w) {
			t.Errorf("salient words %q keep noise %q", got, w)
		}
	}
}

func fixtureIndex(t *testing.T) *Index {
	t.Helper()
	ix, err := OpenSources(context.Background(), openDB(t), nil, fixtureSource(t))
	if err != nil {
		t.Fatal(err)
	}
	return ix
}

func paths(rs []Result) []string {
	var out []string
	for _, r := range rs {
		out = append(out, r.Path)
	}
	return out
}

func TestSearchScopesAndConstraints(t *testing.T) {
	ix := fixtureIndex(t)
	ctx := context.Background()
	tests := []struct {
		name  string
		q     Query
		first string
		// notAbove: this path must not rank above any generic document.
		notAbove    string
		constraints []string
		scope       string // Scope of the first result
	}{
		{name: "unscoped", q: Query{Text: "shared memory bank conflicts padding"}, first: "mykb/guidance/bank-conflicts.md", scope: "generic"},
		{name: "amd page sinks for an h100", q: Query{Text: "LDS bank conflicts 64 KB wavefronts", Device: "h100"},
			notAbove: "mykb/hardware/amd/cdna3/lds.md"},
		{name: "same page first on its own arch", q: Query{Text: "LDS bank conflicts wavefronts", Device: "mi300x"},
			first: "mykb/hardware/amd/cdna3/lds.md", scope: "arch"},
		{name: "device in the diagnosis", q: Query{Diagnosis: "memory-bound on MI300X, LDS bank conflicts"},
			notAbove: "mykb/hardware/nvidia/hopper/tma.md"},
		{name: "operator brings its constraints", q: Query{Text: "tile padding", Operator: "gemm"},
			constraints: []string{"mykb/constraints/gemm-layout.md", "mykb/constraints/no-reference-call.md"}},
		{name: "constraints filtered by operator", q: Query{Text: "coalescing", Operator: "elementwise"},
			constraints: []string{"mykb/constraints/no-reference-call.md"}},
		{name: "bottleneck only", q: Query{Bottlenecks: []string{"uncoalesced"}}, first: "mykb/guidance/coalescing.md"},
		{name: "error text", q: Query{ErrorText: "ptxas error: tma descriptor swizzle mode invalid for mbarrier at line 12"},
			first: "mykb/hardware/nvidia/hopper/tma.md"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r, err := ix.Search(ctx, tt.q)
			if err != nil {
				t.Fatal(err)
			}
			got := paths(r.Results)
			if tt.first != "" && (len(got) == 0 || got[0] != tt.first) {
				t.Errorf("results %v, want %s first", got, tt.first)
			}
			if tt.scope != "" && len(r.Results) > 0 && r.Results[0].Scope != tt.scope {
				t.Errorf("scope %q, want %q", r.Results[0].Scope, tt.scope)
			}
			if tt.notAbove != "" {
				i := slices.Index(got, tt.notAbove)
				for j, res := range r.Results {
					if res.Vendor == "generic" && i >= 0 && i < j {
						t.Errorf("%s ranked above generic %s: %v", tt.notAbove, res.Path, got)
					}
				}
			}
			if tt.constraints != nil {
				if c := paths(r.Constraints); !slices.Equal(c, tt.constraints) && !sameSet(c, tt.constraints) {
					t.Errorf("constraints %v, want %v", c, tt.constraints)
				}
				for _, p := range got {
					if strings.Contains(p, "/constraints/") {
						t.Errorf("constraint %s repeated in results", p)
					}
				}
			}
			for _, res := range r.Results {
				if res.Passage == "" || res.Title == "" {
					t.Errorf("result without passage or title: %+v", res)
				}
			}
		})
	}
}

func sameSet(a, b []string) bool {
	a, b = slices.Clone(a), slices.Clone(b)
	slices.Sort(a)
	slices.Sort(b)
	return slices.Equal(a, b)
}

func TestSearchPassageIsTheRelevantOne(t *testing.T) {
	ix := fixtureIndex(t)
	r, err := ix.Search(context.Background(), Query{Text: "declare the tile 32x33 rows start in different banks"})
	if err != nil || len(r.Results) == 0 {
		t.Fatal(err)
	}
	if r.Results[0].Heading != "Fix" {
		t.Errorf("passage heading %q, want the Fix section: %q", r.Results[0].Heading, r.Results[0].Passage)
	}
}

func TestSearchErrors(t *testing.T) {
	ix := fixtureIndex(t)
	ctx := context.Background()
	if _, err := ix.Search(ctx, Query{Text: "the of and"}); !errors.Is(err, ErrEmptyQuery) {
		t.Errorf("stop words only: err = %v", err)
	}
	if _, err := ix.Search(ctx, Query{Text: "tiles", Device: "tpu"}); err == nil || !strings.Contains(err.Error(), "unknown device") {
		t.Errorf("unknown device: err = %v", err)
	}
	r, err := ix.Search(ctx, Query{Text: "memory", K: 2})
	if err != nil || len(r.Results) != 2 {
		t.Errorf("k=2: %v %d results", err, len(r.Results))
	}
}

// TestConcurrentSearch: stdio MCP runs tool calls concurrently, so one
// Index serves many goroutines; each must get the sequential answer.
func TestConcurrentSearch(t *testing.T) {
	ix := openBuiltin(t)
	ctx := context.Background()
	qs := loadLabeled(t)
	want := make([][]string, len(qs))
	for i, l := range qs {
		r, err := ix.Search(ctx, l.query(5))
		if err != nil {
			t.Fatal(err)
		}
		want[i] = paths(r.Results)
	}
	errs := make(chan error, 8)
	for g := range 8 {
		go func() {
			for i := g; i < len(qs); i += 3 {
				r, err := ix.Search(ctx, qs[i].query(5))
				if err == nil && !slices.Equal(paths(r.Results), want[i]) {
					err = errors.New("query " + qs[i].Q + ": concurrent result differs")
				}
				if err != nil {
					errs <- err
					return
				}
			}
			errs <- nil
		}()
	}
	for range 8 {
		if err := <-errs; err != nil {
			t.Error(err)
		}
	}
}

func TestRunsOn(t *testing.T) {
	tests := []struct {
		langs  []string
		vendor string
		want   bool
	}{
		{[]string{"triton"}, "cpu", false},
		{[]string{"cuda", "c"}, "cpu", true},
		{[]string{"hip"}, "nvidia", false},
		{[]string{"triton"}, "amd", true},
		{[]string{"c"}, "nvidia", false},
		{[]string{"anything"}, "generic", true},
	}
	for _, tt := range tests {
		if got := runsOn(tt.langs, tt.vendor); got != tt.want {
			t.Errorf("runsOn(%v, %s) = %v", tt.langs, tt.vendor, got)
		}
	}
}

// Every device the spec table knows is a device retrieval accepts.
func TestEverySpecRowResolves(t *testing.T) {
	for _, row := range spec.All() {
		for _, name := range []string{row.Key, row.Name} {
			got, ok := ResolveDevice(name)
			if !ok || got.Vendor != row.Vendor {
				t.Errorf("ResolveDevice(%q) = %v %v, want vendor %s", name, got, ok, row.Vendor)
			}
		}
	}
}
