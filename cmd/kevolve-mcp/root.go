package main

import (
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// globalFlags are the root's flags. The server's own (stdio, http, token,
// allow-origin) belong to the root command alone; the others are persistent:
// accepted before or after any subcommand (`kevolve-mcp --db X eval ...` and
// `kevolve-mcp eval --db X ...` mean the same).
type globalFlags struct {
	stdio    bool
	httpAddr string
	token    string
	origins  string
	python   string
	logLevel string
	db       string
	kbDirs   []string
	embedder string
	// hostMemGiB is --eval-host-mem: 0 the harness default, < 0 no limit.
	hostMemGiB float64
	// workspaces are the folders compile_kernel reads paths from (--workspace).
	workspaces []string
}

// cli is what every command shares. Its fields are filled when cobra has
// parsed the flags (in the root's PersistentPreRunE), so commands read them
// inside RunE, never in their constructors.
type cli struct {
	g      globalFlags
	logger *slog.Logger
	// fleet: the server's fleet flags (evolve has its own): with them the
	// server coordinates workers that evaluate its search runs.
	fleet fleetFlags
}

// commandCtor builds one subcommand over the shared state.
type commandCtor func(*cli) *cobra.Command

// commands are the subcommands, registered by the file that defines each one
// with a single line, `func init() { register(newFooCmd) }`, so adding a
// command never touches this file (and parallel additions never conflict).
var commands []commandCtor

func register(ctor commandCtor) { commands = append(commands, ctor) }

// A command may bring its own PersistentPreRunE; the root's (flags from the
// environment, the logger) must still run first, which cobra does only when
// told to traverse.
func init() { cobra.EnableTraverseRunHooks = true }

// logLevels are the values --log-level accepts.
var logLevels = []string{"debug", "info", "warn", "error"}

// newRootCmd builds the whole command tree. Its own action serves MCP: on
// stdio by default, over streamable HTTP with --http.
func newRootCmd(stdout, stderr io.Writer) *cobra.Command {
	c := &cli{}
	root := &cobra.Command{
		Use:   "kevolve-mcp",
		Short: "Compile, check, time and profile GPU kernels for coding agents",
		Long: `kevolve-mcp: compile, check, time and profile GPU kernels for coding agents.

Without a subcommand it serves the MCP tools: on stdin/stdout (the default,
--stdio), or over streamable HTTP at /mcp with --http HOST:PORT (loopback by
default; other addresses need --token or KEVOLVE_TOKEN).

With --workers (and --listen for remote workers) the server also coordinates
a fleet: the search runs its tools start are evaluated by the workers.

The subcommands run the same jobs from a shell. Global flags (--db, --python,
--kb, --embedder, --log-level, ...) may come before or after the subcommand.`,
		Example: `  claude mcp add kevolve -- kevolve-mcp --stdio
  kevolve-mcp --http 127.0.0.1:8765
  kevolve-mcp eval --ref llm/rmsnorm --candidate my_kernel.py
  kevolve-mcp completion bash > /etc/bash_completion.d/kevolve-mcp`,
		Version:       buildVersion(),
		Args:          cobra.NoArgs,
		SilenceUsage:  true, // a failed job prints its error, not the flag list
		SilenceErrors: true, // main prints the error once, prefixed
		PersistentPreRunE: func(cmd *cobra.Command, args []string) error {
			return c.setup(cmd)
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			return serve(c)
		},
	}
	root.SetOut(stdout)
	root.SetErr(stderr)
	// A mistyped flag or value names the command whose help lists the right ones.
	root.SetFlagErrorFunc(func(cmd *cobra.Command, err error) error {
		return fmt.Errorf("%s: %w (see '%s --help')", cmd.CommandPath(), readableFlagError(err), cmd.CommandPath())
	})

	g := &c.g
	// The server's own flags belong to the root alone: a subcommand never serves.
	sf := root.Flags()
	sf.BoolVar(&g.stdio, "stdio", true, "serve MCP over stdin/stdout (the default when --http is not given)")
	sf.StringVar(&g.httpAddr, "http", "", "serve streamable HTTP on `HOST:PORT` instead of stdio")
	sf.StringVar(&g.token, "token", "", "bearer `token` required from HTTP clients (default $KEVOLVE_TOKEN)")
	sf.StringVar(&g.origins, "allow-origin", "", "comma-separated extra browser `origins` allowed over HTTP")
	sf.StringArrayVar(&g.workspaces, "workspace", nil, "`dir` whose files compile_kernel may read by path (repeatable; default: the working directory), besides the cache")
	addFleetFlags(sf, &c.fleet)
	// The rest are global: accepted before or after any subcommand.
	pf := root.PersistentFlags()
	pf.StringVar(&g.python, "python", "", "Python `interpreter` with torch (default: $KEVOLVE_PYTHON, /opt/torch/.venv, ~/.cache/kevolve/venv, python3)")
	pf.StringVar(&g.logLevel, "log-level", "info", "log `level`: "+strings.Join(logLevels, ", ")+" (logs go to stderr)")
	pf.StringVar(&g.db, "db", defaultDBPath(), "the SQLite `file` that holds every table (knowledge index, caches, calibration)")
	pf.StringArrayVar(&g.kbDirs, "kb", nil, "extra knowledge `dir` of Markdown documents (repeatable)")
	pf.Float64Var(&g.hostMemGiB, "eval-host-mem", 0, "host memory in `GiB` one evaluation process and its children may hold before it is killed as out_of_memory (default: half this host's memory, at most 32; -1: no limit)")
	pf.StringVar(&g.embedder, "embedder", "", "knowledge embedder: hash (offline default), ollama:MODEL[@URL], openai:MODEL[@BASEURL] (default $KEVOLVE_EMBEDDER)")
	_ = root.RegisterFlagCompletionFunc("log-level", fixedCompletion(logLevels...))
	_ = root.RegisterFlagCompletionFunc("embedder", fixedCompletion("hash", "ollama:", "openai:"))
	_ = root.MarkPersistentFlagFilename("db", "db", "sqlite", "sqlite3")
	_ = root.MarkPersistentFlagDirname("kb")

	for _, ctor := range commands {
		root.AddCommand(ctor(c)) // cobra lists them sorted by name
	}
	// cobra adds `completion` and `help` when it executes; adding them now
	// makes the tree whole for tests and lets `completion` refuse a shell it
	// does not know instead of printing help and exiting 0.
	root.SetHelpCommand(newHelpCmd())
	root.InitDefaultHelpCmd()
	root.InitDefaultCompletionCmd()
	for _, sub := range root.Commands() {
		if sub.Name() == "completion" {
			requireSubcommand(sub)
		}
	}
	return root
}

// setup runs once before any command: it fills the defaults that come from
// the environment (read now, so that --help never prints a token) and
// installs the logger.
func (c *cli) setup(cmd *cobra.Command) error {
	g := &c.g
	if g.token == "" {
		g.token = os.Getenv("KEVOLVE_TOKEN")
	}
	if g.python == "" {
		g.python = os.Getenv("KEVOLVE_PYTHON")
	}
	if g.embedder == "" {
		g.embedder = os.Getenv("KEVOLVE_EMBEDDER")
	}
	var level slog.Level
	if err := level.UnmarshalText([]byte(g.logLevel)); err != nil {
		return fmt.Errorf("--log-level %q: want one of %s", g.logLevel, strings.Join(logLevels, ", "))
	}
	c.logger = slog.New(slog.NewTextHandler(cmd.ErrOrStderr(), &slog.HandlerOptions{Level: level}))
	slog.SetDefault(c.logger)
	return nil
}

// readableFlagError says what a flag wants when its value does not parse:
// pflag's own message ends in strconv's ("parsing "abc": invalid syntax").
func readableFlagError(err error) error {
	var bad *pflag.InvalidValueError
	if !errors.As(err, &bad) {
		return err
	}
	f := bad.GetFlag()
	want := map[string]string{
		"bool": "true or false", "int": "a whole number", "int64": "a whole number",
		"uint": "a whole number >= 0", "float64": "a number", "duration": "a duration such as 30s",
	}[f.Value.Type()]
	if want == "" {
		return err
	}
	dash := "--"
	if len(f.Name) == 1 {
		dash = "-" // -k, as it is written
	}
	return fmt.Errorf("%s%s %q: want %s", dash, f.Name, bad.GetValue(), want)
}

// groupCmd is a command that only holds subcommands (corpus, kb). Run bare
// or with an unknown word it fails, naming the subcommands, rather than
// printing help and exiting 0 as cobra does by default.
func groupCmd(use, short string, subs ...*cobra.Command) *cobra.Command {
	cmd := &cobra.Command{Use: use, Short: short}
	cmd.AddCommand(subs...)
	requireSubcommand(cmd)
	return cmd
}

func requireSubcommand(cmd *cobra.Command) {
	cmd.Args = cobra.ArbitraryArgs
	cmd.RunE = func(cmd *cobra.Command, args []string) error {
		var names []string
		for _, s := range cmd.Commands() {
			if s.IsAvailableCommand() {
				names = append(names, s.Name())
			}
		}
		if len(args) == 0 {
			return fmt.Errorf("%s: name a subcommand: %s (see '%s --help')", cmd.CommandPath(), strings.Join(names, ", "), cmd.CommandPath())
		}
		return fmt.Errorf("%s: unknown subcommand %q: want one of %s", cmd.CommandPath(), args[0], strings.Join(names, ", "))
	}
}

// newHelpCmd is `help [command]`. Cobra's own prints the root's help and
// exits 0 for a command that does not exist; a typo should fail.
func newHelpCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "help [command]",
		Short: "Help about any command",
		ValidArgsFunction: func(cmd *cobra.Command, args []string, _ string) ([]cobra.Completion, cobra.ShellCompDirective) {
			target, _, err := cmd.Root().Find(args)
			if err != nil {
				return nil, cobra.ShellCompDirectiveNoFileComp
			}
			var names []cobra.Completion
			for _, c := range target.Commands() {
				if c.IsAvailableCommand() {
					names = append(names, cobra.CompletionWithDesc(c.Name(), c.Short))
				}
			}
			return names, cobra.ShellCompDirectiveNoFileComp
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			target, rest, err := cmd.Root().Find(args)
			if err != nil || len(rest) > 0 {
				return fmt.Errorf("help: no command %q (see '%s --help')", strings.Join(args, " "), cmd.Root().Name())
			}
			return target.Help()
		},
	}
}

// fixedCompletion completes a flag from a fixed list of values.
func fixedCompletion(values ...string) cobra.CompletionFunc {
	return func(*cobra.Command, []string, string) ([]cobra.Completion, cobra.ShellCompDirective) {
		return values, cobra.ShellCompDirectiveNoFileComp
	}
}
