"""Arrays in kernels at their edges (issue 34): in-place operators across
dtypes (NumPy's same_kind rule, refused at compile time), indices and
slices of extreme integers and of every integer kind, np.arange and
allocation lengths that overflow, boolean masks of the wrong shape, and
reductions over empty axes.  Each is checked against the kernel run by the
interpreter on NumPy arrays (its py_func), with the same exception type
where that raises, on every target."""
import os
import re
import warnings

import numpy as np
import pytest

import numbavec
from conftest import kernel_from_source
from numbavec import guvectorize

KINDS = ["bool", "uint8", "uint16", "uint32", "uint64", "int8", "int16", "int32", "int64",
         "float32", "float64", "complex64", "complex128"]
OPS = ["+", "-", "*", "/", "//", "%", "**", "<<", ">>", "&", "|", "^"]
I64_MAX, I64_MIN, U64_MAX = 2 ** 63 - 1, -2 ** 63, 2 ** 64 - 1
# ASan aborts on NumPy's malloc of 2**61 bytes where the C library returns NULL
UNDER_ASAN = "asan" in os.environ.get("LD_PRELOAD", "")


def outcome(f, *args):
    """f(*args), or the exception it raised."""
    try:
        with warnings.catch_warnings(), np.errstate(all="ignore"):
            warnings.simplefilter("ignore")
            return f(*args)
    except Exception as e:  # noqa: BLE001 - the exception is the outcome compared
        return e


def assert_same_outcome(got, expected):
    if isinstance(expected, Exception) or isinstance(got, Exception):
        assert type(got) is type(expected), (got, expected)
    else:
        np.testing.assert_array_equal(got, expected)


def numpy_refuses(statement, t, v):
    """Whether NumPy raises a TypeError (UFuncTypeError: a cast same_kind
    refuses, or no loop for the types) running statement on t and v."""
    try:
        with np.errstate(all="ignore"):
            exec(statement, {"np": np}, {"t": t, "v": v})
    except TypeError:
        return True
    return False


def compiles(src, sig, layout, target):
    try:
        guvectorize([sig], layout, target=target)(kernel_from_source(src))
    except numbavec.TypingError as e:
        return str(e)
    return None


# ---- in-place operators: NumPy's same_kind rule ----

@pytest.mark.parametrize("op", OPS)
@pytest.mark.slow
def test_in_place_operators_refuse_what_same_kind_refuses(target, op):
    """t op= v on an array is np.<ufunc>(t, v, out=t, casting='same_kind'):
    refused at compile time exactly where NumPy raises, for every pair of
    kinds, the whole array as a variable and a slice of it as the target."""
    forms = [("t {op}= v", "t {op}= v"), ("t[1:] {op}= v[1:]", "t[1:] {op}= v[1:]")]
    for statement, body in forms:
        src = f"def k(t, v, out):\n    {body.format(op=op)}\n    out[0] = 0\n"
        for tk in KINDS:
            for vk in KINDS:
                expected = numpy_refuses(statement.format(op=op), np.ones(3, tk), np.ones(3, vk))
                message = compiles(src, f"void({tk}[:], {vk}[:], float64[:])", "(n),(n)->()",
                                   target)
                assert (message is not None) == expected, (statement, tk, vk, message)
                if message is not None and "works in place" in message:
                    assert f"'{op}=' on an array of {tk}" in message
                    assert "same_kind" in message and ".astype(np." in message
                    result = re.search(r"its result is (\w+)", message).group(1)
                    assert not np.can_cast(result, tk, casting="same_kind"), message


@pytest.mark.parametrize("value", ["np.float64(v)", "v", "1.5", "1", "True", "1j",
                                   "np.float32(v)", "np.uint8(v)", "np.int64(v)"])
@pytest.mark.parametrize("tk", ["bool", "uint8", "int32", "int64", "float32", "complex64"])
def test_in_place_scalars_and_targets(target, tk, value):
    """Scalar values (typed, and Python literals, which are weak), and every
    kind of array target: a slice, a mask, an index array; an element
    (t[0] += v) is a scalar store and casts as every store does."""
    targets = {"t": "t", "t[::2]": "t[::2]", "t[t != 0]": "t[t != 0]",
               "t[idx]": "t[np.arange(0, 3, 2)]"}
    for name, text in targets.items():
        t = np.ones(3, tk)
        statement = f"{text} += {value}"
        expected = numpy_refuses(statement, t, np.float64(2.0))
        src = f"import numpy as np\ndef k(t, v, out):\n    {statement}\n    out[0] = 0\n"
        message = compiles(src, f"void({tk}[:], float64, float64[:])", "(n),()->()", target)
        assert (message is not None) == expected, (statement, tk, message)
    src = f"import numpy as np\ndef k(t, v, out):\n    t[0] += {value}\n    out[0] = t[0].real\n"
    if not (tk != "complex64" and "j" in value):     # complex into a real element: refused
        assert compiles(src, f"void({tk}[:], float64, float64[:])", "(n),()->()", target) is None


INPLACE_VALUES = [  # (target kind, value kind, op): accepted, computed as NumPy does
    ("float32", "float64", "+"), ("int8", "int64", "*"), ("uint8", "uint16", "-"),
    ("int16", "uint8", "//"), ("complex64", "complex128", "*"), ("bool", "bool", "|"),
    ("float64", "int64", "/"), ("uint32", "bool", "<<"), ("int64", "int8", "%"),
    ("float32", "int64", "**"),
]


@pytest.mark.parametrize("tk, vk, op", INPLACE_VALUES)
def test_in_place_operators_compute_as_numpy(target, tk, vk, op):
    src = (f"def k(t, v, out):\n    t {op}= v\n    t[1:] {op}= v[:-1]\n"
           f"    out[:] = t\n")
    py = kernel_from_source(src)
    gu = guvectorize([f"void({tk}[:], {vk}[:], {tk}[:])"], "(n),(n)->(n)", target=target)(py)
    rng = np.random.default_rng(3)
    t = rng.integers(1, 4, size=(2, 7)).astype(tk)
    v = rng.integers(1, 3, size=(2, 7)).astype(vk)
    expected = np.zeros_like(t)
    for row in range(2):
        py(t[row].copy(), v[row], expected[row])
    np.testing.assert_allclose(gu(t.copy(), v), expected, rtol=1e-6)


# ---- indices and slices of extreme integers ----

INDEX_BODIES = [
    # slice lengths that overflowed int64
    f"out[0] = len(a[0:10:{I64_MAX}])",
    f"out[0] = a[0:10:{I64_MAX}][0]",
    f"out[0] = len(a[::-{I64_MAX}])",
    f"out[0] = a[::{I64_MIN}][0]",
    f"out[0] = len(a[::{I64_MIN}])",
    f"out[0] = len(a[{I64_MIN}:{I64_MAX}])",
    f"out[0] = a[{I64_MAX}:{I64_MIN}:-1].sum()",
    f"out[0] = a[{I64_MAX}::{I64_MIN}].sum()",
    f"out[0] = len(a[{I64_MIN}:{I64_MIN}:-1])",
    f"out[0] = len(a[-1:{I64_MIN}:-3])",
    # Python ints past int64 slice as int64's extremes
    "out[0] = len(a[2 ** 64:])", "out[0] = len(a[:-2 ** 64])", "out[0] = len(a[::2 ** 64])",
    "out[0] = a[::-2 ** 70].sum()", "out[0] = a[-2 ** 64:2 ** 64].sum()",
    # indices and bounds of every integer kind
    "out[0] = a[np.uint64(3)]", f"out[0] = a[np.uint64({U64_MAX})]",
    "out[0] = a[np.uint64(2 ** 63)]", "out[0] = a[np.int8(-1)]", "out[0] = a[np.uint8(255)]",
    "out[0] = a[np.int16(-5)]", "out[0] = a[np.uint8(4)]", "out[0] = a[np.int8(-6)]",
    f"out[0] = len(a[np.uint64({U64_MAX}):])", f"out[0] = len(a[:np.uint64({U64_MAX})])",
    f"out[0] = len(a[::np.uint64({U64_MAX})])", "out[0] = a[np.uint8(1):np.int8(-1)].sum()",
    "out[0] = a[np.uint16(4):np.int64(0):np.int8(-2)].sum()",
    f"out[0] = a[{I64_MIN}]", f"out[0] = a[{I64_MAX}]", "out[0] = a[-len(a)]",
]


@pytest.mark.parametrize("body", INDEX_BODIES)
def test_extreme_indices_and_slices_match_the_interpreter(target, body):
    py = kernel_from_source(f"import numpy as np\ndef k(a, out):\n    {body}\n")
    gu = guvectorize(["void(float64[:], float64[:])"], "(n)->()", target=target)(py)
    a = np.arange(1.0, 6.0)
    expected = outcome(lambda: (py(a.copy(), r := np.zeros(1)), r[0])[1])
    assert_same_outcome(outcome(gu, a), expected)


@pytest.mark.parametrize("kind, values", [
    ("uint64", [0, 4, 5, 2 ** 63 - 1, 2 ** 63, U64_MAX]),
    ("int64", [0, -1, -5, -6, 4, 5, I64_MIN, I64_MAX]),
    ("int8", [-128, -5, -1, 0, 4, 127]),
    ("uint8", [0, 4, 5, 255]),
])
def test_index_arguments_of_every_kind(target, kind, values):
    """An index argument: negative from the end for signed kinds; a uint64
    past int64 is NumPy's OverflowError, not a[-1]; as a slice bound it
    clamps as Python's slice does."""
    py = kernel_from_source("def k(a, i, out):\n    out[0] = len(a[i:]) + 10 * len(a[:i])\n"
                            "    if i != 0:\n        out[1] = len(a[::i])\n    out[2] = a[i]\n")
    gu = guvectorize([f"void(float64[:], {kind}, float64[:])"], "(n),()->(k)", target=target)(py)
    a = np.arange(1.0, 6.0)
    for v in values:
        i = np.dtype(kind).type(v)
        expected = outcome(lambda: (py(a, i, r := np.zeros(3)), r)[1])
        assert_same_outcome(outcome(lambda: gu(a, i, out=np.zeros(3))), expected)


def test_a_uint64_index_past_int64_is_an_overflow_error(target):
    py = kernel_from_source("def k(a, idx, out):\n    out[0] = a[idx[0]]\n")
    gu = guvectorize(["void(float64[:], uint64[:], float64[:])"], "(n),(m)->()",
                     target=target)(py)
    with pytest.raises(OverflowError):
        py(np.arange(5.0), np.array([U64_MAX], np.uint64), np.zeros(1))
    with pytest.raises(OverflowError, match="uint64 index"):
        gu(np.arange(5.0), np.array([U64_MAX], np.uint64))
    assert gu(np.arange(5.0), np.array([4], np.uint64)) == 4.0


def test_a_uint64_index_array_is_cast_to_intp_as_numpy_does(target):
    """An index array is cast to intp (unsafely): a uint64 past int64 wraps
    to a negative index, which counts from the end; a scalar index does not."""
    py = kernel_from_source("def k(a, idx, out):\n    out[0] = a[idx].sum()\n")
    gu = guvectorize(["void(float64[:], uint64[:], float64[:])"], "(n),(m)->()",
                     target=target)(py)
    a = np.arange(1.0, 6.0)
    for idx in ([U64_MAX, 0], [2 ** 63], [U64_MAX - 4], [3, 4]):
        idx = np.array(idx, np.uint64)
        expected = outcome(lambda: (py(a, idx, r := np.zeros(1)), r[0])[1])
        assert_same_outcome(outcome(gu, a, idx), expected)


# ---- lengths: np.arange and allocations ----

ARANGE_BODIES = [
    "np.arange(0, 10, np.inf)", "np.arange(0, -10, np.inf)", "np.arange(0, 10, -np.inf)",
    "np.arange(0, np.nan)", "np.arange(0, 10, np.nan)", "np.arange(np.nan, 1)",
    "np.arange(0, np.inf)", "np.arange(0, -np.inf)", "np.arange(0, -1e300)",
    "np.arange(0.0, 1e19)", "np.arange(np.inf, np.inf, 1.0)", "np.arange(0, 1e-320, 1e10)",
    "np.arange(1e-320, 0, 1e10)", "np.arange(-0.0, 0.0, np.inf)",
    f"np.arange({I64_MIN}, {I64_MAX})", f"np.arange({I64_MAX}, {I64_MIN}, -1)",
    f"np.arange(0, {I64_MAX}, 2 ** 62)", f"np.arange({I64_MAX}, -1, -1)",
    f"np.arange({I64_MAX} - 3, {I64_MAX})", f"np.arange({I64_MIN}, {I64_MIN} + 5, 2)",
    "np.arange(a[0], a[1], a[2] - a[2])", "np.arange(0, len(a), 0)",
    "np.arange(a[2], a[1] * np.inf)", "np.arange(np.float32(0), np.float32(1e-45), "
    "np.float32(1e30))", "np.arange(0, 1, np.float32(1e-30))",
    f"np.arange(np.uint64(0), np.uint64({U64_MAX}), np.uint64(2 ** 63))",
    "np.arange(np.int64(5), np.uint64(10))",
]


@pytest.mark.parametrize("expr", ARANGE_BODIES)
def test_arange_lengths_match_numpy(target, expr):
    """NumPy's length: a zero quotient of a nonzero span is one element, NaN
    and lengths past int64 are ValueError, a zero step is ZeroDivisionError
    only between Python numbers (NumPy's own division gives inf: ValueError)."""
    body = (f"r = {expr}\n    out[0] = len(r)\n    if len(r):\n        out[1] = r[0]\n"
            f"        out[2] = r[-1]")
    py = kernel_from_source(f"import numpy as np\ndef k(a, out):\n    {body}\n")
    gu = guvectorize(["void(float64[:], float64[:])"], "(n)->(k)", target=target)(py)
    a = np.array([0.5, 3.0, 2.0])
    expected = outcome(lambda: (py(a, r := np.zeros(3)), r)[1])
    got = outcome(lambda: gu(a, out=np.zeros(3)))
    if isinstance(expected, Exception) or isinstance(got, Exception):
        assert type(got) is type(expected), (got, expected)
    else:
        np.testing.assert_allclose(got, expected, rtol=1e-15)


@pytest.mark.parametrize("shape, error", [
    ("-1", ValueError), ("(3, -1)", ValueError), ("(0, -1)", ValueError),
    (f"{I64_MAX}", ValueError), ("(1 << 32, 1 << 32)", ValueError),
    ("(0, 1 << 32, 1 << 32)", ValueError), ("(1 << 31, 1 << 31, 0)", ValueError),
    ("(1 << 30, 1 << 30)", ValueError), ("(1 << 28, 1 << 30)", MemoryError),
    (f"np.uint64({U64_MAX})", ValueError), ("(1 << 40, 0, 4)", None), ("(0, 3)", None),
    ("(3, 0)", None),
])
def test_allocation_sizes_follow_numpys_errors(target, shape, error):
    """A negative dimension or bytes past int64 (zero dimensions do not
    excuse it) is ValueError, as NumPy's 'array is too big'; an allocation
    that fits int64 but not memory is MemoryError; a zero-size array of huge
    dimensions is made and filled at once (its walks do not loop over the
    2**40 rows of nothing: hours, before)."""
    py = kernel_from_source(f"import numpy as np\ndef k(a, out):\n"
                            f"    t = np.zeros({shape})\n    t[...] = 1.0\n"
                            f"    out[0] = t.size + t.sum() + len(t.strides)\n")
    gu = guvectorize(["void(float64[:], float64[:])"], "(n)->()", target=target)(py)
    if error is None:
        expected = np.zeros(1)
        py(np.ones(2), expected)
        assert gu(np.ones(2)) == expected[0]
    else:
        if not (error is MemoryError and UNDER_ASAN):
            with pytest.raises(error):
                py(np.ones(2), np.zeros(1))
        with pytest.raises(error):
            gu(np.ones(2))


def test_zero_size_arrays_have_numpys_strides(target):
    py = kernel_from_source("import numpy as np\ndef k(a, out):\n"
                            "    t = np.zeros((3, 0, 2))\n    u = np.empty((0, 4))\n"
                            "    s, r = t.strides, u.strides\n"
                            "    out[0] = s[0]\n    out[1] = s[1]\n    out[2] = s[2]\n"
                            "    out[3] = r[0]\n    out[4] = r[1]\n")
    gu = guvectorize(["void(float64[:], int64[:])"], "(n)->(k)", target=target)(py)
    expected = np.zeros(5, np.int64)
    py(np.ones(1), expected)
    np.testing.assert_array_equal(gu(np.ones(1), out=np.zeros(5, np.int64)), expected)


# ---- boolean masks ----

MASK_BODIES = [
    "m = np.zeros(len(a) + 1, dtype=np.bool_)\n    out[0] = a[m].sum()",
    "m = np.ones(len(a) - 1, dtype=np.bool_)\n    out[0] = a[m].sum()",
    "m = np.ones(1, dtype=np.bool_)\n    out[0] = a[m].sum()",
    "m = np.ones(1, dtype=np.bool_)\n    a[m] = 3.0\n    out[0] = a.sum()",
    "m = np.ones(len(a) - 1, dtype=np.bool_)\n    a[m] = 3.0\n    out[0] = a.sum()",
    "m = np.ones(len(a) + 2, dtype=np.bool_)\n    a[m] = a[:2]\n    out[0] = a.sum()",
    "out[0] = a[a[1:] > 2].sum()",
    "out[0] = a[a > 2].sum()",
    "a[a > 2] = 0.5\n    out[0] = a.sum()",
    "out[0] = a[:1][a[:1] > 0].sum()",
    # a mask of no elements selects nothing, whatever its length
    "out[0] = a[a[:0] > 0].sum()",
    "a[a[5:2] > 0] = 7.0\n    out[0] = a.sum()",
    "a[a[:0] > 0] = a[:2]\n    out[0] = a.sum()",
    "a[a[:0] > 0] = a[:1]\n    out[0] = a.sum()",
]


@pytest.mark.parametrize("body", MASK_BODIES)
def test_a_mask_of_another_shape_is_an_index_error(target, body):
    """NumPy's 'boolean index did not match': an IndexError, and a mask of
    one element does not broadcast; each dimension of a mask must be the
    array's, or 0 (a mask of no elements selects nothing)."""
    py = kernel_from_source(f"import numpy as np\ndef k(a, out):\n    {body}\n")
    gu = guvectorize(["void(float64[:], float64[:])"], "(n)->()", target=target)(py)
    a = np.arange(1.0, 6.0)
    expected = outcome(lambda: (py(a.copy(), r := np.zeros(1)), r[0])[1])
    assert_same_outcome(outcome(gu, a), expected)


def test_a_2d_mask_of_another_shape_is_an_index_error(target):
    py = kernel_from_source("import numpy as np\ndef k(a, b, out):\n"
                            "    out[0] = a[b > 0].sum()\n    a[b < 0] = 0\n    out[1] = a.sum()\n")
    gu = guvectorize(["void(float64[:, :], float64[:, :], float64[:])"], "(m,n),(p,q)->(k)",
                     target=target)(py)
    a = np.arange(6.0).reshape(2, 3)
    for b in (a - 2, (a - 2)[:, :2], (a - 2)[:1], np.ones((1, 3)), np.ones((2, 1)),
              np.ones((0, 3)), np.ones((2, 0)), np.ones((0, 0)), np.ones((0, 5)),
              np.ones((3, 0))):
        expected = outcome(lambda: (py(a.copy(), b, r := np.zeros(2)), r)[1])
        assert_same_outcome(outcome(lambda: gu(a.copy(), b, out=np.zeros(2))), expected)


INDEX_READS_WRITTEN = [  # (body of k(a, out), a): the index reads the array written
    ("a[a[::-1] > 0] = -5\n    out[:] = a", [1, 1, 1, 1, 1]),
    ("a[a[::-1] > 1] = a[:1]\n    out[:] = a", [-3, 2, 5, -1, 4, 0, -2]),
    ("b = a[::2]\n    b[a[1::2] > 0] = 0\n    out[:] = a", [1, 2, 3, 4, 5, 6]),
    ("a[a > 0] = -a[::-1][a > 0]\n    out[:] = a", [1, -2, 3, 4]),        # the same place: direct
    ("a[a] = 0\n    out[:] = a", [1, 2, 3, 0]),
    ("a[a[::-1]] = 7\n    out[:] = a", [3, 0, 2, 1]),
    ("a[np.argsort(a)[::-1]] = a\n    out[:] = a", [4, 1, 3, 2]),
]


# the cases whose index is an integer array reading the array written
INTEGER_INDEX_READS_WRITTEN = {body for body, _ in INDEX_READS_WRITTEN[4:6]}


def _numpy_copies_an_overlapping_index():
    probe = np.array([1, 2, 3, 0])
    probe[probe] = 0
    return not probe.any()


@pytest.mark.parametrize("body, values", INDEX_READS_WRITTEN)
def test_an_index_that_reads_the_array_written_is_computed_first(target, body, values):
    """a[mask] = v and a[idx] = v where the mask or idx reads a: NumPy
    computes the index before it writes (a walk in element order read what
    it had just written)."""
    if body in INTEGER_INDEX_READS_WRITTEN and not _numpy_copies_an_overlapping_index():
        pytest.skip("this NumPy writes through an integer index that reads the array "
                    "(NumPy 2.2 does; newer ones copy it first, as numbavec does)")
    py = kernel_from_source(f"import numpy as np\ndef k(a, out):\n    {body}\n")
    gu = guvectorize(["void(int64[:], int64[:])"], "(n)->(n)", target=target)(py)
    a = np.array(values, np.int64)
    expected = np.zeros_like(a)
    py(a.copy(), expected)
    np.testing.assert_array_equal(gu(a.copy()), expected)


# ---- reductions of empty axes ----

@pytest.mark.parametrize("shape", [(0, 0), (0, 3), (3, 0)])
@pytest.mark.parametrize("axis", [0, 1])
@pytest.mark.parametrize("fn", ["argmin", "argmax", "min", "max", "nanmin", "nanmax", "sum",
                                "prod", "mean", "nanmean", "var", "std", "any", "all",
                                "cumsum", "nansum"])
def test_reductions_over_empty_axes(target, shape, axis, fn):
    """argmin/argmax of an empty axis raise even when the result is empty
    (no line is reduced), as min and max do; the others give their
    identity, NaN or an empty result, as NumPy."""
    py = kernel_from_source(f"import numpy as np\ndef k(a, out):\n"
                            f"    r = np.{fn}(a, axis={axis})\n    out[0] = r.size\n")
    gu = guvectorize(["void(float64[:, :], float64[:])"], "(m,n)->()", target=target)(py)
    a = np.zeros(shape)
    expected = outcome(lambda: (py(a, r := np.zeros(1)), r[0])[1])
    assert_same_outcome(outcome(gu, a), expected)


@pytest.mark.parametrize("expr", ["np.median(a[:0])", "np.nanmedian(a[:0])",
                                  "np.percentile(a[:0], 50)", "np.quantile(a[:0], 0.5)",
                                  "np.nanpercentile(a[:0], 50)", "np.nanquantile(a * np.nan, 0.5)",
                                  "np.argmin(a[:0])", "np.nanmax(a[:0])", "np.nanmin(a * np.nan)",
                                  "np.min(a[1:1])", "np.argmax(a[::-1][5:])"])
def test_empty_reductions_without_identity_match_numpy(target, expr):
    py = kernel_from_source(f"import numpy as np\ndef k(a, out):\n    out[0] = {expr}\n")
    gu = guvectorize(["void(float64[:], float64[:])"], "(n)->()", target=target)(py)
    a = np.arange(5.0)
    expected = outcome(lambda: (py(a, r := np.zeros(1)), r[0])[1])
    assert_same_outcome(outcome(gu, a), expected)
