// Package kernelbench runs a KernelBench sweep: it discovers the problems
// of the chosen levels (KernelBench/level{N}/{id}_{name}.py), pairs each
// with its candidate (a folder of <level>/<id>_<name>.py files, a glob
// pattern, or the problem file itself renamed Model→ModelNew), evaluates the
// pairs through the harness's evaluator, keeps every result in SQLite (table
// kernelbench_results, so a sweep resumes where it stopped) and in a JSONL
// file, and reports KernelBench's metrics: fast_p over eager and over
// torch.compile, the geometric mean speedup and the count of each verdict.
//
// A harness failure on one pair (a Go error from the evaluator) is a tool
// error: it is listed apart from the verdicts and the sweep goes on.
package kernelbench
