// Package operator names the operators a run can use. The tuner is built
// in; the LLM and agent operators (cmd:, openai:, mcp) register here as
// they land.
package operator

import (
	"fmt"
	"strings"

	"github.com/kevolve/kevolve-mcp/search"
	"github.com/kevolve/kevolve-mcp/search/operator/tuner"
)

// ByName returns the operator a --operator value names.
func ByName(name string) (search.Operator, error) {
	switch {
	case name == "" || name == tuner.Name:
		return tuner.New(), nil
	case name == "mcp" || name == "claude" || name == "codex" || strings.HasPrefix(name, "cmd:") || strings.HasPrefix(name, "openai:"):
		return nil, fmt.Errorf("operator %q is not available in this build yet: use --operator tuner", name)
	}
	return nil, fmt.Errorf("unknown operator %q: use tuner", name)
}
