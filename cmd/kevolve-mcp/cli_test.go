package main

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kevolve/kevolve-mcp/harness/toolchain/toolchaintest"
	"github.com/spf13/cobra"
)

// runCLI runs one command line in-process, as main does.
func runCLI(t *testing.T, args ...string) (stdout, stderr string, err error) {
	t.Helper()
	var out, errb bytes.Buffer
	err = run(args, &out, &errb)
	return out.String(), errb.String(), err
}

// walk visits every command of the tree, the root first.
func walk(cmd *cobra.Command, visit func(*cobra.Command)) {
	visit(cmd)
	for _, c := range cmd.Commands() {
		walk(c, visit)
	}
}

// Every command, down to the leaves, answers --help with its own usage and
// exits 0; the jobs the design names are all there.
func TestHelpForEveryCommand(t *testing.T) {
	root := newRootCmd(&bytes.Buffer{}, &bytes.Buffer{})
	seen := map[string]bool{}
	walk(root, func(cmd *cobra.Command) {
		path := cmd.CommandPath()
		seen[path] = true
		t.Run(path, func(t *testing.T) {
			args := append(strings.Fields(path)[1:], "--help")
			out, _, err := runCLI(t, args...)
			if err != nil {
				t.Fatalf("%v: %v", args, err)
			}
			about := cmd.Long
			if about == "" {
				about = cmd.Short
			}
			about = strings.SplitN(about, "\n", 2)[0]
			if !strings.Contains(out, "Usage:") || !strings.Contains(out, about) {
				t.Fatalf("%v: help lacks usage or %q:\n%s", args, about, out)
			}
			if cmd.Short == "" {
				t.Errorf("%s has no short description", path)
			}
			if cmd != root && cmd.Name() != "help" && !strings.Contains(out, "--db") {
				t.Errorf("%s help does not list the global flags:\n%s", path, out)
			}
		})
	})
	for _, want := range []string{"doctor", "eval", "sol", "profile", "calibrate", "corpus", "corpus list",
		"corpus import-kernelbench", "kb", "kb search", "kb list", "demo", "kernelbench", "kernelbench run", "completion", "completion bash",
		"optimize", "registry", "registry list", "registry show", "registry remove", "evolve export"} {
		if !seen["kevolve-mcp "+want] {
			t.Errorf("no command %q", want)
		}
	}
	if out, _, err := runCLI(t, "--version"); err != nil || !strings.Contains(out, "kevolve-mcp version") {
		t.Errorf("--version: %v %q", err, out)
	}
	// `help CMD` is the same as `CMD --help`.
	out, _, err := runCLI(t, "help", "eval")
	if err != nil || !strings.Contains(out, "--candidate") {
		t.Errorf("help eval: %v\n%s", err, out)
	}
	if out, _, err := runCLI(t, "help", "kb", "search"); err != nil || !strings.Contains(out, "kb search QUERY") {
		t.Errorf("help kb search: %v\n%s", err, out)
	}
}

func TestCompletionScripts(t *testing.T) {
	for shell, marker := range map[string]string{
		"bash":       "__start_kevolve-mcp",
		"zsh":        "#compdef kevolve-mcp",
		"fish":       "complete -c kevolve-mcp",
		"powershell": "Register-ArgumentCompleter",
	} {
		t.Run(shell, func(t *testing.T) {
			out, _, err := runCLI(t, "completion", shell)
			if err != nil || !strings.Contains(out, marker) {
				t.Fatalf("completion %s: %v, lacks %q", shell, err, marker)
			}
		})
	}
	// bash parses the script it would source.
	if bash, err := exec.LookPath("bash"); err == nil {
		out, _, _ := runCLI(t, "completion", "bash")
		f := filepath.Join(t.TempDir(), "c.bash")
		if err := os.WriteFile(f, []byte(out), 0o644); err != nil {
			t.Fatal(err)
		}
		if b, err := exec.Command(bash, "-n", f).CombinedOutput(); err != nil {
			t.Fatalf("bash -n: %v\n%s", err, b)
		}
	}
	if _, _, err := runCLI(t, "completion", "tcsh"); err == nil {
		t.Error("completion tcsh: no error")
	}
}

// What the shell gets back when it asks to complete a word: cobra's hidden
// __complete command answers one candidate a line, then ":directive".
func TestCompletionCandidates(t *testing.T) {
	tests := []struct {
		args []string
		want []string
		not  []string
	}{
		{args: []string{"e"}, want: []string{"eval"}, not: []string{"doctor"}},
		{args: []string{"eval", "--target", ""}, want: []string{"auto", "cpu", "nvidia"}},
		{args: []string{"eval", "--ref", "llm/rms"}, want: []string{"llm/rmsnorm"}, not: []string{"llm/softmax"}},
		{args: []string{"sol", "--ref", "llm/"}, want: []string{"llm/rmsnorm", "llm/softmax"}},
		{args: []string{"profile", "--mode", ""}, want: []string{"kernel", "model"}},
		{args: []string{"--log-level", ""}, want: []string{"debug", "error"}},
		{args: []string{"kb", ""}, want: []string{"search", "list"}},
		{args: []string{"help", "k"}, want: []string{"kb"}},
		{args: []string{"sol", "--device", ""}, want: []string{"h100-sxm", "mi300x"}},
		{args: []string{"corpus", ""}, want: []string{"list", "import-kernelbench"}},
		{args: []string{"eval", "--"}, want: []string{"--candidate", "--ref", "--db", "--python"}},
	}
	for _, tt := range tests {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			out, _, err := runCLI(t, append([]string{cobra.ShellCompRequestCmd}, tt.args...)...)
			if err != nil {
				t.Fatal(err)
			}
			got := map[string]bool{}
			for _, line := range strings.Split(out, "\n") {
				got[strings.SplitN(line, "\t", 2)[0]] = true
			}
			for _, w := range tt.want {
				if !got[w] {
					t.Errorf("lacks %q:\n%s", w, out)
				}
			}
			for _, n := range tt.not {
				if got[n] {
					t.Errorf("offers %q:\n%s", n, out)
				}
			}
		})
	}
}

// Global flags are accepted before and after the subcommand, and mean the
// same in both places. `corpus list` opens --db, so the file appearing where
// the flag said is the proof.
func TestGlobalFlagsBeforeAndAfterSubcommand(t *testing.T) {
	dir := t.TempDir()
	for _, tt := range []struct {
		name string
		args func(db string) []string
	}{
		{"before", func(db string) []string { return []string{"--db", db, "corpus", "list"} }},
		{"between", func(db string) []string { return []string{"corpus", "--db", db, "list"} }},
		{"after", func(db string) []string { return []string{"corpus", "list", "--db", db} }},
		{"after with =", func(db string) []string {
			return []string{"corpus", "list", "--json", "--db=" + db, "--log-level", "warn"}
		}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			db := filepath.Join(dir, strings.ReplaceAll(tt.name, " ", "_")+".db")
			out, _, err := runCLI(t, tt.args(db)...)
			if err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(out, "llm/rmsnorm") {
				t.Errorf("corpus list output lacks llm/rmsnorm:\n%s", out)
			}
			if _, err := os.Stat(db); err != nil {
				t.Errorf("--db %s not used: %v", db, err)
			}
		})
	}
	// The case issue 10 reported: eval with --db after the subcommand gets
	// as far as checking its arguments (not "flag provided but not defined").
	_, _, err := runCLI(t, "eval", "--db", filepath.Join(dir, "e.db"), "--ref", "no/such_problem", "--candidate", "x.py")
	if err == nil || strings.Contains(err.Error(), "flag") || !strings.Contains(err.Error(), "no/such_problem") {
		t.Errorf("eval --db after the subcommand: %v", err)
	}
}

// kb search: words and flags in any order, -k before or after the words,
// --kb (global) after the subcommand adds a user directory.
func TestKBSearchFlagsAnyOrder(t *testing.T) {
	dir := t.TempDir()
	db := filepath.Join(dir, "kb.db")
	user := filepath.Join(dir, "mykb", "guidance")
	if err := os.MkdirAll(user, 0o755); err != nil {
		t.Fatal(err)
	}
	doc := "---\ntitle: Zebra striping fixture\nsummary: a user document\nvendor: generic\narch: generic\n---\nZebra striping of quokka tiles.\n"
	if err := os.WriteFile(filepath.Join(user, "zebra.md"), []byte(doc), 0o644); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		args []string
		want []string
	}{
		{"flags after the words", []string{"kb", "search", "bank", "conflicts", "--device", "mi300x", "-k", "3", "--db", db},
			[]string{"device scope: amd/cdna3", "1.", "guidance/shared-memory-bank-conflicts.md"}},
		{"flags before the words", []string{"--db", db, "kb", "search", "-k", "2", "--device", "h100", "coalescing"},
			[]string{"device scope: nvidia/hopper", "2."}},
		{"global --kb after the words", []string{"kb", "search", "zebra", "quokka", "--kb", filepath.Join(dir, "mykb"), "--db", db},
			[]string{"mykb/guidance/zebra.md"}},
		{"operator lists constraints", []string{"kb", "search", "--operator", "gemm", "tile", "sizes", "--db", db},
			[]string{"constraints that apply:", "constraints/"}},
		{"list", []string{"kb", "list", "--db", db}, []string{"PATH", "guidance/coalescing.md", "documents"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out, _, err := runCLI(t, tt.args...)
			if err != nil {
				t.Fatal(err)
			}
			for _, w := range tt.want {
				if !strings.Contains(out, w) {
					t.Errorf("output lacks %q:\n%s", w, out)
				}
			}
		})
	}
	out, _, err := runCLI(t, "kb", "search", "coalescing", "-k", "4", "--json", "--db", db)
	if err != nil {
		t.Fatal(err)
	}
	var r struct{ Results []json.RawMessage }
	if err := json.Unmarshal([]byte(out), &r); err != nil || len(r.Results) != 4 {
		t.Fatalf("-k 4 --json: %v, %d results", err, len(r.Results))
	}
}

// A bad value or a bad word fails before any work, with a message that names
// the flag (or the command) and says what it wants.
func TestBadFlagValuesFailClearly(t *testing.T) {
	dir := t.TempDir()
	db := filepath.Join(dir, "x.db")
	cand := filepath.Join(dir, "cand.py")
	if err := os.WriteFile(cand, []byte("class ModelNew: pass\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		args []string
		want []string
	}{
		{[]string{"kb", "search", "-k", "-3", "tiles"}, []string{"-k -3", "between 1 and 50"}},
		{[]string{"kb", "search", "tiles", "-k", "0"}, []string{"-k 0", "between 1 and 50"}},
		{[]string{"kb", "search", "tiles", "-k", "51"}, []string{"-k 51", "between 1 and 50"}},
		{[]string{"kb", "search", "-k", "many", "tiles"}, []string{`-k "many"`, "whole number", "kb search --help"}},
		{[]string{"eval", "--timeout", "soon"}, []string{`--timeout "soon"`, "want a number", "eval --help"}},
		{[]string{"eval", "--trials", "1.5"}, []string{`--trials "1.5"`, "whole number"}},
		{[]string{"eval", "--skip-timing=maybe"}, []string{`--skip-timing "maybe"`, "true or false"}},
		{[]string{"eval", "--ref", "llm/rmsnorm", "--candidate", cand, "--target", "gpu"}, []string{`target "gpu"`, "nvidia, amd, cpu or auto"}},
		{[]string{"eval", "--bogus"}, []string{"unknown flag: --bogus", "eval --help"}},
		{[]string{"eval", "--ref", "llm/rmsnorm", "--candidate", cand, "--target", "cpu", "--kernel-policy", "lax"}, []string{`"lax"`, "default, kernelbench or strict"}},
		{[]string{"evolve", "--kernel-policy", "lax"}, []string{`"lax"`, "default, kernelbench or strict"}},
		{[]string{"kernelbench", "run", "--kernel-policy", "lax"}, []string{`"lax"`, "default, kernelbench or strict"}},
		{[]string{"eval", "stray"}, []string{`unknown command "stray"`}},
		{[]string{"doctor", "--http", "127.0.0.1:0"}, []string{"unknown flag: --http"}},
		{[]string{"--log-level", "loud", "doctor"}, []string{`--log-level "loud"`, "debug, info, warn, error"}},
		{[]string{"doctor", "--log-level", "loud"}, []string{`--log-level "loud"`}},
		{[]string{"nosuch"}, []string{`unknown command "nosuch"`}},
		{[]string{"help", "nosuch"}, []string{`help: no command "nosuch"`}},
		{[]string{"help", "kb", "delete"}, []string{`help: no command "kb delete"`}},
		{[]string{"completion"}, []string{"name a subcommand: bash, fish, powershell, zsh"}},
		{[]string{"eval", "--ref"}, []string{"flag needs an argument: --ref"}},
		{[]string{"corpus"}, []string{"name a subcommand", "import-kernelbench, list"}},
		{[]string{"kb", "delete"}, []string{`unknown subcommand "delete"`, "list, search"}},
		{[]string{"corpus", "import-kernelbench"}, []string{"want one DIR"}},
		{[]string{"kb", "search", "--db", db}, []string{"empty query"}},
	}
	for _, tt := range tests {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			_, _, err := runCLI(t, tt.args...)
			if err == nil {
				t.Fatal("no error")
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q lacks %q", err, w)
				}
			}
		})
	}
}

// Commands register themselves; every registered constructor lands in the
// tree exactly once, and no two share a name.
func TestCommandsRegistered(t *testing.T) {
	root := newRootCmd(&bytes.Buffer{}, &bytes.Buffer{})
	names := map[string]int{}
	for _, c := range root.Commands() {
		names[c.Name()]++
	}
	for n, k := range names {
		if k != 1 {
			t.Errorf("command %q registered %d times", n, k)
		}
	}
	if len(commands) < 8 {
		t.Errorf("only %d commands registered", len(commands))
	}
}

// The real binary, as a shell runs it: a global flag after the subcommand.
func TestBinaryGlobalFlagAfterSubcommand(t *testing.T) {
	db := filepath.Join(t.TempDir(), "after.db")
	out, err := exec.Command(binary, "corpus", "list", "--json", "--db", db).Output()
	if err != nil {
		t.Fatalf("corpus list --db after: %v", err)
	}
	var ps []struct{ Name string }
	if err := json.Unmarshal(out, &ps); err != nil || len(ps) == 0 {
		t.Fatalf("corpus list --json: %v %s", err, out)
	}
	if _, err := os.Stat(db); err != nil {
		t.Fatalf("--db after the subcommand not used: %v", err)
	}
	// A bad flag exits 1 with one line on stderr, nothing on stdout.
	cmd := exec.Command(binary, "kb", "search", "-k", "-3", "tiles")
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err = cmd.Run()
	if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 1 || stdout.Len() != 0 ||
		!strings.HasPrefix(stderr.String(), "kevolve-mcp: kb search: -k -3: want a number of results between 1 and 50") {
		t.Fatalf("kb search -k -3: %v, stdout %q, stderr %q", err, stdout.String(), stderr.String())
	}
}

func TestGoStyleFlags(t *testing.T) {
	root := newRootCmd(&bytes.Buffer{}, &bytes.Buffer{})
	tests := []struct{ in, want []string }{
		{[]string{"-db", "x", "eval", "-json", "-ref=a.py"}, []string{"--db", "x", "eval", "--json", "--ref=a.py"}},
		{[]string{"kb", "search", "-k", "-3", "tiles"}, []string{"kb", "search", "-k", "-3", "tiles"}},
		{[]string{"compile", "--flag", "-DTILE=64", "-lang", "c", "k.c"}, []string{"compile", "--flag", "-DTILE=64", "--lang", "c", "k.c"}},
		{[]string{"kb", "search", "--", "-json"}, []string{"kb", "search", "--", "-json"}},
		{[]string{"-h"}, []string{"-h"}},
	}
	for _, tt := range tests {
		if got := goStyleFlags(root, tt.in); strings.Join(got, " ") != strings.Join(tt.want, " ") {
			t.Errorf("goStyleFlags(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

// A command with a PersistentPreRunE of its own (evolve, worker may bring
// one) still gets the root's setup: the logger exists when it runs.
func TestRootSetupRunsBeforeCommandHooks(t *testing.T) {
	var sawLogger bool
	ctor := func(c *cli) *cobra.Command {
		return &cobra.Command{
			Use:               "hooked",
			Short:             "test command",
			PersistentPreRunE: func(*cobra.Command, []string) error { sawLogger = c.logger != nil; return nil },
			RunE:              func(*cobra.Command, []string) error { return nil },
		}
	}
	saved := commands
	commands = append(append([]commandCtor(nil), commands...), ctor)
	defer func() { commands = saved }()
	if _, _, err := runCLI(t, "hooked", "--log-level", "warn"); err != nil || !sawLogger {
		t.Fatalf("err %v, logger set before the command's hook: %v", err, sawLogger)
	}
}

// --eval-host-mem reaches the evaluation service: a candidate that holds
// 1.5 GiB is killed as out_of_memory under a 1 GiB limit, the program named.
func TestEvalHostMemFlag(t *testing.T) {
	py := toolchaintest.Python(t)
	dir := t.TempDir()
	ref := filepath.Join(dir, "ref.py")
	cand := filepath.Join(dir, "cand.py")
	os.WriteFile(ref, []byte("import torch\nimport torch.nn as nn\n\n\nclass Model(nn.Module):\n    def forward(self, x):\n        return x * 2\n\n\n"+
		"def get_inputs():\n    return [torch.randn(64)]\n\n\ndef get_init_inputs():\n    return []\n"), 0o644)
	os.WriteFile(cand, []byte("import time\nimport torch.nn as nn\n\n\nclass ModelNew(nn.Module):\n    def forward(self, x):\n"+
		"        hog = [bytearray(1 << 28) for _ in range(6)]\n        time.sleep(60)\n        return x * 2\n"), 0o644)
	out, _, err := runCLI(t, "eval", "--python", py, "--db", filepath.Join(dir, "k.db"), "--ref", ref, "--candidate", cand,
		"--target", "cpu", "--skip-timing", "--timeout", "50", "--json", "--eval-host-mem", "1")
	if err != nil && !strings.Contains(out, "verdict") {
		t.Fatalf("eval: %v\n%s", err, out)
	}
	var res struct {
		Verdict string `json:"verdict"`
		Checks  []struct {
			Name   string `json:"name"`
			Detail string `json:"detail"`
		} `json:"checks"`
	}
	if err := json.Unmarshal([]byte(out), &res); err != nil {
		t.Fatalf("decode %q: %v", out, err)
	}
	ok := false
	for _, c := range res.Checks {
		ok = ok || (c.Name == "out_of_memory" && strings.Contains(c.Detail, "the candidate ran out of memory") && strings.Contains(c.Detail, "limit of 1.00 GiB"))
	}
	if res.Verdict != "runtime_error" || !ok {
		t.Fatalf("verdict %s, checks %+v: want runtime_error with the candidate's out_of_memory at 1 GiB", res.Verdict, res.Checks)
	}
}
