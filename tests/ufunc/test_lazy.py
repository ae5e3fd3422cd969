"""Lazy ufuncs: bare @vectorize compiles a loop per new input-type combination.

Each test checks against ``py_func`` run by the interpreter or against what a
NumPy ufunc with the same loops does, on every target.
"""
import math
import threading

import numpy as np
import pytest

import numbavec
from numbavec import _core, vectorize

from conftest import assert_same


def muladd(x, y):
    return x * y + 1


def plus(x, y):
    return x + y


def scaled_exp(x):
    return math.exp(-x) * 2.0


def lazy(pyfunc, target, **options):
    return vectorize(target=target, **options)(pyfunc)


def compilations():
    """Machine code made: the optimised loops, and the quick ones the cpu
    target's first calls run."""
    info = _core._jit_info()
    return info["compilations"] + info["quick"]


def test_bare_decorator_gives_a_real_ufunc_with_no_loops():
    @vectorize
    def f(x, y):
        """Doc of f."""
        return x - y

    assert isinstance(f, np.ufunc)
    assert (f.nin, f.nout, f.nargs, f.ntypes, f.types) == (2, 1, 3, 0, [])
    assert f.__name__ == "f" and f.__doc__.endswith("Doc of f.")
    assert f.signature is None and f.identity is None
    assert f.py_func(5, 3) == 2


@pytest.mark.parametrize("form", ["options", "empty list"])
def test_options_only_and_empty_list_are_lazy(target, form):
    f = lazy(muladd, target) if form == "options" else vectorize([], target=target)(muladd)
    assert f.ntypes == 0
    assert_same(f(np.float32([1, 2]), np.float32(3)), np.float32([4, 7]))
    assert f.types == ["ff->f"]


@pytest.mark.parametrize("dtype", ["?", "i1", "u1", "i2", "u2", "i4", "u4", "i8", "u8",
                                   "f4", "f8", "c8", "c16"])
def test_each_dtype_compiles_its_own_loop(target, dtype):
    f = lazy(plus, target)
    x = (np.arange(6) % 2).astype(dtype)
    got = f(x, x)
    expected = np.array([plus(a, b) for a, b in zip(x, x)]).astype(got.dtype)
    assert_same(got, expected)
    char = np.dtype(dtype).char
    assert f.types[0].startswith(char + char + "->")


def test_type_combinations_accumulate_in_call_order(target):
    f = lazy(muladd, target)
    a32, a64, i32 = np.float32([1, 2]), np.float64([1, 2]), np.int32([1, 2])
    f(a32, a32)
    f(a64, a64)
    f(i32, a64)
    f(a32, a32)             # known: nothing new
    assert f.types == ["ff->f", "dd->d", "id->d"]
    assert f.ntypes == 3


@pytest.mark.parametrize("array_dtype, scalar, loop", [
    # concrete inputs keep their type; a Python scalar takes np.result_type
    # of itself and them (NEP 50: a Python float does not upcast float32)
    ("f4", 2.0, "ff->f"),
    ("i4", 3, "ii->i"),
    ("i1", 3, "bb->b"),
    ("u1", 3, "BB->B"),
    ("i4", 2.5, "id->d"),       # the scalar: np.result_type(int32, 2.5), float64
    ("f4", 1j, "fF->F"),
    ("?", 1, "?l->l"),
])
def test_python_scalars_are_weak(target, array_dtype, scalar, loop):
    f = lazy(muladd, target)
    x = np.ones(3, dtype=array_dtype)
    got = f(x, scalar)
    assert f.types == [loop]
    assert got.dtype == np.dtype(loop[-1])
    np.testing.assert_allclose(got, muladd(x.astype(got.dtype), scalar))


def test_only_python_scalars_take_their_default_types(target):
    f = lazy(muladd, target)
    assert_same(f(2, 3), np.int64(7))
    assert_same(f(2.0, 3.5), np.float64(8.0))
    assert f.types == ["ll->l", "dd->d"]


def test_known_types_do_not_compile_again(target):
    f = lazy(muladd, target)
    x = np.float32([1, 2, 3])
    f(x, x)
    before = compilations()
    for _ in range(3):
        f(x, x)
        f(x, 2.0)
        f(x[::2], np.float32(1))
    assert compilations() == before
    assert f.types == ["ff->f"]


def test_out_of_an_exact_new_type(target):
    # All operand DTypes concrete and out= given: NumPy's dispatcher must
    # still find the loop compiled for them on the first call.
    f = lazy(muladd, target)
    x = np.float32([1, 2])
    out = np.empty(2, np.float32)
    f(x, x, out=out)
    assert_same(out, np.float32([2, 5]))


def test_out_of_another_type_casts(target):
    f = lazy(muladd, target)
    out = np.empty(2, np.float64)
    f(np.float32([1, 2]), np.float32([3, 4]), out=out)
    assert_same(out, np.float64([4, 9]))
    assert f.types == ["ff->f"]


def test_dtype_argument_computes_in_that_type(target):
    f = lazy(muladd, target)
    got = f(np.float32([1, 2]), np.float32([3, 4]), dtype=np.float64)
    assert_same(got, np.float64([4, 9]))
    assert f.types == ["dd->d"]


def test_where_and_broadcasting(target):
    f = lazy(plus, target)
    x = np.arange(6, dtype=np.int16).reshape(2, 3)
    out = np.zeros((2, 3), np.int16)
    f(x, np.int16([10, 20, 30]), out=out, where=np.array([True, False, True]))
    assert_same(out, np.int16([[10, 0, 32], [13, 0, 35]]))


# -- methods ----------------------------------------------------------------

@pytest.fixture
def lazy_add(target):
    return lazy(plus, target, identity=0)


@pytest.mark.parametrize("dtype", ["i4", "f4", "f8", "c16"])
def test_reduce(lazy_add, dtype):
    x = np.arange(1, 10).astype(dtype)
    # dtype=: np.add alone widens small integer sums; a user ufunc does not
    assert_same(lazy_add.reduce(x), np.add.reduce(x, dtype=x.dtype))
    assert_same(lazy_add.reduce(x.reshape(3, 3), axis=1),
                np.add.reduce(x.reshape(3, 3), axis=1, dtype=x.dtype))
    assert np.dtype(dtype).char * 2 in lazy_add.types[0]


def test_reduce_empty_uses_the_identity(lazy_add):
    assert_same(lazy_add.reduce(np.zeros(0, np.float32)), np.float32(0))


def test_reduce_several_axes_with_an_identity(lazy_add):
    x = np.ones((3, 4), np.int32)
    assert_same(lazy_add.reduce(x, axis=(0, 1)), np.int32(12))


def test_reduce_without_identity(target):
    f = lazy(plus, target)
    assert_same(f.reduce(np.float64([1, 2, 3])), np.float64(6))
    with pytest.raises(ValueError):
        f.reduce(np.zeros(0))
    with pytest.raises(ValueError):
        f.reduce(np.ones((2, 2)), axis=(0, 1))


def test_accumulate(lazy_add):
    x = np.arange(6, dtype=np.int32)
    assert_same(lazy_add.accumulate(x), np.add.accumulate(x, dtype=x.dtype))


def test_reduceat(lazy_add):
    x = np.arange(8, dtype=np.float64)
    assert_same(lazy_add.reduceat(x, [0, 4, 5]), np.add.reduceat(x, [0, 4, 5]))


def test_outer(lazy_add):
    a, b = np.arange(3, dtype=np.float32), np.arange(2, dtype=np.float32)
    assert_same(lazy_add.outer(a, b), np.add.outer(a, b))


def test_at(lazy_add):
    x, y = np.zeros(5), np.zeros(5)
    lazy_add.at(x, [0, 1, 1, 4], 1.5)
    np.add.at(y, [0, 1, 1, 4], 1.5)
    assert_same(x, y)


def test_unary_and_math(target):
    f = lazy(scaled_exp, target)
    x = np.linspace(0, 2, 7, dtype=np.float32)
    got = f(x)
    assert got.dtype == np.float32
    np.testing.assert_allclose(got, 2 * np.exp(-x), rtol=1e-6)
    assert f.types == ["f->f"]


# -- errors -------------------------------------------------------------------

def test_unsupported_dtype_raises_and_registers_nothing(target):
    f = lazy(plus, target)
    with pytest.raises(TypeError):
        f(np.array(["a"]), np.array(["b"]))
    with pytest.raises(TypeError):
        f(np.float16([1]), np.float16([1]))
    assert f.ntypes == 0
    assert_same(f(np.int8([1]), np.int8([2])), np.int8([3]))


def test_typing_error_on_first_call_registers_nothing(target):
    def bad(x, y):
        return x.nonexistent + y

    f = lazy(bad, target)
    with pytest.raises(numbavec.TypingError):
        f(np.float64([1]), np.float64([1]))
    assert f.ntypes == 0
    with pytest.raises(numbavec.TypingError):   # still fails, still clean
        f(np.float64([1]), np.float64([1]))


def test_inspection_follows_the_compiled_loops(target):
    f = lazy(muladd, target)
    f(np.float32([1]), np.float32([1]))
    assert "fmul" in f.inspect_llvm("float32(float32, float32)")
    assert list(f.inspect_llvm()) == ["float32(float32, float32)"]


# -- threads -------------------------------------------------------------------

def test_threads_racing_on_a_new_type_compile_it_once(target):
    f = lazy(scaled_exp, target)
    x = np.linspace(0, 1, 1000)
    start = threading.Barrier(8)
    results, errors = [None] * 8, []

    def run(i):
        try:
            start.wait()
            results[i] = f(x)
        except Exception as exc:  # noqa: BLE001 - reported below
            errors.append(exc)

    before = compilations()
    threads = [threading.Thread(target=run, args=(i,)) for i in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    assert compilations() - before == 1
    assert f.types == ["d->d"]
    for r in results:
        np.testing.assert_allclose(r, 2 * np.exp(-x))


def test_threads_racing_on_different_new_types(target):
    f = lazy(plus, target)
    dtypes = ["i1", "i2", "i4", "i8", "f4", "f8"]
    start = threading.Barrier(len(dtypes) * 2)
    errors = []

    def run(dt):
        try:
            start.wait()
            x = np.arange(10).astype(dt)
            assert_same(f(x, x), x + x)
        except Exception as exc:  # noqa: BLE001
            errors.append(exc)

    threads = [threading.Thread(target=run, args=(dt,)) for dt in dtypes * 2]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    assert sorted(f.types) == sorted(np.dtype(d).char * 2 + "->" + np.dtype(d).char
                                     for d in dtypes)


# -- __array_ufunc__ containers -----------------------------------------------

def test_dask_array_compiles_on_the_chunks(target):
    da = pytest.importorskip("dask.array")
    f = lazy(muladd, target)
    x = da.arange(12, chunks=4).astype(np.float32)
    y = f(x, 2.0)
    assert isinstance(y, da.Array)
    assert f.ntypes == 0 or f.types == ["ff->f"]     # dask may probe on meta arrays
    assert_same(y.compute(), muladd(np.arange(12, dtype=np.float32), np.float32(2)))
    assert f.types == ["ff->f"]


def test_xarray_dataarray(target):
    xr = pytest.importorskip("xarray")
    f = lazy(muladd, target)
    data = xr.DataArray(np.arange(6, dtype=np.int32).reshape(2, 3), dims=("a", "b"))
    got = f(data, data)
    assert isinstance(got, xr.DataArray) and got.dims == ("a", "b")
    assert_same(got.values, muladd(data.values, data.values))
    assert f.types == ["ii->i"]


# ---- what Python code can and cannot do to a ufunc's state ----

def test_no_attribute_can_free_or_corrupt_the_code(target):
    """The loops own what they run: replacing or deleting any attribute
    leaves the ufunc working (it used to crash, or run freed code)."""
    import gc

    f = lazy(muladd, target)
    g = vectorize(["f8(f8, f8)"], target=target)(muladd)
    for u in (f, g):
        u(np.float64([1.0]), 2.0)
        for name in list(vars(u)):
            delattr(u, name)
        for name in ("_numbavec_lazy", "_numbavec_code", "py_func", "inspect_llvm"):
            setattr(u, name, 42)
        gc.collect()
        assert_same(u(np.float64([1.0, 2.0]), 3.0), np.float64([4.0, 7.0]))
    assert_same(f(np.int32([2]), np.int32(3)), np.int32([7]))     # compiles after tampering


def test_code_of_only_answers_for_numbavec_ufuncs():
    with pytest.raises(TypeError, match="not a numbavec ufunc"):
        _core._code_of(np.add)
    with pytest.raises(TypeError, match="not a numbavec ufunc"):
        _core._code_of(np.frompyfunc(lambda x: x, 1, 1))
    with pytest.raises(TypeError, match="not a lazy numbavec ufunc"):
        _core._lazy_add(np.add, "f8(f8, f8)")


class _CallsBack:
    """A global whose attribute, read while a kernel compiles, calls that
    kernel's ufunc (`ufunc(*args)`, once, or on every read with `every`)."""

    def __init__(self, every=False):
        self.ufunc, self.args, self.every, self.calls, self.results = None, (), every, 0, []

    @property
    def value(self):
        if self.ufunc is not None and (self.every or self.calls == 0):
            self.calls += 1
            self.results.append(self.ufunc(*self.args))
        return 2.0


_callback = _CallsBack()
_callback_every = _CallsBack(every=True)


def _calls_itself(x):
    return x * _callback.value


def _calls_itself_always(x):
    return x * _callback_every.value


def test_compiling_a_loop_may_call_the_ufunc_with_other_types(target):
    """The float32 loop compiles inside the float64 one; both land intact
    (the inner compilation used to write over the outer one's entry)."""
    f = lazy(_calls_itself, target)
    _callback.ufunc, _callback.args, _callback.calls = f, (np.float32([3.0]),), 0
    _callback.results = []
    assert_same(f(np.float64([1.0, 5.0])), np.float64([2.0, 10.0]))
    assert_same(_callback.results[0], np.float32([6.0]))
    assert sorted(f.types) == ["d->d", "f->f"]
    assert_same(f(np.float32([4.0])), np.float32([8.0]))
    assert sorted(_core._code_of(f).signatures) == ["float32(float32)", "float64(float64)"]


def test_compiling_a_loop_that_needs_itself_is_an_error(target):
    f = lazy(_calls_itself_always, target)
    _callback_every.ufunc, _callback_every.args = f, (np.float64([3.0]),)
    with pytest.raises(numbavec.TypingError, match="reading attribute 'value' raised") as info:
        f(np.float64([1.0]))
    assert isinstance(info.value.__cause__, RecursionError)
    assert "while compiling its loop for them" in str(info.value.__cause__)
    assert f.types == []
    _callback_every.ufunc = None
    assert_same(f(np.float64([1.0])), np.float64([2.0]))


# A lazy ufunc f whose compilation waits, inside its lock, until `release`
# is set (`inside` says it got there).
SLOW_COMPILE = """
import os, sys, threading, signal
import numpy as np
from numbavec import vectorize

def slow_ufunc():
    inside, release = threading.Event(), threading.Event()

    class Slow:
        @property
        def value(self):
            inside.set()
            release.wait(30)
            return 2.0

    slow = Slow()

    def k(x):
        return x * slow.value

    return vectorize(target={target!r})(k), inside, release

f, inside, release = slow_ufunc()
"""


def test_fork_while_another_thread_compiles(target, tmp_path):
    """A child forked while a thread holds the ufunc's compile lock can
    still compile (it used to deadlock on the lock of a thread it lacks)."""
    from conftest import run_python
    script = tmp_path / "fork_compile.py"
    script.write_text(SLOW_COMPILE.format(target=target) + """
t = threading.Thread(target=lambda: f(np.float64([1.0])))
t.start()
inside.wait(30)
pid = os.fork()
if pid == 0:
    release.set()          # the child's copy: no thread is waiting on it
    ok = f(np.int32([4]))[0] == 8 and f(np.float64([1.5]))[0] == 3.0
    os._exit(0 if ok else 3)
_, status = os.waitpid(pid, 0)
release.set()
t.join()
assert f(np.float64([2.0]))[0] == 4.0
sys.exit(os.waitstatus_to_exitcode(status))
""")
    proc = run_python(f"import runpy; runpy.run_path({str(script)!r}, run_name='__main__')",
                      timeout=120)
    assert proc.returncode == 0, proc.stderr


FORK_RACE = """
sys.setswitchinterval(1.0)     # threads switch only where one blocks
hung = 0
for round_ in range(12):
    f, inside, release = slow_ufunc()
    c = threading.Thread(target=lambda: f(np.float64([1.0])))
    c.start()
    inside.wait(30)
    a = threading.Thread(target=lambda: f(np.float64([1.0])))   # waits for the lock
    a.start()
    release.set()
    c.join()      # c releases the lock, a takes it without the GIL, and may not have the GIL yet
    pid = os.fork()
    if pid == 0:
        signal.alarm(20)
        os._exit(0 if f(np.int32([4]))[0] == 8 else 3)
    _, status = os.waitpid(pid, 0)
    a.join()
    hung += os.waitstatus_to_exitcode(status) != 0
sys.exit(hung)
"""


def test_fork_just_as_another_thread_takes_the_lock(target, tmp_path):
    """A thread that took the compile lock without the GIL had not yet said
    so when another thread forked: the child found the lock held by no one
    it knew and deadlocked (about 3 rounds in 10).  Every child now makes a
    new lock for a state whose lock predates its fork."""
    from conftest import run_python
    script = tmp_path / "fork_race.py"
    script.write_text(SLOW_COMPILE.format(target=target) + FORK_RACE)
    proc = run_python(f"import runpy; runpy.run_path({str(script)!r}, run_name='__main__')",
                      timeout=300)
    assert proc.returncode == 0, f"{proc.returncode} of 12 children hung\n{proc.stderr[-2000:]}"


# ---- add() as Numba's DUFunc.add (issue 34, sixth fault) ----

def test_add_registers_the_signature_s_return_type(target):
    f = lazy(plus, target)
    f.add("float32(float64, float64)")
    assert f.types == ["dd->f"]
    x = np.float64([0.1, 1e-9])
    assert_same(f(x, x), (x + x).astype(np.float32))


def test_add_with_another_arity_is_a_type_error(target):
    f = lazy(plus, target)
    for signature in ("float32(float64, float64, float64)", "float64(float64)",
                      "void(float64, float64, float64)", "(float64, float64, float64)"):
        with pytest.raises(TypeError, match="takes 2 arguments|returns a value"):
            f.add(signature)
    assert f.types == []


def test_add_naming_another_return_for_the_same_inputs_is_a_type_error(target):
    f = lazy(plus, target)
    f(1.0, 2.0)
    with pytest.raises(TypeError, match="has a loop for these input types already"):
        f.add("float32(float64, float64)")
    f.add("float64(float64, float64)")      # the one it has: nothing to do
    f.add("(float64, float64)")
    assert f.types == ["dd->d"]


def test_an_out_of_another_type_does_not_choose_the_loop(target):
    """Only add() names a return type: a call's out= is cast into, as NumPy
    does for any ufunc, and the loop is the kernel's own."""
    f = lazy(plus, target)
    out = np.zeros(2, np.float32)
    f(np.float64([1.5, 2.5]), 1.0, out=out, casting="unsafe")
    assert f.types == ["dd->d"]
    assert_same(out, np.float32([2.5, 3.5]))
