package optimize

import (
	"context"
	"fmt"
	"os"

	"github.com/kevolve/kevolve-mcp/harness"
	"github.com/kevolve/kevolve-mcp/search"
	"github.com/kevolve/kevolve-mcp/search/deploy"
)

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

// deployBest puts each searched region's best kernel into the registry if
// it beats what it replaces beyond the measurement's spread.
func deployBest(ctx context.Context, st search.Store, reg *deploy.Registry, s *Summary, o Options) error {
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
		n := bestNode(nodes)
		if n == nil {
			s.Rejected = append(s.Rejected, op.Name+": no correct kernel")
			continue
		}
		// The candidate's robust cv, counted for both sides of the ratio.
		spread := 2 * n.Result.CV
		if ok, why := deploy.Deployable(n.Result.SpeedupVsEager, spread); !ok {
			s.Rejected = append(s.Rejected, op.Name+": "+why)
			continue
		}
		r := op.region
		e := deploy.Entry{Op: r.Sig, Shapes: r.Shapes, Dtype: r.Dtype, Init: r.Init, Arch: s.Arch, Device: n.Result.Device,
			Speedup: n.Result.SpeedupVsEager, Spread: spread, PctOfSOL: n.Result.PctOfSOL, Model: s.Model,
			RunID: row.RunID, NodeID: n.ID, Problem: r.File, Source: n.Code}
		if _, err := reg.Put(ctx, e); err != nil {
			return err
		}
	}
	return nil
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
		sigs[r.Sig] = true
		share[deploy.Entry{Op: r.Sig, Shapes: r.Shapes, Dtype: r.Dtype, Init: r.Init, Arch: s.Arch}.Key()] += r.Share
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

// verify exports the model's entries (to o.Export, else a temporary
// folder) and runs the model_verify job on that package: what is verified
// is what ships.
func verify(ctx context.Context, jobs Jobs, reg *deploy.Registry, s *Summary, o Options) error {
	entries, shares, err := forModel(ctx, reg, s)
	if err != nil {
		return err
	}
	var speedups, used []float64
	for i, e := range entries {
		if shares[i] > 0 {
			s.Deployed = append(s.Deployed, e)
			speedups = append(speedups, e.Speedup)
			used = append(used, shares[i])
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
	var e2e EndToEnd
	if err := jobs.ModelJob(ctx, harness.ModelJobRequest{Module: "model_verify", Target: o.Target,
		Args: map[string]any{"model_file": s.Model, "package_dir": dir, "seed": 0, "compile": o.Compile, "cap_s": 5.0}}, &e2e); err != nil {
		return fmt.Errorf("optimize: verify: %w", err)
	}
	e2e.PredictedSpeedup = Predicted(used, speedups)
	e2e.Gap = Gap(e2e.PredictedSpeedup, e2e.SpeedupVsEager)
	if !o.Compile {
		s.Notes = append(s.Notes, "torch.compile baseline not measured (ask with --compile-baseline; on the CPU inductor's C++ build is slow)")
	}
	s.EndToEnd = &e2e
	return nil
}
