"""Code written for Numba's @vectorize and @guvectorize runs unchanged: the
spellings, decorator forms, errors and DUFunc methods its users (and its own
public-API tests) rely on."""

import math
import re

import numpy as np
import pytest

import numbavec
from numbavec import guvectorize, jit, vectorize


def add(x, y):
    return x + y


# -- decorating a device function compiles its Python function -------------

def test_vectorize_of_a_jit_function(target):
    f = vectorize(["float64(float64, float64)", "int32(int32, int32)"], target=target)(jit(add))
    x = np.arange(5.0)
    np.testing.assert_array_equal(f(x, x), x + x)
    assert f(np.int32(2), np.int32(3)).dtype == np.int32
    assert f.py_func is add and f.__wrapped__ is add


def test_bare_vectorize_of_a_jit_function(target):
    f = vectorize(jit(add), target=target)
    assert f(np.int16(2), np.int16(3)) == np.int16(5) and f.types == ["hh->h"]


def test_guvectorize_of_a_jit_function(target):
    @jit
    def running(a, out):
        s = 0.0
        for i in range(a.shape[0]):
            s += a[i]
            out[i] = s

    g = guvectorize(["void(float64[:], float64[:])"], "(n)->(n)", target=target)(running)
    x = np.arange(8.0).reshape(2, 4)
    np.testing.assert_array_equal(g(x), np.cumsum(x, axis=1))
    # the device function is still one: callable from Python and from kernels
    out = np.zeros(3)
    running(np.ones(3), out)
    np.testing.assert_array_equal(out, [1, 2, 3])


# -- signatures in every spelling -------------------------------------------

def test_inspection_takes_every_spelling_of_a_signature(target):
    f = vectorize(["float32(float32, float32)", "float64(float64, float64)"], target=target)(add)
    want = f.inspect_llvm("float32(float32, float32)")
    assert "fadd float" in want
    for spelling in ("ff->f", "f f -> f", numbavec.float32(numbavec.float32, numbavec.float32),
                     f.types[0]):
        assert f.inspect_llvm(spelling) == want
        assert f.inspect_asm(spelling) == f.inspect_asm("float32(float32, float32)")
    assert f.inspect_llvm("dd->d") != want
    with pytest.raises(KeyError, match="no compiled signature"):
        f.inspect_llvm("ll->l")


def test_gufunc_inspection_takes_numpy_type_strings(target):
    @guvectorize(["void(float64[:], float64[:])", "void(int64[:], int64[:])"], "(n)->()",
                 target=target)
    def first(a, out):
        out[0] = a[0]

    assert first.types == ["d->d", "l->l"]
    for spelling, sig in zip(first.types, ("void(float64[:], float64[:])",
                                           "void(int64[:], int64[:])")):
        assert first.inspect_llvm(spelling) == first.inspect_llvm(sig)


def test_inspect_types_takes_numpy_type_strings(target, capsys):
    f = vectorize(["float32(float32, float32)"], target=target)(add)
    f.inspect_types(signature="ff->f")
    assert "float32" in capsys.readouterr().out


# -- Numba's errors -----------------------------------------------------------

def test_a_scalar_type_for_an_array_argument_is_numbas_type_error(target):
    def k(a, b, out):
        pass

    # Numba's words are the whole message (its users' tests compare them);
    # numbavec's explanation is a note, which tracebacks show
    with pytest.raises(TypeError) as info:
        guvectorize(["void(int32[:], int32, int32[:])"], "(n),(n)->(n)", target=target)(k)
    assert str(info.value) == "scalar type int32 given for non scalar argument #2"
    with pytest.raises(TypeError) as info:
        guvectorize(["void(float64, float64, float64[:])"], "(m,n),()->(n)", target=target)(k)
    assert str(info.value) == "scalar type float64 given for non scalar argument #1"
    assert re.search(r"argument #1 .* declare it float64\[:, :\]", info.value.__notes__[0])


def test_an_array_of_the_wrong_ndim_is_numbas_type_error(target):
    def k(a, out):
        pass

    with pytest.raises(TypeError) as info:
        guvectorize(["void(int32[:], int32[:])"], "(m,n)->(n)", target=target)(k)
    assert str(info.value) == "type and shape signature mismatch for arg #1"
    assert "is int32[:] (1 dimension(s)) but its layout in '(m,n)->(n)' has 2" \
        in info.value.__notes__[0]


def test_a_malformed_layout_says_bad_token_as_numba_does(target):
    with pytest.raises(ValueError, match=r"bad token in signature: expected '\(' at position 0"):
        guvectorize(["void(f8[:], f8[:])"], ")-:", target=target)(add)


def test_an_unknown_option_is_numbas_key_error_and_a_type_error(target):
    for make in (lambda: vectorize(["f8(f8, f8)"], target=target, nonexistent=2)(add),
                 lambda: vectorize(target=target, nonexistent=2)(add),
                 lambda: guvectorize("(n)->(n)", target=target, nonexistent=2)):
        for cls in (KeyError, TypeError):
            with pytest.raises(cls) as info:
                make()
            assert str(info.value).startswith("vectorize() got unexpected option(s): nonexistent") \
                or "guvectorize() got unexpected option(s): nonexistent" in str(info.value)
            assert "Unrecognized options" in str(info.value)


def test_a_gufunc_says_whether_it_is_dynamic_and_carries_its_docstring(target):
    def kern(a, out):
        "Copies a row."
        for i in range(a.shape[0]):
            out[i] = a[i]

    eager = guvectorize(["void(f8[:], f8[:])"], "(n)->(n)", target=target)(kern)
    dynamic = guvectorize("(n)->(n)", target=target)(kern)
    assert eager.is_dynamic is False and dynamic.is_dynamic is True
    assert eager.__doc__ == "Copies a row." and dynamic.__doc__ == "Copies a row."

    def twice(x):
        "Twice x."
        return 2 * x

    def plain(x):
        return x

    # a lazy ufunc as Numba's DUFunc; an eager one, or none, NumPy's text
    assert vectorize(target=target)(twice).__doc__ == "Twice x."
    assert vectorize(["f8(f8)"], target=target)(twice).__doc__.startswith("twice(x, /")
    assert vectorize(target=target)(plain).__doc__.startswith("plain(x, /")


def test_writable_args_naming_no_argument_is_numbas_runtime_error_and_a_value_error(target):
    def k(x_t, y_1):
        x_t[0] = y_1[0]

    for cls in (RuntimeError, ValueError):
        with pytest.raises(cls, match="k\\(\\) has no argument 'z_t'"):
            guvectorize(["void(f8[:], f8[:])"], "(t),()", writable_args=("z_t",),
                        target=target)(k)


def test_a_lambda_on_a_continuation_line(target):
    f = vectorize(["float64(float64, float64)"], target=target)(
        lambda x, y: x * y + 1)
    g = vectorize(["float64(float64)"], target=target)(lambda x: x - 1); h = vectorize(
        ["float64(float64)"], target=target)(lambda x: -x)
    assert f(2.0, 3.0) == 7.0 and g(2.0) == 1.0 and h(2.0) == -2.0
    with pytest.raises(numbavec.TypingError, match=r":\d+:23: None is not supported") as info:
        vectorize(["float64(float64)"], target=target)(
            lambda x: None)
    source, caret = info.value.args[0].splitlines()[-2:]
    assert caret.index("^") == source.index("None")


def test_a_bad_identity_is_reported_before_a_bad_signature(target):
    # Numba checks identity when the decorator is made: that error comes first
    with pytest.raises(ValueError, match="identity must be None, 'reorderable' or a number"):
        vectorize(["float64(float64)"], identity="bad", target=target)(add)
    with pytest.raises(ValueError, match="identity"):
        guvectorize(["void(f8[:], f8[:])"], "(n)->(n)", identity="bad", target=target)
    f = vectorize(["float64(float64, float64)"], identity="reorderable", target=target)(add)
    assert f.identity is None and f.reduce(np.arange(4.0)) == 6.0


# -- Numba's DUFunc surface on a lazy ufunc -----------------------------------

# NumPy's words when no loop takes the inputs (new-style and legacy resolution)
NO_LOOP = "did not contain a loop with signature matching|not supported for the input types"


def test_dufunc_ufunc_is_the_numpy_ufunc(target):
    f = vectorize(add, target=target)
    assert f.ufunc is f and isinstance(f.ufunc, np.ufunc)
    assert f.ufunc.reduce(np.arange(4)) == 6


def test_dufunc_add_compiles_a_signature_now(target):
    f = vectorize(add, target=target)
    assert f.types == []
    f.add("float32(float32, float32)")
    f.add(numbavec.int64(numbavec.int64, numbavec.int64))
    assert f.types == ["ff->f", "ll->l"]
    assert f(np.float32(1), np.float32(2)).dtype == np.float32
    with pytest.raises(TypeError, match="takes 2 arguments"):
        f.add("float32(float32)")


def test_disable_compile_keeps_the_loops_and_refuses_new_types(target):
    f = vectorize(add, target=target)
    x = np.arange(4.0)
    np.testing.assert_array_equal(f(x, x), x + x)
    f.disable_compile()
    np.testing.assert_array_equal(f(x, 2.0), x + 2)       # a Python float: the same loop
    np.testing.assert_array_equal(f(x, np.float64(2)), x + 2)
    # as for any ufunc: inputs NumPy can cast safely use the loops there are
    i = np.arange(4, dtype=np.int32)
    assert f(i, i).dtype == np.float64
    with pytest.raises(TypeError, match=NO_LOOP):
        f(x + 1j, x)
    with pytest.raises(RuntimeError, match="compilation disabled"):
        f.add("int32(int32, int32)")
    assert f.types == ["dd->d"]


def test_dynamic_gufunc_add_and_disable_compile(target):
    @guvectorize("(n)->()", target=target)
    def total(a, out):
        s = a[0] - a[0]
        for v in a:
            s += v
        out[0] = s

    total.add("void(int32[:], int64[:])")
    assert total.types == ["i->l"]
    assert total(np.arange(4, dtype=np.int32)).dtype == np.int64
    total.disable_compile()
    with pytest.raises(TypeError, match=NO_LOOP):
        total(np.arange(4.0))
    assert total.ufunc is total


def test_eager_ufuncs_have_no_dufunc_methods(target):
    f = vectorize(["float64(float64, float64)"], target=target)(add)
    assert not hasattr(f, "add") and not hasattr(f, "disable_compile")


# -- numbavec ufuncs called inside kernels ------------------------------------

@vectorize(["float32(float32, float32)", "float64(float64, float64)"])
def scaled_add(x, y):
    return x * 3 + y


@vectorize
def lazy_diff(x, y):
    return x - y


def test_an_eager_ufunc_is_inlined_in_the_types_of_its_loop(target):
    @vectorize(["float64(float64, float64)", "float32(float32, float32)"], target=target)
    def combined(x, y):
        return scaled_add(x, y) * lazy_diff(x, y)

    for dtype in (np.float32, np.float64):
        x = np.linspace(-2, 2, 7).astype(dtype)
        y = dtype(0.3)
        got = combined(x, y)
        assert got.dtype == dtype
        np.testing.assert_array_equal(got, scaled_add(x, y) * lazy_diff(x, y))


def test_the_loop_is_the_one_numpy_chooses(target):
    """int64 arguments reach only the float64 loop safely, as in NumPy;
    float32 ones take the float32 loop, and its result is rounded there."""
    @vectorize(["float64(int64)"], target=target)
    def from_int(n):
        return scaled_add(n, 1)

    @vectorize(["float64(float32)"], target=target)
    def from_f32(x):
        return scaled_add(x, x)

    n = np.arange(5)
    np.testing.assert_array_equal(from_int(n), scaled_add(n, 1))
    x = np.float32([0.1, 1.7, 3.3])
    np.testing.assert_array_equal(from_f32(x), scaled_add(x, x).astype(np.float64))
    assert from_f32(np.float32(0.1)) == np.float64(scaled_add(np.float32(0.1), np.float32(0.1)))


def test_no_loop_for_the_arguments_is_a_typing_error(target):
    with pytest.raises(numbavec.TypingError, match="no loop of this numbavec ufunc takes "
                                                   r"\(complex128, complex128\)"):
        vectorize(["complex128(complex128)"], target=target)(lambda z: scaled_add(z, z))


def test_a_ufunc_called_in_a_gufunc_kernel(target):
    @guvectorize(["void(float64[:], float64[:], float64[:])"], "(n),(n)->()", target=target)
    def dot_like(a, b, out):
        s = 0.0
        for i in range(a.shape[0]):
            s += scaled_add(a[i], b[i]) + np.add(a[i], 1.0)
        out[0] = s

    a, b = np.random.default_rng(3).random((2, 4, 6))
    np.testing.assert_allclose(dot_like(a, b), (scaled_add(a, b) + a + 1.0).sum(axis=1),
                               rtol=1e-14)


@vectorize(["float64(float64, float64)", "float32(float32, float32)"])
def _pulse(t, t0):
    x = t - t0
    if x <= 0:
        return 0.0
    if x > 30.0:
        return 0.0
    return math.exp(-x) - math.exp(-2.0 * x)


@vectorize
def _pulse_lazy(t, t0):
    x = t - t0
    return 0.0 if x <= 0 else math.exp(-x)


@vectorize(["boolean(int64, int64, int64)"])
def _in_season(start, end, day):
    if start == end:
        return False
    elif start < end:
        return day >= start and day <= end
    return day >= start or day <= end


def test_a_ufunc_called_with_arrays_in_a_gufunc_is_applied_elementwise(target):
    """cait's `res[:] += A * _pulse_vec(t, t0, ...)` and a season test stored
    into a row: a numbavec ufunc (eager or lazy) called with arrays in a
    kernel is applied to their elements, broadcast, as the ufunc itself is
    (branches and all), in the loop NumPy would choose."""
    @guvectorize(["void(float64[:], float64, float64[:])", "void(float32[:], float32, float32[:])"],
                 "(n),()->(n)", target=target)
    def pulses(t, t0, res):
        res[:] = 0.0
        res[:] += 2.0 * _pulse(t, t0) + _pulse(t0, t[0]) + _pulse_lazy(t, t0)
        both = _pulse(t[::-1], t)  # two arrays, and a view
        res[:] += both
        m = _pulse_lazy(t, t0 + 1.0)  # held by a variable: computed into an array
        res[0] += m.sum()

    for dtype in (np.float64, np.float32):
        t = np.linspace(-1, 3, 12).reshape(3, 4).astype(dtype)
        t0 = np.array([1.0, 0.5, -2.0], dtype)
        got = pulses(t, t0)
        want = (2.0 * _pulse(t, t0[:, None]) + _pulse(t0, t[:, 0])[:, None]
                + _pulse_lazy(t, t0[:, None]) + _pulse(t[:, ::-1], t))
        want[:, 0] += _pulse_lazy(t, t0[:, None] + 1.0).sum(axis=1)
        assert got.dtype == dtype
        np.testing.assert_allclose(got, want, rtol=1e-6 if dtype == np.float32 else 1e-14)

    @guvectorize(["void(int64[:], int64[:], int64[:], boolean[:, :])"], "(n),(n),(m)->(n,m)",
                 target=target)
    def seasons(start, end, day, result):
        for row in range(start.shape[0]):
            result[row, :] = _in_season(start[row], end[row], day)

    start, end, day = np.array([30, 300, 5]), np.array([90, 40, 5]), np.arange(0, 365, 7)
    np.testing.assert_array_equal(seasons(start, end, day),
                                  _in_season(start[:, None], end[:, None], day))


def test_an_array_reaches_a_loop_by_a_safe_cast_of_its_elements(target):
    @vectorize(["float64(float64)"])
    def square(x):
        return x * x

    @guvectorize(["void(float32[:], float64[:])"], "(n)->(n)", target=target)
    def k(a, out):
        out[:] = square(a)

    a = np.linspace(-2, 2, 9, dtype=np.float32)
    np.testing.assert_array_equal(k(a), square(a))
    with pytest.raises(numbavec.TypingError, match="no loop of this numbavec ufunc takes "
                                                   r"\(complex128\[:\]\)"):
        @guvectorize(["void(complex128[:], complex128[:])"], "(n)->(n)")
        def c(a, out):
            out[:] = square(a)


def test_a_ufunc_that_raises_raises_for_its_caller(target):
    @vectorize(["float64(float64)"])
    def positive(x):
        if x < 0:
            raise ValueError("negative")
        return x

    @vectorize(["float64(float64)"], target=target)
    def twice(x):
        return positive(x) * 2

    np.testing.assert_array_equal(twice(np.arange(3.0)), [0.0, 2.0, 4.0])
    with pytest.raises(ValueError, match="negative"):
        twice(np.array([1.0, -1.0]))


def test_numpy_ufuncs_on_scalars_in_a_kernel(target):
    @vectorize(["float64(float64, float64)"], target=target)
    def mixed(x, y):
        z = np.add(x, y) - np.subtract(x, y) + np.multiply(x, y) + np.divide(x, y)
        z = z + np.negative(x) + np.power(y, 2) + np.maximum(x, y) + np.true_divide(y, 2)
        return np.where(np.equal(x, y) | np.greater(x, y), z, -z)

    x = np.linspace(-3, 3, 13)
    y = 1.5
    want = (np.add(x, y) - np.subtract(x, y) + np.multiply(x, y) + np.divide(x, y)
            + np.negative(x) + np.power(y, 2) + np.maximum(x, y) + np.true_divide(y, 2))
    want = np.where(np.equal(x, y) | np.greater(x, y), want, -want)
    np.testing.assert_allclose(mixed(x, y), want, rtol=1e-15)

    @vectorize(["int64(int64)"], target=target)
    def bits(n):
        return np.invert(n) + np.bitwise_and(n, 3) + np.left_shift(n, 1) + np.floor_divide(n, 3)

    n = np.arange(-5, 6)
    np.testing.assert_array_equal(bits(n), np.invert(n) + np.bitwise_and(n, 3)
                                  + np.left_shift(n, 1) + np.floor_divide(n, 3))


def test_the_cache_key_follows_an_inlined_ufunc():
    """Editing the inlined ufunc's function makes a new key (a device
    function's rule): the kernel is not loaded with the old body."""
    from numbavec._capture import capture_function
    from numbavec._source import KernelSource
    from numbavec.cache import function_key_text

    def user(x):
        return scaled_add(x, x)

    text = function_key_text(capture_function(user, KernelSource(user)), "cpu", {})
    assert "x * 3 + y" in text


def test_two_lambdas_with_the_same_parameters_on_one_line(target):
    """Each compiles its own body (the code's positions say which), not the
    first lambda of its line with those parameters."""
    import sys
    f = vectorize(["float64(float64)"], target=target)(lambda x: x + 1); g = vectorize(  # noqa: E702
        ["float64(float64)"], target=target)(lambda x: x * 10)
    h = vectorize(["float64(float64)"], target=target)(lambda x: x - 1); k = vectorize(["float64(float64)"], target=target)(lambda x: x * 3)  # noqa: E501,E702
    assert f(2.0) == 3.0 and g(2.0) == 20.0 and h(2.0) == 1.0
    if sys.version_info >= (3, 11):   # co_positions tell the lambdas of one line apart
        assert k(2.0) == 6.0


@pytest.mark.parametrize("name, value", [
    ("_numbavec_loops", lambda: ("garbage",)),
    ("_numbavec_loops", lambda: ("float64(float64, float64)",)),
    ("_numbavec_loops", 5),
    ("_numbavec_device_source", lambda: None),      # was a SystemError
    ("__wrapped__", lambda x: x * 100),
    ("py_func", lambda x: x * 100),
])
def test_a_rebound_attribute_changes_nothing_the_kernel_inlines(name, value):
    """What a kernel inlines of a numbavec ufunc is what the ufunc's code
    keeps, not an attribute: rebinding one is neither an error nor a change."""
    @vectorize(["float64(float64)"])
    def inner(x):
        return x + 1

    setattr(inner, name, value)
    outer = vectorize(["float64(float64)"])(lambda x: inner(x) * 2)
    np.testing.assert_array_equal(outer(np.arange(3.0)), [2.0, 4.0, 6.0])


@pytest.mark.parametrize("sig", ["f8, f8[:]", "(float64, float64[:])"])
def test_a_gufunc_signature_as_a_bare_argument_list(target, sig):
    """Numba's spelling without a return type: the arguments alone (void)."""
    @guvectorize([sig], "()->()", target=target)
    def twice(x, out):
        out[0] = x * 2

    np.testing.assert_array_equal(twice(np.arange(4.0)), np.arange(4.0) * 2)
    def scale(a, s, out):
        out[:] = a * s

    g = guvectorize([(numbavec.float64[:], numbavec.float64, numbavec.float64[:])],
                    "(n),()->(n)", target=target)(scale)
    assert g.types == ["dd->d"]
    np.testing.assert_array_equal(g(np.arange(3.0), 2.0), [0.0, 2.0, 4.0])


def test_a_zero_d_output_written_with_empty_parentheses(target):
    """out[()] = v writes a () output, Numba's spelling of it."""
    @guvectorize(["void(float64[:], float64[:])"], "(n)->()", target=target)
    def total(a, out):
        s = 0.0
        for v in a:
            s += v
        out[()] = s

    np.testing.assert_array_equal(total(np.arange(12.0).reshape(3, 4)), [6.0, 22.0, 38.0])


# -- Numba's own objects given to the decorators (Numba installed) -------------

def test_signatures_written_with_numbas_type_objects(target):
    nb = pytest.importorskip("numba")
    f = vectorize([nb.float32(nb.float32, nb.float32), nb.float64(nb.float64, nb.float64)],
                  target=target)(add)
    assert f.types == ["ff->f", "dd->d"]
    assert f(np.float32(1.5), np.float32(2)) == np.float32(3.5)
    f = vectorize((nb.float64(nb.float64, nb.float64), nb.int32(nb.int32, nb.int32)),
                  target=target)(add)                        # a tuple of them
    assert f.types == ["dd->d", "ii->i"]

    def shift(x, y, res):
        for i in range(x.shape[0]):
            res[i] = x[i] + y

    for sigs in ([(nb.int64[:], nb.int64, nb.int64[:])],
                 [nb.void(nb.int64[::1], nb.int64, nb.int64[:])],
                 nb.void(nb.int64[:], nb.int64, nb.int64[:])):
        g = guvectorize(sigs, "(n),()->(n)", target=target)(shift)
        assert g.types == ["ll->l"]
        x = np.arange(6).reshape(2, 3)
        expected = np.empty_like(x)
        for row in range(2):
            shift(x[row], 4, expected[row])
        np.testing.assert_array_equal(g(x, 4), expected)


def test_a_function_numbas_jit_made_is_compiled_from_its_python_function(target):
    nb = pytest.importorskip("numba")
    jitted = nb.njit(add)
    f = vectorize(["float64(float64, float64)"], target=target)(jitted)
    assert f.py_func is add
    np.testing.assert_array_equal(f(np.arange(3.0), 1.0), np.arange(3.0) + 1)
    lazy = vectorize(jitted, target=target)
    assert lazy(np.int16(2), np.int16(3)) == np.int16(5)


class _Unhashable:
    """A global as hostile code makes it: hashing or comparing it raises."""

    def __eq__(self, other):
        raise ZeroDivisionError("__eq__ raised")

    def __hash__(self):
        raise ZeroDivisionError("__hash__ raised")


_UNHASHABLE = _Unhashable()


def test_a_global_that_cannot_be_hashed_is_a_typing_error_not_its_exception():
    """The kernel fuzzer's find: recognising Numba's dispatchers hashed every
    global a kernel read (a weak-key lookup) before looking at it, so a
    global whose __hash__ raised raised that exception out of the decorator."""

    def k(x):
        return _UNHASHABLE

    with pytest.raises(numbavec.TypingError, match="cannot be used in a kernel"):
        numbavec.vectorize(["f8(f8)"])(k)
