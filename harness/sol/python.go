package sol

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/kevolve/kevolve-mcp/harness/toolchain"
)

// runScript writes an embedded script to a temp dir, runs it with python and
// decodes the last stdout line as JSON into out. The child runs in its own
// process group so a timeout kills it and anything it spawned.
func runScript(ctx context.Context, python, name, script string, env []string, out any, args ...string) error {
	return runScriptWith(ctx, python, name, script, nil, env, out, args...)
}

// runScriptWith is runScript with modules the script imports (name -> source)
// written beside it.
func runScriptWith(ctx context.Context, python, name, script string, modules map[string][]byte, env []string, out any, args ...string) error {
	dir, err := os.MkdirTemp("", "kevolve-sol-")
	if err != nil {
		return fmt.Errorf("temp dir: %w", err)
	}
	defer os.RemoveAll(dir)
	for m, src := range modules {
		if err := os.WriteFile(filepath.Join(dir, m), src, 0o644); err != nil {
			return fmt.Errorf("write %s: %w", m, err)
		}
	}
	path := filepath.Join(dir, name)
	if err := os.WriteFile(path, []byte(script), 0o644); err != nil {
		return fmt.Errorf("write %s: %w", name, err)
	}
	cmd := exec.CommandContext(ctx, python, append([]string{path}, args...)...)
	cmd.Env = append(os.Environ(), env...)
	toolchain.KillGroupOnCancel(cmd)
	cmd.WaitDelay = 2 * time.Second
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	runErr := cmd.Run()
	line := toolchain.LastLine(stdout.String())
	if line != "" {
		var probe struct {
			Error string `json:"error"`
		}
		if json.Unmarshal([]byte(line), &probe) == nil && probe.Error != "" {
			return fmt.Errorf("%s: %s", name, probe.Error)
		}
	}
	if runErr != nil {
		if errors.Is(ctx.Err(), context.DeadlineExceeded) {
			return fmt.Errorf("%s timed out: %w", name, ctx.Err())
		}
		return fmt.Errorf("%s failed: %w: %s", name, runErr, tail(stderr.String(), 2000))
	}
	if err := json.Unmarshal([]byte(line), out); err != nil {
		return fmt.Errorf("%s: decode result %q: %w (stderr: %s)", name, tail(line, 300), err, tail(stderr.String(), 1000))
	}
	return nil
}

func tail(s string, n int) string {
	s = strings.TrimSpace(s)
	if len(s) > n {
		return "…" + s[len(s)-n:]
	}
	return s
}
