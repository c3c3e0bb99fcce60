// Package toolchain finds the compilers, profilers and the Python that holds
// torch, and says for each what version it is or why it is missing.
package toolchain

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"time"
)

// Tool is one toolchain component as found (or not) on this machine.
type Tool struct {
	Name    string `json:"name"`
	Found   bool   `json:"found"`
	Path    string `json:"path,omitempty"`
	Version string `json:"version,omitempty"`
	// Missing says why the tool is not usable, in words a person can act on.
	Missing string `json:"missing,omitempty"`
}

// PythonEnv describes the Python interpreter that will run the worker.
type PythonEnv struct {
	Tool
	Torch       string `json:"torch,omitempty"`
	Triton      string `json:"triton,omitempty"`
	Cupy        string `json:"cupy,omitempty"`
	CUDAUsable  bool   `json:"cuda_usable"`
	ROCmUsable  bool   `json:"rocm_usable"`
	TorchCUDA   string `json:"torch_cuda,omitempty"` // CUDA version torch was built with
	DeviceCount int    `json:"device_count"`
	DeviceName  string `json:"device_name,omitempty"`
	SMCount     int    `json:"sm_count,omitempty"` // multiprocessors of device 0, as CUDA/HIP reports them
}

// EnvPython names the variable that overrides the Python search.
const EnvPython = "KEVOLVE_PYTHON"

// PythonCandidates lists where a torch-holding Python is looked for, in order:
// the override, the GPU box's virtualenv, the CPU virtualenv `make venv`
// creates, then python3 on PATH.
func PythonCandidates() []string {
	var c []string
	if p := os.Getenv(EnvPython); p != "" {
		c = append(c, p)
	}
	c = append(c, "/opt/torch/.venv/bin/python3")
	if home, err := os.UserHomeDir(); err == nil {
		c = append(c, filepath.Join(home, ".cache", "kevolve", "venv", "bin", "python"))
	}
	if p, err := Which("python3"); err == nil {
		c = append(c, p)
	}
	return c
}

// FindPython returns the first candidate interpreter that exists. It does
// not import torch (that costs seconds); ProbePython does.
func FindPython() (string, error) {
	if p := os.Getenv(EnvPython); p != "" {
		if _, err := os.Stat(p); err != nil {
			return "", fmt.Errorf("%s=%s: %w", EnvPython, p, err)
		}
		return p, nil
	}
	for _, p := range PythonCandidates() {
		if st, err := os.Stat(p); err == nil && !st.IsDir() {
			return p, nil
		}
	}
	return "", errors.New("no Python found: set KEVOLVE_PYTHON to an interpreter with torch, or run `make venv`")
}

const probeScript = `
import json, sys
out = {"python": sys.version.split()[0]}
try:
    import torch
    out["torch"] = torch.__version__
    out["torch_cuda"] = torch.version.cuda or ""
    out["hip"] = getattr(torch.version, "hip", None) or ""
    try:
        out["count"] = torch.cuda.device_count()
        if out["count"]:
            props = torch.cuda.get_device_properties(0)
            out["name"] = props.name
            out["sm_count"] = props.multi_processor_count
    except Exception as e:
        out["cuda_error"] = str(e)
except Exception as e:
    out["torch_error"] = repr(e)
for mod in ("triton", "cupy"):
    try:
        m = __import__(mod)
        out[mod] = m.__version__
    except Exception as e:
        out[mod + "_error"] = type(e).__name__
print(json.dumps(out))
`

// ProbePython imports torch, triton and cupy in the interpreter and reports
// their versions and whether a GPU is usable. It takes a few seconds.
func ProbePython(ctx context.Context, python string) PythonEnv {
	env := PythonEnv{Tool: Tool{Name: "python", Path: python}}
	if python == "" {
		p, err := FindPython()
		if err != nil {
			env.Missing = err.Error()
			return env
		}
		env.Path = p
	}
	ctx, cancel := context.WithTimeout(ctx, 90*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, env.Path, "-c", probeScript)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		env.Missing = fmt.Sprintf("%s failed: %v: %s", env.Path, err, LastLine(stderr.String()))
		return env
	}
	var raw map[string]any
	line := LastJSONLine(string(out))
	if line == "" {
		line = string(out)
	}
	if err := json.Unmarshal([]byte(line), &raw); err != nil {
		env.Missing = fmt.Sprintf("could not read the probe's answer: %v", err)
		return env
	}
	str := func(k string) string { s, _ := raw[k].(string); return s }
	env.Found = true
	env.Version = str("python")
	env.Torch = str("torch")
	env.Triton = str("triton")
	env.Cupy = str("cupy")
	env.TorchCUDA = str("torch_cuda")
	env.DeviceName = str("name")
	if c, ok := raw["count"].(float64); ok {
		env.DeviceCount = int(c)
	}
	if c, ok := raw["sm_count"].(float64); ok {
		env.SMCount = int(c)
	}
	if env.Torch == "" {
		env.Found = false
		env.Missing = "torch is not importable in " + env.Path + ": " + str("torch_error")
		return env
	}
	hip := str("hip") != ""
	env.CUDAUsable = env.DeviceCount > 0 && !hip
	env.ROCmUsable = env.DeviceCount > 0 && hip
	return env
}

// LastLine is the last non-empty line of a tool's output: where most tools
// put the error that matters, and where our Python scripts put their JSON.
func LastLine(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.LastIndexByte(s, '\n'); i >= 0 {
		return s[i+1:]
	}
	return s
}

// spec describes how to find one command-line tool and read its version.
type spec struct {
	name    string
	args    []string
	version *regexp.Regexp
	hint    string // how to get it, for the Missing text
}

var specs = []spec{
	{"nvcc", []string{"--version"}, regexp.MustCompile(`release ([0-9.]+), V([0-9.]+)`), "install the CUDA toolkit (or the nvidia-cuda-nvcc wheel), or put nvcc on PATH"},
	{"ncu", []string{"--version"}, regexp.MustCompile(`Version ([0-9.]+)`), "install Nsight Compute (part of the CUDA toolkit)"},
	{"compute-sanitizer", []string{"--version"}, regexp.MustCompile(`Version ([0-9.]+)`), "install the CUDA toolkit"},
	{"hipcc", []string{"--version"}, regexp.MustCompile(`HIP version: ([0-9.\-a-z]+)`), "install ROCm (or Debian's hipcc package)"},
	{"clang-19", []string{"--version"}, regexp.MustCompile(`clang version ([0-9.]+)`), "apt-get install clang-19 (compiles HIP device code for gfx90a/gfx942/gfx950 without ROCm)"},
	{"gcc", []string{"--version"}, regexp.MustCompile(`\) ([0-9]+\.[0-9]+\.[0-9]+)`), "install gcc (apt-get install gcc)"},
}

// Tools finds every command-line tool the harness can use.
func Tools(ctx context.Context) []Tool {
	out := make([]Tool, 0, len(specs))
	for _, s := range specs {
		out = append(out, find(ctx, s))
	}
	return out
}

// Find looks up one tool by name ("nvcc", "ncu", "gcc" ...).
func Find(ctx context.Context, name string) Tool {
	for _, s := range specs {
		if s.name == name {
			return find(ctx, s)
		}
	}
	return Tool{Name: name, Missing: "unknown tool"}
}

// The one tool search. Every program the harness and the search start is
// found through Which, LookPath or LookPathIn, so doctor, compile, profile
// and the operators agree on which nvcc, ncu, rocprofv3 or agent CLI runs.

// Which finds a program the way the shell does and nothing more: a name
// with a path separator as given, else the first match on PATH. For what
// the user named (an explicit path, $CC, KEVOLVE_PYTHON) and the system's
// own tools. The error is exec.LookPath's, which says what was looked for.
func Which(name string) (string, error) {
	return exec.LookPath(name)
}

// LookPath is Which, then ToolDirs (the CUDA, Nsight Compute and ROCm
// folders and the Python wheels), for the toolkits that are often not on
// PATH. "" when absent.
func LookPath(name string) string {
	return LookPathIn(name, ToolDirs())
}

// LookPathIn is Which, then the executable name in each of dirs in order
// (a bare name only: a path is not looked for elsewhere). "" when absent.
func LookPathIn(name string, dirs []string) string {
	if p, err := Which(name); err == nil {
		return p
	}
	if strings.ContainsRune(name, os.PathSeparator) {
		return ""
	}
	for _, d := range dirs {
		p := filepath.Join(d, name)
		if st, e := os.Stat(p); e == nil && !st.IsDir() && st.Mode()&0o111 != 0 {
			return p
		}
	}
	return ""
}

func find(ctx context.Context, s spec) Tool {
	t := Tool{Name: s.name}
	var path string
	var err error
	if s.name == "gcc" { // the system compiler only: wheels carry none worth reporting
		path, err = Which(s.name)
	} else if path = LookPath(s.name); path == "" {
		err = exec.ErrNotFound
	}
	if err != nil {
		t.Missing = "not on PATH or in the CUDA, ROCm or Python-wheel folders: " + s.hint
		return t
	}
	t.Path = path
	ctx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, path, s.args...).CombinedOutput()
	if err != nil {
		t.Missing = fmt.Sprintf("%s %s failed: %v: %s", path, strings.Join(s.args, " "), err, LastLine(string(out)))
		return t
	}
	t.Found = true
	if m := s.version.FindStringSubmatch(string(out)); m != nil {
		t.Version = m[len(m)-1]
	} else {
		t.Version = firstLine(string(out))
	}
	return t
}

func firstLine(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		return s[:i]
	}
	return s
}

// Python is FindPython for callers that run the interpreter straight away:
// when none is found it returns "python3", so the failure (and its message)
// comes from the attempt to run it.
func Python() string {
	if p, err := FindPython(); err == nil {
		return p
	}
	return "python3"
}

// PythonSiteDirs lists the site-packages folders of the harness's Python and
// of the GPU box's venv, found by path without starting Python (a venv's
// layout is fixed). NVIDIA's and Triton's wheels carry nvcc, ptxas,
// cuobjdump and nvdisasm there.
func PythonSiteDirs() []string {
	var roots []string
	if py, err := FindPython(); err == nil {
		// .../venv/bin/python -> .../venv, and the same through symlinks.
		roots = append(roots, filepath.Dir(filepath.Dir(py)))
		if real, err := filepath.EvalSymlinks(py); err == nil {
			roots = append(roots, filepath.Dir(filepath.Dir(real)))
		}
	}
	roots = append(roots, "/opt/torch/.venv")
	var dirs []string
	seen := map[string]bool{}
	for _, r := range roots {
		for _, pat := range []string{"lib/python3*/site-packages", "lib64/python3*/site-packages", "local/lib/python3*/dist-packages"} {
			m, _ := filepath.Glob(filepath.Join(r, pat))
			for _, d := range m {
				if !seen[d] {
					seen[d] = true
					dirs = append(dirs, d)
				}
			}
		}
	}
	return dirs
}

// ToolDirs is where tools are looked for after PATH, in order: CUDA_HOME and
// CUDA_PATH, the usual CUDA, Nsight Compute and ROCm folders, then the NVIDIA
// and Triton wheels of the Python env.
func ToolDirs() []string {
	var dirs []string
	for _, env := range []string{"CUDA_HOME", "CUDA_PATH"} {
		if h := os.Getenv(env); h != "" {
			dirs = append(dirs, filepath.Join(h, "bin"))
		}
	}
	dirs = append(dirs, "/usr/local/cuda/bin", "/opt/cuda/bin", "/opt/nvidia/nsight-compute/bin",
		"/usr/local/cuda/compute-sanitizer", "/opt/rocm/bin", "/usr/lib/llvm-19/bin")
	for _, sp := range PythonSiteDirs() {
		for _, sub := range []string{"nvidia/cu13/bin", "nvidia/cu12/bin", "nvidia/cuda_nvcc/bin", "triton/backends/nvidia/bin"} {
			dirs = append(dirs, filepath.Join(sp, sub))
		}
	}
	return dirs
}

// EnvCacheDir overrides the cache root.
const EnvCacheDir = "KEVOLVE_CACHE_DIR"

// CacheDir is the one cache root: KEVOLVE_CACHE_DIR, else
// ~/.cache/kevolve (the user cache folder), else a folder under the temp
// dir. Every cache lives in a sub-folder of it: worker/ (the unpacked
// Python), kernels/ (compiled kernels), corpus/ (materialized problems).
func CacheDir() string {
	if d := os.Getenv(EnvCacheDir); d != "" {
		return d
	}
	if d, err := os.UserCacheDir(); err == nil {
		return filepath.Join(d, "kevolve")
	}
	return filepath.Join(os.TempDir(), "kevolve-cache")
}

// EnvTestStrict makes tests fail instead of skip when a prerequisite is
// missing (make test and CI set it).
const EnvTestStrict = "KEVOLVE_TEST_STRICT"

// StrictTests is the one reading of KEVOLVE_TEST_STRICT, shared by the Go
// tests (toolchaintest) and the Python ones (kevolve/tests): set to
// anything but "", 0, false, no or off.
func StrictTests() bool {
	switch strings.ToLower(strings.TrimSpace(os.Getenv(EnvTestStrict))) {
	case "", "0", "false", "no", "off":
		return false
	}
	return true
}
