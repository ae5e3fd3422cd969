"""Float compares in kernels raise no invalid flag for a quiet NaN, as
NumPy's own compares do not, on every path the machine code takes: the
vectorized contiguous loop, the scalar strided loop, reduce, a gufunc's
scalar loop.  Host code compares with plain `fcmp`, which the JIT makes
quiet before code generation (jit.c: quiet_compares); x86's plain lowering
(cmpltsd, maxsd, vcmpltpd) signals.
"""
import platform
import re

import numpy as np
import pytest

from numbavec import guvectorize, vectorize


def larger(x, y):
    return x if x > y else y


def in_range(x, y):
    return (x < y) + (x <= y) * 2 + (x >= 0.5) * 4 + (y > x) * 8


def running_max(a, out):
    m = a[0]
    for i in range(1, a.shape[0]):
        if a[i] > m:
            m = a[i]
    out[0] = m


def operands(dtype):
    rng = np.random.default_rng(0)
    x, y = rng.standard_normal((2, 999)).astype(dtype)
    x[::7] = np.nan
    y[::5] = np.nan
    return x, y


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("path", ["contiguous", "strided", "broadcast", "reduce"])
def test_ufunc_compares_are_quiet(target, dtype, path):
    sig = "f4(f4, f4)" if dtype == np.float32 else "f8(f8, f8)"
    big, cmp = vectorize([sig], target=target)(larger), vectorize([sig], target=target)(in_range)
    x, y = operands(dtype)
    if path == "strided":
        x, y = x[::3], y[1::3]
    elif path == "broadcast":
        y = dtype(np.nan)
    with np.errstate(invalid="raise"):
        if path == "reduce":
            got, want = big.reduce(x), x[0]
            for v in x[1:]:
                want = larger(want, v)
            np.testing.assert_array_equal(got, want)
            return
        got_big, got_cmp = big(x, y), cmp(x, y)
    with np.errstate(invalid="ignore"):
        np.testing.assert_array_equal(got_big, np.where(x > y, x, y))
        np.testing.assert_array_equal(got_cmp, in_range(x, y).astype(dtype))


@pytest.mark.parametrize("dtype", ["f4", "f8"])
def test_gufunc_compare_loop_is_quiet(target, dtype):
    g = guvectorize([f"void({dtype}[:], {dtype}[:])"], "(n)->()", target=target)(running_max)
    a = np.random.default_rng(1).standard_normal((300, 77)).astype(dtype)
    a[::3, ::4] = np.nan
    with np.errstate(invalid="raise"):
        got = g(a)
        got_strided = g(a[:, ::2])
    for rows, out in ((a, got), (a[:, ::2], got_strided)):
        want = np.empty(len(rows), dtype)
        for k, r in enumerate(rows):
            running_max(r, want[k:k + 1])
        np.testing.assert_array_equal(out, want)


# ---- compares that only choose values: made in a vector lane ----

def decaying_count(a, alpha, out):
    c = 0.0
    for i in range(len(a)):
        if a[i] > 0.5:
            c = c * alpha + 1
        else:
            c = c * alpha
        out[i] = c


def argmax_nan_last(a, out):
    best, at = a[0], 0
    for i in range(1, len(a)):
        if not (a[i] <= best):        # an unordered compare: a NaN is taken
            best, at = a[i], i
    out[0] = at


def small_flags(a, out):
    for i in range(len(a)):
        hi = 7 if a[i] >= 0.0 else -3          # an integer chosen
        lo = 1.5 if a[i] < -1.0 else 2.5         # a float chosen by the same kind of compare
        out[i] = hi * lo


def mixed_uses(a, out):
    n = 0
    for i in range(len(a)):
        big = a[i] > 1.0
        if big:                                  # the compare branches too: scalar form
            n += 1
        out[i] = n if big else -n


CHOOSERS = [(decaying_count, "(n),()->(n)", True), (argmax_nan_last, "(n)->()", False),
            (small_flags, "(n)->(n)", False), (mixed_uses, "(n)->(n)", False)]


def py_run(kernel, a, extra, out_shape, out_dtype):
    out = np.empty(out_shape, out_dtype)
    for k in range(a.shape[0]):
        kernel(a[k], *extra, out[k] if out.ndim > 1 else out[k:k + 1])
    return out


@pytest.mark.parametrize("dtype", ["f4", "f8"])
@pytest.mark.parametrize("kernel,layout,scalar", CHOOSERS, ids=[k[0].__name__ for k in CHOOSERS])
def test_compares_that_choose_values_are_quiet(target, dtype, kernel, layout, scalar):
    """A compare whose every use is a select (a count that grows or not, an
    argmax, values chosen by a threshold) is made in lane 0 of a vector
    (jit.c: quiet_select_form): quiet on NaNs, and the values it chooses as
    the interpreter's, for float and integer values of every width."""
    out_t = {"argmax_nan_last": "i8", "small_flags": dtype}.get(kernel.__name__, dtype)
    if kernel is mixed_uses:
        out_t = "i4"
    args = f"{dtype}[:], {dtype}, {out_t}[:]" if scalar else f"{dtype}[:], {out_t}[:]"
    g = guvectorize([f"void({args})"], layout, target=target)(kernel)
    # 2,100 rows of 33: past quick code's budget, so the optimised code runs
    # too (quick code, made with fast instruction selection, compares apart)
    a = np.random.default_rng(2).standard_normal((2100, 33)).astype(dtype)
    a[::3, ::4] = np.nan
    a[5, 0] = np.nan                               # a NaN first
    extra = (np.dtype(dtype).type(0.75),) if scalar else ()
    with np.errstate(invalid="raise"):
        got_small = g(a[:40], *extra)
        got = g(a, *extra)
        got_strided = g(a[:, ::-2], *extra)
    for rows, out in ((a[:40], got_small), (a, got), (a[:, ::-2], got_strided)):
        shape = rows.shape if layout.endswith("(n)") else (rows.shape[0],)
        with np.errstate(invalid="ignore"):
            if kernel is decaying_count and dtype == "f4":
                # c starts at 0.0: a float64 (test_promotion.py), rounded once
                wide = [np.float64(x) for x in extra]
                want = py_run(kernel, rows.astype("f8"), wide, shape, "f8").astype(out_t)
            else:
                want = py_run(kernel, rows, extra, shape, out_t)
        np.testing.assert_array_equal(out, want)


@pytest.mark.parametrize("form", ["native", "lanes", "scalar"])
@pytest.mark.slow
def test_each_form_of_a_choosing_compare_agrees(form):
    """The forms other hosts make (jit.c: quiet_form): AVX-512's scalar
    compare into a mask, AVX's vector lane, and the scalar strict compare,
    forced in a child with NUMBAVEC_QUIET_FORM (a host without the
    instructions keeps what it has), each kernel against the interpreter,
    quiet on NaNs, in optimised code."""
    import os
    from conftest import run_python
    code = ("import sys, numpy as np\n"
            f"sys.path.insert(0, {os.path.dirname(os.path.abspath(__file__))!r})\n"
            "import test_quiet_compares as t\n"
            "for kernel, layout, scalar in t.CHOOSERS:\n"
            "    for dtype in ('f4', 'f8'):\n"
            "        t.test_compares_that_choose_values_are_quiet('cpu', dtype, kernel, layout, scalar)\n"
            "print('agree')\n")
    env = dict(os.environ, NUMBAVEC_QUICK="0")
    if form != "native":
        env["NUMBAVEC_QUIET_FORM"] = form
    r = run_python(code, env=env, as_file=True)
    assert r.returncode == 0 and "agree" in r.stdout, r.stderr


@pytest.mark.skipif(platform.machine() not in ("x86_64", "AMD64"), reason="x86 instruction names")
@pytest.mark.parametrize("form", ["native", "lanes"])
def test_a_compare_that_chooses_writes_a_mask_with_avx(form, monkeypatch):
    """With AVX-512, the quiet compare of a select is vcmp*_oqsd into a
    mask register, a loaded operand folded into it, and a masked move; with
    AVX, vcmp*_oqpd writing a mask or a blend's mask.  Not vucomisd and a
    flag moved into a mask register, nor a branch."""
    from numbavec import _core
    feats = _core._jit_info().get("features", "").split(",")
    if "+avx" not in feats:
        pytest.skip("no AVX: SSE has no quiet vector compare")
    if form == "lanes":
        monkeypatch.setenv("NUMBAVEC_QUIET_FORM", "lanes")
    sig = "void(f8[:], f8, f8[:])"
    g = guvectorize([sig], "(n),()->(n)")(decaying_count)
    asm = g.inspect_asm(sig)
    assert "ucomisd" not in asm
    if form == "native" and "+avx512f" in feats:
        assert "_oqsd\t-" in asm or "_oqsd\t(" in asm, asm   # the load folded in
        assert "{%k" in asm
    else:
        assert "_oqpd" in asm
    m = guvectorize(["void(f8[:], i4[:])"], "(n)->(n)")(mixed_uses)
    assert "ucomisd" in m.inspect_asm("void(f8[:], i4[:])")   # it branches: scalar form


# ---- a running extremum's `if`: kept a branch (branchhint.c) ----

def nanargmax(a, out):                  # numbagg's, as a gufunc
    amax = -np.inf
    idx = -1
    for i, ai in enumerate(a.flat):
        if ai > amax or (idx == -1 and not np.isnan(ai)):
            amax = ai
            idx = i
    out[0] = idx


def nanargmin(a, out):
    amin = np.inf
    idx = -1
    for i, ai in enumerate(a.flat):
        if ai < amin or (idx == -1 and not np.isnan(ai)):
            amin = ai
            idx = i
    out[0] = idx


def nanmax(a, out):
    amax = -np.inf
    all_missing = True
    for ai in a.flat:
        if ai >= amax:
            amax = ai
            all_missing = False
    if all_missing:
        amax = np.nan
    out[0] = amax


def argmax_pair(a, out):
    best, at = -np.inf, -1
    for i in range(a.shape[0]):
        if a[i] > best:
            best, at = a[i], i
    out[0] = at


EXTREMA = [(nanargmax, "i8"), (nanargmin, "i8"), (nanmax, None), (argmax_pair, "i8")]


def extremum_rows(dtype):
    """Rows of 50 (2,100 of them: past quick code's budget) in random
    order, rising (a new extreme at every element), falling, NaN first,
    NaN only, a NaN after the extreme, ties of the extreme, +-inf."""
    rng = np.random.default_rng(7)
    a = rng.standard_normal((2100, 50)).astype(dtype)
    a[::3, ::5] = np.nan
    a[1] = np.arange(50)
    a[2] = -np.arange(50)
    a[3, :4] = np.nan
    a[4] = np.nan
    a[5, 10], a[5, 11] = 9.0, np.nan
    a[6, 3] = a[6, 30] = 9.0
    a[7, 8], a[7, 9] = np.inf, -np.inf
    a[8] = np.arange(50)[::-1] % 7
    return a


@pytest.mark.parametrize("dtype", ["f4", "f8"])
@pytest.mark.parametrize("kernel,out_t", EXTREMA, ids=[k[0].__name__ for k in EXTREMA])
def test_running_extremum_agrees_and_is_quiet(target, dtype, kernel, out_t):
    """numbagg's nanargmax, nanargmin and nanmax, and an argmax that unpacks
    its pair: their `if` carries branch weights (rarely taken) and becomes
    a branch on a quiet compare; the results are the interpreter's, NaN
    rows, rising rows and ties included, contiguous and strided, and no
    invalid flag is raised on NaN."""
    out_t = out_t or dtype
    g = guvectorize([f"void({dtype}[:], {out_t}[:])"], "(n)->()", target=target)(kernel)
    a = extremum_rows(dtype)
    with np.errstate(invalid="raise"):
        got, got_strided = g(a), g(a[:, ::-3])
    for rows, out in ((a, got), (a[:, ::-3], got_strided)):
        with np.errstate(invalid="ignore"):
            want = py_run(kernel, rows, (), (rows.shape[0],), out_t)
        np.testing.assert_array_equal(out, want)


def int_running_max(a, out):
    best = a[0]
    for i in range(a.shape[0]):
        if a[i] > best:
            best = a[i]
    out[0] = best


def max_with_else(a, out):
    best = -np.inf
    n = 0
    for i in range(a.shape[0]):
        if a[i] > best:
            best = a[i]
        else:
            n += 1
    out[0] = best + n


def weighted(ir):
    """Whether the IR holds branchhint.c's weights (either way round: a
    select whose operands InstCombine swapped carries them swapped)."""
    return re.search(r'!"branch_weights", i32 (1, i32 2000|2000, i32 1)\}', ir) is not None


def test_running_extremum_carries_branch_weights():
    """The weights are on a float running extremum in a loop only: not on
    an integer one (LLVM vectorizes its max reduction from the select),
    not under fastmath (a float max reduction vectorizes too), not on an
    `if` with an else."""
    def ir(fn, sig, **kw):
        return guvectorize([sig], "(n)->()", **kw)(fn).inspect_llvm(sig)
    assert weighted(ir(nanmax, "void(f8[:], f8[:])"))
    assert weighted(ir(nanargmax, "void(f4[:], i8[:])"))
    assert weighted(ir(argmax_pair, "void(f8[:], i8[:])"))
    assert not weighted(ir(int_running_max, "void(i8[:], i8[:])"))
    assert not weighted(ir(nanmax, "void(f8[:], f8[:])", fastmath=True))
    assert not weighted(ir(max_with_else, "void(f8[:], f8[:])"))
    a = np.random.default_rng(1).standard_normal((3, 40))
    g = guvectorize(["void(f8[:], f8[:])"], "(n)->()", fastmath=True)(nanmax)
    np.testing.assert_array_equal(g(a), a.max(axis=1))


def short_circuit_order(a, out):
    """An extremum's `or`/`and` whose later operands must not run early:
    a[i - 1] is read only where i > 0 (a[-1] is the row's last value)."""
    best = -np.inf
    at = -1
    for i in range(len(a)):
        if a[i] > best or (i > 0 and a[i - 1] > best and not np.isnan(a[i])):
            best = a[i]
            at = i
    out[0] = at


def test_an_extremums_or_and_and_jump_from_each_operand(target):
    """branchhint.c: the `if` of an extremum jumps from each operand of its
    `or` and `and` in turn, each jump weighted, instead of branching once on
    their computed value (numbagg's nanargmax, 0.73 -> 1.09 of Numba's
    speed); Python's order and short-circuit hold."""
    sig = "void(f8[:], i8[:])"
    ir = guvectorize([sig], "(n)->()")(nanargmax).inspect_llvm(sig)
    assert len(re.findall(r"br i1 [^\n]*!prof", ir)) >= 3, ir
    g = guvectorize([sig, "void(f4[:], i8[:])"], "(n)->()", target=target)(short_circuit_order)
    a = np.random.default_rng(4).standard_normal((300, 23))
    a[::5, 0] = np.nan
    a[7, :] = np.nan
    a[9, -1] = 50.0
    for x in (a, a.astype(np.float32)):
        want = np.empty(x.shape[0], np.int64)
        for k in range(x.shape[0]):
            short_circuit_order(x[k], want[k:k + 1])
        with np.errstate(invalid="raise"):
            np.testing.assert_array_equal(g(x), want)


@pytest.mark.skipif(platform.machine() not in ("x86_64", "AMD64"), reason="x86 instruction names")
def test_running_maximum_branches_on_a_quiet_compare():
    """Code generation turns the weighted selects of `if a[i] > best` into
    a jump on vucomisd (quiet), not a compare into a mask register or a
    vector lane that the loop would carry from one element to the next."""
    sig = "void(f8[:], i8[:])"
    asm = guvectorize([sig], "(n)->()")(argmax_pair).inspect_asm(sig)
    assert "ucomisd" in asm
    assert "_oqsd" not in asm and "_oqpd" not in asm and "maxsd" not in asm
