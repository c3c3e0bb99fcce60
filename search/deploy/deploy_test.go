package deploy

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"testing"

	_ "github.com/mattn/go-sqlite3"
)

func TestDeployable(t *testing.T) {
	for _, c := range []struct {
		speedup, cv float64
		want        bool
	}{
		{1.5, 0.01, true},
		{1.019, 0, false},   // under 2%
		{1.021, 0, true},    // over 2%, no spread
		{1.08, 0.10, false}, // within the spread
		{1.12, 0.10, true},
		{0.9, 0, false},
	} {
		if got, why := Deployable(c.speedup, c.cv); got != c.want {
			t.Errorf("Deployable(%v, %v) = %v (%s), want %v", c.speedup, c.cv, got, why, c.want)
		}
	}
}

func openTest(t *testing.T) *Registry {
	t.Helper()
	db, err := sql.Open("sqlite3", "file:"+filepath.Join(t.TempDir(), "k.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	r, err := Open(context.Background(), db)
	if err != nil {
		t.Fatal(err)
	}
	// Migrating twice is a no-op.
	if _, err := Open(context.Background(), db); err != nil {
		t.Fatal(err)
	}
	return r
}

// TestRegistry: one entry per (op, shapes, dtype, constants, arch); a
// slower kernel does not replace a faster one; entries of other arches
// live beside each other; list filters, get takes a prefix, remove removes.
func TestRegistry(t *testing.T) {
	ctx := context.Background()
	r := openTest(t)
	base := Entry{Op: "rmsnorm", Shapes: [][]int64{{512, 256}, {256}}, Dtype: "float32", Init: []any{1e-6}, Arch: "cpu-x86_64", Speedup: 1.5, Source: "class ModelNew: pass"}
	steps := []struct {
		name   string
		e      Entry
		stored bool
	}{
		{"first", base, true},
		{"slower does not replace", with(base, func(e *Entry) { e.Speedup = 1.2 }), false},
		{"faster replaces", with(base, func(e *Entry) { e.Speedup = 2.0; e.Source = "faster" }), true},
		{"other arch beside it", with(base, func(e *Entry) { e.Arch = "sm_90" }), true},
		{"other shapes beside it", with(base, func(e *Entry) { e.Shapes = [][]int64{{64, 256}, {256}} }), true},
		{"other eps beside it", with(base, func(e *Entry) { e.Init = []any{1e-5} }), true},
	}
	for _, s := range steps {
		got, err := r.Put(ctx, s.e)
		if err != nil || got != s.stored {
			t.Errorf("%s: stored %v (%v), want %v", s.name, got, err, s.stored)
		}
	}
	all, _ := r.List(ctx, Filter{})
	cpu, _ := r.List(ctx, Filter{Arch: "cpu-x86_64"})
	if len(all) != 4 || len(cpu) != 3 {
		t.Fatalf("list: %d entries, %d on the CPU; want 4 and 3", len(all), len(cpu))
	}
	e, err := r.Get(ctx, base.Key()[:6])
	if err != nil || e.Speedup != 2.0 || e.Source != "faster" || e.Init[0].(float64) != 1e-6 {
		t.Fatalf("get by prefix: %+v %v", e, err)
	}
	if err := r.Remove(ctx, e.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := r.Get(ctx, e.ID); !errors.Is(err, ErrNotFound) {
		t.Errorf("after remove: %v", err)
	}
	if _, err := r.Put(ctx, Entry{Op: "x"}); err == nil {
		t.Error("an entry without a kernel or arch was stored")
	}
}

func with(e Entry, f func(*Entry)) Entry {
	f(&e)
	return e
}

// TestExportLayout: the package holds its runtime, the region finder, the
// loaders and one kernel file per entry, and its registry names them.
func TestExportLayout(t *testing.T) {
	dir := t.TempDir()
	e := Entry{Op: "swiglu", Shapes: [][]int64{{8, 16}}, Dtype: "float32", Init: []any{}, Arch: "cpu-x86_64", Speedup: 1.3, Source: "# kernel\n"}
	pkg, err := Export(dir, []Entry{e})
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"__init__.py", "_dispatch.py", "_patterns.py", "_vendor/kevolve/__init__.py", "_vendor/kevolve/_c.py", "registry.json", "kernels/" + e.Key() + ".py"} {
		if _, err := os.Stat(filepath.Join(pkg, f)); err != nil {
			t.Errorf("export lacks %s", f)
		}
	}
	b, _ := os.ReadFile(filepath.Join(pkg, "registry.json"))
	var reg struct {
		Entries []map[string]any `json:"entries"`
	}
	if err := json.Unmarshal(b, &reg); err != nil || len(reg.Entries) != 1 || reg.Entries[0]["kernel"] != "kernels/"+e.Key()+".py" || reg.Entries[0]["source"] != nil {
		t.Errorf("registry.json: %s (%v)", b, err)
	}
}
