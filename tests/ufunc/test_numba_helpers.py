"""Helpers as Numba users write them (issue 36): ``numbavec.jit``/``njit`` in
every form Numba's ``jit`` takes, with its options and signature lists; a
call of a helper with signatures takes the one Numba's dispatcher would;
helpers left on Numba's own ``numba.njit``/``numba.vectorize``, called from
numbavec kernels, compile from their Python functions (and are keyed and
pickled by value like numbavec's own); a Numba jitclass is refused by name;
an unsupported construct in a helper inlined at several call sites is
reported once.  Every kernel is checked against its ``py_func``."""
import math
import os
import pickle
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import numbavec
from numbavec import guvectorize, jit, njit, vectorize

from conftest import NUMBAVEC_ROOT as ROOT
from conftest import kernel_from_source

X = np.linspace(-2.0, 3.0, 41)


def check_against_py_func(kernel, *args, rtol=1e-12):
    got = kernel(*args)
    expected = np.array([kernel.py_func(*vals) for vals in zip(*args)])
    np.testing.assert_allclose(got, expected, rtol=rtol)
    return got


# -- numbavec.jit / njit in Numba's forms ---------------------------------------

FORMS = {
    "bare": lambda f: jit(f),
    "called": lambda f: jit()(f),
    "options": lambda f: jit(nogil=True, cache=True, fastmath=True)(f),
    "one signature": lambda f: jit("f8(f8)")(f),
    "signature list": lambda f: jit(["f8(f8)", "f4(f4)"], nogil=True, cache=True,
                                    fastmath=True, error_model="numpy", inline="always",
                                    boundscheck=True, looplift=False, parallel=False,
                                    locals={}, no_rewrites=True, debug=False)(f),
    "Signature objects": lambda f: jit([numbavec.float64(numbavec.float64)])(f),
    "argument tuple": lambda f: jit(("float64",))(f),
    "njit bare": lambda f: njit(f),
    "njit options": lambda f: njit(cache=True, nogil=True, error_model="python")(f),
    "njit signatures": lambda f: njit(["float64(float64)"], fastmath={"nnan", "ninf"})(f),
}


def softplus(x):
    if x > 20.0:
        return x
    return math.log1p(math.exp(x))


@pytest.mark.parametrize("form", sorted(FORMS))
def test_every_form_of_jit_makes_a_helper(form, target):
    helper = FORMS[form](softplus)
    assert isinstance(helper, numbavec.DeviceFunction)

    @vectorize(["float64(float64)"], target=target)
    def kernel(x):
        return helper(x) - helper(-x)

    np.testing.assert_allclose(check_against_py_func(kernel, X), X, atol=1e-12)


def test_njit_is_jit_under_numba_s_other_name():
    assert numbavec.njit is njit and "njit" in numbavec.__all__
    assert isinstance(njit(softplus), numbavec.DeviceFunction)


def test_an_unknown_option_is_numba_s_key_error():
    with pytest.raises(KeyError, match=r"Unrecognized options: \{'nogill'\}. Known options"):
        jit(nogill=True)
    with pytest.raises(KeyError, match="Unrecognized options"):
        njit(["f8(f8)"], fast_math=True)


def test_option_values_are_checked_as_numba_checks_them():
    with pytest.raises(ValueError, match="error_model"):
        jit(error_model="c")
    with pytest.raises(ValueError, match="inline"):
        jit(inline="sometimes")
    with pytest.warns(RuntimeWarning, match="forceobj is set for njit and is ignored"):
        njit(forceobj=True)(softplus)


def test_a_signature_of_the_wrong_arity_is_refused_at_decoration():
    with pytest.raises(TypeError, match=r"has 2 argument\(s\); softplus\(\) takes 1"):
        jit("f8(f8, f8)")(softplus)


def test_signatures_with_types_numbavec_cannot_write_leave_the_helper_unsigned(target):
    # a tuple result (Numba's UniTuple): the helper is typed per call site
    polar = jit("UniTuple(f8, 2)(f8, f8)", nogil=True)(
        lambda r, t: (r * math.cos(t), r * math.sin(t)))

    @vectorize(["float64(float64, float64)"], target=target)
    def kernel(r, t):
        x, y = polar(r, t)
        return x + y

    check_against_py_func(kernel, X, X * 0.5)
    assert polar.signatures == []


def test_a_misspelt_signature_is_refused_at_decoration():
    with pytest.raises(ValueError, match="unknown type 'f9'"):
        jit("f9(f8)")(softplus)


def test_the_helper_keeps_its_signatures_and_options():
    helper = jit(["f8(f8)", "f4(f4)"], nogil=True)(softplus)
    assert [str(s) for s in helper.signatures] == ["float64(float64)", "float32(float32)"]
    assert helper.targetoptions == {"nogil": True}
    assert jit(softplus).signatures == []


# -- the dispatcher's choice -------------------------------------------------------

@jit("f8(f8)")
def square(x):
    return x * x


@jit(["f8(f8)", "f4(f4)"])
def tenth(x):
    return x * 0.1


def test_an_int_argument_is_converted_to_the_float_signature(target):
    # int64 arithmetic would wrap (2**40 squared); the helper computes in float64
    @vectorize(["float64(int64)"], target=target)
    def kernel(n):
        return square(n)

    n = np.array([3, 2**40, -(2**35)], dtype=np.int64)
    got = check_against_py_func(kernel, n)
    assert got[1] == 2.0**80


def test_float32_arguments_pick_the_float32_signature(target):
    @vectorize(["float64(float32)"], target=target)
    def kernel(x):
        return tenth(x)

    x = np.linspace(0.1, 7.0, 50).astype(np.float32)
    got = check_against_py_func(kernel, x, rtol=0)
    # float32's product, widened: not the float64 one
    np.testing.assert_array_equal(got, (x * np.float32(0.1)).astype(np.float64))
    assert np.any(got != x.astype(np.float64) * 0.1)


def test_the_result_has_the_signature_s_type(target):
    narrow = jit("f4(f8)")(lambda x: x / 3.0)

    @vectorize(["float64(float64)"], target=target)
    def kernel(x):
        return narrow(x)

    got = check_against_py_func(kernel, X, rtol=0)
    np.testing.assert_array_equal(got, (X / 3.0).astype(np.float32).astype(np.float64))


def test_the_fewest_unsafe_conversions_win_then_the_first():
    # uint64 reaches float64 safely, int64 only unsafely (Numba's rules)
    pick = jit(["i8(i8)", "f8(f8)"])(lambda x: x + 1)

    @vectorize(["float64(uint64)", "float64(int32)"])
    def kernel(x):
        return pick(x) / 2

    assert kernel(np.array([3], np.uint64))[0] == 2.0       # float64: 4.0 / 2
    assert kernel(np.array([3], np.int32))[0] == 2.0        # int64: 4 / 2
    assert kernel.py_func(np.uint64(3)) == 2.0


def test_no_signature_fitting_is_a_typing_error_naming_them():
    with pytest.raises(numbavec.TypingError,
                       match=r"no signature of tenth\(\) takes \(complex128\): its signatures "
                             r"are float64\(float64\), float32\(float32\)") as info:
        @vectorize(["complex128(complex128)"])
        def kernel(z):
            return tenth(z)
    assert "return tenth(z)" in str(info.value)

    with pytest.raises(numbavec.TypingError, match=r"takes \(float64\[:\]\)"):
        @guvectorize(["void(float64[:], float64[:])"], "(n)->()")
        def rows(a, out):
            out[0] = tenth(a)


def test_called_from_python_a_signed_helper_converts_as_numba_does():
    assert isinstance(tenth(np.float32(2)), np.float32)
    assert isinstance(tenth(2), np.float64) and tenth(2) == pytest.approx(0.2)
    assert square(2**40) == 2.0**80
    with pytest.raises(TypeError, match=r"No matching definition.*float64\(float64\), "
                                        r"float32\(float32\)"):
        tenth(1j)


def test_array_signatures_take_arrays_of_their_dtype(target):
    @jit(["f8(f8[:])", "f4(f4[:])"], nogil=True)
    def mean_abs(a):
        s = 0.0
        for v in a:
            s += abs(v)
        return s / a.shape[0]

    @guvectorize(["void(float64[:], float64[:])", "void(float32[:], float32[:])"], "(n)->()",
                 target=target)
    def kernel(a, out):
        out[0] = mean_abs(a)

    a = np.linspace(-1, 1, 24).reshape(3, 8)
    np.testing.assert_allclose(kernel(a), np.abs(a).mean(axis=1))
    np.testing.assert_allclose(kernel(a.astype(np.float32)), np.abs(a).mean(axis=1), rtol=1e-6)


def test_a_helper_signature_may_return_an_array(target):
    """numba-stats' and xsdba's `@njit([float64[:](float64[:])])`: a helper
    returning an array, its signature written with the types or as text."""
    @njit([numbavec.float64[:](numbavec.float64[:]), "f4[:](f4[:])"])
    def doubled(x):
        return x * 2

    @jit(["float64[:, :](float64[:, :], float64)", "f4[:, :](f4[:, :], f4)"])
    def shifted(m, c):
        return m + c

    @guvectorize(["void(float64[:], float64[:, :], float64[:], float64[:, :])",
                  "void(float32[:], float32[:, :], float32[:], float32[:, :])"],
                 "(n),(n,n)->(n),(n,n)", target=target)
    def kernel(x, m, y, z):
        y[:] = doubled(x)
        z[:, :] = shifted(m * 1.0, 0.5)

    x, m = np.arange(6.0).reshape(2, 3), np.arange(18.0).reshape(2, 3, 3)
    y, z = kernel(x, m)
    np.testing.assert_array_equal(y, x * 2)
    np.testing.assert_array_equal(z, m + 0.5)
    y32, _ = kernel(x.astype(np.float32), m.astype(np.float32))
    assert y32.dtype == np.float32
    np.testing.assert_array_equal(y32, x * 2)


@njit("void(f8[:], f8)", nogil=True)
def fill(a, v):
    for i in range(a.shape[0]):
        a[i] = v


@jit(["f8(f8, f8)", "f4(f4, f4)"])
def scaled(x, s=2.0):
    return x * s


def test_signed_helpers_take_keywords_defaults_and_return_nothing(target):
    @guvectorize(["void(float64[:], float64, float64[:])"], "(n),()->(n)", target=target)
    def kernel(a, v, out):
        fill(out, v)
        for i in range(a.shape[0]):
            out[i] += scaled(a[i]) + scaled(s=3, x=a[i])

    a = np.linspace(-1, 1, 12).reshape(2, 6)
    v = np.array([0.5, -1.0])
    expected = np.zeros_like(a)
    for row in range(2):
        kernel.py_func(a[row], v[row], expected[row])
    np.testing.assert_allclose(kernel(a, v), expected, rtol=1e-15)
    np.testing.assert_allclose(expected, v[:, None] + 5 * a)


# -- one error per construct ----------------------------------------------------------

def test_an_unsupported_construct_in_a_helper_is_reported_once():
    helper = jit(kernel_from_source(
        "def helper(x):\n    return {1: x}[1]\n", "helper"))
    kernel = kernel_from_source(
        "def kernel(x):\n    a = helper(x)\n    b = helper(x + 1)\n    c = helper(a * b)\n"
        "    return a + b + c\n", "kernel", {"helper": helper})
    with pytest.raises(numbavec.TypingError) as info:
        vectorize(["float64(float64)"])(kernel)
    assert str(info.value).count("dict displays are not supported") == 1


def test_a_typing_error_in_a_helper_is_reported_once_per_construct():
    helper = jit(kernel_from_source(
        "def helper(x):\n    return len(x) + x\n", "helper"))
    kernel = kernel_from_source(
        "def kernel(x):\n    a = helper(x)\n    b = helper(x)\n    return a + b\n",
        "kernel", {"helper": helper})
    with pytest.raises(numbavec.TypingError) as info:
        vectorize(["float64(float64)"])(kernel)
    assert str(info.value).count("float64 is not an array") == 1


# -- helpers left on Numba's decorators ---------------------------------------------

try:
    import numba
except ImportError:         # the tests below need it (not every Python has it)
    numba = None

needs_numba = pytest.mark.skipif(numba is None, reason="Numba is not installed")
_njit = numba.njit if numba is not None else lambda *a, **k: (lambda f: f)
_vectorize = numba.vectorize if numba is not None else lambda *a, **k: (lambda f: f)


@_njit(cache=False)
def nb_gauss(x, mu, sigma):
    z = (x - mu) / sigma
    return math.exp(-0.5 * z * z) / (sigma * math.sqrt(2 * math.pi))


@_njit(["f8(f8, f8)", "f4(f4, f4)"], nogil=True, fastmath=True)
def nb_hypot(x, y):
    return math.sqrt(x * x + y * y)


@_njit("f8(f8)")
def nb_square(x):
    return x * x


@_njit
def nb_mixed(x):
    return nb_gauss(x, 0.5, 2.0) + nb_hypot(x, 1.0)        # Numba helpers calling Numba helpers


@_njit(["f8(f8[:])"])
def nb_crps_ensemble(fc):
    n = fc.shape[0]
    s = 0.0
    for i in range(n):
        for j in range(n):
            s += abs(fc[i] - fc[j])
    return s / (2.0 * n * n)


@_vectorize(["f8(f8)", "f4(f4)"])
def nb_logistic(x):
    return 1.0 / (1.0 + math.exp(-x))


@_vectorize()
def nb_lazy_ufunc(x, y):
    return x * y + 1.0


@_njit(parallel=True, nogil=True, cache=False)
def nb_row_energy(a):
    s = 0.0
    for i in numba.prange(a.shape[0]):
        for j in range(a.shape[0]):
            s += abs(a[i] - a[j])
    return s


@_njit([numba.float64[:](numba.float64[:])] if numba is not None else [])
def nb_cumulative(x):
    out = np.empty_like(x)
    s = 0.0
    for i in range(x.shape[0]):
        s += x[i]
        out[i] = s
    return out


@needs_numba
def test_a_numba_helper_returning_an_array(target):
    @guvectorize(["void(float64[:], float64[:])"], "(n)->(n)", target=target)
    def kernel(x, out):
        out[:] = nb_cumulative(x)

    x = np.linspace(-1, 2, 12).reshape(3, 4)
    np.testing.assert_array_equal(kernel(x), np.cumsum(x, axis=1))


@needs_numba
def test_a_parallel_numba_helper_s_prange_runs_as_range(target):
    @guvectorize(["void(float64[:], float64[:])"], "(n)->()", target=target)
    def energy(a, out):
        out[0] = nb_row_energy(a) / (a.shape[0] * a.shape[0])

    a = np.random.default_rng(2).normal(size=(5, 7))
    expected = [nb_row_energy(row) / 49 for row in a]
    np.testing.assert_allclose(energy(a), expected, rtol=1e-12)


@needs_numba
def test_numba_njit_helpers_in_a_vectorize_kernel(target):
    @vectorize(["float64(float64, float64)"], target=target)
    def kernel(x, y):
        return nb_gauss(x, y, 1.5) + nb_hypot(x, y) + nb_mixed(y) + nb_square(x)

    check_against_py_func(kernel, X, X[::-1])


@needs_numba
def test_numba_njit_signatures_pick_as_numba_does(target):
    @vectorize(["float64(float32, float32)", "float64(int64, int64)"], target=target)
    def kernel(x, y):
        return nb_hypot(x, y)

    x = np.linspace(0.5, 3.0, 11).astype(np.float32)
    got = check_against_py_func(kernel, x, x, rtol=0)
    np.testing.assert_array_equal(got, np.sqrt(x * x + x * x).astype(np.float64))
    n = np.arange(5, dtype=np.int64)
    np.testing.assert_allclose(kernel(n, n), np.sqrt(2.0) * n)   # int64 -> float64, safe


@needs_numba
def test_numba_njit_helpers_in_a_guvectorize_kernel(target):
    @guvectorize(["void(float64[:], float64, float64[:])"], "(n),()->()", target=target)
    def crps(fc, obs, out):
        s = 0.0
        for v in fc:
            s += abs(v - obs)
        out[0] = s / fc.shape[0] - nb_crps_ensemble(fc) + nb_square(0.0)

    fc = np.random.default_rng(1).normal(size=(6, 9))
    obs = np.linspace(-1, 1, 6)
    expected = np.empty(6)
    for i in range(6):
        out = np.zeros(1)
        crps.py_func(fc[i], obs[i], out)
        expected[i] = out[0]
    np.testing.assert_allclose(crps(fc, obs), expected, rtol=1e-12)


@needs_numba
def test_numba_vectorize_ufuncs_are_inlined(target):
    @vectorize(["float32(float32)", "float64(float64)"], target=target)
    def kernel(x):
        return nb_logistic(x) * 2 - nb_lazy_ufunc(x, x)

    check_against_py_func(kernel, X)
    x32 = X.astype(np.float32)
    np.testing.assert_allclose(kernel(x32), [kernel.py_func(v) for v in x32], rtol=1e-6)
    assert kernel(x32).dtype == np.float32


@needs_numba
def test_vectorize_of_a_numba_dispatcher_compiles_its_function(target):
    kernel = vectorize(["float64(float64)", "float32(float32)"], target=target)(nb_square)
    check_against_py_func(kernel, X)
    assert kernel(X.astype(np.float32)).dtype == np.float32


@needs_numba
def test_a_numba_helper_with_no_fitting_signature_names_them():
    with pytest.raises(numbavec.TypingError,
                       match=r"no signature of nb_square\(\) takes \(complex128\): its "
                             r"signatures are float64\(float64\)"):
        @vectorize(["complex128(complex128)"])
        def kernel(z):
            return nb_square(z)


@needs_numba
def test_a_jitclass_is_refused_by_name():
    from numba.experimental import jitclass

    @jitclass([("scale", numba.float64)])
    class Scaler:
        def __init__(self, scale):
            self.scale = scale

    scaler = Scaler(2.0)
    for text in ("def k(x):\n    return Scaler(x).scale\n",
                 "def k(x):\n    return scaler.scale * x\n"):
        kernel = kernel_from_source(text, "k", {"Scaler": Scaler, "scaler": scaler})
        with pytest.raises(numbavec.TypingError,
                           match=r"(Scaler|an instance of Scaler) is a Numba jitclass: "
                                 r"jitclasses are not supported in numbavec kernels"):
            vectorize(["float64(float64)"])(kernel)


@needs_numba
def test_a_numba_ufunc_without_its_function_is_refused_by_name():
    # Numba's parallel vectorize makes a plain numpy.ufunc: nothing to compile from
    @numba.vectorize(["f8(f8)"], target="parallel")
    def opaque(x):
        return x + 1

    kernel = kernel_from_source("def k(x):\n    return opaque(x) * 2\n", "k",
                                {"opaque": opaque, "np": np})
    with pytest.raises(numbavec.TypingError,
                       match="opaque is a ufunc that carries no Python function to compile"):
        vectorize(["float64(float64)"])(kernel)
    fine = kernel_from_source("def k(x):\n    return np.add(x, 1) + np.sqrt(x)\n", "k",
                              {"np": np})
    check_against_py_func(vectorize(["float64(float64)"])(fine), np.abs(X))


# -- the cache key and pickling cover Numba's helpers ----------------------------------

CACHED = '''
import math
import numba
import numbavec

@numba.njit({sigs!r}, nogil=True)
def helper(x):
    return {helper}

@numbavec.vectorize(["float64(float64)"], cache=True)
def kern(x):
    return helper(x) + 1.0
'''

RUN_CACHED = '''
import json, sys
import numpy as np
sys.path.insert(0, {moddir!r})
import cmod
from numbavec import _core
x = np.linspace(0, 1, 5)
result = cmod.kern(x).tolist()
print(json.dumps({{"result": result, "object_loads": _core._jit_info()["object_loads"]}}))
'''


def run_cached(moddir, cachedir):
    env = dict(os.environ, NUMBAVEC_CACHE_DIR=str(cachedir), PYTHONDONTWRITEBYTECODE="1",
               NUMBA_CACHE_DIR=str(cachedir / "numba"),
               PYTHONPATH=str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    out = subprocess.run([sys.executable, "-c", RUN_CACHED.format(moddir=str(moddir))],
                         env=env, cwd=str(moddir), capture_output=True, text=True, timeout=240)
    assert out.returncode == 0, out.stderr[-3000:]
    import json
    return json.loads(out.stdout.strip().splitlines()[-1])


@needs_numba
def test_a_changed_numba_helper_is_a_new_cache_key(tmp_path):
    moddir, cachedir = tmp_path / "mod", tmp_path / "cache"
    moddir.mkdir()
    x = np.linspace(0, 1, 5)
    write = lambda **kw: (moddir / "cmod.py").write_text(CACHED.format(**kw))  # noqa: E731
    write(sigs="f8(f8)", helper="x * 2.0")
    first = run_cached(moddir, cachedir)
    np.testing.assert_allclose(first["result"], x * 2.0 + 1.0)
    assert run_cached(moddir, cachedir)["object_loads"] == 1      # warm: loaded
    write(sigs="f8(f8)", helper="x * 3.0")                          # the helper's body
    changed = run_cached(moddir, cachedir)
    assert changed["object_loads"] == 0
    np.testing.assert_allclose(changed["result"], x * 3.0 + 1.0)
    write(sigs="f4(f4)", helper="x * 3.0")                          # its signatures
    narrowed = run_cached(moddir, cachedir)
    assert narrowed["object_loads"] == 0
    np.testing.assert_allclose(narrowed["result"],
                               (x.astype(np.float32) * 3.0).astype(np.float64) + 1.0)


def make_by_value(target):
    """A kernel local to this function (so it pickles by value) calling
    Numba's helpers, one of them local too."""
    @numba.njit(["f8(f8)", "f4(f4)"], cache=False)
    def local_helper(x):
        return x * 0.5 + 1.0

    @vectorize(["float64(float64)", "float32(float32)"], target=target)
    def kernel(x):
        return local_helper(x) + nb_square(x) + nb_logistic(x)

    return kernel


@needs_numba
def test_a_kernel_calling_numba_helpers_pickles_by_value(target):
    kernel = make_by_value(target)
    blob = pickle.dumps(kernel)
    x = np.linspace(-1, 1, 7)
    code = textwrap.dedent(f'''
        import pickle, sys
        import numpy as np
        kernel = pickle.loads(sys.stdin.buffer.read())
        x = np.linspace(-1, 1, 7)
        sys.stdout.buffer.write(pickle.dumps((kernel(x), kernel(x.astype(np.float32)),
                                              "numba" in sys.modules)))
        ''')
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    out = subprocess.run([sys.executable, "-c", code], input=blob, env=env,
                         capture_output=True, timeout=240)
    assert out.returncode == 0, out.stderr.decode()[-3000:]
    got64, got32, numba_imported = pickle.loads(out.stdout)
    np.testing.assert_allclose(got64, kernel(x), rtol=1e-15)
    np.testing.assert_allclose(got32, kernel(x.astype(np.float32)), rtol=1e-6)
    assert got32.dtype == np.float32
    assert not numba_imported       # the receiver compiles the helpers' Python functions


# -- functions given to helpers as arguments ----------------------------------------

@jit
def trapezoid_of(f, a, b, n):
    """A helper that takes the function it integrates, as Numba-written
    numerical code does (neutralocean's ppinterp(_pchip_coeffs, ...))."""
    h = (b - a) / n
    s = 0.5 * (f(a) + f(b))
    for i in range(1, n):
        s += f(a + i * h)
    return s * h


@jit
def squared(x):
    return x * x


@jit
def twice(g, x):
    return g(g(x))


@jit
def passed_on(f, x):
    return twice(f, x) + trapezoid_of(f, 0.0, x, 8)


def integrals(b):
    def line(t):
        return 2.0 * t + b

    return (trapezoid_of(squared, 0.0, b, 100) + trapezoid_of(line, 0.0, 1.0, 4)
            + twice(squared, b) + passed_on(squared, b) + passed_on(line, b)
            + trapezoid_of(f=squared, a=0.0, b=b, n=4) + twice(x=b, g=line))


def test_functions_given_to_helpers_are_inlined_where_called(target):
    u = vectorize(["float64(float64)"], target=target)(integrals)
    check_against_py_func(u, X)


def test_a_numba_function_given_to_a_helper():
    numba = pytest.importorskip("numba")

    @numba.njit
    def cubed(x):
        return x ** 3

    @vectorize(["float64(float64)"])
    def integral(b):
        return trapezoid_of(cubed, 0.0, b, 10)

    check_against_py_func(integral, X)


@jit
def kept(f, x):
    g = f
    return g(x)


def test_a_function_argument_used_as_a_value_names_the_limit():
    with pytest.raises(numbavec.TypingError,
                       match="'f' was given a function: a kernel calls it"):
        vectorize(["float64(float64)"])(lambda b: kept(squared, b))
