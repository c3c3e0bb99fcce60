package engine

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/kevolve/kevolve-mcp/search"
)

func TestWriteReport(t *testing.T) {
	l := &landscape{}
	e, st := newTestEngine(t, l)
	run, err := e.Run(context.Background(), StartOptions{Problem: synthProblem("rep"), StartCode: startCode(4, 4), Budget: search.Budget{Evals: 5}, Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	path, err := WriteReport(context.Background(), st, run.ID, dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	page, err := os.ReadFile(path)
	if err != nil || !strings.HasSuffix(path, ".html") || !strings.Contains(string(page), run.ID) {
		t.Fatalf("report page %s: %v", path, err)
	}
	var data ReportData
	b, _ := os.ReadFile(filepath.Join(dir, "report.json"))
	if err := json.Unmarshal(b, &data); err != nil || len(data.Nodes) != 5 || data.Summary.Evaluations != 5 || len(data.Events) == 0 {
		t.Fatalf("report.json: %v, %d nodes, %+v", err, len(data.Nodes), data.Summary)
	}
	_, nodes, _ := ReportInput(&data, nil)
	if len(nodes) != 5 || nodes[1].Parents[0] != nodes[0].ID || nodes[0].Timing == nil || nodes[0].Verdict != "pass" {
		t.Fatalf("report input %+v", nodes)
	}
}

// Two writers of one run's report at once (the run's end and a report tool
// call, as in TestEvolveAgentLoopOverMCP) each rename a whole file of
// their own: neither fails and what is left parses.
func TestWriteReportConcurrently(t *testing.T) {
	e, st := newTestEngine(t, &landscape{})
	run, err := e.Run(context.Background(), StartOptions{Problem: synthProblem("rep2"), StartCode: startCode(4, 4), Budget: search.Budget{Evals: 3}, Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if _, err := WriteReport(context.Background(), st, run.ID, dir, nil); err != nil {
				errs <- err
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	var data ReportData
	b, _ := os.ReadFile(filepath.Join(dir, "report.json"))
	if err := json.Unmarshal(b, &data); err != nil || len(data.Nodes) != 3 {
		t.Fatalf("report.json after concurrent writes: %v, %d nodes", err, len(data.Nodes))
	}
	if left, _ := filepath.Glob(filepath.Join(dir, ".report*")); len(left) != 0 {
		t.Errorf("temporary files left behind: %v", left)
	}
}
