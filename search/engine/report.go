package engine

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/kevolve/kevolve-mcp/harness/sol"
	"github.com/kevolve/kevolve-mcp/harness/spec"
	"github.com/kevolve/kevolve-mcp/search"
	"github.com/kevolve/kevolve-mcp/search/report"
)

// ReportData is everything a run's report is drawn from.
type ReportData struct {
	Run     *search.Run     `json:"run"`
	Summary search.Summary  `json:"summary"`
	Nodes   []*search.Node  `json:"nodes"`
	Events  []*search.Event `json:"events"`
}

// LoadReportData reads a run's report input from the store.
func LoadReportData(ctx context.Context, st search.Store, runID string) (*ReportData, error) {
	run, err := st.Run(ctx, runID)
	if err != nil {
		return nil, err
	}
	nodes, err := st.Nodes(ctx, runID)
	if err != nil {
		return nil, err
	}
	events, err := st.Events(ctx, runID, 0, 100000)
	if err != nil {
		return nil, err
	}
	return &ReportData{Run: run, Summary: search.Summarize(run, nodes), Nodes: nodes, Events: events}, nil
}

// WriteReport writes a run's report into dir: report.html (search/report's
// self-contained page: tree, best-so-far, roofline, per-node code, diff,
// checks, timing and SOL) and report.json (the run, every node and the
// event feed, for scripts). It returns the page's path. ceil (nil = none)
// places the nodes on the roofline.
func WriteReport(ctx context.Context, st search.Store, runID, dir string, ceil *sol.Ceilings) (string, error) {
	data, err := LoadReportData(ctx, st, runID)
	if err != nil {
		return "", err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", fmt.Errorf("report folder: %w", err)
	}
	b, err := json.MarshalIndent(data, "", "  ")
	if err != nil {
		return "", err
	}
	if err := search.WriteFileAtomic(filepath.Join(dir, "report.json"), b, 0o644); err != nil {
		return "", err
	}
	run, nodes, rc := ReportInput(data, ceil)
	if dbs, ok := st.(interface{ DB() *sql.DB }); ok && FleetPanel != nil {
		run.Fleet = FleetPanel(ctx, dbs.DB(), data.Run, data.Nodes)
	}
	path := filepath.Join(dir, "report.html")
	if err := report.WriteFile(path, run, nodes, rc); err != nil {
		return "", fmt.Errorf("report: %w", err)
	}
	return path, nil
}

// ReportInput maps a run onto search/report's input structs.
func ReportInput(d *ReportData, ceil *sol.Ceilings) (report.Run, []report.Node, report.Ceilings) {
	r := d.Run
	dtype := spec.NormalizeDtype(r.Problem.Dtype)
	if dtype == "" {
		dtype = spec.FP32
	}
	out := report.Run{ID: r.ID, Problem: r.Problem.Name, Target: r.Problem.Target + " (" + r.Problem.Language + ")",
		Device: strings.Join(r.Devices, ", "), Policy: r.Policy, Operator: r.Operator, Baseline: r.Baseline, Status: string(r.Status),
		BudgetEvals: r.Budget.Evals, BudgetWall: r.Budget.Time, TokensUsed: int64(d.Summary.Tokens),
		StartedAt: r.CreatedAt, WallS: r.ElapsedS, StopReason: r.StopReason}
	if r.Status != search.RunRunning {
		out.EndedAt = r.UpdatedAt
	}
	if r.BestNode != 0 {
		out.BestNodeID = strconv.FormatInt(r.BestNode, 10)
	}
	var nodes []report.Node
	compileS := search.RunCompileS(d.Nodes)
	for _, n := range d.Nodes {
		rn := report.Node{ID: strconv.FormatInt(n.ID, 10), Code: n.Code, Language: n.Language, Operator: n.Operator,
			CreatedAt: n.CreatedAt, EvalSeq: n.EvalSeq, Island: n.Island, Notes: n.Notes, Diagnosis: n.Diagnosis,
			FLOPs: r.Problem.FLOPs, Bytes: r.Problem.Bytes,
			Cost: report.Cost{EvalS: n.Cost.EvalS, OperatorS: n.Cost.OperatorS, Tokens: int64(n.Cost.Tokens)}}
		for _, p := range n.Parents {
			rn.Parents = append(rn.Parents, strconv.FormatInt(p, 10))
		}
		if n.State.Finished() {
			rn.FinishedAt = n.UpdatedAt
		}
		if n.State == search.NodeFailed {
			rn.Verdict, rn.Message = "failed", n.Error
		}
		if res := n.Result; res != nil {
			rn.Verdict, rn.Fitness = res.Verdict, res.Fitness
			if n.DuplicateOf != 0 {
				rn.Message = fmt.Sprintf("same code as node %d: answered from the store", n.DuplicateOf)
			} else if fc := res.FailedChecks(); len(fc) > 0 {
				rn.Message = fc[0].Name + ": " + fc[0].Detail
			}
			for _, c := range res.Checks {
				rn.Checks = append(rn.Checks, report.Check{Name: c.Name, Passed: c.Passed, Detail: c.Detail})
			}
			if res.TimeS > 0 {
				rn.Timing = reportTiming(res)
			}
			rn.SpeedupEager, rn.SpeedupCompile = pos(res.SpeedupVsEager), pos(search.SpeedupVsCompileOf(res, compileS))
			rn.TSolS = pos(res.SOLSeconds)
			if res.SOLSeconds > 0 && res.TimeS > 0 {
				rn.SolScore, rn.PctOfSol = ptr(res.SOLScore), pos(res.PctOfSOL)
			}
			if res.SOLSeconds > 0 && out.TSolS == nil {
				out.TSolS = ptr(res.SOLSeconds)
			}
		}
		nodes = append(nodes, rn)
	}
	var rc report.Ceilings
	if ceil != nil {
		rc = report.CeilingsFromSol(*ceil, dtype)
	}
	return out, nodes, rc
}

// reportTiming takes the candidate's statistics from the harness's own result
// where it kept them, else the median alone.
func reportTiming(res *search.Result) *report.Timing {
	t := &report.Timing{MedianS: res.TimeS, CV: res.CV}
	var raw struct {
		Candidate *struct {
			P10S  float64 `json:"p10_s"`
			P90S  float64 `json:"p90_s"`
			Iters int     `json:"iters"`
		} `json:"candidate"`
	}
	if len(res.Raw) > 0 && json.Unmarshal(res.Raw, &raw) == nil && raw.Candidate != nil {
		t.P10S, t.P90S, t.Iters = raw.Candidate.P10S, raw.Candidate.P90S, raw.Candidate.Iters
	}
	return t
}

func ptr(v float64) *float64 { return &v }

func pos(v float64) *float64 {
	if v > 0 {
		return &v
	}
	return nil
}

// FleetPanel gives the report's fleet panel of a run a fleet evaluated
// (nil otherwise). search/fleet sets it, so that the engine does not
// depend on the fleet; a nil hook draws no panel.
var FleetPanel func(ctx context.Context, db *sql.DB, run *search.Run, nodes []*search.Node) *report.Fleet
