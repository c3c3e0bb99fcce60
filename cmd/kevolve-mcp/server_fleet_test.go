package main

import (
	"bytes"
	"context"
	"encoding/json"
	"path/filepath"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/mcp"
	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/kevolve/kevolve-mcp/harness/toolchain/toolchaintest"
)

// The MCP server as a fleet's coordinator: started with --workers, it
// launches local workers, a tuner run started with the evolve tool is
// evaluated by them (two jobs in flight per worker by default, so both
// work), and evolve_status shows the fleet: workers, their devices, jobs
// done and in flight, leases lost. Every answer is checked against the
// tool's declared output schema, as strict clients do.
func TestServerCoordinatesAFleet(t *testing.T) {
	py := toolchaintest.Python(t)
	db := filepath.Join(t.TempDir(), "k.db")
	c, err := client.NewStdioMCPClient(binary, nil, "--db", db, "--python", py, "--stdio", "--workers", "local:2", "--worker-slots", "2")
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	initialize(t, c)
	tools, err := c.ListTools(context.Background(), mcp.ListToolsRequest{})
	if err != nil {
		t.Fatal(err)
	}
	var statusSchema *jsonschema.Schema
	for _, tl := range tools.Tools {
		if tl.Name != "evolve_status" {
			continue
		}
		raw, _ := json.Marshal(tl.OutputSchema)
		doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(raw))
		if err != nil {
			t.Fatal(err)
		}
		comp := jsonschema.NewCompiler()
		if err := comp.AddResource("evolve_status.json", doc); err != nil {
			t.Fatal(err)
		}
		if statusSchema, err = comp.Compile("evolve_status.json"); err != nil {
			t.Fatal(err)
		}
	}
	if statusSchema == nil {
		t.Fatal("no evolve_status output schema")
	}

	var info struct {
		RunID string `json:"run_id"`
	}
	if msg := callTool(t, c, "evolve", map[string]any{"problem": "other/relu", "target": "cpu", "budget": 7, "seed": 5}, &info); msg != "" {
		t.Fatal(msg)
	}
	type status struct {
		Status  string `json:"status"`
		Summary struct {
			Evaluations int `json:"evaluations"`
		} `json:"summary"`
		Fleet *struct {
			Done     int `json:"done"`
			Queued   int `json:"queued"`
			InFlight int `json:"in_flight"`
			Workers  []struct {
				Name     string `json:"name"`
				State    string `json:"state"`
				JobsDone int    `json:"jobs_done"`
				Devices  []struct {
					Target string `json:"target"`
				} `json:"devices"`
			} `json:"workers"`
		} `json:"fleet"`
	}
	var st status
	since := 0.0
	for deadline := time.Now().Add(4 * time.Minute); st.Status != "done" && time.Now().Before(deadline); {
		req := mcp.CallToolRequest{}
		req.Params.Name = "evolve_status"
		req.Params.Arguments = map[string]any{"run_id": info.RunID, "since": since, "wait_s": 10}
		res, err := c.CallTool(context.Background(), req)
		if err != nil || res.IsError {
			t.Fatalf("evolve_status: %v %+v", err, res)
		}
		b, _ := json.Marshal(res.StructuredContent)
		v, err := jsonschema.UnmarshalJSON(bytes.NewReader(b))
		if err != nil {
			t.Fatal(err)
		}
		if err := statusSchema.Validate(v); err != nil {
			t.Fatalf("evolve_status answered outside its output schema: %v\n%s", err, b)
		}
		var next struct {
			NextSince float64 `json:"next_since"`
		}
		json.Unmarshal(b, &next)
		since = next.NextSince
		st = status{}
		if err := json.Unmarshal(b, &st); err != nil {
			t.Fatal(err)
		}
	}
	if st.Status != "done" || st.Summary.Evaluations < 2 {
		t.Fatalf("the run did not finish: %+v", st)
	}
	f := st.Fleet
	if f == nil || len(f.Workers) != 2 {
		t.Fatalf("evolve_status shows no fleet of two workers: %+v", f)
	}
	done := 0
	for _, w := range f.Workers {
		if w.State != "alive" || len(w.Devices) != 2 || w.Devices[0].Target != "cpu" {
			t.Errorf("worker %s: %s with devices %+v; want alive with 2 cpu slots", w.Name, w.State, w.Devices)
		}
		if w.JobsDone == 0 {
			t.Errorf("worker %s evaluated nothing: the run did not keep both busy", w.Name)
		}
		done += w.JobsDone
	}
	if done != f.Done || f.Done < st.Summary.Evaluations || f.InFlight != 0 || f.Queued != 0 {
		t.Fatalf("fleet jobs: workers did %d, the fleet counts %d done, %d in flight, %d queued; the run made %d evaluations",
			done, f.Done, f.InFlight, f.Queued, st.Summary.Evaluations)
	}
	t.Logf("%d evaluations, %d fleet jobs (%d and %d per worker)", st.Summary.Evaluations, f.Done, f.Workers[0].JobsDone, f.Workers[1].JobsDone)
}
