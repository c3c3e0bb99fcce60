package corpus

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"
)

// A start kernel's TUNABLES promise that every listed value keeps it
// correct: the search's tuner relies on that. These tests move one knob at
// a time through every value (the others at their defaults) and check the
// result against the reference, like the start itself.

var tunablesLine = regexp.MustCompile(`(?m)^TUNABLES = (\{.*\})$`)

// variants writes every one-knob variant of each problem's start of this
// kind under root and returns them as job entries.
func variants(t *testing.T, kind, root string) []jobProblem {
	t.Helper()
	var out []jobProblem
	for _, p := range startsOf(kind) {
		src, err := p.StartSource(kind)
		if err != nil {
			t.Fatal(err)
		}
		m := tunablesLine.FindStringSubmatch(src)
		if m == nil {
			continue
		}
		var tun map[string][]any
		if err := json.Unmarshal([]byte(m[1]), &tun); err != nil {
			t.Fatalf("%s %s: TUNABLES is not one line of JSON-compatible literals: %v", p.Name, kind, err)
		}
		names := make([]string, 0, len(tun))
		for n := range tun {
			names = append(names, n)
		}
		sort.Strings(names)
		for _, name := range names {
			assign := regexp.MustCompile(`(?m)^` + name + ` = ([^#\n]*?)(\s+#.*)?$`)
			cur := assign.FindStringSubmatch(src)
			if cur == nil {
				t.Fatalf("%s %s: TUNABLES names %s but there is no module-level `%s = value`", p.Name, kind, name, name)
			}
			for _, v := range tun[name] {
				lit, _ := json.Marshal(v)
				if string(lit) == strings.TrimSpace(cur[1]) {
					continue // the default: the start itself, checked elsewhere
				}
				code := assign.ReplaceAllString(src, name+" = "+string(lit)+"$2")
				file := fmt.Sprintf("start_%s_%s_%s.py", kind, name, sanitize(string(lit)))
				if err := os.WriteFile(filepath.Join(root, filepath.FromSlash(p.Dir), file), []byte(code), 0o644); err != nil {
					t.Fatal(err)
				}
				out = append(out, jobProblem{Name: fmt.Sprintf("%s[%s=%s]", p.Name, name, lit), Dir: p.Dir, Shapes: p.Shapes, Dtype: p.Dtype,
					Dtypes: p.Dtypes, Tolerance: p.Tolerance, Starts: map[string]string{kind: file}})
			}
		}
	}
	return out
}

func sanitize(s string) string {
	return strings.Map(func(r rune) rune {
		if r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' {
			return r
		}
		return '_'
	}, s)
}

func checkVariants(t *testing.T, kind string, env ...string) {
	findPython(t)
	root, err := Materialize(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	jps := variants(t, kind, root)
	if len(jps) == 0 {
		t.Fatalf("no %s start declares TUNABLES", kind)
	}
	res := runJob(t, "start", kind, "cpu", root, jps, env...)
	for _, name := range sortedNames(res) {
		if r := res[name]; !r.OK {
			t.Errorf("%s: %s\n%s", name, r.Error, r.Trace)
		}
	}
	t.Logf("%d one-knob variants of the %s starts checked", len(jps), kind)
}

func TestCStartTunablesCorrect(t *testing.T) {
	checkVariants(t, "c", "PYTHONPATH="+kevolvePyPath(t), "KEVOLVE_CACHE_DIR="+t.TempDir())
}

func TestTritonStartTunablesCorrect(t *testing.T) {
	if os.Getenv("KEVOLVE_GPU") == "1" {
		t.Skip("KEVOLVE_GPU=1: the GPU run checks the Triton starts compiled")
	}
	checkVariants(t, "triton", "TRITON_INTERPRET=1")
}

// Every CUDA start's TUNABLES variant compiles (running them is for the GPU box).
func TestCUDAStartTunablesCompile(t *testing.T) {
	py := kevolvePyPath(t)
	findPython(t)
	root, err := Materialize(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	jps := variants(t, "cuda", root)
	res := runJob(t, "compile", "cuda", "cpu", root, jps, "PYTHONPATH="+py, "KEVOLVE_CACHE_DIR="+t.TempDir())
	for _, name := range sortedNames(res) {
		if r := res[name]; !r.OK {
			if os.Getenv("KEVOLVE_TEST_STRICT") != "1" && strings.Contains(r.Error, "no CUDA compiler found") {
				t.Skipf("no CUDA compiler: %s", r.Error)
			}
			t.Errorf("%s: %s\n%s", name, r.Error, r.Trace)
		}
	}
}

// Every one-knob variant of each CUDA start runs correct on the GPU
// (KEVOLVE_GPU=1; shape set from KEVOLVE_TEST_SHAPES, default small). Here
// without a GPU they are only compiled (TestCUDAStartTunablesCompile).
func TestGPUCUDAStartTunablesCorrect(t *testing.T) {
	if os.Getenv("KEVOLVE_GPU") != "1" {
		t.Skip("needs a GPU: set KEVOLVE_GPU=1")
	}
	findPython(t)
	set := os.Getenv("KEVOLVE_TEST_SHAPES")
	if set == "" {
		set = "small"
	}
	root, err := Materialize(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	jps := variants(t, "cuda", root)
	if len(jps) == 0 {
		t.Fatal("no CUDA start declares TUNABLES")
	}
	res := runJob(t, "start", "cuda", "cuda", root, jps, "PYTHONPATH="+kevolvePyPath(t), "KEVOLVE_SHAPES="+set)
	for _, name := range sortedNames(res) {
		if r := res[name]; !r.OK {
			t.Errorf("%s: %s\n%s", name, r.Error, r.Trace)
		}
	}
	t.Logf("%d one-knob variants of the CUDA starts checked on the GPU (%s shapes)", len(jps), set)
}
