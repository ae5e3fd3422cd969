"""NumPy functions written in numbavec's own kernel language.

A kernel that calls one of the NumPy functions in ``FUNCTIONS`` calls the
helper here instead (the compiler's lowering swaps them, lowercall.c), which
is inlined as any ``numbavec.jit`` helper is.  They are the functions whose
work is a loop nest that the kernel language already says well: LU
factorisation with partial pivoting, as LAPACK's ``getrf`` does it (the
pivot is the first row of largest magnitude), so results agree with
NumPy's to rounding.  Each computes in its argument's float kind (float32
stays float32, integers become float64), as NumPy's LAPACK wrappers do, and
raises NumPy's exceptions with NumPy's messages.  2-d arrays only: NumPy's
stacks of matrices are a gufunc's loop dimensions here.
"""
import numpy as np

import numbavec

@numbavec.jit
def _pivot(w, k):
    """The row (k or below) of the largest magnitude in column k of w."""
    p = k
    best = abs(w[k, k])
    for i in range(k + 1, w.shape[0]):
        v = abs(w[i, k])
        if v > best:
            best = v
            p = i
    return p


@numbavec.jit
def _swap_rows(w, k, p, start):
    for j in range(start, w.shape[1]):
        t = w[k, j]
        w[k, j] = w[p, j]
        w[p, j] = t


@numbavec.jit
def inv(a):
    """np.linalg.inv: Gauss elimination of [a | I] with partial pivoting,
    then back substitution (LAPACK's gesv with the identity)."""
    n = a.shape[0]
    if a.shape[1] != n:
        raise np.linalg.LinAlgError("Last 2 dimensions of the array must be square")
    w = a * 1.0
    x = np.zeros_like(w)
    for i in range(n):
        x[i, i] = 1.0
    for k in range(n):
        p = _pivot(w, k)
        if w[p, k] == 0.0:
            raise np.linalg.LinAlgError("Singular matrix")
        if p != k:
            _swap_rows(w, k, p, k)
            _swap_rows(x, k, p, 0)
        d = w[k, k]
        for i in range(k + 1, n):
            f = w[i, k] / d
            for j in range(k + 1, n):
                w[i, j] -= f * w[k, j]
            for j in range(n):
                x[i, j] -= f * x[k, j]
    for k in range(n - 1, -1, -1):
        d = w[k, k]
        for j in range(n):
            s = x[k, j]
            for m in range(k + 1, n):
                s -= w[k, m] * x[m, j]
            x[k, j] = s / d
    return x


@numbavec.jit
def det(a):
    """np.linalg.det: the product of U's diagonal, its sign flipped by each
    row exchange; 0 for a singular matrix, 1 for a 0x0 one."""
    n = a.shape[0]
    if a.shape[1] != n:
        raise np.linalg.LinAlgError("Last 2 dimensions of the array must be square")
    w = a * 1.0
    r = w.dtype.type(1.0)
    for k in range(n):
        p = _pivot(w, k)
        if w[p, k] == 0.0:
            return r * 0.0
        if p != k:
            r = -r
            _swap_rows(w, k, p, k)
        d = w[k, k]
        r *= d
        for i in range(k + 1, n):
            f = w[i, k] / d
            for j in range(k + 1, n):
                w[i, j] -= f * w[k, j]
    return r


@numbavec.jit
def transpose(a):
    """np.transpose(a) without axes: a.T, a view."""
    return a.T




@numbavec.jit
def slogdet(a):
    """np.linalg.slogdet: (sign, log|det|) from the same LU as det; (0, -inf)
    for a singular matrix."""
    n = a.shape[0]
    if a.shape[1] != n:
        raise np.linalg.LinAlgError("Last 2 dimensions of the array must be square")
    w = a * 1.0
    sign = w.dtype.type(1.0)
    logdet = abs(sign) * 0.0
    for k in range(n):
        p = _pivot(w, k)
        if w[p, k] == 0.0:
            return sign * 0.0, logdet - np.inf
        if p != k:
            sign = -sign
            _swap_rows(w, k, p, k)
        d = w[k, k]
        ad = abs(d)
        sign *= d / ad
        logdet += np.log(ad)
        for i in range(k + 1, n):
            f = w[i, k] / d
            for j in range(k + 1, n):
                w[i, j] -= f * w[k, j]
    return sign, logdet


@numbavec.jit
def trace(a):
    """np.trace of a 2-d array: the sum of its diagonal, in np.sum's type."""
    n = min(a.shape[0], a.shape[1])
    d = np.empty(n, a.dtype)
    for i in range(n):
        d[i] = a[i, i]
    return np.sum(d)


@numbavec.jit
def identity(n):
    """np.identity(n), np.eye(n): float64."""
    m = np.zeros((n, n))
    for i in range(n):
        m[i, i] = 1.0
    return m


@numbavec.jit
def diff(a):
    """np.diff(a): the first difference along the last axis."""
    return a[..., 1:] - a[..., :-1]


@numbavec.jit
def count_nonzero(a):
    """np.count_nonzero(a) of a whole array."""
    return np.sum(a != 0)


@numbavec.jit
def interp(x, xp, fp):
    """np.interp(x, xp, fp) of a value or an array x: fp[0] left of xp[0],
    fp[-1] from xp[-1] on, NaN for NaN, else the line through the interval
    x lies in (searched as NumPy does: xp[j] <= x < xp[j + 1]), computed in
    float64 (complex128 for complex fp) as NumPy's."""
    n = xp.shape[0]
    if n == 0:
        raise ValueError("array of sample points is empty")
    if fp.shape[0] != n:
        raise ValueError("fp and xp are not of the same length.")
    x = x + np.float64(0.0)
    j = np.clip(np.searchsorted(xp, x, side="right") - 1, 0, max(n - 2, 0))
    k = np.minimum(j + 1, n - 1)
    x0 = xp[j] + np.float64(0.0)
    f0 = fp[j] + np.float64(0.0)
    f1 = fp[k] + np.float64(0.0)
    slope = (f1 - f0) / (xp[k] - x0)
    line = slope * (x - x0) + f0
    inside = np.where(x == x0, f0, line)
    return np.where(x < xp[0], fp[0] + np.float64(0.0),
                    np.where(x >= xp[n - 1], fp[n - 1] + np.float64(0.0), inside))


FUNCTIONS = {
    np.linalg.inv: inv,
    np.linalg.det: det,
    np.linalg.slogdet: slogdet,
    np.transpose: transpose,
    np.trace: trace,
    np.identity: identity,
    np.eye: identity,
    np.diff: diff,
    np.count_nonzero: count_nonzero,
    np.interp: interp,
}
