"""The cache key follows what a kernel reads through attribute chains.

A kernel reads `P.inner.scale` or `W.size` at compile time (they become
constants of its code), so two compilations of the same source with
different values there must not share an entry.  Each test compiles one
source several times in this process, with a cache directory of its own,
and checks every result against NumPy (a key that missed the change would
hand a later compilation an earlier one's code)."""
import numpy as np
import pytest

from numbavec import cache as nvcache, vectorize

from conftest import kernel_from_source

CHAIN_KERNEL = "def k(x):\n    return x * P.inner.scale + P.offset\n"
DEEP_KERNEL = "def k(x):\n    return x * P.a.b.c + 1.0\n"
SIZE_KERNEL = "def k(x):\n    return x * W.size + W.dtype.itemsize\n"


class Namespace:
    """A plain object as a namespace of constants: its default repr names
    its address only, so what the kernel reads of it is keyed as chains."""

    def __init__(self, **attrs):
        self.__dict__.update(attrs)


@pytest.fixture
def cachedir(tmp_path, monkeypatch):
    monkeypatch.setenv("NUMBAVEC_CACHE_DIR", str(tmp_path / "cache"))
    return tmp_path / "cache"


@pytest.mark.parametrize("eager", [True, False])
def test_an_attribute_chain_is_keyed(cachedir, eager):
    x = np.arange(5.0)
    sigs = ["f8(f8)"] if eager else []
    for scale, offset in ((2.0, 1.0), (3.0, 1.0), (3.0, 4.0)):
        p = Namespace(inner=Namespace(scale=scale), offset=offset)
        f = vectorize(sigs, cache=True)(kernel_from_source(CHAIN_KERNEL, globals_={"P": p}))
        np.testing.assert_array_equal(f(x), x * scale + offset)
    assert nvcache.info(str(cachedir))["entries"] == 3


def test_a_deep_chain_is_keyed(cachedir):
    x = np.arange(5.0)
    for c in (2.0, 5.0):
        p = Namespace(a=Namespace(b=Namespace(c=c)))
        f = vectorize(["f8(f8)"], cache=True)(kernel_from_source(DEEP_KERNEL, globals_={"P": p}))
        np.testing.assert_array_equal(f(x), x * c + 1.0)


def test_what_a_kernel_reads_of_a_global_array_is_keyed(cachedir):
    """What a kernel reads of a global array (its size, its dtype's item
    size: the array is keyed by its contents, test_numpy_functions.py) is
    keyed."""
    x = np.arange(5.0)
    for w in (np.zeros(3), np.zeros(4), np.zeros(4, "f4")):
        f = vectorize(["f8(f8)"], cache=True)(kernel_from_source(SIZE_KERNEL, globals_={"W": w}))
        np.testing.assert_array_equal(f(x), x * w.size + w.dtype.itemsize)


TABLE_KERNEL = "def k(x):\n    return x * T[1] + T[2]\n"


@pytest.mark.parametrize("eager", [True, False])
def test_a_global_tables_contents_are_keyed(cachedir, eager):
    """A global array is a constant of the code compiled from it: a table of
    the same shape and dtype with other values is another entry (the
    mutation round's K03 survived the cache tests: only the numpy-functions
    tests caught it)."""
    x = np.arange(5.0)
    sigs = ["f8(f8)"] if eager else []
    tables = (np.array([0.0, 2.0, 1.0]), np.array([0.0, 3.0, 1.0]), np.array([0.0, 3.0, 7.0]))
    for t in tables:
        f = vectorize(sigs, cache=True)(kernel_from_source(TABLE_KERNEL, globals_={"T": t}))
        np.testing.assert_array_equal(f(x), x * t[1] + t[2])
    assert nvcache.info(str(cachedir))["entries"] == 3
