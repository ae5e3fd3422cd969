#!/usr/bin/env python3
"""Compile time (issue 18): decoration, time to first result and import, numbavec against Numba.

Every figure comes from fresh processes or fresh functions, side by side in
one run, on this machine:

  decoration     median time of @vectorize / @guvectorize with one signature
                 over distinct functions (numbavec makes machine code at a
                 signature's first call; NUMBAVEC_EAGER=1 makes it here);
  first result   decoration, then one call on contiguous float64 arrays of
                 1,000 elements (gufuncs: 8 x 125): what a user waits for;
  import         a module of 10 ufuncs x 4 signatures (benchmarks/
                 bench_import.py's), and of 10 realistic gufunc kernels x 2
                 signatures (tests/support/array_kernels.py's), imported in a fresh
                 process, cold cache; "+ first calls" calls each once on
                 float64 after the import.

Markdown to stdout; --json FILE also writes the figures.

    python3 benchmarks/bench_compile.py [--count 20] [--repeat 3]
"""
import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, ROOT)
sys.path.insert(0, os.path.join(ROOT, "tests", "support"))
import bench_import  # noqa: E402
from array_kernels import KERNELS, signature  # noqa: E402

# realistic kernels both compilers take (Numba refuses nan_stats' frozen
# dimension and column_ranges' tuple returns)
GU_NAMES = ["moving_mean", "forward_fill", "ema", "moving_count", "zscore", "rolling_median",
            "winsorize", "trimmed_mean", "covariance", "bin_counts"]

# One process measures one compiler in one mode: decoration and first result
# of fresh functions, printed as JSON.
CHILD = r'''
import importlib.util, json, os, statistics, sys, time
import numpy as np
sys.path.insert(0, {root!r}); sys.path.insert(0, {tests!r})
package, kind, count, tmp = {package!r}, {kind!r}, {count!r}, {tmp!r}
if package == "numba":
    import numba as lib
else:
    import numbavec as lib
from array_kernels import KERNELS, signature
path = os.path.join(tmp, "fresh_%s_%s.py" % (package, kind))
with open(path, "w") as fh:
    fh.write("import math\nimport numpy as np\n")
    for i in range(count + 1):
        fh.write("def k%d(x, mean, sigma):\n    z = (x - mean) / sigma + %r\n"
                 "    return math.exp(-0.5 * z * z) / (sigma * 2.5066282746310002)\n"
                 % (i, 0.001 * (i + 1)))
spec = importlib.util.spec_from_file_location("fresh_%s_%s" % (package, kind), path)
mod = importlib.util.module_from_spec(spec); spec.loader.exec_module(mod)
x = np.linspace(-3, 3, 1000)
names = {gu_names!r}
deco, first = [], []
for i in range(count + 1):
    if kind == "ufunc":
        f = getattr(mod, "k%d" % i)
        t0 = time.perf_counter()
        u = lib.vectorize(["float64(float64, float64, float64)"])(f)
        t1 = time.perf_counter()
        u(x, 0.5, 1.5)
    else:
        py, layout, kinds, out_kind = KERNELS[names[i % len(names)]]
        sig = signature(layout, kinds, out_kind, "float64")
        data = [np.float64(4) if k == "s" else
                (np.random.default_rng(i).standard_normal((8, 125)) if "m" not in layout
                 else np.random.default_rng(i).standard_normal((8, 25, 5))) for k in kinds]
        # a fresh function each time: the same code under a new identity
        import types
        fresh = types.FunctionType(py.__code__, py.__globals__, py.__name__, py.__defaults__,
                                   py.__closure__)
        fresh.__qualname__ = py.__qualname__
        t0 = time.perf_counter()
        u = lib.guvectorize([sig], layout)(fresh)
        t1 = time.perf_counter()
        with np.errstate(all="ignore"):
            u(*data)
    t2 = time.perf_counter()
    if i:  # the first includes the compiler's own start-up
        deco.append(t1 - t0); first.append(t2 - t0)
print(json.dumps({{"decoration": statistics.median(deco), "first": statistics.median(first)}}))
'''


def child(package, kind, count, tmp, eager=False):
    env = dict(os.environ, PYTHONPATH=ROOT)
    env.pop("NUMBAVEC_EAGER", None)
    if eager:
        env["NUMBAVEC_EAGER"] = "1"
    code = CHILD.format(root=ROOT, tests=os.path.join(ROOT, "tests", "support"), package=package, kind=kind,
                        count=count, tmp=tmp, gu_names=GU_NAMES)
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True,
                         check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


# -- import of a module, then its first calls ---------------------------------

GU_MODULE_HEAD = """import sys
sys.path.insert(0, {tests!r})
from {package} import guvectorize
from array_kernels import KERNELS, signature
"""

IMPORT_RUNNER = r"""
import sys, time
sys.path.insert(0, {moddir!r})
import numpy as np, {package}
t0 = time.perf_counter()
import benchmod
t1 = time.perf_counter()
{calls}
t2 = time.perf_counter()
print(t1 - t0, t2 - t0)
"""

UFUNC_CALLS = """x = np.linspace(0, 1, 1000)
for name in dir(benchmod):
    if name.startswith("uf"):
        getattr(benchmod, name)(x, x)
"""

GU_CALLS = """with np.errstate(all="ignore"):
    for f, args in benchmod.CALLS:
        f(*args)
"""


def gufunc_module_text(package, cache):
    out = [GU_MODULE_HEAD.format(tests=os.path.join(ROOT, "tests", "support"), package=package),
           "import numpy as np", "CALLS = []"]
    for i, name in enumerate(GU_NAMES):
        py, layout, kinds, out_kind = KERNELS[name]
        sigs = [signature(layout, kinds, out_kind, t) for t in ("float32", "float64")]
        out += [f"py, layout, kinds, out_kind = KERNELS[{name!r}]",
                f"g{i} = guvectorize({sigs!r}, layout, cache={cache})(py)",
                "CALLS.append((g%d, [np.float64(4) if k == 's' else "
                "np.random.default_rng(0).standard_normal((8, 125) if 'm' not in layout "
                "else (8, 25, 5)) for k in kinds]))" % i]
    return "\n".join(out) + "\n"


def import_times(package, kind, mode, repeat):
    """(import, import + first calls), best of repeat, seconds; mode: eager,
    cold (cache=True, empty), warm (cache=True, filled)."""
    best = None
    for _ in range(repeat):
        work = tempfile.mkdtemp(prefix="nvcompile-")
        try:
            moddir, cachedir = os.path.join(work, "mod"), os.path.join(work, "cache")
            os.makedirs(moddir)
            cache = mode != "eager"
            text = (bench_import.module_text(package, cache) if kind == "ufunc"
                    else gufunc_module_text(package, cache))
            with open(os.path.join(moddir, "benchmod.py"), "w") as fh:
                fh.write(text)
            env = dict(os.environ, NUMBAVEC_CACHE_DIR=cachedir, NUMBA_CACHE_DIR=cachedir,
                       PYTHONPATH=ROOT)
            runner = IMPORT_RUNNER.format(moddir=moddir, package=package,
                                          calls=UFUNC_CALLS if kind == "ufunc" else GU_CALLS)
            for _ in range(2 if mode == "warm" else 1):
                out = subprocess.run([sys.executable, "-c", runner], env=env,
                                     capture_output=True, text=True, check=True)
            t = tuple(float(v) for v in out.stdout.split())
            best = t if best is None else (min(best[0], t[0]), min(best[1], t[1]))
        finally:
            shutil.rmtree(work, ignore_errors=True)
    return best


def have_numba():
    try:
        import numba  # noqa: F401
        return True
    except ImportError:
        return False


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--count", type=int, default=20, help="fresh functions per figure")
    ap.add_argument("--repeat", type=int, default=3, help="imports per figure (best of)")
    ap.add_argument("--json", metavar="FILE")
    args = ap.parse_args()
    numba = have_numba()
    figures = {"per_signature": {}, "import": {}}
    tmp = tempfile.mkdtemp(prefix="nvcompile-")
    try:
        for kind in ("ufunc", "gufunc"):
            rows = {"numbavec": child("numbavec", kind, args.count, tmp),
                    "numbavec NUMBAVEC_EAGER=1": child("numbavec", kind, args.count, tmp, True)}
            if numba:
                rows["Numba"] = child("numba", kind, args.count, tmp)
            figures["per_signature"][kind] = rows
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    for kind in ("ufunc", "gufunc"):
        rows = {}
        for package in ("numbavec", "numba") if numba else ("numbavec",):
            rows[package] = {mode: import_times(package, kind, mode, args.repeat)
                             for mode in ("eager", "cold", "warm")}
        figures["import"][kind] = rows

    print(f"# Compile time: numbavec against Numba ({os.cpu_count()} CPUs)\n")
    print("## Per signature (median over %d fresh functions)\n" % args.count)
    print("| kind | compiler | decoration ms | first result ms | Numba / this, decoration "
          "| Numba / this, first result |")
    print("|---|---|---|---|---|---|")
    for kind, rows in figures["per_signature"].items():
        nb = rows.get("Numba")
        for name, r in rows.items():
            ratio = (f"{nb['decoration'] / r['decoration']:.1f} | {nb['first'] / r['first']:.1f}"
                     if nb else "- | -")
            print(f"| {kind} | {name} | {r['decoration'] * 1e3:.2f} | {r['first'] * 1e3:.2f} "
                  f"| {ratio} |")
    print("\n## Import of a module, fresh process (best of %d)\n" % args.repeat)
    print("ufuncs: 10 x 4 signatures; gufuncs: 10 realistic kernels x 2 signatures. "
          "`+ calls`: then each object called once on float64.\n")
    print("| module | compiler | eager | eager + calls | cold cache | cold + calls "
          "| warm cache | warm + calls |")
    print("|---|---|---|---|---|---|---|---|")
    for kind, rows in figures["import"].items():
        for name, r in rows.items():
            cells = " | ".join(f"{r[m][0] * 1e3:.1f} | {r[m][1] * 1e3:.1f}"
                               for m in ("eager", "cold", "warm"))
            print(f"| {kind} | {name} | {cells} |")
    if numba:
        print("\n| module | Numba eager / numbavec cold: import | import + calls |")
        print("|---|---|---|")
        for kind, rows in figures["import"].items():
            nv, nb = rows["numbavec"], rows["numba"]
            print(f"| {kind} | {nb['eager'][0] / nv['cold'][0]:.1f}x "
                  f"| {nb['eager'][1] / nv['cold'][1]:.1f}x |")
    if args.json:
        with open(args.json, "w") as fh:
            json.dump(figures, fh, indent=1)


if __name__ == "__main__":
    main()
