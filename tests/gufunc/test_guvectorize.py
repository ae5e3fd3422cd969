"""@guvectorize on cpu and parallel: layouts, array kernels, in-place writes, errors.

Every kernel is checked against NumPy (or against its py_func run by the
interpreter) on every target.
"""
import numpy as np
import pytest

import numbavec
from conftest import kernel_from_source
from examples import add, copy, scale, triad
from numbavec import guvectorize


@pytest.fixture(autouse=True)
def force_parallel(forced):
    """Every test here: the parallel target splits even small calls."""


# ---- the STREAM kernels of EXAMPLES.md section 7 (tests/support/examples.py) ----

STREAM = {
    "copy": (copy, '(float64[:], float64[:])', '(n),(n)', lambda b, c, a: b),
    "scale": (scale, '(float64[:], float64[:], float64)', '(n),(n),()', lambda b, c, a: a * b),
    "add": (add, '(float64[:], float64[:], float64[:])', '(n),(n),(n)', lambda b, c, a: b + c),
    "triad": (triad, '(float64[:], float64[:], float64[:], float64)', '(n),(n),(n),()',
              lambda b, c, a: b + a * c),
}


def stream_args(name, lhs, b, c, alpha):
    return {"copy": (lhs, b), "scale": (lhs, b, alpha), "add": (lhs, b, c),
            "triad": (lhs, b, c, alpha)}[name]


@pytest.mark.parametrize("name", sorted(STREAM))
@pytest.mark.parametrize("shape", [(1, 1000), (50, 200), (7,), (3, 4, 33)])
def test_stream_against_numpy(target, name, shape):
    kernel, sig, layout, expected = STREAM[name]
    gu = guvectorize(sig, layout, target=target)(kernel)
    rng = np.random.default_rng(1)
    b, c = rng.random(shape), rng.random(shape)
    lhs = np.zeros(shape)
    result = gu(*stream_args(name, lhs, b, c, 3.0))
    np.testing.assert_array_equal(lhs, expected(b, c, 3.0))
    assert result == ()         # a gufunc without outputs returns an empty tuple


def test_stream_is_a_real_gufunc(target):
    gu = guvectorize(STREAM["triad"][1], STREAM["triad"][2], target=target)(triad)
    assert isinstance(gu, np.ufunc)
    assert gu.signature == '(n),(n),(n),()'
    assert (gu.nin, gu.nout) == (4, 0)
    assert gu.py_func is triad
    assert gu.types == ['dddd->']


# ---- writes into inputs: casts, strides, broadcasting ----

@pytest.mark.parametrize("dtype", [np.float32, np.int64, np.uint8])
def test_in_place_write_reaches_cast_input(target, dtype):
    gu = guvectorize('(float64[:], float64[:])', '(n),(n)', target=target)(copy)
    lhs = np.zeros(6, dtype=dtype)
    gu(lhs, np.arange(6.0))
    np.testing.assert_array_equal(lhs, np.arange(6).astype(dtype))


def test_in_place_write_reaches_strided_input(target):
    gu = guvectorize('(float64[:], float64[:], float64)', '(n),(n),()', target=target)(scale)
    base = np.zeros((4, 12))
    lhs = base[::2, ::3]                # non-contiguous in both dimensions
    rhs = np.arange(8.0).reshape(2, 4)
    gu(lhs, rhs, 2.0)
    np.testing.assert_array_equal(base[::2, ::3], 2 * rhs)
    assert base.sum() == (2 * rhs).sum()    # nothing else was touched


def test_in_place_with_broadcast_read_input(target):
    gu = guvectorize(STREAM["add"][1], '(n),(n),(n)', target=target)(add)
    lhs = np.zeros((5, 8))
    row = np.arange(8.0)
    gu(lhs, row, np.ones((5, 8)))       # rhs1 broadcast over the loop dimension
    np.testing.assert_array_equal(lhs, np.broadcast_to(row + 1, (5, 8)))


def test_read_only_input_not_written_is_fine(target):
    gu = guvectorize(STREAM["copy"][1], '(n),(n)', target=target)(copy)
    rhs = np.arange(5.0)
    rhs.flags.writeable = False
    lhs = np.zeros(5)
    gu(lhs, rhs)
    np.testing.assert_array_equal(lhs, rhs)


def test_read_only_written_input_is_refused(target):
    gu = guvectorize(STREAM["copy"][1], '(n),(n)', target=target)(copy)
    lhs = np.zeros(5)
    lhs.flags.writeable = False
    with pytest.raises(ValueError, match="read-only"):
        gu(lhs, np.ones(5))


def test_writable_args(target):
    def bump(x, y, out):
        for i in range(len(x)):
            out[i] = x[i] + y[i]
            y[i] = 0.0

    for writable in [(1,), ("y",)]:
        gu = guvectorize(['void(f8[:], f8[:], f8[:])'], '(n),(n)->(n)', target=target,
                         writable_args=writable)(bump)
        y = np.arange(4, dtype=np.float32)      # cast: written back all the same
        out = gu(np.ones(4), y)
        np.testing.assert_array_equal(out, np.arange(4) + 1.0)
        np.testing.assert_array_equal(y, 0)


# ---- Numba's documentation examples and layout forms ----

def test_numba_doc_example(target):
    @guvectorize(['void(int64[:], int64, int64[:])', 'void(float64[:], float64, float64[:])'],
                 '(n),()->(n)', target=target)
    def g(x, y, res):
        for i in range(x.shape[0]):
            res[i] = x[i] + y

    a = np.arange(5)
    np.testing.assert_array_equal(g(a, 2), a + 2)
    assert g(a, 2).dtype == np.int64
    np.testing.assert_array_equal(g(a.astype(np.float64), 2.5), a + 2.5)
    b = np.arange(6).reshape(2, 3)
    np.testing.assert_array_equal(g(b, 10), b + 10)
    np.testing.assert_array_equal(g(b, np.array([10, 20])), b + np.array([[10], [20]]))


def test_numba_doc_example_indexed_scalar(target):
    @guvectorize(['void(float64[:], float64[:], float64[:])'], '(n),()->(n)', target=target)
    def g(x, y, res):
        for i in range(x.shape[0]):
            res[i] = x[i] + y[0]

    x = np.arange(12.0).reshape(3, 4)
    np.testing.assert_array_equal(g(x, np.array([1.0, 2.0, 3.0])),
                                  x + np.array([[1.0], [2.0], [3.0]]))


def test_scalar_output_and_reduction_layout(target):
    @guvectorize(['void(float64[:], float64[:])', 'void(float32[:], float32[:])'],
                 '(n)->()', target=target)
    def total(x, res):
        acc = 0.0
        for v in range(len(x)):
            acc += x[v]
        res[0] = acc

    x = np.arange(24.0).reshape(2, 3, 4)
    np.testing.assert_allclose(total(x), x.sum(-1))
    assert total(x.astype(np.float32)).dtype == np.float32
    # axis=, keepdims=, axes=, out=
    np.testing.assert_allclose(total(x, axis=0), x.sum(0))
    np.testing.assert_allclose(total(x, axis=1, keepdims=True), x.sum(1, keepdims=True))
    np.testing.assert_allclose(total(x, axes=[(1,), ()]), x.sum(1))
    out = np.empty((2, 3))
    assert total(x, out=out) is out
    np.testing.assert_allclose(out, x.sum(-1))


def test_multiple_outputs(target):
    @guvectorize(['void(float64[:], float64[:], float64[:], float64[:])'],
                 '(n)->(),(),(n)', target=target)
    def stats(x, lo, hi, centred):
        lo[0] = x[0]
        hi[0] = x[0]
        for i in range(1, len(x)):
            lo[0] = min(lo[0], x[i])
            hi[0] = max(hi[0], x[i])
        mean = 0.0
        for i in range(len(x)):
            mean += x[i]
        mean /= len(x)
        for i in range(len(x)):
            centred[i] = x[i] - mean

    x = np.random.default_rng(0).random((4, 9))
    lo, hi, c = stats(x)
    np.testing.assert_array_equal(lo, x.min(1))
    np.testing.assert_array_equal(hi, x.max(1))
    np.testing.assert_allclose(c, x - x.mean(1, keepdims=True))


def test_matmul_layout_and_2d_indexing(target):
    @guvectorize(['void(float64[:, :], float64[:, :], float64[:, :])'], '(m,n),(n,p)->(m,p)',
                 target=target)
    def matmul(a, b, c):
        m, n = a.shape
        p = b.shape[1]
        for i in range(m):
            for j in range(p):
                acc = 0.0
                for k in range(n):
                    acc += a[i, k] * b[k, j]
                c[i, j] = acc

    rng = np.random.default_rng(2)
    a, b = rng.random((6, 3, 4)), rng.random((4, 5))
    np.testing.assert_allclose(matmul(a, b), a @ b)
    np.testing.assert_allclose(matmul(a.transpose(0, 2, 1).copy().transpose(0, 2, 1), b), a @ b)
    np.testing.assert_allclose(matmul(a[:, :, ::-1], b[::-1]), a[:, :, ::-1] @ b[::-1])


def test_frozen_dimension(target):
    @guvectorize(['void(float64[:], float64[:], float64[:])'], '(3),(3)->(3)', target=target)
    def cross(a, b, c):
        c[0] = a[1] * b[2] - a[2] * b[1]
        c[1] = a[2] * b[0] - a[0] * b[2]
        c[2] = a[0] * b[1] - a[1] * b[0]

    a, b = np.random.default_rng(3).random((2, 10, 3))
    np.testing.assert_allclose(cross(a, b), np.cross(a, b))
    with pytest.raises(ValueError):
        cross(np.ones(4), np.ones(4))


def test_optional_dimension(target):
    @guvectorize(['void(float64[:, :], float64[:], float64[:])'], '(m,n),(n)->(m)',
                 target=target)
    def matvec(a, x, y):
        for i in range(a.shape[0]):
            acc = 0.0
            for k in range(a.shape[1]):
                acc += a[i, k] * x[k]
            y[i] = acc

    @guvectorize(['void(float64[:], float64[:], float64[:])'], '(n?),(n?)->()', target=target)
    def dot(a, b, out):
        acc = 0.0
        for i in range(a.shape[0]):
            acc += a[i] * b[i]
        out[0] = acc

    a = np.random.default_rng(4).random((3, 4))
    np.testing.assert_allclose(matvec(a, np.arange(4.0)), a @ np.arange(4.0))
    np.testing.assert_allclose(dot(np.arange(3.0), np.arange(3.0)), 5.0)


def test_output_dimension_from_out(target):
    @guvectorize(['void(float64, float64[:])'], '()->(n)', target=target)
    def fill(v, out):
        for i in range(len(out)):
            out[i] = v * i

    out = np.empty((2, 5))
    fill(np.array([1.0, 2.0]), out=out)
    np.testing.assert_array_equal(out, np.array([[1.0], [2.0]]) * np.arange(5))
    with pytest.raises(ValueError):
        fill(np.array([1.0, 2.0]))


def test_negative_indices_shape_size_ndim(target):
    @guvectorize(['void(float64[:, :], float64[:])'], '(m,n)->(n)', target=target)
    def last_row(a, out):
        for j in range(a.shape[1]):
            out[j] = a[-1, j] + a.size * 0 + a.ndim - 2 + len(a) - a.shape[0]

    a = np.arange(12.0).reshape(3, 4)
    np.testing.assert_array_equal(last_row(a), a[-1])


def test_augmented_assignment_and_int_kernel(target):
    @guvectorize(['void(int32[:], int32[:])', 'void(uint8[:], uint8[:])'], '(n)->(n)',
                 target=target)
    def cumsum(x, out):
        out[0] = x[0]
        for i in range(1, len(x)):
            out[i] = out[i - 1]
            out[i] += x[i]

    x = np.arange(10, dtype=np.int32)
    np.testing.assert_array_equal(cumsum(x), np.cumsum(x).astype(np.int32))
    u = np.full(300, 1, dtype=np.uint8)
    np.testing.assert_array_equal(cumsum(u), np.cumsum(u).astype(np.uint8))   # wraps


def test_explicit_void_signature_object(target):
    sig = numbavec.void(numbavec.float64[:], numbavec.float64[:])
    gu = guvectorize([sig], '(n),(n)', target=target)(copy)
    lhs = np.zeros(3)
    gu(lhs, np.ones(3))
    np.testing.assert_array_equal(lhs, 1.0)


# ---- [::1] ----

def test_contiguous_declaration_copies_strided_input(target):
    @guvectorize(['void(float64[::1], float64[:])'], '(n)->()', target=target)
    def weighted(x, out):
        acc = 0.0
        for i in range(len(x)):
            acc += x[i] * (i + 1)
        out[0] = acc

    x = np.arange(40.0).reshape(2, 20)
    np.testing.assert_array_equal(weighted(x[:, ::2]), (x[:, ::2] * np.arange(1, 11)).sum(1))
    np.testing.assert_array_equal(weighted(x[:, ::-1]), (x[:, ::-1] * np.arange(1, 21)).sum(1))


def test_contiguous_declaration_writes_back(target):
    gu = guvectorize('(float64[::1], float64[:])', '(n),(n)', target=target)(copy)
    base = np.zeros(20)
    gu(base[::2], np.arange(10.0))
    np.testing.assert_array_equal(base[::2], np.arange(10.0))
    np.testing.assert_array_equal(base[1::2], 0.0)


# ---- errors ----

def test_index_error(target):
    @guvectorize(['void(float64[:], float64[:])'], '(n)->(n)', target=target)
    def off_by_one(x, out):
        for i in range(len(x) + 1):
            out[i] = x[i]

    with pytest.raises(IndexError, match="out of bounds"):
        off_by_one(np.ones((4, 8)))


def test_boundscheck_false_compiles_without_checks(target):
    @guvectorize(['void(float64[:], float64[:])'], '(n)->(n)', target=target,
                 boundscheck=False)
    def ok(x, out):
        for i in range(len(x)):
            out[i] = x[-1 - i]

    np.testing.assert_array_equal(ok(np.arange(5.0)), np.arange(5.0)[::-1])
    assert "index.error" not in "".join(ok.inspect_llvm().values())


@pytest.mark.parametrize("layout, message", [
    ("(n", "expected ',' or ')'"),
    ("(n),", "expected '('"),
    ("(n)->", "expected '('"),
    ("(n)>(n)", "expected ',' or '->'"),
    ("(0)", "positive"),
    ("(n?),(n)", "'?'"),
    ("(1a)", "positive"),
])
def test_malformed_layouts(target, layout, message):
    with pytest.raises(ValueError, match="invalid gufunc layout") as info:
        guvectorize(['void(float64[:], float64[:])'], layout, target=target)(copy)
    assert message in str(info.value)


@pytest.mark.parametrize("sig, layout, message", [
    ('void(float64[:], float64[:])', '(n),(n),(n)', "has 2 argument"),
    ('void(float64[:, :], float64[:])', '(n),(n)', "core dimension"),
    ('void(float64[:], float64)', '(n)->()', "declare it as an array"),
    ('float64(float64[:], float64[:])', '(n),(n)', "returns void"),
])
def test_signature_layout_mismatch(target, sig, layout, message):
    with pytest.raises((ValueError, TypeError)) as info:
        guvectorize([sig], layout, target=target)(copy)
    # Numba's words as the message, numbavec's explanation in a note
    assert message in "\n".join([str(info.value), *getattr(info.value, "__notes__", [])])


@pytest.mark.parametrize("body, message", [
    ("x[0, 0] = 1.0", "too many indices"),
    ("x[1.5] = 1.0", "indices must be integers"),
    ("x[:] = x[None, :]", "2-d array into a 1-d view"),
    ("x[0] = 1j", "cannot store complex"),
    ("return x[0]", "returns nothing"),
    ("x[0] = len(x) + x.shape[3]", "out of range"),
])
def test_kernel_typing_errors(target, body, message):
    with pytest.raises(numbavec.TypingError, match=message):
        guvectorize(['void(float64[:], float64[:])'], '(n)->(n)', target=target)(
            kernel_from_source(f"def k(x, out):\n    {body}\n"))


def test_inspection(target):
    gu = guvectorize(STREAM["triad"][1], '(n),(n),(n),()', target=target)(triad)
    (ir,) = gu.inspect_llvm().values()
    assert "<4 x double>" in ir or "<8 x double>" in ir or "<2 x double>" in ir
    assert "triad" in "".join(gu.inspect_asm().values())
    import io
    buf = io.StringIO()
    gu.inspect_types(file=buf)
    assert "lhs: float64[:]" in buf.getvalue()


def test_large_outer_loop_parallel_matches_cpu(target):
    gu = guvectorize(STREAM["triad"][1], '(n),(n),(n),()', target=target)(triad)
    rng = np.random.default_rng(5)
    b, c = rng.random((1000, 300)), rng.random((1000, 300))
    lhs = np.empty_like(b)
    gu(lhs, b, c, 0.5)
    np.testing.assert_array_equal(lhs, b + 0.5 * c)


# -- device functions inside gufunc kernels -----------------------------------

@numbavec.jit
def _square(v):
    return v * v


@numbavec.jit
def _clamp(v, lo, hi):
    if v < lo:
        return lo
    if v > hi:
        return hi
    return v


def _norm_with_helper(x, res):
    acc = 0.0
    for i in range(len(x)):
        acc += _square(x[i])
    res[0] = acc ** 0.5


def _clamp_all(x, lo, hi, out):
    for i in range(len(x)):
        out[i] = _clamp(x[i], lo, hi)


def test_device_function_returns_do_not_end_the_kernel(target):
    """An inlined device function's return leaves the helper, not the gufunc
    kernel: the output must still be written."""
    gu = guvectorize(['void(float64[:], float64[:])'], '(n)->()', target=target)(
        _norm_with_helper)
    x = np.arange(12.0).reshape(3, 4)
    np.testing.assert_allclose(gu(x), np.linalg.norm(x, axis=1), rtol=1e-15)
    gu2 = guvectorize(['void(float64[:], float64, float64, float64[:])'], '(n),(),()->(n)',
                      target=target)(_clamp_all)
    y = np.linspace(-3, 3, 25).reshape(5, 5)
    np.testing.assert_array_equal(gu2(y, -1.0, 2.0), np.clip(y, -1.0, 2.0))


# ---- outputs NumPy must cast keep what the kernel does not write ----

def _writes_odd(x, out):
    for i in range(1, x.shape[0], 2):
        out[i] = x[i]


@pytest.mark.parametrize("loop, out_dtype", [("uint8", "int8"), ("float64", "float32"),
                                             ("int64", "float64"), ("float32", "float64")])
def test_cast_output_keeps_the_callers_values(target, loop, out_dtype):
    """Where the kernel does not write, the caller's values stay (as in Numba);
    NumPy's cast copy used to start uninitialised, leaking old heap memory."""
    gu = guvectorize([f"void({loop}[:], {loop}[:])"], "(n)->(n)", target=target)(_writes_odd)
    x = np.arange(1, 9, dtype=loop).reshape(2, 4)
    out = np.full((2, 4), 7, dtype=out_dtype)
    with np.errstate(all="ignore"):
        gu(x, out=out, casting="unsafe")
    expected = np.full((2, 4), 7, dtype=out_dtype)
    expected[:, 1::2] = x[:, 1::2].astype(out_dtype)
    np.testing.assert_array_equal(out, expected, strict=True)


def test_cast_output_of_a_strided_view(target):
    gu = guvectorize(["void(float64[:], float64[:])"], "(n)->(n)", target=target)(_writes_odd)
    base = np.full((3, 10), -1.0, dtype=np.float32)
    view = base[::2, ::2]
    gu(np.ones((2, 5)), out=view)
    expected = np.full((3, 10), -1.0, dtype=np.float32)
    expected[::2, 2::4] = 1.0
    np.testing.assert_array_equal(base, expected, strict=True)


# ---- layouts: dimension names of any length, hostile text ----

def test_long_dimension_names_stay_distinct(target):
    """Names were cut to 63 characters: two sharing a prefix became one
    dimension, and the kernel got the wrong length (bounds checks too)."""
    a, b = "n" * 70 + "_first", "n" * 70 + "_second"
    k = kernel_from_source("def k(x, y, out):\n    out[0] = x.shape[0] * 100 + y.shape[0]\n")
    gu = guvectorize(["void(float64[:], float64[:], float64[:])"], f"({a}),({b})->()",
                     target=target)(k)
    assert gu.signature == f"({a}),({b})->()"
    np.testing.assert_array_equal(gu(np.ones((2, 3)), np.ones((2, 5))), [305.0, 305.0])


@pytest.mark.parametrize("layout, message", [
    ("(n)\x00->(n)", "NUL"),
    ("(99999999999999999999999)->()", "too large"),
    ("(0)->()", "positive"),
    ("(n" + ",n" * 40 + ")->()", "too many dimensions"),
    ("(" + "x" * 2000 + ")->()", "too long"),
])
def test_bad_layouts_are_value_errors(layout, message):
    with pytest.raises(ValueError, match=message):
        guvectorize(["void(float64[:], float64[:])"], layout)(copy)


@pytest.mark.parametrize("dtype", [np.float32, np.int64, np.float64])
def test_written_scalar_input_that_numpy_casts_keeps_the_writes(target, dtype):
    """With no core dimension at all NumPy would run the gufunc elementwise,
    through cast buffers it never copies back into an input; a gufunc that
    writes an input takes NumPy's gufunc path instead, as (n) layouts do
    (test_in_place_write_reaches_cast_input)."""
    from conftest import kernel_from_source

    k = kernel_from_source("def k(a, b):\n    a[0] = b * 2\n")
    gu = guvectorize(['void(f8[:], f8)'], '(),()', target=target)(k)
    a = np.zeros(4, dtype=dtype)
    gu(a, np.arange(4.0))
    np.testing.assert_array_equal(a, [0.0, 2.0, 4.0, 6.0])
    # strided, broadcast against a 2-d second operand, and a Python scalar
    base = np.zeros(8, dtype=dtype)
    gu(base[::2], 3.0)
    np.testing.assert_array_equal(base, [6, 0, 6, 0, 6, 0, 6, 0])
    m = np.zeros((2, 3), dtype=dtype)
    gu(m, np.array([[1.0], [2.0]]))
    np.testing.assert_array_equal(m, [[2, 2, 2], [4, 4, 4]])
    # what NumPy reports of the ufunc is unchanged
    assert gu.signature == "(),()"
    assert gu.nin == 2 and gu.nout == 0


@pytest.mark.parametrize("sig", ["f8[:], f8, f8[:]", "float64[:], float64, float64[:],"])
def test_numba_bare_argument_lists(target, sig):
    """Numba's guvectorize takes a signature as a bare argument list."""
    from conftest import kernel_from_source

    k = kernel_from_source("def k(a, b, out):\n    for i in range(a.shape[0]):\n"
                           "        out[i] = a[i] + b\n")
    g = guvectorize([sig], "(n),()->(n)", target=target)(k)
    assert g.types == ["dd->d"]
    np.testing.assert_array_equal(g(np.arange(3.0), 2.0), [2.0, 3.0, 4.0])
