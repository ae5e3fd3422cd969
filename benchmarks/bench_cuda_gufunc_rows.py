"""cuda @guvectorize kernels whose threads each walk rows of their own, on
device-resident data, against the device's copy bandwidth (bytes read plus
bytes written, each once): batched dot products over rows of 16 to 1024
floats and 32 doubles, with fastmath, a row's exp and a row times a scalar
((n)->(n): the noalias copy's 16-byte stores), and a batch of 4x4 matrix
products.  These are the launches the residency rule (at most 64 KiB of the
rows' cache lines an SM), the noalias copy of the body and the L2 hint are
for (docs/DESIGN-NOTES.md, cuda gufuncs).  Each result is checked against
NumPy in float64 first, on an output poisoned with NaN.

GPU only: without one it says so and exits 0.
"""
import math
import sys

import numpy as np

from numbavec import cuda, guvectorize

from bench_cuda_guvectorize import dot, matmul   # the kernels that benchmark times too
from bench_cuda_vectorize import timeit     # best of 3 rounds of reps calls, synchronised


def rowexp(a, out):
    for i in range(a.shape[0]):
        out[i] = math.exp(a[i])


def scale(a, s, out):
    for i in range(a.shape[0]):
        out[i] = a[i] * s[0]


DOT = ("(n),(n)->()", dot)


def cases(rng):
    """(name, layout, kernel, signature, options, inputs, reference, output shape, dtype)"""
    def rows(shape, dtype):
        return rng.random(shape).astype(dtype)

    for r, n in ((10**6, 64), (2 * 10**6, 32), (4 * 10**6, 16), (10**5, 1024)):
        x, y = rows((r, n), np.float32), rows((r, n), np.float32)
        yield (f"dot f4 {r:.0e}x{n}", *DOT, "void(f4[:], f4[:], f4[:])", {}, (x, y),
               (x.astype(np.float64) * y).sum(1), r, np.float32)
    x, y = rows((10**6, 64), np.float32), rows((10**6, 64), np.float32)
    yield ("dot f4 1e+06x64 fastmath", *DOT, "void(f4[:], f4[:], f4[:])", {"fastmath": True},
           (x, y), (x.astype(np.float64) * y).sum(1), 10**6, np.float32)
    x8, y8 = rows((10**6, 32), np.float64), rows((10**6, 32), np.float64)
    yield ("dot f8 1e+06x32", *DOT, "void(f8[:], f8[:], f8[:])", {}, (x8, y8), (x8 * y8).sum(1),
           10**6, np.float64)
    yield ("exp f4 1e+06x64", "(n)->(n)", rowexp, "void(f4[:], f4[:])", {}, (x,),
           np.exp(x.astype(np.float64)), (10**6, 64), np.float32)
    s = np.array([1.5], np.float32)
    yield ("scale f4 1e+06x64", "(n),(m)->(n)", scale, "void(f4[:], f4[:], f4[:])",
           {"boundscheck": False}, (x, s), x.astype(np.float64) * 1.5, (10**6, 64), np.float32)
    a, b = rows((10**6, 4, 4), np.float32), rows((10**6, 4, 4), np.float32)
    yield ("matmul f4 1e+06 4x4", "(m,n),(n,p)->(m,p)", matmul, "void(f4[:,:], f4[:,:], f4[:,:])",
           {"boundscheck": False}, (a, b), a.astype(np.float64) @ b, (10**6, 4, 4), np.float32)


def main():
    if not cuda.is_available():
        print(f"no CUDA GPU: {cuda.unavailable_reason()}; benchmark not run")
        return 0
    src = cuda.device_array(64 * 10**6, np.float32)
    dst = cuda.device_array(64 * 10**6, np.float32)
    t = timeit(lambda: dst.copy_to_device(src), cuda.synchronize, 20)
    copy_bw = 2 * src.nbytes / t / 1e9
    print(f"{'kernel':>26} {'ms':>8} {'GB/s':>8} {'of copy':>8}")
    print(f"{'d2d copy':>26} {t * 1e3:>8.3f} {copy_bw:>8.1f} {1:>8.2f}")
    for name, layout, fn, sig, opts, ins, ref, shape, dtype in cases(np.random.default_rng(1)):
        g = guvectorize([sig], layout, target="cuda", **opts)(fn)
        dins = [cuda.to_device(v) for v in ins]
        dout = cuda.to_device(np.full(shape, np.nan, dtype))
        g(*dins, out=dout)
        np.testing.assert_allclose(dout.copy_to_host(), ref, rtol=1e-4, atol=1e-6)
        moved = sum(v.nbytes for v in ins) + np.dtype(dtype).itemsize * int(np.prod(shape))
        t = timeit(lambda: g(*dins, out=dout), cuda.synchronize, 40)
        bw = moved / t / 1e9
        print(f"{name:>26} {t * 1e3:>8.3f} {bw:>8.1f} {bw / copy_bw:>8.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
