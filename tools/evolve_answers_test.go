package tools

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/kevolve/kevolve-mcp/corpus"
	"github.com/kevolve/kevolve-mcp/search"
	"github.com/kevolve/kevolve-mcp/search/runs"
	"github.com/kevolve/kevolve-mcp/tools/toolstest"
)

// The sizes an answer of the loop may have on llm/softmax (issue 36): a
// step's context is paid at every step of a search.
const (
	maxSubmitAnswer = 3000
	maxNextAnswer   = 6000
)

// answerSize is what an agent reads of an answer: its text, and its
// structured content where a client shows that instead.
func answerSize(t *testing.T, res *mcp.CallToolResult) int {
	t.Helper()
	b, err := json.Marshal(res.StructuredContent)
	if err != nil {
		t.Fatal(err)
	}
	return max(len(toolstest.Text(res)), len(b))
}

// evolve_next names the parent's code and the reference by URI (both
// readable) unless include_code asks for them, evolve_submit does not echo
// the kernel, and both stay within their sizes on llm/softmax.
func TestEvolveAnswersFitAContext(t *testing.T) {
	c, _ := evolveServer(t)
	p, err := corpus.Get("llm/softmax")
	if err != nil {
		t.Fatal(err)
	}
	start, err := p.StartSource("c")
	if err != nil {
		t.Fatal(err)
	}
	ref, err := p.ReferenceSource()
	if err != nil {
		t.Fatal(err)
	}
	var info runs.RunInfo
	toolstest.Decode(t, toolstest.Call(t, c, "evolve_start", map[string]any{"problem": "llm/softmax", "target": "cpu", "language": "c", "budget": 3}), &info)

	task := nextTask(t, c, info.RunID, false)
	res := toolstest.Call(t, c, "evolve_next", map[string]any{"run_id": info.RunID}) // the same task, measured
	if n := answerSize(t, res); n > maxNextAnswer {
		t.Errorf("evolve_next answered %d characters, over %d", n, maxNextAnswer)
	}
	if task.Parent.Code != "" || task.Problem.Reference != "" || strings.Contains(toolstest.Text(res), "ModelNew(nn.Module)") {
		t.Errorf("evolve_next inlined code without include_code: %s", toolstest.Text(res))
	}
	if got := toolstest.ReadText(t, c, task.Parent.CodeURI); got != start {
		t.Errorf("%s is not the start kernel:\n%s", task.Parent.CodeURI, got)
	}
	if got := toolstest.ReadText(t, c, task.Problem.ReferenceURI); got != ref {
		t.Errorf("%s is not the reference:\n%s", task.Problem.ReferenceURI, got)
	}
	if full := nextTask(t, c, info.RunID, true); full.Parent.Code != start || full.Problem.Reference != ref || full.NodeID != task.NodeID {
		t.Errorf("include_code: node %d, code %d bytes, reference %d bytes", full.NodeID, len(full.Parent.Code), len(full.Problem.Reference))
	}
	if again := nextTask(t, c, info.RunID, false); again.Parent.Code != "" || again.Parent.CodeURI != task.Parent.CodeURI {
		t.Errorf("a brief answer changed the run's task: %+v", again.Parent)
	}

	code := strings.Replace(start, "import torch", "import torch  # a variant", 1)
	res = toolstest.Call(t, c, "evolve_submit", map[string]any{"run_id": info.RunID, "node_id": task.NodeID, "code": code, "notes": "variant", "wait_s": 300})
	var sub runs.SubmitResult
	toolstest.Decode(t, res, &sub)
	if n := answerSize(t, res); n > maxSubmitAnswer {
		t.Errorf("evolve_submit answered %d characters, over %d", n, maxSubmitAnswer)
	}
	if sub.Node == nil || sub.Node.Result == nil || sub.Node.Code != "" || strings.Contains(toolstest.Text(res), "a variant") {
		t.Fatalf("evolve_submit echoed the kernel or lacks the result: %s", toolstest.Text(res))
	}
	if got := toolstest.ReadText(t, c, sub.Node.CodeURI); got != code {
		t.Errorf("%s is not the submitted kernel", sub.Node.CodeURI)
	}
	if len(sub.Node.Result.Checks) != 0 {
		t.Errorf("evolve_submit lists every check (%d); failed_checks is enough", len(sub.Node.Result.Checks))
	}
}

// briefTask answers from a copy: the run hands out the same task until a
// kernel is submitted, and a brief answer must not take its code away.
func TestBriefTaskLeavesTheRunsTask(t *testing.T) {
	res := &search.Result{Verdict: search.VerdictPass, Checks: []search.Check{{Name: "allclose", Passed: true}}}
	task := runs.Task{RunID: "r-1", NodeID: 3, Problem: runs.TaskProblem{Reference: "class Model: pass"},
		Parent: runs.NodeView{ID: 3, Code: "class ModelNew: pass", Result: res}}
	brief := briefTask(task, false)
	if brief.Parent.Code != "" || brief.Problem.Reference != "" || brief.Parent.Result.Checks != nil ||
		brief.Parent.CodeURI != "run://r-1/node/3" || brief.Problem.ReferenceURI != "run://r-1/reference.py" {
		t.Errorf("brief task: %+v", brief)
	}
	if task.Parent.Code == "" || task.Problem.Reference == "" || len(res.Checks) != 1 {
		t.Errorf("the run's task changed: %+v, checks %v", task, res.Checks)
	}
	if full := briefTask(task, true); full.Parent.Code != task.Parent.Code || full.Problem.Reference != task.Problem.Reference {
		t.Errorf("include_code: %+v", full)
	}
}
