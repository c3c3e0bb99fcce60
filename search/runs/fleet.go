package runs

import (
	"context"
	"fmt"
	"io"
	"path/filepath"
	"time"

	"github.com/kevolve/kevolve-mcp/search/fleet"
	"github.com/kevolve/kevolve-mcp/search/launch"
)

// StartFleet starts the coordinator and the workers o asks for on the
// host's database, offering target's devices (every kind of o.KindsSpec
// where given) and writing their logs beside the database.
func StartFleet(ctx context.Context, h *launch.Host, o fleet.Options, target string) (*fleet.Fleet, error) {
	o.DB, o.Target, o.Name, o.Log = h.DB(), target, "kevolve", h.Log()
	o.LogDir = filepath.Join(h.DataDir(), "fleet", "workers")
	if o.KindsSpec != "" {
		o.Target = "auto"
	}
	return fleet.Start(ctx, o)
}

// watchedFleet starts a fleet for one foreground search: its queue's line
// goes to w every 30 s, and stop prints the final table and ends the
// workers.
func watchedFleet(ctx context.Context, h *launch.Host, o fleet.Options, target string, w io.Writer) (*fleet.Fleet, func(), error) {
	f, err := StartFleet(ctx, h, o, target)
	if err != nil {
		return nil, nil, err
	}
	fmt.Fprintf(w, "fleet coordinator at %s\n", f.URL)
	tick := time.NewTicker(30 * time.Second)
	done := make(chan struct{})
	go func() {
		for {
			select {
			case <-done:
				return
			case <-tick.C:
				if s, err := fleet.Snapshot(ctx, f.Queue); err == nil {
					fmt.Fprintf(w, "\n%s\n", s.Line())
				}
			}
		}
	}()
	stop := func() {
		tick.Stop()
		close(done)
		if s, err := fleet.Snapshot(context.WithoutCancel(ctx), f.Queue); err == nil {
			s.WriteTable(w)
		}
		sctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		f.Close(sctx)
	}
	return f, stop, nil
}
