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
	Source      string            `json:"source,omitempty" jsonschema_description:"The kernel source inline (give source or path, not both). CUDA: a .cu translation unit with extern \"C\" __global__ kernels; HIP: the same in HIP C++; C: a .c file; Triton: a Python module with @triton.jit functions."`
	Path        string            `json:"path,omitempty" jsonschema_description:"Path of a source file to compile instead of inline source."`
	Language    string            `json:"language" jsonschema_description:"Source language: cuda (nvcc; with an AMD arch: hipified with torch.utils.hipify, then compiled as HIP), hip (clang-19, device-only, for AMD archs), c (gcc -O3 -march=native -fopenmp) or triton (triton.compile for the arch's backend: CUDA or AMD HIP)." jsonschema:"enum=cuda,enum=c,enum=triton,enum=hip"`
	Arch        string            `json:"arch,omitempty" jsonschema_description:"GPU architecture: NVIDIA sm_90, sm_90a, sm_100a... or AMD gfx942 (MI300X), gfx950 (MI355X), gfx90a (MI200). Default: the detected GPU's, else sm_90; for hip gfx942. AMD archs compile here without an AMD GPU. Ignored for c."`
	Flags       []string          `json:"flags,omitempty" jsonschema_description:"Extra compiler flags appended to the command line, e.g. [\"-use_fast_math\", \"-maxrregcount=64\"] or [\"-DTILE=64\"]."`
	TimeoutS    float64           `json:"timeout_s,omitempty" jsonschema_description:"Compile time limit in seconds (default 120, at most 600); the compiler is killed when it runs out."`
	Kernel      string            `json:"kernel,omitempty" jsonschema_description:"Triton: the @triton.jit function to compile (default: the last one defined)."`
	Signature   map[string]string `json:"signature,omitempty" jsonschema_description:"Triton: parameter name to Triton type, e.g. {\"x_ptr\": \"*bf16\", \"n\": \"i32\"}. Unlisted parameters are guessed (names containing ptr: *fp32, others i32; constexpr-annotated: constants)."`
	Constants   map[string]any    `json:"constants,omitempty" jsonschema_description:"Triton: values of tl.constexpr parameters, e.g. {\"BLOCK\": 1024} (defaults are used for the rest)."`
	NumWarps    int               `json:"num_warps,omitempty" jsonschema_description:"Triton: num_warps (default Triton's, 4)."`
	NumStages   int               `json:"num_stages,omitempty" jsonschema_description:"Triton: num_stages (default Triton's)."`
	Divisible16 []string          `json:"divisible16,omitempty" jsonschema_description:"Triton: integer parameters that will be multiples of 16 at run time (Triton specializes on this; it enables 16-byte accesses under masks). Pointers are assumed 16-byte aligned."`
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
		mcp.WithDescription("Compile one bare kernel source without timing or checking it (a Triton source is imported, so its module-level code runs) and report what decides its speed before you time it: "+
			"errors and warnings with file:line:col (kernel.cu / kernel.c / kernel.py), per kernel registers, static and dynamic shared memory, stack frame and spill bytes, "+
			"and for CUDA and Triton a SASS instruction-mix summary: instruction classes and top opcodes, whether tensor-core (HMMA/HGMMA/IMMA), 16-byte vector (LDG.E.128/STS.128) "+
			"and async-copy (LDGSTS/TMA) instructions are present, and local-memory LDL/STL counts. For C: which loops gcc vectorized. "+
			"For AMD archs (gfx942, gfx950, gfx90a; triton, hip, or cuda which is hipified first): VGPR/AGPR/SGPR counts, LDS bytes, scratch and spills, the compiler's waves-per-SIMD occupancy, "+
			"an AMDGCN instruction mix with whether MFMA matrix instructions were emitted (v_mfma_*), a lint of 32-lane warp assumptions that break on 64-lane wavefronts (line, rule, suggested fix), "+
			"and see: kb:// knowledge documents about the findings. AMD results are compile-only: nothing runs or is timed on an AMD GPU here. Compile errors come back as ok=false with diagnostics. "+
			"Results are cached by content (cached=true). Use it to iterate on a kernel quickly; use run_kernel to check correctness and time it."),
		mcp.WithInputSchema[CompileKernelInput](),
		mcp.WithOutputSchema[compile.Result](),
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
