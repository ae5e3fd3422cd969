"""Numba's helpers as numbavec compiles them: ``jit``'s forms and options,
a helper's signatures chosen as Numba's dispatcher chooses them, and the
objects Numba's own decorators made, recognised by what they carry.

Numba is never imported here: a Numba dispatcher (``numba.njit``/``jit``)
is an object with a Python function (``py_func``), its options
(``targetoptions``) and its compiled signatures (``nopython_signatures``,
explicit when its compilation is disabled: ``_can_compile`` false); a
DUFunc (``numba.vectorize``) carries its dispatcher (``_dispatcher``), its
loops (``types``) and whether they are fixed (``_frozen``); a jitclass is
a class with ``class_type`` and ``_ctor``, and its instances' type has
``_numba_type_``.  Where one of them is read by a kernel, numbavec/_capture.py
asks here what it is.
"""
import inspect
import re
import warnings
import weakref

import numpy as np

# Numba's jit options (numba.core.cpu.CPUTargetOptions, and jit's own
# arguments).  None changes what a kernel inlines: a helper has no code of
# its own (docs/DESIGN-NOTES.md, "Helpers as Numba writes them").
JIT_OPTIONS = frozenset({
    "locals", "cache", "pipeline_class", "boundscheck", "nopython", "forceobj", "looplift",
    "nogil", "parallel", "fastmath", "error_model", "inline", "forceinline", "debug",
    "no_rewrites", "no_cpython_wrapper", "no_cfunc_wrapper", "_nrt", "_dbg_extend_lifetimes",
    "_dbg_optnone", "device"})


def check_jit_options(options, who):
    """Refuses an unknown option as Numba does (KeyError, its message)."""
    if "target" in options:
        # Numba's deprecated target=: a helper is inlined into kernels of any target
        raise TypeError(f"{who}() got unexpected option(s): target (a helper is inlined into "
                        "each kernel, whatever the kernel's target)")
    unknown = set(options) - JIT_OPTIONS
    if unknown:
        known = sorted(JIT_OPTIONS - {"device"})
        raise KeyError(f"Unrecognized options: {unknown}. Known options are {known}")
    model = options.get("error_model", "python")
    if model not in ("python", "numpy"):
        raise ValueError(f"{who}(): error_model must be 'python' or 'numpy', not {model!r}")
    inline = options.get("inline", "never")
    if not (inline in ("always", "never") or callable(inline)):
        raise ValueError(f"{who}(): inline must be 'always', 'never' or a function, "
                         f"not {inline!r}")
    if options.get("forceobj"):
        if who == "njit":
            warnings.warn("forceobj is set for njit and is ignored", RuntimeWarning, stacklevel=3)
        else:
            raise ValueError("numbavec always compiles in nopython mode; forceobj=True is not "
                             "supported")


# -- Numba's types as numbavec's signature text -------------------------------------

_SCALARS = {"bool": "boolean", "boolean": "boolean", "none": "void", "void": "void",
            **{n: n for n in ("int8", "int16", "int32", "int64", "uint8", "uint16", "uint32",
                              "uint64", "float32", "float64", "complex64", "complex128")}}


def type_text(ty):
    """A Numba type as numbavec spells it ('float64', 'int32[:, :]'), or None."""
    ndim, dtype = getattr(ty, "ndim", None), getattr(ty, "dtype", None)
    if isinstance(ndim, int) and dtype is not None and not isinstance(ty, np.dtype):
        inner = type_text(dtype)
        if ndim < 1 or inner is None or inner == "void":
            return None
        return f"{inner}[{', '.join([':'] * ndim)}]"
    return _SCALARS.get(str(ty))


def signature_text(sig):
    """A Numba Signature (args, return_type) as text, or None (a type
    numbavec cannot write: the helper is then typed per call, unsigned)."""
    args = [type_text(a) for a in sig.args]
    ret = type_text(sig.return_type)
    if ret is None or any(a is None or a == "void" for a in args):
        return None
    return f"{ret}({', '.join(args)})"


def signatures_given(given):
    """jit's first argument as numbavec parses signatures: a list is one
    signature an item, anything else (a str, a Signature, a tuple of
    argument types) one signature, as Numba's jit reads it; Numba's
    Signature objects (``float64(float64)`` of Numba's types) as text."""
    if isinstance(given, list):
        return [_numba_text(g) for g in given]
    return [_numba_text(given)]


def _numba_text(given):
    if hasattr(given, "return_type") and hasattr(given, "args") and \
            type(given).__module__.startswith("numba."):
        text = signature_text(given)
        if text is None:
            raise TypeError(f"numbavec cannot write the signature {given} (its types)")
        return text
    return given


def _from_numba(obj):
    """A signature written with Numba's type objects (``float64(float64)``,
    ``void(float64[:], int64)``, a tuple of them), as the text numbavec
    parses; anything else unchanged.  Recognised by the module of its
    class, so Numba is never imported here."""
    if not type(obj).__module__.startswith("numba."):
        if isinstance(obj, (list, tuple)) and any(
                type(t).__module__.startswith("numba.") for t in obj):
            return type(obj)(_numba_type_name(t) for t in obj)
        return obj
    if hasattr(obj, "args") and hasattr(obj, "return_type"):      # a Signature
        ret = _numba_type_name(obj.return_type)
        return f"{'void' if ret == 'none' else ret}({', '.join(map(_numba_type_name, obj.args))})"
    return _numba_type_name(obj)


def _numba_type_name(t):
    """One of Numba's types as numbavec's type text: an Array as
    ``float64[:, ::1]`` (layout 'C': the last dimension contiguous; 'F' and
    'A' as any strides), a scalar by its name."""
    if not type(t).__module__.startswith("numba."):
        return t
    if hasattr(t, "args") and hasattr(t, "return_type"):
        return _from_numba(t)       # a Signature among others in a tuple
    if hasattr(t, "dtype") and hasattr(t, "ndim") and hasattr(t, "layout"):
        dims = [":"] * t.ndim
        if t.layout == "C" and dims:
            dims[-1] = "::1"
        return f"{_numba_type_name(t.dtype)}[{', '.join(dims)}]"
    return str(t.name)


def signatures_from_numba(signatures):
    """vectorize/guvectorize's signatures written with Numba's type objects, as
    text (a list item by item, a single one too); anything else unchanged.
    jit's own reading of its signatures is signatures_given."""
    if isinstance(signatures, list):
        return [_from_numba(sig) for sig in signatures]
    return _from_numba(signatures)


# -- Numba's objects -------------------------------------------------------------------

def _get(obj, name, default=None):
    try:
        return getattr(obj, name, default)
    except Exception:  # noqa: BLE001 - any object: one that raises is none of these
        return default


def dispatcher_parts(obj):
    """(py_func, signatures, options) of a Numba dispatcher, else None.
    signatures: its compiled ones when its compilation is disabled (explicit
    signatures), else () (typed at each call site, as Numba compiles one
    for each new type)."""
    pyfunc = _get(obj, "py_func")
    options = _get(obj, "targetoptions")
    if not inspect.isfunction(pyfunc) or not isinstance(options, dict) \
            or _get(obj, "nopython_signatures") is None:
        return None
    signatures = ()
    if _get(obj, "_can_compile", True) is False:
        texts = [signature_text(s) for s in _get(obj, "nopython_signatures", ())]
        signatures = () if None in texts else tuple(texts)
    return pyfunc, signatures, dict(options)


def dufunc_parts(obj):
    """(py_func, loops or None, identity) of a Numba DUFunc (numba.vectorize),
    else None.  loops: its signatures when fixed (made with signatures), None
    for a lazy one (its function typed at each call)."""
    pyfunc = _get(_get(obj, "_dispatcher"), "py_func")
    types = _get(obj, "types")
    if not inspect.isfunction(pyfunc) or not isinstance(types, list) \
            or not isinstance(_get(obj, "ufunc"), np.ufunc):
        return None
    from numbavec.decorators import signature_text as loop_text

    loops = tuple(loop_text(t) for t in types) if _get(obj, "_frozen") else None
    return pyfunc, loops, _get(obj, "identity")


def stand_in(obj):
    """What a kernel reads in place of one of Numba's objects, or None:
    ``numba.prange`` is ``range`` (an inlined helper's loop runs in the
    kernel's thread; Numba's prange outside a parallel function is range)."""
    if isinstance(obj, type) and obj.__name__ == "prange" \
            and str(obj.__module__).startswith("numba"):
        return range
    return None


def refusal(obj):
    """The message for a Numba jitclass or one of its instances, or for a
    ufunc that carries no Python function (Numba's vectorize on target
    'parallel' makes a plain one), else None."""
    if isinstance(obj, np.ufunc):
        return _foreign_ufunc(obj)
    if isinstance(obj, type) and hasattr(obj, "class_type") and hasattr(obj, "_ctor"):
        name = obj.__name__
    elif str(_get(type(obj), "_numba_type_", "")).startswith("instance.jitclass."):
        name = f"an instance of {type(obj).__name__}"
    else:
        return None
    return (f"{name} is a Numba jitclass: jitclasses are not supported in numbavec kernels "
            "(pass its fields as arguments, or write its methods as @numbavec.jit helpers)")


def _foreign_ufunc(obj):
    from numbavec._capture import origin_of

    name = obj.__name__
    if getattr(np, name, None) is obj or origin_of(obj) is not None:
        return None         # NumPy's own (the compiler knows them), or numbavec's
    return (f"{name} is a ufunc that carries no Python function to compile (neither "
            "numbavec's nor NumPy's; Numba's vectorize(target='parallel') makes such "
            "ufuncs): make it with numbavec.vectorize, or call its Python function as a helper")


# -- the dispatcher's choice, called from Python ---------------------------------------

_KINDS = ("bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64",
          "float32", "float64", "complex64", "complex128")
# Numba's conversion from each kind (row) to each (column): 0 exact, 1 a
# promotion, 2 safe, 3 unsafe, 4 none (src/compiler/dispatch.c has the same)
_CONVERSION = (
    "0222222222222", "3011133332222", "3301133332222", "3330133333232", "3333033333232",
    "3322201112222", "3332230113232", "3333233013232", "3333333303232", "3333333330122",
    "3333333333032", "4444444444401", "4444444444430")


def _kind_of(value):
    """(kind, ndim) Numba types value with, or None."""
    if isinstance(value, np.ndarray):
        return value.dtype.name, value.ndim
    if isinstance(value, (bool, np.bool_)):
        return "bool", 0
    if isinstance(value, np.generic):
        return value.dtype.name, 0
    if isinstance(value, int):
        return "int64", 0
    if isinstance(value, float):
        return "float64", 0
    if isinstance(value, complex):
        return "complex128", 0
    return None


def _type_kind(t):
    name = t.dtype if t.ndim else t.name
    name = str(name).replace("boolean", "bool")
    return name, t.ndim


def choose(signatures, args):
    """The signature (numbavec Signature objects) Numba's dispatcher takes
    for args: fewest unsafe conversions, then safe, then promotions; the
    first of equals.  None when none fits."""
    best, best_rank = None, None
    got = [_kind_of(a) for a in args]
    for sig in signatures:
        if len(sig.args) != len(args) or None in got:
            continue
        counts = [0, 0, 0, 0]
        for (kind, ndim), t in zip(got, sig.args):
            want, wdim = _type_kind(t)
            if ndim or wdim:
                c = 0 if (kind, ndim) == (want, wdim) else 4
            elif kind in _KINDS and want in _KINDS:
                c = int(_CONVERSION[_KINDS.index(kind)][_KINDS.index(want)])
            else:
                c = 4
            if c == 4:
                break
            counts[c] += 1
        else:
            rank = (counts[3], counts[2], counts[1])
            if best_rank is None or rank < best_rank:
                best, best_rank = sig, rank
    return best


def convert(value, t):
    """value as an argument (or result) of type t: a NumPy scalar of its kind."""
    if t.ndim or t.name in ("void", "None") or isinstance(value, np.ndarray):
        return value
    return np.dtype(str(t.name).replace("boolean", "bool")).type(value)


# Numba's types numbavec's signatures cannot write: a helper whose signatures
# name one is typed per call site, as if it had none
_UNWRITABLE = re.compile(r"unknown type '(UniTuple|Tuple|NamedTuple|NamedUniTuple|optional|"
                         r"Optional|none|Record|unicode_type|string|List|ListType|DictType|"
                         r"pyobject|voidptr|CPointer|FunctionType)'")


def signed(texts, pyfunc):
    """The Signed of a helper's signatures, or None (none given, or one with
    a type numbavec cannot write: docs/DESIGN-NOTES.md)."""
    if not texts:
        return None
    try:
        return Signed(texts, pyfunc)
    except ValueError as exc:
        if _UNWRITABLE.search(str(exc)):
            return None
        raise


class Signed:
    """A helper's signatures as given (texts) and parsed (numbavec Signature
    objects), checked against its function's parameters."""

    __slots__ = ("texts", "parsed")

    def __init__(self, texts, pyfunc):
        from numbavec import _core

        self.parsed = tuple(_core._parse_helper_signatures(list(texts)))
        self.texts = tuple(str(s) for s in self.parsed)
        nparams = len(inspect.signature(pyfunc).parameters)
        for sig in self.parsed:
            if len(sig.args) != nparams:
                raise TypeError(f"signature {sig} has {len(sig.args)} argument(s); "
                                f"{pyfunc.__name__}() takes {nparams}")

    def call(self, pyfunc, args, kwargs):
        """pyfunc called as Numba's dispatcher calls it: the arguments
        converted to the signature it takes, the result to its type."""
        params = inspect.signature(pyfunc)
        bound = params.bind(*args, **kwargs)
        bound.apply_defaults()          # a signature types every parameter
        values = list(bound.arguments.values())
        sig = choose(self.parsed, values)
        if sig is None:
            got = ", ".join(type(a).__name__ for a in values)
            raise TypeError(f"No matching definition for argument type(s) {got}: "
                            f"{pyfunc.__name__}() has the signatures {', '.join(self.texts)}")
        for name, t in zip(bound.arguments, sig.args):
            bound.arguments[name] = convert(bound.arguments[name], t)
        result = pyfunc(*bound.args, **bound.kwargs)
        ret = sig.return_type
        return result if ret is None else convert(result, ret)


# {Numba dispatcher: _DeviceState}: each parsed once, released with it
_states = weakref.WeakKeyDictionary()


def numba_device_state(obj):
    """The _DeviceState (numbavec/decorators.py) a kernel captures a Numba
    dispatcher with, or None when obj is not one.  Any object a kernel reads
    comes here: it is recognised by attribute reads that cannot raise
    before it is hashed (a global whose __hash__ or __eq__ raises is not a
    dispatcher, and the kernel's compiler says what it cannot use)."""
    parts = dispatcher_parts(obj)
    if parts is None:
        return None
    try:
        found = _states.get(obj)
    except Exception:  # noqa: BLE001 - not a weak key after all: made each time
        found = None
    if found is None:
        from numbavec.decorators import _DeviceState

        pyfunc, signatures, options = parts
        found = _DeviceState(pyfunc, signed(signatures, pyfunc), options)
        try:
            _states[obj] = found
        except Exception:  # noqa: BLE001 - as above
            pass
    return found


# {DUFunc: KernelSource}: each parsed once
_sources = weakref.WeakKeyDictionary()


def dufunc_source(obj, pyfunc):
    from numbavec._source import KernelSource

    try:
        found = _sources.get(obj)
    except Exception:  # noqa: BLE001 - not a weak key: parsed each time
        found = None
    if found is None:
        found = KernelSource(pyfunc)
        try:
            _sources[obj] = found
        except Exception:  # noqa: BLE001 - as above
            pass
    return found
