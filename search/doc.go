// Package search will hold the graph search (nodes, edges, selection
// policies, operators). It is empty until the evolve issue lands.
package search
