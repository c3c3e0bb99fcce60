package compile

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/kevolve/kevolve-mcp/harness/toolchain"
	"github.com/kevolve/kevolve-mcp/harness/toolchain/toolchaintest"
	"github.com/kevolve/kevolve-mcp/harness/worker"
	"github.com/kevolve/kevolve-mcp/knowledge"
)

// needHIP skips (or, strict, fails) where clang-19 or the HIP headers and
// device libraries (ROCm, or Triton's wheel) are missing.
func needHIP(t *testing.T) {
	t.Helper()
	if c := toolchain.Find(context.Background(), clangTool); !c.Found {
		toolchaintest.Require(t, errors.New("clang-19 is missing (apt-get install clang-19): "+c.Missing))
	}
	_, err := findHIPRuntime()
	toolchaintest.Require(t, err)
}

func checkAMDKernel(t *testing.T, r *Result, name string) *AMDResources {
	t.Helper()
	if !r.OK || r.Status != StatusOK {
		t.Fatalf("compile failed: status %s %+v\n%s", r.Status, r.Diagnostics, r.Log)
	}
	var k *Kernel
	for i := range r.Kernels {
		if r.Kernels[i].Name == name {
			k = &r.Kernels[i]
		}
	}
	if k == nil || k.AMD == nil {
		t.Fatalf("kernels = %+v, want %s with AMD resources", r.Kernels, name)
	}
	a := k.AMD
	if a.VGPRs <= 0 || a.SGPRs <= 0 || a.WavesPerSIMD < 1 || a.WavesPerSIMD > 8 || a.WavefrontSize != 64 || k.Registers != a.VGPRs {
		t.Errorf("%s resources = %+v (registers %d), want VGPRs, SGPRs, 1-8 waves per SIMD and 64-lane wavefronts", name, *a, k.Registers)
	}
	if a.ISA == nil || a.ISA.Instructions == 0 || r.AMDGCN == nil || r.AMDGCN.Instructions < a.ISA.Instructions {
		t.Errorf("instruction mix kernel %+v total %+v", a.ISA, r.AMDGCN)
	}
	if !slices.Contains(r.See, kbWave64CDNA3) {
		t.Errorf("see = %v, want the wavefront document", r.See)
	}
	return a
}

func TestCompileTritonAMD(t *testing.T) {
	needPython(t)
	t.Setenv("KEVOLVE_CACHE_DIR", t.TempDir())
	dotSig := map[string]string{"a_ptr": "*fp16", "b_ptr": "*fp16", "c_ptr": "*fp32"}
	cases := []struct {
		arch, src string
		req       Request
		mfma      string // an MFMA opcode expected, "" for none
	}{
		{"gfx942", tritonDot, Request{Signature: dotSig, Constants: map[string]any{"BLOCK": 64}}, "v_mfma_f32_32x32x8_f16"},
		{"gfx942", tritonAdd, Request{Constants: map[string]any{"BLOCK": 1024}, Divisible16: []string{"n"}}, ""},
		{"gfx950", tritonDot, Request{Signature: dotSig, Constants: map[string]any{"BLOCK": 64}}, "v_mfma_f32_"},
		{"gfx90a", tritonDot, Request{Signature: dotSig, Constants: map[string]any{"BLOCK": 64}}, "v_mfma_f32_"},
	}
	for _, tc := range cases {
		name := map[bool]string{true: "dot", false: "add"}[tc.mfma != ""]
		t.Run(tc.arch+"/"+name, func(t *testing.T) {
			req := tc.req
			req.Lang, req.Source, req.Arch = LangTriton, tc.src, tc.arch
			r := mustCompile(t, req)
			a := checkAMDKernel(t, r, name+"_kernel")
			if r.Arch != tc.arch || r.SASS != nil {
				t.Errorf("arch %s sass %v, want %s and no SASS", r.Arch, r.SASS, tc.arch)
			}
			if tc.mfma == "" {
				if r.AMDGCN.MFMA || r.AMDGCN.MFMACount != 0 || r.AMDGCN.Classes["mfma"] != 0 {
					t.Errorf("an elementwise kernel reported MFMA: %+v", r.AMDGCN)
				}
				if !r.AMDGCN.Vector16Load {
					t.Errorf("a 1024-wide fp32 add should load 16 bytes at a time: top %v", r.AMDGCN.TopOpcodes)
				}
				if slices.Contains(r.See, kbMFMACDNA3) {
					t.Errorf("see = %v cites MFMA for a kernel without it", r.See)
				}
			} else {
				if !r.AMDGCN.MFMA || r.AMDGCN.MFMACount == 0 || a.ISA.MFMACount != r.AMDGCN.MFMACount {
					t.Fatalf("tl.dot on fp16: mfma %v count %d (kernel %d), want MFMA", r.AMDGCN.MFMA, r.AMDGCN.MFMACount, a.ISA.MFMACount)
				}
				if !slices.ContainsFunc(r.AMDGCN.MFMAOps, func(op string) bool { return strings.HasPrefix(op, tc.mfma) }) {
					t.Errorf("mfma ops = %v, want %s", r.AMDGCN.MFMAOps, tc.mfma)
				}
				if !slices.Contains(r.See, kbMFMACDNA3) {
					t.Errorf("see = %v, want the MFMA document", r.See)
				}
				if r.Kernels[0].SharedDynBytes == 0 {
					t.Errorf("tl.dot through LDS: shared_dynamic_bytes = 0")
				}
			}
			t.Logf("%s %s: %.2fs vgprs %d agprs %d sgprs %d waves %d mfma %d ops %v", tc.arch, name, r.CompileSeconds, a.VGPRs, a.AGPRs, a.SGPRs, a.WavesPerSIMD, r.AMDGCN.MFMACount, r.AMDGCN.MFMAOps)
		})
	}
	r := mustCompile(t, Request{Lang: LangTriton, Source: tritonBroken, Arch: "gfx942", Constants: map[string]any{"BLOCK": 128}})
	if r.OK || len(r.Diagnostics) == 0 {
		t.Fatalf("ok=%v diagnostics=%v, want an error", r.OK, r.Diagnostics)
	}
	if d := r.Diagnostics[0]; d.File != "kernel.py" || d.Line != 8 || !strings.Contains(d.Message, "no_such_name") {
		t.Errorf("diagnostic = %+v, want kernel.py:8 about no_such_name", d)
	}
}

const hipScale = `extern "C" __global__ void scale(const float* __restrict__ x, float* __restrict__ y, float a, int n) {
    __shared__ float buf[256];
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    buf[threadIdx.x] = i < n ? x[i] : 0.f;
    __syncthreads();
    float v = buf[255 - threadIdx.x];
    for (int o = warpSize / 2; o > 0; o >>= 1) v += __shfl_xor(v, o);
    if (i < n) y[i] = a * erff(v) + sinf(v);
}
`

const hipMFMA = `#include <hip/hip_runtime.h>
typedef _Float16 half4 __attribute__((ext_vector_type(4)));
typedef float float16v __attribute__((ext_vector_type(16)));
extern "C" __global__ void mfma32(const half4* a, const half4* b, float16v* c) {
    float16v acc = {};
    acc = __builtin_amdgcn_mfma_f32_32x32x8f16(a[threadIdx.x], b[threadIdx.x], acc, 0, 0, 0);
    c[threadIdx.x] = acc;
}
`

// A dynamically indexed per-lane array lives in scratch.
const hipScratch = `extern "C" __global__ void local(const int* idx, float* out, int n) {
    float a[256];
    for (int i = 0; i < n; ++i) a[i & 255] = i * out[i];
    out[threadIdx.x] = a[idx[threadIdx.x] & 255];
}
`

const hipBroken = `extern "C" __global__ void broken(float* y, int n) {
    int i = threadIdx.x;
    if (i < n) y[i] = undefined_name * 2.0f;
}
`

func TestCompileHIP(t *testing.T) {
	needHIP(t)
	t.Setenv("KEVOLVE_CACHE_DIR", t.TempDir())
	r := mustCompile(t, Request{Lang: LangHIP, Source: hipScale})
	if r.Arch != DefaultAMDArch {
		t.Errorf("arch = %q, want the default %s", r.Arch, DefaultAMDArch)
	}
	a := checkAMDKernel(t, r, "scale")
	if a.LDSBytes != 1024 || r.Kernels[0].SharedStaticBytes != 1024 {
		t.Errorf("lds = %d, want 1024", a.LDSBytes)
	}
	if a.ScratchBytes != 0 || a.VGPRSpills != 0 || r.AMDGCN.MFMA || r.AMDGCN.CrossLaneOps == 0 {
		t.Errorf("scale: scratch %d spills %d mfma %v cross-lane %d", a.ScratchBytes, a.VGPRSpills, r.AMDGCN.MFMA, r.AMDGCN.CrossLaneOps)
	}
	// erff and sinf come from ocml, linked in: no call is left to an undefined function.
	if asm, err := os.ReadFile(filepath.Join(r.Dir, "kernel.s")); err != nil || strings.Contains(string(asm), "__ocml_") || strings.Contains(string(asm), "s_swappc") {
		t.Errorf("erff/sinf were not linked from ocml (err %v)", err)
	}
	if !slices.Contains(r.See, kbLDSCDNA3) || !slices.Contains(r.See, kbBuildGfx942) {
		t.Errorf("see = %v, want the LDS and build documents", r.See)
	}
	t.Logf("scale: %.2fs %+v", r.CompileSeconds, *a)

	r = mustCompile(t, Request{Lang: LangHIP, Source: hipMFMA, Arch: "gfx942"})
	a = checkAMDKernel(t, r, "mfma32")
	if !r.AMDGCN.MFMA || !slices.Contains(r.AMDGCN.MFMAOps, "v_mfma_f32_32x32x8_f16") || a.AGPRs == 0 && a.ArchVGPRs < 16 {
		t.Errorf("mfma32: ops %v agprs %d", r.AMDGCN.MFMAOps, a.AGPRs)
	}

	r = mustCompile(t, Request{Lang: LangHIP, Source: hipScratch, Arch: "gfx942"})
	a = checkAMDKernel(t, r, "local")
	if a.ScratchBytes < 1024 || r.AMDGCN.ScratchOps == 0 || r.Kernels[0].StackFrameBytes != a.ScratchBytes {
		t.Errorf("local: scratch %d B, %d scratch ops; want a 1024-byte private segment", a.ScratchBytes, r.AMDGCN.ScratchOps)
	}

	r = mustCompile(t, Request{Lang: LangHIP, Source: hipBroken, Arch: "gfx942"})
	if r.OK || r.Status != StatusCompileError || len(r.Diagnostics) == 0 {
		t.Fatalf("ok=%v status=%s diagnostics=%+v, want a compile error", r.OK, r.Status, r.Diagnostics)
	}
	if d := r.Diagnostics[0]; d.File != "kernel.hip" || d.Line != 3 || d.Col != 23 || d.Severity != "error" || !strings.Contains(d.Message, "undefined_name") {
		t.Errorf("diagnostic = %+v, want kernel.hip:3:23 error about undefined_name", d)
	}

	// Flags reach clang; another arch is another compile.
	r = mustCompile(t, Request{Lang: LangHIP, Source: "extern \"C\" __global__ void k(float* y) { y[threadIdx.x] = SCALE; }\n", Arch: "gfx90a", Flags: []string{"-DSCALE=3.0f"}})
	checkAMDKernel(t, r, "k")
	if r.Arch != "gfx90a" || r.Cached {
		t.Errorf("gfx90a: arch %s cached %v", r.Arch, r.Cached)
	}
	// clang-19 predates gfx950: a clear "unavailable", not a compile error.
	r = mustCompile(t, Request{Lang: LangHIP, Source: hipScale, Arch: "gfx950"})
	if !r.OK && r.Status == StatusUnavailable {
		if len(r.Diagnostics) == 0 || !strings.Contains(r.Diagnostics[0].Message, "gfx950") {
			t.Errorf("gfx950 unavailable without saying why: %+v", r.Diagnostics)
		}
	} else if r.OK {
		checkAMDKernel(t, r, "scale") // a newer clang
	} else {
		t.Errorf("gfx950: status %s %+v", r.Status, r.Diagnostics)
	}
}

// A CUDA warp-shuffle reduction written for 32-lane warps: the lint must
// name every 32-lane assumption by line; hipify ports the API; HIP's
// 64-bit-mask check rejects the 32-bit masks, located in the kernel.
const cudaWarpReduce = `#include <cuda_runtime.h>
#define WARP_SIZE 32
__inline__ __device__ float warp_sum(float v) {
    for (int o = 16; o > 0; o >>= 1)
        v += __shfl_xor_sync(0xffffffff, v, o);
    return v;
}
extern "C" __global__ void rowsum(const float* x, float* out, int n) {
    __shared__ float part[32];
    int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    float s = 0;
    for (int i = threadIdx.x; i < n; i += blockDim.x) s += x[blockIdx.x * n + i];
    s = warp_sum(s);
    unsigned active = __ballot_sync(0xffffffff, s != 0.f);
    if (lane == 0) part[warp] = s;
    __syncthreads();
    if (warp == 0) {
        s = lane < blockDim.x / 32 ? part[lane] : 0.f;
        s = warp_sum(s);
        if (lane == 0) out[blockIdx.x] = s + __popc(active);
    }
}
`

// The same reduction written for any wavefront width.
const cudaWarpReducePortable = `#include <cuda_runtime.h>
__inline__ __device__ float warp_sum(float v) {
    for (int o = warpSize / 2; o > 0; o >>= 1)
        v += __shfl_xor(v, o);
    return v;
}
extern "C" __global__ void rowsum(const float* x, float* out, int n) {
    __shared__ float part[32];
    int lane = threadIdx.x % warpSize, warp = threadIdx.x / warpSize;
    float s = 0;
    for (int i = threadIdx.x; i < n; i += blockDim.x) s += x[blockIdx.x * n + i];
    s = warp_sum(s);
    if (lane == 0) part[warp] = s;
    __syncthreads();
    if (warp == 0) {
        s = lane < blockDim.x / warpSize ? part[lane] : 0.f;
        s = warp_sum(s);
        if (lane == 0) out[blockIdx.x] = s;
    }
}
`

func TestLintWavefront64(t *testing.T) {
	got := LintWavefront64(cudaWarpReduce)
	want := []struct {
		line int
		rule string
	}{
		{2, "warp-size-constant-32"},
		{4, "shuffle-loop-from-16"},
		{5, "sync-mask-32bit"},
		{10, "lane-id-mod-32"},
		{10, "warp-id-div-32"},
		{14, "sync-mask-32bit"},
		{14, "ballot-32bit"},
		{18, "warp-id-div-32"},
	}
	for _, w := range want {
		if !slices.ContainsFunc(got, func(f LintFinding) bool { return f.Line == w.line && f.Rule == w.rule }) {
			t.Errorf("missing %s at line %d", w.rule, w.line)
		}
	}
	for _, f := range got {
		if f.Fix == "" || f.Message == "" || f.Col < 1 || f.Code == "" {
			t.Errorf("incomplete finding %+v", f)
		}
		t.Logf("%d:%d %s: %s", f.Line, f.Col, f.Rule, f.Code)
	}
	if len(got) < len(want) {
		t.Errorf("%d findings, want at least %d", len(got), len(want))
	}
	if clean := LintWavefront64(cudaWarpReducePortable); len(clean) != 0 {
		t.Errorf("portable reduction flagged: %+v", clean)
	}
	cases := []struct {
		name, src, rule string
	}{
		{"popc of ballot", "int c = __popc(__ballot_sync(mask, p));", "popc-of-ballot"},
		{"shuffle width", "v += __shfl_down(v, 1, 32);", "shuffle-width-32"},
		{"activemask stored in 32 bits", "uint32_t m = __activemask();", "ballot-32bit"},
		{"syncwarp", "__syncwarp(0xffffffffu);", "sync-mask-32bit"},
		{"constexpr", "constexpr int kWarpSize = 32;", "warp-size-constant-32"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			fs := LintWavefront64(tc.src)
			if !slices.ContainsFunc(fs, func(f LintFinding) bool { return f.Rule == tc.rule && f.Line == 1 }) {
				t.Errorf("%q: findings %+v, want %s", tc.src, fs, tc.rule)
			}
		})
	}
	for _, ok := range []string{
		"float avg = sum / 32.0f; // per tile",
		"// for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffff, v, o);",
		"/* lane & 31 */ int k = n % 32;",
		"unsigned long long m = __ballot(p);",
	} {
		if fs := LintWavefront64(ok); len(fs) != 0 {
			t.Errorf("%q flagged: %+v", ok, fs)
		}
	}
}

func TestCompileCUDAForAMD(t *testing.T) {
	needHIP(t)
	toolchaintest.Python(t) // hipify needs torch
	t.Setenv("KEVOLVE_CACHE_DIR", t.TempDir())
	r := mustCompile(t, Request{Lang: LangCUDA, Source: cudaWarpReduce, Arch: "gfx942"})
	if r.OK || r.Status != StatusCompileError {
		t.Fatalf("ok=%v status=%s, want HIP's 64-bit mask check to fail the build\n%s", r.OK, r.Status, r.Log)
	}
	if !strings.Contains(r.Ported, "hip/hip_runtime.h") || strings.Contains(r.Ported, "cuda_runtime.h") {
		t.Errorf("ported source not hipified:\n%s", r.Ported)
	}
	if strings.Count(r.Ported, "\n") != strings.Count(cudaWarpReduce, "\n") {
		t.Errorf("hipify changed the line count: %d vs %d", strings.Count(r.Ported, "\n"), strings.Count(cudaWarpReduce, "\n"))
	}
	if !slices.ContainsFunc(r.Diagnostics, func(d Diagnostic) bool {
		return d.File == "kernel.hip" && d.Line == 5 && strings.Contains(d.Message, "64-bit")
	}) {
		t.Errorf("diagnostics = %+v, want the mask error located at kernel.hip:5", r.Diagnostics)
	}
	if len(r.Lint) < 8 || !slices.Contains(r.See, kbWave64CDNA3) {
		t.Errorf("lint %d findings, see %v", len(r.Lint), r.See)
	}
	r = mustCompile(t, Request{Lang: LangCUDA, Source: cudaWarpReducePortable, Arch: "gfx942"})
	a := checkAMDKernel(t, r, "rowsum")
	if len(r.Lint) != 0 || r.AMDGCN.CrossLaneOps == 0 || a.LDSBytes != 128 {
		t.Errorf("portable: lint %+v cross-lane %d lds %d", r.Lint, r.AMDGCN.CrossLaneOps, a.LDSBytes)
	}
}

func TestHipifyScriptIsKevolvePackage(t *testing.T) {
	pkg, err := os.ReadFile(filepath.Join("..", "worker", "py", "kevolve", "_hipify.py"))
	if err != nil {
		t.Fatal(err)
	}
	script, err := worker.PyFile("kevolve/_hipify.py")
	if err != nil {
		t.Fatal(err)
	}
	if string(pkg) != string(script) {
		t.Fatal("the hipify script compile runs is not harness/worker/py/kevolve/_hipify.py")
	}
}

func TestAMDSeeDocumentsExist(t *testing.T) {
	for _, p := range []string{kbWave64CDNA3, kbMFMACDNA3, kbLDSCDNA3, kbBuildGfx942, kbCDNA4Changes, kbLDSCDNA4, kbLowPrecCDNA4} {
		if _, err := fs.Stat(knowledge.Embedded(), strings.TrimPrefix(p, "kb://")); err != nil {
			t.Errorf("%s: %v", p, err)
		}
	}
}

func TestAMDArchNames(t *testing.T) {
	for arch, want := range map[string]int{"gfx942": 9402, "gfx950": 9500, "gfx90a": 9010, "gfx1100": 11000} {
		if !IsAMDArch(arch) || isaVersion(arch) != want {
			t.Errorf("%s: amd %v isa %d, want %d", arch, IsAMDArch(arch), isaVersion(arch), want)
		}
	}
	for _, bad := range []string{"gfx", "gfx9", "gfx94z", "sm_90", "mi300x"} {
		if IsAMDArch(bad) {
			t.Errorf("%s taken for an AMD arch", bad)
		}
	}
	for _, tc := range []struct {
		req  Request
		want string
	}{
		{Request{Lang: LangHIP, Source: hipScale, Arch: "sm_90"}, "hip compiles for AMD archs"},
		{Request{Lang: LangTriton, Source: tritonAdd, Arch: "mi300x"}, "gfx942"},
		{Request{Lang: "rocm", Source: "x"}, "want cuda, c, triton or hip"},
	} {
		if _, err := Compile(context.Background(), tc.req); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v: err %v, want %q", tc.req.Lang, err, tc.want)
		}
	}
}

func TestLDSWaveLimit(t *testing.T) {
	cases := []struct {
		arch          string
		lds, warps, w int
		want          string
	}{
		{"gfx942", 32 << 10, 4, 8, "at most 2 waves per SIMD"}, // 2 groups x 4 waves over 4 SIMDs
		{"gfx950", 32 << 10, 4, 8, "at most 5 waves per SIMD"}, // 160 KiB: 5 groups
		{"gfx942", 16 << 10, 8, 8, ""},                         // 4 groups x 8 waves: 8 per SIMD
		{"gfx942", 32 << 10, 8, 3, ""},                         // registers already limit it to 3
		{"gfx942", 0, 4, 8, ""},
	}
	for _, tc := range cases {
		k := Kernel{Name: "k", SharedDynBytes: tc.lds, NumWarps: tc.warps, AMD: &AMDResources{WavesPerSIMD: tc.w}}
		got := ldsWaveLimit(tc.arch, k)
		if (tc.want == "") != (got == "") || !strings.Contains(got, tc.want) {
			t.Errorf("%s lds %d warps %d: %q, want %q", tc.arch, tc.lds, tc.warps, got, tc.want)
		}
	}
}
