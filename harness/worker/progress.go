package worker

// A job's progress events: the stage it is in, how far each stage got and
// the partial figures it reported, kept in the Outcome as they come, so a
// job the deadline kills still says what it had done (issue 36: a 600 s
// timeout answered with nothing but its verdict).

import (
	"encoding/json"
	"time"
)

// Step is how far a progress stage got: the done and total of its last
// event (total 0 where the stage does not know its end).
type Step struct {
	Done  int `json:"done"`
	Total int `json:"total"`
}

// progressed records a progress event at now and passes it on to the
// job's Progress.
func (r *jobRun) progressed(ev event, now time.Time) {
	r.enter(ev.Stage, now)
	r.out.Stage = ev.Stage
	if ev.Done > 0 || ev.Total > 0 {
		if r.out.Steps == nil {
			r.out.Steps = map[string]Step{}
		}
		r.out.Steps[ev.Stage] = Step{Done: ev.Done, Total: ev.Total}
	}
	r.addFigures(ev.Stage, ev.Figures)
	if r.job.Progress != nil {
		r.job.Progress(ev.Stage, ev.Done, ev.Total)
	}
}

// maxFigures bounds the figures kept, stages and keys each: the child can
// send any number of events.
const maxFigures = 32

// addFigures merges an event's figures into the stage's: a later value of
// a key replaces the earlier one. Figures that are not an object are
// dropped (they come from the child, which runs the candidate's code).
func (r *jobRun) addFigures(stage string, raw json.RawMessage) {
	if len(raw) == 0 {
		return
	}
	var f map[string]json.RawMessage
	if err := json.Unmarshal(raw, &f); err != nil || len(f) == 0 {
		return
	}
	if r.out.Figures == nil {
		r.out.Figures = map[string]map[string]json.RawMessage{}
	}
	if r.out.Figures[stage] == nil {
		if len(r.out.Figures) >= maxFigures {
			return
		}
		r.out.Figures[stage] = map[string]json.RawMessage{}
	}
	for k, v := range f {
		if _, ok := r.out.Figures[stage][k]; ok || len(r.out.Figures[stage]) < maxFigures {
			r.out.Figures[stage][k] = v
		}
	}
}
