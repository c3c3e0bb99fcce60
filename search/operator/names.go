package operator

import (
	"strings"

	"github.com/kevolve/kevolve-mcp/search/operator/tuner"
)

// Names are the operators a run can name, as a user writes them: the one
// list that the CLI's flags and completion, the evolve tool's schema and
// ByNameWith's errors render. mcp (the MCP client proposes) is not among
// them: the evolve_start/evolve_next/evolve_submit tools drive it.
var Names = []string{tuner.Name, "cmd:COMMAND", "claude", "codex", "openai:MODEL[@URL][,...]"}

// Spelled is Names as a list in a sentence: "a, b or c".
func Spelled() string {
	return strings.Join(Names[:len(Names)-1], ", ") + " or " + Names[len(Names)-1]
}

// Prefixes are the names up to their argument ("cmd:", "openai:"), what a
// shell completes.
func Prefixes() []string {
	out := make([]string, len(Names))
	for i, n := range Names {
		if head, _, ok := strings.Cut(n, ":"); ok {
			n = head + ":"
		}
		out[i] = n
	}
	return out
}
