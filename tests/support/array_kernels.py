"""Gufunc kernels written against arrays, as users write them for NumPy.

Each entry of KERNELS is (kernel, layout, [input kinds], output kind, [frozen
sizes]): test_arrays.py compiles each for the targets and runs it against the
kernel itself, run by the interpreter on NumPy arrays.  The kinds are
"f" (the float type under test), "i" (int64) or "s" (a float scalar).
"""
import math
import re

import numpy as np


# ---- views, slices and assignment ----

def affine(a, b, out):
    out[:] = a * 2 + b


def reverse(a, out):
    out[:] = a[::-1]


def shift_right(a, out):
    out[:] = a
    out[1:] = out[:-1]  # overlapping: NumPy copies the source first


def every_other(a, out):
    out[:] = 0
    out[::2] = a[::2] * 10
    out[1::2] = -a[1::2]


def clip_in_place(a, lo, out):
    out[:] = a
    for i in range(len(out)):
        if out[i] < lo:
            out[i] = lo


def fused(a, b, out):
    out[:] = np.sqrt(np.abs(a)) + (a > b) * b - a * a / (1 + np.abs(b))


def scalar_broadcast(a, s, out):
    out[:] = s
    out += a
    out *= 2


# ---- 2-d: rows, columns, transposes, newaxis ----

def column_sums(a, out):
    out[:] = 0
    for row in a:
        out += row


def row_maxima(a, out):
    for i, row in enumerate(a):
        out[i] = row.max()


def transpose(a, out):
    out[...] = a.T


def outer_difference(a, out):
    out[:, :] = a[:, None] - a[None, :]


def double_rows(a, out):
    for i in range(a.shape[0]):
        out[i] = a[i] * 2
    out[..., 0] = a[:, 0]


def covariance(a, out):
    m, n = a.shape
    mu = np.zeros(n)
    for row in a:
        mu += row
    mu /= m
    for i in range(n):
        for j in range(n):
            s = 0.0
            for k in range(m):
                s += (a[k, i] - mu[i]) * (a[k, j] - mu[j])
            out[i, j] = s / (m - 1)


def covariance_by_columns(a, out):
    m, n = a.shape
    mu = a.mean(axis=0)
    for i in range(n):
        for j in range(n):
            out[i, j] = ((a[:, i] - mu[i]) * (a[:, j] - mu[j])).sum() / (m - 1)


def column_ranges(a, out):
    out[:] = np.nanmax(a, axis=0) - np.nanmin(a, axis=0)


def tuple_indices(a, out):
    for i in range(a.shape[0]):
        for j in range(a.shape[1]):
            idx = (i, j)
            out[j, i] = a[idx] + a[(i, j)]


# ---- scratch arrays ----

def squares_sum(a, out):
    t = np.zeros(a.shape[0])
    t[:] = a * a
    out[0] = t.sum()


def prefix_sums(a, out):
    c = np.empty_like(a)
    acc = 0.0
    for i in range(len(a)):
        acc += a[i]
        c[i] = acc
    out[:] = c


def copy_and_update(a, out):
    t = a.copy()
    t += 1
    t *= 2
    out[:] = t


def full_and_ones(a, out):
    t = np.full((2, len(a)), 3.0, dtype=np.float32)
    u = np.ones(len(a), dtype=out.dtype)
    t[1] = a
    out[:] = t[0] * u + t[1]


def expression_variable(a, b, out):
    d = a - b  # an array expression kept in a variable is a new array
    out[:] = d * d


# ---- iteration ----

def zipped(a, b, out):
    k = 0
    for x, y in zip(a, b):
        out[k] = x * y
        k += 1


def enumerated_from(a, out):
    for i, x in enumerate(a, 1):
        out[i - 1] = x * i


# ---- realistic kernels ----

def moving_mean(a, window, out):
    w = int(window)
    for i in range(len(a)):
        lo = max(0, i - w + 1)
        out[i] = a[lo:i + 1].mean()


def forward_fill(a, out):
    last = np.nan
    for i in range(len(a)):
        if not np.isnan(a[i]):
            last = a[i]
        out[i] = last


def backward_fill(a, out):
    nxt = np.nan
    for i in range(len(a) - 1, -1, -1):
        if not np.isnan(a[i]):
            nxt = a[i]
        out[i] = nxt


def ema(a, alpha, out):
    out[0] = a[0]
    for i in range(1, len(a)):
        out[i] = alpha * a[i] + (1 - alpha) * out[i - 1]


def moving_count(a, alpha, out):
    """An exponentially decaying count of the values above 0.5 (NaNs are not)."""
    c = 0.0
    for i in range(len(a)):
        if a[i] > 0.5:
            c = c * (1 / alpha) + 1
        else:
            c = c * (1 / alpha)
        out[i] = c


def nan_stats(a, out):
    out[0] = np.nansum(a)
    out[1] = np.nanmean(a) if np.isfinite(a).any() else 0.0
    out[2] = np.isnan(a).sum()
    out[3] = a.sum()


def reductions(a, out):
    out[0] = a.min()
    out[1] = a.max()
    out[2] = np.mean(a)
    out[3] = a.prod() if len(a) < 8 else 0.0
    out[4] = a.argmin()
    out[5] = np.argmax(a)
    out[6] = (a > 0).all()
    out[7] = (a > 0).any()


def zscore(a, out):
    mu = a.mean()
    sd = math.sqrt(((a - mu) ** 2).sum() / len(a))
    out[:] = (a - mu) / (sd if sd > 0 else 1.0)


def grouped_sums(values, labels, out):
    out[:] = 0
    for i in range(len(values)):
        g = labels[i]
        if 0 <= g < len(out):
            out[g] += values[i]


# ---- order statistics: sorting, quantiles, binning ----

def rolling_median(a, w, out):
    """The median of the last w values (fewer at the start), NaNs skipped."""
    k = max(int(w), 1)
    for i in range(len(a)):
        out[i] = np.nanmedian(a[max(0, i - k + 1):i + 1])


def winsorize(a, out):
    """Values clipped to their 5th and 95th percentiles."""
    lo = np.nanquantile(a, 0.05)
    hi = np.nanpercentile(a, 95)
    out[:] = np.clip(a, lo, hi)


def ranks(a, out):
    """Each value's rank (0 for the least), ties in order of appearance."""
    order = np.argsort(a, kind="mergesort")  # stable; Numba knows no kind="stable"
    for r, i in enumerate(order):
        out[i] = r


def bin_counts(a, edges, out):
    """How many values fall in each bin between sorted edges (right-closed)."""
    out[:] = 0
    e = np.sort(edges)
    for x in a:
        b = np.searchsorted(e, x, side="right") - 1
        if 0 <= b < len(out):
            out[b] += 1


def trimmed_mean(a, out):
    """The mean without the lowest and highest tenth."""
    s = np.sort(a)
    cut = len(s) // 10
    out[0] = s[cut:len(s) - cut].mean() if len(s) > 2 * cut else np.nan


def gram(a, out):
    """The Gram matrix of the columns."""
    out[:] = a.T @ a


def distinct_count(a, out):
    out[0] = len(np.unique(a))


def top_three(a, out):
    """The three largest values, largest first (NaN when fewer)."""
    out[:] = np.nan
    s = a.copy()
    s.sort()
    m = min(3, len(s))
    out[:m] = s[::-1][:m]


KERNELS = {
    "affine": (affine, "(n),(n)->(n)", "ff", "f"),
    "reverse": (reverse, "(n)->(n)", "f", "f"),
    "shift_right": (shift_right, "(n)->(n)", "f", "f"),
    "every_other": (every_other, "(n)->(n)", "f", "f"),
    "clip_in_place": (clip_in_place, "(n),()->(n)", "fs", "f"),
    "fused": (fused, "(n),(n)->(n)", "ff", "f"),
    "scalar_broadcast": (scalar_broadcast, "(n),()->(n)", "fs", "f"),
    "column_sums": (column_sums, "(m,n)->(n)", "f", "f"),
    "row_maxima": (row_maxima, "(m,n)->(m)", "f", "f"),
    "transpose": (transpose, "(m,n)->(n,m)", "f", "f"),
    "outer_difference": (outer_difference, "(n)->(n,n)", "f", "f"),
    "double_rows": (double_rows, "(m,n)->(m,n)", "f", "f"),
    "covariance": (covariance, "(m,n)->(n,n)", "f", "f"),
    "tuple_indices": (tuple_indices, "(m,n)->(n,m)", "f", "f"),
    "covariance_by_columns": (covariance_by_columns, "(m,n)->(n,n)", "f", "f"),
    "column_ranges": (column_ranges, "(m,n)->(n)", "f", "f"),
    "squares_sum": (squares_sum, "(n)->()", "f", "f"),
    "prefix_sums": (prefix_sums, "(n)->(n)", "f", "f"),
    "copy_and_update": (copy_and_update, "(n)->(n)", "f", "f"),
    "full_and_ones": (full_and_ones, "(n)->(n)", "f", "f"),
    "expression_variable": (expression_variable, "(n),(n)->(n)", "ff", "f"),
    "zipped": (zipped, "(n),(n)->(n)", "ff", "f"),
    "enumerated_from": (enumerated_from, "(n)->(n)", "f", "f"),
    "moving_mean": (moving_mean, "(n),()->(n)", "fs", "f"),
    "forward_fill": (forward_fill, "(n)->(n)", "f", "f"),
    "backward_fill": (backward_fill, "(n)->(n)", "f", "f"),
    "ema": (ema, "(n),()->(n)", "fs", "f"),
    "moving_count": (moving_count, "(n),()->(n)", "fs", "f"),
    "nan_stats": (nan_stats, "(n)->(4)", "f", "f"),
    "reductions": (reductions, "(n)->(8)", "f", "f"),
    "zscore": (zscore, "(n)->(n)", "f", "f"),
    "grouped_sums": (grouped_sums, "(n),(n)->(k)", "fi", "f"),
    "rolling_median": (rolling_median, "(n),()->(n)", "fs", "f"),
    "winsorize": (winsorize, "(n)->(n)", "f", "f"),
    "ranks": (ranks, "(n)->(n)", "f", "i"),
    "bin_counts": (bin_counts, "(n),(k)->(k)", "ff", "i"),
    "trimmed_mean": (trimmed_mean, "(n)->()", "f", "f"),
    "distinct_count": (distinct_count, "(n)->()", "f", "i"),
    "top_three": (top_three, "(n)->(3)", "f", "f"),
    "gram": (gram, "(m,n)->(n,n)", "f", "f"),
}


def core_dims(layout):
    """[[dims of input 0], ...], [[dims of output 0], ...] of a layout."""
    ins, outs = layout.split("->")
    parse = lambda side: [[d.strip() for d in g.split(",") if d.strip()]
                          for g in re.findall(r"\(([^)]*)\)", side)]
    return parse(ins), parse(outs)


def signature(layout, kinds, out_kind, ftype):
    """'void(float64[:], float64, float64[:])' for the kernel's layout."""
    ins, outs = core_dims(layout)
    names = {"f": ftype, "i": "int64", "s": ftype}
    parts = []
    for i, (dims, k) in enumerate(zip(ins + outs, kinds + out_kind)):
        colons = ", ".join(":" for _ in dims) or ":"  # an output () is res[0]
        parts.append(names[k] + (f"[{colons}]" if dims or i >= len(ins) else ""))
    return f"void({', '.join(parts)})"
