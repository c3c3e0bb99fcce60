package worker

// The protocol between Go and the parent (worker.py's docstring has the
// whole of it). Requests are short JSON lines on the parent's stdin: a job's
// arguments travel in a file in its job directory, read by the child after
// the fork, so the parent's loop never parses a big candidate and one big job
// never holds up another's requests, grants or events. Events are JSON lines
// on fd 3, each under PIPE_BUF so children's lines never interleave.

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
)

type event struct {
	Event   string `json:"event"`
	ID      *int64 `json:"id"`
	Pid     int    `json:"pid"`
	Code    *int   `json:"code"`
	Signal  *int   `json:"signal"`
	Stage   string `json:"stage"`
	Done    int    `json:"done"`
	Total   int    `json:"total"`
	Message string `json:"message"`
	Reused  bool   `json:"reused"` // "started": an idle child took the job
	Idle    bool   `json:"idle"`   // "done": the child stays for another job
	// Cgroup is what the job's cgroup counted: in "exit" the parent's
	// reading before it removed the cgroup, in "done" the job's process's
	// own (for this job of a kept child).
	Cgroup *CgroupUse `json:"cgroup"`

	// Figures are a progress event's partial figures, an object whose keys
	// name what they measure (evaluate: "candidate": timing stats so far).
	Figures json.RawMessage `json:"figures"`
}

// runRequest starts a job's child. Its arguments are in ArgsFile.
type runRequest struct {
	Op       string            `json:"op"` // "run"
	ID       int64             `json:"id"`
	Module   string            `json:"module"`
	Func     string            `json:"func"`
	ArgsFile string            `json:"args_file"`
	JobDir   string            `json:"job_dir"`
	Env      map[string]string `json:"env,omitempty"`
	MemLimit int64             `json:"mem_limit"`
	Reuse    bool              `json:"reuse,omitempty"`    // the child may serve later jobs
	Child    int               `json:"child,omitempty"`    // run in this idle child
	Network  bool              `json:"network,omitempty"`  // the sandbox leaves the network
	Writable []string          `json:"writable,omitempty"` // the sandbox may write these too
}

// idRequest is a grant (the device is the child's) or a cancel (kill the
// child's process group, however early: the parent knows the pid before Go
// sees the "started" event).
type idRequest struct {
	Op string `json:"op"`
	ID int64  `json:"id"`
}

// pending routes a job's events to its Run.
type pending struct {
	events chan event
}

func (w *Worker) readEvents(p *proc, r io.Reader, ready chan<- map[string]any) {
	defer func() {
		p.pmu.Lock()
		close(p.dead)
		p.pmu.Unlock()
	}()
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 4<<20)
	for sc.Scan() {
		line := sc.Bytes()
		var ev event
		if err := json.Unmarshal(line, &ev); err != nil {
			w.log.Warn("python worker: bad event line", "line", string(line), "err", err)
			continue
		}
		if ev.Event == "ready" {
			var info map[string]any
			_ = json.Unmarshal(line, &info)
			ready <- info
			continue
		}
		if ev.ID == nil {
			if ev.Event == "error" {
				w.log.Warn("python worker error", "message", ev.Message)
			}
			continue
		}
		p.pmu.Lock()
		pd := p.pending[*ev.ID]
		p.pmu.Unlock()
		if pd == nil {
			continue
		}
		select {
		case pd.events <- ev:
		default:
			// A flood of progress events must never block the reader.
			if ev.Event != "progress" {
				pd.events <- ev
			}
		}
	}
}

// send writes one request line to the parent.
func (p *proc) send(v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Errorf("encode worker request: %w", err)
	}
	p.wmu.Lock()
	defer p.wmu.Unlock()
	if _, err := p.stdin.Write(append(b, '\n')); err != nil {
		return fmt.Errorf("write to python worker: %w", err)
	}
	return nil
}
