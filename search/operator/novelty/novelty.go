// Package novelty rejects proposals that repeat a kernel the run already
// has, before they cost an evaluation, and asks the operator again
// (ShinkaEvolve's novelty rejection). It wraps any operator; the LLM and
// agent operators are wrapped by default, the tuner is not (a
// one-constant change is exactly what the tuner is for, and the store
// answers its exact repeats).
//
// What counts as a repeat (issue 20): an exact duplicate of any node (the
// same normalized tokens: comments, docstrings and whitespace aside), or a
// near duplicate of a kernel that PASSED with the same literals. Failed
// nodes are never near-duplicate targets: a fix of a failed kernel is
// usually one token (a semicolon, a bound), and it is exactly what the
// search needs. A proposal that differs from every passing kernel in at
// least one literal (a number or a one-line string) is novel: that is a
// changed tunable, a block size, a flag.
//
// Similarity is over normalized tokens: the rest is split into
// identifiers, numbers and single punctuation marks, and two kernels are
// compared by the Jaccard index of their token trigrams. 1.0 means the
// same program up to formatting and comments.
package novelty

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"strings"
	"time"

	"github.com/kevolve/kevolve-mcp/search"
)

// Defaults: 0.98 rejects reformatting, comment edits and renames of a few
// names in a typical 300-1000 token kernel.
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

// Propose asks the inner operator, each ask under its own deadline, until
// a proposal is novel or the retries are spent. The rejected asks come
// back in the answer (Proposal.Rejected, or the *search.ProposalError of a
// failure) with their tokens added to its own, so the budget sees them.
func (o *Op) Propose(ctx context.Context, c search.Context) (search.Proposal, error) {
	known := knownKernels(c.Graph)
	var rejected []search.RejectedProposal
	for try := 0; ; try++ {
		cctx, cancel := context.WithTimeout(ctx, o.Inner.Deadline())
		p, err := o.Inner.Propose(cctx, c)
		cancel()
		if err != nil {
			return p, withRejected(err, rejected)
		}
		rej, ok := o.judge(known, p.Code)
		if ok {
			if len(rejected) > 0 {
				p.Notes = strings.TrimSpace(p.Notes + fmt.Sprintf(" (after %d duplicate proposals rejected)", len(rejected)))
				p.Tokens += search.RejectedTokens(rejected)
				p.Rejected = rejected
			}
			return p, nil
		}
		rej.Try, rej.Code, rej.Tokens, rej.Inputs, rej.Feedback, rej.Seed = try+1, p.Code, p.Tokens, p.Inputs, c.Feedback, c.Seed
		rejected = append(rejected, rej)
		if try >= o.retries() {
			var why []string
			for i, r := range rejected {
				why = append(why, fmt.Sprintf("proposal %d: %s", i+1, r.Reason))
			}
			return search.Proposal{}, &search.ProposalError{
				Err:    fmt.Errorf("novelty: %d proposals rejected as duplicates (%s)", len(rejected), strings.Join(why, "; ")),
				Inputs: p.Inputs, Tokens: search.RejectedTokens(rejected), Rejected: rejected}
		}
		c.Seed++
		c.Feedback = strings.TrimSpace(c.Feedback + "\n" + fmt.Sprintf("Your previous answer was not evaluated: %s. Propose a substantively different kernel.", rej.Reason))
	}
}

// withRejected carries the rejected asks and their tokens into an inner
// operator's failure.
func withRejected(err error, rejected []search.RejectedProposal) error {
	if len(rejected) == 0 {
		return err
	}
	var pe *search.ProposalError
	if errors.As(err, &pe) {
		out := *pe
		out.Tokens += search.RejectedTokens(rejected)
		out.Rejected = append(append([]search.RejectedProposal(nil), rejected...), pe.Rejected...)
		return &out
	}
	return &search.ProposalError{Err: err, Tokens: search.RejectedTokens(rejected), Rejected: rejected}
}

// kernel is a node's code as the checks see it.
type kernel struct {
	id       int64
	passed   bool
	tokens   string // the normalized token stream, joined
	set      map[string]struct{}
	literals string
}

// knownKernels reads the graph once per proposal: every node for exact
// duplicates, the passing ones for near duplicates.
func knownKernels(g *search.Graph) []kernel {
	if g == nil {
		return nil
	}
	var out []kernel
	for _, n := range g.Nodes {
		if n.Code == "" {
			continue
		}
		k := kernel{id: n.ID, tokens: strings.Join(Tokens(n.Code), "\x00")}
		if n.Evaluated() && n.Result.Verdict == search.VerdictPass {
			k.passed, k.set, k.literals = true, shingles(n.Code), literalKey(n.Code)
		}
		out = append(out, k)
	}
	return out
}

// judge says whether code is novel; when it is not, the rejection's
// reason, node and similarity.
func (o *Op) judge(known []kernel, code string) (search.RejectedProposal, bool) {
	toks := strings.Join(Tokens(code), "\x00")
	for _, k := range known {
		if k.tokens == toks {
			return search.RejectedProposal{SimilarTo: k.id, Similarity: 1,
				Reason: fmt.Sprintf("it is the same program as node %d (comments and whitespace aside)", k.id)}, false
		}
	}
	set, lits := shingles(code), literalKey(code)
	for _, k := range known {
		if !k.passed || k.literals != lits {
			continue
		}
		if s := jaccard(k.set, set); s >= o.threshold() {
			return search.RejectedProposal{SimilarTo: k.id, Similarity: s,
				Reason: fmt.Sprintf("it is %.0f%% similar to passing node %d and has the same numbers and strings", 100*s, k.id)}, false
		}
	}
	return search.RejectedProposal{}, true
}

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
func Tokens(code string) []string { return token.FindAllString(stripComments(code), -1) }

// Literals returns a kernel's numbers and one-line strings in order,
// comments aside. Triple quotes are not strings here: they hold the C or
// CUDA source of a load_c/load_inline kernel, whose own literals count.
func Literals(code string) []string {
	text := strings.NewReplacer(`"""`, " ", `'''`, " ").Replace(stripComments(code))
	var out []string
	for _, t := range literal.FindAllString(text, -1) {
		if c := t[0]; c == '"' || c == '\'' || c == '.' || (c >= '0' && c <= '9') {
			out = append(out, t)
		}
	}
	return out
}

// literal matches strings, identifiers (so a digit inside a name is not a
// number) and numbers with C suffixes.
var literal = regexp.MustCompile(`"(?:[^"\\\n]|\\.)*"|'(?:[^'\\\n]|\\.)*'|[A-Za-z_][A-Za-z0-9_]*|[0-9]*\.?[0-9]+(?:[eE][-+]?[0-9]+)?[fFuUlL]*`)

func literalKey(code string) string { return strings.Join(Literals(code), "\x00") }

func stripComments(code string) string {
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
	return b.String()
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
