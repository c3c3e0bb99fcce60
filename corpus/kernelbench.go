package corpus

import (
	"context"
	"crypto/sha256"
	"database/sql"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"

	"github.com/kevolve/kevolve-mcp/harness/problem"
)

func sha256Hex(b []byte) string {
	h := sha256.Sum256(b)
	return hex.EncodeToString(h[:])
}

// levelDir matches KernelBench's level directories (level1, level2, ...).
var levelDir = regexp.MustCompile(`^level(\d+)$`)

// problemFile matches KernelBench's problem files: N_name.py.
var problemFile = regexp.MustCompile(`^(\d+)_.+\.py$`)

// ImportKernelBench finds every level*/N_name.py file under dir (a
// KernelBench checkout or its KernelBench/ subfolder) and returns it as the
// problem kernelbench/levelN/<file stem>. The reference is the file
// unchanged; imported problems carry no metadata. It reads the files only to
// hash them, so a later change is detected.
func ImportKernelBench(dir string) ([]Problem, error) {
	root, err := filepath.Abs(dir)
	if err != nil {
		return nil, fmt.Errorf("import kernelbench: %w", err)
	}
	// A checkout keeps the levels in KernelBench/; accept either layout.
	if st, err := os.Stat(filepath.Join(root, "KernelBench")); err == nil && st.IsDir() {
		if ents, _ := filepath.Glob(filepath.Join(root, "KernelBench", "level*")); len(ents) > 0 {
			root = filepath.Join(root, "KernelBench")
		}
	}
	ents, err := os.ReadDir(root)
	if err != nil {
		return nil, fmt.Errorf("import kernelbench from %s: %w", dir, err)
	}
	var out []Problem
	for _, e := range ents {
		m := levelDir.FindStringSubmatch(e.Name())
		if m == nil || !e.IsDir() {
			continue
		}
		level, _ := strconv.Atoi(m[1])
		files, err := os.ReadDir(filepath.Join(root, e.Name()))
		if err != nil {
			return nil, fmt.Errorf("import kernelbench %s: %w", e.Name(), err)
		}
		for _, f := range files {
			if f.IsDir() || !problemFile.MatchString(f.Name()) {
				continue
			}
			p := filepath.Join(root, e.Name(), f.Name())
			b, err := problem.ReadFile("kernelbench", p)
			if err != nil {
				return nil, fmt.Errorf("import kernelbench: %w", err)
			}
			stem := strings.TrimSuffix(f.Name(), ".py")
			out = append(out, Problem{
				Name:   fmt.Sprintf("kernelbench/level%d/%s", level, stem),
				Family: "kernelbench",
				Source: SourceKernelBench,
				Path:   p,
				Level:  level,
				SHA256: sha256Hex(b),
			})
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("import kernelbench: no level*/N_name.py files under %s", dir)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, nil
}

// Registry makes imported problems visible by name next to the built-ins.
// Imports live in the shared SQLite database (table corpus_imports).
type Registry struct {
	db *sql.DB
}

// NewRegistry migrates the corpus_imports table and returns a registry.
func NewRegistry(db *sql.DB) (*Registry, error) {
	if db == nil {
		return nil, errors.New("corpus registry: nil database")
	}
	_, err := db.Exec(`CREATE TABLE IF NOT EXISTS corpus_imports (
		name   TEXT PRIMARY KEY,
		path   TEXT NOT NULL,
		level  INTEGER NOT NULL,
		sha256 TEXT NOT NULL
	)`)
	if err != nil {
		return nil, fmt.Errorf("corpus registry: migrate corpus_imports: %w", err)
	}
	return &Registry{db: db}, nil
}

// ImportKernelBench imports a checkout and records every problem, replacing
// earlier imports of the same names (a re-import refreshes paths and hashes).
func (r *Registry) ImportKernelBench(ctx context.Context, dir string) ([]Problem, error) {
	ps, err := ImportKernelBench(dir)
	if err != nil {
		return nil, err
	}
	tx, err := r.db.BeginTx(ctx, nil)
	if err != nil {
		return nil, fmt.Errorf("corpus registry: begin: %w", err)
	}
	defer tx.Rollback() //nolint:errcheck // a no-op after Commit
	stmt, err := tx.PrepareContext(ctx, `INSERT INTO corpus_imports(name, path, level, sha256) VALUES(?,?,?,?)
		ON CONFLICT(name) DO UPDATE SET path=excluded.path, level=excluded.level, sha256=excluded.sha256`)
	if err != nil {
		return nil, fmt.Errorf("corpus registry: prepare: %w", err)
	}
	defer stmt.Close()
	for _, p := range ps {
		if _, err := stmt.ExecContext(ctx, p.Name, p.Path, p.Level, p.SHA256); err != nil {
			return nil, fmt.Errorf("corpus registry: record %s: %w", p.Name, err)
		}
	}
	if err := tx.Commit(); err != nil {
		return nil, fmt.Errorf("corpus registry: commit: %w", err)
	}
	slog.Info("imported KernelBench problems", "dir", dir, "count", len(ps))
	return ps, nil
}

func (r *Registry) imports(ctx context.Context) ([]Problem, error) {
	rows, err := r.db.QueryContext(ctx, `SELECT name, path, level, sha256 FROM corpus_imports ORDER BY name`)
	if err != nil {
		return nil, fmt.Errorf("corpus registry: list imports: %w", err)
	}
	defer rows.Close()
	var out []Problem
	for rows.Next() {
		p := Problem{Family: "kernelbench", Source: SourceKernelBench}
		if err := rows.Scan(&p.Name, &p.Path, &p.Level, &p.SHA256); err != nil {
			return nil, fmt.Errorf("corpus registry: scan import: %w", err)
		}
		out = append(out, p)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("corpus registry: list imports: %w", err)
	}
	return out, nil
}

// List returns the built-ins followed by the imports, each sorted by name.
func (r *Registry) List(ctx context.Context) ([]Problem, error) {
	imp, err := r.imports(ctx)
	if err != nil {
		return nil, err
	}
	return append(List(), imp...), nil
}

// Get finds a built-in or imported problem by name; a miss names the
// closest problems.
func (r *Registry) Get(ctx context.Context, name string) (Problem, error) {
	for _, p := range List() {
		if p.Name == name {
			return p, nil
		}
	}
	var p Problem
	err := r.db.QueryRowContext(ctx, `SELECT name, path, level, sha256 FROM corpus_imports WHERE name = ?`, name).
		Scan(&p.Name, &p.Path, &p.Level, &p.SHA256)
	if err == nil {
		p.Family, p.Source = "kernelbench", SourceKernelBench
		return p, nil
	}
	if !errors.Is(err, sql.ErrNoRows) {
		return Problem{}, fmt.Errorf("corpus registry: get %s: %w", name, err)
	}
	all, lerr := r.List(ctx)
	if lerr != nil {
		return Problem{}, lerr
	}
	return getFrom(all, name)
}
