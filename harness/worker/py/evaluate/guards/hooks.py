"""Launch hooks: count the custom kernels a candidate runs (Triton, the
kevolve loaders, load_inline / cpp_extension modules, cupy kernels, ctypes
calls into libraries it built: evaluate.guards.native), and put
Triton in the mode the target needs."""
import os
import re
import sys

from evaluate.guards import native as evaluate_native


class LaunchCounter:
    """Counts custom-kernel launches: Triton kernels, objects returned by the
    kevolve loaders, load_inline / cpp_extension modules, cupy kernels."""

    def __init__(self):
        self.n = 0
        self.kinds = set()
        # Builds that raised ("kind.attr(name=...): the error in a line"): a
        # candidate that catches the error and falls back to torch still
        # has them named in its result (issue 32).
        self.build_failures = []

    def hit(self, kind):
        self.n += 1
        self.kinds.add(kind)

    def build_failed(self, what, err):
        if len(self.build_failures) < 8:
            self.build_failures.append("%s: %s" % (what, _build_error(err)[:300]))


def _build_error(err):
    """A build error in a line: torch's "Error building extension 'x'"
    with the compiler's first error line (its own first line goes on with
    a whole command line)."""
    lines = [ln.strip() for ln in str(err).splitlines() if ln.strip()]
    if not lines:
        return type(err).__name__
    head = lines[0]
    if head.startswith("Error building extension"):
        head = head.split("':", 1)[0] + "'"
    errs = [ln for ln in lines[1:] if re.search(r"\berror\b", ln) and not ln.startswith(("ninja:", "FAILED:"))]
    return head + ("; " + errs[0] if errs else "")


class _CountingProxy:
    """A loader's module whose callables count a launch per call. Each
    attribute's counting wrapper is made once and kept in the proxy's own
    __dict__, so later lookups do not reach __getattr__ (a warm load_c
    call is a few µs: a wrapper made per call was a good part of it)."""

    def __init__(self, obj, counter, kind):
        object.__setattr__(self, "_kv_obj", obj)
        object.__setattr__(self, "_kv_counter", counter)
        object.__setattr__(self, "_kv_kind", kind)

    def __getattr__(self, name):
        v = getattr(self._kv_obj, name)
        if callable(v) and not name.startswith("__") and not isinstance(v, type):
            hit, kind = self._kv_counter.hit, self._kv_kind

            def call(*a, **k):
                hit(kind)
                return v(*a, **k)
            call.__name__ = getattr(v, "__name__", name)
            call.__doc__ = getattr(v, "__doc__", None)
            object.__setattr__(self, name, call)
            return call
        return v

    def __setattr__(self, name, value):
        self.__dict__.pop(name, None)  # a kept wrapper would call the old value
        setattr(self._kv_obj, name, value)

    def __call__(self, *a, **k):
        self._kv_counter.hit(self._kv_kind)
        return self._kv_obj(*a, **k)

    def __dir__(self):
        return dir(self._kv_obj)


def triton_interpreter(want):
    """Makes a later `import triton` match the wanted mode. Triton fixes the
    mode of its own library functions at import, so a mismatch means
    dropping the parent's imported copy and importing afresh."""
    os.environ["TRITON_INTERPRET"] = "1" if want else "0"
    mod = sys.modules.get("triton")
    if mod is None:
        return
    # knobs read the environment lazily, so the parent records the mode it
    # imported Triton in; unknown means reimport.
    have = getattr(mod, "_kevolve_interpret_at_import", None)
    if have == want:
        return
    for name in list(sys.modules):
        if name == "triton" or name.startswith("triton."):
            del sys.modules[name]


# The evaluation whose launches the hooks count. The hooks are installed
# once per process and read this, so a child that runs several evaluations
# counts each one's launches into its own counter.
_CURRENT = {"counter": None}


def _hit(kind):
    c = _CURRENT["counter"]
    if c is not None:
        c.hit(kind)


def install_launch_hooks(counter, uses_ext=True):
    _CURRENT["counter"] = counter
    # ctypes calls into libraries the candidate built (evaluate.guards.native).
    evaluate_native.install()
    evaluate_native.new_evaluation(None if counter is None else counter.hit)

    def wrap_loader(mod, attr, kind):
        f = getattr(mod, attr, None)
        if f is None or getattr(f, "_kv_wrapped", False):
            return

        def loader(*a, **k):
            try:
                mod = f(*a, **k)
            except BaseException as e:
                c = _CURRENT["counter"]
                if c is not None:
                    c.build_failed("%s.%s(name=%r)" % (kind, attr, k.get("name", a[0] if a else "")), e)
                raise
            return _CountingProxy(mod, _CURRENT["counter"], kind)
        loader._kv_wrapped = True
        loader.__doc__ = f.__doc__
        setattr(mod, attr, loader)

    try:
        import kevolve
        for attr in ("load_cuda", "load_c", "load_hip"):
            wrap_loader(kevolve, attr, "kevolve")
    except Exception:  # noqa: BLE001 - loader package optional
        pass
    try:
        if uses_ext or "torch.utils.cpp_extension" in sys.modules:
            import torch.utils.cpp_extension as ce
            for attr in ("load_inline", "load"):
                wrap_loader(ce, attr, "cpp_extension")
    except Exception:  # noqa: BLE001
        pass
    try:
        from triton.runtime import jit as tjit
        orig = tjit.JITFunction.run
        if not getattr(orig, "_kv_wrapped", False):
            def run(self, *a, **k):
                _hit("triton")
                return orig(self, *a, **k)
            run._kv_wrapped = True
            tjit.JITFunction.run = run
    except Exception:  # noqa: BLE001
        pass
    try:
        from triton.runtime import interpreter as tint
        orig_i = tint.InterpretedFunction.run
        if not getattr(orig_i, "_kv_wrapped", False):
            def irun(self, *a, **k):
                _hit("triton")
                return orig_i(self, *a, **k)
            irun._kv_wrapped = True
            tint.InterpretedFunction.run = irun
    except Exception:  # noqa: BLE001
        pass
    try:
        import cupy
        for cls in (cupy.RawKernel, cupy.ElementwiseKernel):
            orig_c = cls.__call__
            if getattr(orig_c, "_kv_wrapped", False):
                continue

            def ccall(self, *a, _o=orig_c, **k):
                _hit("cupy")
                return _o(self, *a, **k)
            ccall._kv_wrapped = True
            try:
                cls.__call__ = ccall
            except TypeError:
                pass
    except Exception:  # noqa: BLE001
        pass
