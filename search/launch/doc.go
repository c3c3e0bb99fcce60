// Package launch assembles a search in one place, for every front end: the
// evolve, suite and optimize commands, the MCP tools (evolve_start, the
// model flow) and the fleet's workers. It owns the defaults a request
// leaves open (the draft phase, the suite's stopping rules), the evaluator
// (ceilings, timeout, kernel policy), the operator with its full context
// (device, knowledge retrieval, earlier runs' kernels) and what follows a
// run (memory write-back, the report). Front ends only translate their
// flags or arguments into a Request, so the same request gets the same run
// whichever way it came.
package launch
