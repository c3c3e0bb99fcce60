package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/kevolve/kevolve-mcp/harness"
	"github.com/kevolve/kevolve-mcp/harness/profile"
	"github.com/kevolve/kevolve-mcp/harness/sol"
	"github.com/kevolve/kevolve-mcp/tools"
)

// The subcommands build the very requests the MCP tools build (through the
// tools package's validators), so the CLI and an agent see the same checks.

func newFlags(name string, stderr io.Writer) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	return fs
}

// signalContext is cancelled by Ctrl-C, so a long job stops its children.
func signalContext() (context.Context, context.CancelFunc) {
	return signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
}

func printJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

// stageProgress prints a long job's stages on stderr, one line each.
func stageProgress(w io.Writer) func(stage string, done, total int) {
	t0 := time.Now()
	last := ""
	return func(stage string, done, total int) {
		if stage == last {
			return
		}
		last = stage
		if total > 0 {
			fmt.Fprintf(w, "  [%5.1fs] %s (%d/%d)\n", time.Since(t0).Seconds(), stage, done, total)
			return
		}
		fmt.Fprintf(w, "  [%5.1fs] %s\n", time.Since(t0).Seconds(), stage)
	}
}

func evalCmd(g globalFlags, logger *slog.Logger, args []string, stdout, stderr io.Writer) error {
	fs := newFlags("eval", stderr)
	var in tools.RunKernelInput
	fs.StringVar(&in.Reference, "ref", "", "reference: a KernelBench-format `file` or a corpus problem name (e.g. llm/rmsnorm)")
	fs.StringVar(&in.Candidate, "candidate", "", "candidate `file` defining ModelNew")
	fs.StringVar(&in.Target, "target", "auto", "cpu, nvidia or auto")
	fs.Float64Var(&in.TimeoutS, "timeout", 0, "wall-clock limit in `seconds` (default 180)")
	fs.IntVar(&in.Trials, "trials", 0, "correctness trials (default 5)")
	fs.Int64Var(&in.Seed, "seed", 0, "base seed (default 42)")
	fs.BoolVar(&in.SkipTiming, "skip-timing", false, "check correctness only")
	fs.StringVar(&in.Shapes, "shapes", "", "shape set of a corpus problem: large or small")
	asJSON := fs.Bool("json", false, "print the structured result the run_kernel tool returns")
	if err := fs.Parse(args); err != nil {
		return err
	}
	a := newApp(g, logger)
	defer a.close()
	req, msg := tools.RunKernelRequest(in, a.resolver())
	if msg != "" {
		return errors.New(msg)
	}
	ev, err := a.evaluator()
	if err != nil {
		return err
	}
	ctx, cancel := signalContext()
	defer cancel()
	res, err := ev.Evaluate(ctx, req, stageProgress(stderr))
	if err != nil {
		return err
	}
	if *asJSON {
		return printJSON(stdout, res)
	}
	return harness.WriteTable(stdout, res)
}

func solCmd(g globalFlags, logger *slog.Logger, args []string, stdout, stderr io.Writer) error {
	fs := newFlags("sol", stderr)
	var in tools.SolAnalysisInput
	fs.StringVar(&in.Reference, "ref", "", "reference `file` (traced) or corpus problem name (declared counts)")
	candidate := fs.String("candidate", "", "candidate `file`: evaluated first, then scored against SOL")
	fs.StringVar(&in.Device, "device", "", "spec-table `key` to bound against (default: this machine's device)")
	fs.StringVar(&in.Dtype, "dtype", "", "compute dtype for the FLOP ceiling")
	fs.StringVar(&in.Shapes, "shapes", "", "shape set of a corpus problem")
	fs.Float64Var(&in.Flops, "flops", 0, "declared FLOPs (with --bytes, no trace)")
	fs.Float64Var(&in.Bytes, "bytes", 0, "declared bytes")
	target := fs.String("target", "auto", "where to evaluate --candidate")
	svg := fs.String("svg", "", "also draw the roofline into this SVG `file`")
	asJSON := fs.Bool("json", false, "print the structured result the sol_analysis tool returns")
	if err := fs.Parse(args); err != nil {
		return err
	}
	a := newApp(g, logger)
	defer a.close()
	ctx, cancel := signalContext()
	defer cancel()
	if err := a.openDB(); err != nil {
		logger.Warn("no database: measured ceilings unavailable", "err", err)
	}
	if *candidate != "" {
		ev, err := a.evaluator()
		if err != nil {
			return err
		}
		ereq, msg := tools.RunKernelRequest(tools.RunKernelInput{Reference: in.Reference, Candidate: *candidate, Target: *target, Shapes: in.Shapes}, a.resolver())
		if msg != "" {
			return errors.New(msg)
		}
		res, err := ev.Evaluate(ctx, ereq, stageProgress(stderr))
		if err != nil {
			return err
		}
		if res.Candidate == nil || res.RefEager == nil {
			return fmt.Errorf("the candidate was not timed (verdict %s): fix it first (kevolve-mcp eval shows why)", res.Verdict)
		}
		withMeasured(&in, res)
	}
	rep, err := a.solReport(ctx, in)
	if err != nil {
		return err
	}
	if *svg != "" {
		if err := writeFile(*svg, func(w io.Writer) error { return sol.WriteRooflineSVG(w, rep) }); err != nil {
			return err
		}
		fmt.Fprintf(stderr, "roofline written to %s\n", *svg)
	}
	if *asJSON {
		return printJSON(stdout, rep)
	}
	return sol.WriteTable(stdout, rep)
}

// withMeasured puts a timed evaluation's shape set, medians and correctness
// into a SOL request, so the bound counts the work that was timed (a CPU run
// defaults to the small set); an untimed one leaves it unchanged.
func withMeasured(in *tools.SolAnalysisInput, res *harness.EvalResult) {
	if res.Candidate == nil || res.RefEager == nil {
		return
	}
	in.Shapes = res.Shapes
	in.CandidateS, in.ReferenceS = res.Candidate.MedianS, res.RefEager.MedianS
	correct := res.Correct
	in.Correct = &correct
}

// solReport validates in as the sol_analysis tool does and bounds it under
// the ceilings of this machine's device (or of in.Device).
func (a *app) solReport(ctx context.Context, in tools.SolAnalysisInput) (sol.Report, error) {
	r, msg := tools.SolRequest(in, sol.TraceOptions{Python: a.python}, a.resolver())
	if msg != "" {
		return sol.Report{}, errors.New(msg)
	}
	ceil, err := sol.ForDevice(ctx, a.db, a.devices.Get(ctx, false), in.Device)
	if err != nil {
		return sol.Report{}, err
	}
	return sol.AnalyzeRequest(ctx, r, ceil)
}

func writeFile(path string, write func(io.Writer) error) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if err := write(f); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

func profileCmd(g globalFlags, logger *slog.Logger, args []string, stdout, stderr io.Writer) error {
	fs := newFlags("profile", stderr)
	var in tools.ProfileKernelInput
	fs.StringVar(&in.Reference, "ref", "", "reference `file`")
	fs.StringVar(&in.Candidate, "candidate", "", "candidate `file` defining ModelNew")
	fs.StringVar(&in.Mode, "mode", "kernel", "kernel (profile the candidate) or model (rank the reference's operators)")
	fs.StringVar(&in.Backend, "backend", "auto", "auto, ncu, rocprof or cpu")
	fs.StringVar(&in.Shapes, "shapes", "", "shape set of a corpus problem")
	fs.Float64Var(&in.TimeoutS, "timeout", 0, "limit in `seconds` (default 120)")
	asJSON := fs.Bool("json", false, "print the structured result the profile_kernel tool returns")
	if err := fs.Parse(args); err != nil {
		return err
	}
	a := newApp(g, logger)
	defer a.close()
	base := profile.Options{Python: a.python}
	if ev, err := a.evaluator(); err == nil {
		base.PyDir = ev.PyDir()
	}
	opt, mode, msg := tools.ProfileRequest(in, base)
	if msg != "" {
		return errors.New(msg)
	}
	ctx, cancel := signalContext()
	defer cancel()
	fmt.Fprintln(stderr, "profiling (Nsight Compute replays each kernel: 10-30 s)...")
	var rep profile.Report
	var err error
	if mode == "model" {
		rep, err = profile.ProfileModel(ctx, in.Reference, opt)
	} else {
		rep, err = profile.Profile(ctx, in.Reference, in.Candidate, opt)
	}
	if err != nil {
		return err
	}
	if *asJSON {
		return printJSON(stdout, rep)
	}
	return profile.WriteTable(stdout, rep)
}

func calibrateCmd(g globalFlags, logger *slog.Logger, args []string, stdout, stderr io.Writer) error {
	fs := newFlags("calibrate", stderr)
	quick := fs.Bool("quick", false, "small sizes (seconds; figures are lower bounds)")
	dev := fs.String("device", "auto", "auto, cuda or cpu")
	asJSON := fs.Bool("json", false, "print the measurements as JSON")
	if err := fs.Parse(args); err != nil {
		return err
	}
	a := newApp(g, logger)
	defer a.close()
	if err := a.openDB(); err != nil {
		return err
	}
	ctx, cancel := signalContext()
	defer cancel()
	fmt.Fprintln(stderr, "measuring copy bandwidth and GEMM rates (about a minute)...")
	c, err := sol.CalibrateAndStore(ctx, a.db, sol.CalibrateOptions{Python: a.python, Device: *dev, Quick: *quick})
	if err != nil {
		return err
	}
	if *asJSON {
		return printJSON(stdout, c)
	}
	fmt.Fprintf(stdout, "%s (%s), stored in %s\n", c.DeviceName, c.DeviceUUID, g.db)
	for _, k := range sortedKeys(c.Metrics) {
		unit := "FLOP/s"
		if k == "mem_bandwidth" {
			unit = "B/s"
		}
		fmt.Fprintf(stdout, "  %-14s %10.3g %s\n", k, c.Metrics[k], unit)
	}
	return nil
}
