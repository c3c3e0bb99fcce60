// Package optimize is the model flow: a whole model in, a faster model out.
// It profiles the model (the worker's model_profile job), ranks its
// operators by the time the whole model would save at their speed of
// light, extracts the hot regions as problems (corpus/extract), searches
// them as one suite weighted by that saving (search/suite), deploys only
// kernels faster than what they replace into the registry (search/deploy),
// and verifies the patched model end to end (the model_verify job) beside
// the speedup Amdahl predicted.
package optimize

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"regexp"
	"time"

	"github.com/kevolve/kevolve-mcp/corpus/extract"
	"github.com/kevolve/kevolve-mcp/harness"
	"github.com/kevolve/kevolve-mcp/harness/sol"
	"github.com/kevolve/kevolve-mcp/harness/target"
	"github.com/kevolve/kevolve-mcp/search"
	"github.com/kevolve/kevolve-mcp/search/deploy"
	"github.com/kevolve/kevolve-mcp/search/engine"
	"github.com/kevolve/kevolve-mcp/search/suite"
)

// Jobs runs the worker's whole-model jobs (harness.Evaluator does).
type Jobs interface {
	ModelJob(ctx context.Context, r harness.ModelJobRequest, out any) error
}

// Options are one optimize job's settings.
type Options struct {
	Model    string // a KernelBench-format model file
	Target   string // cpu or nvidia (resolved by the caller)
	Language string // start kernels' language (c on cpu, cuda on nvidia)
	DataDir  string // extracted problems go under DataDir/extracted
	Export   string // write kevolve_kernels here ("" = only a temporary copy, for verification)
	// MinShare leaves out regions under this share of the model's time
	// (default DefaultMinShare).
	MinShare float64
	// Tuner: the operator is the offline tuner, which can only tune a
	// start kernel: regions without a bundled one are listed, not searched.
	Tuner    bool
	Compile  bool // time torch.compile of the original too
	Ceilings *sol.Ceilings
	SuiteID  string
	Iters    int // profiler iterations (default 10)
	// ReportDir, when set, gets the model's report page (model.html).
	ReportDir string
	// SearchTime bounds the search (0 = its budget alone): deployment and
	// verification still run after it.
	SearchTime time.Duration
	Log        *slog.Logger
}

// Summary is what optimize reports (--json).
type Summary struct {
	Model  string `json:"model"`
	Device string `json:"device"`
	// Target and Language are what the job resolved (auto becomes this
	// host's target) and the language its start kernels are in.
	Target    string         `json:"target,omitempty"`
	Language  string         `json:"language,omitempty"`
	Arch      string         `json:"arch"`
	ForwardUs float64        `json:"forward_us"`
	TimeBasis string         `json:"time_basis"`
	Suite     string         `json:"suite,omitempty"`
	Ops       []Op           `json:"ops"`
	Deployed  []deploy.Entry `json:"deployed"`
	Rejected  []string       `json:"rejected,omitempty"`
	EndToEnd  *EndToEnd      `json:"end_to_end,omitempty"`
	Search    *suite.Report  `json:"search,omitempty"`
	Export    string         `json:"export,omitempty"`
	Report    string         `json:"report,omitempty"`
	Notes     []string       `json:"notes,omitempty"`
	WallS     float64        `json:"wall_s"`
	// Capture is the TorchDynamo capture's account of the forward (graphs,
	// breaks, regions, glue, not captured); nil where it captured nothing.
	// Not in the JSON: the ops carry the glue and what was not captured as
	// rows, the notes the breaks' causes (and the tools' output schemas
	// stay within what an agent reads before its first call).
	Capture *extract.Capture `json:"-"`
	Profile *extract.Profile `json:"-"`
}

var safeID = regexp.MustCompile(`[^a-z0-9-]+`)

// Run is the whole job. runner carries the search (engine, operator, the
// whole job's budget in Budget.Total); its Budget.Weights is set here.
func Run(ctx context.Context, jobs Jobs, db *sql.DB, runner *suite.Runner, o Options) (*Summary, error) {
	t0 := time.Now()
	s, probs, weights, err := profileRanked(ctx, jobs, db, &o, true)
	if err != nil {
		return nil, err
	}
	reg, err := deploy.Open(ctx, db)
	if err != nil {
		return nil, err
	}
	if len(probs) > 0 && runner != nil && runner.Budget.Total > 0 {
		if err := searchAndDeploy(ctx, runner, reg, s, probs, weights, o); err != nil {
			return nil, err
		}
	}
	if err := verify(ctx, jobs, reg, s, o); err != nil {
		return nil, err
	}
	s.WallS = time.Since(t0).Seconds()
	if o.ReportDir != "" {
		if s.Report, err = WriteReport(o.ReportDir, s); err != nil {
			return nil, err
		}
	}
	return s, nil
}

// ProfileModel profiles a model and extracts its regions as problems,
// ranked, without searching (the model_profile tool). Each op's note says
// how a search would start on it.
func ProfileModel(ctx context.Context, jobs Jobs, db *sql.DB, o Options) (*Summary, error) {
	t0 := time.Now()
	s, _, _, err := profileRanked(ctx, jobs, db, &o, false)
	if err != nil {
		return nil, err
	}
	for i := range s.Ops {
		s.Ops[i].Searched = false
	}
	s.WallS = time.Since(t0).Seconds()
	return s, nil
}

// VerifyModel profiles a model (for its regions' shares) and verifies it
// patched with the registry's entries against the original (the
// verify_model tool); with o.Export, the package stays there.
func VerifyModel(ctx context.Context, jobs Jobs, db *sql.DB, o Options) (*Summary, error) {
	t0 := time.Now()
	s, _, _, err := profileRanked(ctx, jobs, db, &o, false)
	if err != nil {
		return nil, err
	}
	reg, err := deploy.Open(ctx, db)
	if err != nil {
		return nil, err
	}
	if err := verify(ctx, jobs, reg, s, o); err != nil {
		return nil, err
	}
	s.WallS = time.Since(t0).Seconds()
	return s, nil
}

// profileRanked profiles, ranks and picks the regions to search; with
// starts, the regions that have no bundled or prior kernel get Inductor
// starts first (a model job on the device: a compile per configuration).
func profileRanked(ctx context.Context, jobs Jobs, db *sql.DB, o *Options, starts bool) (*Summary, []suite.Problem, map[string]float64, error) {
	if o.Log == nil {
		o.Log = slog.New(slog.DiscardHandler)
	}
	if o.MinShare == 0 {
		o.MinShare = DefaultMinShare
	}
	if t, ok := target.Get(target.Name(o.Target)); ok && o.Language == "" {
		o.Language = t.DefaultLanguage() // the one target table's: hip on amd, too
	}
	abs, err := filepath.Abs(o.Model)
	if err != nil {
		return nil, nil, nil, err
	}
	o.Model = abs
	prof, err := profile(ctx, jobs, db, *o)
	if err != nil {
		return nil, nil, nil, err
	}
	s := &Summary{Model: o.Model, Target: o.Target, Language: o.Language, Device: prof.Device, Arch: prof.Arch, ForwardUs: prof.ForwardUs,
		TimeBasis: prof.TimeBasis, Capture: prof.Capture, Profile: prof}
	s.Ops = Rank(prof, o.Ceilings)
	if prof.Note != "" {
		s.Notes = append(s.Notes, prof.Note)
	}
	prior, err := priorKernels(ctx, db, prof.Arch, o.Language)
	if err != nil {
		return nil, nil, nil, err
	}
	if starts {
		if err := inductorStarts(ctx, jobs, s, *o, prior); err != nil {
			return nil, nil, nil, err
		}
	}
	probs, weights := pick(s, *o, prior)
	return s, probs, weights, nil
}

// priorKernels is cross-run memory: for each op, the fastest kernel the
// registry holds on this arch in the job's language (from any model or
// shapes), which a new search of that op starts from.
func priorKernels(ctx context.Context, db *sql.DB, arch, language string) (map[string]deploy.Entry, error) {
	reg, err := deploy.Open(ctx, db)
	if err != nil {
		return nil, err
	}
	es, err := reg.List(ctx, deploy.Filter{Arch: arch})
	if err != nil {
		return nil, err
	}
	out := map[string]deploy.Entry{}
	for _, e := range es {
		if engine.DetectLanguage(e.Source) != language {
			continue
		}
		if old, ok := out[e.Op]; !ok || e.Speedup > old.Speedup {
			out[e.Op] = e
		}
	}
	return out, nil
}

func searchAndDeploy(ctx context.Context, runner *suite.Runner, reg *deploy.Registry, s *Summary, probs []suite.Problem, weights map[string]float64, o Options) error {
	s.Suite = o.SuiteID
	if s.Suite == "" {
		s.Suite = "opt-" + safeID.ReplaceAllString(time.Now().UTC().Format("20060102-150405"), "")
	}
	runner.Budget.Weights = weights
	sctx, cancel := ctx, context.CancelFunc(func() {})
	if o.SearchTime > 0 {
		sctx, cancel = context.WithTimeout(ctx, o.SearchTime)
	}
	rep, err := runner.Run(sctx, s.Suite, probs)
	cancel()
	if rep == nil {
		return fmt.Errorf("optimize: search: %w", err)
	}
	if err != nil && ctx.Err() != nil {
		return fmt.Errorf("optimize: search: %w", err)
	}
	if err != nil && !errors.Is(err, context.DeadlineExceeded) {
		return fmt.Errorf("optimize: search: %w", err)
	}
	s.Search = rep
	return deployBest(ctx, runner.Engine.Store, reg, s)
}

func profile(ctx context.Context, jobs Jobs, db *sql.DB, o Options) (*extract.Profile, error) {
	dir, err := extract.Dir(o.DataDir, o.Model)
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("optimize: %w", err)
	}
	iters := o.Iters
	if iters <= 0 {
		iters = 10
	}
	var p extract.Profile
	if err := jobs.ModelJob(ctx, harness.ModelJobRequest{Module: "model_profile", Target: o.Target,
		Args: map[string]any{"model_file": o.Model, "out_dir": dir, "iters": iters}}, &p); err != nil {
		return nil, fmt.Errorf("optimize: profile: %w", err)
	}
	if err := extract.Store(ctx, db, o.Model, &p); err != nil {
		return nil, err
	}
	return &p, nil
}

// pick chooses the regions to search, most saving first, and their budget
// weights; the ops it leaves out say why.
func pick(s *Summary, o Options, prior map[string]deploy.Entry) ([]suite.Problem, map[string]float64) {
	var probs []suite.Problem
	weights := map[string]float64{}
	for i := range s.Ops {
		op := &s.Ops[i]
		r := op.region
		switch {
		case r == nil:
			continue
		case op.Share < o.MinShare:
			op.Note = fmt.Sprintf("not searched: %.1f%% of the model's time, under %.0f%%", 100*op.Share, 100*o.MinShare)
			continue
		}
		start, from := extract.Start(*r, o.Language), "the bundled "+o.Language+" kernel of "+r.Bundled
		if e, ok := prior[r.RegistryOp()]; ok {
			start, from = e.Source, fmt.Sprintf("registry entry %s (%.2fx on %v)", e.ID, e.Speedup, e.Shapes)
		}
		if start == "" && r.StartFile != "" {
			b, err := os.ReadFile(r.StartFile)
			if err == nil {
				start, from = string(b), "Inductor's own kernels for it (torch.compile's generated code; the tuner picks among its configurations)"
			}
		}
		if start == "" && o.Tuner {
			op.Note = "needs an LLM or agent operator: no bundled " + o.Language + " start kernel for " + r.Sig + " (the tuner only tunes one)"
			if r.StartError != "" {
				op.Note += "; Inductor: " + r.StartError
			}
			continue
		}
		if start == "" {
			b, err := os.ReadFile(r.File)
			if err != nil {
				op.Note = "not searched: " + err.Error()
				continue
			}
			start = modelRe.ReplaceAllString(string(b), "ModelNew")
			op.Note = "starts from its reference; the operator drafts the first kernel"
		} else {
			op.Note = "starts from " + from
		}
		op.Searched = true
		p := search.Problem{Name: r.File, ReferencePath: r.File, Target: o.Target, Language: o.Language, Dtype: r.Dtype, FLOPs: r.FLOPs, Bytes: r.Bytes}
		probs = append(probs, suite.Problem{Problem: p, Start: start})
		weights[p.Name] = max(op.Saving, 1e-3)
	}
	return probs, weights
}

var modelRe = regexp.MustCompile(`\bModel\b`)

// inductorStarts asks the model_starts job for Inductor starts of the
// regions pick would search without a start kernel (over the share
// threshold, no bundled kernel in the job's language, no prior entry):
// each gets StartFile, or StartError saying why Inductor gave none.
func inductorStarts(ctx context.Context, jobs Jobs, s *Summary, o Options, prior map[string]deploy.Entry) error {
	var problems []string
	for _, op := range s.Ops {
		r := op.region
		if r == nil || op.Share < o.MinShare || extract.Start(*r, o.Language) != "" {
			continue
		}
		if _, ok := prior[r.RegistryOp()]; ok {
			continue
		}
		problems = append(problems, r.File)
	}
	if len(problems) == 0 {
		return nil
	}
	var res struct {
		Starts map[string]string `json:"starts"`
		Errors map[string]string `json:"errors"`
		Reused []string          `json:"reused"`
	}
	o.Log.Info("inductor starts", "regions", len(problems))
	if err := jobs.ModelJob(ctx, harness.ModelJobRequest{Module: "model_starts", Target: o.Target, Timeout: 30 * time.Minute,
		Args: map[string]any{"problems": problems, "out_dir": filepath.Dir(problems[0])}}, &res); err != nil {
		return fmt.Errorf("optimize: inductor starts: %w", err)
	}
	if len(res.Reused) > 0 {
		o.Log.Info("inductor starts reused from an earlier run", "regions", len(res.Reused))
	}
	for i := range s.Profile.Regions {
		r := &s.Profile.Regions[i]
		r.StartFile, r.StartError = res.Starts[r.File], res.Errors[r.File]
	}
	return nil
}
