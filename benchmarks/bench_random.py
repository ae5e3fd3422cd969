#!/usr/bin/env python3
"""np.random in kernels, numbavec against Numba, one run.

Both compilers draw NumPy's legacy RandomState numbers from a generator per
thread, so a kernel that seeds gives the same numbers under both: the
gufuncs below seed once per row and draw the row, and their results are
checked equal before anything is timed.  The ufuncs draw without a seed
(each element one draw from the thread's stream), timed only.

- row_random, row_uniform, row_normal, row_randint: a gufunc "(),(n)" that
  seeds with its row's seed and fills 2000 rows of 1000;
- random, normal, randint: a ufunc over 2e6 elements, x + a draw.

Prints the best of --repeat calls, and Numba's time over numbavec's (above
1: numbavec is faster), cpu target and parallel.

    PYTHONPATH=. python3 benchmarks/bench_random.py [--repeat 15] [--target cpu,parallel]
"""
import argparse
import os
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, ".."))
import numbavec  # noqa: E402
from timing import best  # noqa: E402

try:
    import numba
except Exception:  # noqa: BLE001 - Numba is optional
    numba = None


def row_random(seed, out):
    np.random.seed(seed)
    for i in range(out.shape[0]):
        out[i] = np.random.random()


def row_uniform(seed, out):
    np.random.seed(seed)
    for i in range(out.shape[0]):
        out[i] = np.random.uniform(-2.0, 3.0)


def row_normal(seed, out):
    np.random.seed(seed)
    for i in range(out.shape[0]):
        out[i] = np.random.normal(1.0, 0.5)


def row_randint(seed, out):
    np.random.seed(seed)
    for i in range(out.shape[0]):
        out[i] = np.random.randint(0, 1000)


def plus_random(x):
    return x + np.random.random()


def plus_normal(x):
    return x + np.random.normal()


def plus_randint(x):
    return x + np.random.randint(0, 1000)


ROWS = {"row_random": (row_random, "float64"), "row_uniform": (row_uniform, "float64"),
        "row_normal": (row_normal, "float64"), "row_randint": (row_randint, "int64")}
ELEMENTS = {"random": (plus_random, "float64"), "normal": (plus_normal, "float64"),
            "randint": (plus_randint, "int64")}



def build(mod, name, target):
    if name in ROWS:
        fn, t = ROWS[name]
        return mod.guvectorize([f"void(int64, {t}[:])"], "(),(n)", target=target)(fn)
    fn, t = ELEMENTS[name]
    return mod.vectorize([f"{t}({t})"], target=target)(fn)


def calls(name, f):
    """The call of f (out= given or written) and what it wrote."""
    if name in ROWS:
        out = np.empty((2000, 1000), ROWS[name][1])
        seeds = np.arange(2000, dtype=np.int64)
        return (lambda: f(seeds, out)), out
    t = ELEMENTS[name][1]
    x, out = np.zeros(2_000_000, t), np.empty(2_000_000, t)
    return (lambda: f(x, out=out)), out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeat", type=int, default=15)
    ap.add_argument("--target", default="cpu,parallel")
    args = ap.parse_args()
    print(f"Numba {numba.__version__ if numba else 'absent'}, NumPy {np.__version__}, "
          f"{os.cpu_count()} cores, load {os.getloadavg()[0]:.1f}")
    print("| kernel | target | numbavec ms | Numba ms | Numba / numbavec |")
    print("| --- | --- | ---: | ---: | ---: |")
    for target in args.target.split(","):
        for name in [*ROWS, *ELEMENTS]:
            call_nv, out_nv = calls(name, build(numbavec, name, target))
            if numba is None:
                print(f"| {name} | {target} | {best(call_nv, args.repeat) * 1e3:.2f} | - | - |")
                continue
            call_nb, out_nb = calls(name, build(numba, name, target))
            call_nv(), call_nb()
            if name in ROWS and not np.array_equal(out_nv, out_nb):
                print(f"| {name} | {target} | results differ from Numba's |")
                continue
            t_nv, t_nb = best(call_nv, args.repeat) * 1e3, best(call_nb, args.repeat) * 1e3
            print(f"| {name} | {target} | {t_nv:.2f} | {t_nb:.2f} | {t_nb / t_nv:.2f} |")


if __name__ == "__main__":
    main()
