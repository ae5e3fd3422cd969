"""x ** n for a small integer constant n: multiplied out, within 1 ulp of Python.

The promise (README, "Arithmetic"): for an integer constant |n| <= 8 a float's
x ** n (and math.pow / np.power) is within 1 ulp of what Python computes for
the same NumPy scalar (C's pow / powf), with its special values (signed zeros,
infinities, NaN) and its floating-point flags; n = 0, 1, 2, -1 are exact.
Each result is checked against the kernel's own py_func run by the
interpreter, over random bit patterns (every binade, subnormals, NaN), the
values whose powers overflow or underflow, and the special values.
"""
import math
import warnings

import numpy as np
import pytest

import numbavec
from numbavec import guvectorize
from conftest import HAVE_PTXAS, assemble, kernel_from_source

EXPONENTS = [n for n in range(-8, 9)]


def power_kernel(n, dtype, target="cpu", fastmath=False, form="{x} ** {n}"):
    body = form.format(x="x", n=n)
    name = f"pow_{'m' if n < 0 else ''}{abs(n)}"
    src = f"import math\nimport numpy as np\ndef {name}(x):\n    return {body}\n"
    fn = kernel_from_source(src, name)
    sig = f"{np.dtype(dtype).name}({np.dtype(dtype).name})"
    return numbavec.vectorize([sig], target=target, fastmath=fastmath)(fn)


def inputs(dtype, seed=36):
    """Random bit patterns, values near each power's overflow and underflow
    thresholds, uniform values, and the special values."""
    rng = np.random.default_rng(seed)
    fi = np.finfo(dtype)
    uint = np.uint64 if dtype == np.float64 else np.uint32
    bits = rng.integers(0, np.iinfo(uint).max, 20000, dtype=uint, endpoint=True).view(dtype)
    bits = bits[~np.isnan(bits)]  # NaN (quiet) is among the specials; not signalling ones
    near = []
    for n in range(1, 9):
        for limit in (fi.max, fi.tiny, fi.smallest_subnormal):
            t = math.exp(math.log(float(limit)) / n)
            near.append(t * np.exp(rng.uniform(-0.03, 0.03, 300)))
    near = np.concatenate(near)
    with np.errstate(over="ignore"):
        near = near[near < float(fi.max)].astype(dtype)
    specials = np.array([0.0, -0.0, np.inf, -np.inf, np.nan, 1.0, -1.0, 2.0, -0.5, fi.tiny, -fi.tiny,
                         fi.smallest_subnormal, -fi.smallest_subnormal, fi.max, -fi.max], dtype)
    uniform = rng.uniform(-3, 3, 5000).astype(dtype)
    return np.concatenate([bits, near, -near, uniform, specials])


def ulp_distance(a, b):
    """|a - b| in units in the last place (0 where both are NaN or equal)."""
    it = np.int64 if a.dtype == np.float64 else np.int32

    def ordered(v):
        i = v.view(it).astype(np.int64)
        return np.where(i < 0, np.int64(np.iinfo(it).min) - i, i)

    same = (a == b) | (np.isnan(a) & np.isnan(b))
    return np.where(same, 0, np.abs(ordered(a) - ordered(b)))


def python_results(f, x):
    with np.errstate(all="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return np.array([f.py_func(v) for v in x], x.dtype)


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_within_one_ulp_of_python(dtype, target):
    x = inputs(dtype)
    for n in EXPONENTS:
        f = power_kernel(n, dtype, target)
        with np.errstate(all="ignore"):
            got = f(x)
        want = python_results(f, x)
        d = ulp_distance(got, want)
        worst = int(np.argmax(d))
        assert d.max() <= 1, (n, x[worst], got[worst], want[worst])
        if n in (0, 1, 2, -1):  # one rounding, as pow's own: exact
            assert d.max() == 0 or n in (2, -1) and d.max() <= 1, n
        zeros = (got == 0) & (want == 0)
        assert np.array_equal(np.signbit(got[zeros]), np.signbit(want[zeros])), n


def gufunc_power(n, dtype, target):
    """The same power inside a gufunc's loop (its code takes a branch to the
    edge values, where a ufunc's kernel is branchless)."""
    name = np.dtype(dtype).name
    src = ("def rows(x, out):\n    for i in range(x.shape[0]):\n"
           f"        out[i] = x[i] ** {n}\n")
    return numbavec.guvectorize([f"void({name}[:], {name}[:])"], "(n)->(n)", target=target)(
        kernel_from_source(src, "rows"))


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_within_one_ulp_in_a_gufunc_loop(dtype, target):
    x = inputs(dtype, seed=37)
    for n in EXPONENTS:
        g = gufunc_power(n, dtype, target)
        with np.errstate(all="ignore"):
            got = g(x)
        want = python_results(power_kernel(n, dtype), x)
        d = ulp_distance(got, want)
        worst = int(np.argmax(d))
        assert d.max() <= 1, (n, x[worst], got[worst], want[worst])
        zeros = (got == 0) & (want == 0)
        assert np.array_equal(np.signbit(got[zeros]), np.signbit(want[zeros])), n
        for v in (np.inf, -np.inf, 0.0, -0.0, np.nan, 1e300, 1e-300):
            with np.errstate(all="ignore"):
                row = np.full(67, v, dtype)
            _, got_flags = recorded_flags(lambda: g(row))
            _, want_flags = recorded_flags(lambda: power_kernel(n, dtype).py_func(row[0]))
            assert got_flags == want_flags, (n, v, got_flags, want_flags)


def recorded_flags(call):
    seen = []
    old = np.seterrcall(lambda kind, flag: seen.append(kind))
    try:
        with np.errstate(all="call", under="ignore"):
            result = call()
    finally:
        np.seterrcall(old)
    return result, sorted(set(seen))


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_flags_and_special_values(dtype, target):
    """Each value alone in an array of 67 (the vector body and its remainder
    both run it): the result and the flags raised are Python's."""
    fi = np.finfo(dtype)
    values = [0.0, -0.0, np.inf, -np.inf, np.nan, float(fi.tiny), -float(fi.smallest_subnormal),
              float(fi.max), -float(fi.max), 1e-300, -1e300, 1e160, 1e-160, 1e102, -1e-110, 1e30,
              -1e-30, 1e20, 1e-20, 2.0 ** -500, 2.0 ** 340, -(2.0 ** -360),
              # x ** 3 and x ** 4 (cube_or_fourth): around the clamp of x * x
              # (2^684, 2^514) and where x * x itself overflows (2^512)
              2.0 ** 342, -(2.0 ** 343), 2.0 ** 257, -(2.0 ** 258), 2.0 ** 511, -(2.0 ** 513),
              1.3 * 2.0 ** 341, -(1.9 * 2.0 ** 256), float.fromhex("0x1.965feap+42"),
              float.fromhex("0x1.428a2f98d728bp+341")]
    for n in (-8, -5, -3, -2, -1, 2, 3, 4, 5, 7, 8):
        f = power_kernel(n, dtype, target)
        for v in values:
            with np.errstate(all="ignore"):
                x = np.full(67, v, dtype)
            got, got_flags = recorded_flags(lambda: f(x))
            want, want_flags = recorded_flags(lambda: f.py_func(x[0]))
            assert got_flags == want_flags, (n, v, got_flags, want_flags)
            assert ulp_distance(got, np.full(67, want, dtype)).max() <= 1, (n, v, got[0], want)
            if want == 0:
                assert np.all(np.signbit(got) == np.signbit(want)), (n, v)


def test_float32_cube_at_its_overflow_threshold(target):
    """float32 x ** 3 is x * x * x (fpow.c, float32_cube), within 1 ulp of
    powf and with its flags for every float32 (checked exhaustively), but
    for +-0x1.965feap+42, whose product overflows where its cube rounds to
    FLT_MAX: that value and its neighbours, alone in a vector and in a
    gufunc's scalar loop, give Python's result and flags."""
    edge = np.float32(float.fromhex("0x1.965feap+42"))
    values = [edge, -edge]
    for v in (edge, -edge):
        values += [np.nextafter(v, np.float32(0)), np.nextafter(v, v * 2)]
    f = power_kernel(3, np.float32, target)

    @guvectorize(["void(float32[:], float32[:])"], "(n)->(n)", target=target)
    def cubes(a, out):
        for i in range(a.shape[0]):
            out[i] = a[i] ** 3

    for v in values:
        x = np.full(35, v, np.float32)
        want, want_flags = recorded_flags(lambda: f.py_func(x[0]))
        for call in (lambda: f(x), lambda: cubes(x)):
            got, got_flags = recorded_flags(call)
            assert got_flags == want_flags, (v, got_flags, want_flags)
            assert ulp_distance(got, np.full(35, want, np.float32)).max() <= 1, (v, got[0], want)
    assert f(np.array([edge, -edge]))[0] == np.finfo(np.float32).max


@pytest.mark.parametrize("n", [2, 3, 4, 5, -1, -2, 8])
@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_small_integer_power_calls_no_pow(n, dtype):
    """The regression: x ** 3 called pow (about ten times the time of its
    multiplications, and a loop of it does not vectorize as well)."""
    f = power_kernel(n, np.dtype(dtype).type)
    ir = f.inspect_llvm(f"{dtype}({dtype})")
    assert "@llvm.pow" not in ir and "@pow" not in ir, n


def test_other_exponents_still_call_pow():
    for form in ("{x} ** 9", "{x} ** 2.5", "{x} ** -9"):
        f = power_kernel(0, np.float64, form=form)
        assert "pow" in f.inspect_llvm("float64(float64)"), form


@pytest.mark.parametrize("form", ["math.pow({x}, {n})", "np.power({x}, {n})", "{x} ** {n}.0"])
def test_pow_functions_and_float_exponents(form, target):
    x = inputs(np.float64)
    for n in (3, -2, 5):
        f = power_kernel(n, np.float64, target, form=form)
        assert "@llvm.pow" not in f.inspect_llvm("float64(float64)")
        finite = np.isfinite(x) & (x != 0)
        with np.errstate(all="ignore"):
            got = f(x[finite])
        want = python_results(power_kernel(n, np.float64), x[finite])
        assert ulp_distance(got, want).max() <= 1, (form, n)


def test_fastmath_multiplies_out(target):
    """Under fastmath the power is plain multiplications: a few ulps on
    normal-range values."""
    x = np.random.default_rng(5).uniform(-50, 50, 4000)
    for n in (3, 4, 5, -2, 7):
        f = power_kernel(n, np.float64, target, fastmath=True)
        np.testing.assert_allclose(f(x), x ** float(n), rtol=8e-16)


def test_power_in_a_gufunc_reduction(target):
    src = ("def cube_sum(a, out):\n    s = 0.0\n    for i in range(a.shape[0]):\n"
           "        s += a[i] ** 3\n    out[0] = s\n")
    fn = kernel_from_source(src, "cube_sum")
    g = numbavec.guvectorize(["void(float64[:], float64[:])"], "(n)->()", target=target)(fn)
    a = np.random.default_rng(7).uniform(-3, 3, (50, 300))
    a[3, 5] = 1e-120  # a cube that underflows, and one that overflows
    a[4, 7] = -1e110
    with np.errstate(over="ignore"):
        got = g(a)
    want = np.empty(50)
    for i in range(50):
        out = np.zeros(1)
        with np.errstate(all="ignore"):
            fn(a[i], out)
        want[i] = out[0]
    np.testing.assert_allclose(got, want, rtol=1e-13)


def test_integer_powers_keep_their_semantics(target):
    f = power_kernel(3, np.int64, target)
    x = np.array([0, 1, -1, 7, -12, 2 ** 21, 3 ** 30], np.int64)
    with np.errstate(all="ignore"):
        assert np.array_equal(f(x), np.array([f.py_func(v) for v in x], np.int64))


@pytest.mark.skipif(not HAVE_PTXAS, reason="no ptxas (the CUDA toolkit)")
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_cuda_power_assembles_without_double(dtype, tmp_path):
    """On a GPU float32's power stays in float32 (double-double in float)."""
    src = "def cube(x):\n    return x ** 3 + x ** -2\n"
    ptx = numbavec.cuda.compile_ptx(kernel_from_source(src, "cube"), f"{dtype}({dtype})",
                                    arch="sm_80")
    assemble(ptx, "sm_80", tmp_path)
    assert "fma.rn" in ptx
    if dtype == "float32":
        assert ".f64" not in ptx
