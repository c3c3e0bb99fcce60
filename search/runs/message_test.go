package runs

import (
	"testing"

	"github.com/kevolve/kevolve-mcp/search"
)

// A failed node's message points only at fields its answer has: a compile
// error's log is in its check's detail and its result has no log (issue 36).
func TestWhereToReadNamesFieldsThatExist(t *testing.T) {
	check := []search.Check{{Name: "construct", Detail: "kernel.c:3:5: error"}}
	tests := []struct {
		name string
		v    NodeView
		want string
	}{
		{"compile error: checks, no log", NodeView{FailedChecks: check, Result: &search.Result{Verdict: "compile_error"}}, "node.failed_checks (their detail)"},
		{"checks and a log", NodeView{FailedChecks: check, Result: &search.Result{Log: "x"}}, "node.failed_checks (their detail) and node.result.log"},
		{"a log alone", NodeView{Result: &search.Result{Log: "x"}}, "node.result.log"},
		{"neither: the stage", NodeView{Result: &search.Result{Stage: "timing"}}, "node.result (stage timing)"},
	}
	for _, tc := range tests {
		if got := whereToRead(tc.v); got != tc.want {
			t.Errorf("%s: %q, want %q", tc.name, got, tc.want)
		}
	}
}
