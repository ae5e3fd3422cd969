#!/usr/bin/env python3
"""STREAM copy/scale/add/triad through @guvectorize, against the machine's limit.

The kernels are EXAMPLES.md section 7's, exactly as written (layouts without
'->': the kernel writes into lhs).  Shapes (1, 2e7) (one long core
dimension) and (1000, 2e4) (a long outer loop), float64.  Implementations:

  C loop      the same loop compiled here with ``cc -O3 -march=native``,
              called through ctypes on the whole array: one core's bandwidth
  numbavec    target='cpu' and target='parallel'; "dynamic": cpu with no
              signatures (the loop compiled at the first call)
  NumPy       the expression with out= (triad: two passes, as NumPy must)
  Numba       @guvectorize cpu and parallel with the same kernels (when
              ``import numba`` works)

Bandwidth counts STREAM's bytes (copy and scale 16 B per element, add and
triad 24 B); best of --repeat calls.  Markdown to stdout.

    python3 benchmarks/bench_guvectorize.py [--repeat 5]
"""
import argparse
import ctypes
import os
import shutil
import subprocess
import sys
import tempfile

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from numbavec import guvectorize  # noqa: E402
from timing import best  # noqa: E402


def copy(lhs, rhs):
    for i in range(len(lhs)):
        lhs[i] = rhs[i]


def scale(lhs, rhs, alpha):
    for i in range(len(lhs)):
        lhs[i] = alpha * rhs[i]


def add(lhs, rhs1, rhs2):
    for i in range(len(lhs)):
        lhs[i] = rhs1[i] + rhs2[i]


def triad(lhs, rhs1, rhs2, alpha):
    for i in range(len(lhs)):
        lhs[i] = rhs1[i] + alpha * rhs2[i]


KERNELS = {
    "copy": (copy, "(float64[:], float64[:])", "(n),(n)", 16),
    "scale": (scale, "(float64[:], float64[:], float64)", "(n),(n),()", 16),
    "add": (add, "(float64[:], float64[:], float64[:])", "(n),(n),(n)", 24),
    "triad": (triad, "(float64[:], float64[:], float64[:], float64)", "(n),(n),(n),()", 24),
}

C_SOURCE = r"""
void copy(long n, double *a, const double *b, const double *c, double s)
{ for (long i = 0; i < n; i++) a[i] = b[i]; }
void scale(long n, double *a, const double *b, const double *c, double s)
{ for (long i = 0; i < n; i++) a[i] = s * b[i]; }
void add(long n, double *a, const double *b, const double *c, double s)
{ for (long i = 0; i < n; i++) a[i] = b[i] + c[i]; }
void triad(long n, double *a, const double *b, const double *c, double s)
{ for (long i = 0; i < n; i++) a[i] = b[i] + s * c[i]; }
"""


def c_library():
    cc = os.environ.get("CC") or shutil.which("cc") or shutil.which("gcc")
    if cc is None:
        return None, "no C compiler"
    tmp = tempfile.mkdtemp(prefix="nv-stream-")
    src, lib = os.path.join(tmp, "stream.c"), os.path.join(tmp, "stream.so")
    with open(src, "w") as f:
        f.write(C_SOURCE)
    proc = subprocess.run([cc, "-O3", "-march=native", "-shared", "-fPIC", src, "-o", lib],
                          capture_output=True, text=True)
    if proc.returncode != 0:
        return None, proc.stderr.strip()
    dll = ctypes.CDLL(lib)
    for name in KERNELS:
        getattr(dll, name).argtypes = [ctypes.c_long] + [ctypes.c_void_p] * 3 + [ctypes.c_double]
    return dll, None


def args_for(name, a, b, c, alpha):
    return {"copy": (a, b), "scale": (a, b, alpha), "add": (a, b, c),
            "triad": (a, b, c, alpha)}[name]


def numpy_call(name, a, b, c, alpha):
    if name == "copy":
        return lambda: np.copyto(a, b)
    if name == "scale":
        return lambda: np.multiply(b, alpha, out=a)
    if name == "add":
        return lambda: np.add(b, c, out=a)

    def triad_np():
        np.multiply(c, alpha, out=a)
        np.add(a, b, out=a)
    return triad_np



def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=5)
    opts = ap.parse_args()
    dll, why = c_library()
    impls = {}
    for t in ("cpu", "parallel"):
        impls[f"numbavec {t}"] = {n: guvectorize(s, lay, target=t)(k)
                                  for n, (k, s, lay, _) in KERNELS.items()}
    # no signatures: a loop compiled by the first call, inside NumPy's dispatch
    impls["numbavec dynamic"] = {n: guvectorize(lay, target="cpu")(k)
                                 for n, (k, _, lay, _) in KERNELS.items()}
    try:
        import numba
        for t in ("cpu", "parallel"):
            impls[f"numba {t}"] = {n: numba.guvectorize(s, lay, target=t)(k)
                                   for n, (k, s, lay, _) in KERNELS.items()}
        numba_note = f"Numba {numba.__version__}"
    except Exception as e:     # noqa: BLE001 - any failure means "no Numba column"
        numba_note = f"Numba unavailable ({e.__class__.__name__}: {e})"
    from numbavec import _core
    print(f"# STREAM through guvectorize (float64; {os.cpu_count()} cores visible, "
          f"pool {_core.get_pool_size()} threads; {numba_note}; NumPy {np.__version__})\n")
    if dll is None:
        print(f"(no C reference: {why})\n")
    rng = np.random.default_rng(0)
    for shape in [(1, 20_000_000), (1000, 20_000)]:
        a = np.zeros(shape)
        b, c = rng.random(shape), rng.random(shape)
        alpha = 3.0
        n = a.size
        print(f"## shape {shape}\n")
        cols = ["C loop"] + list(impls) + ["NumPy"]
        print("| kernel | " + " | ".join(f"{col} GB/s" for col in cols)
              + " | numbavec cpu / C | numbavec parallel / C |")
        print("|---" * (len(cols) + 3) + "|")
        for name, (_, _, _, nbytes) in KERNELS.items():
            rates = {}
            if dll is not None:
                fn = getattr(dll, name)
                rates["C loop"] = nbytes * n / best(
                    lambda: fn(n, a.ctypes.data, b.ctypes.data, c.ctypes.data, alpha),
                    opts.repeat) / 1e9
            for label, gus in impls.items():
                g = gus[name]
                call_args = args_for(name, a, b, c, alpha)
                rates[label] = nbytes * n / best(lambda: g(*call_args), opts.repeat) / 1e9
            rates["NumPy"] = nbytes * n / best(numpy_call(name, a, b, c, alpha),
                                               opts.repeat) / 1e9
            ref = rates.get("C loop")
            ratio = (lambda k: f"{rates[k] / ref:.2f}" if ref else "-")
            print(f"| {name} | " + " | ".join(f"{rates.get(col, float('nan')):.1f}"
                                              for col in cols)
                  + f" | {ratio('numbavec cpu')} | {ratio('numbavec parallel')} |")
        print()


def add_const(a, c, out):
    for i in range(a.shape[0]):
        out[i] = a[i] + c


def small_calls(repeat):
    """The cost of a call on 8 elements: eager against dynamic (no
    signatures; Numba's dynamic gufunc needs out= and dispatches in Python)."""
    import timeit

    x, out = np.arange(8.0), np.empty(8)
    impls = [("numbavec eager", guvectorize(["void(f8[:], f8, f8[:])"], "(n),()->(n)")(add_const),
              {}),
             ("numbavec dynamic", guvectorize("(n),()->(n)")(add_const), {})]
    try:
        import numba
        impls += [("numba eager", numba.guvectorize(["void(f8[:], f8, f8[:])"],
                                                   "(n),()->(n)")(add_const), {}),
                  ("numba dynamic (out=)", numba.guvectorize("(n),()->(n)")(add_const),
                   {"out": out})]
    except Exception:     # noqa: BLE001 - no Numba rows
        pass
    print("## a call on 8 elements, `(n),()->(n)`\n")
    print("| implementation | us per call | / numbavec eager |")
    print("|---|---|---|")
    base = None
    for label, g, kw in impls:
        g(x, 1.0, **kw)
        t = min(timeit.repeat(lambda: g(x, 1.0, **kw), number=20000, repeat=repeat)) / 20000
        base = base or t
        print(f"| {label} | {t * 1e6:.2f} | {t / base:.2f} |")
    print()


if __name__ == "__main__":
    main()
    small_calls(5)
