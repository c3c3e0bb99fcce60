"""kevolve: fast loaders for bare kernel sources, used by candidates.

    from kevolve import load_cuda, load_c, load_hip, hipify

load_cuda compiles one CUDA source with NVRTC (in-process) or nvcc and
launches its extern "C" __global__ kernels on torch tensors; load_c compiles a
C source with gcc and calls its functions on CPU tensors. Both cache compiled
objects on disk by content (KEVOLVE_CACHE_DIR, default ~/.cache/kevolve/kernels).
load_hip is load_cuda for torch's ROCm build (AMD GPUs; hiprtc or hipcc), and
hipify ports a CUDA source to HIP with torch.utils.hipify.
"""

from ._cache import CompileError
from ._c import load_c
from ._cuda import load_cuda
from ._hip import load_hip
from ._hipify import hipify
from ._inline import load_inline_cached, patch_load_inline

__all__ = ["CompileError", "hipify", "load_c", "load_cuda", "load_hip", "load_inline_cached", "patch_load_inline"]
