"""numbavec.cuda's runtime: what can be checked without a GPU (the driver-less
behaviour, error types, protocol structures and view arithmetic over a fake
pointer that is never dereferenced), then the device tests, which skip unless
numbavec.cuda.is_available().
"""
import gc

import numpy as np
import pytest

from numbavec import cuda
from numbavec import _core
from conftest import GPU, needs_gpu

fake = _core._cuda_test_array
BASE = 0x7F0000000000
no_gpu = pytest.mark.skipif(GPU, reason="checks the behaviour without a driver")


# ---- without a driver -------------------------------------------------------

@no_gpu
def test_is_available_false_with_reason():
    assert cuda.is_available() is False
    assert "libcuda.so.1" in cuda.unavailable_reason() or "device" in cuda.unavailable_reason()


@no_gpu
@pytest.mark.parametrize("call", [
    lambda: cuda.to_device(np.ones(3)),
    lambda: cuda.device_array(4),
    lambda: cuda.device_array_like(np.ones(2)),
    lambda: cuda.pinned_array(4),
    lambda: cuda.stream(),
    lambda: cuda.event(),
    lambda: cuda.synchronize(),
    lambda: cuda.mem_info(),
    lambda: _core._cuda_detect(),
    lambda: fake(BASE, (3,), np.float32).copy_to_host(),
    lambda: fake(BASE, (3,), np.float32).copy_to_device(np.ones(3, np.float32)),
    lambda: fake(BASE, (3,), np.float32)[1],          # a scalar needs a copy
], ids=["to_device", "device_array", "device_array_like", "pinned_array", "stream",
        "event", "synchronize", "mem_info", "detect", "copy_to_host", "copy_to_device",
        "scalar"])
def test_entry_points_raise_support_error(call):
    with pytest.raises(cuda.CudaSupportError, match="libcuda.so.1|device"):
        call()


@no_gpu
def test_detect_prints_and_returns_false(capsys):
    assert cuda.detect() is False
    out = capsys.readouterr().out
    assert "libNVVM" in out and "libdevice" in out and "CUDA driver" in out


def test_error_types():
    assert issubclass(cuda.CudaSupportError, RuntimeError)
    assert issubclass(cuda.CudaError, RuntimeError)
    with pytest.raises(MemoryError, match="CUDA_ERROR_OUT_OF_MEMORY"):
        _core._cuda_check_error(2)
    with pytest.raises(cuda.CudaError) as info:
        _core._cuda_check_error(1)
    assert info.value.name == "CUDA_ERROR_INVALID_VALUE"
    assert info.value.code == 1
    assert "invalid argument" in str(info.value)
    _core._cuda_check_error(0)


def test_toolkit_info_shape():
    tk = cuda.toolkit_info()
    assert set(tk) >= {"libnvvm", "libdevice", "nvvm_version", "nvvm_ir_version"}


def test_stream_argument_forms_need_no_driver():
    class S:
        def __cuda_stream__(self):
            return (0, 1234)

    class Bad:
        pass

    # stream= is converted before anything touches the driver: a bad one is
    # a TypeError on any machine
    a = fake(BASE, (3,), np.float32)
    with pytest.raises(TypeError, match="stream"):
        a.copy_to_host(stream=Bad())
    # CuPy's streams have no __cuda_stream__: their .ptr is taken, for CuPy's
    # types alone (found by module), not from any object with a .ptr
    CupyLike = type("Stream", (), {"__module__": "cupy.cuda.stream", "ptr": 1234})
    NotCupy = type("Stream", (), {"__module__": "cupyx_not", "ptr": 1234})
    BadPtr = type("Stream", (), {"__module__": "cupy.cuda.stream", "ptr": -1})
    with pytest.raises(TypeError, match="CuPy stream"):
        a.copy_to_host(stream=NotCupy())
    with pytest.raises(ValueError, match="stream handle"):
        a.copy_to_host(stream=BadPtr())
    if not GPU:
        with pytest.raises(cuda.CudaSupportError):
            a.copy_to_host(stream=S())
        with pytest.raises(cuda.CudaSupportError):
            a.copy_to_host(stream=5)
        with pytest.raises(cuda.CudaSupportError):
            a.copy_to_host(stream=CupyLike())


# ---- views over a fake pointer ----------------------------------------------

def test_attributes():
    a = fake(BASE, (4, 5), np.float32)
    assert a.shape == (4, 5) and a.strides == (20, 4) and a.ndim == 2
    assert a.size == 20 and a.nbytes == 80 and a.itemsize == 4 and len(a) == 4
    assert a.dtype == np.float32 and a.device_pointer == BASE
    assert a.is_c_contiguous() and not a.is_f_contiguous()
    assert "DeviceNDArray" in repr(a) and hex(BASE) in repr(a)
    with pytest.raises(TypeError):
        len(fake(BASE, (), np.float32))


@pytest.mark.parametrize("key", [
    (slice(1, None), slice(None, None, -2)),
    (slice(None, None, 2), 3),
    (Ellipsis, 1),
    (None, slice(2, 4), None),
    (slice(-1, None, -1),),
    (slice(10, 20),),
    (1, Ellipsis, None),
    (slice(3, 1, -1), slice(1, 5, 3)),
], ids=str)
def test_slicing_matches_numpy(key):
    host = np.zeros((4, 5), np.float32)
    base = host.__array_interface__["data"][0]
    a = fake(BASE, host.shape, host.dtype)
    v, h = a[key], host[key]
    assert v.shape == h.shape
    assert v.strides == h.strides
    if h.size:
        assert v.device_pointer - BASE == h.__array_interface__["data"][0] - base
    assert v.owner is None      # a view of a non-owning array shares its base


def test_slicing_three_d_and_errors():
    host = np.zeros((3, 4, 6), np.float64)
    a = fake(BASE, host.shape, host.dtype)
    v = a[::-1, 1:3, ::4]
    h = host[::-1, 1:3, ::4]
    assert v.shape == h.shape and v.strides == h.strides
    assert v.device_pointer - BASE == (h.__array_interface__["data"][0]
                                       - host.__array_interface__["data"][0])
    with pytest.raises(IndexError):
        a[3]
    with pytest.raises(IndexError):
        a[0, 0, 0, 0]
    with pytest.raises(IndexError):
        a[[0, 1]]
    with pytest.raises(IndexError):
        a[..., ...]


def test_contiguity():
    a = fake(BASE, (4, 5), np.float32)
    f = fake(BASE, (4, 5), np.float32, strides=(4, 16))
    assert f.is_f_contiguous() and not f.is_c_contiguous()
    assert a[:, :1].is_c_contiguous() is False
    assert a[1:3].is_c_contiguous()
    assert a[:, 1].is_c_contiguous() is False
    assert fake(BASE, (0, 5), np.float32).is_c_contiguous()


def test_reshape_and_ravel():
    a = fake(BASE, (4, 6), np.int16)
    r = a.reshape(3, 8)
    assert r.shape == (3, 8) and r.strides == (16, 2) and r.device_pointer == BASE
    assert a.reshape((2, -1, 3)).shape == (2, 4, 3)
    with pytest.raises(NotImplementedError):
        a.reshape(24, order="F")  # reading a C array in F order moves data
    assert a[1].reshape(6, order="F").shape == (6,)   # 1-d reads the same either way
    assert a.ravel().shape == (24,)
    f = fake(BASE, (4, 6), np.int16, strides=(2, 8))
    assert f.reshape(6, 4, order="F").strides == (2, 12)
    with pytest.raises(NotImplementedError):
        f.reshape(24)            # C order of an F array needs a copy
    with pytest.raises(NotImplementedError):
        a[:, ::2].ravel()
    with pytest.raises(ValueError):
        a.reshape(5, 5)
    with pytest.raises(ValueError):
        a.reshape(-1, -1)
    assert a[1:3].reshape(-1).device_pointer == BASE + 12


# ---- protocols --------------------------------------------------------------

def test_cuda_array_interface_v3():
    a = fake(BASE, (4, 5), np.float32)
    cai = a.__cuda_array_interface__
    assert cai == {"shape": (4, 5), "strides": None, "typestr": "<f4",
                   "data": (BASE, False), "version": 3, "stream": 1}
    v = a[1:, ::-2]
    cai = v.__cuda_array_interface__
    assert cai["strides"] == (20, -8)
    assert cai["data"] == (BASE + 20 + 16, False)
    ro = fake(BASE, (2,), np.complex128, readonly=True)
    assert ro.__cuda_array_interface__["data"] == (BASE, True)
    assert ro.__cuda_array_interface__["typestr"] == "<c16"
    assert fake(BASE, (0,), np.float32).__cuda_array_interface__["data"][0] == 0


def test_dlpack_export_structure():
    import ctypes

    a = fake(BASE, (4, 6), np.int32)[::2, 1::2]
    assert a.__dlpack_device__() == (2, 0)
    cap = a.__dlpack__()
    get = ctypes.pythonapi.PyCapsule_GetPointer
    get.restype = ctypes.c_void_p
    get.argtypes = [ctypes.py_object, ctypes.c_char_p]
    ptr = get(cap, b"dltensor")

    class DLTensor(ctypes.Structure):
        _fields_ = [("data", ctypes.c_void_p), ("device_type", ctypes.c_int32),
                    ("device_id", ctypes.c_int32), ("ndim", ctypes.c_int32),
                    ("code", ctypes.c_uint8), ("bits", ctypes.c_uint8),
                    ("lanes", ctypes.c_uint16), ("shape", ctypes.POINTER(ctypes.c_int64)),
                    ("strides", ctypes.POINTER(ctypes.c_int64)),
                    ("byte_offset", ctypes.c_uint64)]

    t = DLTensor.from_address(ptr)
    assert t.data == a.device_pointer and t.device_type == 2 and t.ndim == 2
    assert (t.code, t.bits, t.lanes) == (0, 32, 1)
    assert [t.shape[i] for i in range(2)] == [2, 3]
    assert [t.strides[i] for i in range(2)] == [12, 2]     # elements, not bytes
    del cap
    gc.collect()
    with pytest.raises(BufferError):
        a.__dlpack__(copy=True)
    with pytest.raises(BufferError):
        a.__dlpack__(dl_device=(1, 0))
    with pytest.raises(BufferError):
        fake(BASE, (3,), np.dtype("V3")).__dlpack__()


def test_dlpack_roundtrip_keeps_owner_alive():
    a = fake(BASE, (4, 6), np.float64)[1:, ::3]

    class Producer:
        def __init__(self, arr):
            self.arr = arr

        def __dlpack__(self, stream=None):
            assert stream == 1      # consumed on the legacy default stream
            return self.arr.__dlpack__(stream=stream)

        def __dlpack_device__(self):
            return self.arr.__dlpack_device__()

    b = cuda.as_cuda_array(Producer(a))
    assert b.shape == a.shape and b.strides == a.strides
    assert b.device_pointer == a.device_pointer and b.dtype == a.dtype
    import sys
    before = sys.getrefcount(a)
    del b
    gc.collect()
    assert sys.getrefcount(a) == before - 1   # the deleter released the export


def test_dlpack_rejects_host_arrays():
    with pytest.raises(TypeError, match="to_device"):
        cuda.as_cuda_array(np.ones(3))


def test_as_cuda_array_from_interface():
    class Foreign:
        __cuda_array_interface__ = {"shape": (3, 4), "typestr": "<u2",
                                    "data": (BASE + 64, True), "version": 3,
                                    "strides": (16, 2), "stream": None}

    obj = Foreign()
    a = cuda.as_cuda_array(obj)
    assert a.owner is obj
    assert a.shape == (3, 4) and a.strides == (16, 2) and a.dtype == np.uint16
    assert a.__cuda_array_interface__["data"] == (BASE + 64, True)
    v = a[1:, ::2]
    assert v.device_pointer == BASE + 64 + 16 and v.strides == (16, 4)
    assert v.owner is obj
    with pytest.raises(ValueError):
        v.copy_to_device(np.zeros((2, 2), np.uint16))     # read-only
    assert cuda.as_cuda_array(a) is a
    assert cuda.is_cuda_array(obj) and not cuda.is_cuda_array(np.ones(2))


def test_as_cuda_array_errors():
    class Masked:
        __cuda_array_interface__ = {"shape": (3,), "typestr": "<f4", "data": (BASE, False),
                                    "version": 3, "mask": object()}

    with pytest.raises(ValueError, match=r"\['mask'\]: must be None"):
        cuda.as_cuda_array(Masked())
    with pytest.raises(TypeError, match="neither"):
        cuda.as_cuda_array(object())


# ---- on a GPU ---------------------------------------------------------------

@needs_gpu
def test_detect_lists_devices(capsys):
    assert cuda.detect() is True
    info = _core._cuda_detect()
    assert info["devices"] and info["driver_version"] >= (11, 2)
    assert "sm_" in capsys.readouterr().out


@needs_gpu
@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int8, np.complex64, np.bool_])
def test_roundtrip(dtype):
    h = (np.arange(60) % 7).astype(dtype).reshape(3, 4, 5)
    d = cuda.to_device(h)
    assert d.shape == h.shape and d.dtype == h.dtype
    np.testing.assert_array_equal(d.copy_to_host(), h)
    out = np.empty_like(h)
    assert d.copy_to_host(out) is out
    np.testing.assert_array_equal(out, h)


@needs_gpu
@pytest.mark.parametrize("key", [
    (slice(None), slice(None, None, 2)),
    (slice(None, None, -1), slice(1, None, 3)),
    (1, slice(None, None, -2)),
    (slice(0, 3), 2),
    (Ellipsis, slice(2, None, 5)),
], ids=str)
def test_views_copy_only_their_elements(key):
    h = np.arange(6 * 10, dtype=np.float32).reshape(6, 10)
    d = cuda.to_device(h)
    v = d[key]
    np.testing.assert_array_equal(v.copy_to_host(), h[key])
    # into a strided host view: the gaps of the host array stay untouched
    big = np.full((h[key].ndim and 2 * h[key].shape[0] or 1,) + h[key].shape[1:], -1.0,
                  np.float32)
    target = big[::2] if h[key].ndim else big[0]
    if h[key].ndim:
        v.copy_to_host(target)
        np.testing.assert_array_equal(big[::2], h[key])
        assert (big[1::2] == -1).all()
    # writing into a view changes exactly those elements on the device
    v.copy_to_device(np.zeros(h[key].shape, np.float32))
    expect = h.copy()
    expect[key] = 0
    np.testing.assert_array_equal(d.copy_to_host(), expect)


@needs_gpu
def test_streams_events_pinned():
    s = cuda.stream()
    h = cuda.pinned_array((1 << 20,), np.float32)
    h[:] = 3
    e0, e1 = cuda.event(), cuda.event()
    e0.record(s)
    d = cuda.to_device(h, stream=s)
    out = d.copy_to_host(stream=s)
    e1.record(s)
    s.synchronize()
    e1.synchronize()
    assert e0.elapsed_time(e1) >= 0
    np.testing.assert_array_equal(out, h)
    cuda.synchronize()

    class Foreign:
        def __cuda_stream__(self):
            return (0, s.handle)

    d.copy_to_host(stream=Foreign())
    d.copy_to_host(stream=s.handle)
    assert d.__cuda_array_interface__["stream"] == s.handle


@needs_gpu
def test_device_array_like_and_fortran():
    h = np.asfortranarray(np.arange(12.0).reshape(3, 4))
    d = cuda.to_device(h)
    assert d.is_f_contiguous()
    np.testing.assert_array_equal(d.copy_to_host(), h)
    e = cuda.device_array_like(h)
    assert e.shape == h.shape and e.is_f_contiguous()
    z = cuda.device_array((2, 3), np.int32, order="F")
    assert z.strides == (4, 8)


@needs_gpu
def test_out_of_memory_is_memory_error_and_leaks_nothing():
    _, total = cuda.mem_info()
    # the first failure trims numbavec's pool of what earlier tests freed into it
    with pytest.raises(MemoryError):
        cuda.device_array(total * 4, np.uint8)
    cuda.synchronize()
    free0, _ = cuda.mem_info()
    for _ in range(5):
        with pytest.raises(MemoryError):
            cuda.device_array(total * 4, np.uint8)
    cuda.synchronize()
    free1, _ = cuda.mem_info()
    assert abs(free1 - free0) < 64 << 20


@needs_gpu
def test_repeated_allocations_do_not_leak():
    free0, _ = cuda.mem_info()
    for _ in range(200):
        d = cuda.device_array(1 << 20, np.float32)
        del d
    cuda.synchronize()
    free1, _ = cuda.mem_info()
    assert free0 - free1 < 64 << 20


@needs_gpu
def test_interop_cupy():
    cp = pytest.importorskip("cupy")
    x = cp.arange(10, dtype=cp.float32)
    d = cuda.as_cuda_array(x)
    np.testing.assert_array_equal(d.copy_to_host(), np.arange(10, dtype=np.float32))
    y = cp.asarray(cuda.to_device(np.ones(5)))
    assert float(y.sum()) == 5.0
    z = cp.from_dlpack(cuda.to_device(np.arange(4.0)))
    assert float(z.sum()) == 6.0


@needs_gpu
def test_interop_torch():
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available():
        pytest.skip("torch without CUDA")
    t = torch.arange(8, dtype=torch.float32, device="cuda")
    d = cuda.as_cuda_array(t)
    np.testing.assert_array_equal(d.copy_to_host(), np.arange(8, dtype=np.float32))
    u = torch.from_dlpack(cuda.to_device(np.arange(6.0).reshape(2, 3))[:, ::2])
    assert u.shape == (2, 2) and float(u.sum()) == 0 + 2 + 3 + 5


@needs_gpu
def test_compiled_kernel_runs():
    from numbavec import _core

    def saxpy_like(x, y):
        return 2 * x + y

    info = _core._cuda_detect()["devices"][0]
    arch = "sm_%d%d" % info["compute_capability"]
    ptx = cuda.compile_ptx(saxpy_like, "float32(float32, float32)", arch=arch)
    mod = _core._cuda_load_ptx(ptx)
    n = 100_000
    x = np.arange(n, dtype=np.float32)
    y = np.ones(n, np.float32)
    dx, dy, out = cuda.to_device(x), cuda.to_device(y), cuda.device_array(n, np.float32)
    # the cuda ufunc's contiguous entry with 64-bit indices: (x0, s0lo, s0hi,
    # x1, s1lo, s1hi, out, n) -- the scalar words unused for arrays
    _, block = mod.max_block_size("nv_saxpy_like_c64")
    mod.launch("nv_saxpy_like_c64", 64, block, dx, 0, 0, dy, 0, 0, out, n)
    np.testing.assert_array_equal(out.copy_to_host(), 2 * x + y)
