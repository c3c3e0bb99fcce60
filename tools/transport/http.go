// Package transport serves the MCP server over streamable HTTP with the
// protections a network-reachable tool runner needs: a bearer token,
// Origin/Host checks against DNS rebinding, and bounded request bodies.
package transport

import (
	"crypto/subtle"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"strings"

	"github.com/mark3labs/mcp-go/server"
)

// MaxBodyBytes bounds one request body. Kernel sources travel inline, so the
// bound is generous, but a client cannot make the server buffer without end.
const MaxBodyBytes = 8 << 20

// HTTPOptions configure the HTTP transport.
type HTTPOptions struct {
	Addr  string // host:port to bind
	Token string // bearer token; required when Addr is not loopback
	// AllowedOrigins are extra browser origins (scheme://host[:port]) allowed
	// besides loopback ones.
	AllowedOrigins []string
	Logger         *slog.Logger
}

// Validate refuses configurations that would expose kernel execution to the
// network unauthenticated.
func (o HTTPOptions) Validate() error {
	host, _, err := net.SplitHostPort(o.Addr)
	if err != nil {
		return fmt.Errorf("--http %q: want HOST:PORT: %w", o.Addr, err)
	}
	if !IsLoopback(host) && o.Token == "" {
		return errors.New("refusing to serve on a non-loopback address without a bearer token: set --token or KEVOLVE_TOKEN (anyone who reaches the port could run code on this machine)")
	}
	return nil
}

// Handler returns the /mcp handler wrapped in the checks.
func Handler(s *server.MCPServer, o HTTPOptions) http.Handler {
	logger := o.Logger
	if logger == nil {
		logger = slog.Default()
	}
	mcpHTTP := server.NewStreamableHTTPServer(s,
		server.WithEndpointPath("/mcp"),
		server.WithStreamableHTTPLogger(logger),
	)
	mux := http.NewServeMux()
	mux.Handle("/mcp", mcpHTTP)
	return guard(mux, o, logger)
}

func guard(next http.Handler, o HTTPOptions, logger *slog.Logger) http.Handler {
	allowed := map[string]bool{}
	for _, a := range o.AllowedOrigins {
		allowed[strings.TrimRight(strings.ToLower(a), "/")] = true
	}
	want := []byte("Bearer " + o.Token)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		// Origin first: a browser page from a foreign site must not reach the
		// server even with a guessed token, and a rebinding attack shows up
		// here before anything else.
		if origin := r.Header.Get("Origin"); origin != "" && !originAllowed(origin, allowed) {
			logger.Warn("rejected request from foreign origin", "origin", origin, "remote", r.RemoteAddr)
			http.Error(w, "forbidden origin", http.StatusForbidden)
			return
		}
		if !hostAllowed(r.Host) && o.Token == "" {
			http.Error(w, "forbidden host", http.StatusForbidden)
			return
		}
		if o.Token != "" {
			got := []byte(r.Header.Get("Authorization"))
			if subtle.ConstantTimeCompare(got, want) != 1 {
				w.Header().Set("WWW-Authenticate", `Bearer realm="kevolve-mcp"`)
				http.Error(w, "missing or wrong bearer token", http.StatusUnauthorized)
				return
			}
		}
		if r.Body != nil {
			r.Body = http.MaxBytesReader(w, r.Body, MaxBodyBytes)
		}
		next.ServeHTTP(w, r)
	})
}

func originAllowed(origin string, allowed map[string]bool) bool {
	if allowed[strings.TrimRight(strings.ToLower(origin), "/")] {
		return true
	}
	u, err := url.Parse(origin)
	if err != nil || u.Host == "" {
		return false
	}
	return IsLoopback(u.Hostname())
}

// hostAllowed guards a tokenless (loopback) server against DNS rebinding: the
// Host header must name loopback too.
func hostAllowed(host string) bool {
	h, _, err := net.SplitHostPort(host)
	if err != nil {
		h = host
	}
	return IsLoopback(strings.Trim(h, "[]"))
}

// IsLoopback reports whether host is localhost or a loopback IP.
func IsLoopback(host string) bool {
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip, err := netip.ParseAddr(strings.Trim(host, "[]"))
	return err == nil && ip.IsLoopback()
}
