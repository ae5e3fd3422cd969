"""Device functions (@numbavec.jit, cuda.jit(device=True)): inlined into
kernels, typed at each call site, callable from Python; EXAMPLES.md section 4."""
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import numbavec
from numbavec import TypingError, cuda, float32

import _devhelpers
from examples import polar_distance, polar_to_cartesian
from conftest import compile_ufunc, kernel_from_source

OFFSET = -1.0           # must not leak into _devhelpers.shifted


# ---- EXAMPLES.md section 4 ----

# polar_to_cartesian and polar_distance: tests/support/examples.py, as EXAMPLES.md writes them

def numpy_polar_distance(rho1, theta1, rho2, theta2):
    x1, y1 = rho1 * np.cos(theta1), rho1 * np.sin(theta1)
    x2, y2 = rho2 * np.cos(theta2), rho2 * np.sin(theta2)
    return np.sqrt((x1 - x2) ** 2 + (y1 - y2) ** 2)


@pytest.mark.parametrize("dtype,rtol", [(np.float32, 1e-5), (np.float64, 1e-13)])
def test_polar_distance(target, dtype, rtol):
    ufunc = compile_ufunc(polar_distance, ['float32(float32, float32, float32, float32)',
                                           'float64(float64, float64, float64, float64)'],
                          target)
    rng = np.random.default_rng(4)
    n = 100_000
    args = [rng.uniform(0.5, 2.0, n).astype(dtype), rng.uniform(-np.pi, np.pi, n).astype(dtype),
            rng.uniform(0.5, 2.0, n).astype(dtype), rng.uniform(-np.pi, np.pi, n).astype(dtype)]
    got = ufunc(*args)
    assert got.dtype == dtype
    np.testing.assert_allclose(got, numpy_polar_distance(*args), rtol=rtol, atol=rtol)
    assert got[7] == pytest.approx(polar_distance(*(float(a[7]) for a in args)), rel=rtol)


# ---- the device-function object ----

def test_cuda_jit_device_is_numbavec_jit():
    assert isinstance(polar_to_cartesian, numbavec.DeviceFunction)
    assert type(numbavec.jit(lambda x: x)) is type(polar_to_cartesian)
    with pytest.raises(NotImplementedError, match="CUDA kernels"):
        cuda.jit(lambda x: x)


def test_callable_from_python():
    assert polar_to_cartesian(2.0, 0.0) == (2.0, 0.0)
    assert polar_to_cartesian.py_func(1.0, 0.0) == (1.0, 0.0)
    assert polar_to_cartesian.__name__ == "polar_to_cartesian"
    assert _devhelpers.shifted(1.0) == 103.0


def test_source_is_parsed_once():
    from numbavec.decorators import device_state

    state = device_state(polar_to_cartesian)
    assert state.source() is state.source()


# ---- inlining and typing ----

@numbavec.jit
def square(a):
    return a * a


@numbavec.jit
def sum_of_squares(a, b):
    return square(a) + square(b)


@numbavec.jit
def sorted_pair(a, b):
    if a > b:
        return b, a
    return a, b


def test_device_calls_device(target):
    def kernel(a, b):
        return sum_of_squares(a, b) + square(2)

    ufunc = compile_ufunc(kernel, ['int64(int64, int64)', 'float64(float64, float64)'], target)
    a, b = np.arange(-5, 5), np.arange(10)
    np.testing.assert_array_equal(ufunc(a, b), a * a + b * b + 4)
    np.testing.assert_allclose(ufunc(a / 2, b / 2), (a / 2) ** 2 + (b / 2) ** 2 + 4)


def test_tuple_return_index_and_unpack(target):
    def kernel(a, b):
        lo, hi = sorted_pair(a, b)
        return hi - lo + sorted_pair(a, b)[0] * 100

    ufunc = compile_ufunc(kernel, ['float64(float64, float64)'], target)
    a, b = np.array([1.0, 5.0, -2.0]), np.array([3.0, 2.0, -2.0])
    expected = np.array([kernel(x, y) for x, y in zip(a, b)])
    np.testing.assert_array_equal(ufunc(a, b), expected)


def test_typing_per_call_site():
    def kernel(x, i):
        return square(x) + square(i)

    ufunc = compile_ufunc(kernel, ['float64(float32, int64)'], "cpu")
    types = numbavec._core._code_of(ufunc).variable_types('float64(float32, int64)')
    inlined = {name: t for name, t in types.items() if name.startswith("square@")}
    assert sorted(inlined.values()) == ["float32", "float32", "int64", "int64"]
    big = np.int64(3_000_000_000)      # int64 square wraps like NumPy's, no float rounding
    got = ufunc(np.float32([1.5]), np.array([big]))
    assert got[0] == np.float64(np.float32(2.25)) + np.float64(big * big)


def test_globals_resolve_in_the_device_functions_module(target):
    def kernel(x):
        return _devhelpers.shifted(x) + OFFSET

    ufunc = compile_ufunc(kernel, ['float64(float64)'], target)
    np.testing.assert_array_equal(ufunc(np.array([1.0, 2.0])), [102.0, 105.0])
    hyp = _devhelpers.hyp

    def kernel2(a, b):
        return hyp(a, b)

    ufunc2 = compile_ufunc(kernel2, ['float32(float32, float32)'], target)
    assert ufunc2(np.float32(3), np.float32(4)) == np.float32(5)


def test_inlined_locals_do_not_meet_the_callers():
    def kernel(x):
        a = x + 1.0
        y = square(a)        # square's parameter is also named a
        return y + a

    ufunc = compile_ufunc(kernel, ['float64(float64)'], "cpu")
    assert ufunc(2.0) == 12.0


@numbavec.jit
def loops_and_early_return(n):
    total = 0
    for i in range(n):
        if i == 5:
            return total * 10
        total += i
    return total


def test_return_from_a_loop_inside_a_kernel_loop(target):
    def kernel(n):
        acc = 0
        for j in range(3):
            acc += loops_and_early_return(n + j)
        return acc

    ufunc = compile_ufunc(kernel, ['int64(int64)'], target)
    ns = np.arange(0, 9)
    np.testing.assert_array_equal(ufunc(ns), [kernel(int(v)) for v in ns])


# ---- errors ----

@numbavec.jit
def recurse(n):
    if n <= 0:
        return 0
    return recurse(n - 1) + 1


@numbavec.jit
def ping(n):
    return pong(n) if n > 0 else 0


@numbavec.jit
def pong(n):
    return ping(n - 1)


def test_direct_recursion_is_a_typing_error():
    def kernel(n):
        return recurse(n)

    with pytest.raises(TypingError, match=r"recursion.*recurse -> recurse"):
        compile_ufunc(kernel, ['int64(int64)'], "cpu")


def test_mutual_recursion_names_the_cycle():
    def kernel(n):
        return ping(n)

    with pytest.raises(TypingError, match=r": ping -> pong -> ping"):
        compile_ufunc(kernel, ['int64(int64)'], "cpu")


def test_errors_point_into_the_device_function():
    def kernel(x):
        return _devhelpers.bad_helper(x)

    with pytest.raises(TypingError) as info:
        compile_ufunc(kernel, ['float64(float64)'], "cpu")
    message = str(info.value)
    assert "_devhelpers.py:" in message and "return x.shape" in message


def test_wrong_argument_count_points_at_the_call():
    def kernel(x):
        return square(x, x)

    with pytest.raises(TypingError, match=r"test_devicefuncs.py:\d+.*square\(\) takes 1"):
        compile_ufunc(kernel, ['float64(float64)'], "cpu")


def test_plain_function_call_suggests_jit():
    def helper(x):
        return x

    def kernel(x):
        return helper(x)

    with pytest.raises(TypingError, match="numbavec.jit"):
        compile_ufunc(kernel, ['float64(float64)'], "cpu")


# ---- casts through numbavec's Type objects ----

def test_numbavec_type_as_cast(target):
    def kernel(x):
        return float32(x) + numbavec.int8(x)

    ufunc = compile_ufunc(kernel, ['float64(float64)'], target)
    # float32 + int8 is float32 (NumPy's promotion), then the float64 output
    assert ufunc(12.7) == np.float64(np.float32(12.7) + np.int8(12))
    # float -> int casts saturate at the target's range (docs/DESIGN-NOTES.md)
    assert ufunc(300.7) == np.float64(np.float32(300.7) + np.int8(127))


# ---- NUMBAVEC_DUMP=ir ----

def test_dump_ir(tmp_path):
    script = tmp_path / "k.py"
    script.write_text(textwrap.dedent("""
        import numbavec

        @numbavec.jit
        def twice(v):
            return v * 2

        @numbavec.vectorize(['float32(float32)'])
        def k(x):
            y = twice(x)
            return y + 1
    """))
    env = dict(os.environ, NUMBAVEC_DUMP="ir",
               PYTHONPATH=os.pathsep.join([os.path.dirname(os.path.dirname(numbavec.__file__)),
                                           os.environ.get("PYTHONPATH", "")]))
    proc = subprocess.run([sys.executable, str(script)], env=env, capture_output=True, text=True,
                          timeout=120)
    assert proc.returncode == 0, proc.stderr
    err = proc.stderr
    assert "typed IR: k float32(float32)" in err
    assert "; param x : float32" in err
    assert "inline twice@1.return : float32" in err
    assert "return -> twice@1.return" in err
    assert "binop + : float32" in err


def test_too_many_device_parameters_is_an_error():
    """More parameters than a call can pass (TS_MAXARGS) is a TypingError,
    not a write past the parameter table."""
    names = ", ".join(f"p{i}" for i in range(40))
    kernel = kernel_from_source(
        "import numbavec\n"
        f"@numbavec.jit\ndef wide({names}):\n    return p0\n"
        f"def k(x):\n    return wide({', '.join(['x'] * 30)})\n")
    with pytest.raises(TypingError, match="at most 32 parameters"):
        numbavec.vectorize(["float64(float64)"])(kernel)


# ---- defaults are the values the def took (issue 34, fourth fault) ----

SCALE_DEFAULT = 50


@numbavec.jit
def shifted_by_default(x, s=SCALE_DEFAULT, *, t=SCALE_DEFAULT + 1, pair=(2, 3)):
    return x + s + t + pair[1]


SCALE_DEFAULT = 100     # after the def: its defaults stay what they were, as in Python


def test_defaults_are_the_function_s_values_not_its_expressions(target):
    def kernel(x):
        return shifted_by_default(x) + shifted_by_default(x, 1.0, t=2.0)

    k = compile_ufunc(kernel, ["float64(float64)"], target)
    assert k(1.0) == kernel(1.0) == (1 + 50 + 51 + 3) + (1 + 1 + 2 + 3)


def test_a_default_taken_as_a_numpy_scalar_keeps_its_type(target):
    @numbavec.jit
    def halve(x, by=np.float32(2)):
        return x / by

    def kernel(x):
        return halve(x)

    k = compile_ufunc(kernel, ["float32(float32)"], target)
    got = k(np.float32([3.0]))
    assert got.dtype == np.float32 and got[0] == np.float32(1.5)


def test_a_default_a_kernel_cannot_hold_is_named():
    @numbavec.jit
    def listed(x, table=[1, 2]):      # noqa: B006 - the point of the test
        return x

    def kernel(x):
        return listed(x)

    with pytest.raises(TypingError, match="default value of 'table'.*'list'"):
        compile_ufunc(kernel, ["float64(float64)"], "cpu")


def test_a_default_rebound_on_the_function_is_read_when_the_kernel_compiles(target):
    """__defaults__ is the function's (as Python calls it): set anew before
    a kernel compiles, that kernel takes the new value, an earlier one keeps
    what it compiled."""
    @numbavec.jit
    def plus(x, s=1.0):
        return x + s

    first = compile_ufunc(lambda x: plus(x), ["float64(float64)"], target)
    plus.py_func.__defaults__ = (10.0,)
    second = compile_ufunc(lambda x: plus(x), ["float64(float64)"], target)
    assert (first(1.0), second(1.0)) == (2.0, 11.0) == (2.0, plus(1.0))


# ---- what a device function keeps (issue 34, third fault) ----

def test_a_device_function_keeps_its_state_out_of_its_dict():
    assert not [k for k in vars(polar_to_cartesian) if k.startswith("_numbavec")]
    with pytest.raises(AttributeError):
        polar_to_cartesian.py_func = lambda r, t: (0.0, 0.0)

    @numbavec.jit
    def inc(x):
        return x + 1

    inc.__wrapped__ = lambda x: x * 100
    inc._numbavec_device_source = lambda: None     # was read by the compiler
    k = compile_ufunc(lambda x: inc(x), ["float64(float64)"], "cpu")
    assert k(1.0) == 2.0 and inc(1.0) == 2.0


# ---- compile_ptx takes Python functions only (issue 34, sixth fault) ----

HAVE_LIBDEVICE = cuda.toolkit_info()["libdevice"] is not None


@pytest.mark.parametrize("what", [len, np.add, int, None, "x + 1", print, np.sin,
                                  (lambda: None).__call__])
def test_compile_ptx_of_what_is_not_a_function_is_a_type_error(what):
    with pytest.raises(TypeError, match="compile_ptx compiles a Python function"):
        cuda.compile_ptx(what, "float32(float32)")


def test_compile_ptx_of_other_callables_is_a_type_error():
    import functools

    class Callable:
        def __call__(self, x):
            return x

        def method(self, x):
            return x

    for what in (functools.partial(lambda x, y: x, 1), Callable(), Callable().method,
                 numbavec.vectorize(["f8(f8)"])(lambda x: x)):
        with pytest.raises(TypeError, match="compile_ptx compiles a Python function"):
            cuda.compile_ptx(what, "float32(float32)")


@pytest.mark.skipif(not HAVE_LIBDEVICE, reason="no libdevice (CUDA toolkit)")
def test_compile_ptx_of_a_device_function_compiles_its_function():
    @numbavec.jit
    def twice(x):
        return x * 2

    ptx = cuda.compile_ptx(twice, "float32(float32)")
    assert ".entry" in ptx or ".visible" in ptx
