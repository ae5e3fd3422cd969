"""The decorators users write: ``@vectorize`` and ``@guvectorize``.

Everything that compiles, dispatches or moves data is C (``numbavec._core``);
this module only sorts out the arguments, reads the source and decorates the
returned ufunc with its introspection methods.
"""
import functools
import inspect
import sys

from numbavec import _core
from numbavec._source import KernelSource, names_by_line

_TARGETS = {"cpu": "cpu", "parallel": "parallel", "cuda": "cuda", "gpu": "cuda"}
# cuda gufuncs are a future feature: guvectorize runs on the host targets
_GU_TARGETS = {"cpu": "cpu", "parallel": "parallel"}
_OPTIONS = {"target", "identity", "cache", "fastmath", "nopython", "forceobj", "boundscheck"}


def _kernel(pyfunc, kwargs, who="vectorize"):
    """The parsed source of pyfunc and the options every compile takes."""
    if not inspect.isfunction(pyfunc):
        raise TypeError(f"{who} decorates a Python function, not {pyfunc!r}")
    common = {"identity": kwargs.get("identity"), "fastmath": bool(kwargs.get("fastmath", False)),
              "name": pyfunc.__name__, "doc": pyfunc.__doc__}
    return KernelSource(pyfunc), common


def _arity(pyfunc):
    """The number of arguments a ufunc kernel takes (fixed: no *args, **kwargs)."""
    code = pyfunc.__code__
    if code.co_flags & (inspect.CO_VARARGS | inspect.CO_VARKEYWORDS):
        raise TypeError("a ufunc kernel takes a fixed number of arguments (no *args, **kwargs)")
    return code.co_argcount


def _choices(names):
    quoted = [repr(n) for n in names]
    return ", ".join(quoted[:-1]) + " or " + quoted[-1]


def _check_options(kwargs, allowed=_OPTIONS, who="vectorize", targets=_TARGETS):
    unknown = set(kwargs) - allowed
    if unknown:
        raise TypeError(f"{who}() got unexpected option(s): {', '.join(sorted(unknown))}")
    target = kwargs.get("target", "cpu")
    if not isinstance(target, str):
        raise TypeError(f"{who}(): target must be a str ({_choices(targets)}), "
                        f"not {type(target).__name__}")
    if target not in targets:
        if _TARGETS.get(target) == "cuda":
            raise NotImplementedError(
                f"{who}() does not support target={target!r} yet (cuda gufuncs are a future "
                f"feature); it supports target {_choices(targets)}. "
                "vectorize(target='cuda') makes cuda ufuncs.")
        raise ValueError(f"{who}(): unknown target {target!r} (choose {_choices(targets)})")
    if kwargs.get("forceobj"):
        raise ValueError("numbavec always compiles in nopython mode; forceobj=True is not supported")
    return targets[target]


def vectorize(ftylist_or_function=(), **kwargs):
    """Compile a scalar function into a NumPy ufunc.

    ``@vectorize(['float32(float32, float32)', ...], target='cpu')`` compiles
    one loop per signature now and returns a real ``numpy.ufunc``.  Bare
    ``@vectorize`` (or with options only) returns a real ``numpy.ufunc``
    that compiles a loop for each new combination of input types on first
    use.  Options: ``target`` ('cpu', 'parallel', 'cuda' or its alias 'gpu':
    see numbavec.cuda), ``identity`` (0, 1, None,
    'reorderable' or any value: enables ``reduce`` on empty input),
    ``fastmath``, ``nopython`` (accepted: compilation is always nopython),
    ``cache`` (store the machine code on disk: see numbavec.cache).
    """
    target = _check_options(kwargs)
    if target == "cuda":
        return _cuda_vectorize(ftylist_or_function, kwargs)
    if inspect.isfunction(ftylist_or_function):
        return _build_lazy(ftylist_or_function, target, kwargs)
    signatures = ftylist_or_function
    lazy = isinstance(signatures, (list, tuple)) and len(signatures) == 0

    def decorate(pyfunc):
        if lazy:
            return _build_lazy(pyfunc, target, kwargs)
        return _build(pyfunc, signatures, target, kwargs)

    return decorate


def _function_cache(pyfunc, src, target, kwargs):
    """A FunctionCache when cache=True, else None."""
    if not kwargs.get("cache"):
        return None
    from numbavec.cache import FunctionCache

    options = {"identity": kwargs.get("identity"),
               "fastmath": bool(kwargs.get("fastmath", False))}
    return FunctionCache(pyfunc, src, target, options)


def _cuda_vectorize(sigs_or_function, kwargs):
    """target='cuda'/'gpu': PTX per signature now (needs libdevice, not a GPU);
    the GPU is needed from the first call, which raises CudaSupportError
    without one.  No signatures: compiled on call for the inputs' dtypes."""
    def build(pyfunc, signatures):
        src, common = _kernel(pyfunc, kwargs)
        return _core._cuda_vectorize(pyfunc, src.funcdef, src.location, list(signatures),
                                     nin=_arity(pyfunc),
                                     cache=_function_cache(pyfunc, src, "cuda", kwargs), **common)

    if inspect.isfunction(sigs_or_function):
        return build(sigs_or_function, ())
    if isinstance(sigs_or_function, str):
        sigs_or_function = [sigs_or_function]
    return lambda pyfunc: build(pyfunc, sigs_or_function)


def _build(pyfunc, signatures, target, kwargs):
    src, common = _kernel(pyfunc, kwargs)
    ufunc = _core.vectorize(pyfunc, src.funcdef, src.location, signatures, target=target,
                            cache=_function_cache(pyfunc, src, target, kwargs), **common)
    _decorate(ufunc, pyfunc, src)
    return ufunc


def _build_lazy(pyfunc, target, kwargs):
    """A real ufunc with no loops: each new input-type combination compiles
    one inside NumPy's dispatch (src/vectorize/dufunc.c).  guvectorize with
    only a layout plugs in the same way: its C side passes its own
    VzLazyBackend to vz_make_lazy_ufunc."""
    src, common = _kernel(pyfunc, kwargs)
    ufunc = _core.lazy_vectorize(pyfunc, src.funcdef, src.location, _arity(pyfunc),
                                 target=target,
                                 cache=_function_cache(pyfunc, src, target, kwargs), **common)
    _decorate(ufunc, pyfunc, src)
    return ufunc


def _decorate(ufunc, pyfunc, src):
    lib = _core._code_of(ufunc)
    ufunc.py_func = pyfunc
    ufunc.inspect_llvm = lib.inspect_llvm
    ufunc.inspect_asm = lib.inspect_asm
    # a plain function of its own (no reference to the ufunc: no cycle)
    ufunc.inspect_types = _types_printer(lib, pyfunc, src)


def _types_printer(lib, pyfunc, src):
    funcdef, (_, first, lines, offset) = src.funcdef, src.location

    def inspect_types(file=None, signature=None):
        """Print the source with the inferred type of every variable, per signature."""
        by_line = names_by_line(funcdef, offset)   # here, not at decoration
        out = file if file is not None else sys.stdout
        types = lib.variable_types() if signature is None else {
            str(signature): lib.variable_types(signature)}
        for sig, var_types in types.items():
            print(f"{pyfunc.__name__} {sig}", file=out)
            print("-" * 72, file=out)
            for i, text in enumerate(lines):
                lineno = first + i
                notes = [f"{n}: {var_types[n]}" for n in by_line.get(lineno, [])
                         if n in var_types]
                text = text.rstrip("\n")
                if notes:
                    text = f"{text:<48}  # {', '.join(notes)}"
                print(f"{lineno:>5}  {text}", file=out)
            print(f"       # returns {var_types.get('<return>', '?')}", file=out)
            print("=" * 72, file=out)

    return inspect_types


class DeviceFunction:
    """A scalar helper that kernels (and other device functions) may call.

    Called from Python it runs the original function; called inside a
    kernel it is typed from the argument types at that call site and
    inlined (numbavec._core reads its source through
    ``_numbavec_device_source``).  Its global names resolve in its own
    module, when the kernel is compiled.
    """

    def __init__(self, pyfunc):
        if not inspect.isfunction(pyfunc):
            raise TypeError(f"numbavec.jit decorates a Python function, not {pyfunc!r}")
        self.py_func = pyfunc
        self._source = None
        functools.update_wrapper(self, pyfunc)

    def __call__(self, *args, **kwargs):
        return self.py_func(*args, **kwargs)

    def __repr__(self):
        return f"<numbavec device function {self.py_func.__qualname__}>"

    def _numbavec_device_source(self):
        """(py_func, ast.FunctionDef, location): parsed once, then cached."""
        if self._source is None:
            src = KernelSource(self.py_func)
            self._source = (self.py_func, src.funcdef, src.location)
        return self._source


_JIT_OPTIONS = {"device", "inline", "cache", "fastmath", "nopython", "forceobj", "boundscheck"}


def jit(func=None, **options):
    """Mark a scalar helper as a device function: ``@numbavec.jit`` or
    ``@numbavec.jit(...)``.  Kernels inline it at each call site; from
    Python it stays an ordinary call of the original function."""
    _check_options(options, _JIT_OPTIONS, "jit")   # all accepted, none changes inlining
    if func is None:
        return DeviceFunction
    return DeviceFunction(func)


_GU_OPTIONS = _OPTIONS | {"writable_args"}


def guvectorize(*args, **kwargs):
    """Compile a kernel over arrays into a NumPy generalized ufunc.

    ``@guvectorize(signatures, layout, target='cpu')``: ``signatures`` as for
    vectorize but returning void (``'void(float64[:], float64, float64[:])'``
    or the argument tuple ``'(float64[:], float64[:])'``), ``layout`` a NumPy
    gufunc signature such as ``'(n),()->(n)'``.  A layout without ``->`` has
    no outputs: the kernel writes into its inputs, and the writes reach the
    caller's arrays.  Options: ``target`` ('cpu', 'parallel'; not 'cuda' yet), ``identity``,
    ``writable_args`` (indices or names of inputs the kernel writes; inputs
    it assigns to are writable anyway), ``fastmath``, ``boundscheck``
    (default True: an index out of bounds raises IndexError), ``nopython``
    and ``cache`` (accepted).  Returns a real ``numpy.ufunc``.
    """
    if len(args) == 1 and "layout" in kwargs:
        args = (args[0], kwargs.pop("layout"))
    if len(args) != 2:
        raise TypeError("guvectorize(signatures, layout, **options) needs signatures and a "
                        "layout, e.g. guvectorize(['void(f8[:], f8[:])'], '(n)->(n)')")
    signatures, layout = args
    if inspect.isfunction(signatures):
        raise TypeError("guvectorize needs signatures and a layout: "
                        "@guvectorize(['void(f8[:], f8[:])'], '(n)->(n)')")
    target = _check_options(kwargs, _GU_OPTIONS, "guvectorize", _GU_TARGETS)
    if isinstance(signatures, (list, tuple)) and len(signatures) == 0:
        raise TypeError("guvectorize needs at least one signature in this build")

    def decorate(pyfunc):
        src, common = _kernel(pyfunc, kwargs, "guvectorize")
        writable = _writable_indices(pyfunc, kwargs.get("writable_args", ()))
        ufunc = _core.guvectorize(
            pyfunc, src.funcdef, src.location, signatures, layout, target=target,
            writable_args=writable, boundscheck=bool(kwargs.get("boundscheck", True)), **common)
        _decorate(ufunc, pyfunc, src)
        return ufunc

    return decorate


def _writable_indices(pyfunc, writable):
    """writable_args as indices: names are looked up among pyfunc's parameters."""
    params = list(inspect.signature(pyfunc).parameters)
    out = []
    for w in writable:
        if isinstance(w, str):
            if w not in params:
                raise ValueError(f"writable_args: {pyfunc.__name__}() has no argument {w!r}")
            w = params.index(w)
        out.append(w)
    return tuple(out)
