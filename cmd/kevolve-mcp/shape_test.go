package main

import (
	"encoding/json"
	"strings"
	"testing"
)

// What a transcript keeps of an answer: its field names and the values that
// say what happened (a verdict, a state), never times, ids, paths or counts,
// which change from run to run and machine to machine.
var keptValues = map[string]bool{
	"verdict": true, "state": true, "status": true, "type": true,
	"target": true, "language": true, "operator": true, "policy": true, "baseline": true,
	"problem": true, "protocolVersion": true, "isError": true,
}

// What the host's load decides, so a transcript cannot pin it: fields
// present only on a busy host (the undisturbed calls' counts, the judge's
// paced second opinion, why a timing is noisy) are left out; objects keyed
// by the stages a job reached before its deadline keep no keys; and a
// stage's name is not kept (a deadline ends a job in whichever stage the
// load let it reach; the expect section pins a stage where it matters).
var (
	volatileKeys = map[string]bool{
		"quiet_iters": true, "median_all_s": true, "paced": true, "why": true,
		"noisy": true, "noisy_why": true, "frozen": true, "reused": true, "age_s": true, "measurements": true,
	}
	opaqueKeys = map[string]bool{"stage_s": true, "phase_s": true, "stage_peak_rss_bytes": true, "steps": true, "partial": true}
)

// shape reduces a decoded JSON value to what a transcript pins. Objects keep
// every key; an array of objects becomes one object with the keys of all its
// elements (a check list pins which fields checks have, not how many ran);
// an array of scalars becomes "<array>" (its length is volatile: warnings
// depend on the host's load).
func shape(key string, v any) any {
	switch x := v.(type) {
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, e := range x {
			switch {
			case volatileKeys[k]:
			case opaqueKeys[k]:
				out[k] = "<object>"
			default:
				out[k] = shape(k, e)
			}
		}
		return out
	case []any:
		merged, objects := map[string]any(nil), len(x) > 0
		for _, e := range x {
			m, ok := shape(key, e).(map[string]any)
			if !ok {
				objects = false
				break
			}
			merged = mergeShapes(merged, m)
		}
		if objects {
			return []any{merged}
		}
		return "<array>"
	case string:
		if keptValues[key] {
			return x
		}
		return "<string>"
	case float64, json.Number:
		return "<number>"
	case bool:
		if keptValues[key] {
			return x
		}
		return "<bool>"
	default:
		return v
	}
}

// mergeShapes is the union of two object shapes; a field whose kept values
// differ between elements becomes "<mixed>".
func mergeShapes(a, b map[string]any) map[string]any {
	if a == nil {
		return b
	}
	for k, vb := range b {
		va, ok := a[k]
		switch {
		case !ok:
			a[k] = vb
		case isObject(va) && isObject(vb):
			a[k] = mergeShapes(va.(map[string]any), vb.(map[string]any))
		case !jsonEqual(va, vb):
			a[k] = "<mixed>"
		}
	}
	return a
}

func isObject(v any) bool { _, ok := v.(map[string]any); return ok }

func jsonEqual(a, b any) bool {
	x, _ := json.Marshal(a)
	y, _ := json.Marshal(b)
	return string(x) == string(y)
}

// A shape keeps field names and what happened, never the volatile values.
func TestShapeKeepsNamesAndVerdicts(t *testing.T) {
	tests := []struct {
		name, in, want string
	}{
		{"values out, verdict in", `{"verdict":"pass","time_s":0.01,"device":"cpu: AMD"}`, `{"device":"<string>","time_s":"<number>","verdict":"pass"}`},
		{"object lists merged", `{"checks":[{"name":"a","passed":true},{"name":"b","detail":"x"}]}`, `{"checks":[{"detail":"<string>","name":"<string>","passed":"<bool>"}]}`},
		{"scalar lists by presence", `{"warnings":[],"isa":["avx2"]}`, `{"isa":"<array>","warnings":"<array>"}`},
		{"kept values that differ", `{"a":[{"state":"done"},{"state":"failed"}]}`, `{"a":[{"state":"<mixed>"}]}`},
		{"null stays", `{"gpus":null}`, `{"gpus":null}`},
	}
	for _, tc := range tests {
		b, _ := json.Marshal(shapeOf(json.RawMessage(tc.in)))
		got := strings.NewReplacer(`\u003c`, "<", `\u003e`, ">").Replace(string(b))
		if got != tc.want {
			t.Errorf("%s: %s, want %s", tc.name, got, tc.want)
		}
	}
}
