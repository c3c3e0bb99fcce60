package fleet

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"
)

// SlurmLauncher submits one worker per node with sbatch, tracks the jobs
// with squeue (sacct or scontrol once they left the queue), resubmits a
// worker whose job Slurm reports failed, and scancels them all at the end.
type SlurmLauncher struct {
	Config    LaunchConfig
	Partition string
	N         int
	// Poll is how often squeue is asked (default 5 s).
	Poll time.Duration

	mu       sync.Mutex
	jobs     []string // Slurm job id per worker slot
	resubmit []int
	history  []string // every job id submitted
	stop     context.CancelFunc
	done     chan struct{}
}

// Describe says what runs.
func (l *SlurmLauncher) Describe() string {
	return fmt.Sprintf("%d Slurm workers on partition %s (job name %s)", l.N, l.Partition, l.JobName())
}

// JobName is the Slurm job name every worker shares.
func (l *SlurmLauncher) JobName() string {
	n := l.Config.Name
	if n == "" {
		n = "kevolve"
	}
	return n + "-worker"
}

func (l *SlurmLauncher) binary() ([]string, error) {
	if len(l.Config.Command) > 0 {
		return l.Config.Command, nil
	}
	exe, err := os.Executable()
	if err != nil {
		return nil, err
	}
	return []string{exe, "worker"}, nil
}

// Script is the batch script for worker slot i. The token reaches the job
// through sbatch's exported environment, never the script.
func (l *SlurmLauncher) Script(i int) (string, error) {
	bin, err := l.binary()
	if err != nil {
		return "", err
	}
	var b strings.Builder
	b.WriteString("#!/bin/bash\n")
	fmt.Fprintf(&b, "#SBATCH --job-name=%s\n", l.JobName())
	fmt.Fprintf(&b, "#SBATCH --partition=%s\n", l.Partition)
	b.WriteString("#SBATCH --nodes=1\n#SBATCH --ntasks=1\n")
	if l.Config.GPUsPerNode > 0 {
		fmt.Fprintf(&b, "#SBATCH --gres=gpu:%d\n", l.Config.GPUsPerNode)
	} else {
		b.WriteString("#SBATCH --exclusive\n")
	}
	if l.Config.LogDir != "" {
		fmt.Fprintf(&b, "#SBATCH --output=%s\n", filepath.Join(l.Config.LogDir, "%x-%j.out"))
	}
	for _, a := range l.Config.SlurmArgs {
		fmt.Fprintf(&b, "#SBATCH %s\n", a)
	}
	b.WriteString("# One long-lived worker per node: it claims evaluations from the\n# coordinator and uses every GPU Slurm gave it.\n")
	argv := l.Config.workerArgv(bin, fmt.Sprintf("%s-slurm-%d", l.Config.Name, i))
	q := make([]string, len(argv))
	for k, a := range argv {
		q[k] = shellQuote(a)
	}
	b.WriteString("exec " + strings.Join(q, " ") + "\n")
	return b.String(), nil
}

// SbatchArgs is sbatch's command line (the script comes on stdin).
func (l *SlurmLauncher) SbatchArgs() []string { return []string{"--parsable"} }

func (l *SlurmLauncher) env() []string {
	return append(os.Environ(), "KEVOLVE_TOKEN="+l.Config.Token)
}

func (l *SlurmLauncher) submit(ctx context.Context, i int) (string, error) {
	script, err := l.Script(i)
	if err != nil {
		return "", err
	}
	out, err := runTool(ctx, 60*time.Second, l.env(), script, "sbatch", l.SbatchArgs()...)
	if err != nil {
		return "", fmt.Errorf("slurm worker %d: %w", i, err)
	}
	id, _, _ := strings.Cut(strings.TrimSpace(out), ";") // --parsable: JOBID[;CLUSTER]
	if id == "" {
		return "", fmt.Errorf("slurm worker %d: sbatch printed no job id", i)
	}
	l.mu.Lock()
	l.history = append(l.history, id)
	l.mu.Unlock()
	l.Config.log().Info("slurm worker submitted", "slot", i, "job", id, "partition", l.Partition)
	return id, nil
}

// Start submits the workers and tracks them until Stop.
func (l *SlurmLauncher) Start(ctx context.Context) error {
	l.jobs = make([]string, l.N)
	l.resubmit = make([]int, l.N)
	for i := 0; i < l.N; i++ {
		id, err := l.submit(ctx, i)
		if err != nil {
			l.Stop(context.Background())
			return err
		}
		l.jobs[i] = id
	}
	tctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	l.stop, l.done = cancel, make(chan struct{})
	go l.track(tctx)
	return nil
}

// JobIDs are the Slurm job ids currently standing for the workers.
func (l *SlurmLauncher) JobIDs() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]string(nil), l.jobs...)
}

// Submitted are every job id submitted, resubmissions included.
func (l *SlurmLauncher) Submitted() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]string(nil), l.history...)
}

// failedStates are the Slurm states after which a worker is resubmitted.
var failedStates = map[string]bool{"FAILED": true, "NODE_FAIL": true, "BOOT_FAIL": true, "TIMEOUT": true,
	"OUT_OF_MEMORY": true, "PREEMPTED": true, "DEADLINE": true, "CANCELLED": true, "COMPLETED": true, "REVOKED": true}

func (l *SlurmLauncher) track(ctx context.Context) {
	defer close(l.done)
	poll := l.Poll
	if poll <= 0 {
		poll = 5 * time.Second
	}
	for {
		select {
		case <-ctx.Done():
			return
		case <-time.After(poll):
		}
		for i, id := range l.JobIDs() {
			if id == "" {
				continue
			}
			st, err := SlurmJobState(ctx, id)
			if err != nil {
				if ctx.Err() == nil {
					l.Config.log().Warn("slurm: job state unknown", "job", id, "err", err)
				}
				continue
			}
			if !failedStates[st] {
				continue
			}
			if ctx.Err() != nil {
				return
			}
			l.mu.Lock()
			l.resubmit[i]++
			n := l.resubmit[i]
			l.mu.Unlock()
			if n > l.Config.maxRestarts() {
				l.Config.log().Error("slurm worker keeps failing; not resubmitting it", "slot", i, "job", id, "state", st)
				l.mu.Lock()
				l.jobs[i] = ""
				l.mu.Unlock()
				continue
			}
			l.Config.log().Warn("slurm worker job ended; resubmitting", "slot", i, "job", id, "state", st)
			nid, err := l.submit(ctx, i)
			if err != nil {
				l.Config.log().Error("slurm resubmit", "slot", i, "err", err)
				continue
			}
			l.mu.Lock()
			l.jobs[i] = nid
			l.mu.Unlock()
		}
	}
}

// SlurmJobState asks squeue for a job's state and, once it left the queue,
// sacct, then scontrol (clusters without accounting).
func SlurmJobState(ctx context.Context, id string) (string, error) {
	out, err := runTool(ctx, 20*time.Second, nil, "", "squeue", "-h", "-j", id, "-o", "%T")
	if err == nil {
		if st := strings.TrimSpace(out); st != "" {
			return firstField(st), nil
		}
	}
	if out, err := runTool(ctx, 20*time.Second, nil, "", "sacct", "-n", "-P", "-X", "-j", id, "-o", "State"); err == nil {
		if st := strings.TrimSpace(out); st != "" {
			return firstField(st), nil
		}
	}
	out, err = runTool(ctx, 20*time.Second, nil, "", "scontrol", "-o", "show", "job", id)
	if err != nil {
		return "", err
	}
	for _, f := range strings.Fields(out) {
		if v, ok := strings.CutPrefix(f, "JobState="); ok {
			return v, nil
		}
	}
	return "", fmt.Errorf("slurm job %s: no state reported", id)
}

// firstField keeps "CANCELLED" of "CANCELLED by 0".
func firstField(s string) string {
	s = strings.Fields(strings.Split(s, "\n")[0])[0]
	return strings.TrimSuffix(s, "+")
}

// Stop stops tracking and scancels every worker job (Slurm sends SIGTERM,
// so they drain, then SIGKILL after its KillWait).
func (l *SlurmLauncher) Stop(ctx context.Context) error {
	if l.stop != nil {
		l.stop()
		<-l.done
	}
	var ids []string
	for _, id := range l.JobIDs() {
		if id != "" {
			ids = append(ids, id)
		}
	}
	if len(ids) == 0 {
		return nil
	}
	args := append([]string{"--signal=TERM", "--full"}, ids...)
	if _, err := runTool(ctx, 30*time.Second, nil, "", "scancel", args...); err != nil {
		l.Config.log().Warn("scancel --signal=TERM", "err", err)
	}
	// A plain scancel ends them for good (SIGTERM, then SIGKILL after KillWait).
	time.Sleep(2 * time.Second)
	if _, err := runTool(ctx, 30*time.Second, nil, "", "scancel", ids...); err != nil {
		return fmt.Errorf("scancel: %w", err)
	}
	return nil
}
