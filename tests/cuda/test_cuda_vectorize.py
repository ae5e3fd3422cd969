"""The cuda target of @vectorize: host-side logic on every machine (type
resolution against NumPy, broadcast plans, launch sizes, PTX through ptxas)
and, where a GPU is present, the calls themselves against NumPy."""

import numpy as np
import pytest

from numbavec import cuda, float32, vectorize
from numbavec import _core
from numbavec._capture import Origin
from numbavec._source import KernelSource

from conftest import assemble, needs_gpu, needs_ptxas
from examples import SQRT_2PI, gaussian_pdf, polar_distance, saxpy, vmult


SIGS = ["float64(float64, float64)", "float32(float32, float32)", "int64(int64, int64)",
        "int32(int32, int32)", "uint8(uint8, uint8)", "complex64(complex64, complex64)"]


def add(a, b):
    return a + b


# gaussian_pdf, polar_distance, vmult: tests/support/examples.py (EXAMPLES.md as written)


EXAMPLES = [
    (saxpy, ["float32(float32, float32, float32)"]),
    (gaussian_pdf, ["float32(float32, float32, float32)"]),
    (polar_distance, ["float32(float32, float32, float32, float32)"]),
    (add, ["float32(float32, float32)"]),
    (vmult, ["complex64(complex64, complex64)"]),
]


def cu(pyfunc, sigs, arch="sm_90", identity=None):
    src = KernelSource(pyfunc)
    # the Origin the decorators give: what the kernel compiles from (its
    # device functions among it)
    origin = Origin("vectorize", (sigs,), {}, pyfunc, src)
    return _core.vectorize(pyfunc, src.funcdef, src.location, sigs, target="cuda",
                           identity=identity, name=pyfunc.__name__, doc=pyfunc.__doc__, arch=arch,
                           origin=origin)


# ---- on every machine ----

@pytest.mark.parametrize("alias", ["cuda", "gpu"])
@pytest.mark.slow
def test_attributes_without_gpu(alias):
    f = vectorize(SIGS, target=alias, identity=0)(add)
    cpu = vectorize(SIGS, identity=0)(add)
    assert (f.nin, f.nout, f.nargs, f.ntypes) == (2, 1, 3, len(SIGS))
    assert f.types == cpu.types
    assert f.identity == cpu.identity == 0
    assert f.__name__ == "add" and f.py_func is add
    assert "nv_add_0_c32" in f.inspect_ptx("float64(float64, float64)")
    assert "define" in f.inspect_llvm("float32(float32, float32)")
    typed = vectorize([float32(float32, float32, float32)], target=alias)(saxpy)  # EXAMPLES 1
    assert typed.types == ["fff->f"]


@pytest.fixture(scope="module")
def pair():
    return vectorize(SIGS, target="cuda")(add), vectorize(SIGS)(add)


VALUES = [np.float64(1), np.float32(1), np.int64(1), np.int32(1), np.uint8(1), np.int8(1),
          np.uint16(1), np.complex64(1), np.bool_(True), 1, 1.0, 1j, 300, -1]


@pytest.mark.parametrize("a", VALUES, ids=repr)
@pytest.mark.parametrize("b", [np.ones(3, "f4"), np.ones(3, "i4"), np.ones(3, "u1"),
                               np.ones(3, "i8"), np.ones(3, "c8"), np.ones(3, "f8")],
                         ids=lambda x: str(x.dtype))
def test_resolution_matches_numpy(a, b, pair):
    f, cpu = pair
    try:
        want = cpu(a, b).dtype
    except TypeError:
        with pytest.raises(TypeError):
            f._resolve(a, b)
        return
    except OverflowError:
        # the scalar's conversion at call time raises it, after resolution
        f._resolve(a, b)
        return
    got = f._resolve(a, b)
    assert np.dtype(got[-1]) == want
    assert got in cpu.types


def test_plan_contiguous_and_scalar():
    f = vectorize(["float32(float32, float32, float32)"], target="cuda")(saxpy)
    x = np.ones(1000, "f4")
    p = f._plan(np.float32(2), x, x, sm_count=132, block=256)
    assert p["kernel"] == "c32" and p["n"] == 1000
    assert p["strides"] == ((0,), (4,), (4,), (4,))
    assert (p["block"], p["grid"]) == (256, 4)


@pytest.mark.parametrize("n, block", [(1, 32), (32, 32), (33, 64), (200, 224), (256, 256),
                                      (10**5, 256)])
def test_plan_small_calls_launch_whole_warps_only(n, block):
    f = vectorize(["float32(float32, float32, float32)"], target="cuda")(saxpy)
    x = np.ones(n, "f4")
    p = f._plan(np.float32(2), x, x, sm_count=132, block=256)
    assert (p["block"], p["grid"]) == (block, -(-n // block))


def test_plan_grid_capped():
    f = vectorize(["float32(float32, float32, float32)"], target="cuda")(saxpy)
    x = np.ones(10**7, "f4")
    p = f._plan(1.0, x, x, sm_count=132, block=256)
    assert p["grid"] == 32 * 132


def test_plan_broadcast_zero_strides():
    f = vectorize(["float32(float32, float32, float32)"], target="cuda")(saxpy)
    p = f._plan(np.ones((4, 1), "f4"), np.ones(5, "f4"), 2.0, sm_count=2, block=8)
    assert p["kernel"] == "s32" and p["shape"] == (4, 5)
    assert p["strides"][0] == (4, 0) and p["strides"][1] == (0, 4) and p["strides"][2] == (0, 0)
    assert p["strides"][3] == (20, 4)


def test_plan_device_strided_and_64bit():
    f = vectorize(["float32(float32, float32)"], target="cuda")(add)
    a = _core._cuda_test_array(0x1000, (3, 4), "float32", strides=(40, 8))
    p = f._plan(a, 1.0)
    assert p["kernel"] == "s32" and p["strides"][0] == (40, 8)
    merged = _core._cuda_test_array(0x1000, (3, 4), "float32", strides=(32, 8))
    assert f._plan(merged, 1.0)["strides"][0] == (8,)
    big = _core._cuda_test_array(0x1000, (2**31 + 10,), "float32")
    assert f._plan(big, 1.0)["kernel"] == "c64"
    neg = _core._cuda_test_array(0x1000, (10,), "float32", strides=(-4,))
    assert f._plan(neg, 1.0)["kernel"] == "s32"


def test_errors_before_launch():
    f = vectorize(["float32(float32, float32)"], target="cuda")(add)
    with pytest.raises(ValueError):
        f._plan(np.ones(3, "f4"), np.ones(4, "f4"))
    with pytest.raises(TypeError):
        f._plan(np.ones(3, "c16"), np.ones(3, "f4"))
    with pytest.raises(ValueError):
        f._plan(np.ones(3, "f4"), np.ones(3, "f4"), out=np.ones(4, "f4"))
    with pytest.raises(TypeError):
        f._plan(np.ones(3, "f4"), np.ones(3, "f4"), out=np.ones(3, "i4"))


def test_reduce_plan():
    f = vectorize(["float32(float32, float32)"], target="cuda", identity=0)(add)
    one = f._reduce_plan(np.ones((30, 40), "f4"), axis=1)
    assert len(one) == 1 and one[0]["m"] == 30 and one[0]["ktotal"] == 40
    two = f._reduce_plan(np.ones(10**6, "f4"), axis=None, sm_count=132, block=256)
    assert len(two) == 2 and two[1]["ktotal"] == two[0]["nchunks"]
    assert two[0]["kchunk"] * two[0]["nchunks"] >= 10**6
    with pytest.raises(ValueError):
        vectorize(["float32(float32, float32)"], target="cuda")(add).reduce(np.ones(3, "f4"))


@needs_ptxas
@pytest.mark.parametrize("arch", ["sm_90", "sm_80"])
@pytest.mark.parametrize("pyfunc,sigs", EXAMPLES, ids=lambda v: getattr(v, "__name__", ""))
@pytest.mark.slow
def test_example_ptx_assembles(tmp_path, pyfunc, sigs, arch):
    f = cu(pyfunc, sigs, arch=arch, identity=0 if pyfunc in (add, vmult) else None)
    ptxs = [f.inspect_ptx()]
    if pyfunc in (add, vmult):
        ptxs.append(f.inspect_ptx(None, True))
    for i, ptx in enumerate(ptxs):
        for v in ("_c32", "_c64", "_s32", "_s64") if i == 0 else ("_r",):
            assert f".entry nv_{pyfunc.__name__}_0{v}" in ptx
        assemble(ptx, arch, tmp_path)


def test_plan_stages_large_host_calls():
    f = vectorize(["float32(float32, float32, float32)"], target="cuda")(saxpy)
    x = np.ones(10**7, "f4")
    # 8 MiB of the widest operand per chunk, a multiple of 256 elements
    assert f._plan(np.float32(2), x, x)["staged"] == 2 * 2**20
    assert f._plan(2.0, x, x, out=np.empty_like(x))["staged"] == 2 * 2**20
    assert f._plan(2.0, x.astype("i2"), x[::-1])["staged"] == 2 * 2**20  # converted first
    assert f._plan(2.0, x[:1000], x[:1000])["staged"] == 0                # one chunk
    assert f._plan(2.0, x.reshape(10, -1), x[:10**6])["staged"] == 0     # broadcast
    dev = _core._cuda_test_array(0x1000, (10**7,), "float32")
    assert f._plan(2.0, x, dev)["staged"] == 0                            # device call
    was = _core._cuda_staging(False)
    try:
        assert f._plan(2.0, x, x)["staged"] == 0
    finally:
        _core._cuda_staging(was)
    assert _core._cuda_staging() is was
    wide = vectorize(["complex128(complex128, float32)"], target="cuda")(add)
    assert wide._plan(x.astype("c16"), x)["staged"] == 2**19              # 8 MiB of complex128


def _dev(ptr, n, dtype="float32", step=None):
    itemsize = np.dtype(dtype).itemsize
    return _core._cuda_test_array(ptr, (n,), dtype, strides=(step or itemsize,))


@pytest.mark.parametrize("out,inputs,where", [
    (_dev(0x1000, 10), (_dev(0x1000, 10), 1.0), "direct"),            # out= an input
    (_dev(0x1000, 10), (_dev(0x9000, 10), _dev(0x1000, 10)), "direct"),
    (_dev(0x1004, 10), (_dev(0x1000, 10), 1.0), "temporary"),         # shifted by one
    (_dev(0x1000 + 36, 10, step=-4), (_dev(0x1000, 10), 1.0), "temporary"),  # reversed
    (_dev(0x1000, 10), (_dev(0x1000, 1), _dev(0x9000, 10)), "temporary"),    # broadcast
    (_dev(0x1000, 10, "float64"), (_dev(0x9000, 10), 1.0), "temporary"),     # other dtype
    (_dev(0x1000, 10), (_dev(0x1000, 10, "int16"), np.float32(1)), "direct"),  # cast first
    (_dev(0x1000, 0), (_dev(0x1000, 1), 1.0), "direct"),               # nothing written
], ids=["same", "disjoint", "shifted", "reversed", "broadcast", "dtype", "cast-input", "empty"])
def test_device_out_overlap(out, inputs, where):
    f = vectorize(["float32(float32, float32)"], target="cuda")(add)
    assert f._plan(*inputs, out=out)["out"] == where


def test_every_numpy_name_of_a_type_is_that_type():
    """int64 is NPY_LONG and NPY_LONGLONG: neither needs a cast (a cast to
    itself would never end), and out= of either is written directly."""
    f = vectorize(["int64(int64, int64)"], target="cuda")(add)
    for code in "lq":
        d = _dev(0x1000, 10, np.dtype(code))
        assert f._plan(d, d, out=d)["out"] == "direct"
    swapped = _core._cuda_test_array(0x1000, (3,), np.dtype(">i8"))
    with pytest.raises(TypeError, match="no cast"):
        f._plan(swapped, 1)


@pytest.mark.parametrize("arch", ["sm_90", "compute_80", "90", "sm_90a"])
def test_arch_spellings(arch):
    src = KernelSource(add)
    f = _core.vectorize(add, src.funcdef, src.location, [], target="cuda", name="add", nin=2, arch=arch)
    assert f.ntypes == 0


def test_bad_arch_fails_at_decoration():
    src = KernelSource(add)
    with pytest.raises(ValueError, match="arch"):
        _core.vectorize(add, src.funcdef, src.location, [], target="cuda", name="add", nin=2, arch="volta")


def test_device_casts_checked_before_launch():
    f = vectorize(["float32(float32, float32)"], target="cuda")(add)
    plan = f._plan(_dev(0x1000, 10, "int16"), np.float32(1))
    assert plan["signature"] == "float32(float32, float32)"
    with pytest.raises(TypeError, match="no cast"):
        f._plan(_dev(0x1000, 10, "float16"), 1.0)       # safe for NumPy, not one of our types
    with pytest.raises(TypeError, match="same_kind"):
        f._plan(np.float32(1), np.float32(1), out=_dev(0x1000, 1, "int32"))
    readonly = _core._cuda_test_array(0x1000, (3,), "float32", readonly=True)
    with pytest.raises(ValueError, match="read-only"):
        f._plan(np.ones(3, "f4"), np.float32(1), out=readonly)
    frozen = np.ones(3, "f4")
    frozen.setflags(write=False)
    with pytest.raises(ValueError, match="read-only"):
        f._plan(np.ones(3, "f4"), np.float32(1), out=frozen)


def test_eager_signatures_do_not_compile_new_loops():
    f = vectorize(["float32(float32, float32)"], target="cuda")(add)
    with pytest.raises(TypeError):
        f(np.ones(3, "c16"), np.ones(3, "f4"))
    assert f.ntypes == 1


SAME_KIND = [(s, d) for s in ("bool", "int8", "uint16", "int32", "int64", "uint64", "float32",
                              "float64", "complex64", "complex128")
             for d in ("bool", "int8", "uint8", "int16", "int32", "int64", "uint64", "float32",
                       "float64", "complex64", "complex128")
             if s != d and np.can_cast(s, d, "same_kind")]


@pytest.mark.parametrize("src,dst", SAME_KIND, ids=lambda v: v)
def test_cast_kernel_semantics_on_cpu(src, dst):
    """The device casts are the identity function compiled for dst(src): the
    same compiler, checked here on the cpu target against NumPy's astype."""
    g = vectorize([f"{dst}({src})"])(cuda._identity)
    edge = [0, 1, -1, 2, 127, 128, 255, 256, -129, 65535, 2**31, -2**31 - 1, 2**40, 1e10, -3.75,
            0.5, 1e-30, 3.4e38, 1e300, np.inf, -np.inf, np.nan]
    with np.errstate(all="ignore"):
        x = np.array([v for v in edge if np.isfinite(v) or np.dtype(src).kind in "fc"])
        x = (x * (1 + 1j) if np.dtype(src).kind == "c" else x).astype(src)
        want = x.astype(dst)
        got = g(x)
    np.testing.assert_array_equal(got, want)


@needs_ptxas
@pytest.mark.slow
def test_cast_kernels_assemble(tmp_path):
    pairs = [("int16", "float32"), ("float64", "float32"), ("complex128", "complex64"),
             ("int64", "uint8"), ("bool", "float64"), ("float32", "float32")]
    for src, dst in pairs:
        assemble(cuda._cast_ufunc(np.dtype(src), np.dtype(dst)).inspect_ptx(), "sm_90", tmp_path)
    assert cuda._cast_ufunc(np.dtype("f8"), np.dtype("f4")) is \
        cuda._cast_ufunc(np.dtype("f8"), np.dtype("f4"))


def test_call_without_gpu_is_a_support_error():
    if cuda.is_available():
        pytest.skip("a GPU is present")
    f = vectorize(["float32(float32, float32)"], target="cuda")(add)
    with pytest.raises(cuda.CudaSupportError):
        f(np.ones(3, "f4"), np.ones(3, "f4"))


# ---- on a GPU ----

@needs_gpu
def test_example_1_saxpy():
    @vectorize([float32(float32, float32, float32)], target='gpu')
    def vec_saxpy(a, x, y):
        return a * x + y

    x = np.arange(1_000_000, dtype='float32'); y = np.arange(1_000_000, dtype='float32')
    out = vec_saxpy(np.float32(2.0), x, y)
    np.testing.assert_allclose(out, 2 * x + y, rtol=1e-6)


@needs_gpu
def test_example_3_gaussian():
    f = vectorize(['float32(float32, float32, float32)'], target='cuda')(gaussian_pdf)
    x = np.random.uniform(-3, 3, size=1_000_000).astype(np.float32)
    got = f(x, 0.0, 1.0)
    np.testing.assert_allclose(got, np.exp(-0.5 * x * x) / SQRT_2PI, rtol=1e-5)


@needs_gpu
def test_example_4_polar():
    f = vectorize(['float32(float32, float32, float32, float32)'], target='cuda')(polar_distance)
    r = np.random.rand(4, 1000).astype(np.float32)
    got = f(*r)
    want = np.vectorize(polar_distance)(*r.astype(np.float64))
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-5)


@needs_gpu
def test_example_5_device_out():
    @vectorize(['float32(float32, float32)'], target='cuda')
    def add_ufunc(x, y):
        return x + y

    n = 100_000
    x = np.arange(n).astype(np.float32); y = 2 * x
    x_device = cuda.to_device(x); y_device = cuda.to_device(y)
    out_device = cuda.device_array(shape=(n,), dtype=np.float32)
    add_ufunc(x_device, y_device, out=out_device)
    out_host = out_device.copy_to_host()
    cuda.synchronize()
    np.testing.assert_array_equal(out_host, x + y)


@needs_gpu
def test_example_6_inplace_complex():
    f = vectorize(['complex64(complex64, complex64)'], target='gpu')(vmult)
    a = (np.random.rand(512) + 1j * np.random.rand(512)).astype(np.complex64)
    b = (np.random.rand(512) + 1j * np.random.rand(512)).astype(np.complex64)
    d_image, d_response = cuda.to_device(a), cuda.to_device(b)
    vmult_r = f(d_image, d_response, out=d_image)
    assert vmult_r is d_image
    np.testing.assert_allclose(d_image.copy_to_host(), a * b, rtol=1e-6)


@needs_gpu
@pytest.mark.parametrize("shape_a,shape_b", [((4, 1), (5,)), ((2, 3, 4), (3, 1)), ((7,), ())])
def test_broadcast_and_strided(shape_a, shape_b):
    f = vectorize(SIGS, target="cuda")(add)
    a = np.random.rand(*shape_a)
    b = np.random.rand(*shape_b) if shape_b else 2.5
    np.testing.assert_allclose(f(a, b), a + b)
    big = np.random.rand(6, 8)[::2, ::-3]
    np.testing.assert_allclose(f(big, 1.0), big + 1.0)
    d = cuda.to_device(np.random.rand(6, 8))[::2, 1::3]
    np.testing.assert_allclose(f(d, d).copy_to_host(), 2 * d.copy_to_host())


@needs_gpu
def test_scalars_and_out_host():
    f = vectorize(SIGS, target="cuda")(add)
    r = f(1.0, 2.0)
    assert r == 3.0 and np.isscalar(r)
    out = np.empty(3, "f8")
    assert f(np.ones(3, "f4"), np.ones(3, "f4"), out=out) is out
    np.testing.assert_array_equal(out, 2.0)


@needs_gpu
@pytest.mark.parametrize("axis", [0, 1, None])
def test_reduce(axis):
    f = vectorize(["float64(float64, float64)"], target="cuda", identity=0)(add)
    a = np.random.rand(300, 70)
    np.testing.assert_allclose(f.reduce(a, axis=axis), a.sum(axis=axis))
    d = cuda.to_device(a)
    np.testing.assert_allclose(f.reduce(d, axis=axis).copy_to_host(), a.sum(axis=axis))
    big = np.random.rand(3_000_000)
    np.testing.assert_allclose(f.reduce(big, axis=0), big.sum(), rtol=1e-9)


@needs_gpu
def test_lazy():
    f = vectorize(target="cuda")(add)
    np.testing.assert_array_equal(f(np.arange(4), np.arange(4)), np.arange(4) * 2)
    assert f.ntypes == 1


@needs_gpu
def test_eager_type_error_on_gpu():
    f = vectorize(["float32(float32, float32)"], target="cuda")(add)
    with pytest.raises(TypeError):
        f(cuda.to_device(np.ones(3, "c16")), np.ones(3, "f4"))
    assert f.ntypes == 1


@needs_gpu
@pytest.mark.parametrize("n", [5_000_000, 2 * 2**20 + 3])
def test_staged_host_calls(n):
    f = vectorize(["float32(float32, float32, float32)"], target="cuda")(saxpy)
    rng = np.random.default_rng(n)
    x, y = rng.random(n, "f4"), rng.random(n, "f4")
    a = np.float32(2)
    assert f._plan(a, x, y)["staged"] > 0
    want = a * x + y
    np.testing.assert_array_equal(f(a, x, y), want)
    out = np.empty(n, "f4")
    assert f(a, x, y, out=out) is out
    np.testing.assert_array_equal(out, want)
    out64 = np.empty(n, "f8")
    assert f(a, x, y, out=out64) is out64
    np.testing.assert_array_equal(out64, want.astype("f8"))
    inplace = y.copy()
    f(a, x, inplace, out=inplace)
    np.testing.assert_array_equal(inplace, want)
    shifted = y.copy()
    f(a, x[1:], shifted[:-1], out=shifted[1:])          # overlapping: through a temporary
    np.testing.assert_array_equal(shifted[1:], a * x[1:] + y[:-1])
    xi = (np.arange(2 * n) % 1000).astype("i2")[::2]   # converted and made contiguous first
    np.testing.assert_array_equal(f(a, xi, y[::-1]), a * xi.astype("f4") + y[::-1])
    was = _core._cuda_staging(False)
    try:
        np.testing.assert_array_equal(f(a, x, y), want)
    finally:
        _core._cuda_staging(was)


@needs_gpu
def test_device_casts_and_overlapping_out():
    f = vectorize(["float32(float32, float32)"], target="cuda")(add)
    a = np.arange(10, dtype="i2")
    r = f(cuda.to_device(a), np.float32(0.5))
    np.testing.assert_array_equal(r.copy_to_host(), a + np.float32(0.5))
    out = cuda.device_array(10, "f8")
    assert f(cuda.to_device(a.astype("f4")), np.float32(1), out=out) is out
    np.testing.assert_array_equal(out.copy_to_host(), a + 1.0)
    v = cuda.to_device(np.arange(10, dtype="f4"))
    f(v[:-1], np.float32(10), out=v[1:])
    np.testing.assert_array_equal(v.copy_to_host(), np.r_[0, np.arange(9) + 10].astype("f4"))
    back = cuda.to_device(np.arange(10, dtype="f4"))
    f(back[::-1], np.float32(0), out=back)
    np.testing.assert_array_equal(back.copy_to_host(), np.arange(10, dtype="f4")[::-1])


@needs_gpu
def test_foreign_out_is_returned_itself():
    cupy = pytest.importorskip("cupy")
    f = vectorize(["float32(float32, float32)"], target="cuda")(add)
    a = cupy.arange(5, dtype=cupy.float32)
    out = cupy.empty(5, cupy.float32)
    assert f(a, a, out=out) is out
    np.testing.assert_array_equal(out.get(), 2 * np.arange(5))


@needs_gpu
def test_ptx_for_a_newer_arch_is_compiled_again():
    if not cuda.toolkit_info()["libnvvm"]:
        pytest.skip("sm_100 PTX needs libNVVM")
    f = cu(add, ["float32(float32, float32)"], arch="sm_100")
    np.testing.assert_array_equal(f(np.ones(3, "f4"), np.ones(3, "f4")), 2)
