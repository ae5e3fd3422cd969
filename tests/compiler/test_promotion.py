"""Promotion inside kernels and the loop a lazy ufunc compiles, against
NumPy 2's own rules (np.result_type, NEP 50's weak Python scalars).

src/compiler/cctype.c types `a + b` of two typed values as np.result_type
does, and a Python number (a literal in the kernel) as a weak value that
takes the other operand's type.  src/vectorize/dufunc.c picks the input
types a lazy ufunc compiles for, as NumPy's own dispatch would: Python
scalars weak against the arrays, signature= and dtype= where given.  Each
test checks the result's dtype and values against NumPy computing the same
expression on the same dtypes.
"""
import itertools

import numpy as np
import pytest

from numbavec import guvectorize, vectorize

KINDS = ["?", "i1", "i2", "i4", "i8", "u1", "u2", "u4", "u8", "f4", "f8", "c8", "c16"]


def sample(dtype, n=6):
    dtype = np.dtype(dtype)
    if dtype.kind == "b":
        return np.array([True, False, True, True, False, True][:n])
    if dtype.kind == "u":
        return (np.arange(n) * 37 % 200 + 3).astype(dtype)
    if dtype.kind == "i":
        return (np.arange(n) * 37 % 200 - 97).astype(dtype)
    if dtype.kind == "f":
        return (np.arange(n) * 1.25 - 2.5).astype(dtype)
    return (np.arange(n) * 1.25 - 2.5 + 1j * (np.arange(n) - 1.5)).astype(dtype)


def add(a, b):
    return a + b


def mul(a, b):
    return a * b


@pytest.fixture(scope="module")
def lazy_add():
    return vectorize()(add), vectorize()(mul)


def numpy_kind(dtype):
    return np.dtype(dtype).str[1:]


@pytest.mark.parametrize("a", KINDS)
@pytest.mark.slow
def test_two_typed_values_promote_as_result_type(lazy_add, a):
    """Every pair of kinds: the kernel's a + b (and a * b) has
    np.result_type's dtype and NumPy's values (wrapping where NumPy wraps)."""
    fadd, fmul = lazy_add
    x = sample(a)
    for b in KINDS:
        y = sample(b)[::-1].copy()
        with np.errstate(all="ignore"):
            for f, ref in ((fadd, np.add), (fmul, np.multiply)):
                if np.dtype(a).kind == np.dtype(b).kind == "b" and ref is np.add:
                    want = np.logical_or(x, y)
                else:
                    want = ref(x, y)
                got = f(x, y)
                assert got.dtype == np.result_type(x, y), (a, b)
                np.testing.assert_array_equal(got, want, strict=True, err_msg=f"{a} {b}")


def with_int(a):
    return a + 1


def with_float(a):
    return a + 1.5


def with_complex(a):
    return a + 1j


def with_two_literals(a):
    return a + (2 + 0.5)


def with_int_literals(a):
    return a * (7 // 2)


@pytest.mark.parametrize("kernel, literal", [(with_int, 1), (with_float, 1.5),
                                             (with_complex, 1j)])
@pytest.mark.parametrize("kind", KINDS)
def test_a_literal_is_weak(kernel, literal, kind):
    """A Python number in the kernel meets a typed value as NEP 50 says:
    it takes the typed value's kind where it fits (float32 + 1j is
    complex64, bool + 1 is int64)."""
    x = sample(kind)
    f = vectorize()(kernel)
    want = x + literal
    got = f(x)
    assert got.dtype == want.dtype
    np.testing.assert_array_equal(got, want, strict=True)


@pytest.mark.parametrize("kind", ["i1", "u2", "f4", "f8", "c8"])
def test_two_literals_together_stay_weak(kind):
    """2 + 0.5 is the weak float 2.5 (two Python numbers promote to the
    wider kind), which then takes the typed value's type."""
    x = sample(kind)
    got = vectorize()(with_two_literals)(x)
    want = x + 2.5
    assert got.dtype == want.dtype
    np.testing.assert_array_equal(got, want, strict=True)
    got = vectorize()(with_int_literals)(x)
    want = x * 3
    assert got.dtype == want.dtype
    np.testing.assert_array_equal(got, want, strict=True)


# ---- the loop a lazy ufunc compiles ----

@pytest.mark.parametrize("kind", ["i1", "i8", "u4", "f4"])
def test_python_scalar_arguments_are_weak(kind):
    """f(array, 1.5): the loop takes the common type of the array and a
    Python float, as np.add(array, 1.5) does."""
    f = vectorize()(add)
    x = sample(kind)
    for scalar in (1.5, 2, 1j):
        want = np.add(x, scalar)
        got = f(x, scalar)
        assert got.dtype == want.dtype, (kind, scalar)
        np.testing.assert_array_equal(got, want, strict=True)


def test_python_scalars_alone_take_numpys_defaults():
    f = vectorize()(add)
    for a, b in ((1, 2), (1.5, 2), (1, 2j), (True, 2)):
        want = np.add(a, b)
        got = f(a, b)
        assert np.asarray(got).dtype == np.asarray(want).dtype, (a, b)
        assert got == want
    assert "ll->l" in f.types


def test_dtype_fixes_the_computation_type():
    """dtype= alone: the inputs compute in its type, as NumPy's ufuncs do."""
    f = vectorize()(mul)
    x = np.array([1.1, 2.2, 3.3], "f4")
    got = f(x, x, dtype="f8")
    assert got.dtype == np.float64
    np.testing.assert_array_equal(got, x.astype("f8") * x.astype("f8"))
    assert "dd->d" in f.types
    np.testing.assert_array_equal(f(x, x, signature=("f4", "f4", "f4")), x * x)
    # one input fixed, and the output: the other input keeps its own type
    i = np.arange(3, dtype="i8")
    got = f(i, x, signature=(None, "f4", "f8"))
    np.testing.assert_array_equal(got, i * x.astype("f8"), strict=True)
    assert "lf->d" in f.types
    # inputs and output fixed apart: no loop, as np.multiply has none
    for sig in (("f4", "f4", "f8"), ("i1", "i1", "f8")):
        with pytest.raises(TypeError):
            np.multiply(x, x, signature=sig)
        with pytest.raises(TypeError):
            f(x, x, signature=sig)


@pytest.mark.parametrize("order", [["f4(f8)", "f8(f8)"], ["f8(f8)", "f4(f8)"]])
def test_loops_differing_in_their_output_only(order):
    """Two loops with the same inputs and different outputs: NumPy takes the
    first for a plain call (out= is cast into), and the one dtype= or
    signature= names; the loop run is the one NumPy took."""
    f = vectorize(order)(lambda x: x * 3.0)
    x = np.array([1.0 / 3.0, 2.0, 1e-40, -7.5])
    first = order[0][:2]
    np.testing.assert_array_equal(f(x), (x * 3.0).astype(first), strict=True)
    for dtype in ("f4", "f8"):
        want = (x * 3.0).astype(dtype)
        np.testing.assert_array_equal(f(x, dtype=dtype), want, strict=True)
        np.testing.assert_array_equal(f(x, signature=("f8", dtype)), want, strict=True)
        out = np.zeros(4, dtype)
        f(x, out=out)
        np.testing.assert_array_equal(out, (x * 3.0).astype(first).astype(dtype))


def test_reduce_over_several_axes_with_an_identity():
    """A lazy ufunc with an identity is reorderable: reduce over several
    axes (and of nothing) works as np.add's."""
    f = vectorize(identity=0)(add)
    m = np.arange(24.0).reshape(2, 3, 4)
    np.testing.assert_array_equal(f.reduce(m, axis=(0, 2)), np.add.reduce(m, axis=(0, 2)))
    np.testing.assert_array_equal(f.reduce(m, axis=None), np.add.reduce(m, axis=None))
    assert f.reduce(np.empty((0,))) == 0.0
    np.testing.assert_array_equal(f.reduce(np.empty((3, 0)), axis=1), np.zeros(3))


@pytest.mark.parametrize("a, b", list(itertools.product(["i1", "u1", "f4"], repeat=2)))
def test_out_of_another_dtype(a, b):
    """out= fixes the output's type only: the loop is the inputs' own, its
    result cast into out= as NumPy casts."""
    f = vectorize()(add)
    x, y = sample(a), sample(b)
    out = np.zeros(len(x), "f8")
    f(x, y, out=out)
    np.testing.assert_array_equal(out, np.add(x, y).astype("f8"))


# ---- a variable holding a Python float and a typed value ----

def accumulate_from_literal(a, out):
    s = 0.0
    for i in range(a.shape[0]):
        s += a[i]
    out[0] = s


def accumulate_from_float32(a, out):
    s = np.float32(0.0)
    for i in range(a.shape[0]):
        s += a[i]
    out[0] = s


def accumulate_complex(a, out):
    s = 0j
    for i in range(a.shape[0]):
        s += a[i]
    out[0] = s


def accumulate_int(a, out):
    s = 0
    for i in range(a.shape[0]):
        s += a[i]
    out[0] = s


def zero_when_large(x):
    y = x
    if x > 100:
        y = 0.0
    return y


def run_on(py, a, out_dtype):
    out = np.zeros(1, out_dtype)
    with np.errstate(all="ignore"):
        py(a, out)
    return out[0]


def test_an_accumulator_started_at_a_float_literal_is_float64(target):
    """`s = 0.0; s += a[i]` over float32 a accumulates in float64, as Numba
    does (typeinfer.c, held: a variable holds the Python float's double):
    1e8 + 1 - 1e8 is 1 in float64 and 0 in float32.  The interpreter's s
    becomes float32 after its first addition (NEP 50), so the reference runs
    the kernel on float64 copies and rounds once into the float32 output."""
    g = guvectorize(["void(float32[:], float32[:])"], "(n)->()", target=target)(
        accumulate_from_literal)
    a = np.array([[1e8, 1, -1e8], [0.1, 0.2, 0.3]], np.float32)
    got = g(a)
    for row, v in zip(a, got):
        want = np.float32(run_on(accumulate_from_literal, row.astype(np.float64), np.float64))
        assert v == want
    assert got[0] == 1.0 and run_on(accumulate_from_literal, a[0], np.float32) == 0.0


def test_an_accumulator_started_at_a_typed_zero_keeps_its_type(target):
    """np.float32(0.0) is a float32: the sum stays in float32, as the
    interpreter's does (the way to ask for it)."""
    g = guvectorize(["void(float32[:], float32[:])"], "(n)->()", target=target)(
        accumulate_from_float32)
    a = np.array([[1e8, 1, -1e8], [0.1, 0.2, 0.3]], np.float32)
    got = g(a)
    want = [run_on(accumulate_from_float32, row, np.float32) for row in a]
    np.testing.assert_array_equal(got, want)
    assert got[0] == 0.0


def test_a_complex_literal_accumulator_is_complex128(target):
    g = guvectorize(["void(complex64[:], complex64[:])"], "(n)->()", target=target)(
        accumulate_complex)
    a = np.array([[1e8 + 1e8j, 1 + 1j, -1e8 - 1e8j]], np.complex64)
    assert g(a)[0] == 1 + 1j
    assert run_on(accumulate_complex, a[0], np.complex64) == 0


def test_an_int_literal_accumulator_keeps_the_small_type(target):
    """A Python int stays weak: an int8 sum wraps in int8, as the
    interpreter's (NEP 50), the deliberate difference from Numba."""
    g = guvectorize(["void(int8[:], int8[:])"], "(n)->()", target=target)(accumulate_int)
    a = np.array([[100, 100, 100]], np.int8)
    with np.errstate(all="ignore"):
        assert g(a)[0] == run_on(accumulate_int, a[0], np.int8) == 44


def test_a_variable_given_a_float_literal_and_a_float32_is_float64():
    """The variable's type, seen in a lazy ufunc's output: float64, as in
    Numba; an expression with a literal (x * 2.0) stays float32."""
    f = vectorize()(zero_when_large)
    x = np.array([1.5, 200.0, -3.25], np.float32)
    got = f(x)
    assert got.dtype == np.float64
    np.testing.assert_array_equal(got, [1.5, 0.0, -3.25])
    assert vectorize()(lambda v: v * 2.0)(x).dtype == np.float32
