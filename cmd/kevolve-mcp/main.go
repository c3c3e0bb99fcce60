// Command kevolve-mcp serves the kevolve tools over MCP (stdio by default,
// streamable HTTP with --http) and offers the same jobs as subcommands.
//
// The command tree is cobra's: root.go holds the root (serving MCP) and the
// global flags; every subcommand lives in a file of its own and registers
// itself there with one line (`func init() { register(newFooCmd) }`).
package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

func main() {
	if err := run(os.Args[1:], os.Stdout, os.Stderr); err != nil {
		fmt.Fprintln(os.Stderr, "kevolve-mcp:", err)
		var st *exitStatus
		if errors.As(err, &st) {
			os.Exit(st.code)
		}
		os.Exit(1)
	}
}

// exitStatus is an outcome that sets the exit status without being a
// failure of the command: eval's non-pass verdict is 1, its harness
// failure 2 (see each command's --help).
type exitStatus struct {
	code int
	err  error
}

func (e *exitStatus) Error() string { return e.err.Error() }
func (e *exitStatus) Unwrap() error { return e.err }

// run executes one command line; stdout carries only the command's output
// (in server mode, only MCP messages), everything else goes to stderr.
func run(args []string, stdout, stderr io.Writer) error {
	root := newRootCmd(stdout, stderr)
	root.SetArgs(goStyleFlags(root, args))
	return root.Execute()
}

// goStyleFlags keeps command lines written for the CLI before cobra working:
// Go's flag package took long flags with one dash (-json, -ref FILE), pflag
// wants two. A single-dash word that names a long flag of the tree (and
// follows no "--") gets its second dash; -k and other shorthands are left.
func goStyleFlags(root *cobra.Command, args []string) []string {
	long := map[string]bool{}
	walkFlags := func(fs *pflag.FlagSet) { fs.VisitAll(func(f *pflag.Flag) { long[f.Name] = len(f.Name) > 1 }) }
	var walk func(*cobra.Command)
	walk = func(c *cobra.Command) {
		walkFlags(c.Flags())
		walkFlags(c.PersistentFlags())
		for _, sub := range c.Commands() {
			walk(sub)
		}
	}
	walk(root)
	out := make([]string, len(args))
	for i, a := range args {
		out[i] = a
		if a == "--" {
			copy(out[i:], args[i:])
			break
		}
		name, _, _ := strings.Cut(strings.TrimPrefix(a, "-"), "=")
		if len(a) > 2 && a[0] == '-' && a[1] != '-' && long[name] {
			out[i] = "-" + a
		}
	}
	return out
}
