package kernelbench

import (
	"bytes"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"sync"
	"time"

	"github.com/kevolve/kevolve-mcp/harness"
	"github.com/kevolve/kevolve-mcp/harness/problem"
)

// Options configure a sweep.
type Options struct {
	KB     string // KernelBench checkout (or its KernelBench/ folder)
	Levels []int
	// Candidates is a folder of level{N}/{id}_{name}.py files or a glob
	// pattern; ignored with ReferenceAsCandidate.
	Candidates           string
	ReferenceAsCandidate bool
	Only                 *regexp.Regexp // keeps problems whose key (level1/12_...) matches; nil keeps all
	Target               string         // cpu | nvidia | auto (default)
	Timeout              time.Duration  // per evaluation; 0 = the evaluator's default
	// ToleranceRule also judges each pair under another rule
	// (harness.ToleranceKernelBenchV0), so published numbers compare.
	ToleranceRule string
	// Jobs is how many evaluations are in flight at once (0 = 1; the CLI
	// defaults to DefaultJobs). The evaluator's device gate still times one
	// at a time on a GPU; more jobs overlap loading and compiling with
	// another's timing.
	Jobs int
	DB   *sql.DB // results and resume; nil keeps nothing between runs
	// Rerun evaluates pairs already in the database again.
	Rerun bool
	JSONL string    // file to (re)write with one record per pair; "" for none
	Log   io.Writer // progress; nil for none
	// Verbose prints each tool error whole in the progress lines.
	Verbose bool
}

// ToolError is a pair the harness could not judge.
type ToolError struct {
	Problem   string `json:"problem"`
	Candidate string `json:"candidate"`
	Error     string `json:"error"`
}

// Summary is the outcome of a sweep.
type Summary struct {
	KB             string      `json:"kb"`
	Levels         []int       `json:"levels"`
	Candidates     string      `json:"candidates"`
	Target         string      `json:"target"`
	HarnessVersion string      `json:"harness_version"`
	Problems       int         `json:"problems"`
	Missing        []string    `json:"missing,omitempty"`   // problems without a candidate (not in the denominator)
	Unmatched      []string    `json:"unmatched,omitempty"` // candidate files naming no problem of these levels
	Planned        int         `json:"planned"`             // pairs the sweep set out to evaluate
	Evaluated      int         `json:"evaluated"`
	Resumed        int         `json:"resumed"`
	Metrics        Metrics     `json:"metrics"`
	ToolErrors     []ToolError `json:"tool_errors"`
	WallS          float64     `json:"wall_s"`
	JSONL          string      `json:"jsonl,omitempty"`
	Memory         *Memory     `json:"memory,omitempty"`
	// DeviceBusyShare is the share of the wall in which some evaluation
	// held a device in its device phase (the mean over the devices used),
	// DeviceHeldS those holds summed: near 1, the device limits the sweep;
	// far below, the host's CPU (builds) or the sweep's shape does.
	DeviceBusyShare float64 `json:"device_busy_share,omitempty"`
	DeviceHeldS     float64 `json:"device_held_s,omitempty"`
	// EvalsPerMinute is the pairs evaluated (not resumed) a minute of the
	// wall; DevicePhaseMedianS the median seconds one held its device and
	// TimedMedianS the median of its correctness and timing stages: the
	// device phase's overhead is their ratio (issue 34).
	EvalsPerMinute       float64 `json:"evals_per_minute,omitempty"`
	DevicePhaseMedianS   float64 `json:"device_phase_median_s,omitempty"`
	TimedMedianS         float64 `json:"timed_median_s,omitempty"`
	Interrupted          bool    `json:"interrupted,omitempty"`
	ReferenceAsCandidate bool    `json:"reference_as_candidate,omitempty"`
}

// Run sweeps every pair and returns the summary. A harness failure on a
// pair is a tool error in the summary, never the end of the sweep; Run's
// own error is for what stops it (no problems, an unwritable JSONL file, a
// cancelled context, whose partial summary is returned too).
func Run(ctx context.Context, ev Evaluator, opt Options) (*Summary, error) {
	t0 := time.Now()
	if opt.Target == "" {
		opt.Target = "auto"
	}
	if opt.Jobs <= 0 {
		opt.Jobs = 1
	}
	problems, err := Discover(opt.KB, opt.Levels)
	if err != nil {
		return nil, err
	}
	if opt.Only != nil {
		kept := problems[:0]
		for _, p := range problems {
			if opt.Only.MatchString(p.Key()) {
				kept = append(kept, p)
			}
		}
		problems = kept
		if len(problems) == 0 {
			return nil, fmt.Errorf("no problem of levels %v matches %q", opt.Levels, opt.Only)
		}
	}
	var m Matching
	if opt.ReferenceAsCandidate {
		m, err = ReferencePairs(problems)
	} else {
		m, err = MatchCandidates(problems, opt.Candidates)
	}
	if err != nil {
		return nil, err
	}
	if len(m.Pairs) == 0 {
		return nil, fmt.Errorf("no candidate matches a problem of levels %v (%d problems; candidates %s: want <dir>/level{N}/{id}_{name}.py or a pattern)",
			opt.Levels, len(problems), opt.Candidates)
	}
	var store *Store
	if opt.DB != nil {
		if store, err = OpenStore(opt.DB); err != nil {
			return nil, err
		}
	}
	var jsonl *os.File
	if opt.JSONL != "" {
		if err := os.MkdirAll(filepath.Dir(opt.JSONL), 0o755); err != nil {
			return nil, fmt.Errorf("jsonl folder: %w", err)
		}
		if jsonl, err = os.Create(opt.JSONL); err != nil {
			return nil, fmt.Errorf("jsonl: %w", err)
		}
		defer jsonl.Close()
	}
	sum := &Summary{KB: opt.KB, Levels: opt.Levels, Candidates: opt.Candidates, Target: opt.Target,
		HarnessVersion: ev.Version(), Problems: len(problems), Missing: m.Missing, Unmatched: m.Unmatched,
		Planned: len(m.Pairs), JSONL: opt.JSONL, ReferenceAsCandidate: opt.ReferenceAsCandidate, ToolErrors: []ToolError{}}
	if opt.ReferenceAsCandidate {
		sum.Candidates = ReferenceAsCandidate
	}
	bar := newProgressBar(opt.Log, len(m.Pairs), opt.Verbose)
	defer bar.close()

	s := &sweep{ev: ev, opt: opt, store: store, jsonl: jsonl, bar: bar, version: ev.Version()}
	if r := opt.ToleranceRule; r != "" && r != harness.ToleranceDefault {
		s.version += "+tolerance=" + r // a result judged without the rule is not resumed as one with it
	}
	recs := s.all(ctx, m.Pairs)
	for _, r := range recs {
		if r.Resumed {
			sum.Resumed++
		} else {
			sum.Evaluated++
		}
		if r.ToolError != "" {
			sum.ToolErrors = append(sum.ToolErrors, ToolError{Problem: r.Problem, Candidate: r.Candidate, Error: r.ToolError})
		}
	}
	sum.Metrics = Compute(recs)
	sum.WallS = time.Since(t0).Seconds()
	sum.throughput(recs)
	if s.writeErr != nil {
		return sum, s.writeErr
	}
	if err := ctx.Err(); err != nil {
		sum.Interrupted = true
		return sum, fmt.Errorf("kernelbench sweep stopped after %d of %d pairs: %w", len(recs), len(m.Pairs), err)
	}
	return sum, nil
}

// sweep is one Run's state shared by its jobs.
type sweep struct {
	ev      Evaluator
	opt     Options
	store   *Store
	bar     *progressBar
	version string

	mu       sync.Mutex // guards jsonl and writeErr
	jsonl    *os.File
	writeErr error
}

// DefaultJobs is the evaluations to keep in flight: on a GPU host one per
// core, since building a candidate (load_inline's host compiler, Triton,
// nvcc) is CPU work that runs beside the device phase of the others, which
// the device gate still serializes; on the CPU 1, since there the timed
// work shares the cores with any build. gpus is asked only for "auto".
func DefaultJobs(target string, gpus func() int, cpus int) int {
	if target == "cpu" || (target == "auto" || target == "") && gpus() == 0 {
		return 1
	}
	return max(1, cpus)
}

// all evaluates the pairs with opt.Jobs in flight, the longest expected
// first (dispatchOrder), and returns their records in the pairs' order
// (pairs left when ctx ended are absent).
func (s *sweep) all(ctx context.Context, pairs []Pair) []Record {
	out := make([]*Record, len(pairs))
	idx := make(chan int)
	var wg sync.WaitGroup
	for j := 0; j < s.opt.Jobs; j++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range idx {
				if r, ok := s.one(ctx, pairs[i]); ok {
					out[i] = &r
				}
			}
		}()
	}
feed:
	for _, i := range dispatchOrder(ctx, pairs, s.costReader(), s.opt.Target) {
		select {
		case idx <- i:
		case <-ctx.Done():
			break feed
		}
	}
	close(idx)
	wg.Wait()
	var recs []Record
	for _, r := range out {
		if r != nil {
			recs = append(recs, *r)
		}
	}
	return recs
}

// one evaluates a pair, or reads it back from the store. ok is false when
// the context ended under it (an interrupted pair is neither a result nor a
// tool error).
func (s *sweep) one(ctx context.Context, p Pair) (Record, bool) {
	if ctx.Err() != nil {
		return Record{}, false
	}
	t0 := time.Now()
	r := Record{Level: p.Problem.Level, ProblemID: p.Problem.ID, Problem: p.Problem.Key(), ProblemPath: p.Problem.Path,
		Candidate: p.Candidate(), HarnessVersion: s.version, Target: s.opt.Target}
	ref, err := problem.ReadFile("reference", p.Problem.Path)
	cand := []byte(p.Code)
	if err == nil && p.CandidatePath != "" {
		cand, err = problem.ReadFile("candidate", p.CandidatePath)
	}
	if err != nil {
		r.ToolError = err.Error()
		s.finish(r)
		return r, true
	}
	r.Key = pairKey(s.version, s.opt.Target, ref, cand)
	if s.store != nil && !s.opt.Rerun {
		got, err := s.store.Get(ctx, r.Key)
		if err != nil {
			r.ToolError = err.Error()
			s.finish(r)
			return r, true
		}
		if got != nil {
			got.Resumed = true
			// The files may have moved since; the contents have not.
			got.ProblemPath, got.Candidate = r.ProblemPath, r.Candidate
			s.finish(*got)
			return *got, true
		}
	}
	s.bar.started(r.Problem)
	res, err := s.evaluate(ctx, p)
	r.WallS = time.Since(t0).Seconds()
	if ctx.Err() != nil {
		return r, false
	}
	if err == nil {
		err = unchanged(p, ref, cand)
	}
	if err != nil {
		r.ToolError = err.Error()
	} else {
		r.fromResult(res)
		if s.store != nil {
			if err := s.store.Put(ctx, r); err != nil {
				s.setWriteErr(err)
			}
		}
	}
	s.finish(r)
	return r, true
}

// unchanged checks that the pair's files still hold the bytes its key was
// made of: a result is stored only under the contents that ran (an earlier
// candidate of the sweep could have rewritten a later one's file).
func unchanged(p Pair, ref, cand []byte) error {
	files := map[string][]byte{p.Problem.Path: ref}
	if p.CandidatePath != "" {
		files[p.CandidatePath] = cand
	}
	for path, was := range files {
		now, err := problem.ReadFile("file", path)
		if err != nil || !bytes.Equal(now, was) {
			return fmt.Errorf("%s changed while the pair was evaluated: its result is not kept", path)
		}
	}
	return nil
}

// evaluate calls the harness and turns a panic in it into a tool error:
// one pair must never end the sweep.
func (s *sweep) evaluate(ctx context.Context, p Pair) (res *harness.EvalResult, err error) {
	defer func() {
		if v := recover(); v != nil {
			res, err = nil, fmt.Errorf("the evaluator panicked: %v", v)
		}
	}()
	res, err = s.ev.Evaluate(ctx, Request{Pair: p, Target: s.opt.Target, Timeout: s.opt.Timeout, ToleranceRule: s.opt.ToleranceRule})
	if err == nil && res == nil {
		err = errNoResult
	}
	return res, err
}

func (s *sweep) finish(r Record) {
	if s.jsonl != nil {
		b, err := r.jsonLine()
		s.mu.Lock()
		if err == nil {
			_, err = s.jsonl.Write(b)
		}
		s.mu.Unlock()
		if err != nil {
			s.setWriteErr(fmt.Errorf("jsonl: %w", err))
		}
	}
	s.bar.finished(r)
}

func (s *sweep) setWriteErr(err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.writeErr == nil {
		s.writeErr = err
	}
}

var errNoResult = errors.New("the evaluator returned no result and no error")
