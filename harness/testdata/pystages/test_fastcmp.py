"""The comparison's one-pass kernel (evaluate.compare.fastcmp) against the torch
path of evaluate.compare.compare, which it stands in for: the same verdicts, check
names and details, and the same counts on elements at the tolerance's
edge. The kernel source is compiled with NVRTC wherever NVRTC is (no GPU
needed); the comparisons run on a CUDA device, and KEVOLVE_FASTCMP_GPU=1
(harness/stages_test.go's GPU test) makes a missing one a failure."""
import contextlib
import os
import unittest

import torch

from evaluate import common as evaluate_common
from evaluate.compare import fastcmp
from evaluate.compare.compare import compare, tolerance

STRICT = os.environ.get("KEVOLVE_FASTCMP_GPU") == "1"
DTYPES = (torch.float32, torch.float16, torch.bfloat16, torch.float64)


class CompilesWithNVRTC(unittest.TestCase):
    def test_source_compiles(self):
        from kevolve._cuda import _compile_nvrtc, _load_nvrtc
        lib = _load_nvrtc()
        if lib is None:
            self.skipTest("no NVRTC in this environment")
        self.assertGreater(len(_compile_nvrtc(lib, fastcmp._SRC, "sm_80", [])), 1000)


@contextlib.contextmanager
def torch_path():
    saved = fastcmp._kernels
    fastcmp._kernels = ()
    try:
        yield
    finally:
        fastcmp._kernels = saved


@contextlib.contextmanager
def chunk(n):
    saved = evaluate_common.CHUNK
    evaluate_common.CHUNK = n
    try:
        yield
    finally:
        evaluate_common.CHUNK = saved


def edge_cases(r, dtype):
    """Outputs around r: exact, inside, at and just past the tolerance
    edge element by element, and the non-finite patterns."""
    atol, rtol, _ = tolerance(dtype, None)
    rw = r.to(torch.float64)
    thr = atol + rtol * rw.abs()
    g = torch.Generator(device=r.device).manual_seed(5)
    scale = torch.rand(r.shape, generator=g, device=r.device, dtype=torch.float64) * 2  # 0..2 thresholds away
    sign = torch.where(torch.rand(r.shape, generator=g, device=r.device) < 0.5, -1.0, 1.0).to(torch.float64)
    edge = (rw + sign * thr * scale).to(dtype)
    near = (rw + sign * thr * (0.999 + 0.002 * torch.rand(r.shape, generator=g, device=r.device, dtype=torch.float64))).to(dtype)
    cases = {
        "equal": r.clone(),
        "inside": (rw + sign * thr * 0.5).to(dtype),
        "edge": edge,
        "near_edge": near,
        "far": (rw + 10.0).to(dtype),
    }
    nan_out = r.clone()
    nan_out.view(-1)[r.numel() // 2] = float("nan")
    cases["nan_in_output"] = nan_out
    inf_out = r.clone()
    inf_out.view(-1)[-1] = float("inf")
    cases["inf_in_output"] = inf_out
    return cases


class MatchesTorchPath(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        if not torch.cuda.is_available():
            if STRICT:
                raise AssertionError("KEVOLVE_FASTCMP_GPU=1 but torch sees no CUDA device")
            raise unittest.SkipTest("no CUDA device")
        cls.device = torch.device("cuda", 0)
        if not fastcmp.prepare(cls.device):
            raise AssertionError("the comparison kernel did not build: " + fastcmp.why_not)

    def both(self, r, o, tol=None):
        self.assertTrue(fastcmp.usable(r))
        fast = compare(0, r, o, tol)
        with torch_path():
            slow = compare(0, r, o, tol)
        return fast, slow

    def test_verdicts_and_details_match(self):
        for dtype in DTYPES:
            for n in (1, 31, 1000, 4099, 70001):
                torch.manual_seed(n)
                r = (torch.randn(n, device=self.device, dtype=torch.float64) * 3).to(dtype)
                for name, o in edge_cases(r, dtype).items():
                    for size in (1 << 24, 4096):  # one chunk, many chunks
                        with self.subTest(dtype=str(dtype), n=n, case=name, chunk=size), chunk(size):
                            fast, slow = self.both(r, o)
                            self.assertEqual(fast, slow)

    def test_counts_at_the_edge_match(self):
        """nbad is the count the torch formulation gives in the same
        working precision, element for element."""
        for dtype in DTYPES:
            r = (torch.randn(300001, device=self.device, dtype=torch.float64) * 5).to(dtype)
            # 0-2 thresholds away: about half outside, many within an ulp
            # of the edge once rounded to the dtype.
            o = edge_cases(r, dtype)["edge"]
            atol, rtol, _ = tolerance(dtype, None)
            wd = torch.float64 if dtype == torch.float64 else torch.float32
            rr, oo = r.to(wd), o.to(wd)
            want = int(((oo - rr).abs() > atol + rtol * rr.abs()).sum().item())
            s = fastcmp.stats([(r, o)], dtype, atol, rtol)
            with self.subTest(dtype=str(dtype)):
                self.assertEqual(s.nbad, want)
                self.assertGreater(want, 0)
                self.assertLess(want, r.numel())
                self.assertEqual(s.maxerr, float((oo - rr).abs().max().item()))

    def test_reference_nonfinite_and_zero(self):
        r = torch.randn(5000, device=self.device)
        r[7] = float("nan")
        r[8] = float("inf")
        same = r.clone()
        swapped = r.clone()
        swapped[7], swapped[8] = float("inf"), float("nan")
        zeros = torch.zeros(5000, device=self.device)
        for name, (a, b) in {"same_pattern": (r, same), "other_pattern": (r, swapped), "zero_ref_ok": (zeros, zeros.clone()),
                             "zero_ref_bad": (zeros, zeros + 1e-3), "tiny_values": (r * 1e-9, torch.zeros_like(r))}.items():
            with self.subTest(case=name):
                fast, slow = self.both(a, b)
                self.assertEqual(fast, slow)

    def test_strided_and_tolerance_profile(self):
        base = torch.randn(64, 130, device=self.device)
        r = base[:, ::2]  # not contiguous: compared as torch flattens it
        o = (r + 1e-5).contiguous()
        fast, slow = self.both(r, o)
        self.assertEqual(fast, slow)
        prof = {"profile": "kernelbench_v0"}
        fast, slow = self.both(base, base + 5e-3, prof)
        self.assertEqual(fast, slow)
        self.assertTrue(fast[0])

    def test_guarded_entries_exist(self):
        for owner, name in fastcmp.guard_entries():
            self.assertIsNotNone(getattr(owner, name, None), name)


if __name__ == "__main__":
    unittest.main()
