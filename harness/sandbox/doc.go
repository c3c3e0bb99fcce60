// Package sandbox holds the Go side of the sandbox around candidate code:
// the environment allowlist every process that runs untrusted code gets
// (the Python worker, the compile, profile and trace helpers), and the
// names and meanings of the layers the Python worker applies per job
// (harness/worker/py/sandbox/layers.py), which doctor and the results report.
package sandbox
