"""whole_model.partition on graphs TorchDynamo captures (whole_model.capture):
each model below is captured and partitioned, and its regions' kinds and
operators are checked; every region is convex and every node of the graph
is in at most one region."""
import math
import unittest

import torch
import torch.nn as nn
import torch.nn.functional as F

from whole_model import capture, partition


class WrittenAttention(nn.Module):
    def __init__(self):
        super().__init__()
        self.register_buffer("mask", torch.tril(torch.ones(16, 16)).view(1, 1, 16, 16))

    def forward(self, q, k, v):
        t = q.size(2)
        a = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(k.size(-1)))
        a = a.masked_fill(self.mask[:, :, :t, :t] == 0, float("-inf"))
        return F.softmax(a, dim=-1) @ v


class SDPA(nn.Module):
    def forward(self, q, k, v):
        return F.scaled_dot_product_attention(q, k, v, is_causal=True).transpose(1, 2)


class GemmEpilogue(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(32, 64)

    def forward(self, x):
        return F.gelu(self.fc(x)) * 2.0 + 1.0


class ResidualNorm(nn.Module):
    """x + y then a LayerNorm: the add joins the norm's region; the output
    of the add is used again after a GEMM, which must not join (a cycle)."""

    def __init__(self):
        super().__init__()
        self.ln = nn.LayerNorm(32)
        self.fc = nn.Linear(32, 32)

    def forward(self, x, y):
        h = x + y
        return h + self.fc(self.ln(h))


class Chain(nn.Module):
    def forward(self, x):
        return torch.tanh(x * 3.0).exp() - x.sigmoid()


def regions_of(model, *inputs):
    cap = capture.capture(model.eval(), list(inputs))
    out = []
    for g in cap.graphs:
        out.append((g, partition.partition(g.gm)))
    return out


def kinds(parts):
    return [(r.kind, r.name) for g, rs in parts for r in rs if r.compute(g.gm)]


class TestPartition(unittest.TestCase):
    def check_sound(self, parts):
        for g, rs in parts:
            seen = set()
            reach = partition._Reach(list(g.gm.graph.nodes))
            for r in rs:
                self.assertFalse(seen & set(r.nodes), "a node in two regions")
                seen |= set(r.nodes)
                self.assertTrue(reach.convex(r.nodes), "region %s is not convex" % r.name)

    def test_models(self):
        q = torch.randn(2, 4, 16, 8)
        cases = [
            ("written attention", WrittenAttention(), (q, q.clone(), q.clone()), [("attention", "attention")]),
            ("sdpa", SDPA(), (q, q.clone(), q.clone()), [("attention", "attention")]),
            ("gemm epilogue", GemmEpilogue(), (torch.randn(8, 32),), [("gemm", "linear_gelu_mul_add")]),
            ("residual norm", ResidualNorm(), (torch.randn(8, 32), torch.randn(8, 32)),
             [("reduction", "add_layer_norm"), ("gemm", "linear_add")]),
            ("pointwise chain", Chain(), (torch.randn(8, 32),), [("pointwise", "mul_tanh_exp_sigmoid_sub")]),
        ]
        for name, model, inputs, want in cases:
            with self.subTest(name):
                parts = regions_of(model, *inputs)
                self.check_sound(parts)
                self.assertEqual(kinds(parts), want)

    def test_attention_takes_its_mask_and_views(self):
        parts = regions_of(WrittenAttention(), *[torch.randn(2, 4, 16, 8) for _ in range(3)])
        (g, rs), = parts
        att = [r for r in rs if r.kind == "attention"][0]
        ops = [partition.op_name(g.gm, n) for n in att.nodes]
        for op in ("getitem", "eq", "masked_fill", "softmax", "transpose"):
            self.assertIn(op, ops)
        # Its inputs: q, k, v and the mask buffer, nothing computed outside.
        self.assertEqual(sorted(a.op for a in att.inputs()), ["placeholder"] * 4)

    def test_same_structure_same_key(self):
        """Two layers of the same shapes are one problem; other shapes or
        another constant are another."""
        def key(model, x):
            (g, rs), = regions_of(model, x)
            meta = {n: partition.tensor_meta(v) for n, v in g.values.items()}
            return [partition.op_key(g.gm, r, meta) for r in rs if r.compute(g.gm)]

        class Scaled(nn.Module):
            def __init__(self, s):
                super().__init__()
                self.s = s

            def forward(self, x):
                return torch.tanh(x * self.s)

        x = torch.randn(8, 32)
        self.assertEqual(key(Scaled(3.0), x), key(Scaled(3.0), x.clone()))
        self.assertNotEqual(key(Scaled(3.0), x), key(Scaled(4.0), x))
        self.assertNotEqual(key(Scaled(3.0), x), key(Scaled(3.0), torch.randn(4, 32)))

    def test_breaks_are_reported(self):
        class Breaks(nn.Module):
            def forward(self, x):
                y = x * 2
                if y.sum() > 0:
                    y = y + 1
                return y.tanh()

        cap = capture.capture(Breaks(), [torch.ones(4)])
        self.assertGreaterEqual(len(cap.graphs), 2)
        self.assertTrue(any("Data-dependent" in b["cause"] for b in cap.breaks), cap.breaks)


class TestAttribution(unittest.TestCase):
    def test_fit_to_graphs(self):
        """Node times over their graph's own run are scaled to it, keeping
        proportions; a graph whose nodes fit is left alone."""
        from whole_model.profile import Attribution, fit_to_graphs
        nodes = {(0, "a"): 30.0, (0, "b"): 90.0, (1, "c"): 10.0}
        got = fit_to_graphs(nodes, {0: 60.0, 1: 40.0})
        self.assertEqual(got, {(0, "a"): 15.0, (0, "b"): 45.0, (1, "c"): 10.0})
        att = Attribution(regions_us=70.0, graph_us={0: 60.0, 1: 40.0}, profiled_fwd_us=120.0)
        self.assertEqual((att.regions, att.glue, att.uncaptured, att.total), (70.0, 30.0, 20.0, 120.0))


if __name__ == "__main__":
    unittest.main()
