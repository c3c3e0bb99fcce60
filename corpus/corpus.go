// Package corpus holds the kernel specifications kevolve-mcp optimizes:
// KernelBench-format reference programs with shape sets, dtypes, tolerances,
// FLOP/byte formulas and starting candidates, embedded in the binary, plus
// problems imported from a KernelBench checkout. It knows nothing about how
// problems are compiled or timed (that is the harness).
package corpus

import (
	"bytes"
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"
	"sync"

	"gopkg.in/yaml.v3"

	"github.com/kevolve/kevolve-mcp/harness/problem"
)

// Default is the problem `make run` and `evolve` use when none is named.
const Default = "llm/rmsnorm"

// Start candidate kinds and the file each lives in.
var startFiles = map[string]string{
	"cuda":   "start_cuda.py",
	"c":      "start_c.py",
	"triton": "start_triton.py",
}

// Source values of Problem.Source.
const (
	SourceBuiltin     = "builtin"
	SourceKernelBench = "kernelbench"
)

//go:embed problems
var problemsFS embed.FS

// Tolerance is the allclose tolerance a problem declares, overriding the
// harness's dtype-based default.
type Tolerance struct {
	Atol float64 `json:"atol" yaml:"atol"`
	Rtol float64 `json:"rtol" yaml:"rtol"`
}

// Problem is one kernel specification.
type Problem struct {
	Name        string `json:"name"` // family/name, e.g. llm/rmsnorm
	Family      string `json:"family"`
	Description string `json:"description,omitempty"`
	// Dtype is the dtype of the default ("large") shape set; Dtypes holds it
	// per shape set where they differ (the CPU "small" set is often fp32).
	Dtype     string            `json:"dtype,omitempty"`
	Dtypes    map[string]string `json:"dtypes,omitempty"`
	Tolerance *Tolerance        `json:"tolerance,omitempty"`
	// FLOPs and Bytes are formulas over the shape variables and elem_bytes
	// (see FormulaValue and FormulaVars).
	FLOPs string `json:"flops,omitempty"`
	Bytes string `json:"bytes,omitempty"`
	// Shapes maps a shape set ("large", "small") to its variables; the
	// reference selects the set from env KEVOLVE_SHAPES.
	Shapes map[string]map[string]float64 `json:"shapes,omitempty"`
	Tags   []string                      `json:"tags,omitempty"`
	// Starts maps a candidate kind ("cuda", "c", "triton") to its file name
	// inside the problem directory.
	Starts map[string]string `json:"starts,omitempty"`

	// Source is SourceBuiltin or SourceKernelBench.
	Source string `json:"source"`
	// Dir is the problem's directory relative to the materialized corpus
	// root (built-ins only), e.g. "llm/rmsnorm".
	Dir string `json:"dir,omitempty"`
	// Path, Level and SHA256 describe an imported KernelBench file.
	Path   string `json:"path,omitempty"`
	Level  int    `json:"level,omitempty"`
	SHA256 string `json:"sha256,omitempty"`
}

// DtypeFor returns the dtype of a shape set, falling back to Dtype.
func (p Problem) DtypeFor(shapeSet string) string {
	if d, ok := p.Dtypes[shapeSet]; ok {
		return d
	}
	return p.Dtype
}

// ReferenceSource returns the reference program's text.
func (p Problem) ReferenceSource() (string, error) {
	switch p.Source {
	case SourceBuiltin:
		return readEmbedded(p.Dir, "reference.py")
	case SourceKernelBench:
		b, err := problem.ReadFile("reference", p.Path)
		if err != nil {
			return "", fmt.Errorf("read reference of %s: %w", p.Name, err)
		}
		if p.SHA256 != "" {
			if got := sha256Hex(b); got != p.SHA256 {
				return "", fmt.Errorf("reference of %s at %s changed since import (sha256 %s, imported %s): re-run corpus import-kernelbench", p.Name, p.Path, got[:12], p.SHA256[:12])
			}
		}
		return string(b), nil
	}
	return "", fmt.Errorf("problem %s: unknown source %q", p.Name, p.Source)
}

// StartSource returns the starting candidate of the given kind.
func (p Problem) StartSource(kind string) (string, error) {
	file, ok := p.Starts[kind]
	if !ok {
		kinds := make([]string, 0, len(p.Starts))
		for k := range p.Starts {
			kinds = append(kinds, k)
		}
		sort.Strings(kinds)
		if len(kinds) == 0 {
			return "", fmt.Errorf("problem %s has no start candidates", p.Name)
		}
		return "", fmt.Errorf("problem %s has no %q start candidate (has: %s)", p.Name, kind, strings.Join(kinds, ", "))
	}
	return readEmbedded(p.Dir, file)
}

// ReferencePath returns the reference file on disk: for a built-in, under
// root as returned by Materialize; for an import, the imported file.
func (p Problem) ReferencePath(root string) string {
	if p.Source == SourceKernelBench {
		return p.Path
	}
	return filepath.Join(root, filepath.FromSlash(p.Dir), "reference.py")
}

func readEmbedded(dir, file string) (string, error) {
	b, err := problemsFS.ReadFile(path.Join("problems", dir, file))
	if err != nil {
		return "", fmt.Errorf("read %s/%s: %w", dir, file, err)
	}
	return string(b), nil
}

// meta is the on-disk form of meta.yaml.
type meta struct {
	Name        string                        `yaml:"name"`
	Family      string                        `yaml:"family"`
	Description string                        `yaml:"description"`
	Dtype       yaml.Node                     `yaml:"dtype"`
	Tolerance   *Tolerance                    `yaml:"tolerance"`
	FLOPs       string                        `yaml:"flops"`
	Bytes       string                        `yaml:"bytes"`
	Shapes      map[string]map[string]float64 `yaml:"shapes"`
	Tags        []string                      `yaml:"tags"`
	Starts      []string                      `yaml:"starts"`
	Notes       string                        `yaml:"notes"`
}

var (
	loadOnce sync.Once
	builtins []Problem
	loadErr  error
)

// load parses every embedded meta.yaml once. A malformed built-in is a bug
// caught by the tests, so List panics on it rather than hiding problems.
func load() ([]Problem, error) {
	loadOnce.Do(func() { builtins, loadErr = parseAll(problemsFS) })
	return builtins, loadErr
}

func parseAll(fsys fs.FS) ([]Problem, error) {
	var out []Problem
	err := fs.WalkDir(fsys, "problems", func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() || d.Name() != "meta.yaml" {
			return nil
		}
		dir := strings.TrimPrefix(path.Dir(p), "problems/")
		raw, err := fs.ReadFile(fsys, p)
		if err != nil {
			return fmt.Errorf("read %s: %w", p, err)
		}
		prob, err := parseMeta(dir, raw)
		if err != nil {
			return fmt.Errorf("%s: %w", p, err)
		}
		for kind, file := range prob.Starts {
			if _, err := fs.Stat(fsys, path.Join("problems", dir, file)); err != nil {
				return fmt.Errorf("%s: start %q declared but %s missing", p, kind, file)
			}
		}
		if _, err := fs.Stat(fsys, path.Join("problems", dir, "reference.py")); err != nil {
			return fmt.Errorf("%s: reference.py missing", p)
		}
		out = append(out, prob)
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("load corpus: %w", err)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, nil
}

func parseMeta(dir string, raw []byte) (Problem, error) {
	var m meta
	dec := yaml.NewDecoder(bytes.NewReader(raw))
	dec.KnownFields(true) // a typo in meta.yaml is an error, not a silent default
	if err := dec.Decode(&m); err != nil {
		return Problem{}, fmt.Errorf("parse: %w", err)
	}
	p := Problem{
		Name: m.Name, Family: m.Family, Description: strings.TrimSpace(m.Description),
		Tolerance: m.Tolerance, FLOPs: m.FLOPs, Bytes: m.Bytes, Shapes: m.Shapes,
		Tags: m.Tags, Source: SourceBuiltin, Dir: dir, Starts: map[string]string{},
	}
	if p.Name != dir {
		return Problem{}, fmt.Errorf("name %q does not match directory %q", p.Name, dir)
	}
	if fam, _, _ := strings.Cut(dir, "/"); p.Family != fam {
		return Problem{}, fmt.Errorf("family %q does not match directory %q", p.Family, dir)
	}
	switch m.Dtype.Kind {
	case yaml.ScalarNode:
		p.Dtype = m.Dtype.Value
	case yaml.MappingNode:
		if err := m.Dtype.Decode(&p.Dtypes); err != nil {
			return Problem{}, fmt.Errorf("dtype: %w", err)
		}
		p.Dtype = p.Dtypes["large"]
	case 0:
		return Problem{}, errors.New("dtype missing")
	default:
		return Problem{}, errors.New("dtype must be a string or a map of shape set to dtype")
	}
	if _, ok := p.Shapes["large"]; !ok {
		return Problem{}, errors.New(`shapes: no "large" set`)
	}
	if _, ok := p.Shapes["small"]; !ok {
		return Problem{}, errors.New(`shapes: no "small" set`)
	}
	for set, vars := range p.Shapes {
		if _, ok := vars[ElemBytesVar]; ok {
			return Problem{}, fmt.Errorf("shapes: set %q names a variable %s, which is reserved for the element size of the set's dtype", set, ElemBytesVar)
		}
		if _, ok := ElemBytes(p.DtypeFor(set)); !ok {
			return Problem{}, fmt.Errorf("dtype of shape set %q: %q is not one of float32, bfloat16, float16, float64, int64, int32", set, p.DtypeFor(set))
		}
	}
	for _, k := range m.Starts {
		f, ok := startFiles[k]
		if !ok {
			return Problem{}, fmt.Errorf("unknown start kind %q", k)
		}
		p.Starts[k] = f
	}
	if len(p.Starts) == 0 {
		return Problem{}, errors.New("no start candidates")
	}
	return p, nil
}

// List returns the built-in problems sorted by name.
func List() []Problem {
	ps, err := load()
	if err != nil {
		panic(err) // embedded data is fixed at build time; tests catch this
	}
	return append([]Problem(nil), ps...)
}

// Get returns a built-in problem by name; on a miss the error names the
// closest problems so an agent can correct itself.
func Get(name string) (Problem, error) {
	return getFrom(List(), name)
}

func getFrom(ps []Problem, name string) (Problem, error) {
	for _, p := range ps {
		if p.Name == name {
			return p, nil
		}
	}
	names := make([]string, len(ps))
	for i, p := range ps {
		names[i] = p.Name
	}
	close := closeNames(name, names, 5)
	if len(close) == 0 {
		// Where an agent or a user reads the names: device_info over MCP,
		// the CLI's corpus list.
		return Problem{}, fmt.Errorf("no problem %q (%d problems: device_info's problems or `kevolve-mcp corpus list` name them)", name, len(ps))
	}
	return Problem{}, fmt.Errorf("no problem %q; did you mean: %s", name, strings.Join(close, ", "))
}

// closeNames ranks candidates by edit distance to name, with substring
// matches (either way, or on the part after the family) ranked first.
func closeNames(name string, names []string, n int) []string {
	type scored struct {
		name string
		d    int
	}
	q := strings.ToLower(name)
	_, qBase, hasFam := strings.Cut(q, "/")
	if !hasFam {
		qBase = q
	}
	var s []scored
	for _, c := range names {
		lc := strings.ToLower(c)
		_, base, _ := strings.Cut(lc, "/")
		d := levenshtein(q, lc)
		if db := levenshtein(qBase, base); db < d {
			d = db
		}
		if qBase != "" && (strings.Contains(lc, qBase) || strings.Contains(qBase, base)) {
			d = 0
		}
		// Accept distances up to about half the query's length.
		if d <= max(2, len(qBase)/2) {
			s = append(s, scored{c, d})
		}
	}
	sort.SliceStable(s, func(i, j int) bool {
		if s[i].d != s[j].d {
			return s[i].d < s[j].d
		}
		return s[i].name < s[j].name
	})
	var out []string
	for i := 0; i < len(s) && i < n; i++ {
		out = append(out, s[i].name)
	}
	return out
}

func levenshtein(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}

// Materialize writes the embedded problem tree under dir (created if
// needed) and returns the absolute root, so that root/<family>/<name>/
// reference.py exists. Files already holding the same bytes are left alone,
// so repeated calls are cheap and safe while a harness reads them.
func Materialize(dir string) (string, error) {
	root, err := filepath.Abs(dir)
	if err != nil {
		return "", fmt.Errorf("materialize corpus: %w", err)
	}
	err = fs.WalkDir(problemsFS, "problems", func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel := strings.TrimPrefix(strings.TrimPrefix(p, "problems"), "/")
		dst := filepath.Join(root, filepath.FromSlash(rel))
		if d.IsDir() {
			return os.MkdirAll(dst, 0o755)
		}
		data, err := problemsFS.ReadFile(p)
		if err != nil {
			return err
		}
		if old, err := os.ReadFile(dst); err == nil && bytes.Equal(old, data) {
			return nil
		}
		// Write then rename, so a concurrent reader never sees half a file.
		tmp, err := os.CreateTemp(filepath.Dir(dst), ".tmp-*")
		if err != nil {
			return err
		}
		if _, err := tmp.Write(data); err != nil {
			tmp.Close()
			os.Remove(tmp.Name())
			return err
		}
		if err := tmp.Close(); err != nil {
			os.Remove(tmp.Name())
			return err
		}
		if err := os.Chmod(tmp.Name(), 0o644); err != nil {
			os.Remove(tmp.Name())
			return err
		}
		return os.Rename(tmp.Name(), dst)
	})
	if err != nil {
		return "", fmt.Errorf("materialize corpus into %s: %w", root, err)
	}
	return root, nil
}
