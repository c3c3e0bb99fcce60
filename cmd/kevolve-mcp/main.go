// Command kevolve-mcp serves the kevolve tools over MCP (stdio by default,
// streamable HTTP with --http) and offers the same jobs as subcommands.
//
// The command tree is cobra's: root.go holds the root (serving MCP) and the
// global flags; every subcommand lives in a file of its own and registers
// itself there with one line (`func init() { register(newFooCmd) }`).
package main

import (
	"fmt"
	"io"
	"os"
)

func main() {
	if err := run(os.Args[1:], os.Stdout, os.Stderr); err != nil {
		fmt.Fprintln(os.Stderr, "kevolve-mcp:", err)
		os.Exit(1)
	}
}

// run executes one command line; stdout carries only the command's output
// (in server mode, only MCP messages), everything else goes to stderr.
func run(args []string, stdout, stderr io.Writer) error {
	root := newRootCmd(stdout, stderr)
	root.SetArgs(args)
	return root.Execute()
}
