package tools

import (
	"encoding/json"
	"testing"

	"github.com/mark3labs/mcp-go/mcp"
)

type schemaLeaf struct {
	Deep int `json:"deep"`
}

type schemaItem struct {
	Name string      `json:"name"`
	Leaf *schemaLeaf `json:"leaf,omitempty"`
}

type schemaAnswer struct {
	Verdict string             `json:"verdict"`
	Items   []schemaItem       `json:"items"`
	Tags    []string           `json:"tags"`
	ByName  map[string]float64 `json:"by_name"`
	One     *schemaItem        `json:"one,omitempty"`
}

// The compact output schema keeps every top-level field's type, a scalar
// list's item type, and names a nested object's fields to the depth asked.
func TestCompactOutputSchema(t *testing.T) {
	for depth, want := range map[int]string{
		1: `{"properties":{"by_name":{"type":"object"},"items":{"description":"{leaf{…}, name}","type":["null","array"]},` +
			`"one":{"description":"{leaf{…}, name}","type":["null","object"]},"tags":{"items":{"type":"string"},"type":["null","array"]},` +
			`"verdict":{"type":"string"}},"type":"object"}`,
		2: `{"properties":{"by_name":{"type":"object"},"items":{"description":"{leaf{deep}, name}","type":["null","array"]},` +
			`"one":{"description":"{leaf{deep}, name}","type":["null","object"]},"tags":{"items":{"type":"string"},"type":["null","array"]},` +
			`"verdict":{"type":"string"}},"type":"object"}`,
	} {
		tool := mcp.NewTool("t", outputSchemaDepth[schemaAnswer](depth))
		var got, exp any
		if err := json.Unmarshal(tool.RawOutputSchema, &got); err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal([]byte(want), &exp); err != nil {
			t.Fatal(err)
		}
		g, _ := json.Marshal(got)
		e, _ := json.Marshal(exp)
		if string(g) != string(e) {
			t.Errorf("depth %d:\n got %s\nwant %s", depth, g, e)
		}
	}
}
