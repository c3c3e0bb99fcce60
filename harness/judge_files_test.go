package harness

import (
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kevolve/kevolve-mcp/harness/worker"
)

// The judge's files on disk, damaged between two servers sharing a cache:
// the next server (a new Python parent) finds the damage, unpacks again and
// judges right: a wrong candidate (it returns its input) is incorrect, an
// honest one passes.
func TestJudgeFilesRepairedInNewServer(t *testing.T) {
	py := testPython(t)
	cache := t.TempDir()
	logger := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	wrong := candidate("", "        return x.clone()")
	honest := candidate("", normBody+"        return x / n")
	evaluate := func(t *testing.T, code string) string {
		t.Helper()
		ev, err := NewEvaluator(EvalConfig{Python: py, CacheDir: cache, Logger: logger})
		if err != nil {
			t.Fatalf("NewEvaluator: %v", err)
		}
		defer ev.Close()
		r, err := ev.EvaluateRequest(context.Background(), EvalRequest{Reference: Source{Code: refNormalize},
			Candidate: Source{Code: code}, Target: "cpu", SkipTiming: true}, nil)
		if err != nil {
			t.Fatalf("evaluate: %v", err)
		}
		return r.Verdict
	}
	if v := evaluate(t, wrong); v != VerdictIncorrect {
		t.Fatalf("before any damage, the wrong candidate got %s", v)
	}
	pyDir := filepath.Join(cache, "worker", worker.SourceHash())
	cases := []struct {
		name   string
		damage func(t *testing.T)
		code   string
		want   string
	}{
		{"compare always agrees", func(t *testing.T) {
			p := filepath.Join(pyDir, "evaluate/compare/compare.py")
			if _, err := os.Stat(p); err != nil {
				t.Fatalf("%v: the test edits the module that defines compare; update it", err)
			}
			mustTest(t, os.Chmod(p, 0o644))
			f, err := os.OpenFile(p, os.O_APPEND|os.O_WRONLY, 0)
			mustTest(t, err)
			_, err = f.WriteString("\n\ndef compare(i, ref, out, tol_override):\n    return True, \"allclose\", \"\"\n")
			mustTest(t, err)
			mustTest(t, f.Close())
		}, wrong, VerdictIncorrect},
		{"folder deleted", func(t *testing.T) { mustTest(t, os.RemoveAll(pyDir)) }, honest, VerdictPass},
		{"folder emptied but for a stray file", func(t *testing.T) {
			mustTest(t, os.RemoveAll(pyDir))
			mustTest(t, os.MkdirAll(pyDir, 0o755))
			mustTest(t, os.WriteFile(filepath.Join(pyDir, "left.txt"), []byte("x"), 0o644))
		}, honest, VerdictPass},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			c.damage(t)
			if v := evaluate(t, c.code); v != c.want {
				t.Fatalf("verdict %s, want %s", v, c.want)
			}
			b, err := os.ReadFile(filepath.Join(pyDir, "evaluate/compare/compare.py"))
			mustTest(t, err)
			if strings.Count(string(b), "def compare(") != 1 {
				t.Fatal("the edited compare is still on disk")
			}
		})
	}
}

func mustTest(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
