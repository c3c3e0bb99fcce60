package tools

// A struct tag is a constant, but some argument descriptions list names
// that the code keeps in one list elsewhere (the operators). Such a tag
// holds a placeholder that fillSchema replaces in the generated schema, so
// the list is written once.

import (
	"bytes"
	"encoding/json"

	"github.com/mark3labs/mcp-go/mcp"
)

// operatorsPlaceholder stands for operator.Spelled() in a description.
const operatorsPlaceholder = "{OPERATORS}"

// fillSchema replaces placeholder with text in the tool's input schema
// (after mcp.WithInputSchema). The text is JSON-escaped as it goes inside a
// string.
func fillSchema(placeholder, text string) mcp.ToolOption {
	return func(t *mcp.Tool) {
		q, err := json.Marshal(text)
		if err != nil || len(t.RawInputSchema) == 0 {
			return
		}
		t.RawInputSchema = bytes.ReplaceAll(t.RawInputSchema, []byte(placeholder), q[1:len(q)-1])
	}
}
