package main

import (
	"bufio"
	"encoding/json"
	"io"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/kevolve/kevolve-mcp/harness/toolchain/toolchaintest"
)

// TestEvolveKillResume: the real binary with the real Python worker is
// SIGKILLed (its whole process group) while a run is evaluating; --resume
// then finishes the run with exactly its budget of evaluations. (The
// many-trial version of this, with a journal of every evaluation, is
// search/engine's TestKill9Resume.)
func TestEvolveKillResume(t *testing.T) {
	toolchaintest.Python(t)
	db := filepath.Join(t.TempDir(), "k.db")
	// A wrong problem name fails cleanly, naming the problem.
	if out, err := exec.Command(binary, "--db", db, "evolve", "--problem", "llm/no_such_problem", "--calibrate=false").CombinedOutput(); err == nil || !strings.Contains(string(out), "no_such_problem") {
		t.Fatalf("evolve on an unknown problem: %v\n%s", err, out)
	}
	for _, delay := range []time.Duration{0, 1500 * time.Millisecond} {
		cmd := exec.Command(binary, "--db", db, "evolve", "--problem", "other/relu", "--budget", "4", "--seed", "7", "--calibrate=false")
		cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
		stderr, err := cmd.StderrPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		runID := ""
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			line := sc.Text()
			if strings.HasPrefix(line, "evolve run ") {
				runID = strings.TrimSuffix(strings.Fields(line)[2], ":")
			}
			if strings.Contains(line, "1/4 evals") {
				break
			}
		}
		// Killed while the second evaluation is in flight (at once, or
		// part-way through it).
		time.Sleep(delay)
		syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		go io.Copy(io.Discard, stderr)
		cmd.Wait()
		if runID == "" {
			t.Fatal("no run id on stderr")
		}
		out, err := exec.Command(binary, "--db", db, "evolve", "--resume", runID, "--calibrate=false", "--json").Output()
		if err != nil {
			t.Fatalf("resume: %v\n%s", err, out)
		}
		var sum struct {
			Status      string `json:"status"`
			Evaluations int    `json:"evaluations"`
			InFlight    int    `json:"in_flight"`
			Best        *struct {
				Verdict string `json:"verdict"`
			} `json:"best"`
		}
		if err := json.Unmarshal(out, &sum); err != nil {
			t.Fatalf("summary: %v\n%s", err, out)
		}
		if sum.Status != "done" || sum.Evaluations != 4 || sum.InFlight != 0 || sum.Best == nil || sum.Best.Verdict != "pass" {
			t.Fatalf("after resume: %s", out)
		}
		// The run's own nodes: their ids go on from the earlier run's in
		// the same database (a "#1" matched only a node #10 there).
		show, err := exec.Command(binary, "--db", db, "evolve", "show", runID).Output()
		if err != nil || !strings.Contains(string(show), runID) || !regexp.MustCompile(`(?m)^#\d+\s+-\s+done\s+pass\s.*start kernel$`).Match(show) {
			t.Fatalf("evolve show: %v\n%s%s", err, show, failedChecks(t, db, runID, 0))
		}
	}
}
