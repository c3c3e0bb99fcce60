"""The precompiled header for load_inline's C++ unit: keyed by everything
that makes it valid, verified before use, rebuilt when a key input changes,
and what a candidate's source asks for read without running it.

The PCH of torch/extension.h takes a minute of CPU; these tests precompile a
small header under the same flags, which exercises the same keys, files and
gcc checks (the Go test TestLoadInlinePCHBuildsInSeconds uses the real one).
"""

import copy
import json
import os
import tempfile
import threading
import unittest

import torch

from kevolve import _bindcache, _bindings, _pch, _prepare

SMALL = "#include <vector>\n#include <string>\n"


def small(ident):
    ident = copy.deepcopy(ident)
    ident["header"] = SMALL
    return ident


class Identity(unittest.TestCase):
    def test_key_inputs(self):
        base = _pch.identity(False)
        self.assertIsNotNone(base)
        self.assertNotIn("-DTORCH_EXTENSION_NAME", " ".join(base["flags"]))
        self.assertIn("-std=c++17", base["flags"])
        self.assertEqual(base, _pch.identity(False), "the identity must be a pure function of its inputs")
        cases = {
            "extra_cflags": _pch.identity(False, ["-O2"]),
            "include paths": _pch.identity(False, [], ["/tmp"]),
        }
        old = torch.__version__
        torch.__version__ = "0.0.0+kevolve-test"
        try:
            cases["torch version"] = _pch.identity(False)
        finally:
            torch.__version__ = old
        os.environ["CXX"] = "g++"  # another compiler name, same binary family
        try:
            cxx = _pch.identity(False)
        finally:
            del os.environ["CXX"]
        for name, ident in cases.items():
            with self.subTest(name):
                self.assertNotEqual(_pch._dir_for(ident), _pch._dir_for(base), "%s must change the key" % name)
        self.assertEqual(cxx["compiler"]["cxx"], os.path.realpath(cxx["compiler"]["cxx"]))


class Store(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.addCleanup(self.tmp.cleanup)
        os.environ["KEVOLVE_CACHE_DIR"] = self.tmp.name

    def test_built_once_then_reused_and_verified_by_gcc(self):
        ident = small(_pch.identity(False))
        self.assertIsNone(_pch.lookup(ident))
        hdr, built = _pch.ensure(ident)
        self.assertTrue(built)
        self.assertEqual(_pch.lookup(ident), hdr)
        self.assertEqual(_pch.ensure(ident), (hdr, False))
        # gcc itself takes it under the same flags (-H: "! ...gch") and
        # refuses it under others: a PCH is never used where it does not fit.
        with tempfile.TemporaryDirectory() as t:
            ok, log = _pch._verify(ident["compiler"]["cxx"], ident["flags"], hdr, t)
            self.assertTrue(ok, log)
            ok, log = _pch._verify(ident["compiler"]["cxx"], ident["flags"] + ["-O2"], hdr, t)
            self.assertFalse(ok, "gcc used a PCH built without -O2 for an -O2 unit:\n" + log)

    def test_rebuilt_when_a_key_input_changes(self):
        ident = small(_pch.identity(False))
        hdr, _ = _pch.ensure(ident)
        changed = {"flags": small(_pch.identity(False, ["-O2"]))}
        newer = copy.deepcopy(ident)
        newer["torch"]["torch"] = "99.0.0"
        changed["torch version"] = newer
        compiler = copy.deepcopy(ident)
        compiler["compiler"]["version"] += " (rebuilt)"
        changed["compiler"] = compiler
        for name, other in changed.items():
            with self.subTest(name):
                self.assertIsNone(_pch.lookup(other), "a PCH for another %s was offered" % name)
                hdr2, built = _pch.ensure(other)
                self.assertTrue(built)
                self.assertNotEqual(os.path.dirname(hdr2), os.path.dirname(hdr))
        self.assertEqual(_pch.lookup(ident), hdr, "the first identity's PCH must still serve it")

    def test_stale_or_tampered_never_used(self):
        ident = small(_pch.identity(False))
        hdr, _ = _pch.ensure(ident)
        d = os.path.dirname(hdr)
        meta = os.path.join(d, "identity.json")
        with open(meta) as f:
            good = json.load(f)
        tampered = {
            "identity of another torch": lambda m: m["identity"]["torch"].update(torch="1.0"),
            "unverified": lambda m: m.update(verified=False),
            "another .gch": lambda m: m.update(gch=[m["gch"][0] + 1, m["gch"][1]]),
        }
        for name, edit in tampered.items():
            with self.subTest(name):
                m = copy.deepcopy(good)
                edit(m)
                with open(meta, "w") as f:
                    json.dump(m, f)
                self.assertIsNone(_pch.lookup(ident), name)
        # ensure replaces the stale entry with a fresh, verified build.
        hdr2, built = _pch.ensure(ident)
        self.assertTrue(built)
        self.assertEqual(_pch.lookup(ident), hdr2)
        os.utime(hdr2 + ".gch", (1, 1))  # the file changed after it was verified
        self.assertIsNone(_pch.lookup(ident))

    def test_evicts_the_least_recently_used_idle_ones(self):
        base = _pch.identity(False)
        idents = []
        for i in range(3):
            ident = small(base)
            ident["header"] += "// %d\n" % i
            idents.append(ident)
        hdrs = [_pch.ensure(i)[0] for i in idents[:2]]
        os.utime(os.path.dirname(hdrs[0]), (1, 1))  # idle for long
        old = _pch._KEEP
        _pch._KEEP = 1
        try:
            _pch.ensure(idents[2])
        finally:
            _pch._KEEP = old
        self.assertIsNone(_pch.lookup(idents[0]), "the idle PCH was kept")
        self.assertIsNotNone(_pch.lookup(idents[1]), "a PCH used in the last hour was evicted")
        self.assertIsNotNone(_pch.lookup(idents[2]))

    def test_shared_folder(self):
        ident = small(_pch.identity(False))
        shared = os.path.join(self.tmp.name, "shared-pch")
        os.environ["KEVOLVE_PCH_DIR"] = shared
        try:
            hdr, _ = _pch.ensure(ident)
            self.assertEqual(os.path.dirname(os.path.dirname(hdr)), shared)
            os.environ["KEVOLVE_CACHE_DIR"] = os.path.join(self.tmp.name, "another-cache")
            self.assertEqual(_pch.lookup(ident), hdr, "another cache must find the shared PCH")
        finally:
            del os.environ["KEVOLVE_PCH_DIR"]
        self.assertIsNone(_pch.lookup(ident), "without KEVOLVE_PCH_DIR the cache's own folder is used")

    def test_a_waiter_never_builds_what_the_builder_failed_to(self):
        """Callers that waited on another's build take its outcome: when it
        failed, none of them spends the build's minutes again in turn. A
        later caller that waited on nobody does try it."""
        ident = small(_pch.identity(False))
        builds, refused = [], threading.Event()
        real_build, real_lock = _pch._build, _pch.lock_file

        def lock_file(f, wait):
            got = real_lock(f, wait)
            if not got:
                refused.set()
            return got

        _pch._build = lambda i, d: builds.append(d)
        _pch.lock_file = lock_file
        self.addCleanup(setattr, _pch, "_build", real_build)
        self.addCleanup(setattr, _pch, "lock_file", real_lock)
        got = []
        with open(_pch._dir_for(ident) + ".lock", "w") as builder:
            real_lock(builder, True)  # a build in progress elsewhere
            waiter = threading.Thread(target=lambda: got.append(_pch.ensure(ident, wait=True)))
            waiter.start()
            self.assertTrue(refused.wait(60), "the waiter never found the build in progress")
        # The builder let go with nothing built.
        waiter.join(60)
        self.assertEqual(got, [(None, False)])
        self.assertEqual(builds, [], "a waiter built after the build it waited for")
        self.assertRaises(RuntimeError, _pch.ensure, ident)  # nobody in the way: built (here, to nothing)
        self.assertEqual(len(builds), 1)

    def test_disabled(self):
        ident = small(_pch.identity(False))
        _pch.ensure(ident)
        os.environ["KEVOLVE_PCH"] = "0"
        try:
            self.assertIsNone(_pch.lookup(ident))
        finally:
            del os.environ["KEVOLVE_PCH"]


class Plan(unittest.TestCase):
    def test_builds_in(self):
        cases = [
            ("no load_inline", "import torch\n", []),
            ("plain C++", "from torch.utils.cpp_extension import load_inline\nm = load_inline('m', cpp_sources=s, functions=['f'])\n",
             [(False, (), ())]),
            ("CUDA with -O3 through a name", "import torch.utils.cpp_extension as e\nF = ['-O3']\n"
             "m = e.load_inline(name='m', cpp_sources=a, cuda_sources=b, extra_cflags=F, extra_cuda_cflags=['-O3'])\n",
             [(True, ("-O3",), ())]),
            ("flags not readable: the default set", "m = load_inline('m', cpp_sources=s, extra_cflags=make_flags())\n",
             [(False, (), ())]),
            ("unsafe flag: none", "m = load_inline('m', cpp_sources=s, extra_cflags=['-fplugin=/tmp/x.so'])\n", []),
            ("flags as one string (torch splits it into characters): none",
             "m = load_inline('m', cpp_sources=s, extra_cflags='-O3')\n", []),
            ("include paths: none", "m = load_inline('m', cpp_sources=s, extra_include_paths=['/tmp'])\n", []),
            ("two calls, one set", "a = load_inline('a', cpp_sources=s)\nb = load_inline('b', cpp_sources=t)\n", [(False, (), ())]),
            ("not Python", "load_inline(((", [(False, (), ())]),
        ]
        for name, code, want in cases:
            with self.subTest(name):
                self.assertEqual(_prepare.builds_in(code), want)

    def test_calls_in_reads_what_the_bindings_need(self):
        code = ("from torch.utils.cpp_extension import load_inline\nSRC = 'torch::Tensor f(torch::Tensor x);'\n"
                "a = load_inline('a', SRC, cuda_src, ['f'])\n"
                "b = load_inline(name='b', cpp_sources=[SRC], functions={'g': 'doc'}, with_pytorch_error_handling=False)\n"
                "c = load_inline(name='c', cpp_sources=make(), functions=names, with_pytorch_error_handling=flag)\n")
        got = [(c["build"][0], c["cpp_sources"], c["functions"], c["error_handling"]) for c in _prepare.calls_in(code)]
        self.assertEqual(got, [
            (True, "torch::Tensor f(torch::Tensor x);", ["f"], True),
            (False, ["torch::Tensor f(torch::Tensor x);"], {"g": "doc"}, False),
            (False, None, None, None),
        ])
        self.assertIsNotNone(_prepare._bindings_plan(_prepare.calls_in(code)[0]))
        self.assertIsNone(_prepare._bindings_plan(_prepare.calls_in(code)[2]))

    def test_a_build_step_makes_a_bounded_amount(self):
        """However many load_inline calls a candidate's source makes, its
        build step makes at most a few PCHs and bindings objects."""
        calls = "".join("m%d = load_inline('m%d', cpp_sources='torch::Tensor f%d(torch::Tensor x);', functions=['f%d'],"
                        " extra_cflags=['-DK%d'])\n" % ((i,) * 5) for i in range(20))
        made = []

        def make(call, out):
            made.append(call)
            out["pch_built"] += 2
            out["bindings_built"] += 1
            return {"call": len(made)}

        real = _prepare._prepare_call
        _prepare._prepare_call = make
        try:
            out = _prepare.prepare({"candidate": calls})
        finally:
            _prepare._prepare_call = real
        self.assertEqual(len(made), 2)
        self.assertIn("at most", out["stopped"])

    def test_a_build_without_the_pch_yields_the_cpu_to_its_builder(self):
        """A build step whose PCH another step is making builds the
        extension at a lower CPU priority (its compilers inherit it); one
        that has its PCHs keeps the priority it had."""
        code = "m = load_inline('m', cpp_sources='torch::Tensor f(torch::Tensor x);', functions=['f'], cuda_sources='')\n"
        cases = {"PCH being built elsewhere": {"pch": _prepare._BUILDING_ELSEWHERE},
                 "types PCH being built elsewhere": {"pch": "/pch/a", "types_pch": _prepare._BUILDING_ELSEWHERE},
                 "PCHs ready": {"pch": "/pch/a", "types_pch": "/pch/b"}}
        for name, entry in cases.items():
            with self.subTest(name):
                r, w = os.pipe()
                pid = os.fork()
                if pid == 0:  # niceness cannot be lowered back: a child of its own
                    os.close(r)
                    _prepare._prepare_call = lambda call, out, e=entry: dict(e)
                    _prepare._build_extension = lambda lit, e, out: os.write(w, b"%d" % os.getpriority(os.PRIO_PROCESS, 0))
                    _prepare.prepare({"candidate": code, "extensions": True})
                    os._exit(0)
                os.close(w)
                with os.fdopen(r) as f:
                    nice = f.read()
                _, status = os.waitpid(pid, 0)
                self.assertEqual(status, 0)
                before = os.getpriority(os.PRIO_PROCESS, 0)
                want = max(before, _prepare._YIELD_NICENESS) if "elsewhere" in name else before
                self.assertEqual(nice, str(want))

    def test_sources_bound_in_the_method_that_loads(self):
        code = ("class ModelNew:\n    def _load(self):\n        cpp = 'torch::Tensor f(torch::Tensor x);'\n"
                "        fns = ['f']\n        self.k = load_inline('k', cpp_sources=cpp, cuda_sources=cu, functions=fns)\n"
                "    def other(self):\n        fns = ['g']\n")
        c = _prepare.calls_in(code)[0]
        self.assertEqual(c["cpp_sources"], "torch::Tensor f(torch::Tensor x);")
        self.assertIsNone(c["functions"], "a name bound twice in the file could mean either value")

    def test_plan_for_bindings_moved_out_of_the_cuda_source(self):
        cu = ("#include <torch/extension.h>\n__global__ void k(float* x) {}\n"
              "torch::Tensor fwd(torch::Tensor x) { return x; }\n"
              'PYBIND11_MODULE(TORCH_EXTENSION_NAME, m) { m.def("forward", &fwd, "fwd"); }\n')
        code = "CU = %r\nm = load_inline(name='m', cpp_sources='', cuda_sources=CU)\n" % cu
        got = _prepare._bindings_plan(_prepare.calls_in(code)[0])
        want = _bindcache.plan_for_module_block(_bindings.split_bindings(cu, "")[1])
        self.assertIsNotNone(got)
        self.assertEqual(got, want[0], "the harness must build the plan the candidate's build will look for")


if __name__ == "__main__":
    unittest.main()
