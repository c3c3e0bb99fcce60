package harness

import (
	"context"
	"fmt"
	"regexp"
	"strconv"
	"time"

	"github.com/kevolve/kevolve-mcp/harness/lease"
	"github.com/kevolve/kevolve-mcp/harness/target"
	"github.com/kevolve/kevolve-mcp/harness/worker"
)

// The evaluations placed on one GPU (lease.HoldersPerGPU: up to 24, by the
// host's cores) take turns in the device phase, but their processes and
// their judges keep device memory all along: contexts, models, inputs. On
// a 4-H200 host, with one GPU shared by 24, honest start kernels got
// runtime_error (out_of_memory) from a reference or a judge that found the
// device full of its neighbours, and the judge overturned 16 of 136 tuner
// evaluations' passes for out_of_memory (3 and 7 with the 4 GPUs). So running out of
// device memory on a shared device is not a verdict yet: the evaluation
// runs once more with the device to itself (lease.Request.Alone), and that
// run's result is the answer.

// deviceOOM matches what torch (and the CUDA or HIP runtime) says when the
// device, not the host, has no memory left.
var deviceOOM = regexp.MustCompile(`(?i)(cuda|hip)\b[^.\n]{0,40}out of memory|cudaErrorMemoryAllocation|hipErrorOutOfMemory|CUBLAS_STATUS_ALLOC_FAILED`)

// crowdedOOM says whether res is a device out-of-memory from a run on a
// device it shared: a GPU target, a lease of this evaluation's own with
// room for others, not yet run alone, and a runtime_error whose
// out_of_memory check quotes the device (the host memory limit's kill,
// out.RSSExceeded, is the evaluation's own: it is not retried).
func crowdedOOM(r *evalRun, res *EvalResult, out *worker.Outcome) bool {
	if r.tgt == target.CPU || !r.ownLease || r.alone || r.lease.MaxHolders() < 2 || (out != nil && out.RSSExceeded > 0) {
		return false
	}
	return ranOutOfDeviceMemory(res)
}

// ranOutOfDeviceMemory says whether res is a runtime_error whose
// out_of_memory check quotes the device.
func ranOutOfDeviceMemory(res *EvalResult) bool {
	if res.Verdict != VerdictRuntimeError {
		return false
	}
	for _, c := range res.Checks {
		if c.Name == "out_of_memory" && !c.Passed && deviceOOM.MatchString(c.Detail) {
			return true
		}
	}
	return false
}

// retryAlone runs the job again on a lease of the same device that no
// other evaluation shares, where crowdedOOM says the first run's verdict
// may be its neighbours'. The first result stands, with a warning, where
// the deadline leaves less than the first run took, or the device cannot
// be had alone (the caller's context ends first).
func (e *Evaluator) retryAlone(ctx context.Context, r *evalRun, job worker.Job, res *EvalResult) (*EvalResult, *TracedWork, error) {
	first := fmt.Sprintf("ran out of device memory on %s device %d, which %d evaluations may share", r.tgt, r.dev.Index, r.lease.MaxHolders())
	// The deadline is the caller's: a second run that could not finish in
	// what is left would trade this verdict for a timeout.
	left := r.jobDeadline()
	if spent := r.req.Timeout - left; left < spent {
		res.Warnings = append(res.Warnings, fmt.Sprintf("%s; not run again with the device to itself: %.0f s of the deadline left, the first run took %.0f s",
			first, left.Seconds(), spent.Seconds()))
		return res, nil, nil
	}
	p, err := e.pool(ctx, r.tgt)
	if err != nil {
		return nil, nil, err
	}
	crowded := r.lease
	r.lease.Release()
	t0 := time.Now()
	l, err := p.Acquire(ctx, lease.Request{Device: strconv.Itoa(r.dev.Index), Alone: true})
	r.leaseWait += time.Since(t0)
	if err != nil {
		res.Warnings = append(res.Warnings, first+"; not run again with the device to itself: "+err.Error())
		return res, nil, nil
	}
	r.lease, r.alone = l, true
	job.Gate = l.Exclusive
	// Alone among the leases is not alone in the device's memory: the
	// children kept idle for it hold their contexts and caches.
	dropped := e.w.DropIdle(l.Env())
	e.log.Info("evaluation ran out of device memory beside others; running it again alone", "device", r.dev.Index, "idle_children_ended", dropped)
	again, err := e.runJob(ctx, r, job)
	if err != nil {
		return nil, nil, err
	}
	res2, work, err := e.convert(ctx, r, again)
	if err != nil {
		return nil, nil, err
	}
	how := "evaluated again with the device to itself"
	if dropped > 0 {
		how += fmt.Sprintf(" (%d idle processes kept for it ended first)", dropped)
	}
	res2.Warnings = append(res2.Warnings, first+"; "+how+", and this is that run's result")
	if !ranOutOfDeviceMemory(res2) {
		// Alone it fit: its neighbours took the memory. The device takes
		// fewer at once for a while, so that the next ones need no rerun;
		// an evaluation that runs out alone too is its own, and changes nothing.
		n := crowded.Crowded()
		e.log.Info("device memory crowded: fewer evaluations placed on it at once", "device", r.dev.Index, "at_once", n)
	}
	return res2, work, nil
}
