#!/usr/bin/env python3
"""How much of published Numba-written ufunc libraries numbavec runs unchanged.

For each library (pinned versions below), a wheel is downloaded from PyPI
(or taken from --wheels) and unpacked into a temporary folder, and two
copies are made whose only changes are import and decorator lines:

  ufuncs  Numba's ``vectorize``/``guvectorize`` come from the recording shim
          (tools/libtrial_shim.py), which gives them to numbavec; helpers
          keep Numba's ``@njit``/``@jit``.
  all     ``jit``/``njit`` come from the shim too, and go to ``numbavec.jit``.

Each copy is imported in a subprocess (one per library and phase), where the
shim records every kernel: its signatures, layout, options, and whether
numbavec's decorator compiled it or the type and first line of the error
(falling back to Numba's decorator then, so that the import goes on).  The
same copy imported with the shim in phase ``numba`` gives the reference:
Numba's kernels, built from the same source.  Every kernel that compiled is
then called on generated inputs (shapes from its layout with small sizes,
dtypes from each signature, several seeds) in both processes and the results
compared; both are timed where a call is cheap (first call excluded), and
the compile times recorded.  Kernels without signatures (lazy ufuncs,
dynamic gufuncs) compile at their first call, with float64 inputs.

numbagg makes its gufuncs on first use; its driver here makes each one once
(target='cpu').  Its ``ndreduce`` kernels come from a rewritten AST run
through compile(); they are listed apart.

Libraries' other dependencies are not installed: a module the library
imports that is missing (xarray, pandas, ...) is replaced, for imports made
by the library's own files only, by a permissive stand-in that is reported.
SciPy is the exception: Numba needs it for np.linalg, so it is installed
(--deps) into the temporary folder.

  python tools/try_libraries.py                       # everything; 40-50 min here
  python tools/try_libraries.py --package numbagg --kernel move_mean
  python tools/try_libraries.py --wheels /tmp/libs --workdir /tmp/lt --json out.json
  python tools/try_libraries.py --workdir /tmp/lt --reuse numba   # numbavec's side only

Not run by CI: a measuring tool that downloads third-party code at run time
and never commits it.  See tools/README.md.
"""
import argparse
import ast
import contextlib
import difflib
import importlib
import importlib.abc
import importlib.util
import importlib.machinery
import json
import os
import pickle
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import types
import zipfile
import zlib

TOOLS = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(TOOLS)
SHIM = "libtrial_shim"

# name -> (PyPI name, version, import name); numbagg is driven, not only imported
PACKAGES = {
    "numbagg": ("numbagg", "0.9.6", "numbagg"),
    "scoringrules": ("scoringrules", "0.10.0", "scoringrules"),
    "properscoring": ("properscoring", "0.1", "properscoring"),
    "quantecon": ("quantecon", "0.11.4", "quantecon"),
    "sgkit": ("sgkit", "0.10.0", "sgkit"),
    "xarray-einstats": ("xarray-einstats", "0.9.1", "xarray_einstats"),
}
# the five libraries of issue 36's 110 kernels; numbagg is counted apart
UFUNC_LIBRARIES = ("scoringrules", "properscoring", "quantecon", "sgkit", "xarray-einstats")
DEPS = ("scipy==1.15.3",)

SWITCHED = {"ufuncs": ("vectorize", "guvectorize"),
            "all": ("vectorize", "guvectorize", "jit", "njit")}
PHASES = ("numba", "ufuncs", "all")

# the comparison's tolerances (floats; integers and booleans compare exactly)
TOLERANCE = {"float64": (1e-9, 1e-12), "float32": (1e-5, 1e-6),
             "complex128": (1e-9, 1e-12), "complex64": (1e-5, 1e-6)}
SEEDS = 3
CORE_SIZES = (5, 4, 6, 7, 8, 9, 10)      # core dimensions, by first appearance
BATCH = 3                                # loop dimension of the checking calls
TIMING_SCALE = 4                         # core sizes of the timed calls: x4
TIMING_ROWS = 4096                       # their loop dimension (x64 for a ufunc) grows
TIMED_S = 0.02                           # x4 until the slower call takes this long,
TIMING_ELEMENTS = 4 << 20                # while the arguments hold fewer elements
CHEAP_S = 1.0                            # a call slower than this is not timed

# Kernels whose contract their layout does not say (read from their source
# and docstrings): core sizes, and ranges of argument values, that generated
# inputs must meet.  Without them Numba reads and writes past the arrays
# (and may crash) where numbavec's bounds check raises IndexError, or the
# kernel refuses every input.  By key; "sizes" may name another symbol.
CONTRACTS = {
    # "the length of the last axis of r must be that of out minus 1"; r in [0, 1)
    "quantecon.random.utilities:_probvec": {"sizes": {"k": "n+1"}, "floats": {0: (0, 1)}},
    "quantecon.random.utilities:_probvec#2": {"sizes": {"k": "n+1"}, "floats": {0: (0, 1)}},
    # chooses k of range(n): n >= k; r in [0, 1)
    "quantecon.random.utilities:_sample_without_replacement": {"ints": {0: (80, 100)},
                                                               "floats": {1: (0, 1)}},
    # diploid, biallelic: 3 genotype probabilities, 2 calls
    "sgkit.stats.conversion_numba_fns:_convert_probability_to_call": {"sizes": {"p": 3,
                                                                                "k": 2}},
    # "genotype alleles must be sorted in ascending order"; out has one slot per
    # genotype: diploid (k=2) biallelic (alleles 0, 1) has 3
    "sgkit.stats.conversion_numba_fns:_count_sorted_genotypes": {
        "sizes": {"k": 2, "g": 3}, "ints": {0: (0, 2)}, "sorted": (0,)},
    # np.searchsorted of the first argument: sorted (else either answer is right)
    "xarray_einstats.numba:searchsorted_ufunc": {"sorted": (0,)},
}


# --------------------------------------------------------------------------
# Preparing the copies
# --------------------------------------------------------------------------

def fetch_wheel(name, version, wheels, dest):
    """The wheel's path: from --wheels if one matches, else pip download."""
    stem = f"{name.replace('-', '_')}-{version}-"
    for folder in wheels:
        for entry in sorted(os.listdir(folder)) if os.path.isdir(folder) else ():
            if entry.replace("-", "_").startswith(stem.replace("-", "_")) \
                    and entry.endswith(".whl"):
                return os.path.join(folder, entry)
    os.makedirs(dest, exist_ok=True)
    subprocess.run([sys.executable, "-m", "pip", "download", "-q", "--no-deps",
                    "--only-binary", ":all:", "-d", dest, f"{name}=={version}"], check=True)
    for entry in os.listdir(dest):
        if entry.replace("-", "_").startswith(stem.replace("-", "_")):
            return os.path.join(dest, entry)
    raise FileNotFoundError(f"pip download gave no wheel for {name}=={version}")


def install_deps(deps, dest):
    """Install deps (no dependencies of theirs) into dest, unless importable
    or there already."""
    missing = [d for d in deps if importlib.util.find_spec(re.split("[=<>]", d)[0]) is None
               and not os.path.isdir(os.path.join(dest, re.split("[=<>]", d)[0]))]
    if missing:
        subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--no-deps",
                        "--target", dest, *missing], check=True)
    return missing


def rewrite_source(text, names):
    """text with Numba's `names` (decorators) taken from the shim instead:
    ``from numba import a, guvectorize`` becomes ``from numba import a; from
    libtrial_shim import guvectorize`` and ``numba.guvectorize`` becomes
    ``libtrial_shim.guvectorize`` (with ``import libtrial_shim`` added to the
    ``import numba`` line).  Line numbers are kept.  -> (new text, changed)."""
    tree = ast.parse(text)
    lines = text.splitlines(keepends=True)
    starts = [0]
    for line in lines:
        starts.append(starts[-1] + len(line))

    def offset(lineno, col):     # ast columns count UTF-8 bytes
        line = lines[lineno - 1]
        return starts[lineno - 1] + len(line.encode()[:col].decode(errors="ignore"))

    edits = []                   # (start, end, replacement)
    modules = [node for node in ast.walk(tree) if isinstance(node, ast.Import)
               and any(a.name == "numba" for a in node.names)]
    aliases = {a.asname or a.name for node in modules for a in node.names if a.name == "numba"}
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module == "numba" and not node.level:
            moved = [a for a in node.names if a.name in names]
            if moved:
                kept = [a for a in node.names if a.name not in names]
                parts = [f"from numba import {_aliases(kept)}"] if kept else []
                parts.append(f"from {SHIM} import {_aliases(moved)}")
                span = node.end_lineno - node.lineno
                edits.append((offset(node.lineno, node.col_offset),
                              offset(node.end_lineno, node.end_col_offset),
                              "; ".join(parts) + "\n" * span))
        elif isinstance(node, ast.Attribute) and node.attr in names \
                and isinstance(node.value, ast.Name) and node.value.id in aliases:
            edits.append((offset(node.lineno, node.col_offset),
                          offset(node.end_lineno, node.end_col_offset), f"{SHIM}.{node.attr}"))
    if any(e[2].startswith(SHIM) for e in edits):
        for node in modules:
            end = offset(node.end_lineno, node.end_col_offset)
            edits.append((end, end, f"; import {SHIM}"))
    for start, end, new in sorted(edits, reverse=True):
        text = text[:start] + new + text[end:]
    return text, bool(edits)


def _aliases(names):
    return ", ".join(a.name if not a.asname else f"{a.name} as {a.asname}" for a in names)


def make_copy(pristine, dest, mode):
    """Copy the unpacked wheel to dest, rewriting the decorators of mode;
    -> the unified diff of the changes."""
    shutil.copytree(pristine, dest)
    diff = []
    for folder, _, files in os.walk(dest):
        for name in sorted(files):
            if not name.endswith(".py"):
                continue
            path = os.path.join(folder, name)
            with open(path, encoding="utf-8") as f:
                old = f.read()
            try:
                new, changed = rewrite_source(old, SWITCHED[mode])
            except SyntaxError:
                continue
            if changed:
                with open(path, "w", encoding="utf-8") as f:
                    f.write(new)
                rel = os.path.relpath(path, dest)
                diff += difflib.unified_diff(old.splitlines(True), new.splitlines(True),
                                             f"a/{rel}", f"b/{rel}", n=0)
    return "".join(diff)


# --------------------------------------------------------------------------
# The worker: one library, one phase, in a process of its own
# --------------------------------------------------------------------------

class _Stand_in:
    """What a missing third-party module gives the library's files: any
    attribute, call, item or base class, so that definitions importing it at
    module level go through; nothing a kernel computes uses it."""

    def __init__(self, name):
        self._name = name

    def __getattr__(self, attr):
        if attr.startswith("__") and attr.endswith("__"):
            raise AttributeError(attr)
        return _Stand_in(f"{self._name}.{attr}")

    def __call__(self, *args, **kwargs):
        return _Stand_in(f"{self._name}()")

    def __getitem__(self, item):
        return _Stand_in(f"{self._name}[]")

    def __iter__(self):
        return iter(())

    def __mro_entries__(self, bases):
        return (object,)

    def __repr__(self):
        return f"<stand-in {self._name}>"


def _is_machinery(filename):
    """Files of the import system (and this one), between an import
    statement and a finder."""
    return filename.startswith("<frozen") or filename == __file__ \
        or f"{os.sep}importlib{os.sep}" in filename


class _MissingModules(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """Last on sys.meta_path: a module that nothing else finds, imported by
    a file under root, becomes a stand-in; imports by anything else (Numba
    probing for SciPy, say) still fail as they would."""

    def __init__(self, root, package):
        self.root, self.package, self.names = root, package, set()

    def find_spec(self, name, path=None, target=None):
        frame = sys._getframe(1)
        while frame is not None and _is_machinery(frame.f_code.co_filename):
            frame = frame.f_back
        if frame is None or not frame.f_code.co_filename.startswith(self.root):
            return None
        # the library's own names in full (a name its bypassed __init__ would
        # have defined: sgkit.load_dataset), others by their top-level package
        self.names.add(name if name.split(".")[0] == self.package else name.split(".")[0])
        return importlib.machinery.ModuleSpec(name, self, is_package=True)

    def create_module(self, spec):  # noqa: D102
        module = types.ModuleType(spec.name)
        module.__path__ = []
        module.__getattr__ = lambda attr: _Stand_in(f"{spec.name}.{attr}")
        return module

    def exec_module(self, module):
        pass


def kernel_modules(root, package):
    """Dotted names of the library's modules that mention vectorize (every
    module defining a kernel does), tests excluded."""
    out = []
    for path in _python_files(os.path.join(root, package)):
        with open(path, encoding="utf-8") as f:
            if "vectorize" in f.read():
                rel = os.path.relpath(path, root)[:-3]
                out.append(rel.replace(os.sep, ".").removesuffix(".__init__"))
    return out


def import_module(name, notes):
    """Import name; where a package's __init__ fails (a stand-in that is not
    enough), import its modules under a bare package instead."""
    try:
        importlib.import_module(name)
        return
    except Exception as exc:
        first = f"{type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}"
    parts = name.split(".")
    for i in range(1, len(parts)):
        parent = ".".join(parts[:i])
        if parent in sys.modules:
            continue
        try:
            importlib.import_module(parent)
        except Exception as exc:
            spec = importlib.util.find_spec(parent)
            bare = types.ModuleType(parent)
            bare.__path__ = list(spec.submodule_search_locations)
            bare.__file__ = spec.origin
            sys.modules[parent] = bare
            notes.append(f"{parent}/__init__.py bypassed ({type(exc).__name__}: "
                         f"{str(exc).splitlines()[0] if str(exc) else ''})")
    try:
        importlib.import_module(name)
    except Exception as exc:
        notes.append(f"{name} not imported: {first}; then {type(exc).__name__}: {exc}")


def drive_numbagg(shim, notes):
    """Make each numbagg gufunc once, as its first call would (target='cpu')."""
    import numpy as np
    from numbagg import decorators as d
    for modname in ("funcs", "moving", "moving_exp", "grouped", "moving_matrix"):
        module = importlib.import_module(f"numbagg.{modname}")
        for name, obj in sorted(vars(module).items()):
            if not isinstance(obj, d.NumbaBase) or getattr(obj, "__module__", None) \
                    != module.__name__:
                continue
            with shim.labelled(name):
                try:
                    if isinstance(obj, d.ndreduce):
                        obj.gufunc(1, target="cpu")
                    elif isinstance(obj, d.groupndreduce):
                        obj.gufunc(1, np.dtype("float64"), np.dtype("int64"), target="cpu")
                    elif isinstance(obj, d.ndfill):
                        obj.gufunc(np.dtype("float64"), target="cpu")
                    else:
                        obj.gufunc(target="cpu")
                except Exception as exc:
                    notes.append(f"numbagg.{modname}.{name}: making its gufunc raised "
                                 f"{type(exc).__name__}: {str(exc)[:200]}")


def worker(opts):
    root = os.path.abspath(opts.root)
    sys.path.insert(0, root)
    sys.path.insert(1, TOOLS)
    if opts.deps:
        sys.path.append(opts.deps)
    package = PACKAGES[opts.package][2]
    finder = _MissingModules(root, package)
    sys.meta_path.append(finder)
    import numpy as np
    import libtrial_shim as shim

    notes = []
    for name in kernel_modules(root, package):
        import_module(name, notes)
    if opts.package == "numbagg":
        drive_numbagg(shim, notes)
    skip = set(filter(None, os.environ.get("LIBTRIAL_SKIP", "").split("\n")))
    with open(opts.out, "ab") as out:
        for key, rec in list(shim.KERNELS.items()):
            if opts.kernel and not any(k in key for k in opts.kernel):
                continue
            result = {k: v for k, v in rec.items() if k not in shim.UNSAVED}
            result["source"] = _source_of(rec["python_function"])
            result["callees"] = _callees(rec)
            if rec["kind"] in ("vectorize", "guvectorize") and rec["object"] is not None:
                if key in skip:
                    result["crashed"] = True
                else:
                    shim.progress(f"call {key}")
                    twin = _twin(shim, rec, notes) if opts.timing and shim.PHASE == "ufuncs" \
                        else None
                    result.update(run_kernel(rec, np, opts.seeds, twin))
                    shim.progress("")
            pickle.dump(result, out)
            out.flush()
        pickle.dump({"notes": notes, "stand_ins": sorted(finder.names)}, out)


def _twin(shim, rec, notes):
    """Numba's kernel beside numbavec's, for timing (mode ufuncs only: in
    mode all, Numba cannot compile a kernel whose helpers are numbavec's)."""
    try:
        return shim.numba_twin(rec)
    except Exception as exc:
        notes.append(f"{rec['key']}: Numba's twin for timing: {type(exc).__name__}: {exc}")
        return None


def _callees(rec):
    """What each function numbavec's errors say 'cannot be called in a
    kernel' is, looked up in the kernel's globals: a Numba dispatcher, a
    jitclass, a ctypes function, ... (the message alone does not say)."""
    texts = [rec.get("error_text") or "", (rec.get("retry") or {}).get("error_text") or ""]
    names = set(re.findall(r"(\w+)\(\) cannot be called in a kernel", "\n".join(texts)))
    scope = getattr(rec["python_function"], "__globals__", {})
    out = {}
    for name in sorted(names):
        obj = scope.get(name)
        kind = type(obj).__module__ + "." + type(obj).__qualname__
        if obj is None:
            kind = "not a global"
        elif "jitclass" in kind:
            kind = "jitclass"
        elif "Dispatcher" in kind:
            kind = "numba dispatcher"
        out[name] = kind
    return out


def _source_of(func):
    import inspect
    try:
        return inspect.getsource(func)
    except (OSError, TypeError):
        return None


# --------------------------------------------------------------------------
# Inputs and calls
# --------------------------------------------------------------------------

def parse_layout(layout):
    """'(n),()->(n)' -> ([('n',), ()], [('n',)])."""
    def args(text):
        return [tuple(s.strip() for s in a.split(",") if s.strip())
                for a in re.findall(r"\(([^()]*)\)", text)]
    text = layout.replace(" ", "")
    ins, _, outs = text.partition("->")
    return args(ins), args(outs)


def argument_types(sig, count):
    """[(numpy dtype name, is_array)] of a signature's arguments, read by
    Numba's own parser; float64 for each of count arguments without one."""
    if sig is None:
        return [("float64", False)] * count
    from numba.core import sigutils, types as nt
    from numba.np.numpy_support import as_dtype
    args, _ = sigutils.normalize_signature(sig)
    return [(as_dtype(a.dtype if isinstance(a, nt.Array) else a).name, isinstance(a, nt.Array))
            for a in args]


def make_arguments(np, rec, sig_index, seed, timing=0):
    """The arguments of one call: the inputs, then (for a gufunc) its outputs
    as zeros; the same in every process for (kernel, signature, seed).
    timing: the loop dimension of a timed call, whose core sizes are larger
    (0: a checking call)."""
    rng = np.random.default_rng([zlib.crc32(rec["key"].encode()), sig_index, seed])
    sig = rec["signature_objects"][sig_index] if rec["signature_objects"] else None
    contract = CONTRACTS.get(rec["key"], {})
    if rec["kind"] == "vectorize":
        nin = rec["python_function"].__code__.co_argcount
        shape = (timing * 64 if timing else 12,)
        return [_values(np, rng, dtype, shape, seed, contract, i)
                for i, (dtype, _) in enumerate(argument_types(sig, nin))], nin
    ins, outs = parse_layout(rec["layout"])
    kinds = argument_types(sig, len(ins) + len(outs))
    sizes = {}
    for symbol in (s for arg in ins + outs for s in arg):
        sizes.setdefault(symbol, CORE_SIZES[len(sizes) % len(CORE_SIZES)]
                         * (TIMING_SCALE if timing else 1))
    for symbol, size in contract.get("sizes", {}).items():
        sizes[symbol] = size if isinstance(size, int) else eval(size, {}, dict(sizes))
    arguments = []
    for i, ((dtype, _), core) in enumerate(zip(kinds, ins + outs)):
        shape = (timing or BATCH,) + tuple(sizes[s] for s in core)
        arguments.append(_values(np, rng, dtype, shape, seed, contract, i) if i < len(ins)
                         else np.zeros(shape, dtype))
        if i in contract.get("sorted", ()):
            arguments[i].sort(axis=-1)
    return arguments, len(ins)


def _values(np, rng, dtype, shape, seed, contract, i):
    """Random values of dtype: floats in [0.1, 2), [-2, 2) for seed 1, with
    15% NaN for seed 2; integers in [1, 4) ([0, 4) for seed 1), valid as
    indices along any core dimension; unless the kernel's contract says."""
    dt = np.dtype(dtype)
    if dt.kind == "b":
        return rng.random(shape) < 0.5
    if dt.kind in "iu":
        low, high = contract.get("ints", {}).get(i, (0 if seed == 1 else 1, 4))
        return rng.integers(low, high, shape).astype(dt)
    if dt.kind == "c":
        return (rng.uniform(0.1, 2, shape) + 1j * rng.uniform(-2, 2, shape)).astype(dt)
    low, high = contract.get("floats", {}).get(i, (-2.0 if seed == 1 else 0.1, 2.0))
    values = rng.uniform(low, high, shape)
    if seed == 2 and i not in contract.get("floats", {}):
        values[rng.random(shape) < 0.15] = np.nan
    return values.astype(dt)


def call(np, kernel, kind, arguments):
    """Call kernel on copies of arguments; -> every array after the call (a
    gufunc's inputs included: a kernel may write into them)."""
    args = [a.copy() for a in arguments]
    with np.errstate(all="ignore"):
        ret = kernel(*args)
    if kind == "vectorize":
        return list(ret) if isinstance(ret, tuple) else [np.asarray(ret)]
    return args


def run_kernel(rec, np, seeds, twin):
    """Every signature on every seed, the first call timed apart (it compiles
    a lazy kernel); then, given Numba's twin of the kernel, both timed."""
    out = {"calls": {}, "first_call_s": None}
    count = max(1, len(rec["signature_objects"]))
    for sig_index in range(count):
        for seed in range(seeds):
            try:
                arguments, _ = make_arguments(np, rec, sig_index, seed)
            except Exception as exc:
                out["calls"][(sig_index, seed)] = ("noinput", f"{type(exc).__name__}: {exc}")
                continue
            start = time.perf_counter()
            try:
                result = call(np, rec["object"], rec["kind"], arguments)
                out["calls"][(sig_index, seed)] = ("ok", result)
            except Exception as exc:
                out["calls"][(sig_index, seed)] = ("raised", type(exc).__name__,
                                                   str(exc).strip().split("\n")[0],
                                                   str(exc))
            if out["first_call_s"] is None:
                out["first_call_s"] = time.perf_counter() - start
    timed = timed_signature(rec)
    if twin is not None and out["calls"].get((timed, 0), ("",))[0] == "ok":
        out["timing"] = time_pair(np, rec, twin, timed)
    return out


def timed_signature(rec):
    """The signature timed: the first whose first argument is float64 (the
    usual data; the type a kernel without signatures gets), else the first."""
    for i, sig in enumerate(rec["signature_objects"]):
        try:
            if argument_types(sig, 0)[0][0] == "float64":
                return i
        except Exception:
            pass
    return 0


def time_pair(np, rec, twin, sig_index):
    """Numba's kernel and numbavec's, timed in this process on the same
    arguments, in turn: rows grown x4 from TIMING_ROWS until the slower call
    takes TIMED_S (or the arguments would hold TIMING_ELEMENTS), then the
    best of 5 runs of enough calls for 50 ms each.  Seconds per row (per
    element for a ufunc) of each, or the reason there is none."""
    kernels = {"numba": twin, "numbavec": rec["object"]}
    try:
        call(np, twin, rec["kind"], make_arguments(np, rec, sig_index, 0)[0])   # compiles
        with np.errstate(all="ignore"):
            rows, once = TIMING_ROWS, None
            while True:
                arguments, _ = make_arguments(np, rec, sig_index, 0, timing=rows)
                took = {name: _once(fn, arguments) for name, fn in kernels.items()}
                if max(took.values()) > CHEAP_S:
                    if once is None:
                        return {"skipped": f"a call of {rows} rows took "
                                f"{max(took.values()):.1f} s"}
                    rows //= 4
                    arguments, _ = make_arguments(np, rec, sig_index, 0, timing=rows)
                    break
                once = took
                bigger = sum(a.size for a in arguments) * 4
                if max(took.values()) >= TIMED_S or bigger > TIMING_ELEMENTS:
                    break
                rows *= 4
            number = max(1, int(0.05 / max(min(once.values()), 1e-7)))
            best = {name: float("inf") for name in kernels}
            for _ in range(5):
                for name, fn in kernels.items():
                    start = time.perf_counter()
                    for _ in range(number):
                        fn(*arguments)
                    best[name] = min(best[name], (time.perf_counter() - start) / number)
        per = rows * (64 if rec["kind"] == "vectorize" else 1)
        return {"rows": rows, "signature": sig_index,
                **{f"{name}_s": t / per for name, t in best.items()}}
    except Exception as exc:
        return {"skipped": f"{type(exc).__name__}: {exc}"}


def _once(fn, arguments):
    start = time.perf_counter()
    fn(*arguments)
    return time.perf_counter() - start


# --------------------------------------------------------------------------
# Running the phases
# --------------------------------------------------------------------------

def run_phase(opts, package, phase, root, deps, workdir):
    """Run the worker for one library and phase; rerun it without the kernel
    a crash (or a hang) hit, at most 10 times.  -> (records by key, meta)."""
    out = os.path.join(workdir, "results", f"{package}.{phase}.pickle")
    if opts.reuse in ("all", phase) and os.path.exists(out):
        return load_phase(out, [])
    progress = out + ".progress"
    env = dict(os.environ, LIBTRIAL_PHASE=phase, LIBTRIAL_PROGRESS=progress,
               NUMBAVEC_CACHE_DIR=os.path.join(workdir, "cache", "numbavec", phase),
               NUMBA_CACHE_DIR=os.path.join(workdir, "cache", "numba", phase),
               PYTHONPATH=os.pathsep.join(p for p in (REPO, os.environ.get("PYTHONPATH"))
                                          if p),
               PYTHONDONTWRITEBYTECODE="1")
    command = [sys.executable, os.path.abspath(__file__), "--worker", "--package", package,
               "--root", root, "--out", out, "--seeds", str(opts.seeds)]
    command += ["--deps", deps] if deps else []
    command += ["--no-timing"] if not opts.timing else []
    for k in opts.kernel or ():
        command += ["--kernel", k]
    skip, crashes = [], []
    for _ in range(10):
        if os.path.exists(out):
            os.remove(out)
        env["LIBTRIAL_SKIP"] = "\n".join(skip)
        try:
            proc = subprocess.run(command, env=env, capture_output=True, text=True,
                                  timeout=opts.timeout)
            code, tail = proc.returncode, proc.stderr[-2000:]
        except subprocess.TimeoutExpired:
            code, tail = "timeout", ""
        if code == 0:
            break
        where = open(progress).read().strip() if os.path.exists(progress) else ""
        crashes.append(f"worker ended with {code} during '{where or '?'}'"
                       + (f"\n{tail}" if not where else ""))
        if not where:
            break
        skip.append(where.split(" ", 1)[1])
    with open(out + ".crashes.json", "w") as f:
        json.dump(crashes, f)
    return load_phase(out, crashes)


def load_phase(path, crashes):
    if os.path.exists(path + ".crashes.json") and not crashes:
        with open(path + ".crashes.json") as f:
            crashes = json.load(f)
    records, meta = {}, {"notes": [], "stand_ins": []}
    if os.path.exists(path):
        with open(path, "rb") as f:
            while True:
                try:
                    item = pickle.load(f)
                except EOFError:
                    break
                if "notes" in item:
                    meta = item
                else:
                    records[item["key"]] = item
    meta["crashes"] = crashes
    return records, meta


def prepare(opts, workdir):
    """Unpacked wheels and their two rewritten copies.
    -> ({package: {mode: root}}, {(package, mode): diff}, {package: sites})."""
    roots, diffs, sites = {}, {}, {}
    for package in opts.package:
        name, version, import_name = PACKAGES[package]
        wheel = fetch_wheel(name, version, opts.wheels, os.path.join(workdir, "wheels"))
        pristine = os.path.join(workdir, "pristine", package)
        shutil.rmtree(pristine, ignore_errors=True)
        with zipfile.ZipFile(wheel) as z:
            z.extractall(pristine)
        sites[package] = kernel_sites(os.path.join(pristine, import_name))
        roots[package] = {}
        for mode in SWITCHED:
            dest = os.path.join(workdir, mode, package)
            shutil.rmtree(dest, ignore_errors=True)
            diffs[(package, mode)] = make_copy(pristine, dest, mode)
            with open(os.path.join(workdir, f"{package}.{mode}.diff"), "w") as f:
                f.write(diffs[(package, mode)])
            roots[package][mode] = dest
    return roots, diffs, sites


def kernel_sites(folder):
    """How many functions the library's source gives to a vectorize or
    guvectorize decorator (``@guvectorize(...)``, ``@numba_guvectorize(...)``,
    ``guvectorize(...)(f)``), tests excluded: what a reader of the source
    counts, to set beside the kernels the import made."""
    count = 0
    for path in _python_files(folder):
        try:
            with open(path, encoding="utf-8") as f:
                tree = ast.parse(f.read())
        except SyntaxError:
            continue
        for node in ast.walk(tree):
            if isinstance(node, ast.FunctionDef):
                count += sum(1 for d in node.decorator_list if _vectorizer(d))
            elif isinstance(node, ast.Call) and isinstance(node.func, ast.Call) \
                    and _vectorizer(node.func):
                count += 1
    return count


def _python_files(folder):
    for path, dirs, files in os.walk(folder):
        dirs[:] = sorted(d for d in dirs if d not in ("tests", "test", "__pycache__"))
        for name in sorted(files):
            if name.endswith(".py") and not name.startswith(("test_", "conftest")):
                yield os.path.join(path, name)


def _vectorizer(node):
    func = node.func if isinstance(node, ast.Call) else node
    name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
    owner = getattr(getattr(func, "value", None), "id", None)
    return name.endswith("vectorize") and owner not in ("np", "numpy")


# --------------------------------------------------------------------------
# Comparing and classifying
# --------------------------------------------------------------------------

def compare_arrays(np, want, got):
    """None when equal (within the stated tolerance), else what differs,
    with the first differing value on each side."""
    if len(want) != len(got):
        return f"{len(got)} results, Numba {len(want)}"
    for i, (a, b) in enumerate(zip(want, got)):
        a, b = np.asarray(a), np.asarray(b)
        if a.shape != b.shape:
            return f"result {i}: shape {b.shape}, Numba {a.shape}"
        if a.dtype != b.dtype:
            return f"result {i}: dtype {b.dtype}, Numba {a.dtype}"
        if a.dtype.kind in "fc":
            rtol, atol = TOLERANCE.get(a.dtype.name, (1e-9, 1e-12))
            close = np.isclose(a, b, rtol=rtol, atol=atol, equal_nan=True)
            if not close.all():
                with np.errstate(all="ignore"):
                    diff = np.nanmax(np.abs(a - b)) if a.size else 0
                return (f"result {i} ({a.dtype}): {int((~close).sum())}/{a.size} values differ"
                        f" (max |diff| {diff:.3g}; NaN on one side only: "
                        f"{int((np.isnan(a) != np.isnan(b)).sum())}; "
                        f"{_first_difference(np, a, b, ~close)})")
        elif not np.array_equal(a, b):
            return (f"result {i} ({a.dtype}): {int((a != b).sum())}/{a.size} values differ "
                    f"({_first_difference(np, a, b, a != b)})")
    return None


def _first_difference(np, a, b, bad):
    at = tuple(int(x[0]) for x in np.nonzero(bad))
    return f"at {at}: Numba {a[at]!r}, numbavec {b[at]!r}"


def _signature_name(rec, index):
    sigs = rec.get("signatures") or []
    return f"'{sigs[index]}'" if index < len(sigs) else "float64 arguments"


def compare_kernel(np, ref, trial):
    """-> (status, detail): 'equal', 'mismatch', 'raised' (numbavec raised
    where Numba did not), 'out of bounds' (numbavec's bounds check refused
    the generated inputs, which Numba, unchecked, read or wrote past: the
    kernel expects sizes the layout does not say), 'skipped' (Numba failed
    on every input), 'none'."""
    calls_ref, calls_nv = ref.get("calls", {}), trial.get("calls", {})
    if not calls_ref or not calls_nv:
        return "none", "no calls on one side"
    compared, numba_failed, problems = 0, 0, []
    for key, r in sorted(calls_ref.items()):
        t = calls_nv.get(key)
        if r[0] != "ok":
            numba_failed += 1
            continue
        if t is None:
            continue
        where = f"{_signature_name(ref, key[0])}, seed {key[1]}"
        if t[0] != "ok":
            kind = "out of bounds" if "index out of bounds" in t[2] else "raised"
            problems.append((kind, f"{where}: {t[1]}: {t[2]}"))
            continue
        compared += 1
        bad = compare_arrays(np, r[1], t[1])
        if bad:
            problems.append(("mismatch", f"{where}: {bad}"))
    if problems:
        kinds = [p[0] for p in problems]
        kind = next(k for k in ("mismatch", "raised", "out of bounds") if k in kinds)
        first = next(p[1] for p in problems if p[0] == kind)
        return kind, f"{first} ({len(problems)} of {compared + len(problems)} calls)"
    if compared == 0:
        return "skipped", f"Numba failed on all {numba_failed} generated inputs"
    return "equal", f"{compared} calls"


# The constructs numbavec's errors come from, in the order they are tried:
# (name, pattern on one error: its message, the source line it quotes and
# the caret).  The first that matches names the construct.
CATEGORIES = [
    ("Numba type objects as signatures", r"holds numbavec types or type names|"
     r"a signature must be a str, a Signature or a tuple"),
    ("no source available (compile()-built)", r"cannot read the source"),
    ("helpers with explicit signatures @njit([...])",
     r"jit decorates a Python function, not (\[|\(|'|<?[\w.]*Signature)"),
    ("Numba options on helpers (nogil, cache, fastmath...)", r"jit\(\) got unexpected option"),
    ("jitclass", r"jitclass"),
    ("np.random", r"np\.random|numpy\.random"),
    ("np.linalg.norm", r"linalg\.norm"),
    ("np.histogram/np.cov/np.array", r"np\.(histogram|cov|array)\b"),
    ("other NumPy functions (np.linalg.inv/det, np.transpose, ...)",
     r"np\.[\w.]+\(\) cannot be called in a kernel \(this NumPy function"),
    ("numba.prange", r"prange"),
    ("enumerate(a.flat)", r"\.flat\b"),
    ("module-level NumPy arrays", r"global .*(ndarray|array)|(ndarray|array) .*global"),
    ("list stored into row", r"\blist\b"),
    ("name rebound to another type", r"cannot assign to '\w+': it is"),
    ("Numba-decorated helpers called from a numbavec kernel",
     r"CPUDispatcher|Dispatcher|decorate it with @numbavec\.jit|numba dispatcher"),
    ("dynamic gufunc out= typing", r"type of '\w+' cannot be inferred|pass it to the call"),
    ("keyword arguments in calls", r"keyword arguments are not supported"),
    ("Python int out of range for the other operand's type (NumPy 2 rules)",
     r"Python integer -?\d+ out of bounds for"),
    ("truth value of an array", r"truth value of an array"),
]

# where a numbavec error starts: "file:line:col: message"
_ERROR_START = re.compile(r"^\S+:\d+:\d+: ", re.M)


def errors_of(text):
    """The separate errors of a numbavec message (it reports every error of
    a kernel, each with its source line and caret); the first is first."""
    starts = [m.start() for m in _ERROR_START.finditer(text or "")]
    if len(starts) < 2:
        return [text or ""]
    return [text[a:b] for a, b in zip(starts, starts[1:] + [len(text)])]


def classify(error, text, source, callees=None):
    """The construct the first error comes from (CATEGORIES; a variable 'may
    be used before it is assigned' that a for loop assigns is a loop
    variable read after its loop; a function that 'cannot be called' is
    named by what it is, from callees), 'other' if none."""
    first = errors_of(text)[0] if text else ""
    return _construct(f"{error}\n{first}", source, callees)


def constructs(text, source, callees=None):
    """Every construct of every error in text, in order, once each."""
    out = []
    for one in errors_of(text):
        name = _construct(one, source, callees)
        if name not in out:
            out.append(name)
    return out


def _construct(blob, source, callees):
    unbound = re.search(r"local variable '(\w+)' may be used before it is assigned", blob)
    if unbound and source and unbound[1] in _assigned_in_loops(source):
        return "loop variable read after loop"
    called = re.search(r"(\w+)\(\) cannot be called in a kernel", blob)
    if called and callees and called[1] in callees:
        blob += f"\n{called[1]} is a {callees[called[1]]}"
    for name, pattern in CATEGORIES:
        if re.search(pattern, blob):
            return name
    return "other"


def _assigned_in_loops(source):
    """Names a for loop of source binds: its targets and what its body assigns."""
    import textwrap
    try:
        tree = ast.parse(textwrap.dedent(source))
    except SyntaxError:
        return set()
    return {n.id for loop in ast.walk(tree) if isinstance(loop, ast.For)
            for n in ast.walk(loop) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)}


# --------------------------------------------------------------------------
# The report
# --------------------------------------------------------------------------

def outcome(rec):
    """A trial kernel's outcome as is: (ok, error type, first line, text).
    Lazy kernels compile at their first call, so their first call decides."""
    if rec is None:
        return False, "Missing", "not made in this phase", ""
    if rec.get("crashed"):
        return False, "Crash", "the process died calling it", ""
    if not rec["ok"]:
        return False, rec["error_type"], rec["error"], rec["error_text"]
    if is_lazy(rec):
        first = rec.get("calls", {}).get((0, 0))
        if first and first[0] == "raised" and first[1] in COMPILE_ERRORS:
            return False, first[1], first[2], first[3]
    return True, None, None, None


# what numbavec raises when it cannot compile (a lazy kernel's first call
# raising anything else, an IndexError say, did compile)
COMPILE_ERRORS = ("TypingError", "TypeError", "NotImplementedError")


def is_lazy(rec):
    return not rec["signatures"]


def trial_entry(np, ref, t):
    """One kernel in one trial mode: compiled or not (and why), compiled
    once its signatures are given as text, its results against Numba's, its
    times."""
    ok, etype, first, text = outcome(t)
    entry = {"ok": ok, "error_type": etype, "error": first}
    callees = (t or {}).get("callees")
    if not ok:
        entry["category"] = classify(first, text, ref.get("source"), callees)
        entry["constructs"] = constructs(text, ref.get("source"), callees)
        entry["error_text"] = (text or "")[:4000]
    retry = (t or {}).get("retry")
    if retry:
        entry["text_signatures"] = {k: retry.get(k) for k in ("ok", "error_type", "error")}
        if not retry["ok"]:
            entry["text_signatures"].update(
                category=classify(retry["error"], retry["error_text"], ref.get("source"),
                                  callees),
                constructs=constructs(retry["error_text"], ref.get("source"), callees),
                error_text=(retry["error_text"] or "")[:4000])
    if t is not None and t.get("calls") and (ok or (retry or {}).get("ok")):
        status, detail = compare_kernel(np, ref, t)
        entry.update(compare=status, compare_detail=detail, compile_s=_compile_s(t))
        timing = t.get("timing")
        if timing:
            entry["timing"] = timing
            if timing.get("numbavec_s"):
                entry["speed_vs_numba"] = timing["numba_s"] / timing["numbavec_s"]
    return entry


def summarize(opts, results, sites, np):
    """The report (a dict, JSON-able) from every phase's records."""
    report = {"tolerances": {k: {"rtol": v[0], "atol": v[1]} for k, v in TOLERANCE.items()},
              "seeds": opts.seeds, "packages": {}, "python": sys.version.split()[0],
              "numpy": np.__version__, "numba": _version("numba"),
              "numbavec": _version("numbavec")}
    for package, phases in results.items():
        ref = phases["numba"][0]
        rows = []
        for key, r in ref.items():
            if r["kind"] not in ("vectorize", "guvectorize"):
                continue
            row = {"key": key, "module": r["module"], "qualname": r["qualname"],
                   "kind": r["kind"], "signatures": r["signatures"], "layout": r["layout"],
                   "options": r["options"], "lazy": is_lazy(r),
                   "numba": {"ok": bool(r["ok"]), "compile_s": _compile_s(r)}}
            for mode in SWITCHED:
                row[mode] = trial_entry(np, r, phases[mode][0].get(key))
            rows.append(row)
        helpers = {}
        for key, t in phases["all"][0].items():
            if t["kind"] in ("jit", "njit"):
                helpers[key] = {"ok": bool(t["ok"]), "error_type": t["error_type"],
                                "error": t["error"], "options": t["options"],
                                "signatures": t["signatures"]}
                if not t["ok"]:
                    helpers[key]["category"] = classify(t["error"], t["error_text"], None)
        for row in rows:
            _blame_helper(row["all"], helpers)
            _blame_helper(row["all"].get("text_signatures") or {}, helpers)
        report["packages"][package] = {
            "version": PACKAGES[package][1], "sites_in_source": sites.get(package),
            "kernels": rows, "helpers_all_mode": helpers,
            "notes": {phase: phases[phase][1] for phase in PHASES}}
    return report


def _blame_helper(entry, helpers):
    """In mode all, a kernel that fails because it calls a Numba-decorated
    helper fails because numbavec.jit refused that helper (which then fell
    back to Numba's njit): name the refusal as the construct."""
    if entry.get("category") != "Numba-decorated helpers called from a numbavec kernel":
        return
    called = re.search(r"(\w+)\(\) cannot be called in a kernel", entry.get("error") or "")
    for key, helper in helpers.items():
        if called and not helper["ok"] and key.rsplit(":", 1)[-1] == called[1]:
            entry["category"] = helper["category"]
            entry["helper"] = key
            entry["constructs"] = [helper["category"]] + [
                c for c in entry.get("constructs", [])
                if c != "Numba-decorated helpers called from a numbavec kernel"]
            return


def _version(module):
    try:
        return importlib.import_module(module).__version__
    except Exception:
        return None


def _compile_s(rec):
    """Decorating (an eager kernel compiles then) plus, for a lazy kernel,
    its first call (which compiles it)."""
    if rec is None or not (rec.get("ok") or (rec.get("retry") or {}).get("ok")):
        return None
    decorate = rec.get("decorate_s") if rec.get("ok") else rec["retry"].get("decorate_s")
    return (decorate or 0) + ((rec.get("first_call_s") or 0) if is_lazy(rec) else 0)


def _is_compile_built(row):
    return row["ufuncs"].get("category") == "no source available (compile()-built)"


def _status(entry):
    if entry["ok"]:
        return "ok"
    text = entry.get("text_signatures")
    return f"{entry['error_type'][:9]}" + ("/ok" if text and text["ok"] else "")


def print_report(report, out=sys.stdout):
    p = lambda *a: print(*a, file=out)           # noqa: E731
    p(f"numbavec {report['numbavec']} against Numba {report['numba']}; Python "
      f"{report['python']}, NumPy {report['numpy']}")
    p("Results compared with " + ", ".join(f"{k} rtol={v['rtol']:g} atol={v['atol']:g}"
                                           for k, v in report["tolerances"].items())
      + f"; integers and booleans exactly; NaN equal to NaN; {report['seeds']} seeds.")
    p("Columns: 'ufuncs'/'all' = compiled as is in that mode (an error type, '/ok' where it "
      "compiled once its Numba-type signatures were written as text); 'results' = against "
      "Numba's (mode ufuncs); 'speed' = Numba's time per element / numbavec's (mode ufuncs).")
    for package, data in report["packages"].items():
        _print_package(p, package, data)
    _print_totals(p, report)
    _print_speed(p, report)
    for mode in SWITCHED:
        _print_categories(p, report, mode)


def _print_package(p, package, data):
    rows = data["kernels"]
    p(f"\n=== {package} {data['version']}: {len(rows)} kernels made"
      + (f" ({data['sites_in_source']} decorated in the source)"
         if package != "numbagg" else "") + " ===")
    p(f"{'kernel':<44} {'sigs':>4}  {'ufuncs':<12} {'all':<12} {'results':<9} "
      f"{'compile nv/nb s':>15} {'speed':>6}")
    for row in rows:
        u, a = row["ufuncs"], row["all"]
        sp, cnv, cnb = u.get("speed_vs_numba"), u.get("compile_s"), row["numba"]["compile_s"]
        p(f"{row['qualname'][:44]:<44} {len(row['signatures']) or 'lazy':>4}  "
          f"{_status(u):<12} {_status(a):<12} {u.get('compare', '-'):<9} "
          f"{(f'{cnv:.2f}' if cnv is not None else '-'):>7}/"
          f"{(f'{cnb:.2f}' if cnb is not None else '-'):<7} "
          f"{(f'{sp:.2f}x' if sp else 'slow' if 'skipped' in u.get('timing', {}) else '-'):>6}")
    for mode in SWITCHED:
        ok = sum(1 for r in rows if r[mode]["ok"])
        text = sum(1 for r in rows if not r[mode]["ok"]
                   and (r[mode].get("text_signatures") or {}).get("ok"))
        line = f"  {mode}: {ok}/{len(rows)} compiled"
        if text:
            line += f"; {ok + text}/{len(rows)} with signatures written as text"
        built = [r for r in rows if _is_compile_built(r)]
        if built:
            rest = [r for r in rows if r not in built]
            line += (f"; {len(built)} built by compile() (no source); of the other "
                     f"{len(rest)}: {sum(1 for r in rest if r[mode]['ok'])} as is, "
                     f"{sum(1 for r in rest if r[mode]['ok'] or (r[mode].get('text_signatures') or {}).get('ok'))}"
                     f" with text signatures")
        p(line)
    for r in rows:
        for mode in SWITCHED:
            status = r[mode].get("compare")
            if status in ("mismatch", "raised", "out of bounds"):
                label = "MISMATCH" if status != "out of bounds" else "OUT OF BOUNDS"
                p(f"  {label} ({mode}) {r['qualname']}: {r[mode]['compare_detail']}")
    skipped = [r["qualname"] for r in rows if r["ufuncs"].get("compare") == "skipped"]
    if skipped:
        p(f"  not compared, Numba fails on the generated inputs ({len(skipped)}): "
          + ", ".join(skipped))
    helpers = data["helpers_all_mode"]
    if helpers:
        good = sum(1 for h in helpers.values() if h["ok"])
        p(f"  helpers given to numbavec.jit (mode all): {good}/{len(helpers)} accepted")
    for phase, meta in data["notes"].items():
        for line in meta.get("crashes", []):
            p(f"  [{phase}] {line}")
        if meta.get("stand_ins"):
            p(f"  [{phase}] stand-ins for missing modules: {', '.join(meta['stand_ins'])}")
        for note in meta.get("notes", []):
            p(f"  [{phase}] {note[:300]}")


def _print_totals(p, report):
    p("\n=== Totals ===")
    packages = report["packages"]
    libs = [pk for pk in UFUNC_LIBRARIES if pk in packages]
    for mode in SWITCHED:
        rows = [r for pk in libs for r in packages[pk]["kernels"]]
        sites = sum(packages[pk]["sites_in_source"] or 0 for pk in libs)
        p(f"  {mode}: {sum(1 for r in rows if r[mode]['ok'])}/{len(rows)} kernels compiled in "
          f"the {len(libs)} ufunc libraries ({sites} decorated in their source)")
    for package, data in packages.items():
        rows = data["kernels"]
        p(f"  {package:<16} " + ", ".join(
            f"{mode} {sum(1 for r in rows if r[mode]['ok'])}/{len(rows)}" for mode in SWITCHED)
          + "; results: " + ", ".join(
              f"{k} {v}" for k, v in sorted(_counts(r["ufuncs"].get("compare") for r in rows
                                                    if r["ufuncs"].get("compare")).items())))


def _counts(items):
    out = {}
    for item in items:
        out[item] = out.get(item, 0) + 1
    return out


def _print_speed(p, report):
    p("\n=== Speed (mode ufuncs; both kernels timed in one process, in turn, first call "
      "excluded): Numba's time / numbavec's, >1: numbavec faster.  Compile seconds. ===")
    for mode in SWITCHED:
        for package, data in report["packages"].items():
            rows = data["kernels"]
            ratios = [r[mode]["speed_vs_numba"] for r in rows if r[mode].get("speed_vs_numba")]
            both = [r for r in rows
                    if r[mode].get("compile_s") is not None and r["numba"]["compile_s"]]
            if not ratios and not both:
                continue
            text = f"  {mode:<6} {package:<16} run: " + (
                f"median {statistics.median(ratios):.2f}x (min {min(ratios):.2f}x, "
                f"max {max(ratios):.2f}x) over {len(ratios)}" if ratios else "-")
            if both:
                cnv = [r[mode]["compile_s"] for r in both]
                cnb = [r["numba"]["compile_s"] for r in both]
                text += (f"; compile: numbavec {sum(cnv):.1f} s, Numba {sum(cnb):.1f} s for "
                         f"{len(both)} kernels (median {statistics.median(cnv):.3f} / "
                         f"{statistics.median(cnb):.3f} s)")
            p(text)


def _print_categories(p, report, mode):
    found, retried, helpers = {}, {}, {}
    for package, data in report["packages"].items():
        for r in data["kernels"]:
            entry = r[mode]
            if not entry["ok"]:
                found.setdefault(entry["category"], []).append((package, r["qualname"], entry))
            text = entry.get("text_signatures")
            if text and not text["ok"] and \
                    entry["category"] == "Numba type objects as signatures":
                retried.setdefault(text["category"], []).append((package, r["qualname"], text))
        if mode == "all":
            for key, h in data["helpers_all_mode"].items():
                if not h["ok"]:
                    helpers.setdefault(h["category"], []).append((package, key, h))
    p(f"\n=== First errors by construct, mode {mode} (every library, numbagg included) ===")
    p("  (count of kernels whose first error it is; 'in N' = kernels with an error of that "
      "construct anywhere)")
    anywhere = _counts(c for data in report["packages"].values() for r in data["kernels"]
                       for c in (r[mode].get("constructs") or []))
    _print_groups(p, found, anywhere)
    if retried:
        p("  ... and behind 'Numba type objects as signatures', once they are written as text:")
        _print_groups(p, retried)
    if helpers:
        p("  helpers numbavec.jit refused at decoration (each fell back to Numba's njit):")
        _print_groups(p, helpers)


def _print_groups(p, groups, anywhere=None):
    for name, items in sorted(groups.items(), key=lambda kv: (-len(kv[1]), kv[0])):
        package, what, entry = items[0]
        per = _counts(pk for pk, _, _ in items)
        also = f"; in {anywhere[name]}" if anywhere and name in anywhere else ""
        p(f"  {len(items):>3}  {name}  ({', '.join(f'{k} {v}' for k, v in per.items())}{also})")
        p(f"       e.g. {package} {what}: {entry['error_type']}: {(entry['error'] or '')[:200]}")


# --------------------------------------------------------------------------

def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--package", action="append", choices=sorted(PACKAGES),
                    help="a library to try (repeatable; default: all)")
    ap.add_argument("--kernel", action="append",
                    help="only kernels whose key (module:qualname) contains this (repeatable)")
    ap.add_argument("--json", help="write the full report here")
    ap.add_argument("--wheels", action="append", default=[],
                    help="a folder to take the pinned wheels from before downloading")
    ap.add_argument("--workdir", help="work here (kept) instead of a temporary folder")
    ap.add_argument("--reuse", choices=("numba", "all"),
                    help="with --workdir: take the results of an earlier run there, of Numba's "
                    "phase only (it changes with the tool, the libraries and Numba, not with "
                    "numbavec) or of every phase (the report again)")
    ap.add_argument("--seeds", type=int, default=SEEDS)
    ap.add_argument("--no-timing", dest="timing", action="store_false")
    ap.add_argument("--no-deps", dest="install_deps", action="store_false",
                    help=f"do not install {', '.join(DEPS)} into the work folder")
    ap.add_argument("--timeout", type=int, default=1800, help="seconds per worker process")
    ap.add_argument("--show-diff", action="store_true", help="print the rewritten lines")
    # the worker's own arguments
    ap.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--root", help=argparse.SUPPRESS)
    ap.add_argument("--out", help=argparse.SUPPRESS)
    ap.add_argument("--deps", help=argparse.SUPPRESS)
    opts = ap.parse_args(argv)
    if opts.worker:
        opts.package = opts.package[0]
        return worker(opts)
    opts.package = opts.package or list(PACKAGES)
    if REPO not in sys.path:
        sys.path.insert(0, REPO)
    workdir = opts.workdir or tempfile.mkdtemp(prefix="libtrial-")
    os.makedirs(os.path.join(workdir, "results"), exist_ok=True)
    try:
        return run(opts, workdir)
    finally:
        if opts.workdir:
            print(f"(work folder kept: {workdir})")
        else:
            shutil.rmtree(workdir, ignore_errors=True)


def run(opts, workdir):
    import numpy as np
    roots, diffs, sites = prepare(opts, workdir)
    if opts.show_diff:
        for (package, mode), diff in diffs.items():
            print(f"--- {package}, mode {mode} ---\n{diff}")
    deps = None
    if opts.install_deps:
        deps = os.path.join(workdir, "deps")
        install_deps(DEPS, deps)
    results = {}
    for package in opts.package:
        results[package] = {}
        for phase in PHASES:
            root = roots[package]["ufuncs" if phase == "numba" else phase]
            start = time.perf_counter()
            results[package][phase] = run_phase(opts, package, phase, root, deps, workdir)
            print(f"[{package} {phase}: {len(results[package][phase][0])} records, "
                  f"{time.perf_counter() - start:.0f} s]", file=sys.stderr)
    report = summarize(opts, results, sites, np)
    report["changed_lines"] = {f"{p}.{m}": sum(1 for line in d.splitlines()
                                               if line.startswith("+")
                                               and not line.startswith("+++"))
                               for (p, m), d in diffs.items()}
    print_report(report)
    if opts.json:
        with open(opts.json, "w") as f:
            json.dump(report, f, indent=1, default=str)
    return 0


if __name__ == "__main__":
    sys.exit(main())
