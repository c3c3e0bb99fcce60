// Package knowledge is the knowledge base itself: Markdown documents with
// YAML front matter, embedded in the binary, plus the loader that turns a
// tree of them (the embedded one or a user's --kb directory) into Docs.
// Indexing and search live in package retrieval.
package knowledge

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"path"
	"slices"
	"sort"
	"strings"

	"gopkg.in/yaml.v3"
)

// Doc is one knowledge document: its front matter, body and identity.
type Doc struct {
	// Path is the slash-separated path relative to the tree's root, e.g.
	// "guidance/coalescing.md". It is the document's identity.
	Path        string   `json:"path"`
	Title       string   `json:"title"`
	Summary     string   `json:"summary,omitempty"`
	Vendor      string   `json:"vendor"`
	Arch        string   `json:"arch"`
	Topics      []string `json:"topics,omitempty"`
	Bottlenecks []string `json:"bottlenecks,omitempty"`
	Languages   []string `json:"languages,omitempty"`
	Operators   []string `json:"operators,omitempty"`
	// Body is the Markdown after the front matter.
	Body string `json:"-"`
	// Hash is the SHA-256 of the whole file (front matter included), so a
	// change anywhere re-indexes the document.
	Hash string `json:"hash"`
}

// Kind is the top-level folder of the document ("constraints", "guidance",
// "hardware", "languages", "operators", "examples"), or "" for a file at the
// root of a tree.
func (d Doc) Kind() string {
	if i := strings.IndexByte(d.Path, '/'); i > 0 {
		return d.Path[:i]
	}
	return ""
}

// IsConstraint reports whether the document states a rule every kernel must
// obey; retrieval always returns these for an operator context.
func (d Doc) IsConstraint() bool { return d.Kind() == "constraints" }

// Vocabularies of the front matter. The profiler's diagnosis uses exactly the
// bottleneck words, so retrieval can match them verbatim.
var (
	Bottlenecks = []string{
		"memory-bound", "compute-bound", "latency-bound", "occupancy-limited",
		"register-pressure", "shared-memory-limited", "launch-bound", "uncoalesced",
		"bank-conflicts", "tail-effect", "divergence", "low-tensor-core-use",
		"numerics", "compile-error", "runtime-error", "incorrect",
	}
	Vendors = []string{"generic", "nvidia", "amd", "cpu"}
	// Arches holds every arch of the hardware spec table (harness/spec;
	// a test keeps the two in step) and the CPU ISAs.
	Arches    = []string{"generic", "ampere", "ada", "hopper", "blackwell", "cdna3", "cdna4", "x86", "arm"}
	Operators = []string{
		"gemm", "attention", "norm", "softmax", "embedding-bag", "jagged", "interaction",
		"conv", "reduction", "scan", "elementwise", "any",
	}
	// Kinds are the top-level folders of the tree.
	Kinds = []string{"constraints", "guidance", "hardware", "languages", "operators", "examples"}
)

// archVendor says which vendor each arch belongs to, for defaults and checks.
var archVendor = map[string]string{
	"ampere": "nvidia", "ada": "nvidia", "hopper": "nvidia", "blackwell": "nvidia",
	"cdna3": "amd", "cdna4": "amd", "x86": "cpu", "arm": "cpu",
}

// ValidBottleneck reports whether s is a word of the bottleneck vocabulary.
func ValidBottleneck(s string) bool { return slices.Contains(Bottlenecks, s) }

// ValidVendor reports whether s is a known vendor.
func ValidVendor(s string) bool { return slices.Contains(Vendors, s) }

// ValidArch reports whether s is a known arch.
func ValidArch(s string) bool { return slices.Contains(Arches, s) }

// ValidOperator reports whether s is a known operator family.
func ValidOperator(s string) bool { return slices.Contains(Operators, s) }

// ArchVendor returns the vendor an arch belongs to ("" for generic or unknown).
func ArchVendor(arch string) string { return archVendor[arch] }

// Validate checks the document against the vocabularies. The embedded tree
// must pass it (a test enforces that); users' own trees are loaded leniently
// and the caller may choose to only warn.
func (d Doc) Validate() error {
	var errs []error
	if strings.TrimSpace(d.Title) == "" {
		errs = append(errs, errors.New("empty title"))
	}
	if !ValidVendor(d.Vendor) {
		errs = append(errs, fmt.Errorf("vendor %q not one of %v", d.Vendor, Vendors))
	}
	if !ValidArch(d.Arch) {
		errs = append(errs, fmt.Errorf("arch %q not one of %v", d.Arch, Arches))
	}
	if v := ArchVendor(d.Arch); v != "" && v != d.Vendor {
		errs = append(errs, fmt.Errorf("arch %q belongs to vendor %q, not %q", d.Arch, v, d.Vendor))
	}
	for _, b := range d.Bottlenecks {
		if !ValidBottleneck(b) {
			errs = append(errs, fmt.Errorf("bottleneck %q not in the vocabulary %v", b, Bottlenecks))
		}
	}
	for _, o := range d.Operators {
		if !ValidOperator(o) {
			errs = append(errs, fmt.Errorf("operator %q not one of %v", o, Operators))
		}
	}
	if strings.TrimSpace(d.Body) == "" {
		errs = append(errs, errors.New("empty body"))
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("%s: %w", d.Path, err)
	}
	return nil
}

// frontMatter is the YAML header as written; every field is optional.
type frontMatter struct {
	Title       string         `yaml:"title"`
	Summary     string         `yaml:"summary"`
	Vendor      string         `yaml:"vendor"`
	Arch        string         `yaml:"arch"`
	Topics      stringList     `yaml:"topics"`
	Bottlenecks stringList     `yaml:"bottlenecks"`
	Languages   stringList     `yaml:"languages"`
	Operators   stringList     `yaml:"operators"`
	Extra       map[string]any `yaml:",inline"`
}

// stringList accepts both a YAML sequence and a single (comma-separated)
// string, since hand-written front matter uses either.
type stringList []string

func (s *stringList) UnmarshalYAML(n *yaml.Node) error {
	switch n.Kind {
	case yaml.ScalarNode:
		var one string
		if err := n.Decode(&one); err != nil {
			return err
		}
		*s = nil
		for _, part := range strings.Split(one, ",") {
			if p := strings.TrimSpace(part); p != "" {
				*s = append(*s, p)
			}
		}
		return nil
	case yaml.SequenceNode:
		var many []string
		if err := n.Decode(&many); err != nil {
			return err
		}
		*s = many
		return nil
	default:
		return fmt.Errorf("line %d: want a list of strings", n.Line)
	}
}

// Parse turns one file into a Doc. p is its slash path relative to the
// tree's root. Missing fields get defaults: the title from the first heading
// or the file name, vendor and arch from the path (hardware/nvidia/hopper/...)
// or "generic". A file without front matter is accepted (all defaults); a
// front matter that does not parse, or is not closed, is an error naming p.
func Parse(p string, data []byte) (Doc, error) {
	sum := sha256.Sum256(data)
	d := Doc{Path: p, Hash: hex.EncodeToString(sum[:])}
	text := strings.ReplaceAll(string(data), "\r\n", "\n")
	text = strings.TrimPrefix(text, "\ufeff")
	var fm frontMatter
	if strings.HasPrefix(text, "---\n") || text == "---" {
		rest := text[len("---\n"):]
		end := -1
		if strings.HasPrefix(rest, "---\n") || rest == "---" {
			end = 0
		} else if i := strings.Index(rest, "\n---\n"); i >= 0 {
			end = i + 1
		} else if strings.HasSuffix(rest, "\n---") {
			end = len(rest) - 3
		}
		if end < 0 {
			return Doc{}, fmt.Errorf("%s: front matter opened with --- but never closed", p)
		}
		header := rest[:end]
		body := rest[end:]
		body = strings.TrimPrefix(body, "---")
		body = strings.TrimPrefix(body, "\n")
		dec := yaml.NewDecoder(strings.NewReader(header))
		// An empty header decodes as io.EOF: no fields, all defaults.
		if err := dec.Decode(&fm); err != nil && !errors.Is(err, io.EOF) {
			return Doc{}, fmt.Errorf("%s: front matter: %w", p, err)
		}
		text = body
	}
	d.Body = strings.TrimSpace(text)
	d.Title = strings.TrimSpace(fm.Title)
	d.Summary = strings.TrimSpace(fm.Summary)
	d.Vendor = strings.ToLower(strings.TrimSpace(fm.Vendor))
	d.Arch = strings.ToLower(strings.TrimSpace(fm.Arch))
	d.Topics = normList(fm.Topics)
	d.Bottlenecks = normList(fm.Bottlenecks)
	d.Languages = normList(fm.Languages)
	d.Operators = normList(fm.Operators)
	if d.Title == "" {
		d.Title = titleFromBody(d.Body)
	}
	if d.Title == "" {
		d.Title = titleFromName(p)
	}
	pv, pa := scopeFromPath(p)
	if d.Arch == "" {
		d.Arch = pa
	}
	if d.Vendor == "" {
		if v := ArchVendor(d.Arch); v != "" {
			d.Vendor = v
		} else {
			d.Vendor = pv
		}
	}
	return d, nil
}

func normList(in []string) []string {
	var out []string
	for _, s := range in {
		s = strings.ToLower(strings.TrimSpace(s))
		if s != "" && !slices.Contains(out, s) {
			out = append(out, s)
		}
	}
	return out
}

func titleFromBody(body string) string {
	for _, line := range strings.Split(body, "\n") {
		if t, ok := strings.CutPrefix(strings.TrimSpace(line), "# "); ok {
			return strings.TrimSpace(t)
		}
	}
	return ""
}

func titleFromName(p string) string {
	base := strings.TrimSuffix(path.Base(p), path.Ext(p))
	base = strings.NewReplacer("-", " ", "_", " ").Replace(base)
	if base == "" {
		return p
	}
	return strings.ToUpper(base[:1]) + base[1:]
}

// scopeFromPath reads vendor and arch from hardware/<vendor>/<arch>/...;
// everything else is generic.
func scopeFromPath(p string) (vendor, arch string) {
	parts := strings.Split(p, "/")
	vendor, arch = "generic", "generic"
	for i, part := range parts[:len(parts)-1] {
		if part != "hardware" {
			continue
		}
		if i+1 < len(parts)-1 && ValidVendor(parts[i+1]) {
			vendor = parts[i+1]
		}
		if i+2 < len(parts)-1 && ValidArch(parts[i+2]) {
			arch = parts[i+2]
		}
		break
	}
	return vendor, arch
}

// Load reads every .md file of fsys (hidden files and folders, and files
// named README.md at the root, are skipped) and returns the documents sorted
// by path. The first malformed file stops the load with an error naming it.
func Load(fsys fs.FS) ([]Doc, error) {
	var docs []Doc
	err := fs.WalkDir(fsys, ".", func(p string, de fs.DirEntry, err error) error {
		if err != nil {
			return fmt.Errorf("walk %s: %w", p, err)
		}
		name := de.Name()
		if p != "." && (strings.HasPrefix(name, ".") || strings.HasPrefix(name, "_")) {
			if de.IsDir() {
				return fs.SkipDir
			}
			return nil
		}
		if de.IsDir() || !strings.EqualFold(path.Ext(name), ".md") || p == "README.md" {
			return nil
		}
		data, err := fs.ReadFile(fsys, p)
		if err != nil {
			return fmt.Errorf("read %s: %w", p, err)
		}
		d, err := Parse(p, data)
		if err != nil {
			return err
		}
		docs = append(docs, d)
		return nil
	})
	if err != nil {
		return nil, err
	}
	sort.Slice(docs, func(i, j int) bool { return docs[i].Path < docs[j].Path })
	return docs, nil
}
