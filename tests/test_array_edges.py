"""Arrays in kernels at their edges (issue 34): in-place operators across
dtypes (NumPy's same_kind rule, refused at compile time), indices and
slices of extreme integers and of every integer kind, np.arange and
allocation lengths that overflow, boolean masks of the wrong shape, and
reductions over empty axes.  Each is checked against the kernel run by the
interpreter on NumPy arrays (its py_func), with the same exception type
where that raises, on every target."""
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
