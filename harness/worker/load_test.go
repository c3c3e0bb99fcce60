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
// (at least 2.4 s under CFS's equal shares); past its 2 s deadline it is
// granted the time it waited for the CPU, but no more than MaxLoadGrant
// (a tenth of the deadline less the kill's reserve), and then killed: the
// answer's deadline holds (issue 36: ten times the deadline made a 600 s
// timeout answer after 843 s). A job that sleeps waits for no CPU and is
// killed on time, granted at most the wait of its start (issue 20 brought the grant in:
// `--timeout 10` on a loaded machine turned honest candidates into
// timeouts).
func TestDeadlineGrantsTheLoadNotAHang(t *testing.T) {
	const spinners, cpuS = 3, 0.6
	w := newWorker(t)
	ctx := context.Background()
	if err := w.Start(ctx); err != nil {
		t.Fatal(err)
	}
	cpu := firstAllowedCPU(t)
	startSpinners(t, cpu, spinners)
	const timeout = 2 * time.Second
	cases := []struct {
		name string
		job  Job
		full bool // granted all it may be: it waited far longer
	}{
		{"busy under load", Job{Module: "selftest", Func: "spin_cpu", Args: map[string]any{"cpu": cpu, "cpu_s": cpuS}, Timeout: timeout},
			true},
		{"sleeping", Job{Module: "selftest", Func: "sleep", Args: map[string]any{"s": 60}, Timeout: timeout}, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			o, err := w.Run(ctx, tc.job)
			if err != nil {
				t.Fatal(err)
			}
			// 3 s for the kill and the exit on a loaded host.
			most := MaxLoadGrant(timeout)
			if !o.TimedOut || o.LoadGrant > most || (tc.full && o.LoadGrant != most) || o.Wall > timeout+most+3*time.Second {
				t.Fatalf("timed out %v after %s, granted %s (want a timeout, granted at most %s, all of it: %v); result %s",
					o.TimedOut, o.Wall, o.LoadGrant, most, tc.full, o.Result)
			}
			t.Logf("wall %s, granted %s", o.Wall, o.LoadGrant)
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

// startSpinners keeps n busy shells on cpu until the test ends (skipping
// it where taskset cannot pin them): a loaded CPU of the test's making.
func startSpinners(t *testing.T, cpu, n int) {
	t.Helper()
	for i := 0; i < n; i++ {
		c := exec.Command("taskset", "-c", strconv.Itoa(cpu), "sh", "-c", "while :; do :; done")
		c.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
		if err := c.Start(); err != nil {
			t.Skipf("taskset: %v", err)
		}
		t.Cleanup(func() { c.Process.Kill(); c.Wait() })
	}
}
