"""Float to integer conversions in vectorized loops.

A conversion saturates at the integer kind's range and gives 0 for NaN
(llvm.fptosi.sat's meaning).  On a CPU it is spelled out as compares, one
plain conversion and selects, because LLVM expands a vector fptosi.sat lane by
lane with a branch per lane: `int(math.floor(x))` on a branch ran 5-10x slower
than Numba's.  The values cross every edge of every kind, in arrays long
enough for the vector body.
"""
import math

import numpy as np
import pytest

import numbavec
from conftest import kernel_from_source

INT_KINDS = ["int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64"]


def saturated(v, kind):
    info = np.iinfo(kind)
    if math.isnan(v):
        return 0
    if v >= float(info.max) + 1 or v == math.inf:
        return int(info.max)
    if v <= float(info.min) - 1 or v == -math.inf:
        return int(info.min)
    return max(int(info.min), min(int(info.max), math.trunc(v)))


def edge_values(kind, ftype):
    info = np.iinfo(kind)
    vals = [0.0, -0.0, 0.5, -0.5, -0.99, 1.5, -1.5, 2.0 ** 31, 2.0 ** 32, 2.0 ** 63, 2.0 ** 64,
            -2.0 ** 63, -2.0 ** 31, 1e30, -1e30, math.inf, -math.inf, math.nan, 127.9, 128.0,
            -128.5, -129.0, 255.5, 256.0, 65535.9, 65536.0, -32768.9, -32769.0]
    for edge in (float(info.max), float(info.min)):
        for d in (-2.0, -1.0, -0.5, 0.0, 0.5, 1.0, 2.0):
            vals.append(edge + d)
        vals += [float(np.nextafter(ftype(edge), ftype(np.inf))),
                 float(np.nextafter(ftype(edge), ftype(-np.inf)))]
    with np.errstate(over="ignore"):
        arr = np.array(vals * 3, ftype)  # 3 copies: the vector body runs each
    return arr


@pytest.mark.parametrize("kind", INT_KINDS)
@pytest.mark.parametrize("ftype", [np.float64, np.float32])
def test_conversion_saturates_in_vector_loops(kind, ftype, target):
    fname = np.dtype(ftype).name
    f = numbavec.vectorize([f"{kind}({fname})"], target=target)(
        kernel_from_source(f"import numpy as np\ndef conv(x):\n    return np.{kind}(x)\n", "conv"))
    x = edge_values(kind, ftype)
    want = np.array([saturated(float(v), kind) for v in x], dtype=kind)
    assert np.array_equal(f(x), want)


FLOOR_CEIL = """
import math
def bin_of(x, width):
    if x >= 0:
        k = int(math.floor(x / width))
    else:
        k = int(math.ceil(x / width))
    return k
"""


def test_floor_and_ceil_to_int_on_a_branch(target):
    f = numbavec.vectorize(["int64(float64, float64)"], target=target)(
        kernel_from_source(FLOOR_CEIL, "bin_of"))
    x = np.random.default_rng(3).uniform(-1e4, 1e4, 5000)
    x[::97] = 0.0
    x[1::89] = -0.0
    for width in (0.37, 3.0, np.full(x.shape, 1e-3)):
        w = np.broadcast_to(width, x.shape)
        assert np.array_equal(f(x, width), [f.py_func(a, b) for a, b in zip(x, w)])


@pytest.mark.parametrize("kind", ["int64", "int32", "uint64", "uint8"])
def test_host_conversion_is_not_a_saturating_intrinsic(kind):
    """The regression: the optimised loop held llvm.fptosi.sat, which the x86
    back end expands with a branch per vector lane."""
    f = numbavec.vectorize([f"{kind}(float64)"])(
        kernel_from_source(f"import numpy as np\ndef conv(x):\n    return np.{kind}(x)\n", "conv"))
    ir = f.inspect_llvm(f"{kind}(float64)")
    assert "fptosi.sat" not in ir and "fptoui.sat" not in ir
