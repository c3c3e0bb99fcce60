"""load_c's call path made at load time (_fastcall): the same results and
the same errors as _args.convert, for the common case and the rest."""

import ctypes
import os
import tempfile
import unittest

import torch

from kevolve import _args, load_c

SRC = r'''
#include <stdint.h>
#include <stddef.h>
typedef struct { float x, y, z, w; } float4;
void scale(const float* x, float* y, float a, int64_t n) { for (int64_t i = 0; i < n; ++i) y[i] = a * x[i]; }
int32_t add_u8(uint8_t a, uint8_t b) { return a + b; }
int32_t pick(_Bool b, int32_t x, int32_t y) { return b ? x : y; }
int32_t is_null(const float* p) { return p == NULL; }
float first4(const float4* v) { return v[0].w; }
int32_t nothing(void) { return 7; }
'''


class FastCall(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.TemporaryDirectory()
        os.environ["KEVOLVE_CACHE_DIR"] = cls.tmp.name
        cls.m = load_c(SRC)

    @classmethod
    def tearDownClass(cls):
        cls.tmp.cleanup()

    def test_fast_path_is_made(self):
        self.assertIsNot(type(self.m.scale).__call__, type(self.m.scale).__mro__[1].__call__)
        self.assertIn("kevolve C function scale(", repr(self.m.scale))

    def test_common_and_uncommon_arguments_agree(self):
        m = self.m
        x = torch.randn(33)
        y = torch.empty(33)
        m.scale(x, y, 2.0, 33)
        torch.testing.assert_close(y, 2 * x)
        m.scale(x, y, 3, torch.tensor(33).item())  # an int for the float: convert's path
        torch.testing.assert_close(y, 3 * x)
        m.scale(torch.nn.Parameter(x), y, 0.5, 33)  # a Tensor subclass
        torch.testing.assert_close(y, 0.5 * x)
        self.assertEqual(m.add_u8(200, 55), 255)
        self.assertEqual(m.pick(True, 1, 2), 1)
        self.assertEqual(m.pick(0, 1, 2), 2)  # an int for a bool: convert's path
        self.assertEqual(m.is_null(None), 1)
        self.assertEqual(m.is_null(x.data_ptr()), 0)  # a raw address
        self.assertEqual(m.nothing(), 7)
        v = torch.arange(8, dtype=torch.float32)
        self.assertEqual(m.first4(v), 3.0)

    def test_errors_are_converts(self):
        m = self.m
        x, y = torch.randn(8), torch.empty(8)
        unaligned = torch.arange(9, dtype=torch.float32)[1:]
        cases = [
            (m.scale, (x.double(), y, 1.0, 8)), (m.scale, (x[::2], y, 1.0, 4)), (m.scale, (x, y, 1.0, 8.0)),
            (m.scale, (x, y, torch.tensor(1.0), 8)), (m.scale, (x, y, 1.0)), (m.scale, ([1.0], y, 1.0, 8)),
            (m.add_u8, (256, 0)), (m.add_u8, (-1, 0)), (m.first4, (unaligned,)), (m.nothing, (1,)),
            (m.scale, (x.to("meta"), y, 1.0, 8)),
        ]
        for f, args in cases:
            with self.subTest(f=f.sig.name, args=repr(args)[:60]):
                with self.assertRaises(TypeError) as got:
                    f(*args)
                with self.assertRaises(TypeError) as want:
                    _args.convert(f.sig, args, "cpu")
                self.assertEqual(str(got.exception), str(want.exception))

    def test_profiler_names_the_call(self):
        x, y = torch.randn(8), torch.empty(8)
        with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU]) as p:
            self.m.scale(x, y, 2.0, 8)
        self.assertIn("kevolve::c::scale", [e.name for e in p.events()])

    def test_argtypes_are_set(self):
        f = self.m.scale._f
        self.assertEqual(f.argtypes, [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_float, ctypes.c_int64])


if __name__ == "__main__":
    unittest.main()
