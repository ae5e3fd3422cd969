#!/usr/bin/env python3
"""Gufunc kernels written against arrays, numbavec against Numba's @guvectorize.

The kernels are tests/support/array_kernels.py's (moving windows, fills, exponential
moving averages, nan-aware reductions, covariances, scratch arrays, sorting,
quantiles, binning, matrix products), the same
Python functions for both compilers.  Each runs over a batch of core problems
(float64; 1-d kernels: 20000 x 256, 2-d: 2000 x 64 x 8), best of --repeat
calls, one thread (target='cpu', Numba's default) and all threads
('parallel').  Also: an array expression against the same kernel written as
a scalar loop (`out[:] = a * 2 + b` against `for i ...: out[i] = a[i] * 2 +
b[i]`) and NumPy's `np.multiply(a, 2, out); out += b`, and the compile time
of one signature.  Results are checked equal before anything is timed.
Markdown to stdout.

    python3 benchmarks/bench_arrays.py [--repeat 5] [--only column_sums,covariance]
"""
import argparse
import os
import sys
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, ".."))
sys.path.insert(0, os.path.join(HERE, "..", "tests", "support"))
from numbavec import guvectorize  # noqa: E402
from timing import best  # noqa: E402
from array_kernels import KERNELS, signature  # noqa: E402

try:
    if not hasattr(np, "row_stack"):  # numba-cuda and old Numba import it
        np.row_stack = np.vstack
    import numba
except Exception:  # noqa: BLE001 - Numba is optional
    numba = None

NAMES = ["affine", "fused", "scalar_broadcast", "column_sums", "row_maxima", "prefix_sums",
         "copy_and_update", "squares_sum", "moving_mean", "forward_fill", "backward_fill", "ema", "moving_count",
         "nan_stats", "reductions", "zscore", "covariance", "covariance_by_columns",
         "column_ranges", "expression_variable", "zipped", "rolling_median", "winsorize", "ranks",
         "bin_counts", "trimmed_mean", "distinct_count", "top_three", "gram"]


def affine_loop(a, b, out):
    for i in range(len(a)):
        out[i] = a[i] * 2 + b[i]


def inputs(layout, kinds, rng):
    ins = layout.split("->")[0]
    two_d = "m" in ins
    out = []
    for k, group in zip(kinds, ins.replace(" ", "").split("),(")):
        if k == "s":
            out.append(np.float64(8))
        elif two_d:
            out.append(rng.standard_normal((2000, 64, 8)))
        else:
            a = rng.standard_normal((20000, 256))
            a[rng.random(a.shape) < 0.05] = np.nan if k == "f" else 0
            out.append(a)
    return out



def compile_time(make, data):
    """Decoration and a first call on two rows of data: the time to a first
    result (numbavec makes machine code at a signature's first call)."""
    small = [d if np.ndim(d) == 0 else d[:2] for d in data]
    t0 = time.perf_counter()
    make()(*small)
    return time.perf_counter() - t0


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--only", default="", help="comma-separated kernel names (default: all)")
    args = ap.parse_args()
    names = args.only.split(",") if args.only else NAMES
    rng = np.random.default_rng(0)
    print(f"# Arrays in gufunc kernels (numbavec vs Numba {numba.__version__ if numba else '-'}; "
          f"{os.cpu_count()} CPUs)\n")
    print("| kernel | numbavec cpu ms | Numba cpu ms | Numba/numbavec | numbavec parallel ms "
          "| Numba parallel ms | first result numbavec ms | first result Numba ms |")
    print("|---|---|---|---|---|---|---|---|")
    for name in names:
        py, layout, kinds, out_kind = KERNELS[name]
        sig = signature(layout, kinds, out_kind, "float64")
        data = inputs(layout, kinds, rng)
        with np.errstate(all="ignore"):
            t_nv_c = compile_time(lambda: guvectorize([sig], layout)(py), data)
        nv = guvectorize([sig], layout)(py)
        nvp = guvectorize([sig], layout, target="parallel")(py)
        with np.errstate(all="ignore"):
            r_nv = nv(*data)
            np.testing.assert_allclose(nvp(*data), r_nv, rtol=1e-9, equal_nan=True)
            row = [best(lambda: nv(*data), args.repeat) * 1e3]
            # before Numba's threads run: on a small machine they keep
            # spinning for a while after a parallel call, taking our cores
            nvp_ms = best(lambda: nvp(*data), args.repeat) * 1e3
            nb_ms = nbp_ms = t_nb_c = float("nan")
            note = ""
            try:
                if numba is not None:
                    t_nb_c = compile_time(lambda: numba.guvectorize([sig], layout)(py), data)
                    nb = numba.guvectorize([sig], layout)(py)
                    nbp = numba.guvectorize([sig], layout, target="parallel")(py)
                    np.testing.assert_allclose(nb(*data), r_nv, rtol=1e-9, atol=1e-9,
                                               equal_nan=True)
                    nb_ms = best(lambda: nb(*data), args.repeat) * 1e3
                    nbp_ms = best(lambda: nbp(*data), args.repeat) * 1e3
            except Exception as e:  # noqa: BLE001 - what Numba cannot compile is reported
                note = f" (Numba: {type(e).__name__}: {str(e).splitlines()[0][:60]})"
        print(f"| {name}{note} | {row[0]:.2f} | {nb_ms:.2f} | {nb_ms / row[0]:.2f} | {nvp_ms:.2f} | "
              f"{nbp_ms:.2f} | {t_nv_c * 1e3:.1f} | {t_nb_c * 1e3:.1f} |")

    print("\n## An array expression against its scalar loop (20000 x 256 float64, cpu)\n")
    a, b = rng.standard_normal((2, 20000, 256))
    sig = "void(float64[:], float64[:], float64[:])"
    expr = guvectorize([sig], "(n),(n)->(n)")(KERNELS["affine"][0])
    loop = guvectorize([sig], "(n),(n)->(n)")(affine_loop)
    out = np.empty_like(a)
    np.testing.assert_array_equal(expr(a, b), loop(a, b))

    def numpy_form():
        np.multiply(a, 2, out=out)
        np.add(out, b, out=out)

    t_expr = best(lambda: expr(a, b, out=out), args.repeat)
    t_loop = best(lambda: loop(a, b, out=out), args.repeat)
    t_np = best(numpy_form, args.repeat)
    print("| form | ms | vs scalar loop |\n|---|---|---|")
    print(f"| `out[:] = a * 2 + b` | {t_expr * 1e3:.2f} | {t_loop / t_expr:.2f} |")
    print(f"| scalar loop | {t_loop * 1e3:.2f} | 1.00 |")
    print(f"| NumPy (two passes, out=) | {t_np * 1e3:.2f} | {t_loop / t_np:.2f} |")


if __name__ == "__main__":
    main()
