"""numbavec: scalar Python functions compiled by LLVM into real NumPy ufuncs."""
import numpy as _np

try:
    from numbavec import _core
except ImportError as _exc:
    import os as _os

    _here = _os.path.dirname(_os.path.abspath(__file__))
    if not any(n.startswith("_core.") for n in _os.listdir(_here)):
        _root = _os.path.dirname(_here)
        _what = ("you are importing the source checkout at " + _root
                 if _os.path.exists(_os.path.join(_root, "setup.py"))
                 else "the numbavec package at " + _here)
        raise ImportError(
            f"numbavec: {_what}, which has no built extension (numbavec/_core*.so): install it "
            "(pip install .) or build it in place (make inplace), or run from elsewhere"
        ) from None
    raise
from numbavec._core import TypingError
from numbavec._core import (  # noqa: F401  the types, with Numba's names
    Signature, Type,
    boolean, bool_, b1,
    int8, int16, int32, int64, i1, i2, i4, i8,
    uint8, uint16, uint32, uint64, u1, u2, u4, u8, byte,
    intp, uintp,
    float32, float64, f4, f8, double,
    complex64, complex128, c8, c16,
    void,
)

__version__ = "0.1.0"

from numbavec.decorators import DeviceFunction, guvectorize, jit, njit, vectorize  # noqa: E402
from numbavec._core import get_num_threads, set_num_threads  # noqa: E402,F401
from numbavec import cuda, events  # noqa: E402,F401
from numbavec import _threadpool  # noqa: E402

_threadpool.install()   # threadpoolctl's threadpool_limits reaches the parallel pool

# Numba's prange, for code written for it: range (a kernel's loop is its
# element's work; target='parallel' spreads the elements, not the loop)
prange = range



class _UFuncKind(type):
    """isinstance(obj, UFunc) / LazyUFunc: a numpy.ufunc numbavec made (its
    C code holds an Origin), lazy or not; np.add is neither."""

    def __instancecheck__(cls, obj):
        if not isinstance(obj, _np.ufunc):
            return False
        origin = _core._origin_of(obj)
        return origin is not None and (cls is UFunc or not origin.eager())

    def __subclasscheck__(cls, sub):
        return isinstance(sub, type) and type.__subclasscheck__(cls, sub)


class UFunc(metaclass=_UFuncKind):
    """What @vectorize and @guvectorize make on cpu and parallel: a real
    numpy.ufunc with numbavec's introspection (the stubs type it as a
    subclass of numpy.ufunc, which cannot be subclassed at run time).
    ``isinstance(f, numbavec.UFunc)`` is True for numbavec's ufuncs alone."""


class LazyUFunc(UFunc):
    """A UFunc made without signatures (lazy ufuncs, dynamic gufuncs): it
    compiles a loop per new input types, with Numba's DUFunc methods."""



def __getattr__(name):
    # numbavec.cache (the compiled-code cache's tools) after a plain
    # ``import numbavec``, without importing it (hashlib, hmac) at import
    if name == "cache":
        import importlib

        return importlib.import_module("numbavec.cache")
    raise AttributeError(f"module 'numbavec' has no attribute {name!r}")


__all__ = ["vectorize", "guvectorize", "jit", "njit", "cuda", "DeviceFunction", "TypingError",
           "Type", "Signature", "UFunc", "LazyUFunc", "get_num_threads", "set_num_threads",
           "prange"]
