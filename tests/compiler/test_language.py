"""The kernel language, checked differentially against ``py_func``.

Three parts:

1. a table of constructs (operators, statements, builtins, the math library,
   constants), each compiled for every relevant dtype on every target and run
   over generated inputs with edge values (0, -0.0, +-inf, nan, subnormals,
   +-1, integer limits, shift widths); the expected values come from
   ``py_func`` run by the interpreter on NumPy scalars (see tests/support/difftest.py
   for how the reference is computed, which elements are skipped and why);
2. random programs from a seeded generator (tests/support/progs.py);
3. compile errors: TypingError with file:line:col, the line and a caret.

Python semantics deliberately not followed (DESIGN.md), hence not compared:
where Python raises (ZeroDivisionError, ValueError, OverflowError) the kernel
gives NumPy's answer; ``math.f`` of float32 is the float32 function; weak
Python ints are 64 bits; ``int ** negative`` gives 1/+-1/0 instead of
raising; float -> int casts saturate (NaN -> 0) where NumPy's are undefined;
a variable, a conditional expression, and/or and min/max have one static
(promoted) type, while in Python the type depends on the path taken (the
generator anchors weak values there so that the two agree); a Python float
``**`` that goes complex or raises gives NumPy's float64 answer.

Random programs: NUMBAVEC_DIFF_PROGRAMS (default 300) and NUMBAVEC_DIFF_SEED
choose how many and from which seed; a failure prints the seed and source,
and ``python tests/support/progs.py SEED --exclude ...`` prints it again.
"""
import math
import os
import zlib

import numpy as np
import pytest

import numbavec
from conftest import TARGETS, TEST_PATHS, kernel_from_source
from numbavec import vectorize

import difftest as dt

INTS = ["int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64"]
SIGNED = ["int8", "int16", "int32", "int64"]
FLOATS = ["float32", "float64"]
COMPLEX = ["complex64", "complex128"]
REAL = INTS + FLOATS
NUMERIC = REAL + COMPLEX
B = ["bool"]

# mixed-type argument pairs: NumPy promotion in the kernel
MIXED = [("int8", "uint8"), ("int64", "uint64"), ("int16", "float32"), ("int32", "float32"),
         ("uint32", "int32"), ("bool", "int8"), ("float32", "float64"),
         ("float32", "complex128"), ("uint8", "float32"), ("int64", "float64")]
MIXED_REAL = [m for m in MIXED if "complex128" not in m]


def same(types, n):
    return [(t,) * n for t in types]


# ---------------------------------------------------------------- kernels
# Each kernel is a plain function here: numbavec reads its source from this file.

def k_add(a, b): return a + b
def k_sub(a, b): return a - b
def k_mul(a, b): return a * b
def k_truediv(a, b): return a / b
def k_floordiv(a, b): return a // b
def k_mod(a, b): return a % b
def k_pow(a, b): return a ** b
def k_lshift(a, b): return a << b
def k_rshift(a, b): return a >> b
def k_and(a, b): return a & b
def k_or(a, b): return a | b
def k_xor(a, b): return a ^ b

def k_neg(a): return -a
def k_pos(a): return +a
def k_invert(a): return ~a
def k_not(a): return not a

def k_lt(a, b): return a < b
def k_le(a, b): return a <= b
def k_gt(a, b): return a > b
def k_ge(a, b): return a >= b
def k_eq(a, b): return a == b
def k_ne(a, b): return a != b
def k_chain(a, b, c): return a < b <= c
def k_chain_eq(a, b, c): return a == b == c
def k_chain_mixed(a, b, c): return a < b > c != a


def k_weak_int(a):
    return (a + 1) * 3 - 2 + (7 - a)


def k_weak_float(a):
    return a * 2.5 - 0.125 + 1.5 / (a + 0.5)


def k_weak_div(a):
    return a / 2 + 3 / (a + 1)


def k_weak_floordiv(a):
    return a // 3 + 7 % (a + 2) + a % 5 - 9 // (a - 1)


def k_weak_pow(a):
    return a ** 2 + a ** 0 + a ** 3


def k_weak_shift(a):
    return (a << 1) + (a >> 2) + (1 << (a & 7)) + (a & 6) + (a | 1) + (a ^ 5)


def k_and_value(a, b): return a and b
def k_or_value(a, b): return a or b
def k_andor(a, b, c): return (a and b) or c
def k_not_or(a, b): return not a or b


def k_bool_ops(a, b):
    return (a and not b) or (b and not a)


def k_if(a, b):
    if a > b:
        r = a - b
    elif a < b:
        r = b - a
    else:
        r = a * 0
    return r


def k_if_truth(a):
    if a:
        return 1
    return 2


def k_if_returns(a, b):
    if a == b:
        return 0
    elif a < b:
        if b > 0:
            return 1
        return 2
    return 3


def k_ifexp(a, b):
    return a if a > b else b


def k_ifexp_nested(a, b):
    return a - b if a > b else (b - a if b > a else a * b)


def k_while(a, b):
    n = 0
    x = a
    while x > b and n < 50:
        x = x - 3
        n += 1
    return x + n


def k_while_break(a, b):
    i = 0
    s = 0
    while True:
        i += 1
        if i > 30:
            break
        if i % 3 == 0:
            continue
        s += a * i
        if s > b:
            break
    return s


def k_while_else(a):
    n = 0
    while n < 10:
        n += 1
        if n * n > a:
            break
    else:
        n = -n
    return n


def k_range1(a):
    s = a * 0
    for i in range(min(a, 40)):
        s += i
    return s


def k_range2(a, b):
    s = 0
    for i in range(max(min(a, 30), -30), max(min(b, 30), -30)):
        s += i * i
    return s


def k_range3(a, b, c):
    s = a - a
    for i in range(max(min(a, 30), -30), max(min(b, 30), -30), c):
        s = s * 3 + i
    return s


def k_range_neg(a):
    s = 0
    for i in range(min(a, 25), -5, -3):
        s = s * 2 - i
    return s


def k_range_var_step(a, b):
    step = b % 4 - 2
    if step == 0:
        step = 1
    s = 0
    for i in range(20, max(min(a, 20), -20) - 20, step):
        s += i
    return s


def k_for_break_continue(a):
    s = 0
    for i in range(30):
        if i % 2 == 0:
            continue
        if s > a:
            break
        s += i
    return s * 2 + s


def k_for_float(x):
    acc = x
    for i in range(1, 6):
        acc = acc * 0.5 + i
        if acc > 100.0:
            break
    return acc


def k_nested_loops(a):
    s = 0
    for i in range(6):
        j = 0
        while j < i:
            if (i + j) % 4 == 3:
                break
            s += a * (i - j)
            j += 1
    return s


def k_aug_int(a, b):
    x = a
    x += b
    x *= 3
    x -= a
    x //= b
    x %= 11
    x **= 2
    x <<= 1
    x >>= 1
    x &= b
    x |= 5
    x ^= a
    return x


def k_aug_float(a, b):
    x = a
    x += b
    x *= 1.5
    x -= a
    x /= b
    x //= 0.75
    x %= 3.0
    x **= 2
    return x


def k_aug_div_int(a, b):
    x = a
    x /= b
    return x


def k_promote(a, b):
    x = a
    if b > 1.0:
        x = b * 2
    return x


def k_promote_weak(a):
    x = 0
    if a > 3:
        x = a
    return x


def k_promote_loop(a):
    x = 1
    for i in range(4):
        x = x * 0.5 + a
    return x


def k_tuple(a, b):
    t = (a, b, a + b)
    x, y, z = t
    u, v = b, a
    return t[0] * t[2] - x + y * z + u - v


def k_tuple_neg_index(a, b):
    t = (a, b)
    return t[-1] - t[-2]


def k_tuple_swap(a, b):
    for i in range(3):
        a, b = b, a - b
    return a * 2 + b


def k_abs(a): return abs(a)
def k_min(a, b): return min(a, b)
def k_max(a, b): return max(a, b)
def k_min3(a, b, c): return min(a, b, c)
def k_max3(a, b, c): return max(a, b, c)
def k_int(a): return int(a)
def k_float(a): return float(a)
def k_bool(a): return bool(a)
def k_complex1(a): return complex(a)
def k_complex2(a, b): return complex(a, b)
def k_ident(a): return a


def k_int_weak(a):
    return int(a) + a


def k_float_weak(a):
    return float(a) * a


def k_real(a): return a.real
def k_imag(a): return a.imag
def k_conj(a): return a.conjugate()


def k_complex_parts(a):
    return a.real * 2 - a.imag + a.conjugate().imag


def k_np_int8(a): return np.int8(a)
def k_np_int32(a): return np.int32(a)
def k_np_uint16(a): return np.uint16(a)
def k_np_uint64(a): return np.uint64(a)
def k_np_int64(a): return np.int64(a)
def k_np_float32(a): return np.float32(a)
def k_np_float64(a): return np.float64(a)
def k_np_complex64(a): return np.complex64(a)
def k_np_bool(a): return np.bool_(a)


def k_np_cast_arith(a):
    return np.float32(a) * 3 + np.int16(2)


# the math module: one kernel per function (generated below from this table)
MATH1 = ["exp", "expm1", "log", "log2", "log10", "log1p", "sqrt", "sin", "cos", "tan",
         "asin", "acos", "atan", "sinh", "cosh", "tanh", "asinh", "acosh", "atanh", "erf",
         "erfc", "gamma", "lgamma", "fabs", "degrees", "radians"]
MATH2 = ["pow", "atan2", "hypot", "copysign", "fmod"]
MATH_INT = ["floor", "ceil", "trunc"]
MATH_PRED = ["isnan", "isinf", "isfinite"]
NP1 = ["exp", "expm1", "log", "log2", "log10", "log1p", "sqrt", "sin", "cos", "tan",
       "arcsin", "arccos", "arctan", "sinh", "cosh", "tanh", "arcsinh", "arccosh", "arctanh",
       "fabs", "floor", "ceil", "trunc", "degrees", "radians", "square", "absolute"]
NP2 = ["power", "arctan2", "hypot", "copysign", "fmod", "minimum", "maximum"]
NP_PRED = ["isnan", "isinf", "isfinite"]
# ULP bounds: glibc / libmvec are within 4 ULP for these; the gamma family,
# erfc and the float32 hyperbolics near their limits get more room
MATH_ULPS = {"gamma": 16, "lgamma": 16, "erfc": 8, "tgamma": 16}
EXACT_MATH = {"fabs", "copysign", "fmod", "floor", "ceil", "trunc", "square", "absolute",
              "minimum", "maximum", "isnan", "isinf", "isfinite"}
# degrees/radians of float32 multiply by a rounded constant: up to 2 ULP from Python (double)
MATH_ULPS.update({"degrees": 2, "radians": 2})


def k_math_consts(a):
    return a * math.pi + math.e - math.tau + (a < math.inf) + (math.nan != math.nan)


def k_np_consts(a):
    return a * np.pi + np.e + (a > -np.inf) + (np.nan == np.nan)


def k_math_mixed(a, b):
    return math.sqrt(a * a + b * b) - math.hypot(a, b) + math.exp(-a) * math.cos(b)


G_INT = 3
G_FLOAT = 2.5
G_F32 = np.float32(1.25)
G_I8 = np.int8(100)
G_COMPLEX = 1 + 2j


def k_globals(a):
    return a * G_INT + G_FLOAT * a - G_F32


def k_global_i8(a):
    return a + G_I8


def k_global_complex(a):
    return a * G_COMPLEX


def _make_closure():
    k = 7
    s = np.float32(0.5)
    big = 2 ** 40

    def k_closure(a):
        return a * k + s + (a > big)
    return k_closure


k_closure = _make_closure()


# ---------------------------------------------------------------- the table

class Construct:
    """A kernel, the argument dtypes it is checked with, and how to compare.

    out: None (the promotion of the reference's result types), a dtype name,
    or a function of the argument dtypes.  ulps: float tolerance (0 = exact,
    signs of zeros included).  domains: per argument, a function mapping an
    input array to the values the argument may take (None = any)."""

    def __init__(self, name, fn, argtypes, out=None, ulps=0, domains=None, n_random=150):
        self.name, self.fn, self.argtypes = name, fn, argtypes
        self.out, self.ulps, self.domains, self.n_random = out, ulps, domains, n_random


def _small(lo, hi):
    return lambda col: np.clip(col, lo, hi) if col.dtype.kind != "f" else np.nan_to_num(
        np.clip(col, lo, hi))


SHIFT_TYPES = INTS + B

CONSTRUCTS = [
    Construct("add", k_add, same(NUMERIC + B, 2) + MIXED),
    Construct("sub", k_sub, same(NUMERIC, 2) + [m for m in MIXED if "bool" not in m]),
    Construct("mul", k_mul, same(NUMERIC + B, 2) + MIXED),
    Construct("truediv", k_truediv, same(REAL + B, 2) + MIXED_REAL),
    Construct("truediv_complex", k_truediv, same(COMPLEX, 2), ulps=4),
    Construct("floordiv", k_floordiv, same(REAL + B, 2) + MIXED_REAL),
    Construct("mod", k_mod, same(REAL + B, 2) + MIXED_REAL),
    Construct("pow_int", k_pow, same(INTS, 2) + [("int8", "uint8"), ("uint32", "int32")]),
    Construct("pow_float", k_pow, same(FLOATS, 2) + [("float32", "int8"), ("int32", "float32")],
              ulps=4),
    Construct("pow_complex", k_pow, same(COMPLEX, 2), ulps=64,
              domains=[_small(-8, 8), _small(-4, 4)]),
    Construct("lshift", k_lshift, same(SHIFT_TYPES, 2) + [("int8", "uint8"), ("uint8", "int64")]),
    Construct("rshift", k_rshift, same(SHIFT_TYPES, 2) + [("int8", "uint8"), ("uint8", "int64")]),
    Construct("bitand", k_and, same(SHIFT_TYPES, 2) + [("int8", "uint8"), ("bool", "int16")]),
    Construct("bitor", k_or, same(SHIFT_TYPES, 2) + [("int8", "uint8"), ("bool", "int16")]),
    Construct("bitxor", k_xor, same(SHIFT_TYPES, 2) + [("int8", "uint8"), ("bool", "int16")]),
    Construct("neg", k_neg, same(NUMERIC, 1)),
    Construct("pos", k_pos, same(NUMERIC, 1)),
    Construct("invert", k_invert, same(INTS + B, 1)),
    Construct("not", k_not, same(NUMERIC + B, 1)),
    Construct("lt", k_lt, same(REAL + B, 2) + MIXED_REAL),
    Construct("le", k_le, same(REAL + B, 2) + MIXED_REAL),
    Construct("gt", k_gt, same(REAL + B, 2) + MIXED_REAL),
    Construct("ge", k_ge, same(REAL + B, 2) + MIXED_REAL),
    Construct("eq", k_eq, same(NUMERIC + B, 2) + MIXED),
    Construct("ne", k_ne, same(NUMERIC + B, 2) + MIXED),
    Construct("chain", k_chain, same(REAL, 3) + [("int8", "float32", "uint16")]),
    Construct("chain_eq", k_chain_eq, same(NUMERIC + B, 3)),
    Construct("chain_mixed", k_chain_mixed, same(REAL, 3) + [("int64", "uint64", "float64")]),
    Construct("weak_int", k_weak_int, same(NUMERIC, 1)),
    Construct("weak_float", k_weak_float, same(REAL + COMPLEX, 1)),
    Construct("weak_div", k_weak_div, same(REAL, 1)),
    Construct("weak_floordiv", k_weak_floordiv, same(REAL, 1)),
    # a ** 3 is within 1 ulp of pow's (float32: x * x * x, fpow.c), and
    # a ** 2 + 1 + a ** 3 cancels near a = -1.3, which magnifies that ulp
    Construct("weak_pow", k_weak_pow, same(REAL + COMPLEX, 1), ulps=8),
    Construct("weak_shift", k_weak_shift, same(INTS, 1)),
    Construct("and_value", k_and_value, same(NUMERIC + B, 2) + MIXED),
    Construct("or_value", k_or_value, same(NUMERIC + B, 2) + MIXED),
    Construct("andor", k_andor, same(REAL + B, 3) + [("int8", "float32", "bool")]),
    Construct("not_or", k_not_or, same(REAL + B, 2)),
    Construct("bool_ops", k_bool_ops, same(REAL + B, 2)),
    Construct("if", k_if, same(REAL, 2) + MIXED_REAL),
    Construct("if_truth", k_if_truth, same(NUMERIC + B, 1)),
    Construct("if_returns", k_if_returns, same(REAL, 2)),
    Construct("ifexp", k_ifexp, same(REAL, 2) + MIXED_REAL),
    Construct("ifexp_nested", k_ifexp_nested, same(REAL, 2)),
    Construct("while", k_while, same(REAL, 2)),
    Construct("while_break", k_while_break, same(REAL, 2)),
    Construct("while_else", k_while_else, same(REAL, 1)),
    Construct("range1", k_range1, same(INTS, 1)),
    Construct("range2", k_range2, same(INTS, 2)),
    # steps near +-2**63 are wrong in the kernel (test_range_huge_step)
    Construct("range3", k_range3, same(SIGNED, 3) + [("uint8", "int16", "int8")],
              domains=[None, None, lambda c: np.clip(c, -2 ** 40, 2 ** 40)]),
    Construct("range_neg", k_range_neg, same(INTS, 1)),
    # (uint32/uint64 would run ~2**32 iterations per element through the
    # negative-literal bug below)
    Construct("range_var_step", k_range_var_step, same(SIGNED + ["uint8", "uint16"], 2)),
    Construct("for_break_continue", k_for_break_continue, same(REAL, 1)),
    Construct("for_float", k_for_float, same(FLOATS, 1)),
    Construct("nested_loops", k_nested_loops, same(REAL, 1)),
    Construct("aug_int", k_aug_int, same(INTS, 2)),
    Construct("aug_float", k_aug_float, same(FLOATS, 2)),
    Construct("aug_div_int", k_aug_div_int, same(INTS, 2)),
    Construct("promote", k_promote, [("int8", "float32"), ("int32", "float32"),
                                     ("int64", "float64"), ("uint8", "float64")]),
    Construct("promote_weak", k_promote_weak, same(REAL, 1)),
    Construct("promote_loop", k_promote_loop, same(REAL, 1)),
    Construct("tuple", k_tuple, same(REAL, 2) + MIXED_REAL),
    Construct("tuple_neg_index", k_tuple_neg_index, same(REAL, 2)),
    Construct("tuple_swap", k_tuple_swap, same(REAL, 2)),
    Construct("abs", k_abs, same(NUMERIC + B, 1), ulps=1),
    Construct("min", k_min, same(REAL + B, 2) + MIXED_REAL),
    Construct("max", k_max, same(REAL + B, 2) + MIXED_REAL),
    Construct("min3", k_min3, same(REAL, 3) + [("int8", "float32", "uint16")]),
    Construct("max3", k_max3, same(REAL, 3) + [("int8", "float32", "uint16")]),
    Construct("int", k_int, same(REAL + B, 1)),
    Construct("float", k_float, same(REAL + B, 1)),
    Construct("bool", k_bool, same(NUMERIC + B, 1)),
    Construct("complex1", k_complex1, same(NUMERIC + B, 1)),
    Construct("complex2", k_complex2, same(REAL, 2)),
    Construct("int_weak", k_int_weak, same(REAL, 1)),
    Construct("float_weak", k_float_weak, same(REAL, 1)),
    # the declared output type is narrower/other than the result: the
    # kernel's return cast (float -> int saturates, NaN -> 0)
    Construct("cast_float_to_int", k_ident, same(FLOATS, 1)),
    Construct("cast_int_to_int", k_ident, same(INTS, 1)),
    Construct("real", k_real, same(NUMERIC + B, 1)),
    Construct("imag", k_imag, same(NUMERIC, 1)),
    Construct("conjugate", k_conj, same(NUMERIC, 1)),
    Construct("complex_parts", k_complex_parts, same(COMPLEX, 1)),
    Construct("np_int8", k_np_int8, same(INTS + B, 1)),
    Construct("np_int32", k_np_int32, same(INTS + B, 1)),
    Construct("np_uint16", k_np_uint16, same(INTS + B, 1)),
    Construct("np_uint64", k_np_uint64, same(INTS + B, 1)),
    # float -> int: NumPy's cast is undefined out of range, the kernel's
    # saturates: only in-range values are compared
    Construct("np_int64_from_float", k_np_int64, same(FLOATS, 1),
              domains=[lambda c: np.nan_to_num(np.clip(c, -1e9, 1e9))]),
    Construct("np_int8_from_float", k_np_int8, same(FLOATS, 1),
              domains=[lambda c: np.nan_to_num(np.clip(c, -128, 127))]),
    Construct("np_float32", k_np_float32, same(REAL + B, 1)),
    Construct("np_float64", k_np_float64, same(REAL + B, 1)),
    Construct("np_complex64", k_np_complex64, same(NUMERIC, 1)),
    Construct("np_bool", k_np_bool, same(NUMERIC + B, 1)),
    Construct("np_cast_arith", k_np_cast_arith, same(["int8", "int32", "float64"], 1)),
    Construct("math_consts", k_math_consts, same(REAL, 1)),
    Construct("np_consts", k_np_consts, same(REAL, 1)),
    Construct("math_mixed", k_math_mixed, same(FLOATS, 2), ulps=8),
    Construct("globals", k_globals, same(REAL, 1)),
    Construct("global_i8", k_global_i8, same(["int8", "int16", "uint8", "float32"], 1)),
    Construct("global_complex", k_global_complex, same(REAL + COMPLEX, 1)),
    Construct("closure", k_closure, same(REAL, 1)),
]


# math / numpy function kernels, written to a real file at import (numbavec
# compiles from source)
def _function_kernels_source():
    lines = ["import math", "import numpy as np", ""]
    for f in MATH1:
        lines += [f"def math_{f}(a):", f"    return math.{f}(a)", ""]
    for f in MATH2:
        lines += [f"def math_{f}(a, b):", f"    return math.{f}(a, b)", ""]
    for f in MATH_INT + MATH_PRED:
        lines += [f"def math_{f}(a):", f"    return math.{f}(a)", ""]
    for f in NP1 + NP_PRED:
        lines += [f"def np_{f}(a):", f"    return np.{f}(a)", ""]
    for f in NP2:
        lines += [f"def np_{f}(a, b):", f"    return np.{f}(a, b)", ""]
    return "\n".join(lines)


def _load_function_kernels():
    import tempfile
    d = tempfile.mkdtemp(prefix="numbavec_test_language_")
    return dt.load_source(_function_kernels_source(), d, name="nv_math_kernels")


_FK = _load_function_kernels()


def _lgamma_domain(col):
    """CPython's math.lgamma is its own Lanczos approximation, not the C
    library's, and loses ~50 ULP near the zeros of lgamma (x = 1, 2 and
    between the negative integers), where glibc's value -- the kernel's -- is
    the accurate one (lgamma(-2.5): glibc -0.05624371649767407, exact
    -0.056243716497674054, CPython -0.05624371649767457).  Those regions are
    moved out of the comparison; the edge values stay."""
    if col.dtype.kind != "f":
        return col
    with np.errstate(invalid="ignore"):
        near_zero = np.isfinite(col) & ((col < 0.05) | ((col > 0.5) & (col < 2.5)))
    return np.where(near_zero, np.abs(col) + 2.5, col).astype(col.dtype)


def _add_function_constructs():
    for f in MATH1:
        ulps = 0 if f in EXACT_MATH else MATH_ULPS.get(f, 4)
        domains = [_lgamma_domain] if f == "lgamma" else None
        CONSTRUCTS.append(Construct(f"math.{f}", getattr(_FK, f"math_{f}"),
                                    same(FLOATS + ["int32"], 1), ulps=ulps, domains=domains))
    for f in MATH2:
        ulps = 0 if f in EXACT_MATH else 4
        CONSTRUCTS.append(Construct(f"math.{f}", getattr(_FK, f"math_{f}"),
                                    same(FLOATS, 2) + [("float32", "float64"), ("int32", "float32")],
                                    ulps=ulps))
    for f in MATH_INT + MATH_PRED:
        # math.trunc(np.float32(x)) raises TypeError in Python (no __trunc__)
        types_ = ["float64"] if f == "trunc" else FLOATS + ["int32"]
        CONSTRUCTS.append(Construct(f"math.{f}", getattr(_FK, f"math_{f}"), same(types_, 1)))
    for f in NP1 + NP_PRED:
        ulps = 0 if f in EXACT_MATH else MATH_ULPS.get(f, 4)
        CONSTRUCTS.append(Construct(f"np.{f}", getattr(_FK, f"np_{f}"),
                                    same(FLOATS + ["int32", "int64"], 1), ulps=ulps))
    for f in NP2:
        ulps = 0 if f in EXACT_MATH else 4
        CONSTRUCTS.append(Construct(f"np.{f}", getattr(_FK, f"np_{f}"),
                                    same(FLOATS, 2) + [("float32", "float64"), ("int32", "int32")],
                                    ulps=ulps))


_add_function_constructs()

# The return-cast constructs: declared outputs other than the result type.
RETURN_CASTS = {
    "cast_float_to_int": ["int8", "uint8", "int32", "int64", "uint64", "bool"],
    "cast_int_to_int": ["int8", "uint16", "int64", "float32", "bool"],
}

# Known differences from the reference, found by this harness: (construct,
# argtypes or None for all, target or None for both) -> reason.  Marked
# xfail(strict=True), so each entry disappears with its fix.  (The harness's
# first run found nine bugs -- libm attributes, weak-int comparisons by value,
# range() overflow, narrow saturating casts, integer np.square/power/floor,
# error locations -- all fixed since.)
KNOWN_BUGS = {
    ("pow_complex", None, None): (
        "differs from NumPy at C99 Annex G special values: z ** w with an infinite or NaN part "
        "in w is exp(w log z) in the kernel (NaN) where NumPy's cpow gives signed zeros and "
        "infinities, e.g. 1j ** (0.5+inf j): kernel nan+nanj, NumPy -0j"),
}
# NumPy >= 2.3's scalar power gives nan here; older NumPy, as the kernel, C99's inf.
with np.errstate(all="ignore"):
    _NUMPY_SCALAR_POW_NAN = bool(np.isnan(np.power(np.float64(-np.inf), np.float64(0.5))))
for _ts in [("float32", "float32"), ("float64", "float64"), ("float32", "float64")]:
    if _NUMPY_SCALAR_POW_NAN:
        KNOWN_BUGS[("np.power", _ts, None)] = (
            "differs from NumPy: np.power(-inf, 0.5) is nan for NumPy 2 scalars, inf in the "
            "kernel (C99 pow, as math.pow)")


def _cases():
    cases = []
    for c in CONSTRUCTS:
        for argtypes in c.argtypes:
            outs = RETURN_CASTS.get(c.name, [None])
            for out in outs:
                for target in TARGETS:
                    key = f"{c.name}-{'_'.join(argtypes)}" + (f"->{out}" if out else "")
                    bugname = c.name + (f"->{out}" if out else "")
                    marks = []
                    for (name, types_, tgt), why in KNOWN_BUGS.items():
                        if (name == bugname and (types_ is None or tuple(types_) == argtypes)
                                and (tgt is None or tgt == target)):
                            marks.append(pytest.mark.xfail(strict=True, reason=why))
                    cases.append(pytest.param(c, argtypes, out, target, marks=marks,
                                              id=f"{key}-{target}"))
    return cases


_ref_cache = {}


def _reference(c, argtypes, out):
    key = (c.name, argtypes, out)
    if key not in _ref_cache:
        rng = np.random.default_rng(zlib.crc32(repr((c.name, argtypes)).encode()))
        args = dt.make_inputs(argtypes, rng, n_random=c.n_random, domains=c.domains)
        raw = dt.reference_raw(dt.reference_function(c.fn), args)
        out_dtype = np.dtype(out) if out else dt.natural_dtype(raw)
        exp, mask = dt.cast_all(raw, out_dtype)
        _ref_cache[key] = (args, out_dtype, exp, mask)
    return _ref_cache[key]


@pytest.mark.parametrize("c,argtypes,out,target", _cases())
def test_construct(c, argtypes, out, target):
    args, out_dtype, exp, mask = _reference(c, argtypes, out)
    sig = dt.sig_string(out_dtype, argtypes)
    uf = vectorize([sig], target=target)(c.fn)
    assert isinstance(uf, np.ufunc)
    got = dt.call_loop(uf, args, [np.dtype(t) for t in argtypes] + [out_dtype])
    assert got.dtype == out_dtype
    bad = dt.mismatch(got, exp, c.ulps) & mask
    assert not bad.any(), (
        f"{c.name} {sig} on {target}: {int(bad.sum())} of {int(mask.sum())} compared "
        f"elements differ (ulps={c.ulps}):\n" + dt.describe(args, got, exp, bad))
    assert mask.sum() > 0 or len(mask) == 0


# ---------------------------------------------------------------- known bugs, one reproducer each

def k_uint_vs_negative(a):
    return (a > -1) + (max(a, -30) == a) * 2


def k_range_big_step(a, b, c):
    n = 0
    for i in range(a, b, c):
        n += 1
    return n


@pytest.mark.parametrize("t", ["uint8", "uint64"])
def test_uint_compared_with_negative_literal(t):
    uf = vectorize([f"int64({t})"])(k_uint_vs_negative)
    x = np.array([0, 5, np.iinfo(t).max], dtype=t)
    assert uf(x).tolist() == [int(k_uint_vs_negative(v)) for v in x] == [3, 3, 3]


def test_range_huge_step(target):
    uf = vectorize(["int64(int64, int64, int64)"], target=target)(k_range_big_step)
    a = np.array([-7, 5, 3], dtype=np.int64)
    b = np.array([-100, 10, 2 ** 63 - 2], dtype=np.int64)
    c = np.array([-(2 ** 63 - 1), 2 ** 63 - 2, 2 ** 63 - 1], dtype=np.int64)
    assert uf(a, b, c).tolist() == [k_range_big_step(*v) for v in zip(a, b, c)] == [1, 1, 1]


# Operand lists longer than any fixed array in the emitter (64 once): a
# comparison chain whose one false link is near its end, an `or` decided by
# its last operand, a tuple read at its last element.
LONG = 70
LONG_KERNELS = {
    "chain": ("def k(x):\n    return " + " < ".join(
        ["x"] + [f"x + {i}" for i in range(1, LONG - 2)] + ["x", f"x + {LONG}"]) + "\n"),
    "or": "def k(x):\n    return " + " or ".join(["0"] * (LONG - 1) + ["x"]) + "\n",
    "tuple": ("def k(x):\n    t = (" + ", ".join(f"x + {i}" for i in range(LONG))
              + f")\n    return t[{LONG - 1}]\n"),
}


@pytest.mark.parametrize("name", LONG_KERNELS)
def test_long_operand_lists(name, target):
    k = kernel_from_source(LONG_KERNELS[name])
    uf = vectorize(["int64(int64)"], target=target)(k)
    x = np.array([-3, 0, 1, 5], dtype=np.int64)
    want = [int(k(v)) for v in x.tolist()]
    assert uf(x).tolist() == want


_HANG_SCRIPT = """
import sys, numpy as np
sys.path[:0] = {path!r}
from numbavec import vectorize
from test_language import k_range_big_step
uf = vectorize(["int64(int64, int64, int64)"])(k_range_big_step)
print(int(uf(np.int64(-3), np.int64(-30), np.int64(-2 ** 63))))
"""


def test_range_step_int64_min():
    import subprocess
    import sys
    here = os.path.dirname(os.path.abspath(__file__))
    path = [here, *TEST_PATHS, os.path.dirname(os.path.dirname(os.path.abspath(numbavec.__file__)))]
    try:
        out = subprocess.run([sys.executable, "-c", _HANG_SCRIPT.format(path=path)],
                             capture_output=True, text=True, timeout=20)
    except subprocess.TimeoutExpired:
        pytest.fail("the kernel did not return within 20 s")
    assert out.stdout.strip() == "1", out.stderr


# ---------------------------------------------------------------- random programs

import progs  # noqa: E402

N_PROGRAMS = int(os.environ.get("NUMBAVEC_DIFF_PROGRAMS", "300"))
QUICK_PROGRAMS = 20     # the first ones run in the quick subset, the rest are `slow`
SEED0 = int(os.environ.get("NUMBAVEC_DIFF_SEED", "20250101"))
# seeds whose failure is a known numbavec bug: seed -> reason
KNOWN_BAD_PROGRAMS = {}


_PROG_STATS = {"programs": 0, "compared": 0, "ill": 0, "refused": 0}


def _program_params():
    out = []
    for k in range(N_PROGRAMS):
        seed = SEED0 + k
        marks = ([pytest.mark.xfail(strict=True, reason=KNOWN_BAD_PROGRAMS[seed])]
                 if seed in KNOWN_BAD_PROGRAMS else [])
        marks += [pytest.mark.slow] if k >= QUICK_PROGRAMS else []
        out.append(pytest.param(seed, marks=marks, id=f"seed{seed}"))
    return out


@pytest.fixture(scope="module")
def prog_dir(tmp_path_factory):
    return str(tmp_path_factory.mktemp("programs"))


@pytest.fixture(scope="module")
def prog_exclude(prog_dir):
    """The library functions that do not compile in this build, left out of
    the programs so that the rest is compared (reported by
    test_random_program_stats; empty when everything compiles)."""
    out = []
    for name in ([f"math.{f}" for f in progs.MATH1_SAFE] + [f"np.{f}" for f in progs.NP1_SAFE]
                 + [f"math.{f}" for f in progs.MATH2]):
        n = 2 if name.split(".")[1] in progs.MATH2 else 1
        ps = ", ".join("xy"[:n])
        src = f"import math\nimport numpy as np\n\ndef f({ps}):\n    return {name}({ps})\n"
        mod = dt.load_source(src, prog_dir, name=f"nv_probe_{name.replace('.', '_')}")
        try:
            vectorize([f"float64({', '.join(['float64'] * n)})"])(mod.f)
        except RuntimeError:
            out.append(name)
    _PROG_STATS["excluded"] = out
    return tuple(out)


@pytest.mark.parametrize("seed", _program_params())
def test_random_program(seed, prog_dir, prog_exclude):
    """Reproduce one with: python tests/support/progs.py SEED --exclude LIST (prints
    the source; LIST as printed in the failure)."""
    prog = progs.generate(seed, prog_exclude)
    target = TARGETS[seed % 2]
    compared, ill, failure = dt.check_program(prog, target, prog_dir, counts=_PROG_STATS)
    _PROG_STATS["programs"] += 1
    _PROG_STATS["compared"] += compared
    _PROG_STATS["ill"] += ill
    assert failure is None, f"{failure}\n(generated with exclude={','.join(prog_exclude)})"


def test_random_program_stats():
    """Runs after the programs (file order): they compared something."""
    if _PROG_STATS["programs"] == 0:
        pytest.skip("no program ran")
    print(f"\n{_PROG_STATS['programs']} programs, {_PROG_STATS['compared']} elements compared, "
          f"{_PROG_STATS['ill']} ill-conditioned elements skipped, "
          f"{_PROG_STATS['refused']} signatures refused (a Python int out of bounds)")
    assert _PROG_STATS["refused"] < _PROG_STATS["programs"] // 5
    print(f"functions left out (they do not compile): {_PROG_STATS.get('excluded')}")
    assert _PROG_STATS["compared"] > 10 * _PROG_STATS["programs"]
    assert _PROG_STATS.get("excluded") == [], "every library function should compile"


# ---------------------------------------------------------------- compile errors

ERRORS = [
    # (name, source of the body of def f(a, b), text the message must name,
    #  the offending line (index into the body), the caret's column in it)
    ("list", "x = [a, b]\nreturn a", "list", 0, 4),
    ("dict", "x = {1: a}\nreturn a", "dict", 0, 4),
    ("set", "x = {a, b}\nreturn a", "set", 0, 4),
    ("string", "x = 'abc'\nreturn a", "string", 0, 4),
    ("listcomp", "x = [i for i in range(3)]\nreturn a", "comprehension", 0, 4),
    ("genexp", "x = (i for i in range(3))\nreturn a", "generator", 0, 4),
    ("try", "try:\n    x = a\nexcept Exception:\n    x = b\nreturn x", "try", 0, 0),
    ("raise", "if a > b:\n    raise\nreturn a", "raise", 1, 4),   # re-raising; raise X works
    ("lambda", "g = (lambda x: x)(a)\nreturn a", "lambda", 0, 5),
    ("starargs_call", "return max(*a)", "star", 0, None),
    ("keyword_call", "return round(a, ndigits=2)", "keyword", 0, None),
    ("attribute", "return a.shape", "shape", 0, 7),
    ("object_attribute", "return math.foo(a)", "foo", 0, 7),
    ("unknown_name", "return a + undefined_thing", "undefined_thing", 0, 11),
    # bound on no path (bound on some: UnboundLocalError at run time, below)
    ("never_assigned", "y = x\nx = a\nreturn y", "'x'", 0, 4),
    ("missing_return", "if a > b:\n    return a", "return", None, None),
    ("return_tuple", "return a, b", "tuple", 0, None),
    ("nested_def", "def g(x):\n    return x\nreturn g", "function nested in the kernel", 2, 7),
    ("with", "with a:\n    pass\nreturn a", "with", 0, 0),
    ("import", "import os\nreturn a", "import", 0, 0),
    ("global", "global G_INT\nreturn a", "global", 0, 0),
    ("yield", "yield a\nreturn a", "yield", 0, None),
    ("range_float", "s = 0\nfor i in range(a):\n    s += i\nreturn s", "range", 1, None),
    # NumPy's bool is no integer to range() (TypeError in the interpreter)
    ("range_bool", "s = 0\nfor i in range(a > b):\n    s += i\nreturn s", "not bool", 1, 15),
    ("for_over_param", "s = 0\nfor i in a:\n    s += i\nreturn s", "range", 1, None),
    ("subscript", "return a[0]", "", 0, None),
    ("method_call", "return a.sum()", "method", 0, None),
    ("call_nonbuiltin", "return print(a)", "print", 0, None),
    ("bool_subtract", "return (a > b) - (b > a)", "subtract", 0, None),
]


def _error_kernel(tmpdir, name, body, params="a, b"):
    lines = [f"def f_{name}({params}):"] + ["    " + ln for ln in body.split("\n")]
    src = "import math\nimport numpy as np\nG_INT = 1\n\n\n" + "\n".join(lines) + "\n"
    mod = dt.load_source(src, tmpdir, name=f"nv_err_{name}")
    return getattr(mod, f"f_{name}"), mod.__file__, 6   # def is file line 6


@pytest.mark.parametrize("name,body,names,line,col", ERRORS)
def test_compile_error(name, body, names, line, col, tmp_path):
    fn, path, def_line = _error_kernel(str(tmp_path), name, body)
    with pytest.raises(numbavec.TypingError) as info:
        vectorize(["float64(float64, float64)"])(fn)
    assert isinstance(info.value, TypeError)
    msg = str(info.value)
    first = msg.split("\n")[0]
    assert names.lower() in first.lower(), msg
    assert first.startswith(f"{path}:"), msg
    if line is not None:
        lineno = def_line + 1 + line
        src_line = body.split("\n")[line]
        assert first.startswith(f"{path}:{lineno}:"), msg
        rest = msg.split("\n")
        assert len(rest) >= 3, msg
        assert rest[1].strip() == src_line.strip(), msg
        caret = rest[2]
        assert caret.strip() == "^", msg
        if col is not None:
            assert first.startswith(f"{path}:{lineno}:{col + 4 + 1}:"), msg
            # the caret sits under the column (same indentation as line 2)
            assert caret.index("^") - rest[1].index(src_line.lstrip()[0]) == col - (
                len(src_line) - len(src_line.lstrip())), msg


def maybe_bound(a, b):
    if a > b:
        x = a
    return x


def test_a_name_bound_on_some_paths_raises_where_it_is_not(target):
    """Read where only some paths bound it (Numba compiles it and reads
    garbage; the interpreter raises): UnboundLocalError at run time with the
    interpreter's message, where the read finds it unbound (rebind.c)."""
    f = vectorize(["float64(float64, float64)"], target=target)(maybe_bound)
    np.testing.assert_array_equal(f(np.array([3.0, 5.0]), np.array([1.0, 2.0])), [3.0, 5.0])
    with pytest.raises(UnboundLocalError) as info:
        f(np.array([3.0, 0.0]), np.array([1.0, 2.0]))
    with pytest.raises(UnboundLocalError) as want:
        maybe_bound(0.0, 2.0)
    assert str(info.value) == str(want.value)


def test_error_caret_counts_characters_not_bytes(tmp_path):
    """The caret sits under the error on a line with non-ASCII names (the
    AST's column is a byte offset)."""
    fn, _, _ = _error_kernel(str(tmp_path), "utf8", 'é = a\nreturn é + "s"')
    with pytest.raises(numbavec.TypingError) as info:
        vectorize(["float64(float64, float64)"])(fn)
    _, line, caret = str(info.value).split("\n")[:3]
    assert caret.index("^") == line.index('"s"'), str(info.value)


def test_error_complex_to_float_return(tmp_path):
    fn, path, _ = _error_kernel(str(tmp_path), "c2f", "return a * 1j")
    with pytest.raises(numbavec.TypingError) as info:
        vectorize(["float64(float64, float64)"])(fn)
    assert "complex" in str(info.value), str(info.value)
    assert str(info.value).startswith(f"{path}:"), str(info.value)


def test_error_wrong_arity(tmp_path):
    fn, path, _ = _error_kernel(str(tmp_path), "arity", "return a + b")
    with pytest.raises(numbavec.TypingError) as info:
        vectorize(["float64(float64)"])(fn)
    msg = str(info.value)
    assert "argument" in msg, msg
    with pytest.raises(numbavec.TypingError):
        vectorize(["float64(float64, float64, float64)"])(fn)


def test_error_names_variable_and_line(tmp_path):
    # (bound on some path, y would be read checked at run time: issue 36)
    body = "x = a\nif x > b:\n    x = x - 1\nz = x\nreturn y\ny = z"
    fn, path, def_line = _error_kernel(str(tmp_path), "if_unassigned", body)
    with pytest.raises(numbavec.TypingError) as info:
        vectorize(["float64(float64, float64)"])(fn)
    msg = str(info.value)
    assert msg.startswith(f"{path}:{def_line + 5}:"), msg
    assert "'y'" in msg and "return y" in msg, msg


def test_failed_compile_registers_nothing(tmp_path):
    """A failed compile leaves no ufunc behind; the same function with a
    correct decorator afterwards works (and one bad signature in a list
    fails the whole decorator)."""
    import gc
    fn, _, _ = _error_kernel(str(tmp_path), "later_ok", "return a // b")
    gc.collect()
    before = sum(1 for o in gc.get_objects() if type(o) is np.ufunc
                 and getattr(o, "__name__", "") == "f_later_ok")
    with pytest.raises(numbavec.TypingError):
        vectorize(["float64(float64, float64)", "complex128(complex128, complex128)"])(fn)
    gc.collect()
    after = sum(1 for o in gc.get_objects() if type(o) is np.ufunc
                and getattr(o, "__name__", "") == "f_later_ok")
    assert before == after == 0
    assert not hasattr(fn, "py_func")
    uf = vectorize(["float64(float64, float64)"])(fn)
    assert isinstance(uf, np.ufunc) and uf.py_func is fn
    assert uf(np.float64(13), np.float64(4)) == 3.0


def test_frozen_globals(tmp_path):
    """Module-level and closure constants are read at compile time."""
    src = ("import numpy as np\nK = 3\nS = np.float32(0.5)\n\n"
           "def make():\n    c = 2\n    def g(a):\n        return a * K + S + c\n    return g\n")
    mod = dt.load_source(src, str(tmp_path), name="nv_frozen")
    g = mod.make()
    uf = vectorize(["float32(float32)", "float64(float64)"])(g)
    mod.K = 100
    mod.S = np.float32(9)
    x = np.array([1.0, 2.0], dtype=np.float32)
    assert uf(x).tolist() == [5.5, 8.5]
    assert uf(x.astype(np.float64)).tolist() == [5.5, 8.5]


COMPARE_VALUES = [np.nan, -np.nan, np.inf, -np.inf, 0.0, -0.0, 0.5, -0.5, 1e-300, -1e-300, 5e-324,
                  -5e-324, 1.0, 3.4e38, float(np.float32(0.1))]


@pytest.mark.parametrize("dtype", ["float64", "float32"])
@pytest.mark.parametrize("op", ["<", "<=", ">", ">="])
def test_compares_against_constants_are_quiet_and_exact(target, dtype, op):
    """x op c and c op x for a constant c are one integer range check of x's
    key: checked on signed zeros, subnormals, infinities and NaNs (which
    raise no 'invalid' flag), as NumPy compares."""
    t = np.dtype(dtype).type
    x = np.array(COMPARE_VALUES, dtype=dtype)
    for c in COMPARE_VALUES:
        text = ("math.nan" if np.isnan(c) else "math.inf" if c == np.inf
                else "-math.inf" if c == -np.inf else repr(c))
        py = kernel_from_source(f"import math\ndef k(x):\n"
                                f"    return (x {op} {text}) * 1 + ({text} {op} x) * 2\n")
        f = vectorize([f"int64({dtype})"], target=target)(py)
        with np.errstate(all="raise"):
            got = f(x)
        with np.errstate(all="ignore"):
            cmp = {"<": np.less, "<=": np.less_equal, ">": np.greater, ">=": np.greater_equal}[op]
            expected = cmp(x, t(c)).astype(np.int64) + 2 * cmp(t(c), x).astype(np.int64)
        np.testing.assert_array_equal(got, expected, err_msg=f"c={c!r}")
