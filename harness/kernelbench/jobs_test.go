package kernelbench

import "testing"

func TestDefaultJobs(t *testing.T) {
	cases := []struct {
		target string
		gpus   int
		cpus   int
		want   int
	}{
		{"cpu", 8, 16, 1},     // timed work shares the cores: one at a time
		{"auto", 0, 16, 1},    // auto on a host without GPUs is the CPU
		{"auto", 1, 16, 16},   // builds on every core while one device times
		{"", 2, 32, 32},       // not per device: the host's cores
		{"nvidia", 0, 16, 16}, // an explicit GPU target is not asked about
		{"nvidia", 1, 0, 1},   // never zero
	}
	for _, c := range cases {
		asked := false
		got := DefaultJobs(c.target, func() int { asked = true; return c.gpus }, c.cpus)
		if got != c.want {
			t.Errorf("DefaultJobs(%q, %d GPUs, %d cores) = %d, want %d", c.target, c.gpus, c.cpus, got, c.want)
		}
		if asked && c.target != "auto" && c.target != "" {
			t.Errorf("target %q asked for the GPU count", c.target)
		}
	}
}
