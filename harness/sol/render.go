package sol

import (
	"fmt"
	"io"
	"math"
	"strings"
	"text/tabwriter"
)

// WriteTable prints a report as `kevolve-mcp sol` shows it, with a bar that
// places the candidate between the reference and the speed of light.
func WriteTable(w io.Writer, r Report) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	p := func(format string, a ...any) { fmt.Fprintf(tw, format+"\n", a...) }
	p("work\t%s FLOP, %s moved (%s), intensity %.2f FLOP/B", si(r.FLOPs, ""), si(r.Bytes, "B"), r.WorkSource, r.ArithmeticIntensity)
	p("ceilings\t%s FLOP/s (%s), %s/s (%s)", si(r.PeakFLOPS, ""), r.Dtype, si(r.MemBandwidth, "B"), r.CeilingSource)
	p("bound\t%s: compute %s, memory %s", r.Bound, dur(r.TComputeS), dur(r.TMemoryS))
	p("speed of light\t%s", dur(r.TSolS))
	if r.ReferenceS != nil {
		p("reference\t%s (%.1f%% of SOL)", dur(*r.ReferenceS), 100*r.TSolS / *r.ReferenceS)
	}
	if r.CandidateS != nil {
		p("candidate\t%s", dur(*r.CandidateS))
	}
	if r.PctOfSol != nil {
		p("%% of SOL\t%.1f%%  %s", *r.PctOfSol, bar(*r.PctOfSol/100, 30))
	}
	if r.SolScore != nil {
		p("SOL score\t%.3f  (0.5 = the eager reference, 1 = speed of light)", *r.SolScore)
	}
	if r.Headroom != nil {
		p("headroom\t%.2fx left to the bound", *r.Headroom)
	}
	if r.FasterThanSol != nil && *r.FasterThanSol {
		p("WARNING\tfaster than the speed of light: the counts are wrong or the kernel skips work")
	}
	for _, n := range r.Notes {
		p("note\t%s", n)
	}
	p("summary\t%s", r.Summary)
	return tw.Flush()
}

func bar(frac float64, width int) string {
	frac = math.Max(0, math.Min(1, frac))
	n := int(math.Round(frac * float64(width)))
	return "[" + strings.Repeat("#", n) + strings.Repeat(".", width-n) + "]"
}

// WriteRooflineSVG draws the device's roofline (memory slope up to the ridge,
// then the compute ceiling) with the problem's arithmetic intensity and the
// attained rates of the reference and the candidate, on log-log axes.
func WriteRooflineSVG(w io.Writer, r Report) error {
	const W, H, left, right, top, bottom = 640.0, 420.0, 70.0, 20.0, 30.0, 50.0
	if r.ArithmeticIntensity <= 0 {
		return fmt.Errorf("roofline: the report lacks ceilings or an arithmetic intensity")
	}
	ax, err := NewRooflineAxes(r.PeakFLOPS, r.MemBandwidth, []float64{r.ArithmeticIntensity}, []float64{attained(r, r.ReferenceS)})
	if err != nil {
		return fmt.Errorf("roofline: the report lacks ceilings or an arithmetic intensity: %w", err)
	}
	ridge, xmin, xmax, ymin, ymax := ax.Ridge(), ax.XMin, ax.XMax, ax.YMin, ax.YMax
	px := func(x float64) float64 {
		fx, _ := ax.Frac(x, ymax)
		return left + (W-left-right)*fx
	}
	py := func(y float64) float64 {
		_, fy := ax.Frac(xmin, y)
		return H - bottom - (H-top-bottom)*fy
	}
	var b strings.Builder
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="%.0f" height="%.0f" font-family="sans-serif" font-size="12">`+"\n", W, H)
	fmt.Fprintf(&b, `<rect width="100%%" height="100%%" fill="white"/>`+"\n")
	// Axes and decade grid.
	for x := xmin; x <= xmax*1.001; x *= 10 {
		fmt.Fprintf(&b, `<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="#eee"/>`+"\n", px(x), top, px(x), H-bottom)
		fmt.Fprintf(&b, `<text x="%.1f" y="%.1f" text-anchor="middle">%s</text>`+"\n", px(x), H-bottom+16, si(x, ""))
	}
	for y := ymin; y <= ymax*1.001; y *= 10 {
		fmt.Fprintf(&b, `<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="#eee"/>`+"\n", left, py(y), W-right, py(y))
		fmt.Fprintf(&b, `<text x="%.1f" y="%.1f" text-anchor="end">%s</text>`+"\n", left-6, py(y)+4, si(y, ""))
	}
	fmt.Fprintf(&b, `<text x="%.1f" y="%.1f" text-anchor="middle">arithmetic intensity (FLOP/byte)</text>`+"\n", (W+left)/2, H-12)
	fmt.Fprintf(&b, `<text transform="translate(16,%.1f) rotate(-90)" text-anchor="middle">FLOP/s</text>`+"\n", (H-bottom+top)/2)
	// The roof.
	fmt.Fprintf(&b, `<polyline fill="none" stroke="#1f4e9c" stroke-width="2.5" points="%.1f,%.1f %.1f,%.1f %.1f,%.1f"/>`+"\n",
		px(xmin), py(xmin*r.MemBandwidth), px(ridge), py(r.PeakFLOPS), px(xmax), py(r.PeakFLOPS))
	fmt.Fprintf(&b, `<text x="%.1f" y="%.1f" fill="#1f4e9c" text-anchor="end">%s FLOP/s %s, %s/s (%s)</text>`+"\n",
		W-right-4, py(r.PeakFLOPS)-8, si(r.PeakFLOPS, ""), r.Dtype, si(r.MemBandwidth, "B"), r.CeilingSource)
	// The problem's intensity.
	fmt.Fprintf(&b, `<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="#999" stroke-dasharray="4 3"/>`+"\n",
		px(r.ArithmeticIntensity), top, px(r.ArithmeticIntensity), H-bottom)
	// The SOL label goes left of the line, the measured ones right, so a
	// candidate close to the bound stays readable.
	point := func(t *float64, color, label string, leftSide bool) {
		if t == nil || *t <= 0 {
			return
		}
		y := r.FLOPs / *t
		x, anchor := px(r.ArithmeticIntensity)+8, "start"
		if leftSide {
			x, anchor = px(r.ArithmeticIntensity)-8, "end"
		}
		fmt.Fprintf(&b, `<circle cx="%.1f" cy="%.1f" r="5" fill="%s"/>`+"\n", px(r.ArithmeticIntensity), py(y), color)
		fmt.Fprintf(&b, `<text x="%.1f" y="%.1f" fill="%s" text-anchor="%s">%s %s</text>`+"\n", x, py(y)+4, color, anchor, label, dur(*t))
	}
	sol := r.TSolS
	point(&sol, "#1f4e9c", "SOL", true)
	point(r.ReferenceS, "#b35900", "reference", false)
	point(r.CandidateS, "#2e7d32", "candidate", false)
	b.WriteString("</svg>\n")
	_, err = io.WriteString(w, b.String())
	return err
}

func attained(r Report, t *float64) float64 {
	if t == nil || *t <= 0 {
		return math.Inf(1)
	}
	return r.FLOPs / *t
}
