package runs

import (
	"context"
	"fmt"
	"io"
	"path/filepath"

	"github.com/kevolve/kevolve-mcp/harness/sol"
	"github.com/kevolve/kevolve-mcp/search"
	"github.com/kevolve/kevolve-mcp/search/engine"
	"github.com/kevolve/kevolve-mcp/search/fleet"
	"github.com/kevolve/kevolve-mcp/search/launch"
	"github.com/kevolve/kevolve-mcp/search/store"
	"github.com/kevolve/kevolve-mcp/search/trajectory"
)

// InspectRequest is one look at the runs a database holds (evolve
// list|show|best|report|export).
type InspectRequest struct {
	// Verb is list, show, best, report or export.
	Verb string
	// Ref names the run (not for list): an id, a unique prefix of it, or
	// its last characters as the progress line prints them.
	Ref string
	// ReportDir is where report writes ("" = runs/RUN beside the database).
	ReportDir string
	// Format is export's: jsonl or csv.
	Format string
}

// View is what an inspection shows: JSON is the --json output (nil where
// the verb has none), WriteText the table or text.
type View struct {
	JSON any
	text func(io.Writer) error
}

// WriteText writes the view as text.
func (v View) WriteText(w io.Writer) error { return v.text(w) }

// showJSON is `evolve show --json`: the summary and every node (code,
// result, notes), as the table shows them.
type showJSON struct {
	search.Summary
	Nodes []*search.Node `json:"nodes"`
}

// Inspect opens h's search store and looks at what req asks for.
func Inspect(ctx context.Context, h *launch.Host, req InspectRequest) (View, error) {
	st, err := h.Store(ctx)
	if err != nil {
		return View{}, err
	}
	switch req.Verb {
	case "list":
		runs, err := st.Runs(ctx)
		return View{runs, func(w io.Writer) error { return engine.WriteRuns(w, runs) }}, err
	case "export":
		recs, err := trajectory.Records(ctx, st, req.Ref)
		return View{nil, func(w io.Writer) error { return trajectory.Write(w, req.Format, recs) }}, err
	}
	id, err := st.ResolveRunID(ctx, req.Ref)
	if err != nil {
		return View{}, err
	}
	run, err := st.Run(ctx, id)
	if err != nil {
		return View{}, err
	}
	nodes, err := st.Nodes(ctx, id)
	if err != nil {
		return View{}, err
	}
	switch req.Verb {
	case "show":
		return showView(ctx, st, run, nodes), nil
	case "best":
		best := search.NewGraph(nodes).Node(run.BestNode)
		if best == nil {
			return View{}, fmt.Errorf("run %s has no correct kernel yet", id)
		}
		return View{best, func(w io.Writer) error { _, err := io.WriteString(w, best.Code); return err }}, nil
	}
	path, err := writeReport(ctx, h, st, id, req.ReportDir)
	return View{nil, func(w io.Writer) error { _, err := fmt.Fprintln(w, path); return err }}, err
}

// showView is a run's summary and nodes, then, for a run a fleet
// evaluated, each worker's evaluations and utilization and each node's
// results by device kind.
func showView(ctx context.Context, st *store.SQLite, run *search.Run, nodes []*search.Node) View {
	sum := search.Summarize(run, nodes)
	return View{showJSON{sum, nodes}, func(w io.Writer) error {
		if err := engine.WriteSummary(w, sum); err != nil {
			return err
		}
		fmt.Fprintln(w)
		if err := engine.WriteNodes(w, nodes); err != nil {
			return err
		}
		p, err := fleet.RunPanel(ctx, st.DB(), run, nodes)
		if err != nil || p == nil || len(p.Workers) == 0 {
			return err
		}
		fmt.Fprintln(w)
		return p.WriteText(w)
	}}
}

// writeReport writes run id's report into dir (default runs/RUN beside
// the database). The roofline needs this machine's ceilings; without
// them (never calibrated) the page says so and draws none.
func writeReport(ctx context.Context, h *launch.Host, st *store.SQLite, id, dir string) (string, error) {
	if dir == "" {
		dir = filepath.Join(h.DataDir(), "runs", id)
	}
	var ceil *sol.Ceilings
	if cl, err := h.CeilingsFor(ctx, false, io.Discard); err == nil {
		ceil = &cl
	}
	return engine.WriteReport(ctx, st, id, dir, ceil)
}
