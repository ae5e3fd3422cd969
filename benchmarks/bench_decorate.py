"""Decoration time: a kernel compiled from its source, from its bytecode, and by Numba.

    python benchmarks/bench_decorate.py [--repeat 15]

For kernels of a few sizes (a one-line ufunc, a 15-line ufunc with a loop
and branches, a 60-line generated ufunc, a gufunc), each decoration takes a
fresh function object of the same code, so nothing is reused but what a
real program reuses (numbavec's parse of a file, LLVM's initialisation):

* source: the function as defined in a module file (numbavec parses it and
  checks that it compiles to the function's code);
* bytecode: the same code object with a file name no source can be found
  for (numbavec/_bytecode.py rebuilds the tree, then checks it the same way);
* front end alone: KernelSource(f) for both (no LLVM);
* numba: ``numba.vectorize`` / ``numba.guvectorize`` with the same
  signature, where Numba is installed.

Prints the median of --repeat decorations, in milliseconds (source and
bytecode timed alternately, the collector off as timeit does), and the
bytecode/source ratio.  numbavec lowers, types and emits a signature at
decoration and makes its machine code at the first call (DESIGN-NOTES,
"Machine code on demand"); NUMBAVEC_EAGER=1 makes it at decoration, as
Numba does.
"""
import argparse
import gc
import importlib.util
import os
import statistics
import sys
import tempfile
import textwrap
import time
import types

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)
sys.path.insert(0, os.path.join(ROOT, "tests"))

import numbavec  # noqa: E402
from numbavec._source import KernelSource  # noqa: E402

SMALL = """
def small(a, x, y):
    return a * x + y
"""

MEDIUM = """
def medium(x, y):
    if x > y:
        t = math.sqrt(x - y)
    elif x < -y:
        t = -math.sqrt(-x - y)
    else:
        t = 0.0
    s = 0.0
    for i in range(8):
        if i % 3 == 0:
            continue
        s += t * i - y
        if s > 1e6:
            break
    k = 0
    while s > 10.0 and k < 20:
        s = s / 2.0
        k += 1
    return s if k else -s
"""

GUFUNC = """
def moving_mean(a, w, out):
    acc = 0.0
    n = len(a)
    for i in range(n):
        acc += a[i]
        if i >= w:
            acc -= a[i - w]
        out[i] = acc / min(i + 1, w)
"""


def large_source():
    import progs

    from numbavec import _bytecode

    best = None
    for seed in range(300):
        p = progs.generate(seed)
        if p.family != "float" or p.out_types[0] != "float64":
            continue
        ns = {}
        exec(p.source, ns)
        try:
            _bytecode.rebuild_code(ns["f"].__code__)
        except _bytecode.BytecodeError:
            continue
        if best is None or p.source.count("\n") > best.source.count("\n"):
            best = p
    if best is not None:
        return best.source.split("\n", 3)[3].replace("def f(", "def large("), best.nparams
    raise RuntimeError("no large program")


def module_of(text):
    path = os.path.join(tempfile.mkdtemp(prefix="nv-bench-"), "kernels.py")
    with open(path, "w") as fh:
        fh.write("import math\nimport numpy as np\n" + textwrap.dedent(text))
    spec = importlib.util.spec_from_file_location("nv_bench_kernels", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def fresh(f, no_source):
    code = f.__code__
    if no_source:
        code = code.replace(co_filename="<no source: bench>")
    return types.FunctionType(code, f.__globals__, f.__name__)


def median_ms(make, repeat):
    """Median time of make(), timed as timeit does (collector off)."""
    times = []
    for _ in range(repeat):
        gc.collect()
        gc.disable()
        try:
            t = time.perf_counter()
            make()
            times.append(time.perf_counter() - t)
        finally:
            gc.enable()
    return 1e3 * statistics.median(times)


def paired_ms(make_a, make_b, repeat):
    """Medians of make_a() and make_b() timed alternately (a loaded machine
    drifts: alternating puts both on the same drift)."""
    a, b = [], []
    for _ in range(repeat):
        a.append(median_ms(make_a, 1))
        b.append(median_ms(make_b, 1))
    return statistics.median(a), statistics.median(b)


def main(argv=None):
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeat", type=int, default=15)
    args = ap.parse_args(argv)
    large, nlarge = large_source()
    mod = module_of(SMALL + MEDIUM + GUFUNC + large)
    try:
        import numba
    except ImportError:
        numba = None
    cases = [
        ("small (1 line)", mod.small, ["f8(f8, f8, f8)"], None),
        ("medium (19 lines)", mod.medium, ["f8(f8, f8)"], None),
        (f"large ({large.count(chr(10))} lines)", mod.large,
         [f"f8({', '.join(['f8'] * nlarge)})"], None),
        ("gufunc (8 lines)", mod.moving_mean, ["void(f8[:], i8, f8[:])"], "(n),()->(n)"),
    ]
    print(f"decoration, median of {args.repeat} (ms); Python {sys.version.split()[0]}")
    print(f"{'kernel':<20} {'source':>9} {'bytecode':>9} {'ratio':>6} {'front end src':>14} "
          f"{'bc':>8} {'numba':>9}")
    for name, f, sigs, layout in cases:
        if layout is None:
            deco = numbavec.vectorize(sigs)
            nb = numba.vectorize(sigs) if numba else None
        else:
            deco = numbavec.guvectorize(sigs, layout)
            nb = numba.guvectorize(sigs, layout) if numba else None
        src, byt = paired_ms(lambda: deco(fresh(f, False)), lambda: deco(fresh(f, True)),
                             args.repeat)
        fe_src, fe_bc = paired_ms(lambda: KernelSource(fresh(f, False)),
                                  lambda: KernelSource(fresh(f, True)), args.repeat * 4)
        try:
            nba = median_ms(lambda: nb(fresh(f, False)), max(3, args.repeat // 3)) if nb else None
        except Exception:  # noqa: BLE001 - a kernel Numba does not type (none to compare)
            nba = None
        print(f"{name:<20} {src:9.2f} {byt:9.2f} {byt / src:6.2f} {fe_src:14.3f} {fe_bc:8.3f} "
              f"{nba if nba is None else f'{nba:9.2f}'}")


if __name__ == "__main__":
    main()
