package retrieval

import (
	"strings"
	"testing"
)

func TestFitCutsInOrder(t *testing.T) {
	long := strings.Repeat("word ", 300)
	resp := func() *Response {
		r := &Response{SearchText: "softmax"}
		for i := 0; i < 4; i++ {
			r.Results = append(r.Results, Result{Path: "guidance/r" + string(rune('a'+i)) + ".md", Title: "R", Passage: long})
			r.Constraints = append(r.Constraints, Result{Path: "constraints/c" + string(rune('a'+i)) + ".md", Title: "C",
				Summary: "a rule stated at length", Passage: long, Topics: []string{"integrity"}})
		}
		return r
	}
	full := resp().size()
	tests := []struct {
		name   string
		budget int
		check  func(t *testing.T, r *Response)
	}{
		{"within the budget: unchanged", full, func(t *testing.T, r *Response) {
			if r.Omitted != "" || r.Constraints[0].Passage == "" {
				t.Fatalf("cut %q", r.Omitted)
			}
		}},
		{"constraints' passages go first", full - 100, func(t *testing.T, r *Response) {
			if r.Constraints[0].Passage != "" || r.Results[0].Passage != long || r.Constraints[0].Summary == "" {
				t.Fatalf("%+v", r.Constraints[0])
			}
		}},
		{"then results' passages shortened", 4000, func(t *testing.T, r *Response) {
			if len(r.Results) != 4 || len([]rune(r.Results[0].Passage)) > passageCut+1 || r.Constraints[0].Summary != "" {
				t.Fatalf("%d results, passage %d", len(r.Results), len(r.Results[0].Passage))
			}
		}},
		{"then the lowest-ranked results dropped, never the first", 10, func(t *testing.T, r *Response) {
			if len(r.Results) != 1 || r.Results[0].Path != "guidance/ra.md" || !strings.Contains(r.Omitted, "lowest-ranked") {
				t.Fatalf("%d results, omitted %q", len(r.Results), r.Omitted)
			}
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := resp()
			r.Fit(tc.budget)
			if tc.budget > 1000 && r.size() > tc.budget {
				t.Errorf("%d characters over a budget of %d", r.size(), tc.budget)
			}
			tc.check(t, r)
		})
	}
}
