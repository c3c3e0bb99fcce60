"""sandbox/profiled.py: the jail of a process a profiler starts. What
needs the GPU (Nsight Compute profiling a jailed candidate) is tested by
harness/profile/jail_test.go; here, the parts a CPU host can check: which
hosts keep the counter privilege, and that keeping it keeps nothing else."""
import ctypes
import json
import os
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "worker", "py"))

from sandbox import jail  # noqa: E402
from sandbox import layers  # noqa: E402
from sandbox import profiled  # noqa: E402


def _in_child(fn):
    """fn() in a forked child; its JSON-able answer."""
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(r)
        try:
            out = fn()
        except BaseException as e:  # noqa: BLE001
            out = {"error": repr(e)}
        os.write(w, json.dumps(out).encode())
        os._exit(0)
    os.close(w)
    data = b""
    while True:
        b = os.read(r, 65536)
        if not b:
            break
        data += b
    os.waitpid(pid, 0)
    return json.loads(data)


def _status(field):
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith(field + ":"):
                return line.split()[1]
    return ""


class CountersAdminOnly(unittest.TestCase):
    def test_params(self):
        for text, want in (("RmProfilingAdminOnly: 1\n", True), ("EnableMSI: 1\nRmProfilingAdminOnly: 0\n", False), ("", False)):
            with tempfile.NamedTemporaryFile("w", suffix=".params") as f:
                f.write(text)
                f.flush()
                self.assertEqual(profiled.counters_admin_only(f.name), want, text)
        self.assertFalse(profiled.counters_admin_only("/nonexistent/params"))


@unittest.skipUnless(os.geteuid() == 0, "dropping root needs root")
class KeepAdmin(unittest.TestCase):
    """A profiled process on a host whose counters are for admins keeps
    CAP_SYS_ADMIN alone: uid 65534, every other capability gone, none it
    could pass on by exec, and the calls the capability would open refused."""

    def enter(self, keep_admin):
        work = tempfile.mkdtemp(prefix="kevolve-profiled-test-")
        os.chmod(work, 0o755)

        def run():
            # The view first, as profiled.enter does: a Python environment
            # under a 0700 home is then reachable by the unprivileged uid.
            view = jail.enter_view(jail.default_needs(), [work], 64 << 20, 64 << 20)
            rep = layers.enter(work, need_reachable=[sys.executable, sys.prefix], network=True, view=view, keep_admin=keep_admin)
            libc = ctypes.CDLL(None, use_errno=True)
            target = os.path.join(work, "m")
            os.mkdir(target)
            ok = libc.mount(b"tmpfs", target.encode(), b"tmpfs", 0, None) == 0
            return {"uid": os.getuid(), "eff": _status("CapEff"), "prm": _status("CapPrm"), "inh": _status("CapInh"),
                    "bnd": _status("CapBnd"), "amb": _status("CapAmb"), "mounted": ok, "errno": ctypes.get_errno(),
                    "missing": rep["missing"], "caps": rep["detail"].get("capabilities", "")}
        return _in_child(run)

    def test_keeps_admin_alone(self):
        out = self.enter(True)
        self.assertNotIn("error", out, out)
        if "uid" in out["missing"]:
            self.skipTest("no uid drop here: %s" % out["missing"]["uid"])
        self.assertEqual(out["uid"], layers.UNPRIVILEGED)
        self.assertEqual(int(out["eff"], 16), 1 << layers.CAP_SYS_ADMIN, out)
        self.assertEqual(int(out["prm"], 16), 1 << layers.CAP_SYS_ADMIN, out)
        for k in ("inh", "bnd", "amb"):
            self.assertEqual(int(out[k], 16), 0, (k, out))
        self.assertIn("CAP_SYS_ADMIN alone", out["caps"])
        if "seccomp" not in out["missing"]:
            self.assertFalse(out["mounted"], "mount() with the kept capability must be refused: %s" % out)

    def test_keeps_none_otherwise(self):
        out = self.enter(False)
        self.assertNotIn("error", out, out)
        self.assertEqual(int(out["eff"], 16), 0, out)
        self.assertFalse(out["mounted"], out)


if __name__ == "__main__":
    unittest.main()
