// Package novelty rejects proposals that are identical or nearly identical
// to a kernel the run already has, before they cost an evaluation, and asks
// the operator again (ShinkaEvolve's novelty rejection). It wraps any
// operator; the LLM and agent operators are wrapped by default, the tuner
// is not (a one-constant change is exactly what the tuner is for, and the
// store answers its exact repeats).
//
// Similarity is over normalized tokens: comments, docstrings and
// whitespace are dropped, the rest split into identifiers, numbers and
// single punctuation marks, and two kernels are compared by the Jaccard
// index of their token trigrams. 1.0 means the same program up to
// formatting and comments.
package novelty

import (
	"context"
	"fmt"
	"regexp"
	"strings"
	"time"

	"github.com/kevolve/kevolve-mcp/search"
)

// Defaults: 0.98 rejects reformatting, comment edits and renames of a few
// names in a typical 300-1000 token kernel, while a changed block size in
// a short kernel (~2% of its trigrams) still counts as new.
const (
	DefaultThreshold = 0.98
	DefaultRetries   = 2
)

// Op wraps an operator with novelty rejection.
type Op struct {
	Inner     search.Operator
	Threshold float64 // reject at or above this similarity (0 = default)
	Retries   int     // extra asks after a rejection (0 = default; <0 = none)
}

// Wrap returns inner with novelty rejection at the defaults.
func Wrap(inner search.Operator) *Op { return &Op{Inner: inner} }

func (o *Op) Name() string { return o.Inner.Name() }

// Deadline covers every ask: a rejected proposal is retried within it.
func (o *Op) Deadline() time.Duration { return o.Inner.Deadline() * time.Duration(1+o.retries()) }

func (o *Op) retries() int {
	switch {
	case o.Retries < 0:
		return 0
	case o.Retries == 0:
		return DefaultRetries
	}
	return o.Retries
}

func (o *Op) threshold() float64 {
	if o.Threshold <= 0 {
		return DefaultThreshold
	}
	return o.Threshold
}

// Rejection says why a proposal was not evaluated.
type Rejection struct {
	Similar    int64
	Similarity float64
}

// Propose asks the inner operator, each ask under its own deadline, until
// a proposal is novel or the retries are spent.
func (o *Op) Propose(ctx context.Context, c search.Context) (search.Proposal, error) {
	var known []sig
	if c.Graph != nil {
		for _, n := range c.Graph.Nodes {
			known = append(known, sig{n.ID, shingles(n.Code)})
		}
	}
	var rejected []string
	for try := 0; ; try++ {
		cctx, cancel := context.WithTimeout(ctx, o.Inner.Deadline())
		p, err := o.Inner.Propose(cctx, c)
		cancel()
		if err != nil {
			return p, err
		}
		id, s := nearest(known, shingles(p.Code))
		if s < o.threshold() {
			if len(rejected) > 0 {
				p.Notes = strings.TrimSpace(p.Notes + fmt.Sprintf(" (after %d near-duplicate proposals rejected)", len(rejected)))
			}
			return p, nil
		}
		why := fmt.Sprintf("proposal %d was %.0f%% similar to node %d", try+1, 100*s, id)
		rejected = append(rejected, why)
		if try >= o.retries() {
			return search.Proposal{}, fmt.Errorf("novelty: %d proposals rejected as near-duplicates of existing nodes (%s)", len(rejected), strings.Join(rejected, "; "))
		}
		c.Seed++
		c.Feedback = strings.TrimSpace(c.Feedback + "\n" + fmt.Sprintf("Your previous answer was not evaluated: it is %.0f%% identical to node %d, which the search already has. Propose a substantively different kernel.", 100*s, id))
	}
}

type sig struct {
	id  int64
	set map[string]struct{}
}

func nearest(known []sig, s map[string]struct{}) (int64, float64) {
	var best int64
	bs := 0.0
	for _, k := range known {
		if j := jaccard(k.set, s); j > bs {
			best, bs = k.id, j
		}
	}
	return best, bs
}

// Similarity is the normalized-token similarity of two kernels in [0,1].
func Similarity(a, b string) float64 { return jaccard(shingles(a), shingles(b)) }

var (
	docstring = regexp.MustCompile(`(?s)\A\s*(?:"""|''').*?(?:"""|''')`)
	block     = regexp.MustCompile(`(?s)/\*.*?\*/`)
	directive = regexp.MustCompile(`^#\s*(include|define|undef|pragma|if|ifdef|ifndef|else|elif|endif|error|line)\b`)
	token     = regexp.MustCompile(`[A-Za-z_][A-Za-z0-9_]*|[0-9]+(?:\.[0-9]*)?(?:[eE][-+]?[0-9]+)?|\S`)
)

// Tokens returns the normalized token stream of a kernel: the module
// docstring, C block comments, whole-line '#' and '//' comments (a C
// preprocessor directive inside a source string is kept) and trailing
// "  # ..." comments are dropped.
func Tokens(code string) []string {
	code = strings.ReplaceAll(code, "\r\n", "\n")
	code = docstring.ReplaceAllString(code, "")
	code = block.ReplaceAllString(code, " ")
	var b strings.Builder
	for _, line := range strings.Split(code, "\n") {
		t := strings.TrimSpace(line)
		if strings.HasPrefix(t, "//") || (strings.HasPrefix(t, "#") && !directive.MatchString(t)) {
			continue
		}
		if i := strings.Index(line, "  #"); i >= 0 && !directive.MatchString(t) {
			line = line[:i]
		}
		if i := strings.Index(line, " // "); i >= 0 {
			line = line[:i]
		}
		b.WriteString(line)
		b.WriteByte('\n')
	}
	return token.FindAllString(b.String(), -1)
}

func shingles(code string) map[string]struct{} {
	t := Tokens(code)
	out := make(map[string]struct{}, len(t))
	if len(t) < 3 {
		out[strings.Join(t, " ")] = struct{}{}
		return out
	}
	for i := 0; i+3 <= len(t); i++ {
		out[t[i]+"\x00"+t[i+1]+"\x00"+t[i+2]] = struct{}{}
	}
	return out
}

func jaccard(a, b map[string]struct{}) float64 {
	if len(a) == 0 && len(b) == 0 {
		return 1
	}
	inter := 0
	for k := range a {
		if _, ok := b[k]; ok {
			inter++
		}
	}
	return float64(inter) / float64(len(a)+len(b)-inter)
}
