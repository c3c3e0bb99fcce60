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

	"github.com/kevolve/kevolve-mcp/harness/device"
	"github.com/kevolve/kevolve-mcp/tools"
	"github.com/kevolve/kevolve-mcp/tools/transport"
)

const usage = `kevolve-mcp: compile, check, time and profile GPU kernels for coding agents.

Usage:
  kevolve-mcp [--stdio]                 serve MCP on stdin/stdout (default)
  kevolve-mcp --http HOST:PORT          serve streamable HTTP at /mcp (loopback by default;
                                        other addresses need --token or KEVOLVE_TOKEN)
  kevolve-mcp doctor [--json]           what hardware and toolchains were found

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
}

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

func deps(g globalFlags, logger *slog.Logger) tools.Deps {
	return tools.Deps{
		Logger:  logger,
		Devices: device.NewCache(device.Options{Python: g.python}),
	}
}

func serve(g globalFlags, logger *slog.Logger) error {
	srv := tools.New(deps(g, logger))
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
