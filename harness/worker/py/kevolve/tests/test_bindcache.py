"""load_inline's bindings compiled once per signature set (_bindcache.py):
what shares an object and what never does, the harness's store, and real
builds that use it, or fall back to torch's own bindings where it does not
fit. The Go test TestLoadInlinePCHBuildsInSeconds measures the whole path
with the real precompiled header."""

import contextlib
import inspect
import io
import json
import os
import subprocess
import tempfile
import unittest

import torch

from kevolve import _bindcache, _inline, _pch

DECL = "torch::Tensor %s(torch::Tensor a, torch::Tensor b);\n"


class Plans(unittest.TestCase):
    def test_shared_by_signature_only(self):
        base = _bindcache.plan(DECL % "axpb", ["axpb"])
        self.assertIsNotNone(base)
        same = {
            "another name and docstring": _bindcache.plan(DECL % "fused", {"fused": "fused add"}),
            "parameter names, a definition": _bindcache.plan(
                "torch::Tensor g(torch::Tensor x, torch::Tensor) { return x; }", "g"),
            "static inline, a comment, a default": _bindcache.plan(
                "// g(int)\nstatic inline torch::Tensor g(torch::Tensor x, torch::Tensor y = torch::Tensor()) { return x; }", ["g"]),
            "declared twice": _bindcache.plan((DECL % "h") * 2, ["h"]),
        }
        for name, p in same.items():
            with self.subTest(name):
                self.assertIsNotNone(p)
                self.assertEqual(p.key, base.key)
                self.assertEqual(p.unit, base.unit)
        differ = {
            "a parameter type": _bindcache.plan("torch::Tensor f(torch::Tensor a, int64_t n);", ["f"]),
            "const reference": _bindcache.plan("torch::Tensor f(const torch::Tensor& a, torch::Tensor b);", ["f"]),
            "the return type": _bindcache.plan("at::Tensor f(torch::Tensor a, torch::Tensor b);", ["f"]),
            "no error handling": _bindcache.plan(DECL % "f", ["f"], error_handling=False),
            "a using-directive": _bindcache.plan("using namespace torch;\n" + DECL % "f", ["f"]),
            "two functions": _bindcache.plan(DECL % "f" + DECL % "g", ["f", "g"]),
        }
        for name, p in differ.items():
            with self.subTest(name):
                self.assertIsNotNone(p)
                self.assertNotEqual(p.key, base.key)
        self.assertIn("torch::wrap_pybind_function(*f0)", base.unit)
        self.assertNotIn("wrap_pybind_function", differ["no error handling"].unit)
        self.assertIn("using namespace torch;", differ["a using-directive"].unit)
        self.assertIn('"fused add"', same["another name and docstring"].trampoline)
        self.assertIn("f0 = kevolve_bind_fn_%s(fused);" % base.key, same["another name and docstring"].trampoline)

    def test_not_shared(self):
        cases = {
            "a type of its own": ("struct Box { float v; };\nBox f(Box b);", ["f"]),
            "overloads": ("torch::Tensor f(torch::Tensor a);\ntorch::Tensor f(int64_t n);", ["f"]),
            "a template": ("template <typename T> T f(T x);", ["f"]),
            "a macro over a type word": ("#define float double\ntorch::Tensor f(float s);", ["f"]),
            "a typedef over a type word": ("typedef double float;\ntorch::Tensor f(float s);", ["f"]),
            "an alias type": ("using T = torch::Tensor;\nT f(T x);", ["f"]),
            "not declared": ("torch::Tensor g(torch::Tensor a);", ["f"]),
            "in a namespace": ("namespace k { torch::Tensor f(torch::Tensor a); }", ["f"]),
            "a function pointer parameter": ("torch::Tensor f(torch::Tensor (*g)(torch::Tensor));", ["f"]),
            "its own module block": (DECL % "f" + "PYBIND11_MODULE(TORCH_EXTENSION_NAME, m) {}", ["f"]),
            "no functions": (DECL % "f", []),
            "a qualified name": (DECL % "f", ["k::f"]),
            "sources not text": ([DECL % "f", 3], ["f"]),
        }
        for name, (src, fns) in cases.items():
            with self.subTest(name):
                self.assertIsNone(_bindcache.plan(src, fns))


class OverloadedNames(unittest.TestCase):
    def test_a_name_with_overloads_does_not_compile(self):
        """torch's wrap_pybind_function(f) and pybind11's m.def(name, &f)
        deduce f's type, so a name with several overloads (a candidate's
        relu beside torch::relu under `using namespace torch;`) does not
        build with torch's bindings; the table takes functions the same way,
        so it does not build either (it must not pick one)."""
        p = _bindcache.plan("int relu(int x);", ["relu"])
        helper = next(line for line in p.trampoline.splitlines() if line.startswith("template"))
        with tempfile.TemporaryDirectory() as t:
            for name, decls, ok in (("one function", "int relu(int x);", True),
                                    ("overloads", "int relu(int x);\ndouble relu(double x);", False)):
                with self.subTest(name):
                    src = os.path.join(t, "probe.cpp")
                    with open(src, "w") as f:
                        f.write("%s\n%s\nint (*pick())(int) { return kevolve_bind_fn_%s(relu); }\n" % (decls, helper, p.key))
                    r = subprocess.run(["c++", "-std=c++17", "-fsyntax-only", src], capture_output=True, text=True, timeout=120)
                    self.assertEqual(r.returncode == 0, ok, r.stderr)


class ModuleBlocks(unittest.TestCase):
    def test_own_block(self):
        src = DECL % "fwd" + (
            'PYBIND11_MODULE(TORCH_EXTENSION_NAME, mod) {\n'
            '  mod.def("forward", &fwd, "Forward (CUDA) \\"fast\\"");\n  mod.def("fwd2", fwd);\n}\n')
        p, rest = _bindcache.plan_for_module_block(["// first\n", src])
        self.assertEqual(rest, ["// first\n", DECL % "fwd" + "\n"])
        self.assertIn('{"forward", "fwd2"}', p.trampoline)
        self.assertIn('{"Forward (CUDA) \\"fast\\"", ""}', p.trampoline)
        self.assertIn("f0 = kevolve_bind_fn_%s(fwd);" % p.key, p.trampoline)
        self.assertIn("f1 = kevolve_bind_fn_%s(fwd);" % p.key, p.trampoline)
        # the calls the block made, without torch's wrapper, the second without a docstring
        self.assertIn("m.def(names[0], f0, docs[0]);", p.unit)
        self.assertIn("m.def(names[1], f1);", p.unit)
        self.assertNotEqual(p.key, _bindcache.plan(DECL % "fwd", ["fwd"]).key)

    def test_not_plain(self):
        cases = {
            "py::arg": 'PYBIND11_MODULE(TORCH_EXTENSION_NAME, m) { m.def("f", &f, py::arg("x")); }',
            "a lambda": 'PYBIND11_MODULE(TORCH_EXTENSION_NAME, m) { m.def("f", [](torch::Tensor x) { return x; }); }',
            "more than m.def": 'PYBIND11_MODULE(TORCH_EXTENSION_NAME, m) { m.doc() = "x"; m.def("f", &f); }',
            "another module name": 'PYBIND11_MODULE(mine, m) { m.def("f", &f); }',
            "two blocks": 'PYBIND11_MODULE(TORCH_EXTENSION_NAME, m) { m.def("f", &f); }\n' * 2,
            "adjacent literals": 'PYBIND11_MODULE(TORCH_EXTENSION_NAME, m) { m.def("f" "g", &f); }',
            "a name not a literal": 'PYBIND11_MODULE(TORCH_EXTENSION_NAME, m) { m.def(NAME, &f); }',
            "no block": "",
        }
        for name, block in cases.items():
            with self.subTest(name):
                self.assertIsNone(_bindcache.plan_for_module_block([DECL % "f" + block]))


def ident_for_tests():
    """A PCH identity with a small header: the shared unit includes
    torch/extension.h itself, so it compiles the same, only slower."""
    ident = _pch.identity(False)
    ident["header"] = "#include <vector>\n"
    return ident


class Store(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.addCleanup(self.tmp.cleanup)
        os.environ["KEVOLVE_CACHE_DIR"] = self.tmp.name
        self.addCleanup(os.environ.pop, "KEVOLVE_CACHE_DIR", None)
        self.ident = ident_for_tests()
        self.hdr, _ = _pch.ensure(self.ident)
        self.dir = os.path.dirname(self.hdr)

    def test_built_once_verified_and_failures_remembered(self):
        # Units small enough to compile in a moment: the store does not
        # read them.
        good = _bindcache.Plan("k" * 20, "int kevolve_store_probe() { return 1; }\n", "")
        self.assertIsNone(_bindcache.lookup(self.dir, good))
        obj, built = _bindcache.ensure(self.ident, self.hdr, good)
        self.assertTrue(built)
        self.assertEqual(_bindcache.lookup(self.dir, good), obj)
        self.assertEqual(_bindcache.ensure(self.ident, self.hdr, good), (obj, False))
        other = _bindcache.Plan(good.key, "int kevolve_store_probe() { return 2; }\n", "")
        self.assertIsNone(_bindcache.lookup(self.dir, other), "an object for another unit under the same key was offered")
        os.utime(obj, (1, 1))
        self.assertIsNone(_bindcache.lookup(self.dir, good), "an object changed after its build was offered")

        bad = _bindcache.Plan("b" * 20, "this is not C++\n", "")
        self.assertEqual(_bindcache.ensure(self.ident, self.hdr, bad), (None, True))
        self.assertTrue(_bindcache.failed(self.dir, bad))
        self.assertEqual(_bindcache.ensure(self.ident, self.hdr, bad), (None, False), "a failed unit was compiled again")
        with open(os.path.join(self.dir, "bind-%s.json" % bad.key)) as f:
            self.assertIn("error", json.load(f)["log"])


class Eviction(unittest.TestCase):
    def test_least_recently_used_go_first(self):
        with tempfile.TemporaryDirectory() as d:
            for i, key in enumerate(("a" * 20, "b" * 20, "c" * 20)):
                for ext in (".o", ".json", ".lock"):
                    path = os.path.join(d, "bind-%s%s" % (key, ext))
                    open(path, "w").close()
                    os.utime(path, (1000 + i, 1000 + i))
            os.utime(os.path.join(d, "bind-%s.json" % ("a" * 20)), (5000, 5000))  # asked for lately
            old = _bindcache.KEEP
            _bindcache.KEEP = 2
            try:
                _bindcache._evict(d, keep="c" * 20)
            finally:
                _bindcache.KEEP = old
            left = sorted(f for f in os.listdir(d) if f.endswith(".json"))
            self.assertEqual(left, ["bind-%s.json" % k for k in ("a" * 20, "c" * 20)],
                             "the one just built stays, then the one asked for lately; the oldest goes")
            self.assertFalse(os.path.exists(os.path.join(d, "bind-%s.o" % ("b" * 20))))


TWICE = """
torch::Tensor twice(torch::Tensor x) {
    TORCH_CHECK(x.dim() == 1, "twice wants a 1-D tensor, got ", x.dim(), " dims");
    return x * 2;
}
"""
# What the shared bindings read is a declaration the compiler never sees:
# the function main.cpp defines takes another argument.
MISREAD = """
#if 0
torch::Tensor twice(torch::Tensor x);
#endif
#define KEVOLVE_TEST_DEFINE torch::Tensor twice(torch::Tensor x, double s) { return x * s; }
KEVOLVE_TEST_DEFINE
"""
# ATen beyond the per-operator headers, which torch/types.h has.
PARALLEL_FOR = """
#include <ATen/Parallel.h>
torch::Tensor twice(torch::Tensor x) {
    auto y = torch::empty_like(x);
    float* py = y.data_ptr<float>();
    const float* px = x.data_ptr<float>();
    at::parallel_for(0, x.numel(), 1024, [&](int64_t b, int64_t e) { for (int64_t i = b; i < e; ++i) py[i] = 2 * px[i]; });
    return y;
}
"""


class Builds(unittest.TestCase):
    """Real load_inline builds through _inline._call with the shared
    bindings in a PCH folder (a small PCH: the builds parse torch's headers
    themselves, as they would without the harness's)."""

    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.TemporaryDirectory()
        cls.old = {k: os.environ.get(k) for k in ("KEVOLVE_CACHE_DIR", "TORCH_EXTENSIONS_DIR")}
        os.environ["KEVOLVE_CACHE_DIR"] = cls.tmp.name
        os.environ["TORCH_EXTENSIONS_DIR"] = os.path.join(cls.tmp.name, "torch_extensions")
        ident = ident_for_tests()
        cls.hdr, _ = _pch.ensure(ident)
        cls.plan = _bindcache.plan(TWICE, ["twice"])
        cls.obj, _ = _bindcache.ensure(ident, cls.hdr, cls.plan)

    @classmethod
    def tearDownClass(cls):
        for k, v in cls.old.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
        cls.tmp.cleanup()

    def build(self, name, src, light):
        orig = _inline._original()
        bound = inspect.signature(orig).bind(name, cpp_sources=src, functions=["twice"])
        err = io.StringIO()
        # The small PCH stands in for torch/types.h's: main.cpp includes
        # torch/types.h after it, as it does after the real one.
        with contextlib.redirect_stderr(err):
            mod = _inline._call(orig, bound, (self.hdr, self.hdr if light else None))
        with open(os.path.join(os.environ["TORCH_EXTENSIONS_DIR"], name, "main.cpp")) as f:
            return mod, f.read(), err.getvalue()

    def test_shared_bindings(self):
        self.assertIsNotNone(self.obj, "the shared unit did not compile")
        for name, src, light in (("kv_bind_light", TWICE, True), ("kv_bind_parallel_for", PARALLEL_FOR, True),
                                 ("kv_bind_no_types_pch", TWICE, False)):
            with self.subTest(name):
                mod, main, log = self.build(name, src, light)
                self.assertIn("kevolve_bind_table_" + self.plan.key, main, log)
                self.assertNotIn("PYBIND11_MODULE", main)
                self.assertEqual("torch/extension.h" not in main.replace("was torch/extension.h", ""), light, main)
                x = torch.arange(4.0)
                self.assertTrue(torch.equal(mod.twice(x), x * 2))
                self.assertEqual(mod.__name__, name)
                self.assertTrue(mod.twice.__doc__.startswith("twice(arg0: torch.Tensor) -> torch.Tensor"), mod.twice.__doc__)
                if src is TWICE:
                    # torch's error handling wraps the function, as in the
                    # bindings torch writes: a C++ check is a Python error
                    # with its message.
                    with self.assertRaisesRegex(RuntimeError, "twice wants a 1-D tensor, got 2 dims"):
                        mod.twice(torch.ones(2, 2))
                self.assertNotIn("building it as torch writes it", log)

    def test_misread_signature_builds_with_torchs_bindings(self):
        mod, main, log = self.build("kv_bind_misread", MISREAD, True)
        self.assertIn("building it as torch writes it", log)
        self.assertIn("torch::wrap_pybind_function(twice)", main)
        x = torch.arange(4.0)
        self.assertTrue(torch.equal(mod.twice(x, 3.0), x * 3))


if __name__ == "__main__":
    unittest.main()
