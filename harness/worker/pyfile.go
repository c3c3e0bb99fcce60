package worker

import (
	"fmt"
	"io/fs"
	"strings"
)

// PyFile returns one file of the embedded worker Python (e.g. "evaluate/workcount.py"),
// for other harness packages that run a module of it outside the worker: the
// sol package's trace script imports the shared work-counting core this way,
// so there is one copy of it.
func PyFile(name string) ([]byte, error) {
	b, err := pyFS.ReadFile("py/" + name)
	if err != nil {
		return nil, fmt.Errorf("embedded worker python %s: %w", name, err)
	}
	return b, nil
}

// PyTree returns every file under one folder of the embedded worker Python
// (e.g. "kevolve"), by path relative to that folder, caches and tests
// left out: the exported kevolve_kernels package carries the loaders its
// kernels import.
func PyTree(dir string) (map[string][]byte, error) {
	out := map[string][]byte{}
	root := "py/" + dir
	err := fs.WalkDir(pyFS, root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (d.Name() == "__pycache__" || d.Name() == "tests") {
			return fs.SkipDir
		}
		if d.IsDir() {
			return nil
		}
		b, err := pyFS.ReadFile(p)
		if err != nil {
			return err
		}
		out[strings.TrimPrefix(p, root+"/")] = b
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("embedded worker python %s: %w", dir, err)
	}
	return out, nil
}
