package fleet

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"syscall"
	"time"
)

// LocalLauncher runs N workers as processes on this host, restarting one
// that dies (up to MaxRestarts times each).
type LocalLauncher struct {
	Config LaunchConfig
	N      int

	mu       sync.Mutex
	procs    []*exec.Cmd
	restarts map[int]int
	stopped  bool
	wg       sync.WaitGroup
}

// Describe says what runs.
func (l *LocalLauncher) Describe() string { return fmt.Sprintf("%d local workers", l.N) }

func (l *LocalLauncher) command() ([]string, error) {
	if len(l.Config.Command) > 0 {
		return l.Config.Command, nil
	}
	exe, err := os.Executable()
	if err != nil {
		return nil, fmt.Errorf("local workers: this program's path: %w", err)
	}
	return []string{exe, "worker"}, nil
}

// Start spawns the workers.
func (l *LocalLauncher) Start(ctx context.Context) error {
	bin, err := l.command()
	if err != nil {
		return err
	}
	l.procs = make([]*exec.Cmd, l.N)
	for i := 0; i < l.N; i++ {
		name := fmt.Sprintf("%s-local-%d", l.Config.Name, i)
		if err := l.spawn(i, bin, name); err != nil {
			l.Stop(context.Background())
			return err
		}
	}
	return nil
}

func (l *LocalLauncher) spawn(i int, bin []string, name string) error {
	argv := l.Config.workerArgv(bin, name)
	if l.N > 1 {
		// N workers on one host split its GPUs (CPU slots are their own).
		argv = append(argv, "--share", fmt.Sprintf("%d/%d", i, l.N))
	}
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Env = append(os.Environ(), "KEVOLVE_TOKEN="+l.Config.Token)
	// Its own process group: the worker's Python children go with it, and a
	// terminal's ^C reaches the coordinator, which stops the workers itself.
	// Pdeathsig: a coordinator killed -9 takes its local workers along
	// (they drain); its restart launches new ones on its new address.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGTERM}
	if l.Config.LogDir != "" {
		os.MkdirAll(l.Config.LogDir, 0o755)
		f, err := os.OpenFile(filepath.Join(l.Config.LogDir, name+".log"), os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
		if err == nil {
			cmd.Stdout, cmd.Stderr = f, f
		}
	}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("start local worker %s: %w", name, err)
	}
	l.mu.Lock()
	l.procs[i] = cmd
	l.mu.Unlock()
	l.wg.Add(1)
	go func() {
		defer l.wg.Done()
		err := cmd.Wait()
		l.mu.Lock()
		stopped := l.stopped
		l.mu.Unlock()
		if stopped {
			return
		}
		l.Config.log().Warn("local worker exited; restarting it", "worker", name, "err", err)
		l.restart(i, bin, name)
	}()
	return nil
}

func (l *LocalLauncher) restart(i int, bin []string, name string) {
	l.mu.Lock()
	if l.restarts == nil {
		l.restarts = map[int]int{}
	}
	l.restarts[i]++
	n := l.restarts[i]
	l.mu.Unlock()
	if n > l.Config.maxRestarts() {
		l.Config.log().Error("local worker keeps dying; not restarting it", "worker", name, "restarts", n-1)
		return
	}
	time.Sleep(500 * time.Millisecond)
	if err := l.spawn(i, bin, name); err != nil {
		l.Config.log().Error("restart local worker", "worker", name, "err", err)
	}
}

// PIDs are the workers' current process ids (for tests and status).
func (l *LocalLauncher) PIDs() []int {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []int
	for _, c := range l.procs {
		if c != nil && c.Process != nil {
			out = append(out, c.Process.Pid)
		}
	}
	return out
}

// Stop sends SIGTERM to every worker's group, waits for them to drain
// (until ctx ends), then kills what is left.
func (l *LocalLauncher) Stop(ctx context.Context) error {
	l.mu.Lock()
	l.stopped = true
	procs := append([]*exec.Cmd(nil), l.procs...)
	l.mu.Unlock()
	for _, c := range procs {
		if c != nil && c.Process != nil {
			syscall.Kill(-c.Process.Pid, syscall.SIGTERM)
		}
	}
	done := make(chan struct{})
	go func() { l.wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-ctx.Done():
		for _, c := range procs {
			if c != nil && c.Process != nil {
				syscall.Kill(-c.Process.Pid, syscall.SIGKILL)
			}
		}
		<-done
	}
	return nil
}
