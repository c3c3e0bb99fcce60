"""load_inline where the shared extension cache is read-only (a sandboxed
candidate): builds found there are imported without writing a byte, new
ones are built in the job's own folder."""

import os
import tempfile
import unittest

from kevolve import load_inline_cached

# No torch headers: each build takes a second or two.
SRC = 'extern "C" int kevolve_ro_add(int a, int b) { return a + b + %d; }\n'


def tree(root):
    out = {}
    for d, _, files in os.walk(root):
        for f in files:
            p = os.path.join(d, f)
            st = os.stat(p)
            out[p] = (st.st_size, st.st_mtime_ns)
    return out


class ReadOnlySharedCache(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.addCleanup(self.tmp.cleanup)
        self.shared = os.path.join(self.tmp.name, "shared")
        self.job = os.path.join(self.tmp.name, "job")
        self.env = {"TORCH_EXTENSIONS_DIR": self.shared, "KEVOLVE_JOB_BUILD_DIR": self.job, "KEVOLVE_SHARED_CACHE_RO": "0"}
        self.old = {k: os.environ.get(k) for k in self.env}
        os.environ.update(self.env)

    def tearDown(self):
        for k, v in self.old.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v

    def build(self, n):
        return load_inline_cached("kvro", cpp_sources=SRC % n, no_implicit_headers=True, is_python_module=False)

    def test_reads_shared_builds_and_builds_new_ones_in_the_job(self):
        first = self.build(1)
        self.assertTrue(first.startswith(self.shared), first)
        before = tree(self.shared)
        os.environ["KEVOLVE_SHARED_CACHE_RO"] = "1"
        again = self.build(1)
        self.assertEqual(again, first, "the shared build was not reused")
        new = self.build(2)
        self.assertTrue(new.startswith(self.job), "a new build must land in the job's folder: %s" % new)
        self.assertTrue(os.path.exists(new))
        self.assertEqual(tree(self.shared), before, "the read-only shared cache was written")


if __name__ == "__main__":
    unittest.main()
