"""print() in kernels, for debugging: numbers as the interpreter prints the
same NumPy scalars (Python's repr digits, NumPy's for float32), string
constants, sep= and end=; each line written whole, so lines from the
parallel target's threads never mix (their order is the threads')."""

import os

import numpy as np
import pytest

import numbavec
from numbavec import guvectorize, vectorize

from conftest import kernel_from_source, needs_gpu, run_python


def lines_of(capfd):
    return capfd.readouterr().out.splitlines()


def python_lines(pyfunc, capsys, *columns):
    for values in zip(*columns):
        pyfunc(*values)
    return capsys.readouterr().out.splitlines()


@pytest.mark.parametrize("dtype", ["f8", "f4", "i8", "i1", "u8", "?", "c16", "c8"])
def test_numbers_print_as_numpy_scalars_do(target, capfd, dtype):
    rng = np.random.default_rng(5)
    if dtype in ("f8", "f4", "c16", "c8"):
        special = [0.0, -0.0, 0.1, 1.0 / 3, 1e16, 1e15, 123456789.0, 1e-5, 1e-4, 5e-324,
                   1.7976931348623157e308, np.inf, -np.inf, np.nan, 2.5, -7.0, 1e22]
        values = np.concatenate([special, rng.standard_normal(40) * 10.0 ** rng.integers(
            -30, 30, 40)])
        with np.errstate(all="ignore"):
            values = values.astype(dtype)
            if dtype in ("c16", "c8"):
                values = values + 1j * values[::-1]
    elif dtype == "?":
        values = np.array([True, False, True])
    else:
        info = np.iinfo(dtype)
        values = np.concatenate([np.array([info.min, info.max, 0, 1], dtype),
                                 rng.integers(info.min, info.max, 30, dtype=dtype)])

    def show(x):
        print(x)
        return x

    name = "b1" if dtype == "?" else dtype
    f = vectorize([f"{name}({name})"], target=target)(show)
    with np.errstate(all="ignore"):
        f(values)
    got = lines_of(capfd)
    want = [str(v) for v in values]
    assert (got if target == "cpu" else sorted(got)) == (want if target == "cpu" else sorted(want))


def test_strings_sep_end_and_several_arguments(target, capfd):
    k = kernel_from_source(
        "def k(x, n):\n"
        "    print('x =', x, 'and n:', n, sep=' | ', end=';\\n')\n"
        "    print()\n"
        "    print('done', x > 1)\n"
        "    return x\n")
    f = vectorize(["float64(float64, int64)"], target=target)(k)
    f(np.array([0.5, 2.0]), 3)
    got = lines_of(capfd)
    assert sorted(got) == sorted(["x = | 0.5 | and n: | 3;", "", "done False",
                                  "x = | 2.0 | and n: | 3;", "", "done True"])
    if target == "cpu":
        assert got[:3] == ["x = | 0.5 | and n: | 3;", "", "done False"]


def test_parallel_lines_are_whole(capfd, forced):
    @vectorize(["int64(int64)"], target="parallel")
    def shout(n):
        print("element", n, "of many", n * 2)
        return n

    shout(np.arange(20000))
    got = lines_of(capfd)
    assert sorted(got) == sorted(f"element {n} of many {2 * n}" for n in range(20000))


def test_print_in_a_gufunc_and_a_device_function(target, capfd):
    @numbavec.jit
    def report(i, v):
        print("row", i, "sum", v)

    @guvectorize(["void(float64[:], int64, float64[:])"], "(n),()->()", target=target)
    def row_sum(a, i, out):
        s = a.sum()
        report(i, s)
        out[0] = s

    row_sum(np.ones((3, 4)), np.arange(3))
    assert sorted(lines_of(capfd)) == ["row 0 sum 4.0", "row 1 sum 4.0", "row 2 sum 4.0"]


# ---- a print writes its whole line or nothing (issue 34) ----

def py_func_lines(capfd, calls):
    """The lines the interpreter prints for calls (callables; those that
    raise are expected to)."""
    capfd.readouterr()
    for call in calls:
        try:
            call()
        except (IndexError, ValueError):
            pass
    return lines_of(capfd)


def test_a_print_whose_argument_raises_prints_nothing(target, capfd):
    """print('row', a[0], a[i]) with i out of bounds left 'row 0.0 ' in the
    thread's line, and the next print started with it."""
    k = kernel_from_source(
        "def k(a, i, out):\n"
        "    print('row', a[0], a[i], sep=' ')\n"
        "    out[0] = a[0]\n")
    g = guvectorize(["void(float64[:], int64, float64[:])"], "(n),()->()", target=target)(k)
    a = np.arange(3.0)
    with pytest.raises(IndexError):
        g(a, 5)
    g(a, 1)
    got = lines_of(capfd)
    want = py_func_lines(capfd, [lambda: k(a, 5, np.zeros(1)), lambda: k(a, 1, np.zeros(1))])
    assert got == want == ["row 0.0 1.0"]


def test_a_print_whose_device_function_raises_prints_nothing(target, capfd):
    @numbavec.jit
    def checked(x):
        if x < 0:
            raise ValueError("negative")
        return x

    def show(x):
        print("value", x, checked(x), end=";\n")
        return x

    f = vectorize(["float64(float64)"], target=target)(show)
    with pytest.raises(ValueError, match="negative"):
        f(np.array([-1.0]))
    f(np.array([2.0]))
    got = lines_of(capfd)
    want = py_func_lines(capfd, [lambda: show(np.float64(-1.0)), lambda: show(np.float64(2.0))])
    assert got == want == ["value 2.0 2.0;"]


LONG_LINE = ("def k(x):\n"
             "    print('{a}', x, '{b}', x > 1, sep='<{sep}>', end='{end}\\n')\n"
             "    return x\n").format(a="a" * 5000, b="b%" * 2500, sep="s" * 300, end="e" * 200)


def test_a_line_longer_than_4096_bytes_is_whole(target, capfd):
    """Lines were cut at 4,096 bytes, newline and all."""
    k = kernel_from_source(LONG_LINE)
    f = vectorize(["float64(float64)"], target=target)(k)
    values = np.array([0.5, 2.0, -3.25])
    f(values)
    got = lines_of(capfd)
    want = py_func_lines(capfd, [lambda v=v: k(v) for v in values])
    assert len(want[0]) > 10000
    assert (got if target == "cpu" else sorted(got)) == (want if target == "cpu" else sorted(want))


def test_long_lines_from_the_pool_threads_never_mix():
    """Lines of 12,000 bytes from four threads into a pipe: each line is
    whole (a write that long to a pipe may be split, and another thread's
    land between its parts)."""
    code = (
        "import numpy as np\n"
        "from numbavec import _core, vectorize\n"
        "_core._pool_force_parallel(True)\n"
        "@vectorize(['int64(int64)'], target='parallel')\n"
        "def shout(n):\n"
        "    print('start', n, '" + "x" * 12000 + "', n, 'end')\n"
        "    return n\n"
        "shout(np.arange(3000))\n")
    env = dict(os.environ, NUMBAVEC_NUM_THREADS="4")
    proc = run_python(code, env=env, as_file=True)
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    want = {f"start {n} {'x' * 12000} {n} end" for n in range(3000)}
    assert len(lines) == 3000 and set(lines) == want


@pytest.mark.parametrize("body, message", [
    ("print(x, end=x)", "sep= and end= as string constants"),
    ("print(x, file=None)", "no other keyword"),
    ("print((x, x))", "not tuple"),
    ("y = print(x)", "cannot be called"),
])
def test_what_print_does_not_take(target, body, message):
    k = kernel_from_source(f"def k(x):\n    {body}\n    return x\n")
    with pytest.raises(numbavec.TypingError, match=message):
        vectorize(["float64(float64)"], target=target)(k)


HAVE_LIBDEVICE = numbavec.cuda.toolkit_info()["libdevice"] is not None
CUDA_SHOW = ("def k(x, n):\n"
             "    print('x =', x, 'n:', n, x > 1, 'at 100%', sep=' | ', end='!\\n')\n"
             "    return x\n")


@pytest.mark.skipif(not HAVE_LIBDEVICE, reason="no libdevice (CUDA toolkit)")
@pytest.mark.parametrize("arch", ["sm_80", "sm_90"])
@pytest.mark.slow
def test_cuda_print_is_one_vprintf(arch, tmp_path):
    """On cuda a print is one vprintf: the constants in its format ('%'
    doubled), %.17g/%.9g for floats, %lld for integers, True/False as %s."""
    from conftest import HAVE_PTXAS, assemble
    from numbavec import _core
    from numbavec._source import KernelSource

    k = kernel_from_source(CUDA_SHOW)
    s = KernelSource(k)
    f = _core.vectorize(k, s.funcdef, s.location, ["float64(float64, int64)"], target="cuda",
                        nin=2, arch=arch)
    ptx = f.inspect_ptx("float64(float64, int64)")
    assert "vprintf" in ptx
    fmt = "x = | %.17g | n: | %lld | %s | at 100%%!\n"
    assert ("{" + ", ".join(str(b) for b in fmt.encode()) + "}") in ptx
    if HAVE_PTXAS:
        assemble(ptx, arch, tmp_path)


@needs_gpu
def test_cuda_print_reaches_stdout(capfd):
    f = vectorize(["float64(float64, int64)"], target="cuda")(kernel_from_source(CUDA_SHOW))
    f(np.array([0.5, 2.0]), 3)
    numbavec.cuda.synchronize()
    got = sorted(lines_of(capfd))
    assert got == ["x = | 0.5 | n: | 3 | False | at 100%!", "x = | 2 | n: | 3 | True | at 100%!"]


@pytest.mark.skipif(not HAVE_LIBDEVICE, reason="no libdevice (CUDA toolkit)")
def test_cuda_print_of_a_long_line_keeps_its_format_whole(tmp_path):
    """The format was cut at 4,096 bytes."""
    from conftest import HAVE_PTXAS, assemble
    from numbavec import _core
    from numbavec._source import KernelSource

    k = kernel_from_source(LONG_LINE)
    s = KernelSource(k)
    f = _core.vectorize(k, s.funcdef, s.location, ["float64(float64)"], target="cuda",
                        nin=1, arch="sm_80")
    ptx = f.inspect_ptx("float64(float64)")
    sep = "<" + "s" * 300 + ">"
    fmt = "a" * 5000 + sep + "%.17g" + sep + "b%%" * 2500 + sep + "%s" + "e" * 200 + "\n"
    assert ("{" + ", ".join(str(b) for b in fmt.encode()) + "}") in ptx
    if HAVE_PTXAS:
        assemble(ptx, "sm_80", tmp_path)
