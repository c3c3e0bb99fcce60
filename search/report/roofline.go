package report

import (
	"fmt"
	"math"
	"sort"

	"github.com/kevolve/kevolve-mcp/harness/sol"
)

// buildRoofline places every timed node with work counts at (intensity,
// attained FLOP/s) under the device's roof, using sol's axes so the picture
// matches `kevolve-mcp sol`.
func buildRoofline(g *graph, best int, ceil Ceilings, scale fitnessScale, runTSol *float64) roofView {
	rv := roofView{W: 470, H: 330, Title: "Roofline", XLabel: "arithmetic intensity (FLOP/byte)", YLabel: "attained FLOP/s"}
	rv.Plot = rect{X: 62, Y: 16, W: rv.W - 62 - 16, H: rv.H - 16 - 44}
	type placed struct {
		i        int
		ai, rate float64
	}
	var pts []placed
	var ais, rates []float64
	for i, n := range g.nodes {
		if n.Timing == nil || !(n.Timing.MedianS > 0) || !(n.FLOPs > 0) || !(n.Bytes > 0) || math.IsInf(n.FLOPs/n.Bytes, 0) || n.Verdict == "" {
			if n.Verdict != "" {
				rv.NotPlaced++
			}
			continue
		}
		pt := placed{i, n.FLOPs / n.Bytes, n.FLOPs / n.Timing.MedianS}
		pts = append(pts, pt)
		ais, rates = append(ais, pt.ai), append(rates, pt.rate)
	}
	rv.Placed = len(pts)
	if len(pts) == 0 && ceil.MemBandwidth > 0 {
		if bw := buildBandwidth(g, best, ceil, scale); bw.Placed > 0 {
			return bw
		}
	}
	if ceil.Peak() <= 0 || ceil.MemBandwidth <= 0 {
		rv.Empty = "no device ceilings were recorded for this run (calibrate the device, or name it), so there is no roofline"
		if ceil.Dtype != "" && ceil.MemBandwidth > 0 {
			rv.Empty = fmt.Sprintf("the device has no %s compute ceiling, so there is no roofline", ceil.Dtype)
		}
		return rv
	}
	// A kernel faster than the roof (a bad count or a cheat) must still show.
	top := ceil.Peak()
	for _, r := range rates {
		top = math.Max(top, r)
	}
	ax, err := sol.NewRooflineAxes(ceil.Peak(), ceil.MemBandwidth, ais, rates)
	if err != nil {
		rv.Empty = err.Error()
		return rv
	}
	if top > ax.YMax {
		ax.YMax = math.Pow(10, math.Ceil(math.Log10(top*1.5)))
	}
	px := func(x, y float64) (float64, float64) {
		fx, fy := ax.Frac(x, y)
		return rv.Plot.X + rv.Plot.W*fx, rv.Plot.Y + rv.Plot.H*(1-fy)
	}
	for _, x := range sol.Decades(ax.XMin, ax.XMax) {
		X, _ := px(x, ax.YMin)
		rv.XTicks = append(rv.XTicks, tick{X, sol.SI(x, "")})
	}
	for _, y := range sol.Decades(ax.YMin, ax.YMax) {
		_, Y := px(ax.XMin, y)
		rv.YTicks = append(rv.YTicks, tick{Y, sol.SI(y, "")})
	}
	x0, y0 := px(ax.XMin, ax.XMin*ceil.MemBandwidth)
	x1, y1 := px(ax.Ridge(), ceil.Peak())
	x2, y2 := px(ax.XMax, ceil.Peak())
	rv.Roof = fmt.Sprintf("M%.1f %.1fL%.1f %.1fL%.1f %.1f", x0, y0, x1, y1, x2, y2)
	rv.Ridge = x1
	rv.RoofLabel = fmt.Sprintf("%sFLOP/s %s · %sB/s", sol.SI(ceil.Peak(), ""), ceil.Dtype, sol.SI(ceil.MemBandwidth, ""))
	if ceil.Source != "" {
		rv.RoofLabel += " (" + ceil.Source + ")"
	}
	rv.RoofLabelXY = roofLabelAt(rv.RoofLabel, rv.Plot, x0, y0, x1, y1, x2, y2)
	// Draw the best last, on top.
	sort.SliceStable(pts, func(a, b int) bool { return pts[b].i == best })
	for _, pt := range pts {
		n := g.nodes[pt.i]
		X, Y := px(pt.ai, pt.rate)
		d := dotView{ID: n.ID, X: X, Y: Y, R: 4, Class: "pt"}
		d.Title = fmt.Sprintf("#%s · %s · %sFLOP/s at %.3g FLOP/B · %s", n.ID, verdictText(n), sol.SI(pt.rate, ""), pt.ai, sol.Dur(n.Timing.MedianS))
		if n.Verdict == "pass" {
			d.Fill, d.Stroke = scale.color(fitnessOf(n)), "#ffffff"
		} else {
			d.Fill, d.Stroke = "none", styleOf(n.Verdict).Color
			d.Path = markerPath("cross", X, Y, 3.5)
		}
		if pt.i == best {
			d.R, d.Class = 6.5, "pt best"
		}
		rv.Dots = append(rv.Dots, d)
	}
	// The speed of light and the eager reference, at the problem's intensity.
	if len(pts) > 0 {
		ref := g.nodes[pts[0].i]
		if best >= 0 && g.nodes[best].Timing != nil && g.nodes[best].FLOPs > 0 && g.nodes[best].Bytes > 0 {
			ref = g.nodes[best]
		}
		ai := ref.FLOPs / ref.Bytes
		tsol := ref.TSolS
		if tsol == nil {
			tsol = runTSol
		}
		if tsol != nil && *tsol > 0 {
			X, Y := px(ai, ref.FLOPs / *tsol)
			rv.Marks = append(rv.Marks, markView{"SOL " + sol.Dur(*tsol), "#1f4e9c", markerPath("diamond", X, Y, 5), X, Y})
		}
		if ref.SpeedupEager != nil && *ref.SpeedupEager > 0 && ref.Timing != nil {
			eager := ref.Timing.MedianS * *ref.SpeedupEager
			X, Y := px(ai, ref.FLOPs/eager)
			rv.Marks = append(rv.Marks, markView{"eager " + sol.Dur(eager), "#b35900", markerPath("square", X, Y, 4.5), X, Y})
		}
	}
	if len(pts) == 0 {
		rv.Empty = "no timed node has FLOP and byte counts, so none can be placed"
	}
	return rv
}

// buildBandwidth is the roofline's stand-in for work without FLOPs (copies,
// transposes, gathers): attained bytes/s per evaluation under the device's
// bandwidth, on a log scale.
func buildBandwidth(g *graph, best int, ceil Ceilings, scale fitnessScale) roofView {
	rv := roofView{W: 470, H: 330, Title: "Bandwidth", XLabel: "node, in creation order", YLabel: "attained bytes/s"}
	rv.Plot = rect{X: 62, Y: 16, W: rv.W - 62 - 16, H: rv.H - 16 - 44}
	type placed struct {
		i    int
		rate float64
	}
	var pts []placed
	lo := ceil.MemBandwidth
	for i, n := range g.nodes {
		if n.Verdict == "" || n.Timing == nil || !(n.Timing.MedianS > 0) || !(n.Bytes > 0) {
			if n.Verdict != "" {
				rv.NotPlaced++
			}
			continue
		}
		r := n.Bytes / n.Timing.MedianS
		pts = append(pts, placed{i, r})
		lo = math.Min(lo, r)
	}
	rv.Placed = len(pts)
	if len(pts) == 0 {
		return rv
	}
	hiRate := ceil.MemBandwidth
	for _, p := range pts {
		hiRate = math.Max(hiRate, p.rate)
	}
	ymax := math.Pow(10, math.Ceil(math.Log10(hiRate*1.5)))
	ymin := math.Max(ymax/1e6, math.Pow(10, math.Floor(math.Log10(lo/2))))
	n := float64(len(g.nodes))
	px := func(i int) float64 { return rv.Plot.X + rv.Plot.W*(float64(i)+0.5)/n }
	py := func(y float64) float64 {
		y = math.Max(y, ymin)
		return rv.Plot.Y + rv.Plot.H*(1-(math.Log10(y)-math.Log10(ymin))/(math.Log10(ymax)-math.Log10(ymin)))
	}
	for _, y := range sol.Decades(ymin, ymax) {
		rv.YTicks = append(rv.YTicks, tick{py(y), sol.SI(y, "B/s")})
	}
	for _, v := range niceTicks(0, n, 4) {
		if v >= 1 && v <= n {
			rv.XTicks = append(rv.XTicks, tick{px(int(v) - 1), trimFloat(v)})
		}
	}
	y := py(ceil.MemBandwidth)
	rv.Roof = fmt.Sprintf("M%.1f %.1fH%.1f", rv.Plot.X, y, rv.Plot.X+rv.Plot.W)
	rv.RoofLabel = sol.SI(ceil.MemBandwidth, "B/s") + " peak bandwidth"
	if ceil.Source != "" {
		rv.RoofLabel += " (" + ceil.Source + ")"
	}
	rv.RoofLabelXY = [2]float64{rv.Plot.X + rv.Plot.W - 4, y - 7}
	rv.Ridge = -1
	sort.SliceStable(pts, func(a, b int) bool { return pts[b].i == best })
	for _, p := range pts {
		nd := g.nodes[p.i]
		d := dotView{ID: nd.ID, X: px(p.i), Y: py(p.rate), R: 4, Class: "pt"}
		d.Title = fmt.Sprintf("#%s · %s · %s · %s", nd.ID, verdictText(nd), sol.SI(p.rate, "B/s"), sol.Dur(nd.Timing.MedianS))
		if nd.Verdict == "pass" {
			d.Fill, d.Stroke = scale.color(fitnessOf(nd)), "#ffffff"
		} else {
			d.Fill, d.Stroke = "none", styleOf(nd.Verdict).Color
			d.Path = markerPath("cross", d.X, d.Y, 3.5)
		}
		if p.i == best {
			d.R, d.Class = 6.5, "pt best"
		}
		rv.Dots = append(rv.Dots, d)
	}
	return rv
}

// roofLabelAt places the roof's label (right-aligned, 11 px) clear of the
// roof itself: above its flat part when the label fits between the ridge
// and the right edge; otherwise below the flat part, under the ridge's
// corner, where the roof never runs (the slope is left of the ridge and
// below the flat roof), moved left of the slope if it would still touch it.
func roofLabelAt(label string, plot rect, x0, y0, x1, y1, x2, y2 float64) [2]float64 {
	w := 0.62 * 11 * float64(len([]rune(label)))
	if x2-4-w > x1+4 && y2-7-11 >= plot.Y {
		return [2]float64{x2 - 4, y2 - 7}
	}
	// Below the flat part: the text's box is [x2-4-w, x2-4] × [y2+4, y2+16];
	// the slope at x lies at y1 + (x1-x)·slope, below y2 for x < x1.
	slope := 0.0
	if x1 > x0 {
		slope = (y0 - y1) / (x1 - x0)
	}
	left := x2 - 4 - w
	if left < x1 && y1+(x1-left)*slope > y2+4 {
		// The slope would cross the text's left end: shorten the run by
		// placing the text where the slope has fallen below it.
		return [2]float64{x2 - 4, math.Min(plot.Y+plot.H-4, y1+(x1-left)*slope+14)}
	}
	return [2]float64{x2 - 4, y2 + 16}
}
