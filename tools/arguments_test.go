package tools

import (
	"strings"
	"testing"

	"github.com/kevolve/kevolve-mcp/tools/toolstest"
)

// Arguments that break a tool's schema are refused in words: the argument
// that is wrong and what is allowed. mcp-go's own message printed Go structs
// (`<root>: &{Properties:[candidate]}`); none of that may reach an agent.
func TestSchemaRejectionsAreReadable(t *testing.T) {
	c := toolstest.Connect(t, New(Deps{}))
	tests := []struct {
		tool string
		args map[string]any
		want []string
	}{
		{"sol_analysis", map[string]any{"reference": "llm/rmsnorm", "candidate_time": 0.001},
			[]string{`sol_analysis: invalid arguments: unknown argument "candidate_time"`, `did you mean "candidate"`, "Allowed arguments: bytes, candidate, candidate_s,"}},
		{"sol_analysis", map[string]any{"reference": "llm/rmsnorm", "candidate_s": "fast"},
			[]string{`argument "candidate_s" must be a number, not a string`}},
		{"run_kernel", map[string]any{"reference": "llm/rmsnorm", "candidate": "k.py", "trials": 2.5},
			[]string{`argument "trials" must be a whole number (an integer)`}},
		{"run_kernel", map[string]any{"reference": "llm/rmsnorm", "canddiate": "k.py"},
			[]string{`unknown argument "canddiate" (did you mean "candidate"?`, "Allowed arguments:"}},
		{"compile_kernel", map[string]any{"source": "int x;", "language": "fortran"},
			[]string{`argument "language" is "fortran"; allowed values: cuda, c, triton`}},
		{"compile_kernel", map[string]any{"source": "int x;"},
			[]string{`missing required argument "language"`, "Source language"}},
		{"compile_kernel", map[string]any{"source": "int x;", "language": "c", "flags": []any{"-O2", 3}},
			[]string{`argument "flags[1]" must be a string, not a number`}},
		{"search_knowledge", map[string]any{"query": "tiles", "k": "five", "devcie": "h100"},
			[]string{`argument "k" must be an integer, not a string`, `unknown argument "devcie" (did you mean "device"?`}},
	}
	for _, tt := range tests {
		t.Run(tt.tool, func(t *testing.T) {
			res := toolstest.Call(t, c, tt.tool, tt.args)
			text := toolstest.Text(res)
			if !res.IsError {
				t.Fatalf("accepted: %s", text)
			}
			for _, w := range tt.want {
				if !strings.Contains(text, w) {
					t.Errorf("message lacks %q:\n%s", w, text)
				}
			}
			for _, bad := range []string{"&{", "<root>", "input schema validation failed"} {
				if strings.Contains(text, bad) {
					t.Errorf("message still has %q:\n%s", bad, text)
				}
			}
		})
	}
}

// Every tool's schema compiles for the explainer, and conforming arguments
// are not explained away.
func TestArgExplainerCoversEveryTool(t *testing.T) {
	all := All(Deps{})
	ex := newArgExplainer(all)
	for _, tool := range all {
		if _, err := ex.schema(tool.Tool.Name); err != nil {
			t.Errorf("%s: %v", tool.Tool.Name, err)
		}
	}
	if msg := ex.explain("sol_analysis", map[string]any{"reference": "llm/rmsnorm"}); msg != "" {
		t.Errorf("valid arguments explained: %s", msg)
	}
	if msg := ex.explain("no_such_tool", map[string]any{"x": 1}); msg != "" {
		t.Errorf("unknown tool explained: %s", msg)
	}
}
