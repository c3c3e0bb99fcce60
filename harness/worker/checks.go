package worker

// The check registry, read from the worker's Python tree: every module of
// checks/ declares one check (one that runs in its stage) as plain
// literals at the start of its lines, and checks/_declared.py is the
// table of the checks decided inline (py/checks/__init__.py and
// _declared.py document the formats; Python imports the same files). Go
// parses them without Python, strictly: a module or entry it cannot read
// is an error, so the catalogue the MCP server serves (kevolve://checks)
// and the checks that run never disagree.

import (
	"fmt"
	"io/fs"
	"path"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"

	"github.com/kevolve/kevolve-mcp/harness/problem"
)

// ChecksDir is the registry's folder in the worker's Python tree.
const ChecksDir = "checks"

// DeclaredFile is the table of checks without a module (in ChecksDir).
const DeclaredFile = "_declared.py"

// CheckInfo is one registered check.
type CheckInfo struct {
	Name        string // its name in results (checks/<name>.py, or an entry of checks/_declared.py)
	Stage       string // the evaluation stage that runs or decides it
	Verdict     string // what a failure gives: one verdict, "a or b" where it depends, "none" for a record
	Description string // one sentence: what passing means
	Order       int    // its place among its stage's checks
}

// Verdicts are Verdict's parts.
func (c CheckInfo) Verdicts() []string { return strings.Split(c.Verdict, " or ") }

// verdictNone marks a check that records what the harness did and never fails.
const verdictNone = "none"

// isCheckVerdict says whether a failed check can give v: one of
// problem.FailureVerdicts, or verdictNone (py/checks/__init__.py holds the
// same list for Python).
func isCheckVerdict(v string) bool {
	return v == verdictNone || slices.Contains(problem.FailureVerdicts(), v)
}

const defaultOrder = 100

var (
	// A declaration line: KEY = "text" (no quote or backslash inside, so
	// Python and Go read the same string) or ORDER = digits.
	declLine   = regexp.MustCompile(`^([A-Z_]+)\s*=`)
	stringDecl = regexp.MustCompile(`^([A-Z]+) = "([^"\\]*)"$`)
	orderDecl  = regexp.MustCompile(`^ORDER = ([0-9]{1,6})$`)
	identifier = regexp.MustCompile(`^[a-z][a-z0-9_]*$`)
)

// The keys a check module declares; ORDER is optional.
var checkKeys = map[string]bool{"NAME": true, "STAGE": true, "VERDICT": true, "DESCRIPTION": true, "ORDER": true}

// ParseChecks reads the registry of a worker's Python tree, sorted by name.
func ParseChecks(src fs.FS) ([]CheckInfo, error) {
	ents, err := fs.ReadDir(src, ChecksDir)
	if err != nil {
		return nil, fmt.Errorf("check registry: %w", err)
	}
	var out []CheckInfo
	for _, e := range ents {
		name, ok := strings.CutSuffix(e.Name(), ".py")
		// Python's pkgutil skips packages and private modules as well.
		if e.IsDir() || !ok || strings.HasPrefix(name, "_") {
			continue
		}
		b, err := fs.ReadFile(src, path.Join(ChecksDir, e.Name()))
		if err != nil {
			return nil, fmt.Errorf("check registry: %w", err)
		}
		c, err := ParseCheck(name, b)
		if err != nil {
			return nil, fmt.Errorf("check registry: %s/%s: %w", ChecksDir, e.Name(), err)
		}
		out = append(out, c)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("check registry: no check modules in %s/", ChecksDir)
	}
	table := path.Join(ChecksDir, DeclaredFile)
	b, err := fs.ReadFile(src, table)
	if err != nil {
		return nil, fmt.Errorf("check registry: %w", err)
	}
	declared, err := ParseDeclared(b)
	if err != nil {
		return nil, fmt.Errorf("check registry: %s: %w", table, err)
	}
	out = append(out, declared...)
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	for i := 1; i < len(out); i++ {
		if out[i].Name == out[i-1].Name {
			return nil, fmt.Errorf("check registry: check %s declared twice (a module of %s/ and %s, or twice in %s)",
				out[i].Name, ChecksDir, table, table)
		}
	}
	return out, nil
}

var (
	// The table of _declared.py: its opening and closing lines, an
	// entry's two lines, and the lines allowed around entries.
	tableOpen   = regexp.MustCompile(`^DECLARED = \($`)
	tableClose  = regexp.MustCompile(`^\)$`)
	entryHead   = regexp.MustCompile(`^    \("([^"\\]*)", "([^"\\]*)", "([^"\\]*)",$`)
	entryDesc   = regexp.MustCompile(`^     "([^"\\]*)"\),$`)
	commentLine = regexp.MustCompile(`^\s*(#.*)?$`)
)

// ParseDeclared reads checks/_declared.py: a docstring, then the table
// DECLARED = ( ... ) of two-line entries, comments and blank lines between
// them and after it, nothing else. Each entry is held to what a module's
// declarations are (its name standing in for the file's).
func ParseDeclared(src []byte) ([]CheckInfo, error) {
	lines := strings.Split(strings.TrimSuffix(string(src), "\n"), "\n")
	i := 0
	// The docstring: from a first line opening with """ to the line that closes it.
	if len(lines) == 0 || !strings.HasPrefix(lines[0], `"""`) {
		return nil, fmt.Errorf(`line 1: must open the docstring with """`)
	}
	for rest := lines[0][3:]; !strings.HasSuffix(rest, `"""`); rest = lines[i] {
		if strings.Contains(rest, `"""`) {
			return nil, fmt.Errorf(`line %d: the docstring must close at a line's end`, i+1)
		}
		i++
		if i == len(lines) {
			return nil, fmt.Errorf("the docstring never closes")
		}
	}
	i++
	for ; i < len(lines) && commentLine.MatchString(lines[i]); i++ {
	}
	if i == len(lines) || !tableOpen.MatchString(lines[i]) {
		return nil, fmt.Errorf("line %d: want DECLARED = ( after the docstring", i+1)
	}
	var out []CheckInfo
	closed := false
	for i++; i < len(lines); i++ {
		line := strings.TrimSuffix(lines[i], "\r")
		switch {
		case closed || commentLine.MatchString(line):
			if !commentLine.MatchString(line) {
				return nil, fmt.Errorf("line %d: only comments may follow the table: %q", i+1, line)
			}
		case tableClose.MatchString(line):
			closed = true
		default:
			h := entryHead.FindStringSubmatch(line)
			if h == nil {
				return nil, fmt.Errorf(`line %d: an entry opens with ("name", "stage", "verdict", alone on its line: %q`, i+1, line)
			}
			if i+1 == len(lines) {
				return nil, fmt.Errorf("line %d: entry %s has no description line", i+1, h[1])
			}
			d := entryDesc.FindStringSubmatch(strings.TrimSuffix(lines[i+1], "\r"))
			if d == nil {
				return nil, fmt.Errorf(`line %d: entry %s: its second line must read "<description>"), (no quotes or backslashes inside): %q`, i+2, h[1], lines[i+1])
			}
			c := CheckInfo{Name: h[1], Stage: h[2], Verdict: h[3], Description: d[1], Order: defaultOrder}
			if err := c.validate(c.Name); err != nil {
				return nil, fmt.Errorf("line %d: %w", i+1, err)
			}
			out = append(out, c)
			i++
		}
	}
	if !closed {
		return nil, fmt.Errorf("the table DECLARED = ( never closes")
	}
	return out, nil
}

// ParseCheck reads one check module (name: its file name without .py).
func ParseCheck(name string, src []byte) (CheckInfo, error) {
	c := CheckInfo{Order: defaultOrder}
	seen := map[string]bool{}
	for i, line := range strings.Split(string(src), "\n") {
		line = strings.TrimSuffix(line, "\r")
		m := declLine.FindStringSubmatch(line)
		if m == nil || !checkKeys[m[1]] {
			continue // code, comments, other names
		}
		key := m[1]
		if seen[key] {
			return c, fmt.Errorf("line %d: %s declared twice", i+1, key)
		}
		seen[key] = true
		if err := c.set(key, line); err != nil {
			return c, fmt.Errorf("line %d: %w", i+1, err)
		}
	}
	for _, key := range []string{"NAME", "STAGE", "VERDICT", "DESCRIPTION"} {
		if !seen[key] {
			return c, fmt.Errorf("no %s declared", key)
		}
	}
	return c, c.validate(name)
}

// set reads one declaration line into c.
func (c *CheckInfo) set(key, line string) error {
	if key == "ORDER" {
		m := orderDecl.FindStringSubmatch(line)
		if m == nil {
			return fmt.Errorf("ORDER must read ORDER = <integer>: %q", line)
		}
		c.Order, _ = strconv.Atoi(m[1])
		return nil
	}
	m := stringDecl.FindStringSubmatch(line)
	if m == nil {
		return fmt.Errorf(`%s must read %s = "<text without quotes or backslashes>" alone on its line: %q`, key, key, line)
	}
	switch key {
	case "NAME":
		c.Name = m[2]
	case "STAGE":
		c.Stage = m[2]
	case "VERDICT":
		c.Verdict = m[2]
	case "DESCRIPTION":
		c.Description = m[2]
	}
	return nil
}

func (c CheckInfo) validate(file string) error {
	switch {
	case c.Name != file || !identifier.MatchString(c.Name):
		return fmt.Errorf("NAME %q must be the module's file name (%s)", c.Name, file)
	case !identifier.MatchString(c.Stage):
		return fmt.Errorf("STAGE %q is not a stage name", c.Stage)
	case strings.TrimSpace(c.Description) == "":
		return fmt.Errorf("empty DESCRIPTION")
	}
	for _, v := range c.Verdicts() {
		if !isCheckVerdict(v) {
			return fmt.Errorf("VERDICT %q: %q is not a verdict", c.Verdict, v)
		}
	}
	return nil
}

var (
	embChecksOnce sync.Once
	embChecks     []CheckInfo
	embChecksErr  error
)

// EmbeddedChecks is the registry this binary carries.
func EmbeddedChecks() ([]CheckInfo, error) {
	embChecksOnce.Do(func() { embChecks, embChecksErr = ParseChecks(Embedded()) })
	return slices.Clone(embChecks), embChecksErr
}
