package compile

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"github.com/kevolve/kevolve-mcp/harness/toolchain"
)

// cudaBuilder: nvcc -cubin -Xptxas -v, then cuobjdump -sass on the cubin.
type cudaBuilder struct {
	nvcc, cuobjdump string
}

func (b *cudaBuilder) prepare(req Request) (string, error) {
	var err error
	if b.nvcc, err = FindTool("nvcc"); err != nil {
		return "", fmt.Errorf("compile cuda: %w", err)
	}
	if b.cuobjdump, err = findDisassembler(); err != nil {
		return "", fmt.Errorf("compile cuda: %w", err)
	}
	return fileIdent(b.nvcc) + "|" + fileIdent(b.cuobjdump), nil
}

// findDisassembler prefers cuobjdump (reads cubins and fatbins), then nvdisasm.
func findDisassembler() (string, error) {
	p, err := FindTool("cuobjdump")
	if err == nil {
		return p, nil
	}
	if p2, err2 := FindTool("nvdisasm"); err2 == nil {
		return p2, nil
	}
	return "", err
}

func (b *cudaBuilder) build(ctx context.Context, req Request, dir string) (*Result, error) {
	if err := os.WriteFile(filepath.Join(dir, "kernel.cu"), []byte(req.Source), 0o644); err != nil {
		return nil, fmt.Errorf("compile cuda: write source: %w", err)
	}
	args := []string{"-cubin", "-arch=" + req.Arch, "-lineinfo", "-Xptxas", "-v", "-o", "kernel.cubin", "kernel.cu"}
	args = append(args, req.Flags...)
	res := &Result{Language: LangCUDA, Arch: req.Arch, Compiler: b.nvcc, Command: append([]string{"nvcc"}, args...)}
	log, done, err := runCompiler(ctx, res, dir, b.nvcc, args)
	if done || err != nil {
		return res, err
	}
	res.Kernels = ParsePtxasInfo(log)
	if err := attachSASS(ctx, res, b.cuobjdump, dir, "kernel.cubin"); err != nil {
		res.Note = err.Error()
	}
	return res, nil
}

// attachSASS disassembles a cubin and adds per-kernel and total summaries.
func attachSASS(ctx context.Context, res *Result, tool, dir, cubin string) error {
	var args []string
	if filepath.Base(tool) == "nvdisasm" {
		args = []string{cubin}
	} else {
		args = []string{"-sass", cubin}
	}
	out := run(ctx, dir, nil, "", tool, args...)
	if out.Err != nil || out.ExitCode != 0 {
		return fmt.Errorf("SASS summary unavailable: %s failed: %v %s", filepath.Base(tool), out.Err, toolchain.LastLine(out.Stderr))
	}
	per := ParseSASS(out.Stdout)
	if len(per) == 0 {
		return fmt.Errorf("SASS summary unavailable: %s printed no instructions", filepath.Base(tool))
	}
	total := newSASSSummary()
	for i := range res.Kernels {
		if s, ok := per[res.Kernels[i].Name]; ok {
			res.Kernels[i].SASS = s
		}
	}
	for name, s := range per {
		total.merge(s)
		found := false
		for _, k := range res.Kernels {
			found = found || k.Name == name
		}
		if !found && name != "" {
			res.Kernels = append(res.Kernels, Kernel{Name: name, SASS: s})
		}
	}
	res.SASS = total.finish()
	return nil
}
