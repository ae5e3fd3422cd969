"""np.sort, argsort, partition, median, quantile, unique and searchsorted in
gufunc kernels (runtime.c does the work), checked against the kernel run by
the interpreter on NumPy arrays, over dtypes, sizes, NaNs, strided and
reversed operands, N-d arrays and loop dimensions, on every target."""
import platform
import warnings

import numpy as np
import pytest

import numbavec
from conftest import kernel_from_source
from numbavec import guvectorize

SIZES = [0, 1, 2, 3, 16, 17, 40, 301]
KINDS = ["float64", "float32", "int64", "int8", "uint16", "bool", "complex128"]


def values(rng, n, dtype, nan=False):
    t = np.dtype(dtype)
    if t.kind == "b":
        return rng.integers(0, 2, n).astype(bool)
    if t.kind in "iu":
        return rng.integers(0, 6 if n < 20 else 100, n).astype(t)
    a = rng.integers(-8, 8, n).astype(t) / 2 + (rng.standard_normal(n) if n > 30 else 0)
    if t.kind == "c":
        a = a + 1j * rng.integers(-2, 2, n)
    a = a.astype(t)
    if nan and n > 2:
        a[rng.integers(0, n, max(1, n // 5))] = np.nan
        if t.kind == "c":
            a[rng.integers(0, n, 2)] = complex(1, np.nan)
    return a


def interpreted(py, *args):
    with np.errstate(all="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return py(*args)


def kernel(source, sig, layout, target):
    py = kernel_from_source("import numpy as np\n" + source)
    return py, guvectorize([sig], layout, target=target)(py)


def run_both(py, gu, inputs, out):
    """The gufunc's result on inputs (one loop dimension), and the kernel's
    own on copies, one loop index at a time."""
    expected = out.copy()
    for i in range(out.shape[0]):
        interpreted(py, *[x[i].copy() for x in inputs], expected[i])
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no 'invalid value' from NaN compares
        got = gu(*inputs, out=out)
    return got, expected


def same(got, expected):
    np.testing.assert_array_equal(got, expected)


@pytest.mark.parametrize("dtype", KINDS)
def test_sort_argsort_and_unique(target, dtype):
    src = """def k(a, s, order, u, nu):
    s[:] = np.sort(a)
    order[:] = np.argsort(a, kind='stable')
    v = np.unique(a)
    nu[0] = len(v)
    u[:len(v)] = v
"""
    t = np.dtype(dtype).name
    py, gu = kernel(src, f"void({t}[:], {t}[:], int64[:], {t}[:], int64[:])",
                    "(n)->(n),(n),(n),()", target)
    rng = np.random.default_rng(1)
    for n in SIZES:
        for nan in (False, True):
            a = values(rng, n, dtype, nan)
            outs = (np.zeros(n, t), np.zeros(n, np.int64), np.zeros(n, t), np.zeros((), np.int64))
            expected = [o.copy() for o in outs[:3]] + [np.zeros(1, np.int64)]
            py(a.copy(), *expected)
            with warnings.catch_warnings():
                warnings.simplefilter("error")
                got = gu(a, *[o.copy() for o in outs])
            same(got[0], expected[0])
            same(got[1], expected[1])
            same(got[3], expected[3][0])
            k = int(expected[3][0])
            same(got[2][:k], expected[2][:k])


@pytest.mark.parametrize("how", ["strided", "reversed"])
def test_sorting_non_contiguous_operands(target, how):
    src = """def k(a, s, order, out):
    s[:] = np.sort(a)
    order[:] = np.argsort(a, kind='stable')
    out[:] = a
    out.sort()
"""
    py, gu = kernel(src, "void(float64[:], float64[:], int64[:], float64[:])",
                    "(n)->(n),(n),(n)", target)
    rng = np.random.default_rng(2)
    for n in [1, 5, 17, 64]:
        base = values(rng, 2 * n, "float64", nan=True)
        a = base[::2] if how == "strided" else base[:n][::-1]
        outs = [np.zeros(n), np.zeros(n, np.int64), np.zeros(n)]
        expected = [o.copy() for o in outs]
        py(a.copy(), *expected)
        got = gu(a, *outs)
        for g, e in zip(got, expected):
            same(g, e)


def test_in_place_sort_of_strided_views_and_rows(target):
    src = """def k(a, out):
    out[:] = a
    for row in out:
        row[::2].sort()
    out[:, -1].sort()
"""
    py, gu = kernel(src, "void(float64[:, :], float64[:, :])", "(m,n)->(m,n)", target)
    rng = np.random.default_rng(3)
    a = rng.standard_normal((3, 7, 9))
    expected = np.zeros_like(a)
    for i in range(3):
        py(a[i].copy(), expected[i])
    same(gu(a), expected)
    assert not np.array_equal(expected, a)


@pytest.mark.parametrize("body", [
    "out[:] = np.sort(a)",
    "out[:] = np.sort(a, axis=-1)",
    "out[:] = np.sort(a, axis=1)",
    "out[:] = np.sort(a.T).T",
    "out[:] = np.sort(a, axis=None).reshape(a.shape) if False else 0\n    f = np.sort(a, axis=None)\n"
    "    for i in range(a.shape[0]):\n        out[i] = f[i * a.shape[1]:(i + 1) * a.shape[1]]",
    "out[:] = np.argsort(a, axis=None)[:a.size].reshape(1, -1)[0, 0] if False else 0\n"
    "    o = np.argsort(-a, axis=None, kind='stable')\n    out[0, :] = o[:a.shape[1]]",
    "out[:] = np.partition(a, 2)\n    out[:] = np.sort(out)",
    "out[:] = a\n    out.sort(axis=-1)",
    "out[:] = np.sort(a, axis=0)",
    "out[:] = np.sort(a * 2 - 1, axis=-2)",
    "out[:] = np.argsort(a, axis=0, kind='stable') + 0.5",
    "out[:] = np.partition(a, -1, axis=0)\n    out[:-1] = 0",
    "out[:] = a\n    out.sort(axis=0)",
    "out[:] = a\n    out[:, ::2].sort(axis=0)",
    "out[:] = a\n    out.T.sort(axis=1)",
    "out[:] = a * 2 - 1\n    out.partition(-1)\n    out[:, :-1] = 0",
])
def test_two_dimensional_sorting(target, body):
    src = f"def k(a, out):\n    {body}\n"
    try:
        py, gu = kernel(src, "void(float64[:, :], float64[:, :])", "(m,n)->(m,n)", target)
    except numbavec.TypingError as e:
        assert "reshape" in str(e)  # a written-off branch still has to compile
        return
    rng = np.random.default_rng(4)
    a = np.round(rng.standard_normal((2, 4, 6)), 1)
    a[0, 1, 2] = np.nan
    got, expected = run_both(py, gu, [a], np.zeros_like(a))
    same(got, expected)


@pytest.mark.parametrize("dtype", ["float64", "float32", "int64", "int16", "uint8"])
@pytest.mark.parametrize("fn", ["median", "nanmedian"])
def test_medians(target, dtype, fn):
    rt = "float32" if dtype == "float32" else "float64"
    py, gu = kernel(f"def k(a, out):\n    out[0] = np.{fn}(a)\n",
                    f"void({dtype}[:], {rt}[:])", "(n)->()", target)
    rng = np.random.default_rng(5)
    for n in SIZES[1:]:
        for nan in (False, True):
            a = values(rng, n, dtype, nan)
            expected = np.zeros(1, rt)
            interpreted(py, a.copy(), expected)
            got = gu(a)
            assert got.dtype == expected.dtype
            same(got, expected[0])


@pytest.mark.parametrize("dtype", ["float64", "float32", "int64", "int8"])
@pytest.mark.parametrize("fn", ["quantile", "nanquantile", "percentile", "nanpercentile"])
def test_quantiles_match_numpy(target, dtype, fn):
    rt = "float32" if dtype == "float32" else "float64"
    py, gu = kernel(f"def k(a, q, out):\n    out[0] = np.{fn}(a, q)\n",
                    f"void({dtype}[:], float64, {rt}[:])", "(n),()->()", target)
    scale = 100 if "percentile" in fn else 1
    rng = np.random.default_rng(6)
    for n in [1, 2, 3, 10, 101]:
        for nan in (False, True):
            a = values(rng, n, dtype, nan)
            for q in [0, 0.01, 0.25, 0.5, 1 / 3, 0.75, 0.999, 1]:
                expected = np.zeros(1, rt)
                interpreted(py, a.copy(), q * scale, expected)
                got = gu(a, q * scale)
                if rt == "float64":
                    same(got, expected[0])
                else:
                    # rounded once from float64 (NumPy 2.2); NumPy 2.5 computes in float32:
                    # the difference is a few roundings of the operands' size
                    size = np.nanmax(np.abs(a)) if np.isfinite(a).any() else 0
                    np.testing.assert_allclose(got, expected[0], rtol=4e-7,
                                               atol=4 * np.finfo(np.float32).eps * size,
                                               equal_nan=True)


def test_quantile_keywords_and_the_empty_array(target):
    py, gu = kernel("def k(a, out):\n    out[0] = np.quantile(a, q=0.3, method='linear') + "
                    "np.median(a, axis=None)\n", "void(float64[:], float64[:])", "(n)->()",
                    target)
    a = np.array([3.0, 1.0, 2.0, 8.0])
    same(gu(a), np.quantile(a, 0.3) + np.median(a))
    with pytest.raises(IndexError):  # NumPy's quantile of nothing
        interpreted(py, np.zeros(0), np.zeros(1))
    with pytest.raises(IndexError):
        gu(np.zeros(0))
    py, gu = kernel("def k(a, out):\n    out[0] = np.nanquantile(a, 0.5) + np.median(a)\n",
                    "void(float64[:], float64[:])", "(n)->()", target)
    assert np.isnan(gu(np.zeros(0)))  # NumPy: nan and a RuntimeWarning


@pytest.mark.parametrize("dtype", ["float64", "int32", "uint8", "complex128"])
@pytest.mark.parametrize("side", ["left", "right"])
def test_searchsorted(target, dtype, side):
    src = f"""def k(a, v, x, out, one):
    out[:] = np.searchsorted(a, v, side='{side}')
    one[0] = a.searchsorted(x, side='{side}')
"""
    py, gu = kernel(src, f"void({dtype}[:], {dtype}[:], {dtype}, int64[:], int64[:])",
                    "(n),(m),()->(m),()", target)
    rng = np.random.default_rng(7)
    for n in [0, 1, 2, 5, 33]:
        a = np.sort(values(rng, n, dtype, nan=np.dtype(dtype).kind in "fc"))
        v = values(rng, 9, dtype, nan=np.dtype(dtype).kind in "fc")
        for x in list(v[:4]) + ([np.nan] if np.dtype(dtype).kind == "f" else []):
            expected = [np.zeros(9, np.int64), np.zeros(1, np.int64)]
            py(a, v, x, *expected)
            got = gu(a, v, x)
            same(got[0], expected[0])
            same(got[1], expected[1][0])


@pytest.mark.parametrize("dtype, search", [("float64", "in line"), ("uint8", "in line"),
                                           ("complex128", "runtime")])
def test_one_value_is_searched_in_line_without_branches(target, dtype, search):
    """A search for one real or integer value is a loop in the kernel whose
    halving steps are conditional moves (a branch on values in no order
    mispredicts half the time); arrays of values and complex ones go to the
    runtime."""
    py, gu = kernel("def k(a, x, out):\n    out[0] = np.searchsorted(a, x, side='right')\n"
                    "    out[1] = np.searchsorted(a, x)\n",
                    f"void({dtype}[:], {dtype}, int64[:])", "(n),()->(2)", target)
    ir, asm = gu.inspect_llvm(gu.types[0]), gu.inspect_asm(gu.types[0])
    assert ("numbavec_rt_searchsorted" in ir) == (search == "runtime")
    if search == "in line":
        assert "!unpredictable" in ir
        if platform.machine() in ("x86_64", "AMD64"):  # a conditional move by its x86 name
            assert "cmov" in asm
    rng = np.random.default_rng(9)
    for n in (0, 1, 2, 3, 8, 33):
        a = np.sort(values(rng, n, dtype, nan=dtype != "uint8"))
        for x in list(values(rng, 6, dtype)) + list(a[:2]):
            expected = np.zeros(2, np.int64)
            py(a, x, expected)
            same(gu(a, x), expected)
            same(expected, [np.searchsorted(a, x, side="right"), np.searchsorted(a, x)])


@pytest.mark.parametrize("dtype", ["float64", "int16"])
def test_in_line_search_every_length_and_position(target, dtype):
    """The in-line search halves a length a fixed number of steps: every
    length 0-70 and some large ones, runs of equal values, NaN and
    infinities, a strided array, each value of a and the gaps between them,
    both sides, against py_func (NumPy's own search)."""
    py, gu = kernel("def k(a, x, out):\n    out[0] = np.searchsorted(a, x, side='right')\n"
                    "    out[1] = np.searchsorted(a, x)\n",
                    f"void({dtype}[:], {dtype}, int64[:])", "(n),()->(2)", target)
    rng = np.random.default_rng(11)
    floats = dtype == "float64"
    for n in list(range(71)) + [127, 128, 129, 1000, 1025]:
        a = np.sort(rng.integers(-n // 3 - 1, n // 3 + 2, 2 * n)).astype(dtype)
        if floats and n > 4:
            a[-2:] = np.nan
            a[0], a[-3] = -np.inf, np.inf
            a = np.sort(a)
        a = a[::2]  # strided
        xs = np.concatenate([a, a[:-1] + (0.5 if floats else 0), [-1000, 1000]]).astype(dtype)
        if floats:
            xs = np.concatenate([xs, [np.nan, np.inf, -np.inf]])
        xs = xs.astype(dtype)
        got = gu(a, xs)
        for x, g in zip(xs, got):
            expected = np.zeros(2, np.int64)
            py(a, x, expected)
            same(g, expected)


def test_searchsorted_takes_weak_constants_and_narrower_values(target):
    py, gu = kernel("def k(a, v, out):\n    out[0] = np.searchsorted(a, 3)\n"
                    "    out[1:] = np.searchsorted(a, v)\n",
                    "void(int64[:], int32[:], int64[:])", "(n),(m)->(k)", target)
    a = np.arange(0, 20, 2, dtype=np.int64)
    v = np.array([-1, 4, 5, 30], np.int32)
    same(gu(a, v, out=np.zeros(5, np.int64)), [2, 0, 2, 3, 10])


@pytest.mark.parametrize("dtype", ["float64", "int64", "complex64"])
def test_partition_places_kth(target, dtype):
    py, gu = kernel("def k(a, kth, out, p):\n    p[:] = np.partition(a, kth)\n"
                    "    out[0] = p[kth]\n",
                    f"void({dtype}[:], int64, {dtype}[:], {dtype}[:])", "(n),()->(),(n)", target)
    rng = np.random.default_rng(8)
    for n in [1, 2, 7, 17, 100, 1000]:
        a = values(rng, n, dtype, nan=dtype != "int64")
        s = np.sort(a)
        for kth in {0, n // 3, n - 1, -1, -n}:
            got, part = gu(a, kth)
            ref = [np.zeros(1, a.dtype), np.zeros(n, a.dtype)]
            py(a, kth, *ref)
            same(got, ref[0][0])
            same(got, s[kth])
            same(np.sort(part), s)  # the same values, arranged around kth
            k = kth % n
            lower = np.sort(part[:k])
            same(lower, s[:k])


@pytest.mark.parametrize("kth_dtype", ["int32", "int64", "uint8"])
def test_partition_places_an_array_of_kths(target, kth_dtype):
    """kth= an array (numbagg's nanquantile: np.partition(arr,
    kth=np.unique(indexes))): every position holds what sorting puts there."""
    py, gu = kernel("def k(a, kth, out, p):\n    p[:] = np.partition(a, kth=kth)\n"
                    "    for j in range(kth.shape[0]):\n        out[j] = p[kth[j]]\n",
                    f"void(float64[:], {kth_dtype}[:], float64[:], float64[:])",
                    "(n),(m)->(m),(n)", target)
    rng = np.random.default_rng(3)
    for n in [1, 5, 40]:
        a = values(rng, n, "float64", nan=True)
        s = np.sort(a)
        for kth in ([0], [n - 1, 0], sorted({0, n // 2, n - 1}), []):
            kth = np.array(kth, dtype=kth_dtype)
            got, part = gu(a, kth)
            ref = [np.zeros(len(kth)), np.zeros(n)]
            py(a, kth, *ref)
            same(got, ref[0])
            same(got, s[kth])
            same(np.sort(part), s)
            for k in kth:
                same(np.sort(part[:k]), s[:k])


def test_partition_refuses_a_kth_out_of_bounds_in_an_array(target):
    py, gu = kernel("def k(a, kth, out):\n    out[:] = np.partition(a, kth)\n",
                    "void(float64[:], int64[:], float64[:])", "(n),(m)->(n)", target)
    a, kth = np.arange(5.0), np.array([1, 5])
    with pytest.raises(ValueError):
        interpreted(py, a, kth, np.zeros(5))
    with pytest.raises(ValueError, match="kth out of bounds"):
        gu(a, kth)


@pytest.mark.parametrize("body, match", [
    ("out[:] = np.partition(a, 99)", "kth out of bounds"),
    ("out[:] = np.partition(a, -99)", "kth out of bounds"),
    ("out[0] = np.quantile(a, 1.5)", "range"),
    ("out[0] = np.percentile(a, -1)", "range"),
    ("out[0] = np.quantile(a, np.nan)", "range"),
])
def test_runtime_errors_are_numpys(target, body, match):
    py, gu = kernel(f"def k(a, out):\n    {body}\n", "void(float64[:], float64[:])", "(n)->(n)",
                    target)
    a = np.arange(5.0)
    with pytest.raises(ValueError):
        interpreted(py, a, np.zeros(5))
    with pytest.raises(ValueError, match=match):
        gu(a)


@pytest.mark.parametrize("body, match", [
    ("out[:] = np.sort(a, axis=1)", "axis 1 is out of bounds"),
    ("a.sort(axis=None)", "not axis=None"),
    ("x = a.sort()", "works in place and returns None"),
    ("out[0] = np.median(a, axis=0)", "axis=None only"),
    ("out[0] = np.quantile(a, 0.5, method='nearest')", "'linear' only"),
    ("out[:] = np.sort(a, kind='fast')", "'quicksort'"),
    ("out[:] = np.searchsorted(a, a, side='middle')", "'left' or 'right'"),
    ("out[:] = np.sort(a, order='x')", "no keyword argument 'order'"),
    ("out[0] = np.quantile(a, a)", "one quantile"),
    ("out[0] = np.median(1.0)", "takes arrays"),
    ("out[:] = np.searchsorted(np.zeros(3, np.int32), 1.5)", "cast"),
    ("out[0] = np.partition(a)", "needs kth"),
    ("out[:] = np.partition(a, a)", "1-d array of integers, not float64"),
])
def test_typing_errors_name_the_construct(target, body, match):
    src = f"import numpy as np\ndef k(a, out):\n    {body}\n"
    with pytest.raises(numbavec.TypingError, match=match):
        guvectorize(["void(float64[:], float64[:])"], "(n)->(n)", target=target)(
            kernel_from_source(src))


def test_median_of_complex_is_a_typing_error(target):
    src = "import numpy as np\ndef k(a, out):\n    out[0] = np.median(a).real\n"
    with pytest.raises(numbavec.TypingError, match="median"):
        guvectorize(["void(complex128[:], float64[:])"], "(n)->()", target=target)(
            kernel_from_source(src))


def test_cuda_refuses_sorting():
    src = "import numpy as np\ndef k(a, out):\n    out[:] = np.sort(a)\n"
    with pytest.raises(numbavec.TypingError, match="not available in a cuda kernel"):
        guvectorize(["void(float32[:], float32[:])"], "(n)->(n)", target="cuda")(
            kernel_from_source(src))


def test_an_in_place_sort_of_an_input_writes_it(target):
    py, gu = kernel("def k(a, out):\n    a.sort()\n    out[0] = a[0]\n",
                    "void(float64[:], float64[:])", "(n)->()", target)
    a = np.array([[3.0, 1.0, 2.0], [9.0, 8.0, 7.0]])
    same(gu(a), [1.0, 7.0])
    same(a, [[1.0, 2.0, 3.0], [7.0, 8.0, 9.0]])  # NumPy's gufunc writes it as the kernel did


def test_sorting_over_loop_dimensions_in_threads(target):
    py, gu = kernel("def k(a, out):\n    out[:] = np.sort(a)\n    out[0] = np.median(a)\n",
                    "void(float64[:], float64[:])", "(n)->(n)", target)
    rng = np.random.default_rng(9)
    a = rng.standard_normal((2000, 33))
    expected = np.sort(a, axis=-1)
    expected[:, 0] = np.median(a, axis=-1)
    same(gu(a), expected)


def test_large_sorts_are_not_quadratic(target):
    """Sorted, reversed and constant inputs: the cases a naive quicksort
    takes n**2 for (the introsort falls back to heapsort)."""
    py, gu = kernel("def k(a, out, order):\n    out[:] = np.sort(a)\n"
                    "    order[:] = np.argsort(a, kind='stable')\n",
                    "void(int64[:], int64[:], int64[:])", "(n)->(n),(n)", target)
    n = 200_000
    organ = np.concatenate([np.arange(n // 2), np.arange(n // 2)[::-1]])
    for a in [np.arange(n), np.arange(n)[::-1].copy(), np.zeros(n, np.int64), organ]:
        s, order = gu(a)
        same(s, np.sort(a))
        same(order, np.argsort(a, kind="stable"))


@pytest.mark.parametrize("fn", ["sort", "argsort", "partition", "in_place"])
@pytest.mark.parametrize("axis", [0, 1, 2, -2, None])
def test_sorting_along_each_axis_of_3d_arrays(target, fn, axis):
    if fn == "in_place" and axis is None:
        return
    call = {"sort": f"out[...] = np.sort(a, axis={axis})",
            "argsort": f"out[...] = np.argsort(a, axis={axis}, kind='stable')",
            "partition": f"out[...] = np.partition(a, 1, axis={axis})",
            "in_place": f"b = a.copy()\n    b.sort(axis={axis})\n    out[...] = b"}[fn]
    flat = axis is None
    kind = "int64" if fn == "argsort" else "float64"
    layout = "(p,q,r)->(s)" if flat else "(p,q,r)->(p,q,r)"
    colons = ":" if flat else ":, :, :"
    py, gu = kernel(f"def k(a, out):\n    {call}\n", f"void(float64[:, :, :], {kind}[{colons}])",
                    layout, target)
    rng = np.random.default_rng(15)
    base = np.round(rng.standard_normal((2, 6, 5, 8)), 1)
    base[0, 1, 2, 3] = np.nan
    for a in (base[:, :3, :4, :5], base[:, ::-2, 1:, ::3]):
        shape = (a[0].size,) if flat else a.shape[1:]
        expected = np.zeros((2,) + shape, kind)
        for i in range(2):
            py(a[i].copy(), expected[i])
        got = gu(a, out=np.zeros((2,) + shape, kind))
        if fn == "partition":
            k = 1
            ax = -1 if flat else axis
            ref = np.sort(a.reshape(2, -1) if flat else a, axis=ax if flat else ax + (ax >= 0))
            got_k = np.take(got, k, axis=-1 if flat else (axis + 1 if axis >= 0 else axis))
            ref_k = np.take(ref, k, axis=-1 if flat else (axis + 1 if axis >= 0 else axis))
            same(got_k, ref_k)
        else:
            same(got, expected)
