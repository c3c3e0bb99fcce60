package tools

import (
	"context"
	"database/sql"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/mark3labs/mcp-go/server"

	"github.com/kevolve/kevolve-mcp/harness"
	"github.com/kevolve/kevolve-mcp/harness/toolchain/toolchaintest"
	"github.com/kevolve/kevolve-mcp/search"
	"github.com/kevolve/kevolve-mcp/search/engine"
	"github.com/kevolve/kevolve-mcp/search/harnesseval"
	"github.com/kevolve/kevolve-mcp/search/operator/tuner"
	"github.com/kevolve/kevolve-mcp/search/optimize"
	"github.com/kevolve/kevolve-mcp/search/store"
	"github.com/kevolve/kevolve-mcp/tools/toolstest"
)

// TestModelTools drives the model flow as an agent would: model_profile
// extracts the regions, a tuner run searches the norm's problem from the
// start kernel the profile named, deploy puts its best into the registry
// (or says why not), and verify_model checks the patched model end to end.
// Without a service, every model tool is a tool error that says what is
// missing.
func TestModelTools(t *testing.T) {
	py := toolchaintest.Python(t)
	ev, err := harness.NewEvaluator(harness.EvalConfig{Python: py, CacheDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ev.Close() })
	dir := t.TempDir()
	db, err := sql.Open("sqlite3", "file:"+filepath.Join(dir, "k.db")+"?_busy_timeout=5000&_journal_mode=WAL")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	ctx := context.Background()
	st, err := store.New(ctx, db)
	if err != nil {
		t.Fatal(err)
	}
	svc := &optimize.Service{Jobs: ev, DB: db, Store: st, DataDir: dir}
	s := server.NewMCPServer("t", "0", server.WithToolCapabilities(false), server.WithInputSchemaValidation())
	s.AddTools(ModelProfile(svc), Deploy(svc), VerifyModel(svc))
	c := toolstest.Connect(t, s)
	model, _ := filepath.Abs("../search/optimize/testdata/swiglu_mlp.py")

	var prof optimize.Summary
	toolstest.Decode(t, toolstest.Call(t, c, "model_profile", map[string]any{"model": model, "target": "cpu"}), &prof)
	var norm *optimize.Op
	for i := range prof.Ops {
		if prof.Ops[i].Sig == "rmsnorm" {
			norm = &prof.Ops[i]
		}
	}
	if norm == nil || norm.Problem == "" || norm.Bundled != "llm/rmsnorm" {
		t.Fatalf("model_profile: no rmsnorm region with a problem: %+v", prof.Ops)
	}

	// The agent's search, here the tuner from the bundled start kernel.
	p, start, err := engine.ResolveProblem(ctx, nil, engine.ProblemSpec{Name: "llm/rmsnorm", Target: "cpu", CorpusRoot: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	p = search.Problem{Name: norm.Problem, ReferencePath: norm.Problem, Target: "cpu", Language: p.Language}
	eng := &engine.Engine{Store: st, Eval: &harnesseval.Adapter{Ev: ev, Trials: 1}, Operator: tuner.New()}
	run, err := eng.Create(ctx, engine.StartOptions{Problem: p, StartCode: start, Budget: search.Budget{Evals: 2}, Devices: []string{"cpu"}})
	if err != nil {
		t.Fatal(err)
	}
	if err := eng.Drive(ctx, run.ID); err != nil {
		t.Fatal(err)
	}
	var dep DeployOutput
	toolstest.Decode(t, toolstest.Call(t, c, "deploy", map[string]any{"run_id": run.ID}), &dep)
	if dep.Deployed == (dep.Why != "") || (dep.Deployed && (dep.Entry.Op != "rmsnorm" || dep.Entry.Source != "")) {
		t.Fatalf("deploy: %+v", dep)
	}
	t.Logf("deploy: %+v", dep)

	var ver optimize.Summary
	toolstest.Decode(t, toolstest.Call(t, c, "verify_model", map[string]any{"model": model, "target": "cpu"}), &ver)
	if dep.Deployed && (ver.EndToEnd == nil || !ver.EndToEnd.Correct || len(ver.Deployed) != 1) ||
		!dep.Deployed && (ver.EndToEnd != nil || !slices.Contains(ver.Notes, optimize.NothingDeployed)) {
		t.Fatalf("verify_model: %+v %+v", ver.EndToEnd, ver.Deployed)
	}

	// A run that searched no extracted problem cannot be deployed.
	if res := toolstest.Call(t, c, "deploy", map[string]any{"run_id": "no-such-run"}); !res.IsError {
		t.Errorf("deploy of an unknown run: %s", toolstest.Text(res))
	}
	bare := server.NewMCPServer("t", "0", server.WithToolCapabilities(false), server.WithInputSchemaValidation())
	bare.AddTools(ModelProfile(nil), Deploy(nil), VerifyModel(nil))
	bc := toolstest.Connect(t, bare)
	for tool, args := range map[string]map[string]any{"model_profile": {"model": model}, "deploy": {"run_id": "x"}, "verify_model": {"model": model}} {
		if res := toolstest.Call(t, bc, tool, args); !res.IsError || !strings.Contains(toolstest.Text(res), "worker and the database") {
			t.Errorf("%s without a service: %s", tool, toolstest.Text(res))
		}
	}
}
