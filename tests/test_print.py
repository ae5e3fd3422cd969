"""print() in kernels, for debugging: numbers as the interpreter prints the
same NumPy scalars (Python's repr digits, NumPy's for float32), string
constants, sep= and end=; each line written whole, so lines from the
parallel target's threads never mix (their order is the threads')."""

import numpy as np
import pytest

import numbavec
from numbavec import guvectorize, vectorize

from conftest import kernel_from_source, needs_gpu


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
