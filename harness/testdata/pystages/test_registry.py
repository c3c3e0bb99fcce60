"""The check registry against the code that decides checks (run by
harness/stages_test.go with the worker's py dir on sys.path): every check
name the evaluation records is registered with the verdict it gives, and
every registered check belongs to a stage that exists."""
import ast
import glob
import os
import unittest

import checks
from evaluate import main as evaluate
from evaluate.job import Job

PY_DIR = os.path.dirname(os.path.dirname(os.path.abspath(evaluate.__file__)))  # above evaluate/
# Stages no evaluate.main.STAGES entry runs: the judge's verify stage (after
# the pipeline), the Go side's process checks, and "any" for a check
# decided wherever it happens (out_of_memory).
OUTSIDE_STAGES = ("verify", "process", "any")


def _literal(node):
    return node.value if isinstance(node, ast.Constant) and isinstance(node.value, str) else None


def recorded():
    """(file, name, verdict or None) of every check recorded with literal
    arguments: Check.add calls, ReferenceFailure stages (recorded under
    their stage's name, as reference_error) and the judge's report checks."""
    out = []
    # The evaluation's modules (workcount counts work: its .add and update
    # calls are counters', not checks) and the registry's.
    files = [p for p in glob.glob(os.path.join(PY_DIR, "evaluate", "**", "*.py"), recursive=True)
             if os.path.basename(p) != "workcount.py"] + glob.glob(os.path.join(PY_DIR, "checks", "*.py"))
    for path in files:
        with open(path) as f:
            tree = ast.parse(f.read())
        for node in ast.walk(tree):
            if not isinstance(node, ast.Call):
                continue
            fn = node.func
            attr = fn.attr if isinstance(fn, ast.Attribute) else getattr(fn, "id", None)
            args = node.args
            if attr == "add" and len(args) >= 2 and _literal(args[0]):
                out.append((path, _literal(args[0]), _literal(args[3]) if len(args) > 3 else None))
            elif attr in ("ReferenceFailure", "ref_failure") and args and _literal(args[0]):
                out.append((path, _literal(args[0]), "reference_error"))
            elif attr == "update":
                for kw in node.keywords:
                    if kw.arg == "check" and _literal(kw.value):
                        out.append((path, _literal(kw.value), None))
    return out


class Registry(unittest.TestCase):
    def test_recorded_checks_are_registered(self):
        seen = recorded()
        self.assertGreater(len(seen), 30, "the scan found too few checks: %s" % seen)
        for path, name, verdict in seen:
            where = "%s: check %s" % (os.path.basename(path), name)
            self.assertIn(name, checks.BY_NAME, where + " is not registered (add checks/%s.py)" % name)
            if verdict is not None:
                self.assertIn(verdict, checks.BY_NAME[name].verdicts, where + " gives %s, which its module does not declare" % verdict)

    def test_stages_exist(self):
        names = [s.name for s in evaluate.STAGES]
        self.assertEqual(len(names), len(set(names)), names)
        for c in checks.ALL:
            if c.run is not None:
                self.assertIn(c.stage, names, "check %s runs in stage %s, which no stage is" % (c.name, c.stage))
            else:
                self.assertIn(c.stage, names + list(OUTSIDE_STAGES), "check %s: unknown stage %s" % (c.name, c.stage))

    def test_stage_order_of_integrity_checks(self):
        self.assertEqual([c.name for c in checks.of_stage("integrity")][:4], ["threads", "stream", "timers", "harness_patched"])


class JobParse(unittest.TestCase):
    def test_defaults_as_before(self):
        j = Job.parse({"reference": {"code": "x"}, "candidate": {"code": "y"}, "seed": 0, "trials": None, "judge": None})
        self.assertEqual((j.target, j.seed, j.trials, j.budget_s, j.compile_cap_s, j.judge), ("cpu", 42, 5, 600.0, 90.0, True))
        self.assertFalse(Job.parse({"reference": {}, "candidate": {}, "judge": False}).judge)

    def test_device_defaults(self):
        import torch
        j = Job.parse({"reference": {}, "candidate": {}})
        cpu, gpu = torch.device("cpu"), torch.device("cuda", 0)
        self.assertEqual((j.flush_for(cpu), j.cap_for(cpu), j.compile_cap_for(cpu)), (32 << 20, 1.5, 240.0))
        self.assertEqual((j.flush_for(gpu), j.cap_for(gpu), j.compile_cap_for(gpu)), (256 << 20, 3.0, 90.0))


if __name__ == "__main__":
    unittest.main()
