package cmdop

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/kevolve/kevolve-mcp/harness"
	"github.com/kevolve/kevolve-mcp/harness/toolchain/toolchaintest"
	"github.com/kevolve/kevolve-mcp/search"
	"github.com/kevolve/kevolve-mcp/search/engine"
	"github.com/kevolve/kevolve-mcp/search/harnesseval"
)

// claudeCodeVersion is the npm release the test installs when none is
// found (pinned so that the test is repeatable).
const claudeCodeVersion = "2.1.330"

// claudeBin finds Claude Code: on PATH, in KEVOLVE_NODE_DIR, or in the
// kevolve cache, installing it there from npm when it is missing.
func claudeBin(t *testing.T) string {
	t.Helper()
	if p, err := exec.LookPath("claude"); err == nil {
		return p
	}
	if d := os.Getenv("KEVOLVE_NODE_DIR"); d != "" {
		if p := filepath.Join(d, "node_modules", ".bin", "claude"); exists(p) {
			return p
		}
	}
	cache, err := os.UserCacheDir()
	if err != nil {
		cache = os.TempDir()
	}
	dir := filepath.Join(cache, "kevolve", "claude-code")
	bin := filepath.Join(dir, "node_modules", ".bin", "claude")
	if exists(bin) {
		return bin
	}
	npm, err := exec.LookPath("npm")
	if err != nil {
		toolchaintest.Require(t, fmt.Errorf("Claude Code is not installed and npm is missing: %w", err))
	}
	ctx, cancel := context.WithCancel(toolchaintest.Context(t))
	defer cancel()
	os.MkdirAll(dir, 0o755)
	out, err := exec.CommandContext(ctx, npm, "install", "--no-audit", "--no-fund", "--silent", "--prefix", dir,
		"@anthropic-ai/claude-code@"+claudeCodeVersion).CombinedOutput()
	if err != nil || !exists(bin) {
		toolchaintest.Require(t, fmt.Errorf("npm install @anthropic-ai/claude-code: %v: %s", err, out))
	}
	return bin
}

func exists(p string) bool { _, err := os.Stat(p); return err == nil }

// TestClaudePresetWithoutAPIKey runs the claude preset with the real
// Claude Code CLI and no credentials: the run pauses at once with an
// error that says what to do, the start kernel's evaluation and the failed
// proposal (with Claude Code's own message) are in the store, and the run
// resumes once an operator works.
func TestClaudePresetWithoutAPIKey(t *testing.T) {
	bin := claudeBin(t)
	py := toolchaintest.Python(t)
	t.Setenv("ANTHROPIC_API_KEY", "")
	os.Unsetenv("ANTHROPIC_API_KEY")
	t.Setenv("HOME", t.TempDir()) // no stored login
	ev, err := harness.NewEvaluator(harness.EvalConfig{Python: py, CacheDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	defer ev.Close()
	st := newStore(t)
	p, start := rmsnorm(t)
	op, err := New("claude", Config{Bin: bin, Deadline: 2 * time.Minute, WorkRoot: t.TempDir(), Server: []string{"/bin/false"}, MaxTurns: 3})
	if err != nil {
		t.Fatal(err)
	}
	e := &engine.Engine{Store: st, Eval: &harnesseval.Adapter{Ev: ev, Trials: 1}, Operator: op}
	t0 := time.Now()
	run, err := e.Run(context.Background(), engine.StartOptions{Problem: p, StartCode: start, Budget: search.Budget{Evals: 2}, Seed: 1})
	if !errors.Is(err, search.ErrOperatorUnavailable) || !strings.Contains(err.Error(), "ANTHROPIC_API_KEY") {
		t.Fatalf("run error: %v", err)
	}
	t.Logf("claude preset failed in %s: %.300s", time.Since(t0), err)
	got, _ := st.Run(context.Background(), run.ID)
	if got.Status != search.RunPaused || !strings.Contains(got.StopReason, "--resume") {
		t.Errorf("run %s: %s", got.Status, got.StopReason)
	}
	nodes, _ := st.Nodes(context.Background(), run.ID)
	if len(nodes) != 2 || !nodes[0].Evaluated() || nodes[1].State != search.NodeFailed {
		t.Fatalf("%d nodes", len(nodes))
	}
	var in Input
	json.Unmarshal(nodes[1].OperatorInput, &in)
	if !strings.Contains(in.Output, "Not logged in") && !strings.Contains(strings.ToLower(in.Output), "api key") {
		t.Errorf("Claude Code's message is not recorded: %.500s", in.Output)
	}
	// Nothing lost: once an operator works, the run resumes and finishes.
	e.Operator = newOp(t, "cmd:"+agent(t, "faster.sh"), time.Minute)
	if err := e.Resume(context.Background(), run.ID, nil); err != nil {
		t.Fatal(err)
	}
	got, _ = st.Run(context.Background(), run.ID)
	nodes, _ = st.Nodes(context.Background(), run.ID)
	if got.Status != search.RunDone || nodes[len(nodes)-1].Result == nil || nodes[len(nodes)-1].Result.Verdict != search.VerdictPass {
		t.Errorf("after resume: %s, %d nodes", got.Status, len(nodes))
	}
}
