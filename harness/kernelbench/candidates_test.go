package kernelbench

import (
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

func TestParseLevels(t *testing.T) {
	cases := []struct {
		in   string
		want []int
		err  bool
	}{
		{in: "1", want: []int{1}},
		{in: "3, 1,2,1", want: []int{1, 2, 3}},
		{in: "", err: true},
		{in: "0", err: true},
		{in: "1,two", err: true},
		{in: "-1", err: true},
	}
	for _, tc := range cases {
		got, err := ParseLevels(tc.in)
		if (err != nil) != tc.err || (!tc.err && !reflect.DeepEqual(got, tc.want)) {
			t.Errorf("ParseLevels(%q) = %v, %v", tc.in, got, err)
		}
	}
}

func TestProblemOf(t *testing.T) {
	cases := []struct {
		path      string
		level, id int
		ok        bool
	}{
		{path: "/x/level1/12_Matmul_with_diagonal_matrices_.py", level: 1, id: 12, ok: true},
		{path: "/x/2/76_Gemm_Add_ReLU.py", level: 2, id: 76, ok: true},
		{path: "/corpus/kernelbench/level1/12_Matmul_with_diagonal_matrices_/fast_cuda.py", level: 1, id: 12, ok: true},
		{path: "/x/level3/out/5_Net.py", ok: false}, // the level must be the folder just above
		{path: "/x/kernels/relu.py", ok: false},
	}
	for _, tc := range cases {
		level, id, ok := problemOf(tc.path)
		if ok != tc.ok || level != tc.level || id != tc.id {
			t.Errorf("problemOf(%s) = %d %d %v", tc.path, level, id, ok)
		}
	}
}

func TestRenameModel(t *testing.T) {
	src := "class Model(nn.Module):\n    def __init__(self):\n        super(Model, self).__init__()\n# ModelNew, MyModel and Model_2 stay\n"
	want := "class ModelNew(nn.Module):\n    def __init__(self):\n        super(ModelNew, self).__init__()\n# ModelNew, MyModel and Model_2 stay\n"
	if got := RenameModel(src); got != want {
		t.Errorf("RenameModel:\n%s", got)
	}
}

func TestMatchCandidates(t *testing.T) {
	problems, err := Discover("testdata/kb", []int{1, 2})
	if err != nil {
		t.Fatal(err)
	}
	if len(problems) != 4 || problems[3].Key() != "level2/1_Scale_Tanh" {
		t.Fatalf("discovered %+v", problems)
	}
	abs := func(p string) string { a, _ := filepath.Abs(p); return a }
	cases := []struct {
		name      string
		spec      string
		pairs     []string // problem key -> candidate base
		missing   []string
		unmatched int
		err       string
	}{
		{name: "folder", spec: "testdata/candidates",
			pairs:   []string{"level1/1_Softplus=1_Softplus.py", "level1/2_ReLU=2_ReLU.py", "level2/1_Scale_Tanh=1_Scale_Tanh.py"},
			missing: []string{"level1/3_Sum_rows"}, unmatched: 1},
		{name: "pattern", spec: "testdata/candidates/level1/*.py",
			pairs:   []string{"level1/1_Softplus=1_Softplus.py", "level1/2_ReLU=2_ReLU.py"},
			missing: []string{"level1/3_Sum_rows", "level2/1_Scale_Tanh"}, unmatched: 1},
		{name: "pattern matching nothing", spec: "testdata/candidates/level7/*.py", err: "matches no file"},
		{name: "not a folder", spec: "testdata/candidates/level1/1_Softplus.py", err: "not a folder"},
		{name: "absent", spec: "testdata/nowhere", err: "no such file"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			m, err := MatchCandidates(problems, tc.spec)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("err %v, want %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, p := range m.Pairs {
				got = append(got, p.Problem.Key()+"="+filepath.Base(p.CandidatePath))
				if p.CandidatePath != abs(p.CandidatePath) {
					t.Errorf("candidate path %s is not absolute", p.CandidatePath)
				}
			}
			if !reflect.DeepEqual(got, tc.pairs) || !reflect.DeepEqual(m.Missing, tc.missing) || len(m.Unmatched) != tc.unmatched {
				t.Errorf("pairs %v missing %v unmatched %v", got, m.Missing, m.Unmatched)
			}
		})
	}
}

func TestHeadline(t *testing.T) {
	cases := []struct {
		in   string
		n    int
		want string
	}{
		{in: "plain error", n: 100, want: "plain error"},
		{in: "evaluate: the harness's Python failed: Traceback (most recent call last):\n  File \"x.py\", line 3\n    x.clone()\nRuntimeError: can't allocate memory\n\n",
			n: 200, want: "evaluate: the harness's Python failed: … RuntimeError: can't allocate memory"},
		{in: "0123456789", n: 4, want: "0123…"},
		{in: "\n \n", n: 10, want: ""},
	}
	for _, tc := range cases {
		if got := headline(tc.in, tc.n); got != tc.want {
			t.Errorf("headline(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}
