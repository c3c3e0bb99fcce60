// Package operator names the operators a run can use: the built-in tuner,
// cmd:COMMAND and its presets claude and codex (search/operator/cmdop), and
// openai:MODEL[@URL][,...] (search/operator/openai). The model and agent
// operators are wrapped with novelty rejection (search/operator/novelty).
// mcp, where the MCP client is the operator, is driven by the evolve_*
// tools rather than by a run loop.
package operator

import (
	"fmt"
	"strings"
	"time"

	"github.com/kevolve/kevolve-mcp/search"
	"github.com/kevolve/kevolve-mcp/search/brief"
	"github.com/kevolve/kevolve-mcp/search/operator/cmdop"
	"github.com/kevolve/kevolve-mcp/search/operator/novelty"
	"github.com/kevolve/kevolve-mcp/search/operator/openai"
	"github.com/kevolve/kevolve-mcp/search/operator/tuner"
)

// Env is what the model and agent operators need from their caller.
type Env struct {
	// Context tunes the context synthesis (token budget, device, knowledge).
	Context brief.Options
	// Server is this MCP server's stdio command line for an agent's MCP
	// config (default: this executable with --stdio).
	Server []string
	// WorkRoot holds cmd: working directories (default: the temp dir).
	WorkRoot string
	// Deadline per proposal (0 = the operator's default).
	Deadline time.Duration
	// Novelty is the rejection threshold (0 = novelty.DefaultThreshold,
	// >1 = off).
	Novelty float64
}

// ByName returns the operator a --operator value names, with defaults.
func ByName(name string) (search.Operator, error) { return ByNameWith(name, Env{}) }

// ByNameWith returns the operator a --operator value names.
func ByNameWith(name string, env Env) (search.Operator, error) {
	var op search.Operator
	var err error
	switch {
	case name == "" || name == tuner.Name:
		return tuner.New(), nil
	case name == "mcp":
		return nil, fmt.Errorf("operator mcp is driven by an MCP client (evolve_start, evolve_next, evolve_submit), not by a run loop: use --operator %s", Spelled())
	case name == "claude" || name == "codex" || strings.HasPrefix(name, "cmd:"):
		op, err = cmdop.New(name, cmdop.Config{Deadline: env.Deadline, WorkRoot: env.WorkRoot, Server: env.Server, Context: env.Context})
	case strings.HasPrefix(name, "openai:"):
		op, err = openai.New(name, openai.Config{Deadline: env.Deadline, Context: env.Context})
	default:
		return nil, fmt.Errorf("unknown operator %q: use %s", name, Spelled())
	}
	if err != nil {
		return nil, err
	}
	if env.Novelty > 1 {
		return op, nil
	}
	return &novelty.Op{Inner: op, Threshold: env.Novelty}, nil
}
