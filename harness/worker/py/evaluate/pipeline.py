"""The driver of an evaluation's stages (evaluate.main.STAGES): each stage is a
function over the shared state (evaluate.state.EvalState), followed by the
checks registered for it (checks/). A stage ends the evaluation by
returning STOP, by raising (KernelFailure, ReferenceFailure: a verdict;
HarnessError: no verdict), or, where it is marked stop_if_failed, when any
check has failed by its end."""
import checks

STOP = "stop"


class Stage:
    def __init__(self, name, body=None, stop_if_failed=False):
        self.name = name
        self.body = body  # None: the stage is its registered checks alone
        self.stop_if_failed = stop_if_failed


def run_stages(st, stages):
    for stage in stages:
        if stage.body is not None and stage.body(st) is STOP:
            return
        checks.run_stage(st, stage.name)
        if stage.stop_if_failed and st.checks.failed():
            return
