package tools

import (
	"strings"
	"testing"

	"github.com/kevolve/kevolve-mcp/tools/toolstest"
)

// "reference" and "problem" name the same argument: every tool takes
// either, and one that gets both says which is its own.
func TestProblemAndReferenceAcceptedEverywhere(t *testing.T) {
	c := toolstest.Connect(t, New(Deps{}))
	tests := []struct {
		name string
		tool string
		args map[string]any
		want string // in the answer; a schema refusal would name the argument instead
	}{
		{"run_kernel takes problem", "run_kernel", map[string]any{"problem": "llm/softmax", "candidate": "k.py"}, "run_kernel is not available"},
		{"run_kernel takes problem_source", "run_kernel", map[string]any{"problem_source": "x = 1", "candidate": "k.py"}, "run_kernel is not available"},
		{"sol_analysis takes problem", "sol_analysis", map[string]any{"problem": "llm/softmax"}, `reference: "llm/softmax": no such file`},
		{"profile_kernel takes problem", "profile_kernel", map[string]any{"problem": "llm/softmax", "candidate": "k.py"}, `reference: "llm/softmax": no such file`},
		{"evolve_start takes reference", "evolve_start", map[string]any{"reference": "llm/softmax"}, "evolve_start is not available"},
		{"evolve takes reference_source", "evolve", map[string]any{"reference_source": "x = 1"}, "evolve is not available"},
		{"both names: which is this tool's", "run_kernel", map[string]any{"reference": "llm/softmax", "problem": "llm/softmax"}, `unknown argument "problem" (did you mean "reference"?`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			text := toolstest.Text(toolstest.Call(t, c, tc.tool, tc.args))
			if !strings.Contains(text, tc.want) {
				t.Errorf("answer lacks %q:\n%s", tc.want, text)
			}
			if tc.want[0] != 'u' && strings.Contains(text, "unknown argument") {
				t.Errorf("the alias was refused:\n%s", text)
			}
		})
	}
}
