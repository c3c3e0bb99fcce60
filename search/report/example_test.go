package report_test

import (
	"fmt"
	"strings"
	"time"

	"github.com/kevolve/kevolve-mcp/search/report"
)

// A caller maps its store's rows into Run and Node (ids as strings, nil for
// figures it does not have) and writes the page with WriteFile, or with
// WriteHTML to a writer.
func ExampleWriteHTML() {
	at := time.Date(2026, 11, 22, 12, 0, 0, 0, time.UTC)
	x := func(v float64) *float64 { return &v }
	run := report.Run{ID: "r1", Problem: "llm/softmax", Policy: "greedy", Operator: "tuner", Baseline: "eager",
		Status: "done", BudgetEvals: 4, StartedAt: at, EndedAt: at.Add(95 * time.Second)}
	nodes := []report.Node{
		{ID: "1", Code: "BLOCK = 256\n", Verdict: "pass", Fitness: 1.1, SpeedupEager: x(1.1), PctOfSol: x(20),
			Timing: &report.Timing{MedianS: 100e-6}, CreatedAt: at, FinishedAt: at.Add(10 * time.Second)},
		{ID: "2", Parents: []string{"1"}, Code: "BLOCK = 1024\n", Verdict: "pass", Fitness: 1.65, SpeedupEager: x(1.65), PctOfSol: x(30),
			Timing: &report.Timing{MedianS: 66.7e-6}, CreatedAt: at.Add(11 * time.Second), FinishedAt: at.Add(20 * time.Second)},
		{ID: "3", Parents: []string{"2"}, Code: "BLOCK = 4096\n", Verdict: "compile_error", Message: "BLOCK too large",
			CreatedAt: at.Add(21 * time.Second), FinishedAt: at.Add(30 * time.Second)},
		{ID: "4", Parents: []string{"2"}, Code: "BLOCK = 2048\n", CreatedAt: at.Add(31 * time.Second)}, // in flight
	}
	var page strings.Builder
	if err := report.WriteHTML(&page, run, nodes, report.Ceilings{}); err != nil {
		fmt.Println(err)
	}
	// report.WriteFile("run-r1.html", run, nodes, report.Ceilings{...}) writes it to a file.
	fmt.Println(strings.HasPrefix(page.String(), "<!DOCTYPE html>"), strings.Contains(page.String(), "llm/softmax"))

	// Output:
	// true true
}
