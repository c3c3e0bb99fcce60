"""The checks declared without a module of their own: each is decided
inline (inside a stage's loop, by the judge's process or by the Go side),
so none has run(st), and each takes the default ORDER. One entry per
check, sorted by name, the comment above it saying where it is decided:

    # Decided by ...
    ("name", "stage", "verdict",
     "Description: one sentence, what passing means."),

name, stage, verdict and description mean what a check module's NAME,
STAGE, VERDICT and DESCRIPTION do (__init__.py). The Go side parses this
file too (harness/worker/checks.go), line by line and strictly: an
entry's first line holds its name, stage and verdict, its second its
description, each a string literal without quotes or backslashes inside;
only comments and blank lines stand between entries and after the table.
A check with run(st) is a module of this package instead."""
DECLARED = (
    # Decided inside each correctness trial (evaluate.compare.compare.compare, through evaluate.compare.tolerance).
    ("allclose", "correctness", "incorrect",
     "Every element is within the dtype's tolerance of the reference's: |out-ref| <= atol + rtol*|ref|."),
    # Decided inside the timed loop (evaluate.guards.integrity.Auditor) and by evaluate.stages.after.after_timing.
    ("audit", "after_timing", "integrity_violation",
     "Timed calls checked at random on refreshed inputs, and one call on fresh inputs after timing, match the reference."),
    # Decided by evaluate.stages.load.construct.
    ("construct", "construct", "compile_error or runtime_error",
     "ModelNew(*get_init_inputs()) builds, from the seed the reference's weights came from."),
    # Decided inside each correctness trial (evaluate.compare.compare.compare).
    ("contiguity", "correctness", "incorrect",
     "Each output is a dense tensor (another dense layout such as transposed or channels-last passes with a note; expanded or overlapping outputs fail)."),
    # Decided by the Go side (harness/evaluate.go).
    ("deadline", "process", "timeout",
     "The evaluation finished within its time limit (the time it waited for a CPU on a loaded host is granted)."),
    # Decided after the trials (evaluate.compare.degenerate).
    ("degenerate_reference", "correctness", "reference_error",
     "The reference's outputs change with its inputs across the trials: a constant output measures nothing."),
    # Decided inside each correctness trial (evaluate.compare.compare.compare).
    ("device", "correctness", "incorrect",
     "Each output is on the reference's device."),
    # Decided by evaluate.guards.devstate.check inside the timing stage.
    ("device_state", "timing", "integrity_violation",
     "The candidate left the device's context limits, cache configuration and stream attributes as the harness set them (checked before the reference is timed)."),
    # Decided inside each correctness trial (evaluate.compare.compare.compare).
    ("dtype", "correctness", "incorrect",
     "Each output has the reference's dtype."),
    # Decided inside each correctness trial (evaluate.compare.compare.compare).
    ("finite", "correctness", "incorrect",
     "Outputs are NaN or Inf exactly where the reference's are (unwritten memory is NaN-poisoned)."),
    # Decided inside each correctness trial (chunk fingerprints before and after the call).
    ("input_mutation", "correctness", "integrity_violation",
     "The candidate does not write its inputs in place (unless the reference does)."),
    # Decided by the Go side from the judge's report (harness/judge.go, evaluate.judge.judge).
    ("judge", "verify", "incorrect or runtime_error or timeout",
     "A separate judge process, which the candidate cannot reach, runs ModelNew on inputs only it knows and agrees with the in-process pass."),
    # Decided by the Go side from the judge's report (harness/judge.go).
    ("judge_missing", "verify", "integrity_violation",
     "The judge verified the in-process pass and wrote its report."),
    # Named in the judge's report (evaluate.judge.judge); the Go side reports it as check out_of_memory.
    ("judge_oom", "verify", "runtime_error",
     "In the judge's report: neither the judge nor ModelNew on the judge's inputs ran out of device memory (on a shared device the evaluation runs again alone first)."),
    # Named in the judge's report (evaluate.judge.judge); the Go side reports it as check judge_missing.
    ("judge_protocol", "verify", "integrity_violation",
     "In the judge's report: the evaluation process answered the judge's requests as the protocol says."),
    # Named in the judge's report (evaluate.judge.judge); the Go side reports it as check judge.
    ("judge_run", "verify", "runtime_error",
     "In the judge's report: ModelNew ran on the judge's inputs."),
    # Named in the judge's report (evaluate.judge.judge); the Go side reports it as check judge.
    ("judge_timeout", "verify", "timeout",
     "In the judge's report: the judge's verification finished within its budget."),
    # Decided by evaluate.stages.load.load_candidate: a compiler's error is compile_error, any other runtime_error.
    ("load_candidate", "load_candidate", "compile_error or runtime_error",
     "The candidate imports (its kernels build) and defines ModelNew."),
    # Decided by the Go side (harness/evaluate.go).
    ("memory", "process", "crash",
     "The harness's own Python did not run out of host memory (MemoryError) before it reported."),
    # Decided after a wrong answer in the trials (evaluate.stages.correctness).
    ("nondeterministic_reference", "correctness", "reference_error",
     "The reference gives the same outputs when called twice on the same inputs: a random one (a Dropout in training mode) no candidate can match."),
    # Decided wherever memory runs out (evaluate.main) and by the Go side for the host limit and the job's cgroup (harness/convert.go).
    ("out_of_memory", "any", "runtime_error or integrity_violation",
     "Neither program runs out of device memory, nor the evaluation process (its children counted) past its host memory limit or its cgroup's memory limit (which counts what the job writes to its /tmp and /dev/shm); after an integrity violation, running out of memory stays an integrity_violation."),
    # Decided inside each correctness trial.
    ("output_aliasing", "correctness", "integrity_violation",
     "No output shares memory with an input (unless the reference's do)."),
    # Decided inside each correctness trial (evaluate.stages.correctness).
    ("output_type", "correctness", "integrity_violation or incorrect",
     "The candidate returns plain tensors where the reference does (a subclass or another object is an integrity_violation) and as many outputs (incorrect otherwise)."),
    # Recorded by evaluate.stages.correctness (evaluate.compare.compare.poison_allocator).
    ("poisoned_allocator", "correctness", "none",
     "Free device memory was filled with NaN before the candidate's first call, so an output it never writes shows (a record of what was done)."),
    # Decided by the Go side (harness/evaluate.go).
    ("process", "process", "crash",
     "The evaluation process did not die (a signal, an exit) before it reported a result."),
    # Decided by the Go side (harness/convert.go) from the job's cgroup (sandbox/cgroup.py).
    ("process_limit", "process", "runtime_error",
     "The job's processes and threads stayed under its cgroup's pids.max, which no honest job comes near: a fork or thread bomb is stopped there, fails the job and is killed with it."),
    # Decided at every call of the reference (evaluate.state.EvalState.ref_forward).
    ("reference_forward", "correctness", "reference_error",
     "The reference's forward runs on its inputs."),
    # Decided by evaluate.stages.load.load_reference (a ReferenceFailure names the reference's file:line).
    ("reference_import", "load_reference", "reference_error",
     "The reference imports and defines Model, get_inputs and get_init_inputs (KernelBench format)."),
    # Decided by evaluate.stages.load.construct.
    ("reference_init", "construct", "reference_error",
     "The reference's get_init_inputs() and Model(*get_init_inputs()) run."),
    # Decided wherever inputs are made (evaluate.state.EvalState.make_inputs).
    ("reference_inputs", "correctness", "reference_error",
     "The reference's get_inputs() runs and returns a list of forward arguments."),
    # Decided by evaluate.guards.tamper.RefGuard wherever the reference is about to run.
    ("reference_tampered", "load_candidate", "integrity_violation",
     "The candidate leaves torch, the process's settings and the reference model as it found them, from its import on, before every call of the reference."),
    # Decided inside each correctness trial (evaluate.compare.compare.compare, through evaluate.compare.tolerance).
    ("relative_norm", "correctness", "incorrect",
     "The output's relative error ||out-ref||/||ref|| is within the dtype's rel_norm."),
    # Decided by the Go side (harness/evaluate.go).
    ("result_forged", "process", "integrity_violation",
     "The result the Go side reads was written by the harness, which reports before its process ends."),
    # Decided at every call of the candidate (evaluate.state.EvalState.run_candidate, the timing stages).
    ("run_candidate", "correctness", "compile_error or runtime_error",
     "The candidate's forward runs, in the trials and in every later call (memoization, timing, audits, the stream check)."),
    # Decided inside each correctness trial (evaluate.compare.compare.compare).
    ("shape", "correctness", "incorrect",
     "Each output has the reference's shape."),
    # Named in the judge's report (evaluate.judge.judge, evaluate.compare.unseen); the Go side reports it as check shape_specialized.
    ("shape_specialized", "verify", "shape_specialized",
     "In the judge's report: ModelNew, correct at the shown shape, is correct at shapes it was not shown (other SHAPES entries, module-level sizes halved or doubled) where the problem allows them."),
    # Decided by evaluate.guards.integrity.stream_work_check inside the stream_check stage.
    ("stream_work", "stream_check", "integrity_violation",
     "No work of the candidate's runs outside the measured stream or thread: its output is complete when the measured stream ends (CUDA)."),
    # Decided by the Go side from the judge's report (harness/judge.go).
    ("timer_tampered", "verify", "integrity_violation",
     "The in-process timing agrees with the judge's own timing of the candidate from outside the process."),
)
