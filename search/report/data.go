package report

import (
	"encoding/json"
	"time"
)

// The per-node data the page's script shows for the selected node (figures
// already sanitized by newGraph: JSON has no NaN). Encoded
// with encoding/json, which escapes <, > and & (so "</script>" in code cannot
// end the data block) and U+2028/2029.
type nodeData struct {
	ID       string      `json:"id"`
	Parents  []string    `json:"parents"`
	Children []string    `json:"children"`
	Verdict  string      `json:"verdict"`
	Message  string      `json:"message,omitempty"`
	Language string      `json:"language,omitempty"`
	Operator string      `json:"operator,omitempty"`
	Created  string      `json:"created,omitempty"`
	Finished string      `json:"finished,omitempty"`
	Checks   []checkData `json:"checks"`
	Timing   *timingData `json:"timing,omitempty"`

	SpeedupEager   *float64 `json:"speedup_eager"`
	SpeedupCompile *float64 `json:"speedup_compile"`
	SpeedupStart   *float64 `json:"speedup_start"`
	Fitness        float64  `json:"fitness"`
	TSolS          *float64 `json:"t_sol_s"`
	SolScore       *float64 `json:"sol_score"`
	PctOfSol       *float64 `json:"pct_of_sol"`
	FLOPs          float64  `json:"flops"`
	Bytes          float64  `json:"bytes"`

	Notes     string   `json:"notes,omitempty"`
	Diagnosis string   `json:"diagnosis,omitempty"`
	Island    int      `json:"island"`
	EvalSeq   int      `json:"eval_seq"`
	EvalS     float64  `json:"eval_s"`
	OperatorS float64  `json:"operator_s"`
	Tokens    int64    `json:"tokens"`
	Code      string   `json:"code"`
	DiffBase  string   `json:"diff_base,omitempty"`
	Diff      []hunkJS `json:"diff"`
	Lineage   bool     `json:"lineage"`
	Best      bool     `json:"best"`
	Depth     int      `json:"depth"`
}

type checkData struct {
	Name   string `json:"name"`
	Passed bool   `json:"passed"`
	Detail string `json:"detail,omitempty"`
}

type timingData struct {
	MedianS float64 `json:"median_s"`
	P10S    float64 `json:"p10_s"`
	P90S    float64 `json:"p90_s"`
	CV      float64 `json:"cv"`
	Iters   int     `json:"iters,omitempty"`
}

// hunkJS is a diff hunk as the script draws it: line i of L is the op
// character followed by the text; numbers count up from O and N.
type hunkJS struct {
	Header string   `json:"h"`
	O      int      `json:"o"`
	N      int      `json:"n"`
	L      []string `json:"l"`
}

type pageData struct {
	Best     string     `json:"best"`
	Islands  bool       `json:"islands"`
	Baseline string     `json:"baseline"`
	Nodes    []nodeData `json:"nodes"`
}

// diffContext is how many unchanged lines surround each change in the
// per-node diff.
const diffContext = 3

func buildData(run Run, g *graph, best int) ([]byte, error) {
	d := pageData{Baseline: run.Baseline, Nodes: make([]nodeData, 0, len(g.nodes))}
	if best >= 0 {
		d.Best = g.nodes[best].ID
	}
	onLineage := map[int]bool{}
	if best >= 0 {
		for _, i := range g.lineage(best) {
			onLineage[i] = true
		}
	}
	ts := func(t time.Time) string {
		if t.IsZero() {
			return ""
		}
		return t.UTC().Format("2006-01-02 15:04:05Z")
	}
	for _, n := range g.nodes {
		d.Islands = d.Islands || n.Island > 0
	}
	for i, n := range g.nodes {
		nd := nodeData{
			ID: n.ID, Parents: nonNil(n.Parents), Verdict: n.Verdict, Message: n.Message, Language: n.Language,
			Operator: n.Operator, Created: ts(n.CreatedAt), Finished: ts(n.FinishedAt), Checks: []checkData{},
			SpeedupEager: n.SpeedupEager, SpeedupCompile: n.SpeedupCompile, SpeedupStart: n.SpeedupStart,
			Fitness: n.Fitness, TSolS: n.TSolS, SolScore: n.SolScore, PctOfSol: n.PctOfSol,
			FLOPs: n.FLOPs, Bytes: n.Bytes, Notes: n.Notes, Diagnosis: n.Diagnosis, Island: n.Island, EvalSeq: n.EvalSeq, EvalS: n.Cost.EvalS, OperatorS: n.Cost.OperatorS,
			Tokens: n.Cost.Tokens, Code: n.Code, Diff: []hunkJS{}, Lineage: onLineage[i], Best: i == best, Depth: g.depth[i],
			Children: []string{},
		}
		for _, c := range g.children[i] {
			nd.Children = append(nd.Children, g.nodes[c].ID)
		}
		for _, c := range n.Checks {
			nd.Checks = append(nd.Checks, checkData(c))
		}
		if t := n.Timing; t != nil {
			nd.Timing = &timingData{t.MedianS, t.P10S, t.P90S, t.CV, t.Iters}
		}
		if p := g.parent[i]; p >= 0 {
			nd.DiffBase = g.nodes[p].ID
			for _, h := range Hunks(DiffLines(splitLines(g.nodes[p].Code), splitLines(n.Code)), diffContext) {
				hj := hunkJS{Header: h.Header(), O: h.OldStart, N: h.NewStart}
				for _, l := range h.Lines {
					hj.L = append(hj.L, string(l.Op)+l.Text)
				}
				nd.Diff = append(nd.Diff, hj)
			}
		}
		d.Nodes = append(d.Nodes, nd)
	}
	return json.Marshal(d)
}

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}
