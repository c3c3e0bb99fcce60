// Package brief synthesizes an operator's brief (KernelEvolve's runtime
// context): from one selected parent and its run it writes the problem,
// the device and its ceilings, the parent's code and result, the
// speed-of-light gap, the diagnosis, the knowledge retrieved for that
// diagnosis on that device, and what the search already tried, within a
// token budget.
//
// The function is versioned: Version changes whenever the rendered text of
// the same inputs changes, and every operator stores Version and the
// context's hash with the node it proposed, so that a run can be audited
// and a prompt replayed.
package brief

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path"
	"sort"
	"strings"

	"github.com/kevolve/kevolve-mcp/retrieval"
	"github.com/kevolve/kevolve-mcp/search"
)

// Version names the synthesis; bump it when the output for the same inputs
// changes (golden files in testdata pin it).
const Version = "kevolve-context/1"

// DefaultBudget is the token budget when Options.Budget is 0: room for a
// 300-line kernel, its reference, a log and a few knowledge passages, well
// under every current model's window.
const DefaultBudget = 8000

// Device is the target device as the context shows it.
type Device struct {
	// Name is a chip or "cpu" (the retrieval index's vocabulary: h100,
	// mi300x, cpu...). Vendor and Arch are shown as given.
	Name   string `json:"name"`
	Vendor string `json:"vendor,omitempty"`
	Arch   string `json:"arch,omitempty"`
	// Peak figures (0 = unknown).
	PeakTFLOPs float64 `json:"peak_tflops,omitempty"`
	PeakGBs    float64 `json:"peak_gbs,omitempty"`
}

// Retriever is the knowledge index as the synthesis uses it
// (*retrieval.Index satisfies it).
type Retriever interface {
	Search(ctx context.Context, q retrieval.Query) (*retrieval.Response, error)
}

// Options tune one synthesis.
type Options struct {
	Budget    int // tokens; 0 = DefaultBudget
	Device    Device
	Retriever Retriever // nil = no retrieved knowledge
	// Reference is the problem's code; "" = read Problem.ReferencePath.
	Reference string
	// OpFamily names the operator for retrieval ("rmsnorm"); "" = the last
	// element of the problem's name.
	OpFamily string
	// OutputContract tells the operator how to answer (edit kernel.py,
	// reply with a file or a diff); it is always included.
	OutputContract string
	// MaxHistory bounds the sibling/ancestor entries (0 = 6).
	MaxHistory int
	// Stagnation is the memory-mode supervisor's window: after this many
	// finished nodes without a new best, an inherit context compares with
	// siblings instead, and after twice as many it starts from a clean
	// slate (0 = 6; <0 = off).
	Stagnation int
	// Ports are earlier runs' best kernels for this problem on other
	// arches (search/memory), shown near the root for the operator to port.
	Ports []Port
}

// Port is a kernel from another arch.
type Port struct {
	Problem  string  `json:"problem"`
	Arch     string  `json:"arch"`
	Language string  `json:"language"`
	Fitness  float64 `json:"fitness"`
	Code     string  `json:"code"`
}

// Section says what one part of the context cost and whether it was cut.
type Section struct {
	Name string `json:"name"`
	// Priority: a larger number is cut first.
	Priority  int  `json:"priority"`
	Tokens    int  `json:"tokens"`
	Included  bool `json:"included"`
	Truncated bool `json:"truncated,omitempty"`
}

// Synthesis is the context and what it is made of.
type Synthesis struct {
	Version string `json:"version"`
	Text    string `json:"-"`
	// Hash is sha256 of Text; Tokens its estimate (EstimateTokens).
	Hash     string            `json:"hash"`
	Tokens   int               `json:"tokens"`
	Budget   int               `json:"budget"`
	Scenario string            `json:"scenario"`
	Memory   search.MemoryMode `json:"memory"`
	// MemoryWhy says why the supervisor changed the run's memory mode.
	MemoryWhy string    `json:"memory_why,omitempty"`
	Sections  []Section `json:"sections"`
	// Query is what the knowledge index was asked; Docs what it returned
	// and the context kept.
	Query *retrieval.Query `json:"query,omitempty"`
	Docs  []string         `json:"docs,omitempty"`
}

// Scenarios, from the parent's state.
const (
	ScenarioDraft     = "first_draft"
	ScenarioFixBuild  = "fix_build"
	ScenarioFixResult = "fix_correctness"
	ScenarioFlagged   = "fix_integrity"
	ScenarioOptimize  = "optimize"
	ScenarioNearSOL   = "near_sol"
)

// ErrBudget is returned when the parts that cannot be cut (the task, the
// parent's code, its result, the output contract) exceed the budget.
var ErrBudget = errors.New("context: the token budget is smaller than the parent's code and the task (raise --context-tokens)")

// Synthesize builds the context for a proposal from c.Parents[0].
func Synthesize(ctx context.Context, c search.Context, o Options) (*Synthesis, error) {
	if len(c.Parents) == 0 || c.Parents[0] == nil {
		return nil, errors.New("context: no parent selected")
	}
	if o.Budget <= 0 {
		o.Budget = DefaultBudget
	}
	if o.MaxHistory <= 0 {
		o.MaxHistory = 6
	}
	if o.Reference == "" && c.Problem.ReferencePath != "" {
		b, err := os.ReadFile(c.Problem.ReferencePath)
		if err != nil {
			return nil, fmt.Errorf("context: reference: %w", err)
		}
		o.Reference = string(b)
	}
	if o.OpFamily == "" {
		o.OpFamily = strings.TrimSuffix(path.Base(strings.ReplaceAll(c.Problem.Name, "\\", "/")), ".py")
	}
	mem := c.Memory
	if mem == "" {
		mem = search.MemoryInherit
	}
	mem, why := supervise(mem, c.Graph, o.Stagnation)
	parent := c.Parents[0]
	syn := &Synthesis{Version: Version, Budget: o.Budget, Memory: mem, MemoryWhy: why, Scenario: scenario(parent, c.Selection.Draft)}

	parts := []*part{
		taskPart(c, parent, syn.Scenario),
		feedbackPart(c.Feedback),
		devicePart(o.Device, c.Problem),
		problemPart(c.Problem, o.Reference),
		parentPart(parent),
		resultPart(parent),
		logPart(parent),
		diagnosisPart(parent),
		historyPart(c, parent, mem, o.MaxHistory),
		portsPart(o.Ports, parent),
	}
	cons, docs, q := knowledgeParts(ctx, c, parent, o)
	syn.Query = q
	parts = append(parts, cons, docs, contractPart(o.OutputContract))

	if err := fit(parts, o.Budget); err != nil {
		return nil, err
	}
	var b strings.Builder
	for _, p := range parts {
		text := p.text()
		syn.Sections = append(syn.Sections, Section{Name: p.name, Priority: p.prio, Tokens: EstimateTokens(text),
			Included: text != "", Truncated: p.level > 0 && text != ""})
		if text == "" {
			continue
		}
		if b.Len() > 0 {
			b.WriteString("\n")
		}
		b.WriteString(text)
	}
	syn.Docs = append(cons.docs(), docs.docs()...)
	syn.Text = b.String()
	syn.Tokens = EstimateTokens(syn.Text)
	sum := sha256.Sum256([]byte(syn.Text))
	syn.Hash = hex.EncodeToString(sum[:])
	return syn, nil
}

func scenario(parent *search.Node, draft bool) string {
	r := parent.Result
	switch {
	case draft || r == nil:
		return ScenarioDraft
	case r.Verdict == search.VerdictCompileError:
		return ScenarioFixBuild
	case r.Verdict == search.VerdictIntegrityViolation:
		return ScenarioFlagged
	case r.Verdict != search.VerdictPass:
		return ScenarioFixResult
	case r.PctOfSOL >= 80:
		return ScenarioNearSOL
	}
	return ScenarioOptimize
}

// supervise is the memory-mode supervisor: a search that stopped improving
// is shown less of its own history, so the operator leaves the rut (AVO's
// stagnation supervisor, applied to the context).
func supervise(mem search.MemoryMode, g *search.Graph, window int) (search.MemoryMode, string) {
	if window == 0 {
		window = 6
	}
	if window < 0 || g == nil || mem == search.MemoryCleanSlate {
		return mem, ""
	}
	var done []*search.Node
	for _, n := range g.Nodes {
		if n.State.Finished() && n.EvalSeq > 0 {
			done = append(done, n)
		}
	}
	sort.Slice(done, func(i, j int) bool { return done[i].EvalSeq < done[j].EvalSeq })
	best, since := 0.0, 0
	for _, n := range done {
		if n.Fitness() > best {
			best, since = n.Fitness(), 0
		} else {
			since++
		}
	}
	switch {
	case since >= 2*window:
		return search.MemoryCleanSlate, fmt.Sprintf("%d nodes without a new best: clean slate", since)
	case since >= window && mem == search.MemoryInherit:
		return search.MemoryCompare, fmt.Sprintf("%d nodes without a new best: compare with siblings", since)
	}
	return mem, ""
}
