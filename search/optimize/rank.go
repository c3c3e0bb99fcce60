package optimize

import (
	"fmt"
	"sort"

	"github.com/kevolve/kevolve-mcp/corpus/extract"
	"github.com/kevolve/kevolve-mcp/harness/sol"
)

// Op is one ranked operator of the model: an extracted region or a graph
// node outside every region.
type Op struct {
	Name string `json:"name"`
	Sig  string `json:"sig,omitempty"`
	// Kind is the region's (extract.Region.Kind), or glue / not_captured
	// for the profile's time outside every region.
	Kind   string  `json:"kind,omitempty"`
	Calls  int     `json:"calls,omitempty"`
	Where  string  `json:"where,omitempty"`
	TimeUs float64 `json:"time_us"`
	Share  float64 `json:"share"`
	// SOLUs is the region's speed-of-light time on this device; Headroom
	// t/t_SOL; Saving the share of the whole model's time it would save at
	// the speed of light (share x (1 - 1/headroom)), what ops are ranked by;
	// Amdahl the whole model's bound if it took no time (1/(1-share)).
	// Headroom 0: unknown (no ceilings, or not a region).
	SOLUs     float64 `json:"sol_us,omitempty"`
	Headroom  float64 `json:"headroom"`
	Saving    float64 `json:"saving"`
	Amdahl    float64 `json:"amdahl_bound"`
	ProblemID string  `json:"problem_id,omitempty"`
	Problem   string  `json:"problem_file,omitempty"`
	Bundled   string  `json:"bundled,omitempty"`
	Searched  bool    `json:"searched"`
	Note      string  `json:"note,omitempty"`
	region    *extract.Region
}

// peak is the FLOP rate of a dtype in c ("" when c has none).
func peak(c *sol.Ceilings, dtype string) float64 {
	return c.PeakFLOPS[dtype]
}

// Rank turns a model profile into its operators, most saving first. With
// no ceilings a region's headroom is unknown and its saving is its share
// (as if its kernel could take no time).
func Rank(p *extract.Profile, c *sol.Ceilings) []Op {
	var ops []Op
	for i := range p.Regions {
		r := &p.Regions[i]
		op := Op{Name: r.Sig + " @ " + r.Where, Sig: r.Sig, Kind: r.Kind, Calls: r.Calls, Where: r.Where, TimeUs: r.TimeUs, Share: r.Share,
			ProblemID: r.ID, Problem: r.File, Bundled: r.Bundled, Saving: r.Share, region: r}
		if r.Calls > 1 {
			op.Name += fmt.Sprintf(" (x%d)", r.Calls)
		}
		if c != nil && r.TimeUs > 0 {
			t := 0.0
			if c.MemBandwidth > 0 {
				t = r.Bytes / c.MemBandwidth
			}
			if pk := peak(c, dtypeKey(r.Dtype)); pk > 0 {
				t = max(t, r.FLOPs/pk)
			}
			if t > 0 {
				op.SOLUs = t * 1e6
				op.Headroom = max(r.PerCallUs()/op.SOLUs, 1)
				op.Saving = r.Share * (1 - 1/op.Headroom)
			}
		}
		ops = append(ops, op)
	}
	for _, n := range p.Nodes {
		note := "not extracted: no region signature covers it"
		if p.Capture != nil {
			note = n.Target
		}
		ops = append(ops, Op{Name: n.Name + " (" + n.Target + ")", Where: n.Name, TimeUs: n.TimeUs, Share: n.Share, Saving: n.Share,
			Note: note})
	}
	ops = append(ops, uncovered(p)...)
	for i := range ops {
		if ops[i].Share < 1 {
			ops[i].Amdahl = 1 / (1 - ops[i].Share)
		}
	}
	sort.SliceStable(ops, func(i, j int) bool { return ops[i].Saving > ops[j].Saving })
	return ops
}

// uncovered are the captured forward's parts no region holds, as ops, so
// time the regions miss shows in the ranking: the glue inside the
// captured graphs and what TorchDynamo did not capture.
func uncovered(p *extract.Profile) []Op {
	c := p.Capture
	if c == nil || p.TotalUs <= 0 {
		return nil
	}
	var ops []Op
	if c.GlueUs > 0 {
		ops = append(ops, Op{Name: "glue (inside the captured graphs)", Kind: "glue", TimeUs: c.GlueUs, Share: c.GlueUs / p.TotalUs,
			Note: "views and copies between regions, and the interpreter's own time where the basis is CPU time"})
	}
	if c.NotCapturedUs > 0 {
		note := "eager Python and Dynamo's guards around the captured graphs"
		if len(c.Breaks) > 0 {
			note = fmt.Sprintf("eager code between %d graph break(s): %s", len(c.Breaks), c.Breaks[0].Cause)
		}
		ops = append(ops, Op{Name: "not captured", Kind: "not_captured", TimeUs: c.NotCapturedUs, Share: c.NotCapturedUs / p.TotalUs, Note: note})
	}
	for i := range ops {
		ops[i].Saving = 0 // no kernel of ours can take this time
	}
	return ops
}

// dtypeKey names a torch dtype as the ceilings do.
func dtypeKey(d string) string {
	switch d {
	case "float32":
		return "fp32"
	case "bfloat16":
		return "bf16"
	case "float16":
		return "fp16"
	case "float64":
		return "fp64"
	}
	return d
}

// Predicted is Amdahl's whole-model speedup when each region of share s_i
// runs speedup_i times faster: 1 / (1 - sum s_i (1 - 1/speedup_i)).
func Predicted(shares, speedups []float64) float64 {
	saved := 0.0
	for i := range shares {
		if speedups[i] > 0 {
			saved += shares[i] * (1 - 1/speedups[i])
		}
	}
	if saved >= 1 {
		return 0
	}
	return 1 / (1 - saved)
}

// Gap describes predicted against measured.
func Gap(predicted, measured float64) string {
	if predicted <= 0 || measured <= 0 {
		return ""
	}
	return fmt.Sprintf("measured %.3fx against %.3fx predicted (%+.1f%%)", measured, predicted, 100*(measured/predicted-1))
}
