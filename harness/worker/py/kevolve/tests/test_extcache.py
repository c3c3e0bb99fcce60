"""The harness-built extension cache (_extcache): the build step builds a
literal load_inline call without importing it; a candidate's process loads
that build from a checked copy of its own; a library that no longer
matches its manifest is built again, never loaded."""

import os
import subprocess
import sys
import tempfile
import textwrap
import unittest

from kevolve import _prepare

# The evaluation device's compute capability, which the harness passes to
# the build step (an A10's here: not the build step's default).
ARCH = "8.6"

# No torch headers and no bindings: each build takes a second or two. Its
# static initializer says when it is loaded (the build step must not).
CANDIDATE = textwrap.dedent('''
    import os
    from torch.utils.cpp_extension import load_inline
    SRC = """
    #include <cstdio>
    extern "C" int kevolve_ext_add(int a, int b) { return a + b + %d; }
    __attribute__((constructor)) static void kevolve_ext_loaded() { puts("LOADED"); fflush(stdout); }
    """
    lib = load_inline("kvext", cpp_sources=SRC, no_implicit_headers=True, is_python_module=False)
    print("LIB", lib, flush=True)
''')


class HarnessBuiltExtensions(unittest.TestCase):
    def setUp(self):
        tmp = tempfile.TemporaryDirectory()
        self.addCleanup(tmp.cleanup)
        self.shared = os.path.join(tmp.name, "kernels", "torch_extensions")
        self.private = os.path.join(tmp.name, "job", "torch_extensions")
        os.makedirs(self.shared)
        os.makedirs(self.private)

    def prepare(self, source):
        """The build step in a process of its own, as the harness runs it."""
        code = "import json, sys; from kevolve import _prepare; print(json.dumps(_prepare.prepare(json.load(sys.stdin))))"
        env = dict(os.environ, TORCH_EXTENSIONS_DIR=self.shared, KEVOLVE_PCH="0")
        env.pop("KEVOLVE_SHARED_EXT_DIR", None)
        env.pop("TORCH_CUDA_ARCH_LIST", None)
        import json
        r = subprocess.run([sys.executable, "-c", code], input=json.dumps({"candidate": source, "extensions": True, "arch": ARCH}),
                           capture_output=True, text=True, env=env, timeout=600, cwd=os.path.dirname(os.path.dirname(_prepare.__file__)))
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertNotIn("LOADED", r.stdout, "the build step ran the extension's code")
        return json.loads(r.stdout.strip().splitlines()[-1])

    def candidate(self, source):
        """The candidate's process: its own extension folder, the shared one read."""
        code = "from kevolve import _inline; _inline.patch_load_inline(); exec(open(%r).read())"
        path = os.path.join(os.path.dirname(self.private), "cand.py")
        with open(path, "w") as f:
            f.write(source)
        # The device's arch, as the candidate's torch reads it there.
        env = dict(os.environ, TORCH_EXTENSIONS_DIR=self.private, KEVOLVE_SHARED_EXT_DIR=self.shared, KEVOLVE_PCH="0",
                   TORCH_CUDA_ARCH_LIST=ARCH)
        r = subprocess.run([sys.executable, "-c", code % path], capture_output=True, text=True, env=env, timeout=600,
                           cwd=os.path.dirname(os.path.dirname(_prepare.__file__)))
        self.assertEqual(r.returncode, 0, r.stderr)
        return r.stdout

    def test_built_once_loaded_from_a_checked_copy(self):
        src = CANDIDATE % 1
        first = self.prepare(src)
        self.assertEqual(first["extensions_built"], 1, first)
        libs = [os.path.join(d, f) for d, _, fs in os.walk(self.shared) for f in fs if f.endswith(".so")]
        self.assertEqual(len(libs), 1, libs)
        self.assertTrue(os.path.exists(libs[0] + ".sha256"))
        again = self.prepare(src)
        self.assertEqual(again["extensions_built"], 0, "built again: %s" % again)

        out = self.candidate(src)
        self.assertIn("LOADED", out)
        lib = out.split("LIB ", 1)[1].split()[0]
        self.assertTrue(lib.startswith(self.private), "loaded %s, not its own copy" % lib)
        with open(lib, "rb") as mine, open(libs[0], "rb") as built:
            self.assertEqual(mine.read(), built.read())
        self.assertFalse([f for _, _, fs in os.walk(self.private) for f in fs if f.endswith(".ninja")],
                         "the candidate built what the build step had built")

    def test_loaded_once_per_process(self):
        """A kept child's next job loads the same extension: the module
        loaded first, not a second copy of the library (its initializer
        run twice in one process crashed a pybind11 module)."""
        src = CANDIDATE % 4
        self.prepare(src)
        out = self.candidate(src + textwrap.dedent('''
            import os
            os.environ["TORCH_EXTENSIONS_DIR"] = os.environ["TORCH_EXTENSIONS_DIR"] + "-next-job"
            os.makedirs(os.environ["TORCH_EXTENSIONS_DIR"])
            again = load_inline("kvext", cpp_sources=SRC, no_implicit_headers=True, is_python_module=False)
            print("AGAIN", again, flush=True)
        '''))
        self.assertEqual(out.count("LOADED"), 1, out)
        self.assertEqual(out.split("LIB ", 1)[1].split()[0], out.split("AGAIN ", 1)[1].split()[0])

    def test_library_not_matching_its_manifest_is_built_again(self):
        src = CANDIDATE % 2
        self.prepare(src)
        lib = [os.path.join(d, f) for d, _, fs in os.walk(self.shared) for f in fs if f.endswith(".so")][0]
        with open(lib, "ab") as f:
            f.write(b"planted")
        out = self.candidate(src)
        self.assertIn("does not match its manifest", out)
        loaded = out.split("LIB ", 1)[1].split()[0]
        with open(loaded, "rb") as f:
            self.assertNotIn(b"planted", f.read())

    def test_unreadable_arguments_are_left_to_the_candidate(self):
        src = CANDIDATE.replace("cpp_sources=SRC", "cpp_sources=SRC + os.environ.get('X', '')") % 3
        got = self.prepare(src)
        self.assertEqual(got["extensions_built"], 0, got)


class WhatTheBuildStepBuilds(unittest.TestCase):
    """It keeps the server's uid: only calls whose flags run nothing and
    name no file (a compiler or linker plugin runs code in the build)."""

    def test_table(self):
        cases = [
            ("plain", "ext", ("src",), {"cuda_sources": "k", "functions": ["f"]}, True),
            ("safe nvcc and ld flags", "ext", ("src",), {"extra_cuda_cflags": ["-O3", "--use_fast_math"], "extra_ldflags": ["-lcublas"]}, True),
            ("compiler plugin", "ext", ("src",), {"extra_cuda_cflags": ["-Xcompiler", "-fplugin=/tmp/p.so"]}, False),
            ("linker plugin", "ext", ("src",), {"extra_ldflags": ["-Wl,-plugin,/tmp/p.so"]}, False),
            ("cflags file", "ext", ("src",), {"extra_cflags": ["-include/etc/passwd"]}, False),
            ("include path", "ext", ("src",), {"extra_include_paths": ["/root"]}, False),
            ("build folder", "ext", ("src",), {"build_directory": "/tmp/x"}, False),
            ("path in the name", "../pch/x", ("src",), {}, False),
            ("not a bool", "ext", ("src",), {"with_cuda": "yes"}, False),
            ("unknown argument", "ext", ("src",), {"sources": ["a.cpp"]}, False),
        ]
        for what, name, args, kwargs, want in cases:
            with self.subTest(what):
                self.assertEqual(_prepare.harness_may_build(name, args, kwargs), want)


if __name__ == "__main__":
    unittest.main()
