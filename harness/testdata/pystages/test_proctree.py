"""sandbox.proctree: the processes below one, from the kernel's children
lists and, where it keeps none, from every process's parent link: both
give the same set, a process forked from another thread than the main one
included, and the process skipped is left out with its own descendants."""
import os
import subprocess
import threading
import time
import unittest

from sandbox import proctree


def _spawn_tree():
    """A shell with two children, a sleep and a shell that has a sleep of
    its own: (outer shell, the three pids below it, once all exist)."""
    sh = subprocess.Popen(["sh", "-c", "sleep 60 & sh -c 'sleep 60 & wait' & wait"])
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        below = proctree._by_parent_links(sh.pid, None)
        if _all_sleeping(below):
            return sh, below
        time.sleep(0.05)
    raise AssertionError("the tree never formed: %s" % proctree._by_parent_links(sh.pid, None))


def _all_sleeping(pids):
    names = []
    for p in pids:
        try:
            with open("/proc/%d/comm" % p) as f:
                names.append(f.read().strip())
        except OSError:
            return False
    return sorted(names) == ["sh", "sleep", "sleep"]


def _end(p):
    for q in proctree.descendants(p.pid) + [p.pid]:
        try:
            os.kill(q, 9)
        except OSError:
            pass
    p.wait()


class DescendantsTest(unittest.TestCase):
    def test_children_lists_and_parent_links_agree(self):
        sh, below = _spawn_tree()
        try:
            self.assertEqual(sorted(proctree.descendants(sh.pid)), sorted(below))
            self.assertEqual(len(below), 3)
            self.assertNotIn(sh.pid, proctree.descendants(sh.pid))
        finally:
            _end(sh)

    def test_skip_leaves_out_its_subtree(self):
        sh, below = _spawn_tree()
        try:
            inner = [p for p in below if proctree._by_parent_links(p, None)]
            self.assertEqual(len(inner), 1, below)
            kept = proctree.descendants(sh.pid, skip=inner[0])
            self.assertEqual(len(kept), 1)
            self.assertEqual(sorted(kept), sorted(proctree._by_parent_links(sh.pid, inner[0])))
        finally:
            _end(sh)

    def test_child_of_another_thread(self):
        got = {}

        def start():
            got["p"] = subprocess.Popen(["sleep", "60"])
        th = threading.Thread(target=start)
        th.start()
        th.join()
        try:
            me = os.getpid()
            self.assertIn(got["p"].pid, proctree.descendants(me))
            self.assertIn(got["p"].pid, proctree._by_parent_links(me, None))
        finally:
            got["p"].kill()
            got["p"].wait()

    def test_gone_process(self):
        p = subprocess.Popen(["true"])
        p.wait()
        self.assertEqual(proctree.descendants(p.pid), [])


if __name__ == "__main__":
    unittest.main()
