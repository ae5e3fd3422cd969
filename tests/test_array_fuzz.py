"""Random array programs: slices, broadcast assignment, elementwise
expressions and reductions, generated from a seed and compiled, each run
against the interpreter running the same kernel on NumPy arrays.  An
outcome is a result (equal up to rounding, NaN equal to NaN) or an
exception, which must be of the interpreter's type."""
import os
import random
import warnings

import numpy as np
import pytest

from conftest import kernel_from_source
from numbavec import guvectorize

# more with NUMBAVEC_ARRAY_FUZZ=N (a long run before a release)
N_PROGRAMS = int(os.environ.get("NUMBAVEC_ARRAY_FUZZ", "120"))


def rand_slice(r):
    def bound():
        return r.choice([None, None, r.randint(-9, 9)])
    step = r.choice([None, None, 1, 2, -1, -2, 3])
    parts = [bound(), bound()] + ([step] if step is not None else [])
    return ":".join("" if p is None else str(p) for p in parts)


def operand(r, depth):
    kind = r.randrange(6 if depth < 3 else 3)
    if kind == 0:
        return r.choice(["a", "b"])
    if kind == 1:
        return f"{r.choice(['a', 'b'])}[{rand_slice(r)}]"
    if kind == 2:
        return r.choice(["2", "0.5", "-1.0", "3"])
    if kind == 3:
        op = r.choice(["+", "-", "*"])
        return f"({operand(r, depth + 1)} {op} {operand(r, depth + 1)})"
    if kind == 4:
        f = r.choice(["np.abs", "np.sqrt(np.abs", "-", "np.minimum(0.25,"])
        inner = operand(r, depth + 1)
        return f"{f}({inner}))" if f.endswith("abs") and "sqrt" in f else f"{f}({inner})" \
            if not f.endswith(",") else f"{f} {inner})"
    return f"{r.choice(['a', 'b'])}[{rand_slice(r)}][{rand_slice(r)}]"


def statement(r):
    kind = r.randrange(6)
    if kind == 0:
        return f"out[{rand_slice(r)}] = {operand(r, 0)}"
    if kind == 1:
        red = r.choice(["sum", "max", "min", "mean", "argmax", "prod"])
        return f"out[{r.randrange(-3, 3)}] = np.{red}({operand(r, 1)} + a[0] * 0)"
    if kind == 2:
        return f"out[{rand_slice(r)}] += {operand(r, 1)}"
    if kind == 3:
        return f"t = {r.choice(['a', 'b'])}[{rand_slice(r)}]\n    out[:len(t)] = t * 2"
    # masks of out's shape: a or b against a number
    mask = f"({r.choice(['a', 'b'])} * {r.choice(['1', '-2'])} > {r.choice(['0', '0.5'])})"
    if kind == 4:
        return f"out[{mask}] = np.sum({operand(r, 3)})"
    red = r.choice(["sum", "max", "mean"])
    return f"out[{r.randrange(-2, 2)}] = np.{red}({r.choice(['a', 'b'])}[{mask}])"


def program(seed):
    r = random.Random(seed)
    body = "\n    ".join(statement(r) for _ in range(r.randint(1, 4)))
    return f"import numpy as np\ndef k(a, b, out):\n    out[:] = 0\n    {body}\n"


def outcome(f, *args):
    try:
        with warnings.catch_warnings(), np.errstate(all="ignore"):
            warnings.simplefilter("ignore")
            return f(*args)
    except Exception as e:  # noqa: BLE001 - the exception is the outcome compared
        return e


@pytest.mark.parametrize("chunk", range(4))
def test_random_array_programs(target, chunk):
    rng = np.random.default_rng(chunk)
    failures = []
    for seed in range(chunk * N_PROGRAMS // 4, (chunk + 1) * N_PROGRAMS // 4):
        src = program(seed)
        py = kernel_from_source(src)
        gu = guvectorize(["void(float64[:], float64[:], float64[:])"], "(n),(n)->(n)",
                         target=target)(py)
        for n in (1, 6, 9):
            a, b = rng.standard_normal((2, n))

            def run_py():
                out = np.zeros(n)
                py(a.copy(), b.copy(), out)
                return out
            expected = outcome(run_py)
            got = outcome(lambda: gu(a, b))
            if isinstance(expected, Exception) or isinstance(got, Exception):
                ok = type(got) is type(expected) or (
                    isinstance(expected, Exception) and isinstance(got, type(expected)))
            else:
                ok = np.allclose(got, expected, rtol=1e-10, atol=1e-10, equal_nan=True)
            if not ok:
                failures.append(f"seed {seed} n={n}: {expected!r} != {got!r}\n{src}")
    assert not failures, "\n".join(failures[:5])
