package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/mark3labs/mcp-go/server"

	"github.com/kevolve/kevolve-mcp/harness/compile"
	"github.com/kevolve/kevolve-mcp/harness/profile"
	"github.com/kevolve/kevolve-mcp/harness/sol"
	"github.com/kevolve/kevolve-mcp/retrieval"
	"github.com/kevolve/kevolve-mcp/search/fleet"
	"github.com/kevolve/kevolve-mcp/tools"
	"github.com/kevolve/kevolve-mcp/tools/transport"
)

// deps opens what the tools call into. A part that cannot open (a bad --kb
// directory, an unwritable database, no Python) is logged and its tools
// answer with that error, rather than taking the whole server down.
//
// With fleet flags (--workers, --listen) the server also coordinates a
// fleet: its search runs are evaluated by the workers, and a fleet that
// cannot start is an error, since it was asked for.
func deps(ctx context.Context, c *cli) (tools.Deps, func(), error) {
	g, logger := c.g, c.logger
	a := newApp(g, logger)
	d := tools.Deps{
		Logger:  logger,
		Devices: a.devices,
		Trace:   sol.TraceOptions{Python: a.python},
		Profile: profile.Options{Python: a.python},
	}
	d.Workspace = compile.Roots(g.workspaces) // what compile_kernel may read by path
	if err := a.openDB(); err != nil {
		logger.Error("database unavailable: knowledge search, caches and calibration are off", "err", err)
	} else if err := retrieval.FTS5Available(ctx, a.db); err != nil {
		logger.Warn("built without FTS5", "err", err)
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
	d.Ceilings = a.ceilings
	closeAll := a.close
	var fl *fleet.Fleet
	if c.fleet.enabled() {
		if a.db == nil {
			a.close()
			return d, nil, errors.New("a fleet needs the database (see the error above)")
		}
		var err error
		if fl, err = c.fleet.launch(ctx, a, c, "auto", filepath.Join(filepath.Dir(g.db), "fleet", "workers")); err != nil {
			a.close()
			return d, nil, fmt.Errorf("fleet: %w", err)
		}
		logger.Info("search runs are evaluated by the fleet", "coordinator", fl.URL, "workers", c.fleet.workers)
		closeAll = func() {
			sctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			fl.Close(sctx)
			a.close()
		}
	}
	if m, err := a.runManager(ctx, runFleet(c, a, fl)); err != nil {
		logger.Error("search store unavailable: evolve tools are off", "err", err)
	} else {
		// Runs pause (and record it) before the fleet stops and the
		// database closes.
		closeRest := closeAll
		d.Runs, closeAll = m, func() { m.Close(); closeRest() }
	}
	d.Model = modelService(a, d)
	return d, closeAll, nil
}

// serve is the root command's action: MCP on stdio, or over HTTP with --http.
func serve(c *cli) error {
	g, logger := c.g, c.logger
	if err := c.fleet.validate(c); err != nil {
		return err
	}
	d, closeDeps, err := deps(context.Background(), c)
	if err != nil {
		return err
	}
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
