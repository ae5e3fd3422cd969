"""numbavec.cuda: numbavec's own GPU runtime (driver, device arrays, streams)
and PTX generation.

Everything here is C (``numbavec._core``); importing needs no CUDA.  Without
a driver or a device, :func:`is_available` is False and every function that
needs the GPU raises :class:`CudaSupportError` saying what is missing.  PTX
generation (:func:`compile_ptx`) needs only the CUDA toolkit's libdevice
(and libNVVM, if present), not a GPU.
"""
import functools

import numpy as np

import inspect

from numbavec import _core
from numbavec._capture import capture_function
from numbavec._source import KernelSource
from numbavec.decorators import DeviceFunction
from numbavec.decorators import jit as _device_jit

CudaSupportError = _core.CudaSupportError
CudaError = _core.CudaError
DeviceNDArray = _core.DeviceNDArray
CUDAUFunc = _core.CUDAUFunc      # what @vectorize(target='cuda') makes
CUDAGUFunc = _core.CUDAGUFunc    # what @guvectorize(target='cuda') makes
Stream = _core.CudaStream
Event = _core.CudaEvent

to_device = _core._cuda_to_device
device_array = _core._cuda_device_array
device_array_like = _core._cuda_device_array_like
pinned_array = _core._cuda_pinned_array
as_cuda_array = _core._cuda_as_cuda_array
synchronize = _core._cuda_synchronize

__all__ = [
    "CudaSupportError", "CudaError", "DeviceNDArray", "CUDAUFunc", "CUDAGUFunc", "Stream", "Event",
    "is_available", "detect", "to_device", "device_array", "device_array_like",
    "pinned_array", "as_cuda_array", "is_cuda_array", "stream", "default_stream",
    "event", "synchronize", "mem_info", "compile_ptx", "toolkit_info", "jit",
]


def jit(func=None, device=False, **opts):
    """``@cuda.jit(device=True)``: a device function, the same object as
    ``numbavec.jit`` makes, so helpers written for Numba's CUDA target inline
    into numbavec kernels on every target.  CUDA kernels (device=False) are
    not available in this build."""
    if not device:
        raise NotImplementedError("CUDA kernels (@cuda.jit without device=True) are not "
                                  "available in this build")
    return _device_jit(func, device=True, **opts)


def is_available():
    """True when the CUDA driver loads and reports at least one device."""
    return _core._cuda_is_available()


def unavailable_reason():
    """Why CUDA cannot be used here (a str), or None when it can."""
    return _core._cuda_unavailable_reason()


def stream():
    """A new CUDA stream (destroyed when collected, after its queued work)."""
    return _core._cuda_stream()


def default_stream():
    """The legacy default stream, as the handle 0."""
    return 0


def event(timing=True):
    """A new CUDA event; ``a.elapsed_time(b)`` gives milliseconds from a to b."""
    return _core._cuda_event(timing)


def mem_info():
    """(free, total) bytes of device memory, as the driver reports them."""
    return _core._cuda_mem_info()


def is_cuda_array(obj):
    """True for objects exporting ``__cuda_array_interface__`` (or ours)."""
    return isinstance(obj, DeviceNDArray) or hasattr(obj, "__cuda_array_interface__")


def toolkit_info():
    """The libNVVM and libdevice found (paths and versions); never raises."""
    return _core._cuda_toolkit()


def detect():
    """Print the driver, the devices and the toolkit pieces found; True when a
    device is usable (as numba.cuda.detect does)."""
    tk = toolkit_info()
    print(f"libNVVM:   {tk['libnvvm'] or 'not found'}"
          + (f" (NVVM {tk['nvvm_version'][0]}.{tk['nvvm_version'][1]})"
             if tk["nvvm_version"] else ""))
    print(f"libdevice: {tk['libdevice'] or 'not found'}")
    if not is_available():
        print(f"CUDA driver: {unavailable_reason()}")
        return False
    info = _core._cuda_detect()
    major, minor = info["driver_version"]
    print(f"CUDA driver {major}.{minor}; {len(info['devices'])} device(s):")
    for d in info["devices"]:
        cc = d["compute_capability"]
        print(f"  [{d['index']}] {d['name']}  sm_{cc[0]}{cc[1]}  "
              f"{d['multiprocessors']} SMs  {d['total_memory'] / 2**30:.1f} GiB")
    return True


def compile_ptx(pyfunc, signature, arch="sm_90", backend=None, fastmath=False):
    """PTX text of a grid-stride kernel ``out[i] = pyfunc(x0[i], ...)`` for one
    scalar signature, e.g. ``compile_ptx(f, 'float32(float32, float32)')``.

    ``backend`` is 'nvvm' (libNVVM), 'llvm' (LLVM's NVPTX back end) or None
    (NUMBAVEC_CUDA_BACKEND, else libNVVM when found).  Needs no GPU.
    pyfunc is a Python function (or a ``numbavec.jit`` device function);
    anything else is a TypeError.
    """
    if isinstance(pyfunc, DeviceFunction):
        pyfunc = pyfunc.py_func
    if not inspect.isfunction(pyfunc):
        raise TypeError(f"compile_ptx compiles a Python function, not {pyfunc!r}")
    src = KernelSource(pyfunc)
    # what the kernel reads, taken now: the function the compiler resolves names in
    env = capture_function(pyfunc, src).env()
    return _core._cuda_ptx(env, src.funcdef, src.location, signature, arch=arch,
                           backend=backend, fastmath=fastmath)


def _identity(x):
    return x


@functools.lru_cache(maxsize=None)
def _cast_ufunc(src, dst):
    """The cuda ufunc ``dst(src)`` returning its argument: NumPy's conversion
    from dtype src to dst, any shape and strides.  cuda ufunc calls use it
    for device operands of another dtype than the loop's (compiled on first
    use, then kept)."""
    from numbavec.decorators import vectorize

    sig = f"{np.dtype(dst).name}({np.dtype(src).name})"
    return vectorize([sig], target="cuda")(_identity)
