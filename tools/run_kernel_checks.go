package tools

// run_kernel's catalogue of checks, read from the harness's check registry
// (harness/worker/py/checks/: a Python module per check that runs, the
// table _declared.py of those decided inline): a check added there is
// listed here with no other edit. The catalogue is the resource
// kevolve://checks; run_kernel's description names it and counts the
// checks instead of listing them, which kept that description at 7 K.

import (
	"fmt"
	"slices"
	"strings"

	"github.com/kevolve/kevolve-mcp/harness"
	"github.com/kevolve/kevolve-mcp/harness/problem"
)

// noVerdict is the registry's verdict of a check that only records what
// the harness did.
const noVerdict = "none"

// registeredChecks is the registry of the evaluator's worker, or the
// binary's own where there is no evaluator (the same unless a caller built
// the evaluator over another tree).
func registeredChecks(ev *harness.Evaluator) ([]harness.CheckInfo, error) {
	if ev != nil {
		return ev.Checks(), nil
	}
	return harness.EmbeddedChecks()
}

// tolerancesText is how allclose and relative_norm compare, per dtype; the
// worker's evaluate.compare.compare.DEFAULT_TOL holds the numbers.
const tolerancesText = "Tolerances of allclose and relative_norm (atol / rtol / rel_norm), dtype-aware: fp32 1e-4 / 1e-4 / 1e-3, " +
	"fp16 1e-2 / 1e-2 / 1e-2, bf16 2e-2 / 2e-2 / 2e-2, fp64 1e-7 / 1e-7 / 1e-6, unless the problem sets its own " +
	"(KernelBench today: allclose 1e-4 fp32, 1e-2 fp16/bf16; its v0/v0.1 used 1e-2 for fp32 too)."

// checksMarkdown is the catalogue: every check under the verdict its
// failure gives, the verdicts in the order the harness ranks them.
func checksMarkdown(cs []harness.CheckInfo) string {
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
	fmt.Fprintf(&b, "# run_kernel's checks\n\nEvery evaluation runs these %d checks; a result lists each by name with passed and a detail. "+
		"Verdicts: %s. Below, each check (name, stage: what passing means) under the verdict its failure gives.\n", len(cs), strings.Join(problem.Verdicts, ", "))
	for _, k := range keys {
		label := k
		if k == noVerdict {
			label = "never failing (records of what the harness did)"
		}
		fmt.Fprintf(&b, "\n## %s\n\n", label)
		for _, c := range groups[k] { // by name, as the registry lists them
			fmt.Fprintf(&b, "- %s (%s): %s\n", c.Name, c.Stage, c.Description)
		}
	}
	b.WriteString("\n## Tolerances\n\n" + tolerancesText + "\n")
	return b.String()
}

// rankOf places a VERDICT ("a or b") by its first verdict: the failures in
// problem.FailureVerdicts' order, then the records.
func rankOf(verdict string) int {
	first, _, _ := strings.Cut(verdict, " or ")
	order := append(problem.FailureVerdicts(), noVerdict)
	if i := slices.Index(order, first); i >= 0 {
		return i
	}
	return len(order)
}
