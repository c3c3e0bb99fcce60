package memory

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/kevolve/kevolve-mcp/search"
	"github.com/kevolve/kevolve-mcp/search/brief"
)

// ExamplesDir is where write-back puts its documents inside the user's
// knowledge directory (never the embedded base).
const ExamplesDir = "examples/kevolve-runs"

// Written says what WriteBack did.
type Written struct {
	Path string `json:"path"`
	// Kept is true when an earlier, better kernel for this (problem, arch)
	// was already there and was left alone.
	Kept    bool    `json:"kept,omitempty"`
	Fitness float64 `json:"fitness"`
}

// WriteBack writes the run's best kernel as an examples/ document for its
// (problem, arch) into kbDir, unless the document there already holds a
// better one. The document's front matter carries the operator tags,
// shapes, dtype, arch, measured speedups, % of SOL and the diagnosis path
// along the winning lineage; its body the distilled "what worked" note and
// the kernel. A run without a passing kernel writes nothing ("" path).
// The caller re-opens the knowledge index so it is indexed at once.
func WriteBack(ctx context.Context, st search.Store, runID, kbDir string) (Written, error) {
	run, err := st.Run(ctx, runID)
	if err != nil {
		return Written{}, err
	}
	nodes, err := st.Nodes(ctx, runID)
	if err != nil {
		return Written{}, err
	}
	g := search.NewGraph(nodes)
	best := g.Best()
	if best == nil {
		return Written{}, nil
	}
	vendor, arch := Arch(run.Problem, run.Devices)
	file := filepath.Join(kbDir, filepath.FromSlash(ExamplesDir), slug(run.Problem.Name)+"--"+run.Problem.Language+"--"+arch+".md")
	w := Written{Path: file, Fitness: best.Fitness()}
	if old, err := os.ReadFile(file); err == nil {
		if f, r := existing(string(old)); f >= best.Fitness() && r != run.ID {
			w.Kept = true
			return w, nil
		}
	}
	if err := os.MkdirAll(filepath.Dir(file), 0o755); err != nil {
		return w, fmt.Errorf("write-back: %w", err)
	}
	doc := render(run, g, best, vendor, arch)
	if err := search.WriteFileAtomic(file, []byte(doc), 0o644); err != nil {
		return w, fmt.Errorf("write-back: %w", err)
	}
	return w, nil
}

var (
	fitRe = regexp.MustCompile(`(?m)^fitness: ([0-9.eE+-]+)$`)
	runRe = regexp.MustCompile(`(?m)^run: "?([^"\n]+)"?$`)
)

func existing(doc string) (float64, string) {
	var f float64
	var r string
	if m := fitRe.FindStringSubmatch(doc); m != nil {
		f, _ = strconv.ParseFloat(m[1], 64)
	}
	if m := runRe.FindStringSubmatch(doc); m != nil {
		r = m[1]
	}
	return f, r
}

func slug(s string) string {
	s = strings.ToLower(strings.TrimSuffix(filepath.Base(filepath.Dir(s))+"-"+filepath.Base(s), ".py"))
	s = regexp.MustCompile(`[^a-z0-9]+`).ReplaceAllString(s, "-")
	return strings.Trim(s, "-")
}

func q(v any) string { b, _ := json.Marshal(v); return string(b) }

// lineage is the winning path from the root to best.
func lineage(g *search.Graph, best *search.Node) []*search.Node {
	anc := g.Ancestors(best.ID)
	slices.Reverse(anc)
	return append(anc, best)
}

func step(n *search.Node) string {
	s := fmt.Sprintf("node %d [%s]", n.ID, n.Operator)
	if r := n.Result; r != nil {
		if r.Verdict == search.VerdictPass {
			s += fmt.Sprintf(": %.2fx", r.Fitness)
			if r.SOLBound != "" && r.PctOfSOL > 0 {
				s += fmt.Sprintf(", %s-bound at %.0f%% of SOL", r.SOLBound, r.PctOfSOL)
			}
		} else {
			s += ": " + r.Verdict
		}
	}
	if d := strings.TrimSpace(n.Diagnosis); d != "" {
		s += "; diagnosis: " + oneLine(d, 120)
	}
	return s
}

func render(run *search.Run, g *search.Graph, best *search.Node, vendor, arch string) string {
	r := best.Result
	line := lineage(g, best)
	var path, worked []string
	for _, n := range line {
		path = append(path, step(n))
		if n.ID != line[0].ID && strings.TrimSpace(n.Notes) != "" {
			worked = append(worked, fmt.Sprintf("- %s — %s", step(n), oneLine(n.Notes, 240)))
		}
	}
	fam := family(run.Problem.Name)
	topics := []string{"example", "search-winner", strings.TrimSuffix(filepath.Base(run.Problem.Name), ".py"), run.Problem.Language}
	var bneck []string
	if r.SOLBound != "" {
		bneck = append(bneck, r.SOLBound+"-bound")
	}
	var b strings.Builder
	title := fmt.Sprintf("Search winner: %s in %s on %s (%.2fx over %s)", run.Problem.Name, run.Problem.Language, arch, r.Fitness, run.Baseline)
	summary := fmt.Sprintf("The best kernel kevolve found for %s on %s (%s): %.2fx over eager", run.Problem.Name, arch, strings.Join(run.Devices, ", "), r.SpeedupVsEager)
	if r.PctOfSOL > 0 {
		summary += fmt.Sprintf(", %.0f%% of the speed of light", r.PctOfSOL)
	}
	summary += fmt.Sprintf(", after %d steps from the start kernel.", len(line)-1)
	fmt.Fprintf(&b, "---\ntitle: %s\nsummary: %s\nvendor: %s\narch: %s\n", q(title), q(summary), vendor, arch)
	fmt.Fprintf(&b, "topics: %s\nlanguages: %s\n", q(topics), q([]string{run.Problem.Language}))
	if len(bneck) > 0 {
		fmt.Fprintf(&b, "bottlenecks: %s\n", q(bneck))
	}
	if fam != "" {
		fmt.Fprintf(&b, "operators: %s\n", q([]string{fam}))
	}
	fmt.Fprintf(&b, "problem: %s\nop_sequence: %s\ntarget: %s\ndevices: %s\ndtype: %s\nshapes: %s\n", q(run.Problem.Name), q(OpSequence(readRef(run.Problem))),
		q(run.Problem.Target), q(run.Devices), q(run.Problem.Dtype), q(run.Problem.ShapeSet))
	fmt.Fprintf(&b, "fitness: %g\nbaseline: %s\nspeedup_vs_eager: %g\n", r.Fitness, run.Baseline, r.SpeedupVsEager)
	if r.SpeedupVsCompile > 0 { // absent when torch.compile was not timed
		fmt.Fprintf(&b, "speedup_vs_compile: %g\n", r.SpeedupVsCompile)
	}
	fmt.Fprintf(&b, "pct_of_sol: %g\n", r.PctOfSOL)
	fmt.Fprintf(&b, "run: %s\nnode: %d\ndiagnosis_path: %s\n---\n", q(run.ID), best.ID, q(path))
	fmt.Fprintf(&b, "# %s\n\n%s\n\n", title, summary)
	if g := brief.SOLGap(r); g != "" {
		fmt.Fprintf(&b, "Measured: %s.\n\n", g)
	}
	b.WriteString("## What worked\n\n")
	if len(worked) == 0 {
		b.WriteString("- the start kernel itself was the best: nothing the search tried beat it.\n")
	} else {
		b.WriteString(strings.Join(worked, "\n") + "\n")
	}
	fmt.Fprintf(&b, "\n## The kernel\n\n```python\n%s\n```\n", strings.TrimRight(best.Code, "\n"))
	return b.String()
}

func oneLine(s string, max int) string {
	s = strings.Join(strings.Fields(s), " ")
	if len(s) > max {
		s = s[:max] + " …"
	}
	return s
}
