package kernelbench

import (
	"bufio"
	"os"
	"regexp"
	"strings"
	"testing"

	"github.com/kevolve/kevolve-mcp/harness"
)

// TestRegressTableIsWellFormed checks the committed real-kernel table
// (issue 20) that `make kb-regress-run` compares against: unique ids, a
// source at a pinned commit, a verdict the harness has, a reason, levels 1
// and 2, at least 80 pairs, and no third-party code in it.
func TestRegressTableIsWellFormed(t *testing.T) {
	f, err := os.Open("../testdata/kernelbench/regress.tsv")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	verdicts := map[string]bool{}
	for _, v := range []string{harness.VerdictPass, harness.VerdictIncorrect, harness.VerdictCompileError, harness.VerdictRuntimeError,
		harness.VerdictTimeout, harness.VerdictCrash, harness.VerdictIntegrityViolation, harness.VerdictReferenceError} {
		verdicts[v] = true
	}
	source := regexp.MustCompile(`^[\w.-]+/[\w.-]+@[0-9a-f]{40}:[^#]+#level=[12],task=\d+$`)
	problem := regexp.MustCompile(`^level[12]/\d+_\w+\.py$`)
	ids, problems, levels := map[string]bool{}, map[string]bool{}, map[string]int{}
	var head []string
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if strings.HasPrefix(line, "#") || line == "" {
			continue
		}
		cols := strings.Split(line, "\t")
		if head == nil {
			head = cols
			continue
		}
		if len(cols) != len(head) {
			t.Fatalf("%d columns, want %d: %s", len(cols), len(head), line)
		}
		r := map[string]string{}
		for i, h := range head {
			r[h] = cols[i]
		}
		switch {
		case ids[r["id"]] || problems[r["problem"]]:
			t.Errorf("%s: a second row for the id or problem", r["id"])
		case !source.MatchString(r["source"]) || !problem.MatchString(r["problem"]):
			t.Errorf("%s: source %q or problem %q", r["id"], r["source"], r["problem"])
		case !verdicts[r["expected"]]:
			t.Errorf("%s: expected %q is no verdict", r["id"], r["expected"])
		case len(r["why"]) < 30 || strings.Contains(r["why"], "import torch") || strings.Contains(r["why"], "__global__"):
			t.Errorf("%s: why %q", r["id"], r["why"])
		}
		ids[r["id"]], problems[r["problem"]] = true, true
		levels[r["problem"][:6]]++
	}
	if len(ids) < 80 || levels["level1"] == 0 || levels["level2"] == 0 {
		t.Errorf("%d pairs (%v), want at least 80 over levels 1 and 2", len(ids), levels)
	}
}
