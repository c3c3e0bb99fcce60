// Package memory is the search's memory across runs (EvoKernel,
// KernelEvolve): when a run ends, its best kernel is written back as an
// examples/ document in the user's knowledge directory, with a distilled
// "what worked" note from its winning lineage; when a run starts on a
// problem similar to earlier ones, its draft phase is seeded with their
// best kernels for this arch, and those for other arches are offered to
// the operator as ports.
package memory

import (
	"os"
	"path"
	"regexp"
	"strings"

	"github.com/kevolve/kevolve-mcp/retrieval"
	"github.com/kevolve/kevolve-mcp/search"
)

// Similar says whether two problems are alike enough to share kernels,
// and why: the same problem name, or the same sequence of torch ops in
// their references' forward; and comparable shapes (the same shape set,
// or declared work within 8x) when both say.
func Similar(a, b search.Problem) (bool, string) {
	if !comparableShapes(a, b) {
		return false, ""
	}
	if a.Name == b.Name {
		return true, "same problem"
	}
	sa, sb := OpSequence(readRef(a)), OpSequence(readRef(b))
	if sa != "" && sa == sb {
		return true, "same reference op sequence (" + sa + ")"
	}
	return false, ""
}

func comparableShapes(a, b search.Problem) bool {
	if a.ShapeSet != "" && b.ShapeSet != "" && a.ShapeSet != b.ShapeSet {
		return false
	}
	within := func(x, y float64) bool { return x <= 0 || y <= 0 || (x/y <= 8 && y/x <= 8) }
	return within(a.Bytes, b.Bytes) && within(a.FLOPs, b.FLOPs)
}

func readRef(p search.Problem) string {
	b, err := os.ReadFile(p.ReferencePath)
	if err != nil {
		return ""
	}
	return string(b)
}

var (
	forwardRe = regexp.MustCompile(`(?m)^([ \t]*)def forward\(`)
	callRe    = regexp.MustCompile(`(?:\btorch\.(?:nn\.functional\.)?|\bF\.|\.)([A-Za-z_][A-Za-z0-9_]*)\s*\(`)
)

// OpSequence is the ops a reference's forward calls, in order ("pow mean
// rsqrt"), "" when it has no forward.
func OpSequence(ref string) string {
	loc := forwardRe.FindStringSubmatchIndex(ref)
	if loc == nil {
		return ""
	}
	indent := ref[loc[2]:loc[3]]
	body := ref[loc[1]:]
	// The body ends at the next line indented no deeper than the def.
	lines := strings.Split(body, "\n")
	var kept []string
	for i, l := range lines {
		if i > 0 && strings.TrimSpace(l) != "" && !strings.HasPrefix(l, indent+" ") && !strings.HasPrefix(l, indent+"\t") {
			break
		}
		kept = append(kept, l)
	}
	var ops []string
	for _, m := range callRe.FindAllStringSubmatch(strings.Join(kept, "\n"), -1) {
		switch m[1] {
		case "forward", "super", "size", "dim", "contiguous", "view", "reshape", "to", "float":
			continue // plumbing, not the computation
		}
		ops = append(ops, m[1])
	}
	return strings.Join(ops, " ")
}

// Arch is the device class kernels are shared within: the knowledge
// vocabulary's arch (hopper, x86...) when the device resolves, else the
// target. Vendor comes with it.
func Arch(p search.Problem, devices []string) (vendor, arch string) {
	for _, d := range devices {
		if s, ok := retrieval.ResolveDevice(d); ok && s.Arch != "" {
			return s.Vendor, s.Arch
		}
	}
	if p.Target == "cpu" {
		return "cpu", "x86"
	}
	if s, ok := retrieval.ResolveDevice(p.Target); ok {
		return s.Vendor, s.Arch
	}
	return "generic", "generic"
}

// family maps a problem name onto the knowledge base's operator families.
func family(name string) string {
	n := strings.ToLower(path.Base(strings.TrimSuffix(name, ".py")))
	for _, f := range []struct{ sub, fam string }{
		{"norm", "norm"}, {"softmax", "softmax"}, {"attention", "attention"}, {"gemm", "gemm"}, {"matmul", "gemm"},
		{"conv", "conv"}, {"cumsum", "scan"}, {"scan", "scan"}, {"embedding_bag", "embedding-bag"}, {"jagged", "jagged"},
		{"sum", "reduction"}, {"mean", "reduction"}, {"max", "reduction"}, {"reduce", "reduction"},
		{"relu", "elementwise"}, {"gelu", "elementwise"}, {"add", "elementwise"}, {"mul", "elementwise"},
	} {
		if strings.Contains(n, f.sub) {
			return f.fam
		}
	}
	return ""
}
