package harness

// What an evaluation that never reported a result had done when it ended
// (the deadline, the host memory limit, a crash): the seconds of the
// stages it reached on Go's clock, how far each got, and the timing
// figures it had reported so far. A 600 s timeout answered with nothing
// but its verdict (issue 36); the operator needs to know whether the
// candidate was slow, the reference huge, or the timing merely long.

import (
	"encoding/json"
	"fmt"
	"sort"
	"strings"

	"github.com/kevolve/kevolve-mcp/harness/worker"
)

// Partial is what an unfinished evaluation had done. Its figures come from
// the evaluation process's progress events: the candidate's code ran
// there, so they are informative, never the verdict's or the fitness's.
type Partial struct {
	// Stage is the stage it was in when it ended.
	Stage string `json:"stage"`
	// Steps is how far each stage got: done of total (correctness: trials;
	// timing: iterations timed, total 0).
	Steps map[string]worker.Step `json:"steps,omitempty"`
	// Candidate and RefEager are the timing's figures so far, where it had
	// reported some (about once a second).
	Candidate *Stats `json:"candidate,omitempty"`
	RefEager  *Stats `json:"ref_eager,omitempty"`
}

// addPartial fills an unreported result with what its job had done: the
// stages' seconds in stage_s and the Partial.
func addPartial(r *evalRun, res *EvalResult, out *worker.Outcome) {
	res.StageS = stageSeconds(out)
	if r.prepS > 0 {
		res.StageS[StagePrepareBuild] = r.prepS
	}
	addDevicePhase(res, out)
	if out.Stage == "" {
		return // it ended before its first stage: nothing to tell
	}
	p := &Partial{Stage: out.Stage, Steps: out.Steps}
	timing := out.Figures["timing"]
	p.Candidate, p.RefEager = figureStats(timing["candidate"]), figureStats(timing["ref_eager"])
	res.Partial = p
}

// stageSeconds is each progress stage's seconds on Go's clock, inside the
// device phase and outside it together.
func stageSeconds(out *worker.Outcome) map[string]float64 {
	s := make(map[string]float64, len(out.Stages))
	for name, st := range out.Stages {
		s[name] = round4((st.Outside + st.Inside).Seconds())
	}
	return s
}

// figureStats decodes a timing's figures; nil where there are none or
// they do not read as timing stats.
func figureStats(raw json.RawMessage) *Stats {
	if len(raw) == 0 {
		return nil
	}
	var s Stats
	if err := json.Unmarshal(raw, &s); err != nil || s.Iters <= 0 {
		return nil
	}
	return &s
}

// stepsDone words how far the stages got, for a check's detail: "
// (correctness 2/5, timing 10)"; "" where no stage counted.
func stepsDone(steps map[string]worker.Step) string {
	names := make([]string, 0, len(steps))
	for n := range steps {
		names = append(names, n)
	}
	sort.Strings(names)
	parts := make([]string, 0, len(names))
	for _, n := range names {
		st := steps[n]
		if st.Total > 0 {
			parts = append(parts, fmt.Sprintf("%s %d/%d", n, st.Done, st.Total))
		} else {
			parts = append(parts, fmt.Sprintf("%s %d", n, st.Done))
		}
	}
	if len(parts) == 0 {
		return ""
	}
	return "; done: " + strings.Join(parts, ", ")
}
