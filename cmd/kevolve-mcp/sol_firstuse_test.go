package main

import (
	"context"
	"encoding/json"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/kevolve/kevolve-mcp/harness/sol"
	"github.com/kevolve/kevolve-mcp/harness/toolchain/toolchaintest"
)

// The server on a fresh --db answers sol_analysis on this host with no
// shell step: its first calls calibrate the CPU into that database, once
// for two arriving together, and the call that did says so.
func TestServerSolAnalysisFreshDB(t *testing.T) {
	py := toolchaintest.Python(t)
	db := filepath.Join(t.TempDir(), "fresh.db")
	c, err := client.NewStdioMCPClient(binary, nil, "--db", db, "--python", py, "--stdio")
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	initialize(t, c)
	call := func() (sol.Report, error) {
		ctx, cancel := context.WithCancel(toolchaintest.Context(t))
		defer cancel()
		req := mcp.CallToolRequest{}
		req.Params.Name = "sol_analysis"
		req.Params.Arguments = map[string]any{"reference": "llm/softmax", "candidate_s": 1e-3}
		res, err := c.CallTool(ctx, req)
		var rep sol.Report
		if err != nil {
			return rep, err
		}
		b, _ := json.Marshal(res.StructuredContent)
		if res.IsError || json.Unmarshal(b, &rep) != nil {
			t.Errorf("sol_analysis on a fresh database: %+v", res.Content)
		}
		return rep, nil
	}
	var wg sync.WaitGroup
	reps := make([]sol.Report, 2)
	for i := range reps {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var err error
			if reps[i], err = call(); err != nil {
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	calibrated := 0
	for _, r := range reps {
		if r.TSolS <= 0 || r.PctOfSol == nil {
			t.Errorf("no bound: %+v", r.Result)
		}
		if r.Calibration != nil {
			calibrated++
			if !strings.Contains(strings.Join(r.Notes, " "), "calibrated first, in") {
				t.Errorf("calibrated without saying so: %v", r.Notes)
			}
			t.Logf("first-use calibration over MCP: %.1f s; %s", r.Calibration.DurationS, r.Summary)
		}
	}
	if calibrated != 1 {
		t.Errorf("%d of 2 concurrent first calls calibrated, want 1", calibrated)
	}
}
