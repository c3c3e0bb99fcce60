// Package search is the graph search of kevolve-mcp, KernelEvolve's
// (fitness, selection policy, operator, termination) formulation: a run is a
// graph whose nodes are kernels and whose edges say "derived from".
//
// This package holds the vocabulary alone (runs, nodes, results, fitness)
// and the small interfaces the parts meet at: Store, Policy, Operator,
// Evaluator and Termination. Implementations live in sub-packages
// (search/store, search/policy, search/operator/..., search/engine), so each
// can be replaced without touching the others and the imports run downward.
package search
