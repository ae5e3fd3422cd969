#!/usr/bin/env python3
"""Kernels from real Numba-written libraries, numbavec against Numba, one run.

Issue 36's "speed seen on real kernels": the constructs where published
kernels ran slower than under Numba, each written as those libraries write
it, the same Python function given to both compilers:

- cube: a ufunc `x ** 3` (float64, 2e6 elements);
- cube_sum: a gufunc reduction `s += a[i] ** 3` over rows (2000 x 1000);
- cube_f32: `x ** 3` on float32 (2e6);
- inv_square: `x ** -2` (2e6);
- floor_ceil_int: `int(math.floor(..))` / `int(math.ceil(..))` in a branch (2e6);
- group_nanany, group_nanfirst: grouped reductions over `np.ndindex(values.shape)`
  with tuple indexing, as the aggregation library writes them (values 400 x 5000,
  labels of 50 groups, 10% NaN);
- searchsorted: `np.searchsorted(edges, x[i])` per element over rows
  (2000 x 1000 values, 64 edges);
- nanargmax, nanargmin, nanmax, nanmin: numbagg's running extremum over
  `a.flat` as gufuncs "(n)->()" (100 rows of 1e5, 2.5% NaN; float64 and,
  _f32, float32); group_nanargmax: its grouped form (the data of group_nanany);
- move_exp_nansum: numbagg's exponentially weighted moving sum,
  "(n),(n),()->(n)" (100 rows of 1e5, 10% NaN, alpha 0.1; float64 and float32);
- interp: xgcm's `out[:] = np.interp(x, xp, fp)` per row (2000 x 1000 sorted
  values, 64 samples);
- pulse_sum: cait's sum of pulses, a ufunc with branches called on an array
  inside the gufunc (`out[:] += amp[j] * pulse(t, t0[j], tau)`; 200 rows of
  5000 times, 8 pulses each);
- kernel_smooth: a Gaussian-weighted moving average whose weight is a
  function nested in the kernel, a closure over its bandwidth (200 rows of
  5000, 11 neighbours).  (Numba refuses a.reshape() of a gufunc's argument,
  "contiguous array only": a reshaping kernel has no Numba time to compare.)

Each time is the best of --repeat calls with out= given; results are checked
equal (NaN-aware) before anything is timed.  Prints Numba's time over
numbavec's per kernel (above 1: numbavec is faster) and their geometric mean.

    PYTHONPATH=. python3 benchmarks/bench_realkernels.py [--repeat 15] [--only cube,searchsorted]
"""
import argparse
import math
import os
import sys
import warnings

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, ".."))
import numbavec  # noqa: E402
from timing import best, best_interleaved, geomean  # noqa: E402

try:
    if not hasattr(np, "row_stack"):  # old Numba imports it
        np.row_stack = np.vstack
    import numba
except Exception:  # noqa: BLE001 - Numba is optional
    numba = None


def cube(x):
    return x ** 3


def inv_square(x):
    return x ** -2


def cube_sum(a, out):
    s = 0.0
    for i in range(a.shape[0]):
        s += a[i] ** 3
    out[0] = s


def floor_ceil_int(x, width):
    # a signed bin index rounded toward the nearer edge of zero's side
    if x >= 0:
        k = int(math.floor(x / width))
    else:
        k = int(math.ceil(x / width))
    return k


def group_nanany(values, labels, out):
    for j in range(out.shape[0]):
        out[j] = False
    for idx in np.ndindex(values.shape):
        g = labels[idx]
        if g < 0:
            continue
        v = values[idx]
        if not np.isnan(v) and v != 0:
            out[g] = True


def group_nanfirst(values, labels, out):
    for j in range(out.shape[0]):
        out[j] = np.nan
    for idx in np.ndindex(values.shape):
        g = labels[idx]
        if g < 0:
            continue
        v = values[idx]
        if np.isnan(out[g]) and not np.isnan(v):
            out[g] = v


def nanargmax(a, out):
    amax = -np.inf
    idx = -1
    for i, ai in enumerate(a.flat):
        if ai > amax or (idx == -1 and not np.isnan(ai)):
            amax = ai
            idx = i
    out[0] = idx


def nanargmin(a, out):
    amin = np.inf
    idx = -1
    for i, ai in enumerate(a.flat):
        if ai < amin or (idx == -1 and not np.isnan(ai)):
            amin = ai
            idx = i
    out[0] = idx


def nanmax(a, out):
    amax = -np.inf
    all_missing = True
    for ai in a.flat:
        if ai >= amax:
            amax = ai
            all_missing = False
    if all_missing:
        amax = np.nan
    out[0] = amax


def nanmin(a, out):
    amin = np.inf
    all_missing = True
    for ai in a.flat:
        if ai <= amin:
            amin = ai
            all_missing = False
    if all_missing:
        amin = np.nan
    out[0] = amin


def group_nanargmax(values, labels, out):
    max_values = np.full(out.shape, np.nan)
    flat_idx = 0
    for indices in np.ndindex(values.shape):
        value = values[indices]
        label = labels[indices]
        if label >= 0 and not np.isnan(value):
            if np.isnan(max_values[label]) or value > max_values[label]:
                max_values[label] = value
                out[label] = flat_idx
        flat_idx += 1
    for idx in np.ndindex(out.shape):
        if np.isnan(max_values[idx]):
            out[idx] = np.nan


def move_exp_nansum(a, alpha, min_weight, out):
    N = len(a)
    numer = weight = 0.0
    zero_count = True
    for i in range(N):
        a_i = a[i]
        alpha_i = alpha[i]
        decay = 1.0 - alpha_i
        numer *= decay
        weight *= decay
        if not np.isnan(a_i):
            zero_count = False
            numer += a_i
            weight += alpha_i
        if weight >= min_weight and not zero_count:
            out[i] = numer
        else:
            out[i] = np.nan


def bin_index(x, edges, out):
    for i in range(x.shape[0]):
        out[i] = np.searchsorted(edges, x[i])


def interp_rows(x, xp, fp, out):
    out[:] = np.interp(x, xp, fp)


def _pulse(t, t0, tau):
    # a pulse's shape, a ufunc of its own (cait's _pulse_vec); build() makes
    # it with each side's vectorize before the gufunc that calls it compiles
    x = t - t0
    if x <= 0.0:
        return 0.0
    return math.exp(-x / tau) - math.exp(-2.0 * x / tau)


PULSE = None


def pulse_sum(t, t0, amp, out):
    out[:] = 0.0
    for j in range(t0.shape[0]):
        out[:] += amp[j] * PULSE(t, t0[j], 3.0)


def kernel_smooth(x, h, out):
    def weight(d):
        return math.exp(-0.5 * (d / h) ** 2)

    n = x.shape[0]
    for i in range(n):
        s = 0.0
        w = 0.0
        for j in range(max(0, i - 5), min(n, i + 6)):
            wj = weight(j - i)
            s += wj * x[j]
            w += wj
        out[i] = s / w


KERNELS = {
    # name: (function, kind, signatures, layout)
    "cube": (cube, "u", ["float64(float64)"], None),
    "cube_f32": (cube, "u", ["float32(float32)"], None),
    "inv_square": (inv_square, "u", ["float64(float64)"], None),
    "cube_sum": (cube_sum, "g", ["void(float64[:], float64[:])"], "(n)->()"),
    "floor_ceil_int": (floor_ceil_int, "u", ["int64(float64, float64)"], None),
    "group_nanany": (group_nanany, "g", ["void(float64[:,:], int64[:,:], boolean[:])"],
                     "(n,k),(n,k),(m)"),
    "group_nanfirst": (group_nanfirst, "g", ["void(float64[:,:], int64[:,:], float64[:])"],
                       "(n,k),(n,k),(m)"),
    "searchsorted": (bin_index, "g", ["void(float64[:], float64[:], int64[:])"],
                     "(n),(m)->(n)"),
    "nanargmax": (nanargmax, "g", ["void(float64[:], int64[:])"], "(n)->()"),
    "nanargmax_f32": (nanargmax, "g", ["void(float32[:], int64[:])"], "(n)->()"),
    "nanargmin": (nanargmin, "g", ["void(float64[:], int64[:])"], "(n)->()"),
    "nanmax": (nanmax, "g", ["void(float64[:], float64[:])"], "(n)->()"),
    "nanmax_f32": (nanmax, "g", ["void(float32[:], float32[:])"], "(n)->()"),
    "nanmin": (nanmin, "g", ["void(float64[:], float64[:])"], "(n)->()"),
    "group_nanargmax": (group_nanargmax, "g",
                        ["void(float64[:,:], int64[:,:], float64[:])"], "(n,k),(n,k),(m)"),
    "move_exp_nansum": (move_exp_nansum, "g",
                        ["void(float64[:], float64[:], float64, float64[:])"],
                        "(n),(n),()->(n)"),
    "move_exp_nansum_f32": (move_exp_nansum, "g",
                            ["void(float32[:], float32[:], float32, float32[:])"],
                            "(n),(n),()->(n)"),
    "interp": (interp_rows, "g", ["void(float64[:], float64[:], float64[:], float64[:])"],
               "(n),(m),(m)->(n)"),
    "pulse_sum": (pulse_sum, "g", ["void(float64[:], float64[:], float64[:], float64[:])"],
                  "(n),(k),(k)->(n)"),
    "kernel_smooth": (kernel_smooth, "g", ["void(float64[:], float64, float64[:])"],
                      "(n),()->(n)"),
}


def data_for(name, rng):
    n = 2_000_000
    if name in ("cube", "inv_square"):
        x = rng.uniform(-3, 3, n)
        return (x,), np.empty(n)
    if name == "cube_f32":
        x = rng.uniform(-3, 3, n).astype(np.float32)
        return (x,), np.empty(n, np.float32)
    if name == "cube_sum":
        return (rng.uniform(-3, 3, (2000, 1000)),), np.empty(2000)
    if name == "floor_ceil_int":
        return (rng.uniform(-100, 100, n), 0.37), np.empty(n, np.int64)
    if name in ("group_nanany", "group_nanfirst"):
        v = rng.standard_normal((400, 5000))
        v[rng.random(v.shape) < 0.1] = np.nan
        labels = rng.integers(-1, 50, v.shape)
        out = np.empty(50, bool if name == "group_nanany" else np.float64)
        return (v, labels), out
    if name == "searchsorted":
        x = rng.uniform(-3, 3, (2000, 1000))
        edges = np.sort(rng.uniform(-3, 3, 64))
        return (x, edges), np.empty((2000, 1000), np.int64)
    if name == "interp":
        x = np.sort(rng.uniform(-3, 3, (2000, 1000)), axis=1)
        xp = np.sort(rng.uniform(-3, 3, 64))
        return (x, xp, rng.standard_normal(64)), np.empty((2000, 1000))
    if name == "pulse_sum":
        t = np.linspace(0, 100, 5000)
        return (t, rng.uniform(0, 90, (200, 8)), rng.uniform(0.5, 2, (200, 8))), np.empty((200, 5000))
    if name == "kernel_smooth":
        return (rng.standard_normal((200, 5000)), 2.0), np.empty((200, 5000))
    f32 = name.endswith("_f32")
    dt = np.float32 if f32 else np.float64
    if name.startswith(("nanarg", "nanmax", "nanmin")):
        a = rng.standard_normal((100, 100_000)).astype(dt)
        a[a > 2] = np.nan  # 2.3%: the running extremum rarely changes
        return (a,), np.empty(100, np.int64 if name.startswith("nanarg") else dt)
    if name == "group_nanargmax":
        v = rng.standard_normal((400, 5000))
        v[rng.random(v.shape) < 0.1] = np.nan
        return (v, rng.integers(-1, 50, v.shape)), np.empty(50)
    if name.startswith("move_exp_nansum"):
        a = rng.standard_normal((100, 100_000)).astype(dt)
        a[rng.random(a.shape) < 0.1] = np.nan
        return (a, np.full_like(a, 0.1), dt(0.5)), np.empty_like(a)
    raise KeyError(name)


def build(mod, name):
    global PULSE
    fn, kind, sigs, layout = KERNELS[name]
    PULSE = mod.vectorize(["float64(float64, float64, float64)"])(_pulse)
    if kind == "u":
        return mod.vectorize(sigs)(fn)
    return mod.guvectorize(sigs, layout)(fn)



def caller(f, name, data, out):
    """The call, out= given; the grouped kernels write their third argument
    (the aggregation library's layout has no output: "(n,k),(n,k),(m)")."""
    if name.startswith("group_"):
        return lambda: f(*data, out)
    return lambda: f(*data, out=out)


def same(a, b):
    return np.array_equal(a, b, equal_nan=a.dtype.kind == "f")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeat", type=int, default=15)
    ap.add_argument("--only", default="")
    args = ap.parse_args()
    # Numba's maxsd raises the invalid flag on NaN (nanargmax ...): warned per call
    warnings.simplefilter("ignore", RuntimeWarning)
    names = args.only.split(",") if args.only else list(KERNELS)
    rng = np.random.default_rng(36)
    print(f"numbavec {numbavec.__version__ if hasattr(numbavec, '__version__') else ''}, "
          f"Numba {numba.__version__ if numba else 'absent'}, NumPy {np.__version__}, "
          f"{os.cpu_count()} cores")
    print("| kernel | numbavec ms | Numba ms | Numba / numbavec |")
    print("| --- | ---: | ---: | ---: |")
    ratios, bad = [], 0
    for name in names:
        data, out = data_for(name, rng)
        nv = build(numbavec, name)
        out_nv = out.copy()
        call_nv = caller(nv, name, data, out_nv)
        call_nv()
        if numba is None:
            t_nv = best(call_nv, args.repeat) * 1e3
            print(f"| {name} | {t_nv:.3f} | - | - |")
            continue
        nb = build(numba, name)
        out_nb = out.copy()
        call_nb = caller(nb, name, data, out_nb)
        call_nb()
        if not same(out_nv, out_nb):
            # x ** n may differ from Numba's multiplied-out product by an ulp,
            # and a sum of them by that much of its terms
            rtol = 1e-12 if out.dtype == np.float64 else 2e-7
            if name == "move_exp_nansum_f32":
                # `decay = 1.0 - alpha_i` of float32 alpha: float32 by NumPy's
                # rules (NEP 50, numbavec's), float64 in Numba (the sums
                # themselves are float64 in both: typeinfer.c, held)
                rtol = 1e-6
            scale = np.nanmax(np.abs(out_nb)) if out.dtype.kind == "f" else 0
            close = out.dtype.kind == "f" and np.allclose(out_nv, out_nb, rtol=rtol,
                                                           atol=rtol * scale, equal_nan=True)
            if not close:
                print(f"| {name} | results differ from Numba's |")
                bad += 1
                continue
        t_nv, t_nb = (t * 1e3 for t in best_interleaved([call_nv, call_nb], args.repeat))
        ratios.append(t_nb / t_nv)
        print(f"| {name} | {t_nv:.3f} | {t_nb:.3f} | {t_nb / t_nv:.2f} |")
    if ratios:
        gm = geomean(ratios)
        print(f"\ngeometric mean of Numba / numbavec over {len(ratios)} kernels: {gm:.2f}; "
              f"lowest {min(ratios):.2f}")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
