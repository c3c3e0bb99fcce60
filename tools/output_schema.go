package tools

// Output schemas cut to what an agent reads. The schema generated from a
// result type spells every nested object in full (a timing record three
// times in run_kernel's), with additionalProperties and required lists an
// agent never needs: half of tools/list was output schemas. Here each
// top-level field keeps its JSON type, and a field holding an object (or a
// list or map of them) names that object's fields in its description, as
// {a, b{c, d}}, deeper objects as b{…} (one level kept run_kernel's judge
// and sol records readable at a third of their size). The schema stays
// true of every answer: only constraints are dropped, never a type that an
// answer could contradict.

import (
	"encoding/json"
	"fmt"
	"sort"
	"strings"

	"github.com/mark3labs/mcp-go/mcp"
)

// outputSchema is mcp.WithOutputSchema[T] compacted as above, naming one
// level of nested fields.
func outputSchema[T any]() mcp.ToolOption { return outputSchemaDepth[T](1) }

// outputSchemaDepth names depth levels of nested fields: for an answer whose
// fields that matter sit deeper (evolve_next's task.parent.code_uri). The
// schema is set raw: mcp-go writes a structured one with "required": []
// even when empty.
func outputSchemaDepth[T any](depth int) mcp.ToolOption {
	return func(t *mcp.Tool) {
		var full mcp.Tool
		mcp.WithOutputSchema[T]()(&full)
		raw, err := json.Marshal(map[string]any{"type": "object", "properties": compactProperties(full.OutputSchema.Properties, depth)})
		if err != nil {
			panic(fmt.Sprintf("tool %s: output schema: %v", t.Name, err)) // a schema of plain maps always encodes
		}
		t.RawOutputSchema = raw
	}
}

// compactProperties keeps each property's type and names the fields of a
// structured one; a list of scalars keeps its items' type (a list of
// objects shows them by its fields).
func compactProperties(props map[string]any, depth int) map[string]any {
	out := make(map[string]any, len(props))
	for name, p := range props {
		s, _ := p.(map[string]any)
		c := map[string]any{}
		if t, ok := s["type"]; ok {
			c["type"] = t
		}
		fields := fieldsOf(s, depth)
		if items, ok := s["items"].(map[string]any); ok && fields == "" {
			if t, ok := items["type"]; ok {
				c["items"] = map[string]any{"type": t}
			}
		}
		if d, ok := s["description"].(string); ok && d != "" {
			c["description"] = d
		} else if fields != "" {
			c["description"] = fields
		}
		out[name] = c
	}
	return out
}

// fieldsOf names the fields of the object a schema holds (directly, as a
// list's items or as a map's values), nested ones in braces; "" for a
// scalar or a free-form object.
func fieldsOf(s map[string]any, depth int) string {
	if depth <= 0 {
		return ""
	}
	if items, ok := s["items"].(map[string]any); ok {
		return fieldsOf(items, depth)
	}
	if vals, ok := s["additionalProperties"].(map[string]any); ok {
		return fieldsOf(vals, depth)
	}
	props, _ := s["properties"].(map[string]any)
	if len(props) == 0 {
		return ""
	}
	names := make([]string, 0, len(props))
	for n := range props {
		names = append(names, n)
	}
	sort.Strings(names)
	var b strings.Builder
	b.WriteByte('{')
	for i, n := range names {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(n)
		if sub, ok := props[n].(map[string]any); ok {
			if f := fieldsOf(sub, depth-1); f != "" {
				b.WriteString(f)
			} else if depth <= 1 && fieldsOf(sub, 1) != "" {
				b.WriteString("{…}") // an object whose fields are not named here
			}
		}
	}
	b.WriteByte('}')
	return b.String()
}
