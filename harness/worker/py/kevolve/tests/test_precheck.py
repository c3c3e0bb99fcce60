"""main.cpp checked on its own before a CUDA build that cannot bind
(_precheck.py): it is the file torch writes, it stops only builds that
fail, and only for the reason it looks for."""

import os
import tempfile
import time
import unittest

import torch.utils.cpp_extension as ext

from kevolve import _precheck, load_inline_cached

DECL = "torch::Tensor fwd(torch::Tensor x);"


class Undeclared(unittest.TestCase):
    def test_names(self):
        cases = [
            ("declared", DECL, ["fwd"], []),
            ("empty sources", "", ["fwd"], ["fwd"]),
            ("a dict of docstrings", "", {"fwd": "doc", "bwd": "doc"}, ["fwd", "bwd"]),
            ("only in a comment", "// torch::Tensor fwd(torch::Tensor x);", "fwd", ["fwd"]),
            ("a longer name", "torch::Tensor fwd2(torch::Tensor x);", ["fwd"], ["fwd"]),
            ("one of two", DECL, ["fwd", "bwd"], ["bwd"]),
            ("sources not text", [3], ["fwd"], []),
        ]
        for name, cpp, fns, want in cases:
            with self.subTest(name):
                self.assertEqual(_precheck.undeclared(cpp, fns), want)


class TorchMainCpp(unittest.TestCase):
    def test_is_what_torch_writes(self):
        """torch's load_inline writes main.cpp before it builds: stop it
        there and compare."""
        class Stop(Exception):
            pass

        def stop(*a, **k):
            raise Stop()

        real = ext._jit_compile
        ext._jit_compile = stop
        try:
            for fns, eh, implicit in ((["fwd"], True, True), ({"fwd": "Forward", "bwd": "b"}, False, True), ("fwd", True, False)):
                with self.subTest(fns=fns, eh=eh, implicit=implicit), tempfile.TemporaryDirectory() as d:
                    with self.assertRaises(Stop):
                        ext.load_inline("probe", [DECL, "// more"], functions=fns, with_pytorch_error_handling=eh,
                                        no_implicit_headers=not implicit, build_directory=d)
                    with open(os.path.join(d, "main.cpp")) as f:
                        self.assertEqual(_precheck.torch_main_cpp([DECL, "// more"], fns, eh, implicit), f.read())
        finally:
            ext._jit_compile = real


class CheckMain(unittest.TestCase):
    """with_cuda=False: the flags of a C++ build, so the check runs on a
    machine without CUDA; cuda_sources only says there is a unit to spare."""

    def call(self, cpp, fns):
        return {"name": "probe", "cpp_sources": cpp, "cuda_sources": "__global__ void k() {}", "functions": fns,
                "with_cuda": False, "extra_cflags": [], "extra_include_paths": []}

    def test_stops_only_what_cannot_bind(self):
        self.assertIsNone(_precheck.check_main(self.call(DECL, ["fwd"])), "a declared function needs no check")
        self.assertIsNone(_precheck.check_main(dict(self.call("", ["fwd"]), cuda_sources=None)), "no CUDA unit to spare")
        errors = _precheck.check_main(self.call("", ["fwd"]))
        self.assertIsNotNone(errors)
        self.assertRegex(errors, "fwd.*not declared")
        # Declared where the reading does not see it: the check compiles
        # main.cpp, which builds, so the build goes on.
        macro = "#define KV_DECLARE(n) torch::Tensor n(torch::Tensor x);\nKV_DECLARE(fwd)"
        self.assertEqual(_precheck.undeclared(macro, ["fwd"]), ["fwd"])
        self.assertIsNone(_precheck.check_main(self.call(macro, ["fwd"])))
        # A module block of its own beside torch's: two PyInit_.
        own = DECL + '\nPYBIND11_MODULE(TORCH_EXTENSION_NAME, m) { m.def("fwd", &fwd); }'
        errors = _precheck.check_main(self.call(own, ["fwd"]))
        self.assertIsNotNone(errors)
        self.assertIn("redefinition", errors)


class FailsOnce(unittest.TestCase):
    def test_a_failed_build_fails_again_at_once(self):
        """A candidate that retries load_inline in every forward gets the
        same error without another compile (torch would compile again)."""
        with tempfile.TemporaryDirectory() as d:
            old = os.environ.get("TORCH_EXTENSIONS_DIR")
            os.environ["TORCH_EXTENSIONS_DIR"] = d
            try:
                errors = []
                for _ in range(2):
                    t = time.monotonic()
                    with self.assertRaisesRegex(RuntimeError, "Error building extension") as cm:
                        load_inline_cached("kv_fails_once", "", cuda_sources="__global__ void k() {}", functions=["fwd"],
                                           with_cuda=False)
                    errors.append((str(cm.exception), time.monotonic() - t))
            finally:
                os.environ.pop("TORCH_EXTENSIONS_DIR") if old is None else os.environ.__setitem__("TORCH_EXTENSIONS_DIR", old)
        self.assertEqual(errors[0][0], errors[1][0])
        self.assertIn("fwd", errors[0][0])
        self.assertLess(errors[1][1], 1.0, "the second call compiled again")


if __name__ == "__main__":
    unittest.main()
