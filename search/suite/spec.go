package suite

import (
	"context"
	"fmt"
	"os"
	"regexp"
	"slices"
	"strings"

	"github.com/kevolve/kevolve-mcp/corpus"
	"github.com/kevolve/kevolve-mcp/search/engine"
)

// Spec is what --suite names.
type Spec struct {
	// Kind is "corpus" or "kernelbench".
	Kind string
	// Tag filters corpus problems ("" = all); Dir and Levels pick
	// KernelBench problems (no levels = all).
	Tag    string
	Dir    string
	Levels []int
}

// ParseSpec reads corpus[:tag] or kernelbench:DIR[:levels] (levels as
// 1,2 or 1-3).
func ParseSpec(s string) (Spec, error) {
	switch {
	case s == "corpus" || strings.HasPrefix(s, "corpus:"):
		return Spec{Kind: "corpus", Tag: strings.TrimPrefix(strings.TrimPrefix(s, "corpus"), ":")}, nil
	case strings.HasPrefix(s, "kernelbench:"):
		rest := strings.TrimPrefix(s, "kernelbench:")
		sp := Spec{Kind: "kernelbench", Dir: rest}
		if i := strings.LastIndex(rest, ":"); i >= 0 && regexp.MustCompile(`^[0-9,\- ]+$`).MatchString(rest[i+1:]) {
			sp.Dir = rest[:i]
			for _, part := range strings.Split(rest[i+1:], ",") {
				var a, b int
				if n, _ := fmt.Sscanf(strings.TrimSpace(part), "%d-%d", &a, &b); n == 2 {
					for l := a; l <= b; l++ {
						sp.Levels = append(sp.Levels, l)
					}
				} else if n, _ := fmt.Sscanf(strings.TrimSpace(part), "%d", &a); n == 1 {
					sp.Levels = append(sp.Levels, a)
				}
			}
		}
		if sp.Dir == "" {
			return sp, fmt.Errorf("suite %q: name the KernelBench checkout, e.g. kernelbench:~/KernelBench:1,2", s)
		}
		return sp, nil
	}
	return Spec{}, fmt.Errorf("suite %q: use corpus[:tag] or kernelbench:DIR[:levels]", s)
}

// Resolve turns a spec into the suite's problems on a target. A corpus
// problem without a start kernel for the language is skipped (listed in
// skipped). A KernelBench problem has no start kernel: its root is the
// reference renamed to ModelNew, which the harness flags (it calls the
// reference's ops), so a model or agent operator drafts the first real
// kernel from it; the tuner has nothing to tune there.
func Resolve(ctx context.Context, reg *corpus.Registry, sp Spec, target, language, root string) (probs []Problem, skipped []string, err error) {
	var names []string
	switch sp.Kind {
	case "corpus":
		for _, p := range corpus.List() {
			if sp.Tag == "" || slices.Contains(p.Tags, sp.Tag) || strings.HasPrefix(p.Name, sp.Tag+"/") {
				names = append(names, p.Name)
			}
		}
	case "kernelbench":
		if reg == nil {
			return nil, nil, fmt.Errorf("suite: KernelBench needs the database's problem registry")
		}
		ps, err := reg.ImportKernelBench(ctx, sp.Dir)
		if err != nil {
			return nil, nil, err
		}
		for _, p := range ps {
			if len(sp.Levels) == 0 || slices.ContainsFunc(sp.Levels, func(l int) bool { return strings.Contains(p.Name, fmt.Sprintf("level%d/", l)) }) {
				names = append(names, p.Name)
			}
		}
	}
	for _, n := range names {
		p, start, err := engine.ResolveProblem(ctx, reg, engine.ProblemSpec{Name: n, Target: target, Language: language, CorpusRoot: root})
		if err != nil && sp.Kind == "kernelbench" && p.ReferencePath != "" {
			start, err = referenceAsStart(p.ReferencePath)
		}
		if err != nil {
			skipped = append(skipped, fmt.Sprintf("%s: %v", n, err))
			continue
		}
		probs = append(probs, Problem{Problem: p, Start: start})
	}
	if len(probs) == 0 {
		return nil, skipped, fmt.Errorf("suite: no problem to run (%d skipped)", len(skipped))
	}
	return probs, skipped, nil
}

var modelRe = regexp.MustCompile(`\bModel\b`)

// referenceAsStart is a KernelBench reference with Model renamed ModelNew.
func referenceAsStart(path string) (string, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return "", err
	}
	return modelRe.ReplaceAllString(string(b), "ModelNew"), nil
}
