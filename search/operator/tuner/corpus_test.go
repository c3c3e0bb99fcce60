package tuner

import (
	"strings"
	"testing"

	"github.com/kevolve/kevolve-mcp/corpus"
)

// Every corpus start's TUNABLES must reach the tuner whole: a knob the
// parser skips (a typo, a multi-line assignment) silently shrinks the
// search space, which is how runs end "exhausted" after a few evaluations.
func TestCorpusStartsTunablesParse(t *testing.T) {
	n := 0
	for _, p := range corpus.List() {
		for _, kind := range []string{"cuda", "triton", "c"} {
			src, err := p.StartSource(kind)
			if err != nil || !strings.Contains(src, "\nTUNABLES = ") {
				continue
			}
			s, err := Parse(src)
			if err != nil {
				t.Errorf("%s %s: %v", p.Name, kind, err)
				continue
			}
			if !s.Declared || len(s.Skipped) > 0 || len(s.Tunables) == 0 {
				t.Errorf("%s %s: declared %v, %d tunables, skipped %v", p.Name, kind, s.Declared, len(s.Tunables), s.Skipped)
			}
			n++
		}
	}
	if n == 0 {
		t.Fatal("no corpus start declares TUNABLES")
	}
	// The widest-load knob comes first for the row-wise CUDA starts, so the
	// first coordinate move from the start tries it.
	p, err := corpus.Get("llm/softmax")
	if err != nil {
		t.Fatal(err)
	}
	src, err := p.StartSource("cuda")
	if err != nil {
		t.Fatal(err)
	}
	s, err := Parse(src)
	if err != nil {
		t.Fatal(err)
	}
	if s.Tunables[0].Name != "VEC" || s.Current()["VEC"] != "1" || s.Tunables[0].Values[s.Tunables[0].Current+1] != "8" {
		t.Fatalf("softmax CUDA start: want VEC first, at 1, with 8 next; got %+v", s.Tunables)
	}
}
