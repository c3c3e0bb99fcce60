package toolchain

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/kevolve/kevolve-mcp/harness/sandbox"
)

// One way to run an external tool, read what it printed and trim it for a
// message: compile, profile and sol all go through here.

// Cmd is one external command.
type Cmd struct {
	Name  string
	Args  []string
	Dir   string
	Env   []string // added to the allowlisted part of this process's environment (sandbox.Env)
	Stdin string
	// WaitDelay bounds the wait for output pipes after the process group
	// was killed (default 2 s).
	WaitDelay time.Duration
}

// Output is what a command printed and how it ended.
type Output struct {
	Stdout, Stderr string
	ExitCode       int // -1 when it did not exit by itself
	Wall           time.Duration
	TimedOut       bool // the context ended it
}

// Run runs c in its own process group: when ctx ends, the whole group dies
// (nvcc's cicc and ptxas, ncu's Python, a script's children). The error is
// exec.Cmd.Run's (an *exec.ExitError for a non-zero exit), wrapped with the
// deadline when the context ended it.
func Run(ctx context.Context, c Cmd) (Output, error) {
	cmd := exec.CommandContext(ctx, c.Name, c.Args...)
	cmd.Dir = c.Dir
	// What runs here may run untrusted code (a candidate under a profiler,
	// a reference traced, a kernel compiled): its environment is
	// allowlisted, never the server's secrets.
	cmd.Env = sandbox.Env(c.Env...)
	if c.Stdin != "" {
		cmd.Stdin = strings.NewReader(c.Stdin)
	}
	var so, se bytes.Buffer
	cmd.Stdout, cmd.Stderr = &so, &se
	KillGroupOnCancel(cmd)
	cmd.WaitDelay = c.WaitDelay
	if cmd.WaitDelay == 0 {
		cmd.WaitDelay = 2 * time.Second
	}
	t0 := time.Now()
	err := cmd.Run()
	out := Output{Stdout: so.String(), Stderr: se.String(), ExitCode: cmd.ProcessState.ExitCode(), Wall: time.Since(t0)}
	if ctx.Err() != nil {
		out.TimedOut = true
		if err != nil {
			err = fmt.Errorf("%s stopped after %s: %w", filepath.Base(c.Name), out.Wall.Round(time.Millisecond), ctx.Err())
		}
	}
	return out, err
}

// LastJSONLine is the last line of output that is a JSON object: our
// scripts print their result last, but a tool wrapped around them (ncu,
// rocprofv3) may print its own lines after it. "" when there is none.
func LastJSONLine(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	for i := len(lines) - 1; i >= 0; i-- {
		if l := strings.TrimSpace(lines[i]); strings.HasPrefix(l, "{") {
			return l
		}
	}
	return ""
}

// ErrNoJSON says a script printed no JSON result.
var ErrNoJSON = errors.New("no JSON result line")

// ScriptError is a script's own {"error": "..."} result.
type ScriptError struct{ Msg string }

func (e *ScriptError) Error() string { return e.Msg }

// DecodeLastJSON decodes the last JSON line of a script's stdout into out;
// a {"error": "..."} line becomes an error with the script's message.
func DecodeLastJSON(stdout string, out any) error {
	line := LastJSONLine(stdout)
	if line == "" {
		return fmt.Errorf("%w (output ends %q)", ErrNoJSON, Tail(stdout, 200))
	}
	var probe struct {
		Error string `json:"error"`
	}
	if err := json.Unmarshal([]byte(line), &probe); err != nil {
		return fmt.Errorf("decode result %q: %w", Tail(line, 300), err)
	}
	if probe.Error != "" {
		return &ScriptError{Msg: probe.Error}
	}
	if out == nil {
		return nil
	}
	if err := json.Unmarshal([]byte(line), out); err != nil {
		return fmt.Errorf("decode result %q: %w", Tail(line, 300), err)
	}
	return nil
}

// Tail is the last n bytes of s, trimmed, with "…" where it was cut: for
// one-line messages that end where the error is.
func Tail(s string, n int) string {
	s = strings.TrimSpace(s)
	if len(s) > n {
		return "…" + s[len(s)-n:]
	}
	return s
}

// Trim keeps the first head and the last tail bytes of a long log and says
// how much it left out: for logs an agent reads (compiler output, a child's
// stderr), where the first error and the last lines both matter.
func Trim(s string, head, tail int) string {
	if len(s) <= head+tail {
		return s
	}
	return s[:head] + fmt.Sprintf("\n... [%d bytes trimmed] ...\n", len(s)-head-tail) + s[len(s)-tail:]
}
