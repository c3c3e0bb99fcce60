package openai

import (
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"strings"
)

// ErrMalformed marks an answer that holds neither a usable file nor a
// diff that applies.
var ErrMalformed = errors.New("malformed answer")

type hunk struct {
	oldStart int
	old, new []string
}

var hunkHeader = regexp.MustCompile(`^@@ -(\d+)(?:,(\d+))? \+(\d+)(?:,(\d+))? @@`)

// parseDiff reads a unified diff of one file (the ---/+++ header is
// optional; git's "diff --git" and "index" lines are skipped).
func parseDiff(d string) ([]hunk, error) {
	var hs []hunk
	var cur *hunk
	var oldLeft, newLeft int
	for i, line := range strings.Split(strings.ReplaceAll(d, "\r\n", "\n"), "\n") {
		if cur == nil || (oldLeft == 0 && newLeft == 0) {
			switch {
			case strings.HasPrefix(line, "@@"):
				m := hunkHeader.FindStringSubmatch(line)
				if m == nil {
					return nil, fmt.Errorf("%w: line %d: bad hunk header %q", ErrMalformed, i+1, line)
				}
				hs = append(hs, hunk{oldStart: atoi(m[1])})
				cur = &hs[len(hs)-1]
				oldLeft, newLeft = count(m[2]), count(m[4])
				continue
			case strings.HasPrefix(line, "diff "), strings.HasPrefix(line, "index "), strings.HasPrefix(line, "--- "),
				strings.HasPrefix(line, "+++ "), strings.HasPrefix(line, `\`), strings.TrimSpace(line) == "":
				continue
			}
			return nil, fmt.Errorf("%w: line %d: %q outside a hunk", ErrMalformed, i+1, line)
		}
		switch {
		case strings.HasPrefix(line, `\`): // "\ No newline at end of file"
			continue
		case strings.HasPrefix(line, "+"):
			cur.new = append(cur.new, line[1:])
			newLeft--
		case strings.HasPrefix(line, "-"):
			cur.old = append(cur.old, line[1:])
			oldLeft--
		case strings.HasPrefix(line, " "), line == "":
			// A context line; models often drop the space of an empty one.
			s := strings.TrimPrefix(line, " ")
			cur.old, cur.new = append(cur.old, s), append(cur.new, s)
			oldLeft--
			newLeft--
		default:
			return nil, fmt.Errorf("%w: line %d: %q inside a hunk", ErrMalformed, i+1, line)
		}
		if oldLeft < 0 || newLeft < 0 {
			return nil, fmt.Errorf("%w: line %d: hunk longer than its header says", ErrMalformed, i+1)
		}
	}
	if len(hs) == 0 {
		return nil, fmt.Errorf("%w: no hunks in the diff", ErrMalformed)
	}
	if oldLeft > 0 || newLeft > 0 {
		return nil, fmt.Errorf("%w: the last hunk is shorter than its header says", ErrMalformed)
	}
	return hs, nil
}

func atoi(s string) int { n, _ := strconv.Atoi(s); return n }

func count(s string) int {
	if s == "" {
		return 1
	}
	return atoi(s)
}

// applyDiff applies hunks in order. Each hunk's old lines must occur in the
// file: at the line its header names, else the nearest exact match after
// the previous hunk (models miscount line numbers), else with trailing
// whitespace ignored. A hunk found nowhere fails the whole diff.
func applyDiff(src, d string) (string, error) {
	hs, err := parseDiff(d)
	if err != nil {
		return "", err
	}
	trailingNL := strings.HasSuffix(src, "\n")
	lines := strings.Split(strings.TrimSuffix(src, "\n"), "\n")
	pos := 0
	for k, h := range hs {
		at := find(lines, h.old, h.oldStart-1, pos)
		if at < 0 {
			return "", fmt.Errorf("%w: hunk %d (at line %d) does not match kernel.py", ErrMalformed, k+1, h.oldStart)
		}
		out := append([]string{}, lines[:at]...)
		out = append(out, h.new...)
		out = append(out, lines[at+len(h.old):]...)
		lines = out
		pos = at + len(h.new)
	}
	s := strings.Join(lines, "\n")
	if trailingNL {
		s += "\n"
	}
	return s, nil
}

func find(lines, old []string, hint, from int) int {
	if len(old) == 0 {
		return max(min(hint+1, len(lines)), from) // pure insertion after line hint
	}
	match := func(at int, eq func(a, b string) bool) bool {
		if at < 0 || at+len(old) > len(lines) {
			return false
		}
		for i, o := range old {
			if !eq(lines[at+i], o) {
				return false
			}
		}
		return true
	}
	exact := func(a, b string) bool { return a == b }
	loose := func(a, b string) bool { return strings.TrimRight(a, " \t") == strings.TrimRight(b, " \t") }
	for _, eq := range []func(a, b string) bool{exact, loose} {
		if hint >= from && match(hint, eq) {
			return hint
		}
		best := -1
		for at := from; at+len(old) <= len(lines); at++ {
			if match(at, eq) && (best < 0 || abs(at-hint) < abs(best-hint)) {
				best = at
			}
		}
		if best >= 0 {
			return best
		}
	}
	return -1
}

func abs(x int) int {
	if x < 0 {
		return -x
	}
	return x
}

var fenceRe = regexp.MustCompile("(?s)```([A-Za-z0-9_+-]*)[^\n]*\n(.*?)\n?```")

// extract turns a model's answer into the candidate's code: a unified diff
// (a diff/patch block, or a block or answer starting like one) applied to
// the parent, else the last python block defining ModelNew, else the bare
// answer when it is a module defining ModelNew. Anything else is
// ErrMalformed. kind says which it was ("diff" or "file").
func extract(answer, parent string) (code, kind string, err error) {
	blocks := fenceRe.FindAllStringSubmatch(answer, -1)
	isDiff := func(s string) bool {
		t := strings.TrimSpace(s)
		return strings.HasPrefix(t, "--- ") || strings.HasPrefix(t, "@@") || strings.HasPrefix(t, "diff --git")
	}
	for _, b := range blocks {
		if b[1] == "diff" || b[1] == "patch" || isDiff(b[2]) {
			c, err := applyDiff(parent, b[2])
			return c, "diff", err
		}
	}
	for i := len(blocks) - 1; i >= 0; i-- {
		if strings.Contains(blocks[i][2], "ModelNew") {
			return strings.TrimRight(blocks[i][2], "\n") + "\n", "file", nil
		}
	}
	if len(blocks) == 0 {
		if isDiff(answer) {
			c, err := applyDiff(parent, answer)
			return c, "diff", err
		}
		if strings.Contains(answer, "class ModelNew") {
			return strings.TrimSpace(answer) + "\n", "file", nil
		}
	}
	return "", "", fmt.Errorf("%w: no python block defining ModelNew and no unified diff", ErrMalformed)
}
