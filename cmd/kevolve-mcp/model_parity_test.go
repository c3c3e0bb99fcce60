package main

import (
	"context"
	"database/sql"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"testing"
	"time"

	"github.com/spf13/pflag"

	"github.com/kevolve/kevolve-mcp/harness/sol"
	"github.com/kevolve/kevolve-mcp/harness/toolchain/toolchaintest"
	"github.com/kevolve/kevolve-mcp/search/launch"
	"github.com/kevolve/kevolve-mcp/search/operator"
	"github.com/kevolve/kevolve-mcp/search/operator/operatortest"
	"github.com/kevolve/kevolve-mcp/search/optimize"
	"github.com/kevolve/kevolve-mcp/search/runs"
	"github.com/kevolve/kevolve-mcp/tools"
)

// TestModelFlowParity: the model flow asked for on the command line
// (`optimize`'s flags, their defaults included) and over MCP (the
// model_profile and verify_model tools' arguments, through the server's
// service) resolves the same options on one host: target, language,
// minimum share, compile baseline, ceilings, data directory and export,
// whichever operator the command's suite runs (it builds that operator,
// and only the tuner changes what the model is told). Nothing is
// profiled: the options are what the jobs would be given.
func TestModelFlowParity(t *testing.T) {
	py := toolchaintest.Python(t)
	dir := t.TempDir()
	// Two front ends on one machine, as a server and a command are: each
	// its own host on the one database.
	c := &cli{g: globalFlags{db: filepath.Join(dir, "k.db"), python: py}}
	ctx := context.Background()
	deps, closeServer, err := tools.OpenDeps(ctx, c.host(), tools.ServerOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(closeServer)
	h := c.host()
	t.Cleanup(h.Close)
	if err := h.OpenDB(); err != nil {
		t.Fatal(err)
	}
	calibrated(t, h.DB())
	model, _ := filepath.Abs("../../search/optimize/testdata/swiglu_mlp.py")
	export := filepath.Join(dir, "out")
	for _, op := range operatortest.Kinds(t) {
		t.Run(op, func(t *testing.T) {
			p, cli := cliModelOptions(t, c, h, "--model", model, "--operator", op, "--export", export)
			if operator.Kind(p.Operator.Name()) != operator.Kind(op) || p.Target != cli.Target {
				t.Errorf("the command's suite runs operator %q on %s, asked %q for the model on %s", p.Operator.Name(), p.Target, op, cli.Target)
			}
			if cli.Target == "auto" || cli.Language == "" || cli.Ceilings == nil || cli.MinShare != optimize.DefaultMinShare || cli.Tuner != (op == "tuner") {
				t.Errorf("the command resolved %+v", cli)
			}
			// The command's alone: the report page, the suite, the search's
			// time. The model tools take no operator: the client searches
			// the regions or names one per run (evolve, TestLaunchParity).
			cli.ReportDir, cli.SuiteID, cli.SearchTime, cli.Log, cli.Tuner = "", "", 0, nil, false

			got := mcpOptions[tools.ModelProfileInput](t, deps.Model, map[string]any{"model": model})
			want := cli
			want.Export = "" // model_profile exports nothing
			if !reflect.DeepEqual(got, want) {
				t.Errorf("model_profile's options differ:\nMCP %+v\nCLI %+v", got, want)
			}
			got = mcpOptions[tools.VerifyModelInput](t, deps.Model, map[string]any{"model": model, "export": export})
			if !reflect.DeepEqual(got, cli) {
				t.Errorf("verify_model's options differ:\nMCP %+v\nCLI %+v", got, cli)
			}
		})
	}
}

// cliModelOptions parses optimize's flags as the command does and prepares
// its run on h up to the model options.
func cliModelOptions(t *testing.T, c *cli, h *launch.Host, args ...string) (*launch.PreparedSuite, optimize.Options) {
	t.Helper()
	var oo optimizeOptions
	fs := pflag.NewFlagSet("optimize", pflag.ContinueOnError)
	optimizeFlags(fs, &oo)
	if err := fs.Parse(args); err != nil {
		t.Fatal(err)
	}
	p, o, err := runs.PrepareOptimize(context.Background(), h, optimizeRequest(c, &oo, fs, io.Discard))
	if err != nil {
		t.Fatal(err)
	}
	return p, o
}

// mcpOptions decodes a tool's arguments as its typed handler does and
// resolves its request through the server's model service.
func mcpOptions[In interface{ Request() optimize.Request }](t *testing.T, svc *optimize.Service, args map[string]any) optimize.Options {
	t.Helper()
	var in In
	b, _ := json.Marshal(args)
	if err := json.Unmarshal(b, &in); err != nil {
		t.Fatal(err)
	}
	o, err := svc.Options(context.Background(), in.Request())
	if err != nil {
		t.Fatal(err)
	}
	return o
}

// calibrated stores figures for this host's CPU, so both front ends rank
// by SOL without measuring it (on a GPU host the GPU's figures are used).
func calibrated(t *testing.T, db *sql.DB) {
	t.Helper()
	host, _ := os.Hostname()
	c := sol.Calibration{DeviceUUID: "cpu:" + host + ":parity", Kind: "cpu", MeasuredAt: time.Now(),
		Metrics: map[string]float64{sol.MetricMemBandwidth: 20e9, "fp32": 200e9}}
	if err := sol.SaveCalibration(context.Background(), db, c); err != nil {
		t.Fatal(err)
	}
}
