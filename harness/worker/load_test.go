package worker

import (
	"context"
	"os"
	"os/exec"
	"regexp"
	"strconv"
	"syscall"
	"testing"
	"time"
)

// TestDeadlineGrantsTheLoadNotAHang: a job that needs 0.6 s of CPU on a
// CPU shared with three spinners waits for it most of its wall time
// (at least 2.4 s under CFS's equal shares) and finishes past its 2 s
// deadline, which grants the time it spent waiting for the CPU; a job
// that sleeps waits for no CPU and is killed on time (issue 20:
// `--timeout 10` on a loaded machine turned honest candidates into
// timeouts).
func TestDeadlineGrantsTheLoadNotAHang(t *testing.T) {
	// 0.6 s of CPU beside three spinners: at least 2.4 s of wall time
	// (10 s at a load of 22 on this 2-core machine: the wait it is granted).
	const spinners, cpuS = 3, 0.6
	w := newWorker(t)
	ctx := context.Background()
	if err := w.Start(ctx); err != nil {
		t.Fatal(err)
	}
	cpu := firstAllowedCPU(t)
	for i := 0; i < spinners; i++ {
		c := exec.Command("taskset", "-c", strconv.Itoa(cpu), "sh", "-c", "while :; do :; done")
		c.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
		if err := c.Start(); err != nil {
			t.Skipf("taskset: %v", err)
		}
		t.Cleanup(func() { c.Process.Kill(); c.Wait() })
	}
	const timeout = 2 * time.Second
	cases := []struct {
		name    string
		job     Job
		timeout bool
		wall    func(time.Duration) bool
	}{
		{"busy under load", Job{Module: "selftest", Func: "spin_cpu", Args: map[string]any{"cpu": cpu, "cpu_s": cpuS}, Timeout: timeout},
			false, func(d time.Duration) bool { return d > timeout }},
		{"sleeping", Job{Module: "selftest", Func: "sleep", Args: map[string]any{"s": 60}, Timeout: timeout},
			true, func(d time.Duration) bool { return d < timeout+3*time.Second }},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			o, err := w.Run(ctx, tc.job)
			if err != nil {
				t.Fatal(err)
			}
			if o.TimedOut != tc.timeout || !tc.wall(o.Wall) {
				t.Fatalf("timed out %v after %s (want %v); result %s", o.TimedOut, o.Wall, tc.timeout, o.Result)
			}
			t.Logf("wall %s, result %s", o.Wall, o.Result)
		})
	}
}

// firstAllowedCPU is the lowest CPU this process may run on (a container's
// cpuset need not hold CPU 0).
func firstAllowedCPU(t *testing.T) int {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		t.Skipf("no /proc: %v", err)
	}
	m := regexp.MustCompile(`(?m)^Cpus_allowed_list:\s*(\d+)`).FindSubmatch(b)
	if m == nil {
		t.Skip("no Cpus_allowed_list")
	}
	n, _ := strconv.Atoi(string(m[1]))
	return n
}
