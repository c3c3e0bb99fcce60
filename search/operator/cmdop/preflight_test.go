package cmdop

import (
	"context"
	"errors"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/kevolve/kevolve-mcp/search"
)

// fakeCLIs puts the scripted claude and codex (testdata/fakecli, which
// follow the real CLIs' contract) first on PATH and returns a listener
// standing in for their APIs.
func fakeCLIs(t *testing.T) net.Listener {
	t.Helper()
	dir, err := filepath.Abs(filepath.Join("testdata", "fakecli"))
	if err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", dir+string(os.PathListSeparator)+os.Getenv("PATH"))
	t.Setenv("KEVOLVE_NODE_DIR", "")
	t.Setenv("HTTPS_PROXY", "")
	t.Setenv("https_proxy", "")
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			c.Close()
		}
	}()
	return l
}

// closedAddr is a loopback port nothing listens on.
func closedAddr(t *testing.T) string {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	return addr
}

// The preflight stops a preset that cannot work within PreflightTimeout,
// naming the fix; a working one passes. cmd: operators are not checked.
func TestPreflight(t *testing.T) {
	api := fakeCLIs(t)
	up, down := "http://"+api.Addr().String(), "http://"+closedAddr(t)
	cases := []struct {
		name, preset string
		env          map[string]string
		want         string // "" = passes
	}{
		{"claude ok", "claude", map[string]string{"ANTHROPIC_BASE_URL": up}, ""},
		{"codex ok", "codex", map[string]string{"OPENAI_BASE_URL": up}, ""},
		{"claude logged out", "claude", map[string]string{"FAKE_LOGGED_IN": "0", "ANTHROPIC_BASE_URL": up}, "fix: claude auth login"},
		{"codex logged out", "codex", map[string]string{"FAKE_LOGGED_IN": "0", "OPENAI_BASE_URL": up}, "fix: codex login"},
		{"claude status hangs", "claude", map[string]string{"FAKE_STATUS_HANG": "1", "ANTHROPIC_BASE_URL": up}, "did not answer"},
		{"claude API unreachable", "claude", map[string]string{"ANTHROPIC_BASE_URL": down}, "cannot reach"},
		{"codex API unreachable", "codex", map[string]string{"OPENAI_BASE_URL": down}, "cannot reach"},
		{"claude not installed", "claude", map[string]string{"PATH": "/nonexistent"}, "npm install -g @anthropic-ai/claude-code"},
		{"cmd: is the user's", "cmd:false", nil, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			for k, v := range c.env {
				t.Setenv(k, v)
			}
			o, err := New(c.preset, Config{Server: []string{"/bin/false"}})
			if err != nil {
				t.Fatal(err)
			}
			t0 := time.Now()
			err = o.Preflight(context.Background())
			if took := time.Since(t0); took > PreflightTimeout+2*time.Second {
				t.Errorf("preflight took %s", took)
			}
			if c.want == "" {
				if err != nil {
					t.Fatalf("preflight: %v", err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), c.want) || !errors.Is(err, search.ErrOperatorUnavailable) {
				t.Fatalf("preflight: %v; want an unavailable operator error with %q", err, c.want)
			}
		})
	}
}

// The claude preset may edit only its proposal's folder (its permission
// flags say so), and a proposal that wrote outside it anyway is refused;
// while the agent works, progress lines come.
func TestClaudePresetConfined(t *testing.T) {
	fakeCLIs(t)
	p, start := rmsnorm(t)
	c := rootContext(p, start)
	watch := t.TempDir()
	var mu sync.Mutex
	var lines []string
	o, err := New("claude", Config{Deadline: time.Minute, WorkRoot: t.TempDir(), Server: []string{"/bin/false"},
		Watch: []string{watch}, ProgressEvery: 100 * time.Millisecond,
		Progress: func(l string) { mu.Lock(); lines = append(lines, l); mu.Unlock() }})
	if err != nil {
		t.Fatal(err)
	}
	args := filepath.Join(t.TempDir(), "args")
	t.Setenv("FAKE_ARGS", args)
	t.Setenv("FAKE_SLEEP", "1")
	prop, _, err := propose(o, c)
	if err != nil || !strings.Contains(prop.Code, "tuned by the fake agent") {
		t.Fatalf("a confined proposal: %v", err)
	}
	b, _ := os.ReadFile(args)
	allowed := ""
	for i, a := range strings.Split(string(b), "\n") {
		if i > 0 && strings.Split(string(b), "\n")[i-1] == "--allowedTools" {
			allowed = a
		}
	}
	for _, want := range []string{"Edit(//", "Write(//", "/**)", "mcp__kevolve__*"} {
		if !strings.Contains(allowed, want) {
			t.Errorf("--allowedTools %q lacks %q", allowed, want)
		}
	}
	if strings.Contains(allowed, "Write,") || strings.HasSuffix(allowed, ",Write") || !strings.Contains(string(b), "Bash,WebFetch,WebSearch") {
		t.Errorf("file writes not scoped or the shell not refused:\n%s", b)
	}
	mu.Lock()
	got := strings.Join(lines, "\n")
	mu.Unlock()
	if !strings.Contains(got, "operator claude (run run-test) working on a child of node 1") {
		t.Errorf("no progress while the agent worked: %q", got)
	}

	escape := filepath.Join(watch, "escaped.txt")
	t.Setenv("FAKE_ESCAPE", escape)
	t.Setenv("FAKE_SLEEP", "0")
	_, _, err = propose(o, c)
	if err == nil || !strings.Contains(err.Error(), "wrote outside its folder") || !strings.Contains(err.Error(), escape) {
		t.Fatalf("a proposal that wrote %s: %v; want it refused", escape, err)
	}
}

// The codex preset runs in the proposal's folder without /tmp, and a
// proposal that wrote outside it anyway is refused too.
func TestCodexPresetConfined(t *testing.T) {
	fakeCLIs(t)
	p, start := rmsnorm(t)
	c := rootContext(p, start)
	watch := t.TempDir()
	o, err := New("codex", Config{Deadline: time.Minute, WorkRoot: t.TempDir(), Server: []string{"/bin/false"}, Watch: []string{watch}})
	if err != nil {
		t.Fatal(err)
	}
	args := filepath.Join(t.TempDir(), "args")
	t.Setenv("FAKE_ARGS", args)
	if prop, _, err := propose(o, c); err != nil || !strings.Contains(prop.Code, "tuned by the fake agent") {
		t.Fatalf("a confined proposal: %v", err)
	}
	b, _ := os.ReadFile(args)
	for _, want := range []string{"workspace-write", "sandbox_workspace_write.exclude_slash_tmp=true", "sandbox_workspace_write.exclude_tmpdir_env_var=true"} {
		if !strings.Contains(string(b), want) {
			t.Errorf("codex command line lacks %q:\n%s", want, b)
		}
	}
	escape := filepath.Join(watch, "sub", "escaped.txt")
	os.MkdirAll(filepath.Dir(escape), 0o755)
	t.Setenv("FAKE_ESCAPE", escape)
	if _, _, err := propose(o, c); err == nil || !strings.Contains(err.Error(), "wrote outside its folder") {
		t.Fatalf("a proposal that wrote %s: %v; want it refused", escape, err)
	}
}
