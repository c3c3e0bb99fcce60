package memory

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"

	"github.com/kevolve/kevolve-mcp/search"
)

// Prior is the best kernel of an earlier run of a similar problem.
type Prior struct {
	RunID   string       `json:"run_id"`
	Problem string       `json:"problem"`
	Node    *search.Node `json:"-"`
	NodeID  int64        `json:"node_id"`
	Fitness float64      `json:"fitness"`
	Arch    string       `json:"arch"`
	Target  string       `json:"target"`
	// Port marks a kernel from another arch: offered to the operator to
	// port, not evaluated as is.
	Port bool   `json:"port"`
	Why  string `json:"why"`
}

// Find returns the best passing kernel of each earlier run of a problem
// similar to p (exclude is the current run), best first: at most k for
// this arch and k ports from other arches.
func Find(ctx context.Context, st search.Store, p search.Problem, devices []string, exclude string, k int) ([]Prior, error) {
	runs, err := st.Runs(ctx)
	if err != nil {
		return nil, fmt.Errorf("memory: %w", err)
	}
	_, arch := Arch(p, devices)
	var same, ports []Prior
	seen := map[string]bool{} // one prior per code
	for _, r := range runs {
		if r.ID == exclude || r.BestNode == 0 {
			continue
		}
		ok, why := Similar(p, r.Problem)
		if !ok {
			continue
		}
		n, err := st.Node(ctx, r.BestNode)
		if err != nil || !n.Evaluated() || n.Fitness() <= 0 || seen[n.Hash] {
			continue
		}
		seen[n.Hash] = true
		_, ra := Arch(r.Problem, r.Devices)
		pr := Prior{RunID: r.ID, Problem: r.Problem.Name, Node: n, NodeID: n.ID, Fitness: n.Fitness(), Arch: ra, Target: r.Problem.Target, Why: why}
		if ra == arch && r.Problem.Target == p.Target && r.Problem.Language == p.Language {
			same = append(same, pr)
		} else {
			pr.Port = true
			ports = append(ports, pr)
		}
	}
	byFit := func(l []Prior) []Prior {
		sort.SliceStable(l, func(i, j int) bool { return l[i].Fitness > l[j].Fitness })
		if len(l) > k {
			l = l[:k]
		}
		return l
	}
	return append(byFit(same), byFit(ports)...), nil
}

// Seed writes this arch's priors as pending children of the run's root,
// so the run's first drive evaluates them with the root (they are its
// draft phase's first members). It returns the nodes written. Ports are
// not written: they are shown to the operator (brief Options.Ports).
func Seed(ctx context.Context, st search.Store, runID string, priors []Prior) ([]*search.Node, error) {
	nodes, err := st.Nodes(ctx, runID)
	if err != nil {
		return nil, err
	}
	g := search.NewGraph(nodes)
	root := g.Root()
	if root == nil {
		return nil, fmt.Errorf("memory: run %s has no root", runID)
	}
	var out []*search.Node
	for _, p := range priors {
		if p.Port || p.Node == nil || p.Node.Hash == root.Hash {
			continue
		}
		in, _ := json.Marshal(p)
		n := &search.Node{RunID: runID, Parents: []int64{root.ID}, Depth: 1, Code: p.Node.Code, Language: p.Node.Language,
			Operator: "memory", OperatorInput: in, State: search.NodePending,
			Notes: fmt.Sprintf("draft: best kernel of run %s (%s, node %d, %.2fx there): %s", p.RunID, p.Problem, p.NodeID, p.Fitness, p.Why)}
		if err := st.InsertNode(ctx, n); err != nil {
			return out, err
		}
		out = append(out, n)
	}
	return out, nil
}
