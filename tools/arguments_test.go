package tools

import (
	"context"
	"strings"
	"testing"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

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

// The explainer only words mcp-go's rejections; it never decides. It
// compiles the same schema with the same validator mcp-go uses
// (santhosh-tekuri/jsonschema), so the two must agree: every call mcp-go
// rejects (an unknown argument, each argument of each tool given a value
// of the wrong type) gets an explanation, and a result mcp-go did not
// reject by schema is never rewritten.
func TestArgExplainerAgreesWithMCPGo(t *testing.T) {
	all := All(Deps{})
	ex := newArgExplainer(all)
	// No hooks: mcp-go's own verdict and message.
	s := server.NewMCPServer("t", "0", server.WithToolCapabilities(false), server.WithInputSchemaValidation())
	s.AddTools(all...)
	c := toolstest.Connect(t, s)
	for _, tool := range all {
		name := tool.Tool.Name
		ts, err := ex.schema(name)
		if err != nil {
			t.Fatal(err)
		}
		calls := []map[string]any{{"kevolve_no_such_argument": 1}}
		for arg, prop := range ts.props {
			calls = append(calls, map[string]any{arg: wrongType(prop)})
		}
		for _, args := range calls {
			res := toolstest.Call(t, c, name, args)
			if !res.IsError || !rejectedBySchema(res) {
				t.Errorf("%s %v: mcp-go did not reject it by schema: %s", name, args, toolstest.Text(res))
				continue
			}
			if msg := ex.explain(name, args); msg == "" {
				t.Errorf("%s %v: mcp-go rejected it (%s), the explainer found nothing", name, args, toolstest.Text(res))
			}
		}
	}

	hooks := argumentErrorHooks(all)
	req := &mcp.CallToolRequest{}
	req.Params.Name, req.Params.Arguments = "sol_analysis", map[string]any{"candidate_time": 1}
	for _, res := range []*mcp.CallToolResult{
		mcp.NewToolResultError("sol_analysis: reference: no such file"), // the tool's own error
		mcp.NewToolResultText("input schema validation failed: not an error result"),
	} {
		before := toolstest.Text(res)
		for _, h := range hooks.OnAfterCallTool {
			h(context.Background(), nil, req, res)
		}
		if got := toolstest.Text(res); got != before {
			t.Errorf("a result mcp-go did not reject was rewritten: %q -> %q", before, got)
		}
	}
}

// wrongType is a value no schema of prop's type (or types) accepts.
func wrongType(prop map[string]any) any {
	types := map[string]bool{}
	switch ty := prop["type"].(type) {
	case string:
		types[ty] = true
	case []any:
		for _, x := range ty {
			types[x.(string)] = true
		}
	}
	for _, c := range []struct {
		v    any
		kind []string
	}{{"text", []string{"string"}}, {12345, []string{"integer", "number"}}, {[]any{"x"}, []string{"array"}}} {
		if !types[c.kind[0]] && (len(c.kind) == 1 || !types[c.kind[1]]) {
			return c.v
		}
	}
	return true
}
