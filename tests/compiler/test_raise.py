"""raise and assert in kernels: the call raises that exception, with those
arguments, after the loop stops (the first element that raised, in
element order, on the parallel target too), as the function run by the
interpreter on the first failing element does.  What cannot be reported
(a computed message, a class no other process finds) is a TypingError."""

import math
import os
import subprocess
import sys
import textwrap
import threading

import numpy as np
import pytest

import numbavec
from numbavec import guvectorize, jit, vectorize

from conftest import NUMBAVEC_ROOT as ROOT
from conftest import kernel_from_source, needs_gpu


class KernelError(Exception):
    """A user's exception class, defined at a module's top level."""


TOO_BIG = OverflowError("too big", 100)     # a global instance a kernel raises


def checked_sqrt(x):
    if x < 0:
        raise ValueError("negative input")
    return math.sqrt(x)


# (from a text: pytest rewrites the asserts of a test module's own functions)
picky = kernel_from_source('''
def picky(x):
    assert x != 3, "three is not allowed"
    if x > 100:
        raise KernelError
    if x == -7:
        raise TOO_BIG
    return x * 2
''', "picky", globals_={"KernelError": KernelError, "TOO_BIG": TOO_BIG})


def first_raised_by_py_func(pyfunc, values):
    """The exception the interpreter raises on the first failing element."""
    for v in np.asarray(values).ravel():
        try:
            pyfunc(v)
        except BaseException as exc:   # noqa: BLE001 - whatever the kernel raises
            return exc
    return None


def assert_raises_as_python(f, pyfunc, values, *args):
    want = first_raised_by_py_func(pyfunc, values)
    assert want is not None
    with pytest.raises(type(want)) as info:
        f(values, *args)
    assert type(info.value) is type(want) and info.value.args == want.args


@pytest.mark.parametrize("eager", [True, False])
def test_vectorize_raise(target, eager):
    f = (vectorize(["float64(float64)", "float32(float32)"], target=target) if eager
         else vectorize(target=target))(checked_sqrt)
    x = np.arange(5.0)
    np.testing.assert_array_equal(f(x), np.sqrt(x))
    assert_raises_as_python(f, checked_sqrt, np.array([1.0, -1.0, 4.0]))
    assert_raises_as_python(f, checked_sqrt, np.array([-1.0], np.float32))
    # nothing is left behind: the next call computes
    np.testing.assert_array_equal(f(x), np.sqrt(x))
    assert isinstance(f, np.ufunc)


def test_assert_a_user_class_and_a_global_instance(target):
    f = vectorize(["int64(int64)"], target=target)(picky)
    np.testing.assert_array_equal(f(np.arange(3)), np.arange(3) * 2)
    for values in ([1, 2, 3, 4], [5, 200], [-7], [0, 150, 3]):
        assert_raises_as_python(f, picky, np.array(values))


def test_the_first_element_that_raises_wins(target, forced):
    def which(x):
        if x == -2.0:
            raise ValueError("first")
        if x == -1.0:
            raise ValueError("second")
        return x

    f = vectorize(["float64(float64)"], target=target)(which)
    for n in (1000, 1_000_003):
        x = np.ones(n)
        x[n // 3] = -2.0
        x[2 * n // 3] = -1.0
        x[-1] = -1.0
        with pytest.raises(ValueError, match="first"):
            f(x)
        x[n // 3] = 1.0
        with pytest.raises(ValueError, match="second"):
            f(x)
        # strided and broadcast operands take the other loops
        with pytest.raises(ValueError, match="second"):
            f(x[::-1])
        with pytest.raises(ValueError, match="first"):
            f(np.broadcast_to(-2.0, (n,)))


def test_reduce_and_accumulate_report_the_raise(target):
    @vectorize(["int64(int64, int64)"], identity=0, target=target)
    def small_add(a, b):
        assert a + b < 100, "too big"
        return a + b

    assert small_add.reduce(np.arange(10)) == 45
    with pytest.raises(AssertionError, match="too big"):
        small_add.reduce(np.arange(100))
    with pytest.raises(AssertionError, match="too big"):
        small_add.accumulate(np.arange(100))
    np.testing.assert_array_equal(small_add(np.arange(3), 1), [1, 2, 3])


def test_a_device_function_raises_for_its_caller(target):
    @jit
    def check(x):
        if x != x:
            raise FloatingPointError("nan in input")
        return x

    @vectorize(["float64(float64)"], target=target)
    def f(x):
        return check(x) * 2

    @guvectorize(["void(float64[:], float64[:])"], "(n)->()", target=target)
    def g(a, out):
        s = 0.0
        for v in a:
            s += check(v)
        out[0] = s

    for k in (f, g):
        with pytest.raises(FloatingPointError, match="nan in input"):
            k(np.array([[1.0, np.nan]]))


@pytest.mark.parametrize("dynamic", [False, True])
def test_gufunc_raise_stops_and_reports(target, forced, dynamic):
    def positive_sum(a, out):
        s = a[0] - a[0]
        for v in a:
            if v < 0:
                raise ValueError("negative", 7)
            s += v
        out[0] = s

    g = (guvectorize("(n)->()", target=target) if dynamic else
         guvectorize(["void(float64[:], float64[:])"], "(n)->()", target=target))(positive_sum)
    np.testing.assert_array_equal(g(np.ones((3, 4))), [4.0, 4.0, 4.0])
    x = np.ones((20000, 4))
    x[5000, 2] = -1
    with pytest.raises(ValueError) as info:
        g(x)
    assert info.value.args == ("negative", 7)
    np.testing.assert_array_equal(g(np.ones((2, 2))), [2.0, 2.0])


def test_an_output_written_before_the_raise_keeps_nothing_else(target):
    """A gufunc kernel stops at the raise: what it wrote stays, as in Python."""
    @guvectorize(["void(float64[:], float64[:])"], "(n)->(n)", target=target)
    def fill_until_negative(a, out):
        for i in range(a.shape[0]):
            if a[i] < 0:
                raise ValueError("negative")
            out[i] = a[i]

    out = np.full(4, -9.0)
    with pytest.raises(ValueError):
        fill_until_negative(np.array([1.0, 2.0, -1.0, 4.0]), out=out)
    np.testing.assert_array_equal(out, [1.0, 2.0, -9.0, -9.0])


def test_threads_keep_their_own_exceptions(target):
    f = vectorize(["float64(float64)"], target=target)(checked_sqrt)
    errors, results = [], []

    def work(i):
        for _ in range(50):
            try:
                if i % 2:
                    f(np.array([1.0, -1.0]))
                    errors.append("no raise")
                else:
                    results.append(f(np.full(1000, 4.0)).sum())
            except ValueError as exc:
                errors.append(exc.args)

    threads = [threading.Thread(target=work, args=(i,)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == [("negative input",)] * 100
    assert results == [2000.0] * 100


@pytest.mark.parametrize("body, message", [
    ("raise", "bare 'raise'"),
    ("raise ValueError('x') from None", "'raise ... from ...'"),
    ("raise ValueError(f'bad {x}')", "must be constants"),
    ("raise ValueError(x)", "must be constants"),
    ("raise ValueError(msg='x')", "no keyword arguments"),
    ("raise Local('x')", "found by its module and name"),
    ("raise ValueError(float('nan'))", "must be constants"),
    ("raise len", "only raise exceptions"),
    ("raise x", "named by a global"),
    ("assert x, f'{x}'", "must be a constant"),
])
def test_what_cannot_be_reported_is_a_typing_error(target, body, message):
    class Local(Exception):
        pass

    k = kernel_from_source(f"def k(x):\n    {body}\n    return x\n", globals_={"Local": Local})
    with pytest.raises(numbavec.TypingError, match=message):
        vectorize(["float64(float64)"], target=target)(k)


HAVE_LIBDEVICE = numbavec.cuda.toolkit_info()["libdevice"] is not None
needs_libdevice = pytest.mark.skipif(not HAVE_LIBDEVICE, reason="no libdevice (CUDA toolkit)")


def checked_twice(x):
    if x < 0:
        raise ValueError("negative", 1)
    assert x == x, "nan in the input"
    return x * 2


@needs_libdevice
@pytest.mark.parametrize("arch", ["sm_80", "sm_90"])
@pytest.mark.slow
def test_cuda_vectorize_raise_stores_its_modules_status_word(arch, tmp_path):
    """A cuda ufunc's kernel stores CC_STATUS_USER + the site's index in its
    module's global word (LLVM's NVPTX back end: libNVVM's dialect printer
    has no globals), which the call reads after the kernel; the reduce
    kernel has its own.  The PTX assembles."""
    from conftest import HAVE_PTXAS, assemble
    from numbavec import _core
    from numbavec._source import KernelSource

    s = KernelSource(checked_twice)
    f = _core.vectorize(checked_twice, s.funcdef, s.location, ["float32(float32)"],
                        target="cuda", nin=1, arch=arch)
    ptx = f.inspect_ptx("float32(float32)")
    assert ".visible .global .align 4 .u32 numbavec_status;" in ptx
    assert "st.global.u32" in ptx and "[numbavec_status]" in ptx
    k = kernel_from_source("def k(a, b):\n    assert a + b < 1e6, 'too big'\n    return a + b\n")
    add = vectorize(["float32(float32, float32)"], target="cuda", identity=0)(k)
    assert "[numbavec_status]" in add.inspect_ptx("float32(float32, float32)", True)
    if HAVE_PTXAS:
        assemble(ptx, arch, tmp_path)


@needs_gpu
def test_cuda_vectorize_raises_after_the_kernel():
    f = vectorize(["float32(float32)"], target="cuda")(checked_twice)
    x = np.ones(100_000, np.float32)
    np.testing.assert_array_equal(f(x), 2 * x)
    x[71_234] = -1
    with pytest.raises(ValueError) as info:
        f(x)
    assert info.value.args == ("negative", 1)
    d = numbavec.cuda.to_device(np.array([1.0, np.nan], np.float32))
    with pytest.raises(AssertionError, match="nan in the input"):
        f(d)
    x[71_234] = 3
    np.testing.assert_array_equal(f(x), 2 * x)     # the word was cleared
    k = kernel_from_source("def k(a, b):\n    assert a + b < 1e6, 'too big'\n    return a + b\n")
    add = vectorize(["float32(float32, float32)"], target="cuda", identity=0)(k)
    assert add.reduce(np.ones(1000, np.float32)) == 1000
    with pytest.raises(AssertionError, match="too big"):
        add.reduce(np.full(1000, 1e5, np.float32))


def positive_sum(a, out):
    s = a[0] - a[0]
    for v in a:
        if v < 0:
            raise ValueError("negative", 3)
        assert v == v, "nan in the input"
        s += v
    out[0] = s


@needs_libdevice
@pytest.mark.parametrize("arch", ["sm_80", "sm_90"])
def test_cuda_gufunc_raise_sets_the_status_word(arch, tmp_path):
    """On a GPU the kernel stores CC_STATUS_USER + the site's index (32, 33)
    in the status word the call reads back; the PTX assembles."""
    from conftest import HAVE_PTXAS, assemble
    from numbavec import _core
    from numbavec._source import KernelSource

    s = KernelSource(positive_sum)
    g = _core.guvectorize(positive_sum, s.funcdef, s.location, ["void(float32[:], float32[:])"],
                          "(n)->()", target="cuda", arch=arch)
    ptx = g.inspect_ptx("void(float32[:], float32[:])")
    assert "mov.u32" in ptx and ", 32;" in ptx and ", 33;" in ptx
    if HAVE_PTXAS:
        assemble(ptx, arch, tmp_path)


@needs_gpu
def test_cuda_gufunc_raises_after_the_kernel():
    g = guvectorize(["void(float32[:], float32[:])"], "(n)->()", target="cuda")(positive_sum)
    x = np.ones((1000, 8), np.float32)
    np.testing.assert_array_equal(g(x), np.full(1000, 8.0, np.float32))
    x[517, 3] = -1
    with pytest.raises(ValueError) as info:
        g(x)
    assert info.value.args == ("negative", 3)
    x[517, 3] = np.nan
    with pytest.raises(AssertionError, match="nan in the input"):
        g(numbavec.cuda.to_device(x))
    x[517, 3] = 1
    np.testing.assert_array_equal(g(x), np.full(1000, 8.0, np.float32))


def test_loops_that_may_fail_are_array_methods(target):
    """A kernel that may raise, and one whose machine code waits for its
    first call (making it may run out of memory), take the ArrayMethod loops:
    NumPy asks those whether they failed, never a legacy loop.  Only code
    made at decoration (NUMBAVEC_EAGER=1) keeps NumPy's legacy loops."""
    from numbavec import _core
    plain = vectorize(["float64(float64)"], target=target)(lambda x: x + 1)
    raising = vectorize(["float64(float64)"], target=target)(checked_sqrt)
    assert plain.types == raising.types == ["d->d"]
    assert _core._code_of(plain) is not None and _core._code_of(raising) is not None
    with pytest.raises(RuntimeError, match="compilation disabled"):
        _core._lazy_add(raising, "float32(float32)")
    if os.environ.get("NUMBAVEC_EAGER", "0") not in ("", "0"):
        with pytest.raises(TypeError, match="not a lazy numbavec ufunc"):
            _core._lazy_add(plain, "float32(float32)")
    else:
        with pytest.raises(RuntimeError, match="compilation disabled"):
            _core._lazy_add(plain, "float32(float32)")


def test_a_cached_kernel_raises_in_another_process(tmp_path):
    script = tmp_path / "job.py"
    script.write_text(textwrap.dedent('''
        import sys
        import numpy as np
        import numbavec

        @numbavec.vectorize(["f8(f8)"], cache=True)
        def checked(x):
            if x < 0:
                raise ValueError("negative", True)
            return x

        @numbavec.guvectorize(["void(f8[:], f8[:])"], "(n)->()", cache=True)
        def total(a, out):
            s = 0.0
            for v in a:
                assert v == v, "nan"
                s += v
            out[0] = s

        for f, bad in ((checked, np.array([1.0, -1.0])), (total, np.array([[np.nan]]))):
            try:
                f(bad)
            except (ValueError, AssertionError) as exc:
                print(type(exc).__name__, exc.args)
    '''))
    env = dict(os.environ, PYTHONPATH=str(ROOT), NUMBAVEC_CACHE_DIR=str(tmp_path / "cache"))
    runs = [subprocess.run([sys.executable, str(script)], env=env, capture_output=True,
                           timeout=120) for _ in range(2)]
    for out in runs:
        assert out.returncode == 0, out.stderr.decode()
        assert out.stdout.decode().splitlines() == ["ValueError ('negative', True)",
                                                    "AssertionError ('nan',)"]
    assert len(list((tmp_path / "cache").glob("*.nvc"))) == 2


def test_literal_arguments_and_a_long_message(target):
    """Any literal ast.literal_eval reads is an argument (negative numbers,
    None, tuples); quotes, escapes and length survive the trip."""
    long = "x" * 3000
    k = kernel_from_source(
        "def k(x):\n"
        f"    if x < 0:\n        raise ValueError('a\\x1fb%s%d\\n\\'\"{long}', -1, -2.5e3, None, (1, 2))\n"
        "    return x\n")
    f = vectorize(["float64(float64)"], target=target)(k)
    with pytest.raises(ValueError) as info:
        f(np.array([1.0, -1.0]))
    assert info.value.args == ("a\x1fb%s%d\n'\"" + long, -1, -2.5e3, None, (1, 2))


# ---- the class raised is the one the kernel read (issue 34, fifth fault) ----

class Rebound(Exception):
    """A class whose name is bound to another one after a kernel read it."""


def raises_rebound(x):
    if x < 0:
        raise Rebound("negative", 1)
    return x


def test_the_class_raised_is_the_one_the_kernel_compiled(target, monkeypatch):
    compiled_class = Rebound
    f = vectorize(["float64(float64)"], target=target)(raises_rebound)
    monkeypatch.setattr(sys.modules[__name__], "Rebound", KeyError)
    with pytest.raises(Exception) as info:
        f(np.float64([1.0, -1.0]))
    assert type(info.value) is compiled_class and info.value.args == ("negative", 1)


@pytest.mark.parametrize("cache", [False, True])
def test_a_class_defined_again_under_its_name_is_its_kernels_own(target, monkeypatch, tmp_path,
                                                                 cache):
    """Two classes of one module and name (a notebook cell run again): each
    kernel raises the one it read, whichever was defined last."""
    monkeypatch.setenv("NUMBAVEC_CACHE_DIR", str(tmp_path))
    first_class = Rebound
    first = vectorize(["float64(float64)"], target=target, cache=cache)(raises_rebound)
    again = type("Rebound", (Exception,), {"__module__": __name__, "__qualname__": "Rebound"})
    monkeypatch.setattr(sys.modules[__name__], "Rebound", again)
    second = vectorize(["float64(float64)"], target=target, cache=cache)(raises_rebound)
    for f, cls in ((first, first_class), (second, again), (first, first_class)):
        with pytest.raises(Exception) as info:
            f(np.float64([-1.0]))
        assert type(info.value) is cls
