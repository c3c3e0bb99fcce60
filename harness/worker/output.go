package worker

// A job's output (the candidate's stdout and stderr, in judge/log.txt,
// opened for appending) is capped on disk and read as head and tail: a
// candidate that floods its output fills neither the disk nor the server.

import (
	"fmt"
	"io"
	"os"
	"syscall"
	"time"

	"github.com/kevolve/kevolve-mcp/harness/toolchain"
)

const (
	// LogCap bounds the bytes a job's log holds on disk, checked every
	// logPoll (a flood of 1-2 GB/s overshoots it by ~100 MB): past it,
	// what lies between its head (logKeep) and its tail (logRead) is
	// dropped.
	LogCap  = 16 << 20
	logKeep = 1 << 20
	// logRead is how much of the log's head and of its tail is read.
	logRead = 32 << 10
)

// logPoll is how often a running job's log size is checked (a stat).
const logPoll = 50 * time.Millisecond

// FALLOC_FL_KEEP_SIZE | FALLOC_FL_PUNCH_HOLE
const punchHole = 0x1 | 0x2

// logCap cuts a job's log back on disk. It punches a hole between the head
// and the tail (the file keeps its length, not its blocks), so the tail
// read at the end is what the job wrote last; on a file system without
// holes it cuts the log back to its head.
type logCap struct {
	path      string
	holeEnd   int64 // the hole runs from logKeep to here (0: none)
	truncated int64 // bytes cut off the end (no holes on this file system)
}

// dropped is how many bytes of output the log no longer holds.
func (c *logCap) dropped() int64 {
	return max(c.holeEnd-logKeep, 0) + c.truncated
}

// check drops the middle of the log once it holds more than LogCap bytes.
func (c *logCap) check() {
	st, err := os.Stat(c.path)
	if err != nil {
		return
	}
	size := st.Size()
	held := size - max(c.holeEnd-logKeep, 0)
	if held <= LogCap {
		return
	}
	start := max(c.holeEnd, logKeep)
	end := (size - logRead) &^ 4095
	if f, err := os.OpenFile(c.path, os.O_WRONLY, 0); err == nil {
		err = syscall.Fallocate(int(f.Fd()), punchHole, start, end-start)
		f.Close()
		if err == nil {
			c.holeEnd = end
			return
		}
	}
	if err := os.Truncate(c.path, logKeep); err == nil {
		c.truncated += size - logKeep
		c.holeEnd = 0
	}
}

// readLog returns the child's output, its head and tail (read without
// reading the rest), trimmed: the first lines usually say what was built,
// the last what failed. truncated is what logCap cut off its end.
func readLog(path string, truncated int64) string {
	f, err := os.Open(path)
	if err != nil {
		return ""
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return ""
	}
	size := st.Size()
	if size <= 2*logRead && truncated == 0 {
		b, _ := io.ReadAll(io.LimitReader(f, 2*logRead))
		return toolchain.Trim(string(b), 2000, 8000)
	}
	head := make([]byte, min(size, logRead))
	n, _ := f.ReadAt(head, 0)
	tail := make([]byte, min(size, logRead))
	m, _ := f.ReadAt(tail, max(size-logRead, 0))
	h, t := head[:min(n, 2000)], tail[max(m-8000, 0):m]
	left := size + truncated - int64(len(h)) - int64(len(t))
	return string(h) + fmt.Sprintf("\n... [%d bytes of output left out] ...\n", max(left, 0)) + string(t)
}
