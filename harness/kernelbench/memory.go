package kernelbench

import "syscall"

// Memory is the harness's peak host memory over a sweep, from getrusage:
// this Go process, and the largest of its waited-for descendants (the warm
// Python parent and, through it, every evaluation child). Read it after the
// evaluator is closed, or the worker processes are not counted yet.
type Memory struct {
	PeakRSSGoBytes     int64 `json:"peak_rss_go_bytes"`
	PeakRSSWorkerBytes int64 `json:"peak_rss_worker_bytes"`
}

// MeasureMemory reads the peaks so far.
func MeasureMemory() *Memory {
	var self, children syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &self)
	_ = syscall.Getrusage(syscall.RUSAGE_CHILDREN, &children)
	// Linux reports ru_maxrss in KiB.
	return &Memory{PeakRSSGoBytes: self.Maxrss << 10, PeakRSSWorkerBytes: children.Maxrss << 10}
}
