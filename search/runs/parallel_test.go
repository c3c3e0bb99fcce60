package runs

import (
	"runtime"
	"testing"

	"github.com/kevolve/kevolve-mcp/search/engine"
	"github.com/kevolve/kevolve-mcp/search/fleet"
)

func TestParallelism(t *testing.T) {
	cases := []struct {
		name    string
		ff      fleet.Options
		flag    int
		target  string
		gpus    int // this host's
		want    int
		wantErr bool
	}{
		{"default without a fleet", fleet.Options{}, 0, "cpu", 0, 1, false},
		{"a GPU target without a fleet or a GPU", fleet.Options{}, 0, "nvidia", 0, 1, false},
		{"without a fleet: per GPU of this host, up to its cores", fleet.Options{}, 0, "nvidia", 1, min(localPerGPU, runtime.NumCPU()), false},
		{"flag wins", fleet.Options{Workers: "local:4"}, 2, "nvidia", 8, 2, false},
		{"one per local worker", fleet.Options{Workers: "local:4"}, 0, "cpu", 0, 4, false},
		{"workers times slots", fleet.Options{Workers: "local:2", Slots: 3}, 0, "cpu", 0, 6, false},
		{"one per ssh host", fleet.Options{Workers: "ssh:a,b,c"}, 0, "cpu", 0, 3, false},
		{"slurm count", fleet.Options{Workers: "slurm:gpu:8"}, 0, "cpu", 0, 8, false},
		{"local GPUs: two per GPU of this host", fleet.Options{Workers: "local:1"}, 0, "nvidia", 4, 8, false},
		{"local GPUs split over workers", fleet.Options{Workers: "local:2"}, 0, "nvidia", 4, 8, false},
		{"a GPU target on a host without one", fleet.Options{Workers: "local:1"}, 0, "nvidia", 0, 2, false},
		{"slurm nodes of --worker-gpus", fleet.Options{Workers: "slurm:gpu:3", GPUsPerNode: 4}, 0, "nvidia", 0, 24, false},
		{"ssh whole nodes", fleet.Options{Workers: "ssh:a,b"}, 0, "amd", 0, 2 * 2 * nodeGPUsGuess, false},
		{"GPU capped", fleet.Options{Workers: "slurm:gpu:64"}, 0, "nvidia", 0, engine.MaxParallel, false},
		{"capped", fleet.Options{Workers: "local:4096", Slots: 4}, 0, "cpu", 0, engine.MaxParallel, false},
		{"negative", fleet.Options{}, -1, "cpu", 0, 0, true},
		{"too many", fleet.Options{}, engine.MaxParallel + 1, "cpu", 0, 0, true},
		{"bad workers", fleet.Options{Workers: "nope:1"}, 0, "cpu", 0, 0, true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, err := Parallelism(c.flag, c.target, &c.ff, func() int { return c.gpus })
			if (err != nil) != c.wantErr || got != c.want {
				t.Fatalf("Parallelism(%d) = %d, %v; want %d (error %v)", c.flag, got, err, c.want, c.wantErr)
			}
		})
	}
}

func TestLocalParallel(t *testing.T) {
	cases := []struct {
		target     string
		gpus, cpus int
		want       int
	}{
		{"cpu", 8, 64, 1},
		{"", 0, 64, 1},
		{"", 1, 64, localPerGPU},
		{"nvidia", 2, 64, 2 * localPerGPU},
		{"nvidia", 8, 16, 16}, // at most one per core
		{"amd", 1, 1, 1},
	}
	for _, c := range cases {
		if got := localParallel(c.target, func() int { return c.gpus }, c.cpus); got != c.want {
			t.Errorf("localParallel(%q, %d GPUs, %d cores) = %d, want %d", c.target, c.gpus, c.cpus, got, c.want)
		}
	}
}
