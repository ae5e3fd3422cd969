"""The decorators users write: ``@vectorize`` and ``@guvectorize``.

Everything that compiles, dispatches or moves data is C (``numbavec._core``);
this module only sorts out the arguments, reads the source and decorates the
returned ufunc with its introspection methods.
"""
import functools
import inspect
import re
import sys
import weakref

import numpy as np

from numbavec import _core, _numba_compat, events
from numbavec._capture import Origin
from numbavec._pickle import reduce_device_function
from numbavec._source import KernelSource, file_lines_of, names_by_line

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


class UnrecognizedOptionError(TypeError, KeyError):
    """An option numbavec does not know: a TypeError, as Python's own for an
    unexpected keyword, and a KeyError, as Numba raises ("Unrecognized
    options"), so code written against either catches it."""

    __str__ = Exception.__str__    # KeyError's would quote the message


class NoSuchArgumentError(ValueError, RuntimeError):
    """writable_args names an argument the kernel lacks: a ValueError, and
    the RuntimeError Numba raises there."""


def _check_options(kwargs, allowed=_OPTIONS, who="vectorize"):
    """Refuses options numbavec does not know.  Which targets exist and what
    each makes is the C side's to say (src/targets/cpu.c, tg_for)."""
    unknown = set(kwargs) - allowed
    if unknown:
        raise UnrecognizedOptionError(
            f"{who}() got unexpected option(s): {', '.join(sorted(unknown))} "
            f"(Unrecognized options; it takes {', '.join(sorted(allowed))})")
    target = kwargs.get("target", "cpu")
    if not isinstance(target, str):
        raise TypeError(f"{who}(): target must be a str ('cpu', 'parallel', ...), "
                        f"not {type(target).__name__}")
    if kwargs.get("forceobj"):
        raise ValueError("numbavec always compiles in nopython mode; forceobj=True is not supported")
    identity = kwargs.get("identity")
    if isinstance(identity, str) and identity != "reorderable":
        # before any signature compiles, as Numba checks it: its error comes first
        raise ValueError(f"identity must be None, 'reorderable' or a number, not {identity!r}")
    return target


def _python_function(pyfunc):
    """What a factory compiles: a Python function, or the one behind a
    device function (``vectorize(sigs)(numbavec.jit(f))``, as Numba allows)
    or a Numba dispatcher (``vectorize(sigs)(numba.njit(f))``)."""
    if isinstance(pyfunc, DeviceFunction):
        return pyfunc.py_func
    parts = None if inspect.isfunction(pyfunc) else _numba_compat.dispatcher_parts(pyfunc)
    return parts[0] if parts is not None else pyfunc


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
    if _python_function(ftylist_or_function) is not ftylist_or_function \
            or inspect.isfunction(ftylist_or_function):
        return _build(_python_function(ftylist_or_function), (), target, kwargs)
    signatures = _numba_compat.signatures_from_numba(ftylist_or_function)

    def decorate(pyfunc, captured=None):
        return _build(_python_function(pyfunc), signatures, target, kwargs, captured)

    return decorate


def _function_cache(origin, target, kwargs, **more):
    """A FunctionCache when cache=True, else None.  Its key holds every
    option that changes the code: more are a factory's own (a gufunc's
    layout, boundscheck and writable_args)."""
    if not kwargs.get("cache"):
        return None
    from numbavec.cache import FunctionCache

    options = {"identity": kwargs.get("identity"),
               "fastmath": bool(kwargs.get("fastmath", False)), **more}
    return FunctionCache(target, options, f"{origin.module}.{origin.qualname}",
                         origin.src.location[0])


def _build(pyfunc, signatures, target, kwargs, captured=None):
    """What vectorize makes on target: compiled now for the signatures, or on
    call for the types it meets (none given: a lazy ufunc, which compiles
    inside NumPy's own dispatch).  captured: what it compiles from, fixed
    already (an object received by pickle)."""
    src, common = _kernel(pyfunc, kwargs)
    origin = Origin("vectorize", (signatures,), kwargs, pyfunc, src, captured)
    obj = _core.vectorize(pyfunc, src.funcdef, src.location, signatures, target=target,
                          nin=_arity(pyfunc), cache=_function_cache(origin, target, kwargs),
                          origin=origin, **common)
    return _decorate(obj, origin)


def _decorate(obj, origin):
    """numbavec's introspection (py_func, inspect_llvm, inspect_asm,
    inspect_types, inspect_ptx, and stats: numbavec/events.py) on what a factory made: a NumPy ufunc
    carries it as attributes (its code: the Library behind it); an object of
    numbavec's own answers for itself, through these attributes so that
    every spelling of a signature is understood.  A lazy ufunc gets
    Numba's DUFunc surface (``ufunc``, ``add``, ``disable_compile``).
    Every object says where it was defined, as the function does
    (``__module__``, ``__qualname__``, ``__wrapped__``).  None of these
    is read back by numbavec: what a kernel calling it inlines, what the
    cache keys and what pickling ships come from its Origin, which its code
    holds (numbavec/_capture.py), so rebinding them changes none of it."""
    pyfunc, src = origin.py_func, origin.src
    is_ufunc = isinstance(obj, np.ufunc)
    code = _core._code_of(obj) if is_ufunc else obj
    gufunc = origin.factory == "guvectorize"
    if "py_func" not in dir(type(obj)):
        obj.py_func = pyfunc
    for name in ("inspect_llvm", "inspect_asm", "inspect_ptx"):
        method = getattr(code, name, None)
        if method is not None:
            setattr(obj, name, _any_spelling(method, gufunc))
    obj.inspect_types = _types_printer(code, pyfunc, src, gufunc)
    if is_ufunc and (gufunc or not origin.eager()) and pyfunc.__doc__ is not None:
        obj.__doc__ = pyfunc.__doc__    # as Numba's GUFunc and DUFunc: the kernel's own
    if gufunc:
        obj.is_dynamic = not origin.eager()
    if is_ufunc and not origin.eager():
        obj.ufunc = obj
        obj.add = _lazy_method(obj, _core._lazy_add)
        obj.disable_compile = _lazy_method(obj, _core._lazy_disable)
    obj.__module__ = origin.module
    obj.__qualname__ = origin.qualname
    obj.__wrapped__ = pyfunc
    obj.stats = events.Stats(events.records_of(origin))
    return obj


def _lazy_method(ufunc, function):
    """A lazy ufunc's add(sig) or disable_compile(), Numba's DUFunc methods."""
    def method(*args):
        return function(ufunc, *args)
    method.__name__ = function.__name__.replace("_lazy_", "").replace("disable", "disable_compile")
    method.__doc__ = ("Compile one more signature now." if function is _core._lazy_add else
                      "Compile no new loops: unknown types raise NumPy's no-loop TypeError.")
    return method


# NumPy's spelling of a loop, as in ufunc.types: 'ff->f', 'dd->d'
_TYPE_CHARS = re.compile(r"([?bBhHiIlLqQefdgFDG]*)->([?bBhHiIlLqQefdgFDG]+)")


def signature_text(signature, gufunc=False):
    """A signature as numbavec parses it, from any spelling users take from
    somewhere: a string, a Signature, or an entry of ``f.types`` ('ff->f');
    the loop's types only decide which compiled signature it names."""
    if isinstance(signature, str):
        found = _TYPE_CHARS.fullmatch(signature.replace(" ", ""))
        if found:
            names = [np.dtype(c).name.replace("bool", "boolean") for c in found[1] + found[2]]
            nin = len(found[1])
            if gufunc:
                return f"void({', '.join(names)})"
            return f"{names[nin]}({', '.join(names[:nin])})"
    return signature


def _any_spelling(method, gufunc):
    @functools.wraps(method)
    def inspect_signature(signature=None, *args, **kwargs):
        if signature is not None:
            signature = signature_text(signature, gufunc)
        return method(signature, *args, **kwargs)
    return inspect_signature


def _types_printer(lib, pyfunc, src, gufunc):
    funcdef, (_, first, lines, offset) = src.funcdef, src.location

    def inspect_types(file=None, signature=None):
        """Print the source with the inferred type of every variable, per signature."""
        by_line = names_by_line(funcdef, offset)   # here, not at decoration
        out = file if file is not None else sys.stdout
        types = lib.variable_types() if signature is None else {
            str(signature): lib.variable_types(signature_text(signature, gufunc))}
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
    inlined.  What the kernel inlines is what the kernel's capture took of
    it (numbavec/_capture.py): its source, parsed once (at the first
    kernel that reads it) and kept privately, and the values its names and
    defaults hold when that kernel captures them.

    Given signatures (``numbavec.jit(['f8(f8)', 'f4(f4)'])``), a call,
    in a kernel or from Python, takes the one Numba's dispatcher would
    take: its arguments converted to it, its result of its return type.
    """

    def __init__(self, pyfunc, signatures=(), options=None):
        if not inspect.isfunction(pyfunc):
            raise TypeError(f"numbavec.jit decorates a Python function, not {pyfunc!r}")
        _devices[self] = _DeviceState(pyfunc, _numba_compat.signed(signatures, pyfunc), options)
        functools.update_wrapper(self, pyfunc)

    @property
    def py_func(self):
        """The Python function, as decorated."""
        return _devices[self].py_func

    @property
    def signatures(self):
        """The signatures given (numbavec Signature objects), or []."""
        signed = _devices[self].signed
        return list(signed.parsed) if signed is not None else []

    @property
    def targetoptions(self):
        """The options given (accepted; docs/DESIGN-NOTES.md says what each does)."""
        return dict(_devices[self].options)

    def __call__(self, *args, **kwargs):
        state = _devices[self]
        if state.signed is not None:
            return state.signed.call(state.py_func, args, kwargs)
        return state.py_func(*args, **kwargs)

    def __repr__(self):
        return f"<numbavec device function {_devices[self].py_func.__qualname__}>"

    def __reduce__(self):
        return reduce_device_function(self, _devices[self])


class _DeviceState:
    """What a device function keeps out of reach of its attributes: its
    function and code as decorated, and its source: its file's lines as
    they were at decoration (a list linecache holds anyway), parsed at the
    first kernel that reads it; a file edited afterwards changes nothing."""

    __slots__ = ("py_func", "code", "signed", "options", "_lines", "_source")

    def __init__(self, pyfunc, signed=None, options=None):
        self.py_func, self.code, self._source = pyfunc, pyfunc.__code__, None
        self.signed, self.options = signed, dict(options or {})
        self._lines = file_lines_of(pyfunc)

    def source(self):
        if self._source is None:
            self._source = KernelSource(self.py_func, self._lines)
        return self._source

    def capture(self, capturer):
        """Its Captured in a kernel's capture (numbavec/_capture.py)."""
        src = self.source()
        c = capturer.function(id(self), self.py_func, self.code, src.funcdef, src.location, self)
        c.signatures = self.signed.texts if self.signed is not None else ()
        return c


# {DeviceFunction: _DeviceState}: held here, released with the object
_devices = weakref.WeakKeyDictionary()


def device_state(obj):
    """The _DeviceState of a device function, or None for any other object."""
    return _devices.get(obj) if isinstance(obj, DeviceFunction) else None


def jit(signature_or_function=None, **options):
    """Mark a scalar helper as a device function, in Numba's forms:
    ``@jit``, ``@jit(...options)``, ``@jit('f8(f8)')``,
    ``@jit(['f8(f8)', 'f4(f4)'], nogil=True, cache=True)``.  Kernels
    inline it at each call site; from Python it stays a call of the
    original function.  With signatures, a call takes the one Numba's
    dispatcher would (the arguments converted to it, the result of its
    type); a call none fits is a TypingError naming them.  Every option
    Numba's jit takes is accepted; none changes the inlined code (it
    follows the calling kernel's fastmath and boundscheck): see
    docs/DESIGN-NOTES.md, "Helpers as Numba writes them".  An unknown one
    is Numba's KeyError."""
    return _jit(signature_or_function, options, "jit")


def njit(*args, **options):
    """``jit`` (numbavec compiles nopython always), under Numba's other name."""
    return _jit(args[0] if args else None, options, "njit")


def _jit(given, options, who):
    _numba_compat.check_jit_options(options, who)
    if inspect.isfunction(given):
        return DeviceFunction(given, (), options)
    if given is None:
        signatures = ()
    elif isinstance(given, (str, list, tuple)) or hasattr(given, "return_type"):
        signatures = _numba_compat.signatures_given(given)
    else:
        raise TypeError(f"numbavec.{who} decorates a Python function, not {given!r}")

    def decorate(func):
        return DeviceFunction(func, signatures, options)

    return decorate


_GU_OPTIONS = _OPTIONS | {"writable_args"}


def guvectorize(*args, **kwargs):
    """Compile a kernel over arrays into a NumPy generalized ufunc.

    ``@guvectorize(signatures, layout, target='cpu')``: ``signatures`` as for
    vectorize but returning void (``'void(float64[:], float64, float64[:])'``
    or the argument tuple ``'(float64[:], float64[:])'``), ``layout`` a NumPy
    gufunc signature such as ``'(n),()->(n)'``.  A layout without ``->`` has
    no outputs: the kernel writes into its inputs, and the writes reach the
    caller's arrays.  A layout alone (``@guvectorize('(n),()->(n)')``) makes
    a dynamic gufunc: a loop is compiled for each new combination of input
    dtypes (a Python number promoted only within its kind: ``3`` beside
    float arrays is int64), and an output the call gives no type
    (``dtype=``) takes the type the kernel stores into it.  Options: ``target`` ('cpu', 'parallel', or
    'cuda'/'gpu': a cuda gufunc that broadcasts as NumPy's, on host or
    device arrays), ``identity``, ``writable_args`` (indices or
    names of inputs the kernel writes; inputs it assigns to are writable
    anyway),
    ``fastmath``, ``boundscheck`` (default True: an index out of bounds
    raises IndexError), ``nopython`` (accepted) and ``cache`` (machine code
    kept on disk, as for vectorize).  Returns a real ``numpy.ufunc`` (on
    cpu and parallel).
    """
    if len(args) <= 1 and "layout" in kwargs:
        args = (args[0] if args else (), kwargs.pop("layout"))
    if len(args) == 1 and isinstance(args[0], str) and "(" in args[0] \
            and "[" not in args[0]:
        args = ((), args[0])    # a layout alone: a dynamic gufunc (Numba's form)
    if len(args) != 2:
        raise TypeError("guvectorize(signatures, layout, **options) needs signatures and a "
                        "layout, e.g. guvectorize(['void(f8[:], f8[:])'], '(n)->(n)')")
    signatures, layout = _numba_compat.signatures_from_numba(args[0]), args[1]
    if inspect.isfunction(signatures):
        raise TypeError("guvectorize needs signatures and a layout: "
                        "@guvectorize(['void(f8[:], f8[:])'], '(n)->(n)')")
    target = _check_options(kwargs, _GU_OPTIONS, "guvectorize")

    def decorate(pyfunc, captured=None):
        pyfunc = _python_function(pyfunc)
        src, common = _kernel(pyfunc, kwargs, "guvectorize")
        writable = _writable_indices(pyfunc, kwargs.get("writable_args", ()))
        boundscheck = bool(kwargs.get("boundscheck", True))
        origin = Origin("guvectorize", (signatures, layout), kwargs, pyfunc, src, captured)
        cache = _function_cache(origin, target, kwargs, layout=str(layout),
                                boundscheck=boundscheck, writable_args=writable)
        obj = _core.guvectorize(
            pyfunc, src.funcdef, src.location, signatures, layout, target=target,
            writable_args=writable, boundscheck=boundscheck, cache=cache, origin=origin,
            **common)
        return _decorate(obj, origin)

    return decorate


def _writable_indices(pyfunc, writable):
    """writable_args as indices: names are looked up among pyfunc's parameters."""
    params = list(inspect.signature(pyfunc).parameters)
    out = []
    for w in writable:
        if isinstance(w, str):
            if w not in params:
                raise NoSuchArgumentError(f"writable_args: {pyfunc.__name__}() has no argument {w!r}")
            w = params.index(w)
        out.append(w)
    return tuple(out)
