"""numbavec: scalar Python functions compiled by LLVM into real NumPy ufuncs."""
import numpy as _np

from numbavec import _core
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
from numbavec import cuda  # noqa: E402,F401

# For annotations: what the decorators make on cpu and parallel is a numpy.ufunc
# (the stubs, __init__.pyi, add numbavec's introspection to it).
UFunc = LazyUFunc = _np.ufunc

__all__ = ["vectorize", "guvectorize", "jit", "njit", "cuda", "DeviceFunction", "TypingError",
           "Type", "Signature", "UFunc", "LazyUFunc", "get_num_threads", "set_num_threads"]
