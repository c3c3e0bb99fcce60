package engine

import (
	"sort"

	"github.com/kevolve/kevolve-mcp/search"
)

func sortByEvalSeq(ns []*search.Node) {
	sort.SliceStable(ns, func(i, j int) bool { return ns[i].EvalSeq < ns[j].EvalSeq })
}
