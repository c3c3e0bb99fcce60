package search

// Problem is what a run optimizes: a KernelBench-format reference on one
// target, with the declared work the speed of light is computed from.
type Problem struct {
	// Name is a corpus name ("llm/rmsnorm") or the reference file's path.
	Name          string `json:"name"`
	ReferencePath string `json:"reference_path"`
	// Target is the harness target ("cpu", "nvidia"); Language the start
	// kernel's kind ("c", "cuda", "triton").
	Target   string `json:"target"`
	Language string `json:"language"`
	// ShapeSet is the corpus shape set ("" = the problem's default).
	ShapeSet string `json:"shape_set,omitempty"`
	Dtype    string `json:"dtype,omitempty"`
	// FLOPs and Bytes are the declared work (0 = not declared).
	FLOPs     float64    `json:"flops,omitempty"`
	Bytes     float64    `json:"bytes,omitempty"`
	Tolerance *Tolerance `json:"tolerance,omitempty"`
}

// Tolerance overrides the harness's dtype-based allclose tolerance.
type Tolerance struct {
	Atol float64 `json:"atol,omitempty"`
	Rtol float64 `json:"rtol,omitempty"`
}

// Key identifies the problem for cross-run deduplication: two runs of the
// same problem on the same target and shape set may answer each other's
// evaluations from the store.
func (p Problem) Key() string { return p.Name + "|" + p.Target + "|" + p.ShapeSet }
