package main

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/mark3labs/mcp-go/server"

	"github.com/kevolve/kevolve-mcp/tools"
	"github.com/kevolve/kevolve-mcp/tools/transport"
)

// serve is the root command's action: MCP on stdio, or over HTTP with --http.
func serve(c *cli) error {
	g, logger := c.g, c.logger
	if err := c.fleet.validate(c); err != nil {
		return err
	}
	// With fleet flags (--workers, --listen) the server also coordinates a
	// fleet: its search runs are evaluated by the workers.
	d, closeDeps, err := tools.OpenDeps(context.Background(), c.host(),
		tools.ServerOptions{Workspaces: g.workspaces, Fleet: c.fleet.options(c), Remote: c.fleet.remote()})
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
