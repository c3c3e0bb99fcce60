package fleet

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/kevolve/kevolve-mcp/harness"
	"github.com/kevolve/kevolve-mcp/search"
)

// recordingEval keeps every result an evaluator returns, so a benchmark set
// can say where its evaluations spent their time (phaseReport). It passes
// EvaluateFresh on where the evaluator has it.
type recordingEval struct {
	search.Evaluator
	mu    sync.Mutex
	spans []evalSpan
}

// evalSpan is one evaluation's result and when it ran, as the caller saw
// it: with the result's own stages, a timeline of the set (KEVOLVE_GPU_RAW).
type evalSpan struct {
	Problem string         `json:"problem"`
	Start   time.Time      `json:"start"`
	End     time.Time      `json:"end"`
	Result  *search.Result `json:"-"`
}

func (r *recordingEval) keep(p search.Problem, t0 time.Time, res *search.Result) {
	if res == nil {
		return
	}
	r.mu.Lock()
	r.spans = append(r.spans, evalSpan{Problem: p.Name, Start: t0, End: time.Now(), Result: res})
	r.mu.Unlock()
}

func (r *recordingEval) Evaluate(ctx context.Context, p search.Problem, code string) (*search.Result, error) {
	t0 := time.Now()
	res, err := r.Evaluator.Evaluate(ctx, p, code)
	r.keep(p, t0, res)
	return res, err
}

func (r *recordingEval) EvaluateFresh(ctx context.Context, p search.Problem, code string) (*search.Result, error) {
	fe, ok := r.Evaluator.(search.FreshEvaluator)
	if !ok {
		return r.Evaluate(ctx, p, code)
	}
	t0 := time.Now()
	res, err := fe.EvaluateFresh(ctx, p, code)
	r.keep(p, t0, res)
	return res, err
}

// take returns the spans kept so far and forgets them; with
// KEVOLVE_GPU_RAW set, it first appends them to that file (the harness's
// result of each), under the label part, for a timeline of the set.
func (r *recordingEval) take(part string) []evalSpan {
	r.mu.Lock()
	defer r.mu.Unlock()
	if path := os.Getenv("KEVOLVE_GPU_RAW"); path != "" {
		if f, err := os.OpenFile(path, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644); err == nil {
			enc := json.NewEncoder(f)
			for _, sp := range r.spans {
				enc.Encode(struct {
					Part string `json:"part"`
					evalSpan
					Result json.RawMessage `json:"result,omitempty"`
				}{part, sp, sp.Result.Raw})
			}
			f.Close()
		}
	}
	spans := r.spans
	r.spans = nil
	return spans
}

// resultsOf is the spans' results.
func resultsOf(spans []evalSpan) []*search.Result {
	out := make([]*search.Result, len(spans))
	for i, sp := range spans {
		out[i] = sp.Result
	}
	return out
}

// steady is the evaluations per hour between the tenth and the ninetieth
// percentile of the spans' completions (cache hits left out): the rate
// with every search running, without the start, where each search
// evaluates its root alone, and the end, where the last searches finish
// while the others have stopped. A set on 4 GPUs is a quarter as long as
// on one, so those two weigh four times as much in its whole-set rate.
func steady(spans []evalSpan) float64 {
	var ends []time.Time
	for _, sp := range spans {
		if _, ok := measured(sp.Result); ok {
			ends = append(ends, sp.End)
		}
	}
	if len(ends) < 10 {
		return 0
	}
	sort.Slice(ends, func(i, j int) bool { return ends[i].Before(ends[j]) })
	lo, hi := len(ends)/10, len(ends)*9/10
	d := ends[hi].Sub(ends[lo])
	if d <= 0 {
		return 0
	}
	return float64(hi-lo) / d.Hours()
}

// phaseReport is where a set's evaluations went, from the harness results
// they carry (search.Result.Raw): per device the evaluations, the share of
// the set's wall the device was held in a device phase and the phase's
// median length; which children ran them (kept from an earlier evaluation,
// or fresh, with the CUDA context a fresh one made) and why children were
// not kept; and each stage's mean seconds outside and inside the device
// phase. One GPU that is device-bound and several that do not scale differ
// in one of these: a device idle for lack of ready evaluations (busy share
// well under 1), a device phase that grows with the GPU count (a stage
// inside it that contends across GPUs: driver calls, CPU), or fresh
// children (contexts made and torn down one process at a time host-wide).
type phaseReport struct {
	Evaluations int                  `json:"evaluations"`
	Devices     map[int]*devicePhase `json:"devices"`
	HeldMedianS float64              `json:"device_phase_median_s"`
	Reused      int                  `json:"reused_children"`
	Fresh       int                  `json:"fresh_children"`
	NotKept     map[string]int       `json:"not_kept,omitempty"`
	// Alone counts evaluations run again with the device to themselves
	// after running out of its memory beside others (harness crowded.go).
	Alone    int                  `json:"run_again_alone"`
	ContextS float64              `json:"fresh_cuda_context_median_s"`
	Stages   map[string]*stageUse `json:"stages"`
	// Judge is the judge's own mean seconds per phase of its verify stage
	// (harness.JudgeReport.PhaseS), over the evaluations it verified.
	Judge map[string]float64 `json:"judge_phase_s,omitempty"`
	// Steady is the set's steady rate, evaluations per hour (steady).
	Steady float64 `json:"steady_per_hour"`
}

type devicePhase struct {
	Evaluations int     `json:"evaluations"`
	HeldS       float64 `json:"held_s"`
	Busy        float64 `json:"busy_share"`
	MedianS     float64 `json:"device_phase_median_s"`
	held        []float64
}

// stageUse is a stage's mean seconds per evaluation that ran it.
type stageUse struct {
	Evaluations int     `json:"evaluations"`
	OutsideS    float64 `json:"outside_s"`
	InsideS     float64 `json:"inside_s"`
}

// Keys of stage_s that are not a stage of the child's progress.
var notStages = map[string]bool{harness.StageDeviceHeld: true, harness.StagePrepareBuild: true, "load_candidate_cpu": true}

func newPhaseReport(results []*search.Result, wall time.Duration) *phaseReport {
	p := &phaseReport{Devices: map[int]*devicePhase{}, NotKept: map[string]int{}, Stages: map[string]*stageUse{}, Judge: map[string]float64{}}
	var held, contexts []float64
	verified := 0
	for _, r := range results {
		hr, ok := measured(r)
		if !ok {
			continue
		}
		p.Evaluations++
		d := p.Devices[hr.DeviceIndex]
		if d == nil {
			d = &devicePhase{}
			p.Devices[hr.DeviceIndex] = d
		}
		d.Evaluations++
		if h := hr.StageS[harness.StageDeviceHeld]; h > 0 {
			d.HeldS += h
			d.held = append(d.held, h)
			held = append(held, h)
		}
		if hr.Process != nil && hr.Process.Job > 1 {
			p.Reused++
		} else {
			p.Fresh++
			if c, ok := hr.StageS["cuda_context"]; ok {
				contexts = append(contexts, c)
			}
		}
		if hr.Process != nil && !hr.Process.Kept {
			p.NotKept[shortWhy(hr.Process.Why)]++
		}
		for _, w := range hr.Warnings {
			if strings.Contains(w, "evaluated again with the device to itself") {
				p.Alone++
			}
		}
		if hr.Judge != nil && len(hr.Judge.PhaseS) > 0 {
			verified++
			for k, v := range hr.Judge.PhaseS {
				p.Judge[k] += v
			}
		}
		for k, v := range hr.StageS {
			name, inside := k, 0.0
			if s, ok := strings.CutPrefix(k, harness.StageHeldPrefix); ok {
				if _, has := hr.StageS[s]; has {
					continue // counted with its stage
				}
				name, inside = s, v // a stage the child kept no seconds of
			} else if notStages[k] {
				continue
			} else {
				inside = min(v, hr.StageS[harness.StageHeldPrefix+k])
			}
			u := p.Stages[name]
			if u == nil {
				u = &stageUse{}
				p.Stages[name] = u
			}
			u.Evaluations++
			u.OutsideS += max(0, v-inside)
			u.InsideS += inside
		}
	}
	for _, u := range p.Stages {
		u.OutsideS /= float64(u.Evaluations)
		u.InsideS /= float64(u.Evaluations)
	}
	for k := range p.Judge {
		p.Judge[k] /= float64(verified)
	}
	for _, d := range p.Devices {
		if wall > 0 {
			d.Busy = d.HeldS / wall.Seconds()
		}
		d.MedianS = median(d.held)
	}
	p.HeldMedianS, p.ContextS = median(held), median(contexts)
	return p
}

// measured is r's harness result, and false for an answer that measured
// nothing (a cache hit of the search's or of the harness's, or no result).
func measured(r *search.Result) (harness.EvalResult, bool) {
	var hr harness.EvalResult
	if r == nil || r.Cached || len(r.Raw) == 0 || json.Unmarshal(r.Raw, &hr) != nil || hr.Cached {
		return hr, false
	}
	return hr, true
}

// shortWhy keeps a not-kept reason short enough to count by.
func shortWhy(why string) string {
	if why == "" {
		return "(no reason given)"
	}
	if len(why) > 80 {
		return why[:80] + "..."
	}
	return why
}

func median(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := append([]float64(nil), xs...)
	sort.Float64s(s)
	if n := len(s); n%2 == 1 {
		return s[n/2]
	} else {
		return (s[n/2-1] + s[n/2]) / 2
	}
}

// lines is the report as a few log lines.
func (p *phaseReport) lines() []string {
	var idx []int
	for i := range p.Devices {
		idx = append(idx, i)
	}
	sort.Ints(idx)
	var devs []string
	for _, i := range idx {
		d := p.Devices[i]
		devs = append(devs, fmt.Sprintf("%d: %d evals, busy %.0f%%, phase median %.3f s", i, d.Evaluations, 100*d.Busy, d.MedianS))
	}
	type row struct {
		name string
		u    *stageUse
	}
	var rows []row
	for n, u := range p.Stages {
		rows = append(rows, row{n, u})
	}
	// The device phase's stages first, longest first; then the others.
	sort.Slice(rows, func(i, j int) bool {
		a, b := rows[i].u, rows[j].u
		if a.InsideS != b.InsideS {
			return a.InsideS > b.InsideS
		}
		if a.OutsideS != b.OutsideS {
			return a.OutsideS > b.OutsideS
		}
		return rows[i].name < rows[j].name
	})
	var inside, outside []string
	for _, r := range rows {
		s := fmt.Sprintf("%s %.3f", r.name, r.u.InsideS)
		if r.u.InsideS >= 0.0005 {
			if r.u.OutsideS >= 0.0005 {
				s += fmt.Sprintf(" (+%.3f outside)", r.u.OutsideS)
			}
			inside = append(inside, s)
		} else if r.u.OutsideS >= 0.0005 {
			outside = append(outside, fmt.Sprintf("%s %.3f", r.name, r.u.OutsideS))
		}
	}
	nk := make([]string, 0, len(p.NotKept))
	for why, n := range p.NotKept {
		nk = append(nk, fmt.Sprintf("%d: %s", n, why))
	}
	sort.Strings(nk)
	return []string{
		fmt.Sprintf("devices (busy = device phase held / set wall): %s", strings.Join(devs, "; ")),
		fmt.Sprintf("device phase: median %.3f s over %d evaluations", p.HeldMedianS, p.Evaluations),
		fmt.Sprintf("children: %d evaluations in a kept child, %d in a fresh one (cuda_context median %.3f s); not kept: %s; run again alone after a device out-of-memory: %d",
			p.Reused, p.Fresh, p.ContextS, strings.Join(nk, "; "), p.Alone),
		"seconds per evaluation inside the device phase: " + strings.Join(inside, ", "),
		"seconds per evaluation outside it: " + strings.Join(outside, ", "),
		"the judge's seconds per verified evaluation: " + judgeLine(p.Judge),
	}
}

// judgeLine is the judge's phases, longest first.
func judgeLine(phases map[string]float64) string {
	names := make([]string, 0, len(phases))
	for k := range phases {
		names = append(names, k)
	}
	sort.Slice(names, func(i, j int) bool { return phases[names[i]] > phases[names[j]] })
	parts := make([]string, len(names))
	for i, k := range names {
		parts[i] = fmt.Sprintf("%s %.3f", k, phases[k])
	}
	return strings.Join(parts, ", ")
}

// The benchmark's report from harness results: busy shares, medians,
// children, and stages split at the device phase.
func TestPhaseReport(t *testing.T) {
	mk := func(dev, job int, kept bool, why string, stages map[string]float64) *search.Result {
		hr := harness.EvalResult{DeviceIndex: dev, StageS: stages}
		if job > 0 {
			hr.Process = &harness.ProcessUse{Job: job, Kept: kept, Why: why}
		}
		raw, err := json.Marshal(hr)
		if err != nil {
			t.Fatal(err)
		}
		return &search.Result{Raw: raw}
	}
	judged := func(r *search.Result, phases map[string]float64) *search.Result {
		var hr harness.EvalResult
		if err := json.Unmarshal(r.Raw, &hr); err != nil {
			t.Fatal(err)
		}
		hr.Judge = &harness.JudgeReport{Status: "verified", PhaseS: phases}
		r.Raw, _ = json.Marshal(hr)
		return r
	}
	results := []*search.Result{
		judged(mk(0, 1, true, "", map[string]float64{"cuda_context": 2.0, "load_candidate": 0.5, "wait_device": 3, "held:wait_device": 0.001,
			"correctness": 0.4, "held:correctness": 0.4, "verify": 0.7, "held:verify": 0.6, harness.StageDeviceHeld: 1.0}), map[string]float64{"trials": 0.2, "unseen_shapes": 0.3}),
		judged(mk(0, 2, false, "verdict runtime_error", map[string]float64{"load_candidate": 0.3, "correctness": 0.2, "held:correctness": 0.2,
			"verify": 0.5, "held:verify": 0.5, harness.StageDeviceHeld: 0.8}), map[string]float64{"trials": 0.1}),
		mk(1, 3, true, "", map[string]float64{"correctness": 0.3, "held:correctness": 0.3, "held:poison": 0.1, harness.StageDeviceHeld: 0.5}),
		{Cached: true, Raw: []byte(`{"device_index":1,"stage_s":{"device_held":9}}`)},
	}
	p := newPhaseReport(results, 2*time.Second)
	for _, l := range p.lines() {
		t.Log(l)
	}
	if p.Evaluations != 3 || p.Reused != 2 || p.Fresh != 1 || p.NotKept["verdict runtime_error"] != 1 || len(p.NotKept) != 1 {
		t.Errorf("counts: %+v", p)
	}
	if d := p.Devices[0]; d.Evaluations != 2 || d.Busy != 0.9 || d.MedianS != 0.9 {
		t.Errorf("device 0: %+v, want 2 evaluations, busy 0.9, median 0.9", d)
	}
	if d := p.Devices[1]; d.Evaluations != 1 || d.Busy != 0.25 {
		t.Errorf("device 1: %+v (the cached result is not an evaluation)", d)
	}
	if p.HeldMedianS != 0.8 || p.ContextS != 2.0 {
		t.Errorf("medians: device phase %v, context %v", p.HeldMedianS, p.ContextS)
	}
	near := func(a, b float64) bool { return a-b < 1e-9 && b-a < 1e-9 }
	if v := p.Stages["verify"]; v.Evaluations != 2 || !near(v.InsideS, 0.55) || !near(v.OutsideS, 0.05) {
		t.Errorf("verify: %+v, want inside 0.55, outside 0.05 a evaluation", v)
	}
	if c := p.Stages["correctness"]; !near(c.InsideS, 0.3) || c.OutsideS != 0 {
		t.Errorf("correctness: %+v", c)
	}
	if w := p.Stages["wait_device"]; !near(w.OutsideS, 2.999) || !near(w.InsideS, 0.001) {
		t.Errorf("wait_device: %+v", w)
	}
	// Means over the two verified evaluations; a phase one lacks counts 0 there.
	if j := p.Judge; len(j) != 2 || !near(j["trials"], 0.15) || !near(j["unseen_shapes"], 0.15) {
		t.Errorf("judge phases: %v, want trials 0.15, unseen_shapes 0.15", j)
	}
	if s := p.Stages["poison"]; s == nil || !near(s.InsideS, 0.1) {
		t.Errorf("a held stage without the child's seconds: %+v", s)
	}
	if _, ok := p.Stages[harness.StageDeviceHeld]; ok {
		t.Errorf("device_held counted as a stage")
	}
}

// The steady rate counts the completions between the tenth and the
// ninetieth percentile of their times, leaving out a slow start and a
// slow end and the cache hits; fewer than 10 evaluations give none.
func TestSteadyRate(t *testing.T) {
	t0 := time.Date(2026, 11, 28, 0, 0, 0, 0, time.UTC)
	spans := func(ends []float64, cached int) []evalSpan {
		var out []evalSpan
		for i, e := range ends {
			raw := `{"cached":false}`
			if i < cached {
				raw = `{"cached":true}`
			}
			out = append(out, evalSpan{Start: t0, End: t0.Add(time.Duration(e * float64(time.Second))), Result: &search.Result{Raw: json.RawMessage(raw)}})
		}
		return out
	}
	every := func(n int, step, from float64) []float64 {
		var out []float64
		for i := range n {
			out = append(out, from+float64(i)*step)
		}
		return out
	}
	// 20 completions a second apart after a 30 s start, then two stragglers.
	ramped := append(every(20, 1, 30), 100, 200)
	cases := []struct {
		name   string
		spans  []evalSpan
		perHrs float64
	}{
		{"even", spans(every(100, 1, 0), 0), 3600},
		{"a slow start and end", spans(ramped, 0), 3600},
		{"cache hits at the start left out", spans(append(every(5, 0.001, 0), every(100, 2, 10)...), 5), 1800},
		{"too few", spans(every(9, 1, 0), 0), 0},
	}
	for _, c := range cases {
		if got := steady(c.spans); math.Abs(got-c.perHrs) > 1e-6*c.perHrs+1e-9 {
			t.Errorf("%s: %.3f evaluations/hour, want %.3f", c.name, got, c.perHrs)
		}
	}
}
