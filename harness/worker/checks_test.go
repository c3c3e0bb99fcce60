package worker

import (
	"context"
	"encoding/json"
	"log/slog"
	"os"
	"os/exec"
	"reflect"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/kevolve/kevolve-mcp/harness/toolchain/toolchaintest"
)

// The embedded registry parses, and holds the checks the evaluation and
// the Go side name.
func TestEmbeddedChecks(t *testing.T) {
	cs, err := EmbeddedChecks()
	if err != nil {
		t.Fatal(err)
	}
	byName := map[string]CheckInfo{}
	for _, c := range cs {
		byName[c.Name] = c
	}
	for _, name := range []string{"allclose", "memoization", "threads", "stream", "timers", "harness_patched", "input_mutation",
		"output_aliasing", "output_type", "reference_ops", "audit", "faster_than_sol", "degenerate_reference", "device_state",
		"stream_work", "reference_tampered", "out_of_memory", "result_forged", "deadline", "judge", "judge_missing", "timer_tampered"} {
		if _, ok := byName[name]; !ok {
			t.Errorf("check %s is not registered", name)
		}
	}
	if c := byName["threads"]; c.Stage != "integrity" || c.Verdict != "integrity_violation" || c.Order != 10 {
		t.Errorf("threads: %+v", c)
	}
}

const noted = `"""A check only a test has."""
NAME = "always_noted"
STAGE = "integrity"
VERDICT = "integrity_violation"
DESCRIPTION = "Always passes."


def run(st):
    return True, "noted"
`

// Every way a module can be malformed is refused, naming what is wrong.
func TestParseCheckMalformed(t *testing.T) {
	cases := []struct{ name, file, src, want string }{
		{"ok", "always_noted", noted, ""},
		{"ok with order", "always_noted", noted + "ORDER = 7\n", ""},
		{"name is not the file's", "other", noted, `NAME "always_noted" must be the module's file name`},
		{"missing description", "always_noted", strings.Replace(noted, "DESCRIPTION", "# DESCRIPTION", 1), "no DESCRIPTION declared"},
		{"declared twice", "always_noted", noted + "STAGE = \"timing\"\n", "STAGE declared twice"},
		{"single quotes", "always_noted", strings.Replace(noted, `"integrity"`, `'integrity'`, 1), "STAGE must read"},
		{"trailing comment", "always_noted", strings.Replace(noted, `"Always passes."`, `"Always passes."  # why`, 1), "DESCRIPTION must read"},
		{"escape", "always_noted", strings.Replace(noted, `"Always passes."`, `"Always \"passes\"."`, 1), "DESCRIPTION must read"},
		{"multi-line", "always_noted", strings.Replace(noted, `"Always passes."`, `"""Always`+"\npasses.\"\"\"", 1), "DESCRIPTION must read"},
		{"annotated", "always_noted", strings.Replace(noted, `VERDICT =`, `VERDICT: str =`, 1), "no VERDICT declared"},
		{"unknown verdict", "always_noted", strings.Replace(noted, `"integrity_violation"`, `"wrong"`, 1), `"wrong" is not a verdict`},
		{"half a verdict", "always_noted", strings.Replace(noted, `"integrity_violation"`, `"incorrect or "`, 1), `"" is not a verdict`},
		{"bad stage", "always_noted", strings.Replace(noted, `"integrity"`, `"Integrity stage"`, 1), "is not a stage name"},
		{"empty description", "always_noted", strings.Replace(noted, `"Always passes."`, `" "`, 1), "empty DESCRIPTION"},
		{"order not a number", "always_noted", noted + "ORDER = \"7\"\n", "ORDER must read"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := ParseCheck(c.file, []byte(c.src))
			switch {
			case c.want == "" && err != nil:
				t.Fatalf("refused: %v", err)
			case c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)):
				t.Fatalf("got %v, want an error with %q", err, c.want)
			}
		})
	}
}

const declared = `"""Checks a test declares.
More of the docstring."""
DECLARED = (
    # Decided by the test.
    ("always_declared", "integrity", "integrity_violation",
     "Always passes."),

    ("also_declared", "any", "incorrect or runtime_error",
     "Never fails either."),
)
# after the table
`

// The table of checks without a module: every way it can be malformed is
// refused, naming what is wrong.
func TestParseDeclaredMalformed(t *testing.T) {
	ok, err := ParseDeclared([]byte(declared))
	if err != nil {
		t.Fatal(err)
	}
	want := []CheckInfo{{"always_declared", "integrity", "integrity_violation", "Always passes.", defaultOrder},
		{"also_declared", "any", "incorrect or runtime_error", "Never fails either.", defaultOrder}}
	if !reflect.DeepEqual(ok, want) {
		t.Fatalf("got %+v, want %+v", ok, want)
	}
	cases := []struct{ name, old, new, want string }{
		{"no docstring", `"""Checks a test declares.`, `# Checks a test declares.`, "must open the docstring"},
		{"code before the table", "DECLARED = (", "import os\nDECLARED = (", "want DECLARED = ("},
		{"code after the table", "# after the table", "DECLARED += ()", "only comments may follow"},
		{"never closed", "\n)\n", "\n", "never closes"},
		{"one-line entry", "\"integrity_violation\",\n     \"Always passes.\"),", "\"integrity_violation\", \"Always passes.\"),", "an entry opens with"},
		{"single quotes", `"Always passes."`, `'Always passes.'`, "second line must read"},
		{"escape", `"Always passes."`, `"Always \"passes\"."`, "second line must read"},
		{"trailing comment", `"Always passes."),`, `"Always passes."),  # why`, "second line must read"},
		{"no description", "\n     \"Never fails either.\"),", "", "second line must read"},
		{"bad name", `("always_declared"`, `("Always declared"`, "must be the module's file name"},
		{"unknown verdict", `"integrity_violation",`, `"wrong",`, `"wrong" is not a verdict`},
		{"bad stage", `("always_declared", "integrity"`, `("always_declared", "Integrity stage"`, "is not a stage name"},
		{"empty description", `"Always passes."`, `" "`, "empty DESCRIPTION"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			src := strings.Replace(declared, c.old, c.new, 1)
			if src == declared {
				t.Fatalf("%q is not in the table", c.old)
			}
			_, err := ParseDeclared([]byte(src))
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("got %v, want an error with %q", err, c.want)
			}
		})
	}
}

// A check declared both as a module and in the table is refused.
func TestParseChecksDeclaredTwice(t *testing.T) {
	twice := Overlay(Embedded(), fstest.MapFS{"checks/allclose.py": {Data: []byte(strings.ReplaceAll(noted, "always_noted", "allclose"))}})
	if _, err := ParseChecks(twice); err == nil || !strings.Contains(err.Error(), "check allclose declared twice") {
		t.Fatalf("got %v, want allclose refused as declared twice", err)
	}
}

// A worker refuses a tree whose registry does not parse, before it
// unpacks anything.
func TestWorkerRefusesMalformedRegistry(t *testing.T) {
	bad := Overlay(Embedded(), fstest.MapFS{"checks/broken.py": {Data: []byte("NAME = 'broken'\n")}})
	_, err := New(Config{Python: testPython(t), CacheDir: t.TempDir(), Source: bad})
	if err == nil || !strings.Contains(err.Error(), "checks/broken.py") {
		t.Fatalf("got %v, want the broken module named", err)
	}
}

// What Go parses is what Python imports, for the embedded tree with a
// test's check laid over it: the worker unpacks and verifies that tree,
// and its Python registry finds the extra module.
func TestChecksMatchPython(t *testing.T) {
	src := Overlay(Embedded(), fstest.MapFS{"checks/always_noted.py": {Data: []byte(noted)}})
	w, err := New(Config{Python: testPython(t), CacheDir: t.TempDir(), Source: src,
		Logger: slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	if w.SourceHash() == SourceHash() {
		t.Errorf("the overlaid tree has the embedded tree's hash %s", SourceHash())
	}
	if err := w.Verify(); err != nil {
		t.Fatal(err)
	}
	if bad := check(w.PyDir(), w.man); len(bad) != 0 {
		t.Fatalf("unpacked tree differs from its source: %v", bad)
	}
	// Verification holds the overlaid file to the source's copy too.
	mustDo(t, os.Chmod(w.PyDir()+"/checks", 0o755))
	mustDo(t, os.Remove(w.PyDir()+"/checks/always_noted.py"))
	if bad := check(w.PyDir(), w.man); !reflect.DeepEqual(bad, []string{"checks/always_noted.py: missing"}) {
		t.Fatalf("after removing the overlaid check: %v", bad)
	}
	mustDo(t, w.Verify())
	if bad := check(w.PyDir(), w.man); len(bad) != 0 {
		t.Fatalf("not repaired: %v", bad)
	}
	ctx, cancel := context.WithCancel(toolchaintest.Context(t))
	defer cancel()
	code := `import json, checks
print(json.dumps([{"Name": c.name, "Stage": c.stage, "Verdict": c.verdict, "Description": c.description, "Order": c.order} for c in checks.ALL]))`
	cmd := exec.CommandContext(ctx, testPython(t), "-c", code)
	cmd.Dir = w.PyDir()
	cmd.Env = append(os.Environ(), "PYTHONPATH="+w.PyDir(), "PYTHONDONTWRITEBYTECODE=1", "CUDA_VISIBLE_DEVICES=")
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("python registry: %v", err)
	}
	var py []CheckInfo
	if err := json.Unmarshal(out, &py); err != nil {
		t.Fatalf("decode %q: %v", out, err)
	}
	if got := w.Checks(); !reflect.DeepEqual(got, py) {
		t.Errorf("Go parsed\n%+v\nPython imported\n%+v", got, py)
	}
	found := false
	for _, c := range py {
		found = found || c.Name == "always_noted"
	}
	if !found {
		t.Error("Python's registry did not find the overlaid module")
	}
}
