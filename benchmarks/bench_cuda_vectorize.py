"""cuda @vectorize against numba-cuda, CuPy's ElementwiseKernel and the
device's limits (device-to-device copy bandwidth, a bare launch).

GPU only: without one it says so and exits 0.  Goals (issue 8): N=1e8
device-resident saxpy >= 90% of copy bandwidth; N=1 device call <= 5 us;
host-array N=1e8 >= 2x numba-cuda.  Host-array calls are timed staged
(pinned buffers in chunks on two streams, the default) and unstaged
(``_core._cuda_staging(False)``: whole-array pageable copies), so the
table shows what the pipeline buys.  The last lines compare with the goals.
"""
import math
import sys
import time

import numpy as np

from numbavec import _core, cuda, vectorize

SQRT_2PI = np.float32((2 * math.pi) ** 0.5)


def saxpy(a, x, y):
    return a * x + y


def gaussian_pdf(x, mean, sigma):
    return math.exp(-0.5 * ((x - mean) / sigma) ** 2) / (sigma * SQRT_2PI)


def identity(x):
    return x


def timeit(fn, sync, reps):
    fn()
    sync()
    best = float("inf")
    for _ in range(3):
        t0 = time.perf_counter()
        for _ in range(reps):
            fn()
        sync()
        best = min(best, (time.perf_counter() - t0) / reps)
    return best


def competitors():
    out = {}
    if not hasattr(np, "row_stack"):     # numba-cuda 0.30 still names it; NumPy 2.5 removed it
        np.row_stack = np.vstack
    try:
        from numba import vectorize as nvec
        out["numba-cuda"] = (nvec(["float32(float32, float32, float32)"], target="cuda")(saxpy),
                             nvec(["float32(float32, float32, float32)"], target="cuda")(gaussian_pdf))
    except Exception as e:     # noqa: BLE001 - a missing competitor is reported, not fatal
        print(f"# numba-cuda unavailable: {e}")
    try:
        import cupy
        out["cupy"] = (
            cupy.ElementwiseKernel("float32 a, float32 x, float32 y", "float32 r", "r = a * x + y",
                                   "saxpy"),
            cupy.ElementwiseKernel("float32 x, float32 m, float32 s", "float32 r",
                                   f"r = expf(-0.5f*((x-m)/s)*((x-m)/s)) / (s*{float(SQRT_2PI)}f)",
                                   "gpdf"))
    except Exception as e:     # noqa: BLE001
        print(f"# cupy unavailable: {e}")
    return out


def one_element_calls(f, label):
    """N=1 saxpy on device arrays, per stream kind: what a small call costs
    and how much of it is the launch's own (a bare cuLaunchKernel of a no-op
    kernel, repeated from C, on the same stream)."""
    from numbavec import _core
    info = _core._cuda_detect()["devices"][0]
    ptx = cuda.compile_ptx(identity, "float32(float32)",
                           arch="sm_%d%d" % info["compute_capability"])
    mod = _core._cuda_load_ptx(ptx)
    x = np.ones(1, np.float32)
    dx, dy, dout = cuda.to_device(x), cuda.to_device(x), cuda.device_array(1, np.float32)
    mine = cuda.stream()
    for sname, stream in (("legacy default", None), ("per-thread default", 2),
                          ("a Stream", mine)):
        t = timeit(lambda: f(np.float32(2.0), dx, dy, out=dout, stream=stream),
                   cuda.synchronize, 2000)
        n = 20000
        mod.launch("nv_identity_c64", 1, 32, dx, 0, 0, dout, 1, stream=stream)
        cuda.synchronize()
        t0 = time.perf_counter()
        mod.launch("nv_identity_c64", 1, 32, dx, 0, 0, dout, 1, stream=stream, repeat=n)
        cuda.synchronize()
        bare = (time.perf_counter() - t0) / n
        print(f"# N=1 saxpy ({label}), {sname:>18}: {t * 1e6:6.2f} us per call; "
              f"bare launch {bare * 1e6:5.2f} us")


def main():
    if not cuda.is_available():
        print(f"no CUDA GPU: {cuda.unavailable_reason()}; benchmark not run")
        return 0
    ours = (vectorize(["float32(float32, float32, float32)"], target="cuda")(saxpy),
            vectorize(["float32(float32, float32, float32)"], target="cuda")(gaussian_pdf))
    one_element_calls(ours[0], "alone")
    others = competitors()
    one_element_calls(ours[0], "numba-cuda and CuPy loaded")
    sync = cuda.synchronize
    print(f"{'N':>10} {'kernel':>8} {'who':>12} {'us/call':>10} {'GB/s':>8}")
    copy_bw = None
    goals = {}
    for n in [1, 10**3, 10**5, 10**6, 10**7, 10**8]:
        x = np.random.rand(n).astype(np.float32)
        dx, dy, dout = cuda.to_device(x), cuda.to_device(x), cuda.device_array(n, np.float32)
        dcopy = cuda.device_array(n, np.float32)
        t = timeit(lambda: dcopy.copy_to_device(dx), sync, 20 if n > 10**6 else 200)
        copy_bw = 2 * 4 * n / t / 1e9
        print(f"{n:>10} {'d2d copy':>8} {'device':>12} {t * 1e6:>10.2f} {copy_bw:>8.1f}")
        for name, k in (("saxpy", 0), ("gpdf", 1)):
            args = (np.float32(2.0), dx, dy) if k == 0 else (dx, np.float32(0), np.float32(1))
            t = timeit(lambda: ours[k](*args, out=dout), sync, 20 if n > 10**6 else 200)
            print(f"{n:>10} {name:>8} {'numbavec':>12} {t * 1e6:>10.2f} {3 * 4 * n / t / 1e9:>8.1f}")
            if k == 0 and n == 1:
                goals["N=1 device call (us), goal <= 5"] = t * 1e6
            if k == 0 and n == 10**8:
                goals["N=1e8 saxpy / d2d copy bandwidth, goal >= 0.90"] = \
                    3 * 4 * n / t / 1e9 / copy_bw
            if "numba-cuda" in others:
                from numba import cuda as ncuda
                nx, ny, nout = ncuda.to_device(x), ncuda.to_device(x), ncuda.device_array_like(x)
                nargs = (np.float32(2.0), nx, ny) if k == 0 else (nx, np.float32(0), np.float32(1))
                t = timeit(lambda: others["numba-cuda"][k](*nargs, out=nout), ncuda.synchronize,
                           20 if n > 10**6 else 200)
                print(f"{n:>10} {name:>8} {'numba-cuda':>12} {t * 1e6:>10.2f}"
                      f" {3 * 4 * n / t / 1e9:>8.1f}")
            if "cupy" in others:
                import cupy
                cx, cout = cupy.asarray(x), cupy.empty(n, cupy.float32)
                cargs = (np.float32(2.0), cx, cx) if k == 0 else (cx, np.float32(0), np.float32(1))
                t = timeit(lambda: others["cupy"][k](*cargs, cout),
                           cupy.cuda.runtime.deviceSynchronize, 20 if n > 10**6 else 200)
                print(f"{n:>10} {name:>8} {'cupy':>12} {t * 1e6:>10.2f}"
                      f" {3 * 4 * n / t / 1e9:>8.1f}")
        if n >= 10**6:
            y = np.random.rand(n).astype(np.float32)
            host = timeit(lambda: ours[0](np.float32(2.0), x, y), lambda: None, 3)
            print(f"{n:>10} {'saxpy':>8} {'numbavec host':>12} {host * 1e6:>10.2f}"
                  f" {3 * 4 * n / host / 1e9:>8.1f}")
            was = _core._cuda_staging(False)
            t = timeit(lambda: ours[0](np.float32(2.0), x, y), lambda: None, 3)
            _core._cuda_staging(was)
            print(f"{n:>10} {'saxpy':>8} {'unstaged':>12} {t * 1e6:>10.2f}"
                  f" {3 * 4 * n / t / 1e9:>8.1f}")
            if "numba-cuda" in others:
                t = timeit(lambda: others["numba-cuda"][0](np.float32(2.0), x, y), lambda: None, 3)
                print(f"{n:>10} {'saxpy':>8} {'numba host':>12} {t * 1e6:>10.2f}"
                      f" {3 * 4 * n / t / 1e9:>8.1f}")
                if n == 10**8:
                    goals["N=1e8 host arrays, numba-cuda time / ours, goal >= 2"] = t / host
    print()
    for what, v in goals.items():
        print(f"{what}: {v:.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
