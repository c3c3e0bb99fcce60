package worker

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// A log past LogCap is cut back on disk, and only its head and tail are
// read, with what was left out said.
func TestLogCappedAndReadAsHeadAndTail(t *testing.T) {
	for _, tc := range []struct {
		name string
		size int
		cut  bool
	}{
		{"small", 100, false},
		{"medium", 3 * logRead, false},
		{"over_cap", LogCap + 5<<20, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "log.txt")
			body := append([]byte("HEAD-START "), bytes.Repeat([]byte("m"), tc.size)...)
			body = append(body, []byte(" TAIL-END")...)
			if err := os.WriteFile(path, body, 0o644); err != nil {
				t.Fatal(err)
			}
			c := &logCap{path: path}
			c.check()
			if (c.dropped() > 0) != tc.cut {
				t.Fatalf("dropped %d, cut want %v", c.dropped(), tc.cut)
			}
			if held := diskBytes(t, path); held > LogCap {
				t.Fatalf("log still holds %d bytes on disk", held)
			}
			if tc.cut {
				// What the job writes after the cut ends the tail.
				f, _ := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
				f.WriteString(" TAIL-END")
				f.Close()
			}
			s := readLog(path, c.truncated)
			if !strings.HasPrefix(s, "HEAD-START") || !strings.HasSuffix(s, "TAIL-END") {
				t.Errorf("head or tail lost: %.40q ... %.40q", s, s[max(len(s)-40, 0):])
			}
			if len(s) > 12<<10 {
				t.Errorf("read %d bytes", len(s))
			}
			if tc.size > 2*logRead && !strings.Contains(s, "left out") && !strings.Contains(s, "trimmed") {
				t.Errorf("no word of what was left out")
			}
		})
	}
}

// diskBytes is what a file holds on disk (its blocks, not its length).
func diskBytes(t *testing.T, path string) int64 {
	var st syscall.Stat_t
	if err := syscall.Stat(path, &st); err != nil {
		t.Fatal(err)
	}
	return st.Blocks * 512
}
