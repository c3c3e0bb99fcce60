"""The side-by-side nvcc (kevolve/_nvcc.py) against the real one: same
objects, nvcc's own errors, and the real nvcc for every other shape of call.
Compiles only, so it runs without a GPU; the GPU tests launch what it builds."""

import os
import re
import subprocess
import sys
import tempfile
import unittest

from kevolve._cuda import find_nvcc
from kevolve.tests import require

SCRIPT = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "_nvcc.py")

GOOD = r'''
#include <cuda_runtime.h>
__global__ void twice(float* x, int n) { int i = blockIdx.x * blockDim.x + threadIdx.x; if (i < n) x[i] *= 2.0f; }
namespace { __global__ void hidden(float* x) { x[0] = 1.0f; } }
void launch(float* x, int n, cudaStream_t s) { twice<<<(n + 255) / 256, 256, 0, s>>>(x, n); hidden<<<1, 1, 0, s>>>(x); }
'''


def _global_symbols(obj: str) -> set[str]:
    """Defined global symbols, with the TU's module id (which names anonymous
    namespaces and differs between any two builds) masked."""
    out = subprocess.run(["nm", "-g", "--defined-only", obj], capture_output=True, text=True, check=True).stdout
    return {re.sub(r"_[0-9a-f]{8}_(\d+_\w+?)_[0-9a-f]{8}", r"_ID_\1_ID", line.split()[-1]) for line in out.splitlines() if line.strip()}


@require(find_nvcc() is not None, "no nvcc (NVIDIA's nvcc wheel or a CUDA toolkit)")
class SideBySideNvcc(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.mkdtemp(prefix="kv-nvcc-")
        self.env = dict(os.environ, KEVOLVE_REAL_NVCC=find_nvcc(), KEVOLVE_NVCC_TRACE="1")

    def write(self, name, text):
        p = os.path.join(self.dir, name)
        with open(p, "w") as f:
            f.write(text)
        return p

    def wrapper(self, *args):
        return subprocess.run([sys.executable, SCRIPT, *args], capture_output=True, text=True, env=self.env, cwd=self.dir)

    def test_same_object_as_nvcc(self):
        src = self.write("good.cu", GOOD)
        arch = "-gencode=arch=compute_80,code=sm_80"
        ours = os.path.join(self.dir, "ours.o")
        r = self.wrapper("-MD", "-MF", ours + ".d", arch, "-lineinfo", "--compiler-options", "-fPIC", "-std=c++17", "-c", src, "-o", ours)
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        self.assertIn("side by side", r.stderr)
        with open(ours + ".d") as f:
            self.assertIn("good.cu", f.read(), "ninja's depfile")
        ref = os.path.join(self.dir, "ref.o")
        subprocess.run([find_nvcc(), arch, "-lineinfo", "--compiler-options", "-fPIC", "-std=c++17", "-c", src, "-o", ref], check=True)
        want = _global_symbols(ref)
        self.assertIn("_Z6launchPfiP11CUstream_st", want)
        self.assertTrue(any("hidden" in s for s in want), want)
        self.assertEqual(_global_symbols(ours), want)

    def test_source_errors_are_nvccs(self):
        src = self.write("bad.cu", "__global__ void k(float* x) { x[0] = undefined_name; }\n")
        r = self.wrapper("-gencode=arch=compute_80,code=sm_80", "-c", src, "-o", os.path.join(self.dir, "bad.o"))
        self.assertNotEqual(r.returncode, 0)
        text = r.stdout + r.stderr
        self.assertIn("bad.cu(1): error", text)
        self.assertIn("undefined_name", text)
        self.assertNotIn("real nvcc", text, "a source error is reported, not retried")

    def test_other_shapes_go_to_real_nvcc(self):
        src = self.write("two.cu", GOOD)
        cases = {
            "two archs": ["-gencode=arch=compute_80,code=sm_80", "-gencode=arch=compute_90,code=sm_90", "-c", src, "-o", os.path.join(self.dir, "two.o")],
            "relocatable": ["-rdc=true", "-c", src, "-o", os.path.join(self.dir, "rdc.o")],
            "version": ["--version"],
        }
        for why, args in cases.items():
            with self.subTest(why):
                r = self.wrapper(*args)
                self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
                self.assertNotIn("side by side", r.stderr)
        self.assertTrue(os.path.exists(os.path.join(self.dir, "two.o")))


if __name__ == "__main__":
    unittest.main()
