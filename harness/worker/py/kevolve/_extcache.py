"""The harness-built extension cache: load_inline builds a candidate may load.

A jailed candidate builds in its own job's folder, so nothing it compiles
is ever loaded by another evaluation (issue 30). Built that way alone,
every evaluation of the same KernelBench source compiled it again (20-70 s
on an H200 where the cache had made it 0.3 s). So the harness's build step
(_prepare.py, a harness job that reads the candidate's source and never
runs it) builds the load_inline calls whose arguments are literals, with
the same naming and header tiers as the candidate's own call (_inline.py),
into the shared extension folder, and keeps a manifest beside each library:
its SHA-256. The candidate's process cannot write there (the read-only
host, Landlock). Before it loads one, it copies the library into its own
folder and checks the copy against the manifest, so what it loads is what
the build step made, whatever happens to the shared file meanwhile.

The build step never imports what it built: an extension's static
initializers are the candidate's code, and the build step keeps the
server's identity.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import shutil

ENV_SHARED = "KEVOLVE_SHARED_EXT_DIR"
MANIFEST = ".sha256"

# Set while the build step builds: torch's import of the result is skipped.
_BUILD_ONLY = False

# What this process loaded, by name (the name holds the content's digest).
# A kept child serves many evaluations: loading the same extension again
# from the next job's copy, another file of the same name, ran its module
# initializer a second time in one process (a segmentation fault in
# load_candidate on the H200); the module loaded first is the same code.
_LOADED: dict = {}


class Built:
    """What load_inline returns in the build step: the library it made."""

    def __init__(self, path: str):
        self.path = path


def shared_dir() -> str:
    """The harness's extension folder as a candidate's process sees it, or
    "" where the harness named none (the build step itself, an unjailed run)."""
    return "" if _BUILD_ONLY else os.environ.get(ENV_SHARED, "")


def _sha256(path: str) -> str:
    with open(path, "rb") as f:
        return hashlib.file_digest(f, "sha256").hexdigest()


@contextlib.contextmanager
def build_only():
    """Inside, torch's load_inline builds and records the library's digest
    instead of importing it (it returns a Built)."""
    global _BUILD_ONLY
    import torch.utils.cpp_extension as ext
    real = ext._import_module_from_library

    def record(module_name, path, is_python_module):
        lib = os.path.join(path, module_name + ext.LIB_EXT)
        with open(lib + MANIFEST + ".tmp", "w") as f:
            f.write(_sha256(lib))
        os.replace(lib + MANIFEST + ".tmp", lib + MANIFEST)
        return Built(lib)

    ext._import_module_from_library, _BUILD_ONLY = record, True
    try:
        yield
    finally:
        ext._import_module_from_library, _BUILD_ONLY = real, False


def load(name: str, python_module: bool, private_root: str):
    """The harness-built extension `name`, copied into private_root and
    imported from there, or None where there is none or the copy does not
    match its manifest (the caller then builds it itself)."""
    shared = shared_dir()
    if not shared:
        return None
    if (name, python_module) in _LOADED:
        return _LOADED[(name, python_module)]
    import torch.utils.cpp_extension as ext
    lib = os.path.join(shared, name, name + ext.LIB_EXT)
    try:
        with open(lib + MANIFEST) as f:
            want = f.read().strip()
    except OSError:
        return None
    mine = os.path.join(private_root, name)
    os.makedirs(mine, exist_ok=True)
    copy = os.path.join(mine, name + ext.LIB_EXT)
    try:
        shutil.copyfile(lib, copy)
    except OSError:
        return None
    if _sha256(copy) != want:
        os.remove(copy)
        print("kevolve: the shared build of %s does not match its manifest; building it again" % name, flush=True)
        return None
    mod = _LOADED[(name, python_module)] = ext._import_module_from_library(name, mine, python_module)
    return mod


def missed(path: str) -> bool:
    """Whether a build-tier miss marker (a file under TORCH_EXTENSIONS_DIR)
    is there, or the build step left the same one in the shared folder."""
    if os.path.exists(path):
        return True
    shared = shared_dir()
    return bool(shared) and os.path.exists(os.path.join(shared, os.path.basename(path)))
