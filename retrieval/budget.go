package retrieval

import (
	"encoding/json"
	"fmt"
)

// DefaultBudget is the answer size, in characters of JSON, a search is cut
// to unless asked otherwise: an agent's context window pays for every
// character, and a (cpu, softmax, c) search answered 22.6 K, 18.9 K of it
// twelve constraint documents' passages (issue 36).
const DefaultBudget = 8000

// passageCut is how much of a result's passage survives the second cut.
const passageCut = 320

// Fit cuts the response to at most budget characters of JSON, in order
// of what an agent misses least: first the constraints' passages, then
// their summaries (each title states its rule; each is read whole as
// kb://<path>), then the results' passages beyond passageCut characters,
// then the lowest-ranked results. Omitted says what went, so nothing is lost silently.
func (r *Response) Fit(budget int) {
	if budget <= 0 || r.size() <= budget {
		return
	}
	var cut []string
	if n := dropPassages(r.Constraints, 0); n > 0 {
		cut = append(cut, fmt.Sprintf("the passages of %d constraints", n))
	}
	if r.size() > budget && len(r.Constraints) > 0 {
		for i := range r.Constraints {
			r.Constraints[i].Summary, r.Constraints[i].Topics = "", nil
		}
		cut = append(cut, "their summaries (each title states its rule)")
	}
	if r.size() > budget {
		if n := dropPassages(r.Results, passageCut); n > 0 {
			cut = append(cut, fmt.Sprintf("%d results' passages past %d characters", n, passageCut))
		}
	}
	dropped := 0
	for r.size() > budget && len(r.Results) > 1 {
		r.Results = r.Results[:len(r.Results)-1]
		dropped++
	}
	if dropped > 0 {
		cut = append(cut, fmt.Sprintf("the %d lowest-ranked results", dropped))
	}
	r.Omitted = fmt.Sprintf("cut to %d characters: %s; read any document whole as kb://<path>, or pass a larger max_chars", budget, joinAnd(cut))
}

// dropPassages shortens each passage to at most keep characters (whole
// words, an ellipsis where cut), saying how many it shortened.
func dropPassages(rs []Result, keep int) int {
	n := 0
	for i := range rs {
		p := []rune(rs[i].Passage)
		if len(p) <= keep {
			continue
		}
		n++
		if keep == 0 {
			rs[i].Passage, rs[i].Heading = "", ""
			continue
		}
		rs[i].Passage = string(p[:keep]) + "…"
	}
	return n
}

func (r *Response) size() int {
	b, err := json.Marshal(r)
	if err != nil {
		return 0
	}
	return len(b)
}

func joinAnd(xs []string) string {
	switch len(xs) {
	case 0:
		return "nothing"
	case 1:
		return xs[0]
	}
	s := xs[0]
	for _, x := range xs[1 : len(xs)-1] {
		s += ", " + x
	}
	return s + " and " + xs[len(xs)-1]
}
