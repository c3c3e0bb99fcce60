package worker

// Unpacking the embedded Python into the cache directory, once per content
// hash, so a running server never sees a half-written copy.

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
)

// The Python side: worker.py (the parent loop), evaluate.py (the evaluation
// job) and the kevolve loader package. "all:" keeps __init__.py.
//
//go:embed all:py
var pyFS embed.FS

// SourceHash is the content hash of the embedded Python files; it names
// the unpacked directory and is part of the harness version.
func SourceHash() string {
	h, _ := hashFS()
	return h
}

func hashFS() (string, error) {
	var files []string
	err := fs.WalkDir(pyFS, "py", func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && d.Name() == "__pycache__" {
			return fs.SkipDir
		}
		if !d.IsDir() && !strings.HasSuffix(p, ".pyc") {
			files = append(files, p)
		}
		return nil
	})
	if err != nil {
		return "", fmt.Errorf("walk embedded python: %w", err)
	}
	sort.Strings(files)
	h := sha256.New()
	for _, f := range files {
		b, err := pyFS.ReadFile(f)
		if err != nil {
			return "", fmt.Errorf("read embedded %s: %w", f, err)
		}
		fmt.Fprintf(h, "%s\x00%d\x00", f, len(b))
		h.Write(b)
	}
	return hex.EncodeToString(h.Sum(nil))[:16], nil
}

// unpack writes the embedded py folder to <cache>/worker/<hash>, once.
func unpack(cache string) (string, error) {
	hash, err := hashFS()
	if err != nil {
		return "", err
	}
	dst := filepath.Join(cache, "worker", hash)
	if _, err := os.Stat(filepath.Join(dst, ".complete")); err == nil {
		return dst, nil
	}
	if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		return "", fmt.Errorf("create worker cache dir: %w", err)
	}
	tmp, err := os.MkdirTemp(filepath.Dir(dst), hash+".tmp-")
	if err != nil {
		return "", fmt.Errorf("create temp worker dir: %w", err)
	}
	defer os.RemoveAll(tmp)
	err = fs.WalkDir(pyFS, "py", func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel := strings.TrimPrefix(strings.TrimPrefix(p, "py"), "/")
		if d.IsDir() {
			if d.Name() == "__pycache__" {
				return fs.SkipDir
			}
			return os.MkdirAll(filepath.Join(tmp, rel), 0o755)
		}
		b, err := pyFS.ReadFile(p)
		if err != nil {
			return err
		}
		return os.WriteFile(filepath.Join(tmp, rel), b, 0o644)
	})
	if err != nil {
		return "", fmt.Errorf("unpack worker python: %w", err)
	}
	if err := os.WriteFile(filepath.Join(tmp, ".complete"), nil, 0o644); err != nil {
		return "", fmt.Errorf("mark worker dir: %w", err)
	}
	if err := os.Rename(tmp, dst); err != nil {
		// Another process won the race; its copy is identical.
		if _, serr := os.Stat(filepath.Join(dst, ".complete")); serr == nil {
			return dst, nil
		}
		return "", fmt.Errorf("install worker dir: %w", err)
	}
	return dst, nil
}
