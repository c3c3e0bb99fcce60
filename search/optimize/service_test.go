package optimize

import (
	"context"
	"testing"
)

// TestServiceTarget: the model flow's tools resolve the target word as a
// search does (auto is this host's device) and take the start kernels'
// language from the one target table, so a GPU host is not given C starts.
func TestServiceTarget(t *testing.T) {
	for _, tc := range []struct {
		asked, host     string
		wantT, wantLang string
	}{
		{"auto", "nvidia", "nvidia", "cuda"},
		{"", "cpu", "cpu", "c"},
		{"auto", "amd", "amd", "hip"},
		{"cpu", "cpu", "cpu", "c"},
	} {
		s := &Service{ResolveTarget: func(_ context.Context, w string) (string, error) {
			if w == "" || w == "auto" {
				return tc.host, nil
			}
			return w, nil
		}}
		o, err := s.options(context.Background(), "m.py", tc.asked, "")
		if err != nil || o.Target != tc.wantT || o.Language != tc.wantLang {
			t.Errorf("%q on %s: target %q language %q (%v), want %q %q", tc.asked, tc.host, o.Target, o.Language, err, tc.wantT, tc.wantLang)
		}
	}
}
