package worker

// Children kept for another job. A fresh child per job isolates jobs from
// each other, but on a GPU it costs a CUDA context, made and torn down by
// the driver one process at a time across the host's GPUs (~0.27 s per
// evaluation; two H200s did 1.13x one). A job that asks for reuse (Job.Reuse)
// and that its function declares clean leaves its child idle, context and
// loaded kernels intact, for the next job with the same key: same module,
// function and environment, so the same device.

import (
	"fmt"
	"os"
	"sort"
	"strings"
	"time"
)

const (
	// MaxIdlePerKey bounds the idle children kept per key (per device) where
	// the job does not say (Job.IdleMax): each holds a CUDA context (~0.5 GB
	// of device memory), its judge's, and its host memory.
	MaxIdlePerKey = 4
	// MaxJobsPerChild retires a child after this many jobs, bounding what
	// slow leaks (host memory, cached kernels) can add up to.
	MaxJobsPerChild = 64
)

// IdleTTL is how long an idle child waits for a job before it is killed (a
// variable for the tests).
var IdleTTL = 30 * time.Second

type idleChild struct {
	p    *proc
	pid  int
	key  string
	jobs int               // jobs this child has run
	dir  string            // its job folder: sandboxed, it can open no other
	max  int               // idle children its key may keep (Job.IdleMax; 0: MaxIdlePerKey)
	env  map[string]string // its jobs' Job.Env (a device's variables: DropIdle)
}

// kill ends an idle child and everything below it, and removes its folder.
func (c *idleChild) kill() {
	killTree(c.pid)
	if c.dir != "" {
		os.RemoveAll(c.dir)
	}
}

// reuseKey names the jobs an idle child may take.
func reuseKey(job Job) string {
	keys := make([]string, 0, len(job.Env))
	for k := range job.Env {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var b strings.Builder
	// The sandbox a child entered is its own for good: same network, same
	// writable folders.
	fmt.Fprintf(&b, "%s.%s mem=%d net=%v writable=%q", job.Module, job.Func, job.MemLimit, job.Network, job.Writable)
	for _, k := range keys {
		fmt.Fprintf(&b, " %s=%s", k, job.Env[k])
	}
	return b.String()
}

// takeIdle returns an idle child of the running parent for key, or nil.
// The most recently idle one goes first: its caches are the warmest.
func (w *Worker) takeIdle(p *proc, key string) *idleChild {
	w.imu.Lock()
	defer w.imu.Unlock()
	list := w.idle[key]
	for len(list) > 0 {
		c := list[len(list)-1]
		list = list[:len(list)-1]
		if c.p == p {
			w.idle[key] = list
			return c
		}
	}
	delete(w.idle, key)
	return nil
}

// putIdle keeps a child that reported "idle", or kills it if the pool for
// its key is full, it has run its share of jobs, or the worker is closing.
func (w *Worker) putIdle(c *idleChild) {
	limit := c.max
	if limit <= 0 {
		limit = MaxIdlePerKey
	}
	w.imu.Lock()
	keep := !w.idleClosed && c.jobs < MaxJobsPerChild && len(w.idle[c.key]) < limit
	if keep {
		if w.idle == nil {
			w.idle = map[string][]*idleChild{}
		}
		w.idle[c.key] = append(w.idle[c.key], c)
	}
	w.imu.Unlock()
	if !keep {
		c.kill()
		return
	}
	time.AfterFunc(IdleTTL, func() {
		if w.removeIdle(c) {
			c.kill()
		}
	})
}

// removeIdle takes c out of the pool; false if a job took it first.
func (w *Worker) removeIdle(c *idleChild) bool {
	w.imu.Lock()
	defer w.imu.Unlock()
	list := w.idle[c.key]
	for i, x := range list {
		if x == c {
			w.idle[c.key] = append(list[:i], list[i+1:]...)
			return true
		}
	}
	return false
}

// closeIdle kills every idle child and keeps no more.
func (w *Worker) closeIdle() {
	w.imu.Lock()
	w.idleClosed = true
	all := w.idle
	w.idle = nil
	w.imu.Unlock()
	for _, list := range all {
		for _, c := range list {
			c.kill()
		}
	}
}

// DropIdle ends the idle children whose jobs' environment holds every
// variable of env with its value (a device's: lease.Lease.Env), and returns
// how many. For an evaluation run again with its device to itself
// (harness crowded.go): no lease counts an idle child, yet it keeps its
// CUDA context and what its caching allocator and its judge cached; on
// one H200 such a rerun ran out of memory again beside idle processes
// holding 22-33 GiB.
func (w *Worker) DropIdle(env map[string]string) int {
	if len(env) == 0 {
		return 0 // names no device: not every idle child
	}
	w.imu.Lock()
	var drop []*idleChild
	for key, list := range w.idle {
		keep := list[:0]
		for _, c := range list {
			if holds(c.env, env) {
				drop = append(drop, c)
			} else {
				keep = append(keep, c)
			}
		}
		if len(keep) == 0 {
			delete(w.idle, key)
		} else {
			w.idle[key] = keep
		}
	}
	w.imu.Unlock()
	for _, c := range drop {
		c.kill()
	}
	return len(drop)
}

// holds says whether have has every variable of want, with its value.
func holds(have, want map[string]string) bool {
	for k, v := range want {
		if got, ok := have[k]; !ok || got != v {
			return false
		}
	}
	return true
}

// IdleChildren is how many children wait for a job (for tests and status).
func (w *Worker) IdleChildren() int {
	w.imu.Lock()
	defer w.imu.Unlock()
	n := 0
	for _, list := range w.idle {
		n += len(list)
	}
	return n
}
