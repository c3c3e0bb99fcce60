package corpus

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
	"testing"

	"github.com/kevolve/kevolve-mcp/harness/toolchain/toolchaintest"
)

func findPython(t *testing.T) string { return toolchaintest.Python(t) }

type checkResult struct {
	OK        bool    `json:"ok"`
	Error     string  `json:"error"`
	Trace     string  `json:"trace"`
	Seconds   float64 `json:"seconds"`
	MaxAbsErr float64 `json:"max_abs_err"`
	RefMS     float64 `json:"ref_ms"`
	CandMS    float64 `json:"cand_ms"`
	Outputs   []struct {
		Shape []int
		Dtype string
	} `json:"outputs"`
}

type jobProblem struct {
	Name      string                        `json:"name"`
	Dir       string                        `json:"dir"`
	Shapes    map[string]map[string]float64 `json:"shapes"`
	Dtype     string                        `json:"dtype"`
	Dtypes    map[string]string             `json:"dtypes"`
	Tolerance *Tolerance                    `json:"tolerance"`
	Starts    map[string]string             `json:"starts"`
}

// runChecks runs testdata/check_problems.py once over all given problems (one
// Python process: torch is imported once) on the small shape set.
func runChecks(t *testing.T, mode, kind string, ps []Problem, env ...string) map[string]checkResult {
	t.Helper()
	return runChecksOpts(t, mode, kind, "cpu", ps, env...)
}

// runChecksOpts is runChecks on a given torch device; env entries given later
// win, so a caller may override KEVOLVE_SHAPES.
func runChecksOpts(t *testing.T, mode, kind, device string, ps []Problem, env ...string) map[string]checkResult {
	t.Helper()
	findPython(t) // skips (or fails in strict mode) before materializing anything
	root, err := Materialize(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	var jps []jobProblem
	for _, p := range ps {
		jps = append(jps, jobProblem{p.Name, p.Dir, p.Shapes, p.Dtype, p.Dtypes, p.Tolerance, p.Starts})
	}
	return runJob(t, mode, kind, device, root, jps, env...)
}

// runJob runs check_problems.py over jps, whose files lie under root.
func runJob(t *testing.T, mode, kind, device, root string, jps []jobProblem, env ...string) map[string]checkResult {
	t.Helper()
	py := findPython(t)
	job := map[string]any{"mode": mode, "kind": kind, "root": root, "seeds": []int{0, 1}, "device": device}
	job["problems"] = jps
	in, _ := json.Marshal(job)
	ctx, cancel := context.WithCancel(toolchaintest.Context(t))
	defer cancel()
	cmd := exec.CommandContext(ctx, py, filepath.Join("testdata", "check_problems.py"))
	cmd.Env = append(os.Environ(), "KEVOLVE_SHAPES=small", "OMP_NUM_THREADS="+itoa(runtime.NumCPU()))
	cmd.Env = append(cmd.Env, env...)
	cmd.Stdin = bytes.NewReader(in)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("check_problems.py %s: %v\nstderr:\n%s", mode, err, tail(stderr.String(), 4000))
	}
	var res map[string]checkResult
	if err := json.Unmarshal(stdout.Bytes(), &res); err != nil {
		t.Fatalf("check_problems.py output: %v\nstdout:\n%s\nstderr:\n%s", err, tail(stdout.String(), 2000), tail(stderr.String(), 2000))
	}
	if len(res) != len(jps) {
		t.Fatalf("check_problems.py returned %d results for %d problems", len(res), len(jps))
	}
	return res
}

func itoa(n int) string { b, _ := json.Marshal(n); return string(b) }

func tail(s string, n int) string {
	if len(s) > n {
		return "..." + s[len(s)-n:]
	}
	return s
}

func sortedNames(res map[string]checkResult) []string {
	var names []string
	for n := range res {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// TestReferencesRunSmall runs every reference on the small set on CPU: it
// must build, take non-zero CPU inputs of the declared dtype, produce finite
// outputs, agree with meta.yaml on its shape sets, and do so quickly.
func TestReferencesRunSmall(t *testing.T) {
	res := runChecks(t, "ref", "", List())
	for _, name := range sortedNames(res) {
		r := res[name]
		if !r.OK {
			t.Errorf("%s: %s\n%s", name, r.Error, r.Trace)
			continue
		}
		if r.Seconds > 2 {
			t.Errorf("%s: small set took %.2fs on CPU, want well under a second", name, r.Seconds)
		}
		t.Logf("%s: %.3fs outputs %v", name, r.Seconds, r.Outputs)
	}
}

// kevolvePyPath is where the other helper's loader package lives.
func kevolvePyPath(t *testing.T) string {
	t.Helper()
	dir, err := filepath.Abs(filepath.Join("..", "harness", "worker", "py"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, "kevolve", "__init__.py")); err != nil {
		toolchaintest.Require(t, fmt.Errorf("kevolve loader package missing at %s: %v", dir, err))
	}
	return dir
}

func startsOf(kind string) []Problem {
	var out []Problem
	for _, p := range List() {
		if _, ok := p.Starts[kind]; ok {
			out = append(out, p)
		}
	}
	return out
}

// TestCStartsCorrect checks every start_c.py against its reference on the
// small set on CPU, two seeds, with the problem's tolerance.
func TestCStartsCorrect(t *testing.T) {
	py := kevolvePyPath(t)
	ps := startsOf("c")
	res := runChecks(t, "start", "c", ps, "PYTHONPATH="+py, "KEVOLVE_CACHE_DIR="+t.TempDir())
	for _, name := range sortedNames(res) {
		if r := res[name]; !r.OK {
			t.Errorf("%s: %s\n%s", name, r.Error, r.Trace)
		} else {
			t.Logf("%s: max abs err %.3g", name, r.MaxAbsErr)
		}
	}
}

// TestTritonStartsCorrect checks every start_triton.py under Triton's CPU
// interpreter on the small set. On the GPU machine TestGPUStartsCorrect runs
// them compiled instead: its Python is not ours to pin, and its numpy breaks
// the interpreter (below).
func TestTritonStartsCorrect(t *testing.T) {
	if os.Getenv("KEVOLVE_GPU") == "1" {
		t.Skip("KEVOLVE_GPU=1: TestGPUStartsCorrect/triton runs the Triton starts on the GPU")
	}
	ps := startsOf("triton")
	if len(ps) == 0 {
		t.Fatal("no Triton start candidates")
	}
	res := runChecks(t, "start", "triton", ps, "TRITON_INTERPRET=1")
	for _, name := range sortedNames(res) {
		if r := res[name]; !r.OK {
			if strings.Contains(r.Error, "only 0-dimensional arrays can be converted") {
				// Triton 3.6's interpreter breaks on loops with runtime bounds under numpy >= 2.4.
				t.Errorf("%s: %s (numpy >= 2.4 breaks Triton 3.6's interpreter, triton-lang/triton#9171: use numpy<2.4 in the test venv)", name, r.Error)
				continue
			}
			t.Errorf("%s: %s\n%s", name, r.Error, r.Trace)
		} else {
			t.Logf("%s: max abs err %.3g", name, r.MaxAbsErr)
		}
	}
}

// TestCUDAStartsCompile compiles every start_cuda.py's kernels with NVRTC
// (or nvcc) for sm_90 without a GPU: syntax, types and the extern "C"
// signatures the loader parses are checked here; running them is for the GPU box.
func TestCUDAStartsCompile(t *testing.T) {
	py := kevolvePyPath(t)
	ps := startsOf("cuda")
	res := runChecks(t, "compile", "cuda", ps, "PYTHONPATH="+py, "KEVOLVE_CACHE_DIR="+t.TempDir())
	for _, name := range sortedNames(res) {
		if r := res[name]; !r.OK {
			if bytes.Contains([]byte(r.Error), []byte("no CUDA compiler found")) {
				toolchaintest.Require(t, fmt.Errorf("no CUDA compiler: %s", r.Error))
			}
			t.Errorf("%s: %s\n%s", name, r.Error, r.Trace)
		} else {
			t.Logf("%s: compiled in %.2fs", name, r.Seconds)
		}
	}
}

// TestGPUStartsCorrect runs every start_cuda.py and start_triton.py against
// its reference on the GPU (KEVOLVE_GPU=1; shape set from KEVOLVE_TEST_SHAPES,
// default small; KEVOLVE_TEST_KINDS, default "cuda,triton").
func TestGPUStartsCorrect(t *testing.T) {
	if os.Getenv("KEVOLVE_GPU") != "1" {
		t.Skip("needs a GPU: set KEVOLVE_GPU=1")
	}
	py := kevolvePyPath(t)
	set := os.Getenv("KEVOLVE_TEST_SHAPES")
	if set == "" {
		set = "small"
	}
	kinds := os.Getenv("KEVOLVE_TEST_KINDS")
	if kinds == "" {
		kinds = "cuda,triton"
	}
	for _, kind := range strings.Split(kinds, ",") {
		t.Run(kind, func(t *testing.T) {
			// KEVOLVE_TEST_PROBLEMS (comma-separated name prefixes) narrows the run,
			// e.g. "llm/,rec/embedding" for a partial pass on the large set.
			ps := startsOf(kind)
			if f := os.Getenv("KEVOLVE_TEST_PROBLEMS"); f != "" {
				var keep []Problem
				for _, p := range ps {
					for _, pre := range strings.Split(f, ",") {
						if pre != "" && strings.HasPrefix(p.Name, pre) {
							keep = append(keep, p)
							break
						}
					}
				}
				ps = keep
			}
			if len(ps) == 0 {
				t.Skipf("no %s starts selected", kind)
			}
			res := runChecksOpts(t, "start", kind, "cuda", ps, "PYTHONPATH="+py, "KEVOLVE_SHAPES="+set)
			for _, name := range sortedNames(res) {
				if r := res[name]; !r.OK {
					t.Errorf("%s: %s\n%s", name, r.Error, r.Trace)
				} else {
					t.Logf("%s: max abs err %.3g; one call: reference %.2f ms, start %.2f ms", name, r.MaxAbsErr, r.RefMS, r.CandMS)
				}
			}
		})
	}
}
