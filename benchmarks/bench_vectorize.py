#!/usr/bin/env python3
"""numbavec @vectorize against NumPy, Numba and a plain C loop, in one run.

Kernels (float32): saxpy ``a*x + y`` (a scalar; memory-bound) and the Gaussian
pdf ``exp(-0.5*((x-mean)/sigma)**2) / (sigma*sqrt(2 pi))`` (mean, sigma scalars;
exp-bound), over N = 1e3 .. 1e7.  Implementations: numbavec on each target
asked for, the NumPy expression, Numba's @vectorize cpu and parallel (when
``import numba`` works), and for saxpy a C loop built here with
``cc -O3 -march=native`` and called through ctypes (the bandwidth reference).

Also: compile time per signature (median over fresh compilations of distinct
functions: decoration and a first call on 1,000 elements, since numbavec makes
machine code at a signature's first call) for numbavec and Numba, and ``import numbavec`` time in fresh
interpreters.  Markdown to stdout, everything as JSON under benchmarks/results/.

    python3 benchmarks/bench_vectorize.py [--quick] [--targets cpu,parallel]
"""
import argparse
import ctypes
import datetime
import importlib.util
import json
import math
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
SQRT_2PI = np.float32((2 * math.pi) ** 0.5)
SIG3 = "float32(float32, float32, float32)"
SIZES = [10**3, 10**4, 10**5, 10**6, 10**7]
QUICK_SIZES = [10**3, 10**5, 10**7]


# -- the kernels, as Python scalar functions and as NumPy expressions ---------

def saxpy(a, x, y):
    return a * x + y


def gaussian_pdf(x, mean, sigma):
    return math.exp(-0.5 * ((x - mean) / sigma) ** 2) / (sigma * SQRT_2PI)


def np_saxpy(a, x, y, out=None):
    if out is None:
        return a * x + y
    np.multiply(a, x, out=out)
    return np.add(out, y, out=out)


def np_gauss(x, mean, sigma, out=None):
    if out is None:
        return np.exp(-0.5 * ((x - mean) / sigma) ** 2) / (sigma * SQRT_2PI)
    np.subtract(x, mean, out=out)
    np.divide(out, sigma, out=out)
    np.square(out, out=out)
    np.multiply(out, np.float32(-0.5), out=out)
    np.exp(out, out=out)
    return np.divide(out, sigma * SQRT_2PI, out=out)


KERNELS = {
    # name: (python function, NumPy version, bytes moved per element, args(n))
    "saxpy": (saxpy, np_saxpy, 12,
              lambda x, y: (np.float32(2.5), x, y)),
    "gaussian_pdf": (gaussian_pdf, np_gauss, 8,
                     lambda x, y: (x, np.float32(0.25), np.float32(1.5))),
}


# -- timing ------------------------------------------------------------------

def best_time(fn, repeat, min_sample):
    """Best per-call time: each of `repeat` samples runs enough calls to last
    at least `min_sample` seconds (timeit's autorange, then best-of-k)."""
    fn()  # warm: first-touch of outputs, lazy initialisation
    number = 1
    while True:
        t0 = time.perf_counter()
        for _ in range(number):
            fn()
        dt = time.perf_counter() - t0
        if dt >= min_sample or number >= 1 << 20:
            break
        number *= max(2, min(10, int(min_sample / max(dt, 1e-9)) + 1))
    best = dt / number
    for _ in range(repeat - 1):
        t0 = time.perf_counter()
        for _ in range(number):
            fn()
        best = min(best, (time.perf_counter() - t0) / number)
    return best


# -- implementations ---------------------------------------------------------

C_SAXPY = r"""
void saxpy(long n, float a, const float *restrict x, const float *restrict y,
           float *restrict out)
{
    for (long i = 0; i < n; i++) {
        out[i] = a * x[i] + y[i];
    }
}
"""


def build_c_saxpy(tmpdir):
    """The C loop as a ctypes function, or (None, reason)."""
    cc = os.environ.get("CC") or shutil.which("cc") or shutil.which("gcc")
    if cc is None:
        return None, "no C compiler"
    src = os.path.join(tmpdir, "saxpy.c")
    lib = os.path.join(tmpdir, "saxpy.so")
    with open(src, "w") as fh:
        fh.write(C_SAXPY)
    cmd = [cc, "-O3", "-march=native", "-shared", "-fPIC", src, "-o", lib]
    proc = subprocess.run(cmd, capture_output=True, text=True)
    if proc.returncode != 0:
        return None, f"{' '.join(cmd)} failed: {proc.stderr.strip()}"
    fn = ctypes.CDLL(lib).saxpy
    fn.restype = None
    fn.argtypes = [ctypes.c_long, ctypes.c_float, ctypes.c_void_p, ctypes.c_void_p,
                   ctypes.c_void_p]
    return fn, " ".join(cmd[:3])


def c_saxpy_caller(fn):
    def call(a, x, y, out=None):
        if out is None:
            out = np.empty_like(x)
        fn(x.size, float(a), x.ctypes.data, y.ctypes.data, out.ctypes.data)
        return out
    return call


def ufunc_caller(uf):
    def call(*args, out=None):
        return uf(*args) if out is None else uf(*args, out=out)
    return call


def make_impls(args, notes):
    """{kernel: {impl name: callable(*args, out=None)}}."""
    impls = {k: {"NumPy": v[1]} for k, v in KERNELS.items()}
    if args.targets:
        try:
            from numbavec import vectorize as nv_vectorize
        except Exception as exc:  # noqa: BLE001
            notes.append(f"numbavec.vectorize unavailable: {type(exc).__name__}: {exc}")
        else:
            for target in args.targets:
                for k, (pyfn, *_rest) in KERNELS.items():
                    try:
                        uf = nv_vectorize([SIG3], target=target)(pyfn)
                    except Exception as exc:  # noqa: BLE001
                        notes.append(f"numbavec {target} {k}: {type(exc).__name__}: {exc}")
                        continue
                    impls[k][f"numbavec {target}"] = ufunc_caller(uf)
    if not args.no_numba:
        numba = import_numba(notes)
        if numba is not None:
            for target in ("cpu", "parallel"):
                for k, (pyfn, *_rest) in KERNELS.items():
                    try:
                        uf = numba.vectorize([SIG3], target=target)(pyfn)
                    except Exception as exc:  # noqa: BLE001
                        notes.append(f"Numba {target} {k}: {type(exc).__name__}: {exc}")
                        continue
                    impls[k][f"Numba {target}"] = ufunc_caller(uf)
    if not args.no_c:
        fn, how = build_c_saxpy(args.tmpdir)
        if fn is None:
            notes.append(f"C loop skipped: {how}")
        else:
            impls["saxpy"]["C loop"] = c_saxpy_caller(fn)
            notes.append(f"C loop: {how}")
    return impls


def import_numba(notes):
    try:
        import numba
    except Exception as exc:  # noqa: BLE001
        notes.append(f"Numba skipped ({type(exc).__name__}: {exc}); "
                     "`pip install numba` to include it")
        return None
    notes.append(f"Numba {numba.__version__}, {numba.config.NUMBA_NUM_THREADS} threads "
                 f"(threading layer chosen on first parallel call)")
    return numba


# -- throughput runs ---------------------------------------------------------

def run_throughput(impls, args):
    rng = np.random.default_rng(1)
    results = []
    for n in args.sizes:
        x = rng.uniform(-3, 3, n).astype(np.float32)
        y = rng.uniform(-3, 3, n).astype(np.float32)
        out = np.empty_like(x)
        for kname, (_pyfn, _npfn, nbytes, make_args) in KERNELS.items():
            kargs = make_args(x, y)
            ref = impls[kname]["NumPy"](*kargs)
            for iname, fn in impls[kname].items():
                got = fn(*kargs, out=out)
                ok = bool(np.allclose(got, ref, rtol=1e-5, atol=1e-6))
                row = {"kernel": kname, "impl": iname, "n": n, "bytes": nbytes * n,
                       "agrees": ok}
                row["t_out"] = best_time(lambda: fn(*kargs, out=out), args.repeat,
                                         args.min_sample)
                if iname != "C loop":
                    row["t_alloc"] = best_time(lambda: fn(*kargs), args.repeat,
                                               args.min_sample)
                results.append(row)
                if not ok:
                    print(f"WARNING: {iname} disagrees with NumPy on {kname} n={n}",
                          file=sys.stderr)
        del x, y, out
    return results


def fmt_time(t):
    if t is None:
        return "-"
    if t < 1e-3:
        return f"{t * 1e6:.1f} µs"
    return f"{t * 1e3:.2f} ms"


def fmt_ratio(num, den):
    return "-" if num is None or den is None else f"{num / den:.2f}x"


def throughput_tables(results, key):
    """Markdown: per kernel, a row per (N, implementation) with its time, its
    bandwidth and its speed-ups (ratio = other's time / this time)."""
    lines = []
    for kname in KERNELS:
        rows = [r for r in results if r["kernel"] == kname and key in r]
        if not rows:
            continue
        has_c = key == "t_out" and any(r["impl"] == "C loop" for r in rows)
        head = ["N", "implementation", "time", "GB/s", "NumPy / this", "Numba / this"]
        head += ["% of C loop GB/s"] if has_c else []
        mode = "out= preallocated" if key == "t_out" else "allocating call"
        lines += [f"#### {kname}, {mode}", "", "| " + " | ".join(head) + " |",
                  "|---:|---|" + "---:|" * (len(head) - 2)]
        for n in sorted({r["n"] for r in rows}):
            t = {r["impl"]: r[key] for r in rows if r["n"] == n}
            for r in (r for r in rows if r["n"] == n):
                name, mine = r["impl"], r[key]
                twin = "Numba " + name.split(" ", 1)[1] if name.startswith("numbavec") else None
                cells = [f"{n:.0e}".replace("+0", ""), name, fmt_time(mine),
                         f"{r['bytes'] / mine / 1e9:.1f}",
                         fmt_ratio(t.get("NumPy"), mine) if name != "NumPy" else "",
                         fmt_ratio(t.get(twin), mine) if twin in t else ""]
                if has_c:
                    cells.append(f"{100 * t['C loop'] / mine:.0f}%" if "C loop" in t else "-")
                lines.append("| " + " | ".join(cells) + " |")
        lines.append("")
    return lines


# -- compile time ------------------------------------------------------------

KERNEL_TEMPLATE = '''
def k{i}(x, mean, sigma):
    """Gaussian pdf with a distinct constant, compiled once."""
    z = (x - mean) / sigma + {c}
    return math.exp(-0.5 * z ** 2) / (sigma * SQRT_2PI)
'''


def fresh_kernels(tmpdir, tag, count):
    """`count` distinct functions in a real module file (inspect.getsource
    works on them), imported under a fresh name."""
    path = os.path.join(tmpdir, f"bench_kernels_{tag}.py")
    with open(path, "w") as fh:
        fh.write("import math\nimport numpy as np\n"
                 "SQRT_2PI = np.float32((2 * math.pi) ** 0.5)\n")
        for i in range(count + 1):
            fh.write(KERNEL_TEMPLATE.format(i=i, c=f"{0.001 * (i + 1):.3f}"))
    spec = importlib.util.spec_from_file_location(f"bench_kernels_{tag}", path)
    mod = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = mod
    spec.loader.exec_module(mod)
    return [getattr(mod, f"k{i}") for i in range(count + 1)]


def compile_times(decorate, funcs):
    """(first compile, median of the others) in seconds: decoration and one
    call, the time to a first result."""
    x = np.linspace(-3, 3, 1000, dtype=np.float32)
    times = []
    for f in funcs:
        t0 = time.perf_counter()
        decorate(f)(x, np.float32(0.5), np.float32(1.5))
        times.append(time.perf_counter() - t0)
    return times[0], statistics.median(times[1:]), times


def run_compile(args, notes):
    out = {}
    for target in args.targets:
        try:
            from numbavec import vectorize as nv_vectorize
            funcs = fresh_kernels(args.tmpdir, f"nv_{target}", args.compile_count)
            out[f"numbavec {target}"] = compile_times(
                lambda f: nv_vectorize([SIG3], target=target)(f), funcs)
        except Exception as exc:  # noqa: BLE001
            notes.append(f"numbavec {target} compile timing: {type(exc).__name__}: {exc}")
    if not args.no_numba:
        try:
            import numba
            for target in ("cpu", "parallel"):
                funcs = fresh_kernels(args.tmpdir, f"numba_{target}", args.compile_count)
                out[f"Numba {target}"] = compile_times(
                    lambda f: numba.vectorize([SIG3], target=target)(f), funcs)
        except Exception as exc:  # noqa: BLE001
            notes.append(f"Numba compile timing: {type(exc).__name__}: {exc}")
    return out


# -- import time -------------------------------------------------------------

def import_time(module, runs, pythonpath):
    code = ("import time, sys; t = time.perf_counter(); import " + module +
            "; print(time.perf_counter() - t)")
    env = dict(os.environ, PYTHONPATH=pythonpath)
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    times = []
    for _ in range(runs + 1):  # the first run also writes .pyc files: dropped
        proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                              env=env, cwd=tempfile.gettempdir())
        if proc.returncode != 0:
            return None
        times.append(float(proc.stdout.split()[-1]))
    return statistics.median(times[1:])


def run_import(args, numbavec_parent):
    res = {}
    for mod in ("numpy", "numbavec") + (() if args.no_numba else ("numba",)):
        res[mod] = import_time(mod, args.import_runs, numbavec_parent)
    return res


# -- main --------------------------------------------------------------------

def parse_args(argv):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--quick", action="store_true",
                   help="N = 1e3, 1e5, 1e7, fewer repeats and compilations")
    p.add_argument("--targets", default="cpu,parallel",
                   help="numbavec targets, comma-separated (default: cpu,parallel; "
                        "'' for none)")
    p.add_argument("--sizes", help="comma-separated N (default 1e3,1e4,1e5,1e6,1e7)")
    p.add_argument("--no-numba", action="store_true", help="leave Numba out")
    p.add_argument("--no-c", action="store_true", help="leave the C loop out")
    p.add_argument("--json", help="where to write the JSON (default benchmarks/results/...)")
    a = p.parse_args(argv)
    a.targets = [t.strip() for t in a.targets.split(",") if t.strip()]
    if a.sizes:
        a.sizes = [int(float(s)) for s in a.sizes.split(",")]
    else:
        a.sizes = QUICK_SIZES if a.quick else SIZES
    a.repeat = 3 if a.quick else 7
    a.min_sample = 0.002 if a.quick else 0.01
    a.compile_count = 5 if a.quick else 20
    a.import_runs = 3 if a.quick else 7
    return a


def system_lines():
    lines = [f"- Python {platform.python_version()}, NumPy {np.__version__}, "
             f"{platform.machine()}, {os.cpu_count()} CPUs "
             f"({len(os.sched_getaffinity(0))} usable)"]
    try:
        import numbavec
        from numbavec import sysinfo
        s = sysinfo.collect()
        lines.append(f"- numbavec {s['numbavec']} from {s['numbavec_path']}, "
                     f"LLVM {s['llvm_version']}, CPU {s['cpu_name'] or s['cpu_model']}, "
                     f"threads {s['num_threads'] if s['num_threads'] is not None else '?'}")
        return lines, s, os.path.dirname(os.path.dirname(numbavec.__file__))
    except Exception as exc:  # noqa: BLE001
        lines.append(f"- numbavec not importable: {type(exc).__name__}: {exc}")
        return lines, None, ""


def main(argv=None):
    args = parse_args(argv)
    notes = []
    load_before = os.getloadavg()[0]      # other processes' share of the cores
    with tempfile.TemporaryDirectory(prefix="nvbench-") as tmpdir:
        args.tmpdir = tmpdir
        sys_lines, sysinfo, nv_parent = system_lines()
        impls = make_impls(args, notes)
        t0 = time.perf_counter()
        results = run_throughput(impls, args)
        compiles = run_compile(args, notes)
        imports = run_import(args, nv_parent)
        elapsed = time.perf_counter() - t0

    md = ["## numbavec @vectorize benchmark", "", *sys_lines]
    md += [f"- {n}" for n in notes]
    md += [f"- best of {args.repeat} samples of >= {args.min_sample * 1e3:.0f} ms each; "
           "float32; GB/s counts the bytes the kernel must move "
           "(saxpy 12 per element, gaussian_pdf 8); 'X / this' = X's time / this row's time "
           "(> 1: this row is faster); the C loop pays a ctypes call (~µs), so it is the "
           "bandwidth reference for large N only", ""]
    md += throughput_tables(results, "t_out")
    md += throughput_tables(results, "t_alloc")
    if compiles:
        md += ["#### compile time per signature (distinct functions, one signature each: "
               "decoration and a first call)", "",
               "| compiler | median | first (incl. initialisation) | n |",
               "|---|---:|---:|---:|"]
        for name, (first, med, all_t) in compiles.items():
            md.append(f"| {name} | {med * 1e3:.2f} ms | {first * 1e3:.1f} ms | "
                      f"{len(all_t) - 1} |")
        md.append("")
    md += ["#### import time (fresh interpreter, median)", "",
           "| module | time |", "|---|---:|"]
    for mod, t in imports.items():
        md.append(f"| `import {mod}` | {fmt_time(t)} |")
    if imports.get("numbavec") and imports.get("numpy"):
        md.append(f"| numbavec beyond numpy | "
                  f"{fmt_time(imports['numbavec'] - imports['numpy'])} |")
    bad = [r for r in results if not r["agrees"]]
    if bad:
        md += ["", "**Disagreements with NumPy:** " +
               ", ".join(f"{r['impl']} {r['kernel']} n={r['n']}" for r in bad)]
    md += ["", f"_(measured in {elapsed:.0f} s)_"]
    print("\n".join(md))

    path = args.json
    if path is None:
        stamp = datetime.datetime.now().strftime("%Y%m%d-%H%M%S")
        path = os.path.join(HERE, "results", f"bench_vectorize-{stamp}.json")
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    with open(path, "w") as fh:
        numba = importlib.util.find_spec("numba") and importlib.import_module("numba")
        json.dump({"date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d"),
                   "load": [load_before, os.getloadavg()[0]],
                   "numba": getattr(numba, "__version__", None),
                   "args": {k: v for k, v in vars(args).items() if k != "tmpdir"},
                   "sysinfo": sysinfo, "notes": notes, "throughput": results,
                   "compile": {k: {"first": v[0], "median": v[1], "all": v[2]}
                               for k, v in compiles.items()},
                   "import": imports}, fh, indent=1, default=str)
    print(f"\nJSON: {path}", file=sys.stderr)
    sys.path.insert(0, HERE)
    from plot import write_pictures

    for svg in write_pictures(results, os.path.splitext(path)[0]):
        print(f"picture: {svg}", file=sys.stderr)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
