// Package deploy is where evolved kernels go to work: a registry in the one
// SQLite file keyed by (operator signature, shape set, dtype, device arch),
// each entry a verified kernel with its measured speedup and % of SOL; the
// rule that admits only kernels faster than what they replace beyond the
// measurement's spread; and the runtime dispatch package (runtime/, the
// Python kevolve_kernels with patch(model)) written out with the entries
// it serves.
package deploy
