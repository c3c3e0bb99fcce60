package brief

import "fmt"

// part is one section of the context with its renderings from richest
// (level 0) to leanest. Cutting moves a part to its next level; a part's
// last level is "" unless the part is required. Levels are whole units
// (a code block, a history entry, a document, a run of log lines), so a cut
// never lands inside code.
type part struct {
	name     string
	prio     int // larger is cut first
	levels   []string
	level    int
	docPaths [][]string // per level, the documents that level shows
}

func (p *part) text() string {
	if len(p.levels) == 0 {
		return ""
	}
	return p.levels[p.level]
}

func (p *part) docs() []string {
	if p.docPaths == nil || p.level >= len(p.docPaths) {
		return nil
	}
	return p.docPaths[p.level]
}

// Priorities (cut order: the largest first).
const (
	prioRequired   = 0
	prioConstraint = 3
	prioDiagnosis  = 4
	prioReference  = 5
	prioLog        = 6
	prioHistory    = 7
	prioKnowledge  = 8
)

// fit steps parts down, least important first, until the whole is within
// budget. Each part is cut to nothing (or its leanest required form)
// before the next more important one is touched.
func fit(parts []*part, budget int) error {
	total := func() int {
		n := 0
		for _, p := range parts {
			if t := p.text(); t != "" {
				n += EstimateTokens(t) + 1 // the joining newline
			}
		}
		return n
	}
	for prio := prioKnowledge; prio > prioRequired; prio-- {
		for _, p := range parts {
			if p.prio != prio {
				continue
			}
			for total() > budget && p.level < len(p.levels)-1 {
				p.level++
			}
		}
	}
	if n := total(); n > budget {
		return fmt.Errorf("%w (%d tokens needed, %d allowed)", ErrBudget, n, budget)
	}
	return nil
}
