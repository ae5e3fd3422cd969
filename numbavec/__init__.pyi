# Types of numbavec's public API (PEP 561: the package ships py.typed).
# What the decorators return is typed by target: a numpy.ufunc (UFunc, with
# numbavec's introspection) on cpu and parallel, a cuda ufunc on cuda.
from collections.abc import Callable, Sequence
from typing import Any, Literal, TextIO, TypeAlias, overload

import numpy as np

from numbavec import cache as cache
from numbavec import cuda as cuda
from numbavec import events as events
from numbavec.cuda import CUDAGUFunc, CUDAUFunc

__version__: str
__all__: list[str]

class TypingError(TypeError):
    """A kernel numbavec cannot compile: file:line:col, the line and a caret."""

class Type:
    """A numbavec type: a scalar (float32), or an array of one (float32[:])."""
    @property
    def name(self) -> str: ...
    @property
    def dtype(self) -> np.dtype[Any] | None: ...
    @property
    def ndim(self) -> int: ...
    @property
    def contig(self) -> bool: ...
    def __call__(self, *args: Type | str) -> Signature: ...
    def __getitem__(self, index: Any) -> Type: ...

class Signature:
    """return_type(args...): one loop of a ufunc, or a gufunc's (void)."""
    @property
    def args(self) -> tuple[Type, ...]: ...
    @property
    def return_type(self) -> Type: ...

boolean: Type
bool_: Type
b1: Type
int8: Type
int16: Type
int32: Type
int64: Type
i1: Type
i2: Type
i4: Type
i8: Type
uint8: Type
uint16: Type
uint32: Type
uint64: Type
u1: Type
u2: Type
u4: Type
u8: Type
byte: Type
intp: Type
uintp: Type
float32: Type
float64: Type
f4: Type
f8: Type
double: Type
complex64: Type
complex128: Type
c8: Type
c16: Type
void: Type

# One signature as users write it: 'float32(float32, float32)', a Signature,
# NumPy's 'ff->f', or a gufunc's bare argument list ('f8[:], f8[:]' or a tuple).
SignatureLike: TypeAlias = str | Signature | tuple[Type | str, ...]
Signatures: TypeAlias = SignatureLike | Sequence[SignatureLike]
_HostTarget: TypeAlias = Literal["cpu", "parallel"]
_CudaTarget: TypeAlias = Literal["cuda", "gpu"]
_Kernel: TypeAlias = Callable[..., Any]

class UFunc(np.ufunc):  # type: ignore[misc]  # numpy.ufunc is final in NumPy's stubs
    """What @vectorize and @guvectorize make on cpu and parallel: a real
    numpy.ufunc (isinstance(f, np.ufunc)), with numbavec's introspection.
    At run time isinstance(f, UFunc) is True for numbavec's ufuncs alone."""
    py_func: Callable[..., Any]
    __wrapped__: Callable[..., Any]
    stats: events.Stats  # its compile records (numbavec/events.py)
    def inspect_llvm(self, signature: SignatureLike | None = None) -> Any: ...
    def inspect_asm(self, signature: SignatureLike | None = None) -> Any: ...
    def inspect_types(self, file: TextIO | None = None,
                      signature: SignatureLike | None = None) -> None: ...

class LazyUFunc(UFunc):  # type: ignore[misc]
    """A ufunc made without signatures: compiles a loop per new input types,
    with Numba's DUFunc methods."""
    ufunc: np.ufunc
    def add(self, signature: SignatureLike) -> None: ...
    def disable_compile(self) -> None: ...

class DeviceFunction:
    """@numbavec.jit: a helper kernels inline; from Python, the function."""
    py_func: Callable[..., Any]
    signatures: list[Signature]
    targetoptions: dict[str, Any]
    def __init__(self, pyfunc: Callable[..., Any], signatures: Signatures = ...,
                 options: dict[str, Any] | None = ...) -> None: ...
    def __call__(self, *args: Any, **kwargs: Any) -> Any: ...

@overload
def vectorize(ftylist_or_function: _Kernel | DeviceFunction, /, *,
              target: _HostTarget = ..., identity: Any = ..., cache: bool = ...,
              fastmath: bool = ..., nopython: bool = ..., forceobj: bool = ...,
              boundscheck: bool | None = ...) -> LazyUFunc: ...
@overload
def vectorize(ftylist_or_function: _Kernel | DeviceFunction, /, *, target: _CudaTarget,
              identity: Any = ..., cache: bool = ..., fastmath: bool = ..., nopython: bool = ...,
              forceobj: bool = ..., boundscheck: bool | None = ...) -> CUDAUFunc: ...
@overload  # options only: lazy, as bare @vectorize
def vectorize(*, target: _HostTarget = ..., identity: Any = ..., cache: bool = ...,
              fastmath: bool = ..., nopython: bool = ..., forceobj: bool = ...,
              boundscheck: bool | None = ...
              ) -> Callable[[_Kernel | DeviceFunction], LazyUFunc]: ...
@overload
def vectorize(*, target: _CudaTarget, identity: Any = ..., cache: bool = ...,
              fastmath: bool = ..., nopython: bool = ..., forceobj: bool = ...,
              boundscheck: bool | None = ...
              ) -> Callable[[_Kernel | DeviceFunction], CUDAUFunc]: ...
@overload
def vectorize(ftylist_or_function: Signatures, /, *, target: _HostTarget = ...,
              identity: Any = ..., cache: bool = ..., fastmath: bool = ..., nopython: bool = ...,
              forceobj: bool = ..., boundscheck: bool | None = ...
              ) -> Callable[[_Kernel | DeviceFunction], UFunc]: ...
@overload
def vectorize(ftylist_or_function: Signatures, /, *, target: _CudaTarget,
              identity: Any = ..., cache: bool = ..., fastmath: bool = ..., nopython: bool = ...,
              forceobj: bool = ..., boundscheck: bool | None = ...
              ) -> Callable[[_Kernel | DeviceFunction], CUDAUFunc]: ...
# a target known only at run time (a str variable): either kind
@overload
def vectorize(ftylist_or_function: _Kernel | DeviceFunction, /, *, target: str,
              identity: Any = ..., cache: bool = ..., fastmath: bool = ..., nopython: bool = ...,
              forceobj: bool = ..., boundscheck: bool | None = ...) -> LazyUFunc | CUDAUFunc: ...
@overload
def vectorize(*, target: str, identity: Any = ..., cache: bool = ..., fastmath: bool = ...,
              nopython: bool = ..., forceobj: bool = ..., boundscheck: bool | None = ...
              ) -> Callable[[_Kernel | DeviceFunction], LazyUFunc | CUDAUFunc]: ...
@overload
def vectorize(ftylist_or_function: Signatures, /, *, target: str,
              identity: Any = ..., cache: bool = ..., fastmath: bool = ..., nopython: bool = ...,
              forceobj: bool = ..., boundscheck: bool | None = ...
              ) -> Callable[[_Kernel | DeviceFunction], UFunc | CUDAUFunc]: ...

@overload
def guvectorize(layout: str, /, *, target: _HostTarget = ..., identity: Any = ...,
                cache: bool = ..., fastmath: bool = ..., nopython: bool = ...,
                forceobj: bool = ..., boundscheck: bool = ...,
                writable_args: Sequence[int | str] = ...
                ) -> Callable[[_Kernel | DeviceFunction], LazyUFunc]: ...
@overload
def guvectorize(layout: str, /, *, target: _CudaTarget, identity: Any = ..., cache: bool = ...,
                fastmath: bool = ..., nopython: bool = ..., forceobj: bool = ...,
                boundscheck: bool = ..., writable_args: Sequence[int | str] = ...
                ) -> Callable[[_Kernel | DeviceFunction], CUDAGUFunc]: ...
@overload
def guvectorize(signatures: Signatures, layout: str, /, *, target: _HostTarget = ...,
                identity: Any = ..., cache: bool = ..., fastmath: bool = ...,
                nopython: bool = ..., forceobj: bool = ..., boundscheck: bool = ...,
                writable_args: Sequence[int | str] = ...
                ) -> Callable[[_Kernel | DeviceFunction], UFunc]: ...
@overload
def guvectorize(signatures: Signatures, layout: str, /, *, target: _CudaTarget,
                identity: Any = ..., cache: bool = ..., fastmath: bool = ...,
                nopython: bool = ..., forceobj: bool = ..., boundscheck: bool = ...,
                writable_args: Sequence[int | str] = ...
                ) -> Callable[[_Kernel | DeviceFunction], CUDAGUFunc]: ...
# a target known only at run time (a str variable): either kind
@overload
def guvectorize(layout: str, /, *, target: str, identity: Any = ..., cache: bool = ...,
                fastmath: bool = ..., nopython: bool = ..., forceobj: bool = ...,
                boundscheck: bool = ..., writable_args: Sequence[int | str] = ...
                ) -> Callable[[_Kernel | DeviceFunction], LazyUFunc | CUDAGUFunc]: ...
@overload
def guvectorize(signatures: Signatures, layout: str, /, *, target: str,
                identity: Any = ..., cache: bool = ..., fastmath: bool = ...,
                nopython: bool = ..., forceobj: bool = ..., boundscheck: bool = ...,
                writable_args: Sequence[int | str] = ...
                ) -> Callable[[_Kernel | DeviceFunction], UFunc | CUDAGUFunc]: ...

@overload
def jit(signature_or_function: _Kernel, /, **options: Any) -> DeviceFunction: ...
@overload
def jit(signature_or_function: Signatures | None = None, /, *, device: bool = ...,
        inline: Any = ..., cache: bool = ..., fastmath: Any = ..., nopython: bool = ...,
        forceobj: bool = ..., boundscheck: bool | None = ..., nogil: bool = ...,
        error_model: str = ..., parallel: bool = ..., looplift: bool = ...,
        locals: Any = ..., **options: Any) -> Callable[[_Kernel], DeviceFunction]: ...
@overload
def njit(signature_or_function: _Kernel, /, **options: Any) -> DeviceFunction: ...
@overload
def njit(signature_or_function: Signatures | None = None, /, **options: Any
         ) -> Callable[[_Kernel], DeviceFunction]: ...

def get_num_threads() -> int: ...
def set_num_threads(n: int, /) -> None: ...

# Numba's prange: range (for code written for Numba)
prange: type[range]
