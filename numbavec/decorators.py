"""The decorators users write: ``@vectorize`` (and, later, ``@guvectorize``).

Everything that compiles, dispatches or moves data is C (``numbavec._core``);
this module only sorts out the arguments, reads the source and decorates the
returned ufunc with its introspection methods.
"""
import inspect
import io
import sys

from numbavec import _core
from numbavec._source import KernelSource, names_by_line

_TARGETS = {"cpu": "cpu", "parallel": "parallel", "cuda": "cuda", "gpu": "cuda"}
_OPTIONS = {"target", "identity", "cache", "fastmath", "nopython", "forceobj", "boundscheck"}


def _is_function(obj):
    return inspect.isfunction(obj)


def _check_options(kwargs):
    unknown = set(kwargs) - _OPTIONS
    if unknown:
        raise TypeError(f"vectorize() got unexpected option(s): {', '.join(sorted(unknown))}")
    target = kwargs.get("target", "cpu")
    if target not in _TARGETS:
        raise ValueError(f"unknown target {target!r} (choose 'cpu', 'parallel', 'cuda' or 'gpu')")
    if _TARGETS[target] == "cuda":
        raise NotImplementedError("target='cuda' is not available in this build yet")
    if kwargs.get("forceobj"):
        raise ValueError("numbavec always compiles in nopython mode; forceobj=True is not supported")
    return _TARGETS[target]


def vectorize(ftylist_or_function=(), **kwargs):
    """Compile a scalar function into a NumPy ufunc.

    ``@vectorize(['float32(float32, float32)', ...], target='cpu')`` compiles
    one loop per signature now and returns a real ``numpy.ufunc``.  Bare
    ``@vectorize`` (or with options only) returns a real ``numpy.ufunc``
    that compiles a loop for each new combination of input types on first
    use.  Options: ``target`` ('cpu', 'parallel'), ``identity`` (0, 1, None,
    'reorderable' or any value: enables ``reduce`` on empty input),
    ``fastmath``, ``nopython`` (accepted: compilation is always nopython),
    ``cache`` (store the machine code on disk: see numbavec.cache).
    """
    target = _check_options(kwargs)
    if _is_function(ftylist_or_function):
        return _build_lazy(ftylist_or_function, target, kwargs)
    signatures = ftylist_or_function
    lazy = isinstance(signatures, (list, tuple)) and len(signatures) == 0

    def decorate(pyfunc):
        if not _is_function(pyfunc):
            raise TypeError(f"vectorize decorates a Python function, not {pyfunc!r}")
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


def _build(pyfunc, signatures, target, kwargs):
    src = KernelSource(pyfunc)
    ufunc = _core.vectorize(
        pyfunc, src.funcdef, src.location, signatures, target=target,
        identity=kwargs.get("identity"), fastmath=bool(kwargs.get("fastmath", False)),
        name=pyfunc.__name__, doc=pyfunc.__doc__,
        cache=_function_cache(pyfunc, src, target, kwargs))
    _decorate(ufunc, pyfunc, src)
    return ufunc


def _build_lazy(pyfunc, target, kwargs):
    """A real ufunc with no loops: each new input-type combination compiles
    one inside NumPy's dispatch (src/vectorize/dufunc.c).  guvectorize with
    only a layout plugs in the same way: its C side passes its own
    VzLazyBackend to vz_make_lazy_ufunc."""
    src = KernelSource(pyfunc)
    code = pyfunc.__code__
    if code.co_flags & (inspect.CO_VARARGS | inspect.CO_VARKEYWORDS):
        raise TypeError("a ufunc kernel takes a fixed number of arguments (no *args, **kwargs)")
    ufunc = _core.lazy_vectorize(
        pyfunc, src.funcdef, src.location, code.co_argcount, target=target,
        identity=kwargs.get("identity"), fastmath=bool(kwargs.get("fastmath", False)),
        name=pyfunc.__name__, doc=pyfunc.__doc__,
        cache=_function_cache(pyfunc, src, target, kwargs))
    _decorate(ufunc, pyfunc, src)
    return ufunc


def _decorate(ufunc, pyfunc, src):
    lib = ufunc._numbavec_code
    ufunc.py_func = pyfunc
    ufunc.inspect_llvm = lib.inspect_llvm
    ufunc.inspect_asm = lib.inspect_asm
    # a plain function of its own (no reference to the ufunc: no cycle)
    ufunc.inspect_types = _types_printer(lib, pyfunc, src)


def _types_printer(lib, pyfunc, src):
    funcdef, (_, first, lines, offset) = src.funcdef, src.location
    by_line = names_by_line(funcdef, offset)

    def inspect_types(file=None, signature=None):
        """Print the source with the inferred type of every variable, per signature."""
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
