package runs

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/kevolve/kevolve-mcp/retrieval"
	"github.com/kevolve/kevolve-mcp/search"
	"github.com/kevolve/kevolve-mcp/search/brief"
	"github.com/kevolve/kevolve-mcp/search/engine"
	"github.com/kevolve/kevolve-mcp/search/launch"
	"github.com/kevolve/kevolve-mcp/search/operator/operatortest"
)

// TestLaunchParity: the same search asked for on the command line (a
// launch request, as `evolve` builds it from its flags) and over MCP (the
// evolve tool's start request) stores the same run configuration and gives
// the operator the same context, for every operator kind.
func TestLaunchParity(t *testing.T) {
	for _, op := range operatortest.Kinds(t) {
		t.Run(op, func(t *testing.T) {
			f := newFixture(t, 0)
			kb := knowledgeIndex(t, f)
			l := &launch.Launcher{Store: f.st, KnowledgeDir: filepath.Join(f.work, "knowledge"), Server: []string{"kevolve-mcp", "--stdio"},
				Evaluator: func(context.Context) (search.Evaluator, error) { return f.ev, nil },
				Knowledge: func(context.Context) (*retrieval.Index, error) { return kb, nil },
				ResolveTarget: func(_ context.Context, s string) (string, error) {
					if s == "" || s == "auto" {
						return "cpu", nil
					}
					return s, nil
				},
				Resolve: func(_ context.Context, s engine.ProblemSpec) (search.Problem, string, error) {
					return search.Problem{Name: s.Name, ReferencePath: f.ref, Target: s.Target, Language: "c"}, kernel(1), nil
				},
				Devices: func(context.Context, string) []string { return []string{"cpu0"} }}
			m, err := New(Options{Store: f.st, WorkDir: f.work, Launch: l})
			if err != nil {
				t.Fatal(err)
			}
			defer m.Close()
			ctx := context.Background()
			budget := search.Budget{Evals: 1}
			cli := launch.Request{Spec: engine.ProblemSpec{Name: "test/speed", Target: "auto"}, Operator: op,
				Start: engine.StartOptions{Policy: "evolve", Baseline: "eager", Budget: budget, Seed: 7}}
			cli.Start.Config.Policy.Draft = launch.DraftUnset
			mcp := StartRequest{Problem: "test/speed", Target: "auto", Policy: "evolve", Baseline: "eager", Operator: op,
				Budget: budget, Seed: 7, Draft: launch.DraftUnset}

			pc, err := l.Prepare(ctx, cli)
			if err != nil {
				t.Fatal(err)
			}
			spec, err := m.spec(ctx, mcp)
			if err != nil {
				t.Fatal(err)
			}
			pm, err := m.launcher().Prepare(ctx, m.request(mcp, spec))
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(pc.OperatorEnv, pm.OperatorEnv) {
				t.Errorf("operator context differs:\nCLI %+v\nMCP %+v", pc.OperatorEnv, pm.OperatorEnv)
			}
			if op != "tuner" && (pc.OperatorEnv == nil || pc.OperatorEnv.Context.Retriever != brief.Retriever(kb) || pc.OperatorEnv.Context.Device.Name != "cpu") {
				t.Errorf("%s got no knowledge or device in its context: %+v", op, pc.OperatorEnv)
			}

			cliRun, err := pc.Create(ctx, pc.Engine(nil, 1, nil))
			if err != nil {
				t.Fatal(err)
			}
			mcpRun, err := m.Start(ctx, mcp)
			if err != nil {
				t.Fatal(err)
			}
			got, want := runConfig(t, f, mcpRun.ID), runConfig(t, f, cliRun.ID)
			if !reflect.DeepEqual(got, want) {
				t.Errorf("stored run configuration differs:\nMCP %+v\nCLI %+v", got, want)
			}
			var cfg engine.Config
			if err := json.Unmarshal(got.Config, &cfg); err != nil || cfg.Policy.Draft != 4 {
				t.Errorf("evolve's draft default = %d (%v), want 4 (one per default island)", cfg.Policy.Draft, err)
			}
		})
	}
}

// runConfig is what a run was asked to do, without what its drive wrote.
func runConfig(t *testing.T, f *fixture, id string) search.Run {
	t.Helper()
	r, err := f.st.Run(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	return search.Run{Problem: r.Problem, Policy: r.Policy, Operator: r.Operator, Baseline: r.Baseline,
		Budget: r.Budget, Config: r.Config, Seed: r.Seed, Devices: r.Devices}
}

// knowledgeIndex is a real knowledge index (one document, no embedder)
// the parity test can recognize in an operator's context.
func knowledgeIndex(t *testing.T, f *fixture) *retrieval.Index {
	t.Helper()
	dir := filepath.Join(f.work, "kb")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "softmax.md"), []byte("# Softmax\nSubtract the row max first.\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	ix, err := retrieval.OpenSources(context.Background(), f.st.DB(), nil, retrieval.DirSource(dir))
	if err != nil {
		t.Fatal(err)
	}
	return ix
}
