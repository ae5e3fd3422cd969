"""@guvectorize(target='cuda'): on every machine, the PTX of each layout
kind through ptxas and the host-side checks of a call (core dimensions,
broadcasting, types), which come before the driver; on a GPU, each layout
kind against the cpu target's results, including the broadcasting calls
numba-cuda refuses (its issues 6421, 5640 and 1538)."""

import numpy as np
import pytest

import numbavec
from numbavec import _core, cuda, guvectorize
from numbavec._source import KernelSource

from conftest import GPU, HAVE_PTXAS, assemble, kernel_from_source, needs_gpu, needs_ptxas

HAVE_LIBDEVICE = cuda.toolkit_info()["libdevice"] is not None
pytestmark = pytest.mark.skipif(not HAVE_LIBDEVICE and not GPU,
                                reason="the CUDA toolkit's libdevice is not installed")

DOT = """
def k(a, b, out):
    acc = 0.0
    for i in range(a.shape[0]):
        acc += a[i] * b[i]
    out[0] = acc
"""

MATMUL = """
def k(a, b, out):
    for i in range(a.shape[0]):
        for j in range(b.shape[1]):
            acc = 0.0
            for p in range(a.shape[1]):
                acc += a[i, p] * b[p, j]
            out[i, j] = acc
"""

RAMP = """
def k(a, out):
    for i in range(out.shape[0]):
        out[i] = a * i
"""

MINMAX = """
def k(a, lo, hi):
    lo[0] = a[0]
    hi[0] = a[0]
    for i in range(a.shape[0]):
        lo[0] = min(lo[0], a[i])
        hi[0] = max(hi[0], a[i])
"""

SCALE = """
def k(a, s):
    for i in range(a.shape[0]):
        a[i] = a[i] * s
"""

STENCIL = """
def k(a, out):
    for i in range(a.shape[0]):
        out[i] = a[i + 1] - a[i]
"""

BINS = """
import numpy as np
def k(edges, x, left, right):
    left[0] = np.searchsorted(edges, x)
    right[0] = np.searchsorted(edges, x, side="right")
"""

SOFTMAX = """
import math
import numpy as np
def k(a, out):
    m = a[0]
    for i in range(a.shape[0]):
        m = max(m, a[i])
    s = np.float32(0.0)  # 0.0 would sum float32 values in float64
    for i in range(a.shape[0]):
        out[i] = math.exp(a[i] - m)
        s += out[i]
    for i in range(a.shape[0]):
        out[i] = np.sin(out[i] / s) + math.log1p(s)
"""

BACKWARD = """
import numpy as np
def k(a, out):
    np.exp(a, out)
    acc = a[0] * 0
    for i in reversed(range(a.shape[0])):
        acc += out[i] * np.finfo(np.float32).eps
        out[i] = acc
"""

RESHAPED = """
def k(a, out):
    m = a.reshape(out.shape[0], -1)
    for i in range(out.shape[0]):
        out[i] = m[i].sum() + a.ravel()[i]
"""

CLOSURE = """
def k(a, out):
    c = a[0]

    def shifted(v, by=1.0):
        return v - c + by

    def twice(f, v):
        return f(f(v))

    for i in range(a.shape[0]):
        out[i] = twice(shifted, a[i])
"""

# (kernel, signatures, layout): one of each layout kind, a search and math
KINDS = {
    "search": (BINS, ["void(f8[:], f8, i8[:], i8[:])", "void(u1[:], u1, i8[:], i8[:])"],
               "(n),()->(),()"),
    "dot": (DOT, ["void(f4[:], f4[:], f4[:])", "void(f8[:], f8[:], f8[:])"], "(n),(n)->()"),
    "matmul": (MATMUL, ["void(f4[:,:], f4[:,:], f4[:,:])", "void(f8[:,:], f8[:,:], f8[:,:])"],
               "(m,n),(n,p)->(m,p)"),
    "frozen": (RAMP, ["void(f8, f8[:])"], "()->(3)"),
    "two_outputs": (MINMAX, ["void(f8[:], f8[:], f8[:])", "void(i4[:], i4[:], i4[:])"],
                    "(n)->(),()"),
    "no_output": (SCALE, ["void(f8[:], f8)"], "(n),()"),
    "flexible": (MATMUL, ["void(f8[:,:], f8[:,:], f8[:,:])"], "(m?,n),(n,p?)->(m?,p?)"),
    "math": (SOFTMAX, ["void(f4[:], f4[:])", "void(f8[:], f8[:])"], "(n)->(n)"),
    "backward": (BACKWARD, ["void(f4[:], f4[:])", "void(f8[:], f8[:])"], "(n)->(n)"),
    "reshaped": (RESHAPED, ["void(f4[:], f4[:])", "void(f8[:], f8[:])"], "(n)->(m)"),
    "closure": (CLOSURE, ["void(f4[:], f4[:])", "void(f8[:], f8[:])"], "(n)->(n)"),
}

SHAPES = """
def k(a, b, out):
    out[0] = a.shape[0] * 100 + a.shape[1] * 10 + b.shape[0]
"""


def make(kind, target="cuda", **opts):
    src, sigs, layout = KINDS[kind]
    return guvectorize(sigs, layout, target=target, **opts)(kernel_from_source(src))


# ---- on every machine ----

@pytest.mark.parametrize("kind", sorted(KINDS))
def test_attributes(kind):
    g = make(kind)
    cpu = make(kind, "cpu")
    assert isinstance(g, _core.CUDAGUFunc)
    assert (g.nin, g.nout, g.nargs) == (cpu.nin, cpu.nout, cpu.nargs)
    assert g.types == cpu.types and g.signature == cpu.signature
    assert g.py_func is not None and "cuda gufunc" in repr(g)
    assert ".entry nv_k_0_gu(" in g.inspect_ptx(KINDS[kind][1][0])


def test_inspection_names_a_signature():
    g = make("dot")
    assert g.inspect_ptx("void(float32[:], float32[:], float32[:])") == g.inspect_ptx(
        "void(f4[:], f4[:], f4[:])")
    assert "nv_k_0_gu" in g.inspect_llvm("void(f4[:], f4[:], f4[:])")
    assert set(g.variable_types()) == {"void(float32[:], float32[:], float32[:])",
                                       "void(float64[:], float64[:], float64[:])"}
    assert g.variable_types("void(f8[:], f8[:], f8[:])")["acc"] == "float64"
    with pytest.raises(TypeError, match="several signatures"):
        g.inspect_ptx()
    with pytest.raises(KeyError, match="no compiled signature"):
        g.inspect_ptx("void(i4[:], i4[:], i4[:])")
    assert make("frozen").inspect_ptx() == make("frozen").inspect_asm()


@needs_ptxas
@pytest.mark.parametrize("arch", ["sm_80", "sm_90"])
@pytest.mark.parametrize("kind", sorted(KINDS))
@pytest.mark.slow
def test_ptx_assembles(kind, arch, tmp_path):
    src, sigs, layout = KINDS[kind]
    pyfunc = kernel_from_source(src)
    s = KernelSource(pyfunc)
    g = _core.guvectorize(pyfunc, s.funcdef, s.location, sigs, layout, target="cuda", arch=arch)
    for sig in sigs:
        assemble(g.inspect_ptx(sig), arch, tmp_path)


@needs_ptxas
@pytest.mark.parametrize("arch", ["sm_80", "sm_89", "sm_90"])
def test_aligned_rows_load_16_bytes_at_once(arch, tmp_path, monkeypatch):
    """A gufunc kernel takes LLVM's NVPTX back end: its loop over a row has
    no bounds checks left and, in the launches whose rows all start on 16
    bytes, loads 4 floats at once -- asking the L2 for 256 bytes where the
    PTX ISA has it (sm_89 on); libNVVM (backend='nvvm') still takes the
    same module, without the alignment hints."""
    monkeypatch.delenv("NUMBAVEC_CUDA_BACKEND", raising=False)
    pyfunc = kernel_from_source(DOT)
    s = KernelSource(pyfunc)
    sig = "void(f4[:], f4[:], f4[:])"
    ptx = {}
    for backend in (None, "nvvm") if numbavec.cuda.toolkit_info()["libnvvm"] else (None,):
        g = _core.guvectorize(pyfunc, s.funcdef, s.location, [sig], "(n),(n)->()",
                              target="cuda", arch=arch, backend=backend)
        ptx[backend] = g.inspect_ptx(sig)
        assemble(ptx[backend], arch, tmp_path)
    assert "Generated by LLVM NVPTX" in ptx[None]
    hint = "L2::256B." if arch != "sm_80" else ""
    assert ptx[None].count(f"ld.global.{hint}v4.f32") >= 2
    assert ("L2::256B" in ptx[None]) == (arch != "sm_80")
    if "nvvm" in ptx:
        assert "Generated by NVIDIA NVVM" in ptx["nvvm"]


RAISES = """
def k(a, out):
    for i in range(a.shape[0]):
        if a[i] < 0:
            raise ValueError("negative")
        out[i] = a[i]
"""


@pytest.mark.parametrize("backend", [None, "nvvm"])
def test_calls_wait_only_for_kernels_that_can_fail(backend, monkeypatch):
    """A call gives the kernel a status word and waits for it only where
    the kernel's PTX still reads it: LLVM's NVPTX back end proves the dot
    product's bounds checks away (its calls return before the kernel ends,
    as a cuda ufunc's), a read past the row keeps its check unless
    boundscheck=False, and a raise keeps it in any case."""
    monkeypatch.delenv("NUMBAVEC_CUDA_BACKEND", raising=False)
    if backend == "nvvm" and not numbavec.cuda.toolkit_info()["libnvvm"]:
        pytest.skip("libNVVM is not installed")
    x = np.ones((4, 8), np.float32)

    def waits(src, sig, layout, *args, **opts):
        pyfunc = kernel_from_source(src)
        s = KernelSource(pyfunc)
        g = _core.guvectorize(pyfunc, s.funcdef, s.location, [sig], layout, target="cuda",
                              arch="sm_90", backend=backend, **opts)
        return g._plan(*args)["waits"]

    assert waits(DOT, "void(f4[:], f4[:], f4[:])", "(n),(n)->()", x, x) is (backend == "nvvm")
    assert waits(STENCIL, "void(f4[:], f4[:])", "(n)->(n)", x)
    assert not waits(STENCIL, "void(f4[:], f4[:])", "(n)->(n)", x, boundscheck=False)
    assert waits(RAISES, "void(f4[:], f4[:])", "(n)->(n)", x, boundscheck=False)


REVADD = """
def k(a, s, out):
    n = a.shape[0]
    for i in range(n):
        out[i] = a[i] * s + a[n - 1 - i]
"""

AXPY = """
def k(a, s, out):
    for i in range(a.shape[0]):
        out[i] = a[i] * s
"""


@needs_ptxas
@pytest.mark.parametrize("arch", ["sm_80", "sm_90"])
def test_rows_apart_store_16_bytes_at_once(arch, tmp_path, monkeypatch):
    """In launches whose written rows share no memory with the others (the
    host checks), the body runs behind noalias parameters: its row's loads
    and stores are kept apart, so the loop stores 4 floats at once (the
    other copy keeps the source's order, one float at a time)."""
    monkeypatch.delenv("NUMBAVEC_CUDA_BACKEND", raising=False)
    pyfunc = kernel_from_source(AXPY)
    s = KernelSource(pyfunc)
    sig = "void(f4[:], f4, f4[:])"
    g = _core.guvectorize(pyfunc, s.funcdef, s.location, [sig], "(n),()->(n)",
                          target="cuda", arch=arch)
    ptx = g.inspect_ptx(sig)
    assemble(ptx, arch, tmp_path)
    assert ptx.count("st.global.v4.f32") >= 1


@pytest.mark.parametrize("lines, block, grid", [
    (0, 1024, 977),                 # no rows: the occupancy block, every SM's share
    (64, 1024, 977),                # rows 64 bytes apart share lines: not capped
    (128, 512, 132),                # two arguments of rows 64 bytes apart
    (256, 256, 132),                # two of rows a line or more apart
    (260, 256, 132),                # and a () output: the nearest whole warps
    (512, 128, 132),
])
def test_launch_shape_keeps_rows_in_l1(lines, block, grid):
    """A launch whose threads each keep `lines` bytes of L1 lines holds at
    most 64 KiB of them an SM: fewer threads, in one block an SM where the
    occupancy block holds them."""
    assert _core._cuda_gufunc_geometry(1024, 132, 10**6, lines) == (grid, block)
    assert _core._cuda_gufunc_geometry(1024, 132, 100, lines) == (1, 128)   # a small call
    assert _core._cuda_gufunc_geometry(128, 132, 10**6, lines)[1] == 128
    with pytest.raises(ValueError):
        _core._cuda_gufunc_geometry(1000, 132, 10, 0)


@pytest.mark.parametrize("arch, nvptx", [("sm_90", True), ("sm_90a", True), ("sm_88", False),
                                         ("sm_121", False)])
def test_gufuncs_take_nvptx_for_the_archs_it_knows(arch, nvptx, monkeypatch):
    """An arch LLVM's NVPTX back end does not know by name (it would make
    PTX for a generic processor) stays with libNVVM."""
    if not cuda.toolkit_info()["libnvvm"]:
        pytest.skip("libNVVM not found")
    monkeypatch.delenv("NUMBAVEC_CUDA_BACKEND", raising=False)
    pyfunc = kernel_from_source(DOT)
    s = KernelSource(pyfunc)
    sig = "void(f4[:], f4[:], f4[:])"
    g = _core.guvectorize(pyfunc, s.funcdef, s.location, [sig], "(n),(n)->()", target="cuda",
                          arch=arch)
    assert ("Generated by LLVM NVPTX" in g.inspect_ptx(sig)) == nvptx


@needs_ptxas
@pytest.mark.skipif(not cuda.toolkit_info()["libnvvm"], reason="libNVVM not found")
@pytest.mark.parametrize("kind", ["dot", "math"])
def test_archs_beyond_llvms_take_libnvvm(kind, tmp_path):
    """sm_100 is past LLVM 19's NVPTX back end: the gufunc kernel (its
    alignment hints and libdevice calls too) goes to libNVVM's modern
    dialect."""
    src, sigs, layout = KINDS[kind]
    pyfunc = kernel_from_source(src)
    s = KernelSource(pyfunc)
    g = _core.guvectorize(pyfunc, s.funcdef, s.location, sigs, layout, target="cuda",
                          arch="sm_100")
    for sig in sigs:
        ptx = g.inspect_ptx(sig)
        if int(_core.llvm_version.split(".")[0]) < 20:
            assert "Generated by NVIDIA NVVM" in ptx
        assemble(ptx, "sm_100", tmp_path)


def test_dynamic_gufunc_compiles_the_call_types(tmp_path):
    """Without signatures a call compiles its operands' kinds (before the
    driver is needed); an output not given takes what the kernel stores
    (DOT's acc starts at 0.0: a float64, whatever the elements' type)."""
    g = guvectorize("(n),(n)->()", target="cuda")(kernel_from_source(DOT))
    assert isinstance(g, _core.CUDAGUFunc) and g.types == []
    with pytest.raises(ValueError, match="core dimension 0"):
        g(np.ones(3, np.float32), np.ones((2, 4), np.float32))
    assert g.types == ["ff->d"]
    with pytest.raises(ValueError, match="core dimension 0"):
        g(np.ones(3), np.ones(4, np.float32))
    assert g.types == ["ff->d", "df->d"]
    with pytest.raises(ValueError, match="core dimension 0"):   # Python numbers: int64, float64
        g(np.ones(3), [1.0, 2.0], out=np.zeros((), np.float32))
    assert g.types[-1] == "dd->f"
    if HAVE_PTXAS:
        assemble(g.inspect_ptx("void(f8[:], f4[:], f8[:])"), "sm_90", tmp_path)
    w = guvectorize("(n),()", target="cuda")(kernel_from_source(SCALE))
    with pytest.raises(ValueError, match="does not have enough dimensions"):
        w(1.0, 2.0)
    assert w.types == ["dd->"]                         # as the cpu target writes it


def test_loops_are_chosen_as_numpy_chooses():
    """An operand of a loop's own dtype takes that loop before any loop it
    casts to safely (NumPy's dispatch; the cpu target is a real gufunc)."""
    src, sigs, layout = KINDS["two_outputs"]            # 'd->dd' before 'i->ii'
    sigs = sigs + ["void(f4[:], f4[:], f4[:])", "void(i2[:], f8[:], f8[:])"]
    g = guvectorize(sigs, layout, target="cuda")(kernel_from_source(src))
    cpu = guvectorize(sigs, layout)(kernel_from_source(src))
    assert g.types == cpu.types
    x = np.arange(12.0).reshape(3, 4)

    def loop(dtypes):                                   # 'hdd' for NumPy's (i2, f8, f8)
        return "".join(np.dtype(t).char for t in dtypes)

    def ours(*args, **kwargs):
        t = g.types[g._plan(*args, **kwargs)["loop"]]
        return loop(t.replace("->", ""))

    for dtype in ("f8", "i4", "f4", "i2", "u1", "i8", "b1", "u2"):
        a = x.astype(dtype)
        assert ours(a) == loop(cpu.resolve_dtypes((a.dtype, None, None))), dtype
        for out in ("f8", "i8", "f4"):
            outs = (np.zeros(3, out), np.zeros(3, out))
            try:
                want = cpu.resolve_dtypes((a.dtype, outs[0].dtype, outs[1].dtype))
            except TypeError as e:                      # an output NumPy cannot cast into
                with pytest.raises(TypeError, match="Cannot cast ufunc 'k' output 1 from"
                                   if "Cannot cast" in str(e) else ""):
                    g._plan(a, out=outs)
                continue
            assert ours(a, out=outs) == loop(want), (dtype, out)


@pytest.mark.parametrize("args, match", [
    ((np.ones(3), np.float64(2.0)), r"Input operand 1 does not have enough dimensions \(has 0"),
    ((np.ones((2, 3)), np.ones((2, 4))), r"core dimension 0, .*size 4 is different from 3"),
    ((np.ones((2, 3)), np.ones((3, 3))), "could not be broadcast"),
])
def test_core_and_loop_dimensions_are_checked_before_the_device(args, match):
    g = make("dot")
    with pytest.raises(ValueError, match=match):
        g(*args)


def test_frozen_and_output_dimensions_are_checked():
    g = make("frozen")
    with pytest.raises(ValueError, match=r"Output operand 0 has a mismatch in its core dimension "
                                         r"0.*size 4 is different from 3"):
        g(1.0, out=np.zeros(4))
    with pytest.raises(ValueError, match="loop dimensions"):
        g(np.ones(2), out=np.zeros((3, 3)))


def test_arguments_are_checked():
    g = make("dot")
    with pytest.raises(TypeError, match="takes 2 inputs"):
        g(np.ones(3))
    with pytest.raises(TypeError, match="unexpected keyword argument 'dtype'"):
        g(np.ones(3), np.ones(3), dtype=np.float32)
    with pytest.raises(TypeError, match="no signature takes these inputs"):
        g(np.ones(3, np.complex128), np.ones(3))
    with pytest.raises(TypeError, match="has no outputs"):
        make("no_output")(np.ones(3), 2.0, out=np.ones(3))
    with pytest.raises(TypeError, match="output 0 must be a NumPy array or a device array"):
        g(np.ones((2, 3)), np.ones(3), out=[0.0, 0.0])
    with pytest.raises(TypeError, match=r"Cannot cast ufunc 'k' output from dtype\('float64'\) "
                                        r"to dtype\('int8'\) with casting rule 'same_kind'"):
        g(np.ones(3), np.ones(3), out=np.zeros((), np.int8))     # NumPy's words for it
    with pytest.raises(TypeError, match="no signature takes these inputs"):
        g(None, np.ones(3))
    with pytest.raises(TypeError, match="stream="):
        g(np.ones(3), np.ones(3), stream="default")


@pytest.mark.parametrize("kwargs, exc, match", [
    ({"axes": [(0,), (0,)], "axis": 0}, TypeError, "both 'axis' and 'axes'"),
    ({"axes": ((0,), (0,))}, TypeError, "axes should be a list"),
    ({"axes": [(0,)]}, ValueError, "no entry for operand 1"),
    ({"axes": [(0,), (0,), (), ()]}, ValueError, "an entry for each of the 3 operands"),
    ({"axes": [(0, 1), (0,)]}, ValueError, "axes item 0 should be a tuple of 1"),
    ({"axes": [(2,), (0,)]}, ValueError, "axis 2 is out of bounds"),
    ({"axes": [("x",), (0,)]}, TypeError, "integer"),
    ({"keepdims": 1}, TypeError, "'keepdims' must be a boolean"),
    ({"keepdims": True, "out": np.ones((3, 2))}, ValueError, "kept dimension of size 1"),
    ({"keepdims": True, "axes": [(0,), (0,), ()]}, ValueError, "axes item 2 should be a tuple of 1"),
])
def test_axes_are_checked(kwargs, exc, match):
    with pytest.raises(exc, match=match):
        make("dot")(np.ones((3, 4)), np.ones((3, 4)), **kwargs)


@pytest.mark.parametrize("kind", ["matmul", "frozen", "no_output"])
def test_keepdims_needs_a_reduction_layout(kind):
    """NumPy's rule (and its message): the inputs share one number of core
    dimensions and the outputs have none; checked before the device."""
    g, cpu = make(kind), make(kind, "cpu")
    args = {"matmul": (np.ones((2, 2)), np.ones((2, 2))), "frozen": (1.0,),
            "no_output": (np.ones(3), 2.0)}[kind]
    with pytest.raises(TypeError) as want:
        cpu(*args, keepdims=True)
    with pytest.raises(TypeError) as got:
        g(*args, keepdims=True)
    assert str(got.value) == str(want.value)


@pytest.mark.parametrize("kwargs", [{"axis": 0}, {"axes": [(0, 1), (0, 1), (0, 1)]},
                                    {"keepdims": True}])
def test_flexible_dimensions_refuse_axes_and_keepdims(kwargs):
    with pytest.raises(NotImplementedError, match=r"flexible \('\?'\) core dimensions"):
        make("flexible")(np.ones((2, 2)), np.ones((2, 2)), **kwargs)


def test_flexible_dimensions_are_checked_before_the_device():
    """A '?' dimension only may be left out: an input short of its fixed
    core dimensions is still NumPy's error."""
    g = make("flexible")
    with pytest.raises(ValueError, match="Input operand 0 does not have enough dimensions"):
        g(np.ones(()), np.ones((2, 2)))
    with pytest.raises(ValueError, match="mismatch in its core dimension"):
        g(np.ones(3), np.ones(2))


@pytest.mark.skipif(GPU, reason="without a GPU a well-formed call ends at the driver")
@pytest.mark.parametrize("shapes", [((2, 3), (3, 4)), ((3,), (3, 4)), ((2, 3), (3,)), ((3,), (3,)),
                                    ((5, 2, 3), (3,)), ((3,), 2.0)])
@pytest.mark.parametrize("out", [False, True])
@pytest.mark.slow
def test_flexible_and_kept_dimensions_are_planned_before_the_device(shapes, out):
    """The host side of '?' dimensions and keepdims= (the views with missing
    or kept dimensions put back or taken out) runs before the driver is
    needed: a call NumPy takes ends at the driver, never at a shape error."""
    a, b = (np.ones(x) if isinstance(x, tuple) else x for x in shapes)
    cpu = make("flexible", "cpu")
    try:
        want = cpu(a, b)
    except ValueError:
        with pytest.raises(ValueError):
            make("flexible")(a, b)
        return
    kwargs = {"out": np.zeros(np.shape(want))} if out and np.ndim(want) else {}
    with pytest.raises(cuda.CudaSupportError):
        make("flexible")(a, b, **kwargs)
    x = np.ones((4, 3))
    kept = {"out": np.zeros((4, 1))} if out else {}
    with pytest.raises(cuda.CudaSupportError):
        make("dot")(x, x, keepdims=True, axis=-1, **kept)


def test_axis_needs_one_shared_core_dimension():
    with pytest.raises(TypeError, match="single shared core dimension"):
        make("matmul")(np.ones((2, 2)), np.ones((2, 2)), axis=0)


# ---- large host calls: the staged pipeline (planned on every machine) ----

ROWS = 50_000                      # 50,000 rows of 64 doubles: 25 MB, several chunks of 16,384


def plan(kind, *args, **kwargs):
    p = make(kind)._plan(*args, **kwargs)
    return p["staged"], p["chunked"], p["whole"], p["direct"]


def test_large_host_calls_are_chunked_by_outer_iteration():
    x = np.ones((ROWS, 64))
    # 8 MiB of the widest argument a chunk: 16,384 rows of 512 bytes
    assert plan("dot", x, x) == (16384, [0, 1, 2], [], [])
    assert plan("dot", x.astype("f4"), x.astype("f4")) == (32768, [0, 1, 2], [], [])
    # converted first, as a host call's copy is made anyway: another dtype,
    # strides, a negative step, core dimensions moved by axes=
    assert plan("dot", x.astype("i2"), x[::-1])[:2] == (16384, [0, 1, 2])
    assert plan("dot", x.T, x.T, axes=[(0,), (0,), ()])[:2] == (16384, [0, 1, 2])
    # every output is chunked; two outputs, and no output at all
    assert plan("two_outputs", x)[:2] == (16384, [0, 1, 2])
    assert plan("frozen", np.ones(10**6))[:2] == (349440, [0, 1])  # 24-byte rows


def test_inputs_the_same_for_every_row_are_uploaded_once():
    x = np.ones((ROWS, 64))
    assert plan("dot", x, np.ones(64)) == (16384, [0, 2], [1], [])
    assert plan("dot", np.ones(64), x) == (16384, [1, 2], [0], [])
    assert plan("dot", x, np.ones((1, 64)))[1:3] == ([0, 2], [1])
    assert plan("search", np.linspace(0, 1, 9), np.ones(3 * 10**6))[1:3] == ([1, 2, 3], [0])
    assert plan("search", np.linspace(0, 1, 9), 0.5)[0] == 0          # one outer iteration


def test_host_calls_that_are_not_staged():
    x = np.ones((ROWS, 64))
    assert plan("dot", x[:1000], x[:1000])[0] == 0                    # one chunk
    assert plan("dot", x[:100, None, :], x[None, :500, :])[0] == 0    # broadcast loop dimensions
    assert plan("dot", x.reshape(10, -1, 64), x[:5000])[0] == 0
    assert plan("no_output", x, 2.0)[0] == 0                          # written inputs
    # fewer than 256 rows a chunk would leave the GPU idle: rows over 32 KiB
    assert plan("dot", np.ones((300, 2**12 + 1)), np.ones((300, 2**12 + 1)))[0] == 0
    was = _core._cuda_staging(False)
    try:
        assert plan("dot", x, x)[0] == 0
    finally:
        _core._cuda_staging(was)
    assert plan("dot", np.ones((300, 2**12)), np.ones((300, 2**12)))[0] == 256  # 32 KiB rows


def test_outputs_given_are_written_in_place_when_nothing_else_is_in_them():
    x, y = np.ones((ROWS, 64)), np.ones((ROWS, 64))
    assert plan("dot", x, y, out=np.empty(ROWS))[3] == [2]
    assert plan("dot", x, y, out=np.empty(ROWS, "f4"))[3] == []       # cast into: a copy
    assert plan("dot", x, y, out=np.empty(2 * ROWS)[::2])[3] == []    # strided
    assert plan("dot", x, y, out=x[:, 0])[3] == []                    # inside an input
    lo, hi = np.empty(ROWS), np.empty(ROWS)
    assert plan("two_outputs", x, out=(lo, hi))[3] == [1, 2]
    assert plan("two_outputs", x, out=(lo, lo))[3] == []              # each other
    assert plan("dot", x, y, out=np.empty((ROWS, 1)), keepdims=True)[3] == [2]  # contiguous


def test_fuzzed_host_calls_are_planned_or_refused_never_a_crash():
    """Random operand shapes, dtypes, strides, overlapping and foreign out=
    and axes= through the staging plan (g._plan, no GPU needed): a plan
    whose chunks and decisions are consistent, or NumPy's ValueError or
    TypeError; never a crash or another exception."""
    import random
    rng = random.Random(20261126)
    made = {kind: make(kind) for kind in ["dot", "two_outputs", "frozen", "search", "no_output"]}
    for _ in range(800):
        kind = rng.choice(sorted(made))
        g = made[kind]
        rows = rng.choice([0, 1, 3, 300, 40000, 40000, 40000])  # mostly several chunks
        core = rng.choice([0, 1, 5, 64, 64, 600])
        dt = rng.choice(["f8", "f4", "i2", "c16", "?"])
        base = np.zeros((rows, core + 1), dt)
        a = base[:, :core] if rng.random() < 0.5 else base[:, ::-1][:, :core]
        args = {"dot": lambda: (a, rng.choice([a, a[:1], np.ones(core), 2.0])),
                "two_outputs": lambda: (a,), "frozen": lambda: (base[:, 0],),
                "search": lambda: (np.linspace(0, 1, 9), base[:, 0]),
                "no_output": lambda: (a, 2.0)}[kind]()
        kwargs = {}
        if kind == "dot" and rng.random() < 0.6:
            kwargs["out"] = rng.choice([np.empty(rows), np.empty(rows, "f4"), base[:, 0],
                                        np.empty(2 * rows)[::2], np.empty(rows + 1)])
        if kind == "dot" and rng.random() < 0.2:
            kwargs["axes"] = [(0,), (0,), ()]
            args = tuple(x.T if isinstance(x, np.ndarray) and x.ndim == 2 else x for x in args)
        try:
            p = g._plan(*args, **kwargs)
        except (ValueError, TypeError):
            continue
        assert p["staged"] >= 0 and (p["staged"] == 0 or p["staged"] % 256 == 0), p
        assert set(p["direct"]) <= set(p["chunked"]), p
        assert not set(p["chunked"]) & set(p["whole"]), p


@pytest.mark.skipif(GPU, reason="a GPU is present")
def test_call_without_gpu_is_a_support_error():
    with pytest.raises(cuda.CudaSupportError):
        make("dot")(np.ones(3), np.ones(3))


# ---- on a GPU: against the cpu target ----

def both(kind, *args, **kwargs):
    g, cpu = make(kind), make(kind, "cpu")
    return g(*args, **kwargs), cpu(*args, **kwargs)


def close(got, want, rtol=1e-5):
    if isinstance(got, cuda.DeviceNDArray):
        got = got.copy_to_host()
    np.testing.assert_allclose(got, want, rtol=rtol)


@needs_gpu
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_dot_broadcasts_as_numpy(dtype):
    """The calls numba-cuda refuses (ValueError): loop dimensions broadcast."""
    rng = np.random.default_rng(1)
    x = rng.random((40, 16)).astype(dtype)
    y = rng.random((30, 16)).astype(dtype)
    got, want = both("dot", x[:, None, :], y[None, :, :])
    assert got.shape == (40, 30) and got.dtype == dtype
    close(got, want)
    close(got, x @ y.T, rtol=1e-4)
    # device arrays in: a device array out, no copies of the inputs
    g = make("dot")
    dy = cuda.to_device(y)
    d = g(cuda.to_device(x[:, None, :]), dy)
    assert isinstance(d, cuda.DeviceNDArray) and d.shape == (40, 30)
    close(d, want)
    close(g(x[3], y[5]), np.dot(x[3], y[5]), rtol=1e-4)     # no loop dimension: a scalar


@needs_gpu
def test_matmul_batch():
    rng = np.random.default_rng(2)
    a = rng.random((1000, 4, 3))
    b = rng.random((3, 5))
    got, want = both("matmul", a, b)
    close(got, want)
    close(got, a @ b)


def test_a_search_in_a_cuda_kernel_is_of_one_real_or_integer_value():
    for body in ("out[:] = np.searchsorted(a, a)", "out[0] = np.searchsorted(a.astype(np.complex128), 1)"):
        with pytest.raises(numbavec.TypingError, match="one real or integer value"):
            guvectorize(["void(f8[:], i8[:])"], "(n)->(n)", target="cuda")(
                kernel_from_source(f"import numpy as np\ndef k(a, out):\n    {body}\n"))
    with pytest.raises(numbavec.TypingError, match="not available in a cuda kernel"):
        guvectorize(["void(f8[:], f8[:])"], "(n)->(n)", target="cuda")(
            kernel_from_source("import numpy as np\ndef k(a, out):\n    out[:] = np.sort(a)\n"))


@needs_gpu
def test_searches_match_the_cpu():
    rng = np.random.default_rng(4)
    edges = np.sort(np.r_[rng.standard_normal(37), np.nan, np.nan])
    x = np.r_[rng.standard_normal(200), edges, np.nan, -np.inf, np.inf]
    got, want = both("search", edges, x)
    for g, w in zip(got, want):
        np.testing.assert_array_equal(g, w)
    np.testing.assert_array_equal(want[0], np.searchsorted(edges, x))
    np.testing.assert_array_equal(want[1], np.searchsorted(edges, x, side="right"))


def test_math_is_libdevices():
    """Math in a gufunc kernel calls libdevice, as in a cuda ufunc: libNVVM
    crashed on LLVM's math intrinsics, and the NVPTX back end lowers
    llvm.exp to a bare ex2.approx."""
    src, sigs, layout = KINDS["math"]
    pyfunc = kernel_from_source(src)
    s = KernelSource(pyfunc)
    for backend in (None, "nvvm") if cuda.toolkit_info()["libnvvm"] else (None,):
        g = _core.guvectorize(pyfunc, s.funcdef, s.location, sigs, layout, target="cuda",
                              backend=backend)
        for sig, suffix in (("void(f4[:], f4[:])", "f"), ("void(f8[:], f8[:])", "")):
            ir = g.inspect_llvm(sig)
            for fn in ("exp", "sin", "log1p"):
                assert f"@__nv_{fn}{suffix}(" in ir, (fn, sig)
            assert "@llvm.exp" not in ir and "@llvm.sin" not in ir


@needs_gpu
def test_aligned_and_unaligned_launches_agree():
    """Rows on 16 bytes take the body's aligned copy (16-byte loads), rows
    off them the other; both against NumPy, on device and host arrays, for
    row lengths that leave remainders."""
    rng = np.random.default_rng(12)
    g = make("dot")
    for n in (64, 67, 5):
        x = rng.random((300, n + 3), dtype=np.float32)
        y = rng.random((300, n + 3), dtype=np.float32)
        for off in (0, 1, 2, 3):                        # 4-byte steps off the 16-byte start
            a, b = x[:, off:off + n], y[:, off:off + n]
            want = (a.astype(np.float64) * b).sum(axis=1)
            close(g(a, b), want)
            close(g(cuda.to_device(np.ascontiguousarray(a)), cuda.to_device(b)), want)
            da = cuda.to_device(x)[:, off:off + n]      # a device view: its base moves
            close(g(da, cuda.to_device(y)[:, off:off + n]), want)


@needs_gpu
def test_rows_written_in_place_and_apart_agree():
    """A kernel whose result depends on the order of its reads and writes:
    written into a new array (the noalias copy) it matches NumPy; written
    over its input (out= the input: that copy is not taken) it matches the
    function run row by row in place, as NumPy runs it; written over the
    input reversed or shifted by a row, it reads a copy of the input, as
    NumPy's gufunc (the cpu target) does."""
    rng = np.random.default_rng(13)
    g = guvectorize(["void(f4[:], f4, f4[:])"], "(n),()->(n)", target="cuda",
                    boundscheck=False)(kernel_from_source(REVADD))
    cpu = guvectorize(["void(f4[:], f4, f4[:])"], "(n),()->(n)",
                      boundscheck=False)(kernel_from_source(REVADD))
    for n in (64, 67, 5):
        x = rng.random((200, n), dtype=np.float32)
        close(g(cuda.to_device(x), np.float32(1.5)).copy_to_host(), x * 1.5 + x[:, ::-1])
        close(g(x, np.float32(1.5)), x * 1.5 + x[:, ::-1])
        want = x.copy()
        for row in want:
            for i in range(n):
                row[i] = row[i] * np.float32(1.5) + row[n - 1 - i]
        d = cuda.to_device(x)
        g(d, np.float32(1.5), out=d)
        close(d.copy_to_host(), want)
        for view in (lambda a: a[:, ::-1], lambda a: a[::-1], lambda a: a[1:]):
            h = x.copy()
            d = cuda.to_device(x)
            src = h[:-1] if view(h).shape[0] < h.shape[0] else h
            dsrc = d[:-1] if view(h).shape[0] < h.shape[0] else d
            cpu(src, np.float32(1.5), out=view(h))
            g(dsrc, np.float32(1.5), out=view(d))
            close(d.copy_to_host(), h)


@needs_gpu
def test_math_matches_the_cpu():
    rng = np.random.default_rng(9)
    for dtype in ("f4", "f8"):
        x = (rng.standard_normal((300, 17)) * 5).astype(dtype)
        got, want = both("math", x)
        assert got.dtype == want.dtype
        close(got, want, rtol=1e-5 if dtype == "f4" else 1e-12)


@needs_gpu
def test_frozen_dimension_and_scalars():
    got, want = both("frozen", np.arange(4.0))
    close(got, want)
    assert got.shape == (4, 3)
    close(make("frozen")(2.5), [0.0, 2.5, 5.0])


@needs_gpu
def test_two_outputs():
    rng = np.random.default_rng(3)
    for x in (rng.random((50, 7)), rng.integers(-100, 100, (50, 7)).astype(np.int32)):
        (lo, hi), (clo, chi) = both("two_outputs", x)
        close(lo, clo)
        close(hi, chi)
        close(lo, x.min(axis=1))


@needs_gpu
def test_writes_into_inputs_reach_the_caller():
    g = make("no_output")
    a = np.arange(12.0).reshape(3, 4)
    g(a, np.array([[1.0], [2.0], [3.0]])[:, 0])
    close(a, np.arange(12.0).reshape(3, 4) * [[1.0], [2.0], [3.0]])
    d = cuda.to_device(np.arange(4.0))
    g(d, 3.0)
    close(d, np.arange(4.0) * 3)
    f32 = np.arange(4, dtype=np.float32)          # cast to float64 on the way, and back
    g(f32, 2.0)
    close(f32, np.arange(4) * 2)


@needs_gpu
def test_out_on_host_and_device():
    g = make("dot")
    x, y = np.random.rand(6, 8), np.random.rand(6, 8)
    out = np.zeros(6)
    assert g(x, y, out=out) is out
    close(out, (x * y).sum(axis=1))
    dout = cuda.device_array(6)
    assert g(cuda.to_device(x), cuda.to_device(y), out=dout) is dout
    close(dout, (x * y).sum(axis=1))
    f32 = np.zeros(6, np.float32)                  # a host out= of another float kind
    g(x, y, out=f32)
    close(f32, (x * y).sum(axis=1), rtol=1e-5)


@needs_gpu
def test_odd_shapes_and_zero_d_outputs():
    g = make("dot")
    out = np.zeros(())
    assert g(np.arange(3.0), np.arange(3.0), out=out) is out and out == 5.0
    close(g(np.ones((0, 3)), np.ones(3)), np.zeros(0))
    assert g(np.ones(0), np.ones(0)) == 0.0
    x = np.arange(6.0)
    close(g(x[::-2], x[::2]), np.dot(x[::-2], x[::2]))
    close(g([[1, 2], [3, 4]], [1, 1]), [3.0, 7.0])


@needs_gpu
def test_dynamic_gufunc_on_the_device():
    g = guvectorize("(n),(n)->()", target="cuda")(kernel_from_source(DOT))
    cpu = guvectorize("(n),(n)->()")(kernel_from_source(DOT))
    rng = np.random.default_rng(4)
    for dtype in (np.float32, np.float64, np.int32):
        x = (rng.random((20, 7)) * 10).astype(dtype)
        y = (rng.random((5, 1, 7)) * 10).astype(dtype)
        got, want = g(x, y), cpu(x, y)
        assert got.dtype == want.dtype and got.shape == (5, 20)
        close(got, want)
    d = g(cuda.to_device(np.ones((3, 4))), cuda.to_device(np.arange(4.0)))
    assert isinstance(d, cuda.DeviceNDArray)
    close(d, [6.0, 6.0, 6.0])
    out = np.zeros(3, np.float32)                  # a given out= decides its loop's type
    assert g(np.ones((3, 4)), np.arange(4.0), out=out) is out
    close(out, [6.0, 6.0, 6.0])
    w = guvectorize("(n),()", target="cuda")(kernel_from_source(SCALE))
    a = np.arange(4.0)
    w(a, 2.0)
    close(a, np.arange(4.0) * 2)


@needs_gpu
def test_axes_and_axis_as_numpy():
    rng = np.random.default_rng(5)
    x, y = rng.random((6, 5, 4)), rng.random((6, 5, 4))
    g, cpu = make("dot"), make("dot", "cpu")
    for kw in ({"axes": [(0,), (0,), ()]}, {"axes": [(1,), (-2,)]}, {"axis": 0},
               {"axis": -1}):
        close(g(x, y, **kw), cpu(x, y, **kw))
    close(g(cuda.to_device(x), cuda.to_device(y), axis=1), cpu(x, y, axis=1))
    m, mc = make("matmul"), make("matmul", "cpu")
    a, b = rng.random((3, 4, 7)), rng.random((4, 3, 5))   # m=7, n=4 at axes (2, 1); n, p at (0, 2)
    kw = {"axes": [(2, 1), (0, 2), (1, 0)]}
    got, want = m(a, b, **kw), mc(a, b, **kw)
    assert got.shape == want.shape
    close(got, want)
    out = np.zeros(want.shape)
    assert m(a, b, out=out, **kw) is out
    close(out, want)
    dout = cuda.device_array(want.shape)
    assert m(cuda.to_device(a), cuda.to_device(b), out=dout, **kw) is dout
    close(dout, want)
    d = m(cuda.to_device(a), b, **kw)
    assert isinstance(d, cuda.DeviceNDArray) and d.shape == want.shape
    close(d, want)


@needs_gpu
def test_flexible_dimensions_as_numpy():
    """'?' dimensions, as NumPy's matmul: a vector operand leaves out m or p,
    and the result leaves it out too; loop dimensions broadcast; host and
    device, new outputs and out=."""
    rng = np.random.default_rng(8)
    g, cpu = make("flexible"), make("flexible", "cpu")
    A, B, v, w = rng.random((2, 3)), rng.random((3, 4)), rng.random(3), rng.random(3)
    for a, b in ((A, B), (v, B), (A, v), (v, w), (rng.random((5, 2, 3)), v),
                 (v, rng.random((5, 3, 4)))):
        want = cpu(a, b)
        got = g(a, b)
        assert np.shape(got) == np.shape(want), (a.shape, b.shape)
        close(got, want)
        np.testing.assert_allclose(want, a @ b)
        d = g(cuda.to_device(a), cuda.to_device(b))
        assert isinstance(d, cuda.DeviceNDArray) and d.shape == np.shape(want)
        close(d, want)
        if np.ndim(want) > 0:
            out = np.zeros(np.shape(want))
            assert g(a, b, out=out) is out
            close(out, want)
            dout = cuda.device_array(np.shape(want))
            assert g(cuda.to_device(a), b, out=dout) is dout
            close(dout, want)
    # a dimension left out by one input is left out of every operand
    sizes = guvectorize(["void(f8[:,:], f8[:], f8[:])"], "(m?,n?),(n?)->()", target="cuda")(
        kernel_from_source(SHAPES))
    sizes_cpu = guvectorize(["void(f8[:,:], f8[:], f8[:])"], "(m?,n?),(n?)->()")(
        kernel_from_source(SHAPES))
    for a, b in ((np.ones((2, 3)), np.ones(3)), (np.ones(3), np.ones(3)),
                 (np.ones(()), np.ones(3)), (np.ones((2, 3)), 1.0)):
        want = sizes_cpu(a, b)
        got = sizes(a, b)
        assert np.shape(got) == np.shape(want)
        close(got, want)


@needs_gpu
def test_device_operands_of_another_dtype_are_cast():
    """Device operands reach a loop as host arrays do (safe casting in,
    same-kind casting out), through copies cast on the device; a written
    device input of another dtype gets the kernel's values back."""
    rng = np.random.default_rng(9)
    x, y = rng.random((50, 8)).astype(np.float32), rng.random((50, 8)).astype(np.float32)
    sig = ["void(f8[:], f8[:], f8[:])"]
    g = guvectorize(sig, "(n),(n)->()", target="cuda")(kernel_from_source(DOT))
    cpu = guvectorize(sig, "(n),(n)->()")(kernel_from_source(DOT))
    want = cpu(x, y)
    d = g(cuda.to_device(x), cuda.to_device(y))
    assert isinstance(d, cuda.DeviceNDArray) and d.dtype == np.float64
    close(d, want)
    i = rng.integers(0, 9, (50, 8)).astype(np.int32)
    close(g(cuda.to_device(i), y), cpu(i, y))
    out = cuda.device_array(50, dtype=np.float32)
    assert g(cuda.to_device(x), cuda.to_device(y), out=out) is out
    close(out, want.astype(np.float32))
    with pytest.raises(TypeError):
        g(cuda.to_device(x.astype(np.complex64)), cuda.to_device(y))
    a = rng.random((4, 6)).astype(np.float32)
    da = cuda.to_device(a)
    make("no_output")(da, 2.0)  # void(f8[:], f8): writes its input
    close(da, a * 2)


@needs_gpu
def test_keepdims_as_numpy():
    """keepdims=True: the reduced dimensions come back of size 1, where
    axes=/axis= put them, host and device, new outputs and out=."""
    rng = np.random.default_rng(6)
    x, y = rng.random((6, 5, 4)), rng.random((6, 5, 4))
    g, cpu = make("dot"), make("dot", "cpu")
    for kw in ({}, {"axis": 0}, {"axis": -2}, {"axes": [(1,), (1,)]},
               {"axes": [(0,), (0,), (1,)]}):
        want = cpu(x, y, keepdims=True, **kw)
        got = g(x, y, keepdims=True, **kw)
        assert got.shape == want.shape, kw
        close(got, want)
        d = g(cuda.to_device(x), cuda.to_device(y), keepdims=True, **kw)
        assert isinstance(d, cuda.DeviceNDArray) and d.shape == want.shape, kw
        close(d, want)
        out = np.zeros(want.shape)
        assert g(x, y, out=out, keepdims=True, **kw) is out
        close(out, want)
        dout = cuda.device_array(want.shape)
        assert g(cuda.to_device(x), y, out=dout, keepdims=True, **kw) is dout
        close(dout, want)
    close(g(x, y, keepdims=False), cpu(x, y))
    lo, hi = make("two_outputs")(x[0], keepdims=True)
    wlo, whi = make("two_outputs", "cpu")(x[0], keepdims=True)
    assert lo.shape == wlo.shape == (5, 1)
    close(lo, wlo)
    close(hi, whi)


@needs_gpu
def test_stream_and_foreign_arrays():
    cp = pytest.importorskip("cupy")
    g = make("dot")
    x = cp.random.rand(100, 16, dtype=cp.float32)
    y = cp.random.rand(50, 16, dtype=cp.float32)
    s = cp.cuda.Stream(non_blocking=True)
    d = g(x[:, None, :], y[None, :, :], stream=s)
    s.synchronize()
    close(d, (x.get() @ y.get().T), rtol=1e-4)


@needs_gpu
def test_index_out_of_bounds_is_index_error():
    g = guvectorize(["void(f8[:], f8[:])"], "(n)->(n)", target="cuda")(kernel_from_source(STENCIL))
    with pytest.raises(IndexError, match="index out of bounds"):
        g(np.arange(5.0))
    unchecked = guvectorize(["void(f8[:], f8[:])"], "(n)->(n)", target="cuda",
                            boundscheck=False)(kernel_from_source(STENCIL))
    got = unchecked(np.arange(5.0))
    close(got[:-1], np.ones(4))                    # the last read is past the end: unchecked


def staged_cases():
    """Host calls large enough for the pipeline (more than one chunk)."""
    rng = np.random.default_rng(17)
    x, y, w = rng.random((ROWS, 64)), rng.random((ROWS, 64)), rng.random(64)
    return [("dot", (x, y), {}), ("dot", (x, w), {}), ("dot", (w, x), {}),
            ("dot", (x.astype("f4"), y.astype("f4")), {}), ("dot", (x[::-1], y), {}),
            ("dot", (x.T, y.T), {"axes": [(0,), (0,), ()]}),
            ("dot", (x, y), {"keepdims": True}),
            ("two_outputs", (x,), {}), ("two_outputs", ((x * 100).astype("i4"),), {}),
            ("frozen", (rng.random(10**6),), {}),
            ("search", (np.linspace(0, 1, 9), rng.random(3 * 10**6)), {}),
            ("matmul", (rng.random((3 * ROWS, 4, 4)), rng.random((3 * ROWS, 4, 4))), {})]


@pytest.mark.slow
def test_the_staged_cases_are_staged():
    for kind, args, kwargs in staged_cases():
        assert make(kind)._plan(*args, **kwargs)["staged"] > 0, kind


@needs_gpu
def test_staged_host_calls_match_the_cpu():
    """Host calls large enough for the pipeline, against the cpu target and
    against the same call with staging off (whole arrays)."""
    for kind, args, kwargs in staged_cases():
        g = make(kind)
        got, want = g(*args, **kwargs), make(kind, "cpu")(*args, **kwargs)
        was = _core._cuda_staging(False)
        try:
            whole = g(*args, **kwargs)
        finally:
            _core._cuda_staging(was)
        for a, b, c in zip(*(r if isinstance(r, tuple) else (r,) for r in (got, want, whole))):
            assert isinstance(a, np.ndarray) and a.shape == b.shape and a.dtype == b.dtype
            close(a, b)
            np.testing.assert_array_equal(a, c)


@needs_gpu
def test_staged_host_calls_fill_the_outputs_given():
    rng = np.random.default_rng(18)
    x, y = rng.random((ROWS, 64)), rng.random((ROWS, 64))
    want = make("dot", "cpu")(x, y)
    g = make("dot")
    for out in (np.empty(ROWS), np.empty(ROWS, "f4"), np.empty(2 * ROWS)[::2]):
        assert g(x, y, out=out) is out
        close(out, want)
    inside = x.copy()                              # out= inside an input: a copy, then written
    g(inside, y, out=inside[:, 0])
    close(inside[:, 0], want)
    close(inside[:, 1:], x[:, 1:])
    lo, hi = np.empty(ROWS), np.empty(ROWS)
    got = make("two_outputs")(x, out=(lo, hi))
    assert got[0] is lo and got[1] is hi
    close(lo, x.min(axis=1))
    close(hi, x.max(axis=1))


@needs_gpu
def test_a_staged_call_raises_as_the_kernel_does():
    g = guvectorize(["void(f8[:], f8[:])"], "(n)->(n)", target="cuda")(kernel_from_source(STENCIL))
    x = np.ones((ROWS, 64))
    assert g._plan(x)["staged"] > 0
    with pytest.raises(IndexError, match="index out of bounds"):
        g(x)


def test_a_cuda_gufunc_in_a_cycle_is_collected():
    """The kernel's function holds its globals, which hold a module-level
    gufunc: the object traverses and clears what its kernel holds."""
    import gc

    def alive():
        return sum(type(o) is _core.CUDAGUFunc for o in gc.get_objects())

    gc.collect()
    before = alive()
    for _ in range(3):
        g = make("dot")
        g.py_func.__globals__["cycle"] = g
        del g
    gc.collect()
    assert alive() == before


@pytest.mark.skipif(GPU, reason="without a GPU a well-formed call ends at the driver")
def test_fuzzed_axes_end_in_an_error_never_a_crash():
    """Random axes=/axis=/out= for the matmul layout: each call raises a
    clear error before the driver, or reaches the driver (CudaSupportError
    here); never a crash or another exception."""
    import random

    rng = random.Random(20261124)
    g = make("matmul")
    a, b = np.ones((5, 2, 3)), np.ones((3, 4))              # m=2, n=3, p=4 in natural order
    valid = [[(1, 2), (-2, -1), (-2, -1)], [(-2, -1), (0, 1), (1, 2)], [(1, 2), (0, 1)]]
    junk = [0, 1, -1, 3, 7, -9, 2**40, None, "x", 1.5, (), (0,), (1, 0), (0, 0), (2, 1, 0),
            [0, 1], (True, False), (2, 0), (0, 2)]
    outcomes = {"reached the driver": 0, "refused": 0}
    for _ in range(400):
        kw = {}
        r = rng.random()
        if r < 0.6:
            axes = [list(e) if isinstance(e, tuple) else e for e in rng.choice(valid)]
            for _ in range(rng.randrange(0, 3)):          # break some of it
                if axes and rng.random() < 0.6:
                    axes[rng.randrange(len(axes))] = rng.choice(junk)
                else:
                    axes.append(rng.choice(junk))
            kw["axes"] = [tuple(e) if isinstance(e, list) else e for e in axes]
        elif r < 0.8:
            kw["axis"] = rng.choice(junk)
        if rng.random() < 0.3:
            kw["out"] = np.zeros(rng.choice([(5, 2, 4), (5, 4, 2), (2, 4), (5, 2, 2), ()]))
        try:
            g(a, b, **kw)
        except cuda.CudaSupportError:
            outcomes["reached the driver"] += 1
        except (TypeError, ValueError, NotImplementedError, OverflowError):
            outcomes["refused"] += 1
    # the mutations must reach both outcomes, or the fuzz tests nothing
    assert outcomes["reached the driver"] > 20 and outcomes["refused"] > 100, outcomes
