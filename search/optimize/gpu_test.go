package optimize

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/kevolve/kevolve-mcp/search"
	"github.com/kevolve/kevolve-mcp/search/engine"
	"github.com/kevolve/kevolve-mcp/search/harnesseval/harnessevaltest"
	"github.com/kevolve/kevolve-mcp/search/operator/cmdop"
	"github.com/kevolve/kevolve-mcp/search/operator/tuner"
	"github.com/kevolve/kevolve-mcp/search/store"
	"github.com/kevolve/kevolve-mcp/search/suite"
)

// defaultGPUModels are found by number, so KernelBench's renames between
// commits do not break the list: three level-3 models and one level-2
// problem.
const defaultGPUModels = "level3/1_,level3/2_,level3/44_,level2/76_"

// TestGPUOptimizeKernelBench is issue 23's GPU acceptance run: optimize on
// KernelBench models (KEVOLVE_KB_DIR, a copy made by
// harness/testdata/kernelbench/prepare.sh; KEVOLVE_OPT_MODELS overrides
// the list, as level/number-prefix entries), with the tuner and with the
// scripted cmd: agent, each model's job with its own budget
// (KEVOLVE_OPT_BUDGET, default 12). It prints each model's ranked ops,
// deployed entries, predicted beside measured end-to-end speedup and the
// job's wall time; KEVOLVE_OPT_OUT writes them as JSON. KEVOLVE_OPT_OPS
// ("tuner", "cmd") picks the operators.
func TestGPUOptimizeKernelBench(t *testing.T) {
	kb := os.Getenv("KEVOLVE_KB_DIR")
	if kb == "" && os.Getenv("KEVOLVE_GPU") == "1" {
		t.Skip("needs KEVOLVE_KB_DIR (a KernelBench copy made by harness/testdata/kernelbench/prepare.sh)")
	}
	ad, rep := harnessevaltest.GPU(t)
	models := gpuModels(t, kb)
	budget := 12
	fmt.Sscanf(os.Getenv("KEVOLVE_OPT_BUDGET"), "%d", &budget)
	ctx := context.Background()
	dir := t.TempDir()
	db, err := sql.Open("sqlite3", "file:"+filepath.Join(dir, "k.db")+"?_busy_timeout=5000&_journal_mode=WAL")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	st, err := store.New(ctx, db)
	if err != nil {
		t.Fatal(err)
	}
	var devices []string
	for _, g := range rep.GPUs {
		devices = append(devices, g.Name)
	}
	agent, _ := filepath.Abs("../operator/cmdop/testdata/agents/tunables_agent.py")
	scripted, err := cmdop.New("cmd:"+agent, cmdop.Config{Deadline: time.Minute, WorkRoot: t.TempDir(), Server: []string{"/bin/false"}})
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]any{"device": rep.GPUs}
	only := os.Getenv("KEVOLVE_OPT_OPS")
	for _, op := range []search.Operator{tuner.New(), scripted} {
		name := strings.SplitN(op.Name(), ":", 2)[0]
		if only != "" && !strings.Contains(only, name) {
			continue
		}
		for _, m := range models {
			r := &suite.Runner{Engine: &engine.Engine{Store: st, Eval: ad, Operator: op}, Devices: devices, Seed: 7,
				Budget: suite.Budgeter{Total: budget, Chunk: 3, Epsilon: 0.1, Plateau: 6}}
			s, err := Run(ctx, ad.Ev, db, r, Options{Model: m, Target: "nvidia", Language: "cuda", DataDir: dir, Tuner: name == "tuner",
				Compile: true, Ceilings: ad.Ceilings, SuiteID: "gpu-" + name + "-" + strings.TrimSuffix(filepath.Base(m), ".py")})
			if err != nil {
				t.Errorf("%s with %s: %v", filepath.Base(m), name, err)
				continue
			}
			logGPU(t, name, s)
			out[name+":"+filepath.Base(m)] = s
			if s.EndToEnd == nil || !s.EndToEnd.Correct {
				t.Errorf("%s with %s: end to end not correct: %+v", filepath.Base(m), name, s.EndToEnd)
			}
			if p := os.Getenv("KEVOLVE_OPT_OUT"); p != "" {
				js, _ := json.MarshalIndent(out, "", "  ")
				if err := os.WriteFile(p, js, 0o644); err != nil {
					t.Errorf("write %s: %v", p, err)
				}
			}
		}
	}
}

func gpuModels(t *testing.T, kb string) []string {
	t.Helper()
	spec := os.Getenv("KEVOLVE_OPT_MODELS")
	if spec == "" {
		spec = defaultGPUModels
	}
	var out []string
	for _, s := range strings.Split(spec, ",") {
		m, _ := filepath.Glob(filepath.Join(kb, "KernelBench", strings.TrimSpace(s)+"*.py"))
		if len(m) == 0 {
			t.Errorf("no KernelBench model %s under %s", s, kb)
			continue
		}
		out = append(out, m[0])
	}
	return out
}

func logGPU(t *testing.T, op string, s *Summary) {
	t.Helper()
	var b strings.Builder
	fmt.Fprintf(&b, "== %s with %s on %s (%s): forward %.0f us, job %.0f s\n", filepath.Base(s.Model), op, s.Device, s.Arch, s.ForwardUs, s.WallS)
	for i, o := range s.Ops {
		if i < 8 {
			fmt.Fprintf(&b, "  %-40s share %5.1f%%  headroom %6.1fx  saving %5.1f%%  %s\n", o.Name, 100*o.Share, o.Headroom, 100*o.Saving, o.Note)
		}
	}
	for _, d := range s.Deployed {
		fmt.Fprintf(&b, "  deployed %s %v %s: %.2fx\n", d.Op, d.Shapes, d.Arch, d.Speedup)
	}
	if e := s.EndToEnd; e != nil {
		fmt.Fprintf(&b, "  end to end: correct %v, measured %.3fx vs eager, %.3fx vs compile, predicted %.3fx %s\n",
			e.Correct, e.SpeedupVsEager, e.SpeedupVsCompile, e.PredictedSpeedup, e.CompileError)
	}
	fmt.Print(b.String())
}
