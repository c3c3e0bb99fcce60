package report

import (
	"fmt"
	"strings"
	"testing"
	"time"
)

var t0 = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)

// tiny builds nodes from "id:parent,parent" specs, created one second apart.
func tiny(specs ...string) []Node {
	var out []Node
	for i, s := range specs {
		id, parents, _ := strings.Cut(s, ":")
		n := Node{ID: id, CreatedAt: t0.Add(time.Duration(i) * time.Second)}
		if parents != "" {
			n.Parents = strings.Split(parents, ",")
		}
		out = append(out, n)
	}
	return out
}

func TestTreeLayout(t *testing.T) {
	cases := []struct {
		name      string
		nodes     []Node
		depth     map[string]int
		slot      map[string]float64
		roots     int
		leaves    int
		extraFrom map[string][]string
	}{
		{
			name:  "root with three children, one with two",
			nodes: tiny("r", "a:r", "b:r", "c:r", "a1:a", "a2:a"),
			depth: map[string]int{"r": 0, "a": 1, "b": 1, "c": 1, "a1": 2, "a2": 2},
			// leaves a1 a2 b c take slots 0..3; a sits between a1 and a2, r between a and c.
			slot:   map[string]float64{"a1": 0, "a2": 1, "a": 0.5, "b": 2, "c": 3, "r": 1.75},
			roots:  1,
			leaves: 4,
		},
		{
			name:   "unknown parent and self parent make roots",
			nodes:  tiny("a:ghost", "b:b", "c:a"),
			depth:  map[string]int{"a": 0, "b": 0, "c": 1},
			slot:   map[string]float64{"c": 0, "a": 0, "b": 1},
			roots:  2,
			leaves: 2,
		},
		{
			name:   "a cycle is cut, every node still drawn",
			nodes:  tiny("a:c", "b:a", "c:b"),
			roots:  1,
			leaves: 1,
			depth:  map[string]int{},
			slot:   map[string]float64{},
		},
		{
			name:      "second parent is an extra (dashed) edge",
			nodes:     tiny("r", "a:r", "b:r", "x:a,b"),
			depth:     map[string]int{"x": 2},
			slot:      map[string]float64{"x": 0, "a": 0, "b": 1, "r": 0.5},
			roots:     1,
			leaves:    2,
			extraFrom: map[string][]string{"x": {"b"}},
		},
		{
			name: "input order does not matter, creation time does",
			nodes: func() []Node {
				n := tiny("r", "a:r", "b:r")
				return []Node{n[2], n[0], n[1]}
			}(),
			slot:   map[string]float64{"a": 0, "b": 1, "r": 0.5},
			depth:  map[string]int{},
			roots:  1,
			leaves: 2,
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			g := newGraph(c.nodes)
			if len(g.nodes) != len(c.nodes) || len(g.roots) != c.roots || g.leaves != c.leaves {
				t.Fatalf("nodes %d roots %d leaves %d, want %d %d %d", len(g.nodes), len(g.roots), g.leaves, len(c.nodes), c.roots, c.leaves)
			}
			for id, d := range c.depth {
				if got := g.depth[g.index[id]]; got != d {
					t.Errorf("depth(%s) = %d, want %d", id, got, d)
				}
			}
			for id, s := range c.slot {
				if got := g.slot[g.index[id]]; got != s {
					t.Errorf("slot(%s) = %v, want %v", id, got, s)
				}
			}
			for id, want := range c.extraFrom {
				var got []string
				for _, p := range g.extra[g.index[id]] {
					got = append(got, g.nodes[p].ID)
				}
				if fmt.Sprint(got) != fmt.Sprint(want) {
					t.Errorf("extra parents of %s = %v, want %v", id, got, want)
				}
			}
			// No two nodes share a position.
			seen := map[[2]float64]string{}
			for i, n := range g.nodes {
				k := [2]float64{float64(g.depth[i]), g.slot[i]}
				if o, dup := seen[k]; dup {
					t.Errorf("%s and %s overlap at %v", o, n.ID, k)
				}
				seen[k] = n.ID
			}
		})
	}
}

func TestTreeLayoutDeepChain(t *testing.T) {
	var specs []string
	specs = append(specs, "0")
	for i := 1; i < 20000; i++ {
		specs = append(specs, fmt.Sprintf("%d:%d", i, i-1))
	}
	g := newGraph(tiny(specs...))
	if g.maxDepth != 19999 || g.leaves != 1 || len(g.lineage(g.index["19999"])) != 20000 {
		t.Fatalf("deep chain: depth %d leaves %d", g.maxDepth, g.leaves)
	}
}

func TestBestSoFar(t *testing.T) {
	nodes := tiny("a", "b:a", "c:a", "d:b", "e:b", "f:c")
	fin := []int{1, 4, 2, 3, 5, 0} // seconds after t0+10s; f never finishes
	verdict := []string{"pass", "pass", "incorrect", "pass", "pass", ""}
	fit := []float64{1.0, 1.5, 9.0, 1.2, 2.0, 0}
	for i := range nodes {
		nodes[i].Verdict, nodes[i].Fitness = verdict[i], fit[i]
		if verdict[i] != "" {
			nodes[i].FinishedAt = t0.Add(10*time.Second + time.Duration(fin[i])*time.Second)
		}
	}
	g := newGraph(nodes)
	series := func(g *graph, byTime bool) string {
		var got []string
		for _, p := range bestSoFar(g, t0, byTime) {
			got = append(got, fmt.Sprintf("%s:%d:%.0f:%.1f:%.1f:%v", g.nodes[p.Node].ID, p.Eval, p.T, p.Fitness, p.Best, p.Improve))
		}
		return fmt.Sprint(got)
	}
	// Finish order a(11) c(12) d(13) b(14) e(15); c's fitness 9 is ignored (incorrect).
	want := fmt.Sprint([]string{"a:1:11:1.0:1.0:true", "c:2:12:0.0:1.0:false", "d:3:13:1.2:1.2:true", "b:4:14:1.5:1.5:true", "e:5:15:2.0:2.0:true"})
	if got := series(g, false); got != want {
		t.Fatalf("best so far\n got %v\nwant %v", got, want)
	}
	// The store's evaluation numbers win over finish times for the
	// evaluation axis (a resumed run's clocks may disagree), not for time.
	seq := append([]Node(nil), nodes...)
	for i, s := range []int{5, 4, 3, 2, 1} {
		seq[i].EvalSeq = s
	}
	gs := newGraph(seq)
	if got := series(gs, false); got != fmt.Sprint([]string{"e:1:15:2.0:2.0:true", "d:2:13:1.2:2.0:false", "c:3:12:0.0:2.0:false", "b:4:14:1.5:2.0:false", "a:5:11:1.0:2.0:false"}) {
		t.Fatalf("by EvalSeq: %v", got)
	}
	if got := series(gs, true); got != want {
		t.Fatalf("by time ignores EvalSeq: %v", got)
	}
	if b := bestNode(g, ""); g.nodes[b].ID != "e" {
		t.Fatalf("best = %s, want e", g.nodes[b].ID)
	}
	if b := bestNode(g, "d"); g.nodes[b].ID != "d" {
		t.Fatalf("the run's declared best is kept")
	}
	if b := bestNode(newGraph(tiny("x")), ""); b != -1 {
		t.Fatalf("no pass node, best = %d", b)
	}
}

func TestNiceTicks(t *testing.T) {
	cases := []struct {
		lo, hi float64
		want   string
	}{
		{0, 2.57, "[0 1 2 3]"},
		{0, 1.08, "[0 0.5 1 1.5]"},
		{1, 31, "[0 10 20 30 40]"},
	}
	for _, c := range cases {
		if got := fmt.Sprint(niceTicks(c.lo, c.hi, 4)); got != c.want {
			t.Errorf("niceTicks(%v, %v) = %s, want %s", c.lo, c.hi, got, c.want)
		}
	}
	if got := fmt.Sprint(timeTicks(444)); got != "[0 120 240 360 480]" {
		t.Errorf("timeTicks(444) = %s", got)
	}
}

func TestSpeedupStartDerivedFromTheRoot(t *testing.T) {
	given := 5.0
	nodes := tiny("r", "a:r", "b:a", "c:a", "s", "x:s")
	timed := func(m float64) *Timing { return &Timing{MedianS: m} }
	nodes[0].Verdict, nodes[0].Timing = "pass", timed(2)
	nodes[1].Verdict, nodes[1].Timing = "pass", timed(1)
	nodes[2].Verdict, nodes[2].Timing = "pass", timed(0.5)
	nodes[3].Verdict, nodes[3].Timing, nodes[3].SpeedupStart = "pass", timed(4), &given
	nodes[4].Verdict = "compile_error" // a second root that never ran
	nodes[5].Verdict, nodes[5].Timing = "pass", timed(1)
	g := newGraph(nodes)
	got := map[string]string{}
	for _, n := range g.nodes {
		got[n.ID] = "nil"
		if n.SpeedupStart != nil {
			got[n.ID] = fmt.Sprint(*n.SpeedupStart)
		}
	}
	want := map[string]string{"r": "1", "a": "2", "b": "4", "c": "5", "s": "nil", "x": "nil"}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("speedup vs start %v, want %v", got, want)
	}
	if *nodes[3].SpeedupStart != 5 || nodes[1].SpeedupStart != nil {
		t.Fatal("the caller's nodes were modified")
	}
}
