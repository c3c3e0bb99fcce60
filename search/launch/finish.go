package launch

import (
	"context"

	"github.com/kevolve/kevolve-mcp/search/engine"
	"github.com/kevolve/kevolve-mcp/search/memory"
)

// Finish is what follows every run, however it ended: its best kernel is
// written as knowledge (and indexed, so search_knowledge finds it at once)
// unless the settings say not to.
func (l *Launcher) Finish(ctx context.Context, runID string, s OperatorSettings) {
	if s.NoWriteBack || l.KnowledgeDir == "" || l.Store == nil {
		return
	}
	w, err := memory.WriteBack(ctx, l.Store, runID, l.KnowledgeDir)
	switch {
	case err != nil:
		l.note("write-back: %v", err)
		return
	case w.Path == "":
		return
	case w.Kept:
		l.note("knowledge: kept %s (an earlier run did better)", w.Path)
		return
	}
	if l.Knowledge == nil {
		return
	}
	if _, err := l.Knowledge(ctx); err != nil {
		l.note("write-back: wrote %s but could not index it: %v", w.Path, err)
		return
	}
	l.note("knowledge: wrote and indexed %s", w.Path)
}

// Report writes run's report into dir with the device's ceilings (none
// when uncalibrated: the page says so) and returns its path.
func (l *Launcher) Report(ctx context.Context, runID, dir string) (string, error) {
	return engine.WriteReport(ctx, l.Store, runID, dir, l.ceilings(ctx, false))
}
