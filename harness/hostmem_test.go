package harness

import "testing"

func TestHostMemLimits(t *testing.T) {
	for _, tc := range []struct {
		gib  float64
		want int64
	}{{0, 0}, {-1, -1}, {-0.5, -1}, {1, 1 << 30}, {0.5, 1 << 29}} {
		if got := HostMemLimitGiB(tc.gib); got != tc.want {
			t.Errorf("HostMemLimitGiB(%g) = %d, want %d", tc.gib, got, tc.want)
		}
	}
	for _, tc := range []struct{ total, want int64 }{
		{0, 16 << 30}, {8 << 30, 4 << 30}, {128 << 30, 32 << 30}, {2048 << 30, 32 << 30},
	} {
		if got := defaultHostMemLimit(tc.total); got != tc.want {
			t.Errorf("defaultHostMemLimit(%d GiB) = %d GiB, want %d GiB", tc.total>>30, got>>30, tc.want>>30)
		}
	}
}
