// Package tuner is the built-in operator that needs no LLM, the offline
// default: it rewrites a candidate's tunables (see Parse) and leaves the
// rest of the code alone. Its search is coordinate descent over the
// parent's neighbourhood (nearest values first, one knob at a time), with
// random restarts when that neighbourhood is used up, never exhaustive
// enumeration. It keeps no state: what was tried is read from the graph, so
// a resumed run continues where it stopped.
package tuner

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand"
	"time"

	"github.com/kevolve/kevolve-mcp/search"
)

// Name is the operator's name on the command line.
const Name = "tuner"

// Tuner implements search.Operator.
type Tuner struct {
	// RestartProb is the chance of a random restart even while the
	// parent's neighbourhood has untried moves (default 0.1).
	RestartProb float64
}

var _ search.Operator = (*Tuner)(nil)

// New returns a tuner with default settings.
func New() *Tuner { return &Tuner{RestartProb: 0.1} }

func (t *Tuner) Name() string { return Name }

// Deadline: proposing is string rewriting, done in microseconds.
func (t *Tuner) Deadline() time.Duration { return 10 * time.Second }

// Input is what the tuner records as a node's OperatorInput.
type Input struct {
	Assign Assignment `json:"assign"`
	Move   string     `json:"move"` // "coordinate" | "pattern" | "restart"
}

// ErrNoTunables is returned for a parent without TUNABLES or literal
// launch-site knobs.
var ErrNoTunables = errors.New("tuner: the parent kernel has no tunables: declare TUNABLES = {\"NAME\": [values...]} over module-level NAME = value assignments, or use literal num_warps=/num_stages=/BLOCK...= (Triton) or block=(N,) (kevolve) launch arguments")

// Propose returns an untried variant of the first parent.
func (t *Tuner) Propose(ctx context.Context, c search.Context) (search.Proposal, error) {
	if len(c.Parents) == 0 {
		return search.Proposal{}, errors.New("tuner: no parent to tune")
	}
	parent := c.Parents[0]
	space, err := Parse(parent.Code)
	if err != nil {
		return search.Proposal{}, fmt.Errorf("tuner: node %d: %w", parent.ID, err)
	}
	if len(space.Tunables) == 0 {
		return search.Proposal{}, ErrNoTunables
	}
	tried := map[string]bool{}
	if c.Graph != nil {
		for _, n := range c.Graph.Nodes {
			tried[n.Hash] = true
		}
	}
	tried[search.NormalizedHash(parent.Code)] = true
	rng := rand.New(rand.NewSource(c.Seed))
	base := space.Current()
	names := make([]string, len(space.Tunables))
	for i, tn := range space.Tunables {
		names[i] = tn.Name
	}
	// An assignment met again gives the same code: it is not rewritten and
	// hashed again. Random restarts in a small space mostly meet old ones
	// (a used-up 40-point space took 91 ms a proposal without this, and
	// the engine asks every open node once before it ends the run).
	met := map[string]bool{}
	try := func(a Assignment, move string) (search.Proposal, bool, error) {
		if err := ctx.Err(); err != nil {
			return search.Proposal{}, false, err
		}
		k := space.key(a)
		if met[k] {
			return search.Proposal{}, false, nil
		}
		met[k] = true
		code, err := space.Apply(parent.Code, a)
		if err != nil {
			return search.Proposal{}, false, err
		}
		if tried[search.NormalizedHash(code)] {
			return search.Proposal{}, false, nil
		}
		in, _ := json.Marshal(Input{Assign: a, Move: move})
		return search.Proposal{Code: code, Inputs: in, Notes: move + ": " + Describe(base, a, names)}, true, nil
	}

	restart := func() (search.Proposal, bool, error) {
		for attempt := 0; attempt < 256; attempt++ {
			a := Assignment{}
			for _, tn := range space.Tunables {
				a[tn.Name] = tn.Values[rng.Intn(len(tn.Values))]
			}
			if p, ok, err := try(a, "restart"); ok || err != nil {
				return p, ok, err
			}
		}
		return search.Proposal{}, false, nil
	}
	// A draft is an independent attempt: a random point of the space.
	if c.Selection.Draft || rng.Float64() < t.RestartProb {
		if p, ok, err := restart(); ok || err != nil {
			return p, err
		}
	}
	// A step that paid is followed by the next step the same way first.
	if a, ok := patternMove(space, parent, c.Graph); ok {
		if p, ok, err := try(a, "pattern"); ok || err != nil {
			return p, err
		}
	}
	// Coordinate moves, nearest first; the starting knob rotates with the
	// parent's child count so that successive proposals sweep every knob.
	n := len(space.Tunables)
	offset := 0
	if c.Graph != nil {
		offset = len(c.Graph.Children(parent.ID)) % n
	}
	maxLen := 0
	for _, tn := range space.Tunables {
		maxLen = max(maxLen, len(tn.Values))
	}
	for dist := 1; dist < maxLen; dist++ {
		for k := 0; k < n; k++ {
			tn := space.Tunables[(k+offset)%n]
			for _, sign := range []int{+1, -1} {
				idx := tn.Current + sign*dist
				if idx < 0 || idx >= len(tn.Values) {
					continue
				}
				a := copyAssign(base)
				a[tn.Name] = tn.Values[idx]
				if p, ok, err := try(a, "coordinate"); ok || err != nil {
					return p, err
				}
			}
		}
	}
	if p, ok, err := restart(); ok || err != nil {
		return p, err
	}
	// Random restarts found nothing new: the space is small and nearly
	// used up, so walk it in order for what is left.
	if space.Size() <= 1<<16 {
		idx := make([]int, n)
		for {
			a := Assignment{}
			for i, tn := range space.Tunables {
				a[tn.Name] = tn.Values[idx[i]]
			}
			if p, ok, err := try(a, "restart"); ok || err != nil {
				return p, err
			}
			i := 0
			for ; i < n; i++ {
				idx[i]++
				if idx[i] < len(space.Tunables[i].Values) {
					break
				}
				idx[i] = 0
			}
			if i == n {
				break
			}
		}
	}
	return search.Proposal{}, search.ErrExhausted
}

// patternMove is a line search along the knob that just paid: when the
// parent differs from its own (evaluated) parent in exactly one knob and
// beat it, the next value the same way along that knob's list comes first
// (VEC 1->2 paying suggests 4). Time-bounded runs get few evaluations, and
// plain coordinate moves would spend them on the other knobs first.
func patternMove(space *Space, parent *search.Node, g *search.Graph) (Assignment, bool) {
	if g == nil || len(parent.Parents) == 0 || !parent.Evaluated() {
		return nil, false
	}
	gp := g.Node(parent.Parents[0])
	if !gp.Evaluated() || parent.Fitness() <= gp.Fitness() {
		return nil, false
	}
	prev, err := Parse(gp.Code)
	if err != nil {
		return nil, false
	}
	before := prev.Current()
	var moved *Tunable
	step := 0
	for i := range space.Tunables {
		tn := &space.Tunables[i]
		b, ok := before[tn.Name]
		if !ok {
			return nil, false
		}
		if b == tn.Values[tn.Current] {
			continue
		}
		j := indexOf(tn.Values, b)
		if moved != nil || j < 0 {
			return nil, false // several knobs moved, or off the list: no direction
		}
		moved, step = tn, 1
		if tn.Current < j {
			step = -1
		}
	}
	if moved == nil {
		return nil, false
	}
	next := moved.Current + step
	if next < 0 || next >= len(moved.Values) {
		return nil, false
	}
	a := space.Current()
	a[moved.Name] = moved.Values[next]
	return a, true
}

func copyAssign(a Assignment) Assignment {
	out := Assignment{}
	for k, v := range a {
		out[k] = v
	}
	return out
}
