package cmdop

import "testing"

// Usage is read from the last JSON line (toolchain.LastJSONLine): what an
// agent or its CLI printed before or after it is skipped.
func TestParseUsage(t *testing.T) {
	tests := []struct {
		name  string
		parse func([]byte) usage
		out   string
		want  usage
	}{
		{"generic", parseLastLineJSON, "working...\n{\"tokens\": 70, \"cost_usd\": 0.5, \"notes\": \"tiled\"}\n", usage{Out: 70, CostUSD: 0.5, Notes: "tiled"}},
		{"generic split", parseLastLineJSON, "{\"input_tokens\": 3, \"output_tokens\": 4}\nbye\n", usage{In: 3, Out: 4}},
		{"generic none", parseLastLineJSON, "no json here\n", usage{}},
		{"generic broken", parseLastLineJSON, "{\"tokens\": \n", usage{}},
		{"claude", parseClaude, "warning: slow\n{\"type\":\"result\",\"subtype\":\"success\",\"num_turns\":2,\"result\":\"a\\ntuned\",\"total_cost_usd\":0.01,\"usage\":{\"input_tokens\":10,\"output_tokens\":5,\"cache_read_input_tokens\":2}}\n",
			usage{In: 12, Out: 5, CostUSD: 0.01, Turns: 2, Notes: "tuned"}},
		{"claude error", parseClaude, "{\"type\":\"result\",\"subtype\":\"error_max_turns\",\"is_error\":true,\"result\":\"\"}", usage{Err: "error_max_turns"}},
		{"claude none", parseClaude, "Error: not logged in\n", usage{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.parse([]byte(tt.out)); got != tt.want {
				t.Errorf("got %+v, want %+v", got, tt.want)
			}
		})
	}
}
