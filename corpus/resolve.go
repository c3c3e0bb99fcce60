package corpus

import (
	"context"
	"fmt"

	"github.com/kevolve/kevolve-mcp/harness/problem"
)

// Resolved is a problem made ready for the harness: its reference file on
// disk and what its metadata declares for one shape set.
type Resolved struct {
	Problem       Problem
	ReferencePath string
	ShapeSet      string
	// FLOPs and Bytes are the declared formulas evaluated on the shape set;
	// 0 when the problem declares none (KernelBench imports).
	FLOPs, Bytes float64
	Dtype        string
	Tolerance    *Tolerance
}

// Resolve finds a built-in or imported problem by name and evaluates its
// declared work for shapeSet ("" = "large"). Built-ins are materialized
// under root first, so the reference exists as a file.
func (r *Registry) Resolve(ctx context.Context, name, shapeSet, root string) (Resolved, error) {
	p, err := r.Get(ctx, name)
	if err != nil {
		return Resolved{}, err
	}
	return resolve(p, shapeSet, root)
}

// ResolveBuiltin is Resolve for the built-in problems alone, for callers
// without a database.
func ResolveBuiltin(name, shapeSet, root string) (Resolved, error) {
	p, err := Get(name)
	if err != nil {
		return Resolved{}, err
	}
	return resolve(p, shapeSet, root)
}

func resolve(p Problem, shapeSet, root string) (Resolved, error) {
	if shapeSet == "" {
		shapeSet = "large"
	}
	out := Resolved{Problem: p, ShapeSet: shapeSet, Dtype: p.DtypeFor(shapeSet), Tolerance: p.Tolerance}
	if p.Source == SourceBuiltin {
		var err error
		if root, err = Materialize(root); err != nil {
			return Resolved{}, err
		}
		vars, err := p.FormulaVars(shapeSet)
		if err != nil {
			return Resolved{}, err
		}
		if p.FLOPs != "" {
			if out.FLOPs, err = FormulaValue(p.FLOPs, vars); err != nil {
				return Resolved{}, fmt.Errorf("problem %s: flops: %w", p.Name, err)
			}
		}
		if p.Bytes != "" {
			if out.Bytes, err = FormulaValue(p.Bytes, vars); err != nil {
				return Resolved{}, fmt.Errorf("problem %s: bytes: %w", p.Name, err)
			}
		}
	}
	out.ReferencePath = p.ReferencePath(root)
	return out, nil
}

// Harness is a resolved problem in the harness's terms: the reference file,
// shape set, dtype, tolerance, declared work (formulas and their values)
// and tags.
func (r Resolved) Harness() problem.Problem {
	p := problem.Problem{Name: r.Problem.Name, Reference: problem.Source{Path: r.ReferencePath},
		Shapes: r.ShapeSet, Dtype: r.Dtype, Tags: append([]string(nil), r.Problem.Tags...),
		Work: problem.Work{FLOPs: r.FLOPs, Bytes: r.Bytes, FLOPsFormula: r.Problem.FLOPs, BytesFormula: r.Problem.Bytes,
			Shapes: r.ShapeSet, Dtype: r.Dtype}}
	if t := r.Tolerance; t != nil {
		p.Tolerance = &problem.Tolerance{Atol: t.Atol, Rtol: t.Rtol}
	}
	return p
}

// Resolver resolves corpus names for the harness: built-ins, and KernelBench
// imports when reg is not nil. Built-in references are written under root.
func Resolver(reg *Registry, root string) problem.Resolver {
	return problem.ResolverFunc(func(ctx context.Context, name, shapes string) (problem.Problem, error) {
		var res Resolved
		var err error
		if reg != nil {
			res, err = reg.Resolve(ctx, name, shapes, root)
		} else {
			res, err = ResolveBuiltin(name, shapes, root)
		}
		if err != nil {
			return problem.Problem{}, err
		}
		p := res.Harness()
		// The set asked for, "" included: the evaluator picks the target's
		// default (small on the CPU), and Work.Shapes says which set the
		// declared counts are for.
		p.Shapes = shapes
		return p, nil
	})
}
