package retrieval

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"testing/fstest"
)

// fixtureSource copies testdata/fixture into a temp dir named "mykb" (so
// the test may edit it) and returns it as a user source.
func fixtureSource(t testing.TB) Source {
	t.Helper()
	dst := filepath.Join(t.TempDir(), "mykb")
	err := filepath.WalkDir("testdata/fixture", func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel("testdata/fixture", p)
		if d.IsDir() {
			return os.MkdirAll(filepath.Join(dst, rel), 0o755)
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		return os.WriteFile(filepath.Join(dst, rel), b, 0o644)
	})
	if err != nil {
		t.Fatal(err)
	}
	return DirSource(dst)
}

func TestDirSourceLabel(t *testing.T) {
	tests := []struct{ dir, want string }{
		{"/x/My KB", "my-kb"},
		{"/x/guidance", "user-guidance"},
		{"/x/builtin", "user-builtin"},
		{"/x/team_notes", "team_notes"},
	}
	for _, tt := range tests {
		if got := DirSource(tt.dir).Label; got != tt.want {
			t.Errorf("DirSource(%q).Label = %q, want %q", tt.dir, got, tt.want)
		}
	}
}

// TestIncrementalReindex checks that reopening skips unchanged documents,
// re-indexes edited ones, drops deleted ones and picks up new ones, and
// that search sees exactly the current content.
func TestIncrementalReindex(t *testing.T) {
	ctx := context.Background()
	dbPath := filepath.Join(t.TempDir(), "kb.db")
	src := fixtureSource(t)
	dir := src.Origin

	ix, err := OpenSources(ctx, openDBAt(t, dbPath), nil, src)
	if err != nil {
		t.Fatal(err)
	}
	if s := ix.Stats(); s.Added != 6 || s.Updated+s.Removed+s.Unchanged != 0 {
		t.Fatalf("first open: %+v", s)
	}
	if _, ok := ix.Get("mykb/guidance/coalescing.md"); !ok {
		t.Fatal("user document not under its label")
	}
	if d, _ := ix.Get("mykb/hardware/amd/cdna3/lds.md"); d.Kind != "hardware" || d.Vendor != "amd" {
		t.Fatalf("kind/scope of a user document: %+v", d.DocInfo)
	}

	// Reopen untouched (a second *sql.DB on the same file, as a restart).
	ix, err = OpenSources(ctx, openDBAt(t, dbPath), nil, src)
	if err != nil {
		t.Fatal(err)
	}
	if s := ix.Stats(); s.Unchanged != 6 || s.Added+s.Updated+s.Removed != 0 {
		t.Fatalf("reopen: %+v", s)
	}

	// Edit one, delete one, add one.
	edit := filepath.Join(dir, "guidance", "coalescing.md")
	b, _ := os.ReadFile(edit)
	os.WriteFile(edit, []byte(strings.Replace(string(b), "Strided access", "Zebrafish strided access", 1)), 0o644)
	os.Remove(filepath.Join(dir, "hardware", "amd", "cdna3", "lds.md"))
	os.WriteFile(filepath.Join(dir, "guidance", "new.md"), []byte("---\ntitle: Fresh quokka note\n---\nQuokka body."), 0o644)
	ix, err = OpenSources(ctx, openDBAt(t, dbPath), nil, src)
	if err != nil {
		t.Fatal(err)
	}
	if s := ix.Stats(); s.Added != 1 || s.Updated != 1 || s.Removed != 1 || s.Unchanged != 4 {
		t.Fatalf("after edits: %+v", s)
	}
	for _, tt := range []struct {
		q, want string
	}{
		{"zebrafish", "mykb/guidance/coalescing.md"},
		{"quokka", "mykb/guidance/new.md"},
	} {
		r, err := ix.Search(ctx, Query{Text: tt.q})
		if err != nil || len(r.Results) == 0 || r.Results[0].Path != tt.want {
			t.Errorf("%q: %v %+v", tt.q, err, r)
		}
	}
	r, _ := ix.Search(ctx, Query{Text: "LDS local data share"})
	for _, res := range r.Results {
		if strings.Contains(res.Path, "lds.md") {
			t.Errorf("deleted document still found: %s", res.Path)
		}
	}
	// No orphan passages or full-text rows remain.
	db := openDBAt(t, dbPath)
	var orphans, ftsRows, passages int
	db.QueryRow(`SELECT count(*) FROM kb_passages WHERE path NOT IN (SELECT path FROM kb_documents)`).Scan(&orphans)
	db.QueryRow(`SELECT count(*) FROM kb_fts`).Scan(&ftsRows)
	db.QueryRow(`SELECT count(*) FROM kb_passages`).Scan(&passages)
	if orphans != 0 || ftsRows != passages {
		t.Errorf("orphans %d, fts rows %d vs passages %d", orphans, ftsRows, passages)
	}

	// Another embedder re-embeds everything; dropping the source empties it.
	ix, err = OpenSources(ctx, openDBAt(t, dbPath), NewHashEmbedder(128), src)
	if err != nil {
		t.Fatal(err)
	}
	if s := ix.Stats(); s.Updated != 6 {
		t.Fatalf("embedder change: %+v", s)
	}
	ix, err = OpenSources(ctx, openDBAt(t, dbPath), NewHashEmbedder(128))
	if err != nil {
		t.Fatal(err)
	}
	if s := ix.Stats(); s.Removed != 6 || len(ix.List()) != 0 {
		t.Fatalf("source dropped: %+v", s)
	}
	if _, err := ix.Search(ctx, Query{Text: "anything"}); err != nil {
		t.Fatalf("search of an empty index: %v", err)
	}
}

func TestOpenErrors(t *testing.T) {
	ctx := context.Background()
	bad := Source{Label: "bad", FS: fstest.MapFS{"g/x.md": {Data: []byte("---\ntitle: [\n---\nb")}}, Origin: "/somewhere/bad"}
	good := Source{Label: "good", FS: fstest.MapFS{"g/x.md": {Data: []byte("b")}}}
	tests := []struct {
		name    string
		sources []Source
		want    string
	}{
		{"malformed file named", []Source{bad}, "g/x.md"},
		{"duplicate label", []Source{good, good}, "used twice"},
		{"bad label", []Source{{Label: "A B", FS: good.FS}}, "label"},
		{"missing dir", []Source{DirSource("/nonexistent/kb")}, "/nonexistent/kb"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := OpenSources(ctx, openDB(t), nil, tt.sources...)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("err = %v, want %q", err, tt.want)
			}
		})
	}
}

func TestSplitPassages(t *testing.T) {
	long := strings.Repeat("word ", 100)
	body := "Intro para.\n\n## First\n" + long + "\n\n" + long + "\n\n```c\n// code\n\nint x;\n```\n\n# Second\nShort."
	ps := splitPassages(body)
	var heads []string
	for _, p := range ps {
		heads = append(heads, p.Heading)
		if strings.Count(p.Text, "```")%2 != 0 {
			t.Errorf("code fence cut: %q", p.Text)
		}
		if n := len(strings.Fields(p.Text)); n > passageWords*2 {
			t.Errorf("passage of %d words", n)
		}
	}
	if !slices.Equal(heads, []string{"", "First", "First", "Second"}) {
		t.Fatalf("headings %v", heads)
	}
}
