package sol

import (
	"math"
	"testing"
)

func TestRooflineAxes(t *testing.T) {
	ax, err := NewRooflineAxes(770e12, 3e12, []float64{1.25, 0, math.Inf(1)}, []float64{2e12, 5e9})
	if err != nil {
		t.Fatal(err)
	}
	// Ridge 256.7 FLOP/B; intensities 1.25..ridge with a decade each side;
	// the peak with headroom on top and at most six decades down (the 5e9
	// point sits on the floor).
	if ax.XMin != 0.1 || ax.XMax != 1e4 || ax.YMax != 1e16 || ax.YMin != 1e10 {
		t.Fatalf("axes %+v", ax)
	}
	fx, fy := ax.Frac(ax.XMin, ax.YMin/10) // below the floor sits on it
	if fx != 0 || fy != 0 {
		t.Fatalf("corner at (%g, %g)", fx, fy)
	}
	if fx, fy := ax.Frac(ax.XMax, ax.YMax); math.Abs(fx-1) > 1e-12 || math.Abs(fy-1) > 1e-12 {
		t.Fatalf("far corner at (%g, %g)", fx, fy)
	}
	// One absurdly slow point cannot flatten the plot beyond six decades.
	ax, _ = NewRooflineAxes(770e12, 3e12, []float64{1}, []float64{1})
	if ax.YMin != ax.YMax/1e6 {
		t.Fatalf("floor %g", ax.YMin)
	}
	if _, err := NewRooflineAxes(0, 3e12, nil, nil); err == nil {
		t.Fatal("no peak accepted")
	}
	if got := len(Decades(0.1, 1e4)); got != 6 {
		t.Fatalf("%d decades", got)
	}
}

// Axis ticks are the powers of ten inside the axis, wherever it starts.
func TestDecadesArePowersOfTen(t *testing.T) {
	cases := []struct {
		lo, hi float64
		want   []float64
	}{
		{2.81e6, 3e9, []float64{1e7, 1e8, 1e9}},
		{1e-1, 1e3, []float64{0.1, 1, 10, 100, 1000}},
		{0.0281, 0.5, []float64{0.1}},
		{5, 9, nil},
		{0, 10, nil},
	}
	for _, c := range cases {
		got := Decades(c.lo, c.hi)
		if len(got) != len(c.want) {
			t.Errorf("Decades(%g, %g) = %v, want %v", c.lo, c.hi, got, c.want)
			continue
		}
		for i := range got {
			if math.Abs(got[i]/c.want[i]-1) > 1e-12 {
				t.Errorf("Decades(%g, %g) = %v, want %v", c.lo, c.hi, got, c.want)
			}
		}
	}
}
