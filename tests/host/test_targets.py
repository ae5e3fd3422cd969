"""Target selection in the decorators: every refusal happens at decoration,
says what is supported, and never contradicts itself (a target it offers as
a choice must work; the target it refuses must not be offered).  No GPU is
needed: cuda ufuncs compile their PTX at decoration.
"""
import re

import numpy as np
import pytest

import numbavec
from numbavec import _core, cuda, guvectorize, vectorize
from numbavec._source import KernelSource

HAVE_LIBDEVICE = cuda.toolkit_info()["libdevice"] is not None


def add1(x):
    return x + 1.0


def copy(x, out):
    for i in range(x.shape[0]):
        out[i] = x[i]


def make_ufunc(target):
    return vectorize(["float64(float64)"], target=target)(add1)


def make_gufunc(target):
    return guvectorize(["void(float64[:], float64[:])"], "(n)->(n)", target=target)(copy)


MAKERS = {"vectorize": make_ufunc, "guvectorize": make_gufunc}


def offered(message):
    """The targets a refusal offers: the quoted names after 'choose' or
    'supports target'."""
    m = re.search(r"(?:choose|supports target) ([^)]*?)(?:\)|\.|$)", message)
    assert m, message
    return re.findall(r"'([^']+)'", m[1])


@pytest.mark.skipif(not HAVE_LIBDEVICE, reason="the CUDA toolkit's libdevice is not installed")
@pytest.mark.parametrize("target", ["cuda", "gpu"])
def test_guvectorize_offers_cuda_and_its_alias(target):
    gufunc = make_gufunc(target)
    assert isinstance(gufunc, _core.CUDAGUFunc) and gufunc.types == ["d->d"]
    assert gufunc.signature == "(n)->(n)"


REFUSED = [(who, t) for who in sorted(MAKERS) for t in ["tpu", "CUDA", "", "cpu "]]


@pytest.mark.parametrize("who, target", REFUSED)
@pytest.mark.slow
def test_refused_targets_never_contradict_themselves(who, target):
    """A refused target is not among the choices the message offers, and
    every target offered works."""
    with pytest.raises((ValueError, NotImplementedError)) as info:
        MAKERS[who](target)
    choices = offered(str(info.value))
    assert target not in choices and len(choices) >= 2
    for good in choices:
        if good in ("cuda", "gpu") and not HAVE_LIBDEVICE:
            continue
        assert MAKERS[who](good) is not None


@pytest.mark.parametrize("who", sorted(MAKERS))
@pytest.mark.parametrize("target", [None, ["cpu"], 1, b"cpu"])
def test_target_of_another_type(who, target):
    with pytest.raises(TypeError, match=rf"{who}\(\): target must be a str \('cpu'"):
        MAKERS[who](target)


@pytest.mark.skipif(not HAVE_LIBDEVICE, reason="the CUDA toolkit's libdevice is not installed")
@pytest.mark.parametrize("target", ["cuda", "gpu"])
def test_vectorize_offers_cuda_and_its_alias(target):
    ufunc = make_ufunc(target)
    assert isinstance(ufunc, _core.CUDAUFunc) and ufunc.types == ["d->d"]


def test_host_ufuncs_still_work_on_both_host_targets():
    for target in ("cpu", "parallel"):
        np.testing.assert_array_equal(make_ufunc(target)(np.arange(3.0)), [1.0, 2.0, 3.0])
        np.testing.assert_array_equal(make_gufunc(target)(np.arange(3.0)), [0.0, 1.0, 2.0])


@pytest.mark.parametrize("target", ["cuda", "gpu"])
def test_one_core_factory_per_decorator_for_every_target(target):
    """Below the decorators, _core.vectorize and _core.guvectorize take every
    target by name: the target says what it makes (no branch on cuda in
    decorators.py)."""
    src = KernelSource(copy)
    if HAVE_LIBDEVICE:
        g = _core.guvectorize(copy, src.funcdef, src.location, ["void(float64[:], float64[:])"],
                              "(n)->(n)", target=target)
        assert isinstance(g, _core.CUDAGUFunc)
    src = KernelSource(add1)
    with pytest.raises(ValueError, match=r"unknown target 'tpu' \(choose 'cpu', 'parallel', "
                                         r"'cuda' or 'gpu'\)"):
        _core.vectorize(add1, src.funcdef, src.location, ["float64(float64)"], target="tpu")
    if HAVE_LIBDEVICE:
        u = _core.vectorize(add1, src.funcdef, src.location, ["float64(float64)"], target=target)
        assert isinstance(u, _core.CUDAUFunc)


def test_cuda_options_are_the_cuda_targets():
    src = KernelSource(add1)
    with pytest.raises(TypeError, match="arch= and backend= are options of the cuda target"):
        _core.vectorize(add1, src.funcdef, src.location, ["float64(float64)"], target="cpu",
                        arch="sm_90")


@pytest.mark.parametrize("call", [
    lambda: numbavec.jit(add1, target="cuda"),
    lambda: numbavec.jit(target="cpu"),
    lambda: cuda.jit(add1, device=True, target="cuda"),
])
def test_jit_takes_no_target(call):
    """Device functions are inlined into each kernel, whatever its target."""
    with pytest.raises(TypeError, match=r"jit\(\) got unexpected option\(s\): target"):
        call()
