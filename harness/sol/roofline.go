package sol

import (
	"fmt"
	"math"
)

// RooflineAxes are the log-log bounds of a roofline plot: arithmetic
// intensity (FLOP/byte) across, attained FLOP/s up. Both the single-kernel
// SVG here and the search report's many-node roofline place points with it,
// so the two pictures agree on where a kernel sits.
type RooflineAxes struct {
	XMin, XMax, YMin, YMax  float64
	PeakFLOPS, MemBandwidth float64
}

// NewRooflineAxes fits decade-aligned bounds around the ridge point and every
// intensity and attained rate given: a decade of margin left and right of
// the intensities, the peak with headroom on top, and at most six decades
// down so one slow outlier cannot flatten the picture.
func NewRooflineAxes(peakFLOPS, memBandwidth float64, intensities, rates []float64) (RooflineAxes, error) {
	if peakFLOPS <= 0 || memBandwidth <= 0 {
		return RooflineAxes{}, fmt.Errorf("roofline: no ceilings (peak %g FLOP/s, bandwidth %g B/s)", peakFLOPS, memBandwidth)
	}
	ridge := peakFLOPS / memBandwidth
	lo, hi := ridge, ridge
	for _, x := range intensities {
		if x > 0 && !math.IsInf(x, 0) {
			lo, hi = math.Min(lo, x), math.Max(hi, x)
		}
	}
	a := RooflineAxes{PeakFLOPS: peakFLOPS, MemBandwidth: memBandwidth}
	a.XMin = math.Pow(10, math.Floor(math.Log10(lo/10)))
	a.XMax = math.Pow(10, math.Ceil(math.Log10(hi*10)))
	a.YMax = math.Pow(10, math.Ceil(math.Log10(peakFLOPS*1.5)))
	low := a.XMin * memBandwidth
	for _, y := range rates {
		if y > 0 && !math.IsInf(y, 0) {
			low = math.Min(low, y/2)
		}
	}
	a.YMin = math.Max(a.YMax/1e6, low)
	if a.YMin <= 0 || math.IsNaN(a.YMin) {
		a.YMin = a.YMax / 1e6
	}
	return a, nil
}

// Ridge is the intensity where the memory slope meets the compute ceiling.
func (a RooflineAxes) Ridge() float64 { return a.PeakFLOPS / a.MemBandwidth }

// Frac places a point in the unit square: 0..1 across (intensity) and up
// (rate), on log scales; rates below the floor sit on it.
func (a RooflineAxes) Frac(intensity, rate float64) (fx, fy float64) {
	fx = (math.Log10(intensity) - math.Log10(a.XMin)) / (math.Log10(a.XMax) - math.Log10(a.XMin))
	rate = math.Max(rate, a.YMin)
	fy = (math.Log10(rate) - math.Log10(a.YMin)) / (math.Log10(a.YMax) - math.Log10(a.YMin))
	return fx, fy
}

// Decades lists the powers of ten from lo to hi inclusive, for grid lines.
func Decades(lo, hi float64) []float64 {
	var out []float64
	if !(lo > 0) || !(hi >= lo) {
		return out
	}
	// The powers of ten within [lo, hi], whatever lo is: an axis that
	// starts at 2.81e6 is ticked at 1e7, 1e8 ..., never 2.81e6, 2.81e7.
	for k := math.Ceil(math.Log10(lo) - 1e-9); k <= math.Floor(math.Log10(hi)+1e-9); k++ {
		out = append(out, math.Pow(10, k))
	}
	return out
}

// SI formats a figure with an SI prefix (1.5 T, 3 GB): the spelling every
// kevolve table and picture uses.
func SI(v float64, unit string) string { return si(v, unit) }

// Dur formats seconds as s, ms, µs or ns with three significant digits.
func Dur(s float64) string { return dur(s) }
