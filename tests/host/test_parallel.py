"""The parallel target on compiled kernels: chunked results equal cpu's.

The pool's own tests (test_pool.py) use loops written in C; these run kernels
compiled by numbavec through the parallel target with the work threshold
switched off (``_pool_force_parallel``), so that even small arrays are split
into chunks, and compare every result with the cpu target bit for bit.
"""
import threading

import numpy as np
import pytest

from numbavec import _core, vectorize


def mixed(a, x, y):
    return a * x + y if x.real > y.real else a - x * y


def int_div(x, y):
    return x // y + x % y


def fdiv(x, y):
    return x / y


SIGS = ["f4(f4,f4,f4)", "f8(f8,f8,f8)", "i8(i8,i8,i8)", "u2(u2,u2,u2)", "c16(c16,c16,c16)"]
SIZES = [1, 15, 16, 17, 31, 33, 100, 257, 1000, 4099]


@pytest.fixture(scope="module")
def mixed_ufuncs():
    return (vectorize(SIGS, target="cpu")(mixed), vectorize(SIGS, target="parallel")(mixed))


def operands(dtype, n, rng):
    dtype = np.dtype(dtype)
    if dtype.kind == "c":
        return [(rng.standard_normal(n) + 1j * rng.standard_normal(n)).astype(dtype)
                for _ in range(3)]
    if dtype.kind in "iu":
        return [rng.integers(0, 100, n).astype(dtype) for _ in range(3)]
    return [rng.standard_normal(n).astype(dtype) for _ in range(3)]


@pytest.mark.parametrize("dtype", ["f4", "f8", "i8", "u2", "c16"])
@pytest.mark.parametrize("n", SIZES)
def test_chunks_agree_with_cpu(forced, mixed_ufuncs, dtype, n):
    cpu, par = mixed_ufuncs
    rng = np.random.default_rng(n)
    a, x, y = operands(dtype, n, rng)
    jobs = _core._pool_stats()["jobs"]
    np.testing.assert_array_equal(par(a, x, y), cpu(a, x, y))
    if n >= 32:
        assert _core._pool_stats()["jobs"] > jobs      # really split
    # broadcast scalar, strided input, strided output, reversed input
    np.testing.assert_array_equal(par(a[0], x, y), cpu(a[0], x, y))
    np.testing.assert_array_equal(par(a, x[::-1], y), cpu(a, x[::-1], y))
    out_p = np.zeros(2 * n, x.dtype)
    out_c = np.zeros(2 * n, x.dtype)
    par(a, x, y, out=out_p[::2])
    cpu(a, x, y, out=out_c[::2])
    np.testing.assert_array_equal(out_p, out_c)


def test_in_place_and_reduce(forced, mixed_ufuncs):
    cpu, par = mixed_ufuncs
    rng = np.random.default_rng(1)
    a, x, y = operands("f8", 5000, rng)
    x1, x2 = x.copy(), x.copy()
    par(a, x1, y, out=x1)
    cpu(a, x2, y, out=x2)
    np.testing.assert_array_equal(x1, x2)


def test_add_reduce_and_accumulate_stay_sequential(forced):
    def add(x, y):
        return x + y
    par = vectorize(["f8(f8,f8)"], target="parallel", identity=0)(add)
    x = np.random.default_rng(2).standard_normal(10_000)
    jobs = _core._pool_stats()["jobs"]
    np.testing.assert_array_equal(par.accumulate(x), np.add.accumulate(x))
    assert par.reduce(x) == pytest.approx(np.add.reduce(x), rel=1e-12)
    assert _core._pool_stats()["jobs"] == jobs       # never split: each step needs the last


def test_integer_division_flag_from_workers(forced):
    par = vectorize(["i8(i8,i8)"], target="parallel")(int_div)
    x = np.arange(4000, dtype=np.int64)
    y = np.ones(4000, dtype=np.int64)
    y[3999] = 0                      # only the last chunk divides by zero
    with np.errstate(divide="raise"):
        with pytest.raises(FloatingPointError):
            par(x, y)
    with np.errstate(divide="ignore"):
        r = par(x, y)
    assert r[3999] == 0 and r[3998] == 3998 + 0


def test_float_flags_from_workers(forced):
    par = vectorize(["f8(f8,f8)"], target="parallel")(fdiv)
    x = np.ones(4000)
    y = np.ones(4000)
    y[3000] = 0.0
    with np.errstate(divide="raise"):
        with pytest.raises(FloatingPointError):
            par(x, y)
    with pytest.warns(RuntimeWarning, match="divide by zero"):
        par(x, y)


def test_many_python_threads(mixed_ufuncs):
    cpu, par = mixed_ufuncs
    rng = np.random.default_rng(3)
    a, x, y = operands("f8", 200_000, rng)
    expected = cpu(a, x, y)
    errors = []

    def work():
        try:
            for _ in range(20):
                if not np.array_equal(par(a, x, y), expected):
                    errors.append("mismatch")
        except Exception as exc:            # pragma: no cover - reported below
            errors.append(repr(exc))

    threads = [threading.Thread(target=work) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []


def test_thread_count_changes(mixed_ufuncs, forced):
    cpu, par = mixed_ufuncs
    a, x, y = operands("f4", 3001, np.random.default_rng(4))
    before = _core.get_num_threads()
    try:
        for t in range(1, _core.get_pool_size() + 1):
            _core.set_num_threads(t)
            np.testing.assert_array_equal(par(a, x, y), cpu(a, x, y))
    finally:
        _core.set_num_threads(before)
