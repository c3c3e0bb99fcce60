package compile

import (
	"fmt"
	"os"
	"strings"

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

// FindTool finds a CUDA tool (nvcc, cuobjdump, nvdisasm, ptxas) or gcc: on
// PATH, then in CUDA_HOME, /usr/local/cuda and the Python env's NVIDIA and
// Triton wheels. A missing tool is a *ToolMissingError.
func FindTool(name string) (string, error) {
	if name == "gcc" {
		if cc := os.Getenv("CC"); cc != "" {
			if p, err := toolchain.Which(cc); err == nil {
				return p, nil
			}
		}
	}
	dirs := toolchain.ToolDirs()
	if p := toolchain.LookPathIn(name, dirs); p != "" {
		return p, nil
	}
	return "", &ToolMissingError{Tool: name, Searched: dirs, Hint: toolHints[name]}
}
