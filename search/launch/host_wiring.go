package launch

import (
	"context"
	"fmt"
	"io"
	"os"

	"github.com/kevolve/kevolve-mcp/harness"
	"github.com/kevolve/kevolve-mcp/harness/sol"
	"github.com/kevolve/kevolve-mcp/harness/target"
	"github.com/kevolve/kevolve-mcp/search"
	"github.com/kevolve/kevolve-mcp/search/engine"
)

// Launcher is this host's wiring of a search, the same for the CLI's
// commands and the server's tools: st keeps the runs, notes go to w (nil:
// the log), remote says a fleet elsewhere owns the targets, and calibrate
// lets an uncalibrated CPU be measured once.
func (h *Host) Launcher(st search.Store, w io.Writer, remote bool) *Launcher {
	return &Launcher{
		Store:   st,
		Harness: h.Evaluator,
		Ceilings: func(ctx context.Context, calibrate bool) (*sol.Ceilings, error) {
			out := w
			if out == nil {
				out = io.Discard
			}
			c, err := h.CeilingsFor(ctx, calibrate, out)
			if err != nil {
				return nil, err
			}
			return &c, nil
		},
		Knowledge:    h.Knowledge,
		KnowledgeDir: h.UserKnowledgeDir(),
		Server:       h.serverCommand(),
		ResolveTarget: func(ctx context.Context, s string) (string, error) {
			ev, err := h.Evaluator()
			if err != nil {
				return "", err
			}
			return resolveTarget(ctx, ev, s, remote)
		},
		Resolve: func(ctx context.Context, s engine.ProblemSpec) (search.Problem, string, error) {
			s.CorpusRoot = CorpusRoot()
			return engine.ResolveProblem(ctx, h.Registry(), s)
		},
		Devices: func(ctx context.Context, target string) []string {
			return h.devices.Get(ctx, false).DeviceNames(target)
		},
		Log:   h.cfg.Log,
		Notes: w,
	}
}

// resolveTarget reads a target word through the harness's one resolution
// (auto picks the GPU torch drives here, else the CPU; a named target
// without its device here fails with the device's message, as eval does),
// or by name alone when remote workers own the devices.
func resolveTarget(ctx context.Context, ev *harness.Evaluator, s string, remote bool) (string, error) {
	if remote {
		t, err := target.Parse(s)
		if err != nil {
			return "", err
		}
		if t != target.Auto {
			return string(t), nil
		}
	}
	t, err := ev.ResolveTarget(ctx, s)
	return string(t), err
}

// serverCommand is this binary's own MCP command line (same --db, --kb,
// --python) for an agent operator's KEVOLVE_MCP_CONFIG; nil when the
// executable cannot be named (the operator then uses its default).
func (h *Host) serverCommand() []string {
	exe, err := os.Executable()
	if err != nil {
		fmt.Fprintf(os.Stderr, "agent operators: cannot name this server: %v\n", err)
		return nil
	}
	cmd := []string{exe, "--db", h.cfg.DB}
	for _, d := range h.cfg.KBDirs {
		cmd = append(cmd, "--kb", d)
	}
	if h.cfg.Python != "" {
		cmd = append(cmd, "--python", h.cfg.Python)
	}
	return append(cmd, "--stdio")
}

// CeilingsFor resolves the device's ceilings, calibrating the CPU when
// allowed through the host's FirstUse (once, or again while its figures
// are provisional), saying so on w.
func (h *Host) CeilingsFor(ctx context.Context, calibrate bool, w io.Writer) (sol.Ceilings, error) {
	rep := h.devices.Get(ctx, false)
	if calibrate && len(rep.GPUs) == 0 && h.OpenDB() == nil {
		cal, err := h.firstUse().CPU(ctx)
		if err != nil {
			return sol.Ceilings{}, err
		}
		if cal != nil {
			fmt.Fprintln(w, sol.FirstUseNote(cal))
		}
	}
	return sol.ForDevice(ctx, h.db, rep, "")
}

// MeasuredCeilings are this device's ceilings as the database holds them,
// calibrating nothing; nil without the database or figures (a fleet
// worker's results and the model flow then carry no SOL figures).
func (h *Host) MeasuredCeilings(ctx context.Context) *sol.Ceilings {
	if h.OpenDB() != nil {
		return nil
	}
	if c, err := sol.ForDevice(ctx, h.db, h.devices.Get(ctx, false), ""); err == nil {
		return &c
	}
	return nil
}

// SOLDeps wires the SOL flow to this machine: its device's ceilings
// (measured figures over the datasheet), its Python for traces, and the
// shape set an evaluation here runs, so `sol` with and without a
// candidate bounds the same shapes.
func (h *Host) SOLDeps(ctx context.Context) harness.SOLDeps {
	return harness.SOLDeps{Resolve: h.Resolver(), Ceilings: h.Ceilings, Trace: sol.TraceOptions{Python: h.python},
		DefaultShapes: harness.EvalShapes(h.devices.Get(ctx, false))}
}

// Ceilings are the ceilings of a spec-table device key ("" = this
// machine's device, measured figures over the datasheet); an uncalibrated
// CPU is calibrated first, into this database.
func (h *Host) Ceilings(ctx context.Context, key string) (sol.Ceilings, error) {
	return h.firstUse().Ceilings(ctx, h.devices.Get(ctx, false), key)
}

// firstUse is the calibrator of the host's database, shared by every
// caller on it (sol_analysis, a profile's roofline), so concurrent first
// calls share one calibration. With an evaluator it holds the CPU alone
// while it measures (no timed evaluation beside it).
func (h *Host) firstUse() *sol.FirstUse {
	h.calOnce.Do(func() {
		switch ev, err := h.Evaluator(); {
		case h.OpenDB() != nil:
			h.cal = sol.NewFirstUse(nil, h.python) // no database to store into: ForDevice says what is missing
		case err == nil:
			h.cal = ev.Calibrator()
		}
		if h.cal == nil { // no evaluator (or one made without the database): nothing to hold
			h.cal = sol.FirstUseOf(h.db, h.python, nil)
		}
	})
	return h.cal
}
