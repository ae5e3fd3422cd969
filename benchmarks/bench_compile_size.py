#!/usr/bin/env python3
"""Compile time against a kernel's size (issue 34): does it grow linearly?

Two families of gufunc kernels, n statements each, compiled with
NUMBAVEC_EAGER=1 (lowering, typing, IR, optimisation, code generation and
linking at decoration: what a user's run pays, in one go, at the switch
from quick to optimised code):

  affine  n lines of `s += (a * c + 1.0)[j % 3]`   n = 15, 30, 60, 120, 240
  mix     n lines cycling `s += np.median(a * c)`, `s += np.sort(a + c)[0]`,
          `s += a[a > c].sum()`                    n = 25, 50, 100

Each figure is the process CPU time (time.process_time: less sensitive to
other work on a shared machine than the wall clock, which is shown too) of
one decoration in a fresh child process, best of --repeat; then the
exponent k of time ~ n^k, fitted by least squares on the logs.  The result
of each kernel is checked against its py_func.  Markdown to stdout; --json
FILE also writes the figures.  PYTHONPATH picks the numbavec measured
(another checkout's in-place build: before/after).

    python3 benchmarks/bench_compile_size.py [--repeat 3] [--families affine,mix]
"""
import argparse
import json
import math
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))

FAMILIES = {"affine": [15, 30, 60, 120, 240], "mix": [25, 50, 100]}

CHILD = r'''
import json, linecache, os, sys, time
import numpy as np
import numbavec
family, n = sys.argv[1], int(sys.argv[2])
if family == "affine":
    lines = [f"    s += (a * c + 1.0)[{j % 3}]" for j in range(n)]
else:
    cycle = ["    s += np.median(a * c)", "    s += np.sort(a + c)[0]", "    s += a[a > c].sum()"]
    lines = [cycle[j % 3] for j in range(n)]
src = "def g(a, c, out):\n    s = 0.0\n" + "\n".join(lines) + "\n    out[0] = s\n"
src += "def w(x):\n    return x\n"
name = f"<bench {family} {n}>"
linecache.cache[name] = (len(src), None, src.splitlines(True), name)
ns = {"np": np}
exec(compile(src, name, "exec"), ns)
numbavec.vectorize(["f8(f8)"])(ns["w"])(np.ones(3))   # the JIT made, not timed
c0, w0 = time.process_time(), time.perf_counter()
g = numbavec.guvectorize(["void(float64[:], float64[:], float64[:])"], "(n),(n)->()")(ns["g"])
cpu, wall = time.process_time() - c0, time.perf_counter() - w0
a = np.linspace(-1, 1, 40).reshape(5, 8)
c = np.linspace(0.5, 1.5, 8)
want = np.empty(5)
for row, out in zip(a, want.reshape(-1, 1)):
    ns["g"](row, c, out)
np.testing.assert_allclose(g(a, c), want, rtol=1e-12)
print(json.dumps({"cpu": cpu, "wall": wall}))
'''


def measure(family, n, repeat):
    env = dict(os.environ, NUMBAVEC_EAGER="1")
    best = None
    for _ in range(repeat):
        out = subprocess.run([sys.executable, "-c", CHILD, family, str(n)], env=env,
                             capture_output=True, text=True, check=True)
        r = json.loads(out.stdout.splitlines()[-1])
        best = r if best is None or r["cpu"] < best["cpu"] else best
    return best


def exponent(ns, ts):
    xs, ys = [math.log(n) for n in ns], [math.log(t) for t in ts]
    mx, my = sum(xs) / len(xs), sum(ys) / len(ys)
    return sum((x - mx) * (y - my) for x, y in zip(xs, ys)) / sum((x - mx) ** 2 for x in xs)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=3, help="children per figure (best of)")
    ap.add_argument("--families", default="affine,mix")
    ap.add_argument("--json", metavar="FILE")
    args = ap.parse_args()
    import numbavec
    results = {}
    print(f"# Compile time against kernel size ({numbavec.__file__}; {os.cpu_count()} CPUs)\n")
    for family in args.families.split(","):
        sizes = FAMILIES[family]
        rows = [(n, measure(family, n, args.repeat)) for n in sizes]
        k = exponent(sizes, [r["cpu"] for _, r in rows])
        results[family] = {"sizes": sizes, "cpu": [r["cpu"] for _, r in rows],
                           "wall": [r["wall"] for _, r in rows], "exponent": k}
        print(f"## {family}: CPU time ~ n^{k:.2f}\n")
        print("| statements | CPU s | wall s | CPU ms per statement |\n|---|---|---|---|")
        for n, r in rows:
            print(f"| {n} | {r['cpu']:.2f} | {r['wall']:.2f} | {r['cpu'] / n * 1e3:.1f} |")
        print()
    if args.json:
        with open(args.json, "w") as fh:
            json.dump(results, fh, indent=1)


if __name__ == "__main__":
    main()
