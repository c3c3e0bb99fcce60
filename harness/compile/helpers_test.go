package compile

import (
	"context"
	"testing"

	"github.com/kevolve/kevolve-mcp/harness/toolchain/toolchaintest"
)

func needTool(t *testing.T, names ...string) {
	t.Helper()
	for _, n := range names {
		_, err := FindTool(n)
		toolchaintest.Require(t, err)
	}
}

func needPython(t *testing.T) string {
	t.Helper()
	py, err := FindPython()
	toolchaintest.Require(t, err)
	return py
}

func mustCompile(t *testing.T, req Request) *Result {
	t.Helper()
	ctx, cancel := context.WithCancel(toolchaintest.Context(t))
	defer cancel()
	res, err := Compile(ctx, req)
	if err != nil {
		t.Fatalf("Compile(%s): %v", req.Lang, err)
	}
	return res
}
