package runs

import (
	"context"

	"github.com/kevolve/kevolve-mcp/search/launch"
)

// launcher is the host's launcher with this manager's store and hooks in
// place: the same assembly as the command line's, so a run started over
// MCP gets what `kevolve-mcp evolve` gives it.
func (m *Manager) launcher() *launch.Launcher {
	var l launch.Launcher
	if m.o.Launch != nil {
		l = *m.o.Launch
	}
	l.Store = m.o.Store
	if m.o.Resolve != nil {
		l.Resolve = m.o.Resolve
	}
	if m.o.Devices != nil {
		l.Devices = m.o.Devices
	}
	// m.spec resolved the target already (inline sources need it first).
	l.ResolveTarget = func(_ context.Context, t string) (string, error) { return t, nil }
	if m.o.Evaluator != nil || (l.Harness == nil && l.Evaluator == nil) {
		l.Evaluator = m.evaluator
	}
	if l.Log == nil {
		l.Log = m.log
	}
	return &l
}

// finish writes a run's best kernel back as knowledge when its drive ends
// (best effort, as the command line does after its run).
func (m *Manager) finish(runID string) {
	if m.o.Launch == nil {
		return
	}
	m.launcher().Finish(context.Background(), runID, m.o.Op)
}
