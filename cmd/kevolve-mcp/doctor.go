package main

import (
	"context"
	"encoding/json"
	"flag"
	"io"

	"github.com/kevolve/kevolve-mcp/harness/device"
)

// doctor prints what was found. It exits 0 without a GPU: a machine with
// none is a supported configuration, and the table says what is missing.
func doctor(g globalFlags, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("doctor", flag.ContinueOnError)
	fs.SetOutput(stderr)
	asJSON := fs.Bool("json", false, "print the structured report")
	if err := fs.Parse(args); err != nil {
		return err
	}
	r := device.Discover(context.Background(), device.Options{Python: g.python})
	if *asJSON {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(r)
	}
	return device.WriteTable(stdout, r)
}
