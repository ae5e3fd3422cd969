"""Float compares in kernels raise no invalid flag for a quiet NaN, as
NumPy's own compares do not, on every path the machine code takes: the
vectorized contiguous loop, the scalar strided loop, reduce, a gufunc's
scalar loop.  Host code compares with plain `fcmp`, which the JIT makes
quiet before code generation (jit.c: quiet_compares); x86's plain lowering
(cmpltsd, maxsd, vcmpltpd) signals.
"""
import numpy as np
import pytest

from numbavec import guvectorize, vectorize


def larger(x, y):
    return x if x > y else y


def in_range(x, y):
    return (x < y) + (x <= y) * 2 + (x >= 0.5) * 4 + (y > x) * 8


def running_max(a, out):
    m = a[0]
    for i in range(1, a.shape[0]):
        if a[i] > m:
            m = a[i]
    out[0] = m


def operands(dtype):
    rng = np.random.default_rng(0)
    x, y = rng.standard_normal((2, 999)).astype(dtype)
    x[::7] = np.nan
    y[::5] = np.nan
    return x, y


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("path", ["contiguous", "strided", "broadcast", "reduce"])
def test_ufunc_compares_are_quiet(target, dtype, path):
    sig = "f4(f4, f4)" if dtype == np.float32 else "f8(f8, f8)"
    big, cmp = vectorize([sig], target=target)(larger), vectorize([sig], target=target)(in_range)
    x, y = operands(dtype)
    if path == "strided":
        x, y = x[::3], y[1::3]
    elif path == "broadcast":
        y = dtype(np.nan)
    with np.errstate(invalid="raise"):
        if path == "reduce":
            got, want = big.reduce(x), x[0]
            for v in x[1:]:
                want = larger(want, v)
            np.testing.assert_array_equal(got, want)
            return
        got_big, got_cmp = big(x, y), cmp(x, y)
    with np.errstate(invalid="ignore"):
        np.testing.assert_array_equal(got_big, np.where(x > y, x, y))
        np.testing.assert_array_equal(got_cmp, in_range(x, y).astype(dtype))


@pytest.mark.parametrize("dtype", ["f4", "f8"])
def test_gufunc_compare_loop_is_quiet(target, dtype):
    g = guvectorize([f"void({dtype}[:], {dtype}[:])"], "(n)->()", target=target)(running_max)
    a = np.random.default_rng(1).standard_normal((300, 77)).astype(dtype)
    a[::3, ::4] = np.nan
    with np.errstate(invalid="raise"):
        got = g(a)
        got_strided = g(a[:, ::2])
    for rows, out in ((a, got), (a[:, ::2], got_strided)):
        want = np.empty(len(rows), dtype)
        for k, r in enumerate(rows):
            running_max(r, want[k:k + 1])
        np.testing.assert_array_equal(out, want)
