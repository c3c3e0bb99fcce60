package operator

import (
	"context"
	"strings"

	"github.com/kevolve/kevolve-mcp/search/operator/cmdop"
)

// Preflight checks, within seconds, that the operator a --operator value
// names can work: for the claude and codex presets, that the CLI is
// installed, logged in and reaches its API (cmdop.Op.Preflight). Callers
// run it before anything is evaluated. Other operators pass.
func Preflight(ctx context.Context, name string) error {
	if name != "claude" && name != "codex" {
		return nil
	}
	op, err := cmdop.New(name, cmdop.Config{Server: []string{"kevolve-mcp"}})
	if err != nil {
		return err
	}
	return op.Preflight(ctx)
}

// Kind is an operator name without its endpoint and model: tuner, mcp,
// claude, codex, cmd or openai. A run resumes with any operator of its
// kind, so a dead endpoint or a retired model can be replaced.
func Kind(name string) string {
	if name == "" {
		return "tuner"
	}
	if k, _, ok := strings.Cut(name, ":"); ok {
		return k
	}
	return name
}
