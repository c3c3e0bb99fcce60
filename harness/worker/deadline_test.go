package worker

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// processesWith lists live processes whose environment holds marker or
// whose parent is ppid: a forked child shows its parent's pid, a program it
// started shows the job's environment.
func processesWith(marker []byte, ppid int) []string {
	var found []string
	dirs, _ := filepath.Glob("/proc/[0-9]*")
	for _, d := range dirs {
		pid, _ := strconv.Atoi(filepath.Base(d))
		if !alive(pid) {
			continue
		}
		if env, err := os.ReadFile(d + "/environ"); err == nil && bytes.Contains(env, marker) {
			found = append(found, fmt.Sprintf("pid %d (marker in environ)", pid))
			continue
		}
		if st, err := os.ReadFile(d + "/stat"); err == nil {
			// The comm field may hold spaces; fields after its ')' are fixed.
			s := string(st)
			if i := strings.LastIndexByte(s, ')'); i > 0 {
				f := strings.Fields(s[i+1:])
				if len(f) > 1 && f[1] == strconv.Itoa(ppid) {
					found = append(found, fmt.Sprintf("pid %d (child of the warm parent)", pid))
				}
			}
		}
	}
	return found
}

// A deadline that fires before the child's "started" event, while it is
// being forked, or while it starts a grandchild, still kills the child's
// whole process group.
func TestWorkerEarlyDeadline(t *testing.T) {
	w := newWorker(t)
	ctx := context.Background()
	info, err := w.Info(ctx)
	if err != nil {
		t.Fatal(err)
	}
	parent := int(info["pid"].(float64))
	for _, d := range []time.Duration{time.Nanosecond, 100 * time.Microsecond, time.Millisecond, 5 * time.Millisecond,
		20 * time.Millisecond, 80 * time.Millisecond, 300 * time.Millisecond} {
		t.Run(d.String(), func(t *testing.T) {
			marker := fmt.Sprintf("KEVOLVE_TEST_MARKER=%d-%d", os.Getpid(), time.Now().UnixNano())
			kv := strings.SplitN(marker, "=", 2)
			t0 := time.Now()
			o, err := w.Run(ctx, Job{Module: "selftest", Func: "spawn_marked", Env: map[string]string{kv[0]: kv[1]}, Timeout: d})
			if err != nil {
				t.Fatal(err)
			}
			if !o.TimedOut {
				t.Fatalf("a job sleeping an hour did not time out under %s: %+v", d, o)
			}
			// The time the child waited for a CPU is granted (load.go).
			if wall := time.Since(t0); wall > 3*time.Second+o.LoadGrant {
				t.Errorf("Run took %s to return after a %s deadline (+%s for the host's load)", wall, d, o.LoadGrant)
			}
			// The kill is synchronous with the exit event; give /proc a moment.
			var left []string
			for end := time.Now().Add(2 * time.Second); time.Now().Before(end); time.Sleep(20 * time.Millisecond) {
				if left = processesWith([]byte(marker), parent); len(left) == 0 {
					break
				}
			}
			if len(left) > 0 {
				t.Fatalf("deadline %s left processes running: %v", d, left)
			}
		})
	}
}
