"""Machine code on demand (issue 18): a decoration types and emits each
signature, and its machine code is made at the signature's first call; on
the cpu target a ufunc's first calls run quick code (unoptimised) until
they have run enough elements to repay the optimised code.

What is checked: results against the interpreter, that decoration makes no
machine code and a call makes only its own signature's (the JIT's counters),
that racing first calls make it once, that the pool never makes it (its
caller may hold the GIL), that errors still come at decoration, that forks
and NUMBAVEC_EAGER=1 work, and that code never made is freed with its ufunc.
"""
import gc
import math
import os
import textwrap
import threading

import numpy as np
import pytest

from conftest import run_python
from numbavec import TypingError, _core, guvectorize, vectorize

SIGS = ["f8(f8, f8)", "f4(f4, f4)", "i8(i8, i8)"]


QUICK_WORK = 65536  # elements a signature's quick code runs (target.h: TG_QUICK_WORK)

# the counts below expect quick code (the default)
pytestmark = [pytest.mark.skipif(os.environ.get("NUMBAVEC_QUICK") == "0",
                                 reason="NUMBAVEC_QUICK=0: no quick code to count"),
              pytest.mark.slow]     # child interpreters, and calls repeated until code switches


def counters():
    gc.collect()  # ufuncs of earlier tests, freed now rather than in the middle of a count
    info = _core._jit_info()
    return info["compilations"], info["pending"], info["live_codes"], info["quick"]


def made_pending_quick():
    made, pending, _, quick = counters()
    return made, pending, quick


def affine(x, y):
    return x * 3 + y


def running_sum(a, out):
    acc = 0.0
    for i in range(a.shape[0]):
        acc += a[i]
        out[i] = acc


def test_decoration_makes_no_machine_code(target):
    """A call makes its own signature's code: on cpu quick code first, on
    parallel (whose pool splits calls) the optimised loop."""
    made, pending, live, quick = counters()
    uf = vectorize(SIGS, target=target)(affine)
    assert counters() == (made, pending + 3, live + 3, quick)
    x = np.linspace(-2, 2, 1001)
    np.testing.assert_array_equal(uf(x, x), affine(x, x))
    # the float64 loop only
    one = (0, 1)
    assert made_pending_quick() == (made + one[0], pending + 3 - one[0], quick + one[1])
    np.testing.assert_array_equal(uf(x, x), affine(x, x))
    np.testing.assert_array_equal(uf(x[:-1:2], x[1::2]), affine(x[:-1:2], x[1::2]))
    np.testing.assert_array_equal(uf(x, 2.0), affine(x, 2.0))
    assert made_pending_quick() == (made + one[0], pending + 3 - one[0], quick + one[1])
    i = np.arange(-5, 6)
    np.testing.assert_array_equal(uf(i, i), affine(i, i))
    two = tuple(2 * k for k in one)
    assert made_pending_quick() == (made + two[0], pending + 3 - two[0], quick + two[1])


def test_quick_code_runs_until_the_calls_repay_the_optimised_code(target):
    """The calls' elements are counted; the call that reaches QUICK_WORK
    makes the optimised loop and runs there, and so does every call after."""
    uf = vectorize(SIGS, target=target)(affine)
    x = np.linspace(-2, 2, 1000)
    made, pending, quick = made_pending_quick()
    calls = QUICK_WORK // x.size
    for k in range(calls):
        np.testing.assert_array_equal(uf(x, x + k), affine(x, x + k))
    assert made_pending_quick() == (made, pending, quick + 1)
    np.testing.assert_array_equal(uf(x, -x), affine(x, -x))
    assert made_pending_quick() == (made + 1, pending - 1, quick + 1)
    np.testing.assert_array_equal(uf(x[:7], 1.5), affine(x[:7], 1.5))
    assert uf.reduce(x[:4]) == affine(affine(affine(x[0], x[1]), x[2]), x[3])
    assert made_pending_quick() == (made + 1, pending - 1, quick + 1)
    # a first call of QUICK_WORK elements makes the optimised loop at once
    big = np.linspace(-1, 1, QUICK_WORK, dtype=np.float32)
    np.testing.assert_array_equal(uf(big, big), affine(big, big))
    assert made_pending_quick() == (made + 2, pending - 2, quick + 1)


def heavy(x):
    s = 0.0
    for k in range(2000):
        s += math.sin(x + k)
    return s


def test_quick_code_runs_two_milliseconds_at_most(target):
    """Elements do not measure a heavy kernel's work: the time its quick code
    ran does too (TG_QUICK_NS), so the call after one that long is optimised."""
    uf = vectorize(["f8(f8)"], target=target)(heavy)
    x = np.linspace(0, 1, 300)  # 600,000 calls of sin: far more than 2 ms
    want = np.array([heavy(v) for v in x.tolist()])
    made, pending, quick = made_pending_quick()
    np.testing.assert_allclose(uf(x), want, rtol=1e-12)
    assert made_pending_quick() == (made, pending, quick + 1)
    np.testing.assert_allclose(uf(x[:3]), want[:3], rtol=1e-12)
    assert made_pending_quick() == (made + 1, pending - 1, quick + 1)


def test_a_dynamic_ufunc_s_new_loops_run_quick_code_first():
    uf = vectorize(affine)
    made, pending, quick = made_pending_quick()
    x = np.linspace(-1, 1, 100)
    np.testing.assert_array_equal(uf(x, x), affine(x, x))
    assert made_pending_quick() == (made, pending + 1, quick + 1)
    np.testing.assert_array_equal(uf(np.ones(QUICK_WORK), x[0]), affine(np.ones(QUICK_WORK), x[0]))
    assert made_pending_quick() == (made + 1, pending, quick + 1)


def test_no_quick_code_on_request():
    code = textwrap.dedent('''
        import numpy as np, numbavec
        from numbavec import _core

        @numbavec.vectorize(["f8(f8, f8)"])
        def f(x, y):
            return x * 3 + y

        ok = np.array_equal(f(np.arange(5.0), 1.0), np.arange(5.0) * 3 + 1)
        info = _core._jit_info()
        print(ok, info["compilations"], info["quick"])
    ''')
    for value, want in [("0", ["True", "1", "0"]), ("1", ["True", "0", "1"])]:
        r = run_python(code, env=dict(os.environ, NUMBAVEC_QUICK=value), as_file=True)
        assert r.returncode == 0 and r.stdout.split() == want, (value, r.stdout, r.stderr)


def test_quick_and_optimised_code_agree():
    """Both are made from one module: the same results, bit for bit, but
    for libmvec's vector functions, which the optimised loop calls."""
    def kernel(x, y):
        if x > y:
            return math.sqrt(abs(x * x - y * y)) / (x + 1.5)
        return -x * y + 0.25 if not math.isnan(x) else math.exp(y)

    uf = vectorize(["f8(f8, f8)", "f4(f4, f4)"])(kernel)
    rng = np.random.default_rng(7)
    for dtype in (np.float64, np.float32):
        x = rng.standard_normal(3000).astype(dtype)
        y = rng.standard_normal(3000).astype(dtype)
        x[::17] = np.nan
        quick = uf(x, y)
        uf(np.zeros(QUICK_WORK, dtype), np.zeros(QUICK_WORK, dtype))  # optimised from here
        optimised = uf(x, y)
        want = np.array([kernel(a, b) for a, b in zip(x.tolist(), y.tolist())], dtype)
        nexp = ~(x > y) & np.isnan(x)  # exp's elements: libm or libmvec
        np.testing.assert_array_equal(quick[~nexp], optimised[~nexp])
        # float32: the interpreter computes in doubles
        tol = dict(rtol=1e-6, atol=1e-6) if dtype == np.float32 else dict(rtol=1e-15, atol=0)
        np.testing.assert_allclose(quick, want, **tol)
        np.testing.assert_allclose(optimised, want, **tol)


@pytest.mark.parametrize("layout", ["contiguous", "strided", "broadcast", "reduce",
                                    "accumulate", "overlapping-out"])
def test_the_first_call_may_take_any_path(target, layout):
    """On cpu the quick code takes them all."""
    uf = vectorize(SIGS, target=target)(affine)
    x = np.linspace(-2, 2, 4001)
    if layout == "contiguous":
        got, want = uf(x, x), affine(x, x)
    elif layout == "strided":
        got, want = uf(x[::3], x[1::3]), affine(x[::3], x[1::3])
    elif layout == "broadcast":
        got, want = uf(x, np.float64(0.5)), affine(x, 0.5)
    elif layout == "accumulate":
        got, want = uf.accumulate(x[:7]), [x[0]]
        for v in x[1:7]:
            want.append(affine(want[-1], v))
    elif layout == "overlapping-out":
        y = x.copy()
        got, want = uf(y[1:], y[:-1], out=y[:-1]), affine(x[1:], x[:-1])
    else:
        got, want = uf.reduce(x[:9]), x[0]
        for v in x[1:9]:
            want = affine(want, v)
    np.testing.assert_allclose(got, want, rtol=1e-12)


def test_gufunc_code_is_made_at_the_first_call(target):
    """Each signature has its body waiting; calls within quick code's budget
    (outer iterations times core sizes) run its quick code, whatever their
    strides, on the pool too; a call past it makes the optimised body."""
    made, pending, quick = made_pending_quick()
    g = guvectorize(["void(f8[:], f8[:])", "void(f4[:], f4[:])"], "(n)->(n)",
                    target=target)(running_sum)
    assert made_pending_quick() == (made, pending + 2, quick)
    a = np.random.default_rng(0).standard_normal((300, 34))
    np.testing.assert_allclose(g(a), np.cumsum(a, axis=1), rtol=1e-12)
    assert made_pending_quick() == (made, pending + 2, quick + 1)
    np.testing.assert_allclose(g(a[:, ::2]), np.cumsum(a[:, ::2], axis=1), rtol=1e-12)
    np.testing.assert_allclose(g(a[::-1]), np.cumsum(a[::-1], axis=1), rtol=1e-12)
    assert made_pending_quick() == (made, pending + 2, quick + 1)
    big = np.random.default_rng(1).standard_normal((2000, 40))  # 80,000 > QUICK_WORK
    np.testing.assert_allclose(g(big), np.cumsum(big, axis=1), rtol=1e-12)
    assert made_pending_quick() == (made + 1, pending + 1, quick + 1)
    np.testing.assert_allclose(g(a[:, ::3]), np.cumsum(a[:, ::3], axis=1), rtol=1e-12)
    assert made_pending_quick() == (made + 1, pending + 1, quick + 1)


def test_without_quick_code_a_gufunc_s_contig_body_comes_first():
    """With NUMBAVEC_QUICK=0 (and with a cache) each signature has two bodies
    waiting: the whole one and one of the unit-stride kernel alone, which a
    call on contiguous cores makes (half the machine code); a call with
    other strides makes the whole body, which then serves every call."""
    code = textwrap.dedent('''
        import gc, numpy as np, numbavec
        from numbavec import _core

        def running_sum(a, out):
            acc = 0.0
            for i in range(a.shape[0]):
                acc += a[i]
                out[i] = acc

        def counts():
            info = _core._jit_info()
            return info["compilations"], info["pending"], info["quick"]

        g = numbavec.guvectorize(["void(f8[:], f8[:])", "void(f4[:], f4[:])"],
                                 "(n)->(n)")(running_sum)
        seen = [counts()]
        a = np.random.default_rng(0).standard_normal((300, 34))
        ok = np.allclose(g(a), np.cumsum(a, axis=1), rtol=1e-12)
        seen.append(counts())
        ok = ok and np.allclose(g(a[:, ::2]), np.cumsum(a[:, ::2], axis=1), rtol=1e-12)
        seen.append(counts())
        ok = ok and np.allclose(g(a[::-1]), np.cumsum(a[::-1], axis=1), rtol=1e-12)
        seen.append(counts())
        print(ok, seen)
    ''')
    r = run_python(code, timeout=120, as_file=True, env=dict(os.environ, NUMBAVEC_QUICK="0"))
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == "True [(0, 4, 0), (1, 3, 0), (2, 2, 0), (2, 2, 0)]", r.stdout


@pytest.mark.parametrize("first", ["strided", "output-strided", "copied"])
def test_a_gufunc_first_called_with_other_strides(target, first):
    """The contig-only body gives such a call back before any work: the whole
    body runs it, whatever the pool did with the chunks."""
    made = counters()[0]
    g = guvectorize(["void(f8[:], f8[:])"], "(n)->(n)", target=target)(running_sum)
    a = np.random.default_rng(1).standard_normal((5000, 40))
    want = np.cumsum(a[:, ::2], axis=1)
    if first == "strided":
        got = g(a[:, ::2])
    elif first == "output-strided":
        out = np.zeros((5000, 40))
        g(np.ascontiguousarray(a[:, ::2]), out=out[:, ::2])
        got = out[:, ::2]
        assert not out[:, 1::2].any()
    else:
        h = guvectorize(["void(f8[::1], f8[:])"], "(n)->(n)", target=target)(running_sum)
        got = h(a[:, ::2])  # NumPy's strides, copied for the [::1] argument
    np.testing.assert_allclose(got, want, rtol=1e-12)
    assert counters()[0] >= made + 1


def test_inspection_makes_the_code():
    """The optimised loop's, whether quick code ran or not."""
    uf = vectorize(SIGS[:2])(affine)
    x = np.arange(5.0)
    np.testing.assert_array_equal(uf(x, x), affine(x, x))
    made, pending, quick = made_pending_quick()
    llvm = uf.inspect_llvm("f8(f8, f8)")
    assert "fmul <" in llvm or "fadd <" in llvm  # vectorized: optimised
    assert made_pending_quick() == (made + 1, pending - 1, quick)
    assert ".strided" in uf.inspect_asm("ff->f")
    assert made_pending_quick() == (made + 2, pending - 2, quick)
    np.testing.assert_array_equal(uf(x, x), affine(x, x))


def test_typing_errors_still_come_at_decoration():
    def bad(x, y):
        return x.no_such_attribute + y

    with pytest.raises(TypingError):
        vectorize(SIGS)(bad)


def test_racing_first_calls_make_the_code_once(target):
    uf = vectorize(SIGS, target=target)(affine)
    made, _, _, quick = counters()
    big = np.linspace(0, 1, 200_000)     # NumPy releases the GIL for these
    small = np.linspace(0, 1, 7)         # and keeps it for these
    results, errors = {}, []
    start = threading.Barrier(8)

    def call(k):
        try:
            start.wait()
            x = big if k % 2 else small
            results[k] = (uf(x, x), affine(x, x))
        except Exception as exc:  # noqa: BLE001 - reported below
            errors.append(exc)

    threads = [threading.Thread(target=call, args=(k,)) for k in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert not errors and len(results) == 8
    for got, want in results.values():
        np.testing.assert_array_equal(got, want)
    assert counters()[0] == made + 1
    assert counters()[3] <= quick + 1


def test_code_never_made_is_freed_with_its_ufunc():
    made, pending, live, quick = counters()
    uf = vectorize(SIGS)(affine)
    g = guvectorize(["void(f8[:], f8[:])"], "(n)->(n)")(running_sum)
    # each ufunc signature: its loop; the gufunc: its body
    assert counters() == (made, pending + 4, live + 4, quick)
    uf(np.arange(3.0), 1.0)  # quick code, freed with the rest
    del uf, g
    gc.collect()
    assert counters() == (made, pending, live, quick + 1)


def test_a_heavy_parallel_kernel_called_first_on_a_small_array():
    """The pool splits even a short call of an expensive kernel; NumPy's
    thread, which may hold the GIL, makes the code before handing out work
    (a worker taking the GIL would wait for it for ever)."""
    code = textwrap.dedent('''
        import math, numpy as np, numbavec

        @numbavec.vectorize(["f8(f8)"], target="parallel")
        def heavy(x):
            s = 0.0
            for k in range(2000):
                s += math.sin(x + k)
            return s

        x = np.linspace(0, 1, 300)
        want = np.array([sum(math.sin(v + k) for k in range(2000)) for v in x])
        np.testing.assert_allclose(heavy(x), want, rtol=1e-9)
        print("ok")
    ''')
    r = run_python(code, timeout=120, as_file=True)
    assert r.returncode == 0 and r.stdout.split() == ["ok"], r.stderr


def test_a_forked_child_makes_its_own_code():
    code = textwrap.dedent('''
        import os, numpy as np, numbavec
        from numbavec import _core

        @numbavec.vectorize(["f8(f8, f8)"])
        def f(x, y):
            return x * 3 + y

        pid = os.fork()
        if pid == 0:
            ok = np.array_equal(f(np.arange(5.0), 1.0), np.arange(5.0) * 3 + 1)
            ok = ok and np.array_equal(f(np.ones(70000), 1.0), np.full(70000, 4.0))
            info = _core._jit_info()
            os._exit(0 if ok and (info["quick"], info["compilations"]) == (1, 1) else 3)
        _, status = os.waitpid(pid, 0)
        before = _core._jit_info()
        print(os.waitstatus_to_exitcode(status), before["quick"], before["compilations"],
              f(np.float64(2), 1.0), _core._jit_info()["quick"])
    ''')
    r = run_python(code, timeout=120, as_file=True, env=dict(os.environ, NUMBAVEC_QUICK="1"))
    assert r.returncode == 0 and r.stdout.split() == ["0", "0", "0", "7.0", "1"], r.stderr


def test_a_child_forked_after_quick_code_runs_it_and_makes_the_optimised_loop():
    code = textwrap.dedent('''
        import os, numpy as np, numbavec
        from numbavec import _core

        @numbavec.vectorize(["f8(f8, f8)"])
        def f(x, y):
            return x * 3 + y

        x = np.arange(5.0)
        first = np.array_equal(f(x, 1.0), x * 3 + 1)
        pid = os.fork()
        if pid == 0:
            ok = np.array_equal(f(x, 2.0), x * 3 + 2)
            ok = ok and np.array_equal(f(np.ones(70000), x[1]), np.full(70000, 4.0))
            ok = ok and np.array_equal(f(x, 3.0), x * 3 + 3)
            info = _core._jit_info()
            os._exit(0 if ok and (info["quick"], info["compilations"]) == (1, 1) else 3)
        _, status = os.waitpid(pid, 0)
        info = _core._jit_info()
        print(first, os.waitstatus_to_exitcode(status), info["quick"], info["compilations"])
    ''')
    r = run_python(code, timeout=120, as_file=True, env=dict(os.environ, NUMBAVEC_QUICK="1"))
    assert r.returncode == 0 and r.stdout.split() == ["True", "0", "1", "0"], r.stderr


def test_eager_code_generation_on_request():
    code = textwrap.dedent('''
        import numbavec
        from numbavec import _core

        @numbavec.vectorize(["f8(f8, f8)", "f4(f4, f4)"])
        def f(x, y):
            return x * 3 + y

        @numbavec.guvectorize(["void(f8[:], f8[:])"], "(n)->()")
        def g(a, out):
            out[0] = a[0]

        info = _core._jit_info()
        print(info["compilations"], info["pending"])
    ''')
    lazy = run_python(code, env=dict(os.environ, NUMBAVEC_EAGER="0", NUMBAVEC_QUICK="1"),
                      as_file=True)
    eager = run_python(code, env=dict(os.environ, NUMBAVEC_EAGER="1"), as_file=True)
    # lazily, each signature has its loop or body waiting; eagerly they are made
    assert lazy.returncode == 0 and lazy.stdout.split() == ["0", "3"], lazy.stderr
    assert eager.returncode == 0 and eager.stdout.split() == ["3", "0"], eager.stderr
