package fleet

import (
	"context"
	"database/sql"
	"strconv"

	"github.com/kevolve/kevolve-mcp/search"
	"github.com/kevolve/kevolve-mcp/search/engine"
	"github.com/kevolve/kevolve-mcp/search/report"
)

// The run report's fleet panel comes from here (engine.WriteReport calls
// the hook) wherever this package is linked in: the CLI and the server.
func init() { engine.FleetPanel = ReportPanel }

// ReportPanel maps RunPanel onto search/report's fleet panel; nil for a
// run no fleet evaluated, or when the fleet tables cannot be read (the
// rest of the report does not depend on them).
func ReportPanel(ctx context.Context, db *sql.DB, run *search.Run, nodes []*search.Node) *report.Fleet {
	p, err := RunPanel(ctx, db, run, nodes)
	if err != nil || p == nil || len(p.Workers) == 0 {
		return nil
	}
	out := &report.Fleet{Kinds: p.Kinds, LeasesLost: p.LeasesLost, Requeued: p.Requeued, Crashed: p.Crashed}
	for _, w := range p.Workers {
		out.Workers = append(out.Workers, report.FleetWorker{Name: w.Name, Host: w.Host, Devices: w.Devices, Evaluations: w.Evaluations,
			BusyS: w.BusyS, Utilization: w.Utilization, LeasesLost: w.LeasesLost})
	}
	if len(p.Kinds) > 1 {
		for _, n := range p.Nodes {
			row := report.FleetNode{ID: strconv.FormatInt(n.NodeID, 10)}
			for _, c := range n.ByKind {
				cell := c.Verdict
				if c.TimeS > 0 {
					cell += " " + strconv.FormatFloat(c.TimeS*1e3, 'g', 4, 64) + " ms"
				}
				if c.SpeedupVsEager > 0 {
					cell += " " + strconv.FormatFloat(c.SpeedupVsEager, 'f', 2, 64) + "x"
				}
				row.Cells = append(row.Cells, cell)
			}
			out.Nodes = append(out.Nodes, row)
		}
	}
	return out
}
