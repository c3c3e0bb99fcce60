package main

import (
	"os"
	"regexp"
	"strings"
	"testing"
)

// The README reads in a newcomer's order, points at nothing outside the
// repository and shows what connecting an agent takes.
func TestReadmeNewcomerOrder(t *testing.T) {
	b, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	s := string(b)
	order := []string{"\n## The two commands", "\n## Give it to an agent", "\n## A first search", "\n## Writing a candidate",
		"\n## Tools", "\n## The same jobs from a shell", "\n## Operators"}
	at := 0
	for _, h := range order {
		i := strings.Index(s, h)
		if i < at {
			t.Errorf("section %q at %d: want it after the one before (%d)", strings.TrimSpace(h), i, at)
			continue
		}
		at = i
	}
	agent := s[strings.Index(s, "## Give it to an agent"):strings.Index(s, "## A first search")]
	for _, want := range []string{"claude mcp add kevolve", "claude mcp list", "codex mcp list", "tool_timeout_sec",
		"Cursor", `"mcpServers"`, "--mcp-config kevolve.json"} {
		if !strings.Contains(agent, want) {
			t.Errorf("\"Give it to an agent\" lacks %q", want)
		}
	}
	if !strings.Contains(s, "corpus/problems/FAMILY/NAME/") {
		t.Error("the README does not say where the start kernels live")
	}
	for _, bad := range []string{"(soon)", "../shared", "DESIGN.md"} {
		if strings.Contains(s, bad) {
			t.Errorf("the README still says %q", bad)
		}
	}
	// Every relative path it names by ../ stays inside the repository
	// (the GPU test lines run from a package folder, two levels down).
	for _, m := range regexp.MustCompile(`(?:\.\./)+[\w.-]+`).FindAllString(s, -1) {
		if strings.Count(m, "../") > 2 || !strings.HasSuffix(m, ".gpu") {
			t.Errorf("the README points outside the repository: %s", m)
		}
	}
	mk, err := os.ReadFile("../../Makefile")
	if err != nil {
		t.Fatal(err)
	}
	if regexp.MustCompile(`pip install -q`).Match(mk) || !strings.Contains(string(mk), "about 5 GB") {
		t.Error("the venv's 5 GB download must show progress (pip without -q, with a line saying what comes)")
	}
}
