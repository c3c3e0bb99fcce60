package tools

import (
	"context"
	"fmt"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/kevolve/kevolve-mcp/harness/compile"
)

// CompileKernelInput is compile_kernel's arguments.
type CompileKernelInput struct {
	Source      string            `json:"source,omitempty" jsonschema_description:"The kernel source (or give path). CUDA/HIP: a translation unit with extern \"C\" __global__ kernels; C: a .c file; Triton: a Python module with @triton.jit functions."`
	Path        string            `json:"path,omitempty" jsonschema_description:"A source file to compile, instead of source."`
	Language    string            `json:"language" jsonschema_description:"Source language: cuda (nvcc; hipified for an AMD arch), hip (clang, AMD archs), c (gcc -O3 -march=native -fopenmp) or triton." jsonschema:"enum=cuda,enum=c,enum=triton,enum=hip"`
	Arch        string            `json:"arch,omitempty" jsonschema_description:"sm_90, sm_90a, sm_100a... or gfx942 (MI300X), gfx950 (MI355X), gfx90a. Default: the detected GPU's, else sm_90 (gfx942 for hip)."`
	Flags       []string          `json:"flags,omitempty" jsonschema_description:"Extra compiler flags, e.g. [\"-use_fast_math\", \"-DTILE=64\"]."`
	TimeoutS    float64           `json:"timeout_s,omitempty" jsonschema_description:"Compile time limit in seconds (default 120, at most 600)."`
	Kernel      string            `json:"kernel,omitempty" jsonschema_description:"Triton: the @triton.jit function (default: the last defined)."`
	Signature   map[string]string `json:"signature,omitempty" jsonschema_description:"Triton: parameter types, e.g. {\"x_ptr\": \"*bf16\", \"n\": \"i32\"}; unlisted: *fp32 for names with ptr, else i32."`
	Constants   map[string]any    `json:"constants,omitempty" jsonschema_description:"Triton: tl.constexpr values, e.g. {\"BLOCK\": 1024}."`
	NumWarps    int               `json:"num_warps,omitempty" jsonschema_description:"Triton: num_warps (default 4)."`
	NumStages   int               `json:"num_stages,omitempty" jsonschema_description:"Triton: num_stages."`
	Divisible16 []string          `json:"divisible16,omitempty" jsonschema_description:"Triton: integer parameters that are multiples of 16 at run time (enables 16-byte accesses)."`
}

const maxCompileTimeout = 600 * time.Second

// CompileKernel returns the compile_kernel tool. compileFn is the compiler
// entry point (compile.Compile in the server; injectable for tests); a path
// is read only under roots (default compile.DefaultRoots: the working
// directory and the cache), since the MCP client is not trusted to name the
// server's files.
func CompileKernel(compileFn func(context.Context, compile.Request) (*compile.Result, error), roots ...string) server.ServerTool {
	if compileFn == nil {
		compileFn = compile.Compile
	}
	if len(roots) == 0 {
		roots = compile.DefaultRoots()
	}
	tool := mcp.NewTool("compile_kernel",
		mcp.WithDescription("Use to iterate on a kernel fast: compile one bare kernel source (CUDA, HIP, C or Triton; no timing, no checks) and see what decides its "+
			"speed: errors with file:line:col, per kernel registers, shared memory, stack and spills; for CUDA and Triton a SASS instruction mix "+
			"(tensor-core HMMA/HGMMA, 16-byte LDG.E.128, async-copy LDGSTS/TMA, local LDL/STL); for C the loops gcc vectorized; for AMD archs (gfx942, "+
			"gfx950, gfx90a; compile-only) VGPR/SGPR/LDS, occupancy, MFMA use and a lint of 32-lane warp assumptions, with kb:// documents on the "+
			"findings. A compile error is ok=false with diagnostics; results are cached by content. A Triton source is imported, so its module-level code "+
			"runs. Then run_kernel checks and times it."),
		mcp.WithInputSchema[CompileKernelInput](),
		outputSchema[compile.Result](),
		mcp.WithTitleAnnotation("Compile a kernel and summarize its SASS or AMDGCN"),
		// Not read-only: a Triton source is imported, so its module-level
		// code runs in a Python subprocess, and every compile writes
		// the content-addressed cache. Like run_kernel, a client may
		// ask before calling it (Codex does for tools not marked read-only).
		mcp.WithReadOnlyHintAnnotation(false),
		mcp.WithDestructiveHintAnnotation(false),
		mcp.WithIdempotentHintAnnotation(true),
		mcp.WithOpenWorldHintAnnotation(false),
	)
	return server.ServerTool{Tool: tool, Handler: mcp.NewTypedToolHandler(func(ctx context.Context, _ mcp.CallToolRequest, in CompileKernelInput) (*mcp.CallToolResult, error) {
		req, msg := compileRequest(in, roots)
		if msg != "" {
			return toolErrorf("%s", msg), nil
		}
		res, err := compileFn(ctx, req)
		if err != nil {
			return toolErrorf("compile_kernel: %v", err), nil
		}
		return structured(res), nil
	})}
}

// compileRequest validates the arguments; a non-empty message is a tool
// error. A path is read only under roots (nil: anywhere).
func compileRequest(in CompileKernelInput, roots []string) (compile.Request, string) {
	req := compile.Request{
		Lang: in.Language, Arch: in.Arch, Flags: in.Flags, Kernel: in.Kernel, Signature: in.Signature,
		Constants: in.Constants, NumWarps: in.NumWarps, NumStages: in.NumStages, Divisible16: in.Divisible16,
	}
	switch {
	case in.Source != "" && in.Path != "":
		return req, "give either source or path, not both"
	case in.Source == "" && in.Path == "":
		return req, "give the kernel as source (inline) or path (a file)"
	case in.Path != "":
		src, err := compile.ReadSource(in.Path, roots)
		if err != nil {
			return req, fmt.Sprintf("cannot read path: %v", err)
		}
		req.Source = src
	default:
		req.Source = in.Source
	}
	if err := compile.CheckFlags(in.Flags); err != nil {
		return req, err.Error()
	}
	if in.TimeoutS < 0 || time.Duration(in.TimeoutS*float64(time.Second)) > maxCompileTimeout {
		return req, fmt.Sprintf("timeout_s must be between 0 and %d, got %g", int(maxCompileTimeout.Seconds()), in.TimeoutS)
	}
	req.Timeout = time.Duration(in.TimeoutS * float64(time.Second))
	if in.NumWarps < 0 || in.NumStages < 0 {
		return req, "num_warps and num_stages must be positive"
	}
	return req, ""
}

// CompileRequest validates compile_kernel's arguments into a request, so the
// CLI's compile command applies the same checks; a non-empty message is the
// error to show. The file is the CLI user's own choice: read wherever it is.
func CompileRequest(in CompileKernelInput) (compile.Request, string) { return compileRequest(in, nil) }
