// Package operatortest gives tests an operator of every kind that runs
// here with no model behind it: the parity tests ask each kind for the
// same search over MCP and on the command line.
package operatortest

import (
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"testing"
)

// Kinds is one operator spec per kind: the tuner, a scripted cmd:
// operator, claude (its API is never called: nothing asks it) and openai:
// at a local OpenAI-compatible endpoint, closed when the test ends.
func Kinds(t testing.TB) []string {
	t.Helper()
	script := filepath.Join(t.TempDir(), "op.sh") // never asked: the tests resolve, they do not search
	if err := os.WriteFile(script, []byte("#!/bin/sh\nexit 0\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	api := httptest.NewServer(http.NotFoundHandler())
	t.Cleanup(api.Close)
	return []string{"tuner", "cmd:" + script, "claude", "openai:parity-model@" + api.URL + "/v1"}
}
