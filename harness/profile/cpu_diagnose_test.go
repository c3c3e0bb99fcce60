package profile

import (
	"slices"
	"strings"
	"testing"

	"github.com/kevolve/kevolve-mcp/knowledge"
)

// The CPU diagnosis: always at least one finding, in the knowledge base's
// words, each agreeing with the figures it cites.
func TestDiagnoseCPURules(t *testing.T) {
	memRoof := func(tsol float64) *Roofline {
		return &Roofline{Bound: "memory", TSolUs: tsol, TMemoryUs: tsol, Bytes: 262144, MemBandwidth: 28e9, Source: "declared work, measured ceilings"}
	}
	withPct := func(cp CPUProfile) CPUProfile {
		if cp.Roofline != nil {
			cp.PctOfSol = f64(100 * cp.Roofline.TSolUs / cp.WallUsPerIter)
		}
		if cp.WallMinUs == 0 {
			cp.WallMinUs, cp.WallMeanUs, cp.CallsTimed = cp.WallUsPerIter, cp.WallUsPerIter, 100
		}
		return cp
	}
	ops := []OpTime{{Op: "kevolve::c::softmax_rows", Share: 0.9}, {Op: "aten::empty_like", Share: 0.1}}
	cases := []struct {
		name     string
		cp       CPUProfile
		want     []string // all present
		wantNot  []string
		evidence string // in some finding's evidence
	}{
		{"short call near its memory roof", CPUProfile{Ops: ops, WallUsPerIter: 15, CoresBusy: 1.9, Threads: 2, CPUs: 2, Roofline: memRoof(10)},
			[]string{MemoryBound, LaunchBound}, []string{TailEffect}, "66.7% of SOL"},
		{"short call far from its roof", CPUProfile{Ops: ops, WallUsPerIter: 20, CoresBusy: 1.9, Threads: 2, CPUs: 2, Roofline: memRoof(1)},
			[]string{LaunchBound}, []string{MemoryBound}, "19.0 µs of the call is beyond it"},
		{"long call on one of eight cores", CPUProfile{Ops: ops, WallUsPerIter: 4000, CoresBusy: 1.0, Threads: 8, CPUs: 8, Roofline: memRoof(100)},
			[]string{TailEffect}, []string{LaunchBound, MemoryBound}, "1.00 of 8 cores busy"},
		{"long call, cores busy, far from the roof", CPUProfile{Ops: ops, WallUsPerIter: 4000, CoresBusy: 7.8, Threads: 8, CPUs: 8, Roofline: memRoof(100)},
			[]string{LatencyBound}, []string{LaunchBound, TailEffect}, "neither the memory nor the compute roof"},
		{"no roofline, no counters", CPUProfile{Ops: ops, WallUsPerIter: 4000, CoresBusy: 7.8, Threads: 8, CPUs: 8},
			[]string{LatencyBound}, nil, "by elimination only"},
		{"compute roof", CPUProfile{Ops: ops, WallUsPerIter: 1000, CoresBusy: 2, Threads: 2, CPUs: 2,
			Roofline: &Roofline{Bound: "compute", TSolUs: 800, TComputeUs: 800, FLOPs: 1.3e8, PeakFLOPS: 1.6e11}},
			[]string{ComputeBound}, []string{MemoryBound}, "80% of SOL"},
		{"high IPC from counters", CPUProfile{Ops: ops, WallUsPerIter: 1000, CoresBusy: 2, Threads: 2, CPUs: 2, HardwareCounters: true, IPC: f64(2.6)},
			[]string{ComputeBound}, nil, "IPC 2.60"},
		{"stalled calls on a loaded host", CPUProfile{Ops: ops, WallUsPerIter: 20, WallMinUs: 12, WallMeanUs: 900, CallsTimed: 50, CoresBusy: 0.4, Threads: 2, CPUs: 2, HostLoad: 6},
			[]string{TailEffect, LaunchBound}, nil, "host load average 6.0"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			fs := diagnoseCPU(withPct(c.cp))
			if len(fs) == 0 {
				t.Fatal("no diagnosis")
			}
			var evidence []string
			for _, f := range fs {
				if !slices.Contains(knowledge.Bottlenecks, f.Bottleneck) || len(f.Topics) == 0 || len(f.Evidence) == 0 {
					t.Errorf("finding outside the vocabulary or without evidence and topics: %+v", f)
				}
				evidence = append(evidence, f.Evidence...)
			}
			for _, b := range c.want {
				if has(fs, b) == nil {
					t.Errorf("want %s, got %+v", b, fs)
				}
			}
			for _, b := range c.wantNot {
				if has(fs, b) != nil {
					t.Errorf("did not want %s, got %+v", b, fs)
				}
			}
			if !strings.Contains(strings.Join(evidence, "\n"), c.evidence) {
				t.Errorf("no evidence %q in %q", c.evidence, evidence)
			}
		})
	}
}
