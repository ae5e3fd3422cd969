"""np.ndindex's loop emitted as nested loops, one a dimension (ndindex.c).

The index tuple is the loops' counters; these kernels check every path of
that form against py_func: shapes with a dimension of 0 (first, middle,
last), of 1, odd and large sizes, 1-d to 4-d, non-contiguous inputs,
`continue`, `break` out of every level and the `else` block, the tuple read
after the loop, a shape given as separate ints, an ndindex loop inside
another and inside a range loop, and a scalar kernel's loop.
"""
import numpy as np
import pytest

from numbavec import guvectorize, vectorize
from conftest import kernel_from_source

WEIGHTED = """
import numpy as np
def k(a, out):
    out[0] = 0.0
    n = 0
    for idx in np.ndindex(a.shape):
        n += 1
        out[0] = out[0] * 0.75 + a[idx] * (n % 7 + 1)
    out[1] = n
"""

BREAK_ELSE = """
import numpy as np
def k(a, out):
    out[0] = -1.0
    out[1] = 0.0
    for idx in np.ndindex(a.shape):
        if a[idx] < -1.5:
            continue
        out[1] += a[idx]
        if a[idx] > 2.0:
            out[0] = idx[0] * 1000 + idx[-1]
            break
    else:
        out[0] = -2.0
"""

LAST_INDEX = """
import numpy as np
def k(a, out):
    out[0] = 0.0
    for i, j in np.ndindex(a.shape[0], a.shape[1]):
        out[0] += a[i, j] * (i - j)
    for idx in np.ndindex(a.shape):
        pass
    out[1] = idx[0] * 100 + idx[1]
"""

PAIRS = """
import numpy as np
def k(a, out):
    out[0] = 0.0
    for r in range(2):
        for i in np.ndindex(a.shape):
            for j in np.ndindex(a.shape[1]):
                if j[0] > i[1] + r:
                    break
                out[0] += a[i] * a[i[0], j[0]]
    out[1] = 0.0
"""


def run_py(py, a):
    out = np.zeros(2)
    py(a.copy(), out)
    return out


def shapes_2d():
    return [(0, 3), (3, 0), (1, 1), (1, 7), (7, 1), (5, 3), (37, 129)]


@pytest.mark.parametrize("body", [WEIGHTED, BREAK_ELSE, PAIRS])
def test_nested_ndindex_2d_against_py_func(body, target):
    py = kernel_from_source(body)
    gu = guvectorize(["void(float64[:, :], float64[:])"], "(n,p),(two)", target=target)(py)
    rng = np.random.default_rng(5)
    for shape in shapes_2d():
        a = rng.uniform(-2, 2.2, shape)
        for arg in (a, a.T, a[::2], a[:, ::-2]):  # contiguous and not
            out = np.zeros(2)
            gu(arg, out)
            np.testing.assert_array_equal(out, run_py(py, arg), err_msg=str(arg.shape))


def test_tuple_read_after_the_loop(target):
    py = kernel_from_source(LAST_INDEX)
    gu = guvectorize(["void(float64[:, :], float64[:])"], "(n,p),(two)", target=target)(py)
    rng = np.random.default_rng(6)
    for shape in [(1, 1), (3, 5), (40, 17)]:
        a = rng.standard_normal(shape)
        out = np.zeros(2)
        gu(a, out)
        np.testing.assert_array_equal(out, run_py(py, a))
    with pytest.raises(UnboundLocalError):
        run_py(py, np.zeros((0, 2)))
    with pytest.raises(UnboundLocalError):
        gu(np.zeros((0, 2)), np.zeros(2))


@pytest.mark.parametrize("shape", [(0,), (1,), (9,), (1001,), (2, 0, 3), (3, 1, 5), (2, 3, 4, 5),
                                   (1, 1, 1, 1), (4, 3, 0, 2), (6, 5, 7)])
def test_nested_ndindex_any_rank(shape, target):
    nd = len(shape)
    py = kernel_from_source(WEIGHTED)
    dims = ", ".join(":" for _ in range(nd))
    gu = guvectorize([f"void(float64[{dims}], float64[:])"],
                     f"({','.join('abcd'[:nd])}),(two)", target=target)(py)
    a = np.random.default_rng(7).standard_normal(tuple(2 * s for s in shape))[
        tuple(slice(None, None, 2) for _ in shape)]  # every axis strided
    assert a.shape == shape
    out = np.zeros(2)
    gu(a, out)
    np.testing.assert_array_equal(out, run_py(py, a))


def test_negative_dimension_is_still_a_value_error(target):
    src = ("import numpy as np\ndef k(a, out):\n    out[0] = 0\n"
           "    for idx in np.ndindex((a.shape[0] - 3, 2)):\n        out[0] += 1\n")
    gu = guvectorize(["void(float64[:], float64[:])"], "(n),(one)", target=target)(
        kernel_from_source(src))
    out = np.zeros(1)
    gu(np.zeros(5), out)
    assert out[0] == 4
    with pytest.raises(ValueError):
        gu(np.zeros(2), out)


def test_scalar_kernel_ndindex(target):
    src = ("import numpy as np\ndef f(x, n):\n    s = 0.0\n"
           "    for i, j in np.ndindex(n, 3):\n        if j == 2:\n            continue\n"
           "        s = s * x + i - j\n    return s\n")
    py = kernel_from_source(src, "f")
    f = vectorize(["float64(float64, int64)"], target=target)(py)
    x = np.array([0.5, -1.25, 2.0, 0.0, 3.0])
    n = np.array([0, 1, 2, 7, 40])
    np.testing.assert_array_equal(f(x, n), [py(a, b) for a, b in zip(x, n)])
