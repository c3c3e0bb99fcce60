package store

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/kevolve/kevolve-mcp/search"
)

// Short run ids: the full id, a unique prefix, a unique tail (what the
// progress line prints); ambiguity and absence are errors that say so.
func TestResolveRunID(t *testing.T) {
	ctx := context.Background()
	s := openTest(t)
	for _, id := range []string{"r-20261122-131958-962e33", "r-20261122-131958-f7c4ce", "r-20261123-080000-a1b2c3", "r-x_y"} {
		run := &search.Run{ID: id, Problem: search.Problem{Name: "llm/rmsnorm", Target: "cpu"}, Policy: "greedy",
			Operator: "tuner", Baseline: "eager", Budget: search.Budget{Evals: 5}}
		if err := s.CreateRun(ctx, run); err != nil {
			t.Fatal(err)
		}
	}
	cases := []struct {
		ref, want, errHas string
		notFound          bool
	}{
		{ref: "r-20261122-131958-962e33", want: "r-20261122-131958-962e33"},
		{ref: "f7c4ce", want: "r-20261122-131958-f7c4ce"},
		{ref: " 962e33 ", want: "r-20261122-131958-962e33"},
		{ref: "r-20261123", want: "r-20261123-080000-a1b2c3"},
		{ref: "r-20261122", errHas: "ambiguous: it matches r-20261122-131958-962e33, r-20261122-131958-f7c4ce"},
		{ref: "r-", errHas: "ambiguous"},
		{ref: "r-x%", notFound: true}, // LIKE wildcards are literal
		{ref: "x_y", want: "r-x_y"},
		{ref: "deadbe", notFound: true},
		{ref: "", notFound: true},
	}
	for _, c := range cases {
		got, err := s.ResolveRunID(ctx, c.ref)
		switch {
		case c.want != "":
			if err != nil || got != c.want {
				t.Errorf("%q: %q, %v; want %q", c.ref, got, err, c.want)
			}
		case c.notFound:
			if !errors.Is(err, search.ErrNotFound) {
				t.Errorf("%q: %q, %v; want not found", c.ref, got, err)
			}
		default:
			if err == nil || !strings.Contains(err.Error(), c.errHas) {
				t.Errorf("%q: %q, %v; want an error with %q", c.ref, got, err, c.errHas)
			}
		}
	}
}
