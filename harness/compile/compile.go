// Package compile builds one bare kernel source (CUDA with nvcc, C with gcc,
// Triton through triton.compile, HIP with clang) without running it, and
// reports what a kernel engineer checks first: diagnostics with file:line,
// registers, shared memory, spills and stack, and for GPU code an
// instruction-mix summary: SASS for NVIDIA (tensor-core, 16-byte and
// async-copy instructions present or not), AMDGCN for AMD (MFMA, 16-byte
// accesses, scratch). AMD targets (gfx90a, gfx942, gfx950) compile on a
// machine with no GPU; CUDA sources for an AMD arch are hipified first and
// linted for 32-lane warp assumptions.
//
// Results are cached on disk by a hash of the request and the compiler, so a
// repeated compile of the same source is free.
package compile

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/kevolve/kevolve-mcp/harness/toolchain"
)

// Languages accepted in Request.Lang.
const (
	LangCUDA   = "cuda"
	LangC      = "c"
	LangTriton = "triton"
	LangHIP    = "hip"
)

// DefaultAMDArch is the arch a HIP compile targets when none is named: MI300X.
const DefaultAMDArch = "gfx942"

// Status values of a Result.
const (
	StatusOK           = "ok"
	StatusCompileError = "compile_error"
	StatusTimeout      = "timeout"
	StatusUnavailable  = "unavailable" // the toolchain cannot build this here (e.g. no GPU where one is needed)
)

// DefaultTimeout bounds a compile when Request.Timeout is zero.
const DefaultTimeout = 120 * time.Second

// Request is one compile.
type Request struct {
	Lang    string        `json:"language"`
	Source  string        `json:"source"`
	Arch    string        `json:"arch,omitempty"`  // "sm_90", "sm_90a"... or "gfx942", "gfx950", "gfx90a"; default: the GPU's, else sm_90 (hip: gfx942)
	Flags   []string      `json:"flags,omitempty"` // appended to the compiler command line
	Timeout time.Duration `json:"timeout,omitempty"`

	// Triton only. Kernel names the @triton.jit function (default: the only
	// one, else the last defined). Signature maps parameter names to Triton
	// types ("*fp32", "i32", "fp16", "constexpr"...); parameters it leaves
	// out are guessed: constexpr annotations are constants, names containing
	// "ptr" are *fp32, others i32. Constants gives constexpr values (their
	// defaults are used otherwise).
	Kernel    string            `json:"kernel,omitempty"`
	Signature map[string]string `json:"signature,omitempty"`
	Constants map[string]any    `json:"constants,omitempty"`
	NumWarps  int               `json:"num_warps,omitempty"`
	NumStages int               `json:"num_stages,omitempty"`
	// Divisible16 names integer parameters the kernel will see as multiples
	// of 16 (Triton's runtime specializes on that, which enables 16-byte
	// accesses under masks). Pointers are assumed 16-byte aligned, as torch
	// allocations are.
	Divisible16 []string `json:"divisible16,omitempty"`
}

// Diagnostic is one compiler message, located where the compiler says.
type Diagnostic struct {
	File     string `json:"file,omitempty"`
	Line     int    `json:"line,omitempty"`
	Col      int    `json:"col,omitempty"`
	Severity string `json:"severity"` // error, warning, note, remark, fatal
	Message  string `json:"message"`
}

// Kernel is the resource usage of one compiled entry point.
type Kernel struct {
	Name              string       `json:"name"`
	Registers         int          `json:"registers"`
	SharedStaticBytes int          `json:"shared_static_bytes"`
	SharedDynBytes    int          `json:"shared_dynamic_bytes,omitempty"` // Triton: what the launch requests
	StackFrameBytes   int          `json:"stack_frame_bytes"`
	SpillStoreBytes   int          `json:"spill_store_bytes"`
	SpillLoadBytes    int          `json:"spill_load_bytes"`
	Barriers          int          `json:"barriers"`
	ConstantBytes     int          `json:"constant_bytes,omitempty"`
	NumWarps          int          `json:"num_warps,omitempty"`
	SASS              *SASSSummary `json:"sass,omitempty"`
	// AMD targets: registers by kind, spills, scratch, LDS, occupancy and
	// the AMDGCN instruction mix. Registers above is its VGPR count, shared
	// static bytes its LDS, stack frame its scratch.
	AMD *AMDResources `json:"amd,omitempty"`
}

// Result is what a compile produced. Compile errors are a Result with
// OK=false and Diagnostics, not a Go error.
type Result struct {
	OK             bool           `json:"ok"`
	Status         string         `json:"status"`
	Language       string         `json:"language"`
	Arch           string         `json:"arch,omitempty"`
	Compiler       string         `json:"compiler"`
	Command        []string       `json:"command,omitempty"`
	CompileSeconds float64        `json:"compile_seconds"`
	Cached         bool           `json:"cached"`
	Diagnostics    []Diagnostic   `json:"diagnostics"`
	Kernels        []Kernel       `json:"kernels,omitempty"`
	SASS           *SASSSummary   `json:"sass,omitempty"`          // totals over all kernels
	AMDGCN         *AMDGCNSummary `json:"amdgcn,omitempty"`        // AMD: instruction mix over all functions
	Lint           []LintFinding  `json:"lint,omitempty"`          // AMD: 32-lane warp assumptions that break on 64-lane wavefronts
	Ported         string         `json:"ported_source,omitempty"` // CUDA for an AMD arch: the hipified source that was compiled
	See            []string       `json:"see,omitempty"`           // knowledge documents (kb://...) about what this result shows
	Vectorized     []string       `json:"vectorized,omitempty"`    // C: loops gcc vectorized
	Note           string         `json:"note,omitempty"`
	Log            string         `json:"log,omitempty"` // compiler output, trimmed
	Dir            string         `json:"dir,omitempty"` // where the artifacts (cubin, ptx, .o) are
}

// Compile builds req.Source. Errors are for requests that cannot be tried
// (bad language, empty source, missing toolchain: a *ToolMissingError);
// everything the compiler says, timeouts included, comes back in the Result.
func Compile(ctx context.Context, req Request) (*Result, error) {
	req.Lang = strings.ToLower(strings.TrimSpace(req.Lang))
	if strings.TrimSpace(req.Source) == "" {
		return nil, errors.New("compile: empty source")
	}
	if err := CheckFlags(req.Flags); err != nil {
		return nil, fmt.Errorf("compile: %w", err)
	}
	if req.Timeout <= 0 {
		req.Timeout = DefaultTimeout
	}
	req.Arch = strings.ToLower(strings.TrimSpace(req.Arch))
	if req.Arch == "" && req.Lang == LangHIP {
		req.Arch = DefaultAMDArch
	}
	if req.Arch == "" && req.Lang != LangC {
		req.Arch = DefaultArch()
	}
	if req.Arch != "" && req.Lang != LangC {
		if err := validArch(req.Arch); err != nil {
			return nil, fmt.Errorf("compile: %w", err)
		}
	}
	amd := IsAMDArch(req.Arch)
	var b builder
	switch {
	case req.Lang == LangCUDA && amd:
		b = &hipBuilder{port: true}
	case req.Lang == LangCUDA:
		b = &cudaBuilder{}
	case req.Lang == LangC:
		b = &cBuilder{}
	case req.Lang == LangTriton:
		b = &tritonBuilder{}
	case req.Lang == LangHIP && amd:
		b = &hipBuilder{}
	case req.Lang == LangHIP:
		return nil, fmt.Errorf("compile: hip compiles for AMD archs (gfx90a, gfx942, gfx950), not %q", req.Arch)
	default:
		return nil, fmt.Errorf("compile: unknown language %q (want cuda, c, triton or hip)", req.Lang)
	}
	ident, err := b.prepare(req)
	if err != nil {
		return nil, err
	}
	key := requestKey(req, ident)
	final := filepath.Join(cacheRoot(), "compile", key)
	if res, ok := loadCached(final); ok {
		return res, nil
	}
	if err := os.MkdirAll(filepath.Dir(final), 0o755); err != nil {
		return nil, fmt.Errorf("compile: cache dir: %w", err)
	}
	work, err := os.MkdirTemp(filepath.Dir(final), ".work-")
	if err != nil {
		return nil, fmt.Errorf("compile: work dir: %w", err)
	}
	cctx, cancel := context.WithTimeout(ctx, req.Timeout)
	defer cancel()
	start := time.Now()
	res, err := b.build(cctx, req, work)
	if err != nil {
		os.RemoveAll(work)
		return nil, err
	}
	res.Language = req.Lang
	if res.CompileSeconds == 0 {
		res.CompileSeconds = time.Since(start).Seconds()
	}
	if res.Diagnostics == nil {
		res.Diagnostics = []Diagnostic{}
	}
	if res.Status == "" {
		if res.OK {
			res.Status = StatusOK
		} else {
			res.Status = StatusCompileError
		}
	}
	if cctx.Err() != nil && ctx.Err() == nil && !res.OK {
		res.Status = StatusTimeout
		res.Note = fmt.Sprintf("compile killed after the %s timeout", req.Timeout)
	}
	if ctx.Err() != nil {
		os.RemoveAll(work)
		return nil, fmt.Errorf("compile: %w", ctx.Err())
	}
	if res.Status == StatusTimeout {
		os.RemoveAll(work) // not cached: a retry with more time may succeed
		return res, nil
	}
	res.Dir = final
	if err := storeCached(work, final, res); err != nil {
		slog.Warn("compile: could not cache the result", "err", err)
		res.Dir = work
	}
	return res, nil
}

// builder is one language's compiler driver.
type builder interface {
	// prepare finds the tools and returns a string identifying them (paths
	// and sizes), which enters the cache key.
	prepare(req Request) (string, error)
	build(ctx context.Context, req Request, dir string) (*Result, error)
}

func requestKey(req Request, ident string) string {
	h := sha256.New()
	consts := make([]string, 0, len(req.Constants))
	for k, v := range req.Constants {
		consts = append(consts, fmt.Sprintf("%s=%v", k, v))
	}
	sort.Strings(consts)
	sig := make([]string, 0, len(req.Signature))
	for k, v := range req.Signature {
		sig = append(sig, k+"="+v)
	}
	sort.Strings(sig)
	for _, s := range []string{"v2", req.Lang, req.Source, req.Arch, strings.Join(req.Flags, "\x1f"), ident,
		req.Kernel, strings.Join(sig, ","), strings.Join(req.Divisible16, ","), strings.Join(consts, ","), fmt.Sprint(req.NumWarps, req.NumStages)} {
		h.Write([]byte(s))
		h.Write([]byte{0x1e})
	}
	return hex.EncodeToString(h.Sum(nil))[:32]
}

func cacheRoot() string { return filepath.Join(toolchain.CacheDir(), "kernels") }

func loadCached(dir string) (*Result, bool) {
	b, err := os.ReadFile(filepath.Join(dir, "result.json"))
	if err != nil {
		return nil, false
	}
	var r Result
	if err := json.Unmarshal(b, &r); err != nil {
		return nil, false
	}
	r.Cached = true
	r.Dir = dir
	return &r, true
}

func storeCached(work, final string, res *Result) error {
	b, err := json.MarshalIndent(res, "", "  ")
	if err != nil {
		return fmt.Errorf("encode result: %w", err)
	}
	if err := os.WriteFile(filepath.Join(work, "result.json"), b, 0o644); err != nil {
		return fmt.Errorf("write result: %w", err)
	}
	if err := os.Rename(work, final); err != nil {
		// Another process cached the same compile first: keep theirs.
		if _, statErr := os.Stat(filepath.Join(final, "result.json")); statErr == nil {
			os.RemoveAll(work)
			return nil
		}
		return fmt.Errorf("rename into cache: %w", err)
	}
	return nil
}

// fileIdent identifies a tool binary cheaply (no subprocess): path, size, mtime.
func fileIdent(path string) string {
	st, err := os.Stat(path)
	if err != nil {
		return path
	}
	return fmt.Sprintf("%s:%d:%d", path, st.Size(), st.ModTime().UnixNano())
}

// trimLog keeps the head and tail of a long compiler log.
func trimLog(s string, max int) string {
	head := max * 2 / 3
	return toolchain.Trim(strings.TrimSpace(s), head, max-head)
}
