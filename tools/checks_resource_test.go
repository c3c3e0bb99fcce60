package tools

import (
	"fmt"
	"strings"
	"testing"

	"github.com/kevolve/kevolve-mcp/harness"
	"github.com/kevolve/kevolve-mcp/harness/problem"
	"github.com/kevolve/kevolve-mcp/tools/toolstest"
)

// kevolve://checks, read through the server, lists every registered check
// with its stage under the verdict its failure gives, the verdicts in the
// harness's rank order, and the tolerances.
func TestChecksResourceListsTheRegistry(t *testing.T) {
	cs, err := harness.EmbeddedChecks()
	if err != nil {
		t.Fatal(err)
	}
	text := toolstest.ReadText(t, toolstest.Connect(t, New(Deps{})), checksURI)
	for _, c := range cs {
		line := fmt.Sprintf("- %s (%s): %s\n", c.Name, c.Stage, c.Description)
		i := strings.Index(text, line)
		if i < 0 {
			t.Errorf("%s is not listed as %q", c.Name, line)
			continue
		}
		label := c.Verdict
		if label == noVerdict {
			label = "never failing"
		}
		if h := strings.LastIndex(text[:i], "\n## "); h < 0 || !strings.HasPrefix(text[h+4:], label) {
			t.Errorf("%s is not under its verdict %q", c.Name, c.Verdict)
		}
	}
	at := 0
	for _, v := range problem.FailureVerdicts() {
		i := strings.Index(text, "\n## "+v+"\n")
		if i < 0 {
			continue // no check gives this verdict alone
		}
		if i < at {
			t.Errorf("verdict %s is out of the harness's rank order", v)
		}
		at = i
	}
	if !strings.Contains(text, "## Tolerances") || !strings.Contains(text, fmt.Sprintf("these %d checks", len(cs))) {
		t.Errorf("the catalogue lacks its count or the tolerances:\n%s", text)
	}
}
