"""Hostile input to the cuda interop protocols, checked without a GPU.

as_cuda_array() (and a cuda ufunc given another library's device array)
reads __cuda_array_interface__ dicts and DLPack capsules that other code
made.  Every malformed one must be a TypeError or ValueError naming the bad
field, before any driver call; never a SystemError, another exception, or a
crash.  Table-driven cases first, then a seeded fuzz of mutated interfaces in
a child process (a segfault fails the test instead of killing pytest).  The
export side's arguments (__dlpack__, stream=) are checked at the end.
"""
import ctypes
import json
import textwrap

import numpy as np
import pytest

import numbavec
from numbavec import cuda
from numbavec import _core
from conftest import GPU, kernel_from_source, run_python

BASE = 0x7F0000000000
CAI = "__cuda_array_interface__"
GOOD = {"shape": (3, 4), "typestr": "<f4", "data": (BASE, False), "version": 3}


def exporting(interface):
    """An object whose __cuda_array_interface__ is interface."""
    class Foreign:
        pass

    obj = Foreign()
    obj.__cuda_array_interface__ = interface
    return obj


def with_(**changes):
    d = dict(GOOD, **changes)
    return {k: v for k, v in d.items() if v is not DROP}


DROP = object()


class RaisingIndex:
    def __index__(self):
        raise RuntimeError("index")


# (id, interface, exception, text the message must contain)
MALFORMED = [
    ("not-a-dict", [("shape", (3,))], TypeError, f"{CAI}: must be a dict, got a list"),
    ("none", None, TypeError, "must be a dict, got None"),
    ("tuple", tuple(GOOD.items()), TypeError, "must be a dict"),
    ("no-shape", with_(shape=DROP), ValueError, "'shape' is missing"),
    ("no-typestr", with_(typestr=DROP), ValueError, "'typestr' is missing"),
    ("no-data", with_(data=DROP), ValueError, "'data' is missing"),
    ("no-version", with_(version=DROP), ValueError, "'version' is missing"),
    ("shape-list", with_(shape=[3, 4]), TypeError, "['shape']: must be a tuple of ints, got a list"),
    ("shape-int", with_(shape=3), TypeError, "['shape']: must be a tuple"),
    ("shape-str", with_(shape="34"), TypeError, "['shape']: must be a tuple"),
    ("shape-none", with_(shape=None), TypeError, "['shape']: must be a tuple"),
    ("shape-negative", with_(shape=(3, -4)), ValueError, "['shape'][1]: must be at least 0"),
    ("shape-float", with_(shape=(3.0, 4)), TypeError, "['shape'][0]: must be an int, got a float"),
    ("shape-bool", with_(shape=(True, 4)), TypeError, "['shape'][0]: must be an int, got a bool"),
    ("shape-nested", with_(shape=((3,), 4)), TypeError, "['shape'][0]: must be an int"),
    ("shape-np-float", with_(shape=(np.float64(3), 4)), TypeError, "['shape'][0]"),
    ("shape-index-raises", with_(shape=(RaisingIndex(), 4)), TypeError, "['shape'][0]"),
    ("shape-2**63", with_(shape=(2**63, 1)), ValueError, "['shape'][0]: is out of range"),
    ("shape-overflow", with_(shape=(2**62, 2**62)), ValueError, "size of the shape overflows"),
    ("bytes-overflow", with_(shape=(2**61, 2)), ValueError, "elements of 4 bytes overflow"),
    ("shape-65-dims", with_(shape=(1,) * 65), ValueError, "at most"),
    ("typestr-int", with_(typestr=5), TypeError, "['typestr']: must be a str"),
    ("typestr-bytes", with_(typestr=b"<f4"), TypeError, "['typestr']: must be a str"),
    ("typestr-dtype", with_(typestr=np.dtype("f4")), TypeError, "['typestr']: must be a str"),
    ("typestr-object", with_(typestr="|O8"), ValueError, "'|O8' is not a bool, integer"),
    ("typestr-unicode", with_(typestr="<U4"), ValueError, "['typestr']"),
    ("typestr-void", with_(typestr="|V8"), ValueError, "['typestr']"),
    ("typestr-datetime", with_(typestr="<M8"), ValueError, "['typestr']"),
    ("typestr-f3", with_(typestr="<f3"), ValueError, "['typestr']"),
    ("typestr-no-order", with_(typestr="f4"), ValueError, "['typestr']"),
    ("typestr-empty", with_(typestr=""), ValueError, "['typestr']"),
    ("typestr-trailing", with_(typestr="<f4x"), ValueError, "['typestr']"),
    ("typestr-surrogate", with_(typestr="<f\udcff"), ValueError, "['typestr']"),
    ("typestr-big-endian", with_(typestr=">f4"), ValueError, "not in the native byte order"),
    ("typestr-long-double", with_(typestr="<f16"), ValueError, "['typestr']"),
    ("data-list", with_(data=[BASE, False]), TypeError, "['data']: must be a (pointer, read-only)"),
    ("data-int", with_(data=BASE), TypeError, "['data']: must be a (pointer"),
    ("data-none", with_(data=None), TypeError, "['data']: must be a (pointer"),
    ("data-1", with_(data=(BASE,)), ValueError, "['data']: must have 2 entries, got 1"),
    ("data-3", with_(data=(BASE, False, 0)), ValueError, "['data']: must have 2 entries, got 3"),
    ("ptr-str", with_(data=("0x7f", False)), TypeError, "['data'][0]: must be an int, got a str"),
    ("ptr-float", with_(data=(1.0 * BASE, False)), TypeError, "['data'][0]: must be an int"),
    ("ptr-none", with_(data=(None, False)), TypeError, "['data'][0]: must be an int, got None"),
    ("ptr-negative", with_(data=(-BASE, False)), ValueError, "['data'][0]: must be in 0 .. 2**64"),
    ("ptr-2**64", with_(data=(2**64, False)), ValueError, "['data'][0]: must be in 0 .. 2**64"),
    ("ptr-null", with_(data=(0, False)), ValueError, "data pointer is NULL for 12 elements"),
    ("ptr-misaligned", with_(data=(BASE + 2, False)), ValueError, "not 4-byte aligned"),
    ("ptr-near-top", with_(data=(2**64 - 16, False)), ValueError, "outside the address space"),
    ("readonly-str", with_(data=(BASE, "no")), TypeError, "['data'][1]: must be a bool, got a str"),
    ("readonly-none", with_(data=(BASE, None)), TypeError, "['data'][1]: must be a bool"),
    ("readonly-int", with_(data=(BASE, 0)), TypeError, "['data'][1]: must be a bool"),
    ("version-str", with_(version="3"), TypeError, "['version']: must be an int, got a str"),
    ("version-float", with_(version=3.0), TypeError, "['version']: must be an int"),
    ("version-bool", with_(version=True), TypeError, "['version']: must be an int, got a bool"),
    ("version-none", with_(version=None), TypeError, "['version']: must be an int"),
    ("version-4", with_(version=4), ValueError, "['version']: must be 0 to 3, got 4"),
    ("version-negative", with_(version=-1), ValueError, "['version']: must be at least 0"),
    ("version-huge", with_(version=2**70), ValueError, "['version']: is out of range"),
    ("strides-list", with_(strides=[16, 4]), TypeError, "['strides']: must be a tuple"),
    ("strides-int", with_(strides=4), TypeError, "['strides']: must be a tuple"),
    ("strides-short", with_(strides=(16,)), ValueError, "['strides']: has 1 entries for 2"),
    ("strides-long", with_(strides=(16, 4, 4)), ValueError, "['strides']: has 3 entries for 2"),
    ("strides-float", with_(strides=(16.0, 4)), TypeError, "['strides'][0]: must be an int"),
    ("strides-str", with_(strides=(16, "4")), TypeError, "['strides'][1]: must be an int"),
    ("strides-huge", with_(strides=(2**63, 4)), ValueError, "['strides'][0]: is out of range"),
    ("strides-overflow", with_(strides=(2**62, 4)), ValueError, "reach of the strides overflows"),
    ("strides-misaligned", with_(strides=(16, 2)), ValueError, "stride 2 is not a multiple"),
    ("strides-below-0", with_(data=(64, False), strides=(-48, 4)), ValueError,
     "outside the address space"),
    ("mask-object", with_(mask=object()), ValueError, "['mask']: must be None"),
    ("mask-false", with_(mask=False), ValueError, "['mask']: must be None"),
    ("stream-str", with_(stream="1"), TypeError, "['stream']: must be an int, got a str"),
    ("stream-float", with_(stream=1.0), TypeError, "['stream']: must be an int"),
    ("stream-bool", with_(stream=True), TypeError, "['stream']: must be an int, got a bool"),
    ("stream-0", with_(stream=0), ValueError, "['stream']: 0 is not allowed"),
    ("stream-negative", with_(stream=-1), ValueError, "['stream']: must be in 0 .. 2**64"),
    ("stream-2**64", with_(stream=2**64), ValueError, "['stream']: must be in 0 .. 2**64"),
]


@pytest.mark.parametrize("interface, exc, text", [c[1:] for c in MALFORMED],
                         ids=[c[0] for c in MALFORMED])
def test_malformed_interface(interface, exc, text):
    with pytest.raises(exc) as info:
        cuda.as_cuda_array(exporting(interface))
    assert type(info.value) is exc, info.value
    assert text in str(info.value)


@pytest.mark.parametrize("interface, exc, text", [c[1:] for c in MALFORMED[::6]],
                         ids=[c[0] for c in MALFORMED[::6]])
@pytest.mark.slow
def test_malformed_interface_given_to_a_cuda_ufunc(interface, exc, text):
    """A cuda ufunc checks a foreign operand as as_cuda_array does, before
    it needs the driver."""
    k = kernel_from_source("def k(x):\n    return x + 1\n")
    ufunc = numbavec.vectorize(["float32(float32)"], target="cuda")(k)
    with pytest.raises(exc, match=".") as info:
        ufunc(exporting(interface))
    assert text in str(info.value)


def test_interface_attribute_that_raises():
    class Raising:
        @property
        def __cuda_array_interface__(self):
            raise ZeroDivisionError("no interface today")

    with pytest.raises(TypeError, match=f"reading {CAI} raised ZeroDivisionError") as info:
        cuda.as_cuda_array(Raising())
    assert isinstance(info.value.__cause__, ZeroDivisionError)


def test_interface_dict_whose_getitem_raises():
    class Hostile(dict):
        def __getitem__(self, key):
            raise RuntimeError(key)

    with pytest.raises(TypeError, match=rf"reading {CAI}\['shape'\] raised RuntimeError"):
        cuda.as_cuda_array(exporting(Hostile(GOOD)))


def test_interface_dict_that_empties_itself_while_read():
    class Shrinking(dict):
        def __getitem__(self, key):
            value = super().__getitem__(key)
            self.clear()            # frees every other value
            return value

    with pytest.raises(ValueError, match="'typestr' is missing"):
        cuda.as_cuda_array(exporting(Shrinking(GOOD)))


def test_interface_mapping_that_is_not_a_dict():
    from collections import UserDict

    with pytest.raises(TypeError, match="must be a dict"):
        cuda.as_cuda_array(exporting(UserDict(GOOD)))


@pytest.mark.parametrize("changes, shape, strides, dtype, readonly", [
    ({}, (3, 4), (16, 4), "float32", False),
    ({"version": 0}, (3, 4), (16, 4), "float32", False),
    ({"version": 2, "strides": None, "mask": None}, (3, 4), (16, 4), "float32", False),
    ({"strides": (4, 12)}, (3, 4), (4, 12), "float32", False),
    ({"strides": (-16, 4), "data": (BASE + 32, True)}, (3, 4), (-16, 4), "float32", True),
    ({"shape": (np.int64(2), np.uint8(3)), "typestr": "|b1"}, (2, 3), (3, 1), "bool", False),
    ({"typestr": "=c16", "data": (BASE, np.True_)}, (3, 4), (64, 16), "complex128", True),
    ({"data": (64, False), "strides": (-32, 4)}, (3, 4), (-32, 4), "float32", False),
    ({"typestr": "|u1", "stream": 1}, (3, 4), (4, 1), "uint8", False),
    ({"typestr": "<i8", "stream": 2, "descr": [("", "<i8")]}, (3, 4), (32, 8), "int64", False),
    ({"typestr": "<f2"}, (3, 4), (8, 2), "float16", False),
    ({"shape": (0, 4), "data": (0, False)}, (0, 4), (16, 4), "float32", False),
    ({"shape": (), "typestr": "<f8"}, (), (), "float64", False),
])
def test_wellformed_interfaces_are_wrapped(changes, shape, strides, dtype, readonly):
    # with a GPU, streams 1 and 2 (the default streams) are really synchronised
    obj = exporting(with_(**changes))
    a = cuda.as_cuda_array(obj)
    assert a.shape == shape and a.strides == strides and a.dtype == np.dtype(dtype)
    assert a.owner is obj
    assert a.__cuda_array_interface__["data"][1] is readonly


# ---- DLPack ----------------------------------------------------------------

DELETER = ctypes.CFUNCTYPE(None, ctypes.c_void_p)


class DLTensor(ctypes.Structure):
    _fields_ = [("data", ctypes.c_void_p), ("device_type", ctypes.c_int32),
                ("device_id", ctypes.c_int32), ("ndim", ctypes.c_int32),
                ("code", ctypes.c_uint8), ("bits", ctypes.c_uint8), ("lanes", ctypes.c_uint16),
                ("shape", ctypes.POINTER(ctypes.c_int64)),
                ("strides", ctypes.POINTER(ctypes.c_int64)), ("byte_offset", ctypes.c_uint64)]


class DLManagedTensor(ctypes.Structure):
    _fields_ = [("dl_tensor", DLTensor), ("manager_ctx", ctypes.c_void_p), ("deleter", DELETER)]


capsule_new = ctypes.pythonapi.PyCapsule_New
capsule_new.restype = ctypes.py_object
capsule_new.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_void_p]
capsule_name = ctypes.pythonapi.PyCapsule_GetName
capsule_name.restype = ctypes.c_char_p
capsule_name.argtypes = [ctypes.py_object]


class Producer:
    """A DLPack producer of a hand-made DLManagedTensor (float32 (3, 4) at
    BASE on CUDA device 0 unless told otherwise); it keeps every capsule it
    made and counts the deleter's calls."""

    def __init__(self, shape=(3, 4), strides=None, code=2, bits=32, lanes=1, data=BASE,
                 byte_offset=0, device=(2, 0), tensor_device=None, ndim=None,
                 name=b"dltensor", shape_null=False):
        self.shape = (ctypes.c_int64 * max(len(shape), 1))(*shape)
        self.strides = None if strides is None else (ctypes.c_int64 * len(strides))(*strides)
        self.deleted = 0
        self.deleter = DELETER(self._delete)
        t = DLTensor(data, *(tensor_device or device), len(shape) if ndim is None else ndim,
                     code, bits, lanes, None if shape_null else self.shape, self.strides,
                     byte_offset)
        self.managed = DLManagedTensor(t, None, self.deleter)
        self.device, self.name, self.capsules = device, name, []

    def _delete(self, _):
        self.deleted += 1

    def __dlpack_device__(self):
        return self.device

    def __dlpack__(self, stream=None):
        assert stream == 1
        cap = capsule_new(ctypes.addressof(self.managed), self.name, None)
        self.capsules.append(cap)
        return cap


def test_dlpack_import_consumes_and_frees():
    import gc

    p = Producer(strides=(1, 3))
    a = cuda.as_cuda_array(p)
    assert a.shape == (3, 4) and a.strides == (4, 12) and a.device_pointer == BASE
    assert capsule_name(p.capsules[0]) == b"used_dltensor" and p.deleted == 0
    del a
    gc.collect()
    assert p.deleted == 1


DL_MALFORMED = [
    ("name-used", dict(name=b"used_dltensor"), ValueError, "already consumed"),
    ("name-versioned", dict(name=b"dltensor_versioned"), ValueError, "versioned"),
    ("name-other", dict(name=b"numpy_array"), ValueError, "not a DLPack tensor"),
    ("name-null", dict(name=None), ValueError, "unnamed capsule"),
    ("device-cpu", dict(device=(1, 0)), TypeError, "not in CUDA device memory"),
    ("device-other-gpu", dict(device=(2, 1)), ValueError, "on CUDA device 1"),
    ("device-mismatch", dict(tensor_device=(13, 0)), ValueError, "is not __dlpack_device__()'s"),
    ("ndim-negative", dict(ndim=-1), ValueError, "DLTensor.ndim is -1"),
    ("ndim-huge", dict(ndim=1000), ValueError, "DLTensor.ndim is 1000"),
    ("shape-null", dict(shape_null=True), ValueError, "DLTensor.shape is NULL"),
    ("shape-negative", dict(shape=(3, -4)), ValueError, "DLTensor.shape[1] is negative"),
    ("lanes", dict(lanes=4), TypeError, "4 lanes"),
    ("bits-12", dict(bits=12), TypeError, "12 bits"),
    ("code-99", dict(code=99), TypeError, "code 99"),
    ("float128", dict(bits=128), TypeError, "128 bits"),
    ("data-null", dict(data=None), ValueError, "data pointer is NULL"),
    ("data-misaligned", dict(data=BASE + 1), ValueError, "not 4-byte aligned"),
    ("strides-overflow", dict(strides=(2**62, 1)), ValueError, "DLTensor.strides[0] overflows"),
    ("strides-reach", dict(strides=(2**60, 1)), ValueError, "reach of the strides overflows"),
    ("offset-overflow", dict(byte_offset=2**64 - 4), ValueError, "byte_offset overflows"),
    ("below-zero", dict(data=64, strides=(-16, 1)), ValueError, "outside the address space"),
]


@pytest.mark.parametrize("fields, exc, text", [c[1:] for c in DL_MALFORMED],
                         ids=[c[0] for c in DL_MALFORMED])
def test_malformed_dlpack(fields, exc, text):
    p = Producer(**fields)
    with pytest.raises(exc) as info:
        cuda.as_cuda_array(p)
    assert type(info.value) is exc and text in str(info.value), info.value
    # a refused capsule stays the producer's: not renamed, not deleted
    for cap in p.capsules:
        assert capsule_name(cap) == p.name
    assert p.deleted == 0


class BadProducer:
    def __init__(self, dlpack=None, device=(2, 0)):
        self._dlpack, self._device = dlpack, device

    def __dlpack__(self, stream=None):
        return self._dlpack() if callable(self._dlpack) else self._dlpack

    def __dlpack_device__(self):
        return self._device() if callable(self._device) else self._device


def _raise(exc):
    def f():
        raise exc
    return f


@pytest.mark.parametrize("producer, exc, text", [
    (BadProducer(dlpack=5), TypeError, "__dlpack__(): must return a DLPack capsule, got an int"),
    (BadProducer(dlpack=None), TypeError, "must return a DLPack capsule, got None"),
    (BadProducer(dlpack=_raise(BufferError("no"))), TypeError, "__dlpack__() raised BufferError"),
    (BadProducer(dlpack=_raise(KeyError(1))), TypeError, "__dlpack__() raised KeyError"),
    (BadProducer(device=2), TypeError, "__dlpack_device__(): must return a (device type"),
    (BadProducer(device=(2,)), TypeError, "__dlpack_device__(): must return"),
    (BadProducer(device=[2, 0]), TypeError, "__dlpack_device__(): must return"),
    (BadProducer(device=("cuda", 0)), TypeError, "__dlpack_device__()[0]: must be an int"),
    (BadProducer(device=(2, -1)), ValueError, "__dlpack_device__()[1]: must be at least 0"),
    (BadProducer(device=(2**80, 0)), ValueError, "__dlpack_device__()[0]: is out of range"),
    (BadProducer(device=_raise(RuntimeError("x"))), TypeError,
     "__dlpack_device__() raised RuntimeError"),
], ids=["int", "none", "raises-buffer", "raises-key", "device-int", "device-1", "device-list",
        "device-str", "device-negative", "device-huge", "device-raises"])
def test_malformed_dlpack_producer(producer, exc, text):
    with pytest.raises(exc) as info:
        cuda.as_cuda_array(producer)
    assert type(info.value) is exc and text in str(info.value), info.value


def test_dlpack_without_dlpack_device():
    class Half:
        def __dlpack__(self, stream=None):
            raise AssertionError("not called")

    with pytest.raises(TypeError, match="must have __dlpack_device__ too"):
        cuda.as_cuda_array(Half())


def test_dlpack_raising_cause_is_kept():
    with pytest.raises(TypeError) as info:
        cuda.as_cuda_array(BadProducer(dlpack=_raise(BufferError("cannot export"))))
    assert isinstance(info.value.__cause__, BufferError)


# ---- the export side's arguments --------------------------------------------

@pytest.mark.parametrize("kwargs, exc", [
    (dict(dl_device=2), TypeError),
    (dict(dl_device=(2,)), TypeError),
    (dict(dl_device=("a", 0)), TypeError),
    (dict(stream="1"), TypeError),
    (dict(stream=True), TypeError),
    (dict(stream=1.0), TypeError),
    (dict(stream=0), ValueError),
    (dict(stream=-2), ValueError),
    (dict(stream=2**70), ValueError),
])
def test_dlpack_export_arguments(kwargs, exc):
    a = _core._cuda_test_array(BASE, (3,), np.float32)
    with pytest.raises(exc) as info:
        a.__dlpack__(**kwargs)
    assert type(info.value) is exc
    if not GPU:
        for stream in (None, -1, 1, 2):
            assert capsule_name(a.__dlpack__(stream=stream)) == b"dltensor"


class CudaStreamLike:
    def __init__(self, value):
        self.value = value

    def __cuda_stream__(self):
        return self.value


@pytest.mark.parametrize("stream, exc", [
    (-1, ValueError), (2**64, ValueError), (True, TypeError), ("0", TypeError),
    (1.0, TypeError), (CudaStreamLike(5), TypeError), (CudaStreamLike([0, 5]), TypeError),
    (CudaStreamLike(("0", 5)), TypeError), (CudaStreamLike((1, 5)), ValueError),
    (CudaStreamLike((0, -5)), ValueError), (CudaStreamLike((0, "5")), TypeError),
    (CudaStreamLike((2**80, 5)), ValueError),
])
def test_bogus_stream_arguments(stream, exc):
    """stream= is checked before any driver call (here: device_array)."""
    with pytest.raises(exc) as info:
        cuda.device_array(3, stream=stream)
    assert type(info.value) is exc


# ---- fuzz --------------------------------------------------------------------

FUZZ = textwrap.dedent(r'''
    import ctypes, json, operator, random, sys
    import numpy as np
    from numbavec import cuda

    BASE = 0x7F0000000000
    GPU = cuda.is_available()
    rng = random.Random(20261123)
    TYPESTRS = ["|b1", "|i1", "<i2", "<i4", "<i8", "|u1", "<u2", "<u4", "<u8", "<f2", "<f4",
                "<f8", "<c8", "<c16", "=f8"]

    class Hostile:
        def __index__(self): raise RuntimeError("index")
        def __eq__(self, other): raise RuntimeError("eq")
        def __hash__(self): return hash("shape")
        def __len__(self): raise RuntimeError("len")
        def __iter__(self): raise RuntimeError("iter")
        def __bool__(self): raise RuntimeError("bool")

    POOL = [None, True, False, 0, 1, -1, 2, 3, 7, 2**31, 2**63 - 1, 2**63, 2**64, -2**63,
            1.5, float("nan"), "", "x", "<f4", "|b1", ">f8", "<c16", "|O8", b"<f4", (), (0,),
            (1,), (3,), (2, 3), (1, 2, 3), (-1,), (2**62, 2**62), [3], [BASE, False], {},
            {"a": 1}, object(), np.int64(3), np.uint64(2**63), np.float32(1.0), np.bool_(True),
            (BASE, False), (BASE, True), (0, False), (BASE + 1, False), ("x", False), (BASE,),
            (None,), ((1,),), tuple(range(70)), Hostile(), (Hostile(),), (BASE, Hostile()),
            {Hostile(): 1}]
    KEYS = ["shape", "typestr", "data", "version", "strides", "mask", "stream", "descr"]

    def valid():
        nd = rng.randrange(0, 4)
        shape = tuple(rng.randrange(0, 6) for _ in range(nd))
        typestr = rng.choice(TYPESTRS)
        item = np.dtype(typestr).itemsize
        d = {"shape": shape, "typestr": typestr, "version": rng.randrange(0, 4),
             "data": (BASE + 1024 * item, rng.random() < 0.5)}
        if rng.random() < 0.5:
            d["strides"] = tuple(rng.choice([-1, 1, 2]) * item * rng.randrange(1, 8)
                                 for _ in range(nd))
        if rng.random() < 0.3:
            d["stream"] = rng.choice([None, 1, 2])
        if rng.random() < 0.2:
            d["mask"] = None
        return d

    def mutate(d):
        key = rng.choice(KEYS)
        r = rng.random()
        if r < 0.15:
            d.pop(key, None)
        elif r < 0.6 or not isinstance(d.get(key), tuple) or not d[key]:
            d[key] = rng.choice(POOL)
        else:
            t = list(d[key])
            i = rng.randrange(len(t))
            if rng.random() < 0.7:
                t[i] = rng.choice(POOL)
            elif rng.random() < 0.5:
                del t[i]
            else:
                t.append(rng.choice(POOL))
            d[key] = tuple(t)

    class Obj:
        pass

    stats = {"accepted": 0, "rejected": 0, "dl_accepted": 0, "dl_rejected": 0}
    failures = []

    def check_accepted(d, a):
        # only a well-formed interface may be accepted, and as it says
        assert isinstance(a, cuda.DeviceNDArray)
        assert type(d["shape"]) is tuple and a.shape == tuple(int(x) for x in d["shape"])
        assert a.dtype == np.dtype(d["typestr"]) and d["typestr"][0] != ">"
        assert 0 <= int(d["version"]) <= 3 and d.get("mask") is None
        if d.get("strides") is not None:
            assert a.strides == tuple(int(s) for s in d["strides"])
        if a.size:
            assert a.device_pointer == d["data"][0] != 0

    for n in range(3000):
        d = valid()
        for _ in range(rng.randrange(1, 4)):
            mutate(d)
        if GPU and not isinstance(d.get("stream"), Hostile):
            # a well-formed handle is synchronised: no real stream behind a random one
            # (np.int64(3) is a handle too, though not an int)
            try:
                handle = operator.index(d.get("stream"))
            except TypeError:
                handle = None
            if handle is not None and not 0 <= handle <= 2:
                d["stream"] = None
        obj = Obj()
        obj.__cuda_array_interface__ = d
        try:
            a = cuda.as_cuda_array(obj)
        except (TypeError, ValueError):
            stats["rejected"] += 1
            continue
        except BaseException as e:
            failures.append(f"{type(e).__name__}: {e} <- {d!r}"[:300])
            continue
        try:
            check_accepted(d, a)
            stats["accepted"] += 1
        except Exception as e:
            failures.append(f"accepted wrongly ({type(e).__name__}) <- {d!r}"[:300])

    # DLPack: hand-made tensors with random fields (shape/strides pointers valid or NULL)
    DELETER = ctypes.CFUNCTYPE(None, ctypes.c_void_p)
    class DLTensor(ctypes.Structure):
        _fields_ = [("data", ctypes.c_void_p), ("device_type", ctypes.c_int32),
                    ("device_id", ctypes.c_int32), ("ndim", ctypes.c_int32),
                    ("code", ctypes.c_uint8), ("bits", ctypes.c_uint8),
                    ("lanes", ctypes.c_uint16), ("shape", ctypes.POINTER(ctypes.c_int64)),
                    ("strides", ctypes.POINTER(ctypes.c_int64)),
                    ("byte_offset", ctypes.c_uint64)]
    class DLManagedTensor(ctypes.Structure):
        _fields_ = [("dl_tensor", DLTensor), ("manager_ctx", ctypes.c_void_p),
                    ("deleter", DELETER)]
    capsule_new = ctypes.pythonapi.PyCapsule_New
    capsule_new.restype = ctypes.py_object
    capsule_new.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_void_p]
    noop = DELETER(lambda p: None)
    I64 = [0, 1, 3, -1, 2**31, 2**40, 2**62, -2**63, 2**63 - 1]

    VALID_DTYPES = [(0, 8), (0, 32), (1, 16), (1, 64), (2, 16), (2, 32), (2, 64), (5, 64),
                    (5, 128), (6, 8)]
    HOSTILE = {"ndim": [-1, 65, 1000, 4], "data": [None, BASE + 1, 64, 2**64 - 8],
               "device_type": [1, 3, 99, 13], "device_id": [1, 7], "code": [3, 99],
               "bits": [0, 12, 128, 255], "lanes": [0, 2], "byte_offset": [4, 2**63, 2**64 - 1],
               "shape": [-1, 2**40, 2**62, -2**63], "strides": [2**62, -2**63, 3, -1000],
               "null_shape": [True], "name": [b"used_dltensor", b"x", None],
               "device": [(2, 1), (1, 0), (13, 0)]}

    class Producer:
        def __init__(self):
            f = {"ndim": rng.randrange(0, 4), "data": BASE, "device_type": 2, "device_id": 0,
                 "byte_offset": 0, "null_shape": False, "name": b"dltensor", "device": None}
            f["code"], f["bits"] = rng.choice(VALID_DTYPES)
            f["lanes"] = 1
            shape = [rng.randrange(0, 5) for _ in range(8)]
            strides = [rng.choice([-1, 1]) * rng.randrange(1, 20) for _ in range(8)]
            with_strides = rng.random() < 0.5
            for _ in range(rng.randrange(0, 3)):
                key = rng.choice(sorted(HOSTILE))
                value = rng.choice(HOSTILE[key])
                if key in ("shape", "strides"):
                    (shape if key == "shape" else strides)[rng.randrange(8)] = value
                    with_strides = with_strides or key == "strides"
                else:
                    f[key] = value
            self.shape = (ctypes.c_int64 * 8)(*shape)
            self.strides = (ctypes.c_int64 * 8)(*strides)
            t = DLTensor(f["data"], f["device_type"], f["device_id"], f["ndim"], f["code"],
                         f["bits"], f["lanes"], None if f["null_shape"] else self.shape,
                         self.strides if with_strides else None, f["byte_offset"])
            self.managed = DLManagedTensor(t, None, noop)
            self.device = f["device"] or (f["device_type"], f["device_id"])
            self.name = f["name"]
            self.caps = []
        def __dlpack_device__(self):
            return self.device
        def __dlpack__(self, stream=None):
            cap = capsule_new(ctypes.addressof(self.managed), self.name, None)
            self.caps.append(cap)
            return cap

    for n in range(1500):
        p = Producer()
        try:
            a = cuda.as_cuda_array(p)
        except (TypeError, ValueError):
            stats["dl_rejected"] += 1
            continue
        except BaseException as e:
            failures.append(f"DLPack {type(e).__name__}: {e}"[:300])
            continue
        stats["dl_accepted"] += 1
        t = p.managed.dl_tensor
        if not (0 <= t.ndim <= 64 and p.device in ((2, 0), (13, 0)) and t.lanes == 1
                and a.shape == tuple(t.shape[i] for i in range(t.ndim))):
            failures.append(f"DLPack accepted wrongly: ndim {t.ndim} device {p.device}")
    print(json.dumps({"stats": stats, "failures": failures[:20]}))
''')


def test_fuzzed_interfaces_in_a_child_process():
    proc = run_python(FUZZ, timeout=600)
    assert proc.returncode == 0, f"the fuzz crashed ({proc.returncode}):\n{proc.stderr[-3000:]}"
    result = json.loads(proc.stdout.strip().splitlines()[-1])
    assert result["failures"] == []
    stats = result["stats"]
    # the mutations must reach both outcomes, or the fuzz tests nothing
    assert stats["accepted"] > 100 and stats["rejected"] > 1500, stats
    assert stats["dl_accepted"] > 300 and stats["dl_rejected"] > 500, stats
