package launch

import (
	"context"

	"github.com/kevolve/kevolve-mcp/search/operator"
	"github.com/kevolve/kevolve-mcp/search/policy"
)

// The names a front end offers for a request, each from its one list:
// the operators' (search/operator) and the policies' (search/policy).

// OperatorUsage is the operators as a flag's help spells them.
func OperatorUsage() string { return operator.Spelled() }

// OperatorPrefixes are the operators' names and prefixes, for completion.
func OperatorPrefixes() []string { return operator.Prefixes() }

// Policies are the selection policies' names.
func Policies() []string { return policy.Names }

// CheckOperator says whether name is an operator a run can use.
func CheckOperator(name string) error {
	_, err := operator.ByName(name)
	return err
}

// Preflight checks an agent operator (claude, codex) before anything is
// discovered or evaluated: installed, logged in, its API reachable, so a
// missing one is reported within seconds. Other operators pass.
func Preflight(ctx context.Context, name string) error { return operator.Preflight(ctx, name) }

// NeedsPreflight says whether Preflight has anything to check for name.
func NeedsPreflight(name string) bool { return name == "claude" || name == "codex" }
