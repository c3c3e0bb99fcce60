package operator

import (
	"context"
	"testing"
)

// A resume may swap an operator for another of its kind (new endpoint or
// model), never for another kind.
func TestKind(t *testing.T) {
	cases := map[string]string{
		"": "tuner", "tuner": "tuner", "claude": "claude", "codex": "codex", "mcp": "mcp",
		"cmd:./agent.sh": "cmd", "openai:qwen3-coder@http://vllm:8000/v1": "openai", "openai:gpt-5,o3": "openai",
	}
	for name, want := range cases {
		if got := Kind(name); got != want {
			t.Errorf("Kind(%q) = %q, want %q", name, got, want)
		}
	}
	if Kind("openai:a@http://dead:1/v1") != Kind("openai:b@http://alive:2/v1") {
		t.Error("two openai endpoints are not one kind")
	}
}

// Operators other than the agent presets have nothing to check.
func TestPreflightOthersPass(t *testing.T) {
	for _, name := range []string{"", "tuner", "cmd:false", "openai:m@http://127.0.0.1:1/v1"} {
		if err := Preflight(context.Background(), name); err != nil {
			t.Errorf("%s: %v", name, err)
		}
	}
}
