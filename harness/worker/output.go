package worker

// A job's output (the candidate's stdout and stderr, in judge/log.txt,
// opened for appending) is capped on disk and read as head and tail: a
// candidate that floods its output fills neither the disk nor the server.

import (
	"fmt"
	"io"
	"os"

	"github.com/kevolve/kevolve-mcp/harness/toolchain"
)

const (
	// LogCap bounds a job's log on disk, checked every rssPoll: past it the
	// log is cut back to logKeep (its head), and what follows is appended
	// after the cut.
	LogCap  = 16 << 20
	logKeep = 1 << 20
	// logRead is how much of the log's head and of its tail is read.
	logRead = 32 << 10
)

// capLog cuts the log back to its head when it grew past LogCap and
// returns the bytes it dropped.
func capLog(path string) int64 {
	st, err := os.Stat(path)
	if err != nil || st.Size() <= LogCap {
		return 0
	}
	if err := os.Truncate(path, logKeep); err != nil {
		return 0
	}
	return st.Size() - logKeep
}

// readLog returns the child's output, its head and tail (read without
// reading the rest), trimmed: the first lines usually say what was built,
// the last what failed.
func readLog(path string, dropped int64) string {
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
	if size <= 2*logRead && dropped == 0 {
		b, _ := io.ReadAll(io.LimitReader(f, 2*logRead))
		return toolchain.Trim(string(b), 2000, 8000)
	}
	head := make([]byte, min(size, logRead))
	n, _ := f.ReadAt(head, 0)
	tail := make([]byte, min(size, logRead))
	m, _ := f.ReadAt(tail, max(size-logRead, 0))
	h, t := head[:min(n, 2000)], tail[max(m-8000, 0):m]
	left := size + dropped - int64(len(h)) - int64(len(t))
	return string(h) + fmt.Sprintf("\n... [%d bytes of output left out] ...\n", max(left, 0)) + string(t)
}
