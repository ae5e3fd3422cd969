"""Pickling fuzz: what a process receives computes what the sender computes.

Random kernel modules (a random seed each) define eager and lazy ufuncs,
eager and dynamic gufuncs and device functions reading module globals, a
class's and a module's attributes, a closure cell, device functions (with
defaults) and a numbavec ufunc.  Each is decorated from a file that no
other process can import (so it travels by value); then, at random, loops
are compiled, and globals, attributes, closure cells, defaults, the source
file and the objects' own attributes (``__wrapped__``, ``py_func``, ...) are
changed, before and after pickling.  A real child interpreter unpickles
everything and makes the same calls: every result must be the sender's,
bit for bit and of its dtype (or the same exception type).

A bounded number of cases runs by default.  NUMBAVEC_PICKLE_FUZZ_SECONDS=600
runs batches until that many seconds have passed, and prints the counts
(``pytest -s`` shows them); NUMBAVEC_PICKLE_FUZZ_SEED picks the first seed.
"""
import importlib.util
import os
import pickle
import random
import subprocess
import sys
import time

import numpy as np
import pytest

from conftest import NUMBAVEC_ROOT as ROOT
from conftest import TEST_PATHS

TESTS = os.path.dirname(os.path.abspath(__file__))

pytestmark = pytest.mark.slow  # random modules pickled to fresh interpreters

MODULE = '''
import types
import numpy as np
import numbavec
from numbavec import guvectorize, vectorize

G0 = {g0}
G1 = {g1}

class C:
    A = {ca}

cfg = types.ModuleType("cfg")
cfg.N = {cn}

D = {d}

@numbavec.jit
def h0(x, s=D):
    return {h0_body}

@numbavec.jit
def h1(x):
    return {h1_body}

IG = {ig}

@vectorize{inner_sigs}
def inner(x):
    return {inner_body}

def make(kind):
    k = {k0}

    def setk(v):
        nonlocal k
        k = v

    if kind == "vec_eager":
        @vectorize(["f8(f8, f8)", "f4(f4, f4)"])
        def kern(x, y):
            return {vec_body}
    elif kind == "vec_lazy":
        @vectorize
        def kern(x, y):
            return {vec_body}
    elif kind == "gu_eager":
        @guvectorize(["void(f8[:], f8, f8[:])", "void(f4[:], f4, f4[:])"], "(n),()->(n)")
        def kern(a, y, out):
            for i in range(a.shape[0]):
                x = a[i]
                out[i] = {gu_body}
    else:
        @guvectorize("(n),()->(n)")
        def kern(a, y, out):
            for i in range(a.shape[0]):
                x = a[i]
                out[i] = {gu_body}
    return kern, setk
'''

KINDS = ["vec_eager", "vec_lazy", "gu_eager", "gu_dyn"]
TERMS = ["x", "y", "G0", "G1", "C.A", "cfg.N", "k", "h0(x)", "h0(y, G1)", "h0(x, s=0.5)",
         "h1(x)", "inner(x)", "inner(y)", "1.5", "np.float32(0.75)"]


def number(rng):
    value = rng.choice([0.5, 0.75, 1.25, 1.5, 2.0, 3.0])
    return rng.choice([repr(value), f"np.float32({value})", f"np.float64({value})",
                       str(int(value * 2))])


def expression(rng, terms, n):
    text = rng.choice(terms)
    for _ in range(n - 1):
        text = f"({text} {rng.choice('+-*')} {rng.choice(terms)})"
    return text


def module_text(rng):
    return MODULE.format(
        g0=number(rng), g1=number(rng), ca=number(rng), cn=number(rng), d=number(rng),
        ig=number(rng), k0=number(rng),
        h0_body=expression(rng, ["x", "s", "G0", "C.A", "0.25"], 3),
        h1_body=expression(rng, ["h0(x)", "h0(x, s=cfg.N)", "x", "G1"], 3),
        inner_sigs=rng.choice(['(["f8(f8)"])', '(["f4(f4)", "f8(f8)"])', "", "()"]),
        inner_body=expression(rng, ["x", "IG", "0.5"], 3),
        vec_body=expression(rng, TERMS, rng.randint(2, 5)),
        gu_body=expression(rng, TERMS, rng.randint(2, 5)))


def import_file(path, name):
    spec = importlib.util.spec_from_file_location(name, str(path))
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def inputs(dtype):
    x = np.linspace(0.5, 2.0, 5).astype(dtype)
    return x, x[::-1].copy()


def call(f, *args):
    """("ok", result) or ("error", exception type name)."""
    try:
        with np.errstate(all="ignore"):
            return ("ok", f(*args))
    except Exception as exc:  # noqa: BLE001 - the receiver must raise the same
        return ("error", type(exc).__name__)


def compute(objs, part):
    """The calls compared: each kernel with float64 and float32 inputs, each
    device function called from Python."""
    out = {}
    for name in sorted(objs):
        obj = objs[name]
        if name.startswith("h") and part == "helpers":
            out[name] = call(obj, 1.25)
        elif not name.startswith("h") and part == "kernels":
            for dtype in (np.float64, np.float32):
                x, y = inputs(dtype)
                if name.startswith("gu"):
                    out[name, dtype.__name__] = call(obj, np.stack([x, y]), dtype(0.75))
                else:
                    out[name, dtype.__name__] = call(obj, x, y)
    return out


def same(a, b):
    if a[0] != b[0]:
        return False
    if a[0] == "error":
        return a[1] == b[1]
    x, y = np.asarray(a[1]), np.asarray(b[1])
    return x.dtype == y.dtype and x.shape == y.shape and np.array_equal(x, y, equal_nan=True)


class Case:
    """One random module, its objects, and what the sender did to them."""

    def __init__(self, seed, where):
        self.rng = rng = random.Random(seed)
        self.seed, self.path = seed, os.path.join(where, f"fuzzmod_{seed}.py")
        with open(self.path, "w") as f:
            f.write(module_text(rng))
        self.mod = import_file(self.path, f"fuzzmod_{seed}")
        self.objs, self.setters = {"h0": self.mod.h0, "h1": self.mod.h1}, {}
        self.objs["inner"] = self.mod.inner
        for kind in KINDS:
            try:
                self.objs[kind], self.setters[kind] = self.mod.make(kind)
            except Exception:  # noqa: BLE001 - a random body that does not compile
                pass
        self.log = []

    def compile_some(self):
        for _ in range(self.rng.randint(0, 3)):
            name = self.rng.choice(sorted(self.objs))
            if not name.startswith("h"):
                dtype = self.rng.choice([np.float64, np.float32])
                self.log.append(f"call {name} {dtype.__name__}")
                x, y = inputs(dtype)
                call(self.objs[name], np.stack([x, y]) if name.startswith("gu") else x,
                     dtype(0.75) if name.startswith("gu") else y)

    def mutate(self):
        rng, mod = self.rng, self.mod
        for _ in range(rng.randint(0, 4)):
            what = rng.choice(["global", "class", "module", "cell", "default", "file",
                               "attribute", "compile"])
            self.log.append(what)
            if what == "global":
                setattr(mod, rng.choice(["G0", "G1", "IG", "D"]), eval(number(rng), vars(mod)))
            elif what == "class":
                mod.C.A = eval(number(rng), vars(mod))
            elif what == "module":
                mod.cfg.N = eval(number(rng), vars(mod))
            elif what == "cell" and self.setters:
                self.setters[rng.choice(sorted(self.setters))](eval(number(rng), vars(mod)))
            elif what == "default":
                mod.h0.py_func.__defaults__ = (eval(number(rng), vars(mod)),)
            elif what == "file":
                with open(self.path, "w") as f:
                    f.write(module_text(rng))
            elif what == "attribute":
                obj = self.objs[rng.choice(sorted(self.objs))]
                name = rng.choice(["__wrapped__", "py_func", "_numbavec_recipe", "__module__",
                                   "__qualname__", "_numbavec_device_source"])
                try:
                    setattr(obj, name, rng.choice([lambda *a: 1000.0, "rebound", None]))
                except (AttributeError, TypeError):
                    pass
            elif what == "compile":
                self.compile_some()


def run_batch(seeds, where):
    """Makes, mutates and pickles the cases of seeds; a child computes them.
    Returns (cases, calls compared, mismatches as text)."""
    cases = [Case(seed, where) for seed in seeds]
    for case in cases:
        case.mutate()
        case.compile_some()
        case.mutate()
    blob = pickle.dumps([(case.seed, case.objs) for case in cases])
    helpers = {case.seed: compute(case.objs, "helpers") for case in cases}
    for case in cases:
        case.mutate()       # after pickling: the sender's compiled objects are fixed
    want = {case.seed: dict(compute(case.objs, "kernels"), **helpers[case.seed])
            for case in cases}
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(ROOT), TESTS, *TEST_PATHS]))
    out = subprocess.run([sys.executable, "-c", CHILD], input=blob, env=env,
                         capture_output=True, timeout=600)
    assert out.returncode == 0, out.stderr.decode()[-3000:]
    got = pickle.loads(out.stdout)
    mismatches, calls = [], 0
    for case in cases:
        for key, value in want[case.seed].items():
            calls += 1
            if not same(value, got[case.seed].get(key, ("missing",))):
                mismatches.append(f"seed {case.seed} {key}: sender {value!r}, receiver "
                                  f"{got[case.seed].get(key)!r}; did {case.log}")
    return len(cases), calls, mismatches


CHILD = '''
import pickle, sys
from test_pickle_fuzz import compute
cases = pickle.loads(sys.stdin.buffer.read())
out = {seed: dict(compute(objs, "kernels"), **compute(objs, "helpers")) for seed, objs in cases}
sys.stdout.buffer.write(pickle.dumps(out))
'''


def test_the_receiver_computes_what_the_sender_does(tmp_path):
    seconds = float(os.environ.get("NUMBAVEC_PICKLE_FUZZ_SECONDS", "0"))
    seed = int(os.environ.get("NUMBAVEC_PICKLE_FUZZ_SEED", "1"))
    deadline = time.monotonic() + seconds
    totals, mismatches, batch = [0, 0], [], 6
    while True:
        cases, calls, bad = run_batch(range(seed, seed + batch), str(tmp_path))
        seed += batch
        totals[0] += cases
        totals[1] += calls
        mismatches += bad
        if time.monotonic() >= deadline:
            break
        batch = 10
    print(f"\npickle fuzz: {totals[0]} cases, {totals[1]} calls compared, "
          f"{len(mismatches)} mismatches (seeds up to {seed - 1})")
    assert not mismatches, "\n".join(mismatches[:20])
