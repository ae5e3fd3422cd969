"""Gufunc layouts at their limits, and the body's and the call's paths that
only mixed item sizes, [::1] copies, self-overlapping operands or the
output's end show.

The limits (src/typesig/typesig.h, src/gufunc/gufunc.h): 32 core
dimensions per argument (TS_MAXDIMS), 32 arguments (TS_MAXARGS), 64
distinct dimension names (GU_MAXCORE), 1023 characters of layout.  NumPy
2's own limits are larger (NPY_MAXDIMS and NPY_MAXARGS are 64), so a
gufunc at numbavec's limits still runs: 32 core dimensions and loop
dimensions up to NumPy's 64 in all.  One past each limit is a ValueError
naming it (a layout one past the limit used to be parsed one element past
the array that holds it).
"""
import numpy as np
import pytest

from conftest import kernel_from_source
from numbavec import guvectorize


def names(prefix, n):
    return ",".join(f"{prefix}{i}" for i in range(n))


def array_type(ndim, kind="f8"):
    return kind + "[" + ", ".join([":"] * ndim) + "]"


def index(ndim, last):
    """An index of ndim entries: zeros, then `last`."""
    return ", ".join(["0"] * (ndim - len(last)) + [str(i) for i in last])


# ---- the limits ----

def test_32_core_dimensions_run(target):
    k = kernel_from_source(
        f"def k(x, out):\n    out[0] = x[{index(32, (1, 2))}] + x.shape[30] * 100"
        " + x.shape[31] * 1000\n")
    g = guvectorize([f"void({array_type(32)}, f8[:])"], f"({names('d', 32)})->()",
                    target=target)(k)
    x = np.arange(4 * 6, dtype=float).reshape((4,) + (1,) * 30 + (2, 3))
    np.testing.assert_array_equal(g(x), x[..., 1, 2].ravel() + 3200)
    # 32 core and 32 loop dimensions: NumPy's 64
    y = np.arange(12.0).reshape((2,) + (1,) * 31 + (1,) * 30 + (2, 3))
    assert y.ndim == 64
    got = g(y)
    assert got.shape == (2,) + (1,) * 31
    np.testing.assert_array_equal(got.ravel(), y[..., 1, 2].ravel() + 3200)


def test_33_core_dimensions_are_refused():
    k = kernel_from_source("def k(x, out):\n    out[0] = 1.0\n")
    with pytest.raises(ValueError, match="too many dimensions at position"):
        guvectorize(["void(f8[:], f8[:])"], f"({names('d', 33)})->()")(k)
    with pytest.raises(ValueError, match="too many dimensions at position"):
        guvectorize(f"({names('d', 33)})->()")(k)        # dynamic: no signature to check


def test_64_dimension_names_run_and_65_are_refused(target):
    k = kernel_from_source(
        "def k(x, y, out):\n    out[0] = x.shape[31] * 10 + y.shape[31] + x.shape[0]\n")
    layout = f"({names('a', 32)}),({names('b', 32)})->()"
    g = guvectorize([f"void({array_type(32)}, {array_type(32)}, f8[:])"], layout,
                    target=target)(k)
    assert g.signature == layout
    x = np.ones((3,) + (1,) * 31 + (4,))
    y = np.ones((1,) * 31 + (5,))
    np.testing.assert_array_equal(g(x, y), [46.0, 46.0, 46.0])
    with pytest.raises(ValueError, match="too many dimension names"):
        guvectorize(["void(f8[:], f8[:], f8[:], f8[:])"],
                    f"({names('a', 32)}),({names('b', 32)}),(c)->()")(k)


def test_32_arguments_run_and_33_are_refused(target):
    params = ", ".join(f"a{i}" for i in range(31))
    k = kernel_from_source(f"def k({params}, out):\n    out[0] = "
                           + " + ".join(f"a{i} * {i}" for i in range(31)) + "\n")
    g = guvectorize(["void(" + ", ".join(["f8"] * 31) + ", f8[:])"],
                    ",".join(["()"] * 31) + "->()", target=target)(k)
    assert g.nin == 31 and g.nout == 1
    args = [np.full(3, float(i)) for i in range(31)]
    np.testing.assert_array_equal(g(*args), np.full(3, float(sum(i * i for i in range(31)))))
    with pytest.raises(ValueError, match="too many arguments"):
        guvectorize(["void(f8, f8[:])"], ",".join(["()"] * 32) + "->()")(k)


def test_layout_length_limit():
    k = kernel_from_source("def k(x, out):\n    out[0] = x.shape[0]\n")
    pad = 1023 - len("()->()")
    name = "n" * pad
    ok = f"({name})->()"
    assert len(ok) == 1023
    g = guvectorize(["void(f8[:], f8[:])"], ok)(k)
    assert g.signature == ok
    np.testing.assert_array_equal(g(np.ones((2, 5))), [5.0, 5.0])
    with pytest.raises(ValueError, match=r"too long \(1024 characters; the limit is 1023\)"):
        guvectorize(["void(f8[:], f8[:])"], f"({name}n)->()")(k)


@pytest.mark.parametrize("layout, position", [
    ("(n)->(m", 7),
    ("(n),,(m)->()", 4),
    ("(n)->(0)", 6),
    ("(ñ)->()", 1),
])
def test_layout_error_points_at_the_character(layout, position):
    """The caret line has one blank a character of the layout before the
    caret (PyErr_Format has no %*s before Python 3.12: it was printed as is)."""
    k = kernel_from_source("def k(x, out):\n    out[0] = 1.0\n")
    with pytest.raises(ValueError) as info:
        guvectorize(["void(f8[:], f8[:])"], layout)(k)
    lines = str(info.value).splitlines()
    assert lines[-2] == "    " + layout
    assert lines[-1] == "    " + " " * position + "^"


def test_a_zero_frozen_size_is_refused():
    k = kernel_from_source("def k(x, out):\n    out[0] = 1.0\n")
    with pytest.raises(ValueError, match="a fixed size must be a positive integer"):
        guvectorize(["void(f8[:], f8[:])"], "(0)->()")(k)


def test_a_scalar_argument_declared_2d_is_refused():
    k = kernel_from_source("def k(x, out):\n    out[0] = 1.0\n")
    with pytest.raises(ValueError, match=r"2 dimension\(s\).*0 core dimension"):
        guvectorize(["void(f8[:, :], f8[:])"], "()->()")(k)


def test_optional_dimension_is_kept_optional(target):
    """'?': a dimension an operand may lack (NumPy's matmul signature)."""
    k = kernel_from_source(
        "def k(a, b, out):\n"
        "    for i in range(a.shape[0]):\n"
        "        for j in range(b.shape[1]):\n"
        "            acc = 0.0\n"
        "            for t in range(a.shape[1]):\n"
        "                acc += a[i, t] * b[t, j]\n"
        "            out[i, j] = acc\n")
    g = guvectorize(["void(f8[:, :], f8[:, :], f8[:, :])"], "(m?,n),(n,p?)->(m?,p?)",
                    target=target)(k)
    assert g.signature == "(m?,n),(n,p?)->(m?,p?)"
    a, b = np.arange(6.0).reshape(2, 3), np.arange(12.0).reshape(3, 4)
    np.testing.assert_array_equal(g(a, b), a @ b)
    np.testing.assert_array_equal(g(a[0], b), a[0] @ b)
    np.testing.assert_array_equal(g(a, b[:, 1]), a @ b[:, 1])


# ---- the iterator flags of outputs and written inputs ----

def test_out_that_is_the_input_reads_a_copy_as_numpys_gufuncs_do(target):
    """out= the input itself: NumPy's gufunc machinery copies an input that
    any output overlaps (its own cross1d shows it), and Numba's gufuncs
    follow it, so the kernel reads the input's values, not what it wrote."""
    from numpy._core import _umath_tests

    a, b = np.array([[1.0, 2.0, 3.0]]), np.array([[4.0, 5.0, 6.0]])
    c = a.copy()
    _umath_tests.cross1d(c, b, out=c)
    np.testing.assert_array_equal(c, np.cross(a, b))
    k = kernel_from_source(
        "def k(x, out):\n    n = x.shape[0]\n"
        "    for i in range(n):\n        out[i] = x[n - 1 - i]\n")
    g = guvectorize(["void(f8[:], f8[:])"], "(n)->(n)", target=target)(k)
    x = np.arange(12.0).reshape(3, 4)
    y = x.copy()
    assert g(y, out=y) is y
    np.testing.assert_array_equal(y, x[:, ::-1])
