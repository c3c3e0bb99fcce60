package compile

import (
	"context"
	_ "embed"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"time"

	"github.com/kevolve/kevolve-mcp/harness/toolchain"
	"github.com/kevolve/kevolve-mcp/harness/worker"
)

// hipBuilder compiles HIP C++ device-only for an AMD arch with LLVM's clang
// (Debian's clang-19 here; Debian's hipcc is ROCm 5.2 and cannot target
// gfx942), against the HIP headers and ROCm device libraries (ocml, ockl)
// that Triton's wheel ships for its AMD backend, or a ROCm install's. With
// port set, the source is CUDA: torch.utils.hipify translates it first.
// Either way the source is linted for 32-lane warp assumptions.
type hipBuilder struct {
	port   bool
	clang  toolchain.Tool
	rt     hipRuntime
	python string
}

// hipRuntime is where the HIP headers and device bitcode libraries are.
type hipRuntime struct {
	Root    string // a ROCm install (--rocm-path), or "" for Triton's wheel
	Include string // holds hip/hip_runtime.h
	Bitcode []string
	Version string // major.minor, from hip/hip_version.h
}

const clangTool = "clang-19"

func (b *hipBuilder) prepare(req Request) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	b.clang = toolchain.Find(ctx, clangTool)
	if !b.clang.Found {
		return "", &ToolMissingError{Tool: clangTool, Searched: append([]string{"PATH"}, toolchain.ToolDirs()...),
			Hint: "apt-get install clang-19 (Debian bookworm's LLVM 19 compiles HIP for gfx90a/gfx942/gfx950; Debian's hipcc 5.2 cannot): " + b.clang.Missing}
	}
	rt, err := findHIPRuntime()
	if err != nil {
		return "", fmt.Errorf("compile hip: %w", err)
	}
	b.rt = rt
	ident := fileIdent(b.clang.Path) + "|" + b.clang.Version + "|" + rt.Include
	for _, bc := range rt.Bitcode {
		ident += "|" + fileIdent(bc)
	}
	if b.port {
		if b.python, err = FindPython(); err != nil {
			return "", fmt.Errorf("compile cuda for %s (hipify): %w", req.Arch, err)
		}
		ident += "|" + fileIdent(b.python)
	}
	return ident, nil
}

var hipVersionRE = regexp.MustCompile(`(?m)^#define HIP_VERSION_(MAJOR|MINOR) (\d+)`)

// findHIPRuntime looks in a ROCm install (ROCM_PATH, /opt/rocm) first, then
// in the Python env's Triton wheel (triton/backends/amd: include/hip and
// lib/ocml.bc, lib/ockl.bc).
func findHIPRuntime() (hipRuntime, error) {
	var looked []string
	roots := []string{}
	if r := os.Getenv("ROCM_PATH"); r != "" {
		roots = append(roots, r)
	}
	roots = append(roots, "/opt/rocm")
	for _, r := range roots {
		inc := filepath.Join(r, "include")
		bcDir := filepath.Join(r, "amdgcn", "bitcode")
		looked = append(looked, r)
		if fileExists(filepath.Join(inc, "hip", "hip_runtime.h")) && fileExists(filepath.Join(bcDir, "ocml.bc")) {
			return newHIPRuntime(r, inc, filepath.Join(bcDir, "ocml.bc"), filepath.Join(bcDir, "ockl.bc"))
		}
	}
	for _, sp := range toolchain.PythonSiteDirs() {
		amd := filepath.Join(sp, "triton", "backends", "amd")
		looked = append(looked, amd)
		inc := filepath.Join(amd, "include")
		if fileExists(filepath.Join(inc, "hip", "hip_runtime.h")) && fileExists(filepath.Join(amd, "lib", "ocml.bc")) {
			return newHIPRuntime("", inc, filepath.Join(amd, "lib", "ocml.bc"), filepath.Join(amd, "lib", "ockl.bc"))
		}
	}
	return hipRuntime{}, &ToolMissingError{Tool: "HIP headers and device libraries (hip/hip_runtime.h, ocml.bc)", Searched: looked,
		Hint: "install ROCm, or `pip install triton` (its wheel carries them for Triton's AMD backend) into the Python env (KEVOLVE_PYTHON)"}
}

func newHIPRuntime(root, inc string, bitcode ...string) (hipRuntime, error) {
	rt := hipRuntime{Root: root, Include: inc, Version: "6.0"}
	for _, bc := range bitcode {
		if !fileExists(bc) {
			return rt, fmt.Errorf("ROCm device library %s is missing", bc)
		}
		rt.Bitcode = append(rt.Bitcode, bc)
	}
	if b, err := os.ReadFile(filepath.Join(inc, "hip", "hip_version.h")); err == nil {
		v := map[string]string{}
		for _, m := range hipVersionRE.FindAllStringSubmatch(string(b), -1) {
			v[m[1]] = m[2]
		}
		if v["MAJOR"] != "" && v["MINOR"] != "" {
			rt.Version = v["MAJOR"] + "." + v["MINOR"]
		}
	}
	return rt, nil
}

func fileExists(p string) bool {
	st, err := os.Stat(p)
	return err == nil && !st.IsDir()
}

// oclcControls are the device libraries' control constants that ROCm ships
// as oclc_*.bc files and Triton's wheel does not; they are compiled here for
// the arch (as Triton itself sets them for its kernels).
func oclcControls(arch string) string {
	wave64, log2 := 1, 6
	if WavefrontSize(arch) == 32 {
		wave64, log2 = 0, 5
	}
	return fmt.Sprintf(`// ROCm device-library controls for %s, written by kevolve-mcp.
__attribute__((visibility("hidden"))) __constant int __oclc_ISA_version = %d;
__attribute__((visibility("hidden"))) __constant uchar __oclc_wavefrontsize64 = %d;
__attribute__((visibility("hidden"))) __constant int __oclc_wavefrontsize_log2 = %d;
__attribute__((visibility("hidden"))) __constant uchar __oclc_finite_only_opt = 0;
__attribute__((visibility("hidden"))) __constant uchar __oclc_unsafe_math_opt = 0;
__attribute__((visibility("hidden"))) __constant uchar __oclc_correctly_rounded_sqrt32 = 1;
__attribute__((visibility("hidden"))) __constant uchar __oclc_daz_opt = 0;
`, arch, isaVersion(arch), wave64, log2)
}

func (b *hipBuilder) build(ctx context.Context, req Request, dir string) (*Result, error) {
	res := &Result{Language: req.Lang, Arch: req.Arch, Compiler: b.clang.Path + " " + b.clang.Version}
	src := req.Source
	if b.port {
		ported, done, err := b.hipify(ctx, res, dir, src)
		if done || err != nil {
			return res, err
		}
		src, res.Ported = ported, ported
	}
	res.Lint = LintWavefront64(req.Source)
	if err := os.WriteFile(filepath.Join(dir, "kernel.hip"), []byte(src), 0o644); err != nil {
		return nil, fmt.Errorf("compile hip: write source: %w", err)
	}
	rocm := b.rt.Root
	if rocm == "" {
		// clang wants a ROCm tree: give it one holding the wheel's headers.
		rocm = filepath.Join(dir, "rocm")
		if err := os.MkdirAll(rocm, 0o755); err != nil {
			return nil, fmt.Errorf("compile hip: %w", err)
		}
		if err := os.Symlink(b.rt.Include, filepath.Join(rocm, "include")); err != nil {
			return nil, fmt.Errorf("compile hip: link the HIP headers: %w", err)
		}
	}
	if err := os.WriteFile(filepath.Join(dir, "oclc.cl"), []byte(oclcControls(req.Arch)), 0o644); err != nil {
		return nil, fmt.Errorf("compile hip: write controls: %w", err)
	}
	ctl := run(ctx, dir, nil, "", b.clang.Path, "-x", "cl", "-cl-std=CL2.0", "-target", "amdgcn-amd-amdhsa", "-mcpu="+req.Arch,
		"-nogpulib", "-O2", "-emit-llvm", "-c", "oclc.cl", "-o", "oclc.bc")
	if ctl.TimedOut {
		res.Status = StatusTimeout
		return res, nil
	}
	if ctl.Err != nil || ctl.ExitCode != 0 {
		// An arch clang does not know fails here first, with its message.
		res.Log = trimLog(ctl.Stdout+ctl.Stderr, 8000)
		msg := toolchain.LastLine(ctl.Stderr)
		if strings.Contains(msg, "invalid target ID") || strings.Contains(msg, "unknown target CPU") {
			// clang-19 predates gfx950 (LLVM 20 added it).
			res.Status = StatusUnavailable
			res.Diagnostics = []Diagnostic{{Severity: "error", Message: fmt.Sprintf("%s %s does not know %s: HIP for it needs a newer clang (ROCm's, or LLVM 20+); Triton kernels compile for it here", clangTool, b.clang.Version, req.Arch)}}
			return res, nil
		}
		res.Diagnostics = []Diagnostic{{Severity: "error", Message: "clang could not build the device-library controls for " + req.Arch + ": " + msg}}
		return res, nil
	}
	args := []string{"-x", "hip", "--offload-arch=" + req.Arch, "--cuda-device-only", "-nogpulib", "--rocm-path=" + rocm,
		"--hip-version=" + b.rt.Version, "-include", "hip/hip_runtime.h", "-O3", "-std=c++17", "-fno-color-diagnostics",
		"-S", "-o", "kernel.s", "kernel.hip"}
	for _, bc := range append(append([]string{}, b.rt.Bitcode...), "oclc.bc") {
		args = append(args, "-Xclang", "-mlink-builtin-bitcode", "-Xclang", bc)
	}
	args = append(args, req.Flags...)
	res.Command = append([]string{clangTool}, args...)
	_, done, err := runCompiler(ctx, res, dir, b.clang.Path, args)
	res.Diagnostics = locateHeaderErrors(res.Diagnostics)
	if done || err != nil {
		res.See = seeAMD(res)
		return res, err
	}
	asm, err := os.ReadFile(filepath.Join(dir, "kernel.s"))
	if err != nil {
		return nil, fmt.Errorf("compile hip: read kernel.s: %w", err)
	}
	res.Kernels, res.AMDGCN = ParseAMDGCN(string(asm))
	if len(res.Kernels) == 0 {
		res.Note = "no __global__ kernel in the source (device functions alone emit no code object entries)"
	}
	addAMDNotes(res)
	res.See = seeAMD(res)
	return res, nil
}

// hipify runs torch.utils.hipify (the embedded kevolve/_hipify.py) on a
// CUDA source. done is true when res is already final (hipify unavailable
// or failed).
func (b *hipBuilder) hipify(ctx context.Context, res *Result, dir, src string) (string, bool, error) {
	if err := os.WriteFile(filepath.Join(dir, "kernel.cu"), []byte(src), 0o644); err != nil {
		return "", true, fmt.Errorf("compile cuda for %s: write source: %w", res.Arch, err)
	}
	// The kevolve package's own porting script, from the worker's embedded
	// Python: one copy serves load_hip's hipify and compile_kernel.
	hipifyScript, err := worker.PyFile("kevolve/_hipify.py")
	if err != nil {
		return "", true, fmt.Errorf("compile cuda for %s: %w", res.Arch, err)
	}
	script := filepath.Join(dir, "hipify.py")
	if err := os.WriteFile(script, hipifyScript, 0o644); err != nil {
		return "", true, fmt.Errorf("compile cuda for %s: write hipify script: %w", res.Arch, err)
	}
	in, _ := json.Marshal(map[string]string{"source_path": filepath.Join(dir, "kernel.cu"), "out_path": filepath.Join(dir, "kernel.hip")})
	out := run(ctx, dir, nil, string(in), b.python, script)
	if out.TimedOut {
		res.Status = StatusTimeout
		return "", true, nil
	}
	if out.Err != nil {
		return "", true, fmt.Errorf("compile cuda for %s: run hipify: %w", res.Arch, out.Err)
	}
	var hr struct {
		OK     bool   `json:"ok"`
		Status string `json:"status"`
		Error  string `json:"error"`
	}
	if err := json.Unmarshal([]byte(toolchain.LastJSONLine(out.Stdout)), &hr); err != nil || !hr.OK {
		msg := hr.Error
		if msg == "" {
			msg = toolchain.LastLine(out.Stderr)
		}
		res.Lint = LintWavefront64(src)
		res.Diagnostics = []Diagnostic{{Severity: "error", Message: "hipify (torch.utils.hipify) failed: " + msg}}
		if hr.Status == StatusUnavailable {
			res.Status = StatusUnavailable
		}
		return "", true, nil
	}
	ported, err := os.ReadFile(filepath.Join(dir, "kernel.hip"))
	if err != nil {
		return "", true, fmt.Errorf("compile cuda for %s: read hipified source: %w", res.Arch, err)
	}
	res.Note = "hipified with torch.utils.hipify (lines keep their numbers; kernel.hip is the ported source)"
	return string(ported), false, nil
}

// locateHeaderErrors gives an error reported inside a header (a HIP
// static_assert, say) the location in the kernel source that triggered it,
// from the "in instantiation ... requested here" note that follows it.
func locateHeaderErrors(ds []Diagnostic) []Diagnostic {
	for i := range ds {
		d := &ds[i]
		if d.Severity != "error" || strings.HasPrefix(d.File, "kernel.") {
			continue
		}
		for j := i + 1; j < len(ds) && ds[j].Severity == "note"; j++ {
			if strings.HasPrefix(ds[j].File, "kernel.") {
				d.Message = fmt.Sprintf("%s (reported in %s:%d)", d.Message, d.File, d.Line)
				d.File, d.Line, d.Col = ds[j].File, ds[j].Line, ds[j].Col
				break
			}
		}
	}
	return ds
}

// addAMDNotes says what limits occupancy and flags spills, in the note.
func addAMDNotes(res *Result) {
	var notes []string
	for _, k := range res.Kernels {
		if w := amdWaveLimit(k); w != "" {
			notes = append(notes, w)
		}
		if w := ldsWaveLimit(res.Arch, k); w != "" {
			notes = append(notes, w)
		}
		if a := k.AMD; a != nil && (a.VGPRSpills > 0 || a.SGPRSpills > 0) {
			notes = append(notes, fmt.Sprintf("%s spills %d VGPRs and %d SGPRs to scratch (%d B per lane)", k.Name, a.VGPRSpills, a.SGPRSpills, a.ScratchBytes))
		}
	}
	if len(notes) > 0 {
		res.Note = strings.TrimSpace(res.Note + " " + strings.Join(notes, "; ") + ".")
	}
}
