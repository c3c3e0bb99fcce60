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

// A process that touched 300 MiB and then forked two children (as the
// evaluation child forks its judge and its PID namespace's init) holds
// 300 MiB, not 900: treeRSS counts the shared pages in each process, the
// PSS figure once.
func TestTreeAnonPSSCountsForkedPagesOnce(t *testing.T) {
	py, err := exec.LookPath("python3")
	if err != nil {
		t.Skip("no python3")
	}
	cmd := exec.Command(py, "-c", `
import os, time
x = bytearray(300 << 20)
for _ in range(2):
    if os.fork() == 0:
        time.sleep(60)
        os._exit(0)
print("ready", flush=True)
time.sleep(60)
`)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { killTree(cmd.Process.Pid); cmd.Process.Kill(); cmd.Wait() }()
	buf := make([]byte, 6)
	if _, err := out.Read(buf); err != nil {
		t.Fatal(err)
	}
	var rss int64
	for deadline := time.Now().Add(20 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		if len(treePIDs(cmd.Process.Pid)) == 3 {
			rss = treeRSS(cmd.Process.Pid)
			break
		}
	}
	if rss < 800<<20 {
		t.Skipf("treeRSS %d MiB: this kernel does not count the forked pages in each process", rss>>20)
	}
	pss := treeAnonPSS(cmd.Process.Pid, -1)
	if pss == -1 {
		t.Skip("no Pss_Anon in /proc/PID/smaps_rollup here")
	}
	if pss < 290<<20 || pss > 400<<20 {
		t.Fatalf("treeAnonPSS %d MiB for 300 MiB shared by 3 processes (treeRSS %d MiB)", pss>>20, rss>>20)
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
