"""whole_model.starts' reuse of earlier runs: a start or a "no start"
answer is kept beside its problem with the key it was made under (the
problem's text, torch, the device, the module), and a second run of the
job answers from it without compiling; a changed problem compiles again.
Inductor itself is not run here (generate is replaced): the compiles are
TestInductorStartIsOwnKernel's and the optimize tests'."""
import os
import tempfile
import unittest

from whole_model import starts

PROBLEM = """import torch
class Model(torch.nn.Module):
    def forward(self, x):
        return torch.relu(x) * %s
def get_inputs():
    return [torch.randn(8)]
def get_init_inputs():
    return []
"""


class _Ctx:
    def progress(self, *a, **k):
        pass


class StartsReuse(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.mkdtemp()
        self.calls = []
        self.answer = [("default", "async_compile.cpp_pybinding('k')")]
        self._generate = starts.generate
        starts.generate = self._fake

    def tearDown(self):
        starts.generate = self._generate

    def _fake(self, problem, device, configs):
        self.calls.append(problem)
        return list(self.answer), []

    def _problem(self, name, scale):
        p = os.path.join(self.dir, name + ".py")
        with open(p, "w") as f:
            f.write(PROBLEM % scale)
        return p

    def _run(self, *problems):
        return starts.main({"problems": list(problems), "device": "cpu"}, _Ctx())

    def test_start_reused_until_the_problem_changes(self):
        p = self._problem("relu_scale", "2.0")
        first = self._run(p)
        self.assertEqual(list(first["starts"]), [p])
        self.assertEqual((self.calls, first["reused"]), ([p], []))
        second = self._run(p)
        self.assertEqual(second["starts"], first["starts"])
        self.assertEqual((self.calls, second["reused"]), ([p], [p]))
        self._problem("relu_scale", "3.0")  # same file, other text: another key
        third = self._run(p)
        self.assertEqual((self.calls, third["reused"]), ([p, p], []))

    def test_no_start_is_remembered_too(self):
        p = self._problem("library_only", "1.5")
        self.answer = []
        first = self._run(p)
        self.assertIn(p, first["errors"])
        second = self._run(p)
        self.assertEqual((second["errors"], second["reused"], self.calls), (first["errors"], [p], [p]))

    def test_a_failure_is_tried_again(self):
        p = self._problem("raises", "4.0")

        def boom(*a):
            self.calls.append(p)
            raise RuntimeError("compile worker died")
        starts.generate = boom
        self.assertIn("compile worker died", self._run(p)["errors"][p])
        self._run(p)
        self.assertEqual(self.calls, [p, p])


if __name__ == "__main__":
    unittest.main()
