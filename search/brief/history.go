package brief

import (
	"fmt"
	"strings"

	"github.com/kevolve/kevolve-mcp/search"
)

// historyPart shows what the search already tried, per memory mode:
// inherit lists the parent's lineage (what got it here), compare lists the
// parent's other children (what was tried from this very kernel and how
// each fared), a clean slate shows nothing so the operator starts fresh.
func historyPart(c search.Context, parent *search.Node, mem search.MemoryMode, max int) *part {
	p := &part{name: "history", prio: prioHistory}
	if c.Graph == nil || mem == search.MemoryCleanSlate {
		return p
	}
	var nodes []*search.Node
	var title string
	switch mem {
	case search.MemoryCompare:
		title = fmt.Sprintf("## What was already tried from node %d (siblings of this proposal)\n\n", parent.ID)
		kids := c.Graph.Children(parent.ID)
		// The most recent first: they reflect the latest ideas.
		for i := len(kids) - 1; i >= 0; i-- {
			nodes = append(nodes, kids[i])
		}
	default:
		title = "## How the current kernel was reached (its ancestors, nearest first)\n\n"
		nodes = c.Graph.Ancestors(parent.ID)
	}
	if len(nodes) > max {
		nodes = nodes[:max]
	}
	if len(nodes) == 0 {
		return p
	}
	lines := make([]string, len(nodes))
	for i, n := range nodes {
		lines[i] = historyLine(n)
	}
	for k := len(lines); k >= 1; k-- {
		p.levels = append(p.levels, title+strings.Join(lines[:k], ""))
	}
	p.levels = append(p.levels, "")
	return p
}

func historyLine(n *search.Node) string {
	var b strings.Builder
	fmt.Fprintf(&b, "- node %d", n.ID)
	if n.Operator != "" {
		fmt.Fprintf(&b, " [%s]", n.Operator)
	}
	b.WriteString(": ")
	switch r := n.Result; {
	case n.State == search.NodeFailed:
		fmt.Fprintf(&b, "not evaluated (%s)", oneLine(n.Error, 120))
	case r == nil:
		b.WriteString("in flight")
	case r.Verdict == search.VerdictPass:
		fmt.Fprintf(&b, "pass, fitness %.2fx", r.Fitness)
		if g := SOLGap(r); g != "" {
			fmt.Fprintf(&b, ", %s", strings.SplitN(g, " (", 2)[0])
		}
	default:
		b.WriteString(r.Verdict)
		if fc := r.FailedChecks(); len(fc) > 0 {
			fmt.Fprintf(&b, " (%s)", fc[0].Name)
		}
	}
	if n.Notes != "" {
		fmt.Fprintf(&b, " — %s", oneLine(n.Notes, 160))
	}
	b.WriteString("\n")
	return b.String()
}

// portsPart shows other arches' winners to nodes near the root (a draft
// or its first children), one whole kernel per level.
func portsPart(ports []Port, parent *search.Node) *part {
	p := &part{name: "ports", prio: prioHistory}
	if len(ports) == 0 || parent.Depth > 1 {
		return p
	}
	title := "## Kernels that won on other devices (port what applies)\n\n"
	var entries []string
	for _, x := range ports {
		entries = append(entries, fmt.Sprintf("### %s, %s on %s: %.2fx there\n\n%s", x.Problem, x.Language, x.Arch, x.Fitness, fence("python", x.Code)))
	}
	for k := len(entries); k >= 1; k-- {
		p.levels = append(p.levels, title+strings.Join(entries[:k], "\n"))
	}
	p.levels = append(p.levels, "")
	return p
}
