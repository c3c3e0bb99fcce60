package tools

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mark3labs/mcp-go/server"

	"github.com/kevolve/kevolve-mcp/harness/compile"
	"github.com/kevolve/kevolve-mcp/tools/toolstest"
)

// compile_kernel reads a path only under its workspace roots and refuses
// flags that pick output files or read other files; the refusal names the
// roots and never carries the file's content. The compiler is a recorder:
// what is refused must never reach it.
func TestCompileKernelWorkspaceAndFlags(t *testing.T) {
	ws, outside := t.TempDir(), t.TempDir()
	inside := filepath.Join(ws, "k.c")
	secret := filepath.Join(outside, "secret.c")
	mustWrite := func(p, s string) {
		if err := os.WriteFile(p, []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	mustWrite(inside, "int f(void) { return 1; }\n")
	mustWrite(secret, "TOP-SECRET-LINE\n")
	escape := filepath.Join(ws, "escape.c")
	if err := os.Symlink(secret, escape); err != nil {
		t.Fatal(err)
	}
	var got []compile.Request
	fake := func(_ context.Context, r compile.Request) (*compile.Result, error) {
		got = append(got, r)
		return &compile.Result{OK: true}, nil
	}
	srv := server.NewMCPServer("test", "0", server.WithToolCapabilities(false), server.WithInputSchemaValidation())
	srv.AddTools(CompileKernel(fake, ws))
	c := toolstest.Connect(t, srv)
	src := "int f(void) { return 1; }\n"
	cases := []struct {
		name string
		args map[string]any
		want string // "" = compiled
	}{
		{"inside the workspace", map[string]any{"path": inside}, ""},
		{"harmless flags", map[string]any{"source": src, "flags": []any{"-O3", "-DX=1", "-march=native", "-Xptxas=-v", "-mavx2", "-ffast-math"}}, ""},
		{"/etc/shadow", map[string]any{"path": "/etc/shadow"}, "outside the workspace"},
		{"a file outside", map[string]any{"path": secret}, "outside the workspace"},
		{"a symlink out of it", map[string]any{"path": escape}, "outside the workspace"},
		{"/dev/zero", map[string]any{"path": "/dev/zero"}, "outside the workspace"},
		{"-o", map[string]any{"source": src, "flags": []any{"-o", "/tmp/x"}}, "refused"},
		{"-o glued", map[string]any{"source": src, "flags": []any{"-o/tmp/x"}}, "refused"},
		{"--output-file=", map[string]any{"source": src, "flags": []any{"--output-file=/tmp/x"}}, "refused"},
		{"-odir", map[string]any{"source": src, "flags": []any{"-odir", "/tmp"}}, "refused"},
		{"--keep-dir", map[string]any{"source": src, "flags": []any{"--keep-dir=/tmp"}}, "refused"},
		{"-MF", map[string]any{"source": src, "flags": []any{"-MF/tmp/deps"}}, "refused"},
		{"-save-temps", map[string]any{"source": src, "flags": []any{"-save-temps=obj"}}, "refused"},
		{"-include", map[string]any{"source": src, "flags": []any{"-include", "/etc/shadow"}}, "refused"},
		{"response file", map[string]any{"source": src, "flags": []any{"@/etc/shadow"}}, "refused"},
		{"-Wl,-o", map[string]any{"source": src, "flags": []any{"-Wl,-o,/tmp/x"}}, "refused"},
		{"-Xcompiler=-o", map[string]any{"source": src, "flags": []any{"-Xcompiler=-fPIC,-o/tmp/x"}}, "refused"},
		{"-B", map[string]any{"source": src, "flags": []any{"-B/tmp/evil"}}, "refused"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got = nil
			args := map[string]any{"language": "c"}
			for k, v := range tc.args {
				args[k] = v
			}
			res := toolstest.Call(t, c, "compile_kernel", args)
			text := toolstest.Text(res)
			if tc.want == "" {
				if res.IsError || len(got) != 1 {
					t.Fatalf("not compiled: %s", text)
				}
				return
			}
			if !res.IsError || !strings.Contains(text, tc.want) || len(got) != 0 {
				t.Fatalf("want a tool error with %q and no compile, got error=%v %q (%d compiles)", tc.want, res.IsError, text, len(got))
			}
			if strings.Contains(text, "TOP-SECRET") || (tc.want == "outside the workspace" && !strings.Contains(text, ws)) {
				t.Fatalf("the refusal must name the roots and not the content: %q", text)
			}
		})
	}
	// The CLI's user names the file on the command line: read wherever it is.
	if req, msg := CompileRequest(CompileKernelInput{Path: secret, Language: "c"}); msg != "" || req.Source != "TOP-SECRET-LINE\n" {
		t.Fatalf("CLI: %q %q", req.Source, msg)
	}
	if _, msg := CompileRequest(CompileKernelInput{Source: src, Language: "c", Flags: []string{"-o", "x"}}); msg == "" {
		t.Fatal("CLI: -o accepted")
	}
}
