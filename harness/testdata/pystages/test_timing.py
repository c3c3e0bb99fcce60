"""The timer on the CPU (evaluate.timing): its cache flush allocates
nothing, and a small kernel's timed median stays near what a plain loop
of calls gives (issue 36: the flush's 64 MB temporary made a 12.5 us
kernel read 212 us)."""
import resource
import time
import unittest

import torch

from evaluate import timing as evaluate_timing
from evaluate.timing import Timer


# harness/noise.go's NoisyWaitShare: a timing whose threads waited for a
# CPU longer than this share of it is flagged noisy.
LOADED = 0.1


def minor_faults():
    return resource.getrusage(resource.RUSAGE_SELF).ru_minflt


def plain_per_call_s(fn, n, before=None):
    """The 10th percentile of n calls, before() run ahead of each one
    outside the clock: a burst of load elsewhere inflates the median,
    never this."""
    ts = []
    for _ in range(n):
        if before is not None:
            before()
        t0 = time.perf_counter_ns()
        out = fn()
        ts.append(time.perf_counter_ns() - t0)
        del out
    ts.sort()
    return ts[n // 10] / 1e9


class CPUFlush(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.timer = Timer(torch.device("cpu"), 32 << 20)

    def test_buffer_outsizes_the_last_level_cache(self):
        self.assertGreaterEqual(self.timer.flush.numel() * 4, 2 * evaluate_timing.llc_bytes() - 4 * evaluate_timing.FLUSH_ROW)
        self.assertEqual(evaluate_timing._size_bytes("32768K"), 32 << 20)
        self.assertEqual(evaluate_timing._size_bytes("1M"), 1 << 20)

    def test_flush_allocates_nothing(self):
        out = self.timer.flush_out.data_ptr()
        self.timer.clear_cache()
        f0 = minor_faults()
        for _ in range(20):
            self.timer.clear_cache()
        # The old flush faulted 16,385 pages (a 64 MB temporary) per call.
        # A 16-core GPU host read 2 faults over the 20 (a pool thread's
        # first touch of its stack or scratch), never one a call.
        self.assertLess(minor_faults() - f0, 20)
        self.assertEqual(self.timer.flush_out.data_ptr(), out)

    def test_timed_calls_do_not_fault(self):
        x = torch.randn(4096)
        f0 = minor_faults()
        st = self.timer.bench(lambda: torch.relu(x), 1.0)
        self.assertLess(minor_faults() - f0, st["iters"] / 10)

    def test_small_kernel_times_near_its_plain_loop(self):
        # A matrix product of about 65 us a call on the 2-core CI host.
        # The plain loop flushes the cache before each call too, outside
        # its clock: what the timed median may add to it is the timer's
        # own cost, not the flush's (the old flush's 64 MB temporary added
        # 120 us, 2.9x). A warm loop is no yardstick on a many-core host:
        # on a 16-core GPU host the same product read 17 us warm and
        # 61-69 us after the flush, every core's caches cold. While
        # another program runs there (a build), each call of the
        # two-thread pool can wait a 16 ms time slice for its second CPU,
        # plain or timed: the timing's wait_share shows it (0.5 against
        # 0.01 when quiet) and the result says noisy, so such an attempt
        # judges nothing and another is made.
        a = torch.randn(176, 176)

        def fn():
            return a @ a
        for _ in range(20):
            fn()
        quiet = []
        for _ in range(5):
            plain = plain_per_call_s(fn, 200, self.timer.clear_cache)
            st = self.timer.bench(fn, 1.0)
            self.assertGreaterEqual(st["host"]["cpus"], 1)
            if st["host"]["wait_share"] > LOADED:
                continue
            if st["median_s"] < 2 * plain:
                return
            quiet.append((st["median_s"], plain, st["host"]["wait_share"]))
        if not quiet:
            self.skipTest("the host was loaded through every attempt")
        self.fail("timed median over twice the plain loop's per-call time (timed, plain, wait_share): %s" % quiet)

if __name__ == "__main__":
    unittest.main()
