"""np.ndindex's index tuples, carried from one iteration to the next.

The tuple of iteration k is the previous one advanced in C order (no
division per element); these kernels check the order and the restarts
against py_func: 1-d to 4-d shapes, `continue` and `break`, an ndindex loop
restarted inside an outer loop, two nested ndindex loops, and the grouped
reductions of the aggregation library (labels indexed by the tuple).
"""
import numpy as np
import pytest

from numbavec import guvectorize
from conftest import kernel_from_source

ORDER = """
import numpy as np
def k(a, out):
    n = 0
    for idx in np.ndindex(a.shape):
        out[n] = a[idx]
        n += 1
"""

RESTART = """
import numpy as np
def k(a, out):
    t = 0.0
    for r in range(3):
        for idx in np.ndindex(a.shape):
            if a[idx] < 0:
                continue
            if a[idx] > 2.5:
                break
            t = t * 0.5 + a[idx] * (r + 1)
    out[0] = t
"""

NESTED = """
import numpy as np
def k(a, out):
    out[0] = 0
    for i in np.ndindex(a.shape):
        for j in np.ndindex(a.shape):
            if i[0] <= j[0]:
                out[0] += a[i] * a[j] * (j[-1] + 1)
"""

GROUP_FIRST = """
import numpy as np
def k(values, labels, out):
    for j in range(out.shape[0]):
        out[j] = np.nan
    for idx in np.ndindex(values.shape):
        g = labels[idx]
        if g < 0:
            continue
        v = values[idx]
        if np.isnan(out[g]) and not np.isnan(v):
            out[g] = v
"""


def run_py(py, *args):
    outs = [np.array(a, copy=True) for a in args]
    py(*outs)
    return outs


@pytest.mark.parametrize("shape", [(7,), (3, 5), (2, 3, 4), (2, 1, 3, 2), (1, 1), (4, 1)])
def test_ndindex_visits_in_c_order(shape, target):
    nd = len(shape)
    dims = ", ".join(":" * 1 for _ in range(nd))
    gu = guvectorize([f"void(float64[{dims}], float64[:])"],
                     f"({','.join('abcd'[:nd])}),(m)", target=target)(kernel_from_source(ORDER))
    a = np.random.default_rng(1).standard_normal(shape)
    out = np.zeros(a.size)
    gu(a, out)
    assert np.array_equal(out, a.ravel())


@pytest.mark.parametrize("body", [RESTART, NESTED])
def test_ndindex_restarts_and_nests(body, target):
    py = kernel_from_source(body)
    gu = guvectorize(["void(float64[:, :], float64[:])"], "(n,p)->()", target=target)(py)
    rng = np.random.default_rng(2)
    for shape in [(3, 4), (1, 5), (6, 1), (2, 2)]:
        a = rng.uniform(-1, 3, (5,) + shape)
        want = np.array([run_py(py, a[i], np.zeros(1))[1][0] for i in range(5)])
        np.testing.assert_allclose(gu(a), want, rtol=1e-12)


def test_grouped_reduction_over_ndindex(target):
    py = kernel_from_source(GROUP_FIRST)
    gu = guvectorize(["void(float64[:, :], int64[:, :], float64[:])"], "(n,p),(n,p),(m)",
                     target=target)(py)
    rng = np.random.default_rng(3)
    v = rng.standard_normal((40, 30))
    v[rng.random(v.shape) < 0.3] = np.nan
    labels = rng.integers(-1, 12, v.shape)
    out = np.empty(12)
    gu(v, labels, out)
    want = run_py(py, v, labels, np.empty(12))[2]
    assert np.array_equal(out, want, equal_nan=True)


def test_ndindex_loop_divides_nothing():
    """The regression: each iteration unravelled k with a 64-bit division and
    remainder per dimension (0.5-0.7 of Numba's speed on grouped reductions)."""
    gu = guvectorize(["void(float64[:, :], int64[:, :], float64[:])"], "(n,p),(n,p),(m)")(
        kernel_from_source(GROUP_FIRST))
    ir = gu.inspect_llvm("void(float64[:, :], int64[:, :], float64[:])")
    assert " udiv " not in ir and " urem " not in ir
