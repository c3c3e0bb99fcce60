// Package cmdop is the `cmd:` operator: any headless agent CLI proposes a
// kernel. The contract (README "Operators"):
//
//   - the command runs in a fresh working directory for the proposal,
//     holding kernel.py (the parent's code, or the start kernel for a
//     draft), reference.py (the problem), PROMPT.md (the synthesized
//     context) and mcp.json;
//   - the same context arrives on its stdin;
//   - its environment carries KEVOLVE_RUN, KEVOLVE_PARENT, KEVOLVE_NODE
//     (the id the node will get when nothing else is in flight),
//     KEVOLVE_WORKDIR and KEVOLVE_MCP_CONFIG (an MCP config file that
//     starts this server over stdio, so the agent can call run_kernel
//     before it finishes);
//   - it must leave its candidate in kernel.py and exit 0. A non-zero
//     exit, an unchanged kernel.py or the deadline is a failed proposal,
//     reported with the command's trimmed output; the working directory is
//     kept for inspection;
//   - it may print, as its last JSON line of stdout, a JSON object with
//     "tokens", "cost_usd" and "notes"; the claude and codex presets parse
//     their CLIs' own JSON output instead.
//
// The command and everything it starts run in a process group of their
// own, killed at the deadline (toolchain.KillGroupOnCancel).
package cmdop

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/kevolve/kevolve-mcp/harness/toolchain"
	"github.com/kevolve/kevolve-mcp/search"
	"github.com/kevolve/kevolve-mcp/search/brief"
)

// DefaultDeadline bounds one proposal: an agent that edits, compiles and
// runs a kernel a few times needs minutes, not hours.
const DefaultDeadline = 15 * time.Minute

// Config sets up the operator.
type Config struct {
	// Deadline per proposal (0 = DefaultDeadline).
	Deadline time.Duration
	// WorkRoot holds the per-proposal directories (default: a kevolve-ops
	// folder in the OS temp dir).
	WorkRoot string
	// Server is the command line of this MCP server over stdio, written to
	// the agent's MCP config (default: this executable with --stdio).
	Server []string
	// Context tunes the synthesis (budget, device, retriever).
	Context brief.Options
	// KeepDirs keeps the working directories of successful proposals too.
	KeepDirs bool
	// MaxTurns is the claude preset's turn limit (0 = 30).
	MaxTurns int
	// Bin overrides the preset's executable (claude, codex).
	Bin string
	// Watch are the folders a preset's proposal must not write in (default:
	// this process's working directory and the reference's folder); a
	// proposal that did is refused.
	Watch []string
	// Progress receives a line while an agent works, every ProgressEvery
	// (default 30 s); nil logs through slog.
	Progress      func(line string)
	ProgressEvery time.Duration
}

// Op is a cmd: operator.
type Op struct {
	name   string
	shell  string // cmd:COMMAND, run with sh -c
	preset string // "claude", "codex" or ""
	cfg    Config
	parse  func(stdout []byte) usage
}

// New parses an operator name: "cmd:COMMAND", "claude" or "codex".
func New(spec string, cfg Config) (*Op, error) {
	if cfg.Deadline <= 0 {
		cfg.Deadline = DefaultDeadline
	}
	if cfg.WorkRoot == "" {
		cfg.WorkRoot = filepath.Join(os.TempDir(), "kevolve-ops")
	}
	if cfg.MaxTurns <= 0 {
		cfg.MaxTurns = 30
	}
	if len(cfg.Server) == 0 {
		exe, err := os.Executable()
		if err != nil {
			return nil, fmt.Errorf("operator %s: cannot name this server for the agent's MCP config: %w", spec, err)
		}
		cfg.Server = []string{exe, "--stdio"}
	}
	o := &Op{name: spec, cfg: cfg, parse: parseLastLineJSON}
	switch {
	case strings.HasPrefix(spec, "cmd:"):
		o.shell = strings.TrimSpace(strings.TrimPrefix(spec, "cmd:"))
		if o.shell == "" {
			return nil, errors.New("operator cmd: needs a command, e.g. cmd:./my-agent.sh")
		}
	case spec == "claude":
		o.preset, o.parse = "claude", parseClaude
	case spec == "codex":
		o.preset, o.parse = "codex", parseCodex
	default:
		return nil, fmt.Errorf("operator %q: use cmd:COMMAND, claude or codex", spec)
	}
	return o, nil
}

func (o *Op) Name() string { return o.name }

func (o *Op) Deadline() time.Duration { return o.cfg.Deadline }

// Input is what a node records about its proposal (its OperatorInput).
type Input struct {
	ContextVersion string           `json:"context_version"`
	ContextHash    string           `json:"context_hash"`
	ContextTokens  int              `json:"context_tokens"`
	Synthesis      *brief.Synthesis `json:"synthesis,omitempty"`
	Command        string           `json:"command"`
	WorkDir        string           `json:"workdir,omitempty"`
	DurationS      float64          `json:"duration_s"`
	InputTokens    int              `json:"input_tokens,omitempty"`
	OutputTokens   int              `json:"output_tokens,omitempty"`
	CostUSD        float64          `json:"cost_usd,omitempty"`
	Turns          int              `json:"turns,omitempty"`
	// Output is the command's trimmed output (failed proposals only).
	Output string `json:"output,omitempty"`
	// Context is the whole prompt, so a proposal can be replayed.
	Context string `json:"context"`
}

// Contract is the output contract the context ends with.
const Contract = "Edit `kernel.py` in the working directory and leave the complete new candidate there (a Python module defining `ModelNew`). `reference.py` is the problem; `PROMPT.md` is this text. Check your kernel with the kevolve MCP tools (compile_kernel, run_kernel with reference=reference.py and candidate=kernel.py) before you finish if they are available. End with a one-line summary of what you changed."

// Propose runs the command once for c.Parents[0].
func (o *Op) Propose(ctx context.Context, c search.Context) (search.Proposal, error) {
	parent := c.Parents[0]
	opts := o.cfg.Context
	opts.OutputContract = Contract
	syn, err := brief.Synthesize(ctx, c, opts)
	if err != nil {
		return search.Proposal{}, err
	}
	dir, err := o.workDir(c, parent)
	if err != nil {
		return search.Proposal{}, err
	}
	if err := o.prepare(dir, c, parent, syn.Text); err != nil {
		return search.Proposal{}, err
	}
	argv, err := o.argv(dir)
	if err != nil {
		return search.Proposal{}, err
	}
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	toolchain.KillGroupOnCancel(cmd)
	cmd.WaitDelay = 5 * time.Second
	cmd.Dir = dir
	cmd.Stdin = strings.NewReader(syn.Text)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	cmd.Env = append(os.Environ(),
		"KEVOLVE_RUN="+c.Run.ID,
		"KEVOLVE_PARENT="+strconv.FormatInt(parent.ID, 10),
		"KEVOLVE_NODE="+strconv.FormatInt(nextID(c.Graph), 10),
		"KEVOLVE_WORKDIR="+dir,
		"KEVOLVE_MCP_CONFIG="+filepath.Join(dir, "mcp.json"),
	)
	t0 := time.Now()
	stopProgress := o.progress(c.Run.ID, parent.ID, dir, t0)
	runErr := cmd.Run()
	stopProgress()
	in := Input{ContextVersion: syn.Version, ContextHash: syn.Hash, ContextTokens: syn.Tokens, Synthesis: syn,
		Command: strings.Join(argv, " "), WorkDir: dir, DurationS: time.Since(t0).Seconds(), Context: syn.Text}
	u := o.parse(stdout.Bytes())
	in.InputTokens, in.OutputTokens, in.CostUSD, in.Turns = u.In, u.Out, u.CostUSD, u.Turns
	out := trimOutput(stdout.String(), stderr.String())
	// A failure is recorded with its inputs, cost and output (the run loop
	// writes it as a failed node); the working dir stays for inspection.
	fail := func(format string, a ...any) error {
		in.Output = out
		raw, _ := json.Marshal(in)
		err := fmt.Errorf(format, a...)
		if o.hint(u, out, c.Run.ID) != "" {
			err = fmt.Errorf("%w: %w", search.ErrOperatorUnavailable, err)
		}
		return &search.ProposalError{Err: err, Inputs: raw, Tokens: u.In + u.Out}
	}
	switch {
	case ctx.Err() != nil:
		return search.Proposal{}, fail("%s: stopped at the deadline after %.0f s (process group killed; working dir %s kept); output:\n%s", o.name, in.DurationS, dir, out)
	case runErr != nil && u.Err != "":
		return search.Proposal{}, fail("%s: %v: %s%s (working dir %s kept); output:\n%s", o.name, runErr, u.Err, o.hint(u, out, c.Run.ID), dir, out)
	case runErr != nil:
		return search.Proposal{}, fail("%s: %v%s (working dir %s kept); output:\n%s", o.name, runErr, o.hint(u, out, c.Run.ID), dir, out)
	case u.Err != "":
		return search.Proposal{}, fail("%s: the agent reported an error: %s%s (working dir %s kept)", o.name, u.Err, o.hint(u, out, c.Run.ID), dir)
	}
	if o.preset != "" {
		// Confined by its flags; checked on the file system all the same.
		if outside := o.writesOutside(o.watchRoots(c.Problem.ReferencePath), dir, t0); len(outside) > 0 {
			return search.Proposal{}, fail("%s: refused: the agent wrote outside its folder %s: %s", o.name, dir, strings.Join(outside, ", "))
		}
	}
	code, err := os.ReadFile(filepath.Join(dir, "kernel.py"))
	if err != nil {
		return search.Proposal{}, fail("%s: no kernel.py left in %s: %v; output:\n%s", o.name, dir, err, out)
	}
	if search.NormalizedHash(string(code)) == search.NormalizedHash(parent.Code) {
		return search.Proposal{}, fail("%s: exited 0 but left kernel.py unchanged (working dir %s kept); output:\n%s", o.name, dir, out)
	}
	inputs, _ := json.Marshal(in)
	if !o.cfg.KeepDirs {
		os.RemoveAll(dir)
	}
	notes := u.Notes
	if notes == "" {
		notes = o.name
	}
	return search.Proposal{Code: string(code), Inputs: inputs, Notes: oneLine(notes, 300), Tokens: u.In + u.Out}, nil
}

// hint turns a known failure into what to do about it.
func (o *Op) hint(u usage, out, runID string) string {
	s := strings.ToLower(u.Err + " " + out)
	resume := "kevolve-mcp evolve --resume " + runID + " --operator " + o.name
	switch {
	case o.preset == "claude" && (strings.Contains(s, "api key") || strings.Contains(s, "/login") || strings.Contains(s, "not logged in") || strings.Contains(s, "authentication")):
		return " — Claude Code is not logged in: run `claude auth login` (or set ANTHROPIC_API_KEY), then continue with: " + resume
	case o.preset == "codex" && (strings.Contains(s, "api key") || strings.Contains(s, "login") || strings.Contains(s, "401")):
		return " — Codex is not logged in: run `codex login` (or set OPENAI_API_KEY), then continue with: " + resume
	}
	return ""
}

func nextID(g *search.Graph) int64 {
	if g == nil || len(g.Nodes) == 0 {
		return 1
	}
	return g.Nodes[len(g.Nodes)-1].ID + 1
}

func (o *Op) workDir(c search.Context, parent *search.Node) (string, error) {
	base := filepath.Join(o.cfg.WorkRoot, safe(c.Run.ID))
	if err := os.MkdirAll(base, 0o755); err != nil {
		return "", fmt.Errorf("%s: working dir: %w", o.name, err)
	}
	dir, err := os.MkdirTemp(base, fmt.Sprintf("from-%d-", parent.ID))
	if err != nil {
		return "", fmt.Errorf("%s: working dir: %w", o.name, err)
	}
	return dir, nil
}

func safe(s string) string {
	if s == "" {
		return "run"
	}
	return strings.Map(func(r rune) rune {
		if r == '/' || r == '\\' {
			return '_'
		}
		return r
	}, s)
}

func (o *Op) prepare(dir string, c search.Context, parent *search.Node, prompt string) error {
	ref := o.cfg.Context.Reference
	if ref == "" && c.Problem.ReferencePath != "" {
		b, err := os.ReadFile(c.Problem.ReferencePath)
		if err != nil {
			return fmt.Errorf("%s: reference: %w", o.name, err)
		}
		ref = string(b)
	}
	mcp := map[string]any{"mcpServers": map[string]any{"kevolve": map[string]any{
		"type": "stdio", "command": o.cfg.Server[0], "args": o.cfg.Server[1:]}}}
	mb, _ := json.MarshalIndent(mcp, "", "  ")
	for name, body := range map[string][]byte{
		"kernel.py": []byte(parent.Code), "reference.py": []byte(ref), "PROMPT.md": []byte(prompt), "mcp.json": mb,
	} {
		if err := os.WriteFile(filepath.Join(dir, name), body, 0o644); err != nil {
			return fmt.Errorf("%s: %w", o.name, err)
		}
	}
	return nil
}

// argv is the command line: sh -c for cmd:, the CLI for a preset.
func (o *Op) argv(dir string) ([]string, error) {
	mcp := filepath.Join(dir, "mcp.json")
	switch o.preset {
	case "":
		return []string{"/bin/sh", "-c", o.shell}, nil
	case "claude":
		bin, err := o.find("claude")
		if err != nil {
			return nil, err
		}
		// The prompt comes on stdin; edits stay inside the working dir
		// (the only tools allowed are file edits and ours).
		// Edit and Write are allowed only inside dir; no shell, no web.
		scope := claudeScope(dir)
		return []string{bin, "-p", "--output-format", "json", "--strict-mcp-config", "--mcp-config", mcp,
			"--allowedTools", "Read,Edit(" + scope + "),Write(" + scope + "),mcp__kevolve__*",
			"--disallowedTools", "Bash,WebFetch,WebSearch",
			"--max-turns", strconv.Itoa(o.cfg.MaxTurns)}, nil
	case "codex":
		bin, err := o.find("codex")
		if err != nil {
			return nil, err
		}
		server, _ := json.Marshal(o.cfg.Server[0])
		args, _ := json.Marshal(o.cfg.Server[1:])
		// exec mode never asks for approval (approval_policy=never) and may
		// write only inside the working dir; our MCP server is configured
		// inline, and "-" reads the prompt from stdin.
		// workspace-write also opens /tmp and $TMPDIR unless told not to.
		return []string{bin, "exec", "-C", dir, "--sandbox", "workspace-write", "--skip-git-repo-check", "--json",
			"-c", "approval_policy=\"never\"",
			"-c", "sandbox_workspace_write.exclude_slash_tmp=true",
			"-c", "sandbox_workspace_write.exclude_tmpdir_env_var=true",
			"-c", "mcp_servers.kevolve.command=" + string(server),
			"-c", "mcp_servers.kevolve.args=" + string(args),
			"-"}, nil
	}
	return nil, fmt.Errorf("unknown preset %s", o.preset)
}

// find locates a preset's CLI: Config.Bin, then PATH, then the npm
// packages `make mcp-clients` installs under KEVOLVE_NODE_DIR.
func (o *Op) find(name string) (string, error) {
	if o.cfg.Bin != "" {
		return o.cfg.Bin, nil
	}
	var dirs []string
	if d := os.Getenv("KEVOLVE_NODE_DIR"); d != "" {
		dirs = append(dirs, filepath.Join(d, "node_modules", ".bin"))
	}
	if p := toolchain.LookPathIn(name, dirs); p != "" {
		return p, nil
	}
	pkg := map[string]string{"claude": "@anthropic-ai/claude-code", "codex": "@openai/codex"}[name]
	return "", fmt.Errorf("%w: operator %s: the %s CLI is not installed: npm install -g %s (or put it on PATH, or set KEVOLVE_NODE_DIR)", search.ErrOperatorUnavailable, o.name, name, pkg)
}

// trimOutput keeps the head and tail of what the command printed.
func trimOutput(stdout, stderr string) string {
	s := strings.TrimSpace(stdout)
	if e := strings.TrimSpace(stderr); e != "" {
		s = strings.TrimSpace(s + "\n[stderr]\n" + e)
	}
	const head, tail = 1500, 2500
	if len(s) > head+tail {
		s = s[:head] + fmt.Sprintf("\n[… %d bytes cut …]\n", len(s)-head-tail) + s[len(s)-tail:]
	}
	return s
}

func oneLine(s string, max int) string {
	s = strings.Join(strings.Fields(s), " ")
	if len(s) > max {
		s = s[:max] + " …"
	}
	return s
}
