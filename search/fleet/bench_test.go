package fleet

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/kevolve/kevolve-mcp/search"
)

// instantRunner answers at once: what is left of an evaluation through the
// fleet is the fleet's own cost (enqueue, claim, lease, result, wake-up).
type instantRunner struct{ n atomic.Int64 }

func (r *instantRunner) Run(ctx context.Context, job Job, dev Device) (*search.Result, error) {
	r.n.Add(1)
	return &search.Result{Verdict: search.VerdictPass, Correct: true, TimeS: 1e-3}, nil
}

// BenchmarkFleetOverhead is what the fleet adds to one evaluation, side by
// side with calling the same runner in process: one search slot waiting
// on each evaluation (serial), and 24 slots over a worker with 4 devices
// of 6 jobs each (parallel, as a search on a 4-GPU host runs). A GPU
// evaluation takes ~0.2-0.6 s of device phase; the fleet's share of it is
// this benchmark's ns/op over that.
func BenchmarkFleetOverhead(b *testing.B) {
	for _, bc := range []struct {
		name            string
		devices, perDev int
		inFlight        int
	}{
		{"serial", 1, 1, 1},
		{"parallel-4x6", 4, 6, 24},
	} {
		b.Run(bc.name+"/in-process", func(b *testing.B) {
			r := &instantRunner{}
			job := Job{Kind: Kind{Target: "nvidia"}}
			b.SetParallelism(bc.inFlight)
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					r.Run(context.Background(), job, Device{})
				}
			})
		})
		b.Run(bc.name+"/fleet", func(b *testing.B) {
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			db := openTestDB(b, filepath.Join(b.TempDir(), "f.db"))
			q, err := NewQueue(ctx, db)
			if err != nil {
				b.Fatal(err)
			}
			quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
			coord := &Coordinator{Queue: q, Token: "tk", Log: quiet}
			if err := coord.Listen(ctx, "127.0.0.1:0"); err != nil {
				b.Fatal(err)
			}
			var devs []Device
			for i := 0; i < bc.devices; i++ {
				devs = append(devs, Device{Index: i, Target: "nvidia", Arch: "sm_90", Name: "NVIDIA H100", Jobs: bc.perDev})
			}
			r := &instantRunner{}
			w := &Worker{Coordinator: coord.URL(), Token: "tk", Name: "w", Devices: devs, Runner: r, Drain: time.Second, Log: quiet}
			wctx, stop := context.WithCancel(ctx)
			done := make(chan struct{})
			go func() { w.Run(wctx); close(done) }()
			defer func() { stop(); <-done }()
			ref := filepath.Join(b.TempDir(), "ref.py")
			os.WriteFile(ref, []byte("# reference\n"), 0o644)
			p := search.Problem{Name: "bench/p", Target: "nvidia", ReferencePath: ref}
			ev := &Evaluator{Queue: q}
			var seq atomic.Int64
			b.SetParallelism(bc.inFlight)
			b.ResetTimer()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					// Distinct code per call: the queue never answers from an
					// earlier job.
					if _, err := ev.Evaluate(ctx, p, fmt.Sprintf("code %d", seq.Add(1))); err != nil {
						b.Error(err)
						return
					}
				}
			})
			b.StopTimer()
			if r.n.Load() < int64(b.N) {
				b.Fatalf("the worker ran %d of %d jobs", r.n.Load(), b.N)
			}
		})
	}
}
