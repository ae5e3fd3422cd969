"""Data and NumPy functions that real kernels use (issue 36): module-level
NumPy arrays read as lookup tables, np.array of scalars, lists stored into
rows, np.linalg.norm.  Each kernel is written as library code writes it and
checked against its py_func (results and exceptions) on every target."""
import pickle
import subprocess
import sys

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
