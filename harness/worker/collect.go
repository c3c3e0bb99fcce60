package worker

// What a job left behind, read back when it ends: its result (counted only
// when the child reported it), log, status board, sandbox report and the
// judge's report, and the child's exit.

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"time"
)

// finish reads what the job left; its result counts only when the child
// reported it (the "done" event).
func (r *jobRun) finish(reported bool) *Outcome {
	out := r.out
	now := time.Now()
	// The device phase, as far as this job's result goes: a child that
	// still holds the device hands it back at its exit (reap), after the
	// result.
	r.handBack(now)
	r.mark(now)
	r.stage = ""
	r.build.leave(r.pid, now)
	out.Build = r.build.g
	out.Wall = now.Sub(r.t0) - r.gateWait
	out.GateWait = r.gateWait
	out.Pid = r.pid
	judge := filepath.Join(r.dir, "judge")
	// Not cut here: the tail the job wrote last is what is read.
	out.Log = readLog(r.logc.path, r.logc.truncated)
	out.LogDropped = r.logc.dropped()
	out.Board = readBoard(filepath.Join(judge, "board"))
	out.Sandbox = readSandbox(filepath.Join(judge, "sandbox.json"))
	out.Judge = readJudge(filepath.Join(judge, "judge.json"))
	b, err := os.ReadFile(filepath.Join(judge, "result.json"))
	switch {
	case err == nil && len(b) > 0 && reported:
		out.Result = b
	case err == nil && len(b) > 0:
		out.Unreported = true
	case reported:
		out.Emptied = true
	}
	return out
}

func setExit(out *Outcome, ev event) {
	if ev.Cgroup != nil {
		out.Cgroup = ev.Cgroup
	}
	if ev.Signal != nil {
		out.Signal = syscall.Signal(*ev.Signal)
	} else if ev.Code != nil {
		out.Code = *ev.Code
	}
}

// readBoard reads a job's status board: its text up to the first NUL.
func readBoard(path string) string {
	f, err := os.Open(path)
	if err != nil {
		return ""
	}
	defer f.Close()
	b := make([]byte, boardSize)
	n, _ := f.Read(b)
	s, _, _ := strings.Cut(string(b[:n]), "\x00")
	return strings.TrimSpace(s)
}

// readJudge reads the judge's report: a regular file of at most judgeSize
// bytes, else nil.
func readJudge(path string) json.RawMessage {
	st, err := os.Lstat(path)
	if err != nil || !st.Mode().IsRegular() || st.Size() > judgeSize {
		return nil
	}
	b, err := os.ReadFile(path)
	if err != nil || len(b) == 0 {
		return nil
	}
	return b
}

// readSandbox reads the job's sandbox report (a few hundred bytes; more
// is not the harness's).
func readSandbox(path string) json.RawMessage {
	f, err := os.Open(path)
	if err != nil {
		return nil
	}
	defer f.Close()
	b := make([]byte, 16<<10)
	n, _ := f.Read(b)
	if n == 0 || !json.Valid(b[:n]) {
		return nil
	}
	return json.RawMessage(b[:n])
}

// judgePid is the pid the job's judge declared in its report (0 if none):
// the one process a kept child may keep below it. The judge's folder is
// out of the candidate's reach, so the candidate cannot name its own.
func judgePid(judge json.RawMessage) int {
	var j struct {
		Pid int `json:"judge_pid"`
	}
	if len(judge) == 0 || json.Unmarshal(judge, &j) != nil {
		return 0
	}
	return j.Pid
}

// except is pids without skip.
func except(pids []int, skip int) []int {
	out := pids[:0:0]
	for _, p := range pids {
		if p != skip {
			out = append(out, p)
		}
	}
	return out
}
