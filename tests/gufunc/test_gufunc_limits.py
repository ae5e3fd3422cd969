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
import re

import numpy as np
import pytest
from numpy.lib.stride_tricks import as_strided

from conftest import kernel_from_source
from numbavec import _core, guvectorize


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
    with pytest.raises(TypeError, match="type and shape signature mismatch for arg #1") as info:
        guvectorize(["void(f8[:, :], f8[:])"], "()->()")(k)
    assert re.search(r"2 dimension\(s\).*0 core dimension", info.value.__notes__[0])


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


# ---- the body: mixed item sizes, strides of other arguments ----

def _dot(x, y, out):
    acc = 0.0
    for i in range(x.shape[0]):
        acc += x[i] * y[i]
    out[0] = acc


@pytest.mark.parametrize("kinds", [("f8", "f4"), ("f4", "f8"), ("i1", "f8"), ("f8", "i2")])
def test_strided_argument_of_another_item_size(target, kinds):
    """An argument viewed with the step of argument 0's item size (f4 [::2]
    next to f8) is not unit-stride: the general kernel reads it."""
    a, b = kinds
    g = guvectorize([f"void({a}[:], {b}[:], f8[:])"], "(n),(n)->()", target=target)(_dot)
    n = 40
    x = (np.arange(3 * n) % 7 - 3).astype(a).reshape(3, n)
    for k, dtype in ((0, a), (1, b)):
        other = np.dtype(kinds[1 - k]).itemsize
        every = max(other // np.dtype(dtype).itemsize, 2)
        base = (np.arange(3 * n * every) % 5 - 2).astype(dtype).reshape(3, n * every)
        args = [x, (np.arange(3 * n) % 3).astype(b).reshape(3, n)]
        args[k] = base[:, ::every]
        want = (args[0].astype("f8") * args[1].astype("f8")).sum(axis=1)
        np.testing.assert_array_equal(g(*args), want)


def test_arguments_with_different_strides_and_sizes(target):
    """(m,n),(n)->(m): each argument's core sizes by dimension name, its
    strides its own."""
    k = kernel_from_source(
        "def k(a, v, out):\n"
        "    for i in range(a.shape[0]):\n"
        "        acc = 0.0\n"
        "        for j in range(a.shape[1]):\n"
        "            acc += a[i, j] * v[j]\n"
        "        out[i] = acc\n")
    g = guvectorize(["void(f8[:, :], f4[:], f8[:])"], "(m,n),(n)->(m)", target=target)(k)
    a = np.arange(2 * 3 * 5, dtype="f8").reshape(2, 3, 5)
    v = np.arange(20, dtype="f4")[::4]
    np.testing.assert_array_equal(g(a, v), a @ v.astype("f8"))
    np.testing.assert_array_equal(g(a.transpose(0, 2, 1)[:, :3, :],
                                    np.arange(3, dtype="f4")),
                                  a.transpose(0, 2, 1)[:, :3, :] @ np.arange(3.0))


def test_outer_loop_stops_at_the_end(target, forced):
    k = kernel_from_source("def k(x, out):\n    out[0] = x[0] + x[x.shape[0] - 1]\n")
    g = guvectorize(["void(f8[:], f8[:])"], "(n)->()", target=target)(k)
    for n in (1, 7, 1000):
        x = np.arange(n * 4.0).reshape(n, 4)
        buf = np.full(n + 8, 99.0)
        g(x, out=buf[:n])
        np.testing.assert_array_equal(buf[:n], x[:, 0] + x[:, 3])
        np.testing.assert_array_equal(buf[n:], 99.0)


def test_broadcast_argument_keeps_its_outer_step(target, forced):
    g = guvectorize(["void(f8[:], f4[:], f8[:])"], "(n),(n)->()", target=target)(_dot)
    x = np.arange(50 * 3, dtype="f8").reshape(50, 3)
    y = np.array([1.0, 2.0, 3.0], "f4")
    np.testing.assert_array_equal(g(x, y), x @ y.astype("f8"))
    np.testing.assert_array_equal(g(x[:1], np.tile(y, (50, 1))), np.full(50, x[0] @ y))


# ---- the call: [::1] copies, written operands ----

def _sum_rows(x, out):
    for i in range(x.shape[0]):
        acc = 0.0
        for j in range(x.shape[1]):
            acc += x[i, j] * (j + 1)
        out[i] = acc


@pytest.mark.parametrize("view", ["fortran", "every_other", "transposed"])
def test_contiguous_2d_declaration_copies(target, view):
    """A [:, ::1] argument whose last dimension is not unit-stride is copied
    (C order) for the kernel, its rows and columns in place."""
    g = guvectorize(["void(f8[:, ::1], f8[:])"], "(m,n)->(m)", target=target)(_sum_rows)
    base = np.arange(3 * 4 * 10, dtype="f8").reshape(3, 4, 10)
    x = {"fortran": np.asfortranarray(base[:, :, :5]),
         "every_other": base[:, :, ::2],
         "transposed": base.transpose(0, 2, 1)[:, :4, :]}[view]
    want = (x * np.arange(1, x.shape[2] + 1)).sum(axis=2)
    np.testing.assert_array_equal(g(x), want)


def test_contiguous_declaration_of_a_later_argument(target):
    """[::1] on argument 1 behind a 2-d argument 0: its core stride is the
    one after argument 0's two."""
    k = kernel_from_source(
        "def k(a, v, out):\n"
        "    for i in range(a.shape[0]):\n"
        "        acc = 0.0\n"
        "        for j in range(a.shape[1]):\n"
        "            acc += a[i, j] * v[j] * (j + 1)\n"
        "        out[i] = acc\n")
    g = guvectorize(["void(f8[:, :], f8[::1], f8[:])"], "(m,n),(n)->(m)", target=target)(k)
    a = np.arange(2 * 3 * 4, dtype="f8").reshape(2, 3, 4)
    w = np.arange(2 * 12, dtype="f8").reshape(2, 12)[:, ::3]
    want = np.einsum("bij,bj->bi", a, w * np.arange(1, 5))
    np.testing.assert_array_equal(g(a, w), want)


def test_contiguous_output_written_through_a_copy(target):
    """A [::1] output given as a strided view: the kernel writes a copy,
    which goes back into every outer iteration's block, the last too."""
    k = kernel_from_source(
        "def k(x, out):\n    for i in range(x.shape[0]):\n        out[i] = x[i] * 2 + i\n")
    g = guvectorize(["void(f8[:], f8[::1])"], "(n)->(n)", target=target)(k)
    x = np.arange(5 * 6, dtype="f8").reshape(5, 6)
    buf = np.full((5, 12), -1.0)
    g(x, out=buf[:, ::2])
    np.testing.assert_array_equal(buf[:, ::2], x * 2 + np.arange(6))
    np.testing.assert_array_equal(buf[:, 1::2], -1.0)


def test_written_operand_shared_by_every_iteration_stays_serial(target, forced):
    """A written input whose loop stride is 0 (one element for all outer
    iterations, made with as_strided: NumPy refuses to broadcast it) is
    updated by the iterations in turn, never split between threads."""
    k = kernel_from_source(
        "def k(x, acc):\n    for i in range(x.shape[0]):\n        acc[0] += x[i]\n")
    g = guvectorize(["void(f8[:], f8[:])"], "(n),(m)", target=target)(k)
    x = np.ones((4000, 500))
    for _ in range(3):
        base = np.zeros(1)
        jobs = _core._pool_stats()["jobs"]
        g(x, as_strided(base, (4000, 1), (0, 8)))
        assert _core._pool_stats()["jobs"] == jobs
        assert base[0] == 2_000_000.0
    # an ordinary written input, one element per iteration, is split
    acc = np.zeros((4000, 1))
    g(x, acc)
    np.testing.assert_array_equal(acc, 500.0)


# ---- the iterator flags of outputs and written inputs ----

def test_out_of_one_row_is_not_broadcast(target):
    g = guvectorize(["void(f8[:], f8[:])"], "(n)->()", target=target)(
        kernel_from_source("def k(x, out):\n    out[0] = x[0]\n"))
    with pytest.raises(ValueError, match=re.escape("non-broadcastable output")):
        g(np.ones((4, 3)), out=np.zeros(1))


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


READ_ONLY_MAP = '''
import os, sys, tempfile
import numpy as np
from numbavec import guvectorize

def weighted(x, out):
    acc = 0.0
    for i in range(x.shape[0]):
        acc += x[i] * (i + 1)
    out[0] = acc

g = guvectorize(["void(f8[::1], f8[:])"], "(n)->()", target={target!r})(weighted)
path = os.path.join(tempfile.mkdtemp(), "x.bin")
np.arange(40.0).tofile(path)
m = np.memmap(path, dtype="f8", mode="r", shape=(2, 20))   # pages mapped read-only
assert not m.flags.writeable
got = g(m[:, ::2])
want = (np.arange(40.0).reshape(2, 20)[:, ::2] * np.arange(1, 11)).sum(1)
assert (got == want).all(), got
print("ok")
'''


def test_contiguous_copy_of_a_read_only_input_is_not_written_back(target):
    """A [::1] input the kernel only reads is copied for it, never copied
    back: its memory may be mapped read-only (np.memmap mode='r')."""
    from conftest import run_python

    proc = run_python(READ_ONLY_MAP.format(target=target), as_file=True)
    assert proc.returncode == 0 and proc.stdout.strip() == "ok", proc.stderr[-2000:]
