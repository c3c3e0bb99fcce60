package report

import (
	"fmt"
	"math/rand"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// apply rebuilds both sides from an edit script, proving it is an edit
// script of a into b and that its line numbers are right.
func apply(t *testing.T, ops []DiffLine) (a, b []string) {
	t.Helper()
	for _, l := range ops {
		if l.Op != '+' {
			a = append(a, l.Text)
			if l.Old != len(a) {
				t.Fatalf("old line number %d, want %d", l.Old, len(a))
			}
		}
		if l.Op != '-' {
			b = append(b, l.Text)
			if l.New != len(b) {
				t.Fatalf("new line number %d, want %d", l.New, len(b))
			}
		}
	}
	return a, b
}

// editDistance is the insert/delete distance by the textbook LCS table, the
// reference that Myers' result must match.
func editDistance(a, b []string) int {
	dp := make([][]int, len(a)+1)
	for i := range dp {
		dp[i] = make([]int, len(b)+1)
	}
	for i := len(a) - 1; i >= 0; i-- {
		for j := len(b) - 1; j >= 0; j-- {
			if a[i] == b[j] {
				dp[i][j] = dp[i+1][j+1] + 1
			} else {
				dp[i][j] = max(dp[i+1][j], dp[i][j+1])
			}
		}
	}
	return len(a) + len(b) - 2*dp[0][0]
}

func changes(ops []DiffLine) int {
	n := 0
	for _, l := range ops {
		if l.Op != ' ' {
			n++
		}
	}
	return n
}

func TestDiffLinesCases(t *testing.T) {
	cases := []struct {
		name, a, b string
		edits      int
	}{
		{"equal", "x\ny\n", "x\ny\n", 0},
		{"both empty", "", "", 0},
		{"from empty", "", "a\nb\n", 2},
		{"to empty", "a\nb\n", "", 2},
		{"insert middle", "a\nc\n", "a\nb\nc\n", 1},
		{"insert front", "b\nc\n", "a\nb\nc\n", 1},
		{"delete end", "a\nb\nc\n", "a\nb\n", 1},
		{"replace one", "a\nb\nc\n", "a\nB\nc\n", 2},
		{"swap", "a\nb\n", "b\na\n", 2},
		{"tunable edit", "BLOCK = 256\nNUM_WARPS = 4\nbody\n", "BLOCK = 1024\nNUM_WARPS = 4\nbody\n", 2},
		{"no trailing newline", "a\nb", "a\nb\n", 0},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			a, b := splitLines(c.a), splitLines(c.b)
			ops := DiffLines(a, b)
			ga, gb := apply(t, ops)
			if strings.Join(ga, "\n") != strings.Join(a, "\n") || strings.Join(gb, "\n") != strings.Join(b, "\n") {
				t.Fatalf("script does not rebuild the inputs: %q %q", ga, gb)
			}
			if got := changes(ops); got != c.edits {
				t.Fatalf("%d changed lines, want %d: %+v", got, c.edits, ops)
			}
		})
	}
}

// Random inputs over a small alphabet (many equal lines, so many competing
// alignments): Myers must rebuild both sides and be exactly as short as the
// LCS table says.
func TestDiffLinesMinimalOnRandomInputs(t *testing.T) {
	rng := rand.New(rand.NewSource(1))
	gen := func() []string {
		n := rng.Intn(40)
		out := make([]string, n)
		for i := range out {
			out[i] = string(rune('a' + rng.Intn(4)))
		}
		return out
	}
	for trial := 0; trial < 500; trial++ {
		a, b := gen(), gen()
		ops := DiffLines(a, b)
		ga, gb := apply(t, ops)
		if strings.Join(ga, ",") != strings.Join(a, ",") || strings.Join(gb, ",") != strings.Join(b, ",") {
			t.Fatalf("trial %d: script does not rebuild %q -> %q", trial, a, b)
		}
		if got, want := changes(ops), editDistance(a, b); got != want {
			t.Fatalf("trial %d: %d edits, the minimum is %d (%q -> %q)", trial, got, want, a, b)
		}
	}
}

func TestDiffLinesTooDifferentFallsBackToReplace(t *testing.T) {
	var a, b []string
	for i := 0; i < maxEditDistance; i++ {
		a = append(a, "a"+string(rune('0'+i%10))+strings.Repeat("x", i%7))
		b = append(b, "b"+string(rune('0'+i%10)))
	}
	ops := DiffLines(a, b)
	ga, gb := apply(t, ops)
	if len(ga) != len(a) || len(gb) != len(b) || changes(ops) != len(a)+len(b) {
		t.Fatalf("fallback is not a full replacement: %d ops", len(ops))
	}
}

func TestUnifiedGolden(t *testing.T) {
	a := "l1\nl2\nl3\nl4\nl5\nl6\nl7\nl8\nl9\nl10\nl11\nl12\nl13\nl14\nl15\n"
	b := "l1\nl2\nL3\nl4\nl5\nl6\nl7\nl8\nl9\nl10\nl11\nl12\nl13\nl14\nl15\nl16\n"
	want := `--- a
+++ b
@@ -1,6 +1,6 @@
 l1
 l2
-l3
+L3
 l4
 l5
 l6
@@ -13,3 +13,4 @@
 l13
 l14
 l15
+l16
`
	if got := Unified(a, b, "a", "b", 3); got != want {
		t.Fatalf("unified diff:\n%s\nwant:\n%s", got, want)
	}
	// Changes closer than 2×context share one hunk.
	b2 := strings.Replace(b, "l8\n", "L8\n", 1)
	if got := Unified(a, b2, "a", "b", 3); strings.Count(got, "@@ -") != 2 {
		t.Fatalf("want 2 hunks (l3..l8 merged, l16 apart):\n%s", got)
	}
	if got := Unified("x\n", "y\n", "a", "b", 3); got != "--- a\n+++ b\n@@ -1 +1 @@\n-x\n+y\n" {
		t.Fatalf("one-line replace:\n%s", got)
	}
	if got := Unified("", "y\n", "a", "b", 3); got != "--- a\n+++ b\n@@ -0,0 +1 @@\n+y\n" {
		t.Fatalf("from empty:\n%s", got)
	}
	// The same as GNU diff -u (without its file-time headers).
	if _, err := exec.LookPath("diff"); err == nil {
		dir := t.TempDir()
		for _, pair := range [][2]string{{a, b}, {a, b2}, {"x\n", "y\n"}, {"", "y\n"}, {startKernel, strings.Replace(startKernel, "BLOCK = 1024", "BLOCK = 512", 1)}} {
			pa, pb := filepath.Join(dir, "a"), filepath.Join(dir, "b")
			os.WriteFile(pa, []byte(pair[0]), 0o644)
			os.WriteFile(pb, []byte(pair[1]), 0o644)
			out, _ := exec.Command("diff", "-u", "--label", "a", "--label", "b", pa, pb).Output()
			if got := Unified(pair[0], pair[1], "a", "b", 3); got != string(out) {
				t.Errorf("differs from GNU diff -u:\n%s\nGNU:\n%s", got, out)
			}
		}
	}
	if Unified(a, a, "a", "b", 3) != "" {
		t.Fatal("equal texts gave a diff")
	}
}

// Unified renders the diff from a to b as `diff -u` would (without file
// times); "" when they are equal: the hunks the report shows, held to
// diff's own output.
func Unified(a, b, nameA, nameB string, context int) string {
	hunks := Hunks(DiffLines(splitLines(a), splitLines(b)), context)
	if len(hunks) == 0 {
		return ""
	}
	var s strings.Builder
	fmt.Fprintf(&s, "--- %s\n+++ %s\n", nameA, nameB)
	for _, h := range hunks {
		s.WriteString(h.Header() + "\n")
		for _, l := range h.Lines {
			s.WriteByte(l.Op)
			s.WriteString(l.Text + "\n")
		}
	}
	return s.String()
}
