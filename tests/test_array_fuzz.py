"""Random array programs: slices, broadcast assignment, elementwise
expressions, reductions, sorting and quantiles, np.dot and indexing by
arrays, generated from a seed and compiled, each run
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


def array_operand(r):
    """An operand that is always an array (the order statistics take arrays)."""
    kind = r.randrange(3)
    if kind == 0:
        return r.choice(["a", "b"])
    if kind == 1:
        return f"{r.choice(['a', 'b'])}[{rand_slice(r)}]"
    return f"({r.choice(['a', 'b'])} {r.choice(['+', '-', '*'])} {operand(r, 2)})"


def order_statement(r):
    """np.sort and its kin, np.dot, and indexing by arrays."""
    kind = r.randrange(9)
    x, y = array_operand(r), array_operand(r)
    if kind == 0:
        return f"out[{rand_slice(r)}] = np.sort({x})[{rand_slice(r)}]"
    if kind == 1:
        f = r.choice(["np.median({})", "np.nanmedian({})", "np.quantile({}, 0.3)",
                      "np.nanquantile({}, 1.0)", "np.percentile({}, 75)"])
        return f"out[{r.randrange(-3, 3)}] = {f.format(x)}"
    if kind == 2:
        return f"out[{rand_slice(r)}] = {x}[np.argsort({y})]"
    if kind == 3:
        return f"out[{r.randrange(-3, 3)}] = np.dot({x}, {y})"
    if kind == 4:
        return f"out[np.argsort({x})[{rand_slice(r)}]] = {r.choice(['1.5', y])}"
    if kind == 5:
        return f"out[{r.randrange(-3, 3)}] = np.searchsorted(np.sort({x}), " \
               f"{r.choice(['0.5', 'a[0]', 'b[-1] * 2', '-1'])}, " \
               f"side='{r.choice(['left', 'right'])}')"
    if kind == 6:
        return f"u = np.unique({x})\n    out[:len(u)] = u[::-1]"
    if kind == 7:
        return f"t = np.partition({x}, {r.randrange(-2, 3)})\n    out[0] = t[{r.randrange(-2, 3)}]"
    return f"out[{rand_slice(r)}] = np.cumsum({x})[{rand_slice(r)}] + {x}.flat[-1]"


def statement(r):
    if r.random() < 0.3:
        return order_statement(r)
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
