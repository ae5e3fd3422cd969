"""Data and NumPy functions that real kernels use (issue 36): module-level
NumPy arrays read as lookup tables, np.array of scalars, lists stored into
rows, np.linalg.norm.  Each kernel is written as library code writes it and
checked against its py_func (results and exceptions) on every target."""
import math
import pickle
import subprocess
import sys
import warnings

import numpy as np
import pytest

from numbavec import TypingError, cache as nvcache, cuda, guvectorize, vectorize
from conftest import NUMBAVEC_ROOT, kernel_from_source

# ---- module-level arrays: read-only constants frozen at compilation ----

WEIGHTS = np.array([0.5, 0.25, 0.125, 0.125])
GRID = np.arange(12.0).reshape(3, 4)
CODES = np.array([3, 1, 4, 1, 5, 9, 2, 6], dtype=np.int32)
SWAPPED = np.asfortranarray(np.arange(6, dtype=">i4").reshape(2, 3))


def run_gufunc(f, x, *rest, core=(), dtype=np.float64):
    """f's output on the rows of x (rest passed whole to each) and its
    py_func's, called row by row as the loop calls the kernel."""
    got = f(x, *rest)
    want = np.zeros(x.shape[:1] + (core or (1,)), dtype)
    for i in range(x.shape[0]):
        f.py_func(x[i].copy(), *rest, want[i])
    return got, want.reshape(x.shape[:1] + core)


def test_a_lookup_table_read_by_index(target):
    @vectorize(["float64(int64)"], target=target)
    def code_weight(i):
        return WEIGHTS[i % WEIGHTS.shape[0]] * CODES[i % len(CODES)] + WEIGHTS.size

    i = np.arange(20)
    np.testing.assert_array_equal(code_weight(i), [code_weight.py_func(k) for k in i])


def test_a_table_of_rows_weights_a_gufunc(target):
    @guvectorize(["void(float64[:], float64[:])"], "(n)->(n)", target=target)
    def smooth(x, out):
        for i in range(x.shape[0]):
            s = 0.0
            row = GRID[i % GRID.shape[0]]
            for j in range(row.shape[0]):
                s += row[j] * x[(i + j) % x.shape[0]] + SWAPPED[i % 2, j % 3]
            out[i] = s / GRID.sum()

    x = np.random.default_rng(1).standard_normal((3, 7))
    got, want = run_gufunc(smooth, x, core=(7,))
    np.testing.assert_allclose(got, want, rtol=1e-14)


def test_a_table_in_array_expressions_and_reductions(target):
    @guvectorize(["void(float64[:], float64[:])"], "(n)->()", target=target)
    def score(x, out):
        out[0] = np.sum((x[:4] - WEIGHTS) ** 2) + GRID.T[1, 2] + GRID[1:, ::2].max()

    x = np.random.default_rng(2).standard_normal((5, 4))
    got, want = run_gufunc(score, x)
    np.testing.assert_allclose(got, want, rtol=1e-14)


def test_a_table_out_of_bounds_raises_as_python_does(target):
    @vectorize(["float64(int64)"], target=target)
    def at(i):
        return WEIGHTS[i]

    with pytest.raises(IndexError):
        at.py_func(4)
    with pytest.raises(IndexError):
        at(np.array([0, 4]))
    np.testing.assert_array_equal(at(np.array([-1, 0])), WEIGHTS[[-1, 0]])


def test_a_table_is_frozen_when_the_kernel_compiles(target):
    table = np.array([1.0, 2.0])
    f = vectorize(["float64(int64)"], target=target)(
        kernel_from_source("def k(i):\n    return T[i]\n", globals_={"T": table}))
    np.testing.assert_array_equal(f(np.array([0, 1])), [1.0, 2.0])
    table[0] = 10.0
    np.testing.assert_array_equal(f(np.array([0, 1])), [1.0, 2.0])


WRITES = {
    "an element": "    T[0] = 1.0\n",
    "a view in a variable": "    row = G[1]\n    row[:] = x\n",
    "a loop over rows": "    for row in G:\n        row[0] = 2.0\n",
    "in place": "    t = T\n    t += 1.0\n",
    "a.sort()": "    T.sort()\n",
    "a helper": "    h(T)\n",
}


@pytest.mark.parametrize("what", list(WRITES))
def test_a_write_into_a_table_is_a_typing_error(what):
    def h(a):
        a[0] = 1.0

    from numbavec import jit
    src = "def k(x, out):\n" + WRITES[what] + "    out[:] = x\n"
    k = kernel_from_source(src, globals_={"T": WEIGHTS.copy(), "G": GRID.copy(), "h": jit(h)})
    with pytest.raises(TypingError, match="read-only constant"):
        guvectorize(["void(float64[:], float64[:])"], "(n)->(n)")(k)


def test_a_table_of_strings_is_refused_by_name():
    k = kernel_from_source("def k(x):\n    return x + len(S[0])\n",
                           globals_={"S": np.array(["a"])})
    with pytest.raises(TypingError, match="global NumPy array of 1 dimension.*dtype <U1"):
        vectorize(["float64(float64)"])(k)


def test_a_table_on_cuda_is_a_clear_typing_error():
    def k(i):
        return WEIGHTS[i % 4]

    with pytest.raises(TypingError, match="global NumPy array cannot be read in a cuda kernel"):
        cuda.compile_ptx(k, "float64(int64)")


@pytest.fixture
def cachedir(tmp_path, monkeypatch):
    monkeypatch.setenv("NUMBAVEC_CACHE_DIR", str(tmp_path / "cache"))
    return tmp_path / "cache"


@pytest.mark.parametrize("reads", ["T[i]", "T.shape[0] + i", "T[i] + T.size"])
def test_the_cache_key_covers_a_tables_contents(cachedir, reads):
    """Same source, same shape and dtype, other contents (or dtype): a new
    entry, and each compilation computes with its own table."""
    src = f"def k(i):\n    return {reads}\n"
    tables = [np.array([1.0, 2.0, 3.0]), np.array([1.0, 2.0, 4.0]),
              np.array([1, 2, 3], "f4"), np.array([1.0, 2.0, 3.0, 5.0])]
    i = np.array([0, 2])
    for t in tables:
        f = vectorize(["float64(int64)"], cache=True)(kernel_from_source(src, globals_={"T": t}))
        np.testing.assert_array_equal(f(i), [f.py_func(k) for k in i])
    assert nvcache.info(str(cachedir))["entries"] == 4


def make_table_kernel():
    """Local, so it pickles by value: its table travels with it."""
    @guvectorize(["void(float64[:], float64[:])"], "(n)->()")
    def weighted(x, out):
        out[0] = np.sum(x[:4] * WEIGHTS)
    return weighted


def test_a_table_pickles_by_value():
    blob = pickle.dumps(make_table_kernel())
    code = ("import pickle, sys\nimport numpy as np\n"
            "f = pickle.loads(sys.stdin.buffer.read())\n"
            "print(repr(f(np.arange(8.0).reshape(2, 4)).tolist()))\n")
    out = subprocess.run([sys.executable, "-c", code], input=blob, capture_output=True,
                         env={"PYTHONPATH": str(NUMBAVEC_ROOT)}, timeout=300)
    assert out.returncode == 0, out.stderr.decode()[-3000:]
    x = np.arange(8.0).reshape(2, 4)
    assert eval(out.stdout.decode()) == (x * WEIGHTS).sum(axis=1).tolist()


# ---- np.linalg.norm ----

def gufunc_vs_py(f, x, *rest, core=()):
    """f's output and its py_func's, row by row, or the exceptions both raise."""
    try:
        want = run_gufunc_py(f, x, *rest, core=core)
    except Exception as e:  # noqa: BLE001 - the kernel's exception is its result
        with pytest.raises(type(e)):
            f(x, *rest)
        return None, None
    return f(x, *rest), want


def run_gufunc_py(f, x, *rest, core=()):
    """py_func row by row into an output of the dtype f gives."""
    dtype = f(x[:1], *rest).dtype if x.shape[0] else np.float64
    want = np.zeros(x.shape[:1] + (core or (1,)), dtype)
    for i in range(x.shape[0]):
        f.py_func(x[i].copy(), *rest, want[i])
    return want.reshape(x.shape[:1] + core)


NORM_DTYPES = ["float64", "float32", "int64", "complex128"]
VECTOR_ORDS = ["", ", 1", ", 2", ", np.inf", ", -np.inf", ", 3", ", ord=0.5", ", ord=-1"]


@pytest.mark.parametrize("ord_", VECTOR_ORDS)
@pytest.mark.parametrize("dtype", NORM_DTYPES)
def test_the_norm_of_a_row(target, ord_, dtype):
    k = kernel_from_source(f"def k(x, out):\n    out[0] = np.linalg.norm(x{ord_})\n",
                           globals_={"np": np})
    f = guvectorize("(n)->()", target=target)(k)
    x = (np.random.default_rng(3).standard_normal((4, 5)) * 3).astype(dtype)
    got, want = gufunc_vs_py(f, x)
    np.testing.assert_allclose(got, want, rtol=1e-5 if dtype == "float32" else 1e-13)


def test_the_norm_keeps_numpys_result_type():
    @guvectorize("(n)->()")
    def row_norm(x, out):
        out[0] = np.linalg.norm(x)

    for dtype in NORM_DTYPES:
        x = np.arange(6).reshape(2, 3).astype(dtype)
        assert row_norm(x).dtype == np.linalg.norm(x[0]).dtype


def test_an_energy_score_from_norms_of_row_differences(target):
    """The energy score of an ensemble (m members of d dimensions)
    against an observation, as forecast-scoring libraries write it."""
    @guvectorize(["void(float64[:, :], float64[:], float64[:])"], "(m,d),(d)->()",
                 target=target)
    def energy_score(fct, obs, out):
        m = fct.shape[0]
        e1 = 0.0
        e2 = 0.0
        for i in range(m):
            e1 += np.linalg.norm(fct[i] - obs)
            for j in range(m):
                e2 += np.linalg.norm(fct[i] - fct[j])
        out[0] = e1 / m - 0.5 * e2 / (m * m)

    rng = np.random.default_rng(4)
    fct, obs = rng.standard_normal((6, 8, 3)), rng.standard_normal((6, 3))
    want = np.zeros((6, 1))
    for i in range(6):
        energy_score.py_func(fct[i], obs[i], want[i])
    np.testing.assert_allclose(energy_score(fct, obs), want[:, 0], rtol=1e-13)


@pytest.mark.parametrize("ord_", ["", ", 'fro'", ", 1", ", -1", ", np.inf", ", -np.inf"])
def test_the_norm_of_a_matrix(target, ord_):
    k = kernel_from_source(f"def k(x, out):\n    out[0] = np.linalg.norm(x{ord_})\n",
                           globals_={"np": np})
    f = guvectorize(["void(float64[:, :], float64[:])"], "(m,n)->()", target=target)(k)
    x = np.random.default_rng(5).standard_normal((3, 4, 5))
    got, want = gufunc_vs_py(f, x)
    np.testing.assert_allclose(got, want, rtol=1e-13)


@pytest.mark.parametrize("args", ["axis=0", "axis=1", "axis=-1", "1, 0", "ord=np.inf, axis=1",
                                  "ord=-np.inf, axis=0", "3, axis=0"])
def test_the_norms_along_an_axis(target, args):
    k = kernel_from_source(
        "def k(x, out):\n    r = np.linalg.norm(x[:, :3], %s)\n"
        "    for i in range(r.shape[0]):\n        out[i] = r[i]\n" % args, globals_={"np": np})
    f = guvectorize(["void(float64[:, :], float64[:])"], "(m,n)->(m)", target=target)(k)
    x = np.random.default_rng(6).standard_normal((2, 3, 3))
    got, want = gufunc_vs_py(f, x, core=(3,))
    np.testing.assert_allclose(got, want, rtol=1e-13)


NORM_ERRORS = {
    "np.linalg.norm(x2, 2)": "singular values",
    "np.linalg.norm(x2, 'nuc')": "singular values",
    "np.linalg.norm(x, 'fro')": "invalid norm order 'fro' for vectors",
    "np.linalg.norm(x, axis=1)": "axis 1 is out of bounds",
    "np.linalg.norm(x, ord=o)": "ord= as a constant",
    "np.linalg.norm(x, keepdims=True)": "keepdims",
    "np.linalg.norm(3.0)": "takes a 1-d or 2-d array",
}


@pytest.mark.parametrize("call", list(NORM_ERRORS))
def test_a_norm_the_kernel_cannot_compute_is_a_typing_error(call):
    src = f"def k(x, x2, o, out):\n    out[0] = {call}\n"
    k = kernel_from_source(src, globals_={"np": np})
    with pytest.raises(TypingError, match=NORM_ERRORS[call]):
        guvectorize(["void(float64[:], float64[:, :], float64, float64[:])"],
                    "(n),(m,n),()->()")(k)


def test_an_empty_row_has_numpys_norm_or_error(target):
    @guvectorize(["void(float64[:], float64[:])"], "(n)->()", target=target)
    def norms(x, out):
        out[0] = np.linalg.norm(x) + np.linalg.norm(x, 1)

    np.testing.assert_array_equal(norms(np.zeros((2, 0))), [0.0, 0.0])

    @guvectorize(["void(float64[:], float64[:])"], "(n)->()", target=target)
    def smallest(x, out):
        out[0] = np.linalg.norm(x, -np.inf)

    with pytest.raises(ValueError):
        smallest.py_func(np.zeros(0), np.zeros(1))
    with pytest.raises(ValueError):
        smallest(np.zeros((2, 0)))


# ---- np.array of scalars and tuples; lists stored into rows ----

def test_np_array_of_three_scalars(target):
    @guvectorize(["void(float64[:], float64[:])", "void(float32[:], float32[:])"],
                 "(n)->(n)", target=target)
    def centre(x, out):
        p = np.array([x[0], x[1] * 2, 3])
        q = np.array((x[2], 1))
        t = (x[0], 5)
        out[:3] = p - p.mean()
        out[3:5] = q + np.array(t)
        out[5] = np.array([x[0], 1]).itemsize + np.array([x[0], x[1]]).itemsize

    for dtype in ("float64", "float32"):
        x = np.arange(12, dtype=dtype).reshape(2, 6)
        got = centre(x)
        want = np.zeros_like(x)
        for i in range(2):
            centre.py_func(x[i], want[i])
        np.testing.assert_allclose(got, want, rtol=1e-6)


def test_a_list_display_stored_into_a_row(target):
    @guvectorize(["void(float64[:], int64[:, :])"], "(n)->(n,2)", target=target)
    def spans(lengths, idx):
        lo = 0
        for i in range(lengths.shape[0]):
            hi = lo + int(lengths[i])
            idx[i] = [lo, hi]
            lo = hi

    x = np.array([[1.0, 2.0, 3.0], [0.0, 4.0, 1.0]])
    want = np.zeros((2, 3, 2), np.int64)
    for i in range(2):
        spans.py_func(x[i], want[i])
    np.testing.assert_array_equal(spans(x), want)


def test_a_list_display_that_does_not_fit_raises_as_numpy_does(target):
    @guvectorize(["void(float64[:], float64[:])"], "(n)->(n)", target=target)
    def fill(x, out):
        out[:] = [1.0, 2.0]

    np.testing.assert_array_equal(fill(np.zeros((1, 2))), [[1.0, 2.0]])
    with pytest.raises(ValueError):
        fill.py_func(np.zeros(3), np.zeros(3))
    with pytest.raises(ValueError):
        fill(np.zeros((1, 3)))


@pytest.mark.parametrize("src, message", [
    ("np.array([[x[0]], [x[1]]])", "nested sequences"),
    ("np.array(x)", "copy an array"),
    ("np.array([x[0]], dtype=np.float32)", "no dtype="),
])
def test_an_np_array_the_kernel_cannot_make_is_a_typing_error(src, message):
    k = kernel_from_source(f"def k(x, out):\n    out[0] = {src}[0]\n", globals_={"np": np})
    with pytest.raises(TypingError, match=message):
        guvectorize(["void(float64[:], float64[:])"], "(n)->()")(k)


# ---- np.cov, np.corrcoef ----

def rows_vs_py(f, x, core):
    """f on the stacked matrices x and py_func on each, into f's dtype."""
    got = f(x)
    want = np.zeros(x.shape[:1] + (core or (1,)), got.dtype)
    with np.errstate(all="ignore"):
        for i in range(x.shape[0]):
            f.py_func(x[i], want[i])
    return got, want.reshape(got.shape)


@pytest.mark.parametrize("call, layout", [
    ("np.cov(m)", "(v,n)->(v,v)"),
    ("np.cov(m, rowvar=False, bias=True)", "(n,v)->(v,v)"),
    ("np.cov(m, ddof=0)", "(v,n)->(v,v)"),
    ("np.cov(m, None, False, False, 2)", "(n,v)->(v,v)"),
    ("np.corrcoef(m)", "(v,n)->(v,v)"),
    ("np.corrcoef(m, rowvar=False)", "(n,v)->(v,v)"),
])
@pytest.mark.parametrize("dtype", ["float64", "float32", "int64"])
def test_the_covariance_of_a_matrix(target, call, layout, dtype):
    k = kernel_from_source(f"def k(m, out):\n    out[:, :] = {call}\n", globals_={"np": np})
    f = guvectorize(layout, target=target)(k)
    x = (np.random.default_rng(7).standard_normal((3, 4, 6)) * 5).astype(dtype)
    xs = x if layout.startswith("(v") else x.transpose(0, 2, 1).copy()
    got, want = rows_vs_py(f, xs, (4, 4))
    assert got.dtype == np.float64  # NumPy: result_type(m, float64)
    np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12)


def test_a_weighted_covariance_of_two_rows(target):
    """A covariance of an observation and its weighted forecast, as
    scoring code writes it: the 1-d forms give scalars."""
    @guvectorize(["void(float64[:], float64[:], float64[:])"], "(n),(n)->()", target=target)
    def weighted_cov(x, w, out):
        y = x * w
        out[0] = np.cov(y, bias=True) + np.corrcoef(y) + np.cov(x, ddof=0)

    rng = np.random.default_rng(8)
    x, w = rng.standard_normal((5, 7)), rng.random((5, 7))
    want = np.zeros((5, 1))
    for i in range(5):
        weighted_cov.py_func(x[i], w[i], want[i])
    np.testing.assert_allclose(weighted_cov(x, w), want[:, 0], rtol=1e-12)


def test_the_covariance_of_too_few_observations_is_numpys(target):
    @guvectorize(["void(float64[:], float64[:])"], "(n)->()", target=target)
    def var1(x, out):
        out[0] = np.cov(x)

    with np.errstate(all="ignore"), pytest.warns(RuntimeWarning):
        want = [np.cov(np.array([2.0]))]
    with np.errstate(all="ignore"):
        np.testing.assert_array_equal(var1(np.array([[2.0]])), want)


@pytest.mark.parametrize("call, message", [
    ("np.cov(m, m)", r"two arrays \(y=\)"),
    ("np.cov(m * 2)", "assign it to a variable first"),
    ("np.cov(m, ddof=d)", "ddof= as a constant"),
    ("np.cov(m, fweights=m)", "no keyword argument 'fweights'"),
    ("np.corrcoef(m, ddof=1)", "no keyword argument 'ddof'"),
])
def test_a_covariance_the_kernel_cannot_compute_is_a_typing_error(call, message):
    k = kernel_from_source(f"def k(m, d, out):\n    out[0] = {call}\n", globals_={"np": np})
    with pytest.raises(TypingError, match=message):
        guvectorize(["void(float64[:], int64, float64[:])"], "(n),()->()")(k)


# ---- enumerate(a.flat) ----

def test_enumerate_a_flat_in_a_grouped_reduction(target):
    """The aggregation library's form: the flat position of each element
    picks its group."""
    @guvectorize(["void(float64[:, :], int64[:], float64[:])"], "(m,n),(g)->(g)",
                 target=target)
    def group_sums(a, labels, out):
        out[:] = 0.0
        for i, v in enumerate(a.flat):
            out[labels[i % labels.shape[0]]] += v
        for i, v in enumerate(a.T.flat, 1):
            if v < 0:
                out[0] += i

    rng = np.random.default_rng(9)
    a, labels = rng.standard_normal((3, 2, 5)), np.array([0, 2, 1, 1])
    want = np.zeros((3, 4))
    for i in range(3):
        group_sums.py_func(a[i], labels, want[i])
    np.testing.assert_allclose(group_sums(a, labels), want, rtol=1e-13)


# ---- np.histogram(a, bins=edges) ----

def test_a_histogram_of_a_row_with_given_edges(target):
    @guvectorize(["void(float64[:], float64[:], int64[:])", "void(float32[:], float64[:], int64[:])"],
                 "(n),(e)->(e)", target=target)
    def binned(a, edges, out):
        h, e = np.histogram(a, bins=edges)
        out[:h.shape[0]] = h
        out[-1] = e.shape[0] + h.sum()

    rng = np.random.default_rng(10)
    edges = np.array([-1.0, -0.5, 0.0, 0.0, 0.5, 1.0])
    for dtype in ("float64", "float32"):
        a = rng.standard_normal((4, 40)).astype(dtype)
        a[0, 3] = np.nan
        a[1, :5] = [-1, -0.5, 0, 0.5, 1]  # every edge, the last one closed
        a[2, 0] = np.inf
        want = np.zeros((4, 6), np.int64)
        for i in range(4):
            binned.py_func(a[i], edges, want[i])
        np.testing.assert_array_equal(binned(a, edges), want)


def test_a_histogram_of_a_matrix_with_integer_edges(target):
    @guvectorize(["void(int64[:, :], int64[:], int64[:])"], "(m,n),(e)->(e)", target=target)
    def binned(a, edges, out):
        h, e = np.histogram(a, edges)
        out[1:] = h
        out[0] = e[0]

    a = np.random.default_rng(11).integers(-3, 9, (2, 4, 5))
    edges = np.array([0, 2, 3, 7])
    want = np.zeros((2, 4), np.int64)
    for i in range(2):
        binned.py_func(a[i], edges, want[i])
    np.testing.assert_array_equal(binned(a, edges), want)


def test_histogram_edges_that_decrease_raise_as_numpy_does(target):
    @guvectorize(["void(float64[:], float64[:], int64[:])"], "(n),(e)->()", target=target)
    def total(a, edges, out):
        out[0] = np.histogram(a, bins=edges)[0].sum()

    with pytest.raises(ValueError):
        total.py_func(np.ones(3), np.array([1.0, 0.0]), np.zeros(1, np.int64))
    with pytest.raises(ValueError):
        total(np.ones(3), np.array([1.0, 0.0]))
    np.testing.assert_array_equal(total(np.zeros((2, 0)), np.array([1.0])), [0, 0])


@pytest.mark.parametrize("call, message", [
    ("np.histogram(a)", r"takes range=\(lo, hi\)"),
    ("np.histogram(a, 5)", "the data's own range is not supported yet"),
    ("np.histogram(a, 2.5, (0, 1))", "bins as an integer or an array of edges"),
    ("np.histogram(a, 5, range=(0, 1j))", "range= as a pair of real numbers"),
    ("np.histogram(a, bins=a, density=True)", "density= .not supported yet"),
])
def test_a_histogram_the_kernel_cannot_compute_is_a_typing_error(call, message):
    k = kernel_from_source(f"def k(a, out):\n    out[0] = {call}[0][0]\n", globals_={"np": np})
    with pytest.raises(TypingError, match=message):
        guvectorize(["void(float64[:], int64[:])"], "(n)->()")(k)


HIST_RANGES = ["5, range=(-1.0, 1.0)", "bins=4, range=(-2, 2)", "range=(0.0, 1.0)",
               "3, (0.5, 0.5)", "7, (-1, 1.5)"]


@pytest.mark.parametrize("args", HIST_RANGES)
@pytest.mark.parametrize("dtype", ["float64", "float32", "int64"])
def test_a_histogram_of_n_bins_over_a_range(target, args, dtype):
    src = ("def k(a, out):\n    out[:] = 0\n    h, e = np.histogram(a, %s)\n"
           "    out[:h.shape[0]] = h\n    out[h.shape[0]:h.shape[0] + e.shape[0]] = e\n"
           "    out[-1] = e.itemsize\n" % args)
    k = kernel_from_source(src, globals_={"np": np})
    f = guvectorize([f"void({dtype}[:], float64[:])"], "(n)->(n)", target=target)(k)
    a = (np.random.default_rng(12).standard_normal((3, 30)) * 1.3).astype(dtype)
    a[0, :4] = [-1, 1, 0, 2]  # the edges themselves
    want = np.zeros((3, 30))
    for i in range(3):
        k(a[i], want[i])
    np.testing.assert_array_equal(f(a), want)


@pytest.mark.parametrize("args", ["3, (1.0, 0.0)", "3, (0, np.inf)", "0, (0, 1)",
                                  "3, (np.nan, 1)"])
def test_a_histogram_range_numpy_refuses_raises_value_error(target, args):
    k = kernel_from_source(f"def k(a, out):\n    out[0] = np.histogram(a, {args})[0][0]\n",
                           globals_={"np": np})
    f = guvectorize(["void(float64[:], int64[:])"], "(n)->()", target=target)(k)
    with pytest.raises(ValueError):
        k(np.ones(5), np.zeros(1, np.int64))
    with pytest.raises(ValueError):
        f(np.ones((1, 5)))


# ---- gcd and lcm (sgkit's _comb divides by math.gcd) ----

def np_gcd(a, b):
    return np.gcd(a, b)


def np_lcm(a, b):
    return np.lcm(a, b)


def comb_by_gcd(n, k):
    """sgkit's n choose k, kept exact by dividing by the gcd as it goes."""
    if k > n:
        return 0
    r = 1
    for d in range(1, k + 1):
        g = math.gcd(r, d)
        r //= g
        r *= n
        r //= d // g
        n -= 1
    return r + 0 * math.lcm(n, k)


@pytest.mark.parametrize("dtype", ["int8", "uint8", "int32", "int64", "uint64"])
def test_np_gcd_and_lcm_are_numpys(target, dtype):
    info = np.iinfo(dtype)
    rng = np.random.default_rng(9)
    a = rng.integers(max(info.min, -300), min(info.max, 300), 500, endpoint=True).astype(dtype)
    b = rng.integers(max(info.min, -300), min(info.max, 300), 500, endpoint=True).astype(dtype)
    a[:4], b[2:6] = 0, 0
    a[6], b[7] = info.min, info.max
    for py, ref in ((np_gcd, np.gcd), (np_lcm, np.lcm)):
        f = vectorize([f"{dtype}({dtype}, {dtype})"], target=target)(py)
        with np.errstate(all="ignore"):
            np.testing.assert_array_equal(f(a, b), ref(a, b), strict=True)


def test_math_gcd_is_a_python_int(target):
    f = vectorize(["int64(int64, int64)"], target=target)(comb_by_gcd)
    n, k = np.arange(40) % 33, np.arange(40) % 9
    np.testing.assert_array_equal(f(n, k), [comb_by_gcd(int(x), int(y)) for x, y in zip(n, k)])
    with pytest.raises(TypingError, match=r"math.gcd\(\) takes integers"):
        vectorize(["float64(float64)"])(kernel_from_source(
            "import math\ndef k(x):\n    return math.gcd(x, 2)\n"))


# ---- np.linalg.inv, np.linalg.det, np.transpose; np.cov's bias at run time ----

def dss_mv(obs, fct, bias, out):
    """scoringrules' multivariate Dawid-Sebastiani score, as it is written."""
    M = fct.shape[0]
    ens_mean = np.sum(fct, axis=0) / M
    obs_cent = obs - ens_mean
    cov = np.cov(fct, rowvar=False, bias=bias)
    prec = np.linalg.inv(cov)
    log_det = np.log(np.linalg.det(cov))
    bias_precision = np.transpose(obs_cent) @ prec @ obs_cent
    out[0] = bias_precision + log_det


@pytest.mark.parametrize("bias", [True, False])
def test_a_score_from_the_inverse_and_determinant_of_a_covariance(target, bias):
    f = guvectorize("(d),(m,d),()->()", target=target)(dss_mv)
    rng = np.random.default_rng(11)
    obs, fct = rng.standard_normal((6, 3)), rng.standard_normal((6, 9, 3))
    want = np.zeros((6, 1))
    for i in range(6):
        dss_mv(obs[i], fct[i], bias, want[i])
    np.testing.assert_allclose(f(obs, fct, bias), want[:, 0], rtol=1e-12)


@pytest.mark.parametrize("dtype", ["float64", "float32", "int64", "complex128"])
def test_the_inverse_and_determinant_are_numpys(target, dtype):
    @guvectorize("(n,n)->(n,n),()", target=target)
    def inv_det(a, inv, det):
        inv[:, :] = np.linalg.inv(a)
        det[0] = np.linalg.det(a)

    rng = np.random.default_rng(12)
    a = rng.integers(-9, 10, (40, 5, 5)).astype(dtype)
    if dtype == "complex128":
        a = a + 1j * rng.integers(-9, 10, (40, 5, 5))
    a[3, 0, 0] = 0  # a first pivot found below
    inv, det = inv_det(a)
    want_dtype = np.linalg.inv(a[0]).dtype
    assert inv.dtype == want_dtype and det.dtype == want_dtype
    tol = 2e-4 if dtype == "float32" else 1e-10
    np.testing.assert_allclose(inv, np.linalg.inv(a), rtol=tol, atol=tol)
    np.testing.assert_allclose(det, np.linalg.det(a), rtol=tol)


def test_a_singular_matrix_has_numpys_inverse_error_and_determinant(target):
    @guvectorize("(n,n)->()", target=target)
    def corner_of_inverse(a, out):
        out[0] = np.linalg.inv(a)[0, 0]

    @guvectorize("(n,n)->()", target=target)
    def det(a, out):
        out[0] = np.linalg.det(a)

    singular = np.array([[[1.0, 2.0], [2.0, 4.0]], [[0.0, 0.0], [0.0, 1.0]]])
    np.testing.assert_array_equal(det(singular), np.linalg.det(singular))
    with pytest.raises(np.linalg.LinAlgError, match="Singular matrix"):
        np.linalg.inv(singular[1])
    with pytest.raises(np.linalg.LinAlgError, match="Singular matrix"):
        corner_of_inverse(singular)
    assert det(np.ones((2, 0, 0))).tolist() == np.linalg.det(np.ones((2, 0, 0))).tolist()
    any_det = guvectorize("(m,n)->()", target=target)(det.py_func)
    with pytest.raises(np.linalg.LinAlgError, match="must be square"):
        np.linalg.det(np.ones((2, 3)))
    with pytest.raises(np.linalg.LinAlgError, match="must be square"):
        any_det(np.ones((2, 2, 3)))


def test_transpose_is_a_view(target):
    @guvectorize("(m,n)->(n,m)", target=target)
    def t(a, out):
        b = np.transpose(a)
        out[:, :] = b * 2.0 + b[0, 0]

    a = np.arange(24.0).reshape(2, 3, 4)
    got, want = run_gufunc(t, a, core=(4, 3))
    np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("fp_dtype", ["float64", "float32", "int64", "complex128"])
def test_interp_of_a_value_and_of_an_array_is_numpys(target, fp_dtype):
    @guvectorize("(),(n),(k),(k)->(),(n)", target=target)
    def lookup(v, x, xp, fp, one, many):
        one[0] = np.interp(v, xp, fp)
        many[:] = np.interp(x, xp, fp)

    rng = np.random.default_rng(13)
    xp = np.sort(rng.uniform(-3, 3, (4, 7)), axis=1)
    fp = (rng.uniform(-5, 5, (4, 7)) * 10).astype(fp_dtype)
    if fp_dtype == "complex128":
        fp = fp + 1j * rng.uniform(-5, 5, (4, 7))
    x = np.concatenate([rng.uniform(-4, 4, (4, 9)), xp[:, :3], [[np.nan]] * 4, xp[:, -1:]], axis=1)
    v = x[:, 0]
    one, many = lookup(v, x, xp, fp)
    for i in range(4):
        want = np.interp(x[i], xp[i], fp[i])
        np.testing.assert_array_equal(many[i], want, strict=False)
        assert many.dtype == want.dtype and one.dtype == want.dtype
        np.testing.assert_array_equal(one[i], np.interp(v[i], xp[i], fp[i]))


@pytest.mark.parametrize("xp_kind", ["increasing", "decreasing", "shuffled", "repeated", "one"])
@pytest.mark.parametrize("fp_dtype", ["float64", "float32", "complex128"])
def test_interp_searches_and_fills_as_numpy_does(target, xp_kind, fp_dtype):
    """NumPy's own search (from the previous value's interval, then by
    bisection) gives its values bit for bit even where xp does not increase,
    as Numba's port does; left=/right= fill; infinite samples take the line
    from the other end; float32 xp and x are compared in float64."""
    @guvectorize("(m),(n),(n)->(m),(m)", target=target)
    def lookup(x, xp, fp, plain, filled):
        plain[:] = np.interp(x, xp, fp)
        for i in range(x.shape[0]):
            filled[i] = np.interp(x[i], xp, fp, left=-1.0, right=np.nan)

    rng = np.random.default_rng(20)
    n = 1 if xp_kind == "one" else 40
    xp = np.sort(rng.uniform(-3, 3, n))
    if xp_kind == "decreasing":
        xp = xp[::-1].copy()
    elif xp_kind == "shuffled":
        rng.shuffle(xp)
    elif xp_kind == "repeated":
        xp = np.sort(rng.integers(-3, 3, n)).astype(float)
    fp = rng.uniform(-5, 5, n)
    if n > 1:
        fp[3], fp[4], xp[5] = np.inf, np.inf, np.inf  # NaN one way, the other way or equal
    fp = fp.astype(fp_dtype)
    if fp_dtype == "complex128":
        fp = fp + 1j * rng.uniform(-5, 5, n)
    if fp_dtype == "float32":
        xp = xp.astype(np.float32)
    x = np.concatenate([rng.uniform(-4, 4, 300), xp, [np.nan, -np.inf, np.inf]]).astype(xp.dtype)
    with np.errstate(invalid="ignore"):
        plain, filled = lookup(x, xp, fp)
        want_plain = np.interp(x, xp, fp)
        want_filled = np.array([np.interp(v, xp, fp, left=-1.0, right=np.nan) for v in x])
    np.testing.assert_array_equal(plain, want_plain, strict=True)
    np.testing.assert_array_equal(filled, want_filled, strict=True)


@pytest.mark.parametrize("dtype", ["float64", "float32", "complex128"])
def test_slogdet_is_numpys(target, dtype):
    @guvectorize("(n,n)->(),()", target=target)
    def slogdet(a, sign, logdet):
        s, l = np.linalg.slogdet(a)
        sign[0] = s
        logdet[0] = l

    rng = np.random.default_rng(14)
    a = rng.standard_normal((20, 4, 4)).astype(dtype)
    if dtype == "complex128":
        a = a + 1j * rng.standard_normal((20, 4, 4))
    a[5] = [[1, 2, 3, 4], [2, 4, 6, 8], [0, 1, 0, 1], [1, 0, 1, 0]]  # singular
    sign, logdet = slogdet(a)
    want_sign, want_logdet = np.linalg.slogdet(a)
    assert sign.dtype == want_sign.dtype and logdet.dtype == want_logdet.dtype
    tol = 1e-5 if dtype == "float32" else 1e-12
    np.testing.assert_allclose(sign, want_sign, atol=tol)
    np.testing.assert_allclose(logdet, want_logdet, rtol=tol)


@pytest.mark.parametrize("dtype", ["int8", "uint16", "float32", "float64", "bool"])
def test_trace_diff_count_nonzero_and_identity_are_numpys(target, dtype):
    @guvectorize("(m,n),(m,p)->(),(m,p),()", target=target)
    def summary(a, shape_of_d, tr, d, nz):
        tr[0] = np.trace(a)
        d[:, :] = np.diff(a)
        nz[0] = np.count_nonzero(a) + np.identity(3)[1, 1] + np.eye(2)[0, 1]

    rng = np.random.default_rng(15)
    a = rng.integers(0, 3, (3, 4, 5)).astype(dtype)
    shape_of_d = np.zeros((4, 4), dtype)
    if dtype == "bool":
        with pytest.raises(TypingError):  # NumPy's diff of bools is !=, not -
            summary(a, shape_of_d)
        return
    tr, d, nz = summary(a, shape_of_d)
    assert tr.dtype == np.trace(a[0]).dtype
    np.testing.assert_array_equal(tr, [np.trace(m) for m in a])
    np.testing.assert_array_equal(d, np.diff(a))
    np.testing.assert_array_equal(nz, [np.count_nonzero(m) + 1.0 for m in a])


@pytest.mark.parametrize("dtype", ["float64", "float32", "complex128"])
def test_solve_of_a_vector_and_of_a_matrix_is_numpys(target, dtype):
    """One helper serves a vector b and a matrix b: the branch on b.ndim
    that is not taken is not typed (prune.c)."""
    @guvectorize("(n,n),(n),(n,m)->(n),(n,m)", target=target)
    def solve_both(a, b, c, x, y):
        x[:] = np.linalg.solve(a, b)
        y[:, :] = np.linalg.solve(a, c)

    rng = np.random.default_rng(16)
    a = (rng.standard_normal((6, 4, 4)) + 4 * np.eye(4)).astype(dtype)
    b, c = rng.standard_normal((6, 4)).astype(dtype), rng.standard_normal((6, 4, 3)).astype(dtype)
    if dtype == "complex128":
        a = a + 1j * rng.standard_normal((6, 4, 4))
    x, y = solve_both(a, b, c)
    tol = 1e-4 if dtype == "float32" else 1e-12
    np.testing.assert_allclose(x, np.linalg.solve(a, b[..., None])[..., 0], rtol=tol, atol=tol)
    np.testing.assert_allclose(y, np.linalg.solve(a, c), rtol=tol, atol=tol)
    with pytest.raises(np.linalg.LinAlgError, match="Singular matrix"):
        solve_both(np.zeros((1, 4, 4), dtype), b[:1], c[:1])


@pytest.mark.parametrize("k", [0, 1, -2])
def test_diag_of_a_vector_and_of_a_matrix_is_numpys(target, k):
    @guvectorize("(n),(n,n),(p,p),(q)->(p,p),(q)", target=target)
    def diags(v, m, like_big, like_d, big, d):
        big[:, :] = np.diag(v, k)
        d[:] = np.diag(m, k)

    rng = np.random.default_rng(17)
    v, m = rng.integers(-9, 9, (3, 4)), rng.integers(-9, 9, (3, 4, 4))
    p, q = 4 + abs(k), 4 - abs(k)
    big, d = diags(v, m, np.zeros((p, p), int), np.zeros(q, int))
    np.testing.assert_array_equal(big, [np.diag(row, k) for row in v], strict=True)
    np.testing.assert_array_equal(d, [np.diag(mat, k) for mat in m], strict=True)


ROUND_VALUES = [2.675, 0.5, 1.5, 2.5, -0.5, -2.5, 1234.5678, -0.0, 0.0, 1e308, -1e308, np.inf,
                np.nan, 5e-324, 3e38, -3e38, 0.125, 1.005]


@pytest.mark.parametrize("dtype", ["float64", "float32", "int64", "int8", "uint16"])
def test_round_of_a_value_and_of_an_array_is_numpys(target, dtype):
    """np.round / np.around as NumPy evaluates them (rint(x * 10**d) / 10**d
    in x's kind: 2.675 to 2.67, halves to even, float32 stays float32), and
    integers: themselves for d >= 0, else rounded in float64 and cast back."""
    @guvectorize("(n),()->(n),(n)", target=target)
    def rounded(x, d, one, many):
        for i in range(x.shape[0]):
            one[i] = np.round(x[i], d)
        many[:] = np.around(x, decimals=d)

    rng = np.random.default_rng(18)
    if dtype.startswith("float"):
        with np.errstate(over="ignore"):
            x = np.concatenate([rng.uniform(-1e4, 1e4, 300), rng.uniform(-3, 3, 300),
                                ROUND_VALUES]).astype(dtype)
        decimals = range(-5, 12)
    else:
        low = 0 if dtype.startswith("u") else -120
        x = rng.integers(low, 120, 300).astype(dtype)
        decimals = range(-3, 3)
    for d in decimals:
        with np.errstate(all="ignore"):
            one, many = rounded(x, np.int64(d))
            want = np.round(x, d)
            want_one = np.array([np.round(v, d) for v in x], dtype)
        assert many.dtype == want.dtype == one.dtype, d
        np.testing.assert_array_equal(many, want, strict=True)
        np.testing.assert_array_equal(one, want_one, strict=True)
        assert np.array_equal(np.signbit(many), np.signbit(want)), d


@pytest.mark.parametrize("call", ["np.rint(x)", "np.round(x)", "np.around(x)"])
def test_rint_and_round_without_decimals_are_numpys(target, call):
    src = f"import numpy as np\ndef nearest(x):\n    return {call}\n"
    f = vectorize(["float64(float64)", "float32(float32)"], target=target)(
        kernel_from_source(src, "nearest"))
    x = np.array(ROUND_VALUES + [-1.5, 3.5, 4.5, -7.5, 0.49999999999999994, -0.3])
    with np.errstate(all="ignore"):
        for dtype in ("float64", "float32"):
            xx = x.astype(dtype)
            got = f(xx)
            np.testing.assert_array_equal(got, np.rint(xx), strict=True)
            assert np.array_equal(np.signbit(got), np.signbit(np.rint(xx)))


def test_round_of_complex_values_is_a_typing_error_that_says_so():
    with pytest.raises(TypingError, match=r"np.round\(\) of complex \(or bool\) values is not "):
        @guvectorize(["void(complex128, int64, complex128[:])"], "(),()->()")
        def rounded(v, d, out):
            out[0] = np.round(v, d)


@pytest.mark.parametrize("sig", ["float32(float32)", "float64(float64)", "int16(int16)",
                                 "uint8(uint8)"])
def test_a_scalars_dtype_tests_and_casts_are_its_kinds(target, sig):
    """A NumPy scalar has a dtype: x.dtype.kind tests are known when the
    kernel compiles (only the branch taken is typed), x.dtype.type(v) and
    x.astype(...) cast to a kind, as for an array."""
    src = ("import numpy as np\n"
           "def kinds(x):\n"
           "    if x.dtype.kind == 'f':\n"
           "        y = x.dtype.type(0.1) * x + x.astype(np.float64).dtype.type(1)\n"
           "    elif x.dtype.kind in 'iu' and x.dtype != np.uint8:\n"
           "        y = x.astype(np.int8) * 2\n"
           "    else:\n"
           "        y = x.dtype.type(x + 1)\n"
           "    return y\n")
    f = vectorize([sig], target=target)(kernel_from_source(src, "kinds"))
    dtype = np.dtype(sig.split("(")[0])
    x = np.array([0, 1, 3, 100, 200, 255], dtype)
    with np.errstate(all="ignore"):
        want = np.array([f.py_func(v) for v in x], dtype)
        np.testing.assert_array_equal(f(x), want, strict=True)


@pytest.mark.parametrize("dtype", ["float64", "float32", "int64"])
def test_isclose_and_allclose_are_numpys(target, dtype):
    @guvectorize("(n),(n)->(n),(),(n),()", target=target)
    def close(a, b, every, rows, each, rows_nan):
        every[:] = np.isclose(a, b)
        rows[0] = np.allclose(a, b, rtol=1e-3)
        for i in range(a.shape[0]):
            each[i] = np.isclose(a[i], b[i], atol=0.1, equal_nan=True)
        rows_nan[0] = np.allclose(a, b, equal_nan=True)

    rng = np.random.default_rng(19)
    a = rng.uniform(-2, 2, (50, 8)).astype(dtype)
    b = (a + rng.choice([0, 1e-9, 1e-6, 1e-4, 0.05, 1.0], a.shape)).astype(dtype)
    if dtype != "int64":
        a[0, 0] = b[0, 0] = np.nan
        a[1, 1], b[1, 1], a[2, 2], b[2, 2], b[3, 3] = np.inf, np.inf, np.inf, -np.inf, np.nan
        a[4], a[5] = b[4], b[5]
        a[5, 0] = b[5, 0] = np.nan
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # NumPy's isclose raises no flag on inf - inf
        every, rows, each, rows_nan = close(a, b)
    np.testing.assert_array_equal(every, np.isclose(a, b), strict=True)
    np.testing.assert_array_equal(rows, [np.allclose(x, y, rtol=1e-3) for x, y in zip(a, b)])
    np.testing.assert_array_equal(each, np.isclose(a, b, atol=0.1, equal_nan=True), strict=True)
    np.testing.assert_array_equal(rows_nan, [np.allclose(x, y, equal_nan=True) for x, y in zip(a, b)])
    assert rows.dtype == rows_nan.dtype == np.bool_


@pytest.mark.parametrize("dtype", ["float64", "float32", "int64", "bool"])
def test_nonzero_flatnonzero_and_repeat_are_numpys(target, dtype):
    @guvectorize("(n),(m,k),(m,k,j),(n)->()", target=target)
    def found(v, m, c, counts, out):
        (i,) = np.nonzero(v)
        rows, cols = np.nonzero(m)
        a, b, d = np.nonzero(c)
        out[0] = (i.sum() + 3 * rows.sum() + 5 * cols.sum() + 7 * np.flatnonzero(m).sum()
                  + 11 * (a.sum() + b.sum() * 2 + d.sum() * 3)
                  + 13 * np.repeat(m, 3).sum() + 17 * np.repeat(v, counts).sum())

    rng = np.random.default_rng(21)
    v = (rng.integers(0, 3, (4, 9)) * (rng.random((4, 9)) < 0.6)).astype(dtype)
    m = (rng.integers(0, 3, (4, 5, 6)) * (rng.random((4, 5, 6)) < 0.6)).astype(dtype)
    c = (rng.integers(0, 3, (4, 5, 6, 2)) * (rng.random((4, 5, 6, 2)) < 0.5)).astype(dtype)
    counts = rng.integers(0, 4, (4, 9))
    got = found(v, m, c, counts)
    for k in range(4):
        a, b, d = np.nonzero(c[k])
        rows, cols = np.nonzero(m[k])
        want = (np.nonzero(v[k])[0].sum() + 3 * rows.sum() + 5 * cols.sum()
                + 7 * np.flatnonzero(m[k]).sum() + 11 * (a.sum() + b.sum() * 2 + d.sum() * 3)
                + 13 * np.repeat(m[k], 3).sum() + 17 * np.repeat(v[k], counts[k]).sum())
        assert got[k] == pytest.approx(float(want), rel=1e-6), k


@pytest.mark.parametrize("dtypes", [("float64", "float64"), ("int32", "int64"),
                                    ("float32", "int16"), ("bool", "uint8")])
def test_concatenate_and_convolve_are_numpys(target, dtypes):
    @guvectorize("(n),(m),(n)->(p),(q),(r),(s)", target=target)
    def joined(a, b, c, two, three, four, conv):
        two[:] = np.concatenate((a, b))
        three[:] = np.concatenate((a, b, c), axis=0)
        four[:] = np.concatenate((b, a, c, b))
        conv[:] = np.convolve(a, b)

    rng = np.random.default_rng(22)
    a = (rng.integers(-5, 5, (3, 6))).astype(dtypes[0])
    b = (rng.integers(-5, 5, (3, 4))).astype(dtypes[1])
    c = (rng.integers(-5, 5, (3, 6))).astype(dtypes[0])
    outs = [np.zeros((3, n), np.result_type(a, b)) for n in (10, 16, 20, 9)]
    two, three, four, conv = joined(a, b, c, *outs)
    for k in range(3):
        np.testing.assert_array_equal(two[k], np.concatenate((a[k], b[k])))
        np.testing.assert_array_equal(three[k], np.concatenate((a[k], b[k], c[k])))
        np.testing.assert_array_equal(four[k], np.concatenate((b[k], a[k], c[k], b[k])))
        np.testing.assert_array_equal(conv[k], np.convolve(a[k], b[k]))


def test_convolve_of_floats_and_an_empty_array(target):
    @guvectorize("(n),(m)->(p)", target=target)
    def conv(a, v, out):
        out[:] = np.convolve(a, v)

    rng = np.random.default_rng(23)
    a, v = rng.standard_normal((2, 50)), rng.standard_normal((2, 7))
    np.testing.assert_allclose(conv(a, v, np.zeros((2, 56))),
                               [np.convolve(x, y) for x, y in zip(a, v)], rtol=1e-12, atol=1e-12)
    with pytest.raises(ValueError, match="v cannot be empty"):
        conv(a[:1], np.zeros((1, 0)), np.zeros((1, 49)))


def test_flip_outer_hanning_and_linspace_are_numpys(target):
    @guvectorize("(n),(m,k),(),()->(n),(m,k),(m,k),(m,k),(n,n),(n),(p),(p),(n)",
                 target=target)
    def shapes(v, m, lo, hi, fv, fm, fm0, fm1, o, h, ls, ls_open, ls_n):
        fv[:] = np.flip(v)
        fm[:, :] = np.flip(m)
        fm0[:, :] = np.flip(m, 0)
        fm1[:, :] = np.flip(m, axis=-1)
        o[:, :] = np.outer(v, v[::-1])
        h[:] = np.hanning(v.shape[0])
        ls[:] = np.linspace(lo, hi, ls.shape[0])
        ls_open[:] = np.linspace(lo, hi, num=ls.shape[0], endpoint=False)
        ls_n[:] = np.linspace(0, 1, v.shape[0])

    rng = np.random.default_rng(24)
    v, m = rng.standard_normal((2, 5)), rng.standard_normal((2, 3, 4))
    lo, hi = np.array([-1.5, 2.0]), np.array([3.25, 2.0])
    outs = shapes(v, m, lo, hi, out=(None,) * 6 + (np.zeros((2, 7)), np.zeros((2, 7)), None))
    fv, fm, fm0, fm1, o, h, ls, ls_open, ls_n = outs
    for k in range(2):
        np.testing.assert_array_equal(fv[k], np.flip(v[k]))
        np.testing.assert_array_equal(fm[k], np.flip(m[k]))
        np.testing.assert_array_equal(fm0[k], np.flip(m[k], 0))
        np.testing.assert_array_equal(fm1[k], np.flip(m[k], axis=-1))
        np.testing.assert_array_equal(o[k], np.outer(v[k], v[k][::-1]))
        np.testing.assert_allclose(h[k], np.hanning(5), rtol=1e-15, atol=1e-16)
        np.testing.assert_array_equal(ls[k], np.linspace(lo[k], hi[k], 7))
        np.testing.assert_array_equal(ls_open[k], np.linspace(lo[k], hi[k], 7, endpoint=False))
        np.testing.assert_array_equal(ls_n[k], np.linspace(0, 1, 5))


@pytest.mark.parametrize("dtype", ["float64", "int8", "bool"])
def test_flatten_is_a_copy_in_c_order(target, dtype):
    """deepdrr's `img[0:2, 0:2, 0:2].flatten()`: a new 1-d array in C order,
    of any view (strided, transposed); writing it leaves the array as is."""
    @guvectorize("(m,n,o),(p)->(p),(q),()", target=target)
    def flat(img, like, window, whole_t, untouched):
        w = img[0:2, ::2, 1:3].flatten()
        window[:] = w
        t = img[0].T.flatten()
        whole_t[:] = t
        w[0] = 1
        untouched[0] = img[0, 0, 1]

    img = np.random.default_rng(25).integers(0, 3, (2, 3, 4, 5)).astype(dtype)
    window, whole_t, untouched = flat(img, np.zeros(8, dtype),
                                      out=(None, np.zeros((2, 20), dtype), None))
    for k in range(2):
        np.testing.assert_array_equal(window[k], img[k, 0:2, ::2, 1:3].flatten(), strict=True)
        np.testing.assert_array_equal(whole_t[k], img[k, 0].T.flatten(), strict=True)
        assert untouched[k] == img[k, 0, 0, 1]


# ---- NaN statistics, ptp, roll, angle, copyto ----

def nan_statistics(a, out):
    out[0] = np.nanvar(a)
    out[1] = np.nanvar(a, ddof=1)
    out[2] = np.nanstd(a)
    out[3] = np.nanstd(a, ddof=2)
    out[4] = np.ptp(a)


@pytest.mark.parametrize("dtype", ["float64", "float32", "int64"])
def test_nan_variance_and_spread_are_numpys(target, dtype):
    gu = guvectorize(["void(float64[:], float64[:])", "void(float32[:], float32[:])",
                      "void(int64[:], float64[:])"], "(n)->(m)", target=target)(nan_statistics)
    rng = np.random.default_rng(30)
    a = (rng.standard_normal((6, 9)) * 10).astype(dtype)
    if dtype != "int64":
        a[0, 2] = np.nan
        a[1, :] = np.nan        # all NaN: NaN (NumPy warns)
        a[2, 1:] = np.nan       # one left: ddof=1 and 2 give NaN
        a[3, 4] = np.inf
    with warnings.catch_warnings():   # inf - inf, 0 / 0: both warn
        warnings.simplefilter("ignore", RuntimeWarning)
        got = gu(a, np.zeros((6, 5), np.float64 if dtype == "int64" else dtype))
        want = np.stack([np.nanvar(a, axis=1), np.nanvar(a, axis=1, ddof=1),
                         np.nanstd(a, axis=1), np.nanstd(a, axis=1, ddof=2),
                         np.ptp(a, axis=1)], axis=1)
    assert got.dtype == want.dtype
    np.testing.assert_allclose(got, want, rtol=2e-6 if dtype == "float32" else 1e-13)


def test_nan_variance_of_complex_values_is_real(target):
    @guvectorize(["void(complex128[:], float64[:])"], "(n)->()", target=target)
    def spread(z, out):
        out[0] = np.nanvar(z, ddof=1)

    rng = np.random.default_rng(31)
    z = rng.standard_normal((3, 8)) + 1j * rng.standard_normal((3, 8))
    z[1, 3] = complex(np.nan, 1.0)
    np.testing.assert_allclose(spread(z), np.nanvar(z, axis=1, ddof=1), rtol=1e-13)


def test_ptp_of_small_integers_wraps_as_numpys():
    @guvectorize(["void(int8[:], int8[:])"], "(n)->()")
    def spread(a, out):
        out[0] = np.ptp(a)

    a = np.array([[-100, 100, 3], [1, 2, 3], [-128, 127, 0]], np.int8)
    np.testing.assert_array_equal(spread(a), np.ptp(a, axis=1), strict=True)


def nan_extremes(a, out):
    out[0] = np.nanargmax(a)
    out[1] = np.nanargmin(a)


@pytest.mark.parametrize("dtype", ["float64", "float32", "int32"])
def test_nanargmax_and_nanargmin_read_nan_as_an_infinity(target, dtype):
    gu = guvectorize(["void(float64[:], int64[:])", "void(float32[:], int64[:])",
                      "void(int32[:], int64[:])"], "(n)->(k)", target=target)(nan_extremes)
    rng = np.random.default_rng(32)
    a = rng.integers(-9, 9, (5, 7)).astype(dtype)
    if dtype != "int32":
        a[0, :3] = np.nan
        a[1, :2] = [np.nan, -np.inf]     # NaN read as -inf comes first: index 0
        a[2, :2] = [np.nan, np.inf]
        a[3, -1] = np.nan
    got = gu(a, np.zeros((5, 2), np.int64))
    np.testing.assert_array_equal(got[:, 0], np.nanargmax(a, axis=1))
    np.testing.assert_array_equal(got[:, 1], np.nanargmin(a, axis=1))
    if dtype != "int32":
        with pytest.raises(ValueError, match="All-NaN slice encountered"):
            gu(np.full((1, 3), np.nan, dtype), np.zeros((1, 2), np.int64))


def test_roll_moves_elements_in_c_order(target):
    @guvectorize("(n),(m,k),()->(n),(m,k)", target=target)
    def rolled(v, m, shift, rv, rm):
        rv[:] = np.roll(v, shift)
        rm[:, :] = np.roll(m, -shift)

    rng = np.random.default_rng(33)
    v, m = rng.standard_normal((4, 6)), rng.standard_normal((4, 3, 5))
    shifts = np.array([0, 4, -13, 100])
    rv, rm = rolled(v, m, shifts)
    for k in range(4):
        np.testing.assert_array_equal(rv[k], np.roll(v[k], shifts[k]))
        np.testing.assert_array_equal(rm[k], np.roll(m[k], -shifts[k]))


def test_angle_of_complex_and_real_values(target):
    @guvectorize(["void(complex128[:], float64[:], float64[:], float64[:])"],
                 "(n),(n)->(n),(n)", target=target)
    def angles(z, x, az, ax):
        az[0] = np.angle(z[0], deg=True)
        az[1:] = np.angle(z[1:])
        ax[:] = np.angle(x)

    rng = np.random.default_rng(34)
    z = rng.standard_normal((2, 5)) + 1j * rng.standard_normal((2, 5))
    x = np.array([[-1.0, -0.0, 0.0, 2.0, np.nan], [3.0, -2.0, np.inf, -np.inf, 1.0]])
    az, ax = angles(z, x)
    for k in range(2):
        np.testing.assert_allclose(az[k], np.concatenate([[np.angle(z[k, 0], deg=True)],
                                                          np.angle(z[k, 1:])]), rtol=1e-15)
        np.testing.assert_array_equal(ax[k], np.angle(x[k]))


def test_copyto_broadcasts_and_converts(target):
    @guvectorize(["void(float64[:], int64[:,:])"], "(n)->(m,n)", target=target)
    def filled(v, out):
        np.copyto(out, v)

    v = np.array([[1.7, -2.2, 3.0], [0.5, 9.9, -0.5]])
    got = filled(v, np.zeros((2, 4, 3), np.int64))
    np.testing.assert_array_equal(got, np.broadcast_to(v.astype(np.int64)[:, None, :], (2, 4, 3)))


def test_stacks_of_1d_arrays_are_numpys(target):
    @guvectorize("(n),(n),(n)->(k,n),(n,k),(p),(k,n),(q,n),(n,r)", target=target)
    def stacks(a, b, c, rows, columns, joined, vertical, single, two_columns):
        rows[:, :] = np.stack((a, b, c))
        columns[:, :] = np.stack((a, b, c), axis=-1)
        joined[:] = np.hstack((a, b, c))
        vertical[:, :] = np.vstack((a, b, c))
        single[:, :] = np.vstack((a,))
        two_columns[:, :] = np.column_stack((a, c))

    rng = np.random.default_rng(35)
    a, b, c = rng.standard_normal((2, 4)), rng.standard_normal((2, 4)), rng.integers(0, 9, (2, 4))
    outs = stacks(a, b, c, out=(np.zeros((2, 3, 4)), np.zeros((2, 4, 3)), np.zeros((2, 12)),
                                np.zeros((2, 3, 4)), np.zeros((2, 1, 4)), np.zeros((2, 4, 2))))
    for k in range(2):
        want = [np.stack((a[k], b[k], c[k])), np.stack((a[k], b[k], c[k]), axis=-1),
                np.hstack((a[k], b[k], c[k])), np.vstack((a[k], b[k], c[k])), np.vstack((a[k],)),
                np.column_stack((a[k], c[k]))]
        for got, w in zip(outs, want):
            np.testing.assert_array_equal(got[k], w, strict=True)


def test_stacks_of_arrays_of_other_lengths_raise_numpys_error():
    @guvectorize("(n),(m)->(k,n)")
    def rows(a, b, out):
        out[:, :] = np.stack((a, b))

    with pytest.raises(ValueError, match="all input arrays must have the same shape"):
        rows(np.zeros(3), np.zeros(4), np.zeros((2, 3)))


def quotient_and_rest(a, b):
    q, r = divmod(a, b)
    q2, r2 = np.divmod(a, b)
    return q * 1000 + r + q2 + r2


def test_divmod_is_floor_division_and_remainder(target):
    f = vectorize(["int64(int64, int64)", "float64(float64, float64)"],
                  target=target)(quotient_and_rest)
    a, b = np.array([7, -7, 7, -7, 0, 13]), np.array([2, 2, -2, -2, 3, 5])
    for x, y in [(a, b), (a + 0.5, b * 1.5)]:
        np.testing.assert_array_equal(f(x, y), [quotient_and_rest(u, v) for u, v in zip(x, y)])

    @guvectorize(["void(int64[:], int64, int64[:], int64[:])"], "(n),()->(n),(n)", target=target)
    def rows(a, k, q, r):
        q[:], r[:] = divmod(a, k)

    q, r = rows(a, 3)
    np.testing.assert_array_equal(q, a // 3)
    np.testing.assert_array_equal(r, a % 3)
