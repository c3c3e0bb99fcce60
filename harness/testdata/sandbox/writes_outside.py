# Correct, but tries to write and delete files outside its folders: the
# user's home, a world-writable folder under /tmp, the reference's folder,
# the unpacked worker (the judge's files), the cache root. Prints what it
# managed.
import os
import sys

import torch.nn as nn

SHALLOW = __SHALLOW__  # only a file written at the top (the user's home)
DEEP = __DEEP__  # every file deleted or appended to, then the tree removed
here = os.getcwd()
worker_dir = os.path.dirname(os.path.abspath(sys.modules["__main__"].__file__))
for d in SHALLOW + DEEP + [worker_dir]:
    try:
        with open(os.path.join(d, "kevolve-sandbox-was-here"), "w") as f:
            f.write("x")
        print("WROTE", d, flush=True)
    except OSError as e:
        print("REFUSED", d, e, flush=True)
for d in DEEP + [worker_dir]:
    for root, dirs, files in os.walk(d, topdown=False):
        if root.startswith(here):
            continue  # its own folder is its to change
        for n in files:
            p = os.path.join(root, n)
            try:
                os.unlink(p)
                print("DELETED", p, flush=True)
            except OSError:
                pass
            try:
                with open(p, "a") as f:
                    f.write("\nraise SystemExit('patched')\n")
                print("APPENDED", p, flush=True)
            except OSError:
                pass
        try:
            os.rmdir(root)
            print("DELETED", root, flush=True)
        except OSError:
            pass


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        return x.clamp_min(0.0)
