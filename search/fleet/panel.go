package fleet

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"io"
	"sort"
	"strings"

	"github.com/kevolve/kevolve-mcp/search"
)

// Panel is a run's fleet panel: who evaluated its nodes and how busy they
// were, and each node's result on every device kind, side by side. The
// report draws it; RunPanel computes it from the store.
type Panel struct {
	Kinds   []string      `json:"kinds"`
	Workers []PanelWorker `json:"workers"`
	Nodes   []PanelNode   `json:"nodes"`
	// LeasesLost, Requeued and Crashed count the run's jobs' faults.
	LeasesLost int `json:"leases_lost"`
	Requeued   int `json:"requeued"`
	Crashed    int `json:"crashed"`
}

// PanelWorker is one worker's share of a run.
type PanelWorker struct {
	Name        string  `json:"name"`
	Host        string  `json:"host"`
	Devices     string  `json:"devices"`
	Evaluations int     `json:"evaluations"`
	BusyS       float64 `json:"busy_s"`
	// Utilization is busy device-seconds over the run's wall time times the
	// worker's devices (0..1).
	Utilization float64 `json:"utilization"`
	LeasesLost  int     `json:"leases_lost"`
}

// PanelNode is one node's evaluation on each kind (in Kinds order; an
// empty cell where a kind did not evaluate it).
type PanelNode struct {
	NodeID int64       `json:"node_id"`
	ByKind []PanelCell `json:"by_kind"`
}

// PanelCell is one kind's result for one node.
type PanelCell struct {
	Kind           string  `json:"kind"`
	Verdict        string  `json:"verdict,omitempty"`
	TimeS          float64 `json:"time_s,omitempty"`
	SpeedupVsEager float64 `json:"speedup_vs_eager,omitempty"`
	Worker         string  `json:"worker,omitempty"`
}

// RunPanel builds the panel of a run from its nodes and the fleet tables
// (nil, nil when the database never held a fleet or the run used none).
func RunPanel(ctx context.Context, db *sql.DB, run *search.Run, nodes []*search.Node) (*Panel, error) {
	st, err := StatusOf(ctx, db)
	if err != nil || st == nil {
		return nil, err
	}
	// A database a fleet used under an older version: bring it up to date.
	if err := Migrate(ctx, db); err != nil {
		return nil, err
	}
	hashes := map[string]int64{}
	for _, n := range nodes {
		h := n.Hash
		if h == "" {
			h = search.NormalizedHash(n.Code)
		}
		if _, ok := hashes[h]; !ok && n.DuplicateOf == 0 {
			hashes[h] = n.ID
		}
	}
	rows, err := db.QueryContext(ctx, `SELECT j.id, j.code_hash, j.kind_label, j.state, COALESCE(j.verdict, ''), COALESCE(j.result, ''), j.busy_s, j.lost,
		COALESCE(w.name, COALESCE(j.done_by, '')), COALESCE(w.id, '') FROM fleet_jobs j LEFT JOIN fleet_workers w ON w.id = j.done_by
		WHERE j.problem_key LIKE ?`, run.Problem.Name+"|%")
	if err != nil {
		return nil, fmt.Errorf("fleet panel: %w", err)
	}
	defer rows.Close()
	p := &Panel{}
	kindIdx := map[string]int{}
	cells := map[int64]map[string]PanelCell{}
	byWorker := map[string]*PanelWorker{}
	var jobIDs []string
	for rows.Next() {
		var id, hash, kind, state, verdict, res, wname, wid string
		var busy float64
		var lost int
		if err := rows.Scan(&id, &hash, &kind, &state, &verdict, &res, &busy, &lost, &wname, &wid); err != nil {
			return nil, err
		}
		node, ok := hashes[hash]
		if !ok {
			continue
		}
		jobIDs = append(jobIDs, id)
		if _, ok := kindIdx[kind]; !ok {
			kindIdx[kind] = len(p.Kinds)
			p.Kinds = append(p.Kinds, kind)
		}
		c := PanelCell{Kind: kind, Verdict: verdict, Worker: wname}
		if res != "" {
			var r search.Result
			if json.Unmarshal([]byte(res), &r) == nil {
				c.TimeS, c.SpeedupVsEager = r.TimeS, r.SpeedupVsEager
			}
		}
		if cells[node] == nil {
			cells[node] = map[string]PanelCell{}
		}
		cells[node][kind] = c
		if verdict == search.VerdictCrash && wid == "" {
			p.Crashed++
		}
		if state == string(JobDone) && wid != "" {
			pw := byWorker[wid]
			if pw == nil {
				pw = &PanelWorker{Name: wname}
				byWorker[wid] = pw
			}
			pw.Evaluations++
			pw.BusyS += busy
		}
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	for _, w := range st.Workers {
		if pw := byWorker[w.ID]; pw != nil {
			pw.Host, pw.Devices = w.Host, devicesLabel(w.Devices)
			if run.ElapsedS > 0 {
				pw.Utilization = min(pw.BusyS/(run.ElapsedS*float64(max(len(w.Devices), 1))), 1)
			}
		}
	}
	if len(jobIDs) > 0 {
		q := `SELECT worker_id, what FROM fleet_job_log WHERE what IN ('lease_lost', 'requeued') AND job_id IN (?` + strings.Repeat(",?", len(jobIDs)-1) + `)`
		args := make([]any, len(jobIDs))
		for i, id := range jobIDs {
			args[i] = id
		}
		lrows, err := db.QueryContext(ctx, q, args...)
		if err != nil {
			return nil, err
		}
		for lrows.Next() {
			var wid, what string
			lrows.Scan(&wid, &what)
			if what == "requeued" {
				p.Requeued++
				continue
			}
			p.LeasesLost++
			if pw := byWorker[wid]; pw != nil {
				pw.LeasesLost++
			}
		}
		lrows.Close()
	}
	for _, pw := range byWorker {
		p.Workers = append(p.Workers, *pw)
	}
	sort.Slice(p.Workers, func(i, j int) bool { return p.Workers[i].Name < p.Workers[j].Name })
	var ids []int64
	for id := range cells {
		ids = append(ids, id)
	}
	sort.Slice(ids, func(i, j int) bool { return ids[i] < ids[j] })
	for _, id := range ids {
		pn := PanelNode{NodeID: id}
		for _, k := range p.Kinds {
			c, ok := cells[id][k]
			if !ok {
				c = PanelCell{Kind: k}
			}
			pn.ByKind = append(pn.ByKind, c)
		}
		p.Nodes = append(p.Nodes, pn)
	}
	return p, nil
}

// WriteText prints the panel as two tables: workers, then nodes by kind.
func (p *Panel) WriteText(w io.Writer) error {
	var b strings.Builder
	fmt.Fprintf(&b, "fleet: %d workers, %d leases lost, %d requeued, %d crashed\n", len(p.Workers), p.LeasesLost, p.Requeued, p.Crashed)
	fmt.Fprintf(&b, "%-24s %-16s %-24s %6s %8s %6s %5s\n", "worker", "host", "devices", "evals", "busy", "util", "lost")
	for _, x := range p.Workers {
		fmt.Fprintf(&b, "%-24s %-16s %-24s %6d %7.1fs %5.0f%% %5d\n", x.Name, x.Host, x.Devices, x.Evaluations, x.BusyS, 100*x.Utilization, x.LeasesLost)
	}
	if len(p.Kinds) > 1 {
		fmt.Fprintf(&b, "%-6s", "node")
		for _, k := range p.Kinds {
			fmt.Fprintf(&b, " %-28s", k)
		}
		b.WriteString("\n")
		for _, n := range p.Nodes {
			fmt.Fprintf(&b, "#%-5d", n.NodeID)
			for _, c := range n.ByKind {
				cell := c.Verdict
				if c.TimeS > 0 {
					cell += fmt.Sprintf(" %.3gs", c.TimeS)
				}
				if c.SpeedupVsEager > 0 {
					cell += fmt.Sprintf(" %.2fx", c.SpeedupVsEager)
				}
				fmt.Fprintf(&b, " %-28s", cell)
			}
			b.WriteString("\n")
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}
