package optimize

import (
	"context"
	"testing"
)

// TestServiceTarget: the model flow's tools resolve the target word as a
// search does (auto is this host's device) and take the start kernels'
// language from the one target table, so a GPU host is not given C starts;
// torch.compile is timed by default on a GPU (as optimize does), not on a
// CPU, unless asked either way.
func TestServiceTarget(t *testing.T) {
	yes, no := true, false
	for _, tc := range []struct {
		asked, host     string
		compile         *bool
		wantT, wantLang string
		wantCompile     bool
	}{
		{"auto", "nvidia", nil, "nvidia", "cuda", true},
		{"", "cpu", nil, "cpu", "c", false},
		{"auto", "amd", &no, "amd", "hip", false},
		{"cpu", "cpu", &yes, "cpu", "c", true},
	} {
		s := &Service{ResolveTarget: func(_ context.Context, w string) (string, error) {
			if w == "" || w == "auto" {
				return tc.host, nil
			}
			return w, nil
		}}
		o, err := s.Options(context.Background(), Request{Model: "m.py", Target: tc.asked, Compile: tc.compile})
		if err != nil || o.Target != tc.wantT || o.Language != tc.wantLang || o.Compile != tc.wantCompile {
			t.Errorf("%q on %s: target %q language %q compile %v (%v), want %q %q %v", tc.asked, tc.host, o.Target, o.Language, o.Compile, err, tc.wantT, tc.wantLang, tc.wantCompile)
		}
	}
}
