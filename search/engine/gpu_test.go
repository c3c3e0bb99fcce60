package engine

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"text/tabwriter"
	"time"

	"github.com/kevolve/kevolve-mcp/search"
	"github.com/kevolve/kevolve-mcp/search/harnesseval/harnessevaltest"
)

// defaultGPUSuite is the tuner acceptance suite: twelve problems, CUDA and
// Triton starts, each with TUNABLES.
const defaultGPUSuite = "cuda:llm/rmsnorm,cuda:llm/layernorm,cuda:llm/softmax,cuda:llm/cross_entropy,cuda:other/relu," +
	"cuda:llm/swiglu,cuda:llm/rope,cuda:other/sum_reduction,cuda:rec/embedding_bag_sum,cuda:other/argmax,cuda:other/matmul_fp32," +
	"triton:llm/rmsnorm,triton:llm/softmax,triton:other/relu"

func envInt(name string, def int) int {
	if v, err := strconv.Atoi(os.Getenv(name)); err == nil && v > 0 {
		return v
	}
	return def
}

func envFloat(name string, def float64) float64 {
	if v, err := strconv.ParseFloat(os.Getenv(name), 64); err == nil && v > 0 {
		return v
	}
	return def
}

// TestGPUTunerSuite runs the tuner (greedy, no LLM) on the suite's
// problems on the GPU and prints, per problem: start, best, speedup over
// the start, over eager, over torch.compile and % of SOL, then the geomean
// of best over start. KEVOLVE_GPU=1 turns it on; KEVOLVE_GPU_SUITE (kind:problem,...),
// KEVOLVE_GPU_EVALS (default 40 per problem) and KEVOLVE_GPU_MINUTES (default 8.5,
// shared out over the problems) tune it; KEVOLVE_GPU_OUT names a JSON file for the table.
func TestGPUTunerSuite(t *testing.T) {
	ad, rep := harnessevaltest.GPU(t)
	ctx := context.Background()
	suite := os.Getenv("KEVOLVE_GPU_SUITE")
	if suite == "" {
		suite = defaultGPUSuite
	}
	entries := strings.Split(suite, ",")
	evals := envInt("KEVOLVE_GPU_EVALS", 40)
	deadline := time.Now().Add(time.Duration(envFloat("KEVOLVE_GPU_MINUTES", 8.5) * float64(time.Minute)))
	e, st := newTestEngine(t, ad)

	type row struct {
		Problem, Kind, Stop                       string
		Evals                                     int
		StartS, BestS                             float64
		OverStart, OverEager, OverCompile, PctSOL float64
		BestNotes                                 string
	}
	var rows []row
	logGeo, n := 0.0, 0
	writeGPUOut := func(rows []row, logGeo float64, n int, gpus any) {
		if out := os.Getenv("KEVOLVE_GPU_OUT"); out != "" {
			js, _ := json.MarshalIndent(map[string]any{"rows": rows, "problems": n, "geomean_best_over_start": geomean(logGeo, n), "device": gpus}, "", "  ")
			if err := os.WriteFile(out, js, 0o644); err != nil {
				t.Errorf("write %s: %v", out, err)
			}
		}
	}
	for i, entry := range entries {
		kind, name, ok := strings.Cut(entry, ":")
		if !ok {
			t.Fatalf("suite entry %q: want kind:problem", entry)
		}
		left := time.Until(deadline)
		if left < 20*time.Second {
			t.Logf("time budget spent: %d problems not run", len(entries)-i)
			break
		}
		prob, start, err := ResolveProblem(ctx, nil, ProblemSpec{Name: name, Target: "nvidia", Language: kind, CorpusRoot: filepath.Join(t.TempDir(), "corpus")})
		if err != nil {
			t.Fatal(err)
		}
		share := left / time.Duration(len(entries)-i)
		t0 := time.Now()
		run, err := e.Run(ctx, StartOptions{Problem: prob, StartCode: start, Policy: "greedy",
			Budget: search.Budget{Evals: evals, Time: share}, Seed: int64(i + 1)})
		if err != nil {
			t.Errorf("%s: %v", entry, err)
			continue
		}
		run, _ = st.Run(ctx, run.ID)
		nodes, _ := st.Nodes(ctx, run.ID)
		s := search.Summarize(run, nodes)
		r := row{Problem: name, Kind: kind, Stop: run.StopReason, Evals: s.Evaluations}
		if s.Start != nil {
			r.StartS = s.Start.TimeS
		}
		if b := s.Best; b != nil {
			r.BestS, r.OverStart, r.OverEager, r.OverCompile, r.PctSOL, r.BestNotes = b.TimeS, b.SpeedupOverStart, b.SpeedupVsEager, b.SpeedupVsCompile, b.PctOfSOL, b.Notes
		}
		if s.Start == nil || s.Start.Verdict != search.VerdictPass {
			t.Errorf("%s: the start kernel did not pass: %+v", entry, s.Start)
		} else if r.OverStart > 0 {
			logGeo += math.Log(r.OverStart)
			n++
			if r.OverStart < 1 {
				t.Errorf("%s: best is slower than the start (%.3fx)", entry, r.OverStart)
			}
		}
		rows = append(rows, r)
		t.Logf("%s %s: %d evals in %s, %.2fx over start (%s)", kind, name, r.Evals, time.Since(t0).Round(time.Second), r.OverStart, r.Stop)
		// Written after every problem, so a run cut off by the machine's
		// time limit still leaves the rows it measured.
		writeGPUOut(rows, logGeo, n, rep.GPUs)
	}
	var b strings.Builder
	tw := tabwriter.NewWriter(&b, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "problem\tstart\tevals\tstart time\tbest time\tover start\tover eager\tover compile\t% SOL\tbest")
	for _, r := range rows {
		fmt.Fprintf(tw, "%s\t%s\t%d\t%s\t%s\t%.2fx\t%.2fx\t%.2fx\t%.1f%%\t%s\n", r.Problem, r.Kind, r.Evals, seconds(r.StartS), seconds(r.BestS),
			r.OverStart, r.OverEager, r.OverCompile, r.PctSOL, r.BestNotes)
	}
	tw.Flush()
	geo := geomean(logGeo, n)
	fmt.Fprintf(&b, "geomean best/start over %d problems: %.3fx\n", n, geo)
	t.Log("\n" + b.String())
	fmt.Println(b.String())
	if n < 10 {
		t.Errorf("%d problems measured, want at least 10", n)
	}
}

// geomean turns a sum of n logarithms back into their geometric mean.
func geomean(sumLog float64, n int) float64 {
	if n == 0 {
		return 0
	}
	return math.Exp(sumLog / float64(n))
}
