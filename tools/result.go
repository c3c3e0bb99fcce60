// Package tools holds one file per MCP tool: its schema, annotations and a
// handler that calls into harness, retrieval, corpus or search. Handlers never
// run subprocesses or SQL themselves, and never return a Go error for a
// failure the agent can act on: they return a tool error with a message that
// says what to change.
package tools

import (
	"encoding/json"
	"fmt"

	"github.com/mark3labs/mcp-go/mcp"
)

// structured returns v as the tool's structured content, with the same JSON
// as text for clients that only read text content. The text is compact:
// indentation was a fifth of an answer, and an agent reads JSON without it.
func structured(v any) *mcp.CallToolResult {
	b, err := json.Marshal(v)
	if err != nil {
		return toolErrorf("internal: could not encode the result: %v", err)
	}
	return mcp.NewToolResultStructured(v, string(b))
}

// toolErrorf is the one way handlers report failures: as a tool result with
// isError set, so the agent sees the message and can retry with a fix.
func toolErrorf(format string, args ...any) *mcp.CallToolResult {
	return mcp.NewToolResultError(fmt.Sprintf(format, args...))
}
