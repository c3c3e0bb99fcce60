package deploy

import (
	"embed"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/kevolve/kevolve-mcp/harness/worker"
)

//go:embed runtime/*.py
var runtimeFS embed.FS

// vendored are the worker's region finders the runtime carries, so it
// finds the regions the optimizer's profile found: the signature patterns,
// the claims of their nodes in a captured graph, and the partitioner.
var vendored = map[string]string{
	"whole_model/patterns.py":  "_patterns.py",
	"whole_model/claims.py":    "_claims.py",
	"whole_model/partition.py": "_partition.py",
}

// vendorImports points the vendored files' imports of each other at
// their copies in the package.
var vendorImports = strings.NewReplacer("from whole_model import partition as pt", "from . import _partition as pt")

// registryFile is the JSON the exported package reads: the entries without
// their sources (each source is a file under kernels/).
type registryFile struct {
	Version int     `json:"version"`
	Entries []entry `json:"entries"`
}

type entry struct {
	Entry
	Kernel string `json:"kernel"` // kernels/<id>.py
}

// Export writes the self-contained Python package kevolve_kernels into dir
// (dir/kevolve_kernels): the dispatch runtime, the region finder the
// optimizer used (whole_model's patterns, claims and partition, from the worker's files), the kevolve
// loaders the kernels import (under _vendor), every entry's kernel and the
// registry. It needs torch, and a C compiler or GPU toolchain where its
// kernels are built, not this binary. It returns the package's folder.
func Export(dir string, entries []Entry) (string, error) {
	pkg := filepath.Join(dir, "kevolve_kernels")
	if err := os.RemoveAll(pkg); err != nil {
		return "", fmt.Errorf("export: %w", err)
	}
	files := map[string][]byte{}
	rt, err := runtimeFS.ReadDir("runtime")
	if err != nil {
		return "", fmt.Errorf("export: runtime: %w", err)
	}
	for _, f := range rt {
		b, err := runtimeFS.ReadFile("runtime/" + f.Name())
		if err != nil {
			return "", fmt.Errorf("export: %w", err)
		}
		files[f.Name()] = b
	}
	for src, dst := range vendored {
		b, err := worker.PyFile(src)
		if err != nil {
			return "", err
		}
		files[dst] = []byte(vendorImports.Replace(string(b)))
	}
	loaders, err := worker.PyTree("kevolve")
	if err != nil {
		return "", err
	}
	for p, b := range loaders {
		files[filepath.Join("_vendor", "kevolve", p)] = b
	}
	reg := registryFile{Version: 1, Entries: []entry{}}
	for _, e := range entries {
		if e.ID == "" {
			e.ID = e.Key()
		}
		k := entry{Entry: e, Kernel: "kernels/" + e.ID + ".py"}
		files[k.Kernel] = []byte(e.Source)
		k.Source = ""
		reg.Entries = append(reg.Entries, k)
	}
	b, err := json.MarshalIndent(reg, "", "  ")
	if err != nil {
		return "", fmt.Errorf("export: registry: %w", err)
	}
	files["registry.json"] = b
	for name, b := range files {
		p := filepath.Join(pkg, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return "", fmt.Errorf("export: %w", err)
		}
		if err := os.WriteFile(p, b, 0o644); err != nil {
			return "", fmt.Errorf("export: %w", err)
		}
	}
	return pkg, nil
}
