"""Native calls into code the candidate built count as its own kernels.

A candidate may build a shared object (gcc through subprocess, kevolve's
load_c, nvcc) and call it through ctypes directly, skipping the loaders'
wrappers. The launch counter (evaluate.guards.hooks) would not see that and the
evaluation would say, falsely, that no custom kernel ran. So ctypes
libraries are looked at when they are loaded, and a call counts (kind
"ctypes") when all of this holds:

  1. the library is the candidate's build: a library load_c returned in
     this evaluation, or a file outside the installation (not under /usr,
     /lib, /opt, the Python environment or torch) that was written since
     this evaluation began and carries no DT_SONAME. Every library built
     to be linked against (libc, libm, libtorch, MKL, OpenBLAS, cuBLAS)
     has a SONAME; `gcc -shared` gives a candidate's build none. So a
     system library, or a copy of one, does not count;
  2. the function called lies in that file (dladdr on its address): a
     symbol looked up through the candidate's handle but found in one of
     its dependencies (memcpy from libc through a library linked with -lc)
     does not count;
  3. the call is made: each call counts where it is made, so the
     reference_ops rule and the warning read only the forward's calls
     (the counter's value after construction is subtracted).

The bar is the loaders' bar: code the candidate wrote and compiled ran
in its forward. What that code does is not the counter's question: a
trivial kernel beside torch doing the reference's whole trace is still
the reference (evaluate.guards.refops), and the library ops' share is noted.
A call through cffi, or through a function pointer cast by hand
(ctypes.CFUNCTYPE), is not seen and does not count. Like every count made
in the candidate's process, this one is evidence against a candidate that
claims someone else's code as its own, not against one that tampers with
the harness's modules (the patch guard and the judge are for that).
"""
import ctypes
import os
import struct
import sys
import time

_DT_SONAME = 14
_PT_DYNAMIC = 2
# Where the installation's libraries live: nothing a candidate builds.
_SYSTEM_ROOTS = ("/usr/", "/lib/", "/lib32/", "/lib64/", "/libx32/", "/opt/", "/bin/", "/sbin/", "/etc/", "/snap/",
                 "/nix/", "/proc/", "/sys/")


class _DlInfo(ctypes.Structure):
    _fields_ = [("dli_fname", ctypes.c_char_p), ("dli_fbase", ctypes.c_void_p),
                ("dli_sname", ctypes.c_char_p), ("dli_saddr", ctypes.c_void_p)]


_STATE = {"since": 0.0, "hit": None, "dladdr": None}


def _installed_roots():
    """The Python environment's and torch's folders, as real paths."""
    roots = {sys.prefix, sys.base_prefix, sys.exec_prefix}
    torch = sys.modules.get("torch")
    if torch is not None and getattr(torch, "__file__", None):
        roots.add(os.path.dirname(torch.__file__))
    return tuple(os.path.realpath(r).rstrip("/") + "/" for r in roots if r)


def has_soname(path):
    """Whether the ELF file at path has a DT_SONAME entry (True where it
    cannot be read as ELF: an unknown file is not the candidate's build)."""
    try:
        with open(path, "rb") as f:
            head = f.read(64)
            if head[:4] != b"\x7fELF" or head[4] not in (1, 2) or head[5] not in (1, 2):
                return True
            e = "<" if head[5] == 1 else ">"
            wide = head[4] == 2
            if wide:
                phoff, = struct.unpack_from(e + "Q", head, 32)
                phentsize, phnum = struct.unpack_from(e + "HH", head, 54)
            else:
                phoff, = struct.unpack_from(e + "I", head, 28)
                phentsize, phnum = struct.unpack_from(e + "HH", head, 42)
            f.seek(phoff)
            table = f.read(phentsize * phnum)
            for k in range(phnum):
                ph = table[k * phentsize:(k + 1) * phentsize]
                if wide:
                    ptype, _, off, _, _, size = struct.unpack_from(e + "IIQQQQ", ph)
                else:
                    ptype, off, _, _, size = struct.unpack_from(e + "IIIII", ph)
                if ptype != _PT_DYNAMIC:
                    continue
                f.seek(off)
                dyn = f.read(size)
                step, fmt = (16, e + "qQ") if wide else (8, e + "iI")
                for j in range(0, len(dyn) - step + 1, step):
                    tag, _ = struct.unpack_from(fmt, dyn, j)
                    if tag == 0:
                        break
                    if tag == _DT_SONAME:
                        return True
                return False
            return False  # no dynamic section: not a library anyone links against
    except (OSError, struct.error):
        return True


def candidate_built(path, since, loaded=()):
    """Whether the library at path counts as the candidate's build (rule 1
    above); loaded: the real paths load_c returned in this evaluation."""
    if not path or not isinstance(path, (str, bytes, os.PathLike)):
        return False
    try:
        real = os.path.realpath(os.fsdecode(path))
        st = os.stat(real)
    except (OSError, TypeError, ValueError):
        return False  # a bare name the loader found on its search path: a system library
    if real in loaded:
        return True
    if real.startswith(_SYSTEM_ROOTS) or real.startswith(_installed_roots()):
        return False
    return max(st.st_mtime, st.st_ctime) >= since and not has_soname(real)


def _defined_in(fptr, real):
    """Whether the function fptr points into the file real (rule 2)."""
    dladdr = _STATE["dladdr"]
    info = _DlInfo()
    addr = ctypes.cast(fptr, ctypes.c_void_p).value
    if not addr or not dladdr(ctypes.c_void_p(addr), ctypes.byref(info)) or not info.dli_fname:
        return False
    return os.path.realpath(os.fsdecode(info.dli_fname)) == real


def _count_calls(lib, real):
    """Makes each call of a function of lib that lies in real count. The
    library's own _FuncPtr class (ctypes makes one per CDLL) gets the
    hook, so argtypes and restype work as before; whether a function lies
    in the file is asked once per function object. The hook costs about
    1 µs a call (a Python frame and the counter's)."""
    base, state = ctypes._CFuncPtr.__call__, _STATE

    def __call__(self, *a):
        own = self._kv_own
        if own is None:
            own = self._kv_own = _defined_in(self, real)
        hit = state["hit"]
        if own and hit is not None:
            hit("ctypes")
        return base(self, *a)
    lib._FuncPtr._kv_own = None
    lib._FuncPtr.__call__ = __call__


def new_evaluation(hit):
    """Starts counting for an evaluation: hit(kind) records a call (the
    evaluation's counter's own method: one Python frame a call); files
    written from now on may be the candidate's build."""
    _STATE["since"] = time.time() - 1.0  # file times have coarse clocks on some filesystems
    _STATE["hit"] = hit
    try:
        from kevolve import _c
        _c.loaded_libraries.clear()
    except Exception:  # noqa: BLE001 - the loaders are optional
        pass


def install():
    """Hooks ctypes' library loading (once per process)."""
    init = ctypes.CDLL.__init__
    if getattr(init, "_kv_wrapped", False):
        return
    libc = ctypes.CDLL(None)
    libc.dladdr.argtypes = [ctypes.c_void_p, ctypes.POINTER(_DlInfo)]
    libc.dladdr.restype = ctypes.c_int
    _STATE["dladdr"] = libc.dladdr

    def __init__(self, name, *a, **k):
        init(self, name, *a, **k)
        if getattr(type(self), "_kv_loader", False) or _STATE["hit"] is None:
            return
        try:
            from kevolve import _c
            loaded = _c.loaded_libraries
        except Exception:  # noqa: BLE001
            loaded = ()
        if candidate_built(name, _STATE["since"], loaded):
            _count_calls(self, os.path.realpath(os.fsdecode(name)))
    __init__._kv_wrapped = True
    ctypes.CDLL.__init__ = __init__
