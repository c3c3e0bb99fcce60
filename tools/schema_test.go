package tools

import (
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"testing"
)

var update = flag.Bool("update", false, "rewrite the tool-schema snapshots in testdata/schemas")

// TestToolSchemaSnapshots pins every tool's name, description, schemas and
// annotations: the MCP interface is what agents are written against, so any
// change must show up in review as a diff of testdata/schemas.
// Regenerate with: go test ./tools -run TestToolSchemaSnapshots -update
func TestToolSchemaSnapshots(t *testing.T) {
	dir := filepath.Join("testdata", "schemas")
	seen := map[string]bool{}
	for _, st := range All(Deps{}) {
		tool := st.Tool
		seen[tool.Name+".json"] = true
		a := tool.Annotations
		if a.ReadOnlyHint == nil || a.DestructiveHint == nil || a.IdempotentHint == nil || a.OpenWorldHint == nil || a.Title == "" {
			t.Errorf("%s: every annotation must be set explicitly: %+v", tool.Name, a)
		}
		if len(tool.Description) < 40 {
			t.Errorf("%s: description too thin for an agent to act on", tool.Name)
		}
		got, err := json.MarshalIndent(tool, "", "  ")
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, '\n')
		path := filepath.Join(dir, tool.Name+".json")
		if *update {
			if err := os.MkdirAll(dir, 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(path, got, 0o644); err != nil {
				t.Fatal(err)
			}
			continue
		}
		want, err := os.ReadFile(path)
		if err != nil {
			t.Errorf("%s: no snapshot (run with -update): %v", tool.Name, err)
			continue
		}
		if !bytes.Equal(got, want) {
			t.Errorf("%s: schema changed; if intended, run `go test ./tools -run TestToolSchemaSnapshots -update` and commit the diff\n--- got\n%s", tool.Name, got)
		}
	}
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		if !seen[e.Name()] {
			t.Errorf("snapshot %s has no tool: delete it", e.Name())
		}
	}
}
