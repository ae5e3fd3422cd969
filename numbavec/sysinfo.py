"""System summary and a small before/after demo, for ``python -m numbavec``.

Everything here reads what the extension reports about itself (LLVM version,
host CPU, thread count) and probes the machine for CUDA without needing it:
no CUDA library is required to import or run this module.  Each probe is
guarded, so a partial build still prints what it can.
"""
import ctypes
import glob
import importlib.util
import inspect
import math
import os
import platform
import sys
import textwrap
import time

import numpy as np

import numbavec
from numbavec import _core

SQRT_2PI = np.float32((2 * math.pi) ** 0.5)
DEMO_SIG = "float32(float32, float32, float32)"
DEMO_N = 1_000_000


def gaussian_pdf(x, mean, sigma):
    """Gaussian probability density at x (the benchmarks' second kernel:
    benchmarks/bench_vectorize.py)."""
    return math.exp(-0.5 * ((x - mean) / sigma) ** 2) / (sigma * SQRT_2PI)


def gaussian_pdf_numpy(x, mean, sigma):
    return np.exp(-0.5 * ((x - mean) / sigma) ** 2) / (sigma * SQRT_2PI)


# -- probes ------------------------------------------------------------------

def _call(fn, *args):
    """(value, None) or (None, 'reason') for an optional piece of _core."""
    try:
        return fn(*args), None
    except Exception as exc:  # noqa: BLE001 - reported, not hidden
        return None, f"{type(exc).__name__}: {exc}"


def jit_info():
    """_core._jit_info() as a dict, or {'error': reason}."""
    fn = getattr(_core, "_jit_info", None)
    if fn is None:
        return {"error": "numbavec._core._jit_info is not in this build"}
    info, err = _call(fn)
    return info if err is None else {"error": err}


def cpu_features(info):
    """The enabled features as a sorted list ('+avx2,-sse4a,...' or a list)."""
    feats = info.get("features")
    if feats is None:
        return []
    if isinstance(feats, str):
        feats = feats.split(",")
    out = []
    for f in feats:
        f = f.strip()
        if f.startswith("-") or not f:
            continue
        out.append(f.lstrip("+"))
    return sorted(out)


def cpu_model():
    try:
        with open("/proc/cpuinfo") as fh:
            for line in fh:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def usable_cores():
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return os.cpu_count() or 1


def num_threads():
    fn = getattr(_core, "get_num_threads", None)
    if fn is None:
        return None, "numbavec._core.get_num_threads is not in this build"
    return _call(fn)


def cuda_roots():
    roots = [os.environ.get("CUDA_HOME"), os.environ.get("CUDA_PATH")]
    roots += sorted(glob.glob("/usr/local/cuda*"))
    for p in sys.path:  # NVIDIA's pip wheels (nvidia-cuda-nvcc-cu12 and the like)
        roots += sorted(glob.glob(os.path.join(p, "nvidia", "cuda_nvcc")))
        roots += sorted(glob.glob(os.path.join(p, "nvidia", "cu*")))
    seen, out = set(), []
    for r in roots:
        if r and os.path.isdir(r) and os.path.realpath(r) not in seen:
            seen.add(os.path.realpath(r))
            out.append(r)
    return out


def find_nvvm():
    """(libnvvm paths, libdevice paths) under the usual CUDA roots."""
    nvvm, libdevice = [], []
    for root in cuda_roots():
        nvvm += glob.glob(os.path.join(root, "nvvm", "lib*", "libnvvm.so*"))
        libdevice += glob.glob(os.path.join(root, "nvvm", "libdevice", "libdevice*.bc"))
    return sorted(set(nvvm)), sorted(set(libdevice))


def cuda_driver():
    """(True, detail) when libcuda.so.1 loads, else (False, reason)."""
    try:
        lib = ctypes.CDLL("libcuda.so.1")
    except OSError as exc:
        return False, f"libcuda.so.1 not loadable ({exc})"
    version = ctypes.c_int(0)
    try:
        if lib.cuInit(0) != 0:
            return False, "libcuda.so.1 found but cuInit failed (no usable GPU?)"
        lib.cuDriverGetVersion(ctypes.byref(version))
    except AttributeError:
        return True, "libcuda.so.1 found"
    v = version.value
    return True, f"libcuda.so.1, driver API {v // 1000}.{v % 1000 // 10}"


def cuda_target():
    """(available, reason) for the cuda target."""
    if importlib.util.find_spec("numbavec.cuda") is None:
        return False, "the cuda target is coming: not implemented yet"
    try:
        from numbavec import cuda
    except Exception as exc:  # noqa: BLE001
        return False, f"numbavec.cuda failed to import ({type(exc).__name__}: {exc})"
    is_available = getattr(cuda, "is_available", None)
    if is_available is None:
        return False, "numbavec.cuda has no is_available()"
    ok, err = _call(is_available)
    if err is not None:
        return False, err
    if ok:
        return True, "ready"
    reason, _ = _call(cuda.unavailable_reason)
    return False, reason or "no CUDA driver or device"


def cuda_details():
    """(devices, driver_version, toolkit) as numbavec.cuda sees them: the
    devices only when a driver is usable; toolkit is what PTX generation
    uses (libNVVM and libdevice paths, NVVM version)."""
    try:
        from numbavec import cuda
    except Exception:  # noqa: BLE001 - reported by cuda_target()
        return [], None, {}
    toolkit, _ = _call(cuda.toolkit_info)
    devices, version = [], None
    if cuda.is_available():
        info, _ = _call(_core._cuda_detect)
        if info:
            devices, version = info["devices"], info["driver_version"]
    return devices, version, toolkit or {}


# -- report ------------------------------------------------------------------

def collect():
    """Everything --sysinfo prints, as a dict (also used by the benchmark)."""
    info = jit_info()
    threads, threads_err = num_threads()
    drv_ok, drv_detail = cuda_driver()
    nvvm, libdevice = find_nvvm()
    cuda_ok, cuda_reason = cuda_target()
    devices, driver_version, toolkit = cuda_details()
    return {
        "numbavec": getattr(numbavec, "__version__", "?"),
        "numbavec_path": os.path.dirname(numbavec.__file__),
        "core_path": _core.__file__,
        "python": f"{platform.python_implementation()} {platform.python_version()}",
        "numpy": np.__version__,
        "llvm_version": getattr(_core, "llvm_version", "?"),
        "platform": platform.platform(),
        "cpu_model": cpu_model(),
        "cpu_name": info.get("cpu"),
        "cpu_features": cpu_features(info),
        "libmvec": info.get("libmvec"),
        "jit_error": info.get("error"),
        "usable_cores": usable_cores(),
        "num_threads": threads,
        "num_threads_error": threads_err,
        "NUMBAVEC_NUM_THREADS": os.environ.get("NUMBAVEC_NUM_THREADS"),
        "cuda_available": cuda_ok,
        "cuda_reason": cuda_reason,
        "cuda_driver": drv_detail if drv_ok else None,
        "cuda_driver_error": None if drv_ok else drv_detail,
        "libnvvm": nvvm,
        "libdevice": libdevice,
        "cuda_devices": devices,
        "cuda_driver_version": driver_version,
        "cuda_toolkit": toolkit,
    }


def _line(out, key, value):
    out.append(f"  {key:<22} {value}")


def format_sysinfo(s):
    out = ["numbavec system information", ""]
    out.append("Versions")
    _line(out, "numbavec", f"{s['numbavec']}  ({s['numbavec_path']})")
    _line(out, "Python", s["python"])
    _line(out, "NumPy", s["numpy"])
    _line(out, "LLVM", s["llvm_version"])
    _line(out, "platform", s["platform"])
    out += ["", "Host CPU"]
    _line(out, "model", s["cpu_model"])
    if s["jit_error"]:
        _line(out, "JIT target", f"unknown ({s['jit_error']})")
    else:
        _line(out, "LLVM CPU name", s["cpu_name"])
        _line(out, "libmvec (SIMD math)", "yes" if s["libmvec"] else "no")
        feats = " ".join(s["cpu_features"]) or "(none reported)"
        wrapped = textwrap.wrap(feats, 74)
        _line(out, "features", wrapped[0])
        out += [" " * 25 + w for w in wrapped[1:]]
    out += ["", "Targets"]
    _line(out, "cpu", "available")
    if s["num_threads"] is not None:
        _line(out, "parallel", f"available, {s['num_threads']} threads "
              f"({s['usable_cores']} usable cores)")
    else:
        _line(out, "parallel", f"thread count unknown ({s['num_threads_error']})")
    cuda = "available" if s["cuda_available"] else "not available"
    _line(out, "cuda", f"{cuda}: {s['cuda_reason']}")
    # each problem once: the target's reason names the driver's already
    said = "libcuda" in (s["cuda_reason"] or "")
    _line(out, "  CUDA driver", s["cuda_driver"] or ("none (above)" if said
                                                     else s["cuda_driver_error"]))
    if s.get("cuda_driver_version"):
        _line(out, "  driver version", "%d.%d" % tuple(s["cuda_driver_version"]))
    for d in s.get("cuda_devices") or []:
        cc = d["compute_capability"]
        _line(out, f"  device {d['index']}",
              f"{d['name']}, compute capability {cc[0]}.{cc[1]}, "
              f"{d['multiprocessors']} SMs, {d['total_memory'] / 2**30:.1f} GiB")
    tk = s.get("cuda_toolkit") or {}
    nvvm_used = tk.get("libnvvm")
    if nvvm_used and tk.get("nvvm_version"):
        nvvm_used += " (NVVM %d.%d)" % tuple(tk["nvvm_version"])
    _line(out, "  libNVVM", nvvm_used or ", ".join(s["libnvvm"]) or "not found")
    _line(out, "  libdevice", tk.get("libdevice") or ", ".join(s["libdevice"]) or "not found")
    backend = os.environ.get("NUMBAVEC_CUDA_BACKEND") or (
        "nvvm" if nvvm_used and not tk.get("nvvm_error") else "llvm")
    _line(out, "  PTX back end", f"{backend} (NUMBAVEC_CUDA_BACKEND=nvvm|llvm)")
    out += ["", "Threads"]
    _line(out, "get_num_threads()", s["num_threads"] if s["num_threads"] is not None
          else "n/a")
    _line(out, "NUMBAVEC_NUM_THREADS", s["NUMBAVEC_NUM_THREADS"] or "(unset)")
    _line(out, "usable cores", s["usable_cores"])
    return "\n".join(out)


# -- demo --------------------------------------------------------------------

def best_of(fn, repeat=5):
    best = math.inf
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t0)
    return best


def _numba_vectorize():
    """numba.vectorize when Numba is installed (and imports), else None."""
    if importlib.util.find_spec("numba") is None:
        return None
    try:
        import numba
    except Exception:  # noqa: BLE001 - a broken Numba is left out of the demo
        return None
    return numba.vectorize


NEXT_STEPS = [
    ("numbavec -s", "this machine's summary alone (as `numba -s`; --json for a program)"),
    ("python -c 'import numbavec; help(numbavec.vectorize)'",
     "the decorators, their options and targets"),
    ("NUMBAVEC_DUMP=opt,asm python your_script.py",
     "the optimised IR and machine code of what you compile"),
]


def run_demo(n=DEMO_N, targets=("cpu", "parallel"), numba=True):
    """The before/after run; returns (report lines, ok).  The kernel timed
    is shown, next to the NumPy expression it replaces and, when Numba is
    installed, Numba's @vectorize of the same function."""
    from numbavec import vectorize

    rng = np.random.default_rng(0)
    x = rng.uniform(-3, 3, size=n).astype(np.float32)
    mean, sigma = np.float32(0.0), np.float32(1.0)
    ref = gaussian_pdf_numpy(x, mean, sigma)
    t_np = best_of(lambda: gaussian_pdf_numpy(x, mean, sigma))
    lines = [f"Demo: the Gaussian pdf of {n:,} float32 values, best of 5 allocating calls.",
             "The kernel, compiled for each target:", "",
             f"    @vectorize(['{DEMO_SIG}'], target=...)",
             *textwrap.indent(inspect.getsource(gaussian_pdf), "    ").splitlines(),
             "", "against the NumPy expression it replaces:", "",
             "    np.exp(-0.5 * ((x - mean) / sigma) ** 2) / (sigma * SQRT_2PI)", "",
             f"  {'':<26} {'time':>11}  {'vs NumPy':>8}  {'compile':>10}",
             "  (compile: decoration and a first call, where numbavec makes the machine code)",
             f"  {'NumPy expression':<26} {t_np * 1e3:8.2f} ms  {1:7.2f}x"]
    ok = True
    makers = [(f"numbavec {target!r}", lambda t=target: vectorize([DEMO_SIG], target=t))
              for target in targets]
    numba_vectorize = _numba_vectorize() if numba else None
    if numba_vectorize is not None:
        makers.append(("Numba @vectorize 'cpu'", lambda: numba_vectorize([DEMO_SIG])))
    for name, make in makers:
        t0 = time.perf_counter()
        uf = make()(gaussian_pdf)
        uf(x[:16], 0.0, 1.0)  # too short for the pool, whose start is not compilation
        t_compile = time.perf_counter() - t0
        got = uf(x, 0.0, 1.0)
        agree = bool(np.allclose(got, ref, rtol=1e-5, atol=1e-7)) and got.dtype == np.float32
        ok &= agree
        t = best_of(lambda: uf(x, 0.0, 1.0))
        lines.append(f"  {name:<26} {t * 1e3:8.2f} ms  {t_np / t:7.2f}x  "
                     f"{t_compile * 1e3:7.1f} ms  "
                     f"{'agrees with NumPy' if agree else 'DISAGREES with NumPy'}")
    if numba_vectorize is None:
        lines.append("  (Numba is not installed: `pip install numba` adds it to this table)")
    else:
        import numba

        lines += [f"  (the Numba row: Numba {numba.__version__}'s @vectorize of the same function "
                  "and signature on its cpu target,",
                  "   timed the same way, for comparison; it is not part of numbavec)"]
    lines += ["", "Next:"]
    width = max(len(cmd) for cmd, _ in NEXT_STEPS)
    lines += [f"  {cmd:<{width}}   {what}" for cmd, what in NEXT_STEPS]
    return lines, ok
