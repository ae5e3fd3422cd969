"""A conditional add in a loop, `if c: s += v`, which SimplifyCFG makes
s = c ? s + v : s, is emitted as s + (c ? v : -0.0) (src/compiler/
selectfold.c), so the loop carries s through the add alone (numbagg's
move_exp_nansum).  Exact: x + -0.0 and x - +0.0 are x for every x; the
tests compare with the interpreter bit for bit, signed zeros included,
and look for the folded form in the optimised IR."""
import inspect
import re

import numpy as np
import pytest

from numbavec import guvectorize


def move_exp_nansum(a, alpha, min_weight, out):   # numbagg's
    N = len(a)
    numer = weight = 0.0
    zero_count = True
    for i in range(N):
        a_i = a[i]
        alpha_i = alpha[i]
        decay = 1.0 - alpha_i
        numer *= decay
        weight *= decay
        if not np.isnan(a_i):
            zero_count = False
            numer += a_i
            weight += alpha_i
        if weight >= min_weight and not zero_count:
            out[i] = numer
        else:
            out[i] = np.nan


def as_typed(fn, start, typed):
    """fn rebuilt with its accumulators' start `start` written `typed`: the
    interpreter's run of fn as numbavec types it (a 0.0 accumulator is a
    float64, test_promotion.py, where the interpreter's becomes float32 at
    its first operation)."""
    src = inspect.getsource(fn).replace(start, typed)
    assert typed in src
    space = {"np": np}
    exec(compile(src, inspect.getsourcefile(fn), "exec"), space)
    return space[fn.__name__]


def positive_sum(a, out):
    s = -0.0                       # stays -0.0 until a positive value comes
    for i in range(len(a)):
        if a[i] > 0.0:
            s += a[i]
        out[i] = s


def negated_sum(a, out):
    s = -0.0
    for i in range(len(a)):
        if not (a[i] <= 0.5):      # NaN taken: the chain turns NaN
            s -= a[i]
        out[i] = s


def added_when_false(a, out):
    s = 0.0
    for i in range(len(a)):
        s = s if np.isnan(a[i]) else a[i] + s
        out[i] = s


def positive_sum_in_float32(a, out):
    s = np.float32(-0.0)           # a float32 sum of float32 values
    for i in range(len(a)):
        if a[i] > 0.0:
            s += a[i]
        out[i] = s


def bits(x):
    x = np.asarray(x)
    return x.view(np.uint32 if x.dtype == np.float32 else np.uint64)


def same_bits(got, want):
    """Equal as bit patterns (-0.0 apart from 0.0), any NaN equal to any NaN."""
    nan = np.isnan(want)
    assert np.array_equal(np.isnan(got), nan)
    np.testing.assert_array_equal(bits(got[~nan]), bits(want[~nan]))


def rows(dtype):
    rng = np.random.default_rng(11)
    a = rng.standard_normal((2100, 40)).astype(dtype)     # past quick code's budget
    a[rng.random(a.shape) < 0.1] = np.nan
    a[1] = np.nan
    a[2, :] = -0.0
    a[3, ::2] = 0.0
    a[3, 1::2] = -0.0
    a[4, :5] = np.nan
    a[5, 7] = np.inf                                     # (no -inf: inf - inf raises)
    return a


KERNELS = [positive_sum, negated_sum, added_when_false, positive_sum_in_float32]


@pytest.mark.parametrize("dtype", ["f4", "f8"])
@pytest.mark.parametrize("kernel", KERNELS, ids=[k.__name__ for k in KERNELS])
def test_a_conditional_add_agrees_to_the_bit(target, dtype, kernel):
    g = guvectorize([f"void({dtype}[:], {dtype}[:])"], "(n)->(n)", target=target)(kernel)
    a = rows(dtype)
    with np.errstate(invalid="raise"):
        got, got_strided = g(a), g(a[:, ::-2])
    for r, out in ((a, got), (a[:, ::-2], got_strided)):
        if dtype == "f4" and kernel is not positive_sum_in_float32:
            # the sum starts at a Python float: float64, rounded once into out
            r = r.astype("f8")
        want = np.empty_like(r)
        with np.errstate(invalid="ignore"):
            for k in range(r.shape[0]):
                kernel(r[k], want[k])
        same_bits(out, want.astype(dtype))


@pytest.mark.parametrize("dtype", ["f4", "f8"])
def test_move_exp_nansum_agrees_to_the_bit(target, dtype):
    g = guvectorize([f"void({dtype}[:], {dtype}[:], {dtype}, {dtype}[:])"], "(n),(n),()->(n)",
                    target=target)(move_exp_nansum)
    a = rows(dtype)
    alpha = np.random.default_rng(3).uniform(0.05, 0.5, a.shape).astype(dtype)
    t = np.dtype(dtype).type
    with np.errstate(invalid="raise"):
        got = g(a, alpha, t(0.3))
    want = np.empty_like(a)
    reference = as_typed(move_exp_nansum, "numer = weight = 0.0", "numer = weight = np.float64(0.0)")
    for k in range(a.shape[0]):
        reference(a[k], alpha[k], t(0.3), want[k])
    same_bits(got, want)


def test_the_select_leaves_the_chain():
    """In the optimised IR the element is chosen (against -0.0, or +0.0 for
    a subtraction) and added, not the sum chosen after the add."""
    def ir(fn, sig, layout="(n)->(n)"):
        return guvectorize([sig], layout)(fn).inspect_llvm(sig)
    text = ir(move_exp_nansum, "void(f8[:], f8[:], f8, f8[:])", "(n),(n),()->(n)")
    assert re.search(r"select i1 [^\n]*, double -0\.0+e\+00", text), text
    assert "term.picked" in text
    text = ir(negated_sum, "void(f8[:], f8[:])")
    assert re.search(r"select i1 [^\n]*, double 0\.0+e\+00", text), text
    text = ir(positive_sum_in_float32, "void(f4[:], f4[:])")
    assert re.search(r"select i1 [^\n]*, float -0\.0+e\+00", text), text
