"""Import time of a module defining 10 ufuncs x 4 signatures (issue 6).

Each figure is the time to import the module in a fresh subprocess, measured
inside it after numpy and the compiler package are imported (so it is the
cost of the decorators, not of importing numbavec/numba; the module's own
bytecode is cached by Python as for any installed module):

  numbavec eager       cache=False: everything compiled
  numbavec cold cache  cache=True, empty cache directory: compiled and stored
  numbavec warm cache  cache=True, filled by the previous run: linked only
  numba eager / cold / warm   the same module with numba.vectorize

Run:  python benchmarks/bench_import.py [--repeat 3]
"""
import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SIGS = ["float32(float32, float32)", "float64(float64, float64)",
        "int32(int32, int32)", "int64(int64, int64)"]
BODIES = [
    "x * y + 1", "x - y * 2", "(x + y) * (x - y)", "x * x + y * y",
    "x if x > y else y", "abs(x - y)", "x * 3 + y // 2 if y != 0 else x",
    "min(x, y) * 2", "(x + 1) * (y + 2) - x", "x * y - (x + y)",
]


def module_text(package, cache):
    out = [f"from {package} import vectorize", ""]
    for i, body in enumerate(BODIES):
        out += [f"@vectorize({SIGS!r}, cache={cache})", f"def uf{i}(x, y):",
                f"    return {body}", ""]
    return "\n".join(out)


RUNNER = """
import sys, time
sys.path.insert(0, {moddir!r})
import numpy, {package}
t0 = time.perf_counter()
import benchmod
print(time.perf_counter() - t0)
"""


def one(package, cache, cachedir, moddir):
    env = dict(os.environ, NUMBAVEC_CACHE_DIR=cachedir, NUMBA_CACHE_DIR=cachedir,
               PYTHONPATH=ROOT)
    out = subprocess.run([sys.executable, "-c", RUNNER.format(moddir=moddir, package=package)],
                         env=env, capture_output=True, text=True, check=True)
    return float(out.stdout.strip().splitlines()[-1])


def measure(package, repeat):
    """{'eager', 'cold', 'warm'}: best of repeat, in seconds."""
    result = {}
    for mode in ("eager", "cold", "warm"):
        times = []
        for _ in range(repeat):
            work = tempfile.mkdtemp(prefix="nvbench-")
            try:
                moddir, cachedir = os.path.join(work, "mod"), os.path.join(work, "cache")
                os.makedirs(moddir)
                with open(os.path.join(moddir, "benchmod.py"), "w") as fh:
                    fh.write(module_text(package, mode != "eager"))
                if mode == "warm":
                    one(package, True, cachedir, moddir)
                times.append(one(package, mode != "eager", cachedir, moddir))
            finally:
                shutil.rmtree(work, ignore_errors=True)
        result[mode] = min(times)
    return result


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    rows = {"numbavec": measure("numbavec", args.repeat)}
    try:
        import numba  # noqa: F401
        rows["numba"] = measure("numba", args.repeat)
    except ImportError:
        print("(numba not installed: pip install numba for the comparison)")
    if args.json:
        print(json.dumps(rows))
        return
    n = len(BODIES) * len(SIGS)
    print(f"import of a module with {len(BODIES)} ufuncs x {len(SIGS)} signatures "
          f"({n} loops), best of {args.repeat}, fresh processes")
    print(f"{'':<10} {'eager':>10} {'cold cache':>12} {'warm cache':>12}")
    for name, r in rows.items():
        print(f"{name:<10} {r['eager'] * 1e3:8.1f} ms {r['cold'] * 1e3:9.1f} ms "
              f"{r['warm'] * 1e3:9.1f} ms")
    if "numba" in rows:
        nv, nb = rows["numbavec"], rows["numba"]
        print(f"\nwarm cache: {nv['warm'] * 1e3:.1f} ms (goal <= 20 ms)")
        print(f"cold cache vs numba eager: {nb['eager'] / nv['cold']:.1f}x faster (goal >= 10x)")
        print(f"warm cache vs numba cache=True warm: {nb['warm'] / nv['warm']:.1f}x faster")


if __name__ == "__main__":
    main()
