package engine

import (
	"strings"
	"testing"

	"github.com/kevolve/kevolve-mcp/search"
)

// TestWriteSummaryFigures: the summary reports the rejected proposals'
// tokens within the run's, and a speedup never measured as such, not 0.
func TestWriteSummaryFigures(t *testing.T) {
	cases := []struct {
		name     string
		sum      search.Summary
		want     []string
		unwanted []string
	}{
		{"rejected tokens", search.Summary{Tokens: 1200, Rejected: 2, RejectedTokens: 800},
			[]string{"1200 (800 of them in 2 rejected proposals)"}, nil},
		{"no tokens", search.Summary{}, nil, []string{"tokens"}},
		{"compile not timed", search.Summary{Best: &search.NodeSummary{ID: 2, Verdict: "pass", SpeedupVsEager: 1.5}},
			[]string{"over torch.compile  not measured", "over eager          1.50x", "over start          not measured"}, []string{"0.00x", "0.000"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var b strings.Builder
			if err := WriteSummary(&b, tc.sum); err != nil {
				t.Fatal(err)
			}
			for _, s := range tc.want {
				if !strings.Contains(b.String(), s) {
					t.Errorf("lacks %q:\n%s", s, b.String())
				}
			}
			for _, s := range tc.unwanted {
				if strings.Contains(b.String(), s) {
					t.Errorf("has %q:\n%s", s, b.String())
				}
			}
		})
	}
}
