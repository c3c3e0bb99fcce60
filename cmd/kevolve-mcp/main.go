// Command kevolve-mcp serves the kevolve tools over MCP (stdio by default,
// streamable HTTP with --http) and offers the same jobs as subcommands.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/mark3labs/mcp-go/server"

	"github.com/kevolve/kevolve-mcp/harness/profile"
	"github.com/kevolve/kevolve-mcp/harness/sol"
	"github.com/kevolve/kevolve-mcp/tools"
	"github.com/kevolve/kevolve-mcp/tools/transport"
)

const usage = `kevolve-mcp: compile, check, time and profile GPU kernels for coding agents.

Usage:
  kevolve-mcp [--stdio]                 serve MCP on stdin/stdout (default)
  kevolve-mcp --http HOST:PORT          serve streamable HTTP at /mcp (loopback by default;
                                        other addresses need --token or KEVOLVE_TOKEN)
  kevolve-mcp doctor [--json]           what hardware and toolchains were found
  kevolve-mcp eval --ref FILE|PROBLEM --candidate FILE [--target cpu|nvidia|auto] [--timeout S] [--json]
                                        check and time one candidate against a reference
  kevolve-mcp sol --ref FILE|PROBLEM [--candidate FILE] [--device KEY] [--svg FILE] [--json]
                                        speed-of-light bound (and the candidate's SOL score)
  kevolve-mcp profile --ref FILE --candidate FILE [--mode kernel|model] [--json]
                                        Nsight Compute / rocprofv3 / CPU profile with a diagnosis
  kevolve-mcp calibrate [--quick]       measure this device's copy bandwidth and GEMM rates
  kevolve-mcp corpus list | import-kernelbench DIR
                                        bundled problems; register a KernelBench checkout
  kevolve-mcp kb search QUERY [--device D] [-k N] [--json]
                                        search the knowledge base (also: kb list)
  kevolve-mcp evolve [--problem P] [--start FILE] [--target cpu|nvidia|auto] [--policy greedy|uct|evolve]
                     [--operator tuner] [--budget N] [--time 30m] [--baseline eager|compile] [--resume RUN] [--json]
                                        graph search for a faster kernel (evolve --help for every flag)
  kevolve-mcp evolve list | show RUN | best RUN | report RUN
                                        past runs, a run's nodes, its best kernel's code, its report
  kevolve-mcp demo                      what make run shows: a bundled problem's start kernel,
                                        its verdict, speedup and speed of light

Global flags:
`

func main() {
	if err := run(os.Args[1:], os.Stdout, os.Stderr); err != nil {
		fmt.Fprintln(os.Stderr, "kevolve-mcp:", err)
		os.Exit(1)
	}
}

type globalFlags struct {
	stdio    bool
	httpAddr string
	token    string
	origins  string
	python   string
	logLevel string
	db       string
	kbDirs   stringList
	embedder string
}

// stringList is a repeatable flag.
type stringList []string

func (s *stringList) String() string     { return strings.Join(*s, ",") }
func (s *stringList) Set(v string) error { *s = append(*s, v); return nil }

func run(args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("kevolve-mcp", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var g globalFlags
	fs.BoolVar(&g.stdio, "stdio", true, "serve MCP over stdin/stdout")
	fs.StringVar(&g.httpAddr, "http", "", "serve streamable HTTP on `HOST:PORT` instead of stdio")
	fs.StringVar(&g.token, "token", os.Getenv("KEVOLVE_TOKEN"), "bearer `token` required from HTTP clients (default $KEVOLVE_TOKEN)")
	fs.StringVar(&g.origins, "allow-origin", "", "comma-separated extra browser `origins` allowed over HTTP")
	fs.StringVar(&g.python, "python", os.Getenv("KEVOLVE_PYTHON"), "Python `interpreter` with torch (default: $KEVOLVE_PYTHON, /opt/torch/.venv, ~/.cache/kevolve/venv, python3)")
	fs.StringVar(&g.logLevel, "log-level", "info", "log `level`: debug, info, warn, error (logs go to stderr)")
	fs.StringVar(&g.db, "db", defaultDBPath(), "the SQLite `file` that holds every table (knowledge index, caches, calibration)")
	fs.Var(&g.kbDirs, "kb", "extra knowledge `dir` of Markdown documents (repeatable)")
	fs.StringVar(&g.embedder, "embedder", os.Getenv("KEVOLVE_EMBEDDER"), "knowledge embedder: hash (offline default), ollama:MODEL[@URL], openai:MODEL[@BASEURL]")
	fs.Usage = func() { fmt.Fprint(stderr, usage); fs.PrintDefaults() }
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return nil
		}
		return err
	}
	logger := newLogger(stderr, g.logLevel)
	slog.SetDefault(logger)

	rest := fs.Args()
	if len(rest) == 0 {
		return serve(g, logger)
	}
	switch rest[0] {
	case "doctor":
		return doctor(g, rest[1:], stdout, stderr)
	case "kb":
		return kb(g, logger, rest[1:], stdout)
	case "eval":
		return evalCmd(g, logger, rest[1:], stdout, stderr)
	case "sol":
		return solCmd(g, logger, rest[1:], stdout, stderr)
	case "profile":
		return profileCmd(g, logger, rest[1:], stdout, stderr)
	case "calibrate":
		return calibrateCmd(g, logger, rest[1:], stdout, stderr)
	case "corpus":
		return corpusCmd(g, logger, rest[1:], stdout, stderr)
	case "demo":
		return demoCmd(g, logger, rest[1:], stdout, stderr)
	case "evolve":
		return evolveCmd(g, logger, rest[1:], stdout, stderr)
	case "help":
		fs.Usage()
		return nil
	}
	return fmt.Errorf("unknown subcommand %q (try --help)", rest[0])
}

func newLogger(w io.Writer, level string) *slog.Logger {
	var l slog.Level
	if err := l.UnmarshalText([]byte(level)); err != nil {
		l = slog.LevelInfo
	}
	return slog.New(slog.NewTextHandler(w, &slog.HandlerOptions{Level: l}))
}

// deps opens what the tools call into. A part that cannot open (a bad --kb
// directory, an unwritable database, no Python) is logged and its tools
// answer with that error, rather than taking the whole server down.
func deps(ctx context.Context, g globalFlags, logger *slog.Logger) (tools.Deps, func()) {
	a := newApp(g, logger)
	d := tools.Deps{
		Logger:  logger,
		Devices: a.devices,
		Trace:   sol.TraceOptions{Python: a.python},
		Profile: profile.Options{Python: a.python},
	}
	if err := a.openDB(); err != nil {
		logger.Error("database unavailable: knowledge search, caches and calibration are off", "err", err)
	}
	if ix, err := a.knowledge(ctx); err != nil {
		logger.Error("knowledge index unavailable", "err", err)
	} else {
		d.Knowledge = ix
	}
	if ev, err := a.evaluator(); err != nil {
		logger.Error("evaluator unavailable: run_kernel is off", "err", err)
	} else {
		d.Evaluator = ev
		d.Profile.PyDir = ev.PyDir()
	}
	d.Resolve = a.resolver()
	d.Ceilings = func(ctx context.Context, key string) (sol.Ceilings, error) {
		return sol.ForDevice(ctx, a.db, a.devices.Get(ctx, false), key)
	}
	return d, a.close
}

func serve(g globalFlags, logger *slog.Logger) error {
	d, closeDeps := deps(context.Background(), g, logger)
	defer closeDeps()
	srv := tools.New(d)
	if g.httpAddr != "" {
		return serveHTTP(srv, g, logger)
	}
	logger.Info("serving MCP on stdio")
	return server.ServeStdio(srv)
}

func serveHTTP(srv *server.MCPServer, g globalFlags, logger *slog.Logger) error {
	opt := transport.HTTPOptions{Addr: g.httpAddr, Token: g.token, Logger: logger}
	if g.origins != "" {
		opt.AllowedOrigins = strings.Split(g.origins, ",")
	}
	if err := opt.Validate(); err != nil {
		return err
	}
	ln, err := net.Listen("tcp", g.httpAddr)
	if err != nil {
		return fmt.Errorf("listen %s: %w", g.httpAddr, err)
	}
	hs := &http.Server{Handler: transport.Handler(srv, opt), ReadHeaderTimeout: 10 * time.Second}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	errc := make(chan error, 1)
	go func() { errc <- hs.Serve(ln) }()
	// The resolved address is printed so that tests and scripts can bind port 0.
	logger.Info("serving MCP over HTTP", "url", "http://"+ln.Addr().String()+"/mcp", "auth", g.token != "")
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	logger.Info("shutting down")
	sctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	return hs.Shutdown(sctx)
}
