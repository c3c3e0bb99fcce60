// Package harnessevaltest sets up what the search's GPU acceptance tests
// share: a fresh evaluator on this host, its device report, and an Adapter
// that bounds the problems' declared work by the device's SOL ceilings.
package harnessevaltest

import (
	"context"
	"log/slog"
	"os"
	"testing"
	"time"

	"github.com/kevolve/kevolve-mcp/harness"
	"github.com/kevolve/kevolve-mcp/harness/device"
	"github.com/kevolve/kevolve-mcp/harness/sol"
	"github.com/kevolve/kevolve-mcp/harness/toolchain/toolchaintest"
	"github.com/kevolve/kevolve-mcp/search/harnesseval"
)

// GPU skips the test unless KEVOLVE_GPU=1; otherwise it returns an Adapter
// (120 s per evaluation) over an evaluator closed when the test ends, with
// the host's SOL ceilings where they resolve, and the device report.
func GPU(t *testing.T) (*harnesseval.Adapter, device.Report) {
	t.Helper()
	if os.Getenv("KEVOLVE_GPU") != "1" {
		t.Skip("needs a GPU: set KEVOLVE_GPU=1")
	}
	py := toolchaintest.Python(t)
	ctx := context.Background()
	ev, err := harness.NewEvaluator(harness.EvalConfig{Python: py, CacheDir: t.TempDir(),
		Logger: slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ev.Close() })
	rep := device.Discover(ctx, device.Options{Python: py})
	var ceil *sol.Ceilings
	if c, err := sol.ForDevice(ctx, nil, rep, ""); err == nil {
		ceil = &c
	} else {
		t.Logf("no SOL ceilings: %v", err)
	}
	return harnesseval.New(ev, ceil, 120*time.Second, ""), rep
}
