package harness

import (
	"context"
	"testing"

	"github.com/kevolve/kevolve-mcp/harness/lease"
	"github.com/kevolve/kevolve-mcp/harness/target"
	"github.com/kevolve/kevolve-mcp/harness/worker"
)

// Which results run again with the device to themselves: a device
// out-of-memory on a GPU lease others may share, once; never the host
// memory limit's kill, a CPU, a lease the caller holds, another verdict.
func TestCrowdedOOMIsRunAgainAlone(t *testing.T) {
	lease1 := func(tgt target.Name, holders int) *lease.Lease {
		l, err := lease.NewPool(tgt, []lease.Device{{Index: 0, Name: "d"}}, holders).Acquire(context.Background(), lease.Request{})
		if err != nil {
			t.Fatal(err)
		}
		return l
	}
	const cuda = "the reference ran out of memory in stage correctness: CUDA out of memory. Tried to allocate 1.96 GiB. GPU 0 has a total capacity of 139.80 GiB of which 840.75 MiB is free."
	const judge = "in the judge's verification: the judge ran out of memory: HIP out of memory. Tried to allocate 2 GiB"
	const host = "the evaluation process ran out of memory in stage correctness: host memory: the evaluation process reached 33 GiB resident"
	oom := func(detail string) *EvalResult {
		return &EvalResult{Verdict: VerdictRuntimeError, Checks: []Check{{Name: "load_candidate", Passed: true}, {Name: "out_of_memory", Detail: detail}}}
	}
	cases := []struct {
		name   string
		tgt    target.Name
		holder int
		own    bool
		alone  bool
		res    *EvalResult
		out    *worker.Outcome
		want   bool
	}{
		{"device OOM on a shared GPU", target.NVIDIA, 6, true, false, oom(cuda), &worker.Outcome{}, true},
		{"the judge's OOM on a shared AMD GPU", target.AMD, 6, true, false, oom(judge), nil, true},
		{"already run alone", target.NVIDIA, 6, true, true, oom(cuda), nil, false},
		{"a GPU no other evaluation shares", target.NVIDIA, 1, true, false, oom(cuda), nil, false},
		{"the caller's lease", target.NVIDIA, 6, false, false, oom(cuda), nil, false},
		{"the CPU target", target.CPU, 6, true, false, oom(cuda), nil, false},
		{"the host memory limit's kill", target.NVIDIA, 6, true, false, oom(host), &worker.Outcome{RSSExceeded: 33 << 30}, false},
		{"host memory in the candidate's process", target.NVIDIA, 6, true, false, oom("the candidate ran out of memory in stage correctness: MemoryError: std::bad_alloc"), nil, false},
		{"a passing check named alike", target.NVIDIA, 6, true, false,
			&EvalResult{Verdict: VerdictRuntimeError, Checks: []Check{{Name: "out_of_memory", Passed: true, Detail: cuda}}}, nil, false},
		{"another verdict", target.NVIDIA, 6, true, false,
			&EvalResult{Verdict: VerdictIncorrect, Checks: []Check{{Name: "out_of_memory", Detail: cuda}}}, nil, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := &evalRun{tgt: c.tgt, lease: lease1(c.tgt, c.holder), ownLease: c.own, alone: c.alone}
			defer r.lease.Release()
			if got := crowdedOOM(r, c.res, c.out); got != c.want {
				t.Errorf("crowdedOOM = %v, want %v", got, c.want)
			}
		})
	}
}
