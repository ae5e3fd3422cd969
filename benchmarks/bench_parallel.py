#!/usr/bin/env python3
"""numbavec's parallel target against its cpu target and Numba's, in one run.

Kernels: saxpy ``a*x + y`` on float32 (memory-bound) and ``sin(x)*exp(x) +
sqrt(x)`` on float64 (compute-bound), N = 1 .. 1e7, output preallocated.
Each row times numbavec cpu, numbavec parallel, Numba cpu and Numba parallel
(when ``import numba`` works) alternately, best of k, and reports:

  par/cpu   numbavec parallel time / numbavec cpu time (< 1 is a speed-up);
  speed-up  numbavec cpu time / numbavec parallel time;
  Numba par/cpu  the same ratio for Numba's targets.

Goals (issue 4, on a 2-core machine): compute-bound N=1e7 speed-up >= 1.8;
memory-bound N=1e7 at least the cpu figure; N <= 1e4 par/cpu <= 1.3.

    python3 benchmarks/bench_parallel.py [--quick]
"""
import argparse
import math
import os
import sys
import time

import numpy as np

SIZES = [1, 10, 100, 10**3, 10**4, 10**5, 10**6, 10**7]


def saxpy(a, x, y):
    return a * x + y


def heavy(x):
    return math.sin(x) * math.exp(x) + math.sqrt(x)


KERNELS = {
    "saxpy f32": (saxpy, ["float32(float32, float32, float32)"], "f4", 3),
    "sin*exp+sqrt f64": (heavy, ["float64(float64)"], "f8", 1),
}


def best_of(fn, repeats):
    best = float("inf")
    for _ in range(repeats):
        t = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t)
    return best


def repeats_for(n, quick):
    budget = 0.05 if quick else 0.2        # seconds per implementation
    per = max(n * 2e-9, 2e-6)
    return int(min(max(budget / per, 3), 2000))


def operands(nargs, dtype, n, rng):
    if nargs == 3:
        return (dtype.type(2.5), rng.random(n).astype(dtype), rng.random(n).astype(dtype))
    return (rng.random(n).astype(dtype) * 2,)


def build(quick):
    import numbavec
    impls = {}
    for name, (fn, sigs, _, _) in KERNELS.items():
        impls[name] = {
            "numbavec cpu": numbavec.vectorize(sigs, target="cpu")(fn),
            "numbavec parallel": numbavec.vectorize(sigs, target="parallel")(fn),
        }
        try:
            import numba
            impls[name]["Numba cpu"] = numba.vectorize(sigs, target="cpu")(fn)
            impls[name]["Numba parallel"] = numba.vectorize(sigs, target="parallel")(fn)
        except ImportError:
            pass
    return impls


def fmt_time(t):
    for unit, scale in (("s", 1), ("ms", 1e-3), ("us", 1e-6)):
        if t >= scale:
            return f"{t / scale:7.2f} {unit}"
    return f"{t / 1e-9:7.0f} ns"


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="fewer repeats and sizes")
    args = ap.parse_args()
    import numbavec
    sizes = SIZES[::2] + [SIZES[-1]] if args.quick else SIZES
    rng = np.random.default_rng(0)
    impls = build(args.quick)
    print(f"numbavec {numbavec.__version__}, threads {numbavec._core.get_num_threads()}, "
          f"cores {os.cpu_count()}, Python {sys.version.split()[0]}, NumPy {np.__version__}")
    names = list(next(iter(impls.values())))
    head = "| kernel | N | " + " | ".join(names) + " | par/cpu | speed-up |"
    if "Numba parallel" in names:
        head += " Numba par/cpu |"
    print()
    print(head)
    print("|" + "---|" * (head.count("|") - 1))
    for kname, (fn, sigs, dt, nargs) in KERNELS.items():
        dtype = np.dtype(dt)
        for n in sizes:
            ops = operands(nargs, dtype, n, rng)
            out = np.empty(n, dtype)
            reps = repeats_for(n, args.quick)
            times = {}
            for impl in names:
                f = impls[kname][impl]
                f(*ops, out=out)                   # warm up (and Numba's dispatch)
            for _ in range(3):                     # alternate to share the noise
                for impl in names:
                    f = impls[kname][impl]
                    t = best_of(lambda: f(*ops, out=out), reps)
                    times[impl] = min(times.get(impl, t), t)
            ratio = times["numbavec parallel"] / times["numbavec cpu"]
            row = (f"| {kname} | {n:.0e} | " + " | ".join(fmt_time(times[i]) for i in names)
                   + f" | {ratio:.2f} | {1 / ratio:.2f} |")
            if "Numba parallel" in times:
                row += f" {times['Numba parallel'] / times['Numba cpu']:.2f} |"
            print(row, flush=True)


if __name__ == "__main__":
    main()
