"""load_c against torch on the CPU: compile, call, cache and argument checks."""

import os
import tempfile
import time
import unittest

import torch

import kevolve
from kevolve import CompileError, load_c

SCALE = r'''
#include <stdint.h>
void scale(const float* x, float* y, float a, int64_t n) {
    #pragma omp parallel for
    for (int64_t i = 0; i < n; ++i) y[i] = a * x[i];
}
double dot(const double* restrict a, const double* restrict b, long n) {
    double s = 0;
    for (long i = 0; i < n; ++i) s += a[i] * b[i];
    return s;
}
int32_t count_true(const _Bool* m, int n) {
    int c = 0;
    for (int i = 0; i < n; ++i) c += m[i];
    return c;
}
'''


class LoadC(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.TemporaryDirectory()
        os.environ["KEVOLVE_CACHE_DIR"] = cls.tmp.name

    @classmethod
    def tearDownClass(cls):
        cls.tmp.cleanup()

    def test_matches_torch_and_caches(self):
        src = SCALE + "// a source no other test compiles, so this load is a cache miss\n"
        t0 = time.perf_counter()
        m = load_c(src)
        first = time.perf_counter() - t0
        self.assertFalse(m.cached)
        x = torch.randn(10_000)
        y = torch.empty_like(x)
        m.scale(x, y, 2.5, x.numel())
        torch.testing.assert_close(y, 2.5 * x)
        a, b = torch.randn(777, dtype=torch.float64), torch.randn(777, dtype=torch.float64)
        self.assertAlmostEqual(m.dot(a, b, 777), float(a @ b), places=9)
        mask = torch.rand(100) > 0.5
        self.assertEqual(m.count_true(mask, 100), int(mask.sum()))
        t0 = time.perf_counter()
        m2 = load_c(src)
        again = time.perf_counter() - t0
        self.assertTrue(m2.cached, "the second load of the same source must come from the cache")
        self.assertLess(again, first)
        print(f"\nload_c: first compile {first:.3f}s, cached load {again * 1e3:.1f}ms")

    def test_argument_errors(self):
        m = load_c(SCALE)
        x = torch.randn(64)
        y = torch.empty(64)
        cases = [
            ("wrong dtype", (x.double(), y, 1.0, 64), "dtype is torch.float64"),
            ("non-contiguous", (torch.randn(64, 2)[:, 0], y, 1.0, 64), "not contiguous"),
            ("float for int", (x, y, 1.0, 64.0), "expects an integer"),
            ("tensor for scalar", (x, y, torch.tensor(1.0), 64), "expects a scalar"),
            ("arity", (x, y, 1.0), "takes 4 arguments"),
            ("not a tensor", ([1.0], y, 1.0, 64), "expects a torch.Tensor"),
        ]
        for name, args, msg in cases:
            with self.subTest(name):
                with self.assertRaisesRegex(TypeError, msg):
                    m.scale(*args)
        if torch.cuda.is_available():
            with self.assertRaisesRegex(TypeError, "needs a CPU tensor"):
                m.scale(x.cuda(), y, 1.0, 64)

    def test_compile_error_carries_log(self):
        with self.assertRaises(CompileError) as cm:
            load_c("void broken(int n) { return n +; }\n")
        self.assertIn("kernel.c:1:", cm.exception.log)
        self.assertIn("error", cm.exception.log)

    def test_missing_function(self):
        m = load_c(SCALE)
        with self.assertRaisesRegex(AttributeError, "found: .*scale"):
            m.nope

    def test_flags_change_the_cache_key(self):
        src = "int answer(void) { return ANSWER; }\n"
        self.assertEqual(load_c(src, flags=["-DANSWER=41"]).answer(), 41)
        self.assertEqual(load_c(src, flags=["-DANSWER=42"]).answer(), 42)


class PatchLoadInline(unittest.TestCase):
    def test_name_is_content_hash_and_patch_is_idempotent(self):
        import torch.utils.cpp_extension as ext
        from kevolve._inline import cached_name
        a = cached_name("ext", ("int f() { return 1; }",), {"functions": ["f"]})
        b = cached_name("ext", ("int f() { return 2; }",), {"functions": ["f"]})
        c = cached_name("ext", ("int f() { return 1; }",), {"functions": ["f"], "verbose": True})
        self.assertNotEqual(a, b)
        self.assertEqual(a, c, "verbose must not change the cache key")
        kevolve.patch_load_inline()
        first = ext.load_inline
        kevolve.patch_load_inline()
        self.assertIs(ext.load_inline, first)
        self.assertIsNotNone(os.environ.get("TORCH_EXTENSIONS_DIR"))

    def test_light_headers_only_where_they_suffice(self):
        from kevolve._inline import cached_name, lighten_cuda_sources
        plain = '#include <torch/extension.h>\n#include <cuda_runtime.h>\n__global__ void k() {}\n'
        got = lighten_cuda_sources(plain)
        self.assertEqual(len(got), 1)
        self.assertIn("#include <torch/types.h>", got[0])
        self.assertNotIn("<torch/extension.h>\n", got[0])
        self.assertIn("#include <cuda_runtime.h>", got[0], "other includes stay")
        # Quoted, spaced and listed forms are found too.
        self.assertIsNotNone(lighten_cuda_sources(['  # include "torch/extension.h"\n', "__global__ void k() {}"]))
        cases = {
            "no cuda sources": None,
            "no extension.h": "#include <torch/types.h>\n__global__ void k() {}",
            "bindings in the CUDA unit": plain + "PYBIND11_MODULE(TORCH_EXTENSION_NAME, m) { m.def(\"k\", &k); }",
            "pybind objects": plain + "py::object f();",
            "C++ frontend": plain + "torch::nn::Linear lin(2, 2);",
        }
        for why, src in cases.items():
            with self.subTest(why):
                self.assertIsNone(lighten_cuda_sources(src))
        from kevolve._inline import cuda_unit_failed
        for log, want in {"FAILED: cuda.cuda.o \n/usr/bin/nvcc ...": True,
                          "[1/3] c++ main.cpp\nFAILED: [code=2] cuda.cuda.o \nnvcc ...": True,
                          "FAILED: [code=1] main.o \nc++ ...": False,
                          "FAILED: main.o \nc++ ...\nFAILED: cuda.cuda.o \nnvcc ...": False,
                          "FAILED: ext.so \nc++ main.o cuda.cuda.o -o ext.so": False}.items():
            with self.subTest(log=log):
                self.assertEqual(cuda_unit_failed(log), want)
        a = cached_name("ext", (plain,), {})
        self.assertNotEqual(a, cached_name("ext", (plain,), {}, variant="types.h"), "the light build has its own cache entry")

    _HOST = """#include <torch/extension.h>
#include <vector>
torch::Tensor f(torch::Tensor x, double a) {
  TORCH_CHECK(x.dim() == 2 && x.scalar_type() == torch::kFloat, "x must be a 2-D float tensor");
  auto y = torch::empty({x.size(0)}, x.options().dtype(torch::kFloat32));
  auto z = torch::zeros_like(x, torch::MemoryFormat::Contiguous);
  auto w = torch::zeros({4, 4}, torch::TensorOptions().dtype(torch::kInt64).device(x.device()));
  AT_DISPATCH_FLOATING_TYPES_AND_HALF(x.scalar_type(), "f", [&] { scalar_t* p = x.data_ptr<scalar_t>(); (void)p; });
  std::vector<torch::Tensor> v{y, z, w};
  return at::empty_like(y).view({-1}).contiguous();
}
"""

    def test_aten_tier_names_only_the_ops_called(self):
        from kevolve._inline import aten_cuda_sources
        got = aten_cuda_sources(self._HOST)
        self.assertIsNotNone(got)
        for inc in ("ATen/core/Tensor.h", "ATen/Dispatch.h", "ATen/ops/empty.h", "ATen/ops/zeros.h",
                    "ATen/ops/zeros_like.h", "ATen/ops/empty_like.h"):
            self.assertIn("#include <%s>" % inc, got[0])
        self.assertNotIn("<torch/extension.h>\n", got[0])
        self.assertNotIn("ATen/ops/view.h", got[0], "methods come with the tensor, not as ops")
        refused = {
            "a torch function without an ATen operator": self._HOST.replace("torch::zeros_like(x, ", "torch::get_num_threads("),
            "a torch name the tier does not define": self._HOST.replace("torch::kFloat32", "torch::indexing::None"),
            "another torch header": "#include <torch/types.h>\n" + self._HOST,
            "the C++ frontend": self._HOST + "torch::nn::Linear l(2, 2);",
            "the deprecated Tensor::type()": self._HOST.replace("x.scalar_type(), \"f\"", "x.type(), \"f\""),
            "ATen's CUDA check without its header": self._HOST + "void g() { AT_CUDA_CHECK(cudaGetLastError()); }",
            "ATen's CUDA stream without its header": self._HOST + "void g() { auto s = at::cuda::getCurrentCUDAStream(); }",
            "two sources that each include torch/extension.h": [self._HOST, "#include <torch/extension.h>\nvoid g() {}"],
        }
        for why, src in refused.items():
            with self.subTest(why):
                self.assertNotEqual(src, self._HOST)
                self.assertIsNone(aten_cuda_sources(src))
        self.assertIsNotNone(aten_cuda_sources([self._HOST, "__global__ void k() {}"]), "one include among several sources")
        with_header = "#include <ATen/cuda/Exceptions.h>\n" + self._HOST + "void g() { AT_CUDA_CHECK(cudaGetLastError()); }"
        self.assertIsNotNone(aten_cuda_sources(with_header), "the macro with its header is the unit's own include")

    def test_aten_tier_compiles_what_the_full_header_compiles(self):
        """The tier's block is real C++: g++ takes a typical host function
        with it as with torch/types.h, in less time."""
        import shutil
        import subprocess
        from kevolve._inline import aten_cuda_sources, lighten_cuda_sources
        cxx = shutil.which("g++") or shutil.which("c++")
        if cxx is None:
            self.skipTest("no C++ compiler")
        inc = os.path.join(os.path.dirname(torch.__file__), "include")
        secs = {}
        with tempfile.TemporaryDirectory() as d:
            for tier, src in (("aten", aten_cuda_sources(self._HOST)[0]), ("types.h", lighten_cuda_sources(self._HOST)[0])):
                path = os.path.join(d, tier.replace(".", "_") + ".cpp")
                with open(path, "w") as f:
                    f.write(src)
                t0 = time.monotonic()
                r = subprocess.run([cxx, "-std=c++17", "-fsyntax-only", "-I", inc, "-I", os.path.join(inc, "torch", "csrc", "api", "include"), path],
                                   capture_output=True, text=True, timeout=600)
                secs[tier] = time.monotonic() - t0
                self.assertEqual(r.returncode, 0, "%s tier: %s" % (tier, r.stderr[-3000:]))
        print("g++ -fsyntax-only: aten tier %.1f s, torch/types.h %.1f s" % (secs["aten"], secs["types.h"]))


if __name__ == "__main__":
    unittest.main()
