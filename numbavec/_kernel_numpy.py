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
    """np.linalg.inv: solve(a, I) (LAPACK's gesv with the identity)."""
    w = a * 1.0
    x = np.zeros_like(w)
    for i in range(min(w.shape[0], w.shape[1])):
        x[i, i] = 1.0
    return solve(w, x)


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
def _interp_search(key, xp, guess):
    """The interval of xp that key lies in, as NumPy's interp searches: -1
    below xp[0], n above xp[-1], else j with xp[j] <= key < xp[j + 1] found
    from the guess (the previous value's interval) outward and then by
    bisection, so that an xp that is not increasing gives NumPy's answer."""
    n = xp.shape[0]
    if key > xp[n - 1]:
        return n
    if key < xp[0]:
        return -1
    if n <= 4:
        i = 1
        while i < n and key >= xp[i]:
            i += 1
        return i - 1
    guess = max(min(guess, n - 3), 1)
    lo = 0
    hi = n
    if key < xp[guess]:
        if key >= xp[guess - 1]:
            return guess - 1
        hi = guess - 1
        if guess > 8 and key >= xp[guess - 8]:
            lo = guess - 8
    else:
        if key < xp[guess + 1]:
            return guess
        if key < xp[guess + 2]:
            return guess + 1
        lo = guess + 2
        if guess < n - 9 and key < xp[guess + 8]:
            hi = guess + 8
    while lo < hi:
        mid = lo + ((hi - lo) >> 1)
        if key >= xp[mid]:
            lo = mid + 1
        else:
            hi = mid
    return lo - 1


@numbavec.jit
def _interp_line(v, x0, x1, f0, f1, slope):
    """slope * (v - x0) + f0, or from the other end where that is NaN, or
    f0 where both are and f0 == f1 (NumPy's order)."""
    r = slope * (v - x0) + f0
    if np.isnan(r):
        r = slope * (v - x1) + f1
        if np.isnan(r) and f0 == f1:
            r = f0
    return r


@numbavec.jit
def _interp_value(v, xp, fp, j, left, right):
    """np.interp at v in float64 (complex128 for complex fp), given v's
    interval j."""
    n = xp.shape[0]
    if n == 1:
        return left if v < xp[0] else (right if v > xp[0] else fp[0] + left * 0.0)
    if np.isnan(v):
        return v + left * 0.0
    if j == -1:
        return left
    if j == n:
        return right
    x0 = xp[j] + np.float64(0.0)
    if j == n - 1 or x0 == v:
        return fp[j] + left * 0.0
    x1 = xp[j + 1] + np.float64(0.0)
    f0 = fp[j] + left * 0.0
    f1 = fp[j + 1] + left * 0.0
    if fp.dtype.kind == "c":
        step = 1.0 / (x1 - x0)
        re = _interp_line(v, x0, x1, f0.real, f1.real, (f1.real - f0.real) * step)
        im = _interp_line(v, x0, x1, f0.imag, f1.imag, (f1.imag - f0.imag) * step)
        return complex(re, im)
    else:
        return _interp_line(v, x0, x1, f0, f1, (f1 - f0) / (x1 - x0))


@numbavec.jit
def interp(x, xp, fp, left=False, right=False):
    """np.interp(x, xp, fp, left=, right=) of a value or an array x, as
    NumPy computes it (its search from the previous value's interval, so an
    xp that is not increasing gives NumPy's values too; the line from the
    other end where one end gives NaN), in float64, complex128 for complex
    fp.  left and right default to fp[0] and fp[-1] (False marks them not
    given: a kernel has no None)."""
    n = xp.shape[0]
    if n == 0:
        raise ValueError("array of sample points is empty")
    if fp.shape[0] != n:
        raise ValueError("fp and xp are not of the same length.")
    zero = fp[0] * 0.0 + np.float64(0.0)  # the result's kind: float64 or complex128
    if left.dtype.kind == "b":
        lval = fp[0] + zero
    else:
        lval = left + zero
    if right.dtype.kind == "b":
        rval = fp[n - 1] + zero
    else:
        rval = right + zero
    if x.ndim == 0:
        v = x + np.float64(0.0)
        return _interp_value(v, xp, fp, _interp_search(v, xp, 0), lval, rval)
    else:
        out = np.empty(x.shape, zero.dtype)
        j = 0
        for i, e in enumerate(x.flat):
            v = e + np.float64(0.0)
            if not np.isnan(v) and n > 1:
                j = _interp_search(v, xp, j)
            out.flat[i] = _interp_value(v, xp, fp, j, lval, rval)
        return out


@numbavec.jit
def _eliminate_rows(x, i, k, f):
    """x[i] -= f * x[k], for a vector or a matrix of right-hand sides."""
    if x.ndim == 1:
        x[i] -= f * x[k]
    else:
        for j in range(x.shape[1]):
            x[i, j] -= f * x[k, j]


@numbavec.jit
def _swap(x, k, p):
    if x.ndim == 1:
        t = x[k]
        x[k] = x[p]
        x[p] = t
    else:
        _swap_rows(x, k, p, 0)


@numbavec.jit
def solve(a, b):
    """np.linalg.solve(a, b), b a vector or a matrix: LU with partial
    pivoting on [a | b], then back substitution, in the common float kind."""
    n = a.shape[0]
    if a.shape[1] != n:
        raise np.linalg.LinAlgError("Last 2 dimensions of the array must be square")
    if b.shape[0] != n:
        raise ValueError("solve: Input operand 1 has a mismatch in its core dimension 0")
    w = a * 1.0
    x = b + np.zeros(1, w.dtype)[0]
    for k in range(n):
        p = _pivot(w, k)
        if w[p, k] == 0.0:
            raise np.linalg.LinAlgError("Singular matrix")
        if p != k:
            _swap_rows(w, k, p, k)
            _swap(x, k, p)
        d = w[k, k]
        for i in range(k + 1, n):
            f = w[i, k] / d
            for j in range(k + 1, n):
                w[i, j] -= f * w[k, j]
            _eliminate_rows(x, i, k, f)
    for k in range(n - 1, -1, -1):
        for m in range(k + 1, n):
            _eliminate_rows(x, k, m, w[k, m])
        if x.ndim == 1:
            x[k] = x[k] / w[k, k]
        else:
            for j in range(x.shape[1]):
                x[k, j] = x[k, j] / w[k, k]
    return x


@numbavec.jit
def diag(v, k=0):
    """np.diag: a 1-d v on the k-th diagonal of a square matrix, or the
    k-th diagonal of a 2-d v (a copy)."""
    if v.ndim == 1:
        n = v.shape[0] + abs(k)
        m = np.zeros((n, n), v.dtype)
        for i in range(v.shape[0]):
            if k >= 0:
                m[i, i + k] = v[i]
            else:
                m[i - k, i] = v[i]
        return m
    else:
        rows, cols = v.shape[0], v.shape[1]
        size = max(0, min(rows, cols - k)) if k >= 0 else max(0, min(rows + k, cols))
        d = np.empty(size, v.dtype)
        for i in range(size):
            d[i] = v[i, i + k] if k >= 0 else v[i - k, i]
        return d


@numbavec.jit
def _power_of_ten(n):
    """10.0 ** n as NumPy's round computes it: products of ten (exact to
    1e22, and past it the same roundings as NumPy's)."""
    r = 1.0
    for _ in range(n):
        r *= 10.0
    return r


@numbavec.jit
def round_(a, decimals=0):
    """np.round, np.around of a value or an array, as NumPy evaluates them:
    rint(a * 10**d) / 10**d (rint(a / 10**-d) * 10**-d for d < 0) in a's
    float kind (NEP 50: float32 stays float32), so that halves go to even
    and 2.675 rounds to 2.67 as in NumPy (Python's round(x, 2) rounds the
    decimal value); an integer is itself for d >= 0, else it is computed in
    float64 and cast back, as NumPy does."""
    if a.dtype.kind in "iu":  # known when compiling: one branch is typed
        if decimals >= 0:
            return a
        f = _power_of_ten(-decimals)
        return (np.rint(a / f) * f).astype(a.dtype)
    elif a.dtype.kind == "f":
        if decimals == 0:
            return np.rint(a)
        if decimals > 0:
            f = a.dtype.type(_power_of_ten(decimals))
            return np.rint(a * f) / f
        f = a.dtype.type(_power_of_ten(-decimals))
        return np.rint(a / f) * f
    else:
        return np.rint(a)  # np.round() of complex (or bool) values is not supported yet

@numbavec.jit
def isclose(a, b, rtol=1e-05, atol=1e-08, equal_nan=False):
    """np.isclose of values or arrays, as NumPy computes it: b made inexact
    (an integer b as float64), then |a - b| <= atol + rtol * |b| where b is
    finite, or a == b (equal infinities), or both NaN with equal_nan.  A b
    that is not finite is not subtracted (its test is a == b): inf - inf
    would raise the invalid flag, which NumPy's isclose silences."""
    y = b * 1.0
    finite = np.isfinite(y)
    ys = np.where(finite, y, 0.0)
    close = (np.abs(a - ys) <= atol + rtol * np.abs(ys)) & finite | (a == y)
    if equal_nan:
        close = close | (np.isnan(a) & np.isnan(y))
    return close


@numbavec.jit
def allclose(a, b, rtol=1e-05, atol=1e-08, equal_nan=False):
    """np.allclose: whether isclose holds everywhere."""
    return bool(np.all(isclose(a, b, rtol, atol, equal_nan)))


@numbavec.jit
def hanning(M):
    """np.hanning(M): NumPy's formula, 0.5 + 0.5 cos(pi n / (M - 1))."""
    if M < 1:
        return np.empty(0)
    if M == 1:
        return np.ones(1)
    n = np.arange(1 - M, M, 2)
    return 0.5 + 0.5 * np.cos(np.pi * n / (M - 1))


@numbavec.jit
def flatnonzero(a):
    """np.flatnonzero(a): the flat indices of a's nonzero elements."""
    count = 0
    for v in a.flat:
        if v != 0:
            count += 1
    r = np.empty(count, np.int64)
    k = 0
    for i, v in enumerate(a.flat):
        if v != 0:
            r[k] = i
            k += 1
    return r


@numbavec.jit
def nonzero(a):
    """np.nonzero(a) of a 1-d, 2-d or 3-d array: a tuple of index arrays."""
    f = flatnonzero(a)
    if a.ndim == 1:
        return (f,)
    elif a.ndim == 2:
        return (f // a.shape[1], f % a.shape[1])
    else:
        plane = a.shape[1] * a.shape[2]
        return (f // plane, f % plane // a.shape[2], f % a.shape[2])


@numbavec.jit
def repeat(a, repeats):
    """np.repeat(a, repeats) without axis: a's elements (flattened), each
    repeated repeats times (an int, or one count per element)."""
    if repeats.ndim == 0:
        if repeats < 0:
            raise ValueError("negative dimensions are not allowed")
        r = np.empty(a.size * repeats, a.dtype)
        for i, v in enumerate(a.flat):
            for j in range(repeats):
                r[i * repeats + j] = v
        return r
    else:
        if repeats.shape[0] != a.size:
            raise ValueError("operands could not be broadcast together (np.repeat: one count "
                             "per element)")
        total = 0
        for c in repeats:
            if c < 0:
                raise ValueError("repeats may not contain negative values.")
            total += c
        r = np.empty(total, a.dtype)
        k = 0
        for i, v in enumerate(a.flat):
            for j in range(repeats[i]):
                r[k] = v
                k += 1
        return r


@numbavec.jit
def _joined(a, b):
    """a and b end to end, in their promoted type."""
    r = np.empty(a.shape[0] + b.shape[0], (a[:0] + b[:0]).dtype)
    r[:a.shape[0]] = a
    r[a.shape[0]:] = b
    return r


@numbavec.jit
def concatenate(arrays, axis=0):
    """np.concatenate of a tuple of one to four 1-d arrays, in their
    promoted type (a new array)."""
    if axis != 0 and axis != -1:
        raise ValueError("np.concatenate() in a kernel joins 1-d arrays, along axis 0")
    if len(arrays) == 1:
        return arrays[0].copy()
    elif len(arrays) == 2:
        return _joined(arrays[0], arrays[1])
    elif len(arrays) == 3:
        return _joined(_joined(arrays[0], arrays[1]), arrays[2])
    else:
        return _joined(_joined(arrays[0], arrays[1]), _joined(arrays[2], arrays[3]))


@numbavec.jit
def convolve(a, v):
    """np.convolve(a, v) of 1-d arrays, mode 'full': each output the sum of
    the products that meet there, in the arrays' promoted type."""
    if a.shape[0] == 0:
        raise ValueError("a cannot be empty")
    if v.shape[0] == 0:
        raise ValueError("v cannot be empty")
    n = a.shape[0]
    m = v.shape[0]
    r = np.zeros(n + m - 1, (a[:0] * v[:0]).dtype)
    for k in range(n + m - 1):
        s = r[k]
        for j in range(max(0, k - n + 1), min(k + 1, m)):
            s += a[k - j] * v[j]
        r[k] = s
    return r


@numbavec.jit
def flip(m, axis=False):
    """np.flip(m) (every axis) or np.flip(m, axis) of a 1-d to 3-d array: a
    view (False marks axis not given: a kernel has no None)."""
    if axis.dtype.kind == "b":
        if m.ndim == 1:
            return m[::-1]
        elif m.ndim == 2:
            return m[::-1, ::-1]
        else:
            return m[::-1, ::-1, ::-1]
    else:
        k = axis + m.ndim if axis < 0 else axis
        if k < 0 or k >= m.ndim:
            raise ValueError("np.flip(): axis is out of bounds for the array")
        if m.ndim == 1:
            return m[::-1]
        elif m.ndim == 2:
            return m[::-1] if k == 0 else m[:, ::-1]
        else:
            return m[::-1] if k == 0 else (m[:, ::-1] if k == 1 else m[:, :, ::-1])


@numbavec.jit
def _flattened(a):
    """a's elements in order, 1-d (a itself when it is)."""
    if a.ndim == 1:
        return a
    else:
        r = np.empty(a.size, a.dtype)
        for i, v in enumerate(a.flat):
            r[i] = v
        return r


@numbavec.jit
def outer(a, b):
    """np.outer(a, b): a (flattened) times b (flattened), a new 2-d array."""
    return _flattened(a)[:, np.newaxis] * _flattened(b)[np.newaxis, :]


@numbavec.jit
def linspace(start, stop, num=50, endpoint=True):
    """np.linspace of two values, as NumPy computes it: arange(num) times
    the step (or divided, then times the span, where the step is 0), plus
    start, the last value stop; float64, or float32 for float32 ends."""
    if num < 0:
        raise ValueError("Number of samples must be non-negative.")
    div = num - 1 if endpoint else num
    zero = start * 0.0 + stop * 0.0
    delta = zero.dtype.type(stop) - zero.dtype.type(start)
    y = np.arange(0, num).astype(zero.dtype)
    if div > 0:
        step = delta / div
        if step == 0:
            y = y / div * delta
        else:
            y = y * step
    else:
        y = y * delta
    y = y + zero.dtype.type(start)
    if endpoint and num > 1:
        y[num - 1] = stop
    return y


@numbavec.jit
def nanvar(a, ddof=0):
    """np.nanvar(a[, ddof]) of a whole array, as NumPy computes it: the mean
    of the elements that are not NaN (in their own float type), then the sum
    of their squared distances to it (|z|^2 for complex) over n - ddof; NaN
    where n - ddof <= 0 (NumPy also warns there)."""
    v = a[~np.isnan(a)]
    n = v.size
    total = v.sum()
    if v.dtype.kind == "f" or v.dtype.kind == "c":
        d = v - v.dtype.type(total / max(n, 1))
    else:
        d = v - total / max(n, 1)
    if v.dtype.kind == "c":
        s = (d.real * d.real + d.imag * d.imag).sum()
    else:
        s = (d * d).sum()
    dof = n - ddof
    return s.dtype.type(s / dof) if dof > 0 else s * np.nan


@numbavec.jit
def nanstd(a, ddof=0):
    """np.nanstd(a[, ddof]): the square root of np.nanvar."""
    return np.sqrt(nanvar(a, ddof))


@numbavec.jit
def ptp(a):
    """np.ptp(a) of a whole array: max - min in a's type (NaN propagates,
    integers wrap as NumPy's do)."""
    return a.max() - a.min()


@numbavec.jit
def nanargmax(a):
    """np.nanargmax(a) of a whole array: argmax with NaN read as -inf (as
    NumPy replaces them); ValueError where every element is NaN."""
    if a.dtype.kind == "f":
        nan = np.isnan(a)
        if nan.all():
            raise ValueError("All-NaN slice encountered")
        return np.argmax(np.where(nan, -np.inf, a))
    else:
        return np.argmax(a)


@numbavec.jit
def nanargmin(a):
    """np.nanargmin(a) of a whole array: argmin with NaN read as +inf."""
    if a.dtype.kind == "f":
        nan = np.isnan(a)
        if nan.all():
            raise ValueError("All-NaN slice encountered")
        return np.argmin(np.where(nan, np.inf, a))
    else:
        return np.argmin(a)


@numbavec.jit
def roll(a, shift):
    """np.roll(a, shift) without axis: the elements (in C order) moved shift
    places on, those past the end coming round to the start; a new array of
    a's shape."""
    r = np.empty_like(a)
    n = a.size
    if n > 0:
        s = shift % n
        for i, v in enumerate(a.flat):
            j = i + s if i + s < n else i + s - n
            r.flat[j] = v
    return r


@numbavec.jit
def angle(z, deg=False):
    """np.angle(z[, deg]) of a value or an array: arctan2(z.imag, z.real)
    (0 or pi for a real z), in degrees with deg=True."""
    if z.dtype.kind == "c":
        r = np.arctan2(z.imag, z.real)
    else:
        r = np.arctan2(0, z)
    if deg:
        r = r * (180 / np.pi)
    return r


@numbavec.jit
def copyto(dst, src):
    """np.copyto(dst, src): src broadcast into dst, converted to its type."""
    dst[...] = src


@numbavec.jit
def _empty_of(arrays, n):
    """A new 1-d array of n elements, of the promoted type of a tuple of
    one to four arrays."""
    if len(arrays) == 1:
        return np.empty(n, arrays[0].dtype)
    elif len(arrays) == 2:
        return np.empty(n, (arrays[0][:0] + arrays[1][:0]).dtype)
    elif len(arrays) == 3:
        return np.empty(n, (arrays[0][:0] + arrays[1][:0] + arrays[2][:0]).dtype)
    else:
        return np.empty(n, (arrays[0][:0] + arrays[1][:0] + arrays[2][:0] + arrays[3][:0]).dtype)


@numbavec.jit
def _put_row(r, i, a):
    """r[i] = a, a 1-d array of r's row length."""
    if a.ndim != 1 or a.shape[0] != r.shape[1]:
        raise ValueError("all input arrays must have the same shape")
    r[i] = a


@numbavec.jit
def _stacked(arrays, axis):
    """A tuple of one to four 1-d arrays of one length as the rows (axis 0)
    or the columns (axis 1) of a new 2-d array, in their promoted type."""
    if arrays[0].ndim != 1:
        raise ValueError("np.stack(), np.vstack() and np.column_stack() in a kernel stack 1-d "
                         "arrays")
    n = arrays[0].shape[0]
    k = len(arrays)
    r = _empty_of(arrays, k * n).reshape(k, n)
    _put_row(r, 0, arrays[0])
    if len(arrays) > 1:
        _put_row(r, 1, arrays[1])
    if len(arrays) > 2:
        _put_row(r, 2, arrays[2])
    if len(arrays) > 3:
        _put_row(r, 3, arrays[3])
    if axis == 0 or axis == -2:
        return r
    elif axis == 1 or axis == -1:
        return r.T.copy()
    else:
        raise ValueError("axis is out of bounds for the stacked array (0 or 1 in a kernel)")


@numbavec.jit
def stack(arrays, axis=0):
    """np.stack(arrays, axis=) of one to four 1-d arrays of one length: a
    new 2-d array, their rows (axis 0) or columns (axis 1 or -1)."""
    return _stacked(arrays, axis)


@numbavec.jit
def vstack(tup):
    """np.vstack of one to four 1-d arrays of one length: their rows."""
    return _stacked(tup, 0)


@numbavec.jit
def column_stack(tup):
    """np.column_stack of one to four 1-d arrays of one length: their columns."""
    return _stacked(tup, 1)


@numbavec.jit
def hstack(tup):
    """np.hstack of one to four 1-d arrays: them end to end (concatenate)."""
    return concatenate(tup)


@numbavec.jit
def divmod_(a, b):
    """divmod(a, b) and np.divmod(a, b) of values or arrays: (a // b, a % b),
    with the kernel's // and % (Python's signs; NumPy's for a zero divisor)."""
    return a // b, a % b


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
    np.linalg.solve: solve,
    np.diag: diag,
    np.round: round_,
    np.around: round_,
    np.isclose: isclose,
    np.allclose: allclose,
    np.hanning: hanning,
    np.flatnonzero: flatnonzero,
    np.nonzero: nonzero,
    np.repeat: repeat,
    np.concatenate: concatenate,
    np.convolve: convolve,
    np.flip: flip,
    np.outer: outer,
    np.linspace: linspace,
    np.nanvar: nanvar,
    np.nanstd: nanstd,
    np.ptp: ptp,
    np.nanargmax: nanargmax,
    np.nanargmin: nanargmin,
    np.roll: roll,
    np.angle: angle,
    np.copyto: copyto,
    np.stack: stack,
    np.vstack: vstack,
    np.column_stack: column_stack,
    np.hstack: hstack,
    divmod: divmod_,
    np.divmod: divmod_,
}
