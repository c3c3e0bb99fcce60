package report

import (
	"fmt"
	"math"
	"sort"
	"time"

	"github.com/kevolve/kevolve-mcp/harness/sol"
)

// page is everything the template draws; all numbers are computed here so
// the template only places them.
type page struct {
	Title    string
	Meta     []kv
	Cards    []card
	Verdicts []verdictCount
	Tree     treeView
	Legend   legendView
	Evals    chartView
	Time     chartView
	Roof     roofView
	Top      []topRow
	Total    int
	BestID   string
	Made     string
}

type kv struct{ K, V string }

type card struct{ Label, Value, Sub, Class string }

type verdictCount struct {
	Verdict, Label, Color string
	N                     int
}

type treeView struct {
	W, H  float64
	Edges []edgeView
	Nodes []nodeView
}

type edgeView struct{ D, Class string }

type nodeView struct {
	ID, Class, Title, Fill, Stroke, Path, Label, Anchor string
	X, Y, R, HitR, LabelX, LabelY                       float64
	Circle                                              bool
}

type legendView struct {
	Stops  []stop
	Lo, Hi string
	Shapes []shapeView
}

type stop struct {
	Offset string
	Color  string
}

type shapeView struct {
	Label, Color, Path string
	Circle             bool
}

type roofView struct {
	Title       string
	XLabel      string
	YLabel      string
	W, H        float64
	Plot        rect
	XTicks      []tick
	YTicks      []tick
	Roof        string
	RoofLabel   string
	RoofLabelXY [2]float64
	Ridge       float64
	Dots        []dotView
	Marks       []markView
	Empty       string
	NotPlaced   int
	Placed      int
}

type markView struct {
	Label, Color, Path string
	X, Y               float64
}

type topRow struct {
	Rank                         int
	ID, Fitness, Pct, Op, Median string
	Color                        string
}

func buildPage(run Run, nodes []Node, ceil Ceilings, now time.Time) (*page, *graph, int) {
	g := newGraph(nodes)
	best := bestNode(g, run.BestNodeID)
	start := runStart(run, g)
	pts := bestSoFar(g, start, false)
	scale := newFitnessScale(g)
	p := &page{Total: len(g.nodes), Made: now.UTC().Format("2006-01-02 15:04 UTC")}
	p.Title = "kevolve run"
	if run.ID != "" {
		p.Title += " " + run.ID
	}
	if run.Problem != "" {
		p.Title += " · " + run.Problem
	}
	for _, m := range []kv{{"run", run.ID}, {"problem", run.Problem}, {"target", run.Target}, {"device", run.Device},
		{"policy", run.Policy}, {"operator", run.Operator}, {"baseline", run.Baseline}, {"status", run.Status}, {"stopped by", run.StopReason}} {
		if m.V != "" {
			p.Meta = append(p.Meta, m)
		}
	}
	p.Cards = headerCards(run, g, best, pts, start, now)
	p.Verdicts = verdictCounts(g)
	if best >= 0 {
		p.BestID = g.nodes[best].ID
	}
	p.Tree = buildTree(g, best, scale)
	p.Legend = buildLegend(g, scale)
	p.Evals = newBestChart(g, pts, axisEvals, scale, run.Baseline)
	p.Time = newBestChart(g, bestSoFar(g, start, true), axisSeconds, scale, run.Baseline)
	p.Roof = buildRoofline(g, best, ceil, scale, run.TSolS)
	p.Top = topRows(g, scale, 8)
	return p, g, best
}

// runStart is the run's start, else its earliest node time.
func runStart(run Run, g *graph) time.Time {
	if !run.StartedAt.IsZero() {
		return run.StartedAt
	}
	var t time.Time
	for _, n := range g.nodes {
		for _, nt := range []time.Time{n.CreatedAt, n.FinishedAt} {
			if !nt.IsZero() && (t.IsZero() || nt.Before(t)) {
				t = nt
			}
		}
	}
	return t
}

// wallSeconds is EndedAt-StartedAt, or up to the latest node time while the
// run is still going (a report should not change just because it is re-read
// later).
func wallSeconds(run Run, g *graph, start time.Time) float64 {
	if run.WallS > 0 {
		return run.WallS
	}
	end := run.EndedAt
	if end.IsZero() {
		for _, n := range g.nodes {
			for _, t := range []time.Time{n.CreatedAt, n.FinishedAt} {
				if t.After(end) {
					end = t
				}
			}
		}
	}
	if start.IsZero() || end.Before(start) {
		return 0
	}
	return end.Sub(start).Seconds()
}

func headerCards(run Run, g *graph, best int, pts []evalPoint, start, now time.Time) []card {
	x := func(v *float64) string {
		if v == nil {
			return "–"
		}
		return fmt.Sprintf("%.2f×", *v)
	}
	var b Node
	bestSub := "nothing passed yet"
	if best >= 0 {
		b = g.nodes[best]
		bestSub = "best node #" + b.ID
	}
	pending := 0
	for _, n := range g.nodes {
		if n.Verdict == "" {
			pending++
		}
	}
	evals := fmt.Sprint(len(pts))
	if run.BudgetEvals > 0 {
		evals += fmt.Sprintf(" / %d", run.BudgetEvals)
	}
	evalSub := fmt.Sprintf("%d nodes", len(g.nodes))
	if failed := countVerdict(g, verdictFailed); failed > 0 {
		evalSub += fmt.Sprintf(", %d failed proposals", failed)
	}
	if pending > 0 {
		evalSub += fmt.Sprintf(", %d pending", pending)
	}
	pct, pctSub := "–", "no SOL figure"
	if best >= 0 && b.PctOfSol != nil {
		pct = fmt.Sprintf("%.1f%%", *b.PctOfSol)
		pctSub = "of the speed of light"
		if b.SolScore != nil {
			pctSub = fmt.Sprintf("SOL score %.2f", *b.SolScore)
		}
	}
	wall := wallSeconds(run, g, start)
	wallSub := run.Status
	if run.BudgetWall > 0 {
		wallSub = fmt.Sprintf("of %s budget", longDuration(run.BudgetWall.Seconds()))
	}
	cards := []card{
		{"speedup vs start", x(b.SpeedupStart), bestSub, "hero"},
		{"vs eager", x(b.SpeedupEager), "torch eager", ""},
		{"vs torch.compile", x(b.SpeedupCompile), "torch.compile", ""},
		{"% of SOL", pct, pctSub, ""},
		{"evaluations", evals, evalSub, ""},
		{"wall time", longDuration(wall), wallSub, ""},
	}
	if best < 0 {
		for i := range 4 {
			cards[i].Value = "–"
		}
	}
	return cards
}

func verdictCounts(g *graph) []verdictCount {
	counts := map[string]int{}
	for _, n := range g.nodes {
		counts[n.Verdict]++
	}
	var out []verdictCount
	seen := map[string]bool{}
	for _, v := range verdictOrder {
		seen[v] = true
		if counts[v] > 0 {
			st := styleOf(v)
			out = append(out, verdictCount{v, st.Label, st.Color, counts[v]})
		}
	}
	var other []string
	for v := range counts {
		if !seen[v] {
			other = append(other, v)
		}
	}
	sort.Strings(other)
	for _, v := range other {
		st := styleOf(v)
		out = append(out, verdictCount{v, v, st.Color, counts[v]})
	}
	if len(out) > 0 && out[0].Verdict == "pass" {
		out[0].Label = "pass"
	}
	return out
}

// Tree geometry: depth runs left to right, leaves top to bottom; spacing
// shrinks with the run so a few hundred nodes stay on a scrollable canvas.
func buildTree(g *graph, best int, scale fitnessScale) treeView {
	const padL, padT, padR, padB, width = 26.0, 26.0, 90.0, 18.0, 740.0
	dx := math.Max(26, math.Min(96, (width-padL-padR)/math.Max(1, float64(g.maxDepth))))
	dy := 26.0
	if g.leaves > 24 {
		dy = math.Max(13, math.Min(26, 620/float64(g.leaves)))
	}
	r := math.Min(7.5, dy*0.34)
	t := treeView{W: math.Max(width, padL+padR+dx*float64(g.maxDepth)), H: padT + padB + dy*math.Max(0, float64(g.leaves-1))}
	pos := func(i int) (float64, float64) { return padL + dx*float64(g.depth[i]), padT + dy*g.slot[i] }
	onLineage := map[int]bool{}
	if best >= 0 {
		for _, i := range g.lineage(best) {
			onLineage[i] = true
		}
	}
	curve := func(a, b int) string {
		x1, y1 := pos(a)
		x2, y2 := pos(b)
		mx := (x1 + x2) / 2
		return fmt.Sprintf("M%.1f %.1fC%.1f %.1f %.1f %.1f %.1f %.1f", x1, y1, mx, y1, mx, y2, x2, y2)
	}
	// Lineage edges last so they draw on top.
	var lineageEdges []edgeView
	for i := range g.nodes {
		if p := g.parent[i]; p >= 0 {
			e := edgeView{D: curve(p, i), Class: "edge"}
			if onLineage[i] && onLineage[p] {
				e.Class = "edge lineage"
				lineageEdges = append(lineageEdges, e)
				continue
			}
			t.Edges = append(t.Edges, e)
		}
		for _, p := range g.extra[i] {
			t.Edges = append(t.Edges, edgeView{D: curve(p, i), Class: "edge extra"})
		}
	}
	t.Edges = append(t.Edges, lineageEdges...)
	showLabels := dy >= 20 && len(g.nodes) <= 150
	for i, n := range g.nodes {
		x, y := pos(i)
		st := styleOf(n.Verdict)
		v := nodeView{ID: n.ID, X: x, Y: y, R: r, HitR: math.Max(r+3, dy/2)}
		v.Class = "node v-" + cssToken(n.Verdict)
		v.Title = fmt.Sprintf("#%s · %s", n.ID, verdictText(n))
		if n.Operator != "" {
			v.Title += " · " + n.Operator
		}
		if n.Message != "" {
			v.Title += "\n" + clip(n.Message, 200)
		}
		switch st.Shape {
		case "circle":
			v.Circle, v.Fill, v.Stroke = true, scale.color(fitnessOf(n)), "#ffffff"
		case "ring":
			v.Circle, v.Fill, v.Stroke = true, "#ffffff", st.Color
			v.Class += " pending"
		default:
			v.Path, v.Stroke = markerPath(st.Shape, x, y, r), st.Color
			v.Fill = "#ffffff"
			if st.Shape == "cross" {
				v.Fill = "none"
			}
		}
		if onLineage[i] {
			v.Class += " lineage"
		}
		if i == best {
			v.Class += " best"
			v.R = r * 1.45
			v.Label = fmt.Sprintf("best %.2f×", fitnessOf(n))
		} else if showLabels && n.Verdict == "pass" {
			v.Label = fmt.Sprintf("%.2f×", fitnessOf(n))
		}
		// Leaves are labelled on their right, where no edge runs; inner
		// nodes above, clear of the edges that leave them rightwards.
		if len(g.children[i]) == 0 {
			v.LabelX, v.LabelY, v.Anchor = x+v.R+4, y+3.5, "start"
		} else {
			v.LabelX, v.LabelY, v.Anchor = x, y-v.R-4, "middle"
		}
		keepLabelInside(&v, t.W, i == best)
		t.Nodes = append(t.Nodes, v)
	}
	return t
}

// labelWidth estimates a tree label's width in px (.nlabel is 10 px, the
// best node's 11 px bold: about 0.62 em a character, digits included).
func labelWidth(label string, best bool) float64 {
	em := 10.0
	if best {
		em = 11.5
	}
	return 0.62 * em * float64(len([]rune(label)))
}

// keepLabelInside moves a label that would cross the tree's edges (the
// root's label, centred above a node at the left margin, was clipped):
// anchored at the node's left instead of centred, or ending at the right
// edge; a label with no room above goes below the node.
func keepLabelInside(v *nodeView, width float64, best bool) {
	if v.Label == "" {
		return
	}
	w := labelWidth(v.Label, best)
	switch {
	case v.Anchor == "middle" && v.LabelX-w/2 < 2:
		v.LabelX, v.Anchor = math.Max(2, v.X-v.R), "start"
	case v.Anchor == "middle" && v.LabelX+w/2 > width-2:
		v.LabelX, v.Anchor = math.Min(width-2, v.X+v.R), "end"
	case v.Anchor == "start" && v.LabelX+w > width-2:
		v.LabelX, v.LabelY, v.Anchor = math.Min(width-2, v.X+v.R), v.Y-v.R-4, "end"
	}
	if v.LabelY-11 < 0 {
		v.LabelY = v.Y + v.R + 12
	}
}

func countVerdict(g *graph, verdict string) int {
	n := 0
	for _, nd := range g.nodes {
		if nd.Verdict == verdict {
			n++
		}
	}
	return n
}

func buildLegend(g *graph, scale fitnessScale) legendView {
	l := legendView{}
	for k := 0; k <= 10; k++ {
		l.Stops = append(l.Stops, stop{fmt.Sprintf("%d%%", k*10), viridisAt(float64(k) / 10)})
	}
	l.Lo, l.Hi = fmt.Sprintf("%.2f×", scale.lo), fmt.Sprintf("%.2f×", scale.hi)
	present := map[string]bool{}
	for _, n := range g.nodes {
		present[n.Verdict] = true
	}
	for _, v := range verdictOrder[1:] {
		if !present[v] {
			continue
		}
		st := styleOf(v)
		sv := shapeView{Label: st.Label, Color: st.Color}
		switch st.Shape {
		case "ring":
			sv.Circle = true
		default:
			sv.Path = markerPath(st.Shape, 8, 8, 5.5)
		}
		l.Shapes = append(l.Shapes, sv)
	}
	return l
}

func topRows(g *graph, scale fitnessScale, k int) []topRow {
	var idx []int
	for i, n := range g.nodes {
		if n.Verdict == "pass" {
			idx = append(idx, i)
		}
	}
	sort.SliceStable(idx, func(a, b int) bool { return fitnessOf(g.nodes[idx[a]]) > fitnessOf(g.nodes[idx[b]]) })
	var out []topRow
	for r, i := range idx {
		if r == k {
			break
		}
		n := g.nodes[i]
		row := topRow{Rank: r + 1, ID: n.ID, Fitness: fmt.Sprintf("%.2f×", fitnessOf(n)), Op: n.Operator, Color: scale.color(fitnessOf(n)), Pct: "–", Median: "–"}
		if n.PctOfSol != nil {
			row.Pct = fmt.Sprintf("%.1f%%", *n.PctOfSol)
		}
		if n.Timing != nil && n.Timing.MedianS > 0 {
			row.Median = sol.Dur(n.Timing.MedianS)
		}
		out = append(out, row)
	}
	return out
}

// cssToken keeps a verdict usable as a class name whatever the caller sent.
func cssToken(s string) string {
	if s == "" {
		return "pending"
	}
	b := []byte(s)
	for i, c := range b {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-') {
			b[i] = '_'
		}
	}
	return string(b)
}

func clip(s string, n int) string {
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return string(r[:n]) + "…"
}
