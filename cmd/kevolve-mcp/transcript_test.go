package main

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
)

// transcript renders recorded wire messages as the golden text: each client
// message as "> METHOD [tool] argument names", each answer as "< result" or
// "< error" with its shape (shape_test.go). Server notifications (log
// messages) are left out: when they come depends on timing.
func transcript(t *testing.T, msgs []wireMessage) string {
	var b strings.Builder
	for _, m := range msgs {
		var env struct {
			ID     any             `json:"id"`
			Method string          `json:"method"`
			Params json.RawMessage `json:"params"`
			Result json.RawMessage `json:"result"`
			Error  json.RawMessage `json:"error"`
		}
		if err := json.Unmarshal(m.raw, &env); err != nil {
			t.Fatalf("not JSON-RPC on the wire: %.200s: %v", m.raw, err)
		}
		switch {
		case m.fromClient:
			b.WriteString(clientLine(env.Method, env.Params))
		case env.Method != "":
			continue
		case env.Error != nil:
			b.WriteString("< error " + render(shapeOf(env.Error)) + "\n")
		default:
			b.WriteString("< result " + render(resultShape(env.Result)) + "\n")
		}
	}
	return b.String()
}

// clientLine names what the client sent; for a tool call, the tool and its
// argument names (their values are the archive's client file).
func clientLine(method string, params json.RawMessage) string {
	if method != "tools/call" {
		return "> " + method + "\n"
	}
	var p struct {
		Name      string         `json:"name"`
		Arguments map[string]any `json:"arguments"`
	}
	_ = json.Unmarshal(params, &p)
	return fmt.Sprintf("> tools/call %s %s\n", p.Name, strings.Join(sortedKeys(p.Arguments), ","))
}

// resultShape is an answer's shape, with what the shape would lose kept: a
// tool list's names in order, and a tool result's text left out (it is its
// structured content again, checked by the limits instead) unless the
// result is an error, whose message shape is kept.
func resultShape(raw json.RawMessage) any {
	var r map[string]any
	if json.Unmarshal(raw, &r) != nil {
		return shapeOf(raw)
	}
	if tools, ok := r["tools"].([]any); ok {
		var names []string
		for _, tl := range tools {
			if m, ok := tl.(map[string]any); ok {
				names = append(names, fmt.Sprint(m["name"]))
			}
		}
		return map[string]any{"tools": names}
	}
	return shape("", r)
}

func shapeOf(raw json.RawMessage) any {
	var v any
	_ = json.Unmarshal(raw, &v)
	return shape("", v)
}

// render is JSON indented by one space a level, so a diff points at the
// field that changed; <placeholders> are written as they read.
func render(v any) string {
	var b strings.Builder
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", " ")
	if err := enc.Encode(v); err != nil {
		return fmt.Sprint(v)
	}
	return strings.TrimSuffix(b.String(), "\n")
}
