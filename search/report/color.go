package report

import (
	"fmt"
	"math"
)

// viridis, sampled: perceptually even and readable by colour-blind eyes, so
// "greener/yellower is faster" holds for everyone.
var viridis = [][3]float64{
	{68, 1, 84}, {72, 40, 120}, {62, 74, 137}, {49, 104, 142}, {38, 130, 142},
	{31, 158, 137}, {53, 183, 121}, {109, 205, 89}, {180, 222, 44}, {253, 231, 37},
}

func viridisAt(t float64) string {
	t = math.Max(0, math.Min(1, t))
	f := t * float64(len(viridis)-1)
	i := int(math.Floor(f))
	if i >= len(viridis)-1 {
		i, f = len(viridis)-2, float64(len(viridis)-1)
	}
	u := f - float64(i)
	c := [3]float64{}
	for k := range c {
		c[k] = viridis[i][k] + (viridis[i+1][k]-viridis[i][k])*u
	}
	return fmt.Sprintf("#%02x%02x%02x", int(math.Round(c[0])), int(math.Round(c[1])), int(math.Round(c[2])))
}

// fitnessScale maps pass fitness to a colour on a log scale between the
// run's lowest and highest pass fitness.
type fitnessScale struct{ lo, hi float64 }

func newFitnessScale(g *graph) fitnessScale {
	s := fitnessScale{lo: math.Inf(1), hi: math.Inf(-1)}
	for _, n := range g.nodes {
		if f := fitnessOf(n); n.Verdict == "pass" && f > 0 {
			s.lo, s.hi = math.Min(s.lo, f), math.Max(s.hi, f)
		}
	}
	if math.IsInf(s.lo, 1) {
		s.lo, s.hi = 1, 1
	}
	return s
}

func (s fitnessScale) t(f float64) float64 {
	if f <= 0 {
		return 0
	}
	if s.hi <= s.lo {
		return 0.6
	}
	return (math.Log(f) - math.Log(s.lo)) / (math.Log(s.hi) - math.Log(s.lo))
}

func (s fitnessScale) color(f float64) string { return viridisAt(s.t(f)) }

// verdictStyle is how a verdict is drawn: its colour and the shape of its
// marker, so a failure reads without relying on colour alone.
type verdictStyle struct {
	Color string
	Shape string // circle | cross | square | triangle | diamond | ring
	Label string
}

var verdictStyles = map[string]verdictStyle{
	"pass":                {"#2b8a3e", "circle", "pass (colour = fitness)"},
	"incorrect":           {"#e8590c", "cross", "incorrect"},
	"compile_error":       {"#868e96", "square", "compile error"},
	"runtime_error":       {"#ae3ec9", "triangle", "runtime error"},
	"crash":               {"#862e9c", "triangle", "crash"},
	"timeout":             {"#5f3dc4", "triangle", "timeout"},
	"integrity_violation": {"#e03131", "diamond", "integrity violation"},
	"reference_error":     {"#495057", "cross", "reference error"},
	"shape_specialized":   {"#f08c00", "cross", "shape specialized"},
	"failed":              {"#343a40", "cross", "failed (no verdict)"},
	"":                    {"#adb5bd", "ring", "pending"},
}

// verdictOrder is the legend's and the counts' order.
var verdictOrder = []string{"pass", "incorrect", "shape_specialized", "compile_error", "runtime_error", "crash", "timeout", "integrity_violation", "reference_error", "failed", ""}

func styleOf(verdict string) verdictStyle {
	if s, ok := verdictStyles[verdict]; ok {
		return s
	}
	return verdictStyle{"#495057", "cross", verdict}
}

// markerPath is an SVG path for a non-circle marker of radius r at (x, y).
func markerPath(shape string, x, y, r float64) string {
	switch shape {
	case "cross":
		a := r * 0.8
		return fmt.Sprintf("M%.1f %.1fL%.1f %.1fM%.1f %.1fL%.1f %.1f", x-a, y-a, x+a, y+a, x-a, y+a, x+a, y-a)
	case "square":
		a := r * 0.85
		return fmt.Sprintf("M%.1f %.1fh%.1fv%.1fh%.1fz", x-a, y-a, 2*a, 2*a, -2*a)
	case "triangle":
		return fmt.Sprintf("M%.1f %.1fL%.1f %.1fL%.1f %.1fz", x, y-r, x+r*0.95, y+r*0.75, x-r*0.95, y+r*0.75)
	case "diamond":
		a := r * 1.1
		return fmt.Sprintf("M%.1f %.1fL%.1f %.1fL%.1f %.1fL%.1f %.1fz", x, y-a, x+a, y, x, y+a, x-a, y)
	}
	return ""
}
