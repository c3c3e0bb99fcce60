package tools

import (
	"context"
	"encoding/json"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
)

// The problem is "reference" to run_kernel, profile_kernel and sol_analysis
// (the KernelBench word) and "problem" to evolve_start and evolve (the
// search's word). Agents carry one tool's name to the other (issue 36), so
// each tool takes both: a call that names the other tool's word, and not its
// own, is renamed before the input schema judges it. A call that gives both
// names is left alone: the schema refuses it, and the argument explainer
// says which name this tool uses (closest).
var argumentAliases = [][2]string{
	{"reference", "problem"},
	{"reference_source", "problem_source"},
}

// aliasOf is the name this tool uses for an argument it does not have, or "".
func aliasOf(name string, has func(string) bool) string {
	for _, pair := range argumentAliases {
		for i, n := range pair {
			if n == name && has(pair[1-i]) && !has(name) {
				return pair[1-i]
			}
		}
	}
	return ""
}

// aliasArguments returns the before-call hook that renames aliases, from
// each tool's input schema.
func aliasArguments(tools []server.ServerTool) server.OnBeforeCallToolFunc {
	props := map[string]map[string]bool{}
	for _, t := range tools {
		props[t.Tool.Name] = inputProperties(t.Tool)
	}
	return func(_ context.Context, _ any, req *mcp.CallToolRequest) {
		p := props[req.Params.Name]
		has := func(n string) bool { return p[n] }
		// The schema is checked on Arguments; handlers bind RawArguments,
		// the wire's bytes (kept for integers above 2^53): both are renamed,
		// the bytes without decoding their values.
		switch args := req.Params.Arguments.(type) {
		case map[string]any:
			rename(args, has)
		case json.RawMessage:
			req.Params.Arguments = renameRaw(args, has)
		}
		if len(req.Params.RawArguments) > 0 {
			req.Params.RawArguments = renameRaw(req.Params.RawArguments, has)
		}
	}
}

// renameRaw renames the aliases of a JSON object's keys, its values kept
// byte for byte; anything else comes back as it was.
func renameRaw(raw json.RawMessage, has func(string) bool) json.RawMessage {
	var m map[string]json.RawMessage
	if json.Unmarshal(raw, &m) != nil || !rename(m, has) {
		return raw
	}
	b, err := json.Marshal(m)
	if err != nil {
		return raw
	}
	return b
}

// rename moves aliased arguments to this tool's names; it reports whether
// it moved any.
func rename[V any](args map[string]V, has func(string) bool) bool {
	moved := false
	for name, v := range args {
		if own := aliasOf(name, has); own != "" {
			if _, both := args[own]; !both {
				args[own] = v
				delete(args, name)
				moved = true
			}
		}
	}
	return moved
}

// inputProperties are the argument names a tool's input schema declares.
func inputProperties(t mcp.Tool) map[string]bool {
	raw := t.RawInputSchema
	if len(raw) == 0 {
		raw, _ = json.Marshal(t.InputSchema)
	}
	var s struct {
		Properties map[string]json.RawMessage `json:"properties"`
	}
	_ = json.Unmarshal(raw, &s)
	out := make(map[string]bool, len(s.Properties))
	for n := range s.Properties {
		out[n] = true
	}
	return out
}
