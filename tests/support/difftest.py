"""Differential testing of compiled kernels against their ``py_func``.

The reference for a kernel is its ``py_func`` run by the interpreter on NumPy
scalars (``a[i]`` of the input arrays), its result cast to the declared output
dtype.  NumPy scalar semantics (NEP 50 weak Python numbers, wrapping integers,
``npy_divmod`` for floats) are what the kernel language implements, so the
two must agree, with these deliberate exceptions (DESIGN.md):

* where Python raises (ZeroDivisionError for Python numbers, ValueError for
  ``math.sqrt(-1)`` or ``np.int32(2) ** -1``, OverflowError for ``math.exp(1000)``
  or an out-of-range weak literal), the kernel gives NumPy's answer instead:
  those elements are skipped (not compared);
* ``math.f(x)`` of a float32 argument is the float32 function in a kernel,
  while Python computes in double: the reference runs ``py_func`` with a
  ``math`` module whose functions round to ``np.float32`` in that case
  (:data:`MATH32`), which models the kernel's typing exactly;
* Python ints are unbounded, a kernel's weak int is 64 bits: a reference
  result outside int64 is skipped.

Floats are compared within a ULP bound (NaN equals NaN, infinities exactly);
"exact" comparisons also check the sign of zeros.

The last section checks whole random programs (tests/support/progs.py): the pytest
test in test_language.py, the release run (tests/support/difftest_release.py) and the
kernel fuzzer (tests/support/fuzz_kernels.py) share :func:`check_program`.
"""
import importlib.util
import itertools
import math
import os
import re
import types
import warnings
import zlib

import numpy as np

SKIP = object()     # a reference element that is not compared
PAD = object()      # a perturbed run that has no result for an element (fewer library calls)

# ---- input values ----

_FLOAT_EDGES = [0.0, -0.0, 1.0, -1.0, 0.5, -0.5, 2.0, -2.5, 3.0, 7.0, -7.0, 0.1, 1e-3,
                100.0, 1e10, -1e10, math.pi, math.inf, -math.inf, math.nan]


def edge_values(dtype):
    """The values every test of this dtype sees: 0, -0.0, +-1, +-inf, nan,
    subnormals, the limits, and the shift widths for integers."""
    dt = np.dtype(dtype)
    if dt.kind == "b":
        return np.array([False, True])
    if dt.kind in "iu":
        info = np.iinfo(dt)
        bits = dt.itemsize * 8
        cands = [0, 1, 2, 3, 5, 7, 10, 100, bits - 1, bits, bits + 1, info.max, info.max - 1,
                 info.min, info.min + 1, info.max // 2, info.max // 3]
        cands += [-c for c in cands]
        vals = sorted({c for c in cands if info.min <= c <= info.max})
        return np.array(vals, dtype=dt)
    if dt.kind == "f":
        fi = np.finfo(dt)
        extra = [fi.smallest_subnormal, -fi.smallest_subnormal, fi.tiny, -fi.tiny,
                 fi.tiny - fi.smallest_subnormal, fi.max, -fi.max, fi.eps]
        with np.errstate(over="ignore"):
            return np.array(_FLOAT_EDGES + [float(x) for x in extra], dtype=dt)
    if dt.kind == "c":
        parts = [0.0, -0.0, 1.0, -1.0, 0.5, -2.5, math.inf, -math.inf, math.nan, 1e10]
        return np.array([complex(r, i) for r in parts for i in parts], dtype=dt)
    raise ValueError(dt)


def random_values(dtype, n, rng):
    dt = np.dtype(dtype)
    if dt.kind == "b":
        return rng.integers(0, 2, n).astype(bool)
    if dt.kind in "iu":
        info = np.iinfo(dt)
        wide = rng.integers(info.min, info.max, n, dtype=dt, endpoint=True)
        lo, hi = max(info.min, -20), min(info.max, 20)
        small = rng.integers(lo, hi, n, endpoint=True).astype(dt)
        return np.where(rng.random(n) < 0.5, wide, small)
    if dt.kind == "f":
        scale = np.where(rng.random(n) < 0.6, 10.0, 10.0 ** rng.uniform(-30, 30, n))
        return (rng.standard_normal(n) * scale).astype(dt)
    if dt.kind == "c":
        ft = np.float32 if dt == np.complex64 else np.float64
        return (random_values(ft, n, rng) + 1j * random_values(ft, n, rng)).astype(dt)
    raise ValueError(dt)


def make_inputs(dtypes, rng, n_random=150, max_product=1200, domains=None):
    """Arrays for an n-ary kernel: every combination of edge values (or a
    sample of them when there are too many), then random values.
    ``domains[i]``, if given, maps argument i's array to the values it may take."""
    edges = [edge_values(d) for d in dtypes]
    combos = list(itertools.product(*[range(len(e)) for e in edges]))
    if len(combos) > max_product:
        pick = rng.choice(len(combos), max_product, replace=False)
        combos = [combos[i] for i in sorted(pick)]
    cols = []
    for k, (d, e) in enumerate(zip(dtypes, edges)):
        col = np.array([e[c[k]] for c in combos], dtype=d) if combos else np.array([], dtype=d)
        col = np.concatenate([col, random_values(d, n_random, rng)])
        if domains is not None and domains[k] is not None:
            col = np.asarray(domains[k](col)).astype(d)
        cols.append(col)
    return cols


# ---- the reference ----

def _float32_args(args):
    """True when a kernel's math.f(args) is the float32 function: the
    arguments promote (Python numbers weak) to float32 or complex64."""
    typed = [a.dtype for a in args if isinstance(a, np.generic)]
    if not typed:
        return False
    t = np.result_type(*typed)
    if any(isinstance(a, float) for a in args) and t.kind in "biu":
        return False
    return t in (np.float32, np.complex64)


def _math32(fn):
    def wrapped(*args):
        if not _float32_args(args):
            return fn(*args)
        # the float32 function: its arguments are float32 too (a weak
        # Python float is rounded first, as NEP 50 does); ldexp's exponent
        # stays an int
        rounded = [float(np.float32(x)) if isinstance(x, (int, float, np.number)) else x
                   for x in args]
        if fn is math.ldexp:
            rounded[1:] = args[1:]
        with np.errstate(all="ignore"):
            r = fn(*rounded)
            return np.float32(r) if isinstance(r, float) else r
    wrapped.__name__ = fn.__name__
    return wrapped


def _int64_result(fn):
    """math.floor/ceil/trunc: a kernel's weak int is 64 bits, so a result
    outside int64 (exact and unbounded in Python) is not compared."""
    def wrapped(*args):
        r = fn(*args)
        if not _INT64_MIN <= r <= _INT64_MAX:
            raise OverflowError("integer result outside int64")
        return r
    wrapped.__name__ = fn.__name__
    return wrapped


def _nan_sign(fn):
    """copysign(x, nan): the sign of a NaN that an operation made is not
    specified (x86 makes it negative, a constant folder may not): not compared."""
    def wrapped(x, y):
        if math.isnan(y):
            raise ValueError("copysign from a NaN")
        return fn(x, y)
    wrapped.__name__ = fn.__name__
    return wrapped


def _make_math32():
    mod = types.ModuleType("math")
    for name in dir(math):
        obj = getattr(math, name)
        if name in ("floor", "ceil", "trunc"):
            obj = _int64_result(obj)
        elif name == "copysign":
            obj = _math32(_nan_sign(obj))
        elif callable(obj) and name not in ("isnan", "isinf", "isfinite"):
            obj = _math32(obj)
        setattr(mod, name, obj)
    return mod


MATH32 = _make_math32()


def reference_function(py_func, extra_globals=None):
    """py_func with ``math`` replaced by :data:`MATH32` (see the module doc)."""
    g = dict(py_func.__globals__)
    for k, v in list(g.items()):
        if v is math:
            g[k] = MATH32
    g["int"] = _int64_result(int)     # int(x): 64 bits in a kernel
    if extra_globals:
        g.update(extra_globals)
    return types.FunctionType(py_func.__code__, g, py_func.__name__,
                              py_func.__defaults__, py_func.__closure__)


_INT64_MIN, _INT64_MAX = -(2 ** 63), 2 ** 63 - 1


def _saturate(x, dt):
    """A float cast to an integer dtype as a kernel does it: saturating, NaN -> 0."""
    info = np.iinfo(dt)
    x = float(x)
    if math.isnan(x):
        return np.array(0, dtype=dt)[()]
    if x >= float(info.max):
        return np.array(info.max, dtype=dt)[()]
    if x <= float(info.min):
        return np.array(info.min, dtype=dt)[()]
    return np.array(int(x), dtype=dt)[()]


def cast_result(r, dtype):
    """A reference result cast to the declared output dtype, or SKIP."""
    dt = np.dtype(dtype)
    if isinstance(r, (bool, np.bool_)):
        r = np.bool_(r)
    elif isinstance(r, int):
        if not _INT64_MIN <= r <= _INT64_MAX:
            return SKIP     # unbounded Python int; a kernel's weak int is 64 bits
        r = np.int64(r)
    elif isinstance(r, float):
        r = np.float64(r)
    elif isinstance(r, complex):
        r = np.complex128(r)
    elif not isinstance(r, np.generic):
        raise TypeError(f"reference returned {r!r}")
    if dt.kind in "iu" and r.dtype.kind == "f":
        return _saturate(r, dt)
    if dt.kind in "iu" and r.dtype.kind == "c":
        return _saturate(r.real, dt)
    if dt.kind == "b":
        return np.bool_(r != 0)
    if dt.kind in "fc" and r.dtype.kind == "c" and dt.kind == "f":
        r = r.real
    with np.errstate(all="ignore"):
        return np.array(r).astype(dt)[()]


REFERENCE_ERRORS = (ZeroDivisionError, ValueError, OverflowError)


def reference_raw(fn, args, errors=None):
    """fn over the elements: a list of results, SKIP where Python raised one
    of REFERENCE_ERRORS (the kernel gives NumPy's answer there)."""
    out = []
    with np.errstate(all="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for i in range(len(args[0])):
            try:
                out.append(fn(*(a[i] for a in args)))
            except errors or REFERENCE_ERRORS:
                out.append(SKIP)
    return out


_PY_TYPES = {bool: np.bool_, int: np.int64, float: np.float64, complex: np.complex128}


def natural_dtype(raw):
    """The promotion of the results' types (Python ints as int64)."""
    kinds = {type(r) for r in raw if r is not SKIP}
    dts = [np.dtype(_PY_TYPES.get(k, k)) for k in kinds]
    return np.result_type(*dts) if dts else np.dtype(np.float64)


def cast_all(raw, out_dtype):
    """(expected, mask): raw results cast to out_dtype; mask False where skipped."""
    n = len(raw)
    out = np.zeros(n, dtype=out_dtype)
    mask = np.ones(n, dtype=bool)
    with np.errstate(all="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for i, r in enumerate(raw):
            v = SKIP if r is SKIP else cast_result(r, out_dtype)
            if v is SKIP:
                mask[i] = False
            else:
                out[i] = v
    return out, mask


def reference(fn, args, out_dtype):
    return cast_all(reference_raw(fn, args), out_dtype)


# ---- comparison ----

def _ordered(x):
    """Float bits mapped to integers whose order is the floats' order."""
    ity = np.int32 if x.dtype == np.float32 else np.int64
    i = x.view(ity).astype(np.int64)
    sign = np.int64(-(2 ** 31)) if ity is np.int32 else np.int64(-(2 ** 63))
    return np.where(i < 0, sign - i, i)


def ulp_distance(a, b):
    oa, ob = _ordered(a), _ordered(b)
    with np.errstate(all="ignore"):
        ua, ub = oa.astype(np.uint64), ob.astype(np.uint64)
        return np.where(oa >= ob, ua - ub, ub - ua)


def float_mismatch(got, exp, ulps, zero_sign=True):
    """Boolean array: where got and exp differ (NaN == NaN; inf exact)."""
    nan_g, nan_e = np.isnan(got), np.isnan(exp)
    bad = nan_g != nan_e
    both = ~nan_g & ~nan_e
    inf = both & (np.isinf(got) | np.isinf(exp))
    bad |= inf & (got != exp)
    fin = both & ~inf
    if ulps == 0:
        bad |= fin & (got != exp)
    else:
        bad |= fin & (ulp_distance(got, exp) > ulps)
    if zero_sign and ulps == 0:
        bad |= fin & (got == 0) & (exp == 0) & (np.signbit(got) != np.signbit(exp))
    return bad


def mismatch(got, exp, ulps=0, zero_sign=True):
    if got.dtype.kind == "c":
        return (float_mismatch(got.real, exp.real, ulps, zero_sign)
                | float_mismatch(got.imag, exp.imag, ulps, zero_sign))
    if got.dtype.kind == "f":
        return float_mismatch(got, exp, ulps, zero_sign)
    return got != exp


def describe(args, got, exp, bad, limit=12):
    rows = []
    for i in np.flatnonzero(bad)[:limit]:
        ins = ", ".join(f"{a.dtype}({a[i]!r})" for a in args)
        rows.append(f"  f({ins}) = {got[i]!r}, py_func gives {exp[i]!r}")
    more = int(bad.sum()) - len(rows)
    if more > 0:
        rows.append(f"  ... and {more} more")
    return "\n".join(rows)


def call_loop(ufunc, args, sig_dtypes):
    """Run the loop of one signature (in dtypes..., out dtype) explicitly."""
    with np.errstate(all="ignore"):
        return ufunc(*args, signature=tuple(sig_dtypes))


# ---- kernels from generated source ----

_counter = itertools.count()


def load_source(source, directory, name=None, env=None):
    """Write source to a real .py file in directory and import it (numbavec
    compiles from inspect.getsource); returns the module."""
    name = name or f"nv_gen_{os.getpid()}_{next(_counter)}"
    path = os.path.join(directory, name + ".py")
    with open(path, "w") as fh:
        fh.write(source)
    spec = importlib.util.spec_from_file_location(name, path)
    mod = importlib.util.module_from_spec(spec)
    if env:
        mod.__dict__.update(env)
    spec.loader.exec_module(mod)
    return mod


def sig_string(out, ins):
    return f"{np.dtype(out).name}({', '.join(np.dtype(d).name for d in ins)})"


# ---- random programs (tests/support/progs.py) ----

N_INPUTS = 50
# also skipped in programs: a Python float ** that goes complex (NumPy: nan)
# and then meets math.f or a comparison raises TypeError
PROG_ERRORS = REFERENCE_ERRORS + (TypeError,)
PROG_ULPS = 8


def _nudge(v, n):
    """v moved n ULP (in its own precision; both parts of a complex value);
    other values unchanged."""
    if isinstance(v, (complex, np.complex64, np.complex128)):
        part = np.float32 if isinstance(v, np.complex64) else np.float64
        z = complex(_nudge(part(v.real), n), _nudge(part(v.imag), n))
        return z if isinstance(v, complex) else type(v)(z)
    if isinstance(v, float):
        v = np.float64(v)
        py = True
    elif isinstance(v, (np.float32, np.float64)):
        py = False
    else:
        return v
    if not np.isfinite(v) or n == 0:
        return float(v) if py else v
    step = v.dtype.type(np.inf if n > 0 else -np.inf)
    for _ in range(abs(n)):
        v = np.nextafter(v, step)
    return float(v) if py else v


def _py_pow(a, b):
    """Python float ** with NumPy's float64 answers where Python raises or
    goes complex (a kernel's weak float is a float64)."""
    if isinstance(a, (int, float)) and isinstance(b, (int, float)) and (
            isinstance(a, float) or isinstance(b, float)):
        with np.errstate(all="ignore"):
            return float(np.float64(a) ** np.float64(b))
    return a ** b


SINGLE_NUDGE_CALLS = 32     # library calls per element the single-nudge sweep covers


def _reference_with_hook(prog):
    """(f, set_hook): the reference program, its _h calling whatever hook
    set_hook installed last."""
    holder = [lambda v: v]
    g = {"math": MATH32, "np": np, "_h": lambda v: holder[0](v), "_pow": _py_pow}
    exec(compile(prog.ref_source, f"<reference seed {prog.seed}>", "exec"), g)
    g.update(math=MATH32, int=_int64_result(int))    # after its own imports

    def set_hook(hook):
        holder[0] = hook
    return g["f"], set_hook


def _perturbed_references(prog, args, idx):
    """For elements idx: the reference re-run with every inexact library
    result nudged (by +-4 ULP and +-1 ULP: all up, all down, random mixes),
    then with one library call at a time nudged by one ULP.  A libm result 1
    ULP from the correctly rounded one can decide a branch (math.cos(x) ==
    np.cos(x) compares two implementations) or feed a function as sensitive
    as cos(1.7e9) or fmod(arctan(x), sinh(x)).  A list of runs, each with one
    result (or SKIP) per element of idx."""
    f, set_hook = _reference_with_hook(prog)
    sub = [a[idx] for a in args]
    runs = []
    for mode in ("zero", "up", "down", "up1", "down1", "mix1", "mix2"):
        rnd = np.random.default_rng(zlib.crc32(mode.encode()))

        def hook(v, mode=mode, rnd=rnd):
            n = {"zero": 0, "up": 4, "down": -4, "up1": 1, "down1": -1}.get(mode)
            return _nudge(v, int(rnd.choice([-4, 4])) if n is None else n)
        set_hook(hook)
        runs.append(reference_raw(f, sub, errors=PROG_ERRORS))
    runs += _single_nudges(f, set_hook, sub)
    return runs


def _single_nudges(f, set_hook, args):
    """Runs in which exactly one library call of an element is nudged by one
    ULP up or down (the first SINGLE_NUDGE_CALLS calls of each element)."""
    per_element = []
    for i in range(len(args[0])):
        elem = [a[i:i + 1] for a in args]
        count = [0]

        def counting(v):
            count[0] += 1
            return v
        set_hook(counting)
        reference_raw(f, elem, errors=PROG_ERRORS)
        results = []
        for j in range(min(count[0], SINGLE_NUDGE_CALLS)):
            for step in (-1, 1):
                seen = [0]

                def one(v, j=j, step=step, seen=seen):
                    seen[0] += 1
                    return _nudge(v, step) if seen[0] == j + 1 else v
                set_hook(one)
                results.append(reference_raw(f, elem, errors=PROG_ERRORS)[0])
        per_element.append(results)
    width = max((len(r) for r in per_element), default=0)
    return [[r[w] if w < len(r) else PAD for r in per_element] for w in range(width)]


def _program_inputs(t, nparams, rng):
    edges = edge_values(t)
    cols = []
    for _ in range(nparams):
        e = rng.choice(edges, N_INPUTS)
        r = random_values(t, N_INPUTS, rng)
        cols.append(np.where(rng.random(N_INPUTS) < 0.5, e, r).astype(t))
    return cols


def _narrowed(got, raw):
    """(got, its dtype), cast to the type Python's results end in when that
    is narrower: a lazily compiled kernel returns its static (promoted)
    type, e.g. float64 where `x32 or np.fabs(0.5)` took the float32 path in
    Python (DESIGN: one static type), as a declared float32 output would
    have cast it."""
    nat = natural_dtype(raw)
    if nat.kind == got.dtype.kind and nat.itemsize < got.dtype.itemsize:
        with np.errstate(all="ignore"):
            return got.astype(nat), nat
    return got, got.dtype


# A Python int constant that meets a typed value it does not fit is refused
# at compile time, as NumPy 2 refuses it at run time (OverflowError): the
# generator's literals (100 ** 2, -100) do so for the narrow integer types.
NEP50_REFUSAL = re.compile(r"Python integer \S+ out of bounds for|Python integer too large")


def check_program(prog, target, tmpdir, lazy=False, refusal_ok=False, name=None, counts=None):
    """Compile prog for each of its signatures (lazy: for the inputs' dtypes,
    at the first call) and compare with py_func; returns (compared,
    skipped_illconditioned, failure message or None).  A TypingError is a
    failure, unless refusal_ok: then it propagates.  A signature refused
    for a Python int out of its type's bounds (NEP50_REFUSAL) is skipped and
    counted in counts["refused"] (counts: a dict, or None)."""
    import numbavec

    mod = load_source(prog.source, tmpdir, name=name or f"nv_prog_{prog.seed}")
    where = f"seed {prog.seed} ({target}), {prog.signatures()}:\n{prog.source}"

    def refused(exc):
        if not NEP50_REFUSAL.search(str(exc)):
            return False
        if counts is not None:
            counts["refused"] = counts.get("refused", 0) + 1
        return True

    ref = reference_function(mod.f, {"_pow": _py_pow})
    rng = np.random.default_rng(prog.seed)
    compared = ill = 0
    lazy_uf = numbavec.vectorize(target=target)(mod.f) if lazy else None
    for sig, t, out in zip(prog.signatures(), prog.argtypes, prog.out_types):
        args = _program_inputs(t, prog.nparams, rng)
        try:
            if lazy:
                with np.errstate(all="ignore"):
                    got = lazy_uf(*args)     # compiles here
                out = got.dtype
            else:
                uf = numbavec.vectorize([sig], target=target)(mod.f)
                got = call_loop(uf, args, [np.dtype(t)] * prog.nparams + [np.dtype(out)])
        except numbavec.TypingError as exc:
            if refused(exc):
                continue
            if refusal_ok:
                raise
            return compared, ill, f"compile error {exc}\n{where}"
        raw = reference_raw(ref, args, errors=PROG_ERRORS)
        if lazy:
            got, out = _narrowed(got, raw)
        exp, mask = cast_all(raw, out)
        bad = mismatch(got, exp, PROG_ULPS if got.dtype.kind in "fc" else 0) & mask
        compared += int(mask.sum())
        if bad.any():
            idx = np.flatnonzero(bad)
            runs = _perturbed_references(prog, args, idx)
            still = []
            for j, i in enumerate(idx):
                cands = [cast_all([r[j]], out) for r in runs if r[j] is not PAD]
                vals = [v for v, m in cands if m[0]]
                if not vals:
                    continue
                if any(not mismatch(got[i:i + 1], v, PROG_ULPS).any() for v in vals):
                    continue        # matches a perturbed reference: rounding
                if (any(mismatch(vals[0], v, PROG_ULPS).any() for v in vals[1:])
                        or any(r[j] is SKIP for r in runs)):
                    # ill-conditioned: the reference itself moves, or raises
                    # (math.pow(-1.25, 1 - 1 ULP): a domain error in Python,
                    # NaN in C) when a library result moves by an ULP
                    ill += 1
                    continue
                still.append(i)
            if still:
                b = np.zeros_like(bad)
                b[still] = True
                return compared, ill, (f"{len(still)} mismatches for {t} -> {out}:\n"
                                       + describe(args, got, exp, b) + f"\n{where}")
    return compared, ill, None
