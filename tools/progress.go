package tools

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
)

// progressInterval throttles notifications: agents need a heartbeat, not a
// flood (stdio clients render every one).
const progressInterval = 250 * time.Millisecond

// Progress reports a long job's stage to the client. It sends nothing when
// the request carried no progress token, as the protocol requires.
type Progress func(stage string, done, total int)

// progressFor returns the reporter for one tool call. The first and the last
// step (done == total) and each new stage are always sent (a stage is a
// handful a job, and a short one is still news); steps within a stage are
// throttled.
func progressFor(ctx context.Context, req mcp.CallToolRequest) Progress {
	if req.Params.Meta == nil || req.Params.Meta.ProgressToken == nil {
		return func(string, int, int) {}
	}
	token := req.Params.Meta.ProgressToken
	srv := server.ServerFromContext(ctx)
	var mu sync.Mutex
	var last time.Time
	var lastProgress float64
	var lastStage string
	return func(stage string, done, total int) {
		mu.Lock()
		defer mu.Unlock()
		final := total > 0 && done >= total
		if !final && stage == lastStage && time.Since(last) < progressInterval {
			return
		}
		lastStage = stage
		// The protocol wants progress to increase with every notification,
		// whatever the stages report.
		p := float64(done)
		if total <= 0 || p <= lastProgress {
			p = lastProgress + 1
		}
		last, lastProgress = time.Now(), p
		params := map[string]any{"progressToken": token, "progress": p, "message": stage}
		if total > 0 && p <= float64(total) {
			params["total"] = float64(total)
		}
		if srv == nil {
			return
		}
		if err := srv.SendNotificationToClient(ctx, "notifications/progress", params); err != nil {
			slog.Debug("progress notification not sent", "err", err)
		}
	}
}
