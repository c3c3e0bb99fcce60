package worker

// Unpacking the worker's Python (the embedded tree, or Config.Source) into
// the cache directory, once per content hash, so a running server never
// sees a half-written copy. The unpacked files are the judge: verify.go
// checks them against the source's and unpacks them again when anything
// changed.

import (
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
)

// The Python side: worker.py (the parent loop), evaluate/main.py (the evaluation
// job), the checks package (the check registry) and the kevolve loader
// package. "all:" keeps __init__.py.
//
//go:embed all:py
var pyFS embed.FS

// Embedded is the worker's Python as this binary carries it, rooted at its
// files (worker.py, evaluate/main.py, checks/, kevolve/): the default
// Config.Source.
func Embedded() fs.FS {
	sub, err := fs.Sub(pyFS, "py")
	if err != nil {
		panic(err) // "py" is a valid path: fs.Sub cannot fail on it
	}
	return sub
}

// Marker files of an unpacked folder besides the source's own: .complete
// says it was fully written; the manifest lists each file's SHA-256 (in
// sha256sum's format, so `sha256sum -c` checks it by hand). Verification
// compares with the source's files, never with the manifest on disk.
const (
	completeMarker = ".complete"
	manifestName   = "MANIFEST.sha256"
)

// manifest is one Python source tree: every file's SHA-256 and every
// folder, hashed from the tree in the binary (or a tree a caller gave,
// Config.Source), never from the unpacked copy.
type manifest struct {
	src   fs.FS             // the files, rooted at the tree
	hash  string            // SourceHash
	files map[string]string // slash path -> hex SHA-256
	dirs  map[string]bool   // slash paths of the folders
	text  []byte            // the manifest file's content
}

var (
	manOnce sync.Once
	man     *manifest
	manErr  error
)

// embedded returns the manifest of the embedded files, hashed once.
func embedded() (*manifest, error) {
	manOnce.Do(func() { man, manErr = buildManifest(Embedded()) })
	return man, manErr
}

// SourceHash is the content hash of the embedded Python files; it names
// the unpacked directory and is part of the harness version.
func SourceHash() string {
	m, err := embedded()
	if err != nil {
		return ""
	}
	return m.hash
}

// buildManifest hashes a source tree (bytecode and caches left out).
func buildManifest(src fs.FS) (*manifest, error) {
	m := &manifest{src: src, files: map[string]string{}, dirs: map[string]bool{}}
	var files []string
	err := fs.WalkDir(src, ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		switch {
		case d.IsDir() && d.Name() == "__pycache__":
			return fs.SkipDir
		case d.IsDir():
			if p != "." {
				m.dirs[p] = true
			}
		case !strings.HasSuffix(p, ".pyc"):
			files = append(files, p)
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("walk worker python: %w", err)
	}
	sort.Strings(files)
	h := sha256.New()
	var text strings.Builder
	for _, f := range files {
		b, err := fs.ReadFile(src, f)
		if err != nil {
			return nil, fmt.Errorf("read worker python %s: %w", f, err)
		}
		// Hashed under "py/": the embedded tree's hash, and so the
		// unpacked folder's name and the harness version, stay what they
		// were when the tree was walked from the embed root.
		fmt.Fprintf(h, "py/%s\x00%d\x00", f, len(b))
		h.Write(b)
		sum := sha256.Sum256(b)
		m.files[f] = hex.EncodeToString(sum[:])
		fmt.Fprintf(&text, "%s  %s\n", m.files[f], f)
	}
	m.hash = hex.EncodeToString(h.Sum(nil))[:16]
	m.text = []byte(text.String())
	return m, nil
}

// writeTree writes the source's files into dir (which exists), read-only
// (0444): a plain open-for-append is refused even to the owner. Folders
// stay 0755: 0555 would stop nobody but the owner, who can chmod it back,
// yet would break every os.RemoveAll of a cache (test temp folders
// included) for a user other than root; another user cannot write 0755.
func writeTree(dir string, m *manifest) error {
	rels := make([]string, 0, len(m.files))
	for rel := range m.files {
		rels = append(rels, rel)
	}
	sort.Strings(rels)
	for rel := range m.dirs {
		if err := os.MkdirAll(filepath.Join(dir, filepath.FromSlash(rel)), 0o755); err != nil {
			return err
		}
	}
	for _, rel := range rels {
		b, err := fs.ReadFile(m.src, rel)
		if err != nil {
			return err
		}
		if err := os.WriteFile(filepath.Join(dir, filepath.FromSlash(rel)), b, 0o444); err != nil {
			return err
		}
	}
	if err := os.WriteFile(filepath.Join(dir, manifestName), m.text, 0o444); err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, completeMarker), nil, 0o444)
}

// removeTree removes a tree; a folder someone made read-only is made
// writable first.
func removeTree(root string) {
	_ = filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err == nil && d.IsDir() {
			_ = os.Chmod(p, 0o755)
		}
		return nil
	})
	_ = os.RemoveAll(root)
}
