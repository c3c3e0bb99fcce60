package optimize

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"math"
	"os"

	"github.com/kevolve/kevolve-mcp/corpus/extract"
	"github.com/kevolve/kevolve-mcp/harness"
	"github.com/kevolve/kevolve-mcp/search"
	"github.com/kevolve/kevolve-mcp/search/deploy"
)

// NothingDeployed is the summary's note where no kernel serves the model:
// it has no end-to-end check and no speedup.
const NothingDeployed = "nothing deployed: no kernel in the registry serves this model's regions, so the model runs unchanged and no end-to-end speedup is reported"

// EndToEnd is the patched model against the original.
type EndToEnd struct {
	Correct          bool    `json:"correct"`
	Detail           string  `json:"detail,omitempty"`
	SpeedupVsEager   float64 `json:"speedup_vs_eager"`
	SpeedupVsCompile float64 `json:"speedup_vs_compile"`
	PredictedSpeedup float64 `json:"predicted_speedup"`
	Gap              string  `json:"gap,omitempty"`
	EagerS           float64 `json:"eager_s,omitempty"`
	PatchedS         float64 `json:"patched_s,omitempty"`
	CompileS         float64 `json:"compile_s,omitempty"`
	CompileError     string  `json:"compile_error,omitempty"`
	CV               float64 `json:"cv,omitempty"`
	EagerCV          float64 `json:"eager_cv,omitempty"`
	// Stats counts, per patched region, the calls its kernel served and
	// the calls that fell back to the original operators.
	Stats []map[string]any `json:"stats,omitempty"`
	// Engaged is how many times each entry's kernel ran in one patched
	// forward under the profiler; PatchedCompileS the patched model with
	// torch.compile around its kernels.
	Engaged         map[string]int `json:"engaged,omitempty"`
	PatchedCompileS float64        `json:"patched_compile_s,omitempty"`
	// AutotuneS is torch.compile's max-autotune-no-cudagraphs (GPU);
	// SpeedupVsCompile is against the faster of the two modes, and
	// CompileError names each of the three that failed.
	AutotuneS float64 `json:"autotune_s,omitempty"`
}

// bestNode is a run's fastest passing node against eager.
func bestNode(nodes []*search.Node) *search.Node {
	var best *search.Node
	for _, n := range nodes {
		if n.Result == nil || n.Result.Verdict != search.VerdictPass || n.DuplicateOf != 0 {
			continue
		}
		if best == nil || n.Result.SpeedupVsEager > best.Result.SpeedupVsEager {
			best = n
		}
	}
	return best
}

// Spread is the relative spread of a measured speedup (a ratio of two
// medians): twice the combined standard error of the two medians, each
// 1.2533·cv/sqrt(iterations) (cv the robust one). Without the harness's
// raw timings, twice the candidate's cv.
func Spread(r *search.Result) float64 {
	var raw struct {
		Candidate *harness.Stats `json:"candidate"`
		RefEager  *harness.Stats `json:"ref_eager"`
	}
	if json.Unmarshal(r.Raw, &raw) != nil || raw.Candidate == nil || raw.RefEager == nil || raw.Candidate.Iters == 0 || raw.RefEager.Iters == 0 {
		return 2 * r.CV
	}
	se := func(s *harness.Stats) float64 { return 1.2533 * s.CV / math.Sqrt(float64(s.Iters)) }
	return 2 * math.Hypot(se(raw.Candidate), se(raw.RefEager))
}

// deployBest puts each searched region's best kernel into the registry if
// it beats what it replaces beyond the measurement's spread.
func deployBest(ctx context.Context, st search.Store, reg *deploy.Registry, s *Summary) error {
	byFile := map[string]*Op{}
	for i := range s.Ops {
		if s.Ops[i].region != nil {
			byFile[s.Ops[i].region.File] = &s.Ops[i]
		}
	}
	for _, row := range s.Search.Rows {
		op := byFile[row.Name]
		if op == nil {
			continue
		}
		nodes, err := st.Nodes(ctx, row.RunID)
		if err != nil {
			return fmt.Errorf("optimize: %s: %w", row.RunID, err)
		}
		if _, why, err := deployNodes(ctx, reg, *op.region, s.Arch, s.Model, row.RunID, nodes); err != nil {
			return err
		} else if why != "" {
			s.Rejected = append(s.Rejected, op.Name+": "+why)
		}
	}
	return nil
}

// deployNodes puts a run's best node into the registry for a region if it
// is faster than what it replaces beyond the measurement's spread; why says
// why not otherwise.
func deployNodes(ctx context.Context, reg *deploy.Registry, r extract.Region, arch, model, runID string, nodes []*search.Node) (*deploy.Entry, string, error) {
	n := bestNode(nodes)
	if n == nil {
		return nil, "no correct kernel", nil
	}
	spread := Spread(n.Result)
	if ok, why := deploy.Deployable(n.Result.SpeedupVsEager, spread); !ok {
		return nil, why, nil
	}
	e := deploy.Entry{Op: r.RegistryOp(), Shapes: r.Shapes, Dtype: r.Dtype, Init: r.Init, Arch: arch, Device: n.Result.Device,
		Speedup: n.Result.SpeedupVsEager, Spread: spread, PctOfSOL: n.Result.PctOfSOL, Model: model,
		RunID: runID, NodeID: n.ID, Problem: r.File, Source: n.Code}
	stored, err := reg.Put(ctx, e)
	if err != nil {
		return nil, "", err
	}
	if !stored {
		return nil, "the registry holds a faster kernel for the same op, shapes, dtype and arch", nil
	}
	e.ID = e.Key()
	return &e, "", nil
}

// DeployRun puts a run's best kernel into the registry (the deploy tool):
// the run must search a problem an optimize job extracted, whose region
// gives the entry's guard (op, shapes, dtype, constants, arch).
func DeployRun(ctx context.Context, db *sql.DB, st search.Store, runID string) (*deploy.Entry, string, error) {
	run, err := st.Run(ctx, runID)
	if err != nil {
		return nil, "", err
	}
	r, arch, err := extract.ByPath(ctx, db, run.Problem.ReferencePath)
	if err != nil {
		return nil, "", err
	}
	nodes, err := st.Nodes(ctx, runID)
	if err != nil {
		return nil, "", err
	}
	reg, err := deploy.Open(ctx, db)
	if err != nil {
		return nil, "", err
	}
	model, _ := extract.Model(ctx, db, r.File)
	return deployNodes(ctx, reg, r, arch, model, runID, nodes)
}

// forModel are the registry's entries a model's regions can use on arch,
// each beside the share of the region it serves (0 when it serves none of
// this model's exact shapes: the guard will fall back there).
func forModel(ctx context.Context, reg *deploy.Registry, s *Summary) ([]deploy.Entry, []float64, error) {
	all, err := reg.List(ctx, deploy.Filter{Arch: s.Arch})
	if err != nil {
		return nil, nil, err
	}
	share := map[string]float64{}
	sigs := map[string]bool{}
	for _, r := range s.Profile.Regions {
		sigs[r.RegistryOp()] = true
		share[deploy.Entry{Op: r.RegistryOp(), Shapes: r.Shapes, Dtype: r.Dtype, Init: r.Init, Arch: s.Arch}.Key()] += r.Share
	}
	var out []deploy.Entry
	var shares []float64
	for _, e := range all {
		if sigs[e.Op] {
			out = append(out, e)
			shares = append(shares, share[e.ID])
		}
	}
	return out, shares, nil
}

// keepEngaged moves the deployed entries whose kernels never ran in the
// verified forward to Rejected (a region whose kernel never ran is not
// deployed) and returns the shares and speedups of those that ran, for
// the prediction.
func (s *Summary) keepEngaged(engaged map[string]int, entries []deploy.Entry, shares []float64) (used, speedups []float64) {
	share := map[string]float64{}
	for i, e := range entries {
		share[e.ID] = shares[i]
	}
	kept := s.Deployed[:0]
	for _, e := range s.Deployed {
		if engaged[e.ID] == 0 {
			s.Rejected = append(s.Rejected, fmt.Sprintf("%s %v: never ran in the patched model's profiled forward (engagement check)", e.Op, e.Shapes))
			continue
		}
		kept = append(kept, e)
		used = append(used, share[e.ID])
		speedups = append(speedups, e.Speedup)
	}
	s.Deployed = kept
	return used, speedups
}

// verify exports the model's entries (to o.Export, else a temporary
// folder) and runs the model_verify job on that package: what is verified
// is what ships.
func verify(ctx context.Context, jobs Jobs, reg *deploy.Registry, s *Summary, o Options) error {
	entries, shares, err := forModel(ctx, reg, s)
	if err != nil {
		return err
	}
	for i, e := range entries {
		if shares[i] > 0 {
			s.Deployed = append(s.Deployed, e)
		}
	}
	for i := range s.Deployed {
		s.Deployed[i].Source = ""
	}
	dir := o.Export
	if dir == "" {
		tmp, err := os.MkdirTemp("", "kevolve-verify-")
		if err != nil {
			return fmt.Errorf("optimize: %w", err)
		}
		defer os.RemoveAll(tmp)
		dir = tmp
	} else {
		s.Export = dir
	}
	if _, err := deploy.Export(dir, entries); err != nil {
		return err
	}
	if len(s.Deployed) == 0 {
		// The model runs as it was: timing it against itself measures only
		// noise (an unchanged model read 1.10x on a CPU), so no figure.
		s.Notes = append(s.Notes, NothingDeployed)
		return nil
	}
	var e2e EndToEnd
	if err := jobs.ModelJob(ctx, harness.ModelJobRequest{Module: "model_verify", Target: o.Target,
		Args: map[string]any{"model_file": s.Model, "package_dir": dir, "seed": 0, "compile": o.Compile, "cap_s": 5.0}}, &e2e); err != nil {
		return fmt.Errorf("optimize: verify: %w", err)
	}
	if !e2e.Correct {
		// A wrong patched model is the finding, whatever ran.
		s.EndToEnd = &e2e
		return nil
	}
	used, speedups := s.keepEngaged(e2e.Engaged, entries, shares)
	if len(s.Deployed) == 0 {
		s.Notes = append(s.Notes, NothingDeployed, "the registry's kernels for this model never ran in its patched forward (engagement check)")
		return nil
	}
	e2e.PredictedSpeedup = Predicted(used, speedups)
	e2e.Gap = Gap(e2e.PredictedSpeedup, e2e.SpeedupVsEager)
	if !o.Compile {
		s.Notes = append(s.Notes, "torch.compile baseline not measured (ask with --compile-baseline; on the CPU inductor's C++ build is slow)")
	}
	s.EndToEnd = &e2e
	return nil
}
