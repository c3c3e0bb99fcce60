package worker

import (
	"context"
	"encoding/json"
	"testing"
	"time"
)

// TestTimedOutJobKeepsItsProgress: a job the deadline kills still says
// where it was, how far each stage got and the figures it reported (the
// last value of each key; an event too big for one write goes without
// its figures), and its stages' seconds (issue 36).
func TestTimedOutJobKeepsItsProgress(t *testing.T) {
	w := newWorker(t)
	o, err := w.Run(context.Background(), Job{Module: "selftest", Func: "progress_then_hang", Timeout: 3 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	if !o.TimedOut || o.Stage != "timed" {
		t.Fatalf("timed out %v in stage %q, want a timeout in timed", o.TimedOut, o.Stage)
	}
	want := map[string]Step{"trials": {2, 5}, "timed": {5, 0}}
	for name, s := range want {
		if o.Steps[name] != s {
			t.Errorf("steps[%s] = %+v, want %+v (all: %+v)", name, o.Steps[name], s, o.Steps)
		}
	}
	figs, _ := json.Marshal(o.Figures)
	if got := string(figs); got != `{"timed":{"candidate":{"iters":4},"reference":{"iters":1}}}` {
		t.Errorf("figures %s", got)
	}
	if o.Stages["timed"].Outside < 2*time.Second {
		t.Errorf("stage timed took %s, want most of the 3 s deadline: %+v", o.Stages["timed"].Outside, o.Stages)
	}
}

// TestMaxLoadGrant: the grant for the host's load is at most a tenth of
// the deadline, less the kill's reserve (at most half that tenth), so the
// answer comes within 1.1 times the deadline.
func TestMaxLoadGrant(t *testing.T) {
	cases := []struct {
		timeout, want time.Duration
	}{
		{60 * time.Second, 4 * time.Second},
		{600 * time.Second, 58 * time.Second},
		{4 * time.Second, 200 * time.Millisecond},
		{0, 0},
	}
	for _, tc := range cases {
		if got := MaxLoadGrant(tc.timeout); got != tc.want {
			t.Errorf("MaxLoadGrant(%s) = %s, want %s", tc.timeout, got, tc.want)
		}
	}
}
