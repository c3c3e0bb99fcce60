package brief

import (
	"fmt"
	"strings"

	"github.com/kevolve/kevolve-mcp/search"
)

func fence(lang, code string) string {
	code = strings.TrimRight(code, "\n")
	// A code block that itself holds ``` gets a longer fence.
	f := "```"
	for strings.Contains(code, f) {
		f += "`"
	}
	return f + lang + "\n" + code + "\n" + f + "\n"
}

func taskPart(c search.Context, parent *search.Node, sc string) *part {
	var b strings.Builder
	fmt.Fprintf(&b, "# Task: %s\n\n", c.Problem.Name)
	switch sc {
	case ScenarioDraft:
		b.WriteString("Write a first kernel for this problem: a `ModelNew` with the same constructor and forward signature as the reference `Model`, computing the same result faster. Start from the kernel below.\n")
	case ScenarioFixBuild:
		b.WriteString("The kernel below does not build. Fix the build error first; keep the optimization ideas that do not cause it.\n")
	case ScenarioFixResult:
		fmt.Fprintf(&b, "The kernel below fails (%s). Make it correct for every input the reference accepts, then fast.\n", parent.Result.Verdict)
	case ScenarioFlagged:
		b.WriteString("The kernel below was flagged by an integrity check: it does not compute the result honestly within the timed region. Compute the whole result in the kernel, on the measured stream, every call.\n")
	case ScenarioNearSOL:
		b.WriteString("The kernel below is correct and close to the speed of light. Only small, targeted gains remain: launch overhead, tail effects, fusing the last extra pass. Do not rewrite what works.\n")
	default:
		b.WriteString("The kernel below is correct. Make it faster, guided by the speed-of-light gap and the diagnosis.\n")
	}
	return &part{name: "task", prio: prioRequired, levels: []string{b.String()}}
}

func devicePart(d Device, p search.Problem) *part {
	var b strings.Builder
	b.WriteString("## Target device\n\n")
	name := d.Name
	if name == "" {
		name = p.Target
	}
	fmt.Fprintf(&b, "- device: %s", name)
	if d.Vendor != "" || d.Arch != "" {
		fmt.Fprintf(&b, " (%s)", strings.Trim(d.Vendor+" "+d.Arch, " "))
	}
	fmt.Fprintf(&b, "; target %s; kernel language %s\n", p.Target, p.Language)
	if d.PeakTFLOPs > 0 || d.PeakGBs > 0 {
		fmt.Fprintf(&b, "- ceilings: %s compute, %s memory bandwidth\n", num(d.PeakTFLOPs, "TFLOP/s"), num(d.PeakGBs, "GB/s"))
	}
	return &part{name: "device", prio: prioRequired, levels: []string{b.String()}}
}

func num(v float64, unit string) string {
	if v <= 0 {
		return "unknown"
	}
	return fmt.Sprintf("%.4g %s", v, unit)
}

func problemPart(p search.Problem, ref string) *part {
	var meta strings.Builder
	meta.WriteString("## Problem\n\n")
	if p.ShapeSet != "" {
		fmt.Fprintf(&meta, "- shape set: %s (the shapes are the reference's get_inputs)\n", p.ShapeSet)
	}
	if p.Dtype != "" {
		fmt.Fprintf(&meta, "- dtype: %s\n", p.Dtype)
	}
	if t := p.Tolerance; t != nil {
		fmt.Fprintf(&meta, "- tolerance: atol %g, rtol %g\n", t.Atol, t.Rtol)
	} else {
		meta.WriteString("- tolerance: the harness's default for the dtype\n")
	}
	if p.FLOPs > 0 || p.Bytes > 0 {
		fmt.Fprintf(&meta, "- work: %.4g FLOP, %.4g bytes moved (at least)\n", p.FLOPs, p.Bytes)
	}
	lean := meta.String()
	if strings.TrimSpace(ref) == "" {
		return &part{name: "problem", prio: prioReference, levels: []string{lean}}
	}
	full := lean + "\nReference (`reference.py`):\n\n" + fence("python", ref)
	return &part{name: "problem", prio: prioReference, levels: []string{full, lean + "- reference code: omitted for the token budget (it is in reference.py)\n"}}
}

func parentPart(n *search.Node) *part {
	var b strings.Builder
	fmt.Fprintf(&b, "## Current kernel (node %d, depth %d)\n\n", n.ID, n.Depth)
	if n.Notes != "" {
		fmt.Fprintf(&b, "Notes: %s\n\n", oneLine(n.Notes, 300))
	}
	b.WriteString(fence("python", n.Code))
	return &part{name: "parent_code", prio: prioRequired, levels: []string{b.String()}}
}

func resultPart(n *search.Node) *part {
	r := n.Result
	var b strings.Builder
	b.WriteString("## Its result\n\n")
	if r == nil {
		if n.State == search.NodeFailed {
			fmt.Fprintf(&b, "- not evaluated: %s\n", oneLine(n.Error, 300))
		} else {
			b.WriteString("- not evaluated yet\n")
		}
		return &part{name: "result", prio: prioRequired, levels: []string{b.String()}}
	}
	fmt.Fprintf(&b, "- verdict: %s", r.Verdict)
	if r.Stage != "" && r.Verdict != search.VerdictPass {
		fmt.Fprintf(&b, " (at %s)", r.Stage)
	}
	b.WriteString("\n")
	if fc := r.FailedChecks(); len(fc) > 0 {
		b.WriteString("- failed checks:\n")
		for _, c := range fc {
			fmt.Fprintf(&b, "  - %s: %s\n", c.Name, oneLine(c.Detail, 240))
		}
	}
	if r.Verdict == search.VerdictPass && r.TimeS > 0 {
		fmt.Fprintf(&b, "- time: %s (eager %s, torch.compile %s); speedup %.2fx vs eager", dur(r.TimeS), dur(r.EagerS), dur(r.CompileS), r.SpeedupVsEager)
		if r.SpeedupVsCompile > 0 {
			fmt.Fprintf(&b, ", %.2fx vs compile", r.SpeedupVsCompile)
		}
		b.WriteString("\n")
		if g := SOLGap(r); g != "" {
			fmt.Fprintf(&b, "- speed of light: %s\n", g)
		}
	}
	return &part{name: "result", prio: prioRequired, levels: []string{b.String()}}
}

// SOLGap says how far a passing result is from the speed of light, e.g.
// "memory-bound, 44% of SOL, 2.3x headroom (t 52.1 us, t_SOL 22.9 us)".
func SOLGap(r *search.Result) string {
	if r == nil || r.SOLSeconds <= 0 || r.TimeS <= 0 {
		return ""
	}
	bound := r.SOLBound
	if bound == "" {
		bound = "unknown"
	}
	pct := r.PctOfSOL
	if pct <= 0 {
		pct = 100 * r.SOLSeconds / r.TimeS
	}
	return fmt.Sprintf("%s-bound, %.0f%% of SOL, %.1fx headroom (t %s, t_SOL %s)", bound, pct, r.TimeS/r.SOLSeconds, dur(r.TimeS), dur(r.SOLSeconds))
}

func dur(s float64) string {
	switch {
	case s <= 0:
		return "n/a"
	case s < 1e-3:
		return fmt.Sprintf("%.3g us", s*1e6)
	case s < 1:
		return fmt.Sprintf("%.3g ms", s*1e3)
	}
	return fmt.Sprintf("%.3g s", s)
}

// Log lines kept at each level: the head shows the first error, the tail
// the last; a compiler log's middle is usually repetition.
var logLevels = [][2]int{{20, 60}, {8, 20}, {3, 6}}

func logPart(n *search.Node) *part {
	if n.Result == nil || strings.TrimSpace(n.Result.Log) == "" || n.Result.Verdict == search.VerdictPass {
		return &part{name: "log", prio: prioLog}
	}
	lines := strings.Split(strings.TrimRight(n.Result.Log, "\n"), "\n")
	p := &part{name: "log", prio: prioLog}
	for _, lv := range logLevels {
		p.levels = append(p.levels, "## Its log (trimmed)\n\n"+fence("text", headTail(lines, lv[0], lv[1])))
	}
	p.levels = append(p.levels, "")
	return p
}

func headTail(lines []string, head, tail int) string {
	for i, l := range lines {
		if len(l) > 300 {
			lines[i] = l[:300] + " …"
		}
	}
	if len(lines) <= head+tail {
		return strings.Join(lines, "\n")
	}
	return strings.Join(lines[:head], "\n") + fmt.Sprintf("\n[… %d lines cut …]\n", len(lines)-head-tail) + strings.Join(lines[len(lines)-tail:], "\n")
}

func diagnosisPart(n *search.Node) *part {
	if strings.TrimSpace(n.Diagnosis) == "" {
		return &part{name: "diagnosis", prio: prioDiagnosis}
	}
	t := "## Profile diagnosis\n\n" + strings.TrimSpace(n.Diagnosis) + "\n"
	return &part{name: "diagnosis", prio: prioDiagnosis, levels: []string{t, ""}}
}

func contractPart(contract string) *part {
	if strings.TrimSpace(contract) == "" {
		contract = "Answer with the complete new candidate file (a Python module defining ModelNew)."
	}
	return &part{name: "output", prio: prioRequired, levels: []string{"## How to answer\n\n" + strings.TrimSpace(contract) + "\n"}}
}

func oneLine(s string, max int) string {
	s = strings.Join(strings.Fields(s), " ")
	if len(s) > max {
		s = s[:max] + " …"
	}
	return s
}

// feedbackPart carries what the run said about this proposal's earlier
// tries (a novelty rejection); it is never cut.
func feedbackPart(fb string) *part {
	if strings.TrimSpace(fb) == "" {
		return &part{name: "feedback", prio: prioRequired}
	}
	return &part{name: "feedback", prio: prioRequired, levels: []string{"## Feedback on your previous answer\n\n" + strings.TrimSpace(fb) + "\n"}}
}
