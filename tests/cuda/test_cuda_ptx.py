"""PTX generation for the cuda target, checked without a GPU.

Every kernel below goes through both back ends (libNVVM when found; LLVM's
NVPTX back end always) for sm_80 and sm_90, and the PTX is assembled by the
toolkit's ptxas.  Together the kernels use every construct of the kernel
language and every math function, on float32, float64 and complex.  Float32
kernels are checked to stay in float32 (no .f64 instruction) except for
libdevice's sinf/cosf/tanf argument reduction (see FP64_IN_F32_TRIG).

Then every builtin of the compiler's own table (math, cmath, NumPy scalar
functions, casts, abs/min/max/round ...) is called on every argument type and
assembled for both back ends and both architectures: a builtin added to the
table is covered without editing this file.
"""
import cmath
import functools
import itertools
import math
import re

import numpy as np
import pytest

import numbavec
from numbavec import cuda
from numbavec import _core
from numbavec import vectorize
from conftest import HAVE_PTXAS, assemble, kernel_from_source, ptxas_error

TOOLKIT = cuda.toolkit_info()
HAVE_NVVM = TOOLKIT["libnvvm"] is not None and TOOLKIT["nvvm_error"] is None

pytestmark = [pytest.mark.skipif(not HAVE_PTXAS or TOOLKIT["libdevice"] is None,
                                 reason="the CUDA toolkit (ptxas, libdevice) is not installed"),
              pytest.mark.slow]     # ptxas on every kernel, for two back ends and two archs

BACKENDS = ["llvm"] + (["nvvm"] if HAVE_NVVM else [])
ARCHS = ["sm_80", "sm_90"]

# libdevice's __nv_sinf/__nv_cosf/__nv_tanf reduce huge arguments
# (Payne-Hanek) with one f64 multiply: cvt.rn.f64.s64, mul.rn.f64 (libNVVM
# writes mul.f64), cvt.rn.f32.f64.  That is libdevice's own code, not ours; every other f64
# instruction in a float32 kernel is a bug.
FP64_IN_F32_TRIG = {"cvt.rn.f64.s64", "mul.rn.f64", "mul.f64", "cvt.rn.f32.f64"}


# ---- kernels ---------------------------------------------------------------

def arith(a, b):
    return a * b + a / b - a ** 2 + (a // b) + (a % b) - (-a) + (+b)


def control(x, y):
    acc = x * 0
    if x > y:
        acc = x - y
    elif x == y:
        acc = x
    else:
        acc = y - x
    i = 0
    while i < 10:
        i += 1
        if i == 3:
            continue
        if acc > 100:
            break
        acc = acc + i
    else:
        acc = acc * 2
    for k in range(0, 8, 3):
        acc += k
    else:
        acc -= 1
    for k in range(5, 0, -1):
        if k == 2:
            break
    t = (x, y)
    p, q = t
    z = p if (0 < x <= y or not q) and y != 7 else q
    return acc + z + t[1] + min(x, y, acc) + max(x, y) + abs(x - y)


def ints(a, b):
    r = a // b + a % b + (a << 3) + (a >> 2) + (a & b) + (a | b) + (a ^ b) + (~a)
    r += a ** 3 + abs(a) + min(a, b) + max(a, b)
    return r + int(a > b) + (1 if bool(a) else 0)


def casts(x, i):
    return np.float32(np.int32(x)) + np.float32(np.int64(x)) + np.float32(i) + np.float32(np.uint8(x))


def pycasts(x, i):
    # Python's float()/int()/complex() give weak values that promote to float64
    return float(i) + int(x) + complex(x, 1.0).real


def unary_np(x):
    return (np.exp(x) + np.expm1(x) + np.log(x) + np.log2(x) + np.log10(x) + np.log1p(x)
            + np.sqrt(x) + np.sin(x) + np.cos(x) + np.tan(x) + np.arcsin(x) + np.arccos(x)
            + np.arctan(x) + np.sinh(x) + np.cosh(x) + np.tanh(x) + np.arcsinh(x)
            + np.arccosh(x) + np.arctanh(x) + np.fabs(x) + np.floor(x) + np.ceil(x)
            + np.trunc(x) + np.degrees(x) + np.radians(x) + np.square(x) + np.absolute(x))


def unary_math(x):
    return (math.exp(x) + math.expm1(x) + math.log(x) + math.log2(x) + math.log10(x)
            + math.log1p(x) + math.sqrt(x) + math.sin(x) + math.cos(x) + math.tan(x)
            + math.asin(x) + math.acos(x) + math.atan(x) + math.sinh(x) + math.cosh(x)
            + math.tanh(x) + math.asinh(x) + math.acosh(x) + math.atanh(x) + math.erf(x)
            + math.erfc(x) + math.gamma(x) + math.lgamma(x) + math.fabs(x)
            + math.degrees(x) + math.radians(x) + math.floor(x) + math.ceil(x) + math.trunc(x))


def binary(x, y):
    return (np.power(x, y) + np.arctan2(x, y) + np.hypot(x, y) + np.copysign(x, y)
            + np.fmod(x, y) + np.minimum(x, y) + np.maximum(x, y) + math.pow(x, y)
            + math.atan2(x, y) + math.hypot(x, y) + math.copysign(x, y) + math.fmod(x, y))


def predicates(x):
    return np.isnan(x) or math.isinf(x) or not np.isfinite(x) or math.isnan(x)


def no_trig(x, y):
    return np.exp(x) * np.log(y) + np.sqrt(x * y) + np.minimum(x, y) - np.tanh(y) / np.float32(3)


def cplx(z, w):
    # cmath is not in the kernel language yet; ** and abs() reach exp, log,
    # atan2, sin, cos and hypot
    r = z * w + z / w - z ** 2 + abs(z) + z.conjugate() * w.real - w.imag
    return r + (z ** w) + (z != w)


def bools(a, b):
    return (a and not b) or (a != b)


CASES = [
    (arith, "float32(float32, float32)"),
    (arith, "float64(float64, float64)"),
    (arith, "int64(int64, int64)"),
    (control, "float32(float32, float32)"),
    (control, "float64(float64, float64)"),
    (control, "int32(int32, int32)"),
    (ints, "int32(int32, int32)"),
    (ints, "uint64(uint64, uint64)"),
    (ints, "int8(int8, int8)"),
    (casts, "float32(float32, int32)"),
    (casts, "float64(float64, int64)"),
    (pycasts, "float64(float64, int64)"),
    (unary_np, "float32(float32)"),
    (unary_np, "float64(float64)"),
    (unary_math, "float32(float32)"),
    (unary_math, "float64(float64)"),
    (binary, "float32(float32, float32)"),
    (binary, "float64(float64, float64)"),
    (predicates, "bool(float32)"),
    (predicates, "bool(float64)"),
    (no_trig, "float32(float32, float32)"),
    (cplx, "complex64(complex64, complex64)"),
    (cplx, "complex128(complex128, complex128)"),
    (bools, "bool(bool, bool)"),
]


def _ids(case):
    return f"{case[0].__name__}-{case[1].split('(')[0]}"


def f64_instructions(ptx):
    ops = set()
    for line in ptx.splitlines():
        line = line.strip()
        if not line or line.startswith(("//", ".reg", ".param", ".local", ".global")):
            continue
        op = line.split()[0]
        if ".f64" in op:
            ops.add(op)
    return ops


@pytest.mark.parametrize("arch", ARCHS)
@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("case", CASES, ids=_ids)
def test_ptx_assembles(case, backend, arch, tmp_path):
    func, sig = case
    ptx = cuda.compile_ptx(func, sig, arch=arch, backend=backend)
    assert ".entry nv_" + func.__name__ in ptx
    assert f".target {arch}" in ptx
    assemble(ptx, arch, tmp_path)
    if sig.startswith(("float32", "complex64")):
        ops = f64_instructions(ptx)
        uses_trig = func in (unary_np, unary_math, cplx)
        allowed = FP64_IN_F32_TRIG if uses_trig else set()
        assert ops <= allowed, f"float64 instructions in a float32 kernel: {ops - allowed}"


@pytest.mark.parametrize("backend", BACKENDS)
def test_fastmath_ptx(backend, tmp_path):
    ptx = cuda.compile_ptx(no_trig, "float32(float32, float32)", arch="sm_90",
                           backend=backend, fastmath=True)
    assemble(ptx, "sm_90", tmp_path)
    assert ".ftz" in ptx           # flush-to-zero float32 under fastmath
    assert "f64" not in "".join(f64_instructions(ptx))


def test_float32_stays_float32_without_trig():
    for backend in BACKENDS:
        ptx = cuda.compile_ptx(no_trig, "float32(float32, float32)", backend=backend)
        assert f64_instructions(ptx) == set(), backend


def test_compile_ptx_is_the_ptx_the_ufunc_runs():
    """compile_ptx builds the cuda ufunc's own grid-stride entries (it used a
    test entry of its own: the PTX it showed was not the PTX that runs)."""
    ptx = cuda.compile_ptx(arith, "float32(float32, float32)")
    for reg in ("%tid.x", "%ctaid.x", "%ntid.x", "%nctaid.x"):
        assert reg in ptx
    entries = re.findall(r"\.entry (\w+)\(", ptx)
    assert sorted(entries) == [f"nv_arith_{v}" for v in ("c32", "c64", "s32", "s64")]
    f = vectorize(["float32(float32, float32)"], target="cuda")(arith)
    runs = f.inspect_ptx("float32(float32, float32)").replace("nv_arith_0_", "nv_arith_")
    assert runs == ptx


def test_integer_division_by_zero_raises_no_flag_on_gpu():
    # the host's feraiseexcept has no GPU counterpart: nothing external is called
    for backend in BACKENDS:
        ptx = cuda.compile_ptx(ints, "int32(int32, int32)", backend=backend)
        assert "feraiseexcept" not in ptx
        assert "call" not in ptx.replace("// callseq", "")


@pytest.mark.skipif(not HAVE_NVVM, reason="libNVVM not found")
def test_nvvm_modern_dialect_sm100(tmp_path):
    ptx = cuda.compile_ptx(unary_np, "float32(float32)", arch="sm_100", backend="nvvm")
    assemble(ptx, "sm_100", tmp_path)


def test_llvm_backend_rejects_unknown_arch():
    if int(_core.llvm_version.split(".")[0]) >= 20:
        pytest.skip("LLVM 20 knows sm_100")
    with pytest.raises(cuda.CudaSupportError, match="sm_100"):
        cuda.compile_ptx(arith, "float32(float32, float32)", arch="sm_100", backend="llvm")


def test_bad_arch_and_backend():
    with pytest.raises(ValueError, match="sm_NN"):
        cuda.compile_ptx(arith, "float32(float32, float32)", arch="volta")
    with pytest.raises(ValueError, match="nvvm"):
        cuda.compile_ptx(arith, "float32(float32, float32)", backend="cuda")


def test_backend_from_environment(monkeypatch):
    monkeypatch.setenv("NUMBAVEC_CUDA_BACKEND", "llvm")
    ptx = cuda.compile_ptx(arith, "float32(float32, float32)")
    assert "Generated by LLVM NVPTX Back-End" in ptx
    if HAVE_NVVM:
        monkeypatch.setenv("NUMBAVEC_CUDA_BACKEND", "nvvm")
        ptx = cuda.compile_ptx(arith, "float32(float32, float32)")
        assert "NVVM" in ptx


def test_typing_errors_are_reported():
    def bad(x):
        return [x]

    with pytest.raises(TypeError):
        cuda.compile_ptx(bad, "float32(float32)")


def _cmath_exp(z):
    return cmath.exp(z)


def test_cmath_is_a_clear_error_on_the_gpu():
    """The host's cmath calls the C library's complex functions; a GPU has
    none, so the kernel must not compile into PTX calling `cexp`."""
    with pytest.raises(numbavec.TypingError, match="not supported on the cuda target"):
        cuda.compile_ptx(_cmath_exp, "c16(c16)", arch="sm_90", backend="llvm")


# ---- every builtin x every argument type x back end x arch -----------------
#
# The builtins come from the compiler's table (_core._test_builtins).  For each
# argument type one kernel k(x, y, i) sums, as complex128 (which keeps every
# part of every result live), every call of a builtin that the GPU accepts;
# the calls it refuses are found one by one from the TypingError's line.  When
# a kernel fails, each call is compiled and assembled alone to name the
# culprits.

MATRIX_TYPES = ["bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32",
                "uint64", "float32", "float64", "complex64", "complex128"]

# calls that the generic rule (f(x), f(x, y), f(x, y, x)) does not write
SPECIAL_FORMS = {
    "round": ["round(x)", "round(x, 2)", "round(x, -1)"],
    "cmath.polar": ["cmath.polar(x)[0]", "cmath.polar(x)[1]"],  # a tuple
    "math.ldexp": ["math.ldexp(x, i)", "math.ldexp(x, y)"],     # i: int32
    "numpy.ldexp": ["np.ldexp(x, i)", "np.ldexp(x, y)"],
}

# Refused on the GPU for every argument type: the host calls the C library's
# complex functions for them, and a GPU has none (a clear TypingError).
GPU_REFUSED = {"cmath." + f for f in ("exp log sqrt sin cos tan asin acos atan "
                                      "sinh cosh tanh asinh acosh atanh").split()}


def builtin_forms(name, min_args, max_args):
    """The calls of builtin `name` that a matrix kernel k(x, y, i) makes."""
    if name in SPECIAL_FORMS:
        return SPECIAL_FORMS[name]
    if name.startswith("."):  # .real, .imag, .conjugate()
        return ["x.conjugate()" if name == ".conjugate" else "x" + name]
    module, _, attr = name.rpartition(".")
    short = {"numpy": "np", "numpy.random": "np.random"}.get(module, module)
    func = f"{short}.{attr}" if module else attr
    return [f"{func}({', '.join('xyx'[:n])})" for n in range(min_args, min(max_args, 3) + 1)]


BUILTINS = _core._test_builtins()
# np.random's functions draw from a host generator, one per thread: refused on
# the cuda target for every argument type too
GPU_REFUSED |= {name for name, _, _ in BUILTINS if name.startswith("numpy.random.")}
FORMS = {form: name for name, lo, hi in BUILTINS for form in builtin_forms(name, lo, hi)}
FIRST_FORM_LINE = 6  # of matrix_kernel's source


def matrix_kernel(forms, wrap="np.complex128"):
    lines = ["import cmath", "import math", "import numpy as np", "def k(x, y, i):",
             f"    r = {wrap}(0)"]
    lines += [f"    r += {wrap}({form})" for form in forms]
    return kernel_from_source("\n".join(lines + ["    return r"]) + "\n")


def matrix_sig(t):
    return f"({t}, {t}, int32)"


@functools.cache
def gpu_forms(t):
    """(the calls the GPU compiles for argument type t, {refused call: message})."""
    forms, refused = list(FORMS), {}
    while True:
        try:
            cuda.compile_ptx(matrix_kernel(forms), matrix_sig(t), backend=BACKENDS[-1])
            return tuple(forms), refused
        except numbavec.TypingError as e:
            where = re.search(r":(\d+):\d+: (.*)", str(e).splitlines()[0])
            form = forms[int(where[1]) - FIRST_FORM_LINE]
            refused[form] = where[2]
            forms.remove(form)


def compile_error(forms, t, backend, arch, fastmath, tmp_path):
    """None when the kernel of forms compiles and assembles, else why not."""
    try:
        ptx = cuda.compile_ptx(matrix_kernel(forms), matrix_sig(t), arch=arch, backend=backend,
                               fastmath=fastmath)
    except Exception as e:  # reported with the culprits below
        return f"{type(e).__name__}: {e}"
    return ptxas_error(ptx, arch, tmp_path)


def check_matrix(t, backend, arch, tmp_path, fastmath=False):
    forms, _ = gpu_forms(t)
    assert len(forms) > 20
    error = compile_error(forms, t, backend, arch, fastmath, tmp_path)
    if error is not None:
        bad = [f"{form}: {why.strip().splitlines()[0]}" for form in forms
               if (why := compile_error([form], t, backend, arch, fastmath, tmp_path))]
        pytest.fail(f"{backend} {arch}: {len(bad)} of {len(forms)} calls on {t} fail:\n"
                    + "\n".join(bad or [error]))


@pytest.mark.parametrize("arch", ARCHS)
@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("t", MATRIX_TYPES)
def test_every_builtin_assembles(t, backend, arch, tmp_path):
    check_matrix(t, backend, arch, tmp_path)


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("t", ["float32", "float64"])
def test_every_builtin_assembles_fastmath(t, backend, tmp_path):
    check_matrix(t, backend, "sm_90", tmp_path, fastmath=True)


@pytest.mark.parametrize("backend", BACKENDS)
def test_every_builtin_on_float32_stays_float32(backend):
    forms, _ = gpu_forms("float32")
    ptx = cuda.compile_ptx(matrix_kernel(forms, wrap="np.float32"), matrix_sig("float32"),
                           backend=backend)
    ops = f64_instructions(ptx) - FP64_IN_F32_TRIG
    assert not ops, f"float64 instructions in a float32 kernel: {ops}"


def test_every_builtin_is_offered_on_the_gpu():
    offered = {FORMS[form] for t in MATRIX_TYPES for form in gpu_forms(t)[0]}
    assert {name for name, _, _ in BUILTINS} - offered == GPU_REFUSED


@pytest.mark.parametrize("t", MATRIX_TYPES)
def test_gpu_refusals_are_typing_errors_at_decoration(t):
    """What the GPU refuses is complex math it lacks, refused when the cuda
    ufunc is decorated, or a typing rule the host applies the same way."""
    _, refused = gpu_forms(t)
    for form, message in refused.items():
        k = matrix_kernel([form])
        if "on the cuda target" in message:
            assert FORMS[form] in GPU_REFUSED or t.startswith("complex"), (form, message)
            target = "cuda"
        else:
            target = "cpu"
        with pytest.raises(numbavec.TypingError) as info:
            vectorize([f"complex128{matrix_sig(t)}"], target=target)(k)
        assert message in str(info.value), (form, target)


@pytest.mark.parametrize("call", ["pow(x, y)", "np.rint(x)", "np.spacing(x)",
                                  "np.nextafter(x, y)", "math.frexp(x)"])
def test_functions_outside_the_language_are_typing_errors_on_the_gpu(call):
    if call in FORMS:
        pytest.skip("a builtin now: test_every_builtin_assembles covers it")
    with pytest.raises(numbavec.TypingError, match="cannot be called in a kernel"):
        vectorize([f"complex128{matrix_sig('float64')}"], target="cuda")(matrix_kernel([call]))


# ---- failures after typing name the kernel ---------------------------------

def named_kernel(x):
    return x + 1


@pytest.mark.skipif(not HAVE_NVVM, reason="libNVVM not found")
def test_libnvvm_failure_names_the_kernel():
    # libNVVM 2.0 no longer compiles for compute_60
    with pytest.raises(cuda.CudaError) as info:
        cuda.compile_ptx(named_kernel, "float32(float32)", arch="sm_60", backend="nvvm")
    text = str(info.value)
    assert text.startswith("cuda kernel 'named_kernel' (")
    assert "test_cuda_ptx.py:" in text and "for float32(float32): libNVVM" in text
    # through a cuda ufunc, which compiles at decoration
    from numbavec._source import KernelSource
    src = KernelSource(named_kernel)
    with pytest.raises(cuda.CudaError, match=r"^cuda kernel 'named_kernel' .* libNVVM"):
        _core.vectorize(named_kernel, src.funcdef, src.location, ["f4(f4)"], target="cuda",
                        nin=1, name="named_kernel", arch="sm_60", backend="nvvm")


def test_nvptx_refusal_names_the_kernel():
    with pytest.raises(cuda.CudaSupportError,
                       match=r"^cuda kernel 'named_kernel' \(.*\) for float64\(float64\): LLVM"):
        cuda.compile_ptx(named_kernel, "float64(float64)", arch="sm_999", backend="llvm")


INT_TYPES = ["bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64"]


def int_compares(x, y):
    return (x < y) + (x <= y) + (x > y) + (x >= y) + (x == y) + (x != y)


@pytest.mark.parametrize("backend", BACKENDS)
def test_mixed_integer_comparisons(backend, tmp_path):
    """Every pair of integer types compares on the GPU (signed integers
    against uint64 emitted an invalid ICmp, a CudaError here)."""
    for a, b in itertools.product(INT_TYPES, INT_TYPES):
        ptx = cuda.compile_ptx(int_compares, f"({a}, {b})", backend=backend)
        assemble(ptx, "sm_90", tmp_path)


def test_ptx_calling_outside_itself_is_an_error():
    """The net under the GPU math: PTX left with an `.extern .func` (what
    round(x) and ldexp made before libdevice_renamed) is refused at
    compilation, naming the function, instead of failing to load on a GPU."""
    ptx = cuda.compile_ptx(named_kernel, "float32(float32)", backend="llvm")
    assert _core._test_check_ptx(ptx) is None
    declare = ("\n.extern .func  (.param .b32 func_retval0) __nv_roundevenf\n"
               "(\n\t.param .b32 __nv_roundevenf_param_0\n)\n;\n")
    with pytest.raises(cuda.CudaError, match="calls __nv_roundevenf, which neither libdevice"):
        _core._test_check_ptx(ptx.replace("\n.visible .entry", declare + ".visible .entry", 1))
    with pytest.raises(cuda.CudaError, match="calls ldexpf,"):
        _core._test_check_ptx(".extern .func ldexpf\n(\n);\n")
