"""The parallel target's pool, through the test ufuncs of _core (testhooks.c).

Each test ufunc is a C loop wrapped by a target exactly as a JIT-compiled
loop is: "saxpy" (fff->f), "heavy" (d->d), "divide" (dd->d) on the parallel
target, "serial" (saxpy's loop on the cpu target).  Results are compared
with the serial loop and with NumPy.  `forced` makes the trampoline ignore
its work threshold, so small sizes are cut into chunks too; the pool's job
counter tells whether a call really ran in parallel.
"""
import os
import random
import signal
import textwrap
import threading
import time

import numpy as np
import pytest

from conftest import run_python

from numbavec import _core

saxpy = _core._parallel_test_ufunc("saxpy")
serial = _core._parallel_test_ufunc("serial")
heavy = _core._parallel_test_ufunc("heavy")
divide = _core._parallel_test_ufunc("divide")

POOL = _core.get_pool_size()
needs_pool = pytest.mark.skipif(POOL < 2, reason="a pool of one thread never splits")


@pytest.fixture
def threads_reset():
    n = _core.get_num_threads()
    yield
    _core.set_num_threads(n)


def jobs():
    return _core._pool_stats()["jobs"]


def saxpy_inputs(n, seed=0):
    rng = np.random.default_rng(seed)
    return [rng.standard_normal(n).astype(np.float32) for _ in range(3)]


def check_saxpy(a, x, y, **kw):
    got = saxpy(a, x, y, **kw)
    np.testing.assert_array_equal(got, serial(a, x, y))
    np.testing.assert_allclose(got, a * x + y, rtol=1e-6, atol=1e-6)
    return got


# ---- sizes ----

SIZES = [0, 1, 15, 16, 17, 31, 32, 33, 47, 63, 64, 65, 100, 1001, 4097, 65537, 999_999]


@pytest.mark.parametrize("n", SIZES)
def test_saxpy_sizes_forced(forced, n):
    before = jobs()
    check_saxpy(*saxpy_inputs(n))
    if POOL >= 2 and n >= 32:
        assert jobs() > before, "the call should have used the pool"


@pytest.mark.parametrize("n", [0, 1, 17, 1001, 100_003])
def test_heavy_sizes_forced(forced, threads_reset, n):
    x = np.linspace(-20, 5, n)
    got = heavy(x)
    _core.set_num_threads(1)
    np.testing.assert_array_equal(got, heavy(x))
    np.testing.assert_allclose(got, np.sin(x) * np.exp(x) + np.sqrt(np.abs(x)),
                               rtol=1e-12, atol=1e-300)


@needs_pool
def test_large_unforced_uses_pool():
    n = 10**7
    x = np.arange(n, dtype=np.float32) / n
    before = jobs()
    got = saxpy(np.float32(2), x, x)
    assert jobs() > before
    np.testing.assert_array_equal(got, serial(np.float32(2), x, x))
    h = np.linspace(-3, 3, 10**6)
    before = jobs()
    np.testing.assert_allclose(heavy(h), np.sin(h) * np.exp(h) + np.sqrt(np.abs(h)),
                               rtol=1e-12)
    assert jobs() > before


def test_small_unforced_stays_serial():
    a, x, y = saxpy_inputs(100)
    before = jobs()
    check_saxpy(a, x, y)
    assert jobs() == before


@pytest.mark.parametrize("nthreads", [3, 5])
def test_other_pool_sizes(nthreads):
    # Sizes not divisible by the thread count, with more threads than cores.
    code = textwrap.dedent(f"""
        import numpy as np
        from numbavec import _core
        assert _core.get_pool_size() == {nthreads}, _core.get_pool_size()
        _core._pool_force_parallel(True)
        s = _core._parallel_test_ufunc("saxpy")
        c = _core._parallel_test_ufunc("serial")
        rng = np.random.default_rng(1)
        for n in [1, 17, 33, 48, 49, 95, 97, 161, 1000, 12345, 300007]:
            a, y = (rng.standard_normal(n).astype(np.float32) for _ in range(2))
            x = rng.standard_normal(2 * n).astype(np.float32)[::2]
            for t in range(1, {nthreads} + 1):
                _core.set_num_threads(t)
                assert np.array_equal(s(a, x, y), c(a, x, y)), (n, t)
                assert np.array_equal(s(a[::-1], x, y[0]), c(a[::-1], x, y[0])), (n, t)
        assert _core._pool_stats()["jobs"] > 0
    """)
    env = dict(os.environ, NUMBAVEC_NUM_THREADS=str(nthreads))
    r = run_python(code, env=env)
    assert r.returncode == 0, r.stderr


def test_bad_env_falls_back_with_warning():
    code = ("import warnings, os; warnings.simplefilter('error');\n"
            "from numbavec import _core")
    env = dict(os.environ, NUMBAVEC_NUM_THREADS="lots")
    r = run_python(code, env=env, timeout=120)
    assert r.returncode != 0 and "NUMBAVEC_NUM_THREADS" in r.stderr
    code = "from numbavec import _core; print(_core.get_pool_size())"
    r = run_python(code, env=env, timeout=120)
    assert r.returncode == 0 and int(r.stdout) == len(os.sched_getaffinity(0))


# ---- layouts ----

N = 10_007


@pytest.mark.parametrize("layout", ["strided", "reversed", "scalar", "rows", "columns"])
def test_input_layouts(forced, layout):
    a, x, y = saxpy_inputs(3 * N)
    if layout == "strided":
        args = (a[::3], x[1::3], y[:N])
    elif layout == "reversed":
        args = (a[::-1], x[::-1], y)
    elif layout == "scalar":
        args = (np.float32(1.5), x, np.float32(-2))
    elif layout == "rows":
        args = (a[:300].reshape(3, 100), x[:100], y[:300].reshape(3, 100))
    else:
        args = (a[:300].reshape(100, 3), x[:100, None], np.float32(0.25))
    check_saxpy(*args)


@pytest.mark.parametrize("layout", ["strided", "reversed", "inplace", "fortran"])
def test_output_layouts(forced, layout):
    a, x, y = saxpy_inputs(N)
    expect = serial(a, x, y)
    if layout == "strided":
        out = np.full(3 * N, 7, np.float32)[::3]
    elif layout == "reversed":
        out = np.empty(N, np.float32)[::-1]
    elif layout == "inplace":
        out = x
    else:
        a, x, y = (v[:10_000].reshape(100, 100) for v in (a, x, y))
        expect = serial(a, x, y)
        out = np.empty((100, 100), np.float32, order="F")
    got = saxpy(a, x, y, out=out)
    assert got is out
    np.testing.assert_array_equal(got, expect)
    if layout == "strided":
        base = out.base
        assert np.all(base.reshape(-1, 3)[:, 1:] == 7), "wrote between the elements"


def test_where(forced):
    a, x, y = saxpy_inputs(N)
    mask = np.arange(N) % 3 == 0
    out = np.zeros(N, np.float32)
    saxpy(a, x, y, out=out, where=mask)
    np.testing.assert_array_equal(out, np.where(mask, serial(a, x, y), 0))


# ---- sequential loops: reduce (output step 0) and accumulate ----

def divide_inputs(n, seed=2):
    rng = np.random.default_rng(seed)
    return rng.uniform(0.5, 2.0, n)


@pytest.mark.parametrize("n", [1, 2, 33, 1000, 100_001])
def test_reduce(forced, n):
    x = divide_inputs(n)
    assert divide.reduce(x) == np.divide.reduce(x)


@pytest.mark.parametrize("axis", [0, 1, None])
def test_reduce_2d(forced, axis):
    x = divide_inputs(300 * 257).reshape(300, 257)
    got = divide.reduce(x, axis=axis) if axis is not None else divide.reduce(x.ravel())
    expect = np.divide.reduce(x, axis=axis) if axis is not None else np.divide.reduce(
        x.ravel())
    np.testing.assert_array_equal(got, expect)


@pytest.mark.parametrize("n", [2, 33, 1000, 100_001])
def test_accumulate(forced, n):
    x = divide_inputs(n)
    np.testing.assert_array_equal(divide.accumulate(x), np.divide.accumulate(x))


def test_accumulate_2d(forced):
    x = divide_inputs(200 * 301).reshape(200, 301)
    for axis in (0, 1):
        np.testing.assert_array_equal(divide.accumulate(x, axis=axis),
                                      np.divide.accumulate(x, axis=axis))


# ---- thread counts ----

def test_num_threads_default_and_set(threads_reset):
    assert _core.get_num_threads() == POOL
    _core.set_num_threads(1)
    assert _core.get_num_threads() == 1
    _core.set_num_threads(POOL)
    assert _core.get_num_threads() == POOL


@pytest.mark.parametrize("bad", [0, -1, POOL + 1, 2**70])
def test_set_num_threads_range(threads_reset, bad):
    with pytest.raises(ValueError, match="between 1 and"):
        _core.set_num_threads(bad)
    assert _core.get_num_threads() == POOL


@pytest.mark.parametrize("bad", [1.5, "2", None])
def test_set_num_threads_type(bad):
    with pytest.raises(TypeError):
        _core.set_num_threads(bad)


def test_num_threads_is_per_thread(threads_reset):
    _core.set_num_threads(1)
    seen = {}

    def other():
        seen["before"] = _core.get_num_threads()
        _core.set_num_threads(POOL)
        seen["after"] = _core.get_num_threads()

    t = threading.Thread(target=other)
    t.start()
    t.join()
    assert seen == {"before": POOL, "after": POOL}
    assert _core.get_num_threads() == 1


def test_one_thread_runs_serially(forced, threads_reset):
    _core.set_num_threads(1)
    before = jobs()
    check_saxpy(*saxpy_inputs(100_000))
    assert jobs() == before


# ---- many callers ----

@pytest.mark.parametrize("force", [True, False])
def test_stress_many_python_threads(force):
    old = _core._pool_force_parallel(force)
    try:
        sizes = [1, 17, 100, 4096, 50_001, 300_000]
        cases = []
        for i, n in enumerate(sizes):
            a, x, y = saxpy_inputs(n, seed=i)
            h = np.linspace(-4, 4, n)
            cases.append((a, x, y, serial(a, x, y), h, np.sin(h) * np.exp(h)
                          + np.sqrt(np.abs(h))))
        errors = []
        start = threading.Barrier(8)

        def hammer(seed):
            rnd = random.Random(seed)
            try:
                start.wait()
                for _ in range(40):
                    _core.set_num_threads(rnd.randint(1, POOL))
                    a, x, y, expect, h, hexpect = rnd.choice(cases)
                    if not np.array_equal(saxpy(a, x, y), expect):
                        errors.append(("saxpy", len(x)))
                    if not np.allclose(heavy(h), hexpect, rtol=1e-12):
                        errors.append(("heavy", len(h)))
            except Exception as e:  # noqa: BLE001 - reported below
                errors.append(repr(e))

        threads = [threading.Thread(target=hammer, args=(s,)) for s in range(8)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(timeout=300)
        assert not any(t.is_alive() for t in threads), "a caller hung"
        assert errors == []
    finally:
        _core._pool_force_parallel(old)


# ---- fork ----

@needs_pool
@pytest.mark.skipif(not hasattr(os, "fork"), reason="no fork")
def test_fork_child_gets_fresh_pool():
    x = np.arange(10**6, dtype=np.float32)
    saxpy(np.float32(3), x, x)            # the parent's pool exists
    old = _core._pool_force_parallel(True)
    try:
        assert _core._pool_stats()["started"]
        pid = os.fork()
        if pid == 0:                      # child: no worker threads came along
            code = 1
            try:
                fresh = not _core._pool_stats()["started"]
                ok = np.array_equal(saxpy(np.float32(3), x, x),
                                    serial(np.float32(3), x, x))
                st = _core._pool_stats()
                code = 0 if fresh and ok and st["started"] and st["jobs"] > 0 else 1
            finally:
                os._exit(code)
        deadline = time.monotonic() + 120
        while True:
            done, status = os.waitpid(pid, os.WNOHANG)
            if done:
                break
            if time.monotonic() > deadline:
                os.kill(pid, signal.SIGKILL)
                os.waitpid(pid, 0)
                pytest.fail("the forked child hung")
            time.sleep(0.01)
        assert os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0
        # and the parent's pool still works
        check_saxpy(*saxpy_inputs(50_000))
    finally:
        _core._pool_force_parallel(old)


# ---- floating-point flags raised on workers ----

def zero_at_end(n):
    y = np.ones(n)
    y[-1] = 0.0
    return np.ones(n), y


def test_errstate_raise_divide(forced):
    x, y = zero_at_end(200_000)
    for _ in range(20):    # the last chunk falls to a worker or to the caller
        with np.errstate(divide="raise"):
            with pytest.raises(FloatingPointError, match="divide by zero"):
                divide(x, y)


def test_errstate_other_flags(forced):
    x, y = zero_at_end(200_000)
    x[-1] = 0.0
    with np.errstate(invalid="raise"):
        with pytest.raises(FloatingPointError, match="invalid"):
            divide(x, y)
    x, y = np.ones(200_000), np.ones(200_000)
    x[-3], y[-3] = 1e308, 1e-10
    with np.errstate(over="raise"):
        with pytest.raises(FloatingPointError, match="overflow"):
            divide(x, y)


def test_errstate_default_warns_and_ignore_is_quiet(forced):
    x, y = zero_at_end(200_000)
    with pytest.warns(RuntimeWarning, match="divide by zero"):
        r = divide(x, y)
    assert np.isinf(r[-1]) and np.all(r[:-1] == 1)
    import warnings
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with np.errstate(divide="ignore"):
            divide(x, y)
        divide(np.ones(200_000), np.ones(200_000))   # no stale flags


# ---- Ctrl-C ----

@needs_pool
def test_ctrl_c_leaves_pool_usable():
    h = np.linspace(-3, 3, 3 * 10**6)
    old_handler = signal.signal(signal.SIGINT, signal.default_int_handler)
    timer = threading.Timer(0.2, os.kill, (os.getpid(), signal.SIGINT))
    interrupted = False
    try:
        timer.start()
        for _ in range(200):              # the signal lands during one of these
            heavy(h)
    except KeyboardInterrupt:
        interrupted = True
    finally:
        timer.cancel()
        signal.signal(signal.SIGINT, old_handler)
    assert interrupted
    before = jobs()
    np.testing.assert_allclose(heavy(h), np.sin(h) * np.exp(h) + np.sqrt(np.abs(h)),
                               rtol=1e-12)
    assert jobs() > before


START = '''
import numpy as np
from numbavec import _core
f = _core._parallel_test_ufunc("saxpy")
_core._pool_force_parallel(True)
x = np.ones(100000, np.float32)
np.testing.assert_array_equal(f(np.float32(2), x, x), 3 * x)
s = _core._pool_stats()
print(s["started"], s["startup_give_ups"])
'''


def test_a_new_pool_s_workers_join_its_first_job():
    """The start-up's timing jobs are published right after the workers are
    spawned: a worker that took the generation it found when it first ran
    as seen missed the first job, and the caller waited 50 ms for it (every
    process's first parallel call).  A fresh pool in each of a few processes."""
    for _ in range(3):
        r = run_python(START, timeout=120)
        assert r.returncode == 0, r.stderr
        assert r.stdout.split() == ["True", "0"]
