package report

import (
	"fmt"
	"io"
	"math"
	"strings"

	"github.com/kevolve/kevolve-mcp/harness/sol"
)

// WriteText writes a short plain-text summary of a run for the CLI: the
// best node with its speedups and % of SOL, verdict counts, the best
// lineage, a best-so-far sparkline and the top kernels.
func WriteText(w io.Writer, run Run, nodes []Node) error {
	g := newGraph(nodes)
	best := bestNode(g, run.BestNodeID)
	start := runStart(run, g)
	pts := bestSoFar(g, start, false)
	var b strings.Builder
	line := func(label, format string, a ...any) {
		fmt.Fprintf(&b, "%-12s%s\n", label, fmt.Sprintf(format, a...))
	}
	var head []string
	for _, s := range []string{run.ID, run.Problem, run.Target, run.Device} {
		if s != "" {
			head = append(head, s)
		}
	}
	if run.Policy != "" || run.Operator != "" {
		head = append(head, strings.Trim(run.Policy+"/"+run.Operator, "/"))
	}
	if run.Status != "" {
		head = append(head, run.Status)
	}
	line("run", "%s", strings.Join(head, " · "))
	evals := fmt.Sprint(len(pts))
	if run.BudgetEvals > 0 {
		evals += fmt.Sprintf("/%d", run.BudgetEvals)
	}
	pending := len(g.nodes) - len(pts)
	line("evaluations", "%s (%d nodes, %d pending) · wall %s", evals, len(g.nodes), pending, longDuration(wallSeconds(run, g, start)))
	var vc []string
	for _, v := range verdictCounts(g) {
		name := v.Verdict
		if name == "" {
			name = "pending"
		}
		vc = append(vc, fmt.Sprintf("%s %d", name, v.N))
	}
	line("verdicts", "%s", strings.Join(vc, " · "))
	if best < 0 {
		line("best", "no node passed")
	} else {
		n := g.nodes[best]
		parts := []string{}
		add := func(v *float64, what string) {
			if v != nil {
				parts = append(parts, fmt.Sprintf("%.2f× vs %s", *v, what))
			}
		}
		add(n.SpeedupStart, "start")
		add(n.SpeedupEager, "eager")
		add(n.SpeedupCompile, "torch.compile")
		if n.PctOfSol != nil {
			parts = append(parts, fmt.Sprintf("%.1f%% of SOL", *n.PctOfSol))
		}
		if n.Timing != nil && n.Timing.MedianS > 0 {
			parts = append(parts, sol.Dur(n.Timing.MedianS))
		}
		if len(parts) == 0 {
			parts = append(parts, fmt.Sprintf("fitness %.2f", fitnessOf(n)))
		}
		line("best", "#%s: %s", n.ID, strings.Join(parts, ", "))
		lin := g.lineage(best)
		var steps []string
		for k := len(lin) - 1; k >= 0; k-- {
			m := g.nodes[lin[k]]
			steps = append(steps, fmt.Sprintf("#%s %.2f×", m.ID, fitnessOf(m)))
		}
		if len(steps) > 8 {
			steps = append(append(steps[:3:3], "…"), steps[len(steps)-4:]...)
		}
		line("lineage", "%s", strings.Join(steps, " → "))
	}
	if len(pts) > 0 {
		line("best so far", "%s", sparkline(pts, 60))
	}
	if top := topRows(g, newFitnessScale(g), 5); len(top) > 0 {
		var t []string
		for _, r := range top {
			t = append(t, fmt.Sprintf("#%s %s", r.ID, r.Fitness))
		}
		line("top", "%s", strings.Join(t, "  "))
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// sparkline draws best-so-far fitness over evaluations with block
// characters, at most width wide (evaluations are sampled when there are
// more).
func sparkline(pts []evalPoint, width int) string {
	blocks := []rune("▁▂▃▄▅▆▇█")
	lo, hi := pts[0].Best, pts[0].Best
	for _, p := range pts {
		lo, hi = min(lo, p.Best), max(hi, p.Best)
	}
	n := min(width, len(pts))
	var b strings.Builder
	for k := 0; k < n; k++ {
		p := pts[(k+1)*len(pts)/n-1]
		i := len(blocks) / 2
		if hi > lo {
			i = int(math.Round((p.Best - lo) / (hi - lo) * float64(len(blocks)-1)))
		}
		b.WriteRune(blocks[i])
	}
	return b.String()
}
