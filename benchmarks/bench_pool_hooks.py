"""Parallel vs serial for the pool's test ufuncs, N = 1 .. 1e7.

Runs the C loops of src/targets/testhooks.c, so the pool and its work
threshold can be checked without the compiler:

    saxpy   float32 a*x+y          memory-bound, the compiler's guess 0.5 ns/element
    heavy   float64 sin*exp+sqrt   compute-bound, guess 20 ns/element

"serial" is the same loop on the cpu target.  Each figure is the best of
several repeats of an autoranged timeit (serial and parallel repeats
interleaved), with a preallocated output.  The
ratio column is serial time / parallel time (> 1: parallel is faster).

    python3 benchmarks/bench_pool_hooks.py [--repeat R] [--max-exp E]
"""
import argparse
import timeit

import numpy as np

from numbavec import _core


def best_times(fns, repeat):
    """Best time per call of each fn, their repeats interleaved so that a
    neighbour's load on the shared cores hits all of them alike."""
    timers = [timeit.Timer(fn) for fn in fns]
    numbers = [t.autorange()[0] for t in timers]
    best = [float("inf")] * len(fns)
    for _ in range(repeat):
        for i, (t, number) in enumerate(zip(timers, numbers)):
            best[i] = min(best[i], t.timeit(number) / number)
    return best


def fmt(seconds):
    for unit, scale in (("s", 1), ("ms", 1e-3), ("us", 1e-6), ("ns", 1e-9)):
        if seconds >= scale:
            return f"{seconds / scale:7.2f} {unit}"
    return f"{seconds / 1e-9:7.2f} ns"


def cases(n):
    rng = np.random.default_rng(0)
    a, x, y = (rng.standard_normal(n).astype(np.float32) for _ in range(3))
    fout = np.empty(n, np.float32)
    h = rng.uniform(-5, 5, n)
    dout = np.empty(n)
    par_s = _core._parallel_test_ufunc("saxpy")
    ser_s = _core._parallel_test_ufunc("serial")
    par_h = _core._parallel_test_ufunc("heavy")
    ser_h = _core._parallel_test_ufunc("heavy_serial")
    return [
        ("saxpy", lambda: ser_s(a, x, y, out=fout), lambda: par_s(a, x, y, out=fout)),
        ("heavy", lambda: ser_h(h, out=dout), lambda: par_h(h, out=dout)),
    ]


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--max-exp", type=int, default=7)
    opts = ap.parse_args()

    # Start the pool first so that its one-time start is not timed.
    _core._parallel_test_ufunc("heavy")(np.ones(10**6))
    st = _core._pool_stats()
    print(f"pool: {st['size']} threads, measured wake+join {st['overhead_ns'] / 1e3:.1f} us")
    print(f"{'kernel':<7} {'N':>9} {'serial':>11} {'parallel':>11} {'ratio':>6}  jobs")
    for e in range(opts.max_exp + 1):
        n = 10**e
        for name, ser, par in cases(n):
            ser()
            par()   # warm up, and let the cost estimate settle
            j0 = _core._pool_stats()["jobs"]
            par()
            used = "pool" if _core._pool_stats()["jobs"] > j0 else "serial"
            t_ser, t_par = best_times([ser, par], opts.repeat)
            print(f"{name:<7} {n:>9} {fmt(t_ser):>11} {fmt(t_par):>11} "
                  f"{t_ser / t_par:6.2f}  {used}")


if __name__ == "__main__":
    main()
