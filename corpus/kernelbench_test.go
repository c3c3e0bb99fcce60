package corpus

import (
	"context"
	"database/sql"
	"os"
	"path/filepath"
	"strings"
	"testing"

	_ "github.com/mattn/go-sqlite3"
)

// A minimal KernelBench-format problem of our own, written by the test.
const tinyKB = `import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, a, b):
        return a @ b


def get_inputs():
    return [torch.randn(8, 8), torch.randn(8, 8)]


def get_init_inputs():
    return []
`

// makeKB builds a tiny checkout: level files, plus files that must be ignored.
func makeKB(t *testing.T, nested bool) (root string) {
	t.Helper()
	root = t.TempDir()
	base := root
	if nested {
		base = filepath.Join(root, "KernelBench")
	}
	files := map[string]string{
		"level1/1_Square_matrix_multiplication_.py": tinyKB,
		"level1/19_ReLU.py":                         strings.Replace(tinyKB, "a @ b", "torch.relu(a + b)", 1),
		"level2/3_Conv_GELU.py":                     tinyKB,
		"level1/README.md":                          "not a problem",
		"level1/helper.py":                          "# no N_ prefix: not a problem",
		"notes/4_Not_a_level.py":                    tinyKB,
	}
	for rel, body := range files {
		p := filepath.Join(base, rel)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return root
}

func TestImportKernelBench(t *testing.T) {
	for _, nested := range []bool{false, true} {
		root := makeKB(t, nested)
		ps, err := ImportKernelBench(root)
		if err != nil {
			t.Fatalf("nested=%v: %v", nested, err)
		}
		want := []string{
			"kernelbench/level1/19_ReLU",
			"kernelbench/level1/1_Square_matrix_multiplication_",
			"kernelbench/level2/3_Conv_GELU",
		}
		if len(ps) != len(want) {
			t.Fatalf("nested=%v: got %d problems %v, want %v", nested, len(ps), ps, want)
		}
		for i, p := range ps {
			if p.Name != want[i] {
				t.Errorf("problem %d = %s, want %s", i, p.Name, want[i])
			}
			if p.Source != SourceKernelBench || p.Family != "kernelbench" || len(p.SHA256) != 64 {
				t.Errorf("%s: bad import fields %+v", p.Name, p)
			}
		}
		// The reference is the file unchanged.
		src, err := ps[1].ReferenceSource()
		if err != nil || src != tinyKB {
			t.Errorf("reference source differs from the file (err %v)", err)
		}
		if ps[2].Level != 2 {
			t.Errorf("level = %d, want 2", ps[2].Level)
		}
		if _, err := ps[0].StartSource("cuda"); err == nil {
			t.Errorf("an imported problem claims a start candidate")
		}
	}
	if _, err := ImportKernelBench(t.TempDir()); err == nil {
		t.Errorf("importing an empty directory succeeded")
	}
	if _, err := ImportKernelBench(filepath.Join(t.TempDir(), "missing")); err == nil {
		t.Errorf("importing a missing directory succeeded")
	}
}

func TestRegistry(t *testing.T) {
	ctx := context.Background()
	dbPath := filepath.Join(t.TempDir(), "kevolve.db")
	db, err := sql.Open("sqlite3", dbPath)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	reg, err := NewRegistry(db)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := NewRegistry(db); err != nil { // migration is idempotent
		t.Fatalf("second migration: %v", err)
	}
	root := makeKB(t, true)
	if _, err := reg.ImportKernelBench(ctx, root); err != nil {
		t.Fatal(err)
	}
	// Re-importing the same checkout must not duplicate rows.
	if _, err := reg.ImportKernelBench(ctx, root); err != nil {
		t.Fatal(err)
	}
	all, err := reg.List(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if want := len(List()) + 3; len(all) != want {
		t.Errorf("registry lists %d problems, want %d", len(all), want)
	}
	// Imports survive a reopen of the database.
	db2, err := sql.Open("sqlite3", dbPath)
	if err != nil {
		t.Fatal(err)
	}
	defer db2.Close()
	reg2, err := NewRegistry(db2)
	if err != nil {
		t.Fatal(err)
	}
	p, err := reg2.Get(ctx, "kernelbench/level1/1_Square_matrix_multiplication_")
	if err != nil {
		t.Fatal(err)
	}
	if src, err := p.ReferenceSource(); err != nil || src != tinyKB {
		t.Errorf("imported reference: %v", err)
	}
	if _, err := reg2.Get(ctx, Default); err != nil {
		t.Errorf("built-in through the registry: %v", err)
	}
	_, err = reg2.Get(ctx, "kernelbench/level1/1_Square_matrix_multiplication")
	if err == nil || !strings.Contains(err.Error(), "kernelbench/level1/1_Square_matrix_multiplication_") {
		t.Errorf("near miss should suggest the imported name, got %v", err)
	}
	// A reference edited after import is refused until re-imported.
	if err := os.WriteFile(p.Path, []byte(tinyKB+"\n# edited\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := p.ReferenceSource(); err == nil || !strings.Contains(err.Error(), "changed since import") {
		t.Errorf("edited reference: got %v, want a changed-since-import error", err)
	}
	if _, err := NewRegistry(nil); err == nil {
		t.Errorf("NewRegistry(nil) succeeded")
	}
}
