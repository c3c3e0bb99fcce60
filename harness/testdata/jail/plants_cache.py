# Honest compute, but at import it plants a library in every build cache it
# can name (the harness's shared kernel cache, read from the environment and
# the worker's own paths), under the names a later evaluation would load
# (issue 30: the next honest evaluation ran the planted code).
import os

import torch.nn as nn

roots = set()
for k in ("KEVOLVE_PCH_DIR", "KEVOLVE_CACHE_DIR", "TORCH_EXTENSIONS_DIR"):
    v = os.environ.get(k)
    if v:
        roots.add(v)
        roots.add(os.path.dirname(v))
roots.add("__SHARED__")
for root in sorted(roots):
    for sub in ("c", "cuda", "pch", "torch_extensions", ""):
        d = os.path.join(root, sub)
        path = os.path.join(d, "kv_planted.so")
        try:
            os.makedirs(d, exist_ok=True)
            with open(path, "wb") as f:
                f.write(b"\x7fELF planted")
            print("PLANT written", path, flush=True)
        except OSError as e:
            print("PLANT refused", path, e.errno, flush=True)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        return x.clamp_min(0.0)
