// Package report renders one search run as a single self-contained HTML file
// (no network: inline CSS, SVG and a small script, all embedded).
//
//	report.WriteFile(path, run, nodes, ceilings) // the page, written atomically
//	report.WriteHTML(w, run, nodes, ceilings)    // the same, to a writer
//
// The page shows the search tree (colour = fitness, shape = verdict, the best
// node and its lineage in gold), best-so-far over evaluations and over wall
// time, the roofline with every timed node (a bandwidth chart when the work
// has no FLOPs), and the selected node's code, diff against its parent,
// checks, timing and SOL. "#node=ID" in the URL selects a node.
//
// # Input contract
//
// The package knows nothing of the store: callers map their rows into Run,
// []Node and Ceilings. What each field means, and what the report does with
// an empty one:
//
//   - Run.ID, Problem, Target, Device, Policy, Operator, Baseline, Status:
//     free text shown in the header (Baseline is "eager" or "compile": what
//     Node.Fitness is a speedup over). Empty fields are left out.
//   - Run.StartedAt / EndedAt: wall time is Run.WallS when set (a resumed
//     run's pauses excluded), else EndedAt-StartedAt; a zero EndedAt (a run
//     still going) uses the latest node time instead. A zero StartedAt uses
//     the earliest node time. The time chart counts from StartedAt.
//   - Run.StopReason: shown beside the status.
//   - Run.BudgetEvals / BudgetWall: the budget, shown beside what was used (0 =
//     unlimited).
//   - Run.BestNodeID: the run's best node. Empty means "the highest fitness
//     among pass nodes, earliest on ties".
//   - Run.TSolS: the problem's speed-of-light time, when the run knows it
//     (nodes may carry their own).
//   - Node.ID: unique within the run, any string (the store's integer id
//     formatted is fine). Node.Parents: the ids it was derived from; the first
//     is its parent in the drawn tree and in the diff, further ones are drawn
//     as dashed edges. A parent id that is not in []Node makes the node a root.
//     Nodes may come in any order; the report orders them by CreatedAt, then
//     by their position in the slice.
//   - Node.Verdict: one of pass, incorrect, compile_error, runtime_error,
//     timeout, crash, integrity_violation, reference_error; "" while the node
//     is not evaluated yet (pending); "failed" for a node whose operator or
//     evaluation failed without a verdict (put the error in Message). Any
//     other string is shown as given.
//   - Node.FinishedAt: when the evaluation ended; zero for pending nodes.
//     Node.EvalSeq (1-based), when every finished node has one, orders the
//     best-so-far-by-evaluation chart; otherwise FinishedAt does. The
//     by-time chart always uses FinishedAt.
//   - Node.Fitness: the search's fitness (speedup over the run's baseline, 0
//     for anything not pass). The tree's colours and the best-so-far charts
//     use it.
//   - Node.SpeedupEager / SpeedupCompile / SpeedupStart, TSolS, SolScore,
//     PctOfSol (0..100), Timing: nil when unknown; never guessed, with one
//     derivation: a nil SpeedupStart of a timed pass node is its tree root's
//     median over its own, when the root passed and was timed. NaN and ±Inf
//     count as unknown. Timing.P10S/P90S/CV of 0 are shown as unknown.
//   - Node.Island, Diagnosis, Notes, Cost: shown in the node's panel.
//   - Node.FLOPs / Bytes: the work per call; with Timing.MedianS they place the
//     node on the roofline (nodes without them are listed as not placed).
//   - Ceilings: the device's peak FLOP/s per dtype and memory bandwidth;
//     Ceilings.Dtype picks the compute roof. The zero value draws no roofline
//     and says why. CeilingsFromSol converts the harness's sol.Ceilings.
//
// Every string is escaped: node code, notes and check details may hold any
// bytes, "</script>" included, and the page sets a Content-Security-Policy
// that only runs its own script (by hash) and fetches nothing.
package report
