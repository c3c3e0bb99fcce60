package compile

// What a compile may read and write beyond its own folder: a caller's file
// only under the workspace roots, and no flag that names an output path or
// a file for the compiler to read (the MCP client is not trusted to pick
// the server's files; the CLI user is, for the file they name).

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/kevolve/kevolve-mcp/harness/problem"
	"github.com/kevolve/kevolve-mcp/harness/toolchain"
)

// refusedFlags are flags (as given, or as the prefix of -flag=value and
// -fVALUE forms) that write a file where the caller says, or make the
// compiler read one: nvcc, gcc, clang and hipcc spellings.
var refusedFlags = []string{
	"-o", "--output-file", "--output-directory", "-odir", "--keep-dir", "-keep-dir", "--keep", "-keep",
	"-save-temps", "--save-temps", "-MF", "-MD", "-MMD", "-MT", "-MQ", "--dependency-output", "-MJ",
	"--generate-dependencies", "-M", "-MM", "--dependency-target-name",
	"-include", "--pre-include", "-imacros", "-optf", "--options-file", "-specs", "--specs",
	"-fprofile-generate", "-fprofile-use", "-fprofile-instr-generate", "-fprofile-instr-use", "-fdump-", "-fcrash-diagnostics-dir",
	"-ftime-trace", "-fsave-optimization-record", "-foptimization-record-file", "-fstack-usage", "-aux-info",
	"-B", "-wrapper", "-fplugin", "-load", "-ccbin", "--compiler-bindir", "-fmodule-file", "-fmodules-cache-path",
}

// forwarders pass a comma-separated list on to another tool (nvcc to the
// host compiler or ptxas, gcc to the linker): each item is checked too. A
// list in the next argument is checked as that argument.
var forwarders = []string{"-Wl,", "-Wa,", "-Wp,", "-Xcompiler=", "--compiler-options=", "-Xptxas=", "--ptxas-options=",
	"-Xlinker=", "--linker-options=", "-Xnvlink=", "--nvlink-options=", "-Xarch_", "-Xclang="}

// CheckFlags refuses flags that write files where the caller says (-o,
// --output-directory, -MF, --keep-dir...) or that make the compiler read a
// file the source did not name (-include, @file, -optf): those are the
// harness's to set. What -Xcompiler, -Wl, and the like forward is checked
// the same way.
func CheckFlags(flags []string) error {
	for _, f := range flags {
		if f == "" {
			continue
		}
		for _, fw := range forwarders {
			if v, ok := strings.CutPrefix(f, fw); ok {
				if err := CheckFlags(strings.Split(v, ",")); err != nil {
					return err
				}
			}
		}
		if strings.HasPrefix(f, "@") {
			return fmt.Errorf("flag %q: response files are refused: give the flags themselves", problem.Clip(f))
		}
		name := f
		if i := strings.IndexByte(f, '='); i > 0 {
			name = f[:i]
		}
		for _, r := range refusedFlags {
			if name == r || (strings.HasPrefix(f, r) && refusedPrefix(r, f)) {
				return fmt.Errorf("flag %q: flags that choose output files or read other files are refused (the harness sets its own output folder)", problem.Clip(f))
			}
		}
	}
	return nil
}

// refusedPrefix says whether f, which starts with r, is r with a value
// glued on (-ofile, -MFdeps, -B/dir) rather than another flag (-MMD for -M).
func refusedPrefix(r, f string) bool {
	switch r {
	case "-o":
		return true // -ofile; no other gcc or nvcc flag starts with -o
	case "-M", "-MM", "-keep", "--keep":
		return false // -MMD, -keep-dir... are matched by their own entries
	}
	return true
}

// Roots are the folders compile_kernel reads from: the server's
// --workspace folders and the cache, or DefaultRoots when none was given.
func Roots(workspaces []string) []string {
	if len(workspaces) == 0 {
		return DefaultRoots()
	}
	return append(append([]string{}, workspaces...), toolchain.CacheDir())
}

// DefaultRoots are the folders compile_kernel reads from when the server
// was given no --workspace: the working directory and the cache.
func DefaultRoots() []string {
	roots := []string{toolchain.CacheDir()}
	if wd, err := os.Getwd(); err == nil {
		roots = append([]string{wd}, roots...)
	}
	return roots
}

// ReadSource reads a kernel file for a compile: a regular file of at most
// problem.MaxSourceBytes, under one of roots (after symlinks); nil roots
// mean any file (the CLI, whose user named it).
func ReadSource(path string, roots []string) (string, error) {
	if roots != nil {
		real, err := realPath(path)
		if err != nil {
			return "", fmt.Errorf("path %q: %v", problem.Clip(path), err)
		}
		if !under(real, roots) {
			return "", fmt.Errorf("path %q is outside the workspace (%s): give the source inline, or start the server with --workspace DIR",
				problem.Clip(path), strings.Join(roots, ", "))
		}
	}
	b, err := problem.ReadFile("path", path)
	if err != nil {
		return "", err
	}
	return string(b), nil
}

func realPath(p string) (string, error) {
	abs, err := filepath.Abs(p)
	if err != nil {
		return "", err
	}
	return filepath.EvalSymlinks(abs)
}

// under reports whether path (resolved) lies in one of roots (resolved).
func under(path string, roots []string) bool {
	for _, r := range roots {
		rr, err := realPath(r)
		if err != nil {
			continue
		}
		if rel, err := filepath.Rel(rr, path); err == nil && rel != ".." && !strings.HasPrefix(rel, "../") {
			return true
		}
	}
	return false
}
