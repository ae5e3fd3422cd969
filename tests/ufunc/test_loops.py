"""Loop wrappers, JIT and ufunc creation, tested through hand-written LLVM IR.

numbavec._core._ufunc_from_ir builds a real numpy.ufunc whose inner loop
(src/vectorize/loops.c) calls an internal LLVM function, so these tests do
not depend on the kernel compiler.  Every result is checked against NumPy.
"""
import gc
import os
import re

import numpy as np
import pytest

from conftest import run_python

from numbavec import _core


def binary_ir(ty, op):
    return f"""
define internal {ty} @kernel({ty} %a, {ty} %b) alwaysinline {{
  %r = {op} {ty} %a, %b
  ret {ty} %r
}}
"""


def make(ir, types, **kw):
    return _core._ufunc_from_ir(ir, "kernel", types, **kw)


def llvm_of(ufunc):
    return _core._code_llvm(_core._code_of(ufunc))


FMA3_IR = """
define internal float @kernel(float %a, float %b, float %c) alwaysinline {
  %p = fmul float %a, %b
  %r = fadd float %p, %c
  ret float %r
}
"""

SUM4_IR = """
define internal double @kernel(double %a, double %b, double %c, double %d) alwaysinline {
  %p = fmul double %a, %b
  %q = fmul double %c, %d
  %r = fadd double %p, %q
  ret double %r
}
"""

CMUL_IR = """
define internal {T, T} @kernel({T, T} %a, {T, T} %b) alwaysinline {
  %ar = extractvalue {T, T} %a, 0
  %ai = extractvalue {T, T} %a, 1
  %br = extractvalue {T, T} %b, 0
  %bi = extractvalue {T, T} %b, 1
  %rr1 = fmul T %ar, %br
  %rr2 = fmul T %ai, %bi
  %rr = fsub T %rr1, %rr2
  %ri1 = fmul T %ar, %bi
  %ri2 = fmul T %ai, %br
  %ri = fadd T %ri1, %ri2
  %c0 = insertvalue {T, T} undef, T %rr, 0
  %c1 = insertvalue {T, T} %c0, T %ri, 1
  ret {T, T} %c1
}
"""

EXP_IR = """
declare float @llvm.exp.f32(float)
define internal float @kernel(float %a) alwaysinline {
  %r = call float @llvm.exp.f32(float %a)
  ret float %r
}
"""

MIXED_IR = """
define internal double @kernel(float %a, double %b) alwaysinline {
  %e = fpext float %a to double
  %r = fadd double %e, %b
  ret double %r
}
"""

SIZES = [0, 1, 3, 8, 17, 64, 1001]
rng = np.random.default_rng(1234)


def data(dtype, n):
    dtype = np.dtype(dtype)
    if dtype.kind == "b":
        return rng.integers(0, 2, n).astype(bool)
    if dtype.kind in "iu":
        info = np.iinfo(dtype)
        return rng.integers(info.min, info.max, n, dtype=dtype, endpoint=True)
    if dtype.kind == "c":
        return (rng.standard_normal(n) + 1j * rng.standard_normal(n)).astype(dtype)
    return rng.standard_normal(n).astype(dtype)


BINARY = [
    ("ff->f", "float", "fadd", np.float32, np.add),
    ("dd->d", "double", "fmul", np.float64, np.multiply),
    ("ll->l", "i64", "add", np.int64, np.add),
    ("ii->i", "i32", "mul", np.int32, np.multiply),
    ("bb->b", "i8", "add", np.int8, np.add),
    ("HH->H", "i16", "sub", np.uint16, np.subtract),
    ("??->?", "i1", "xor", np.bool_, np.logical_xor),
]


@pytest.fixture(scope="module", params=BINARY, ids=[b[0] for b in BINARY])
def binary(request):
    types, ty, op, dtype, ref = request.param
    return make(binary_ir(ty, op), types), dtype, ref


@pytest.mark.parametrize("n", SIZES)
def test_contiguous(binary, n):
    f, dtype, ref = binary
    a, b = data(dtype, n), data(dtype, n)
    with np.errstate(over="ignore"):
        np.testing.assert_array_equal(f(a, b), ref(a, b))


def test_strided_and_noncontiguous(binary):
    f, dtype, ref = binary
    a, b = data(dtype, 300), data(dtype, 500)
    np.testing.assert_array_equal(f(a[::3], b[::5]), ref(a[::3], b[::5]))
    np.testing.assert_array_equal(f(a[::-1], b[:300]), ref(a[::-1], b[:300]))
    m = data(dtype, 12 * 10).reshape(12, 10)
    np.testing.assert_array_equal(f(m.T, m.T), ref(m.T, m.T))
    fm = np.asfortranarray(m)
    np.testing.assert_array_equal(f(fm, m), ref(fm, m))


def test_strided_output(binary):
    f, dtype, ref = binary
    a = data(dtype, 100)
    out = np.zeros(200, dtype)
    sentinel = out[1::2].copy()
    f(a, a, out=out[::2])
    np.testing.assert_array_equal(out[::2], ref(a, a))
    np.testing.assert_array_equal(out[1::2], sentinel)


def test_zero_dim_and_empty(binary):
    f, dtype, ref = binary
    x, y = data(dtype, 2)
    r = f(np.array(x), np.array(y))
    assert np.ndim(r) == 0 and r == ref(x, y)
    assert f(np.empty(0, dtype), np.empty(0, dtype)).shape == (0,)
    assert f(np.empty((3, 0), dtype), np.empty((3, 0), dtype)).shape == (3, 0)


@pytest.mark.parametrize("mask", range(8))
@pytest.mark.parametrize("scalar_as", ["python", "broadcast"])
@pytest.mark.parametrize("n", [1, 5, 64, 1003])
def test_broadcast_masks_three_inputs(mask, scalar_as, n):
    f = fma3()
    args = []
    for k in range(3):
        if mask & (1 << k):
            v = np.float32(k + 1.5)
            # All-Python-float calls would resolve to float64: use NumPy scalars.
            py = float(v) if mask != 7 else v
            args.append(py if scalar_as == "python"
                        else np.broadcast_to(np.array(v, np.float32), (n,)))
        else:
            args.append(data(np.float32, n))
    a, b, c = (np.asarray(x, np.float32) for x in args)
    expected = a * b + c
    np.testing.assert_array_equal(f(*args), expected)
    out = np.empty(n, np.float32)
    f(*args, out=out)
    np.testing.assert_array_equal(out, np.broadcast_to(expected, (n,)))


_fma3 = []


def fma3():
    if not _fma3:
        _fma3.append(make(FMA3_IR, "fff->f", name="fma3"))
    return _fma3[0]


@pytest.mark.parametrize("scalars", [(), (0,), (1,), (3,), (0, 2), (1, 2, 3), (0, 1, 2, 3)])
def test_four_inputs(scalars):
    f = make(SUM4_IR, "dddd->d")
    n = 777
    args = [2.5 + k if k in scalars else data(np.float64, n) for k in range(4)]
    a, b, c, d = (np.asarray(x) for x in args)
    np.testing.assert_array_equal(f(*args), np.broadcast_to(a * b + c * d, (n,)))
    strided = [x[::2] if np.ndim(x) else x for x in args]
    a, b, c, d = (np.asarray(x) for x in strided)
    np.testing.assert_array_equal(f(*strided), np.broadcast_to(a * b + c * d, (n + 1) // 2))


def test_in_place():
    f = make(binary_ir("float", "fadd"), "ff->f")
    a0, b0 = data(np.float32, 1001), data(np.float32, 1001)
    a, b = a0.copy(), b0.copy()
    assert f(a, b, out=a) is a
    np.testing.assert_array_equal(a, a0 + b0)
    f(a0, b, out=b)
    np.testing.assert_array_equal(b, a0 + b0)
    c = a0.copy()
    f(c, c, out=c)
    np.testing.assert_array_equal(c, a0 + a0)
    # Overlapping but not identical: NumPy copies, the result is still exact.
    d = a0.copy()
    f(d[1:], d[:-1], out=d[:-1])
    np.testing.assert_array_equal(d[:-1], a0[1:] + a0[:-1])


def test_mixed_item_sizes():
    f = make(MIXED_IR, "fd->d")
    a, b = data(np.float32, 999), data(np.float64, 999)
    np.testing.assert_array_equal(f(a, b), a.astype(np.float64) + b)
    np.testing.assert_array_equal(f(a[::2], 1.5), a[::2].astype(np.float64) + 1.5)
    np.testing.assert_array_equal(f(np.float32(2), b), 2.0 + b)


@pytest.fixture(scope="module")
def add_f8():
    return make(binary_ir("double", "fadd"), "dd->d", name="add", identity=0)


@pytest.mark.parametrize("n", [1, 2, 9, 1000])
def test_reduce_accumulate(add_f8, n):
    a = data(np.float64, n)
    assert add_f8.reduce(a) == pytest.approx(np.add.reduce(a))
    # accumulate calls the loop with in0 = out - 1 element: a dependence.
    np.testing.assert_allclose(add_f8.accumulate(a), np.add.accumulate(a), rtol=1e-12)
    i = np.arange(n, dtype=np.float64)
    np.testing.assert_array_equal(add_f8.accumulate(i), np.cumsum(i))
    m = data(np.float64, 6 * n).reshape(6, n)
    for axis in (0, 1):
        np.testing.assert_allclose(add_f8.reduce(m, axis=axis), m.sum(axis=axis), rtol=1e-12)
        np.testing.assert_allclose(add_f8.accumulate(m, axis=axis),
                                   np.add.accumulate(m, axis=axis), rtol=1e-12)


def test_reduce_empty_uses_identity(add_f8):
    assert add_f8.reduce(np.empty(0)) == 0.0
    assert add_f8.identity == 0


def test_reduceat_outer_at(add_f8):
    a = np.arange(10.0)
    idx = [0, 4, 1, 7]
    np.testing.assert_array_equal(add_f8.reduceat(a, idx), np.add.reduceat(a, idx))
    x, y = data(np.float64, 7), data(np.float64, 5)
    np.testing.assert_array_equal(add_f8.outer(x, y), np.add.outer(x, y))
    b1, b2 = np.zeros(6), np.zeros(6)
    where = [0, 1, 1, 5, 0]
    add_f8.at(b1, where, 1.5)
    np.add.at(b2, where, 1.5)
    np.testing.assert_array_equal(b1, b2)


def test_where_and_dtype(add_f8):
    a, b = data(np.float64, 50), data(np.float64, 50)
    out = np.full(50, -7.0)
    mask = np.arange(50) % 3 == 0
    add_f8(a, b, out=out, where=mask)
    np.testing.assert_array_equal(out, np.where(mask, a + b, -7.0))
    i = np.arange(20, dtype=np.int32)
    np.testing.assert_array_equal(add_f8(i, i), 2.0 * i)


@pytest.mark.parametrize("types,part", [("FF->F", "float"), ("DD->D", "double")])
def test_complex(types, part):
    f = make(CMUL_IR.replace("T", part), types)
    dtype = np.complex64 if part == "float" else np.complex128
    a, b = data(dtype, 1001), data(dtype, 1001)
    rtol = 1e-6 if part == "float" else 1e-14
    np.testing.assert_allclose(f(a, b), a * b, rtol=rtol)
    np.testing.assert_allclose(f(a[::3], b[::3]), a[::3] * b[::3], rtol=rtol)
    np.testing.assert_allclose(f(a, 2 - 1j), a * (2 - 1j), rtol=rtol)
    out = np.zeros(2002, dtype)
    f(a, b, out=out[::2])
    np.testing.assert_allclose(out[::2], a * b, rtol=rtol)
    assert not out[1::2].any()


def test_bool_reads_any_nonzero_byte():
    f = make(binary_ir("i1", "and"), "??->?")
    raw = np.array([0, 1, 2, 255, 7, 0], np.uint8)
    ones = np.ones(6, bool)
    np.testing.assert_array_equal(f(raw.view(bool), ones), raw != 0)
    r = f(ones, ones)
    assert r.view(np.uint8).max() == 1


def test_fp_errors_reach_numpy():
    f = make(binary_ir("float", "fdiv"), "ff->f")
    a = np.ones(100, np.float32)
    b = np.ones(100, np.float32)
    b[37] = 0
    with np.errstate(divide="raise"):
        with pytest.raises(FloatingPointError):
            f(a, b)
    with np.errstate(divide="ignore"):
        r = f(a, b)
    assert np.isinf(r[37]) and r[36] == 1


def test_contiguous_path_is_vectorized_without_alias_checks():
    f = make(binary_ir("float", "fadd"), "ff->f")
    ir = llvm_of(f)
    assert re.search(r"<(8|16) x float>", ir)
    # The overlap is checked by the wrapper; LLVM adds no checks of its own.
    assert "memcheck" not in ir
    assert "llvm.loop.parallel_accesses" in ir
    # one vectorized body (name.contig), reached directly or block by block
    # with step-0 inputs replicated into buffers
    for block in ("contig", "bcast", "bcast.block", "bcast.fill", "strided", "check.overlap"):
        assert re.search(rf"^{re.escape(block)}[.:\d]", ir, re.M), block
    assert len(re.findall(r"<(?:8|16) x float>", ir)) >= 1
    # the vectorized body and the general loop are functions of their own;
    # the loop function, which only checks and calls, is marked for the fast
    # code generator (its attribute group carries the mark)
    assert ir.count("define internal void") == 2 and ".contig(" in ir and ".strided(" in ir
    assert '"numbavec-fast-codegen"' in ir


def test_exp_through_libmvec():
    f = make(EXP_IR, "f->f")
    a = np.linspace(-10, 10, 1001, dtype=np.float32)
    np.testing.assert_allclose(f(a), np.exp(a), rtol=4e-6)
    np.testing.assert_allclose(f(a[::2]), np.exp(a[::2]), rtol=4e-6)
    if _core._jit_info()["libmvec"]:
        assert "_ZGV" in llvm_of(f)


def test_asm_and_info():
    f = make(binary_ir("double", "fadd"), "dd->d")
    asm = _core._code_asm(_core._code_of(f))
    assert "numbavec_loop" in asm and "ret" in asm
    info = _core._jit_info()
    assert info["cpu"] and info["features"]
    assert info["llvm_version"] == _core.llvm_version


@pytest.mark.parametrize("identity,expected", [
    (None, None), (0, 0), (1, 1), (-1, -1), (2.5, 2.5), ("reorderable", None),
])
def test_identity(identity, expected):
    f = make(binary_ir("double", "fadd"), "dd->d", name="g", identity=identity)
    assert isinstance(f, np.ufunc) and f.__name__ == "g"
    assert f.identity == expected
    assert f.types == ["dd->d"] and (f.nin, f.nout) == (2, 1)
    if identity == "reorderable":
        assert f.reduce(np.arange(4.0), axis=None) == 6.0


def test_bad_arguments():
    ir = binary_ir("double", "fadd")
    with pytest.raises(ValueError):
        make(ir, "dd->d", identity="nope")
    with pytest.raises(ValueError):
        _core._ufunc_from_ir(ir, "missing", "dd->d")
    with pytest.raises(ValueError):
        make("this is not IR", "dd->d")
    with pytest.raises(TypeError):
        make(ir, "ff->f")
    with pytest.raises(RuntimeError):
        make("define internal double @kernel(double %a, double %b) {\n"
             "entry:\n  br label %next\nnext:\n  ret double %r\n"
             "late:\n  %r = fadd double %a, %b\n  br label %next\n}\n", "dd->d")


@pytest.mark.slow
def test_codes_are_freed():
    gc.collect()
    before = _core._jit_info()["live_codes"]
    ir = binary_ir("i32", "add")
    a = np.arange(100, dtype=np.int32)
    for _ in range(40):
        f = make(ir, "ii->i")
        np.testing.assert_array_equal(f(a, a), 2 * a)
        del f
    gc.collect()
    assert _core._jit_info()["live_codes"] == before
    keep = [make(ir, "ii->i") for _ in range(5)]
    assert _core._jit_info()["live_codes"] == before + 5
    np.testing.assert_array_equal(keep[3](a, 1), a + 1)
    del keep
    gc.collect()
    assert _core._jit_info()["live_codes"] == before


def test_dump_env():
    ir = binary_ir("float", "fadd")
    code = ("from numbavec import _core\n"
            f"_core._ufunc_from_ir({ir!r}, 'kernel', 'ff->f', name='dumped')\n")
    env = dict(os.environ, NUMBAVEC_DUMP="llvm,opt,asm")
    r = run_python(code, env=env)
    assert r.returncode == 0, r.stderr
    for header in ("before optimisation", "after optimisation", "assembly"):
        assert re.search(rf"=== numbavec: .*{header}.* 'dumped' ===", r.stderr), header


@pytest.mark.parametrize("eager", [False, True])
def test_dump_time_gives_each_stage_of_a_compilation(eager):
    """NUMBAVEC_DUMP=time: a line per compiled signature with the time of
    each stage (what issue 18's measurements start from), and a line when a
    signature's machine code is made at a call: on cpu its quick code at the
    first, the optimised code when the calls have run enough elements."""
    code = ("import linecache, numpy as np, numbavec\n"
            "text = 'f = lambda x, y: x * y + 1\\n'\n"
            "linecache.cache['<timed>'] = (len(text), None, [text], '<timed>')\n"
            "exec(compile(text, '<timed>', 'exec'))\n"
            "u = numbavec.vectorize(['f8(f8, f8)', 'f4(f4, f4)'])(f)\n"
            "print('called', u(np.arange(3.0), 2.0))\n"
            "print('called', u(np.ones(70000), 2.0).sum())\n")
    env = dict(os.environ, NUMBAVEC_DUMP="time", NUMBAVEC_EAGER="1" if eager else "0",
               NUMBAVEC_QUICK="1")
    r = run_python(code, env=env)
    assert r.returncode == 0, r.stderr
    assert "called [1. 3. 5.]" in r.stdout and "called 210000.0" in r.stdout
    lines = [line for line in r.stderr.splitlines() if line.startswith("numbavec time:")]
    stages = r"lower [0-9.]+ type [0-9.]+ emit [0-9.]+ opt [0-9.]+ codegen [0-9.]+ link [0-9.]+"
    later = "" if eager else ", machine code at the first call"
    assert re.match(r"numbavec time: <lambda> float64\(float64, float64\) \(host, ufunc-loop\): "
                    + stages + r", total [0-9.]+ ms" + later + "$", lines[0]), lines[0]
    if eager:
        assert len(lines) == 2, r.stderr
        assert "float32(float32, float32) (host, ufunc-loop)" in lines[1]
    else:
        # only the float64 signature was called: its quick code, then its
        # optimised code
        assert len(lines) == 4, r.stderr
        assert "float32(float32, float32) (host, ufunc-loop)" in lines[1]
        made = r" at a call: opt [0-9.]+ codegen [0-9.]+ link [0-9.]+, total [0-9.]+ ms$"
        assert re.match(r"numbavec time: nv\.<lambda> quick machine code made" + made,
                        lines[2]), lines[2]
        assert re.match(r"numbavec time: nv\.<lambda> machine code made" + made, lines[3]), lines[3]
