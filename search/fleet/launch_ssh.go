package fleet

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"time"
)

// SSHLauncher starts one worker per host over ssh, copying the binary over
// when the host lacks it (or has another build). The ssh session lives as
// long as the worker: ending it (Stop) hangs the worker up.
type SSHLauncher struct {
	Config LaunchConfig
	Hosts  []string
	// SSH and SCP are the programs (default "ssh", "scp").
	SSH, SCP string

	mu    sync.Mutex
	procs []sshProc
}

type sshProc struct {
	cmd  *exec.Cmd
	done chan struct{}
}

// sshOpts never prompt (a worker launch must not hang on a password) and
// give up on an unreachable host.
var sshOpts = []string{"-o", "BatchMode=yes", "-o", "ConnectTimeout=15", "-o", "ServerAliveInterval=15"}

// Describe says what runs.
func (l *SSHLauncher) Describe() string {
	return fmt.Sprintf("%d ssh workers (%s)", len(l.Hosts), strings.Join(l.Hosts, ", "))
}

func (l *SSHLauncher) ssh() string {
	if l.SSH != "" {
		return l.SSH
	}
	return "ssh"
}

func (l *SSHLauncher) scp() string {
	if l.SCP != "" {
		return l.SCP
	}
	return "scp"
}

func (l *SSHLauncher) remoteBinary() string {
	if l.Config.RemoteBinary != "" {
		return l.Config.RemoteBinary
	}
	return ".cache/kevolve/bin/kevolve-mcp" // relative to the remote home
}

// shellQuote quotes s for a POSIX shell.
func shellQuote(s string) string {
	if s != "" && !strings.ContainsFunc(s, func(r rune) bool {
		return !(r == '-' || r == '_' || r == '.' || r == '/' || r == ':' || r == '=' || r == ',' || r == '@' ||
			(r >= 'a' && r <= 'z') || (r >= 'A' && r <= 'Z') || (r >= '0' && r <= '9'))
	}) {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// CheckCommand is the remote command printing the binary's sha256 (empty
// when missing).
func (l *SSHLauncher) CheckCommand() string {
	return "sha256sum " + shellQuote(l.remoteBinary()) + " 2>/dev/null || true"
}

// InstallCommands are the copy (scp argv) and the remote command that
// moves it into place.
func (l *SSHLauncher) InstallCommands(host, local string) (scp []string, finish string) {
	bin := l.remoteBinary()
	tmp := bin + ".tmp"
	scp = append([]string{l.scp(), "-q"}, sshOpts...)
	scp = append(scp, local, host+":"+tmp)
	finish = "chmod 755 " + shellQuote(tmp) + " && mv -f " + shellQuote(tmp) + " " + shellQuote(bin)
	return scp, finish
}

// WorkerCommand is the remote shell command that runs the worker: the
// token comes on stdin, so it is never on a command line.
func (l *SSHLauncher) WorkerCommand(host string) string {
	argv := l.Config.workerArgv([]string{l.remoteBinary(), "worker"}, l.Config.Name+"-"+host)
	q := make([]string, len(argv))
	for i, a := range argv {
		q[i] = shellQuote(a)
	}
	return "IFS= read -r KEVOLVE_TOKEN; export KEVOLVE_TOKEN; exec " + strings.Join(q, " ")
}

func (l *SSHLauncher) localBinary() (string, error) {
	if len(l.Config.Command) > 0 {
		return l.Config.Command[0], nil
	}
	return os.Executable()
}

// Start installs the binary where needed and starts every worker.
func (l *SSHLauncher) Start(ctx context.Context) error {
	local, err := l.localBinary()
	if err != nil {
		return err
	}
	sum, err := fileSHA256(local)
	if err != nil {
		return fmt.Errorf("ssh workers: %w", err)
	}
	for _, h := range l.Hosts {
		if err := l.install(ctx, h, local, sum); err != nil {
			l.Stop(context.Background())
			return err
		}
		if err := l.startOne(h); err != nil {
			l.Stop(context.Background())
			return err
		}
	}
	return nil
}

func (l *SSHLauncher) install(ctx context.Context, host, local, sum string) error {
	args := append(append([]string{}, sshOpts...), host, l.CheckCommand())
	out, err := runTool(ctx, 30*time.Second, nil, "", l.ssh(), args...)
	if err != nil {
		return fmt.Errorf("ssh worker on %s: %w", host, err)
	}
	if f := strings.Fields(out); len(f) > 0 && f[0] == sum {
		return nil
	}
	l.Config.log().Info("copying the worker binary", "host", host)
	scp, finish := l.InstallCommands(host, local)
	mk := append(append([]string{}, sshOpts...), host, "mkdir -p "+shellQuote(dirOf(l.remoteBinary())))
	if _, err := runTool(ctx, 30*time.Second, nil, "", l.ssh(), mk...); err != nil {
		return fmt.Errorf("ssh worker on %s: %w", host, err)
	}
	if _, err := runTool(ctx, 5*time.Minute, nil, "", scp[0], scp[1:]...); err != nil {
		return fmt.Errorf("ssh worker on %s: copy: %w", host, err)
	}
	fin := append(append([]string{}, sshOpts...), host, finish)
	if _, err := runTool(ctx, 30*time.Second, nil, "", l.ssh(), fin...); err != nil {
		return fmt.Errorf("ssh worker on %s: %w", host, err)
	}
	return nil
}

func dirOf(p string) string {
	if i := strings.LastIndex(p, "/"); i > 0 {
		return p[:i]
	}
	return "."
}

func (l *SSHLauncher) startOne(host string) error {
	args := append(append([]string{}, sshOpts...), host, l.WorkerCommand(host))
	cmd := exec.Command(l.ssh(), args...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Stdin = strings.NewReader(l.Config.Token + "\n")
	if l.Config.LogDir != "" {
		os.MkdirAll(l.Config.LogDir, 0o755)
		if f, err := os.Create(l.Config.LogDir + "/ssh-" + host + ".log"); err == nil {
			cmd.Stdout, cmd.Stderr = f, f
		}
	}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("ssh worker on %s: %w", host, err)
	}
	p := sshProc{cmd: cmd, done: make(chan struct{})}
	l.mu.Lock()
	l.procs = append(l.procs, p)
	l.mu.Unlock()
	go func() { cmd.Wait(); close(p.done) }()
	return nil
}

// Stop hangs up every ssh session (SIGTERM to the local ssh, whose remote
// side then gets SIGHUP), then kills what remains after ctx.
func (l *SSHLauncher) Stop(ctx context.Context) error {
	l.mu.Lock()
	procs := append([]sshProc(nil), l.procs...)
	l.mu.Unlock()
	for _, p := range procs {
		syscall.Kill(-p.cmd.Process.Pid, syscall.SIGTERM)
	}
	grace := time.After(10 * time.Second)
	for _, p := range procs {
		select {
		case <-p.done:
			continue
		case <-grace:
		case <-ctx.Done():
		}
		syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL)
		<-p.done
	}
	return nil
}

func fileSHA256(path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return "", err
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}
