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


def _counting(fn, kind):
    def call(*a, **k):
        _hit(kind)
        return fn(*a, **k)
    call._kv_wrapped = True
    return call


# The file name an Inductor start gives the generated code it carries and
# executes (whole_model/starts.py).
CARRIED_INDUCTOR = "<inductor variant"


def _carried():
    """Whether the caller runs inside generated code the candidate carries
    (an Inductor start), not code torch.compile generates at run time for
    whatever the candidate compiles."""
    f = sys._getframe(2)
    while f is not None:
        if f.f_code.co_filename.startswith(CARRIED_INDUCTOR):
            return True
        f = f.f_back
    return False


# The modules _hook_inductor patches. Generated code imports both
# (output code starts with AsyncCompile); either one imported first sets
# the hook.
_INDUCTOR_MODULES = ("torch._inductor.async_compile", "torch._inductor.runtime.triton_heuristics")


class _AfterImport:
    """A finder that runs then() once any of names has been imported,
    where importing them now would cost every evaluation the import: in a
    GPU worker's child, Dynamo and Inductor take 3-5 s of CPU on a loaded
    16-core host (the parent does not preload them there), and only an
    evaluation whose candidate or reference compiles needs them. It stays
    in sys.meta_path once placed: the next evaluation's import hooks are
    compared with this one's (evaluate.guards.taint)."""

    def __init__(self, names, then):
        self.names, self.then, self.busy = frozenset(names), then, False

    def find_spec(self, name, path=None, target=None):
        if name not in self.names or self.busy:
            return None
        self.busy = True
        try:
            import importlib.util
            spec = importlib.util.find_spec(name)
        finally:
            self.busy = False
        if spec is None or spec.loader is None or not hasattr(spec.loader, "exec_module"):
            return None
        spec.loader = _ThenLoader(spec.loader, self.then)
        return spec


class _ThenLoader:
    """The module's own loader, then then(); anything else asked of it
    (get_source, get_filename...) is the own loader's answer."""

    def __init__(self, loader, then):
        self.loader, self.then = loader, then

    def __getattr__(self, name):
        return getattr(self.loader, name)

    def create_module(self, spec):
        return self.loader.create_module(spec)

    def exec_module(self, module):
        self.loader.exec_module(module)
        # Run once per module: the first may find its sibling half made
        # (async_compile importing triton_heuristics); the second hooks.
        self.then()


def _hook_inductor_when_imported():
    """_hook_inductor now where Inductor is loaded, else at its import."""
    if any(n in sys.modules for n in _INDUCTOR_MODULES):
        _hook_inductor()
        return
    if not any(isinstance(f, _AfterImport) for f in sys.meta_path):
        sys.meta_path.insert(0, _AfterImport(_INDUCTOR_MODULES, _hook_inductor))


def _hook_inductor():
    """Kernels of generated code the candidate carries (an Inductor start:
    C++ built by Inductor's builder on a CPU, Triton launched by its
    autotuner on a GPU) are the candidate's own kernels. torch.compile run
    by the candidate is not: its code is generated from files in
    Inductor's cache, never from the candidate's source."""
    try:
        from torch._inductor.async_compile import AsyncCompile
        from torch._inductor.runtime import triton_heuristics as th
    except Exception:  # noqa: BLE001 - Inductor optional
        return
    cpp = AsyncCompile.cpp_pybinding
    if not getattr(cpp, "_kv_wrapped", False):
        def cpp_pybinding(self, *a, **k):
            fn = cpp(self, *a, **k)
            return _counting(fn, "inductor") if _carried() and callable(fn) else fn
        cpp_pybinding._kv_wrapped = True
        AsyncCompile.cpp_pybinding = cpp_pybinding
    tri = AsyncCompile.triton
    if not getattr(tri, "_kv_wrapped", False):
        def triton(self, *a, **k):
            kernel = tri(self, *a, **k)
            if _carried():
                try:
                    kernel._kv_carried = True
                except AttributeError:
                    pass
            return kernel
        triton._kv_wrapped = True
        AsyncCompile.triton = triton
    run = th.CachingAutotuner.run
    if not getattr(run, "_kv_wrapped", False):
        def carried_run(self, *a, **k):
            if getattr(self, "_kv_carried", False):
                _hit("inductor")
            return run(self, *a, **k)
        carried_run._kv_wrapped = True
        th.CachingAutotuner.run = carried_run


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
    _hook_inductor_when_imported()
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
