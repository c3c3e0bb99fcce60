package worker

// The check registry, read from the worker's Python tree: every module of
// checks/ declares one check as plain literals at the start of its lines
// (py/checks/__init__.py documents the format; Python imports the same
// modules). Go parses them without Python, strictly: a module it cannot
// read is an error, so the catalogue the MCP server serves
// (kevolve://checks) and the checks that run never disagree.

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

// CheckInfo is one registered check.
type CheckInfo struct {
	Name        string // its name in results (checks/<name>.py)
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
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
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
