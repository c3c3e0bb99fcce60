package tools

import (
	"context"
	"strings"
	"testing"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/kevolve/kevolve-mcp/tools/toolstest"
)

func TestProblemResources(t *testing.T) {
	c := toolstest.Connect(t, New(Deps{}))
	ctx := context.Background()
	list, err := c.ListResources(ctx, mcp.ListResourcesRequest{})
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, r := range list.Resources {
		if strings.HasPrefix(r.URI, problemScheme) {
			n++
		}
	}
	if n < 2*24 {
		t.Fatalf("%d problem resources listed, want reference and meta for every problem", n)
	}
	read := func(uri string) (string, error) {
		req := mcp.ReadResourceRequest{}
		req.Params.URI = uri
		res, err := c.ReadResource(ctx, req)
		if err != nil {
			return "", err
		}
		return res.Contents[0].(mcp.TextResourceContents).Text, nil
	}
	tests := []struct {
		uri, want string
	}{
		{"problem://llm/rmsnorm/reference.py", "class Model"},
		{"problem://llm/rmsnorm/meta.json", `"flops"`},
		{"problem://llm/rmsnorm/start_cuda.py", "load_cuda"}, // through the template
	}
	for _, tc := range tests {
		got, err := read(tc.uri)
		if err != nil || !strings.Contains(got, tc.want) {
			t.Errorf("%s: %v, %.80q", tc.uri, err, got)
		}
	}
	for _, bad := range []string{"problem://llm/nope/reference.py", "problem://llm/rmsnorm/start_fortran.py", "problem://x"} {
		if _, err := read(bad); err == nil {
			t.Errorf("%s: read succeeded", bad)
		}
	}
}
