"""Arrays in gufunc kernels: views, slices, broadcast assignment, array
expressions, allocation, iteration and reductions, each checked against the
kernel run by the interpreter on NumPy arrays (its py_func), over dtypes,
sizes (0, 1, odd, large), non-contiguous, negative-stride and broadcast
operands, on every target."""
import os
import re
import resource
import sys

import numpy as np
import pytest

import numbavec
from array_kernels import KERNELS, core_dims, signature
from conftest import HAVE_PTXAS, TEST_PATHS, assemble, kernel_from_source, run_python
from numbavec import _core, cuda, guvectorize

FLOATS = ["float64", "float32"]


def make_inputs(layout, kinds, sizes, dtype, rng, nan=False):
    """Inputs with the core sizes {dim: size}; scalars for () inputs."""
    ins, _ = core_dims(layout)
    out = []
    for dims, k in zip(ins, kinds):
        shape = tuple(sizes[d] for d in dims)
        if k == "i":
            out.append(rng.integers(-1, 6, size=shape).astype(np.int64))
        elif k == "s":
            out.append(dtype(rng.integers(1, 5)))
        else:
            a = rng.standard_normal(shape).astype(dtype)
            if nan and a.size > 2:
                a.flat[rng.integers(0, a.size, size=max(1, a.size // 4))] = np.nan
            out.append(a)
    return out


def out_shape(layout, sizes):
    _, outs = core_dims(layout)
    return tuple(sizes.get(d, int(d) if d.isdigit() else 0) for d in outs[0])


def reference(py, inputs, shape, dtype):
    """py run by the interpreter on copies of inputs: the output, or the
    exception it raised."""
    out = np.zeros(shape or (1,), dtype=dtype)  # a () output is written as res[0]
    args = [x.copy() if isinstance(x, np.ndarray) else x for x in inputs]
    try:
        with np.errstate(all="ignore"):
            import warnings
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                py(*args, out)
    except Exception as e:  # noqa: BLE001 - the kernel's own exception is the result
        return e
    return out.reshape(shape)


def check(gu, py, inputs, shape, dtype, layout, out=None):
    expected = reference(py, inputs, shape, dtype)
    needs_out = any(d not in {x for dims in core_dims(layout)[0] for x in dims}
                    and not d.isdigit() for d in core_dims(layout)[1][0])
    kwargs = {}
    if needs_out:
        kwargs["out"] = np.zeros(shape, dtype=dtype)
    if isinstance(expected, Exception):
        with pytest.raises(type(expected)):
            gu(*inputs, **kwargs)
        return
    with np.errstate(all="ignore"):
        got = gu(*inputs, **kwargs)
    tol = 1e-4 if dtype == np.float32 else 1e-10
    np.testing.assert_allclose(got, expected, rtol=tol, atol=tol, equal_nan=True)


def body_gufunc(body, sig, layout, target):
    """The kernel `def k(a, out): <body>` (NumPy imported) and its gufunc."""
    py = kernel_from_source(f"import numpy as np\ndef k(a, out):\n    {body}\n")
    return py, guvectorize([sig], layout, target=target)(py)


SIZES_1D = [0, 1, 2, 7, 1000]
SIZES_2D = [(0, 3), (1, 1), (3, 4), (5, 2), (40, 33)]


def size_cases(layout):
    ins, outs = core_dims(layout)
    dims = [d for g in ins + outs for d in g if not d.isdigit()]
    if "m" in dims:
        return [{"m": m, "n": n, "k": 5} for m, n in SIZES_2D]
    return [{"n": n, "k": 5} for n in SIZES_1D]


@pytest.mark.parametrize("ftype", FLOATS)
@pytest.mark.parametrize("name", sorted(KERNELS))
def test_kernel_matches_the_interpreter(target, name, ftype):
    py, layout, kinds, out_kind = KERNELS[name]
    dtype = np.dtype(ftype).type
    gu = guvectorize([signature(layout, kinds, out_kind, ftype)], layout, target=target)(py)
    rng = np.random.default_rng(len(name))
    for sizes in size_cases(layout):
        shape = out_shape(layout, sizes)
        for nan in (False, True):
            inputs = make_inputs(layout, kinds, sizes, dtype, rng, nan=nan)
            check(gu, py, inputs, shape, dtype, layout)


@pytest.mark.skipif(os.environ.get("NUMBAVEC_QUICK") == "0", reason="no quick code")
@pytest.mark.parametrize("name", sorted(KERNELS))
@pytest.mark.slow
def test_quick_and_optimised_bodies_agree(target, name):
    """A gufunc's first calls run its body's quick code (unoptimised), and a
    call past quick code's budget makes the optimised body: both give the
    same results, bit for bit, NaNs included."""
    py, layout, kinds, out_kind = KERNELS[name]
    gu = guvectorize([signature(layout, kinds, out_kind, "float64")], layout, target=target)(py)
    rng = np.random.default_rng(5)
    sizes = size_cases(layout)[-1]
    shape = out_shape(layout, sizes)
    inputs = make_inputs(layout, kinds, sizes, np.float64, rng, nan=True)
    if isinstance(reference(py, inputs, shape, np.float64), Exception):
        pytest.skip("the kernel raises on these inputs")
    ins = {x for dims in core_dims(layout)[0] for x in dims}
    needs_out = any(d not in ins and not d.isdigit() for d in core_dims(layout)[1][0])

    def call(batch=None):
        args = inputs if batch is None else [
            np.broadcast_to(x, (batch,) + np.shape(x)) for x in inputs]
        kwargs = {}
        if needs_out:
            kwargs["out"] = np.zeros(((batch,) if batch else ()) + shape)
        with np.errstate(all="ignore"):
            return gu(*args, **kwargs)

    info = _core._jit_info()
    quick = call()
    made = _core._jit_info()
    assert (made["quick"], made["compilations"]) == (info["quick"] + 1, info["compilations"])
    call(batch=100)  # past the budget: the optimised body is made
    assert _core._jit_info()["compilations"] == info["compilations"] + 1
    np.testing.assert_array_equal(call(), quick)


def running_sums(a, out):
    s = 0.0
    for i in range(len(a)):
        s += a[i]
        out[i] = s


def window_sums(a, w, out):
    for i in range(len(a)):
        s = 0.0
        for j in range(max(0, i - int(w) + 1), i + 1):
            s += a[j]
        out[i] = s


def window_means(a, w, out):
    for i in range(len(a)):
        out[i] = a[max(0, i - int(w) + 1):i + 1].sum()


SCALAR_LOOPS = {"running_sums": (running_sums, "(n)->(n)"),
                "backward_fill": (KERNELS["backward_fill"][0], "(n)->(n)"),
                "window_sums": (window_sums, "(n),()->(n)"),
                "window_means": (window_means, "(n),()->(n)")}
# kernels whose sum starts at 0.0, a float64 whatever the elements' type
WIDENED = {"running_sums", "window_sums"}


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("name", sorted(SCALAR_LOOPS))
def test_unrolled_scalar_loops_agree_at_every_remainder(target, name, dtype):
    """The optimised code unrolls the loops the vectorizer leaves scalar
    (8x for these: jit.c, mark_unrolled_loops), with a remainder loop for the
    last len % 8 elements.  Every length up to 3 x 8 + 7, contiguous,
    strided and reversed, against the interpreter, bit for bit (the sums run
    in the source's order)."""
    py, layout = SCALAR_LOOPS[name]
    t = dtype
    sig = f"void({t}[:], {t}[:])" if layout == "(n)->(n)" else f"void({t}[:], {t}, {t}[:])"
    gu = guvectorize([sig], layout, target=target)(py)
    extra = [np.dtype(dtype).type(5)] if "()" in layout else []
    info = _core._jit_info()
    with np.errstate(all="ignore"):
        gu(np.ones((1, 70000), dtype), *extra)  # past quick code's budget at once
    assert _core._jit_info()["quick"] == info["quick"]
    rng = np.random.default_rng(3)
    for n in range(32):
        base = rng.standard_normal(2 * n).astype(dtype)
        base[rng.integers(0, max(1, 2 * n), size=n // 3)] = np.nan if name == "backward_fill" else 0
        for a in (base[:n], base[::2], base[:n][::-1]):
            if name in WIDENED and dtype == "float32":
                # the accumulator starts at 0.0: float64 (test_promotion.py)
                wide = [x.astype(np.float64) for x in [a] + extra]
                expect = reference(py, wide, (n,), np.float64).astype(dtype)
            else:
                expect = reference(py, [a] + extra, (n,), dtype)
            with np.errstate(all="ignore"):
                got = gu(a, *extra)
            np.testing.assert_array_equal(got, expect, err_msg=f"n={n} strides={a.strides}")


def optimised_ir(imports, decoration, call, shown):
    """The optimised IR (NUMBAVEC_DUMP=opt) of kernel k, imported by
    `imports`, decorated with guvectorize(`decoration`) and called on
    `call` in a child, which prints `shown` (the start of the result)."""
    code = ("import numpy as np, sys\n"
            f"sys.path[:0] = {[os.path.dirname(os.path.abspath(__file__)), *TEST_PATHS]!r}\n"
            f"{imports}\nfrom numbavec import guvectorize\n"
            f"g = guvectorize({decoration})(k)\n"
            f"print(np.ravel(g({call}))[:4])\n")
    r = run_python(code, env=dict(os.environ, NUMBAVEC_DUMP="opt"), as_file=True)
    assert r.returncode == 0, r.stderr
    assert shown in r.stdout, r.stdout
    return r.stderr


def test_scalar_loops_are_unrolled():
    """What mark_unrolled_loops marks, in the optimised IR: a window sum's
    in-order float sum, which the vectorizer leaves scalar, is unrolled 8x
    (in the contiguous and the strided body) ahead of a remainder loop that
    is not unrolled again."""
    opt = optimised_ir("from test_arrays import window_means as k",
                       "['void(f8[:], f8, f8[:])'], '(n),()->(n)'", "np.ones(70000), 3.0",
                       "[1. 2. 3. 3.]")
    assert opt.count("= fadd double") >= 2 * 8, opt
    assert "llvm.loop.unroll.count" not in opt  # consumed by the unroller
    assert '!"llvm.loop.unroll.disable"' in opt  # the remainder loops' mark


def masked_count(a, out):
    out[0] = np.sum(a > 0.25)


def fill_halves(a, out):
    out[:] = 1.5          # a vector body that only stores splats


VECTOR_LOOPS = {"copy_and_update": (KERNELS["copy_and_update"][0], "(n)->(n)"),
                "fill_halves": (fill_halves, "(n)->(n)"),
                "masked_count": (masked_count, "(n)->()")}


@pytest.mark.parametrize("dtype", FLOATS + ["int32"])
@pytest.mark.parametrize("name", sorted(VECTOR_LOOPS))
@pytest.mark.slow
def test_unrolled_vector_loops_agree_at_every_remainder(target, name, dtype):
    """The vector bodies are unrolled too (at most 4x, jit.c:
    mark_unrolled_loops), ahead of a remainder of one vector a step and
    then the scalar one: every length up to 4 x 16 + 15 elements,
    contiguous, strided and reversed, against the interpreter."""
    py, layout = VECTOR_LOOPS[name]
    t = dtype
    out_t = "int64" if name == "masked_count" else t
    gu = guvectorize([f"void({t}[:], {out_t}[:])"], layout, target=target)(py)
    info = _core._jit_info()
    gu(np.ones((1, 70000), dtype))  # past quick code's budget at once
    assert _core._jit_info()["quick"] == info["quick"]
    rng = np.random.default_rng(4)
    for n in range(80):
        base = (rng.standard_normal(2 * n) * 4).astype(dtype)
        for a in (base[:n], base[::2], base[:n][::-1]):
            shape = (n,) if layout.endswith("(n)") else ()
            expect = reference(py, [a], shape, out_t)
            np.testing.assert_array_equal(gu(a), expect, err_msg=f"n={n} strides={a.strides}")


def test_vector_bodies_are_unrolled():
    """What mark_unrolled_loops does to a vector body, in the optimised IR:
    copy_and_update's passes over a row run four vectors a step (four vector
    additions in a row of the loop), then one vector a step."""
    opt = optimised_ir("from array_kernels import copy_and_update as k",
                       "['void(f8[:], f8[:])'], '(n)->(n)'", "np.ones((300, 256))",
                       "[4. 4. 4. 4.]")
    adds = [line for line in opt.splitlines() if "= fadd <" in line and "double>" in line]
    assert len(adds) >= 4 + 1, opt   # the unrolled body and the one-vector remainder
    assert "llvm.loop.unroll.count" not in opt  # consumed by the unroller


def strided_views(x, how):
    """x as a non-contiguous or negative-stride view holding the same values."""
    if not isinstance(x, np.ndarray) or x.ndim == 0:
        return x
    if how == "reversed":
        big = x[tuple(slice(None, None, -1) for _ in range(x.ndim))].copy()
        return big[tuple(slice(None, None, -1) for _ in range(x.ndim))]
    big = np.zeros(tuple(2 * s for s in x.shape), dtype=x.dtype)
    view = big[tuple(slice(None, None, 2) for _ in range(x.ndim))]
    view[...] = x
    return view


@pytest.mark.parametrize("how", ["strided", "reversed"])
@pytest.mark.parametrize("name", sorted(KERNELS))
def test_kernel_on_strided_and_reversed_operands(target, name, how):
    py, layout, kinds, out_kind = KERNELS[name]
    gu = guvectorize([signature(layout, kinds, out_kind, "float64")], layout, target=target)(py)
    rng = np.random.default_rng(7)
    for sizes in size_cases(layout)[1:4]:
        shape = out_shape(layout, sizes)
        inputs = make_inputs(layout, kinds, sizes, np.float64, rng)
        check(gu, py, [strided_views(x, how) for x in inputs], shape, np.float64, layout)


@pytest.mark.parametrize("name", sorted(KERNELS))
def test_kernel_over_loop_dimensions(target, name):
    """A batch of 4 core problems, one operand broadcast along the loop (a zero
    stride): each result is the interpreter's for its problem."""
    py, layout, kinds, out_kind = KERNELS[name]
    gu = guvectorize([signature(layout, kinds, out_kind, "float64")], layout, target=target)(py)
    rng = np.random.default_rng(11)
    sizes = size_cases(layout)[2]
    shape = out_shape(layout, sizes)
    batch = [make_inputs(layout, kinds, sizes, np.float64, rng) for _ in range(4)]
    stacked = [np.stack([b[k] for b in batch]) for k in range(len(kinds))]
    stacked[0] = stacked[0][:1]  # broadcast along the loop dimension
    for b in batch:
        b[0] = batch[0][0]
    expected = [reference(py, b, shape, np.float64) for b in batch]
    if any(isinstance(e, Exception) for e in expected):
        with pytest.raises(type(next(e for e in expected if isinstance(e, Exception)))):
            gu(*stacked, out=np.zeros((4,) + shape))
        return
    got = gu(*stacked, out=np.zeros((4,) + shape))
    np.testing.assert_allclose(got, np.stack(expected), rtol=1e-10, atol=1e-10, equal_nan=True)


# ---- views and indexing, one construct at a time ----

VIEW_CASES = [
    "out[:] = a[::-1]",
    "out[:] = a[1:3].sum() + a[-2:].sum() + a[:-1:2].sum()",
    "out[:] = a[5:1:-1].sum() + a[-1:-6:-2].sum() + a[100:].sum() + a[:-100].sum()",
    "out[...] = a",
    "out[:] = a[None, :][0]",
    "out[:] = a[..., None][:, 0]",
    "out[:] = a[np.newaxis][0]",
    "out[1:] = a[:-1]\n    out[0] = -1",
    "out[:-1] = a[1:]\n    out[-1] = -1",
    "out[:] = a\n    out[1:] = out[:-1]",
    "out[:] = a\n    out[:-1] = out[1:]",
    "out[:] = a\n    out[::-1] = out",
    # overlapping reads through a copy: several leaves, one the target's own view
    "out[:] = a\n    out[1:] = out[:-1] * 2 + out[1:] - out[::-1][1:]",
    "out[:] = a\n    out[::2] = out[1::2][:len(out[::2])] if len(out) > 1 else out[::2]",
    "out[:] = a\n    out[2:] += out[:-2] * out[1:-1]",
    "out[:] = a\n    out[1:] = out[:1] + out[:-1] * a[1:]",
    "out[:] = 0\n    out[::3] = 7",
    "out[:] = a.T",
    "out[:] = len(a) + a.size + a.ndim + a.shape[0] + a.itemsize",
    "out[:] = a\n    out += a\n    out -= 1\n    out *= a\n    out /= 2",
    "b = a\n    b = a[::-1]\n    out[:] = b",
    "out[:] = a * 2\n    out[::2] += a[::2]",
    "out[:] = (a > 0) & (a < 1)",
    "out[:] = -a + (+a) * abs(a)",
    "out[:] = np.minimum(a, 0.5) + np.maximum(a, -0.5)",
    "out[:] = np.float32(a) * 2",
    "out[:] = a ** 2",
    "out[:] = np.where(a > 0, a, 0.5 * a)",
    "out[:] = np.where(a > 0, 1, 0) + np.where(a[::-1] < 0, a, 2)",
    "out[0] = np.where(a.sum() > 0, 1.5, -1)\n    out[1:] = np.where(np.isnan(a[1:]), 0, a[:-1])",
]


@pytest.mark.parametrize("body", VIEW_CASES)
def test_views_match_the_interpreter(target, body):
    py, gu = body_gufunc(body, "void(float64[:], float64[:])", "(n)->(n)", target)
    rng = np.random.default_rng(3)
    for n in (0, 1, 2, 5, 8, 101):
        a = rng.standard_normal(n)
        check(gu, py, [a], (n,), np.float64, "(n)->(n)")


ND_CASES = [
    "out[:] = a[1]",
    "out[:] = a[-1, ::-1]",
    "out[:] = a[:, 0]",
    "out[...] = a[0, ...]",
    "out[:] = a.T[0]",
    "out[:] = a[::2].sum() + 0 * a[0]",
    "out[:] = 0\n    for row in a:\n        out += row",
    "out[:] = 1\n    for row in a[::-1]:\n        out[:] = out * 2 + row",
    "out[:] = a.sum() + a.max() + a.min() + a.mean() + a[1:, 1:].sum()",
    "out[:] = a[0] + a[1]\n    out[:] = out - a[:1].sum()",
    "t = a[1:]\n    t = t[::-1]\n    out[:] = t[0]",
    # an output written through a 2-d scratch array that overlaps itself
    "t = a.copy()\n    t[1:, :] = t[:-1, :] + t[:1, :] * t.T[1:, :]\n    out[:] = t.sum(axis=0)",
    "t = a.copy()\n    t[:, ::-1] = t * 2 + t[::-1]\n    out[:] = t[-1]",
]


@pytest.mark.parametrize("body", ND_CASES)
def test_2d_views_match_the_interpreter(target, body):
    py, gu = body_gufunc(body, "void(float64[:, :], float64[:])", "(n,n)->(n)", target)
    rng = np.random.default_rng(5)
    for n in (2, 3, 9):
        a = rng.standard_normal((n, n))
        check(gu, py, [a], (n,), np.float64, "(n,n)->(n)")
        check(gu, py, [a.T], (n,), np.float64, "(n,n)->(n)")


ALIASED_CASES = [
    "for row in a:\n        out[:] = out * 0.5 + row[::-1]",
    "for row in a:\n        out[1:] = row[:-1] + out[1:]",
    "for row in a:\n        out += row",
]


@pytest.mark.parametrize("body", ALIASED_CASES)
def test_arguments_that_are_one_array_are_checked_view_by_view(target, body):
    """g(x, out=x) with layout (m,n)->(n): each call's out is a row of x.
    NumPy's gufuncs (and Numba's) give the kernel a copy of an input that an
    output overlaps, so every call's a is x as it was passed (the outputs no
    longer claim NPY_ITER_OVERLAP_ASSUME_ELEMENTWISE: with it, NumPy passed x
    uncopied and each call read the rows earlier calls had written)."""
    py, gu = body_gufunc(body, "void(float64[:, :], float64[:])", "(m,n)->(n)", target)
    x = np.random.default_rng(11).standard_normal((5, 5))
    want = x.copy()
    for i in range(len(want)):
        py(x.copy(), want[i])
    got = x.copy()
    gu(got, out=got)
    np.testing.assert_allclose(got, want, rtol=1e-12)


@pytest.mark.parametrize("dtype", ["int64", "int32", "uint8", "bool", "float32", "complex128"])
def test_reductions_keep_numpys_types(target, dtype):
    complex_ = np.dtype(dtype).kind == "c"
    py = kernel_from_source(
        "import numpy as np\n"
        "def k(a, s, p, mn, mx, me, an, al):\n"
        "    s[0] = a.sum()\n    p[0] = np.prod(a[:3])\n"
        + ("    mn[0] = 0\n    mx[0] = 0\n" if complex_ else
           "    mn[0] = a.min()\n    mx[0] = a.max()\n")
        + "    me[0] = a.mean()\n    an[0] = a.any()\n    al[0] = a.all()\n")
    a = (np.arange(1, 12) % 5).astype(dtype)
    t = np.dtype(dtype)
    total, mean = np.sum(a), np.mean(a)
    sig = (f"void({t.name}[:], {total.dtype.name}[:], {total.dtype.name}[:], {t.name}[:], "
           f"{t.name}[:], {mean.dtype.name}[:], bool[:], bool[:])")
    gu = guvectorize([sig], "(n)->(),(),(),(),(),(),()", target=target)(py)
    got = gu(a)
    expected = [total, np.prod(a[:3]), 0 if complex_ else a.min(), 0 if complex_ else a.max(),
                mean, a.any(), a.all()]
    for i, (g, e) in enumerate(zip(got, expected)):
        if not (complex_ and i in (2, 3)):
            assert g.dtype == np.asarray(e).dtype, (i, g.dtype, np.asarray(e).dtype)
        np.testing.assert_allclose(g, e, rtol=1e-6)


def test_a_mean_divides_by_the_size_it_walked(target):
    """np.mean divides by the walk's size (known before the loop, not
    counted in it): slices of every length (empty: NaN), broadcast
    expressions, reversed and 2-d views, as the interpreter's."""
    import warnings
    py = kernel_from_source(
        "def k(a, m, out):\n"
        "    k = int(m)\n"
        "    out[0] = a[:k].mean()\n"
        "    out[1] = a[k:k].mean()\n"
        "    out[2] = (a[:, None] * a[None, :k]).mean()\n"
        "    out[3] = a[::-2].mean()\n"
        "    out[4] = (a + 1.0).mean()\n"
        "    out[5] = a[None, k:].mean()\n")
    gu = guvectorize(["void(f8[:], f8, f8[:])"], "(n),()->(6)", target=target)(py)
    a = np.random.default_rng(5).standard_normal(9)
    for m in range(0, 11):
        want = np.empty(6)
        with warnings.catch_warnings(), np.errstate(all="ignore"):
            warnings.simplefilter("ignore")
            py(a, float(m), want)
            got = gu(a, float(m))
        np.testing.assert_allclose(got, want, rtol=1e-12, equal_nan=True)


def test_nan_reductions_follow_numpy(target):
    py = kernel_from_source(
        "import numpy as np\n"
        "def k(a, out):\n"
        "    out[0] = a.max()\n    out[1] = a.min()\n    out[2] = np.nanmax(a)\n"
        "    out[3] = np.nanmin(a)\n    out[4] = np.argmax(a)\n    out[5] = a.argmin()\n"
        "    out[6] = np.nansum(a)\n    out[7] = np.nanprod(a[:4])\n")
    gu = guvectorize(["void(float64[:], float64[:])"], "(n)->(8)", target=target)(py)
    for a in ([1.0, np.nan, 3.0, -2.0], [np.nan, np.nan, 1.0, 5.0], [2.0, 7.0, -1.0, 7.0],
              [np.nan] * 4, [-0.0, 0.0, 5.0, 5.0]):
        a = np.array(a)
        check(gu, py, [a], (8,), np.float64, "(n)->(8)")


SHORT_ROW_KERNELS = [
    # array loops: reductions and an expression of each row
    ("for i, row in enumerate(a):\n        out[i] = row.max() + np.nanmin(row) + (row * 2).sum()",
     "(m,n)->(m)"),
    # range loops the kernel writes
    ("for j in range(a.shape[1]):\n        out[j] = 0.0\n    for i in range(a.shape[0]):\n"
     "        for j in range(a.shape[1]):\n            out[j] += a[i, j]", "(m,n)->(n)"),
]


@pytest.mark.parametrize("body, layout", SHORT_ROW_KERNELS)
def test_short_rows_reach_the_vector_loop(target, body, layout):
    """Loops over core dimensions vectorize without interleaving: a row of 8
    doubles is one vector iteration, not 8 scalar ones (the 32 of an
    interleaved AVX-512 loop left rows of 8 and 16 wholly to the scalar
    remainder)."""
    py, gu = body_gufunc(body, "void(float64[:, :], float64[:])", layout, target)
    ir = gu.inspect_llvm(gu.types[0])
    checks = [int(v) for v in re.findall(r"%min\.iters\.check\S* = icmp ult i64 %\S+, (\d+)", ir)]
    assert checks and max(checks) <= 8, checks
    rng = np.random.default_rng(4)
    for n in (1, 7, 8, 9, 16, 17, 33):
        a = rng.standard_normal((5, n))
        a[1, n // 2] = np.nan
        a[2, 0] = -np.nan
        check(gu, py, [a], (5,) if layout.endswith("(m)") else (n,), np.float64, layout)


AXIS_CASES = [
    "out[:] = a.sum(axis=0)",
    "out[:] = np.sum(a, 1)",
    "out[:] = a.max(axis=-1) + a.min(axis=0)",
    "out[:] = np.nanmax(a, axis=0) - np.nanmin(a, axis=1)",
    "out[:] = a.mean(axis=0) * a.prod(axis=1)",
    "out[:] = (a > 0).any(axis=0) + (a > -1).all(axis=1)",
    "out[:] = np.nansum(a[::-1, ::2].T, axis=1)[:1].sum() + a[:, 0]",
    "out[:] = (a - a.mean(axis=0)).sum(axis=1)",
    "out[:] = np.sum(a * a, axis=0) + a.sum(axis=None)",
    "out[:] = a[0].sum(axis=0) + a[:, :].max(axis=-2)",
    "out[:] = a.argmax(axis=0) - np.argmin(a, axis=1) + np.argmax(a[0], axis=0)",
    "out[:] = np.nanmean(a, axis=0) + np.nanmean(a[::-1], 1)",
    "out[:] = a.var(axis=0) + np.std(a * 2, axis=1, ddof=1)",
    "out[:] = np.var(a, axis=-1, ddof=0) - a[1:].std(axis=0)",
    "out[:] = np.cumsum(a, axis=0)[-1] + a.cumprod(axis=1)[:, -1] + np.cumsum(a[0], axis=0)",
    "out[:] = np.cumsum(a.T, axis=1).T[:, 0]",
]


@pytest.mark.parametrize("body", AXIS_CASES)
def test_reductions_along_an_axis(target, body):
    py, gu = body_gufunc(body, "void(float64[:, :], float64[:])", "(n,n)->(n)", target)
    rng = np.random.default_rng(9)
    for n in (1, 2, 5):
        a = rng.standard_normal((n, n))
        if n > 2:
            a[1, 2] = np.nan
        check(gu, py, [a], (n,), np.float64, "(n,n)->(n)")
        check(gu, py, [np.ascontiguousarray(a.T)], (n,), np.float64, "(n,n)->(n)")


def test_reductions_along_an_axis_of_3d_arrays(target):
    py = kernel_from_source(
        "import numpy as np\n"
        "def k(a, o0, o1, o2):\n"
        "    o0[:, :] = a.sum(axis=0)\n    o1[:, :] = a.max(axis=1)\n"
        "    o2[:, :] = np.mean(a, axis=2)\n")
    gu = guvectorize(["void(int32[:, :, :], int64[:, :], int32[:, :], float64[:, :])"],
                     "(p,q,r)->(q,r),(p,r),(p,q)", target=target)(py)
    a = np.random.default_rng(2).integers(-50, 50, size=(3, 4, 5)).astype(np.int32)
    r0, r1, r2 = gu(a)
    np.testing.assert_array_equal(r0, a.sum(axis=0))
    np.testing.assert_array_equal(r1, a.max(axis=1))
    np.testing.assert_allclose(r2, a.mean(axis=2))


NDINDEX_CASES = [
    "for idx in np.ndindex(a.shape):\n        out[idx[1]] += a[idx] * (idx[0] + 1)",
    "for i, j in np.ndindex(a.shape[0], a.shape[1]):\n        out[j] += a[i, j]",
    "for idx in np.ndindex(a.shape):\n        if a[idx] > 0:\n            out[idx[0]] = a[idx]\n"
    "            break\n    else:\n        out[0] = -1",
    "for (k,) in np.ndindex(len(a)):\n        out[k] = k",
    "for idx in np.ndindex((a.shape[0] - 10, 2)):\n        out[0] = 99",
    "for idx in np.ndindex(()):\n        out[0] += 1",
]


@pytest.mark.parametrize("body", NDINDEX_CASES)
def test_ndindex_loops(target, body):
    py = kernel_from_source(
        f"import numpy as np\ndef k(a, out):\n    out[:] = 0\n    {body}\n")
    gu = guvectorize(["void(float64[:, :], float64[:])"], "(n,n)->(n)", target=target)(py)
    rng = np.random.default_rng(4)
    for n in (1, 3, 6):
        check(gu, py, [rng.standard_normal((n, n))], (n,), np.float64, "(n,n)->(n)")


MASK_CASES = [
    "out[:] = a\n    out[out < 0] = 0",
    "out[:] = a\n    out[np.isnan(a)] = -1\n    out[~(a > 0.5)] = 2",
    "out[:] = 0\n    x = a[a > 0]\n    out[:len(x)] = x",
    "out[:] = a[a > 0].sum() + a[a < 0].size + np.nanmax(a[a == a]) * 0",
    "out[:] = a\n    seen = a > 1\n    out[~seen] = np.nan",
]


@pytest.mark.parametrize("body", MASK_CASES)
def test_boolean_masks(target, body):
    py, gu = body_gufunc(body, "void(float64[:], float64[:])", "(n)->(n)", target)
    rng = np.random.default_rng(8)
    for n in (0, 1, 6, 33):
        a = rng.standard_normal(n)
        if n > 3:
            a[2] = np.nan
        check(gu, py, [a], (n,), np.float64, "(n)->(n)")
        check(gu, py, [a[::-1]], (n,), np.float64, "(n)->(n)")


def test_boolean_masks_of_2d_arrays(target):
    py, gu = body_gufunc("out[:, :] = a\n    out[a > 0] = 0\n    out[0, 0] = a[a < 0].sum()",
                         "void(float64[:, :], float64[:, :])", "(m,n)->(m,n)", target)
    a = np.random.default_rng(3).standard_normal((4, 5))
    check(gu, py, [a], (4, 5), np.float64, "(m,n)->(m,n)")
    check(gu, py, [a.T], (5, 4), np.float64, "(m,n)->(m,n)")


STAT_CASES = [
    "out[0] = a.var()\n    out[1] = np.std(a)\n    out[2] = a.var(ddof=1)\n    out[3] = np.std(a * 2, ddof=1)",
    "t = np.cumsum(a)\n    out[:len(t)] = t[:4]",
    "t = a.cumprod()\n    out[:] = 0\n    if len(t) >= 4:\n        out[:] = t[-4:]",
    "out[:] = np.cumsum(a[::-1] > 0)[:4].sum() + np.var(a[1:])",
]


@pytest.mark.parametrize("body", STAT_CASES)
def test_variance_and_cumulative(target, body):
    py, gu = body_gufunc(body, "void(float64[:], float64[:])", "(n)->(4)", target)
    rng = np.random.default_rng(12)
    for n in (1, 2, 4, 9, 100):
        a = rng.standard_normal(n)
        check(gu, py, [a], (4,), np.float64, "(n)->(4)")
        check(gu, py, [a[::-1]], (4,), np.float64, "(n)->(4)")


def test_cumulative_of_ints_and_2d_arrays(target):
    py, gu = body_gufunc("out[:] = np.cumsum(a)", "void(int8[:, :], int64[:])", "(m,n)->(k)",
                         target)
    a = np.arange(-6, 6, dtype=np.int8).reshape(3, 4)
    np.testing.assert_array_equal(gu(a, out=np.zeros(12, dtype=np.int64)), np.cumsum(a))
    np.testing.assert_array_equal(gu(a.T, out=np.zeros(12, dtype=np.int64)), np.cumsum(a.T))


# ---- errors ----

@pytest.mark.parametrize("body, error, match", [
    ("out[:] = a[:2]", ValueError, "broadcast"),
    ("out[:2] = a", ValueError, "broadcast"),
    ("out[0] = a[len(a)]", IndexError, "out of bounds"),
    ("out[0] = a.max()\n    out[0] = a[:0].max()", ValueError, "empty|zero-size"),
    ("out[0] = a[:0].argmin()", ValueError, "empty|zero-size"),
    ("t = np.zeros(len(a) - 10)\n    out[0] = t.sum()", ValueError, "negative"),
    # bytes past int64: NumPy's "array is too big" is a ValueError
    ("t = np.empty(1 << 62)\n    out[0] = t[0]", ValueError, "too big"),
    ("t = np.empty((1 << 40, 1 << 40))\n    out[0] = 1", ValueError, "too big"),
    ("t = np.empty((0, 1 << 40, 1 << 40))\n    out[0] = 1", ValueError, "too big"),
    ("t = np.empty(1 << 59)\n    out[0] = t[0]", MemoryError, None),
    ("s = len(a) - len(a)\n    out[0] = a[::s].sum()", ValueError, "step"),
])
def test_runtime_errors(target, body, error, match):
    py, gu = body_gufunc(body, "void(float64[:], float64[:])", "(n)->()", target)
    with pytest.raises(error, match=match):
        gu(np.arange(5.0))


@pytest.mark.parametrize("body, match", [
    ("out[:] = a and a", "truth values"),
    ("out[:] = math.exp(a)", "takes scalars, not arrays"),
    ("out[0] = a", "cannot store an array into one element"),
    ("out[:] = np.ones((2, 2))", "2-d array into a 1-d view"),
    ("out[:] = a[0, 0]", "too many indices"),
    ("out[:] = a[..., ...]", "single ellipsis"),
    ("out[:] = a[1.5:]", "slice bounds must be integers"),
    ("out[0] = a.sum(axis=1)", "axis 1 is out of bounds"),
    ("out[0] = a.sum(axis=len(a))", "must be an integer constant"),
    ("out[0] = a.sum(keepdims=True)", "only axis="),
    ("out[:] = np.zeros(3, dtype=np.str_)", "not a dtype a kernel supports"),
    ("out[:] = np.zeros(3, order='F')", "no keyword argument 'order'"),
    ("out[:] = a.tolist()", "the method .tolist"),
    ("out[a > 0] = a[None, :]", "2-d array stored through an index array"),
    ("out[:] = a[a[None, :] > 0]", "boolean index of 2 dimension"),
    ("out[:] = np.correlate(a, a)", "this NumPy function is not supported yet"),
    # a function of a NumPy submodule is named as written, not by its bare name
    ("out[:] = np.fft.fft(a)", r"np\.fft\.fft\(\) cannot be called in a kernel \(this NumPy"),
    ("out[0] = np.linalg.eigvals(a)[0]", r"np\.linalg\.eigvals\(\) cannot be called"),
    # an unsupported function called with keywords is named, not its keywords (issue 36)
    ("out[:] = np.correlate(a, a, mode='same')", "np.correlate.. cannot be called in a kernel .this"),
    ("out[0] = len(a, x=1)", "keyword arguments are not supported"),
    ("out[0] = np.float32(a[0], x=1)", "keyword arguments are not supported"),
    ("out[:] = np.cumsum(a, axis=1)", "axis 1 is out of bounds"),
    ("out[0] = a.var(ddof=len(a))", "ddof= must be an integer constant"),
    ("b = a\n    if a[0] > 0:\n        b = np.zeros(3, dtype=np.int8)\n    out[:] = b",
     "assigned both"),
    ("out[0] = 0 < a < 1", "chained comparison of arrays"),
    ("for x, y in enumerate(a, 0, 1):\n        pass", "enumerate"),
    ("for x, y in zip(a):\n        pass", "unpack zip"),
])
def test_typing_errors(target, body, match):
    py = kernel_from_source(f"import math\nimport numpy as np\ndef k(a, out):\n    {body}\n")
    with pytest.raises(numbavec.TypingError, match=match):
        guvectorize(["void(float64[:], float64[:])"], "(n)->(n)", target=target)(py)


@pytest.mark.parametrize("call", ["helper(a[0])", "helper(x=a[0])"])
def test_an_undecorated_helper_is_named_as_written(target, call):
    py = kernel_from_source("import numpy as np\n"
                            "def helper(x):\n    return x\n"
                            f"def k(a, out):\n    out[0] = {call}\n")
    with pytest.raises(numbavec.TypingError,
                       match=r"helper\(\) cannot be called in a kernel \(decorate it with "):
        guvectorize(["void(float64[:], float64[:])"], "(n)->(n)", target=target)(py)


def test_a_callee_too_long_to_quote_keeps_its_name(target):
    """A callee spelled in more than 60 characters is not quoted back whole."""
    import types

    def helper(x):
        return x

    ns = types.SimpleNamespace(
        a_namespace_with_a_very_long_name=types.SimpleNamespace(
            and_an_attribute_that_is_long_too=helper))
    py = kernel_from_source(
        "def k(a, out):\n"
        "    out[0] = ns.a_namespace_with_a_very_long_name.and_an_attribute_that_is_long_too(a[0])\n",
        globals_={"ns": ns})
    with pytest.raises(numbavec.TypingError) as info:
        guvectorize(["void(float64[:], float64[:])"], "(n)->(n)", target=target)(py)
    message = str(info.value).splitlines()[0]
    assert "helper" in message and "decorate it with @numbavec.jit" in message, message
    assert "and_an_attribute_that_is_long_too()" not in message, message


def test_vectorize_kernels_cannot_allocate(target):
    py = kernel_from_source("import numpy as np\ndef k(x):\n    return np.zeros(3).sum() + x\n")
    with pytest.raises(numbavec.TypingError, match="only a guvectorize kernel"):
        numbavec.vectorize(["float64(float64)"], target=target)(py)


def test_boundscheck_false_removes_the_check(target):
    py = kernel_from_source("def k(a, out):\n    out[0] = a[1:3].sum()\n    out[1] = a[-1]\n")
    gu = guvectorize(["void(float64[:], float64[:])"], "(n)->(2)", target=target,
                     boundscheck=False)(py)
    np.testing.assert_array_equal(gu(np.arange(5.0)), [3.0, 4.0])


def window_sums(a, lo, hi, out):
    """Indexing by a range loop's counter (checked with two signed compares,
    which LLVM proves away in a window loop): in bounds, from the end when
    negative, IndexError past either end."""
    n = a.shape[0]
    for i in range(n):
        s = 0
        for j in range(max(lo, i - 8), min(n + hi, i + 3)):
            s += a[j]
        out[i] = s


@pytest.mark.parametrize("lo, hi", [(0, 0), (-3, 0), (-7, 0), (0, 1), (-2, -1)])
def test_a_loop_counters_index_is_checked_at_both_ends(target, lo, hi):
    gu = guvectorize(["void(int64[:], int64, int64, int64[:])"], "(n),(),()->(n)",
                     target=target)(window_sums)
    a = np.arange(1, 6) * 10
    want = np.zeros(5, np.int64)
    try:
        window_sums(a, lo, hi, want)
    except IndexError:
        with pytest.raises(IndexError, match="index out of bounds"):
            gu(a, lo, hi)
        return
    np.testing.assert_array_equal(gu(a, lo, hi), want)


# ---- writes through views reach the caller ----

def test_a_write_through_a_view_marks_the_input_written(target):
    """x is written through v (a view in a variable): NumPy must then treat
    it as read-write, and a cast copy of it is written back."""
    py = kernel_from_source("def k(x, out):\n    v = x[1:]\n    v[0] = 5\n    out[0] = 1\n")
    gu = guvectorize(["void(float64[:], float64[:])"], "(n)->()", target=target)(py)
    x = np.zeros(4, dtype=np.float32)  # cast to float64: copied in and back
    gu(x)
    assert x[1] == 5
    ro = np.zeros(4)
    ro.flags.writeable = False
    with pytest.raises(ValueError):
        gu(ro)


def test_an_augmented_assignment_of_an_input_writes_it(target):
    py = kernel_from_source("def k(x, out):\n    x += 1\n    out[0] = x.sum()\n")
    gu = guvectorize(["void(float64[:], float64[:])"], "(n)->()", target=target)(py)
    x = np.zeros(3, dtype=np.float32)
    assert gu(x) == 3.0
    np.testing.assert_array_equal(x, [1, 1, 1])


def test_a_scalar_updated_from_an_input_does_not_write_it(target):
    py = kernel_from_source(
        "def k(x, out):\n    s = x[0]\n    for i in range(1, len(x)):\n        s += x[i]\n"
        "    out[0] = s\n")
    gu = guvectorize(["void(float64[:], float64[:])"], "(n)->()", target=target)(py)
    ro = np.arange(4.0)
    ro.flags.writeable = False
    assert gu(ro) == 6.0


# ---- memory ----

def test_allocations_are_freed_after_each_call(target):
    py = kernel_from_source(
        "import numpy as np\n"
        "def k(a, out):\n    t = np.empty(len(a) * 64)\n    t[:] = 1\n    u = a.copy()\n"
        "    t[:len(a)] = u\n    out[0] = t.sum()\n")
    gu = guvectorize(["void(float64[:], float64[:])"], "(n)->()", target=target)(py)
    a = np.full((64, 256), 2.0)
    gu(a)
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    for _ in range(200):  # every page written: 200 calls x 64 rows x 128 KiB kept if not freed
        np.testing.assert_array_equal(gu(a), 256 * 64 + 256.0)
    grown_kib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before
    assert grown_kib < 200 * 1024, grown_kib


def test_parallel_allocations_agree_with_serial(forced):
    py = KERNELS["copy_and_update"][0]
    sig = ["void(float64[:], float64[:])"]
    serial = guvectorize(sig, "(n)->(n)", target="cpu")(py)
    par = guvectorize(sig, "(n)->(n)", target="parallel")(py)
    a = np.random.default_rng(1).standard_normal((5000, 17))
    np.testing.assert_array_equal(par(a), serial(a))


# ---- cuda: views compile, allocation is refused ----

@pytest.mark.skipif(not HAVE_PTXAS, reason="no ptxas (the CUDA toolkit)")
@pytest.mark.parametrize("name", ["affine", "reverse", "shift_right", "column_sums", "transpose",
                                  "reductions", "outer_difference"])
@pytest.mark.slow
def test_cuda_views_assemble(name, tmp_path):
    py, layout, kinds, out_kind = KERNELS[name]
    gu = guvectorize([signature(layout, kinds, out_kind, "float32")], layout,
                     target="cuda")(py)
    ptx = gu.inspect_ptx()
    ptx = next(iter(ptx.values())) if isinstance(ptx, dict) else ptx
    assemble(ptx, re.search(r"\.target\s+(sm_\d+)", ptx).group(1), tmp_path)


def test_cuda_refuses_allocation_of_sizes_known_only_at_run_time():
    with pytest.raises(numbavec.TypingError, match="shape must be known when the kernel is compiled"):
        guvectorize(["void(float64[:], float64[:])"], "(n)->()", target="cuda")(
            KERNELS["squares_sum"][0])


LOCAL_ARRAY_KERNEL = """import numpy as np
def k(a, out):
    t = np.zeros(4)
    for i in range(min(4, len(a))):
        t[i] = a[i] * 2
    m = np.empty((2, 2), dtype=np.float32)
    m[:] = 1.5
    m[0] += t[:2]
    out[0] = t.sum() + m.sum() + np.dot(t, t) + (t @ t)
"""


@pytest.mark.skipif(not HAVE_PTXAS, reason="no ptxas (the CUDA toolkit)")
@pytest.mark.parametrize("arch", ["sm_80", "sm_90"])
def test_cuda_local_arrays_of_constant_size_assemble(arch, tmp_path):
    py = kernel_from_source(LOCAL_ARRAY_KERNEL)
    gu = guvectorize(["void(float64[:], float64[:])"], "(n)->()", target="cuda")(py)
    ptx = gu.inspect_ptx()
    ptx = next(iter(ptx.values())) if isinstance(ptx, dict) else ptx
    # small local arrays of constant size end up in registers (no .local)
    ptx = re.sub(r"\.target\s+sm_\d+", f".target {arch}", ptx)
    assemble(ptx, arch, tmp_path)
    host = guvectorize(["void(float64[:], float64[:])"], "(n)->()")(py)  # the same on the host
    a = np.arange(6.0)
    expected = np.zeros(1)
    py(a, expected)
    np.testing.assert_allclose(host(a), expected[0])


@pytest.mark.parametrize("body, match", [
    ("for i in range(3):\n        t = np.zeros(2)\n        out[0] += t[0]", "outside loops"),
    ("t = np.zeros(len(a))\n    out[0] = t[0]", "must be known when the kernel is compiled"),
    ("t = np.zeros(100000)\n    out[0] = t[0]", "at most 16384 bytes"),
])
def test_cuda_local_array_rules(body, match):
    src = f"import numpy as np\ndef k(a, out):\n    {body}\n"
    with pytest.raises(numbavec.TypingError, match=match):
        guvectorize(["void(float64[:], float64[:])"], "(n)->()", target="cuda")(
            kernel_from_source(src))


def test_nans_raise_no_invalid_flag(target):
    """Comparisons with a quiet NaN (max, argmax, a > 0) raise no 'invalid'
    flag, as NumPy's own do: no RuntimeWarning under np.errstate(invalid='raise')."""
    py = kernel_from_source(
        "import numpy as np\n"
        "def k(a, out):\n    out[0] = a.max()\n    out[1] = np.nanmin(a)\n"
        "    out[2] = a.argmax()\n    out[3] = (a > 0).sum()\n    out[4] = np.minimum(a, 0).min()\n")
    gu = guvectorize(["void(float64[:], float64[:])"], "(n)->(5)", target=target)(py)
    a = np.random.default_rng(0).standard_normal((50, 64))
    a[::3, 5] = np.nan
    with np.errstate(invalid="raise"):
        got = gu(a)
    np.testing.assert_array_equal(got[:, 0], np.max(a, axis=1))
    np.testing.assert_array_equal(got[:, 1], np.nanmin(a, axis=1))
    np.testing.assert_array_equal(got[:, 2], np.argmax(a, axis=1))
    np.testing.assert_array_equal(got[:, 3], (a > 0).sum(axis=1))


# ---- helpers that take and return arrays ----

def test_device_functions_take_and_return_arrays(target):
    center = numbavec.jit(kernel_from_source("def center(x):\n    return x - x.mean()\n",
                                             "center"))
    fill = numbavec.jit(kernel_from_source(
        "def fill(x, v):\n    if v < 0:\n        return\n    x[:] = v\n", "fill"))

    def k(a, out):
        fill(out, -1.0)  # returns early: out keeps its zeros
        fill(out[::2], 7.0)  # called for its effect (returns None)
        out[1::2] = center(a)[1::2]

    gu = guvectorize(["void(float64[:], float64[:])"], "(n)->(n)", target=target)(k)
    a = np.arange(6.0)
    expected = np.zeros(6)
    expected[::2] = 7.0
    expected[1::2] = (a - a.mean())[1::2]
    np.testing.assert_array_equal(gu(a, out=np.zeros(6)), expected)


def test_a_device_function_without_a_value_cannot_be_used_as_one(target):
    noop = numbavec.jit(kernel_from_source("def noop(x):\n    x[0] = 1\n", "noop"))

    def k(a, out):
        out[0] = noop(a)

    with pytest.raises(numbavec.TypingError, match="never returns a value, and its value is used"):
        guvectorize(["void(float64[:], float64[:])"], "(n)->()", target=target)(k)


@pytest.mark.parametrize("dtype", ["int32", "float32", "uint8"])
def test_dtype_type_casts_to_the_element_kind(target, dtype):
    py = kernel_from_source(
        "import numpy as np\n"
        "def k(a, out):\n    z = a.dtype.type(3.75)\n    out[:] = a + z\n"
        "    t = np.zeros(2, dtype=out.dtype)\n    out[0] = t.sum() + out.dtype.type(1)\n")
    sig = f"void({dtype}[:], {dtype}[:])"
    gu = guvectorize([sig], "(n)->(n)", target=target)(py)
    a = np.arange(5).astype(dtype)
    check(gu, py, [a], (5,), np.dtype(dtype).type, "(n)->(n)")
    assert gu(a).dtype == np.dtype(dtype)


def test_scalar_kernels_take_ndindex_and_reductions_of_scalars(target):
    py = kernel_from_source(
        "import numpy as np\n"
        "def f(x):\n    s = 0.0\n    for i, j in np.ndindex(2, 3):\n        s += i * j\n"
        "    return np.max(x) + np.sum(x) + s + np.mean(x)\n", "f")
    u = numbavec.vectorize(["float64(float64)"], target=target)(py)
    x = np.arange(4.0)
    np.testing.assert_array_equal(u(x), [py(v) for v in x])


# ---- NumPy's ufuncs called in kernels are their operators ----

UFUNC_OPERATORS = ["add", "subtract", "multiply", "divide", "true_divide", "floor_divide",
                   "remainder", "mod", "equal", "not_equal", "less", "less_equal", "greater",
                   "greater_equal"]
INT_OPERATORS = ["bitwise_and", "bitwise_or", "bitwise_xor", "left_shift", "right_shift"]


@pytest.mark.parametrize("dtype", ["float64", "int32"])
@pytest.mark.parametrize("name", UFUNC_OPERATORS + INT_OPERATORS)
def test_numpy_ufuncs_on_scalars_match_numpy(target, name, dtype):
    if name in INT_OPERATORS and dtype == "float64":
        pytest.skip("integer operator")
    ref = getattr(np, name)
    py = kernel_from_source(f"import numpy as np\ndef f(x, y):\n    return np.{name}(x, y)\n", "f")
    x = np.array([7, -3, 12, 5, 0, 9], dtype=dtype)
    y = np.array([2, 5, 3, -4, 1, 3], dtype=dtype)
    if name in ("left_shift", "right_shift"):
        y = np.abs(y)
    expected = ref(x, y)
    u = numbavec.vectorize([f"{expected.dtype.name}({dtype}, {dtype})"], target=target)(py)
    np.testing.assert_array_equal(u(x, y), expected)


@pytest.mark.parametrize("name", ["negative", "positive", "invert", "bitwise_not"])
def test_numpy_unary_ufuncs_on_scalars_match_numpy(target, name):
    py = kernel_from_source(f"import numpy as np\ndef f(x):\n    return np.{name}(x)\n", "f")
    x = np.array([7, -3, 0, 2**31 - 1], dtype=np.int32)
    u = numbavec.vectorize(["int32(int32)"], target=target)(py)
    np.testing.assert_array_equal(u(x), getattr(np, name)(x))


def test_numpy_ufuncs_and_clip_on_arrays(target):
    py, gu = body_gufunc(
        "out[:] = np.clip(np.add(a, 1), 0, 2) + np.greater(a, 0) - np.clip(a, a[0], 0.5)",
        "void(float64[:], float64[:])", "(n)->(n)", target)
    for a in ([-2.0, 0.3, 5.0, np.nan], [np.nan, 1.0, 2.0], [0.1]):
        a = np.array(a)
        check(gu, py, [a], a.shape, np.float64, "(n)->(n)")


@pytest.mark.parametrize("dtype", ["int64", "uint8", "float32"])
def test_clip_matches_numpy(target, dtype):
    py = kernel_from_source("import numpy as np\ndef f(x, lo, hi):\n    return np.clip(x, lo, hi)\n",
                            "f")
    u = numbavec.vectorize([f"{dtype}({dtype}, {dtype}, {dtype})"], target=target)(py)
    x = np.array([0, 3, 9, 200, 5], dtype=dtype)
    lo = np.array([1, 1, 1, 10, 6], dtype=dtype)
    hi = np.array([4, 2, 8, 100, 7], dtype=dtype)
    np.testing.assert_array_equal(u(x, lo, hi), np.clip(x, lo, hi))


@pytest.mark.parametrize("body", [
    "t = np.zeros(len(a), np.int32)\n    t[:] = a\n    out[:] = t * 2",
    "out[:] = np.full(len(a), 7, 'i2') + np.ones(len(a), dtype='float32')",
    "out[:] = np.empty_like(a, np.int8).size + np.zeros_like(a, 'u1')",
    "out[:] = a.astype(np.float32) / 3",
    "out[:] = a.astype('int64') + a.astype(a.dtype)",
    "out[:] = np.full_like(a, 2.5, np.int16)",
])
def test_dtypes_given_positionally_as_strings_and_by_astype(target, body):
    py, gu = body_gufunc(body, "void(float64[:], float64[:])", "(n)->(n)", target)
    a = np.array([1.5, 2.7, -3.2, 0.0, 9.9])
    expected = np.zeros(5)
    py(a, expected)
    np.testing.assert_array_equal(gu(a), expected)


def test_astype_takes_one_dtype(target):
    src = "import numpy as np\ndef k(a, out):\n    out[:] = a.astype(np.int32, copy=False)\n"
    with pytest.raises(numbavec.TypingError, match="astype"):
        guvectorize(["void(float64[:], float64[:])"], "(n)->(n)", target=target)(
            kernel_from_source(src))


@pytest.mark.parametrize("dtype", ["float64", "float32", "int64", "uint8", "bool", "complex128"])
def test_dtype_kind_and_dtype_tests_are_constants(target, dtype):
    src = """import numpy as np
def k(a, out):
    out[0] = a.dtype.kind == 'f'
    out[1] = a.dtype.kind in 'iu'
    out[2] = a.dtype.kind not in ('b', 'c')
    out[3] = a.dtype.kind != "u"
    out[4] = a.dtype == np.float32
    out[5] = a.dtype != 'int64'
    if a.dtype.kind == 'f':
        out[6] = 1
    else:
        out[6] = 2
    out[7] = a.dtype.kind == 'fc'
"""
    py = kernel_from_source(src)
    gu = guvectorize([f"void({dtype}[:], int64[:])"], "(n)->(8)", target=target)(py)
    a = np.zeros(3, dtype)
    expected = np.zeros(8, np.int64)
    py(a, expected)
    np.testing.assert_array_equal(gu(a), expected)


@pytest.mark.parametrize("body, match", [
    ("out[0] = a.dtype.kind < 'f'", "only be tested with ==, !=, in and not in"),
    ("out[0] = a.dtype.kind == len(a)", "string constant only"),
    ("out[0] = a.dtype == a.dtype", "compared with a dtype only"),
    ("out[0] = a.dtype == np.str_", "not a dtype a kernel supports"),
])
def test_dtype_tests_name_what_they_take(target, body, match):
    src = f"import numpy as np\ndef k(a, out):\n    {body}\n"
    with pytest.raises(numbavec.TypingError, match=match):
        guvectorize(["void(float64[:], float64[:])"], "(n)->(n)", target=target)(
            kernel_from_source(src))


DOT_CASES = [
    ("(n),(n)->()", "out[0] = np.dot(a, b)", [(7,), (7,)]),
    ("(n),(n)->()", "out[0] = a @ b + np.dot(a[::-1], b) * 0.5", [(7,), (7,)]),
    ("(m,n),(n)->(m)", "out[:] = a @ b", [(3, 5), (5,)]),
    ("(n),(n,m)->(m)", "out[:] = np.dot(a, b)", [(5,), (5, 4)]),
    ("(m,n),(n,p)->(m,p)", "out[:] = a @ b", [(3, 5), (5, 2)]),
    ("(m,n),(p,n)->(m,p)", "out[:] = a @ b.T", [(3, 5), (2, 5)]),
    ("(m,n),(m,n)->(n,n)", "out[:] = (a - a.mean()).T @ (b * 2)", [(4, 3), (4, 3)]),
    ("(m,n),(n)->(m)", "out[:] = 0\n    out += a @ (b + 1)", [(3, 0), (0,)]),
]


@pytest.mark.parametrize("dtype", ["float64", "float32", "int64", "complex128"])
@pytest.mark.parametrize("layout, body, shapes", DOT_CASES)
def test_dot_and_matmul(target, layout, body, shapes, dtype):
    py = kernel_from_source(f"import numpy as np\ndef k(a, b, out):\n    {body}\n")
    ins, outs = core_dims(layout)
    sig = f"void({dtype}[{', '.join(':' for _ in ins[0])}], {dtype}[{', '.join(':' for _ in ins[1])}], " \
          f"{dtype}[{', '.join(':' for _ in outs[0]) or ':'}])"
    gu = guvectorize([sig], layout, target=target)(py)
    rng = np.random.default_rng(11)
    a = (rng.integers(-5, 5, (2,) + shapes[0])).astype(dtype)
    b = (rng.integers(-5, 5, (2,) + shapes[1])).astype(dtype)
    if dtype.startswith("complex"):
        a = a + 1j * rng.integers(-3, 3, a.shape)
        b = b - 2j
    sizes = {d: s for dims, shape in zip(ins, shapes) for d, s in zip(dims, shape)}
    out_shape = tuple(sizes[d] for d in outs[0]) or (1,)
    expected = np.zeros((2,) + out_shape, dtype)
    for i in range(2):
        py(a[i], b[i], expected[i])
    got = gu(a, b) if outs[0] else gu(a, b)[:, None]
    np.testing.assert_allclose(got, expected, rtol=1e-5)


def test_dot_of_mismatched_shapes_raises(target):
    py = kernel_from_source("import numpy as np\ndef k(a, b, out):\n    out[0] = np.dot(a, b[1:])\n")
    gu = guvectorize(["void(float64[:], float64[:], float64[:])"], "(n),(n)->()", target=target)(py)
    with pytest.raises(ValueError):
        py(np.ones(3), np.ones(3), np.zeros(1))
    with pytest.raises(ValueError, match="broadcast"):
        gu(np.ones(3), np.ones(3))


@pytest.mark.parametrize("body, match", [
    ("out[0] = np.dot(a, 2.0)", "to scale by a number"),
    ("out[0] = a @ a[None, None, :]", "3-d array is not supported yet"),
    ("out[0] = np.dot(a > 0, a > 1)", "np.dot"),
])
def test_dot_typing_errors(target, body, match):
    src = f"import numpy as np\ndef k(a, out):\n    {body}\n"
    with pytest.raises(numbavec.TypingError, match=match):
        guvectorize(["void(float64[:], float64[:])"], "(n)->()", target=target)(
            kernel_from_source(src))


FANCY_CASES = [
    "out[:] = a[np.argsort(a)]",
    "idx = np.argsort(a)[::-1]\n    out[:] = 0\n    out[:len(idx) // 2] = a[idx[:len(idx) // 2]]",
    "out[:] = a\n    out[np.argsort(a)[:2]] = -1.0",
    "out[:] = 0\n    out[np.arange(len(a))[::-1] if False else np.argsort(-a)] = a",
    "out[:] = a\n    out[out > 0] = a[a > 0] * 10",
    "out[:] = a\n    out[out < 0] = np.sort(a)[:len(a[a < 0])]",
    "out[:] = 0\n    i = np.searchsorted(np.sort(a), a)\n    out[:] = a[np.argsort(a)][i]",
    "out[:] = a\n    out[np.argsort(a)] = np.cumsum(a)",
]


@pytest.mark.parametrize("body", FANCY_CASES)
def test_integer_array_indexing_and_stores_through_masks(target, body):
    try:
        py, gu = body_gufunc(body, "void(float64[:], float64[:])", "(n)->(n)", target)
    except numbavec.TypingError as e:
        assert "arange" in str(e)
        return
    rng = np.random.default_rng(12)
    for n in [0, 1, 2, 7, 33]:
        a = rng.standard_normal(n)
        check(gu, py, [a], (n,), np.float64, "(n)->(n)")
        check(gu, py, [a[::-1]], (n,), np.float64, "(n)->(n)")


@pytest.mark.parametrize("body, error", [
    ("out[:] = a[np.zeros(2, np.int64) + len(a)]", IndexError),
    ("out[:] = a\n    out[np.zeros(2, np.int64) - len(a) - 1] = 1.0", IndexError),
    ("out[:] = a\n    out[a > 0] = np.zeros(len(a) + 3)", ValueError),
    ("out[:] = a\n    out[a > 100] = np.zeros(2)", ValueError),
    ("out[:] = a\n    out[np.zeros(3, np.int64)] = np.ones(2)", ValueError),
])
def test_index_array_errors_are_numpys(target, body, error):
    py, gu = body_gufunc(body, "void(float64[:], float64[:])", "(n)->(n)", target)
    a = np.array([1.0, -2.0, 3.0, 4.0])
    with pytest.raises(error):
        py(a.copy(), np.zeros(4))
    with pytest.raises(error):
        gu(a)


ARANGE_CASES = ["np.arange(len(a))", "np.arange(2, len(a))", "np.arange(len(a), 0, -2)",
                "np.arange(0.5, len(a), 0.7)", "np.arange(a[0], a[1], a[2])",
                "np.arange(len(a), dtype=np.float32)", "np.arange(1, len(a), 3, 'f8')",
                "np.arange(-3.0, 1.0, 0.1)", "np.arange(0, 1, 0.1)", "np.arange(10, 2)",
                "np.arange(np.int32(len(a)))", "np.arange(len(a) * 1.0, -1, -1.5, np.int16)"]


@pytest.mark.parametrize("expr", ARANGE_CASES)
def test_arange_matches_numpy(target, expr):
    body = (f"r = {expr}\n    out[:] = -7\n    m = min(len(r), len(out) - 1)\n"
            f"    out[:m] = r[:m]\n    out[-1] = len(r)")
    py, gu = body_gufunc(body, "void(float64[:], float64[:])", "(n)->(n)", target)
    for a in [np.array([0.25, 3.5, 0.3, 1.0, 2.0, 9.0, 4.0, 5.0, 6.0, 7.0, 8.0, 9.0]),
              np.array([1.0, -2.0, -0.5, 7.0]), np.array([1.0, 2.0, 3.0])]:
        expected = np.zeros(len(a))
        py(a, expected)
        np.testing.assert_array_equal(gu(a), expected)


def test_arange_with_a_zero_step_raises(target):
    py, gu = body_gufunc("out[:] = np.arange(0, len(a), 0)[:1]", "void(float64[:], float64[:])",
                         "(n)->(n)", target)
    with pytest.raises(ZeroDivisionError):
        py(np.ones(3), np.zeros(3))
    with pytest.raises(ZeroDivisionError):
        gu(np.ones(3))


FLAT_CASES = [
    "out[:] = 0\n    for x in a.flat:\n        out[0] += x",
    "out[:] = 0\n    k = 0\n    for x in a.T.flat:\n        out[k % len(out)] += x * k\n        k += 1",
    "out[:] = 0\n    for i in range(a.size):\n        out[i % len(out)] = a.flat[i] - a.flat[-1 - i]",
    "out[:] = 0\n    t = np.zeros(a.shape)\n    for i in range(t.size):\n        t.flat[i] = i\n"
    "    out[:] = t[0] + t[-1]",
    "out[:] = 0\n    a.flat[0] += 1.0\n    out[:] = a[0]",
]


@pytest.mark.parametrize("body", FLAT_CASES)
def test_flat_iteration_and_indexing(target, body):
    py, gu = body_gufunc(body, "void(float64[:, :], float64[:])", "(m,n)->(n)", target)
    rng = np.random.default_rng(13)
    for m, n in [(1, 1), (3, 4), (5, 2)]:
        a = rng.standard_normal((m, n))
        for x in (a, a[::-1, ::-1]):
            expected = np.zeros(n)
            py(x.copy(), expected)
            np.testing.assert_allclose(gu(x.copy()), expected, rtol=1e-12)


@pytest.mark.parametrize("body, match", [
    ("out[:] = a.flat", "not used as a value"),
    ("out[:] = a.flat[1:]", "one integer index"),
    ("out[0] = a.flat[0, 1]", "one integer index"),
])
def test_flat_errors_name_flat(target, body, match):
    src = f"import numpy as np\ndef k(a, out):\n    {body}\n"
    with pytest.raises(numbavec.TypingError, match=match):
        guvectorize(["void(float64[:, :], float64[:])"], "(m,n)->(n)", target=target)(
            kernel_from_source(src))


def test_flat_index_out_of_range_raises(target):
    py, gu = body_gufunc("out[0] = a.flat[a.size]", "void(float64[:, :], float64[:])",
                         "(m,n)->()", target)
    with pytest.raises(IndexError):
        py(np.ones((2, 2)), np.zeros(1))
    with pytest.raises(IndexError):
        gu(np.ones((2, 2)))


@pytest.mark.parametrize("fn", ["argmax", "argmin", "nanmean", "var", "std", "cumsum", "cumprod"])
@pytest.mark.parametrize("axis", [0, 1, 2, -1])
def test_line_reductions_along_each_axis_of_3d_arrays(target, fn, axis):
    ndim = 3 if fn.startswith("cum") else 2
    colons = ", ".join(":" for _ in range(ndim))
    kind = "int64" if fn.startswith("arg") else "float64"
    py = kernel_from_source(f"import numpy as np\ndef k(a, out):\n"
                            f"    out[...] = np.{fn}(a, axis={axis})\n")
    layout = "(p,q,r)->(p,q,r)" if ndim == 3 else \
        "(p,q,r)->" + "(" + ",".join(d for i, d in enumerate("pqr") if i != axis % 3) + ")"
    gu = guvectorize([f"void(float64[:, :, :], {kind}[{colons}])"], layout, target=target)(py)
    rng = np.random.default_rng(14)
    a = np.round(rng.standard_normal((2, 3, 4, 5)), 1)
    a[0, 1, 2, 3] = np.nan
    for x in (a, a[:, ::-1, :, ::2]):
        shape = x.shape[1:] if ndim == 3 else tuple(s for i, s in enumerate(x.shape[1:])
                                                     if i != axis % 3)
        expected = np.zeros((2,) + shape, kind)
        for i in range(2):
            with np.errstate(all="ignore"):
                py(x[i], expected[i])
        np.testing.assert_allclose(gu(x), expected, rtol=1e-12, equal_nan=True)


SCALE = 10.0


def test_device_functions_take_keywords_and_defaults(target):
    window = numbavec.jit(kernel_from_source(
        "def window(x, i, width=3, *, scale=SCALE, shift=0):\n"
        "    lo = max(0, i - width + 1)\n"
        "    return x[lo:i + 1].mean() * scale + shift\n", "window",
        globals_={"SCALE": SCALE}))

    def k(a, out):
        for i in range(len(a)):
            out[i] = window(a, i) + window(a, i, 2, shift=1) + window(x=a, i=i, scale=0.5)

    gu = guvectorize(["void(float64[:], float64[:])"], "(n)->(n)", target=target)(k)
    a = np.arange(7.0) ** 2
    expected = np.zeros(7)
    k(a, expected)
    np.testing.assert_allclose(gu(a), expected)


@pytest.mark.parametrize("call, match", [
    ("f(a)", "missing required argument 'i'"),
    ("f(a, 1, 2, 3)", "takes 3 positional argument"),
    ("f(a, 1, j=2)", "unexpected keyword argument 'j'"),
    ("f(a, 1, i=2)", "multiple values for argument 'i'"),
    ("f(a, 1, **{'w': 2})", "kwargs"),
])
def test_device_function_call_errors_are_pythons(target, call, match):
    f = numbavec.jit(kernel_from_source("def f(x, i, w=1, *, s=2):\n    return x[i] * w + s\n",
                                        "f"))
    py = kernel_from_source(f"def k(a, out):\n    out[0] = {call}\n", globals_={"f": f})
    with pytest.raises(numbavec.TypingError, match=match):
        guvectorize(["void(float64[:], float64[:])"], "(n)->()", target=target)(py)


def test_tuples_of_arrays_from_helpers_and_in_kernels(target):
    split = numbavec.jit(kernel_from_source(
        "def split(x):\n    return x[:2], x[2:] * 2, x.sum()\n", "split"))

    def k(a, out):
        lo, hi, s = split(a)
        out[:] = s
        out[:2] = lo
        out[2:] = hi
        t = (a, a * 3)
        out[0] += t[1][-1] + t[0][1]
        u, v = t
        out[1] -= (u + v).max()

    gu = guvectorize(["void(float64[:], float64[:])"], "(n)->(n)", target=target)(k)
    for a in (np.arange(5.0), np.arange(9.0)[::-2]):
        expected = np.zeros(len(a))
        k(a, expected)
        np.testing.assert_array_equal(gu(a), expected)


def reported(src, target):
    """The TypingError's text for kernel src, and its (line, message) pairs."""
    with pytest.raises(numbavec.TypingError) as info:
        guvectorize(["void(float64[:], float64[:])"], "(n)->(n)", target=target)(
            kernel_from_source(src))
    text = str(info.value)
    return text, [(m.group(1), m.group(2)) for m in re.finditer(r":(\d+):\d+: ([^\n]*)", text)]


def test_every_unsupported_construct_is_named_once_with_its_caret(target):
    text, found = reported("import numpy as np\n"
                           "def k(a, out):\n"
                           "    x = np.correlate(a, a)\n"
                           "    s = {1: 2}\n"
                           "    for i in range(len(a)):\n"
                           "        out[i] = x[i] + a.tolist()\n"
                           "        y = [i]\n"
                           "    out[0] = s + x.sum() + y\n", target)
    assert [line for line, _ in found] == ["3", "4", "6", "7"], text
    assert "np.correlate()" in found[0][1] and "dict displays" in found[1][1]
    assert ".tolist()" in found[2][1] and "list displays" in found[3][1]
    assert text.count("^") == 4
    assert "0x" not in text  # no function reprs


def test_every_statement_that_fails_to_type_is_named_with_its_caret(target):
    """Typing goes on past a statement that fails, as lowering does; a
    statement reading a variable that a failed one assigned (y, z) is not
    reported, as its error may follow from the first alone (nor is x's in
    line 8, which reads x)."""
    text, found = reported("import numpy as np\n"
                           "def k(a, out):\n"
                           "    x = np.sum(a, axis=5)\n"
                           "    y = len(3)\n"
                           "    z = y + 1\n"
                           "    for i in range(1.5):\n"
                           "        out[i] = z\n"
                           "    out[0] = a[0, 1] + x\n"
                           "    out[1] = a[0] + (1, 2)\n", target)
    assert [line for line, _ in found] == ["3", "4", "6", "9"], text
    assert "axis 5" in found[0][1] and "int is not an array" in found[1][1]
    assert "range() arguments" in found[2][1] and "tuple" in found[3][1]
    assert text.count("^") == 4


def test_a_refused_import_is_reported_and_not_its_names(target):
    """An import inside a kernel is refused; the names it would bind are then
    not defined, which follows from that error alone and is not reported."""
    text, found = reported("def k(a, out):\n"
                           "    import math\n"
                           "    from math import sqrt as root, pi\n"
                           "    import os.path\n"
                           "    for i in range(len(a)):\n"
                           "        out[i] = math.exp(a[i]) + root(pi) + len(os.path.sep)\n"
                           "    out[0] = no_such_name\n", target)
    assert [line for line, _ in found] == ["2", "3", "4", "7"], text
    assert all("imports (import at the top of the module) are not supported" in message
               for _, message in found[:3])
    assert found[3][1] == "name 'no_such_name' is not defined"
    assert text.count("^") == 4


def test_typing_reports_at_most_seventeen_statements(target):
    """Sixteen statements, and the one that ended typing, as lowering."""
    _, found = reported("def k(a, out):\n"
                        + "".join(f"    out[{i}] = len({i})\n" for i in range(20)), target)
    assert [int(line) for line, _ in found] == list(range(2, 19))


@pytest.mark.parametrize("kind, part", [("complex128", "float64"), ("complex64", "float32")])
def test_variance_of_complex_values(target, kind, part):
    """np.var/np.std of complex values: the mean of |x - mean|^2, a real of
    the parts' kind (NumPy's), with ddof and along an axis."""
    py, gu = body_gufunc(
        "out[0] = np.var(a)\n    out[1] = a.std(ddof=1)\n    out[2] = np.std(a[::2])\n"
        "    out[3] = (a * 2j).var()",
        f"void({kind}[:], {part}[:])", "(n)->(4)", target)
    rng = np.random.default_rng(15)
    for n in (1, 2, 7, 64):
        a = (rng.standard_normal(n) + 1j * rng.standard_normal(n)).astype(kind)
        with np.errstate(all="ignore"):
            expected = np.zeros(4, part)
            py(a, expected)
            got = gu(a)
        assert got.dtype == np.dtype(part)
        np.testing.assert_allclose(got, expected, rtol=2e-6 if part == "float32" else 1e-13,
                                   equal_nan=True)
    py2, gu2 = body_gufunc("out[:] = np.var(a, axis=1)", f"void({kind}[:, :], {part}[:])",
                           "(m,n)->(m)", target)
    a = (rng.standard_normal((3, 5)) + 1j * rng.standard_normal((3, 5))).astype(kind)
    np.testing.assert_allclose(gu2(a), np.var(a, axis=1), rtol=2e-6)


IFEXP_CASES = [
    "x = a if a.sum() > 0 else a[::-1]\n    out[:] = x * 2",
    "x = a[1:] if len(a) > 3 else a\n    out[:] = 0\n    out[:len(x)] = x",
    "out[:] = 0\n    x = out if a[0] > 0 else np.zeros(len(a))\n    x[:] = a + 1\n"
    "    out[0] += x.sum()",
    "x = a * 2 if len(a) % 2 else a - 1\n    out[:] = x",
    "out[:] = a\n    x = out if len(a) > 2 else a\n    x[1:] = x[:-1]",
]


@pytest.mark.parametrize("body", IFEXP_CASES)
def test_an_if_expression_chooses_an_array(target, body):
    """`a if c else b` binds the object chosen, as Python does: a view, which
    writes go through; checked against the interpreter."""
    py, gu = body_gufunc(body, "void(float64[:], float64[:])", "(n)->(n)", target)
    rng = np.random.default_rng(16)
    for n in (1, 2, 3, 4, 7):
        for a in (rng.standard_normal(n), -np.abs(rng.standard_normal(n))):
            check(gu, py, [a], (n,), np.float64, "(n)->(n)")


@pytest.mark.parametrize("body, message", [
    ("x = a if a[0] > 0 else 0.0\n    out[:] = x", "float64\\[:\\] or float"),
    ("x = a if a[0] > 0 else a[None, :]\n    out[:] = x[0]", "no variable can hold both"),
])
def test_an_if_expression_between_unlike_objects_is_refused(target, body, message):
    with pytest.raises(numbavec.TypingError, match=message):
        body_gufunc(body, "void(float64[:], float64[:])", "(n)->(n)", target)


def test_indexing_an_nd_array_by_an_integer_array(target):
    """a[idx] of an N-d a takes rows: a new array of idx's shape + a's other
    dimensions (NumPy's), negative indices from the end, any strides."""
    py = kernel_from_source("import numpy as np\ndef k(a, idx, out):\n"
                            "    t = a[idx]\n    out[...] = t\n")
    gu = guvectorize(["void(float64[:, :, :], int64[:, :], float64[:, :, :, :])"],
                     "(p,m,n),(i,j)->(i,j,m,n)", target=target)(py)
    rng = np.random.default_rng(17)
    a = rng.standard_normal((3, 4, 5))
    for x in (a, a[::-1, :, ::2], np.transpose(a, (0, 2, 1))):
        for idx in (np.array([[0, 2], [1, -1]]), np.array([[2, 2, 0]]),
                    np.zeros((0, 2), np.int64)):
            expected = np.zeros(idx.shape + x.shape[1:])
            py(x, idx, expected)
            np.testing.assert_array_equal(gu(x, idx), expected)
    with pytest.raises(IndexError):
        gu(a, np.array([[3]]))
    rows = guvectorize(["void(float64[:, :], int32[:], float64[:])"], "(m,n),(k)->()",
                       target=target)(kernel_from_source(
                           "def k(a, idx, out):\n    out[0] = (a[idx] * 2).sum() + a[idx][-1, 0]\n"))
    b = rng.standard_normal((6, 2))
    i32 = np.array([5, 0, 3], np.int32)
    np.testing.assert_allclose(rows(b, i32), (b[i32] * 2).sum() + b[i32][-1, 0])


def test_storing_through_an_index_array_of_an_nd_array_is_refused(target):
    with pytest.raises(numbavec.TypingError, match="integer-array index of a 2-d array"):
        guvectorize(["void(float64[:, :], int64[:], float64[:, :])"], "(m,n),(k)->(m,n)",
                    target=target)(kernel_from_source(
                        "def k(a, idx, out):\n    out[:, :] = a\n    out[idx] = 0\n"))
