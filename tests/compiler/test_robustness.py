"""Faults outside testers found in the compiler, each kept found.

Python int constants are exact (NEP 50: a Python int meets a typed value
by taking its type, and must fit it); nothing a kernel says crashes the
compiler or leaves it with an exception it did not raise; and no kernel
takes unbounded time or stack to compile.  Results are checked against
``py_func`` run by the interpreter on NumPy scalars.
"""
import json
import os
import sys
import textwrap

import numpy as np
import pytest

import numbavec
from conftest import SUPPORT_DIR, kernel_from_source, run_python
from numbavec import TypingError, guvectorize, vectorize


def kernel(body, params="x"):
    """def k(params): body, with math and numpy imported."""
    text = f"import math\nimport numpy as np\n\ndef k({params}):\n{textwrap.indent(body, '    ')}\n"
    return kernel_from_source(text)


def assert_like_py_func(ufunc, py_func, *columns):
    """ufunc(columns) == [py_func(row) for each row], on NumPy scalars of
    the ufunc's (first) loop's input types."""
    dtypes = [np.dtype(c) for c in ufunc.types[0].split("->")[0]]
    arrays = [np.array(c, dtype=d) for c, d in zip(columns, dtypes)]
    got = ufunc(*arrays)
    expected = np.array([py_func(*row) for row in zip(*arrays)]).astype(got.dtype)
    np.testing.assert_array_equal(got, expected)


# ---- Python int constants: exact, then NEP 50 ----

EXACT = [
    # (body, signature, inputs): each compared with py_func
    ("return x / 10**20", "f8(f8)", [[1e20, 3.0, -7e25]]),
    ("return x * 10**20", "f4(f4)", [[1.5, -2.0]]),
    ("return 2**70 // 2**68 + x", "i8(i8)", [[1, -5]]),
    ("return x + (1 << 62) * 2 // 4", "i8(i8)", [[0, 7]]),
    ("return x * (10**30 % 7)", "i8(i8)", [[3, -3]]),
    ("return x + 2**-2", "f8(f8)", [[1.0]]),
    ("return x - -(2**63) // 2", "i8(i8)", [[0, -10]]),
    ("return x & (2**64 - 1)", "u8(u8)", [[0, 2**64 - 1, 2**63 + 5]]),
    ("return x * float(10**20)", "f8(f8)", [[2.0]]),
    ("return math.sqrt(10**40) + x", "f8(f8)", [[0.0]]),
    # builtins of constants fold exactly too (abs(-2**63) wrapped to -2**63)
    ("return abs(-2**63) + x", "f4(f4)", [[1.0, -0.5]]),
    ("return max(2**64, 3, 2**70) // 2**60 + x", "i8(i8)", [[1, -2]]),
    ("return min(-2**65, 7) // 2**60 + x", "i8(i8)", [[1]]),
    ("return int(2**64) / 2 + x", "f8(f8)", [[0.5]]),
]


@pytest.mark.parametrize("body, sig, inputs", EXACT, ids=[e[0] for e in EXACT])
def test_python_int_constants_are_exact(target, body, sig, inputs):
    """x / 10**20 used to wrap 10**20 in int64 (giving 12.87... for x=1e20)."""
    k = kernel(body)
    assert_like_py_func(vectorize([sig], target=target)(k), k, *inputs)


BY_VALUE = [
    ("return x == 2**64 - 1", "b1(u8)", [[0, 2**64 - 1, 2**63]]),
    ("return x > 2**63", "b1(u8)", [[0, 2**63, 2**63 + 1, 2**64 - 1]]),
    ("return x < 10**30", "b1(i8)", [[-(2**63), 0, 2**63 - 1]]),
    ("return x > -10**30", "b1(u8)", [[0, 2**64 - 1]]),
    ("return -1 < x < 2**64", "b1(u8)", [[0, 2**64 - 1]]),
    ("return max(x, 2**63) == 2**63", "b1(u8)", [[0, 2**63, 2**64 - 1]]),
]


@pytest.mark.parametrize("body, sig, inputs", BY_VALUE, ids=[e[0] for e in BY_VALUE])
def test_python_ints_compare_by_value(target, body, sig, inputs):
    k = kernel(body)
    assert_like_py_func(vectorize([sig], target=target)(k), k, *inputs)


@pytest.mark.parametrize("signed", ["int8", "int16", "int32", "int64"])
def test_signed_against_uint64_compares_exactly(target, signed):
    """int8/16/32 against uint64 emitted invalid LLVM IR (RuntimeError)."""
    k = kernel("return (x < y) + 2 * (x == y) + 4 * (x >= y)", "x, y")
    u = vectorize([f"i8({signed}, uint64)"], target=target)(k)
    info = np.iinfo(signed)
    x = np.array([info.min, -1, 0, 1, info.max, info.max], dtype=signed)
    y = np.array([0, 2**64 - 1, 0, 1, int(info.max), 2**64 - 1], dtype=np.uint64)
    assert_like_py_func(u, k, x, y)


OUT_OF_BOUNDS = [
    # (body, signature, message): NumPy raises OverflowError for each
    ("return x + 300", "i1(i1)", "Python integer 300 out of bounds for int8"),
    ("return x + 2**63", "i8(i8)", "Python integer 9223372036854775808 out of bounds for int64"),
    ("return x * -1", "u2(u2)", "Python integer -1 out of bounds for uint16"),
    ("return np.int8(300) + x", "i1(i1)", "Python integer 300 out of bounds for int8"),
    ("return x + 10**400", "f8(f8)", "too large to convert to float"),
    ("return np.minimum(x, 2**40)", "i4(i4)", "out of bounds for int32"),
]


@pytest.mark.parametrize("body, sig, message", OUT_OF_BOUNDS, ids=[e[0] for e in OUT_OF_BOUNDS])
def test_python_int_that_does_not_fit_is_a_typing_error(target, body, sig, message):
    """A compile-time error where NumPy 2 raises OverflowError at run time
    (the kernel used to wrap silently)."""
    k = kernel(body)
    with pytest.raises(TypingError, match=message):
        vectorize([sig], target=target)(k)
    arg = np.dtype(_SHORT[sig[sig.index("(") + 1:-1]]).type(1)
    with pytest.raises(OverflowError), np.errstate(all="ignore"):
        k(arg)


_SHORT = {"i1": np.int8, "i4": np.int32, "i8": np.int64, "u2": np.uint16, "f8": np.float64}


def test_min_and_max_compare_python_ints_by_value(target):
    """max(u8, -30) converts nothing (Python's max): no error, as before."""
    k = kernel("return max(min(x, 30), -30)")
    assert_like_py_func(vectorize(["u1(u1)"], target=target)(k), k, [0, 29, 200])


def test_constants_too_large_for_a_kernel(target):
    for body, message in [("return x + 10**100000", "too large for a kernel"),
                          ("return x ** 2 ** 2 ** 2 ** 2 ** 2 ** 2", "too large for a kernel"),
                          ("return x + (1 << 100000)", "too large for a kernel"),
                          # exponents and shifts beyond int64 (the kernel fuzzer's
                          # hang: Python was asked for 7 ** (2**64 - 1))
                          ("return x + 7 ** 18446744073709551615", "too large for a kernel"),
                          ("return x + (3 << 2**70)", "too large for a kernel")]:
        with pytest.raises(TypingError, match=message):
            vectorize(["f8(f8)"], target=target)(kernel(body))


@pytest.mark.parametrize("body", ["return x + 1 ** 18446744073709551615",
                                  "return x + (-1) ** 18446744073709551615",
                                  "return x + 0 ** 2**70", "return x + (0 << 2**70)"])
def test_constants_of_huge_exponents_that_stay_small_fold(target, body):
    k = kernel(body)
    assert_like_py_func(vectorize(["f8(f8)"], target=target)(k), k, [0.0, 2.5])


def test_division_of_constants_by_zero_keeps_the_kernels_semantics(target):
    """1 // 0 is not folded (Python raises): the kernel gives 0 and NumPy's flag."""
    u = vectorize(["i8(i8)"], target=target)(kernel("return x + 1 // 0"))
    with np.errstate(divide="ignore"):
        assert u(np.int64([5]))[0] == 5
    with np.errstate(divide="raise"), pytest.raises(FloatingPointError):
        u(np.int64([5]))


def test_setitem_of_a_python_int_that_does_not_fit(target):
    k = kernel("out[0] = 300", "x, out")
    with pytest.raises(TypingError, match="300 out of bounds for int8"):
        guvectorize(["void(int8[:], int8[:])"], "(n)->()", target=target)(k)


# ---- what crashed or raised the wrong exception ----

def test_tuple_index_beyond_c_int(target):
    """(x, y)[4294967297] returned y (the index was cut to a C int)."""
    for index in ["4294967297", "-4294967297", "2**40"]:
        with pytest.raises(TypingError, match="index"):
            vectorize(["f8(f8, f8)"], target=target)(kernel(f"return (x, y)[{index}]", "x, y"))


@pytest.mark.parametrize("body, message", [
    ("acc += x\nacc = 1.0\nreturn acc", "'acc' may be used before it is assigned"),
    ("return q.real", "name 'q' is not defined"),
    ("return q.real.imag + x", "name 'q' is not defined"),
    ("y = x\nz *= 2\nz = 1\nreturn z", "'z' may be used before"),
])
def test_errors_after_errors_are_typing_errors(target, body, message):
    """These raised SystemError (an exception dropped on the way out)."""
    with pytest.raises(TypingError, match=message):
        vectorize(["f8(f8)"], target=target)(kernel(body))


@pytest.mark.parametrize("body", ["if x > 0:\n    acc = 1.0\nacc += x\nreturn acc",
                                  "y = x\nif x > 1:\n    z = 1\nz *= 2\nreturn z"])
def test_augmented_names_bound_on_one_path(target, body):
    """Once TypingErrors (and, before that, SystemError): a name bound on
    one path only, augmented after; now the interpreter's result, or its
    UnboundLocalError where the path did not bind it."""
    f = vectorize(["f8(f8)"], target=target)(kernel(body))
    assert f(np.array([2.0]))[0] == f.py_func(2.0)
    with pytest.raises(UnboundLocalError):
        f(np.array([-1.0]))
    with pytest.raises(UnboundLocalError):
        f.py_func(-1.0)


class _Raises:
    @property
    def value(self):
        raise ValueError("boom")


RAISES = _Raises()


def _reads_raising_property(x):
    return x * RAISES.value


def test_an_attribute_that_raises_is_a_typing_error_with_its_cause(target):
    with pytest.raises(TypingError, match="reading attribute 'value' raised ValueError: boom") \
            as info:
        vectorize(["f8(f8)"], target=target)(_reads_raising_property)
    assert isinstance(info.value.__cause__, ValueError)


TRUE, FALSE = np.True_, np.False_


def _numpy_bools(x):
    return x if TRUE and not FALSE else -x


def test_numpy_bool_globals(target):
    """A np.True_ global raised a raw TypeError with no location."""
    u = vectorize(["f8(f8)"], target=target)(_numpy_bools)
    assert_like_py_func(u, _numpy_bools, [2.0, -1.0])


@pytest.mark.parametrize("body", ["a = 1.0\nout[0] = a", "for a in range(3):\n    out[0] = a",
                                  "a, b = 1.0, 2.0\nout[0] = b - a"])
def test_rebinding_an_array_parameter(target, body):
    """It corrupted the heap at decoration, then was a TypingError; now the
    new binding is a variable of its own (issue 36), as Python's and Numba's."""
    k = kernel(body, "a, out")
    gu = guvectorize(["void(float64[:], float64[:])"], "(n)->()", target=target)(k)
    a, want = np.arange(4.0), np.zeros(1)
    k(a, want)
    assert gu(a) == want[0]


def test_an_array_parameter_meeting_a_scalar_is_a_typing_error(target):
    """Where the argument and the new binding reach one read, they are one
    variable, and an array cannot meet a float."""
    k = kernel("if len(a) > 2:\n    a = 1.0\nout[0] = a[0]", "a, out")
    with pytest.raises(TypingError, match="'a' is assigned both"):
        guvectorize(["void(float64[:], float64[:])"], "(n)->()", target=target)(k)


def test_an_array_in_a_variable_is_a_view(target):
    k = kernel("b = a\nb = b[::-1]\nout[0] = b[0]", "a, out")
    gu = guvectorize(["void(float64[:], float64[:])"], "(n)->()", target=target)(k)
    assert gu(np.arange(4.0)) == 3.0


# ---- the compiler's own bounds: depth, size, passes ----

def test_long_backward_chain_of_assignments(target):
    """Type inference gave up after 64 passes on this valid kernel."""
    n = 300
    body = "".join(f"a{i} = 0\n" for i in range(n + 1))
    body += f"for i in range({n + 1}):\n" + "".join(f"    a{i} = a{i + 1}\n" for i in range(n))
    body += f"    a{n} = x * 0.5\nreturn a0\n"
    k = kernel(body)
    assert k(2.0) == 1.0
    assert_like_py_func(vectorize(["f8(f8)"], target=target)(k), k, [2.0, 8.0])


def test_nested_device_functions_compile_or_stop_at_the_stated_limit():
    """13 levels of helpers calling the one below twice took 18 s; 40 never
    finished.  The inlined size is bounded: a clear error, at once."""
    def module(depth):
        src = "import numbavec\n\n@numbavec.jit\ndef f0(x):\n    return x + 1\n"
        for d in range(1, depth + 1):
            src += f"\n@numbavec.jit\ndef f{d}(x):\n    return f{d - 1}(x) + f{d - 1}(x * 2)\n"
        return src + f"\ndef k(x):\n    return f{depth}(x)\n"

    small = kernel_from_source(module(6))
    u = vectorize(["f8(f8)"])(small)
    assert_like_py_func(u, small, [0.5, 2.0])
    for depth in (13, 40):
        with pytest.raises(TypingError, match="once its device functions are inlined"):
            vectorize(["f8(f8)"])(kernel_from_source(module(depth)))


@pytest.mark.slow
def test_a_huge_function_stops_at_the_stated_limit():
    """A 100,000-statement function took over a minute."""
    body = "y = x\n" + "y = y + 1\n" * 30000 + "return y"
    with pytest.raises(TypingError, match="the kernel is too large") as raised:
        vectorize(["f8(f8)"])(kernel(body))
    assert str(raised.value).count("too large") == 1, str(raised.value)  # said once


DEEP = """
import sys, threading, linecache
sys.setrecursionlimit(100000)
from numbavec import vectorize, TypingError
text = "def k(x):\\n    return x" + " + 1" * {depth} + "\\n"
linecache.cache["<deep>"] = (len(text), None, text.splitlines(True), "<deep>")
ns = {{}}
try:
    code = compile(text, "<deep>", "exec")
except RecursionError:  # CPython 3.12's compiler stops at its own depth limit
    print("python cannot compile it")
    raise SystemExit(0)
exec(code, ns)
threading.stack_size({stack})
out = []
def run():
    try:
        vectorize(["f8(f8)"])(ns["k"])
        out.append("ok")
    except TypingError as e:
        out.append("TypingError: " + str(e).splitlines()[0])
t = threading.Thread(target=run)
t.start()
t.join()
print(out[0])
"""


@pytest.mark.parametrize("depth, stack, expected", [
    (300, 512 * 1024, "ok"),
    (1500, 512 * 1024, "nested too deeply for this thread's stack"),
    (3000, 512 * 1024, "nested too deeply"),
    (9000, 512 * 1024, "nested too deeply for this thread's stack"),
    (3000, 16 * 1024 * 1024, "more than 2000 levels"),
])
@pytest.mark.slow
def test_deep_nesting_is_an_error_not_a_crash(depth, stack, expected):
    """Depths that compiled on the main thread segfaulted on a thread with a
    512 KB stack (every pass recurses once per level).  From 3000 levels
    CPython 3.13's own ast.parse, and the freeing of its tree, overflowed that
    stack inside the decorator."""
    proc = run_python(DEEP.format(depth=depth, stack=stack), timeout=300)
    assert proc.returncode == 0, proc.stderr[-2000:]
    if "python cannot compile it" in proc.stdout:
        pytest.skip(f"CPython {sys.version_info[:2]} cannot compile a kernel {depth} levels deep")
    assert expected in proc.stdout, proc.stdout


# ---- round(), unary + : NumPy's rules (found by the kernel fuzzer) ----

@pytest.mark.parametrize("sig", ["u8(u8)", "i8(i8)", "i1(i1)", "u2(u2)"])
def test_round_of_an_integer_to_digits_is_itself(target, sig):
    """round(uint64, 2) went through float64 and lost the low bits; NumPy
    gives the integer itself for ndigits >= 0, and rounds through float64
    below (half to even: round(int8(125), -1) is 120)."""
    info = np.iinfo(np.dtype(sig[:2]))
    values = [0, 1, 105, 125, int(info.max) // 3, int(info.max) // 2 + 1]
    if info.min < 0:
        values += [-125, int(info.min) // 2]
    for nd in (0, 2, -1, -2):
        # the extremes only where the result is the integer itself: below,
        # float64 rounds them past the type's range, where NumPy's cast is
        # undefined and the kernel's saturates (DESIGN-NOTES)
        extremes = [int(info.max), int(info.min)] if nd >= 0 else []
        k = kernel(f"return round(x, {nd})")
        assert_like_py_func(vectorize([sig], target=target)(k), k, values + extremes)


@pytest.mark.parametrize("body", ["return +(x & x)", "return round(x)", "return round(x, 1)"])
def test_bool_has_no_positive_or_round(target, body):
    """np.positive and round() have no bool loop in NumPy 2 (py_func raises)."""
    k = kernel(body)
    with pytest.raises(TypeError):
        k(np.bool_(True))
    with pytest.raises(TypingError, match="not supported for bool"):
        vectorize(["b1(b1)"], target=target)(k)


BIG_TRUTH = [
    "return x if 2**100 else -x",
    "return bool(2**64) + x",
    "return (not 2**100) + x",
    "return x if not 2**64 else -x",
]


@pytest.mark.parametrize("body", BIG_TRUTH)
def test_the_truth_of_an_int_constant_beyond_int64(target, body):
    """2**100 was tested through its low 64 bits (0: false)."""
    k = kernel(body)
    assert_like_py_func(vectorize(["i2(i2)"], target=target)(k), k, [5, -3])


# ---- integer ** : straight-line for constants, one function otherwise ----

@pytest.mark.parametrize("sig", ["i8(i8, i8)", "i1(i1, i1)", "u4(u4, u4)"])
def test_integer_power_against_py_func(target, sig):
    k = kernel("return y ** x + y ** 3 * y ** 0 + y ** 13", "y, x")
    u = vectorize([sig], target=target)(k)
    dt = np.dtype(sig[:2])
    ys = [0, 1, 2, 3, 7, 11] + ([-1, -2, -3] if dt.kind == "i" else [200])
    xs = [0, 1, 2, 3, 5, 9, 40, 63]
    y, x = (np.array(c, dtype=dt) for c in zip(*[(a, b) for a in ys for b in xs]))
    with np.errstate(all="ignore"):
        assert_like_py_func(u, k, y, x)


def test_integer_power_code_stays_linear_in_the_number_of_powers(target):
    """Each ** inlined its own loop, and LLVM's cost grew as about n^2.6 with
    n of them (2,000 took 45 s): constant exponents are multiplied out in
    line, any other calls one out-of-line function per kind."""
    body = "".join(f"    y = y ** x + y ** {e}\n" for e in range(2, 40))
    k = kernel_from_source(f"def k(y, x):\n{body}    return y\n")
    u = vectorize(["i8(i8, i8)"], target=target)(k)
    ir = u.inspect_llvm("i8(i8, i8)")
    assert ir.count("define internal i64 @numbavec.ipow.int64") == 1
    assert "ipow.loop" in ir                      # the one function's loop
    assert ir.count("ipow.loop:") == 1
    with np.errstate(all="ignore"):
        assert_like_py_func(u, k, [2, -3, 0, 1], [3, 0, 5, 1])


# ---- a long kernel is cut into functions of bounded size (issue 34) ----

LONG_STATEMENTS = [
    "s += (a * c + {j}.0)[{k}]",
    "s += np.sum(a[a > c]) * {j}",
    "t = np.sort(a + {j}.0)\n    s += t[{k}] - t[-1]",
    "s += np.median(a * c + {j})",
    "if s > {j}.0:\n        s -= np.max(a)\n    else:\n        s += np.min(c)",
    "for q in range(len(a)):\n        if a[q] < {j} * 0.01:\n            continue\n        s += a[q] * c[q]",
    "w = np.empty(len(a))\n    for q in range(len(a)):\n        w[q] = a[q] * {j}\n    s += w.sum()",
]


def long_kernel(n):
    """n statements of array work, a[i] (IndexError for i out of bounds)
    half way."""
    lines = ["    " + LONG_STATEMENTS[j % len(LONG_STATEMENTS)].format(j=j, k=j % 3)
             for j in range(n)]
    lines.insert(n // 2, "    s += a[i]")
    return kernel_from_source("import numpy as np\n\ndef g(a, c, i, out):\n    s = 0.0\n"
                              + "\n".join(lines) + "\n    out[0] = s\n", "g")


@pytest.mark.slow
def test_a_long_kernel_is_cut_into_functions_of_bounded_size(target):
    """A kernel of 160 statements was one function of some 57,000 lines of
    optimised IR, and LLVM's time grew as about n^1.8 with its length (15.7 s
    for 240 statements).  Cut before it is optimised, no function of it
    grows with its length; it computes and raises as its py_func does."""
    from numbavec import _core
    g = long_kernel(160)
    sig = "void(float64[:], float64[:], int64, float64[:])"
    u = guvectorize([sig], "(n),(n),()->()", target=target)(g)
    before = _core._jit_info().get("outlined", 0)
    functions = u.inspect_llvm(sig).split("\ndefine ")[1:]
    assert max(len(f.splitlines()) for f in functions) < 10000
    assert _core._jit_info().get("outlined", 0) - before == len(functions) - 1 > 10
    rng = np.random.default_rng(7)
    a, c = rng.standard_normal((40, 8)), rng.standard_normal(8)
    want = np.empty(40)
    for row, out in zip(a, want.reshape(-1, 1)):
        g(row, c, 3, out)
    np.testing.assert_allclose(u(a, c, 3), want, rtol=1e-12)
    with pytest.raises(IndexError):
        g(a[0], c, 9, np.empty(1))
    with pytest.raises(IndexError, match="index out of bounds"):
        u(a, c, 9)


# ---- out of memory in LLVM (issue 34) ----

@pytest.mark.parametrize("body", ["return x + y", "assert x == x\nreturn x + y"])
def test_eager_ufuncs_resolve_loops_as_legacy_ufuncs(target, body):
    """An eager ufunc now takes ArrayMethod loops (a loop that cannot make
    its code must be able to raise).  NumPy refuses a second method for the
    same types: '(f8, f8)' beside 'f8(f8, f8)' was a TypeError (for a kernel
    that may raise, before too); the first serves both.  Signatures that
    differ in their outputs keep a loop each (signature= picks one), and
    NumPy's legacy resolution takes the first loop the inputs cast to, as
    for the legacy ufunc (the kernel fuzzer found both)."""
    k = kernel(body, "x, y")
    u = vectorize(["(float64, float64)", "float64(float64, float64)", "f4(f4, f4)"],
                  target=target)(k)
    assert u.types == ["dd->d", "dd->d", "ff->f"]
    assert_like_py_func(u, k, [1.5, -2.0], [0.25, 8.0])
    np.testing.assert_array_equal(u(np.float32([1.5]), np.float32([2.0])), np.float32([3.5]))
    assert u(np.float32([1.5]), 3).dtype == np.float64      # the first loop the inputs cast to
    assert u.reduce(np.float32([1.5, 2.5])).dtype == np.float32
    first = kernel("return x", "x, y")
    d = vectorize(["bool(int8, int8)", "int8(int8, int8)"], target=target)(first)
    a, b = np.int8([126, 0]), np.int8([-19, 3])
    np.testing.assert_array_equal(d(a, b), [True, False])
    np.testing.assert_array_equal(d(a, b, signature=("int8", "int8", "int8")), a)


HEADROOMS = "0,256,1024,2048,4096,16384,65536,262144"
MEMORY_SCENARIOS = [
    # (scenario of tests/support/_memory_limit.py, environment)
    ("eager", {"NUMBAVEC_EAGER": "1"}),       # machine code at decoration
    ("decoration", {}),                       # IR at decoration, code at the first call
    ("lazy", {}),                             # a dynamic ufunc compiling at its call
    ("ufunc-switch", {}),                     # quick code -> optimised, cpu
    ("parallel-switch", {}),                  # quick code -> optimised, parallel
    ("gufunc-switch", {}),                    # the same for a gufunc
    ("ptx-llvm", {}),                         # compile_ptx, LLVM's NVPTX back end
    ("ptx-nvvm", {}),                         # compile_ptx, libNVVM
]


@pytest.mark.slow  # a sweep of headrooms, a forked child each
@pytest.mark.skipif("libasan" in os.environ.get("LD_PRELOAD", ""),
                    reason="ASan's allocator cannot map its shadow under RLIMIT_AS")
@pytest.mark.parametrize("scenario, env", MEMORY_SCENARIOS, ids=[s for s, _ in MEMORY_SCENARIOS])
def test_llvm_out_of_memory_is_a_memory_error(scenario, env):
    """Under ulimit -v with little headroom, a compile died with SIGABRT
    (std::bad_alloc thrown through C frames, or LLVM's own 'out of
    memory' abort).  Each try of the sweep, in a child forked for it, must
    come back as a result or a MemoryError, and the ufunc must compute
    py_func's results once the limit is raised; some tries must fail."""
    if scenario.startswith("ptx-"):
        info = numbavec.cuda.toolkit_info()
        if info["libdevice"] is None or (scenario == "ptx-nvvm" and info["libnvvm"] is None):
            pytest.skip("no CUDA toolkit")
    helper = os.path.join(SUPPORT_DIR, "_memory_limit.py")
    proc = run_python(f"import runpy, sys; sys.argv = ['m', {scenario!r}, {HEADROOMS!r}]; "
                      f"runpy.run_path({helper!r}, run_name='__main__')",
                      env=dict(os.environ, **env), timeout=900)
    assert proc.returncode == 0, proc.stderr[-3000:]
    report = json.loads(proc.stdout.splitlines()[-1])
    outcomes = report["outcomes"]
    assert set(outcomes) <= {"ok", "MemoryError"}, outcomes
    assert outcomes[-1] == "ok", outcomes
    if scenario == "ptx-llvm" and set(outcomes) == {"ok"}:
        # NVPTX's code generation can be served whole by what the reference
        # compile just freed (the heap is not returned to the system): then
        # no headroom of the sweep is short, and nothing was tried
        pytest.skip("the sweep never ran short of memory for compile_ptx here")
    assert "MemoryError" in outcomes or report["llvm_threw"] > 0, report



@pytest.mark.slow  # 49 forked children
@pytest.mark.skipif("libasan" in os.environ.get("LD_PRELOAD", ""),
                    reason="ASan's allocator cannot map its shadow under RLIMIT_AS")
def test_a_memory_error_inside_the_optimiser_leaves_the_next_compile_whole():
    """LLVMRunPasses keeps two TimerGroups on its stack, and a TimerGroup
    links itself into LLVM's process-wide list: when operator new threw
    inside a pass, the list kept pointing into the dead frame, and the
    next optimisation (the same kernel once the limit was raised) ended
    in "free(): invalid pointer" or SIGSEGV, in 13-16 of these 49 tries.
    The headrooms step finely through the band where LLVM throws while
    optimising (passrun.cpp runs the pipeline without them)."""
    helper = os.path.join(SUPPORT_DIR, "_memory_limit.py")
    headrooms = ",".join(str(k) for k in range(1024, 4097, 64))
    proc = run_python(f"import runpy, sys; sys.argv = ['m', 'lazy', {headrooms!r}]; "
                      f"runpy.run_path({helper!r}, run_name='__main__')", timeout=900)
    assert proc.returncode == 0, proc.stderr[-3000:]
    report = json.loads(proc.stdout.splitlines()[-1])
    assert set(report["outcomes"]) == {"MemoryError"}, report
    assert report["llvm_threw"] > 0, report

CHAIN = """
import importlib, sys
import numpy as np
from numbavec import vectorize
sys.path.insert(0, {folder!r})
try:
    mod = importlib.import_module("chain_{depth}")
except RecursionError:  # CPython 3.12 compiles less deep a module
    print("python cannot compile it")
    raise SystemExit(0)
uf = vectorize(["int64(int64, int64)"])(mod.f)
x = np.arange(-3, {depth} + 3, 7)
assert uf(x, 0).tolist() == [mod.f(int(v), 0) for v in x]
print("ok")
"""


@pytest.mark.parametrize("depth", [40, 1400])
def test_a_chain_of_if_expressions_compiles_in_linear_time(depth, tmp_path):
    """`a if c1 else b if c2 else ...`, as the kernel fuzzer wrote it: each
    level typed its branches twice (2^depth: 20 levels took 0.3 s, 40 never
    ended), and at 1,400 levels CPython's compile() of the def, run again
    from inside the decorator to check the source is the function's, ran out
    of recursion and sent the kernel to the bytecode path, which refused it."""
    chain = " else ".join(f"{i} if x > {i}" for i in range(depth, 0, -1)) + " else 0"
    (tmp_path / f"chain_{depth}.py").write_text(f"def f(x, y):\n    return {chain}\n")
    proc = run_python(CHAIN.format(folder=str(tmp_path), depth=depth), timeout=120)
    assert proc.returncode == 0, proc.stderr[-2000:]
    if "python cannot compile it" in proc.stdout:
        pytest.skip(f"CPython {sys.version_info[:2]} cannot compile a def {depth} levels deep")
    assert "ok" in proc.stdout, proc.stdout


TUPLE = """
import sys
import numpy as np
from numbavec import vectorize
sys.path.insert(0, {folder!r})
import tuple_{n} as mod
uf = vectorize(["float64(float64, float64)"])(mod.f)
x = np.array([0.5, -3.0, 1e300])
assert uf(x, 0.0).tolist() == [mod.f(v, 0.0) for v in x.tolist()]
print("ok")
"""


def test_a_long_tuple_of_computed_items_runs_its_first_call(tmp_path):
    """The kernel fuzzer's hang: the quick code's making (the first calls'
    code) is instruction selection without optimisation, and a tuple built
    of 2,000 computed items was 2,000 aggregate values of up to 2,000
    fields each (80 s; 500 items 1.8 s).  The quick passes fold the reads
    of a tuple's items (instsimplify): 0.25 s.  The limit here guards
    against a hang only (3,000 items took minutes)."""
    n = 3000
    items = ", ".join(f"x + {i}" for i in range(n))
    (tmp_path / f"tuple_{n}.py").write_text(
        f"def f(x, y):\n    t = ({items},)\n    return t[{n - 1}] * t[0] + t[{n // 2}]\n")
    env = {k: v for k, v in os.environ.items() if k != "NUMBAVEC_QUICK"}  # quick code on
    proc = run_python(TUPLE.format(folder=str(tmp_path), n=n), env=env, timeout=60)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert "ok" in proc.stdout, proc.stdout
