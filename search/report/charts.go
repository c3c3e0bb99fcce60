package report

import (
	"fmt"
	"math"
	"strings"
)

// niceTicks returns about n round tick values covering [lo, hi].
func niceTicks(lo, hi float64, n int) []float64 {
	if !(hi > lo) {
		hi = lo + 1
	}
	raw := (hi - lo) / float64(max(1, n))
	mag := math.Pow(10, math.Floor(math.Log10(raw)))
	step := mag
	for _, m := range []float64{1, 2, 2.5, 5, 10} {
		if m*mag >= raw {
			step = m * mag
			break
		}
	}
	var out []float64
	first, last := math.Floor(lo/step+1e-9), math.Ceil(hi/step-1e-9)
	for k := first; k <= last; k++ {
		v := k * step
		if v == 0 {
			v = 0 // not -0, which prints as "-0"
		}
		out = append(out, v)
	}
	return out
}

// chartView is a small line chart of best-so-far fitness.
type chartView struct {
	Title, XLabel, YLabel string
	W, H                  float64
	Plot                  rect
	XTicks, YTicks        []tick
	BestPath              string // the best-so-far step line
	Baseline              *tick  // y = 1 (the baseline) when in range
	Dots                  []dotView
	Empty                 string
}

type rect struct{ X, Y, W, H float64 }

type tick struct {
	Pos   float64
	Label string
}

// dotView is one clickable point of a chart or the roofline.
type dotView struct {
	ID, Class, Title, Fill, Stroke, Path string
	X, Y, R                              float64
}

type axisKind int

const (
	axisEvals axisKind = iota
	axisSeconds
)

// newBestChart draws best-so-far fitness against evaluations or seconds,
// with every evaluation's own fitness as a dot (failures on the floor).
func newBestChart(g *graph, pts []evalPoint, kind axisKind, scale fitnessScale, baseline string) chartView {
	c := chartView{W: 440, H: 300, YLabel: "best " + fitnessName(baseline)}
	c.Plot = rect{X: 50, Y: 14, W: c.W - 50 - 14, H: c.H - 14 - 40}
	if kind == axisEvals {
		c.Title, c.XLabel = "Best so far, by evaluation", "evaluation"
	} else {
		c.Title, c.XLabel = "Best so far, by wall time", "time since start"
	}
	if len(pts) == 0 {
		c.Empty = "no evaluation has finished yet"
		return c
	}
	xOf := func(p evalPoint) float64 {
		if kind == axisEvals {
			return float64(p.Eval)
		}
		return math.Max(0, p.T)
	}
	xlo, xhi := 0.0, 1.0
	if kind == axisEvals {
		xlo, xhi = 1, math.Max(2, float64(len(pts)))
	}
	ymax := 1.0
	for _, p := range pts {
		xhi = math.Max(xhi, xOf(p))
		ymax = math.Max(ymax, p.Fitness)
	}
	yt := niceTicks(0, ymax*1.08, 4)
	yhi := yt[len(yt)-1]
	xt := niceTicks(xlo, xhi, 5)
	if kind == axisSeconds {
		xt = timeTicks(xhi)
		xhi = math.Max(xhi, xt[len(xt)-1])
	}
	px := func(x float64) float64 { return c.Plot.X + c.Plot.W*(x-xlo)/(xhi-xlo) }
	py := func(y float64) float64 { return c.Plot.Y + c.Plot.H*(1-y/yhi) }
	for _, v := range xt {
		if v < xlo-1e-9 || v > xhi+1e-9 {
			continue
		}
		lbl := trimFloat(v)
		if kind == axisSeconds {
			lbl = shortDuration(v)
		}
		c.XTicks = append(c.XTicks, tick{px(v), lbl})
	}
	for _, v := range yt {
		c.YTicks = append(c.YTicks, tick{py(v), trimFloat(v) + "×"})
	}
	if baseline != "" && yhi >= 1 {
		c.Baseline = &tick{py(1), "baseline (" + baseline + ")"}
	}
	var path strings.Builder
	for k, p := range pts {
		x, y := px(xOf(p)), py(p.Best)
		if k == 0 {
			fmt.Fprintf(&path, "M%.1f %.1f", x, y)
		} else {
			fmt.Fprintf(&path, "H%.1fV%.1f", x, y)
		}
	}
	fmt.Fprintf(&path, "H%.1f", px(xhi))
	c.BestPath = path.String()
	for _, p := range pts {
		n := g.nodes[p.Node]
		d := dotView{ID: n.ID, X: px(xOf(p)), Y: py(p.Fitness), R: 3.2, Class: "pt"}
		d.Title = fmt.Sprintf("#%s · eval %d · %s", n.ID, p.Eval, verdictText(n))
		if n.Verdict == "pass" {
			d.Fill, d.Stroke = scale.color(p.Fitness), "#fff"
			if p.Improve {
				d.R, d.Class = 4.6, "pt improve"
			}
		} else {
			st := styleOf(n.Verdict)
			d.Y = py(0)
			d.Stroke, d.Fill = st.Color, "none"
			d.Path = markerPath("cross", d.X, d.Y, 3.2)
		}
		c.Dots = append(c.Dots, d)
	}
	return c
}

// timeTicks picks round durations (s, min, h) for a time axis up to hi
// seconds.
func timeTicks(hi float64) []float64 {
	steps := []float64{1, 2, 5, 10, 15, 30, 60, 120, 300, 600, 900, 1800, 3600, 7200, 10800, 21600, 43200, 86400}
	for _, step := range steps {
		if hi/step <= 5 {
			var out []float64
			for v := 0.0; ; v += step {
				out = append(out, v)
				if v >= hi {
					return out
				}
			}
		}
	}
	return niceTicks(0, hi, 5) // runs longer than days: plain round numbers
}

func shortDuration(s float64) string {
	switch {
	case s == 0:
		return "0"
	case s < 60:
		return trimFloat(s) + "s"
	case s < 3600:
		return trimFloat(math.Round(s/6)/10) + "m"
	case s < 86400*3:
		return trimFloat(math.Round(s/360)/10) + "h"
	default:
		return trimFloat(math.Round(s/8640)/10) + "d"
	}
}

// longDuration is a wall time as "1h 02m", "12m 04s" or "8.4 s".
func longDuration(s float64) string {
	switch {
	case s < 60:
		return fmt.Sprintf("%.1f s", s)
	case s < 3600:
		return fmt.Sprintf("%dm %02ds", int(s)/60, int(s)%60)
	default:
		return fmt.Sprintf("%dh %02dm", int(s)/3600, int(s)%3600/60)
	}
}

func trimFloat(v float64) string {
	s := fmt.Sprintf("%.3g", v)
	if strings.ContainsAny(s, "e") {
		s = fmt.Sprintf("%.0f", v)
	}
	return s
}

func fitnessName(baseline string) string {
	if baseline == "" {
		return "fitness"
	}
	return "speedup vs " + baseline
}

func verdictText(n Node) string {
	if n.Verdict == "" {
		return "pending"
	}
	if n.Verdict == "pass" {
		return fmt.Sprintf("pass · fitness %s×", trimFloat(fitnessOf(n)))
	}
	return n.Verdict
}
