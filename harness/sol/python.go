package sol

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"

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
	o, runErr := toolchain.Run(ctx, toolchain.Cmd{Name: python, Args: append([]string{path}, args...), Env: env})
	decErr := toolchain.DecodeLastJSON(o.Stdout, out)
	var scriptErr *toolchain.ScriptError
	switch {
	case errors.As(decErr, &scriptErr):
		return fmt.Errorf("%s: %s", name, scriptErr.Msg)
	case runErr != nil && errors.Is(ctx.Err(), context.DeadlineExceeded):
		return fmt.Errorf("%s timed out: %w", name, ctx.Err())
	case runErr != nil:
		return fmt.Errorf("%s failed: %w: %s", name, runErr, toolchain.Tail(o.Stderr, 2000))
	case decErr != nil:
		return fmt.Errorf("%s: %w (stderr: %s)", name, decErr, toolchain.Tail(o.Stderr, 1000))
	}
	return nil
}
