"""cuda @guvectorize against numba-cuda's cuda gufunc and CuPy, side by side
in one run, on device-resident float32 data:

  - a batched dot product (n),(n)->() over 1e6 x 64, against the device's
    copy bandwidth (goal: >= 0.8 of it, counting the bytes read and written);
  - a small matrix product (m,n),(n,p)->(m,p) over a batch of 1e5 4x4;
  - the batched dot product on host arrays: staged (pinned chunks on two
    streams) and whole arrays (`_core._cuda_staging(False)`), against
    numba-cuda on the same host arrays and the host-to-device bandwidth.

GPU only: without one it says so and exits 0.  numba-cuda and CuPy are
optional; a missing one is reported.
"""
import sys
import time

import numpy as np

from numbavec import _core, cuda, guvectorize

from bench_cuda_vectorize import timeit     # best of 3 rounds of reps calls, synchronised


def dot(a, b, out):
    acc = 0.0
    for i in range(a.shape[0]):
        acc += a[i] * b[i]
    out[0] = acc


def matmul(a, b, out):
    for i in range(a.shape[0]):
        for j in range(b.shape[1]):
            acc = 0.0
            for p in range(a.shape[1]):
                acc += a[i, p] * b[p, j]
            out[i, j] = acc


DOT_SIG = ["void(float32[:], float32[:], float32[:])"]
MM_SIG = ["void(float32[:,:], float32[:,:], float32[:,:])"]


def numba_cuda():
    if not hasattr(np, "row_stack"):     # numba-cuda 0.30 still names it; NumPy 2.5 removed it
        np.row_stack = np.vstack
    try:
        from numba import cuda as ncuda, guvectorize as nguv
        return ncuda, (nguv(DOT_SIG, "(n),(n)->()", target="cuda")(dot),
                       nguv(MM_SIG, "(m,n),(n,p)->(m,p)", target="cuda")(matmul))
    except Exception as e:     # noqa: BLE001 - a missing competitor is reported, not fatal
        print(f"# numba-cuda unavailable: {e}")
        return None, None


def main():
    if not cuda.is_available():
        print(f"no CUDA GPU: {cuda.unavailable_reason()}; benchmark not run")
        return 0
    ours = (guvectorize(DOT_SIG, "(n),(n)->()", target="cuda")(dot),
            guvectorize(MM_SIG, "(m,n),(n,p)->(m,p)", target="cuda")(matmul))
    ncuda, theirs = numba_cuda()
    try:
        import cupy
    except ImportError:
        cupy = None
        print("# cupy unavailable")
    rng = np.random.default_rng(0)
    rows, n = 10**6, 64
    x = rng.random((rows, n), dtype=np.float32)
    y = rng.random((rows, n), dtype=np.float32)
    dx, dy, dout = cuda.to_device(x), cuda.to_device(y), cuda.device_array(rows, np.float32)
    copy_src = cuda.device_array(rows * n, np.float32)
    copy_dst = cuda.device_array(rows * n, np.float32)
    t = timeit(lambda: copy_dst.copy_to_device(copy_src), cuda.synchronize, 20)
    copy_bw = 2 * 4 * rows * n / t / 1e9
    moved = 4 * (2 * rows * n + rows)
    print(f"{'kernel':>18} {'who':>12} {'ms':>9} {'GB/s':>8}")
    print(f"{'d2d copy':>18} {'device':>12} {t * 1e3:>9.3f} {copy_bw:>8.1f}")
    t = timeit(lambda: ours[0](dx, dy, out=dout), cuda.synchronize, 20)
    ours_dot = t
    print(f"{'dot 1e6x64':>18} {'numbavec':>12} {t * 1e3:>9.3f} {moved / t / 1e9:>8.1f}")
    np.testing.assert_allclose(dout.copy_to_host(), (x * y).sum(axis=1), rtol=1e-4)
    for label, opts in (("no boundscheck", {"boundscheck": False}),
                        ("fastmath", {"boundscheck": False, "fastmath": True})):
        g = guvectorize(DOT_SIG, "(n),(n)->()", target="cuda", **opts)(dot)
        t = timeit(lambda: g(dx, dy, out=dout), cuda.synchronize, 20)
        print(f"{'dot 1e6x64':>18} {label:>14} {t * 1e3:>9.3f} {moved / t / 1e9:>8.1f}")
        np.testing.assert_allclose(dout.copy_to_host(), (x * y).sum(axis=1), rtol=1e-4)
    if theirs is not None:
        nx, ny, nout = ncuda.to_device(x), ncuda.to_device(y), ncuda.device_array(rows, np.float32)
        t = timeit(lambda: theirs[0](nx, ny, out=nout), ncuda.synchronize, 20)
        print(f"{'dot 1e6x64':>18} {'numba-cuda':>12} {t * 1e3:>9.3f} {moved / t / 1e9:>8.1f}")
        numba_dot = t
    if cupy is not None:
        cx, cy = cupy.asarray(x), cupy.asarray(y)
        t = timeit(lambda: cupy.einsum("ij,ij->i", cx, cy), cupy.cuda.runtime.deviceSynchronize,
                   20)
        print(f"{'dot 1e6x64':>18} {'cupy einsum':>12} {t * 1e3:>9.3f} {moved / t / 1e9:>8.1f}")

    batch = 10**5
    a = rng.random((batch, 4, 4), dtype=np.float32)
    b = rng.random((batch, 4, 4), dtype=np.float32)
    da, db, dc = cuda.to_device(a), cuda.to_device(b), cuda.device_array((batch, 4, 4), np.float32)
    t = timeit(lambda: ours[1](da, db, out=dc), cuda.synchronize, 100)
    ours_mm = t
    print(f"{'matmul 1e5 4x4':>18} {'numbavec':>12} {t * 1e3:>9.3f}")
    np.testing.assert_allclose(dc.copy_to_host(), a @ b, rtol=1e-4)
    if theirs is not None:
        na, nb = ncuda.to_device(a), ncuda.to_device(b)
        nc = ncuda.device_array((batch, 4, 4), np.float32)
        t = timeit(lambda: theirs[1](na, nb, out=nc), ncuda.synchronize, 100)
        print(f"{'matmul 1e5 4x4':>18} {'numba-cuda':>12} {t * 1e3:>9.3f}")
        numba_mm = t
    if cupy is not None:
        ca, cb = cupy.asarray(a), cupy.asarray(b)
        t = timeit(lambda: cupy.matmul(ca, cb), cupy.cuda.runtime.deviceSynchronize, 100)
        print(f"{'matmul 1e5 4x4':>18} {'cupy matmul':>12} {t * 1e3:>9.3f}")

    # host arrays in, host array out: the transfers are the cost
    host_t = timeit(lambda: ours[0](x, y), lambda: None, 3)
    print(f"{'dot host staged':>18} {'numbavec':>12} {host_t * 1e3:>9.3f} "
          f"{moved / host_t / 1e9:>8.1f}")
    np.testing.assert_allclose(ours[0](x, y), (x * y).sum(axis=1), rtol=1e-4)
    was = _core._cuda_staging(False)
    try:
        t = timeit(lambda: ours[0](x, y), lambda: None, 3)
    finally:
        _core._cuda_staging(was)
    print(f"{'dot host whole':>18} {'numbavec':>12} {t * 1e3:>9.3f} {moved / t / 1e9:>8.1f}")
    if theirs is not None:
        t = timeit(lambda: theirs[0](x, y), lambda: None, 3)
        print(f"{'dot host':>18} {'numba-cuda':>12} {t * 1e3:>9.3f} {moved / t / 1e9:>8.1f}")
        numba_host = t
    pinned = cuda.pinned_array(x.shape, np.float32)
    t = timeit(lambda: cuda.to_device(pinned), cuda.synchronize, 3)
    h2d_bw = 4 * rows * n / t / 1e9
    print(f"{'pinned h2d':>18} {'device':>12} {t * 1e3:>9.3f} {h2d_bw:>8.1f}")
    print()
    print(f"dot / d2d copy bandwidth, goal >= 0.80: {moved / ours_dot / 1e9 / copy_bw:.2f}")
    print(f"host dot, staged / pinned h2d bandwidth: {moved / host_t / 1e9 / h2d_bw:.2f}")
    if theirs is not None:
        print(f"numba-cuda time / ours, host dot: {numba_host / host_t:.2f}")
    if theirs is not None:
        print(f"numba-cuda time / ours, dot (goal >= 1): {numba_dot / ours_dot:.2f}")
        print(f"numba-cuda time / ours, matmul (goal >= 1): {numba_mm / ours_mm:.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
