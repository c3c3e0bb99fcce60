package harness

import (
	"fmt"

	"github.com/kevolve/kevolve-mcp/harness/worker"
)

// evalBuildStages are the evaluation's stages in which the candidate
// builds (its import runs load_inline, its constructor may compile): their
// time lost to the host's load extends the deadline beyond the load grant
// (harness/worker/build.go, issue 32 item 6).
var evalBuildStages = []string{"load_candidate", "init"}

// buildLoadTimeout is the harness's error for a job the deadline killed in
// a build stage that lost more to the host's load than it was granted: the
// host, not the candidate, ran its time out, so there is no verdict to give
// (a sweep counts it as a tool error and judges the pair again on --rerun).
func buildLoadTimeout(r *evalRun, out *worker.Outcome) error {
	if !out.TimedOut || !out.BuildLoadTimeout {
		return nil
	}
	return fmt.Errorf("evaluate: build_load_timeout: the candidate's build ran out of time in stage %q because of the host's load, not the candidate: %s (timeout %s); evaluate it again with fewer evaluations at once or a longer timeout",
		out.Stage, out.Build, r.req.Timeout)
}

// buildGrant states a grant for the builds in a deadline's detail.
func buildGrant(g worker.BuildGrant) string {
	if g.Lost <= 0 {
		return ""
	}
	return " (" + g.String() + ")"
}

// addBuildGrant notes, in a result the child reported, what its builds lost
// to the host's load and were granted.
func addBuildGrant(res *EvalResult, out *worker.Outcome) {
	if out.Build.Granted > 0 {
		res.Notes = append(res.Notes, "build_load: "+out.Build.String())
	}
}
