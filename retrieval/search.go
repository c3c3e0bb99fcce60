package retrieval

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"
)

// Query is a search: free text and/or a structured runtime context. Every
// field adds to the search text; Device scopes the results; Operator,
// Language and Bottlenecks also boost documents whose front matter names
// them; an Operator adds the constraints that apply to it.
type Query struct {
	Text        string   `json:"text,omitempty"`
	Device      string   `json:"device,omitempty"`
	Operator    string   `json:"operator,omitempty"`
	Language    string   `json:"language,omitempty"`
	Bottlenecks []string `json:"bottlenecks,omitempty"`
	// Diagnosis is the profiler's verdict in words, e.g. "memory-bound, 30%
	// occupancy on H100"; vocabulary words and device names in it count.
	Diagnosis string `json:"diagnosis,omitempty"`
	// ErrorText is a compiler or runtime error; its salient words are used.
	ErrorText string `json:"error_text,omitempty"`
	K         int    `json:"k,omitempty"`
}

// Result is one retrieved document with its most relevant passage.
type Result struct {
	Path    string `json:"path"`
	Title   string `json:"title"`
	Summary string `json:"summary,omitempty"`
	Vendor  string `json:"vendor"`
	Arch    string `json:"arch"`
	Source  string `json:"source"`
	// Scope is the document's place relative to the query's device: "arch"
	// (same arch), "vendor" (same vendor, any arch), "generic", or "other"
	// (another vendor's or arch's document, always ranked after the rest).
	// Without a device it is the document's own level.
	Scope   string   `json:"scope"`
	Score   float64  `json:"score"`
	Heading string   `json:"heading,omitempty"`
	Passage string   `json:"passage"`
	Topics  []string `json:"topics,omitempty"`
}

// Response is the answer to a Query.
type Response struct {
	// SearchText is the text the query context was turned into.
	SearchText string `json:"search_text"`
	// Device is the resolved scope, when the query had or mentioned one.
	Device      *DeviceScope `json:"device,omitempty"`
	Bottlenecks []string     `json:"bottlenecks,omitempty"`
	Results     []Result     `json:"results"`
	// Constraints are the rules that apply to the operator (only for a query
	// with an Operator); they are not repeated in Results.
	Constraints []Result `json:"constraints,omitempty"`
	// Omitted says what Fit cut to keep the answer within its budget.
	Omitted string `json:"omitted,omitempty"`
}

// Tuning constants. rrfK is smaller than the customary 60 because the
// lists are short (~130 documents): with 60, rank 1 and rank 20 score
// nearly alike and the multiplicative boosts below would swamp relevance.
// The three rankings (passage BM25, document BM25, passage vectors) weigh
// the same; on the labeled set recall@5 stays within 0.95-0.98 for rrfK
// 10-60 and vector weights 0.5-1.2, and dropping the vectors costs ~0.03 MRR.
const (
	rrfK          = 15.0
	wBM25         = 1.0
	wDocBM25      = 1.0
	wVector       = 1.0
	candidates    = 300
	maxK          = 50
	defaultK      = 5
	boostArch     = 1.2
	boostVendor   = 1.1
	boostChip     = 1.15
	boostBneck    = 0.15 // per matching bottleneck
	boostOp       = 1.2
	boostLang     = 1.10
	boostLangPage = 1.25
	penaltyLang   = 0.8 // none of the document's languages runs on the device
)

// ErrEmptyQuery is returned when a query has nothing to search for.
var ErrEmptyQuery = errors.New("empty query: give text, a diagnosis, an error text, bottlenecks or an operator")

// MaxK is the most results one search returns; Query.K 0 means defaultK.
const MaxK = maxK

// Search runs a query.
func (ix *Index) Search(ctx context.Context, q Query) (*Response, error) {
	resp := &Response{Results: []Result{}}
	// A k out of range is the caller's mistake: say so rather than quietly
	// answering with some other number of results.
	if q.K < 0 || q.K > maxK {
		return nil, fmt.Errorf("k must be between 1 and %d (got %d); 0 means the default, %d", maxK, q.K, defaultK)
	}
	k := q.K
	if k == 0 {
		k = defaultK
	}

	pl, err := plan(q)
	if err != nil {
		return nil, err
	}
	scope, chip, bns, op, lang, terms, phrases := pl.scope, pl.chip, pl.bottlenecks, pl.op, pl.lang, pl.terms, pl.phrases
	resp.Device, resp.Bottlenecks, resp.SearchText = scope, bns, pl.text

	pasScore := map[int64]float64{} // fused passage scores
	docScore := map[string]float64{}
	if err := ix.fuseBM25(ctx, terms, phrases, pasScore, docScore); err != nil {
		return nil, err
	}
	if err := ix.fuseVector(ctx, strings.Join(terms, " "), pasScore, docScore); err != nil {
		return nil, err
	}

	type cand struct {
		d     *Document
		score float64
		scope string
		tier  int
	}
	var cands, cons []cand
	for path, s := range docScore {
		d := ix.docs[path]
		if d == nil {
			continue
		}
		sc, tier := scopeOf(&d.DocInfo, scope)
		switch sc {
		case "arch":
			if scope != nil {
				s *= boostArch
			}
		case "vendor":
			if scope != nil {
				s *= boostVendor
			}
		}
		if scope != nil && len(d.Languages) > 0 && !runsOn(d.Languages, scope.Vendor) {
			s *= penaltyLang
		}
		if chip != "" && slices.Contains(tokenize(d.Title), chip) {
			s *= boostChip
		}
		if n := countShared(d.Bottlenecks, bns); n > 0 {
			s *= 1 + boostBneck*float64(min(n, 3))
		}
		if op != "" && slices.Contains(d.Operators, op) {
			s *= boostOp
		}
		// A language page is about one language: with the language known,
		// the right one goes up and the others down. Technique pages that
		// list the language get a smaller lift, and those that list only
		// others (a Triton example for a C kernel) go down as far.
		if lang != "" {
			has := slices.Contains(d.Languages, lang)
			switch {
			case d.Kind == "languages" && has:
				s *= boostLangPage
			case d.Kind == "languages" && len(d.Languages) > 0:
				s /= boostLangPage
			case has:
				s *= boostLang
			case len(d.Languages) > 0:
				s /= boostLang
			}
		}
		c := cand{d, s, sc, tier}
		if op != "" && d.Kind == "constraints" {
			continue // collected below, all of them
		}
		cands = append(cands, c)
	}
	if op != "" {
		for _, p := range ix.order {
			d := ix.docs[p]
			if d.Kind != "constraints" || !appliesTo(d, op) || !forLanguage(d.Languages, lang) {
				continue
			}
			sc, _ := scopeOf(&d.DocInfo, scope)
			cons = append(cons, cand{d: d, score: docScore[p], scope: sc})
		}
	}
	// Out-of-scope documents come after every in-scope one, whatever their
	// score: an H100 query never sees an MI300X page above a generic one.
	sort.SliceStable(cands, func(i, j int) bool {
		if cands[i].tier != cands[j].tier {
			return cands[i].tier < cands[j].tier
		}
		if cands[i].score != cands[j].score {
			return cands[i].score > cands[j].score
		}
		return cands[i].d.Path < cands[j].d.Path
	})
	sort.SliceStable(cons, func(i, j int) bool {
		if cons[i].score != cons[j].score {
			return cons[i].score > cons[j].score
		}
		return cons[i].d.Path < cons[j].d.Path
	})
	mk := func(c cand) Result {
		h, text := ix.bestPassage(c.d.Path, pasScore)
		return Result{Path: c.d.Path, Title: c.d.Title, Summary: c.d.Summary, Vendor: c.d.Vendor,
			Arch: c.d.Arch, Source: c.d.Source, Scope: c.scope, Score: round4(c.score * 1000),
			Heading: h, Passage: text, Topics: c.d.Topics}
	}
	for _, c := range cands[:min(k, len(cands))] {
		resp.Results = append(resp.Results, mk(c))
	}
	for _, c := range cons {
		resp.Constraints = append(resp.Constraints, mk(c))
	}
	return resp, nil
}

// searchPlan is a Query turned into what the rankers and boosts need.
type searchPlan struct {
	scope          *DeviceScope
	chip           string
	bottlenecks    []string
	op, lang, text string
	terms, phrases []string
}

// plan builds the search from the whole query context: free text, the
// diagnosis (its vocabulary words and device names count), the salient
// words of an error text, the bottlenecks' usual wording, the operator and
// the language.
func plan(q Query) (searchPlan, error) {
	var pl searchPlan
	if strings.TrimSpace(q.Device) != "" {
		s, ok := ResolveDevice(q.Device)
		if !ok {
			return pl, fmt.Errorf("unknown device %q: use a chip (h100, h200, a100, b200, mi300x, mi325x, mi355x, cpu), an arch (hopper, cdna3, ...) or a vendor (nvidia, amd)", q.Device)
		}
		pl.scope = &s
	} else if s, ok := detectDevice(q.Text + " " + q.Diagnosis); ok {
		pl.scope = &s
	}
	// A page about the very chip asked for (its datasheet, its measured
	// ceilings) beats a page about a sibling chip of the same arch.
	pl.chip = chipIn(q.Device)
	if pl.chip == "" && strings.TrimSpace(q.Device) == "" {
		pl.chip = chipIn(q.Text + " " + q.Diagnosis)
	}
	pl.bottlenecks = normBottlenecks(q.Bottlenecks)
	for _, b := range bottlenecksIn(q.Diagnosis + " " + q.Text) {
		if !slices.Contains(pl.bottlenecks, b) {
			pl.bottlenecks = append(pl.bottlenecks, b)
		}
	}
	pl.op = strings.ToLower(strings.TrimSpace(q.Operator))
	pl.lang = strings.ToLower(strings.TrimSpace(q.Language))

	var parts []string
	for _, s := range []string{q.Text, q.Diagnosis, salientError(q.ErrorText)} {
		if s = strings.TrimSpace(s); s != "" {
			parts = append(parts, s)
		}
	}
	for _, b := range pl.bottlenecks {
		if t, ok := bottleneckTerms[b]; ok {
			parts = append(parts, t...)
		} else {
			parts = append(parts, strings.ReplaceAll(b, "-", " "))
		}
	}
	if pl.op != "" && pl.op != "any" {
		parts = append(parts, strings.ReplaceAll(pl.op, "-", " "))
	}
	if pl.lang != "" {
		parts = append(parts, pl.lang)
	}
	pl.text = strings.Join(parts, " ")
	pl.terms, pl.phrases = queryTerms(parts)
	if len(pl.terms) == 0 {
		return pl, ErrEmptyQuery
	}
	return pl, nil
}

func round4(x float64) float64 {
	v, _ := strconv.ParseFloat(strconv.FormatFloat(x, 'f', 4, 64), 64)
	return v
}

// deviceLanguages are the kernel languages that run on each vendor's
// hardware; a Triton or CUDA recipe does not help a CPU kernel.
var deviceLanguages = map[string][]string{
	"nvidia": {"cuda", "triton", "cute", "cutlass", "ptx"},
	"amd":    {"hip", "triton"},
	"cpu":    {"c", "cpp", "c++", "openmp"},
}

// runsOn reports whether any of langs runs on the vendor's hardware (true
// for a vendor without a list).
func runsOn(langs []string, vendor string) bool {
	ok, known := deviceLanguages[vendor]
	if !known {
		return true
	}
	for _, l := range langs {
		if slices.Contains(ok, l) {
			return true
		}
	}
	return false
}

// appliesTo says whether a constraints document covers operator op.
func appliesTo(d *Document, op string) bool {
	return len(d.Operators) == 0 || slices.Contains(d.Operators, "any") || slices.Contains(d.Operators, op)
}

// scopeOf places a document relative to the device scope; tier 1 means out
// of scope.
func scopeOf(d *DocInfo, s *DeviceScope) (string, int) {
	if s == nil {
		switch {
		case d.Vendor == "generic" || d.Vendor == "":
			return "generic", 0
		case d.Arch == "generic" || d.Arch == "":
			return "vendor", 0
		default:
			return "arch", 0
		}
	}
	switch {
	case d.Vendor == "generic" || d.Vendor == "":
		return "generic", 0
	case d.Vendor != s.Vendor:
		return "other", 1
	case d.Arch == "generic" || d.Arch == "" || s.Arch == "":
		return "vendor", 0
	case d.Arch == s.Arch:
		return "arch", 0
	default:
		return "other", 1
	}
}

func normBottlenecks(in []string) []string {
	var out []string
	for _, b := range in {
		b = strings.ToLower(strings.TrimSpace(b))
		b = strings.ReplaceAll(b, " ", "-")
		b = strings.ReplaceAll(b, "_", "-")
		if b != "" && !slices.Contains(out, b) {
			out = append(out, b)
		}
	}
	return out
}

func countShared(a, b []string) int {
	n := 0
	for _, x := range a {
		if slices.Contains(b, x) {
			n++
		}
	}
	return n
}

// queryTerms are the distinct content words of the search text, and the
// adjacent word pairs of each part as phrases ("shared memory", "memory
// bound"), so documents that use the phrase rank above those that merely
// contain both words. Capped so a long error text cannot make the full-text
// query huge. Chip and arch names are left out: they decide the scope, and as
// words they would pull every page that mentions the chip above the
// technique asked for. Short numbers ("30" of "30% occupancy") carry no topic.
func queryTerms(parts []string) (terms, phrases []string) {
	seenT, seenP := map[string]bool{}, map[string]bool{}
	for _, part := range parts {
		var words []string
		for _, w := range contentWords(tokenize(part)) {
			if isDeviceWord(w) || (isNumber(w) && len(w) < 3) {
				continue
			}
			words = append(words, w)
		}
		for i, w := range words {
			if !seenT[w] && len(terms) < 64 {
				seenT[w] = true
				terms = append(terms, w)
			}
			if i > 0 {
				ph := words[i-1] + " " + w
				if !seenP[ph] && len(phrases) < 48 {
					seenP[ph] = true
					phrases = append(phrases, ph)
				}
			}
		}
	}
	return terms, phrases
}

// fuseBM25 ranks passages with FTS5's BM25 (title and front-matter columns
// weighted above body text) and adds the reciprocal ranks of passages and of
// documents (by their best passage).
func (ix *Index) fuseBM25(ctx context.Context, terms, phrases []string, pas map[int64]float64, docs map[string]float64) error {
	var quoted []string
	// Tokens are letters and digits only, so quoting cannot break the syntax.
	for _, t := range slices.Concat(terms, phrases) {
		quoted = append(quoted, `"`+t+`"`)
	}
	match := strings.Join(quoted, " OR ")
	rows, err := ix.db.QueryContext(ctx, `SELECT rowid FROM kb_fts WHERE kb_fts MATCH ?
		ORDER BY bm25(kb_fts, 4.0, 2.5, 3.0, 2.0, 1.0) LIMIT ?`, match, candidates)
	if err != nil {
		return fmt.Errorf("full-text search: %w", err)
	}
	defer rows.Close()
	rank, docRank := 0, 0
	seen := map[string]bool{}
	for rows.Next() {
		var id int64
		if err := rows.Scan(&id); err != nil {
			return fmt.Errorf("full-text search: %w", err)
		}
		p := ix.passages[id]
		if p == nil {
			continue
		}
		rank++
		pas[id] += wBM25 / (rrfK + float64(rank))
		if !seen[p.path] {
			seen[p.path] = true
			docRank++
			docs[p.path] += wBM25 / (rrfK + float64(docRank))
		}
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("full-text search: %w", err)
	}
	rows.Close()
	// Whole-document BM25: the third ranking of the fusion.
	rows, err = ix.db.QueryContext(ctx, `SELECT rowid FROM kb_docfts WHERE kb_docfts MATCH ?
		ORDER BY bm25(kb_docfts, 4.0, 2.5, 3.0, 1.0) LIMIT ?`, match, candidates)
	if err != nil {
		return fmt.Errorf("full-text search of documents: %w", err)
	}
	defer rows.Close()
	rank = 0
	for rows.Next() {
		var id int64
		if err := rows.Scan(&id); err != nil {
			return fmt.Errorf("full-text search of documents: %w", err)
		}
		if p, ok := ix.rowPath[id]; ok {
			rank++
			docs[p] += wDocBM25 / (rrfK + float64(rank))
		}
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("full-text search of documents: %w", err)
	}
	return nil
}

// fuseVector ranks passages by cosine similarity in the chromem-go
// collection and adds their reciprocal ranks like fuseBM25.
func (ix *Index) fuseVector(ctx context.Context, text string, pas map[int64]float64, docs map[string]float64) error {
	n := min(candidates, ix.coll.Count())
	if n == 0 {
		return nil
	}
	vecs, err := ix.emb.Embed(ctx, []string{text})
	if err != nil {
		return fmt.Errorf("embed query with %s: %w", ix.emb.Name(), err)
	}
	res, err := ix.coll.QueryEmbedding(ctx, normalize(vecs[0]), n, nil, nil)
	if err != nil {
		return fmt.Errorf("vector search: %w", err)
	}
	docRank := 0
	seen := map[string]bool{}
	for rank, r := range res {
		id, err := strconv.ParseInt(r.ID, 10, 64)
		if err != nil {
			continue
		}
		p := ix.passages[id]
		if p == nil {
			continue
		}
		pas[id] += wVector / (rrfK + float64(rank+1))
		if !seen[p.path] {
			seen[p.path] = true
			docRank++
			docs[p.path] += wVector / (rrfK + float64(docRank))
		}
	}
	return nil
}

// bestPassage is the document's passage with the highest fused score, or
// its first passage when none matched.
func (ix *Index) bestPassage(path string, pas map[int64]float64) (string, string) {
	ids := ix.byDoc[path]
	if len(ids) == 0 {
		return "", ""
	}
	best := ids[0]
	for _, id := range ids[1:] {
		if pas[id] > pas[best] {
			best = id
		}
	}
	p := ix.passages[best]
	return p.heading, p.text
}

// forLanguage says whether a document that lists its languages is for
// lang (every document is where either is unknown).
func forLanguage(langs []string, lang string) bool {
	return lang == "" || len(langs) == 0 || slices.Contains(langs, lang) || slices.Contains(langs, "any")
}
