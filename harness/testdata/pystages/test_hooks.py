"""The launch hooks set Inductor's at its import, not before (run by
harness/stages_test.go with the worker's py dir on sys.path): a child
whose evaluation compiles nothing never pays Dynamo's and Inductor's import,
and one whose candidate carries Inductor's generated code still has its
kernels counted. Each case runs in a fresh interpreter: this one's
imports are shared by every test module of the run."""
import os
import subprocess
import sys
import unittest

PY_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__import__("evaluate").__file__)))

PRELUDE = """
import sys, torch
from evaluate.guards import hooks
def hooked():
    from torch._inductor.async_compile import AsyncCompile
    from torch._inductor.runtime import triton_heuristics as th
    return all(getattr(f, "_kv_wrapped", False) for f in (AsyncCompile.triton, AsyncCompile.cpp_pybinding, th.CachingAutotuner.run))
"""

CASES = {
    "not imported by the hooks, hooked at the import": """
hooks.install_launch_hooks(hooks.LaunchCounter(), False)
assert not any(n in sys.modules for n in hooks._INDUCTOR_MODULES), "the hooks imported Inductor"
import torch._inductor.async_compile
assert hooked()
""",
    "the autotuner imported first": """
hooks.install_launch_hooks(hooks.LaunchCounter(), False)
from torch._inductor.runtime import triton_heuristics
assert hooked()
""",
    "already imported": """
import torch._inductor.async_compile
hooks.install_launch_hooks(hooks.LaunchCounter(), False)
assert hooked()
""",
    "one finder, whatever the evaluations": """
hooks.install_launch_hooks(hooks.LaunchCounter(), False)
before = list(sys.meta_path)
hooks.install_launch_hooks(hooks.LaunchCounter(), False)
import torch._inductor.async_compile
hooks.install_launch_hooks(hooks.LaunchCounter(), False)
assert sys.meta_path == before, "the import hooks changed: a kept child would be tainted"
""",
    "the module's loader still answers": """
hooks.install_launch_hooks(hooks.LaunchCounter(), False)
import inspect, torch._inductor.async_compile as ac
assert "class AsyncCompile" in inspect.getsource(ac)
assert ac.__spec__.loader.get_filename(ac.__name__).endswith("async_compile.py")
""",
}


class InductorHookAtImport(unittest.TestCase):
    def test_cases(self):
        env = dict(os.environ, PYTHONPATH=PY_DIR, CUDA_VISIBLE_DEVICES="")
        for name, body in CASES.items():
            with self.subTest(name):
                r = subprocess.run([sys.executable, "-c", PRELUDE + body], env=env, capture_output=True, text=True, timeout=300)
                self.assertEqual(r.returncode, 0, r.stderr[-3000:])


if __name__ == "__main__":
    unittest.main()
