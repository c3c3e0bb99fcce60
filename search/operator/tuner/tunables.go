package tuner

import (
	"fmt"
	"regexp"
	"sort"
	"strconv"
	"strings"
)

// Tunable is one knob of a candidate: a module-level assignment declared in
// TUNABLES, or a literal keyword argument found at a launch site.
type Tunable struct {
	// Name is the assignment's name, or "kwarg#k" for the k-th launch-site
	// occurrence of that keyword (num_warps#0, BLOCK_SIZE#1, block#0).
	Name   string   `json:"name"`
	Values []string `json:"values"` // Python source text of each value
	// Current is the index in Values of the value the code holds now.
	Current int `json:"current"`

	kind siteKind
	kw   string // the keyword (site tunables)
	occ  int    // its occurrence among that keyword's literal sites
}

type siteKind int

const (
	kindAssign siteKind = iota // NAME = value, declared in TUNABLES
	kindKwarg                  // name=literal at a Triton launch
	kindBlock                  // block=(N,) at a kevolve launch
)

// Space is every tunable of one candidate.
type Space struct {
	Tunables []Tunable
	// Declared is true when the code has a TUNABLES dict (else the knobs
	// were found at launch sites).
	Declared bool
	// Skipped says which declared names could not be tuned, and why.
	Skipped []string
}

// Assignment maps a tunable's name to its value's source text.
type Assignment map[string]string

// Current is the assignment the code holds.
func (s *Space) Current() Assignment {
	a := Assignment{}
	for _, t := range s.Tunables {
		a[t.Name] = t.Values[t.Current]
	}
	return a
}

// key names an assignment of s's tunables: equal keys, equal code.
func (s *Space) key(a Assignment) string {
	var b strings.Builder
	for _, tn := range s.Tunables {
		b.WriteString(a[tn.Name])
		b.WriteByte(0)
	}
	return b.String()
}

// Size is the number of assignments (saturating at 1<<40).
func (s *Space) Size() int64 {
	n := int64(1)
	for _, t := range s.Tunables {
		n *= int64(len(t.Values))
		if n > 1<<40 {
			return 1 << 40
		}
	}
	return n
}

var tunablesStart = regexp.MustCompile(`(?m)^TUNABLES[ \t]*(?::[^=\n]*)?=[ \t]*\{`)

// Parse finds a candidate's tunables: the TUNABLES dict when there is one,
// else literal num_warps=, num_stages=, BLOCK…= keyword arguments at Triton
// launch sites and block=(N,) at kevolve launch sites. A code with neither
// has an empty space (not an error: the tuner then has nothing to do).
func Parse(code string) (*Space, error) {
	if loc := tunablesStart.FindStringIndex(code); loc != nil {
		return parseDeclared(code, loc[1]-1)
	}
	return parseSites(code), nil
}

func parseDeclared(code string, open int) (*Space, error) {
	end, err := matchClose(code, open)
	if err != nil {
		return nil, fmt.Errorf("TUNABLES: %w", err)
	}
	s := &Space{Declared: true}
	for _, entry := range splitTop(stripComments(code[open+1:end]), ',') {
		entry = strings.TrimSpace(entry)
		if entry == "" {
			continue
		}
		parts := splitTop(entry, ':')
		if len(parts) != 2 {
			return nil, fmt.Errorf("TUNABLES entry %q: want \"NAME\": [values]", clip(entry))
		}
		name, err := unquote(strings.TrimSpace(parts[0]))
		if err != nil {
			return nil, fmt.Errorf("TUNABLES key %s: %w", clip(parts[0]), err)
		}
		list := strings.TrimSpace(parts[1])
		if len(list) < 2 || !(list[0] == '[' && list[len(list)-1] == ']' || list[0] == '(' && list[len(list)-1] == ')') {
			return nil, fmt.Errorf("TUNABLES[%q]: values must be a list literal, got %s", name, clip(list))
		}
		var values []string
		for _, v := range splitTop(list[1:len(list)-1], ',') {
			if v = strings.TrimSpace(v); v != "" {
				values = append(values, v)
			}
		}
		if len(values) == 0 {
			s.Skipped = append(s.Skipped, name+": no values")
			continue
		}
		cur, ok := assignedValue(code, name)
		if !ok {
			s.Skipped = append(s.Skipped, name+": no module-level single-line assignment `"+name+" = value`")
			continue
		}
		t := Tunable{Name: name, Values: dedupe(values), kind: kindAssign}
		t.Current = indexOf(t.Values, cur)
		if t.Current < 0 {
			// The code holds a value outside the list: keep it as a choice
			// so the start itself is a point of the space.
			t.Values = append([]string{cur}, t.Values...)
			t.Current = 0
		}
		if len(t.Values) > 1 {
			s.Tunables = append(s.Tunables, t)
		}
	}
	return s, nil
}

func assignRe(name string) *regexp.Regexp {
	return regexp.MustCompile(`(?m)^(` + regexp.QuoteMeta(name) + `[ \t]*(?::[^=\n]*)?=[ \t]*)([^\n]*?)([ \t]*#[^\n]*)?$`)
}

// assignedValue is the right-hand side of the module-level NAME = value.
func assignedValue(code, name string) (string, bool) {
	m := assignRe(name).FindStringSubmatch(code)
	if m == nil || strings.HasPrefix(m[2], "=") {
		return "", false
	}
	v := strings.TrimSpace(m[2])
	if v == "" || !balanced(v) {
		return "", false
	}
	return v, true
}

var (
	kwargRe = regexp.MustCompile(`\b(num_warps|num_stages|BLOCK\w*)[ \t]*=[ \t]*(\d+)\b`)
	blockRe = regexp.MustCompile(`\bblock[ \t]*=[ \t]*\([ \t]*(\d+)[ \t]*,?[ \t]*\)`)
)

func parseSites(code string) *Space {
	s := &Space{}
	occ := map[string]int{}
	for _, m := range kwargRe.FindAllStringSubmatchIndex(code, -1) {
		if !isKwarg(code, m[0]) || code[m[1]:min(m[1]+1, len(code))] == "." {
			continue
		}
		kw := code[m[2]:m[3]]
		cur := code[m[4]:m[5]]
		t := Tunable{Name: fmt.Sprintf("%s#%d", kw, occ[kw]), kind: kindKwarg, kw: kw, occ: occ[kw]}
		occ[kw]++
		n, _ := strconv.Atoi(cur)
		switch {
		case kw == "num_warps":
			t.Values = []string{"1", "2", "4", "8", "16"}
		case kw == "num_stages":
			t.Values = []string{"1", "2", "3", "4", "5"}
		default: // BLOCK…: powers of two from a quarter to four times the literal
			t.Values = powersAround(n, 16, 16384)
		}
		t.Values, t.Current = withValue(t.Values, cur)
		s.Tunables = append(s.Tunables, t)
	}
	for k, m := range blockRe.FindAllStringSubmatchIndex(code, -1) {
		cur := code[m[2]:m[3]]
		t := Tunable{Name: fmt.Sprintf("block#%d", k), kind: kindBlock, kw: "block", occ: k,
			Values: []string{"32", "64", "128", "256", "512", "1024"}}
		t.Values, t.Current = withValue(t.Values, cur)
		s.Tunables = append(s.Tunables, t)
	}
	return s
}

// isKwarg: the name follows '(' or ',' (possibly across a line break), so
// it is a keyword argument and not an assignment or a comparison.
func isKwarg(code string, at int) bool {
	for i := at - 1; i >= 0; i-- {
		switch code[i] {
		case ' ', '\t', '\n', '\r':
			continue
		case '(', ',':
			return true
		}
		return false
	}
	return false
}

func powersAround(n, lo, hi int) []string {
	var out []string
	if n <= 0 {
		return []string{strconv.Itoa(n)}
	}
	for v := lo; v <= hi; v *= 2 {
		if v*4 >= n && v <= n*4 {
			out = append(out, strconv.Itoa(v))
		}
	}
	return out
}

// withValue returns values with cur in it (numerically sorted when every
// value is an integer) and cur's index.
func withValue(values []string, cur string) ([]string, int) {
	if indexOf(values, cur) < 0 {
		values = append(values, cur)
		sort.SliceStable(values, func(i, j int) bool {
			a, e1 := strconv.Atoi(values[i])
			b, e2 := strconv.Atoi(values[j])
			return e1 == nil && e2 == nil && a < b
		})
	}
	return values, indexOf(values, cur)
}

func indexOf(values []string, v string) int {
	nv := normValue(v)
	for i, x := range values {
		if normValue(x) == nv {
			return i
		}
	}
	return -1
}

// normValue compares Python literals loosely: spaces and quote style aside.
func normValue(v string) string {
	return strings.ReplaceAll(strings.ReplaceAll(strings.Join(strings.Fields(v), ""), `'`, `"`), ",)", ")")
}

func dedupe(values []string) []string {
	var out []string
	for _, v := range values {
		if indexOf(out, v) < 0 {
			out = append(out, v)
		}
	}
	return out
}

// matchClose finds the bracket closing the one at open, skipping strings
// and comments.
func matchClose(s string, open int) (int, error) {
	depth := 0
	for i := open; i < len(s); i++ {
		switch c := s[i]; c {
		case '(', '[', '{':
			depth++
		case ')', ']', '}':
			depth--
			if depth == 0 {
				return i, nil
			}
		case '"', '\'':
			j := skipString(s, i)
			if j < 0 {
				return 0, fmt.Errorf("unterminated string")
			}
			i = j
		case '#':
			for i < len(s) && s[i] != '\n' {
				i++
			}
		}
	}
	return 0, fmt.Errorf("unbalanced brackets")
}

// skipString returns the index of the quote closing the string at i.
func skipString(s string, i int) int {
	q := s[i]
	if strings.HasPrefix(s[i:], strings.Repeat(string(q), 3)) {
		end := strings.Index(s[i+3:], strings.Repeat(string(q), 3))
		if end < 0 {
			return -1
		}
		return i + 3 + end + 2
	}
	for j := i + 1; j < len(s); j++ {
		switch s[j] {
		case '\\':
			j++
		case q:
			return j
		case '\n':
			return -1
		}
	}
	return -1
}

// splitTop splits s at sep outside brackets and strings.
func splitTop(s string, sep byte) []string {
	var out []string
	depth, start := 0, 0
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c == '(' || c == '[' || c == '{':
			depth++
		case c == ')' || c == ']' || c == '}':
			depth--
		case c == '"' || c == '\'':
			if j := skipString(s, i); j > 0 {
				i = j
			}
		case c == '#':
			for i < len(s) && s[i] != '\n' {
				i++
			}
		case c == sep && depth == 0:
			out = append(out, s[start:i])
			start = i + 1
		}
	}
	return append(out, s[start:])
}

func balanced(v string) bool {
	depth := 0
	for i := 0; i < len(v); i++ {
		switch c := v[i]; c {
		case '(', '[', '{':
			depth++
		case ')', ']', '}':
			depth--
		case '"', '\'':
			j := skipString(v, i)
			if j < 0 {
				return false
			}
			i = j
		}
	}
	return depth == 0
}

func unquote(s string) (string, error) {
	if len(s) >= 2 && (s[0] == '"' || s[0] == '\'') && s[len(s)-1] == s[0] {
		return s[1 : len(s)-1], nil
	}
	return "", fmt.Errorf("want a quoted name")
}

func clip(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	if len(s) > 60 {
		return s[:57] + "..."
	}
	return s
}

// stripComments drops '#' comments outside strings.
func stripComments(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		switch c := s[i]; c {
		case '"', '\'':
			j := skipString(s, i)
			if j < 0 {
				j = len(s) - 1
			}
			b.WriteString(s[i : j+1])
			i = j
		case '#':
			for i < len(s) && s[i] != '\n' {
				i++
			}
			b.WriteByte('\n')
		default:
			b.WriteByte(c)
		}
	}
	return b.String()
}
