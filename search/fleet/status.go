package fleet

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"sort"
	"strings"
	"time"
)

// WorkerStatus is one worker as status and the report show it.
type WorkerStatus struct {
	ID      string   `json:"id"`
	Name    string   `json:"name"`
	Host    string   `json:"host"`
	Devices []Device `json:"devices"`
	// State: alive (seen within two leases), lost (not seen since), gone
	// (exited cleanly).
	State      string    `json:"state"`
	LastSeen   time.Time `json:"last_seen"`
	JobsDone   int       `json:"jobs_done"`
	InFlight   int       `json:"in_flight"`
	LeasesLost int       `json:"leases_lost"`
	BusyS      float64   `json:"busy_s"`
	// Utilization is busy device-seconds over the worker's device-seconds
	// alive (0..1).
	Utilization float64 `json:"utilization"`
}

// FleetStatus is the fleet at a glance: evolve_status and the CLI show it,
// the report's fleet panel draws it.
type FleetStatus struct {
	Workers    []WorkerStatus `json:"workers"`
	Queued     int            `json:"queued"`
	InFlight   int            `json:"in_flight"`
	Done       int            `json:"done"`
	Failed     int            `json:"failed"`
	Crashed    int            `json:"crashed"`
	LeasesLost int            `json:"leases_lost"`
	Requeued   int            `json:"requeued"`
	Late       int            `json:"late_results"`
}

// Snapshot reads the fleet's state from the store.
func Snapshot(ctx context.Context, q *Queue) (*FleetStatus, error) {
	s := &FleetStatus{}
	now := q.unix()
	inflight := map[string]int{}
	rows, err := q.db.QueryContext(ctx, `SELECT state, COALESCE(worker_id, ''), COALESCE(verdict, ''), late_results FROM fleet_jobs`)
	if err != nil {
		return nil, fmt.Errorf("fleet status: %w", err)
	}
	for rows.Next() {
		var state, worker, verdict string
		var late int
		if err := rows.Scan(&state, &worker, &verdict, &late); err != nil {
			rows.Close()
			return nil, err
		}
		s.Late += late
		switch JobState(state) {
		case JobQueued:
			s.Queued++
		case JobClaimed:
			s.InFlight++
			inflight[worker]++
		case JobDone:
			s.Done++
			if verdict == "crash" {
				s.Crashed++
			}
		case JobFailed:
			s.Failed++
		}
	}
	rows.Close()
	if err := q.db.QueryRowContext(ctx, `SELECT COUNT(*) FILTER (WHERE what = 'lease_lost'), COUNT(*) FILTER (WHERE what = 'requeued') FROM fleet_job_log`).Scan(&s.LeasesLost, &s.Requeued); err != nil {
		return nil, fmt.Errorf("fleet status: %w", err)
	}
	wrows, err := q.db.QueryContext(ctx, `SELECT id, name, host, devices, state, registered_at, last_seen, jobs_done, busy_s, leases_lost FROM fleet_workers ORDER BY registered_at, id`)
	if err != nil {
		return nil, fmt.Errorf("fleet status: %w", err)
	}
	defer wrows.Close()
	for wrows.Next() {
		var w WorkerStatus
		var devs, state string
		var reg, seen float64
		if err := wrows.Scan(&w.ID, &w.Name, &w.Host, &devs, &state, &reg, &seen, &w.JobsDone, &w.BusyS, &w.LeasesLost); err != nil {
			return nil, err
		}
		json.Unmarshal([]byte(devs), &w.Devices)
		w.LastSeen = fromUnix(seen)
		w.InFlight = inflight[w.ID]
		w.State = state
		if state == "alive" && now-seen > 2*q.Lease.Seconds() {
			w.State = "lost"
		}
		if alive := (seen - reg) * float64(max(len(w.Devices), 1)); alive > 0 {
			w.Utilization = min(w.BusyS/alive, 1)
		}
		s.Workers = append(s.Workers, w)
	}
	return s, wrows.Err()
}

// Line is a one-line summary for a progress line.
func (s *FleetStatus) Line() string {
	alive, devs := 0, 0
	for _, w := range s.Workers {
		if w.State == "alive" {
			alive++
			devs += len(w.Devices)
		}
	}
	return fmt.Sprintf("fleet: %d workers (%d devices), %d in flight, %d queued, %d leases lost", alive, devs, s.InFlight, s.Queued, s.LeasesLost)
}

// WriteTable prints the fleet as a table (the CLI's `evolve show`/status).
func (s *FleetStatus) WriteTable(w io.Writer) error {
	var b strings.Builder
	fmt.Fprintf(&b, "%s; %d done (%d crash), %d failed, %d requeued, %d late results ignored\n", s.Line(), s.Done, s.Crashed, s.Failed, s.Requeued, s.Late)
	ws := append([]WorkerStatus(nil), s.Workers...)
	sort.SliceStable(ws, func(i, j int) bool { return ws[i].Name < ws[j].Name })
	fmt.Fprintf(&b, "%-20s %-16s %-6s %-40s %6s %6s %6s %6s\n", "worker", "host", "state", "devices", "done", "run", "lost", "util")
	for _, x := range ws {
		fmt.Fprintf(&b, "%-20s %-16s %-6s %-40s %6d %6d %6d %5.0f%%\n", x.Name, x.Host, x.State, devicesLabel(x.Devices), x.JobsDone, x.InFlight, x.LeasesLost, 100*x.Utilization)
	}
	_, err := io.WriteString(w, b.String())
	return err
}

func devicesLabel(ds []Device) string {
	counts := map[string]int{}
	var order []string
	for _, d := range ds {
		l := d.Target
		if d.Arch != "" {
			l += ":" + d.Arch
		}
		if counts[l] == 0 {
			order = append(order, l)
		}
		counts[l]++
	}
	var parts []string
	for _, l := range order {
		parts = append(parts, fmt.Sprintf("%dx %s", counts[l], l))
	}
	return strings.Join(parts, ", ")
}
