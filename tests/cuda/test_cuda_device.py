"""What only a GPU can show: arrays shared with CuPy, PyTorch and numba-cuda
without a copy (checked by pointer equality), their streams taken as
stream=, the failure paths of a real device (too large an allocation, a
freed or foreign pointer) and that many calls leave device memory and host
RSS flat.  Every test skips without a GPU; the host-side parts of these
paths are tested in test_cuda_interop.py and test_cuda_runtime.py."""

import os

import numpy as np
import pytest

from numbavec import cuda, vectorize

from conftest import needs_gpu

pytestmark = needs_gpu


def add(a, b):
    return a + b


@pytest.fixture(scope="module")
def fadd():
    return vectorize(["float32(float32, float32)", "float64(float64, float64)"],
                     target="cuda")(add)


def cupy_or_skip():
    return pytest.importorskip("cupy")


def torch_or_skip():
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available():
        pytest.skip("PyTorch without CUDA")
    return torch


class DLPackOnly:
    """Hides an array's __cuda_array_interface__: as_cuda_array must take
    the DLPack path."""

    def __init__(self, arr):
        self.arr = arr

    def __dlpack__(self, **kwargs):
        return self.arr.__dlpack__(**kwargs)

    def __dlpack_device__(self):
        return self.arr.__dlpack_device__()


class CAI:
    def __init__(self, interface):
        self.__cuda_array_interface__ = interface


def record(name, value):
    """GPU figures for the closing note: appended to $NUMBAVEC_GPU_FIGURES."""
    path = os.environ.get("NUMBAVEC_GPU_FIGURES")
    if path:
        with open(path, "a") as fh:
            fh.write(f"{name}: {value}\n")


# ---- other libraries' arrays in, ours out: no copies ------------------------

@pytest.mark.parametrize("path", ["cai", "dlpack"])
def test_cupy_arrays_come_in_without_a_copy(fadd, path):
    cp = cupy_or_skip()
    x = cp.arange(1000, dtype=cp.float32)
    d = cuda.as_cuda_array(x if path == "cai" else DLPackOnly(x))
    assert d.device_pointer == x.data.ptr
    assert d.shape == (1000,) and d.dtype == np.float32
    out = cp.empty_like(x)
    assert fadd(d, d, out=out) is out
    np.testing.assert_array_equal(out.get(), 2 * np.arange(1000, dtype=np.float32))
    # a strided view: same memory, its strides kept
    v = cuda.as_cuda_array(x[::3] if path == "cai" else DLPackOnly(x[::3]))
    assert v.device_pointer == x.data.ptr and v.strides == (12,)


@pytest.mark.parametrize("path", ["cai", "dlpack"])
def test_torch_tensors_come_in_without_a_copy(fadd, path):
    torch = torch_or_skip()
    t = torch.arange(24, dtype=torch.float64, device="cuda").reshape(4, 6)
    d = cuda.as_cuda_array(t if path == "cai" else DLPackOnly(t))
    assert d.device_pointer == t.data_ptr() and d.shape == (4, 6)
    r = fadd(d, d)
    np.testing.assert_array_equal(r.copy_to_host(), 2 * np.arange(24.0).reshape(4, 6))
    col = t[:, 2]
    c = cuda.as_cuda_array(col if path == "cai" else DLPackOnly(col))
    assert c.device_pointer == col.data_ptr() and c.strides == (48,)
    np.testing.assert_array_equal(c.copy_to_host(), np.arange(24.0).reshape(4, 6)[:, 2])


def test_our_arrays_go_out_without_a_copy():
    host = np.arange(12, dtype=np.float32).reshape(3, 4)
    d = cuda.to_device(host)
    cp = pytest.importorskip("cupy")
    c = cp.asarray(d)
    assert c.data.ptr == d.device_pointer
    np.testing.assert_array_equal(c.get(), host)
    torch = torch_or_skip()
    t = torch.from_dlpack(d)
    assert t.data_ptr() == d.device_pointer and tuple(t.shape) == (3, 4)
    np.testing.assert_array_equal(t.cpu().numpy(), host)
    # a write through the other library is seen by ours: the same memory
    t += 1
    torch.cuda.synchronize()
    np.testing.assert_array_equal(d.copy_to_host(), host + 1)


def test_our_arrays_go_to_numba_cuda_without_a_copy():
    if not hasattr(np, "row_stack"):      # numba-cuda 0.30 still names it; NumPy 2.5 removed it
        np.row_stack = np.vstack
    numba_cuda = pytest.importorskip("numba.cuda")
    if not numba_cuda.is_available():
        pytest.skip("numba-cuda sees no GPU")
    d = cuda.to_device(np.arange(10.0))
    n = numba_cuda.as_cuda_array(d)
    assert n.device_ctypes_pointer.value == d.device_pointer
    np.testing.assert_array_equal(n.copy_to_host(), np.arange(10.0))


# ---- other libraries' streams -------------------------------------------------

def check_on_stream(fadd, stream, sync):
    x = cuda.to_device(np.arange(1 << 20, dtype=np.float32))
    out = cuda.device_array(1 << 20, np.float32)
    assert fadd(x, x, out=out, stream=stream) is out
    sync()
    np.testing.assert_array_equal(out.copy_to_host(), 2 * np.arange(1 << 20, dtype=np.float32))
    r = fadd(np.ones(5, np.float32), np.ones(5, np.float32), stream=stream)
    np.testing.assert_array_equal(r, 2)


def test_cupy_streams_are_taken(fadd):
    cp = cupy_or_skip()
    s = cp.cuda.Stream(non_blocking=True)
    check_on_stream(fadd, s, s.synchronize)
    e = cp.cuda.ExternalStream(s.ptr)
    check_on_stream(fadd, e, s.synchronize)


def test_torch_streams_are_taken(fadd):
    torch = torch_or_skip()
    s = torch.cuda.Stream()
    check_on_stream(fadd, s, s.synchronize)
    check_on_stream(fadd, torch.cuda.current_stream(), torch.cuda.synchronize)


# ---- failure paths on the device ---------------------------------------------

def test_more_than_the_card_holds_is_memory_error_and_the_process_goes_on(fadd):
    free, total = cuda.mem_info()
    with pytest.raises(MemoryError):
        cuda.device_array(total + (1 << 30), np.uint8)
    # a call whose result is larger than the card: (200000, 1) + (1, 200000) float64
    col, row = cuda.device_array((200_000, 1)), cuda.device_array((1, 200_000))
    with pytest.raises(MemoryError):
        fadd(col, row)
    a = np.arange(1000, dtype=np.float32)
    np.testing.assert_array_equal(fadd(a, a), 2 * a)


def test_freed_memory_is_a_cuda_error_not_a_kernel_fault(fadd):
    cp = cupy_or_skip()
    x = cp.arange(1 << 20, dtype=cp.float32)
    interface = dict(x.__cuda_array_interface__)
    del x
    cp.get_default_memory_pool().free_all_blocks()
    with pytest.raises(cuda.CudaError, match=r"CUDA_ERROR_\w+.*cuPointerGetAttribute"):
        fadd(CAI(interface), 1.0)
    fsum = vectorize(["float32(float32, float32)"], target="cuda", identity=0)(add)
    with pytest.raises(cuda.CudaError, match="CUDA_ERROR_"):
        fsum.reduce(CAI(interface))
    # nothing launched on it, so the context is not poisoned
    a = cuda.to_device(np.arange(10, dtype=np.float32))
    np.testing.assert_array_equal(fadd(a, a).copy_to_host(), 2 * np.arange(10))


def test_a_host_pointer_passed_as_device_memory_is_a_cuda_error(fadd):
    host = np.arange(100, dtype=np.float32)
    interface = {"shape": (100,), "typestr": "<f4", "data": (host.ctypes.data, False),
                 "version": 3}
    with pytest.raises(cuda.CudaError, match="cuPointerGetAttribute"):
        fadd(CAI(interface), CAI(interface))
    a = cuda.to_device(host)
    np.testing.assert_array_equal(fadd(a, a).copy_to_host(), 2 * host)


def test_an_array_running_past_its_allocation_is_refused(fadd):
    cp = cupy_or_skip()
    x = cp.zeros(1 << 20, dtype=cp.float32)
    interface = dict(x.__cuda_array_interface__, shape=(1 << 22,))
    with pytest.raises(ValueError, match="past the end of its allocation"):
        fadd(CAI(interface), 1.0)
    fine = dict(x.__cuda_array_interface__)
    np.testing.assert_array_equal(fadd(CAI(fine), 1.0).copy_to_host(), 1)


# ---- many calls leave memory flat ----------------------------------------------

def rss_bytes():
    with open("/proc/self/statm") as fh:
        return int(fh.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


@pytest.mark.parametrize("where", ["host", "device"])
def test_ten_thousand_calls_leave_memory_flat(fadd, where):
    a = np.arange(1000, dtype=np.float32)
    if where == "device":
        a = cuda.to_device(a)

    def calls(n):
        for _ in range(n):
            r = fadd(a, a)
        cuda.synchronize()
        return r

    calls(1000)                 # warm: loaded module, pools, staging buffers
    free0, _ = cuda.mem_info()
    rss0 = rss_bytes()
    r = calls(10_000)
    free1, _ = cuda.mem_info()
    rss1 = rss_bytes()
    host = r.copy_to_host() if where == "device" else r
    np.testing.assert_array_equal(host, 2 * np.arange(1000, dtype=np.float32))
    record(f"10,000 calls on {where} arrays: device memory moved",
           f"{(free0 - free1) / 2**20:+.2f} MiB; host RSS moved {(rss1 - rss0) / 2**20:+.2f} MiB")
    assert abs(free0 - free1) < 16 << 20
    assert abs(rss1 - rss0) < 16 << 20
