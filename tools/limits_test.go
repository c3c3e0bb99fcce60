package tools

import (
	"strings"
	"testing"

	"github.com/kevolve/kevolve-mcp/tools/toolstest"
)

// Every tool refuses an oversized argument in the same words before its
// handler runs (a server with nothing behind it: a handler reached would
// answer "not available" instead), and the refusal stays small.
func TestArgumentLimitsOnEveryTool(t *testing.T) {
	c := toolstest.Connect(t, New(Deps{}))
	big := strings.Repeat("x", 5<<20)
	longName := strings.Repeat("n", 4<<20)
	cases := []struct {
		tool string
		args map[string]any
		want string
	}{
		{"run_kernel", map[string]any{"reference": "llm/softmax", "candidate_source": big}, "4 MiB limit"},
		{"run_kernel", map[string]any{"reference_source": big, "candidate": "c.py"}, "4 MiB limit"},
		{"evolve_start", map[string]any{"problem_source": big}, "4 MiB limit"},
		{"evolve_start", map[string]any{"problem": "llm/softmax", "start_source": big}, "4 MiB limit"},
		{"evolve", map[string]any{"problem_source": big}, "4 MiB limit"},
		{"evolve_submit", map[string]any{"run_id": "r1", "node_id": 1, "code": big}, "4 MiB limit"},
		{"compile_kernel", map[string]any{"language": "c", "source": big}, "4 MiB limit"},
		{"profile_kernel", map[string]any{"reference": big}, "limit of 4096 bytes"},
		{"sol_analysis", map[string]any{"reference": big}, "limit of 4096 bytes"},
		{"evolve_start", map[string]any{"problem": longName}, "limit of 4096 bytes"},
		{"evolve_status", map[string]any{"run_id": longName}, "limit of 256 bytes"},
		{"compile_kernel", map[string]any{"language": "c", "source": "int x;", "flags": []any{longName}}, "limit of 256 bytes"},
		{"search_knowledge", map[string]any{"query": big}, "limit of 65536 bytes"},
	}
	for _, tc := range cases {
		t.Run(tc.tool, func(t *testing.T) {
			res := toolstest.Call(t, c, tc.tool, tc.args)
			text := toolstest.Text(res)
			if !res.IsError || !strings.Contains(text, tc.want) || !strings.HasPrefix(text, tc.tool+": argument ") {
				t.Fatalf("want a tool error with %q, got error=%v %.300q", tc.want, res.IsError, text)
			}
			if len(text) > 1024 {
				t.Fatalf("refusal of %d bytes: it must not echo the argument", len(text))
			}
		})
	}
	// Within the limits the handler answers (here: nothing behind it).
	res := toolstest.Call(t, c, "run_kernel", map[string]any{"reference": "llm/softmax", "candidate_source": "class ModelNew: pass"})
	if text := toolstest.Text(res); strings.Contains(text, "argument ") {
		t.Fatalf("a small source was refused: %s", text)
	}
}
