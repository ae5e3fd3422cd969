"""np.random's functions in kernels (seed, random, uniform, normal, randn,
randint ...): NumPy's legacy RandomState algorithms, so that a kernel that
seeds and then draws gives exactly what its py_func gives under the
interpreter after the same np.random.seed; one generator per thread
(parallel's workers each their own, seeded from the OS unless the kernel
seeds), separate from NumPy's global one; a forked child draws a stream of
its own.  Statistical checks use fixed seeds, so they cannot flake."""
import os
import threading

import numpy as np
import pytest

import numbavec
from conftest import kernel_from_source, run_python
from numbavec import TypingError, _core, guvectorize, vectorize

QUICK_WORK = 65536  # elements a cpu signature's quick code runs (target.h: TG_QUICK_WORK)


def seeded_py(f, xs):
    """f's py_func on each element, as the interpreter runs it (each kernel
    below seeds NumPy's global generator itself)."""
    return np.array([f.py_func(x) for x in xs])


# Each body seeds from its argument, then draws; py_func must give the same bits.
BODIES = {
    "random": "np.random.seed(i)\n    return np.random.random()",
    "random_sample": "np.random.seed(i)\n    return np.random.random_sample()",
    "rand": "np.random.seed(i)\n    return np.random.rand()",
    "sample": "np.random.seed(i)\n    return np.random.sample(size=None)",
    "uniform_defaults": "np.random.seed(i)\n    return np.random.uniform()",
    "uniform": "np.random.seed(i)\n    return np.random.uniform(-3, 7.5)",
    "uniform_keywords": "np.random.seed(i)\n    return np.random.uniform(high=-2.0, low=4)",
    "normal_defaults": "np.random.seed(i)\n    return np.random.normal()",
    "normal": "np.random.seed(i)\n    return np.random.normal(2.5, scale=0.5)",
    "randn_pair": ("np.random.seed(i)\n    a = np.random.randn()\n"
                   "    return a * 10 + np.random.randn()"),
    "standard_normal": "np.random.seed(i)\n    return np.random.standard_normal()",
    "randint_high": "np.random.seed(i)\n    return float(np.random.randint(10))",
    "randint": "np.random.seed(i)\n    return float(np.random.randint(-5, 6))",
    "randint_32bit": "np.random.seed(i)\n    return float(np.random.randint(0, 2**32))",
    "randint_64bit": "np.random.seed(i)\n    return float(np.random.randint(-2**40, 2**40 + 3))",
    "randint_full": ("np.random.seed(i)\n    return float(np.random.randint(-2**63, 2**63 - 1)"
                     " // 2**20)"),
    "randint_one": "np.random.seed(i)\n    return float(np.random.randint(7, 8))",
    # widths known only at run time, across the 32-bit limit, and of one value (no draw)
    "randint_runtime": ("np.random.seed(i)\n    w = 1 << (i % 63)\n"
                        "    a = np.random.randint(-w, w)\n    b = np.random.randint(i, i + 1)\n"
                        "    return float(a // 1024) + float(b - i) + np.random.random()"),
    # the gauss kept by the polar method, then other draws, then seed forgets it
    "mixed": ("np.random.seed(i)\n    a = np.random.normal()\n    b = np.random.random()\n"
              "    c = np.random.normal()\n    np.random.seed(i // 2)\n"
              "    return a + 3 * b + 5 * c + 7 * np.random.normal()"),
    # past the 624 words of one state: the regeneration
    "many": ("np.random.seed(i)\n    s = 0.0\n    for k in range(1000):\n"
             "        s = s * 0.5 + np.random.random()\n    return s"),
}


@pytest.mark.parametrize("name", sorted(BODIES))
def test_seeded_draws_are_numpys(name, target):
    f = vectorize(["float64(int64)"], target=target)(
        kernel_from_source(f"import numpy as np\ndef k(i):\n    {BODIES[name]}\n"))
    xs = np.array([0, 1, 2, 42, 12345, 2**32 - 1, 2**31, 7, 31, 32, 33, 61, 62], dtype=np.int64)
    np.testing.assert_array_equal(f(xs), seeded_py(f, xs), strict=True)


def test_lazy_ufuncs_and_kernels_without_source(target):
    """A lazy ufunc types its draws per call; a kernel the interpreter built
    without source text goes through the bytecode front end."""
    ns = {}
    exec("import numpy as np\ndef k(i, scale):\n    np.random.seed(i)\n"
         "    return np.random.normal(scale=scale) + np.random.randint(i + 1)\n", ns)
    for f in (vectorize(target=target)(ns["k"]), vectorize(["f8(i8, f8)"], target=target)(ns["k"])):
        i = np.arange(12)
        np.testing.assert_array_equal(f(i, 2.0), [ns["k"](a, 2.0) for a in i])
        np.testing.assert_array_equal(f(i.astype(np.int16), np.float32(0.5)),
                                      [ns["k"](a, np.float32(0.5)) for a in i])


def test_quick_and_optimised_code_draw_the_same(target):
    """cpu's first calls run quick (unoptimised) code, later ones optimised
    code: both are NumPy's draws (checked on a sample of the elements)."""
    @vectorize(["float64(int64)"], target=target)
    def f(i):
        np.random.seed(i)
        return np.random.normal(1.0, 2.0) + np.random.randint(0, 1000)

    small = np.arange(50, dtype=np.int64)
    quick = _core._jit_info()["quick"]
    np.testing.assert_array_equal(f(small), seeded_py(f, small))
    if target == "cpu" and os.environ.get("NUMBAVEC_QUICK") != "0":
        assert _core._jit_info()["quick"] == quick + 1  # that call ran quick code
    big = np.arange(3 * QUICK_WORK, dtype=np.int64)
    got = f(big)
    some = np.random.default_rng(3).choice(big, 200, replace=False)
    np.testing.assert_array_equal(got[some], seeded_py(f, some))
    np.testing.assert_array_equal(f(big), got)


def test_a_sequence_from_one_seed_in_a_gufunc(target):
    """A guvectorize kernel that seeds once and draws a row: NumPy's stream."""
    @guvectorize(["void(int64, float64[:], int64[:])"], "(),(n)->(n)", target=target)
    def fill(seed, _, out):
        np.random.seed(seed)
        for k in range(out.shape[0]):
            if k % 3 == 0:
                out[k] = np.random.randint(-100, 100)
            elif k % 3 == 1:
                out[k] = np.int64(np.random.normal() * 1000)
            else:
                out[k] = np.int64(np.random.random() * 1000)

    seeds = np.array([3, 99, 2024], dtype=np.int64)
    got = fill(seeds, np.empty((3, 1500)))
    for row, s in zip(got, seeds):
        expected = np.empty(1500, np.int64)
        fill.py_func(s, None, expected)
        np.testing.assert_array_equal(row, expected)


@numbavec.jit
def _coin(p):
    return np.random.random() < p


@pytest.mark.parametrize("n", [1, 623, 624, 625, 1300])
def test_draws_stored_into_an_output_of_the_counts_width(target, n):
    """The generator's memory is the kernel's own (nprandom.c: `noalias`),
    so LLVM keeps its count of words left in a register across the row's
    stores: an int32 output, the count's width, read back as it is written,
    a reseed mid-row, draws in both branches and in a helper, across the
    624-word refills: the interpreter's stream, bit for bit."""
    @guvectorize(["void(int64, int32[:])"], "(),(n)", target=target)
    def fill(seed, out):
        np.random.seed(seed)
        for k in range(out.shape[0]):
            if k == out.shape[0] // 2:
                np.random.seed(seed + out[k - 1] % 7)
            if _coin(0.3):
                out[k] = np.random.randint(0, 1 << 30)
            else:
                out[k] = np.int32(np.random.random() * 1000) + (out[k - 1] if k else 0) % 5

    seeds = np.array([7, 8, 9], dtype=np.int64)
    got = np.zeros((3, n), np.int32)
    fill(seeds, got)
    for row, s in zip(got, seeds):
        expected = np.zeros(n, np.int32)
        fill.py_func(s, expected)
        np.testing.assert_array_equal(row, expected)


def test_a_jit_helper_draws(target):
    @numbavec.jit
    def jitter(x, s):
        np.random.seed(s)
        return x + np.random.uniform(-0.5, 0.5)

    @vectorize(["float64(float64, int64)"], target=target)
    def f(x, s):
        return jitter(x, s) * 2

    x, s = np.linspace(0, 1, 30), np.arange(30, dtype=np.int64)
    np.testing.assert_array_equal(f(x, s), [f.py_func(a, b) for a, b in zip(x, s)])


@pytest.mark.parametrize("body, exc", [
    ("np.random.seed(i)", ValueError),
    ("np.random.seed(np.uint64(i))", ValueError),
    ("return np.random.randint(i, 3)", ValueError),
    ("return np.random.randint(np.uint64(i))", ValueError),
    ("return np.random.normal(0.0, i * 1.0)", ValueError),
    ("return np.random.uniform(0, i * np.inf)", OverflowError),
    ("return np.random.uniform(i * np.nan, 1)", OverflowError),
])
def test_arguments_numpy_refuses_raise_its_exception(body, exc, target):
    f = vectorize(["float64(int64)"], target=target)(kernel_from_source(
        f"import numpy as np\ndef k(i):\n    {body}\n    return 0.0\n"))
    bad = {"seed(i)": [-1, 2**32], "uint64(i))": [2**63 + 5], "randint(i, 3)": [3, 4],
           "randint(np": [0], "i * 1.0": [-1], "inf": [1], "nan": [1]}
    values = next(v for k, v in bad.items() if k in body)
    for v in values:
        arg = np.array([1, v, 2], dtype=np.uint64 if v >= 2**63 else np.int64)
        with pytest.raises(exc) as expected:
            f.py_func(np.uint64(v) if v >= 2**63 else v)
        with pytest.raises(exc) as got:
            f(arg.astype(np.int64) if arg.dtype == np.uint64 else arg)
        if "uint64" not in body:
            assert str(got.value) == str(expected.value)


def test_negative_zero_scale_is_refused_as_numpy_does(target):
    @vectorize(["float64(float64)"], target=target)
    def f(s):
        return np.random.normal(0.0, s)

    with pytest.raises(ValueError, match="scale < 0"):
        f(np.array([1.0, -0.0]))
    assert np.isnan(f(np.array([np.nan]))[0])  # NumPy takes a NaN scale


@pytest.mark.parametrize("body, message", [
    ("return np.random.random(size=3)", r"draws one value in a kernel: size= is not supported"),
    ("return np.random.rand(3)", r"np.random.rand\(\) draws one value in a kernel: dimensions"),
    ("return np.random.randint(x, dtype=np.int32)", r"dtype= is not supported"),
    ("return np.random.randint(x * 0.5)", r"randint\(\) takes an integer low in a kernel, not"),
    ("np.random.seed(x * 0.5)\n    return 0.0", r"seed\(\) takes an integer seed in a kernel"),
    ("y = np.random.seed(x)\n    return 0.0", r"seed\(\) returns None: call it as a statement"),
    ("return np.random.uniform(1j)", r"uniform\(\) takes a real number low in a kernel"),
    ("return np.random.normal(0, 1, 3, 4)", r"normal\(\) takes at most 3 arguments, 4 given"),
    ("return np.random.normal(sd=2)", r"normal\(\) got an unexpected keyword 'sd'"),
    ("return np.random.uniform(0, low=1)", r"uniform\(\) got a parameter twice"),
    ("return np.random.randint()", r"randint\(\) needs low"),
    ("return RNG.integers(0, x)", r"Generator and RandomState objects are not supported"),
    ("return LEGACY.random()", r"Generator and RandomState objects are not supported"),
])
def test_what_a_kernel_refuses_is_named(body, message):
    k = kernel_from_source(f"import numpy as np\ndef k(x):\n    {body}\n",
                           globals_={"RNG": np.random.default_rng(0),
                                     "LEGACY": np.random.RandomState(0)})
    with pytest.raises(TypingError, match=message):
        vectorize(["float64(int64)"])(k)


def test_the_cuda_target_has_no_generator():
    def k(x):
        return x + np.random.normal()

    with pytest.raises(TypingError, match=r"np.random.normal\(\) is not available on the cuda "
                                          r"target"):
        vectorize(["float64(float64)"], target="cuda")(k)


# ---- the generator's state: per thread, separate from NumPy's ----

def test_not_numpys_global_generator():
    """np.random.seed in Python does not seed the kernels' generator, and a
    kernel's seed leaves NumPy's global state alone (cpu: the kernel runs in
    this thread, whose generator the two calls share)."""
    @vectorize(["float64(float64)"])
    def draw(x):
        return np.random.random()

    @vectorize(["float64(int64)"])
    def seed(s):
        np.random.seed(s)
        return 0.0

    np.random.seed(6)
    state = np.random.get_state()[1].copy()
    seed(np.array([5]))
    assert (np.random.get_state()[1] == state).all()
    np.random.seed(7)
    got = draw(np.zeros(2))
    np.random.seed(5)
    assert got.tolist() == [np.random.random(), np.random.random()]


def test_draws_are_not_folded_or_hoisted(target, forced):
    """A draw that takes nothing from the element is drawn per element, in
    quick code and optimised code alike."""
    @vectorize(["float64(float64)", "float32(float32)"], target=target)
    def noise(x):
        return np.random.random()

    for n in (1000, 4 * QUICK_WORK):
        r = noise(np.zeros(n))
        assert len(np.unique(r)) == n
        assert len(np.unique(noise(np.zeros(n, np.float32)))) > n * 0.9


def test_seed_is_the_calling_threads():
    """On cpu the kernel runs in the calling thread: a seed in one Python
    thread leaves another thread's stream where it was."""
    @vectorize(["float64(int64)"])
    def seed(s):
        np.random.seed(s)
        return 0.0

    @vectorize(["float64(float64)"])
    def draw(x):
        return np.random.random()

    np.random.seed(11)
    expected = [np.random.random() for _ in range(3)]
    got = {}

    def other():
        seed(np.array([11]))
        got["first"] = draw(np.zeros(1))[0]
        barrier.wait()
        barrier.wait()
        got["second"] = draw(np.zeros(1))[0]

    barrier = threading.Barrier(2)
    t = threading.Thread(target=other)
    t.start()
    barrier.wait()
    seed(np.array([11]))
    mine = draw(np.zeros(2))  # two draws here: the other thread's stream stays put
    barrier.wait()
    t.join()
    assert got == {"first": expected[0], "second": expected[1]}
    assert list(mine) == expected[:2]


def test_parallel_workers_draw_their_own_streams(forced):
    """Each worker has its own generator: seeded per element, every element
    is NumPy's (a shared state would race); unseeded, no two workers repeat
    each other's numbers."""
    @vectorize(["float64(int64)"], target="parallel")
    def seeded(i):
        np.random.seed(i % 1000)
        a = np.random.random()
        for _ in range(50):
            a += np.random.normal()
        return a

    n = 200_000
    got = seeded(np.arange(n, dtype=np.int64))
    expected = seeded_py(seeded, np.arange(1000))
    np.testing.assert_array_equal(got, np.tile(expected, n // 1000))

    @vectorize(["float64(float64)"], target="parallel")
    def unseeded(x):
        return np.random.random()

    r = unseeded(np.zeros(1_000_000))
    assert len(np.unique(r)) == r.size


def test_distributions_with_a_fixed_seed(target):
    """Moments and ranges of 400,000 draws from one seed each: within about
    5 standard errors (deterministic: the seed is fixed)."""
    @guvectorize(["void(int64, float64[:], float64[:])"], "(),(n)->(n)", target=target)
    def draws(kind, _, out):
        np.random.seed(1234 + kind)
        for k in range(out.shape[0]):
            if kind == 0:
                out[k] = np.random.random()
            elif kind == 1:
                out[k] = np.random.uniform(-2.0, 6.0)
            elif kind == 2:
                out[k] = np.random.normal(3.0, 2.0)
            elif kind == 3:
                out[k] = np.random.randn()
            else:
                out[k] = np.random.randint(-3, 7)

    n = 400_000
    u, w, g, z, i = draws(np.arange(5, dtype=np.int64), np.empty((5, n)))
    se = 5 / np.sqrt(n)
    assert 0 <= u.min() and u.max() < 1 and abs(u.mean() - 0.5) < se * np.sqrt(1 / 12)
    assert abs(u.var() - 1 / 12) < se * 0.075
    assert -2 <= w.min() and w.max() < 6 and abs(w.mean() - 2) < se * 8 / np.sqrt(12)
    assert abs(g.mean() - 3) < se * 2 and abs(g.std() - 2) < se * 2
    assert abs(z.mean()) < se and abs(z.var() - 1) < se * np.sqrt(2)
    counts = np.bincount((i + 3).astype(np.int64), minlength=10)
    assert i.min() == -3 and i.max() == 6 and counts.size == 10
    chi2 = ((counts - n / 10) ** 2 / (n / 10)).sum()
    assert chi2 < 40  # 9 degrees of freedom: p < 1e-5 beyond


# ---- processes: a fork, the cache ----

FORK = '''
import os, numpy as np
from numbavec import vectorize

@vectorize(["float64(int64)"], target={target!r})
def seed(s):
    np.random.seed(s)
    return 0.0

@vectorize(["float64(float64)"], target={target!r})
def draw(x):
    return np.random.random()

seed(np.array([42]))
r, w = os.pipe()
pid = os.fork()
if pid == 0:
    child = draw(np.zeros(4))
    seed(np.array([42]))
    again = draw(np.zeros(1))
    os.write(w, repr((child.tolist(), again.tolist())).encode())
    os._exit(0)
os.close(w)
child, again = eval(os.read(r, 100000).decode())
os.waitpid(pid, 0)
parent = draw(np.zeros(4)).tolist()
np.random.seed(42)
numpys = [np.random.random() for _ in range(4)]
print(parent == numpys, child != parent, again == numpys[:1])
'''


@pytest.mark.slow
def test_a_forked_child_draws_its_own_stream(target):
    """After a fork the child's generator is reseeded from the OS (even where
    the parent had seeded), and seeding in the child works as anywhere."""
    proc = run_python(FORK.format(target=target), as_file=True)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.split() == ["True", "True", "True"], proc.stdout


CACHED = '''
import numpy as np
from numbavec import vectorize

@vectorize(["float64(int64)"], cache=True)
def f(i):
    np.random.seed(i)
    return np.random.normal() + np.random.randint(0, 10)
'''

RUN_CACHED = '''
import sys
import numpy as np
sys.path.insert(0, {moddir!r})
import rmod
from numbavec import _core
x = np.arange(5)
print(rmod.f(x).tolist() == [rmod.f.py_func(i) for i in x], _core._jit_info()["object_loads"])
'''


@pytest.mark.slow
def test_cached_code_links_the_generator(tmp_path):
    """Code loaded from the cache in a new process finds random.c's
    functions (the JIT defines them by name) and draws NumPy's numbers."""
    (tmp_path / "mod").mkdir()
    (tmp_path / "mod" / "rmod.py").write_text(CACHED)
    env = dict(os.environ, NUMBAVEC_CACHE_DIR=str(tmp_path / "cache"))
    run = RUN_CACHED.format(moddir=str(tmp_path / "mod"))
    first = run_python(run, env=env)
    second = run_python(run, env=env)
    assert first.returncode == 0 and second.returncode == 0, first.stderr + second.stderr
    assert first.stdout.split() == ["True", "0"], first.stdout
    assert second.stdout.split()[0] == "True" and int(second.stdout.split()[1]) > 0, second.stdout
