package harness

import (
	"testing"
	"time"
)

func TestDeviceShare(t *testing.T) {
	s := time.Second
	cases := []struct {
		name          string
		before, after map[string]time.Duration
		wall          time.Duration
		want          float64
	}{
		{"nothing ran", map[string]time.Duration{}, map[string]time.Duration{"cpu:0": 0}, 10 * s, 0},
		{"one GPU", map[string]time.Duration{"nvidia:0": 5 * s}, map[string]time.Duration{"nvidia:0": 11 * s}, 10 * s, 0.6},
		{"a device first seen after the start", map[string]time.Duration{}, map[string]time.Duration{"nvidia:0": 3 * s}, 10 * s, 0.3},
		{"two GPUs, one unused", map[string]time.Duration{}, map[string]time.Duration{"nvidia:0": 8 * s, "nvidia:1": 0}, 10 * s, 0.8},
		{"two GPUs used", map[string]time.Duration{}, map[string]time.Duration{"nvidia:0": 8 * s, "nvidia:1": 4 * s}, 10 * s, 0.6},
	}
	for _, c := range cases {
		if got, _ := DeviceShare(c.before, c.after, c.wall); got < c.want-1e-9 || got > c.want+1e-9 {
			t.Errorf("%s: share %.3f, want %.3f", c.name, got, c.want)
		}
	}
}
