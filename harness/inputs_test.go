package harness

import (
	"context"
	"database/sql"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// Inputs are what was hashed: a candidate or reference that is not a
// regular file is refused before anything runs or is cached, and a file's
// code runs from the bytes read (its __file__ still its own, so a file
// beside it is found).
func TestEvaluateInputsAreWhatWasHashed(t *testing.T) {
	py := testPython(t)
	dir := t.TempDir()
	db, err := sql.Open("sqlite3", filepath.Join(dir, "k.db"))
	mustTest(t, err)
	defer db.Close()
	ev, err := NewEvaluator(EvalConfig{Python: py, CacheDir: filepath.Join(dir, "cache"), DB: db,
		Logger: slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))})
	mustTest(t, err)
	defer ev.Close()
	ref := filepath.Join(dir, "ref.py")
	mustTest(t, os.WriteFile(ref, []byte(refNormalize), 0o644))
	fifo := filepath.Join(dir, "fifo.py")
	mustTest(t, syscall.Mkfifo(fifo, 0o644))
	honest := filepath.Join(dir, "cand.py")
	mustTest(t, os.WriteFile(filepath.Join(dir, "scale.txt"), []byte("1.0\n"), 0o644))
	mustTest(t, os.WriteFile(honest, []byte(candidate("import os",
		"        s = float(open(os.path.join(os.path.dirname(__file__), 'scale.txt')).read())\n"+normBody+"        return s * x / n")), 0o644))
	ctx := context.Background()
	for _, c := range []struct{ name, ref, cand string }{
		{"dev zero candidate", ref, "/dev/zero"},
		{"dev zero reference", "/dev/zero", honest},
		{"fifo candidate", ref, fifo},
		{"folder reference", dir, honest},
	} {
		_, err := ev.EvaluateRequest(ctx, EvalRequest{Reference: Source{Path: c.ref}, Candidate: Source{Path: c.cand},
			Target: "cpu", SkipTiming: true}, nil)
		var ie *InputError
		if !errors.As(err, &ie) || !strings.Contains(err.Error(), "not a regular file") {
			t.Errorf("%s: %v, want an input error saying it is not a regular file", c.name, err)
		}
	}
	var n int
	mustTest(t, db.QueryRow(`SELECT count(*) FROM eval_cache`).Scan(&n))
	if n != 0 {
		t.Fatalf("%d results cached for refused inputs", n)
	}
	r, err := ev.EvaluateRequest(ctx, EvalRequest{Reference: Source{Path: ref}, Candidate: Source{Path: honest},
		Target: "cpu", SkipTiming: true}, nil)
	mustTest(t, err)
	if r.Verdict != VerdictPass {
		t.Fatalf("a candidate reading a file beside its own __file__: %s %+v\n%s", r.Verdict, r.Checks, r.Log)
	}
}
