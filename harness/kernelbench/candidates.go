package kernelbench

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"

	"github.com/kevolve/kevolve-mcp/harness/problem"
)

// Pair is one evaluation of the sweep: a problem and one candidate for it.
type Pair struct {
	Problem Problem
	// CandidatePath is the candidate file; empty when Code holds it.
	CandidatePath string
	// Code is an inline candidate (the reference renamed, for
	// --reference-as-candidate).
	Code string
}

// Candidate names the candidate in results: its path, or "reference-as-candidate".
func (p Pair) Candidate() string {
	if p.CandidatePath != "" {
		return p.CandidatePath
	}
	return ReferenceAsCandidate
}

// ReferenceAsCandidate labels pairs whose candidate is the problem itself.
const ReferenceAsCandidate = "reference-as-candidate"

// Matching is what pairing problems with candidates found.
type Matching struct {
	Pairs []Pair
	// Missing are problems of the chosen levels with no candidate.
	Missing []string
	// Unmatched are candidate files that name no problem of the chosen levels.
	Unmatched []string
}

// modelName matches the reference's class name as a whole word.
var modelName = regexp.MustCompile(`\bModel\b`)

// RenameModel turns a KernelBench problem into a candidate of itself:
// every whole-word Model becomes ModelNew (the class, super(Model, self)).
func RenameModel(src string) string { return modelName.ReplaceAllString(src, "ModelNew") }

// ReferencePairs pairs every problem with itself, renamed Model→ModelNew:
// the regression sweep that every KernelBench file evaluates unchanged and
// is caught as the reference.
func ReferencePairs(problems []Problem) (Matching, error) {
	var m Matching
	for _, p := range problems {
		b, err := problem.ReadFile("reference", p.Path)
		if err != nil {
			return Matching{}, fmt.Errorf("read problem %s: %w", p.Key(), err)
		}
		m.Pairs = append(m.Pairs, Pair{Problem: p, Code: RenameModel(string(b))})
	}
	return m, nil
}

// isPattern says whether a --candidates value is a glob rather than a folder.
func isPattern(s string) bool { return strings.ContainsAny(s, "*?[") }

// MatchCandidates pairs problems with the candidates named by spec: a
// folder holding level{N}/{id}_{name}.py (or {N}/{id}_{name}.py), or a glob
// pattern whose matches name their problem by a level{N} (or {N}) path
// component followed by one starting {id}_, e.g.
// 'my_kernels/level*/*/fast_cuda.py' or 'out/level1/*_*.py'. A pattern may
// give several candidates for one problem; each is its own pair.
func MatchCandidates(problems []Problem, spec string) (Matching, error) {
	if spec == "" {
		return Matching{}, fmt.Errorf("no candidates: give --candidates DIR|PATTERN or --reference-as-candidate")
	}
	if isPattern(spec) {
		return matchPattern(problems, spec)
	}
	return matchDir(problems, spec)
}

func matchDir(problems []Problem, dir string) (Matching, error) {
	st, err := os.Stat(dir)
	if err != nil {
		return Matching{}, fmt.Errorf("candidates: %w", err)
	}
	if !st.IsDir() {
		return Matching{}, fmt.Errorf("candidates %s: not a folder (give a folder of level{N}/{id}_{name}.py files, or a glob pattern)", dir)
	}
	var m Matching
	used := map[string]bool{}
	for _, p := range problems {
		path, err := findInDir(dir, p)
		if err != nil {
			return Matching{}, err
		}
		if path == "" {
			m.Missing = append(m.Missing, p.Key())
			continue
		}
		used[path] = true
		m.Pairs = append(m.Pairs, Pair{Problem: p, CandidatePath: path})
	}
	// Files that look like candidates but name no problem are worth a word:
	// usually a typo in the id or the wrong level.
	files, _ := filepath.Glob(filepath.Join(dir, "*", "*.py"))
	for _, f := range files {
		abs, _ := filepath.Abs(f)
		if !used[abs] && problemStem.MatchString(strings.TrimSuffix(filepath.Base(f), ".py")) {
			m.Unmatched = append(m.Unmatched, abs)
		}
	}
	return m, nil
}

// findInDir looks for a problem's candidate: the exact file name first, else
// the one file of that level whose name starts with "{id}_".
func findInDir(dir string, p Problem) (string, error) {
	for _, lv := range []string{fmt.Sprintf("level%d", p.Level), strconv.Itoa(p.Level)} {
		exact := filepath.Join(dir, lv, p.Name+".py")
		if st, err := os.Stat(exact); err == nil && !st.IsDir() {
			return filepath.Abs(exact)
		}
		byID, _ := filepath.Glob(filepath.Join(dir, lv, fmt.Sprintf("%d_*.py", p.ID)))
		switch len(byID) {
		case 0:
		case 1:
			return filepath.Abs(byID[0])
		default:
			return "", fmt.Errorf("candidates for %s: %d files start with %d_ in %s (%s); keep one", p.Key(), len(byID), p.ID,
				filepath.Join(dir, lv), strings.Join(baseNames(byID), ", "))
		}
	}
	return "", nil
}

func baseNames(paths []string) []string {
	out := make([]string, len(paths))
	for i, p := range paths {
		out[i] = filepath.Base(p)
	}
	return out
}

var levelComponent = regexp.MustCompile(`^(?:level)?(\d+)$`)

// problemOf reads (level, id) from a candidate's path: the last component
// starting "{id}_" (file stem or folder) and a level component before it.
func problemOf(path string) (level, id int, ok bool) {
	parts := strings.Split(filepath.ToSlash(strings.TrimSuffix(path, ".py")), "/")
	for i := len(parts) - 1; i > 0; i-- {
		m := problemStem.FindStringSubmatch(parts[i])
		if m == nil {
			continue
		}
		lm := levelComponent.FindStringSubmatch(parts[i-1])
		if lm == nil {
			continue
		}
		level, _ = strconv.Atoi(lm[1])
		id, _ = strconv.Atoi(m[1])
		return level, id, true
	}
	return 0, 0, false
}

func matchPattern(problems []Problem, pattern string) (Matching, error) {
	files, err := filepath.Glob(pattern)
	if err != nil {
		return Matching{}, fmt.Errorf("candidates pattern %q: %w", pattern, err)
	}
	if len(files) == 0 {
		return Matching{}, fmt.Errorf("candidates pattern %q matches no file", pattern)
	}
	sort.Strings(files)
	type lid struct{ level, id int }
	byProblem := map[lid][]string{}
	var m Matching
	for _, f := range files {
		if st, err := os.Stat(f); err != nil || st.IsDir() {
			continue
		}
		abs, err := filepath.Abs(f)
		if err != nil {
			return Matching{}, fmt.Errorf("candidate %s: %w", f, err)
		}
		level, id, ok := problemOf(abs)
		if !ok {
			m.Unmatched = append(m.Unmatched, abs)
			continue
		}
		byProblem[lid{level, id}] = append(byProblem[lid{level, id}], abs)
	}
	used := map[lid]bool{}
	for _, p := range problems {
		k := lid{p.Level, p.ID}
		cands := byProblem[k]
		if len(cands) == 0 {
			m.Missing = append(m.Missing, p.Key())
			continue
		}
		used[k] = true
		for _, c := range cands {
			m.Pairs = append(m.Pairs, Pair{Problem: p, CandidatePath: c})
		}
	}
	for k, cands := range byProblem {
		if !used[k] {
			m.Unmatched = append(m.Unmatched, cands...)
		}
	}
	sort.Strings(m.Unmatched)
	return m, nil
}
