package worker

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// Each way of damaging the unpacked folder is found and repaired by
// unpacking again; the folder then matches the embedded files.
func TestUnpackRepairs(t *testing.T) {
	cases := []struct {
		name   string
		damage func(t *testing.T, dir string)
		want   string // in the reported differences; "" = a fresh install, nothing reported
	}{
		{"edited file", func(t *testing.T, dir string) {
			appendTo(t, filepath.Join(dir, "evaluate/compare/compare.py"), "\ndef compare(*a):\n    return True, 'allclose', ''\n")
		}, "evaluate/compare/compare.py: modified"},
		{"missing file", func(t *testing.T, dir string) { mustDo(t, os.Remove(filepath.Join(dir, "evaluate/main.py"))) }, "evaluate/main.py: missing"},
		{"extra py", func(t *testing.T, dir string) {
			mustDo(t, os.WriteFile(filepath.Join(dir, "sitecustomize.py"), []byte("x = 1\n"), 0o644))
		}, "sitecustomize.py: unexpected file"},
		{"extension module", func(t *testing.T, dir string) {
			mustDo(t, os.WriteFile(filepath.Join(dir, "evaluate", "compare", "compare.cpython-312-x86_64-linux-gnu.so"), []byte("x"), 0o644))
		}, "evaluate/compare/compare.cpython-312-x86_64-linux-gnu.so: unexpected file"},
		{"shadowing package", func(t *testing.T, dir string) {
			mustDo(t, os.MkdirAll(filepath.Join(dir, "torch"), 0o755))
		}, "torch/: unexpected folder"},
		{"forged pyc", func(t *testing.T, dir string) {
			mustDo(t, os.MkdirAll(filepath.Join(dir, "__pycache__"), 0o755))
			mustDo(t, os.WriteFile(filepath.Join(dir, "__pycache__", "evaluate.cpython-312.pyc"), []byte("x"), 0o644))
		}, "__pycache__/: unexpected folder"},
		{"symlinked file", func(t *testing.T, dir string) {
			p := filepath.Join(dir, "worker.py")
			b, err := os.ReadFile(p)
			mustDo(t, err)
			other := filepath.Join(t.TempDir(), "worker.py")
			mustDo(t, os.WriteFile(other, b, 0o644))
			mustDo(t, os.Remove(p))
			mustDo(t, os.Symlink(other, p))
		}, "worker.py: not a regular file"},
		{"no marker, folder not empty", func(t *testing.T, dir string) {
			// What a deleting candidate left: rename onto it fails.
			mustDo(t, os.Remove(filepath.Join(dir, completeMarker)))
			mustDo(t, os.Remove(filepath.Join(dir, "worker.py")))
		}, ".complete: missing"},
		{"folder replaced by a file", func(t *testing.T, dir string) {
			removeTree(dir)
			mustDo(t, os.WriteFile(dir, []byte("x"), 0o644))
		}, "not a folder"},
		{"folder deleted", func(t *testing.T, dir string) { removeTree(dir) }, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			cache := t.TempDir()
			dir, bad, err := unpack(cache)
			if err != nil || len(bad) != 0 {
				t.Fatalf("first unpack: %v %v", bad, err)
			}
			c.damage(t, dir)
			got, bad, err := unpack(cache)
			if err != nil {
				t.Fatalf("repair failed: %v", err)
			}
			if got != dir {
				t.Fatalf("repaired into %s, want %s", got, dir)
			}
			if c.want == "" && len(bad) != 0 || c.want != "" && !strings.Contains(strings.Join(bad, "\n"), c.want) {
				t.Fatalf("reported %q, want %q", bad, c.want)
			}
			if left := check(dir, mustManifest(t)); len(left) != 0 {
				t.Fatalf("after the repair: %q", left)
			}
			st, err := os.Stat(filepath.Join(dir, "evaluate/main.py"))
			mustDo(t, err)
			if st.Mode().Perm() != 0o444 {
				t.Fatalf("evaluate/main.py mode %v, want 0444", st.Mode().Perm())
			}
			leftovers, _ := filepath.Glob(filepath.Join(cache, "worker", "*.*-*"))
			if len(leftovers) != 0 {
				t.Fatalf("temporary folders left: %v", leftovers)
			}
		})
	}
}

// A repair that cannot be done is an error that says why (here the cache's
// worker folder is a file), from New's first job rather than a missing
// evaluator.
func TestUnpackFailureSaysWhy(t *testing.T) {
	cache := t.TempDir()
	mustDo(t, os.WriteFile(filepath.Join(cache, "worker"), []byte("x"), 0o644))
	if _, _, err := unpack(cache); err == nil || !strings.Contains(err.Error(), "not a directory") {
		t.Fatalf("unpack into a file: %v, want the cause", err)
	}
	w, err := New(Config{Python: testPython(t), CacheDir: cache})
	if err != nil {
		t.Fatalf("New must not fail on the files: %v", err)
	}
	defer w.Close()
	_, err = w.Run(context.Background(), Job{Module: "selftest", Func: "echo"})
	if err == nil || !strings.Contains(err.Error(), "not a directory") {
		t.Fatalf("Run: %v, want the cause of the failed unpack", err)
	}
}

// A job that edits the judge's files: after it, the files are repaired and
// the parent that had loaded them is replaced by a fresh one. The job runs
// without the sandbox's layers, as on a host that has none of them (with
// them, Landlock refuses the edit itself).
func TestVerifyAfterJobRestartsParent(t *testing.T) {
	w := newWorker(t)
	ctx := context.Background()
	info, err := w.Info(ctx)
	mustDo(t, err)
	pid := int(info["pid"].(float64))
	target := filepath.Join(w.PyDir(), "evaluate/compare/compare.py")
	o, err := w.Run(ctx, Job{Module: "selftest", Func: "append_file", Timeout: time.Minute,
		Env:  map[string]string{"KEVOLVE_SANDBOX": "0"},
		Args: map[string]any{"path": target, "line": "\nALWAYS = True\n"}})
	mustDo(t, err)
	if o.Code != 0 || o.Result == nil {
		t.Fatalf("append job: %+v", o)
	}
	if bad := check(w.PyDir(), mustManifest(t)); len(bad) != 0 {
		t.Fatalf("not repaired after the job: %q", bad)
	}
	b, err := os.ReadFile(target)
	mustDo(t, err)
	if strings.Contains(string(b), "ALWAYS") {
		t.Fatal("the edit is still there")
	}
	info, err = w.Info(ctx)
	mustDo(t, err)
	if int(info["pid"].(float64)) == pid || alive(pid) {
		t.Fatalf("the parent %d that loaded the edited files still serves (now %v)", pid, info["pid"])
	}
}

// Servers repairing one damaged folder at once all succeed and leave it
// whole: the loser of a swap keeps the winner's good copy.
func TestUnpackConcurrentRepairs(t *testing.T) {
	cache := t.TempDir()
	dir, _, err := unpack(cache)
	mustDo(t, err)
	for round := 0; round < 3; round++ {
		mustDo(t, os.Remove(filepath.Join(dir, completeMarker)))
		mustDo(t, os.Remove(filepath.Join(dir, "evaluate/main.py")))
		errs := make(chan error, 6)
		for i := 0; i < cap(errs); i++ {
			go func() { _, _, err := unpack(cache); errs <- err }()
		}
		for i := 0; i < cap(errs); i++ {
			if err := <-errs; err != nil {
				t.Fatalf("round %d: %v", round, err)
			}
		}
		if bad := check(dir, mustManifest(t)); len(bad) != 0 {
			t.Fatalf("round %d: %q", round, bad)
		}
	}
}

// A data file a job left in its working folder is no damage: nothing
// imports it, so the parent is not restarted for it.
func TestUnpackIgnoresDataFiles(t *testing.T) {
	cache := t.TempDir()
	dir, _, err := unpack(cache)
	mustDo(t, err)
	mustDo(t, os.WriteFile(filepath.Join(dir, "out.txt"), []byte("x"), 0o644))
	if _, bad, err := unpack(cache); err != nil || len(bad) != 0 {
		t.Fatalf("a data file counted as damage: %v %v", bad, err)
	}
}

// BenchmarkVerify measures the check that runs before and after each job.
func BenchmarkVerify(b *testing.B) {
	cache := b.TempDir()
	dir, _, err := unpack(cache)
	if err != nil {
		b.Fatal(err)
	}
	m := mustManifest(b)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if bad := check(dir, m); len(bad) != 0 {
			b.Fatal(bad)
		}
	}
}

func mustManifest(t testing.TB) *manifest {
	t.Helper()
	m, err := embedded()
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func appendTo(t *testing.T, path, s string) {
	t.Helper()
	mustDo(t, os.Chmod(path, 0o644))
	f, err := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
	mustDo(t, err)
	_, err = f.WriteString(s)
	mustDo(t, err)
	mustDo(t, f.Close())
}

func mustDo(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
