"""The cuda call protocol at its boundaries, up to the driver (no GPU):
the launch plan of a cuda ufunc (f._plan) and the host side of a cuda
gufunc call (g._plan).

A plan takes 32-bit index arithmetic only when every index it computes
fits: n plus one grid's worth of threads (the grid-stride loop's last step
goes past n), each operand's byte extent and n x its item size, all below
2**31.  Device operands are test arrays (_core._cuda_test_array): any
address, shape and strides, no memory behind them.
"""
import numpy as np
import pytest

from numbavec import _core, guvectorize, vectorize
from numbavec import cuda

from conftest import kernel_from_source

HAVE_LIBDEVICE = cuda.toolkit_info()["libdevice"] is not None
pytestmark = pytest.mark.skipif(not HAVE_LIBDEVICE and not cuda.is_available(),
                                reason="the CUDA toolkit's libdevice is not installed")

BASE = 0x7F0000000000


def add(x, y):
    return x + y


def device(shape, dtype, strides=None, at=BASE):
    return _core._cuda_test_array(at, shape, dtype, strides=strides)


@pytest.fixture(scope="module")
def f4():
    return vectorize(["float32(float32, float32)"], target="cuda")(add)


@pytest.fixture(scope="module")
def i1():
    return vectorize(["int8(int8, int8)"], target="cuda")(add)


def test_32_bit_plan_up_to_2_31_bytes(f4):
    """n x item size and the byte extent must be below 2**31: exactly 2**31
    bytes takes the 64-bit entries."""
    assert f4._plan(device((2**29 - 1,), "float32"), 1.0)["kernel"] == "c32"
    assert f4._plan(device((2**29,), "float32"), 1.0)["kernel"] == "c64"
    step = device((2,), "float32", strides=(2**31 - 4,))
    assert f4._plan(step, 1.0)["kernel"] == "s32"
    step = device((2,), "float32", strides=(2**31,))
    assert f4._plan(step, 1.0)["kernel"] == "s64"


def test_32_bit_plan_leaves_room_for_the_grid_stride_step(i1):
    """One-byte elements: n itself below 2**31, but n plus the grid's
    threads not, takes the 64-bit entry (a 32-bit index would wrap)."""
    p = i1._plan(device((2**31 - 2**19,), "int8"), 1, sm_count=132, block=256)
    assert p["grid"] * p["block"] > 2**19
    assert p["kernel"] == "c64"
    n = 2**31 - p["grid"] * p["block"] - 1
    assert i1._plan(device((n,), "int8"), 1, sm_count=132, block=256)["kernel"] == "c32"


def test_an_out_that_only_touches_an_input_is_written_directly(f4):
    """out= ending where an input starts, or starting where it ends, shares
    no byte with it: the kernel writes it directly; one element of overlap
    makes it go through a temporary."""
    a = device((1000,), "float32", at=BASE)
    for at in (BASE + 4000, BASE - 4000):
        assert f4._plan(a, 1.0, out=device((1000,), "float32", at=at))["out"] == "direct"
    for at in (BASE + 3996, BASE - 3996):
        assert f4._plan(a, 1.0, out=device((1000,), "float32", at=at))["out"] == "temporary"
    assert f4._plan(a, 1.0, out=a)["out"] == "direct"


def test_out_of_a_dtype_without_a_device_cast_is_refused(f4):
    a = device((10,), "float32")
    for dtype in ("float16", ">f4"):
        with pytest.raises(TypeError, match="no cast to float32 on the device"):
            f4._plan(a, 1.0, out=device((10,), dtype, at=BASE + 4096))
    with pytest.raises(TypeError, match="Cannot cast ufunc 'add' output"):
        f4._plan(a, 1.0, out=device((10,), "int32", at=BASE + 4096))


# ---- a cuda gufunc's host side ----

DOT = """
def k(a, b, out):
    acc = 0.0
    for i in range(a.shape[0]):
        acc += a[i] * b[i]
    out[0] = acc
"""

FLEX = """
def k(a, b, out):
    for i in range(out.shape[0]):
        for j in range(out.shape[1]):
            acc = 0.0
            for p in range(a.shape[1]):
                acc += a[i, p] * b[p, j]
            out[i, j] = acc
"""


@pytest.fixture(scope="module")
def dot():
    return guvectorize(["void(f8[:], f8[:], f8[:])", "void(c16[:], c16[:], c16[:])"],
                       "(n),(n)->()", target="cuda")(kernel_from_source(DOT))


def test_gufunc_axes_with_an_entry_for_every_operand(dot):
    x = np.ones((3, 5))
    p = dot._plan(x.T, x.T, axes=[(0,), (0,), ()])
    assert dot.types[p["loop"]] == "dd->d"
    with pytest.raises(ValueError, match="out of bounds"):
        dot._plan(x, x, axes=[(2,), (1,), ()])
    with pytest.raises(ValueError, match="out of bounds"):
        dot._plan(x, x, axes=[(-3,), (1,), ()])


def test_gufunc_loop_dimensions_of_1_broadcast(dot):
    """Loop dimensions broadcast as NumPy's: (1, 5) against (4, 5)."""
    for a, b in (((1, 5), (4, 5)), ((4, 5), (1, 5)), ((4, 1, 5), (3, 5)), ((5,), (2, 3, 5))):
        assert dot._plan(np.ones(a), np.ones(b))["loop"] == 0
    with pytest.raises(ValueError, match="could not be broadcast"):
        dot._plan(np.ones((4, 5)), np.ones((3, 5)))


def test_gufunc_core_dimensions_are_the_trailing_ones(dot):
    with pytest.raises(ValueError, match="mismatch in its core dimension"):
        dot._plan(np.ones((5, 3)), np.ones((5, 4)))
    assert dot._plan(np.ones((5, 3)), np.ones((2, 5, 3)))["loop"] == 0


def test_gufunc_python_float_reaches_a_complex_loop():
    g = guvectorize(["void(c16[:], c16, c16[:])"], "(n),()->(n)", target="cuda")(
        kernel_from_source("def k(a, s, out):\n    for i in range(a.shape[0]):\n"
                           "        out[i] = a[i] * s\n"))
    assert g._plan(np.ones(4, "c16"), 2.5)["loop"] == 0
    assert g._plan(np.ones(4, "c16"), 2)["loop"] == 0


def test_gufunc_optional_dimension_may_be_missing():
    """'?' dimensions (the layout's optional flags): an operand without one
    is planned as NumPy's matmul takes it."""
    g = guvectorize(["void(f8[:, :], f8[:, :], f8[:, :])"], "(m?,n),(n,p?)->(m?,p?)",
                    target="cuda")(kernel_from_source(FLEX))
    for a, b in (((2, 3), (3, 4)), ((3,), (3, 4)), ((2, 3), (3,)), ((3,), (3,))):
        assert g._plan(np.ones(a), np.ones(b))["loop"] == 0


def test_gufunc_python_scalar_takes_the_first_loop_it_reaches():
    """A Python int reaches a float64 () argument (NEP 50: a weak scalar):
    the first signature it reaches is chosen, as NumPy chooses for the cpu
    target, before a later one of its own default kind."""
    sigs = ["void(f8[:], f8, f8[:])", "void(f8[:], i8, i8[:])"]
    src = ("def k(a, s, out):\n    for i in range(a.shape[0]):\n"
           "        out[i] = a[i] * s\n")
    g = guvectorize(sigs, "(n),()->(n)", target="cuda")(kernel_from_source(src))
    cpu = guvectorize(sigs, "(n),()->(n)")(kernel_from_source(src))
    x = np.arange(4.0)
    assert cpu(x, 2).dtype == np.float64
    assert g.types[g._plan(x, 2)["loop"]] == "dd->d"
    # a typed int64 takes its own loop first, on both targets
    for s in (2, 2.0, np.int64(2), np.array(2), np.float64(2)):
        loop = g.types[g._plan(x, s)["loop"]]
        assert np.dtype(loop[-1]) == cpu(x, s).dtype, s
