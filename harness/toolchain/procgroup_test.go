package toolchain

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// A timeout kills the grandchild too: the shell backgrounds a sleep, writes
// its pid and waits; after the deadline that pid must be gone.
func TestKillGroupOnCancelKillsGrandchildren(t *testing.T) {
	pidFile := filepath.Join(t.TempDir(), "pid")
	ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
	defer cancel()
	cmd := exec.CommandContext(ctx, "sh", "-c", `sleep 30 & echo $! > "$0"; wait`, pidFile)
	KillGroupOnCancel(cmd)
	cmd.WaitDelay = 2 * time.Second
	t0 := time.Now()
	if err := cmd.Run(); err == nil {
		t.Fatal("the command outlived its deadline without an error")
	}
	if d := time.Since(t0); d > 5*time.Second {
		t.Fatalf("Run returned after %s: the group was not killed", d)
	}
	b, err := os.ReadFile(pidFile)
	if err != nil {
		t.Fatal(err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(2 * time.Second)
	for syscall.Kill(pid, 0) == nil {
		if time.Now().After(deadline) {
			t.Fatalf("grandchild %d still alive after the group was cancelled", pid)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
