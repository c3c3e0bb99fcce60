package worker

// Overlaying files on a Python tree: a test adds a check module of its own
// to the embedded tree (Config.Source), and the worker unpacks, verifies
// and runs exactly that.

import (
	"errors"
	"io/fs"
	"sort"
)

// Overlay is base with top's files laid over it: a file in top replaces
// base's at the same path, and a folder lists the entries of both. It
// implements fs.ReadDirFS and fs.ReadFileFS, which fs.WalkDir and
// fs.ReadFile use; a folder opened with Open lists base's entries only.
func Overlay(base, top fs.FS) fs.FS { return overlayFS{base: base, top: top} }

type overlayFS struct{ base, top fs.FS }

func (o overlayFS) Open(name string) (fs.File, error) {
	if f, err := o.top.Open(name); err == nil {
		st, err := f.Stat()
		if err == nil && !st.IsDir() {
			return f, nil
		}
		f.Close()
	}
	f, err := o.base.Open(name)
	if errors.Is(err, fs.ErrNotExist) {
		return o.top.Open(name) // a folder only top has
	}
	return f, err
}

func (o overlayFS) ReadFile(name string) ([]byte, error) {
	if b, err := fs.ReadFile(o.top, name); err == nil {
		return b, nil
	}
	return fs.ReadFile(o.base, name)
}

func (o overlayFS) ReadDir(name string) ([]fs.DirEntry, error) {
	byName := map[string]fs.DirEntry{}
	baseEnts, baseErr := fs.ReadDir(o.base, name)
	for _, e := range baseEnts {
		byName[e.Name()] = e
	}
	topEnts, topErr := fs.ReadDir(o.top, name)
	for _, e := range topEnts {
		byName[e.Name()] = e
	}
	if baseErr != nil && topErr != nil {
		return nil, baseErr
	}
	out := make([]fs.DirEntry, 0, len(byName))
	for _, e := range byName {
		out = append(out, e)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name() < out[j].Name() })
	return out, nil
}
