package main

import "testing"

func TestEvolveParallelism(t *testing.T) {
	cases := []struct {
		name    string
		ff      fleetFlags
		flag    int
		want    int
		wantErr bool
	}{
		{"default without a fleet", fleetFlags{}, 0, 1, false},
		{"flag wins", fleetFlags{workers: "local:4"}, 2, 2, false},
		{"one per local worker", fleetFlags{workers: "local:4"}, 0, 4, false},
		{"workers times slots", fleetFlags{workers: "local:2", slots: 3}, 0, 6, false},
		{"one per ssh host", fleetFlags{workers: "ssh:a,b,c"}, 0, 3, false},
		{"slurm count", fleetFlags{workers: "slurm:gpu:8"}, 0, 8, false},
		{"capped", fleetFlags{workers: "local:4096", slots: 4}, 0, maxParallel, false},
		{"negative", fleetFlags{}, -1, 0, true},
		{"too many", fleetFlags{}, maxParallel + 1, 0, true},
		{"bad workers", fleetFlags{workers: "nope:1"}, 0, 0, true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, err := c.ff.parallelism(c.flag)
			if (err != nil) != c.wantErr || got != c.want {
				t.Fatalf("parallelism(%d) = %d, %v; want %d (error %v)", c.flag, got, err, c.want, c.wantErr)
			}
		})
	}
}
