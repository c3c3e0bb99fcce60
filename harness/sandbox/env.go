package sandbox

import (
	"os"
	"regexp"
	"strings"
)

// allowedNames are variables untrusted code may see as the server had them:
// paths, locale, the toolchains' own settings.
var allowedNames = map[string]bool{
	"PATH": true, "HOME": true, "USER": true, "LOGNAME": true, "TERM": true, "TZ": true, "TMPDIR": true,
	"LANG": true, "LANGUAGE": true, "LD_LIBRARY_PATH": true,
	"CC": true, "CXX": true, "NVCC": true, "CUDAHOSTCXX": true, "CPATH": true, "LIBRARY_PATH": true,
	"C_INCLUDE_PATH": true, "CPLUS_INCLUDE_PATH": true, "PKG_CONFIG_PATH": true, "MAX_JOBS": true,
	"VIRTUAL_ENV": true, "CONDA_PREFIX": true, "XDG_CACHE_HOME": true, "XDG_DATA_HOME": true,
	"PYTHONPATH": true, "PYTHONHOME": true, "PYTHONNOUSERSITE": true, "PYTHONDONTWRITEBYTECODE": true,
	"PYTHONUNBUFFERED": true, "PYTHONHASHSEED": true, "PYTHONWARNINGS": true, "PYTHONFAULTHANDLER": true,
}

// allowedPrefixes are families of settings: locale, device pinning and
// the GPU runtimes, Triton and torch, thread pools, and the job's own.
var allowedPrefixes = []string{
	"LC_", "CUDA_", "NVIDIA_", "NVCC_", "CUDNN_", "CUBLAS_", "NCCL_",
	"HIP_", "ROCM_", "ROCR_", "HSA_", "HCC_", "AMD_",
	"TRITON_", "TORCH_", "TORCHINDUCTOR_", "PYTORCH_",
	"OMP_", "MKL_", "KMP_", "GOMP_", "OPENBLAS_",
	"KEVOLVE_",
}

// secretName matches what is dropped even where a prefix allows it.
var secretName = regexp.MustCompile(`(?i)TOKEN|KEY|SECRET|PASSW|CREDENTIAL|AUTH`)

// deniedNames are dropped by name, whatever the patterns say.
var deniedNames = map[string]bool{"KEVOLVE_TOKEN": true, "OPENAI_API_KEY": true, "ANTHROPIC_API_KEY": true}

// secret says whether a variable names a secret: never passed on.
func secret(name string) bool { return deniedNames[name] || secretName.MatchString(name) }

// Allowed says whether a variable may reach untrusted code.
func Allowed(name string) bool {
	if name == "" || secret(name) {
		return false
	}
	if allowedNames[name] {
		return true
	}
	for _, p := range allowedPrefixes {
		if strings.HasPrefix(name, p) {
			return true
		}
	}
	return false
}

// Env is the environment of a process that runs untrusted code: the
// allowlisted part of this process's environment, then extra ("K=V",
// later entries win): the caller's own settings, which pass unless they
// name a secret. Everything else (tokens, API keys, the user's other
// variables) is dropped.
func Env(extra ...string) []string {
	return Filter(os.Environ(), extra...)
}

// Filter is Env over a given base environment.
func Filter(base []string, extra ...string) []string {
	out := make([]string, 0, len(base)+len(extra))
	idx := map[string]int{}
	for i, kv := range append(append([]string(nil), base...), extra...) {
		k, _, ok := strings.Cut(kv, "=")
		if !ok || (i < len(base) && !Allowed(k)) || secret(k) {
			continue
		}
		if i, seen := idx[k]; seen {
			out[i] = kv
			continue
		}
		idx[k] = len(out)
		out = append(out, kv)
	}
	return out
}
