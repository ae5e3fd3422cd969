"""@vectorize on the cpu and parallel targets: real NumPy ufuncs (src/vectorize).

Every test runs on every target (the ``target`` fixture of conftest.py) and
compares with NumPy's own ufuncs or with NumPy expressions; where a
transcendental function is involved the tolerance is stated next to the check.
"""
import math
import warnings

import numpy as np
import pytest

import numbavec
from numbavec import (complex64, complex128, float32, float64, int8, int16, int32, int64,
                      uint8, uint16, uint32, uint64, boolean, vectorize)

import examples
from conftest import assert_same, compile_ufunc, type_string


# --------------------------------------------------------------------------
# Kernels (plain Python; each test compiles them for its target)
# --------------------------------------------------------------------------

def add(x, y):
    """Add two numbers, elementwise."""
    return x + y


def sub(x, y):
    return x - y


def mul(x, y):
    return x * y


def div(x, y):
    return x / y


def floordiv(x, y):
    return x // y


def mod(x, y):
    return x % y


def bigger(x, y):
    return x if x > y else y


def axpy(a, x, y):
    return a * x + y


def affine_literals(x):
    return x * 2.0 + 1


def inc(i):
    return i + 1


def polynomial(x):
    t = x * x
    u = t * 3.0 - x
    return u / (1.0 + t)


ALL_DTYPES = ["?", "i1", "i2", "i4", "i8", "u1", "u2", "u4", "u8", "f4", "f8", "c8", "c16"]
INT_DTYPES = ["i1", "i2", "i4", "i8", "u1", "u2", "u4", "u8"]
FLOAT_SIGS = ["f8(f8,f8)", "f4(f4,f4)"]
UNARY_FLOAT_SIGS = ["f8(f8)", "f4(f4)"]



def sig_for(dt, nargs=2):
    code = np.dtype(dt).str[1:]        # 'f4', 'i8', 'c16', 'b1'
    return f"{code}({','.join([code] * nargs)})"


def sample(dtype, n, seed=0):
    """n values of dtype: small integers, random floats / complex numbers."""
    rng = np.random.default_rng(seed)
    dt = np.dtype(dtype)
    if dt.kind == "b":
        return rng.integers(0, 2, n).astype(dt)
    if dt.kind in "iu":
        lo = 0 if dt.kind == "u" else -50
        return rng.integers(lo, 50, n).astype(dt)
    if dt.kind == "c":
        return (rng.standard_normal(n) + 1j * rng.standard_normal(n)).astype(dt)
    return rng.standard_normal(n).astype(dt)


def complex_product(x, y):
    """(ac - bd) + (ad + bc)j in the arrays' own precision, one rounding per operation."""
    a, b, c, d = x.real, x.imag, y.real, y.imag
    out = np.empty_like(x)
    out.real, out.imag = a * c - b * d, a * d + b * c
    return out


# --------------------------------------------------------------------------
# The ufunc object
# --------------------------------------------------------------------------

def test_is_a_real_ufunc(target):
    f = compile_ufunc(add, ["f4(f4,f4)", "f8(f8,f8)", "i8(i8,i8)"], target)
    assert isinstance(f, np.ufunc)
    assert f.__name__ == "add"
    assert "Add two numbers, elementwise." in f.__doc__
    assert (f.nin, f.nout, f.nargs, f.ntypes) == (2, 1, 3, 3)
    assert f.types == [type_string("f4", "f4", "f4"), type_string("f8", "f8", "f8"),
                       type_string("i8", "i8", "i8")]
    assert f.signature is None        # a ufunc, not a gufunc


def test_three_argument_ufunc(target):
    f = compile_ufunc(axpy, ["f4(f4,f4,f4)"], target)
    assert (f.nin, f.nout, f.ntypes, f.types) == (3, 1, 1, ["fff->f"])
    assert f.__name__ == "axpy"


def test_py_func_is_kept(target):
    f = compile_ufunc(add, ["f8(f8,f8)"], target)
    assert f.py_func is add
    assert f.py_func(3, 4) == 7
    assert f.py_func("a", "b") == "ab"        # really the Python function


@pytest.mark.parametrize("identity,expected", [
    (None, None),
    (0, 0),
    (1, 1),
    ("reorderable", None),
    (-np.inf, -np.inf),
    (7.5, 7.5),
])
def test_identity_attribute(target, identity, expected):
    f = compile_ufunc(bigger, ["f8(f8,f8)"], target, identity=identity)
    assert f.identity == expected
    assert type(f.identity) is type(expected)


@pytest.mark.parametrize("identity,empty_reduce", [
    (0, 0.0),
    (1, 1.0),
    (-np.inf, -np.inf),
])
def test_identity_is_the_empty_reduction(target, identity, empty_reduce):
    f = compile_ufunc(bigger, ["f8(f8,f8)"], target, identity=identity)
    r = f.reduce(np.empty(0, "f8"))
    assert r == empty_reduce and r.dtype == np.float64


@pytest.mark.parametrize("identity", [None, "reorderable"])
def test_no_identity_empty_reduction_raises(target, identity):
    f = compile_ufunc(bigger, ["f8(f8,f8)"], target, identity=identity)
    with pytest.raises(ValueError, match="identity"):
        f.reduce(np.empty(0, "f8"))
    # an explicit initial= works without an identity, as for np.maximum
    assert f.reduce(np.empty(0, "f8"), initial=-5.0) == np.maximum.reduce(
        np.empty(0, "f8"), initial=-5.0)


def test_max_with_minus_inf_identity(target):
    f = compile_ufunc(bigger, ["f8(f8,f8)"], target, identity=-np.inf)
    a = sample("f8", 1000).reshape(10, 100)
    assert_same(f.reduce(a, axis=None), np.max(a))
    assert_same(f.reduce(a, axis=1), np.max(a, axis=1))
    assert_same(f.reduce(a[:, :0], axis=1), np.full(10, -np.inf))


@pytest.mark.parametrize("identity,multi_axis_ok", [
    (None, False),           # PyUFunc_None: not reorderable
    ("reorderable", True),   # PyUFunc_ReorderableNone
    (0, True),
])
def test_reduce_over_several_axes_needs_reorderable(target, identity, multi_axis_ok):
    f = compile_ufunc(add, ["f8(f8,f8)"], target, identity=identity)
    a = sample("f8", 24).reshape(2, 3, 4)
    if multi_axis_ok:
        np.testing.assert_allclose(f.reduce(a, axis=(0, 2)), a.sum(axis=(0, 2)), rtol=1e-15)
    else:
        with pytest.raises(ValueError, match="reorderable"):
            f.reduce(a, axis=(0, 2))


# --------------------------------------------------------------------------
# Signatures in every accepted form
# --------------------------------------------------------------------------

SIGNATURE_FORMS = [
    # (signatures as written, the expected f.types as dtype tuples)
    (["f4(f4,f4)"], [("f4", "f4", "f4")]),
    (["float32(float32, float32)"], [("f4", "f4", "f4")]),
    (["i8(i8,i8)"], [("i8", "i8", "i8")]),
    (["int64(int64, int64)"], [("i8", "i8", "i8")]),
    (["u1(u1,u1)"], [("u1", "u1", "u1")]),
    (["uint8(uint8, uint8)"], [("u1", "u1", "u1")]),
    (["b1(b1,b1)"], [("?", "?", "?")]),
    (["c8(c8,c8)"], [("c8", "c8", "c8")]),
    (["c16(c16,c16)"], [("c16", "c16", "c16")]),
    (["complex128(complex128, complex128)"], [("c16", "c16", "c16")]),
    (["f8(f4,i4)"], [("f4", "i4", "f8")]),
    ([float32(float32, float32)], [("f4", "f4", "f4")]),
    ([numbavec.f8(numbavec.f8, numbavec.i4)], [("f8", "i4", "f8")]),
    ("f4(f4,f4)", [("f4", "f4", "f4")]),                          # one string, no list
    (float64(float64, float64), [("f8", "f8", "f8")]),            # one Type signature
    ([(float32, float32)], [("f4", "f4", "f4")]),                 # return type inferred
    ([(int32, int32)], [("i4", "i4", "i4")]),
    ([(int8, float32)], [("i1", "f4", "f4")]),
    ([(int32, float32)], [("i4", "f4", "f8")]),                   # NumPy promotion
    ([(uint64, int64)], [("u8", "i8", "f8")]),
    ([(uint8, int8)], [("u1", "i1", "i2")]),
    ([(complex64, float64)], [("c8", "f8", "c16")]),
    (["f4(f4,f4)", float64(float64, float64), (int32, int32), "c8(c8,c8)"],
     [("f4", "f4", "f4"), ("f8", "f8", "f8"), ("i4", "i4", "i4"), ("c8", "c8", "c8")]),
    ([int16(int16, int16), uint16(uint16, uint16), uint32(uint32, uint32),
      boolean(boolean, boolean), complex128(complex128, complex128)],
     [("i2", "i2", "i2"), ("u2", "u2", "u2"), ("u4", "u4", "u4"), ("?", "?", "?"),
      ("c16", "c16", "c16")]),
]


@pytest.mark.parametrize("signatures,expected", SIGNATURE_FORMS)
def test_signature_forms(target, signatures, expected):
    f = compile_ufunc(add, signatures, target)
    assert f.types == [type_string(*e) for e in expected]
    for ins_out in expected:       # every loop computes x + y
        *ins, out = ins_out
        args = [sample(d, 17, seed=i) for i, d in enumerate(ins)]
        expect = np.add(*args).astype(out) if out != "?" else np.add(*args).astype(bool)
        assert_same(f(*args), expect)


def test_inferred_return_type_of_true_division(target):
    f = compile_ufunc(div, [(int32, int32), (float32, float32)], target)
    assert f.types == ["ii->d", "ff->f"]


def test_weak_literal_keeps_int32(target):
    f = compile_ufunc(inc, [(int32,), (int8,), (uint16,)], target)
    assert f.types == ["i->i", "b->b", "H->H"]
    a = np.array([np.iinfo("i1").max, 0, -5], "i1")
    assert_same(f(a), a + np.int8(1))          # wraps like NumPy


# --------------------------------------------------------------------------
# NumPy's ufunc machinery
# --------------------------------------------------------------------------

@pytest.fixture
def add_f(target):
    """An add-like ufunc with identity 0 and an i8, f4 and f8 loop.

    The integer loop comes first, as in NumPy's own ufuncs: NumPy's type
    resolution takes the first loop the inputs cast to safely, so with the f8
    loop first an i8 array plus a Python int would run the f8 loop.
    """
    return compile_ufunc(add, ["i8(i8,i8)", "f4(f4,f4)", "f8(f8,f8)"], target, identity=0)


BROADCAST_SHAPES = [
    ((4, 5), (5,)),
    ((4, 1), (1, 5)),
    ((3, 1, 5), (4, 1)),
    ((), (7,)),
    ((7,), ()),
    ((), ()),
    ((0,), (1,)),
    ((3, 0), (3, 1)),
]


@pytest.mark.parametrize("shape_x,shape_y", BROADCAST_SHAPES)
@pytest.mark.parametrize("dtype", ["f4", "f8", "i8"])
def test_broadcasting(add_f, shape_x, shape_y, dtype):
    x = sample(dtype, math.prod(shape_x), 1).reshape(shape_x)
    y = sample(dtype, math.prod(shape_y), 2).reshape(shape_y)
    assert_same(add_f(x, y), np.add(x, y))


def test_zero_d_arrays_give_scalars(add_f):
    x, y = np.array(2.5), np.array(0.25)
    assert_same(add_f(x, y), np.add(x, y))       # a NumPy scalar, as NumPy does
    out = np.empty(())
    r = add_f(x, y, out=out)
    assert r is out and out[()] == 2.75


SCALAR_CALLS = [
    # (x, y, the loop NEP 50 picks): NumPy scalars, Python scalars and arrays
    (np.arange(5, dtype="f4"), 2.0, "f4"),              # weak float: the f4 loop
    (2.0, np.arange(5, dtype="f4"), "f4"),
    (np.arange(5, dtype="f4"), 3, "f4"),                # weak int: the f4 loop
    (np.arange(5, dtype="f4"), np.float64(2.0), "f8"),  # strong float64: the f8 loop
    (np.arange(5, dtype="f4"), np.arange(5.0), "f8"),
    (np.arange(5, dtype="i8"), 2, "i8"),
    (np.arange(5, dtype="i8"), 2.5, "f8"),              # int array, weak float: f8
    (np.arange(5, dtype="i4"), 2, "i8"),                # first loop i4 casts to safely
    (np.float32(1.5), np.float32(2.0), "f4"),
    (np.float32(1.5), 2.0, "f4"),
    (1.5, 2.0, "f8"),
    (3, 4, "i8"),
]


@pytest.mark.parametrize("x,y,loop", SCALAR_CALLS)
def test_scalars_follow_nep50(add_f, x, y, loop):
    assert_same(add_f(x, y), np.add(x, y, dtype=loop))


def test_out(add_f):
    x, y = sample("f8", 100, 1), sample("f8", 100, 2)
    out = np.empty(100)
    r = add_f(x, y, out=out)
    assert r is out
    assert_same(out, x + y)
    out2 = np.empty(100)
    r = add_f(x, y, out=(out2,))
    assert r is out2
    assert_same(out2, x + y)


@pytest.mark.parametrize("dtype", ["f4", "f8", "i8"])
@pytest.mark.parametrize("n", [1, 7, 1000, 1001])
def test_out_in_place(add_f, dtype, n):
    x, y = sample(dtype, n, 1), sample(dtype, n, 2)
    expected = x + y
    r = add_f(x, y, out=x)
    assert r is x
    assert_same(x, expected)
    expected = y + y
    add_f(y, y, out=y)
    assert_same(y, expected)


def test_overlapping_out(add_f):
    """Partial overlap between an input and the output: NumPy's answer (it copies)."""
    a = sample("f8", 1001, 3)
    b = a.copy()
    add_f(a[1:], a[:-1], out=a[:-1])
    np.add(b[1:], b[:-1], out=b[:-1])
    assert_same(a, b)


def test_where_with_out(add_f):
    x, y = sample("f8", 101, 1), sample("f8", 101, 2)
    mask = np.arange(101) % 3 == 0
    out = np.full(101, -99.0)
    r = add_f(x, y, out=out, where=mask)
    assert r is out
    expected = np.full(101, -99.0)
    np.add(x, y, out=expected, where=mask)
    assert_same(out, expected)
    assert np.all(out[~mask] == -99.0)


def test_where_broadcast(add_f):
    x = sample("f8", 20, 1).reshape(4, 5)
    out = np.zeros((4, 5))
    add_f(x, 1.0, out=out, where=np.array([True, False, True, False, True]))
    expected = np.zeros((4, 5))
    np.add(x, 1.0, out=expected, where=np.array([True, False, True, False, True]))
    assert_same(out, expected)


def test_dtype_selects_the_loop(add_f):
    x, y = sample("f4", 10, 1), sample("f4", 10, 2)
    assert_same(add_f(x, y, dtype="f8"), np.add(x, y, dtype="f8"))
    assert add_f(x, y, dtype="f8").dtype == np.float64
    assert_same(add_f(x, y, dtype=np.float32), x + y)
    xi = np.arange(10)
    assert_same(add_f(xi, xi, dtype="f4"), np.add(xi, xi, dtype="f4"))


def test_signature_keyword(add_f):
    x = np.arange(10, dtype="i8")
    assert_same(add_f(x, x, signature="dd->d"), np.add(x, x, signature="dd->d"))


def test_casting(target):
    f = compile_ufunc(add, ["f8(f8,f8)"], target)
    g = compile_ufunc(add, ["i8(i8,i8)"], target)
    x = np.array([1.7, -2.5, 3.2])
    out_i = np.zeros(3, "i8")
    # the default same_kind forbids f8 -> i8 output, as for np.add
    with pytest.raises(TypeError):
        np.add(x, x, out=out_i)
    with pytest.raises(TypeError):
        f(x, x, out=out_i)
    r = f(x, x, out=out_i, casting="unsafe")
    assert r is out_i
    assert_same(out_i, np.add(x, x, out=np.zeros(3, "i8"), casting="unsafe"))
    # f8 inputs have no safe loop on an i8-only ufunc ...
    with pytest.raises(TypeError):
        g(x, x)
    # ... unless casting='unsafe' names the loop
    assert_same(g(x, x, dtype="i8", casting="unsafe"),
                np.add(x, x, dtype="i8", casting="unsafe"))
    # 'no' and 'equiv' refuse even f4 -> f8
    with pytest.raises(TypeError):
        f(x.astype("f4"), x, casting="no")


def test_casting_safe_inputs(target):
    f = compile_ufunc(add, ["f8(f8,f8)"], target)
    x = np.arange(5, dtype="i4")
    assert_same(f(x, x), np.add(x, x, dtype="f8"))      # i4 -> f8 is safe
    assert_same(f(x.astype("f4"), x), np.add(x.astype("f4"), x, dtype="f8"))


# reduce, accumulate, reduceat, outer, at -------------------------------------

@pytest.mark.parametrize("dtype", ["f8", "i8"])
def test_reduce(add_f, dtype):
    a = sample(dtype, 60, 4).reshape(3, 4, 5)
    for axis in [0, 1, 2, -1, None, (0, 2), ()]:
        np.testing.assert_allclose(add_f.reduce(a, axis=axis), np.add.reduce(a, axis=axis),
                                   rtol=1e-14, strict=True)
    np.testing.assert_allclose(add_f.reduce(a, axis=1, keepdims=True),
                               np.add.reduce(a, axis=1, keepdims=True), rtol=1e-14, strict=True)
    np.testing.assert_allclose(add_f.reduce(a, axis=None, keepdims=True),
                               np.add.reduce(a, axis=None, keepdims=True), rtol=1e-14, strict=True)
    assert_same(add_f.reduce(a, axis=0, initial=10),
                np.add.reduce(a, axis=0, initial=10))


def test_reduce_exact_integers(add_f):
    a = np.arange(10_000, dtype="i8")
    assert add_f.reduce(a) == np.add.reduce(a) == 49_995_000


def test_reduce_where(add_f):
    a = sample("f8", 20, 5).reshape(4, 5)
    mask = np.array([True, False, True, True, False])
    np.testing.assert_allclose(add_f.reduce(a, axis=1, where=mask),
                               np.add.reduce(a, axis=1, where=mask), rtol=1e-14)


def test_reduce_empty(add_f):
    assert_same(add_f.reduce(np.empty(0, "f8")), np.add.reduce(np.empty(0, "f8")))
    assert_same(add_f.reduce(np.empty((0, 3), "i8"), axis=0),
                np.add.reduce(np.empty((0, 3), "i8"), axis=0))
    assert_same(add_f.reduce(np.empty((3, 0), "f4"), axis=1),
                np.add.reduce(np.empty((3, 0), "f4"), axis=1))


@pytest.mark.parametrize("dtype", ["f4", "f8", "i8"])
def test_accumulate(add_f, dtype):
    a = sample(dtype, 24, 6).reshape(4, 6)
    rtol = 1e-6 if dtype == "f4" else 1e-14
    for axis in [0, 1]:
        np.testing.assert_allclose(add_f.accumulate(a, axis=axis),
                                   np.add.accumulate(a, axis=axis), rtol=rtol, strict=True)
    # an in-place accumulation: out is the input
    b, c = a.copy(), a.copy()
    add_f.accumulate(b, axis=1, out=b)
    np.add.accumulate(c, axis=1, out=c)
    np.testing.assert_allclose(b, c, rtol=rtol)


def test_accumulate_long(add_f):
    a = np.ones(100_000, "i8")
    assert_same(add_f.accumulate(a), np.arange(1, 100_001, dtype="i8"))


def test_reduceat(add_f):
    a = np.arange(8, dtype="i8")
    for idx in [[0, 4, 1, 5], [0, 3, 5], [7], [0, 0, 3]]:
        assert_same(add_f.reduceat(a, idx), np.add.reduceat(a, idx))
    b = sample("f8", 40, 7).reshape(5, 8)
    np.testing.assert_allclose(add_f.reduceat(b, [0, 2, 6], axis=1),
                               np.add.reduceat(b, [0, 2, 6], axis=1), rtol=1e-14, strict=True)


@pytest.mark.parametrize("dtype", ["f4", "f8", "i8"])
def test_outer(add_f, dtype):
    x, y = sample(dtype, 7, 1), sample(dtype, 5, 2).reshape(5, 1)
    assert_same(add_f.outer(x, y), np.add.outer(x, y))
    assert add_f.outer(x, y).shape == (7, 5, 1)


def test_at(add_f):
    a = np.arange(10, dtype="f8")
    b = a.copy()
    idx = [0, 0, 2, 9, 2, 2]
    add_f.at(a, idx, 1.5)
    np.add.at(b, idx, 1.5)
    assert_same(a, b)
    ai, bi = np.zeros(5, "i8"), np.zeros(5, "i8")
    add_f.at(ai, [1, 1, 4], [10, 20, 30])
    np.add.at(bi, [1, 1, 4], [10, 20, 30])
    assert_same(ai, bi)


def test_reduce_with_one_identity(target):
    f = compile_ufunc(mul, ["f8(f8,f8)", "i8(i8,i8)"], target, identity=1)
    a = np.arange(1, 11, dtype="i8")
    assert_same(f.reduce(a), np.multiply.reduce(a))
    assert_same(f.reduce(np.empty(0, "i8")), np.multiply.reduce(np.empty(0, "i8")))
    assert_same(f.accumulate(a), np.multiply.accumulate(a))


# empty, 0-d, non-contiguous, strided output -------------------------------------

@pytest.mark.parametrize("shape", [(0,), (0, 5), (5, 0), (2, 0, 3)])
def test_empty_arrays(add_f, shape):
    x = np.empty(shape, "f4")
    assert_same(add_f(x, x), np.add(x, x))
    assert_same(add_f(x, 1.0), np.add(x, 1.0))


def _views(a):
    """Non-contiguous views of a 2-d array, named."""
    return {
        "step2": a[:, ::2],
        "rows_step3": a[::3],
        "transpose": a.T,
        "negative": a[::-1, ::-1],
        "negative_step2": a[:, ::-2],
        "fortran": np.asfortranarray(a),
        "column": a[:, 3],
        "diagonal": a.diagonal(),
    }


@pytest.mark.parametrize("view", list(_views(np.zeros((40, 40)))))
@pytest.mark.parametrize("dtype", ["f4", "f8", "i8"])
def test_non_contiguous_inputs(add_f, view, dtype):
    a = sample(dtype, 1600, 1).reshape(40, 40)
    b = sample(dtype, 1600, 2).reshape(40, 40)
    va, vb = _views(a)[view], _views(b)[view]
    assert_same(add_f(va, vb), np.add(va, vb))
    c = np.ascontiguousarray(vb)
    assert_same(add_f(va, c), np.add(va, c))
    assert_same(add_f(c, va), np.add(c, va))


@pytest.mark.parametrize("dtype", ["f4", "f8", "i8"])
@pytest.mark.parametrize("n", [1, 5, 64, 1000, 1001])
def test_strided_output_is_not_written_contiguously(add_f, dtype, n):
    """f(a, a, out=out[::2]): contiguous inputs, strided output (Numba's bug)."""
    a = sample(dtype, n, 1)
    out = np.zeros(2 * n, dtype)
    r = add_f(a, a, out=out[::2])
    assert r.base is out
    assert_same(out[::2], a + a)
    assert_same(out[1::2], np.zeros(n, dtype))          # untouched


@pytest.mark.parametrize("out_view", ["reversed", "step3", "column"])
def test_other_strided_outputs(add_f, out_view):
    n = 333
    a, b = sample("f8", n, 1), sample("f8", n, 2)
    buf = np.zeros((n, 3))
    out = {"reversed": buf[::-1, 0], "step3": buf.reshape(-1)[::3], "column": buf[:, 1]}[out_view]
    add_f(a, b, out=out)
    assert_same(out, a + b)
    assert np.count_nonzero(buf) == np.count_nonzero(a + b)   # nothing else written


def test_strided_output_with_scalar(add_f):
    a = sample("f4", 1000, 1)
    out = np.zeros(3000, "f4")
    add_f(a, np.float32(1.5), out=out[::3])
    assert_same(out[::3], a + np.float32(1.5))
    assert not out[1::3].any() and not out[2::3].any()


@pytest.mark.parametrize("broadcast", [(0,), (1,), (2,), (0, 1), (0, 2), (1, 2), (0, 1, 2)])
@pytest.mark.parametrize("dtype", ["f4", "f8"])
@pytest.mark.parametrize("n", [3, 1000, 1003])
def test_step0_broadcasting_of_each_argument(target, broadcast, dtype, n):
    """a*x+y with each subset of the arguments given as a step-0 view."""
    f = compile_ufunc(axpy, ["f4(f4,f4,f4)", "f8(f8,f8,f8)"], target)
    args = [sample(dtype, n, i) for i in range(3)]
    for i in broadcast:
        args[i] = np.broadcast_to(args[i][:1], (n,))
        assert args[i].strides == (0,)
    a, x, y = args
    expected = a * x + y
    assert_same(f(a, x, y), expected)
    # the same with a strided output
    out = np.zeros(2 * n, dtype)
    f(a, x, y, out=out[::2])
    assert_same(out[::2], expected)
    assert not out[1::2].any()


def test_step0_broadcasting_2d(target):
    f = compile_ufunc(axpy, ["f8(f8,f8,f8)"], target)
    a = np.broadcast_to(np.arange(3.0).reshape(3, 1), (3, 500))
    x = sample("f8", 500, 1)
    y = np.broadcast_to(2.0, (3, 500))
    assert_same(f(a, x, y), a * x + y)


@pytest.mark.parametrize("dtype", ["f4", "f8", "i8"])
def test_large_arrays(add_f, dtype):
    n = 1_000_000
    x, y = sample(dtype, n, 1), sample(dtype, n, 2)
    assert_same(add_f(x, y), x + y)
    assert_same(add_f(x[-2::-3], y[1::3]), x[-2::-3] + y[1::3])
    assert_same(add_f(x, 2), x + 2)
    np.testing.assert_allclose(add_f.reduce(x), x.sum(), rtol=1e-4 if dtype == "f4" else 1e-9)


def test_large_3_argument(target):
    f = compile_ufunc(axpy, ["f4(f4,f4,f4)"], target)
    n = 1_000_000
    x, y = sample("f4", n, 1), sample("f4", n, 2)
    assert_same(f(np.float32(2.0), x, y), np.float32(2.0) * x + y)


# --------------------------------------------------------------------------
# Dtypes and edge values
# --------------------------------------------------------------------------

@pytest.mark.parametrize("kernel,reference", [(add, np.add), (mul, np.multiply)])
@pytest.mark.parametrize("dtype", ALL_DTYPES)
def test_every_dtype(target, kernel, reference, dtype):
    f = compile_ufunc(kernel, [sig_for(dtype)], target)
    assert f.types == [type_string(dtype, dtype, dtype)]
    x, y = sample(dtype, 257, 1), sample(dtype, 257, 2)
    expected = reference(x, y)
    if dtype == "?":            # Python's True + True == 2, cast back to bool
        expected = expected.astype(bool)
    if dtype in ("c8", "c16") and kernel is mul:
        # NumPy's SIMD complex multiply may fuse (FMA) and differ by an ulp;
        # the kernel must equal Python's complex product exactly
        eps = np.finfo(dtype).eps
        np.testing.assert_allclose(f(x, y), expected, rtol=4 * eps, atol=4 * eps, strict=True)
        expected = complex_product(x, y)
    assert_same(f(x, y), expected)
    assert_same(f(x[::-2], y[::-2]), expected[::-2])


@pytest.mark.parametrize("dtype", INT_DTYPES)
@pytest.mark.parametrize("kernel,reference", [(add, np.add), (mul, np.multiply)])
def test_integer_limits_wrap(target, dtype, kernel, reference):
    info = np.iinfo(dtype)
    edges = np.array([info.min, info.min + 1, -1 if info.min else 0, 0, 1, 2,
                      info.max - 1, info.max], dtype=dtype)
    x, y = np.meshgrid(edges, edges)
    f = compile_ufunc(kernel, [sig_for(dtype)], target)
    with warnings.catch_warnings():
        warnings.simplefilter("error")            # NumPy's arrays wrap silently
        assert_same(f(x, y), reference(x, y))


@pytest.mark.parametrize("dtype", INT_DTYPES)
@pytest.mark.parametrize("kernel,reference", [(floordiv, np.floor_divide), (mod, np.remainder)])
def test_integer_floordiv_mod_signs(target, dtype, kernel, reference):
    info = np.iinfo(dtype)
    vals = [info.min, info.min + 1, -7, 1, 2, 3, 7, info.max - 1, info.max]
    # no zero (tested with errstate) and no -1 (MIN // -1 overflows: tested on its own)
    vals = np.unique(np.array([v for v in vals if v != 0 and info.min <= v], dtype=dtype))
    x, y = np.meshgrid(vals, vals)
    f = compile_ufunc(kernel, [sig_for(dtype)], target)
    assert_same(f(x, y), reference(x, y))


@pytest.mark.parametrize("dtype", ["i1", "i2", "i4", "i8"])
def test_integer_min_floordiv_minus_one_wraps(target, dtype):
    mn = np.iinfo(dtype).min
    fd = compile_ufunc(floordiv, [sig_for(dtype)], target)
    md = compile_ufunc(mod, [sig_for(dtype)], target)
    x, m1 = np.array([mn], dtype), np.array([-1], dtype)
    with np.errstate(over="ignore"):
        assert_same(fd(x, m1), np.floor_divide(x, m1))
    assert_same(md(x, m1), np.remainder(x, m1))


FLOAT_SPECIALS = {
    "f4": [0.0, -0.0, 1.0, -1.5, np.inf, -np.inf, np.nan,
           np.finfo("f4").smallest_subnormal, -3 * np.finfo("f4").smallest_subnormal,
           np.finfo("f4").tiny, np.finfo("f4").max, np.finfo("f4").min],
    "f8": [0.0, -0.0, 1.0, -1.5, np.inf, -np.inf, np.nan,
           np.finfo("f8").smallest_subnormal, -3 * np.finfo("f8").smallest_subnormal,
           np.finfo("f8").tiny, np.finfo("f8").max, np.finfo("f8").min],
}


@pytest.mark.parametrize("dtype", ["f4", "f8"])
@pytest.mark.parametrize("kernel,reference", [
    (add, np.add), (sub, np.subtract), (mul, np.multiply), (div, np.true_divide)])
def test_float_special_values(target, dtype, kernel, reference):
    vals = np.array(FLOAT_SPECIALS[dtype], dtype)
    x, y = (v.ravel() for v in np.meshgrid(vals, vals))
    f = compile_ufunc(kernel, [sig_for(dtype)], target)
    with np.errstate(all="ignore"):
        got, expected = f(x, y), reference(x, y)
    assert_same(got, expected)
    np.testing.assert_array_equal(np.signbit(got), np.signbit(expected))


def test_signed_zero(target):
    f = compile_ufunc(add, FLOAT_SIGS, target)
    g = compile_ufunc(mul, FLOAT_SIGS, target)
    for dt in ["f4", "f8"]:
        nz, pz = np.array([-0.0], dt), np.array([0.0], dt)
        assert np.signbit(f(nz, nz))[0]                 # -0 + -0 == -0
        assert not np.signbit(f(nz, pz))[0]             # -0 + 0 == +0
        assert np.signbit(g(nz, np.array([3.0], dt)))[0]


def test_subnormals_are_not_flushed(target):
    f = compile_ufunc(add, FLOAT_SIGS, target)
    g = compile_ufunc(mul, FLOAT_SIGS, target)
    for dt in ["f4", "f8"]:
        s = np.full(100, np.finfo(dt).smallest_subnormal, dt)
        assert_same(f(s, s), s + s)
        assert (f(s, s) > 0).all()
        tiny = np.full(100, np.finfo(dt).tiny, dt)
        assert_same(g(tiny, np.full(100, 0.5, dt)), tiny * np.asarray(0.5, dt))
        assert (g(tiny, np.full(100, 0.5, dt)) > 0).all()


def test_complex_special_values(target):
    f = compile_ufunc(add, ["c16(c16,c16)", "c8(c8,c8)"], target)
    vals = np.array([0, -0.0, 1 + 2j, complex(np.inf, 0), complex(0, -np.inf),
                     complex(np.nan, 1)], "c16")
    x, y = (v.ravel() for v in np.meshgrid(vals, vals))
    with np.errstate(all="ignore"):
        assert_same(f(x, y), x + y)
        assert_same(f(x.astype("c8"), y.astype("c8")), (x + y).astype("c8"))


@pytest.mark.parametrize("dtype", ["c8", "c16"])
def test_complex_multiply(target, dtype):
    f = compile_ufunc(mul, [sig_for(dtype)], target)
    x, y = sample(dtype, 1000, 1), sample(dtype, 1000, 2)
    # NumPy's SIMD loop may fuse multiply-adds: a few ulp apart from the plain product
    rtol = 4 * np.finfo(dtype).eps
    np.testing.assert_allclose(f(x, y), x * y, rtol=rtol, atol=rtol, strict=True)
    assert_same(f(x, y), complex_product(x, y))


# --------------------------------------------------------------------------
# np.errstate
# --------------------------------------------------------------------------

def test_float_divide_by_zero_warns_by_default(target):
    f = compile_ufunc(div, FLOAT_SIGS, target)
    for dt in ["f8", "f4"]:
        x, z = np.ones(10, dt), np.zeros(10, dt)
        with pytest.warns(RuntimeWarning, match="divide by zero"):
            r = f(x, z)
        assert_same(r, np.full(10, np.inf, dt))


def test_float_divide_by_zero_raises_under_errstate(target):
    f = compile_ufunc(div, FLOAT_SIGS, target)
    x, z = np.ones(1000), np.zeros(1000)
    with np.errstate(divide="raise"):
        with pytest.raises(FloatingPointError, match="divide by zero"):
            f(x, z)
        with pytest.raises(FloatingPointError):
            f(x.astype("f4"), np.float32(0))


def test_float_invalid_and_overflow_flags(target):
    f = compile_ufunc(div, FLOAT_SIGS, target)
    g = compile_ufunc(mul, FLOAT_SIGS, target)
    with np.errstate(invalid="raise"):
        with pytest.raises(FloatingPointError, match="invalid"):
            f(np.zeros(10), np.zeros(10))           # 0/0
    with np.errstate(over="raise"):
        with pytest.raises(FloatingPointError, match="overflow"):
            g(np.full(10, 1e300), np.full(10, 1e300))


def test_float_errors_ignored(target):
    f = compile_ufunc(div, FLOAT_SIGS, target)
    with np.errstate(all="ignore"), warnings.catch_warnings():
        warnings.simplefilter("error")
        r = f(np.array([1.0, 0.0, -1.0]), 0.0)
    assert_same(r, np.array([np.inf, np.nan, -np.inf]))


def test_no_spurious_warning(target):
    f = compile_ufunc(div, FLOAT_SIGS, target)
    with np.errstate(all="raise"):
        assert_same(f(np.arange(1.0, 100.0), 2.0), np.arange(1.0, 100.0) / 2.0)


@pytest.mark.parametrize("dtype", INT_DTYPES)
@pytest.mark.parametrize("kernel,reference", [(floordiv, np.floor_divide), (mod, np.remainder)])
def test_integer_division_by_zero(target, dtype, kernel, reference):
    f = compile_ufunc(kernel, [sig_for(dtype)], target)
    x = np.array([5, 0, 3, 1], dtype)
    y = np.array([0, 0, 2, 0], dtype)
    with pytest.warns(RuntimeWarning, match="divide by zero"):
        got = f(x, y)
    with pytest.warns(RuntimeWarning):
        expected = reference(x, y)
    assert_same(got, expected)
    assert got[0] == 0 and got[1] == 0
    with np.errstate(divide="raise"):
        with pytest.raises(FloatingPointError, match="divide by zero"):
            f(x, y)
        with pytest.raises(FloatingPointError):
            reference(x, y)
    with np.errstate(divide="ignore"), warnings.catch_warnings():
        warnings.simplefilter("error")
        assert_same(f(x, y), expected)


# --------------------------------------------------------------------------
# fastmath and introspection
# --------------------------------------------------------------------------

def test_fastmath_results_are_close(target):
    f = compile_ufunc(polynomial, UNARY_FLOAT_SIGS, target, fastmath=True)
    g = compile_ufunc(polynomial, UNARY_FLOAT_SIGS, target)
    x = sample("f8", 10_000, 1)
    t = x * x
    ref = (t * 3.0 - x) / (1.0 + t)         # the kernel's order of operations
    assert_same(g(x), ref)
    # reassociation / FMA / reciprocal: a few ulp, absolute near the root x = 1/3
    np.testing.assert_allclose(f(x), ref, rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(f(x.astype("f4")), ref.astype("f4"), rtol=1e-5, atol=1e-6)


def test_fastmath_flags_in_ir(target):
    f = compile_ufunc(polynomial, ["f8(f8)"], target, fastmath=True)
    g = compile_ufunc(polynomial, ["f8(f8)"], target)
    fast = f.inspect_llvm("f8(f8)")
    plain = g.inspect_llvm("f8(f8)")
    assert "fast" in fast or "reassoc" in fast
    assert "fmul fast" not in plain and "reassoc" not in plain


@pytest.mark.parametrize("sig", ["f4(f4,f4)", "float32(float32, float32)",
                                 float32(float32, float32)])
def test_inspect_llvm_and_asm_one_signature(target, sig):
    f = compile_ufunc(add, ["f8(f8,f8)", "f4(f4,f4)"], target)
    ir = f.inspect_llvm(sig)
    assert isinstance(ir, str)
    assert "define" in ir and "float" in ir
    assert "ret void" in ir
    asm = f.inspect_asm(sig)
    assert isinstance(asm, str)
    assert ".text" in asm and "ret" in asm


def test_inspect_llvm_and_asm_all_signatures(target):
    f = compile_ufunc(add, ["f8(f8,f8)", "f4(f4,f4)", "i4(i4,i4)"], target)
    irs, asms = f.inspect_llvm(), f.inspect_asm()
    assert isinstance(irs, dict) and isinstance(asms, dict)
    assert len(irs) == len(asms) == 3
    for key in irs:
        assert irs[key] == f.inspect_llvm(key)
        assert asms[key] == f.inspect_asm(key)
        assert "define" in irs[key]
    assert "double" in irs[[k for k in irs if k.startswith("float64")][0]]
    assert "i32" in irs[[k for k in irs if k.startswith("int32")][0]]


def test_inspect_unknown_signature(target):
    f = compile_ufunc(add, ["f8(f8,f8)"], target)
    with pytest.raises((KeyError, ValueError, TypeError)):
        f.inspect_llvm("i2(i2,i2)")


def test_inspect_types(target, capsys):
    f = compile_ufunc(polynomial, ["f4(f4)", "f8(f8)"], target)
    f.inspect_types()
    text = capsys.readouterr().out
    assert "polynomial" in text
    assert "t = x * x" in text                     # the source ...
    assert "t: float32" in text and "u: float32" in text    # ... with the types
    assert "t: float64" in text and "x: float64" in text


# --------------------------------------------------------------------------
# Weak Python literals
# --------------------------------------------------------------------------

def test_weak_literals_keep_float32(target):
    f = compile_ufunc(affine_literals, ["f4(f4)"], target)
    x = sample("f4", 10_001, 1) * np.float32(1e3)
    expected = x * np.float32(2.0) + np.float32(1)     # NumPy's float32 computation
    assert expected.dtype == np.float32
    assert_same(f(x), expected)
    ir = f.inspect_llvm("f4(f4)")
    assert "double" not in ir
    assert "fpext" not in ir and "fptrunc" not in ir


def test_weak_literals_with_int_give_float64(target):
    f = compile_ufunc(affine_literals, [(int32,), (float32,), (int8,)], target)
    assert f.types == ["i->d", "f->f", "b->d"]


# --------------------------------------------------------------------------
# EXAMPLES.md, sections 1, 2, 3 and 6 (cpu/parallel instead of gpu/cuda)
# --------------------------------------------------------------------------

def test_example_1_saxpy(target):
    @vectorize([float32(float32, float32, float32)], target=target)
    def vec_saxpy(a, x, y):
        return a * x + y

    x = np.arange(1_000_000, dtype='float32'); y = np.arange(1_000_000, dtype='float32')
    out = vec_saxpy(np.float32(2.0), x, y)
    assert_same(out, np.float32(2.0) * x + y)


def test_example_2_hypot(target, capsys):
    @vectorize(['float64(float64, float64)', 'float32(float32, float32)'], target=target)
    def hypot(x, y):
        x = abs(x);
        y = abs(y);
        t = min(x, y);
        x = max(x, y);
        t = t / x;
        return x * math.sqrt(1+t*t)

    assert hypot.py_func(3.0, 4.0) == 5.0
    hypot.inspect_types()
    text = capsys.readouterr().out
    assert "t: float64" in text and "t: float32" in text
    assert hypot.types == ["dd->d", "ff->f"]
    x, y = sample("f8", 10_000, 1), sample("f8", 10_000, 2)
    # sqrt is correctly rounded; the algorithm differs from libm's hypot by a few ulp
    np.testing.assert_allclose(hypot(x, y), np.hypot(x, y), rtol=4e-16, strict=True)
    np.testing.assert_allclose(hypot(x.astype("f4"), y.astype("f4")),
                               np.hypot(x.astype("f4"), y.astype("f4")), rtol=4e-7, strict=True)
    assert hypot(3.0, 4.0) == 5.0
    assert_same(hypot(np.float32(-3.0), np.float32(4.0)), np.float32(5.0))


def test_example_3_gaussian_pdf(target):
    gaussian_pdf = vectorize(['float32(float32, float32, float32)'],
                             target=target)(examples.gaussian_pdf)
    x = np.random.uniform(-3, 3, size=1_000_000).astype(np.float32)
    r = gaussian_pdf(x, 0.0, 1.0)      # Python floats broadcast as scalars
    assert r.dtype == np.float32
    assert "Gaussian probability density" in gaussian_pdf.__doc__
    expected = np.exp(np.float32(-0.5) * x**2) / examples.SQRT_2PI
    # expf from libmvec: a few float32 ulp
    np.testing.assert_allclose(r, expected, rtol=1e-6, atol=0)
    exact = np.exp(-0.5 * x.astype("f8")**2) / math.sqrt(2 * math.pi)
    np.testing.assert_allclose(r, exact, rtol=2e-6, atol=0)
    assert "double" not in gaussian_pdf.inspect_llvm("float32(float32, float32, float32)")


def test_example_6_complex64_in_place(target):
    vmult = vectorize(['complex64(complex64, complex64)'], target=target)(examples.vmult)

    rng = np.random.default_rng(6)
    d_image = np.fft.fft2(rng.standard_normal((64, 64))).astype(np.complex64)
    d_response = np.fft.fft2(rng.standard_normal((64, 64))).astype(np.complex64)
    expected = d_image * d_response
    r = vmult(d_image, d_response, out=d_image)
    assert r is d_image
    np.testing.assert_allclose(d_image, expected, rtol=1e-5, atol=1e-3, strict=True)
    assert vmult.__doc__.endswith("Element complex64 multiplication")


# --------------------------------------------------------------------------
# Odd layouts and lifetimes
# --------------------------------------------------------------------------

def greater(x, y):
    return x > y


def test_bool_output_loop(target):
    f = compile_ufunc(greater, ["b1(f8,f8)", "b1(i8,i8)"], target)
    assert f.types == ["dd->?", "ll->?"]
    x, y = sample("f8", 1001, 1), sample("f8", 1001, 2)
    assert_same(f(x, y), np.greater(x, y))
    xi, yi = sample("i8", 1001, 1), sample("i8", 1001, 2)
    assert_same(f(xi, yi), np.greater(xi, yi))
    out = np.zeros(1001, "i4")
    f(x, y, out=out)                      # bool -> int32 is a safe output cast
    assert_same(out, np.greater(x, y).astype("i4"))


def test_out_of_another_dtype(add_f):
    x, y = sample("f8", 100, 1), sample("f8", 100, 2)
    out = np.empty(100, "f4")             # f8 -> f4 is same_kind
    add_f(x, y, out=out)
    assert_same(out, np.add(x, y, out=np.empty(100, "f4")))


def test_unaligned_and_byteswapped(add_f):
    n = 1001
    x, y = sample("f8", n, 1), sample("f8", n, 2)
    buf = np.zeros(n * 8 + 1, np.uint8)
    xu = np.ndarray((n,), "f8", buffer=buf, offset=1)
    xu[...] = x
    assert not xu.flags.aligned
    assert_same(add_f(xu, y), x + y)
    out = np.ndarray((n,), "f8", buffer=np.zeros(n * 8 + 3, np.uint8), offset=3)
    add_f(x, y, out=out)
    assert_same(np.array(out), x + y)
    xs = x.astype(">f8")
    assert_same(add_f(xs, y), x + y)
    assert_same(add_f([1.0, 2.0], [3, 4]), np.array([4.0, 6.0]))


@pytest.mark.parametrize("n", [1, 7, 8, 33, 1001])
def test_division_flags_in_every_path(target, n):
    """Tails of vectorized loops raise no spurious flag and miss no real one."""
    f = compile_ufunc(div, FLOAT_SIGS, target)
    g = compile_ufunc(floordiv, ["i8(i8,i8)", "i4(i4,i4)"], target)
    for dt, h in [("f8", f), ("f4", f), ("i8", g), ("i4", g)]:
        x = np.arange(1, n + 1).astype(dt)
        y = np.full(n, 3, dt)
        with np.errstate(all="raise"):
            h(x, y)                                     # contiguous
            h(x, np.asarray(3, dt))                     # broadcast
            h(x[::-1], y[::-1])                         # strided
        y[-1] = 0                                       # only the last element
        with np.errstate(divide="raise"):
            for args in [(x, y), (x[::-1], y[::-1]), (x, y[-1:])]:
                with pytest.raises(FloatingPointError):
                    h(*args)


def test_at_negative_and_repeated_indices(add_f):
    a, b = np.arange(6, dtype="i8"), np.arange(6, dtype="i8")
    idx = np.array([-1, 0, -1, 3, 3, 3])
    add_f.at(a, idx, 10)
    np.add.at(b, idx, 10)
    assert_same(a, b)
    m, n = np.zeros((3, 4)), np.zeros((3, 4))
    add_f.at(m, (slice(None), [0, 0, 2]), 1.0)
    np.add.at(n, (slice(None), [0, 0, 2]), 1.0)
    assert_same(m, n)


def test_ufuncs_are_independent_and_freed(target):
    import gc
    fs = [compile_ufunc(add, ["f8(f8,f8)"], target) for _ in range(5)]
    g = compile_ufunc(mul, ["f8(f8,f8)"], target)
    x = sample("f8", 100, 1)
    del fs
    gc.collect()
    assert_same(g(x, x), x * x)
    h = compile_ufunc(add, ["f8(f8,f8)"], target)
    assert_same(h(x, x), x + x)
    assert h.py_func is add and g.py_func is mul


# -- NaN inputs raise no invalid flag where NumPy raises none ------------------

def _k_less(x, y):
    return x < y


def _k_less_equal_const(x, y):
    return x <= 0.5


def _k_py_min(x, y):
    return min(x, y)


def _k_np_minimum(x, y):
    return np.minimum(x, y)


def _k_np_maximum(x, y):
    return np.maximum(x, y)


def _k_floordiv(x, y):
    return x // y


def _k_mod(x, y):
    return x % y


@pytest.mark.parametrize("kernel, reference", [
    (_k_less, np.less),
    (_k_less_equal_const, lambda x, y: np.less_equal(x, 0.5)),
    (_k_py_min, None),
    (_k_np_minimum, np.minimum),
    (_k_np_maximum, np.maximum),
    (_k_floordiv, np.floor_divide),
    (_k_mod, np.remainder),
])
@pytest.mark.parametrize("dtype", ["f4", "f8"])
def test_nan_inputs_raise_no_invalid_flag(target, kernel, reference, dtype):
    """x86 vector compares are signaling: NaN inputs must raise exactly the
    flags NumPy's own loops raise (none, except for 0/0 or inf % x)."""
    f = compile_ufunc(kernel, ["f4(f4,f4)", "f8(f8,f8)"], target)
    x = np.array([1.0, np.nan, 3.0, np.inf, -np.inf, 2.0, np.nan] * 9, dtype)
    y = np.array([np.nan, 2.0, 1.0, np.nan, 0.5, -0.0, np.nan] * 9, dtype)
    for i in range(7):              # element by element: each flag, or none
        xi, yi = x[i::7], y[i::7]
        if reference is None:
            with np.errstate(all="raise"):
                f(xi, yi)
            continue
        with np.errstate(all="raise"):
            try:
                reference(xi, yi)
                numpy_error = None
            except FloatingPointError as exc:
                numpy_error = str(exc).split(" encountered")[0]
        with np.errstate(all="raise"):
            if numpy_error is None:
                f(xi, yi)
            else:
                with pytest.raises(FloatingPointError, match=numpy_error):
                    f(xi, yi)
        with np.errstate(all="ignore"):
            np.testing.assert_array_equal(f(xi, yi), np.asarray(reference(xi, yi)))
