package search

// NodeSummary is one node as a summary shows it.
type NodeSummary struct {
	ID      int64   `json:"id"`
	Verdict string  `json:"verdict"`
	TimeS   float64 `json:"time_s,omitempty"`
	// SpeedupOverStart is the start kernel's time over this one's.
	SpeedupOverStart float64 `json:"speedup_over_start,omitempty"`
	SpeedupVsEager   float64 `json:"speedup_vs_eager,omitempty"`
	SpeedupVsCompile float64 `json:"speedup_vs_compile,omitempty"`
	PctOfSOL         float64 `json:"pct_of_sol,omitempty"`
	SOLScore         float64 `json:"sol_score,omitempty"`
	Fitness          float64 `json:"fitness"`
	Notes            string  `json:"notes,omitempty"`
}

// Summary is a run at a glance: what `evolve --json` ends with and what
// evolve_status and the report start from.
type Summary struct {
	RunID      string    `json:"run_id"`
	Problem    string    `json:"problem"`
	Target     string    `json:"target"`
	Language   string    `json:"language"`
	Policy     string    `json:"policy"`
	Operator   string    `json:"operator"`
	Baseline   string    `json:"baseline"`
	Status     RunStatus `json:"status"`
	StopReason string    `json:"stop_reason,omitempty"`
	// Evaluations made (the start kernel's included): Passed with verdict
	// pass, Failed with any other (a compile error, a wrong result...).
	// Duplicates were answered from the store; Unjudged nodes the
	// evaluation service could not judge (no verdict); InFlight nodes
	// written but not finished (0 once a run has stopped cleanly).
	Evaluations int `json:"evaluations"`
	Passed      int `json:"passed"`
	Failed      int `json:"failed"`
	Duplicates  int `json:"duplicates"`
	Unjudged    int `json:"unjudged"`
	InFlight    int `json:"in_flight"`

	Start *NodeSummary `json:"start,omitempty"`
	Best  *NodeSummary `json:"best,omitempty"`

	ElapsedS  float64 `json:"elapsed_s"`
	EvalS     float64 `json:"eval_s"`
	OperatorS float64 `json:"operator_s"`
	Tokens    int     `json:"tokens"`
	// Rejected counts proposals turned away before evaluation (novelty);
	// RejectedTokens is their share of Tokens.
	Rejected       int `json:"rejected,omitempty"`
	RejectedTokens int `json:"rejected_tokens,omitempty"`
}

// Summarize builds a run's summary from its nodes.
func Summarize(r *Run, nodes []*Node) Summary {
	s := Summary{RunID: r.ID, Problem: r.Problem.Name, Target: r.Problem.Target, Language: r.Problem.Language,
		Policy: r.Policy, Operator: r.Operator, Baseline: r.Baseline, Status: r.Status, StopReason: r.StopReason, ElapsedS: r.ElapsedS}
	g := NewGraph(nodes)
	root := g.Root()
	for _, n := range nodes {
		s.EvalS += n.Cost.EvalS
		s.OperatorS += n.Cost.OperatorS
		s.Tokens += n.Cost.Tokens
		s.Rejected += n.Cost.Rejected
		s.RejectedTokens += n.Cost.RejectedTokens
		switch {
		case n.State == NodeFailed:
			s.Unjudged++
		case !n.State.Finished():
			s.InFlight++
		case n.DuplicateOf != 0:
			s.Duplicates++
		default:
			s.Evaluations++
			if n.Result != nil && n.Result.Verdict == VerdictPass {
				s.Passed++
			} else {
				s.Failed++
			}
		}
	}
	compileS := RunCompileS(nodes)
	if root != nil && root.Result != nil {
		s.Start = summarizeNode(root, root, compileS)
	}
	best := g.Node(r.BestNode)
	if best == nil {
		best = g.Best()
	}
	if best != nil {
		s.Best = summarizeNode(best, root, compileS)
	}
	return s
}

// RunCompileS is the run's torch.compile timing of the reference: the
// earliest node's that has one (the others reuse that measurement). A
// node evaluated while another was measuring it has none of its own, the
// start among them where it left the timing to later evaluations
// (StartEvaluator); the summary puts such a node against the run's.
func RunCompileS(nodes []*Node) float64 {
	first := int64(0)
	var t float64
	for _, n := range nodes {
		if r := n.Result; r != nil && r.CompileS > 0 && (first == 0 || n.ID < first) {
			first, t = n.ID, r.CompileS
		}
	}
	return t
}

func summarizeNode(n, root *Node, compileS float64) *NodeSummary {
	ns := &NodeSummary{ID: n.ID, Notes: n.Notes}
	if r := n.Result; r != nil {
		ns.Verdict, ns.TimeS, ns.SpeedupVsEager, ns.SpeedupVsCompile = r.Verdict, r.TimeS, r.SpeedupVsEager, SpeedupVsCompileOf(r, compileS)
		ns.PctOfSOL, ns.SOLScore, ns.Fitness = r.PctOfSOL, r.SOLScore, r.Fitness
		if root != nil && root.Result != nil && root.Result.TimeS > 0 && r.TimeS > 0 && r.Verdict == VerdictPass {
			ns.SpeedupOverStart = root.Result.TimeS / r.TimeS
		}
	}
	return ns
}

// SpeedupVsCompileOf is r's speedup over torch.compile: its own where it
// has one, else over the run's timing (RunCompileS) for a kernel that
// passed; 0 where neither is known.
func SpeedupVsCompileOf(r *Result, runCompileS float64) float64 {
	if r.SpeedupVsCompile > 0 || runCompileS <= 0 || r.TimeS <= 0 || r.Verdict != VerdictPass {
		return r.SpeedupVsCompile
	}
	return runCompileS / r.TimeS
}
