package worker

import (
	"io/fs"
	"regexp"
	"slices"
	"testing"

	"github.com/kevolve/kevolve-mcp/harness/problem"
)

// Python cannot import Go's list of verdicts, so checks/__init__.py keeps
// a copy: it must be problem.FailureVerdicts and "none", in that order.
func TestPythonVerdictsMatchGo(t *testing.T) {
	src, err := fs.ReadFile(Embedded(), ChecksDir+"/__init__.py")
	if err != nil {
		t.Fatal(err)
	}
	tuple := regexp.MustCompile(`(?s)\nVERDICTS = \(([^)]*)\)`).FindSubmatch(src)
	if tuple == nil {
		t.Fatal("checks/__init__.py declares no VERDICTS = (...)")
	}
	var py []string
	for _, m := range regexp.MustCompile(`"([a-z_]+)"`).FindAllSubmatch(tuple[1], -1) {
		py = append(py, string(m[1]))
	}
	want := append(slices.Clone(problem.FailureVerdicts()), verdictNone)
	if !slices.Equal(py, want) {
		t.Errorf("checks/__init__.py VERDICTS = %q, want %q (harness/problem.Verdicts)", py, want)
	}
}
