package engine

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"

	"github.com/kevolve/kevolve-mcp/search"
)

// ReportData is everything a run's report is drawn from.
type ReportData struct {
	Run     *search.Run     `json:"run"`
	Summary search.Summary  `json:"summary"`
	Nodes   []*search.Node  `json:"nodes"`
	Events  []*search.Event `json:"events"`
}

// LoadReportData reads a run's report input from the store.
func LoadReportData(ctx context.Context, st search.Store, runID string) (*ReportData, error) {
	run, err := st.Run(ctx, runID)
	if err != nil {
		return nil, err
	}
	nodes, err := st.Nodes(ctx, runID)
	if err != nil {
		return nil, err
	}
	events, err := st.Events(ctx, runID, 0, 100000)
	if err != nil {
		return nil, err
	}
	return &ReportData{Run: run, Summary: search.Summarize(run, nodes), Nodes: nodes, Events: events}, nil
}

// WriteReport writes a run's report into dir and returns the file's path.
//
// TODO(integrator): replace with helper D2's search/report HTML renderer
// (it renders from its own plain input structs, built from ReportData)
// once that package lands. Until then the report is the run as JSON:
// summary, every node with its code and result, and the event feed.
var WriteReport = func(ctx context.Context, st search.Store, runID, dir string) (string, error) {
	data, err := LoadReportData(ctx, st, runID)
	if err != nil {
		return "", err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", fmt.Errorf("report folder: %w", err)
	}
	path := filepath.Join(dir, "report.json")
	b, err := json.MarshalIndent(data, "", "  ")
	if err != nil {
		return "", err
	}
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, b, 0o644); err != nil {
		return "", err
	}
	return path, os.Rename(tmp, path)
}
