package sol

import (
	"bytes"
	"strings"
	"testing"
)

func TestRenderTableAndRoofline(t *testing.T) {
	ceil := Ceilings{PeakFLOPS: map[string]float64{"bf16": 770e12}, MemBandwidth: 3.0e12, Source: "measured"}
	// A memory-bound elementwise op: 2^28 bf16 in and out.
	work := Work{FLOPs: 1 << 28, Bytes: 4 << 28, Dtype: "bf16", Source: "declared"}
	rep := Report{Result: Analyze(work, ceil, 400e-6, 800e-6, true)}

	var tbl bytes.Buffer
	if err := WriteTable(&tbl, rep); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"memory", "speed of light", "SOL score", "89.5%  [###"} {
		if !strings.Contains(tbl.String(), want) {
			t.Errorf("table lacks %q:\n%s", want, tbl.String())
		}
	}
	var svg bytes.Buffer
	if err := WriteRooflineSVG(&svg, rep); err != nil {
		t.Fatal(err)
	}
	s := svg.String()
	if !strings.HasPrefix(s, "<svg") || strings.Count(s, "<circle") != 3 || !strings.Contains(s, "candidate") || strings.Contains(s, "NaN") {
		t.Fatalf("roofline SVG malformed:\n%s", s)
	}
	if err := WriteRooflineSVG(&svg, Report{}); err == nil {
		t.Fatal("a report without ceilings drew a roofline")
	}
}
