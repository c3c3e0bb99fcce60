package compile

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
)

// cBuilder: gcc -O3 -march=native -fopenmp -c, with gcc's vectorizer report.
type cBuilder struct{ gcc string }

func (b *cBuilder) prepare(req Request) (string, error) {
	var err error
	if b.gcc, err = FindTool("gcc"); err != nil {
		return "", fmt.Errorf("compile c: %w", err)
	}
	host := ""
	// -march=native depends on this machine's CPU.
	if cpu, err := os.ReadFile("/proc/cpuinfo"); err == nil {
		for _, ln := range strings.Split(string(cpu), "\n") {
			if strings.HasPrefix(ln, "model name") || strings.HasPrefix(ln, "flags") {
				host = ln
			}
		}
	}
	return fileIdent(b.gcc) + "|" + host, nil
}

var vecRE = regexp.MustCompile(`^kernel\.c:(\d+):(\d+): optimized: (.*)$`)

func (b *cBuilder) build(ctx context.Context, req Request, dir string) (*Result, error) {
	if err := os.WriteFile(filepath.Join(dir, "kernel.c"), []byte(req.Source), 0o644); err != nil {
		return nil, fmt.Errorf("compile c: write source: %w", err)
	}
	args := []string{"-O3", "-march=native", "-fopenmp", "-fPIC", "-fdiagnostics-color=never",
		"-fopt-info-vec-optimized=vec.txt", "-c", "kernel.c", "-o", "kernel.o"}
	args = append(args, req.Flags...)
	res := &Result{Language: LangC, Compiler: b.gcc, Command: append([]string{"gcc"}, args...)}
	_, done, err := runCompiler(ctx, res, dir, b.gcc, args)
	if done || err != nil {
		return res, err
	}
	if vec, err := os.ReadFile(filepath.Join(dir, "vec.txt")); err == nil {
		seen := map[string]bool{}
		for _, ln := range strings.Split(string(vec), "\n") {
			if m := vecRE.FindStringSubmatch(ln); m != nil {
				s := "line " + m[1] + ": " + m[3]
				if !seen[s] {
					seen[s] = true
					res.Vectorized = append(res.Vectorized, s)
				}
			}
		}
	}
	return res, nil
}
