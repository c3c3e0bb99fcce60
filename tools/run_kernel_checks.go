package tools

// run_kernel's list of checks, read from the harness's check registry (one
// Python module per check, harness/worker/py/checks/): a check added there
// is listed here with no other edit.

import (
	"fmt"
	"slices"
	"strings"

	"github.com/kevolve/kevolve-mcp/harness"
)

// verdictRank orders the groups: the verdicts that outrank others first,
// as the harness ranks them, and the records that never fail last.
var verdictRank = []string{harness.VerdictIntegrityViolation, harness.VerdictIncorrect, harness.VerdictCompileError,
	harness.VerdictRuntimeError, harness.VerdictTimeout, harness.VerdictCrash, harness.VerdictReferenceError, "none"}

// registeredChecks is the registry of the evaluator's worker, or the
// binary's own where there is no evaluator (the description is the same
// either way unless a caller built the evaluator over another tree).
func registeredChecks(ev *harness.Evaluator) ([]harness.CheckInfo, error) {
	if ev != nil {
		return ev.Checks(), nil
	}
	return harness.EmbeddedChecks()
}

// checksText lists every check under the verdict its failure gives.
func checksText(ev *harness.Evaluator) string {
	cs, err := registeredChecks(ev)
	if err != nil {
		return fmt.Sprintf("The list of checks is unavailable: %v.", err)
	}
	groups := map[string][]harness.CheckInfo{}
	for _, c := range cs {
		groups[c.Verdict] = append(groups[c.Verdict], c)
	}
	keys := make([]string, 0, len(groups))
	for k := range groups {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, func(a, b string) int {
		if ra, rb := rankOf(a), rankOf(b); ra != rb {
			return ra - rb
		}
		return strings.Compare(a, b)
	})
	var b strings.Builder
	b.WriteString("Checks (name: what passing means), by the verdict a failure gives:")
	for _, k := range keys {
		label := k
		if k == "none" {
			label = "never failing (records of what the harness did)"
		}
		fmt.Fprintf(&b, "\n%s:", label)
		for _, c := range groups[k] { // by name, as the registry lists them
			fmt.Fprintf(&b, "\n- %s: %s", c.Name, c.Description)
		}
	}
	return b.String()
}

// rankOf places a VERDICT ("a or b") by its first verdict.
func rankOf(verdict string) int {
	first, _, _ := strings.Cut(verdict, " or ")
	if i := slices.Index(verdictRank, first); i >= 0 {
		return i
	}
	return len(verdictRank)
}
