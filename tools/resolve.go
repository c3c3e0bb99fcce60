package tools

import (
	"context"

	"github.com/kevolve/kevolve-mcp/corpus"
)

// CorpusResolver resolves corpus problem names (built-ins, and KernelBench
// imports when reg is not nil) through corpus.Resolver; built-in references
// are written under root.
func CorpusResolver(reg *corpus.Registry, root string) ReferenceResolver {
	res := corpus.Resolver(reg, root)
	return func(name, shapes string) (ResolvedReference, error) {
		p, err := res.Problem(context.Background(), name, shapes)
		if err != nil {
			return ResolvedReference{}, err
		}
		return ResolvedReference{Source: p.Reference, Tolerance: p.Tolerance, FLOPs: p.Work.FLOPs, Bytes: p.Work.Bytes,
			Dtype: p.Dtype, Shapes: p.Work.Shapes}, nil
	}
}
