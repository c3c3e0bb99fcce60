package report

import (
	"math"
	"time"

	"github.com/kevolve/kevolve-mcp/harness/sol"
)

// Run is one search run, as the report shows it. See the package doc for
// what each field means and what an empty one does.
type Run struct {
	ID       string
	Problem  string
	Target   string // e.g. "cuda:sm_90"
	Device   string // e.g. "NVIDIA H100 80GB HBM3"
	Policy   string
	Operator string
	Baseline string // what fitness is a speedup over: "eager" | "compile"
	Status   string // running | done | stopped | failed ...

	BudgetEvals int           // 0 = unlimited
	BudgetWall  time.Duration // 0 = unlimited
	TokensUsed  int64

	StartedAt  time.Time
	EndedAt    time.Time // zero while running
	WallS      float64   // time spent running (a resumed run's pauses excluded); 0 = EndedAt-StartedAt
	StopReason string    // why the run ended: budget, plateau, within ε of SOL ...

	TSolS      *float64 // the problem's speed of light, seconds
	BestNodeID string   // "" = the highest-fitness pass node

	Fleet *Fleet // the fleet panel; nil when the run used no fleet
}

// Node is one kernel of the run's graph.
type Node struct {
	ID       string
	Parents  []string // first = tree parent and diff base
	Code     string
	Language string // python | triton | cuda | c ...
	Operator string // what produced it: tuner, claude, mcp, start ...

	CreatedAt  time.Time
	FinishedAt time.Time // zero while pending
	EvalSeq    int       // 1-based place among the run's evaluations; 0 = order by FinishedAt
	Island     int       // the evolve policy's island (shown when any node has one > 0)

	Verdict string  // "" = pending
	Message string  // the evaluation's error or summary line, if any
	Checks  []Check // correctness and integrity checks, in order
	Timing  *Timing

	SpeedupEager   *float64
	SpeedupCompile *float64
	SpeedupStart   *float64
	Fitness        float64

	TSolS    *float64
	SolScore *float64 // 0..1 (0.5 = eager, 1 = speed of light)
	PctOfSol *float64 // 0..100
	FLOPs    float64
	Bytes    float64

	Notes     string
	Diagnosis string // the profile's diagnosis, when one was taken
	Cost      Cost
}

// Check is one named check of an evaluation.
type Check struct {
	Name   string
	Passed bool
	Detail string
}

// Timing is the candidate's measured time per call, in seconds.
type Timing struct {
	MedianS float64
	P10S    float64
	P90S    float64
	CV      float64 // coefficient of variation
	Iters   int     // 0 = unknown
}

// Cost is what producing and evaluating a node took.
type Cost struct {
	EvalS     float64
	OperatorS float64
	Tokens    int64
}

// Ceilings are the device's rates for the roofline.
type Ceilings struct {
	PeakFLOPS    map[string]float64 // by dtype key: fp32, bf16, fp16 ...
	MemBandwidth float64            // bytes/s
	Dtype        string             // which PeakFLOPS entry is the roof
	Source       string             // measured | spec:<key> ...
}

// CeilingsFromSol takes the harness's ceilings and the problem's dtype.
func CeilingsFromSol(c sol.Ceilings, dtype string) Ceilings {
	return Ceilings{PeakFLOPS: c.PeakFLOPS, MemBandwidth: c.MemBandwidth, Dtype: dtype, Source: c.Source}
}

// Peak is the compute roof for the chosen dtype, 0 when unknown.
func (c Ceilings) Peak() float64 { return c.PeakFLOPS[c.Dtype] }

// sanitize drops figures that are not finite (NaN, ±Inf): they are unknown,
// and the report shows unknown as "–" rather than "NaN×". The caller's
// values are not modified.
func sanitize(n Node) Node {
	fin := func(v *float64) *float64 {
		if v == nil || math.IsNaN(*v) || math.IsInf(*v, 0) {
			return nil
		}
		c := *v
		return &c
	}
	num := func(v float64) float64 {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return 0
		}
		return v
	}
	n.SpeedupEager, n.SpeedupCompile, n.SpeedupStart = fin(n.SpeedupEager), fin(n.SpeedupCompile), fin(n.SpeedupStart)
	n.TSolS, n.SolScore, n.PctOfSol = fin(n.TSolS), fin(n.SolScore), fin(n.PctOfSol)
	n.Fitness, n.FLOPs, n.Bytes = num(n.Fitness), num(n.FLOPs), num(n.Bytes)
	n.Cost.EvalS, n.Cost.OperatorS = num(n.Cost.EvalS), num(n.Cost.OperatorS)
	if t := n.Timing; t != nil {
		n.Timing = &Timing{MedianS: num(t.MedianS), P10S: num(t.P10S), P90S: num(t.P90S), CV: num(t.CV), Iters: t.Iters}
	}
	n.Parents = append([]string(nil), n.Parents...)
	return n
}
