package runs

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/kevolve/kevolve-mcp/harness/problem"
	"github.com/kevolve/kevolve-mcp/search"
)

// Task is what evolve_next hands an agent: the node to derive a child from
// and everything needed to write a better kernel (the tool names the
// parent's code and the reference by URI unless asked to inline them).
type Task struct {
	RunID string `json:"run_id"`
	// NodeID is the node to expand: evolve_submit takes it back with the
	// new kernel, which becomes its child.
	NodeID int64 `json:"node_id"`
	// Ticket numbers the run's requests to the agent (1, 2, ...).
	Ticket int64 `json:"ticket"`
	// Draft asks for an independent attempt from the start kernel rather
	// than an improvement of a lineage (the draft phase).
	Draft bool   `json:"draft,omitempty"`
	Why   string `json:"why,omitempty"`

	Problem TaskProblem `json:"problem"`
	Parent  NodeView    `json:"parent"`
	// SOLGap is how far the parent is from the speed of light, in words.
	SOLGap string `json:"sol_gap,omitempty"`
	// Siblings are the parent's other children: what was tried from this
	// node and how it fared. Lineage is the parent's ancestors, nearest
	// first. Both are empty in clean-slate memory mode.
	Siblings []Attempt `json:"siblings"`
	Lineage  []Attempt `json:"lineage"`
	// SiblingsTotal and LineageTotal count all of them when the lists
	// were cut to the most recent siblings and the nearest ancestors.
	SiblingsTotal int                `json:"siblings_total"`
	LineageTotal  int                `json:"lineage_total"`
	Best          *Attempt           `json:"best,omitempty"`
	Budget        search.BudgetState `json:"budget"`
	// EvalsLeft is the evaluations left in the budget (-1 = no limit).
	EvalsLeft int `json:"evals_left"`
}

// TaskProblem is the problem as an agent needs it.
type TaskProblem struct {
	Name          string  `json:"name"`
	Target        string  `json:"target"`
	Language      string  `json:"language"`
	ShapeSet      string  `json:"shape_set,omitempty"`
	Dtype         string  `json:"dtype,omitempty"`
	FLOPs         float64 `json:"flops,omitempty"`
	Bytes         float64 `json:"bytes,omitempty"`
	ReferencePath string  `json:"reference_path"`
	// Reference is the reference program's source (KernelBench format);
	// an answer may leave it out and give ReferenceURI, where to read it.
	Reference    string `json:"reference,omitempty"`
	ReferenceURI string `json:"reference_uri,omitempty"`
}

// NodeView is one node with its code and evaluation.
type NodeView struct {
	ID       int64   `json:"id"`
	Parents  []int64 `json:"parents,omitempty"`
	Depth    int     `json:"depth"`
	State    string  `json:"state"`
	Language string  `json:"language"`
	// Code is the kernel; an answer may leave it out and give CodeURI,
	// where to read it.
	Code     string `json:"code,omitempty"`
	CodeURI  string `json:"code_uri,omitempty"`
	Operator string `json:"operator"`
	Notes    string `json:"notes,omitempty"`
	// DuplicateOf: the node's code had been evaluated before, as that node.
	DuplicateOf int64          `json:"duplicate_of,omitempty"`
	Result      *search.Result `json:"result,omitempty"`
	// FailedChecks repeats the checks that did not pass, for a quick read.
	FailedChecks []search.Check `json:"failed_checks,omitempty"`
	// Warnings are the evaluation's warnings (a check the harness could
	// not make, a speedup it could not bound), from the harness's result;
	// [] for an evaluated node without any (the field is in every answer
	// that evaluates), null for one not evaluated.
	Warnings  []string `json:"warnings"`
	Diagnosis string   `json:"diagnosis,omitempty"`
	Error     string   `json:"error,omitempty"`
}

// Attempt is a node in brief: what it tried and how it fared.
type Attempt struct {
	ID          int64   `json:"id"`
	Parent      int64   `json:"parent,omitempty"`
	Notes       string  `json:"notes,omitempty"`
	State       string  `json:"state"`
	Verdict     string  `json:"verdict,omitempty"`
	Fitness     float64 `json:"fitness"`
	TimeS       float64 `json:"time_s,omitempty"`
	PctOfSOL    float64 `json:"pct_of_sol,omitempty"`
	FailedCheck string  `json:"failed_check,omitempty"`
	DuplicateOf int64   `json:"duplicate_of,omitempty"`
}

// A task lists at most this many siblings (the most recent) and ancestors
// (the nearest): enough to avoid repeating an attempt, small enough for an
// agent's context.
const (
	maxSiblings = 24
	maxLineage  = 12
)

// maxReference bounds the reference source inlined in a task; a longer one
// is read from reference_path.
const maxReference = 64 << 10

func buildTask(c search.Context, ticket int64) *Task {
	parent := c.Parents[0]
	t := &Task{RunID: c.Run.ID, NodeID: parent.ID, Ticket: ticket, Draft: c.Selection.Draft, Why: c.Selection.Why,
		Problem: TaskProblem{Name: c.Problem.Name, Target: c.Problem.Target, Language: c.Problem.Language, ShapeSet: c.Problem.ShapeSet,
			Dtype: c.Problem.Dtype, FLOPs: c.Problem.FLOPs, Bytes: c.Problem.Bytes, ReferencePath: c.Problem.ReferencePath},
		Parent: viewOf(parent), SOLGap: solGap(parent), Budget: c.Budget, EvalsLeft: -1,
		Siblings: []Attempt{}, Lineage: []Attempt{}}
	if b, err := problem.ReadFile("reference", c.Problem.ReferencePath); err == nil && len(b) <= maxReference {
		t.Problem.Reference = string(b)
	}
	if c.Budget.EvalLimit > 0 {
		t.EvalsLeft = max(0, c.Budget.EvalLimit-c.Budget.Evals)
	}
	g := c.Graph
	if c.Memory != search.MemoryCleanSlate && g != nil {
		kids := g.Children(parent.ID)
		t.SiblingsTotal = len(kids)
		for _, ch := range kids[max(0, len(kids)-maxSiblings):] {
			t.Siblings = append(t.Siblings, attemptOf(ch))
		}
		if c.Memory != search.MemoryCompare {
			anc := g.Ancestors(parent.ID)
			t.LineageTotal = len(anc)
			for _, a := range anc[:min(len(anc), maxLineage)] {
				t.Lineage = append(t.Lineage, attemptOf(a))
			}
		}
	}
	if g != nil {
		if b := g.Best(); b != nil {
			a := attemptOf(b)
			t.Best = &a
		}
	}
	return t
}

func viewOf(n *search.Node) NodeView {
	v := NodeView{ID: n.ID, Parents: n.Parents, Depth: n.Depth, State: string(n.State), Language: n.Language, Code: n.Code,
		Operator: n.Operator, Notes: n.Notes, DuplicateOf: n.DuplicateOf, Result: n.Result, Diagnosis: n.Diagnosis, Error: n.Error}
	if n.Result != nil {
		v.FailedChecks = n.Result.FailedChecks()
		v.Warnings = warningsOf(n.Result.Raw)
		if v.Warnings == nil {
			v.Warnings = []string{}
		}
		if len(n.Result.Raw) > 0 {
			// The harness's raw result doubles the payload and says nothing
			// the fields above do not; reports keep it.
			r := *n.Result
			r.Raw = nil
			v.Result = &r
		}
	}
	return v
}

// warningsOf reads the warnings of the harness's raw result (nil where
// there are none or the result is not the harness's).
func warningsOf(raw json.RawMessage) []string {
	var r struct {
		Warnings []string `json:"warnings"`
	}
	if len(raw) == 0 || json.Unmarshal(raw, &r) != nil {
		return nil
	}
	return r.Warnings
}

func attemptOf(n *search.Node) Attempt {
	a := Attempt{ID: n.ID, Notes: n.Notes, State: string(n.State), DuplicateOf: n.DuplicateOf}
	if len(n.Parents) > 0 {
		a.Parent = n.Parents[0]
	}
	if r := n.Result; r != nil {
		a.Verdict, a.Fitness, a.TimeS, a.PctOfSOL = r.Verdict, r.Fitness, r.TimeS, r.PctOfSOL
		if fc := r.FailedChecks(); len(fc) > 0 {
			a.FailedCheck = fc[0].Name
			if fc[0].Detail != "" {
				a.FailedCheck += ": " + firstLine(fc[0].Detail)
			}
		}
	} else if n.Error != "" {
		a.FailedCheck = firstLine(n.Error)
	}
	return a
}

// solGap says how far a node is from the speed of light, and which bound.
func solGap(n *search.Node) string {
	r := n.Result
	if r == nil || r.Verdict != search.VerdictPass || !(r.SOLSeconds > 0) || !(r.TimeS > 0) {
		return ""
	}
	bound := r.SOLBound
	if bound == "" {
		bound = "roofline"
	}
	return fmt.Sprintf("%.1f%% of speed of light (%s-bound): %.3g s against t_SOL %.3g s, %.1fx headroom",
		100*r.SOLSeconds/r.TimeS, bound, r.TimeS, r.SOLSeconds, r.TimeS/r.SOLSeconds)
}

func firstLine(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		s = s[:i]
	}
	if len(s) > 200 {
		s = s[:200] + "…"
	}
	return s
}
