package compile

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"

	"github.com/kevolve/kevolve-mcp/harness/toolchain"
)

// ToolMissingError says which compiler tool could not be found, where it was
// looked for and how to get it.
type ToolMissingError struct {
	Tool     string
	Searched []string
	Hint     string
}

func (e *ToolMissingError) Error() string {
	return fmt.Sprintf("%s not found (looked on PATH and in %s); %s", e.Tool, strings.Join(e.Searched, ", "), e.Hint)
}

var toolHints = map[string]string{
	"nvcc":      "install the CUDA toolkit (/usr/local/cuda/bin) or `pip install nvidia-cuda-nvcc==13.0.88 nvidia-nvvm==13.0.88 nvidia-cuda-crt==13.0.88 nvidia-cuda-cccl==13.0.85` into the Python env (KEVOLVE_PYTHON)",
	"cuobjdump": "install the CUDA toolkit or `pip install triton` (its wheel ships cuobjdump) into the Python env (KEVOLVE_PYTHON)",
	"nvdisasm":  "install the CUDA toolkit or `pip install triton` (its wheel ships nvdisasm) into the Python env (KEVOLVE_PYTHON)",
	"ptxas":     "install the CUDA toolkit or `pip install triton` (its wheel ships ptxas) into the Python env (KEVOLVE_PYTHON)",
	"gcc":       "install gcc (apt-get install gcc) or set CC",
	"python":    "set KEVOLVE_PYTHON to a Python with torch and triton (e.g. make venv)",
}

// FindPython returns the Python interpreter the harness uses
// (toolchain.FindPython's order), or a ToolMissingError.
func FindPython() (string, error) {
	p, err := toolchain.FindPython()
	if err != nil {
		return "", &ToolMissingError{Tool: "python", Searched: toolchain.PythonCandidates(), Hint: toolHints["python"]}
	}
	return p, nil
}

var (
	siteOnce sync.Once
	siteDirs []string
)

// pythonSiteDirs lists the site-packages directories of the harness's Python
// (found by path, without starting Python: a venv's layout is fixed).
func pythonSiteDirs() []string {
	siteOnce.Do(func() {
		var roots []string
		if py, err := FindPython(); err == nil {
			// .../venv/bin/python -> .../venv
			roots = append(roots, filepath.Dir(filepath.Dir(py)))
			if real, err := filepath.EvalSymlinks(py); err == nil {
				roots = append(roots, filepath.Dir(filepath.Dir(real)))
			}
		}
		roots = append(roots, "/opt/torch/.venv")
		seen := map[string]bool{}
		for _, r := range roots {
			for _, pat := range []string{"lib/python3*/site-packages", "lib64/python3*/site-packages", "local/lib/python3*/dist-packages"} {
				m, _ := filepath.Glob(filepath.Join(r, pat))
				for _, d := range m {
					if !seen[d] {
						seen[d] = true
						siteDirs = append(siteDirs, d)
					}
				}
			}
		}
	})
	return siteDirs
}

// toolDirs is where FindTool looks after PATH, in order.
func toolDirs() []string {
	var dirs []string
	for _, env := range []string{"CUDA_HOME", "CUDA_PATH"} {
		if h := os.Getenv(env); h != "" {
			dirs = append(dirs, filepath.Join(h, "bin"))
		}
	}
	dirs = append(dirs, "/usr/local/cuda/bin")
	for _, sp := range pythonSiteDirs() {
		for _, sub := range []string{"nvidia/cu13/bin", "nvidia/cu12/bin", "nvidia/cuda_nvcc/bin", "triton/backends/nvidia/bin"} {
			dirs = append(dirs, filepath.Join(sp, sub))
		}
	}
	return dirs
}

// FindTool finds a CUDA tool (nvcc, cuobjdump, nvdisasm, ptxas) or gcc: on
// PATH, then in CUDA_HOME, /usr/local/cuda and the Python env's NVIDIA and
// Triton wheels. A missing tool is a *ToolMissingError.
func FindTool(name string) (string, error) {
	if name == "gcc" {
		if cc := os.Getenv("CC"); cc != "" {
			if p, err := exec.LookPath(cc); err == nil {
				return p, nil
			}
		}
	}
	if p, err := exec.LookPath(name); err == nil {
		return p, nil
	}
	dirs := toolDirs()
	for _, d := range dirs {
		p := filepath.Join(d, name)
		if st, err := os.Stat(p); err == nil && !st.IsDir() && st.Mode()&0o111 != 0 {
			return p, nil
		}
	}
	return "", &ToolMissingError{Tool: name, Searched: dirs, Hint: toolHints[name]}
}

// IsToolMissing reports whether err says a tool is missing.
func IsToolMissing(err error) bool {
	var tm *ToolMissingError
	return errors.As(err, &tm)
}
