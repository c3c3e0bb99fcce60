package engine

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/kevolve/kevolve-mcp/corpus"
	"github.com/kevolve/kevolve-mcp/harness/problem"
	"github.com/kevolve/kevolve-mcp/harness/target"
	"github.com/kevolve/kevolve-mcp/search"
)

// ProblemSpec is how a user names a problem and its start.
type ProblemSpec struct {
	// Name is a corpus name (built-in or imported) or a KernelBench-format
	// reference file.
	Name string
	// Target is a target of the table (resolved by the caller from "auto").
	Target string
	// Language picks the corpus start kernel: c, cuda or triton ("" = c on
	// cpu, cuda on nvidia).
	Language string
	// StartFile is the root candidate; "" = the corpus start kernel.
	StartFile string
	// ShapeSet overrides the default (small on cpu, large on a GPU).
	ShapeSet string
	// CorpusRoot is where built-in problems are materialized.
	CorpusRoot string
}

// ResolveProblem turns a spec into a Problem and the start kernel's code.
func ResolveProblem(ctx context.Context, reg *corpus.Registry, s ProblemSpec) (search.Problem, string, error) {
	if s.Name == "" {
		return search.Problem{}, "", fmt.Errorf("no problem given: name a corpus problem (e.g. %s) or a KernelBench-format file", corpus.Default)
	}
	tg, err := target.ParseTarget(s.Target)
	if err != nil {
		return search.Problem{}, "", err
	}
	if len(s.Name) > problem.MaxPathBytes {
		return search.Problem{}, "", fmt.Errorf("problem %q is too long: a corpus name or a file, at most %d bytes", problem.Clip(s.Name), problem.MaxPathBytes)
	}
	// The start file is read once: the code detected, hashed and run.
	var startFile string
	if s.StartFile != "" {
		b, err := problem.ReadFile("start", s.StartFile)
		if err != nil {
			return search.Problem{}, "", fmt.Errorf("start kernel: %w", err)
		}
		startFile = string(b)
	}
	lang := s.Language
	if lang == "" && s.StartFile != "" {
		lang = DetectLanguage(startFile)
	}
	if lang == "" {
		lang = tg.DefaultLanguage()
	}
	if !tg.Compiles(lang) {
		return search.Problem{}, "", fmt.Errorf("target %s does not compile %s kernels (it compiles %s)", tg.Name, lang, strings.Join(tg.Languages, ", "))
	}
	shapes := s.ShapeSet
	if shapes == "" {
		shapes = tg.DefaultShapes()
	}
	p := search.Problem{Target: string(tg.Name), Language: lang}
	var start string
	if st, err := os.Stat(s.Name); err == nil && !st.IsDir() && strings.HasSuffix(s.Name, ".py") {
		abs, err := filepath.Abs(s.Name)
		if err != nil {
			return p, "", err
		}
		if _, err := problem.ReadFile("problem", abs); err != nil {
			return p, "", err
		}
		p.Name, p.ReferencePath = abs, abs
		if s.StartFile == "" {
			return p, "", fmt.Errorf("problem %s is a file: give its start kernel with --start (a file defining ModelNew)", s.Name)
		}
	} else {
		var r corpus.Resolved
		var err error
		if reg != nil {
			r, err = reg.Resolve(ctx, s.Name, shapes, s.CorpusRoot)
		} else {
			r, err = corpus.ResolveBuiltin(s.Name, shapes, s.CorpusRoot)
		}
		if err != nil {
			return p, "", err
		}
		p.Name, p.ReferencePath, p.FLOPs, p.Bytes, p.Dtype = r.Problem.Name, r.ReferencePath, r.FLOPs, r.Bytes, r.Dtype
		if r.Problem.Source == corpus.SourceBuiltin {
			p.ShapeSet = shapes
		}
		if t := r.Tolerance; t != nil {
			p.Tolerance = &search.Tolerance{Atol: t.Atol, Rtol: t.Rtol}
		}
		if s.StartFile == "" {
			if start, p.Language, err = bundledStart(r.Problem, tg, lang, s.Language != ""); err != nil {
				return p, "", fmt.Errorf("%w: give one with --start", err)
			}
		}
	}
	if s.StartFile != "" {
		start = startFile
		if !strings.Contains(start, "ModelNew") {
			return p, "", fmt.Errorf("start kernel %s defines no ModelNew", s.StartFile)
		}
	}
	return p, start, nil
}

// bundledStart is a corpus problem's start kernel in lang; when the
// language was only the target's default, the target's other languages
// are tried in the table's order (an AMD run of a problem with no HIP
// start begins from its Triton one).
func bundledStart(p corpus.Problem, tg target.Target, lang string, named bool) (string, string, error) {
	start, err := p.StartSource(lang)
	if err == nil || named {
		return start, lang, err
	}
	for _, l := range tg.Languages {
		if s, e := p.StartSource(l); e == nil {
			return s, l, nil
		}
	}
	return "", lang, err
}

// DetectLanguage guesses a candidate's kernel language from its loaders:
// "triton", "cuda" (load_cuda, load_inline, cupy), "hip", "c", or "" when
// it cannot tell.
func DetectLanguage(code string) string {
	switch {
	case strings.Contains(code, "@triton.jit"):
		return "triton"
	case strings.Contains(code, "load_hip"):
		return "hip"
	case strings.Contains(code, "load_cuda") || strings.Contains(code, "load_inline") || strings.Contains(code, "__global__"):
		return "cuda"
	case strings.Contains(code, "load_c("):
		return "c"
	}
	return ""
}
