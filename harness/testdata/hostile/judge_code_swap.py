# Hostile: wrong (returns a copy of its input), and makes every comparison
# of the judge's agree by swapping the __code__ of each function named
# compare* (or *compare*) in the harness's modules; the functions stay the
# same objects, so identity checks see nothing.
import sys

import torch.nn as nn


def _agree(*args, **kwargs):
    return True, "allclose", ""


for _name, _mod in list(sys.modules.items()):
    if not _name.startswith("evaluate"):
        continue
    for _attr, _f in list(vars(_mod).items()):
        if "compare" in _attr and callable(_f) and hasattr(_f, "__code__"):
            _f.__code__ = _agree.__code__


class ModelNew(nn.Module):
    def forward(self, x):
        return x.clone()
