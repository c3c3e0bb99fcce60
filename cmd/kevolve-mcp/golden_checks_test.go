package main

import (
	"encoding/json"
	"strconv"
	"strings"
)

// What a session checks of its answers beyond the transcript: size bounds,
// facts, warnings.

// hasGPU says whether device_info found a GPU.
func (s *session) hasGPU() bool {
	for _, a := range s.answers {
		if gpus, ok := a.content["gpus"].([]any); ok && a.tool == "device_info" && len(gpus) > 0 {
			return true
		}
	}
	return false
}

func (s *session) checkLimits() {
	limits, _ := s.a.file("limits")
	for _, line := range strings.Split(limits, "\n") {
		f := strings.Fields(line)
		if len(f) != 2 || strings.HasPrefix(line, "#") {
			continue
		}
		limit, err := strconv.Atoi(f[1])
		if err != nil {
			s.t.Fatalf("limits: %q", line)
		}
		if f[0] == "first_call" {
			n := len(s.instructions) + s.descriptions
			s.t.Logf("first_call: %d characters (instructions %d, descriptions %d), limit %d", n, len(s.instructions), s.descriptions, limit)
			if n > limit {
				s.t.Errorf("instructions and tool descriptions are %d characters, over %d", n, limit)
			}
			continue
		}
		for i, a := range s.answers {
			if a.tool != f[0] {
				continue
			}
			s.t.Logf("step %d %s: %d characters, limit %d", i+1, a.tool, len(a.text), limit)
			if len(a.text) > limit {
				s.t.Errorf("step %d %s: answer of %d characters, over %d", i+1, a.tool, len(a.text), limit)
			}
		}
	}
}

// checkWarnings: every evaluation an answer shows carries its warnings, []
// where there are none, so an agent can tell none from unchecked. An
// evaluation is an answer with a verdict (run_kernel's) or a node whose
// result has one (evolve_submit's node, evolve_next's parent).
func (s *session) checkWarnings() {
	for i, a := range s.answers {
		for _, path := range evaluationsWithoutWarnings(a.content, "") {
			s.t.Errorf("step %d %s: the evaluation at %q has no warnings field", i+1, a.tool, path)
		}
	}
}

func evaluationsWithoutWarnings(v any, path string) []string {
	o, ok := v.(map[string]any)
	if !ok {
		return nil
	}
	var bad []string
	_, verdict := o["verdict"]
	res, _ := o["result"].(map[string]any)
	_, resVerdict := res["verdict"]
	// Summaries (a run's best, a sibling's attempt) carry a verdict too,
	// but only the answer itself and whole nodes are evaluations.
	if _, has := o["warnings"]; ((verdict && path == "") || resVerdict) && !has {
		bad = append(bad, path)
	}
	for _, k := range sortedKeys(o) {
		if k != "result" { // a node's result is judged with its node
			bad = append(bad, evaluationsWithoutWarnings(o[k], path+"."+k)...)
		}
	}
	return bad
}

// checkExpect checks the archive's facts: "STEP path.to.field=value" (the
// value as JSON text, or bare for a string; a number in the path indexes a
// list), or "STEP path~=text" for a value that contains text.
func (s *session) checkExpect() {
	expect, _ := s.a.file("expect")
	for _, line := range strings.Split(expect, "\n") {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		step, fact, _ := strings.Cut(line, " ")
		path, want, _ := strings.Cut(fact, "=")
		path, contains := strings.CutSuffix(path, "~")
		i, err := strconv.Atoi(step)
		if err != nil || i < 1 || i > len(s.answers) {
			s.t.Errorf("expect %q: no step %s", line, step)
			continue
		}
		got := lookup(s.answers[i-1].content, path)
		if got != want && !(contains && strings.Contains(got, want)) {
			s.t.Errorf("step %d %s: %s is %s, want %s\n%.1500s", i, s.answers[i-1].tool, path, got, want, s.answers[i-1].text)
		}
	}
}

// lookup renders the value at a dotted path ("node.result.verdict";
// "present(x.y)" says whether the field is there at all).
func lookup(m map[string]any, path string) string {
	present := strings.HasPrefix(path, "present(") && strings.HasSuffix(path, ")")
	if present {
		path = path[len("present(") : len(path)-1]
	}
	var v any = m
	for _, k := range strings.Split(path, ".") {
		if arr, ok := v.([]any); ok { // an index into a list
			n, err := strconv.Atoi(k)
			if err != nil || n < 0 || n >= len(arr) {
				return "<absent>"
			}
			v = arr[n]
			continue
		}
		o, ok := v.(map[string]any)
		if !ok {
			v = nil
			break
		}
		if v, ok = o[k]; !ok {
			if present {
				return "false"
			}
			return "<absent>"
		}
	}
	if present {
		return "true"
	}
	if s, ok := v.(string); ok {
		return s
	}
	b, _ := json.Marshal(v)
	return string(b)
}
