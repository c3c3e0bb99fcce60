"""Unit tests of the signature parser (python -m unittest kevolve.tests.test_sig)."""

import unittest

from kevolve._sig import c_functions, cuda_kernels


def params(f):
    return [(p.name, p.base, p.pointer) for p in f.params]


class CudaKernels(unittest.TestCase):
    CASES = [
        ("plain", 'extern "C" __global__ void k(float* x, int n) {}',
         {"k": [("x", "float", 1), ("n", "int", 0)]}),
        ("qualifiers", 'extern "C" __global__ void k(const float* __restrict__ x, float * const __restrict__ y,'
         ' const unsigned int n, volatile long long m) { }',
         {"k": [("x", "float", 1), ("y", "float", 1), ("n", "unsigned", 0), ("m", "long long", 0)]}),
        ("block", 'extern "C" {\n__global__ void a(double* p) {}\n__device__ int h(int x) { return x; }\n'
         '__global__ void b(std::int64_t n, size_t s, int v[]) {}\n}',
         {"a": [("p", "double", 1)], "b": [("n", "int64_t", 0), ("s", "size_t", 0), ("v", "int", 1)]}),
        ("comments", '// extern "C" __global__ void fake(int x) {}\n/* extern "C" __global__ void f2() {} */\n'
         'extern "C" __global__ void real(/* the input */ float *x /* , int n */) {}',
         {"real": [("x", "float", 1)]}),
        ("templates and structs", 'template <typename T, int N> __global__ void t(T* x) { if (N < 2) {} }\n'
         'struct P { float a; int b; };\nnamespace ns { struct Q { int c; }; }\n'
         'extern "C" __global__ void __launch_bounds__(256, 2) k(float4* v, const __half* h, __nv_bfloat16* b) '
         '{ struct { int z; } s = {1}; }',
         {"k": [("v", "float4", 1), ("h", "__half", 1), ("b", "__nv_bfloat16", 1)]}),
        ("preprocessor", '#define K(x) extern "C" __global__ void x(int)\n#include <cuda_fp16.h>\n#if 0\n#endif\n'
         'extern "C" __global__ void k(void) {}',
         {"k": []}),
        ("unnamed and pointer-to-pointer", 'extern "C" __global__ void k(float*, int, float** pp) {}',
         {"k": [("", "float", 1), ("", "int", 0), ("pp", "float", 2)]}),
        ("strings with braces", 'extern "C" __global__ void k(int n) { printf("}{ %d", n); char c = \'}\'; }\n'
         'extern "C" __global__ void k2(unsigned long n) {}',
         {"k": [("n", "int", 0)], "k2": [("n", "unsigned long", 0)]}),
        ("no kernels", '__device__ float f(float x) { return x; }', {}),
    ]

    def test_cases(self):
        for name, src, want in self.CASES:
            with self.subTest(name):
                ks, _ = cuda_kernels(src)
                self.assertEqual({k: params(f) for k, f in ks.items()}, want)

    def test_mangled_kernels_are_reported(self):
        ks, mangled = cuda_kernels('__global__ void cpp(int n) {}\nextern "C" __global__ void c(int n) {}')
        self.assertEqual(list(ks), ["c"])
        self.assertEqual(mangled, ["cpp"])


class CFunctions(unittest.TestCase):
    CASES = [
        ("basic", '#include <stdint.h>\nvoid scale(const float* restrict x, float* y, float a, int64_t n) {\n'
         '  for (int64_t i = 0; i < n; ++i) y[i] = a * x[i];\n}\n',
         {"scale": [("x", "float", 1), ("y", "float", 1), ("a", "float", 0), ("n", "int64_t", 0)]}),
        ("static and inline are skipped", 'static int helper(int x) { return x; }\n'
         'static inline float h2(float x) { return x; }\ninline int c99(int x) { return x; }\n'
         'double dot(const double *a, const double *b, long n) { return 0; }',
         {"dot": [("a", "double", 1), ("b", "double", 1), ("n", "long", 0)]}),
        ("globals and prototypes", 'int table[4] = {1, 2, 3, 4};\nvoid proto(int);\n'
         'struct S { int a; } s = { 3 };\nunsigned long long f(unsigned char* p, short k, _Bool b) { return 1; }',
         {"f": [("p", "unsigned char", 1), ("k", "short", 0), ("b", "_Bool", 0)]}),
    ]

    def test_cases(self):
        for name, src, want in self.CASES:
            with self.subTest(name):
                fs = c_functions(src)
                self.assertEqual({k: params(f) for k, f in fs.items()}, want)

    def test_return_types(self):
        fs = c_functions('unsigned long long f(void) { return 1; }\nfloat* g(void) { return 0; }')
        self.assertEqual((fs["f"].ret, fs["f"].ret_pointer), ("unsigned long long", 0))
        self.assertEqual((fs["g"].ret, fs["g"].ret_pointer), ("float", 1))


if __name__ == "__main__":
    unittest.main()
