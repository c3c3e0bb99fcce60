package kernelbench

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/kevolve/kevolve-mcp/harness"
	"github.com/kevolve/kevolve-mcp/harness/toolchain"
	"github.com/kevolve/kevolve-mcp/harness/toolchain/toolchaintest"
)

// The longest expected go first; equals keep their order, and a file that
// cannot be read counts as plain torch.
func TestDispatchOrder(t *testing.T) {
	dir := t.TempDir()
	write := func(name, code string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(code), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	pairs := []Pair{
		{CandidatePath: write("a.py", "torch.relu(x)")},
		{CandidatePath: write("b.py", "load_inline(name='b')")},
		{CandidatePath: filepath.Join(dir, "missing.py")},
		{Code: "torch.compile(f, mode='max-autotune')"},
		{CandidatePath: write("c.py", "load_inline(name='c')")},
		{CandidatePath: write("d.py", "import triton")},
	}
	if got, want := dispatchOrder(context.Background(), pairs, nil, ""), []int{3, 1, 4, 5, 0, 2}; !slices.Equal(got, want) {
		t.Errorf("dispatchOrder = %v, want %v", got, want)
	}
}

// Measured costs outrank words: a pair whose last evaluation took longest
// goes first whatever its source says, and a pair never measured ranks by
// its words at harness.WordSeconds a weight. The costs are rows of a real
// eval_cost table, written as the harness writes them.
func TestDispatchOrderByStoredCost(t *testing.T) {
	py, err := toolchain.FindPython()
	toolchaintest.Require(t, err)
	ctx := context.Background()
	dir := t.TempDir()
	ref := filepath.Join(dir, "ref.py")
	const refCode = "class Model: pass"
	if err := os.WriteFile(ref, []byte(refCode), 0o644); err != nil {
		t.Fatal(err)
	}
	pair := func(code string) Pair { return Pair{Problem: Problem{Path: ref}, Code: code} }
	cases := []struct {
		name   string
		pairs  []Pair
		stored map[string]harness.Cost // candidate code → its latest evaluation on cpu
		target string
		want   []int
	}{{
		name:   "a slow plain-torch pair beats a quick load_inline one",
		pairs:  []Pair{pair("load_inline(a)"), pair("torch.relu(x)")},
		stored: map[string]harness.Cost{"load_inline(a)": {BuildS: 3, DeviceS: 1}, "torch.relu(x)": {BuildS: 1, DeviceS: 59}},
		target: "cpu",
		want:   []int{1, 0},
	}, {
		name:   "unmeasured max-autotune (80 s by words) between measured 100 s and 30 s",
		pairs:  []Pair{pair("load_inline(b)"), pair("torch.compile(f, mode='max-autotune')"), pair("load_inline(c)")},
		stored: map[string]harness.Cost{"load_inline(b)": {BuildS: 20, DeviceS: 10}, "load_inline(c)": {BuildS: 90, DeviceS: 10}},
		target: "cpu",
		want:   []int{2, 1, 0},
	}, {
		name:   "nothing stored: words alone",
		pairs:  []Pair{pair("import triton"), pair("load_inline(d)"), pair("torch.relu(x)")},
		target: "cpu",
		want:   []int{1, 0, 2},
	}, {
		name:   "equal measured costs keep their order",
		pairs:  []Pair{pair("x1"), pair("x2"), pair("x3")},
		stored: map[string]harness.Cost{"x1": {DeviceS: 5}, "x2": {DeviceS: 9}, "x3": {DeviceS: 5}},
		target: "cpu",
		want:   []int{1, 0, 2},
	}, {
		name:   "wall seconds alone do not rank: build and device do",
		pairs:  []Pair{pair("y1"), pair("y2")},
		stored: map[string]harness.Cost{"y1": {DeviceS: 1, WallS: 500}, "y2": {DeviceS: 2, WallS: 3}},
		target: "cpu",
		want:   []int{1, 0},
	}, {
		name:   "costs on another target are not this sweep's",
		pairs:  []Pair{pair("import triton"), pair("z1")},
		stored: map[string]harness.Cost{"z1": {DeviceS: 60}},
		target: "nvidia",
		want:   []int{0, 1},
	}}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			db := openDB(t)
			ev, err := harness.NewEvaluator(harness.EvalConfig{Python: py, CacheDir: t.TempDir(), DB: db}) // migrates eval_cost; starts nothing
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { ev.Close() })
			for cand, cost := range c.stored {
				if err := harness.RecordCost(ctx, db, refCode, cand, "cpu", cost); err != nil {
					t.Fatal(err)
				}
			}
			if got := dispatchOrder(ctx, c.pairs, HarnessEvaluator{Ev: ev}, c.target); !slices.Equal(got, c.want) {
				t.Errorf("dispatchOrder = %v, want %v", got, c.want)
			}
		})
	}
}
