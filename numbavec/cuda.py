"""numbavec.cuda: the CUDA target's Python face.

Only device functions are available in this build: ``cuda.jit(device=True)``
returns the same kind of object as ``numbavec.jit``, so helpers written for
Numba's CUDA target inline into numbavec kernels on every target.
"""
from numbavec.decorators import jit as _jit


def jit(func=None, device=False, **opts):
    """``@cuda.jit(device=True)``: a device function (see ``numbavec.jit``)."""
    if not device:
        raise NotImplementedError("CUDA kernels are not available in this build")
    return _jit(func, device=True, **opts)
