package report

import (
	"fmt"
	"strings"
)

// DiffLine is one line of an edit script: Op is ' ' (kept), '-' (only in the
// old text) or '+' (only in the new one). Old and New are 1-based line
// numbers, 0 on the side the line is absent from.
type DiffLine struct {
	Op       byte
	Text     string
	Old, New int
}

// Hunk is one unified-diff hunk: a run of changes with context around it.
type Hunk struct {
	OldStart, OldLines, NewStart, NewLines int
	Lines                                  []DiffLine
}

// Header is the hunk's "@@ -a,b +c,d @@" line, spelled as GNU diff -u
// does (a count of 1 is left out).
func (h Hunk) Header() string {
	return fmt.Sprintf("@@ -%s +%s @@", hunkRange(h.OldStart, h.OldLines), hunkRange(h.NewStart, h.NewLines))
}

func hunkRange(start, n int) string {
	if n == 1 {
		return fmt.Sprint(start)
	}
	return fmt.Sprintf("%d,%d", start, n)
}

// maxEditDistance bounds Myers' search (its trace costs O(D²) memory): two
// kernels that differ in more lines than this are shown as one replacement,
// which is what a reader would make of such a diff anyway.
const maxEditDistance = 3000

// splitLines splits text into lines; a final newline ends the last line
// rather than starting an empty one.
func splitLines(s string) []string {
	if s == "" {
		return nil
	}
	s = strings.TrimSuffix(s, "\n")
	return strings.Split(s, "\n")
}

// DiffLines is the shortest edit script from a to b (Myers' O(ND) greedy
// algorithm on the lines between their common prefix and suffix), with line
// numbers.
func DiffLines(a, b []string) []DiffLine {
	pre := 0
	for pre < len(a) && pre < len(b) && a[pre] == b[pre] {
		pre++
	}
	suf := 0
	for suf < len(a)-pre && suf < len(b)-pre && a[len(a)-1-suf] == b[len(b)-1-suf] {
		suf++
	}
	var ops []byte
	for i := 0; i < pre; i++ {
		ops = append(ops, ' ')
	}
	ops = append(ops, myers(a[pre:len(a)-suf], b[pre:len(b)-suf])...)
	for i := 0; i < suf; i++ {
		ops = append(ops, ' ')
	}
	out := make([]DiffLine, 0, len(ops))
	i, j := 0, 0
	for _, op := range ops {
		switch op {
		case ' ':
			out = append(out, DiffLine{Op: ' ', Text: b[j], Old: i + 1, New: j + 1})
			i, j = i+1, j+1
		case '-':
			out = append(out, DiffLine{Op: '-', Text: a[i], Old: i + 1})
			i++
		case '+':
			out = append(out, DiffLine{Op: '+', Text: b[j], New: j + 1})
			j++
		}
	}
	return out
}

// myers returns the edit ops (' ', '-', '+') turning a into b.
func myers(a, b []string) []byte {
	n, m := len(a), len(b)
	replaceAll := func() []byte {
		ops := make([]byte, 0, n+m)
		for range n {
			ops = append(ops, '-')
		}
		for range m {
			ops = append(ops, '+')
		}
		return ops
	}
	if n == 0 || m == 0 {
		return replaceAll()
	}
	limit := min(n+m, maxEditDistance)
	off := limit + 1
	v := make([]int, 2*limit+3)
	// trace[d] holds v[k] for k in -d..d after step d, at index k+d.
	var trace [][]int
	found := false
	for d := 0; d <= limit && !found; d++ {
		for k := -d; k <= d; k += 2 {
			var x int
			if k == -d || (k != d && v[off+k-1] < v[off+k+1]) {
				x = v[off+k+1] // step down: insert b[y]
			} else {
				x = v[off+k-1] + 1 // step right: delete a[x]
			}
			y := x - k
			for x < n && y < m && a[x] == b[y] {
				x, y = x+1, y+1
			}
			v[off+k] = x
			if x >= n && y >= m {
				found = true
				break
			}
		}
		trace = append(trace, append([]int(nil), v[off-d:off+d+1]...))
	}
	if !found {
		return replaceAll()
	}
	// Walk back from (n, m), collecting ops in reverse.
	var rev []byte
	x, y := n, m
	for d := len(trace) - 1; d > 0; d-- {
		prev := trace[d-1]
		at := func(k int) int { return prev[k+d-1] }
		k := x - y
		var pk int
		if k == -d || (k != d && at(k-1) < at(k+1)) {
			pk = k + 1
		} else {
			pk = k - 1
		}
		px := at(pk)
		py := px - pk
		for x > px && y > py {
			rev = append(rev, ' ')
			x, y = x-1, y-1
		}
		if pk == k+1 {
			rev = append(rev, '+')
		} else {
			rev = append(rev, '-')
		}
		x, y = px, py
	}
	for x > 0 && y > 0 {
		rev = append(rev, ' ')
		x, y = x-1, y-1
	}
	ops := make([]byte, len(rev))
	for i, op := range rev {
		ops[len(rev)-1-i] = op
	}
	return ops
}

// Hunks groups an edit script into unified-diff hunks with `context` kept
// lines around each change; hunks whose context would touch are merged.
func Hunks(lines []DiffLine, context int) []Hunk {
	var hunks []Hunk
	i := 0
	for i < len(lines) {
		if lines[i].Op == ' ' {
			i++
			continue
		}
		start := max(0, i-context)
		end := i // last change index of this hunk
		for j := i; j < len(lines); j++ {
			if lines[j].Op != ' ' {
				if j-end > 2*context {
					break
				}
				end = j
			}
		}
		stop := min(len(lines), end+context+1)
		hunks = append(hunks, makeHunk(lines[start:stop], lines[:start]))
		i = stop
	}
	return hunks
}

func makeHunk(body, before []DiffLine) Hunk {
	oldBefore, newBefore := 0, 0
	for _, l := range before {
		if l.Op != '+' {
			oldBefore++
		}
		if l.Op != '-' {
			newBefore++
		}
	}
	h := Hunk{Lines: body}
	for _, l := range body {
		if l.Op != '+' {
			h.OldLines++
		}
		if l.Op != '-' {
			h.NewLines++
		}
	}
	// Unified-diff convention: an empty side names the line before it.
	h.OldStart, h.NewStart = oldBefore+1, newBefore+1
	if h.OldLines == 0 {
		h.OldStart--
	}
	if h.NewLines == 0 {
		h.NewStart--
	}
	return h
}
