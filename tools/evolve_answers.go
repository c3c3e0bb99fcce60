package tools

// evolve_next and evolve_submit answer every step of a search, so what they
// carry is paid for at every step of an agent's context. They name the
// sources the agent already has or can read once (the kernel it just
// submitted, the parent's code, the reference) by resource URI instead of
// inlining them, and list only the checks that failed (failed_checks);
// every check stays in evolve_best and the run's report.

import (
	"fmt"

	"github.com/kevolve/kevolve-mcp/search/runs"
)

// nodeURI reads one node's kernel: run://ID/node/N.
func nodeURI(runID string, node int64) string {
	return fmt.Sprintf("%s%s/node/%d", runScheme, runID, node)
}

// referenceURI reads a run's reference program: run://ID/reference.py.
func referenceURI(runID string) string { return runScheme + runID + "/reference.py" }

// briefNode is a node without its code (CodeURI reads it) and its passed
// checks.
func briefNode(v runs.NodeView, runID string) *runs.NodeView {
	v.Code, v.CodeURI = "", nodeURI(runID, v.ID)
	if v.Result != nil {
		r := *v.Result
		r.Checks = nil
		v.Result = &r
	}
	return &v
}

// briefTask is a task as evolve_next answers it: the parent brief, and the
// parent's code and the reference inlined only when asked. It copies: the
// run hands out the same task until a kernel is submitted.
func briefTask(t runs.Task, includeCode bool) *runs.Task {
	code := t.Parent.Code
	t.Parent = *briefNode(t.Parent, t.RunID)
	t.Problem.ReferenceURI = referenceURI(t.RunID)
	if includeCode {
		t.Parent.Code = code
	} else {
		t.Problem.Reference = ""
	}
	return &t
}
