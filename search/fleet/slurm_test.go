package fleet

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/kevolve/kevolve-mcp/harness/toolchain/toolchaintest"
	"github.com/kevolve/kevolve-mcp/search"
	"github.com/kevolve/kevolve-mcp/search/engine"
	"github.com/kevolve/kevolve-mcp/search/operator/tuner"
	"github.com/kevolve/kevolve-mcp/search/store"
)

// localSlurm is a one-node Slurm cluster on this machine: munged,
// slurmctld and slurmd started by the test as root, with two fake GPUs
// (device files a gres.conf names: a count-only gres leaves the node
// INVAL).
type localSlurm struct {
	dir   string
	procs []*exec.Cmd
}

func (s *localSlurm) needs() error {
	if os.Getuid() != 0 {
		return errors.New("a localhost Slurm needs root (slurmd runs jobs as their user)")
	}
	for _, b := range []string{"munged", "slurmctld", "slurmd", "sbatch", "squeue", "scancel", "sinfo", "mknod"} {
		if _, err := exec.LookPath(b); err != nil {
			return fmt.Errorf("%s not found: install Debian's slurm-wlm and munge (apt-get install -y slurm-wlm munge; .ci/run does)", b)
		}
	}
	return nil
}

func (s *localSlurm) start(t *testing.T) {
	t.Helper()
	// Slurm's paths are short-lived but must fit in a socket path.
	dir, err := os.MkdirTemp("/tmp", "kvslurm-")
	if err != nil {
		t.Fatal(err)
	}
	s.dir = dir
	t.Cleanup(s.stop)
	for _, d := range []string{"state", "spool", "munge"} {
		os.MkdirAll(filepath.Join(dir, d), 0o700)
	}
	key := make([]byte, 1024)
	f, _ := os.Open("/dev/urandom")
	f.Read(key)
	f.Close()
	os.WriteFile(filepath.Join(dir, "munge", "munge.key"), key, 0o400)
	sock := filepath.Join(dir, "munge", "munge.sock")
	s.spawn(t, "munged", "-F", "--force", "--socket="+sock, "--key-file="+filepath.Join(dir, "munge", "munge.key"),
		"--pid-file="+filepath.Join(dir, "munge", "munged.pid"), "--log-file="+filepath.Join(dir, "munge", "munged.log"),
		"--seed-file="+filepath.Join(dir, "munge", "munged.seed"))
	waitFor(t, 10*time.Second, "munged's socket", func() bool { _, err := os.Stat(sock); return err == nil })

	var gpus []string
	for i := 0; i < 2; i++ {
		dev := fmt.Sprintf("/dev/kvfakegpu%d", i)
		if _, err := os.Stat(dev); err != nil {
			if out, err := exec.Command("mknod", dev, "c", "1", "3").CombinedOutput(); err != nil {
				toolchaintest.Require(t, fmt.Errorf("mknod %s: %v: %s", dev, err, out))
			}
		}
		gpus = append(gpus, dev)
	}
	host, _ := os.Hostname()
	host = strings.Split(host, ".")[0]
	port := 6817 + os.Getpid()%1000
	conf := fmt.Sprintf(`ClusterName=kvtest
SlurmctldHost=%[1]s(127.0.0.1)
SlurmctldPort=%[2]d
SlurmdPort=%[3]d
AuthType=auth/munge
AuthInfo=socket=%[4]s
CredType=cred/munge
SlurmUser=root
SlurmdUser=root
StateSaveLocation=%[5]s/state
SlurmdSpoolDir=%[5]s/spool
SlurmctldPidFile=%[5]s/slurmctld.pid
SlurmdPidFile=%[5]s/slurmd.pid
SlurmctldLogFile=%[5]s/slurmctld.log
SlurmdLogFile=%[5]s/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
GresTypes=gpu
MpiDefault=none
ReturnToService=2
SchedulerType=sched/backfill
JobCompType=jobcomp/none
AccountingStorageType=accounting_storage/none
KillWait=5
MinJobAge=300
NodeName=kvnode NodeHostname=%[1]s NodeAddr=127.0.0.1 CPUs=%[6]d RealMemory=1000 Gres=gpu:2 State=UNKNOWN
PartitionName=kvtest Nodes=kvnode Default=YES MaxTime=INFINITE State=UP
`, host, port, port+1, sock, dir, runtime.NumCPU())
	confPath := filepath.Join(dir, "slurm.conf")
	os.WriteFile(confPath, []byte(conf), 0o644)
	os.WriteFile(filepath.Join(dir, "gres.conf"), []byte(fmt.Sprintf("NodeName=kvnode Name=gpu File=%s\nNodeName=kvnode Name=gpu File=%s\n", gpus[0], gpus[1])), 0o644)
	t.Setenv("SLURM_CONF", confPath)
	s.spawn(t, "slurmctld", "-D", "-c", "-f", confPath)
	s.spawn(t, "slurmd", "-D", "-N", "kvnode", "-f", confPath)
	waitFor(t, 60*time.Second, "the Slurm node to be idle", func() bool {
		out, _ := exec.Command("sinfo", "-h", "-N", "-o", "%T").Output()
		return strings.TrimSpace(string(out)) == "idle"
	})
}

func (s *localSlurm) spawn(t *testing.T, name string, args ...string) {
	cmd := exec.Command(name, args...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	log, _ := os.Create(filepath.Join(s.dir, name+".out"))
	cmd.Stdout, cmd.Stderr = log, log
	if err := cmd.Start(); err != nil {
		t.Fatalf("start %s: %v", name, err)
	}
	s.procs = append(s.procs, cmd)
}

// stop ends what start started, slurmd first, each by its own pid.
func (s *localSlurm) stop() {
	for i := len(s.procs) - 1; i >= 0; i-- {
		p := s.procs[i]
		syscall.Kill(-p.Process.Pid, syscall.SIGTERM)
		done := make(chan struct{})
		go func() { p.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(5 * time.Second):
			syscall.Kill(-p.Process.Pid, syscall.SIGKILL)
			<-done
		}
	}
	if s.dir != "" {
		os.RemoveAll(s.dir)
	}
}

func (s *localSlurm) logs(t *testing.T) {
	for _, f := range []string{"slurmctld.log", "slurmd.log", "munge/munged.log"} {
		b, _ := os.ReadFile(filepath.Join(s.dir, f))
		if len(b) > 3000 {
			b = b[len(b)-3000:]
		}
		t.Logf("--- %s\n%s", f, b)
	}
}

func waitFor(t *testing.T, d time.Duration, what string, ok func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for time.Now().Before(deadline) {
		if ok() {
			return
		}
		time.Sleep(200 * time.Millisecond)
	}
	t.Fatalf("timed out waiting for %s", what)
}

// A search whose workers Slurm runs: the launcher submits one worker with
// --gres=gpu:2, a worker whose job fails is resubmitted, the search
// finishes, and scancel leaves nothing behind.
func TestSlurmLocalhost(t *testing.T) {
	s := &localSlurm{}
	toolchaintest.Require(t, s.needs())
	fleetEnv(t)
	s.start(t)
	defer func() {
		if t.Failed() {
			s.logs(t)
		}
	}()
	ctx, cancel := context.WithCancel(toolchaintest.Context(t))
	defer cancel()
	dir := t.TempDir()
	db := openTestDB(t, filepath.Join(dir, "fleet.db"))
	st, _ := store.New(ctx, db)
	q, _ := NewQueue(ctx, db)
	q.Lease = testLease
	coord := &Coordinator{Queue: q, Token: "t0ken", ClaimWait: 2 * time.Second,
		Log: slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))}
	if err := coord.Listen(ctx, "127.0.0.1:0"); err != nil {
		t.Fatal(err)
	}
	logs := filepath.Join(dir, "logs")
	os.MkdirAll(logs, 0o755)
	l := &SlurmLauncher{Partition: "kvtest", N: 1, Poll: time.Second, Config: LaunchConfig{Coordinator: coord.URL(), Token: "t0ken",
		Name: "kvt", Command: []string{os.Args[0], "worker"}, WorkerArgs: []string{"--target", "cpu", "--slots", "2", "--drain", "5s"},
		GPUsPerNode: 2, LogDir: logs}}
	if err := l.Start(ctx); err != nil {
		t.Fatal(err)
	}
	stopped := false
	defer func() {
		if !stopped {
			l.Stop(context.Background())
		}
		if t.Failed() {
			dumpLogs(t, logs)
		}
	}()
	// The first worker's job fails (killed under Slurm): the launcher
	// resubmits it.
	first := l.JobIDs()[0]
	waitFor(t, 90*time.Second, "the first Slurm worker to register", func() bool {
		s, _ := Snapshot(ctx, q)
		return s != nil && len(s.Workers) > 0
	})
	out, err := exec.Command("scontrol", "show", "job", first).CombinedOutput()
	if err != nil || !strings.Contains(string(out), "gpu:2") {
		t.Errorf("worker job %s does not hold 2 GPUs: %v\n%s", first, err, out)
	}
	if out, err := exec.Command("scancel", "--signal=KILL", first).CombinedOutput(); err != nil {
		t.Fatalf("scancel --signal=KILL %s: %v %s", first, err, out)
	}
	waitFor(t, 60*time.Second, "the failed worker to be resubmitted", func() bool { return len(l.Submitted()) >= 2 })
	p, code, err := testSearchProblem(filepath.Join(dir, "corpus"))
	if err != nil {
		t.Fatal(err)
	}
	eng := &engine.Engine{Store: st, Eval: &Evaluator{Queue: q}, Operator: tuner.New()}
	run, err := eng.Run(ctx, searchOptions("slurm", p, code, 3))
	if err != nil {
		t.Fatal(err)
	}
	run, _ = st.Run(ctx, run.ID)
	if run.Status != search.RunDone {
		t.Fatalf("run %s: %s", run.Status, run.StopReason)
	}
	for h, v := range evaluatedSet(t, st, run.ID) {
		if v != search.VerdictPass {
			t.Errorf("kernel %s: %s", h[:12], v)
		}
	}
	nodes, _ := st.Nodes(ctx, run.ID)
	timed := 0
	for _, n := range nodes {
		if n.Result != nil && n.Result.TimeS > 0 {
			timed++
		}
	}
	if timed == 0 {
		t.Error("no evaluation through Slurm workers was timed")
	}
	checkJobsOnce(t, q)
	if err := l.Stop(ctx); err != nil {
		t.Fatal(err)
	}
	stopped = true
	waitFor(t, 30*time.Second, "scancel to empty the queue", func() bool {
		out, _ := exec.Command("squeue", "-h", "-n", l.JobName(), "-o", "%i %T").Output()
		return strings.TrimSpace(string(out)) == ""
	})
	t.Logf("Slurm jobs submitted: %v", l.Submitted())
}
