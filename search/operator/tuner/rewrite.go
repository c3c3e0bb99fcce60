package tuner

import (
	"fmt"
	"strings"
)

// Apply rewrites code so that every tunable of s named in a holds its value.
// Names a does not mention keep their value.
func (s *Space) Apply(code string, a Assignment) (string, error) {
	for _, t := range s.Tunables {
		v, ok := a[t.Name]
		if !ok {
			continue
		}
		if indexOf(t.Values, v) < 0 {
			return "", fmt.Errorf("tunable %s: %s is not one of its values", t.Name, v)
		}
		var err error
		switch t.kind {
		case kindAssign:
			code, err = rewriteAssign(code, t.Name, v)
		case kindKwarg:
			code, err = rewriteOccurrence(code, t, v)
		case kindBlock:
			code, err = rewriteOccurrence(code, t, v)
		}
		if err != nil {
			return "", err
		}
	}
	return code, nil
}

func rewriteAssign(code, name, value string) (string, error) {
	re := assignRe(name)
	loc := re.FindStringSubmatchIndex(code)
	if loc == nil {
		return "", fmt.Errorf("tunable %s: no module-level assignment to rewrite", name)
	}
	return code[:loc[4]] + value + code[loc[5]:], nil
}

// rewriteOccurrence replaces the literal of the t.occ-th launch-site
// occurrence of t.kw, counted the way parseSites counts them.
func rewriteOccurrence(code string, t Tunable, value string) (string, error) {
	k := 0
	if t.kind == kindBlock {
		for _, m := range blockRe.FindAllStringSubmatchIndex(code, -1) {
			if k == t.occ {
				return code[:m[2]] + value + code[m[3]:], nil
			}
			k++
		}
	} else {
		for _, m := range kwargRe.FindAllStringSubmatchIndex(code, -1) {
			if !isKwarg(code, m[0]) || code[m[1]:min(m[1]+1, len(code))] == "." || code[m[2]:m[3]] != t.kw {
				continue
			}
			if k == t.occ {
				return code[:m[4]] + value + code[m[5]:], nil
			}
			k++
		}
	}
	return "", fmt.Errorf("tunable %s: launch site not found", t.Name)
}

// Describe is a one-line summary of an assignment's difference from base.
func Describe(base, a Assignment, names []string) string {
	var parts []string
	for _, n := range names {
		if base[n] != a[n] {
			parts = append(parts, fmt.Sprintf("%s %s→%s", n, base[n], a[n]))
		}
	}
	if len(parts) == 0 {
		return "no change"
	}
	return strings.Join(parts, ", ")
}
