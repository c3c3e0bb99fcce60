"""Unit tests of the evaluation child's stage modules (run by
harness/stages_test.go with the worker's py dir on sys.path)."""
import os
import random
import time
import subprocess
import sys
import unittest

import torch

from evaluate import common as evaluate_common
from evaluate.common import same_tensor_values
from evaluate.compare.compare import compare
from evaluate.guards.integrity import InputRefresher, refill, snapshot
from evaluate.guards.fingerprint import Fingerprinter, differing_chunks, same
from evaluate.guards.ops import OpTrace, same_trace


class ChunkedCompare(unittest.TestCase):
    def setUp(self):
        self.saved = evaluate_common.CHUNK
        evaluate_common.CHUNK = 1000  # many chunks on small tensors

    def tearDown(self):
        evaluate_common.CHUNK = self.saved

    def test_verdicts_match_whole_tensor_math(self):
        torch.manual_seed(0)
        r = torch.randn(37, 301)
        cases = {
            "equal": (r.clone(), True, "allclose"),
            "tiny_error": (r + 1e-6, True, "allclose"),
            "one_bad": (r.clone().index_put_((torch.tensor([20]), torch.tensor([250])), torch.tensor(9.0)), False, "allclose"),
            "nan": (r.clone().index_put_((torch.tensor([36]), torch.tensor([300])), torch.tensor(float("nan"))), False, "finite"),
        }
        for name, (o, ok, check) in cases.items():
            got_ok, got_check, detail = compare(0, r, o, None)
            self.assertEqual((got_ok, got_check), (ok, check), name + ": " + detail)
        _, _, detail = compare(0, r, cases["one_bad"][0], None)
        self.assertIn("1 of %d" % r.numel(), detail)
        self.assertIn("worst at [20, 250]", detail)
        self.assertIn("first mismatches at [20, 250]", detail)

    def test_mismatches_named_by_their_index(self):
        r = torch.randn(4, 5, 600)  # elements past the first chunk too
        o = r.clone()
        for at in [(0, 2, 599), (1, 0, 3), (3, 4, 7), (3, 4, 8)]:
            o[at] += 5.0
        o[2, 1, 10] += 9.0  # the worst
        ok, _, detail = compare(0, r, o, None)
        self.assertFalse(ok)
        self.assertIn("worst at [2, 1, 10]", detail)
        self.assertIn("first mismatches at [0, 2, 599], [1, 0, 3], [2, 1, 10]", detail)

    def test_relative_norm_and_zero_reference(self):
        r = torch.randn(50, 60) * 1e-6
        ok, check, _ = compare(0, r, torch.zeros_like(r), None)
        self.assertEqual((ok, check), (False, "relative_norm"))
        z = torch.zeros(3000)
        self.assertTrue(compare(0, z, z.clone(), None)[0])

    def test_integers_and_half(self):
        a = torch.arange(5000)
        b = a.clone()
        b[4321] = 0
        ok, _, detail = compare(0, a, b, None)
        self.assertFalse(ok)
        self.assertIn("1 of 5000", detail)
        h = torch.randn(4000, dtype=torch.bfloat16)
        self.assertTrue(compare(0, h, h.clone(), None)[0])

    def test_same_tensor_values_nan_aware(self):
        x = torch.randn(4096)
        x[17] = float("nan")
        y = x.clone()
        self.assertTrue(same_tensor_values(x, y))
        y[4000] += 1
        self.assertFalse(same_tensor_values(x, y))


class CompileErrorDetail(unittest.TestCase):
    def test_log_and_the_candidates_line_without_the_harness_frames(self):
        class CompileError(Exception):
            pass

        src = "def build():\n    raise CompileError('gcc failed (exit 1)\\nkernel.c:3:5: error: unknown type name this')\n"
        ns = {"CompileError": CompileError}
        exec(compile(src, "/jail/work/kevolve_candidate.py", "exec"), ns)
        try:
            ns["build"]()
        except CompileError as e:
            detail = evaluate_common.fmt_exc(e)
        self.assertEqual(detail.count("kernel.c:3:5: error: unknown type name this"), 1, detail)
        self.assertIn("called from ---\nkevolve_candidate.py:2 in build", detail)
        self.assertNotIn("traceback", detail)
        try:
            raise CompileError("ninja: build stopped\n" + "c++ -O3 " * 300 + "\nk.cu:9:1: error: expected a ';'")
        except CompileError as e:
            detail = evaluate_common.fmt_exc(e)
        self.assertTrue(detail.startswith("compiler errors:\nk.cu:9:1: error"), detail[:200])


class Snapshot(unittest.TestCase):
    def test_random_order_copy_is_exact(self):
        x = torch.randn(300, 77)
        s = snapshot([x, 5], random.Random(1))
        self.assertTrue(torch.equal(s[0], x))
        self.assertNotEqual(s[0].data_ptr(), x.data_ptr())
        self.assertEqual(s[1], 5)


class Fingerprint(unittest.TestCase):
    """Chunk fingerprints stand in for copies: a partially written output
    must never match its complete self."""

    def test_partial_write_detected_in_its_chunk(self):
        fpr = Fingerprinter(random.Random(3))
        final = torch.randn(4096, 33)
        whole = fpr.of([final], random.Random(4))
        self.assertTrue(same(whole, fpr.of([final.clone()])))
        flat = final.reshape(-1)
        n = flat.numel()
        for stale in ("zeros", "nan", "previous", "swapped"):
            part = flat.clone()
            lo, hi = n // 2, n // 2 + 5000  # a block the writer has not reached yet
            if stale == "zeros":
                part[lo:hi] = 0
            elif stale == "nan":
                part[lo:hi] = float("nan")
            elif stale == "previous":
                part[lo:hi] = torch.randn(hi - lo)
            else:  # same multiset of values, other places: the sum alone would match
                part[lo:hi] = part[lo:hi].flip(0)
            bad = differing_chunks(whole, fpr.of([part.view(final.shape)]))
            self.assertTrue(bad, stale)
            span = fpr.spans(final)
            hit = {k for _i, k in bad}
            want = {k for k, (a, e) in enumerate(span) if a < hi and e > lo}
            self.assertEqual(hit, want, stale)

    def test_dtypes_bitwise_and_values(self):
        fpr = Fingerprinter(random.Random(5))
        for dt in (torch.float32, torch.float64, torch.float16, torch.bfloat16, torch.int64, torch.int8, torch.bool, torch.complex64):
            x = (torch.randn(3000) * 4).to(dt)
            y = x.clone()
            y[1234] = (y[1234] + 1) if dt != torch.bool else ~y[1234]
            self.assertTrue(same(fpr.of(x), fpr.of(x.clone())), dt)
            self.assertFalse(same(fpr.of(x), fpr.of(y)), dt)
        z = torch.zeros(3000)
        nz = z.clone()
        nz[7] = -0.0
        self.assertFalse(same(fpr.of(z), fpr.of(nz)), "bitwise: -0.0 is a write")
        self.assertTrue(same(fpr.of([z, 5]), fpr.of([z.clone(), 5])))
        self.assertFalse(same(fpr.of([z, 5]), fpr.of([z.clone(), 6])))

    def test_weights_differ_per_fingerprinter(self):
        a, b = Fingerprinter(random.Random(1)), Fingerprinter(random.Random(2))
        self.assertNotEqual((a.a, a.b), (b.a, b.b))


class Refresher(unittest.TestCase):
    def test_same_tensors_new_values(self):
        def make(s):
            torch.manual_seed(s)
            return [torch.randn(64, 32), 3]
        target = make(1)
        ptr, before = target[0].data_ptr(), target[0].clone()
        r = InputRefresher(make, target, random.Random(2))
        tok = r()
        self.assertEqual(target[0].data_ptr(), ptr)
        self.assertFalse(torch.equal(target[0], before))
        self.assertTrue(torch.equal(target[0], tok[0]))

    def test_shape_changes_swap_in_new_sets(self):
        n = [0]

        def make(s):
            n[0] += 1
            return [torch.randn(8 + n[0]), 7]
        inputs = make(0)
        r = InputRefresher(make, inputs, random.Random(2))
        for k in range(3):
            tok = r()
            self.assertIsNotNone(tok)
            self.assertIs(inputs[0], tok[0], "the timed list holds the new set")
            self.assertEqual(inputs[0].numel(), 10 + k)
            self.assertEqual(inputs[1], 7)
        self.assertEqual(r.n, 3)
        self.assertIn("new input set", r.swapped)
        self.assertEqual(r.note, "")


class Memoization(unittest.TestCase):
    def test_refill_rotates_floats_when_shapes_change(self):
        n = [0]

        def make(s):
            n[0] += 1
            return [torch.arange(float(8 + n[0])), torch.tensor([0, 3, 8 + n[0]])]
        inputs = make(0)
        before = [t.clone() for t in inputs]
        ptrs = [t.data_ptr() for t in inputs]
        self.assertIs(refill(inputs, make, 5), False)
        self.assertEqual([t.data_ptr() for t in inputs], ptrs, "the same buffers")
        self.assertTrue(torch.equal(inputs[1], before[1]), "integer structure kept")
        self.assertFalse(torch.equal(inputs[0], before[0]), "every float moved")
        self.assertTrue(torch.equal(inputs[0].sort().values, before[0]), "the same values")

    def test_refill_copies_a_same_shaped_set(self):
        def make(s):
            torch.manual_seed(s)
            return [torch.randn(6), torch.randint(0, 5, (4,))]
        inputs = make(1)
        self.assertIs(refill(inputs, make, 1), True)
        want = make(12)
        self.assertTrue(all(torch.equal(a, b) for a, b in zip(inputs, want)))

    def test_refill_without_floats_gives_up(self):
        n = [0]

        def make(s):
            n[0] += 1
            return [torch.arange(n[0] + 2)]
        self.assertIsNone(refill(make(0), make, 1))


class Traces(unittest.TestCase):
    def trace(self, fn, *a):
        t = OpTrace()
        with t:
            fn(*a)
        return t.ops

    def test_reference_and_glue(self):
        A, B = torch.rand(16), torch.rand(16, 8)
        ref = self.trace(lambda: torch.diag(A) @ B)
        self.assertTrue(same_trace(ref, self.trace(lambda: torch.diag(A) @ B)))
        glued = self.trace(lambda: (torch.diag(A.contiguous()) @ B.contiguous()).clone())
        self.assertIn("every compute op of the reference", same_trace(ref, glued))
        other = self.trace(lambda: A.unsqueeze(1) * B)
        self.assertIsNone(same_trace(ref, other))
        self.assertIsNone(same_trace([], []))


if __name__ == "__main__":
    unittest.main()


class Construct(unittest.TestCase):
    """evaluate.compare.construct: which constructions drew from the host's
    generator under a device context (meta stands in for a GPU: it has no
    generator of its own, so only host draws move a generator here)."""

    class Legacy(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.weight = torch.nn.Parameter(torch.Tensor(4, 3))  # the legacy constructor ignores the context
            torch.nn.init.kaiming_uniform_(self.weight)

    def test_host_draws_under_the_context(self):
        from evaluate.compare.construct import build, kernelbench_way_needed
        meta = torch.device("meta")
        cases = [("nn.Linear", lambda: torch.nn.Linear(3, 4), False), ("legacy torch.Tensor", self.Legacy, True)]
        for name, cls, want in cases:
            with self.subTest(name):
                model, drew = build(cls, [], meta, True)
                self.assertEqual(drew, want)
                self.assertEqual({p.device.type for p in model.parameters()}, {"meta"})
                self.assertEqual(kernelbench_way_needed(meta, False, drew), want)
                self.assertFalse(kernelbench_way_needed(torch.device("cpu"), drew, drew))

    def test_host_construction_matches_from_one_seed(self):
        from evaluate.compare.construct import build
        cpu = torch.device("cpu")
        torch.manual_seed(3)
        a, drew = build(self.Legacy, [], cpu, False)
        torch.manual_seed(3)
        b, _ = build(self.Legacy, [], cpu, False)
        self.assertTrue(drew)
        self.assertTrue(torch.equal(a.weight, b.weight))


class StageClockClose(unittest.TestCase):
    """stage_s: a stage reported after the clock closed (the judge's verify)
    does not add the last stage's seconds to it a second time."""

    def test_last_stage_counted_once(self):
        from types import SimpleNamespace
        from evaluate.main import StageClock
        seen = []
        st = SimpleNamespace(side=None, prof=None, res={"stage_s": {}})
        clock = StageClock(lambda stage, done, total: seen.append(stage), st)
        clock("timing")
        time.sleep(0.05)
        t1 = time.perf_counter()
        clock("after_timing")
        time.sleep(0.1)
        t2 = time.perf_counter()
        clock.close()
        time.sleep(0.1)
        t3 = time.perf_counter()
        clock("verify")
        time.sleep(0.02)
        s = st.res["stage_s"]
        self.assertEqual(seen, ["timing", "after_timing", "verify"])
        self.assertGreaterEqual(s["after_timing"], 0.1)
        # Counted twice it would add the closed clock's interval (t3 - t2)
        # again; the bounds are the intervals measured here, so a loaded
        # host's late wake-ups move both sides.
        self.assertLess(s["after_timing"], (t2 - t1) + 0.5 * (t3 - t2), s)
        self.assertNotIn("verify", s)  # verify records its own seconds


class HostLoadWindow(unittest.TestCase):
    """evaluate.judge.hostload: a busy process the jail does not count is
    the host's load; the same process counted as the jail's is not."""

    def test_busy_process_outside_the_jail(self):
        from evaluate.judge import hostload
        # It spins until it has spent 0.8 s of CPU (or 20 s of wall), not
        # 0.8 s of wall: beside another test suite on 2 cores it got 0.26 s
        # of CPU in 0.8 s.
        child = subprocess.Popen([sys.executable, "-c", "import time\nt = time.time()\nwhile time.process_time() < 0.8 and time.time() - t < 20: pass"])
        spent = {"s": 0.0}
        outside = hostload.Window(lambda: 0.0)
        counted = hostload.Window(lambda: spent["s"])
        _, _, ru = os.wait4(child.pid, 0)
        child.returncode = 0  # reaped here, for its rusage
        spent["s"] = ru.ru_utime + ru.ru_stime
        wall = time.perf_counter() - outside.t0
        child_share = spent["s"] / (wall * os.cpu_count())
        ext, own = outside.external_share(), counted.external_share()
        self.assertGreater(spent["s"], 0.3)
        # The child's start-up (before the windows opened) and the clock
        # ticks are the only differences from the exact arithmetic.
        self.assertGreaterEqual(ext, child_share - 0.1, (ext, own, child_share))
        self.assertAlmostEqual(ext - own, child_share, delta=0.1, msg=(ext, own, child_share))


class JailFreeze(unittest.TestCase):
    """evaluate.judge.reftime.Frozen stops the jail by its cgroup: a busy
    process in it, and one it forks while frozen would be, spend no CPU
    until the block ends (the cgroup's own account, so a process that
    left the parent links is counted). Where the host makes no cgroup or
    gives it no freezer, there is nothing to test."""

    def test_frozen_cgroup_spends_no_cpu(self):
        from sandbox import cgroup
        from evaluate.judge import reftime
        if os.geteuid() != 0:
            self.skipTest("making a cgroup needs root")
        cgroup.prepare(clean=False)
        r, w = os.pipe()
        pid = os.fork()
        if pid == 0:
            os.close(r)
            cg, _ = cgroup.make(os.getpid(), 0)
            ok, _ = cgroup.join(cg) if cg is not None else (False, "")
            os.write(w, b"1" if ok else b"0")
            os.close(w)
            t = time.time()
            while time.time() - t < 20:
                if os.fork() == 0:  # a relay of short-lived busy processes
                    s = time.time()
                    while time.time() - s < 0.05:
                        pass
                    os._exit(0)
                os.wait()
            os._exit(0)
        os.close(w)
        joined = os.read(r, 1) == b"1"
        os.close(r)
        cg = cgroup.handle(pid)
        try:
            if not joined or cgroup.cpu_ns(cg) is None:
                self.skipTest("no cgroup with a CPU account on this host")
            time.sleep(0.2)
            with reftime.Frozen(pid, lambda root: [], cg) as f:
                if not f.frozen:
                    self.skipTest("no freezer on this host")
                c0 = cgroup.cpu_ns(cg)
                time.sleep(0.4)
                c1 = cgroup.cpu_ns(cg)
            self.assertLess(c1 - c0, 5e6, "the frozen jail spent %.3f s of CPU in 0.4 s" % ((c1 - c0) / 1e9))
            deadline = time.monotonic() + 10
            while cgroup.cpu_ns(cg) <= c1 and time.monotonic() < deadline:
                time.sleep(0.05)
            self.assertGreater(cgroup.cpu_ns(cg), c1, "the jail never ran again after the block")
        finally:
            cgroup.release(cg, wait_s=2.0)
            os.waitpid(pid, 0)
