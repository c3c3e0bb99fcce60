package worker

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"
)

// BenchmarkBigSource runs a job handed a 50 MB source beside a small job
// started just after it, and reports both walls: a big request must cost
// time linear in its size and must not hold the small job up.
//
//	go test -tags sqlite_fts5 -run '^$' -bench BigSource -benchtime 3x ./harness/worker
func BenchmarkBigSource(b *testing.B) {
	w := newWorker(b)
	ctx := context.Background()
	if err := w.Start(ctx); err != nil {
		b.Fatal(err)
	}
	code := strings.Repeat("x = 1  # padding a big candidate file\n", 50<<20/38)
	var bigTotal, smallTotal time.Duration
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		var wg sync.WaitGroup
		var bigWall, smallWall time.Duration
		var bigErr, smallErr error
		wg.Add(2)
		go func() {
			defer wg.Done()
			t0 := time.Now()
			o, err := w.Run(ctx, Job{Module: "selftest", Func: "source_len", Args: map[string]any{"code": code}, Timeout: time.Minute})
			bigWall, bigErr = time.Since(t0), err
			if err == nil && !strings.Contains(string(o.Result), "\"len\"") {
				bigErr = errString("big job result: " + string(o.Result) + o.Log)
			}
		}()
		go func() {
			defer wg.Done()
			time.Sleep(500 * time.Millisecond) // the big job is under way
			t0 := time.Now()
			o, err := w.Run(ctx, Job{Module: "selftest", Func: "echo", Args: map[string]any{"k": 1}, Timeout: time.Minute})
			smallWall, smallErr = time.Since(t0), err
			if err == nil && o.Result == nil {
				smallErr = errString("small job: no result")
			}
		}()
		wg.Wait()
		if bigErr != nil || smallErr != nil {
			b.Fatal(bigErr, smallErr)
		}
		bigTotal += bigWall
		smallTotal += smallWall
	}
	b.ReportMetric(bigTotal.Seconds()/float64(b.N), "big_s/op")
	b.ReportMetric(smallTotal.Seconds()/float64(b.N), "small_s/op")
}

type errString string

func (e errString) Error() string { return string(e) }
