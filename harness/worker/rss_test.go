package worker

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"
)

// treeRSS counts a process's descendants: a shell whose grandchild holds
// 300 MiB of touched memory weighs at least that much.
func TestTreeRSSCountsDescendants(t *testing.T) {
	py, err := exec.LookPath("python3")
	if err != nil {
		t.Skip("no python3")
	}
	cmd := exec.Command("sh", "-c", py+` -c "x = bytearray(300 << 20); import time; time.sleep(60)"; true`)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { cmd.Process.Kill(); cmd.Wait() }()
	var rss int64
	for deadline := time.Now().Add(20 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		if rss = treeRSS(cmd.Process.Pid); rss >= 300<<20 {
			break
		}
	}
	if rss < 300<<20 {
		t.Fatalf("treeRSS = %d MiB, want >= 300 (the grandchild's bytearray)", rss>>20)
	}
	if own := anonResident(cmd.Process.Pid); own >= 300<<20 {
		t.Errorf("the shell alone has %d MiB: the count did not come from its descendant", own>>20)
	}
	if treeRSS(1<<30) != 0 {
		t.Errorf("a pid that does not exist weighs nothing")
	}
}

func TestReadBoard(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct {
		name string
		data []byte
		want string
	}{
		{"padded", append([]byte("candidate"), make([]byte, 55)...), "candidate"},
		{"rewritten shorter", append([]byte("harness\x00ate"), make([]byte, 52)...), "harness"},
		{"longer than the board", append([]byte("reference"), make([]byte, 100)...), "reference"},
	} {
		p := filepath.Join(dir, tc.name)
		if err := os.WriteFile(p, tc.data, 0o644); err != nil {
			t.Fatal(err)
		}
		if got := readBoard(p); got != tc.want {
			t.Errorf("%s: readBoard = %q, want %q", tc.name, got, tc.want)
		}
	}
	if got := readBoard(filepath.Join(dir, "missing")); got != "" {
		t.Errorf("missing board = %q", got)
	}
}
