package tools

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/kevolve/kevolve-mcp/harness/problem"
	"github.com/kevolve/kevolve-mcp/search/operator"
)

// What an agent pays before its first useful call (issues 33 and 36): every
// tool's description, the tools/list answer and the instructions. The
// bounds are the targets those issues set; a change that needs more should
// move detail into a resource (kevolve://checks, problem://, run://)
// rather than raise them.
const (
	// maxDescription is one tool's description (github-mcp-server keeps
	// its own under about 1,100).
	maxDescription = 1500
	// maxToolsList is the tools/list response on the wire: half of the
	// 89,793 bytes it was before the issues.
	maxToolsList = 44800
	// maxFirstCall is the instructions and every description together.
	maxFirstCall = 15000
)

func TestToolDescriptionsLeadWithTheirUseWithinBudget(t *testing.T) {
	for _, st := range All(Deps{}) {
		d := st.Tool.Description
		if len(d) > maxDescription {
			t.Errorf("%s: description of %d characters, over %d: move detail into a resource or the output", st.Tool.Name, len(d), maxDescription)
		}
		if !strings.HasPrefix(d, "Use ") {
			t.Errorf("%s: the description should open with what to call the tool for (\"Use ...\"): %.60q", st.Tool.Name, d)
		}
	}
}

func TestToolsListWithinBudget(t *testing.T) {
	resp := New(Deps{}).HandleMessage(context.Background(), []byte(`{"jsonrpc":"2.0","id":1,"method":"tools/list"}`))
	wire, err := json.Marshal(resp)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(wire), `"run_kernel"`) {
		t.Fatalf("tools/list answered without the tools: %.300s", wire)
	}
	if len(wire) > maxToolsList {
		t.Errorf("tools/list is %d bytes, over %d", len(wire), maxToolsList)
	}
	if strings.Contains(string(wire), operatorsPlaceholder) {
		t.Errorf("a schema still holds the placeholder %s", operatorsPlaceholder)
	}
}

func TestInstructionsAndDescriptionsWithinBudget(t *testing.T) {
	n := len(instructions)
	for _, st := range All(Deps{}) {
		n += len(st.Tool.Description)
	}
	if n > maxFirstCall {
		t.Errorf("instructions and descriptions are %d characters, over %d", n, maxFirstCall)
	}
}

// Verdict and operator names are rendered from their one list in the code
// (problem.Verdicts, operator.Names), never spelled again by hand.
func TestVocabulariesRenderedFromTheirLists(t *testing.T) {
	tools := map[string]string{}
	for _, st := range All(Deps{}) {
		b, err := json.Marshal(st.Tool)
		if err != nil {
			t.Fatal(err)
		}
		tools[st.Tool.Name] = string(b)
	}
	if v := strings.Join(problem.Verdicts, ", "); !strings.Contains(tools["run_kernel"], v) {
		t.Errorf("run_kernel does not list the verdicts %q", v)
	}
	if ops := operator.Spelled(); !strings.Contains(tools["evolve"], ops) {
		t.Errorf("evolve's operator argument does not list the operators %q", ops)
	}
}
