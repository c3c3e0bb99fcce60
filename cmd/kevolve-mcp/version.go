package main

import (
	"fmt"
	"runtime/debug"
	"strings"

	"github.com/kevolve/kevolve-mcp/tools"
)

// Set by the Makefile's -ldflags (-X main.version=... -X main.commit=...
// -X main.buildDate=...). A plain `go build` leaves them empty and the
// version falls back to what the Go toolchain stamped (vcs.revision,
// vcs.time, vcs.modified).
var (
	version   = ""
	commit    = ""
	buildDate = ""
)

// buildVersion is what --version prints and what the server reports at
// initialize: the release (or 0.1.0-dev), the commit and the build date.
func buildVersion() string {
	v, c, d, dirty := version, commit, buildDate, false
	if info, ok := debug.ReadBuildInfo(); ok {
		for _, s := range info.Settings {
			switch s.Key {
			case "vcs.revision":
				if c == "" {
					c = s.Value
				}
			case "vcs.time":
				if d == "" {
					d = s.Value
				}
			case "vcs.modified":
				dirty = s.Value == "true" && commit == ""
			}
		}
	}
	if v == "" {
		v = "0.1.0-dev"
	}
	if len(c) > 12 {
		c = c[:12]
	}
	var parts []string
	if c != "" {
		if dirty {
			c += "-dirty"
		}
		parts = append(parts, "commit "+c)
	}
	if d != "" {
		parts = append(parts, "built "+d)
	}
	if len(parts) == 0 {
		return v + " (commit unknown: build with `make build`)"
	}
	return fmt.Sprintf("%s (%s)", v, strings.Join(parts, ", "))
}

func init() { tools.Version = buildVersion() }
