"""evaluate.baseline: torch.compile's default backend with the device gate
taken between Inductor's compile and the compiled code's first run."""
import unittest

import torch

from evaluate import baseline

_EVENTS = []


@torch.library.custom_op("kevolve_test::mark", mutates_args=())
def _mark(x: torch.Tensor) -> torch.Tensor:
    _EVENTS.append("ran")
    return x.clone()


@_mark.register_fake
def _(x):
    return torch.empty_like(x)


def _forward(x):
    return _mark(x * 2) + 1


class GatedCompile(unittest.TestCase):
    def test_gate_between_compile_and_first_run(self):
        # The op runs when the compiled code runs, never while Inductor
        # compiles it: the gate must come first.
        _EVENTS.clear()
        x = torch.randn(8)
        compiled = baseline._compiled(_forward, [x], 240, torch.device("cpu"), lambda: _EVENTS.append("gate"))
        self.assertEqual(_EVENTS[:2], ["gate", "ran"])
        torch.testing.assert_close(compiled(x), x * 2 + 1)


if __name__ == "__main__":
    unittest.main()
