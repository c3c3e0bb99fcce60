package kernelbench

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A pair whose files changed while it was evaluated keeps no result: its
// key was made of the bytes read before.
func TestUnchangedPairFiles(t *testing.T) {
	dir := t.TempDir()
	ref, cand := filepath.Join(dir, "1_A.py"), filepath.Join(dir, "cand.py")
	for _, f := range []string{ref, cand} {
		if err := os.WriteFile(f, []byte("v1"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	p := Pair{Problem: Problem{Path: ref}, CandidatePath: cand}
	if err := unchanged(p, []byte("v1"), []byte("v1")); err != nil {
		t.Fatalf("unchanged files: %v", err)
	}
	for _, f := range []string{cand, ref} {
		if err := os.WriteFile(f, []byte("v2"), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := unchanged(p, []byte("v1"), []byte("v1")); err == nil || !strings.Contains(err.Error(), f) {
			t.Fatalf("%s rewritten: %v", f, err)
		}
		_ = os.WriteFile(f, []byte("v1"), 0o644)
	}
	// An inline candidate (reference-as-candidate) has only the problem file.
	if err := unchanged(Pair{Problem: Problem{Path: ref}, Code: "x"}, []byte("v1"), []byte("x")); err != nil {
		t.Fatalf("inline candidate: %v", err)
	}
}
