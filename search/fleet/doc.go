// Package fleet spreads a search's evaluations over long-lived, warm,
// pull-based workers (`kevolve-mcp worker`), one per host, each using every
// device of its host.
//
// The coordinator is the process running the search. It keeps jobs and
// workers in the search's SQLite file (migrate.go, component "fleet"),
// serves them over HTTP with a bearer token (coordinator.go), and gives the
// engine an Evaluator that enqueues a job per device kind and waits for the
// results (evaluator.go), so the engine itself is unchanged.
//
// A worker (worker.go) registers its devices, claims jobs matched on target
// and arch with a lease it renews by heartbeats, runs up to Device.Jobs
// jobs per device, and reports results. A lease that expires (a worker
// killed, partitioned or stopped) requeues its job; a job blamed for two
// workers' deaths (the k jobs a worker held share it, 1/k each) is recorded
// as a crash instead of being retried forever (Queue.Reap). Results are
// idempotent by job id: a late duplicate is ignored. Everything is in the
// store, so a coordinator killed and restarted loses nothing: workers retry
// until it is back and the search resumes.
//
// Launchers (launch*.go) start workers on existing engines: local
// processes, ssh hosts, Slurm (sbatch/squeue/sacct/scancel); manifest.go
// writes a Kubernetes manifest.
package fleet
