// Package problem is what an evaluation is asked about: a Problem (the
// reference program and what its metadata declares) and a Candidate, and
// how a caller's arguments (a file, a corpus name, inline source) become
// them. The MCP tools, the CLI and the search all resolve through here, so
// they accept the same things and reject the same things with the same
// typed errors. It imports nothing of the module: corpus resolves into it.
package problem

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// MaxSourceBytes caps a reference or candidate: a kernel file is kilobytes;
// megabytes of source are a mistake or an attack, and every byte is shipped
// to and parsed by the worker.
const MaxSourceBytes = 4 << 20

// Source is a Python program given as a file path or inline code.
type Source struct {
	Path string `json:"path,omitempty"`
	Code string `json:"code,omitempty"`
}

// Candidate is the program under test: a file or inline source defining
// ModelNew.
type Candidate = Source

// Tolerance overrides the dtype defaults (fp32 1e-4, bf16/fp16 ~1e-2).
// A zero field keeps the default.
type Tolerance struct {
	Atol    float64 `json:"atol,omitempty"`
	Rtol    float64 `json:"rtol,omitempty"`
	RelNorm float64 `json:"rel_norm,omitempty"`
}

// Work is what a problem declares it must do for its shape set: formulas
// as written and their values (0 = not declared: the evaluator traces).
type Work struct {
	FLOPs        float64 `json:"flops,omitempty"`
	Bytes        float64 `json:"bytes,omitempty"`
	FLOPsFormula string  `json:"flops_formula,omitempty"`
	BytesFormula string  `json:"bytes_formula,omitempty"`
	// Shapes is the shape set the counts are for; an evaluation that runs
	// another set (the CPU's small default) traces its work instead.
	Shapes string `json:"shapes,omitempty"`
	// Dtype is the compute dtype of that shape set.
	Dtype string `json:"dtype,omitempty"`
}

// Declared reports whether both counts are declared.
func (w Work) Declared() bool { return w.FLOPs > 0 && w.Bytes > 0 }

// Problem is one reference and everything its metadata says.
type Problem struct {
	// Name is the corpus name (llm/rmsnorm, kernelbench/level1/19_ReLU);
	// empty for a file or inline source given directly.
	Name      string     `json:"name,omitempty"`
	Reference Source     `json:"reference"`
	Shapes    string     `json:"shapes,omitempty"` // shape set, exported to the reference as KEVOLVE_SHAPES
	Dtype     string     `json:"dtype,omitempty"`
	Tolerance *Tolerance `json:"tolerance,omitempty"`
	Work      Work       `json:"work,omitempty"`
	Tags      []string   `json:"tags,omitempty"`
}

// InputError is a caller's mistake, named by the argument at fault: the
// message says what is wrong and what is allowed. Tools return it as a
// tool error, the CLI prints it; errors.As finds it.
type InputError struct {
	Arg string // the argument as the tool and CLI name it: reference, candidate_source, device...
	Msg string
}

func (e *InputError) Error() string { return e.Arg + ": " + e.Msg }

// Inputf returns an *InputError.
func Inputf(arg, format string, a ...any) error {
	return &InputError{Arg: arg, Msg: fmt.Sprintf(format, a...)}
}

// Resolver finds a problem by corpus name for a shape set ("" = default).
// An unknown name is an error that says so (with near names where known).
type Resolver interface {
	Problem(ctx context.Context, name, shapes string) (Problem, error)
}

// ResolverFunc adapts a function to Resolver.
type ResolverFunc func(ctx context.Context, name, shapes string) (Problem, error)

// Problem calls f.
func (f ResolverFunc) Problem(ctx context.Context, name, shapes string) (Problem, error) {
	return f(ctx, name, shapes)
}

// Ref is how a caller names a problem: a file or a corpus name, or inline
// source, and a shape set.
type Ref struct {
	Reference       string // a file path or a corpus name
	ReferenceSource string // inline source
	Shapes          string
}

// Resolve turns a Ref into a Problem: inline source as is, an existing file
// by path, anything else not ending in .py by corpus name (r may be nil:
// then only files and inline source are accepted).
func Resolve(ctx context.Context, ref Ref, r Resolver) (Problem, error) {
	if err := CheckShapes(ref.Shapes); err != nil {
		return Problem{}, err
	}
	switch {
	case ref.Reference != "" && ref.ReferenceSource != "":
		return Problem{}, Inputf("reference", "give reference (a file or corpus name) or reference_source, not both")
	case ref.ReferenceSource != "":
		if err := checkSize("reference_source", len(ref.ReferenceSource)); err != nil {
			return Problem{}, err
		}
		return Problem{Reference: Source{Code: ref.ReferenceSource}, Shapes: ref.Shapes}, nil
	case ref.Reference == "":
		return Problem{}, Inputf("reference", "required: a KernelBench-format file, a corpus problem name (e.g. llm/rmsnorm), or reference_source")
	}
	if len(ref.Reference) > MaxPathBytes {
		return Problem{}, Inputf("reference", "%q is too long: a path or corpus name, at most %d bytes", Clip(ref.Reference), MaxPathBytes)
	}
	if _, err := os.Stat(ref.Reference); err == nil {
		// A file (a device, fifo or folder is refused here, unread).
		if _, err := ReadFile("reference", ref.Reference); err != nil {
			return Problem{}, err
		}
		return Problem{Reference: Source{Path: ref.Reference}, Shapes: ref.Shapes}, nil
	}
	if r == nil || strings.HasSuffix(ref.Reference, ".py") || len(ref.Reference) > MaxNameBytes {
		return Problem{}, Inputf("reference", "%q: no such file", Clip(ref.Reference))
	}
	p, err := r.Problem(ctx, ref.Reference, ref.Shapes)
	if err != nil {
		return Problem{}, Inputf("reference", "%q is neither a file nor a known corpus problem: %v", Clip(ref.Reference), err)
	}
	return p, nil
}

// ShapeSets are the shape-set names problems share: large (production-like,
// fills a GPU) and small (runs on a CPU in seconds).
var ShapeSets = []string{"large", "small"}

// CheckShapes accepts "" (the target's default) or a shape set name.
func CheckShapes(s string) error {
	if s == "" {
		return nil
	}
	for _, k := range ShapeSets {
		if s == k {
			return nil
		}
	}
	return Inputf("shapes", "%q: use %s (or leave it out: large on a GPU, small on the CPU)", s, strings.Join(ShapeSets, " or "))
}

// ParseCandidate checks a candidate given as a path or inline source.
func ParseCandidate(path, source string) (Candidate, error) {
	switch {
	case path != "" && source != "":
		return Candidate{}, Inputf("candidate", "give candidate (a file) or candidate_source, not both")
	case source != "":
		if err := checkSize("candidate_source", len(source)); err != nil {
			return Candidate{}, err
		}
		return Candidate{Code: source}, nil
	case path != "":
		// Checked here, read again (once) by the evaluation that hashes it.
		if _, err := ReadFile("candidate", path); err != nil {
			return Candidate{}, err
		}
		return Candidate{Path: path}, nil
	}
	return Candidate{}, Inputf("candidate", "required: a file defining ModelNew, or candidate_source")
}

func checkSize(arg string, n int) error {
	if n > MaxSourceBytes {
		return Inputf(arg, "source is over the %d MiB limit: a kernel file is kilobytes; keep data out of it (generate inputs in get_inputs) and pass a path rather than inline code", MaxSourceBytes>>20)
	}
	return nil
}

// Read returns a source's code and, for a file, its absolute path; arg
// names the argument in errors ("reference", "candidate"). A file is read
// once (ReadFile): its code is what the caller hashes and runs.
func Read(s Source, arg string) (code, path string, err error) {
	switch {
	case s.Code != "" && s.Path != "":
		return "", "", Inputf(arg, "give a path or inline code, not both")
	case s.Code != "":
		if err := checkSize(arg, len(s.Code)); err != nil {
			return "", "", err
		}
		return s.Code, "", nil
	case s.Path != "":
		abs, err := filepath.Abs(s.Path)
		if err != nil {
			return "", "", Inputf(arg, "path %q: %v", Clip(s.Path), err)
		}
		b, err := ReadFile(arg, abs)
		if err != nil {
			return "", "", err
		}
		return string(b), abs, nil
	}
	return "", "", Inputf(arg, "no path or code given")
}
