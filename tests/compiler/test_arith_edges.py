"""Integer and complex arithmetic of kernels at the edges NumPy defines
(src/compiler/arith.c): shifts by the width and more, floor division and
modulo by -1 and 0, integer powers with negative exponents, complex
division by zero.  Results are compared with NumPy's ufuncs on the same
dtypes (integer powers, which NumPy refuses for negative exponents, with
the exact Python result truncated, and 0 ** -n as Numba's ufuncs give it)."""
import numpy as np
import pytest

from numbavec import guvectorize, vectorize

INTS = ["i1", "i2", "i4", "i8", "u1", "u2", "u4", "u8"]


def lshift(a, b):
    return a << b


def rshift(a, b):
    return a >> b


def floordiv(a, b):
    return a // b


def mod(a, b):
    return a % b


def power(a, b):
    return a ** b


def cdiv(a, b):
    return a / b


def values(dtype):
    info = np.iinfo(dtype)
    vals = [0, 1, 2, 5, 100, info.max, info.max - 1]
    if info.min < 0:
        vals += [-1, -2, -5, -100, info.min, info.min + 1]
    return np.array(vals, dtype)


@pytest.mark.parametrize("kind", INTS)
def test_shifts_by_the_width_and_more(target, kind):
    """NumPy: a shift by the width or more gives 0 (>> of a negative: -1)."""
    bits = np.dtype(kind).itemsize * 8
    counts = [0, 1, bits - 1, bits, bits + 1, min(2 * bits, np.iinfo(kind).max)]
    x = values(kind)
    a, b = np.meshgrid(x, np.array(counts, kind))
    fl = vectorize([f"{kind}({kind},{kind})"], target=target)(lshift)
    fr = vectorize([f"{kind}({kind},{kind})"], target=target)(rshift)
    np.testing.assert_array_equal(fl(a, b), np.left_shift(a, b), strict=True)
    np.testing.assert_array_equal(fr(a, b), np.right_shift(a, b), strict=True)


@pytest.mark.parametrize("kind", INTS)
def test_floor_division_and_modulo(target, kind):
    """Python's floor semantics, by -1 (the minimum // -1 wraps, as in
    NumPy) and by 0 (0, with the divide-by-zero flag)."""
    x = values(kind)
    divisors = [1, 2, 3, 7]
    if np.iinfo(kind).min < 0:
        divisors += [-1, -2, -3, -7]
    a, b = np.meshgrid(x, np.array(divisors, kind))
    fd = vectorize([f"{kind}({kind},{kind})"], target=target)(floordiv)
    fm = vectorize([f"{kind}({kind},{kind})"], target=target)(mod)
    with np.errstate(all="ignore"):
        np.testing.assert_array_equal(fd(a, b), np.floor_divide(a, b), strict=True)
        np.testing.assert_array_equal(fm(a, b), np.remainder(a, b), strict=True)
        zero = np.zeros_like(x)
        np.testing.assert_array_equal(fd(x, zero), np.floor_divide(x, zero), strict=True)
        np.testing.assert_array_equal(fm(x, zero), np.remainder(x, zero), strict=True)
    with np.errstate(divide="raise"), pytest.raises(FloatingPointError):
        fd(x, zero)


def truncated_power(a, e, kind):
    """Python's a ** e truncated; 0 ** -n (ZeroDivisionError) the minimum."""
    return np.iinfo(kind).min if a == 0 and e < 0 else int(int(a) ** e)


@pytest.mark.parametrize("kind", ["i1", "i4", "i8"])
def test_negative_integer_powers_truncate_the_exact_result(target, kind):
    """NumPy refuses negative integer exponents for arrays; a kernel gives
    the exact result truncated: 1 ** -n is 1, (-1) ** -n is +-1, others 0,
    and 0 ** -n the type's minimum with no warning, as Numba's ufuncs give
    (its test_power_integer)."""
    f = vectorize([f"{kind}({kind},{kind})"], target=target)(power)
    bases = np.array([-3, -2, -1, 0, 1, 2, 3], kind)
    with np.errstate(all="raise"):
        for e in (-1, -2, -3, -4):
            got = f(bases, np.full(len(bases), e, kind))
            want = np.array([truncated_power(a, e, kind) for a in bases], kind)
            np.testing.assert_array_equal(got, want, strict=True)
        # a constant exponent is multiplied out in line: the same rule
        g = vectorize([f"{kind}({kind})"], target=target)(lambda_minus_three)
        np.testing.assert_array_equal(
            g(bases), np.array([truncated_power(a, -3, kind) for a in bases], kind), strict=True)


def lambda_minus_three(a):
    return a ** -3


def divide_rows(x, y, out):
    for i in range(x.shape[0]):
        out[i] = x[i] / y[i]


SPECIAL = [0.0, -0.0, 1.0, -2.5, 3e-310, 1e300, -1e300, np.inf, -np.inf, np.nan]


@pytest.mark.parametrize("kind", ["c8", "c16"])
def test_complex_division_in_a_loop_is_numpys_with_its_flags(target, kind):
    """In a gufunc's loop LLVM if-converted Smith's two branches and divided
    by the zero part of y where the other branch was taken: 'divide by zero'
    for (1+2j) / (2+0j), which NumPy does not raise.  Every pair of parts
    from SPECIAL, against np.divide: the same values, and for finite
    operands the same flags (each set where NumPy sets it, and only there;
    with an infinite or NaN part NumPy's loop raises 'invalid' more often
    than Smith's formula does, so there a kernel raises no flag NumPy does
    not)."""
    f = guvectorize([f"void({kind}[:], {kind}[:], {kind}[:])"], "(n),(n)->(n)",
                    target=target)(divide_rows)
    z = np.zeros((len(SPECIAL), len(SPECIAL)), kind)
    with np.errstate(all="ignore"):  # 1e300 in complex64 is inf
        z.real, z.imag = np.array(SPECIAL)[:, None], np.array(SPECIAL)[None, :]
    z = z.ravel()
    x, y = np.repeat(z, len(z)), np.tile(z, len(z))
    with np.errstate(all="ignore"):
        np.testing.assert_array_equal(f(x, y), np.divide(x, y), strict=True)
    for i in range(len(x)):
        finite = np.isfinite(x[i]) and np.isfinite(y[i])
        for flag in ("divide", "invalid", "over", "under"):
            with np.errstate(all="ignore", **{flag: "raise"}):
                want = outcome_of(lambda: np.divide(x[i:i + 1], y[i:i + 1]))
                got = outcome_of(lambda: f(x[i:i + 1], y[i:i + 1]))
            assert got == want or (not finite and got == "ok"), (x[i], y[i], flag, got, want)
    ordinary = np.array([1 + 2j, 3 - 1j] * 8, kind)
    real = {"c8": "f4", "c16": "f8"}[kind]
    by_reals = guvectorize([f"void({kind}[:], {real}[:], {kind}[:])"], "(n),(n)->(n)",
                           target=target)(divide_rows)
    with np.errstate(all="raise"):
        f(ordinary, np.array([2 + 0j, 0 + 3j] * 8, kind))
        # a real y is y + 0j: the zero part a constant LLVM folds with
        got = by_reals(ordinary, np.array([2.0, -0.5] * 8, real))
    np.testing.assert_array_equal(got, ordinary / np.array([2.0, -0.5] * 8, real), strict=True)


def unit_of_first(x, r, out):
    out[0] = x[0] / abs(x[0]) + x[0] / r[0]


@pytest.mark.parametrize("kind", ["c8", "c16"])
def test_a_complex_divided_by_a_real_outside_a_loop_raises_no_flag(target, kind):
    """A real divisor is complex with the constant 0 as its imaginary part;
    LLVM then reduced the second test of y = 0 to the first, and divided x
    by y's zero part for every call: 'divide by zero' (found by
    np.linalg.slogdet's sign *= d / abs(d))."""
    real = {"c8": "f4", "c16": "f8"}[kind]
    f = guvectorize([f"void({kind}[:], {real}[:], {kind}[:])"], "(n),(n)->()",
                    target=target)(unit_of_first)
    rows = 70_000  # past the quick code's budget: the optimised code runs
    x = np.tile(np.array([[1 + 2j, 0], [3 - 1j, 5j]], kind), (rows // 2, 1))
    r = np.tile(np.array([[2.0, 0.0], [-0.5, 1.0]], real), (rows // 2, 1))
    for _ in range(2):
        with np.errstate(all="raise"):
            got = f(x, r)
        np.testing.assert_allclose(got, x[:, 0] / np.abs(x[:, 0]) + x[:, 0] / r[:, 0], rtol=1e-6)


def outcome_of(call):
    try:
        call()
        return "ok"
    except FloatingPointError as e:
        return str(e).split(" encountered")[0]


@pytest.mark.parametrize("kind", ["c8", "c16"])
def test_complex_division_by_zero_and_by_equal_parts(target, kind):
    f = vectorize([f"{kind}({kind},{kind})"], target=target)(cdiv)
    x = np.array([1 + 1j, -2 + 0.5j, 0j, 3 - 4j], kind)
    for d in (0j, 2 + 2j, 2 - 2j, -3 + 3j):
        y = np.full(len(x), d, kind)
        with np.errstate(all="ignore"):
            np.testing.assert_array_equal(f(x, y), np.divide(x, y), strict=True)
