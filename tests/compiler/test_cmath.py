"""cmath in kernels, NumPy's complex forms (np.exp(z) ...), round(), and the
remaining math/NumPy functions (ldexp, sign, fmin/fmax, dtype aliases).

The complex functions call the C library's C99 functions, as NumPy's loops
do: results are compared with NumPy (special values exactly, the rest within
NUMPY_ULPS: see assert_matches_numpy), and with Python's cmath
within COMPLEX_ULPS units in the last place of |result| (cmath computes
some functions with other formulas; where the two disagree on special
values, numbavec follows NumPy).
"""
import cmath
import math
import warnings

import numpy as np
import pytest

from conftest import compile_ufunc
from numbavec import _core

COMPLEX_ULPS = 8
NUMPY_ULPS = 2

NUMPY_NAME = {"asin": "arcsin", "acos": "arccos", "atan": "arctan", "asinh": "arcsinh",
              "acosh": "arccosh", "atanh": "arctanh"}
FUNCTIONS = ["exp", "log", "sqrt", "sin", "cos", "tan", "sinh", "cosh", "tanh",
             "asin", "acos", "atan", "asinh", "acosh", "atanh"]


def complex_inputs(dtype):
    rng = np.random.default_rng(11)
    z = rng.standard_normal(3000) * 4 + 1j * rng.standard_normal(3000) * 4
    edges = [0, -0.0, 1, -1, 1j, -1j, 2 + 0j, -2 + 0j, 0.5 - 0j, 1e-300 + 1e-300j, 30 + 1j,
             -30 - 700j]
    return np.concatenate([z, np.array(edges, complex)]).astype(dtype)


def ulps_from(got, ref):
    """Error of got in ULPs of |ref| (a component near 0 is not measured
    relative to itself: cancellation there is not the function's error)."""
    scale = np.spacing(np.abs(ref)).astype(np.float64)   # in the precision of ref
    err = np.maximum(np.abs(got.real - ref.real), np.abs(got.imag - ref.imag))
    return np.max(err / np.where(scale == 0, 1, scale))


def assert_matches_numpy(got, ref):
    """Special values exactly (NaN, infinities, zeros with their signs), the
    rest within NUMPY_ULPS.  NumPy's wheels call the platform's C99
    functions when its build's libm passes NumPy's checks and npymath's own
    otherwise (NumPy 2.2's do for the inverse functions): bit for bit in the
    first case, an ULP or two apart in the second."""
    for part in ("real", "imag"):
        g, r = getattr(got, part), getattr(ref, part)
        np.testing.assert_array_equal(np.isnan(g), np.isnan(r))
        special = ~np.isnan(r) & (np.isinf(r) | (r == 0))
        np.testing.assert_array_equal(g[special], r[special])
        np.testing.assert_array_equal(np.signbit(g[special]), np.signbit(r[special]))
    finite = np.isfinite(ref.real) & np.isfinite(ref.imag)
    assert ulps_from(got[finite], ref[finite]) <= NUMPY_ULPS


@pytest.fixture(scope="module")
def cmath_ufuncs(tmp_path_factory):
    """One ufunc per function (complex128 and complex64), compiled once."""
    import importlib.util
    out = {}
    folder = tmp_path_factory.mktemp("cmath_kernels")
    for name in FUNCTIONS:
        path = folder / f"k_{name}.py"
        path.write_text(f"import cmath\n\ndef kernel(z):\n    return cmath.{name}(z)\n")
        spec = importlib.util.spec_from_file_location(f"k_{name}", path)
        mod = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(mod)
        out[name] = mod.kernel
    return out


@pytest.mark.parametrize("name", FUNCTIONS)
def test_cmath_function(cmath_ufuncs, target, name):
    ufunc = compile_ufunc(cmath_ufuncs[name], ['complex128(complex128)', 'complex64(complex64)'],
                          target)
    npf = getattr(np, NUMPY_NAME.get(name, name))
    with np.errstate(all="ignore"):
        for dtype in (np.complex128, np.complex64):
            z = complex_inputs(dtype)
            got = ufunc(z)
            assert got.dtype == dtype
            assert_matches_numpy(got, npf(z))
        z = complex_inputs(np.complex128)
        got = ufunc(z)
        ref, keep = [], []
        for i, v in enumerate(z):
            try:
                ref.append(getattr(cmath, name)(complex(v)))
                keep.append(i)
            except ValueError:      # cmath raises at poles (log(0)); NumPy gives inf
                pass
        assert ulps_from(got[keep], np.array(ref)) <= COMPLEX_ULPS


def test_numpy_forms_on_complex(target):
    def kernel(z):
        return np.exp(z) + np.sqrt(z) * np.log(z) + np.arctanh(z)

    ufunc = compile_ufunc(kernel, ['complex128(complex128)'], target)
    z = complex_inputs(np.complex128)
    with np.errstate(all="ignore"):
        # each function is NumPy's bit for bit (above); NumPy's SIMD complex
        # multiply may round the product differently in the last place
        np.testing.assert_allclose(ufunc(z), kernel(z), rtol=1e-14)


def test_special_values_follow_numpy():
    ufunc = compile_ufunc(lambda z: cmath.sqrt(z), ['complex128(complex128)'], "cpu")
    inf, nan = math.inf, math.nan
    z = np.array([complex(-inf, nan), complex(nan, inf), complex(-0.0, -0.0), complex(inf, -inf)])
    with np.errstate(all="ignore"):
        np.testing.assert_array_equal(ufunc(z), np.sqrt(z))


def test_phase_polar_rect(target):
    def kernel(z):
        r, phi = cmath.polar(z)
        w = cmath.rect(r, phi)
        return r + cmath.phase(z) * 1j + (w - z) * 1000

    ufunc = compile_ufunc(kernel, ['complex128(complex128)'], target)
    z = complex_inputs(np.complex128)[:500]
    got = ufunc(z)
    expected = np.array([kernel(complex(v)) for v in z])
    np.testing.assert_allclose(got, expected, rtol=1e-12, atol=1e-9)


def test_polar_of_complex64_is_float32():
    ufunc = compile_ufunc(lambda z: cmath.polar(z)[0], ['complex64(complex64)'], "cpu")
    types = _core._code_of(ufunc).variable_types()
    assert list(types.values())[0]["<return>"] == "complex64"
    assert ufunc(np.complex64(3 + 4j)) == 5


def test_complex_predicates(target):
    def kernel(z):
        return cmath.isnan(z) + 2 * cmath.isinf(z) + 4 * cmath.isfinite(z) + 8 * np.isnan(z)

    ufunc = compile_ufunc(kernel, ['int64(complex128)'], target)
    inf, nan = math.inf, math.nan
    z = np.array([1 + 1j, complex(nan, 0), complex(0, inf), complex(inf, nan)])
    expected = [kernel(complex(v)) for v in z]
    np.testing.assert_array_equal(ufunc(z), expected)


# ---- round ----

HALVES = np.array([0.5, 1.5, 2.5, -0.5, -1.5, -2.5, 2.4999999, 1e15 + 0.5, 3.7, -3.2, 0.0])


def test_round_is_bankers_to_int(target):
    ufunc = compile_ufunc(lambda x: round(x), ['int64(float64)', 'int64(float32)'], target)
    np.testing.assert_array_equal(ufunc(HALVES), [round(v) for v in HALVES])
    x32 = HALVES.astype(np.float32)
    np.testing.assert_array_equal(ufunc(x32), [round(float(v)) for v in x32])


def test_round_of_int_is_identity():
    ufunc = compile_ufunc(lambda i: round(i), ['int32(int32)'], "cpu")
    np.testing.assert_array_equal(ufunc(np.int32([-7, 0, 9])), [-7, 0, 9])


@pytest.mark.parametrize("ndigits", [-2, -1, 0, 1, 2, 3])
def test_round_ndigits_is_numpys(target, ndigits):
    ufunc = compile_ufunc(lambda x, n: round(x, n), ['float64(float64, int64)',
                                                     'float32(float32, int64)'], target)
    rng = np.random.default_rng(3)
    x = np.concatenate([rng.uniform(-1000, 1000, 2000), [2.675, 1.005, 0.125, 250.0, -0.0]])
    np.testing.assert_array_equal(ufunc(x, ndigits), np.round(x, ndigits))
    x32 = x.astype(np.float32)
    got = ufunc(x32, np.int64(ndigits), signature=('f4', 'i8', 'f4'))
    np.testing.assert_array_equal(got, np.round(x32, ndigits))


# ---- the remaining math and NumPy functions ----

def test_ldexp(target):
    ufunc = compile_ufunc(lambda x, i: math.ldexp(x, i), ['float64(float64, int64)',
                                                         'float32(float32, int32)'], target)
    x = np.array([1.0, 0.75, -3.0, 5e-324, 1.5, 0.0])
    e = np.array([3, -2, 10, 1, 5000, -5000])
    with np.errstate(all="ignore"):
        np.testing.assert_array_equal(ufunc(x, e), np.ldexp(x, e))
        x32, e32 = x.astype(np.float32), e.astype(np.int32)
        np.testing.assert_array_equal(ufunc(x32, e32), np.ldexp(x32, e32))


def test_sign(target):
    ufunc = compile_ufunc(lambda x: np.sign(x), ['float64(float64)', 'int32(int32)',
                                                 'uint8(uint8)'], target)
    x = np.array([-2.0, -0.0, 0.0, 3.0, np.inf, -np.inf, np.nan])
    with warnings.catch_warnings():
        warnings.simplefilter("error")      # NaN raises no invalid flag
        np.testing.assert_array_equal(ufunc(x), np.sign(x))
    np.testing.assert_array_equal(ufunc(np.int32([-5, 0, 7])), np.int32([-1, 0, 1]))
    np.testing.assert_array_equal(ufunc(np.uint8([0, 200])), np.uint8([0, 1]))


def np_fmin(a, b):
    return np.fmin(a, b)


def np_fmax(a, b):
    return np.fmax(a, b)


def np_minimum(a, b):
    return np.minimum(a, b)


def np_maximum(a, b):
    return np.maximum(a, b)


@pytest.mark.parametrize("fname", ["fmin", "fmax", "minimum", "maximum"])
def test_fmin_fmax(target, fname):
    ufunc = compile_ufunc(globals()["np_" + fname], ['float64(float64, float64)', 'int64(int64, int64)'],
                          target)
    a = np.array([1.0, np.nan, 3.0, np.nan, -0.0, 2.0] * 10)
    b = np.array([np.nan, 2.0, 1.0, np.nan, 0.0, 2.0] * 10)
    with np.errstate(invalid="ignore"):
        np.testing.assert_array_equal(ufunc(a, b), getattr(np, fname)(a, b))
    i, j = np.arange(-5, 5), np.arange(5, -5, -1)
    np.testing.assert_array_equal(ufunc(i, j), getattr(np, fname)(i, j))


def test_abs_and_isnan_on_other_kinds(target):
    def kernel(z, i):
        return np.abs(z) + np.isnan(i) + np.isinf(i) + np.isfinite(i)

    ufunc = compile_ufunc(kernel, ['float64(complex128, int64)'], target)
    np.testing.assert_array_equal(ufunc(np.array([3 + 4j, -1j]), np.array([1, 2])), [6.0, 2.0])


def test_dtype_constructors_and_aliases(target):
    def kernel(x):
        return np.intp(x) + np.int_(x) + np.intc(x) + np.longlong(x) + np.double(x) + np.uint(x)

    ufunc = compile_ufunc(kernel, ['float64(float64)'], target)
    assert ufunc(2.7) == 2 + 2 + 2 + 2 + 2.7 + 2


def test_math_constants(target):
    def kernel(x):
        return x + math.tau + (math.inf > x) + (1.0 if math.isnan(math.nan) else 0.0)

    ufunc = compile_ufunc(kernel, ['float64(float64)'], target)
    assert ufunc(1.0) == 1.0 + math.tau + 1 + 1
