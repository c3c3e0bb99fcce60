"""The loader base load_cuda and load_hip share (_loader.py), without a
compiler or a GPU: the build order (this process's modules, the disk cache,
each backend, the fallback to the next), the module's kernel lookup and the
launch geometry checks."""

import os
import tempfile
import unittest

from kevolve import CompileError
from kevolve import _loader
from kevolve._sig import cuda_kernels

SRC = 'extern "C" __global__ void k(float* y) { y[threadIdx.x] = 1.f; }\n'


class FakeModule(_loader.Module):
    def load_what(self, dev):
        return f"load on {dev}"


def backend(name, calls, image=b"IMG", error=None):
    def compile(src, arch, flags, key):
        calls.append(name)
        if error:
            raise CompileError(f"{name} failed", error)
        return image
    return _loader.Backend(name, lambda: name + " 1.0", compile)


class Build(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.old = os.environ.get("KEVOLVE_CACHE_DIR")
        os.environ["KEVOLVE_CACHE_DIR"] = self.tmp.name

    def tearDown(self):
        if self.old is None:
            os.environ.pop("KEVOLVE_CACHE_DIR", None)
        else:
            os.environ["KEVOLVE_CACHE_DIR"] = self.old
        self.tmp.cleanup()

    def build(self, backends, loaded, fallback=lambda e: "header" in e.log):
        kernels, mangled = cuda_kernels(SRC)

        def make(image, b, path, cached, seconds):
            return FakeModule(image, kernels, mangled, backend=b, arch="sm_90", compile_seconds=seconds,
                              cached=cached, path=path)
        return _loader.build("fake", ".bin", SRC, "sm_90", [], backends, loaded, make, fallback)

    def test_compiled_once_then_cached(self):
        calls, loaded = [], {}
        m = self.build([backend("rtc", calls)], loaded)
        self.assertEqual((m.backend, m.cached, m.kernels, calls), ("rtc", False, ["k"], ["rtc"]))
        self.assertIs(self.build([backend("rtc", calls)], loaded), m, "this process's module is reused")
        again = self.build([backend("rtc", calls)], {})
        self.assertEqual((again.cached, again.compile_seconds, calls), (True, 0.0, ["rtc"]), "the disk cache is read")
        with open(again.path, "rb") as f:
            self.assertEqual(f.read(), b"IMG")

    def test_fallback_to_the_next_backend(self):
        calls = []
        m = self.build([backend("rtc", calls, error="missing header"), backend("tool", calls, image=b"T")], {})
        self.assertEqual((m.backend, calls), ("tool", ["rtc", "tool"]))

    def test_an_error_the_next_cannot_fix_is_raised(self):
        calls = []
        with self.assertRaises(CompileError) as cm:
            self.build([backend("rtc", calls, error="syntax error"), backend("tool", calls)], {})
        self.assertIn("rtc failed", str(cm.exception))
        self.assertEqual(calls, ["rtc"])
        with self.assertRaises(CompileError):
            self.build([backend("tool", calls, error="missing header")], {})


class ModuleAndGeometry(unittest.TestCase):
    def test_kernel_lookup(self):
        kernels, mangled = cuda_kernels(SRC + "__global__ void cpp(float* y) {}\n")
        m = FakeModule(b"", kernels, mangled, backend="rtc", arch="sm_90", compile_seconds=0.0, cached=False, path="")
        self.assertIs(m.k, m["k"])
        with self.assertRaisesRegex(AttributeError, "C\\+\\+ linkage"):
            m.cpp  # noqa: B018
        with self.assertRaisesRegex(AttributeError, "found: \\['k'\\]"):
            m.nope  # noqa: B018

    def test_dim3(self):
        self.assertEqual(_loader.dim3(4, "grid"), (4, 1, 1))
        self.assertEqual(_loader.dim3((2, 3), "grid"), (2, 3, 1))
        for bad in ((0,), (1, 2, 3, 4), ()):
            with self.assertRaises(TypeError):
                _loader.dim3(bad, "block")


if __name__ == "__main__":
    unittest.main()
