package tools

import (
	"context"

	"github.com/kevolve/kevolve-mcp/corpus"
	"github.com/kevolve/kevolve-mcp/harness"
)

// CorpusResolver resolves corpus problem names (built-ins, and KernelBench
// imports when reg is not nil) for run_kernel and sol_analysis; built-in
// references are written under root.
func CorpusResolver(reg *corpus.Registry, root string) ReferenceResolver {
	return func(name, shapes string) (ResolvedReference, error) {
		var r corpus.Resolved
		var err error
		if reg != nil {
			r, err = reg.Resolve(context.Background(), name, shapes, root)
		} else {
			r, err = corpus.ResolveBuiltin(name, shapes, root)
		}
		if err != nil {
			return ResolvedReference{}, err
		}
		out := ResolvedReference{Source: harness.Source{Path: r.ReferencePath}, FLOPs: r.FLOPs, Bytes: r.Bytes, Dtype: r.Dtype}
		if t := r.Tolerance; t != nil {
			out.Tolerance = &harness.Tolerance{Atol: t.Atol, Rtol: t.Rtol}
		}
		return out, nil
	}
}
