"""The registry of the evaluation's checks: one module per check that runs
in its stage (run(st), below), found at import (pkgutil), so adding such
a check is adding a module and nothing else, and one table, _declared.py,
of the checks decided inline. Each module declares, as plain literals at
the start of a line, which the Go side parses too (harness/worker/checks.go,
for the run_kernel description):

    NAME = "threads"                # its name in results; the module's file name
    STAGE = "integrity"             # the stage that runs it, or decides it
    VERDICT = "integrity_violation" # what a failure gives ("a or b" where it depends)
    DESCRIPTION = "One sentence: what passing means."
    ORDER = 20                      # optional: its place in its stage (default 100)

and, where its stage runs it through the registry, run(st) over the
evaluation's state (evaluate.state.EvalState) returning None (does not
apply here) or (passed, detail). A check decided inline, inside a stage's
loop (the comparisons of each trial), by the judge's process or by the Go
side, has no run(): it is an entry of _declared.py (the same fields, no
ORDER), listed all the same. A module without run() declares one too.

VERDICT "none" marks a record that never fails (what the harness did)."""
import importlib
import pkgutil
import re
import types

from checks._declared import DECLARED

# What a failed check can give (Go: harness.Verdict*), and "none".
VERDICTS = ("integrity_violation", "incorrect", "shape_specialized", "compile_error", "runtime_error", "timeout", "crash",
            "reference_error", "none")
DEFAULT_ORDER = 100
_IDENT = re.compile(r"^[a-z][a-z0-9_]*$")


class Registered:
    """One check's metadata and its run function (None when declared only)."""

    def __init__(self, mod):
        self.name, self.stage = mod.NAME, mod.STAGE
        self.verdict, self.description = mod.VERDICT, mod.DESCRIPTION
        self.order = getattr(mod, "ORDER", DEFAULT_ORDER)
        self.run = getattr(mod, "run", None)
        self.module = mod

    @property
    def verdicts(self):
        return self.verdict.split(" or ")


def _validate(name, mod):
    """A malformed module stops the import: Go refuses the same module
    before it starts a worker (harness/worker/checks.go)."""
    for field in ("NAME", "STAGE", "VERDICT", "DESCRIPTION"):
        if not isinstance(getattr(mod, field, None), str):
            raise ImportError("check module %s: %s must be a string literal" % (name, field))
    if mod.NAME != name or not _IDENT.match(name):
        raise ImportError("check module %s: NAME %r must be its file name" % (name, mod.NAME))
    if not _IDENT.match(mod.STAGE):
        raise ImportError("check module %s: STAGE %r is not a stage name" % (name, mod.STAGE))
    bad = [v for v in mod.VERDICT.split(" or ") if v not in VERDICTS]
    if bad:
        raise ImportError("check module %s: unknown verdict(s) %s" % (name, bad))
    if not mod.DESCRIPTION.strip():
        raise ImportError("check module %s: empty DESCRIPTION" % name)
    if not isinstance(getattr(mod, "ORDER", DEFAULT_ORDER), int):
        raise ImportError("check module %s: ORDER must be an integer literal" % name)
    run = getattr(mod, "run", None)
    if run is not None and (not callable(run) or " or " in mod.VERDICT):
        raise ImportError("check module %s: run() needs one verdict" % name)


def _declared(entry):
    """One entry of _declared.py as a module's declarations would read."""
    if not (isinstance(entry, tuple) and len(entry) == 4 and all(isinstance(v, str) for v in entry)):
        raise ImportError("checks/_declared.py: %r is not (name, stage, verdict, description)" % (entry,))
    name, stage, verdict, description = entry
    return name, types.SimpleNamespace(NAME=name, STAGE=stage, VERDICT=verdict, DESCRIPTION=description)


def _discover():
    found = []
    for info in sorted(pkgutil.iter_modules(__path__), key=lambda i: i.name):
        if info.ispkg or info.name.startswith("_"):
            continue
        mod = importlib.import_module(__name__ + "." + info.name)
        _validate(info.name, mod)
        found.append(Registered(mod))
    for entry in DECLARED:
        name, decl = _declared(entry)
        _validate(name, decl)
        found.append(Registered(decl))
    names = [c.name for c in found]
    twice = sorted({n for n in names if names.count(n) > 1})
    if twice:
        raise ImportError("checks declared twice: %s" % twice)
    return sorted(found, key=lambda c: c.name)


ALL = _discover()
BY_NAME = {c.name: c for c in ALL}


def of_stage(stage):
    """The checks a stage runs, in their order (then by name)."""
    return sorted((c for c in ALL if c.stage == stage and c.run is not None), key=lambda c: (c.order, c.name))


def run_stage(st, stage):
    """Runs the stage's registered checks and records what they say."""
    for c in of_stage(stage):
        out = c.run(st)
        if out is not None:
            passed, detail = out
            st.checks.add(c.name, passed, detail, c.verdict)
