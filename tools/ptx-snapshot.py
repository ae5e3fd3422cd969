#!/usr/bin/env python3
"""Snapshot of what the cuda target makes without a GPU, to diff before and
after a change that should not alter it (a refactor of src/targets/cuda/).

    python tools/ptx-snapshot.py OUTDIR        # then: diff -r OLD NEW

For each back-end mode (NUMBAVEC_CUDA_BACKEND unset, 'nvvm', 'llvm'; each in
a child process of its own, so the environment is read fresh) and each arch
of ARCHS, it writes into OUTDIR/<mode>/<arch>/:

  - ptx/<kernel>-<sig>.ptx       numbavec.cuda.compile_ptx of the scalar kernels
  - ufunc/<name>-<i>.ptx/.ll     @vectorize(target='cuda'): each loop's PTX, its
    (and .reduce.ptx)            LLVM IR, and the reduce module's PTX
  - gufunc/<kind>-<i>.ptx/.ll    @guvectorize(target='cuda') of each layout kind
  - cast/<src>-<dst>.ptx         the device-cast ufuncs (numbavec.cuda._cast_ufunc)

A compilation that fails writes its exception (type and message) instead.

Then OUTDIR/calls.txt: the host side of calls, which runs without a GPU
and is where the call skeleton lives -- the launch plans (f._plan,
f._resolve, f._reduce_plan, g._plan) and the outcome of real calls (their
operand checks and error messages; a well-formed call ends at the driver
with CudaSupportError), for a fixed table and a seeded fuzz of operands.

Run from the repository root with the in-place build; needs the CUDA
toolkit's libdevice (libNVVM for the nvvm mode).
"""
import math
import os
import random
import subprocess
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
MODES = {"default": None, "nvvm": "nvvm", "llvm": "llvm"}
ARCHS = ["sm_80", "sm_89", "sm_90", "sm_90a", "sm_100"]


# ---- kernels (module level: their source is read with inspect) ----

def arith(a, b):
    return a * b + a / b - a ** 2 + (a // b) + (a % b) - (-a) + (+b)


def control(x, y):
    acc = x * 0
    if x > y:
        acc = x - y
    else:
        acc = y - x
    i = 0
    while i < 10:
        i += 1
        if acc > 100:
            break
        acc = acc + i
    for k in range(0, 8, 3):
        acc += k
    return acc + min(x, y, acc) + max(x, y) + abs(x - y)


def ints(a, b):
    r = a // b + a % b + (a << 3) + (a >> 2) + (a & b) + (a | b) + (a ^ b) + (~a)
    return r + a ** 3 + abs(a) + min(a, b) + max(a, b)


def mathy(x):
    return (math.exp(x) + math.log1p(x) + math.sin(x) + math.cos(x) + math.sqrt(x)
            + math.atan2(x, 2.0) + math.hypot(x, 3.0) + math.floor(x) + round(x)
            + math.ldexp(x, 3) + math.erf(x) + math.gamma(x))


def cplx(z, w):
    return z * w + z / w - z ** 2 + abs(z) + z.conjugate() * w.real - w.imag + z ** w


def bools(a, b):
    return (a and not b) or (a != b)


def fails(a, b):
    if b == 0:
        raise ValueError("b is zero")
    return a // b


def add(a, b):
    return a + b


def saxpy(a, x, y):
    return a * x + y


def polar(rho1, theta1, rho2, theta2):
    x1 = rho1 * math.cos(theta1)
    y1 = rho1 * math.sin(theta1)
    x2 = rho2 * math.cos(theta2)
    y2 = rho2 * math.sin(theta2)
    return math.sqrt((x1 - x2) ** 2 + (y1 - y2) ** 2)


def dot(a, b, out):
    acc = 0.0
    for i in range(a.shape[0]):
        acc += a[i] * b[i]
    out[0] = acc


def matmul(a, b, out):
    for i in range(a.shape[0]):
        for j in range(b.shape[1]):
            acc = 0.0
            for p in range(a.shape[1]):
                acc += a[i, p] * b[p, j]
            out[i, j] = acc


def ramp(a, out):
    for i in range(out.shape[0]):
        out[i] = a * i


def minmax(a, lo, hi):
    lo[0] = a[0]
    hi[0] = a[0]
    for i in range(a.shape[0]):
        lo[0] = min(lo[0], a[i])
        hi[0] = max(hi[0], a[i])


def scale(a, s):
    for i in range(a.shape[0]):
        a[i] = a[i] * s


def bins(edges, x, left, right):
    left[0] = np.searchsorted(edges, x)
    right[0] = np.searchsorted(edges, x, side="right")


def softmax(a, out):
    m = a[0]
    for i in range(a.shape[0]):
        m = max(m, a[i])
    s = 0.0
    for i in range(a.shape[0]):
        out[i] = math.exp(a[i] - m)
        s += out[i]
    for i in range(a.shape[0]):
        out[i] = out[i] / s + math.log1p(s)


def rows(a, s, out):
    for i in range(a.shape[0]):
        out[i] = a[i] * s


PTX_CASES = [
    (arith, ["float32(float32, float32)", "float64(float64, float64)", "int64(int64, int64)"]),
    (control, ["float32(float32, float32)", "int32(int32, int32)"]),
    (ints, ["int32(int32, int32)", "uint8(uint8, uint8)"]),
    (mathy, ["float32(float32)", "float64(float64)"]),
    (cplx, ["complex64(complex64, complex64)", "complex128(complex128, complex128)"]),
    (bools, ["bool(bool, bool)"]),
]

UFUNCS = [  # (kernel, signatures, options)
    (add, ["float64(float64, float64)", "float32(float32, float32)", "int64(int64, int64)",
           "int32(int32, int32)", "uint8(uint8, uint8)", "complex64(complex64, complex64)"],
     {"identity": 0}),
    (saxpy, ["float32(float32, float32, float32)"], {}),
    (polar, ["float32(float32, float32, float32, float32)", "float64(float64, float64, "
             "float64, float64)"], {"fastmath": True}),
    (fails, ["int64(int64, int64)"], {}),
]

GUFUNCS = {  # kind: (kernel, signatures, layout, options)
    "search": (bins, ["void(f8[:], f8, i8[:], i8[:])", "void(u1[:], u1, i8[:], i8[:])"],
               "(n),()->(),()", {}),
    "dot": (dot, ["void(f4[:], f4[:], f4[:])", "void(f8[:], f8[:], f8[:])"], "(n),(n)->()", {}),
    "dot_nocheck": (dot, ["void(f4[:], f4[:], f4[:])"], "(n),(n)->()", {"boundscheck": False}),
    "matmul": (matmul, ["void(f4[:,:], f4[:,:], f4[:,:])", "void(f8[:,:], f8[:,:], f8[:,:])"],
               "(m,n),(n,p)->(m,p)", {}),
    "frozen": (ramp, ["void(f8, f8[:])"], "()->(3)", {}),
    "two_outputs": (minmax, ["void(f8[:], f8[:], f8[:])", "void(i4[:], i4[:], i4[:])"],
                    "(n)->(),()", {}),
    "no_output": (scale, ["void(f8[:], f8)"], "(n),()", {}),
    "flexible": (matmul, ["void(f8[:,:], f8[:,:], f8[:,:])"], "(m?,n),(n,p?)->(m?,p?)", {}),
    "math": (softmax, ["void(f4[:], f4[:])", "void(f8[:], f8[:])"], "(n)->(n)", {}),
    "rows_contig": (rows, ["void(f4[::1], f4, f4[::1])"], "(n),()->(n)", {}),
}

CASTS = [("int16", "float32"), ("float64", "float32"), ("complex128", "complex64"),
         ("int64", "uint8"), ("bool", "float64")]


# ---- one mode (the child) ----

def outcome(fn):
    """fn()'s value, or its exception as 'ERROR Type: message'."""
    try:
        return fn()
    except Exception as e:  # noqa: BLE001 - the snapshot records whatever happens
        return f"ERROR {type(e).__name__}: {e}\n"


def write(path, text):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text if isinstance(text, str) else repr(text) + "\n")


def sig_name(sig):
    return sig.replace(" ", "").replace("(", "_").replace(")", "").replace(",", "_") \
              .replace("[", "").replace("]", "").replace(":", "")


def cu_vectorize(fn, sigs, arch, **opts):
    """A cuda ufunc for arch (the decorator takes no arch=: _core does)."""
    import inspect
    from numbavec import _core
    from numbavec._source import KernelSource
    src = KernelSource(fn)
    return _core.vectorize(fn, src.funcdef, src.location, sigs, target="cuda", name=fn.__name__,
                           doc=fn.__doc__, nin=len(inspect.signature(fn).parameters), arch=arch,
                           **opts)


def cu_guvectorize(fn, sigs, layout, arch, **opts):
    from numbavec import _core
    from numbavec._source import KernelSource
    src = KernelSource(fn)
    return _core.guvectorize(fn, src.funcdef, src.location, sigs, layout, target="cuda",
                             name=fn.__name__, doc=fn.__doc__, arch=arch, **opts)


def snapshot_arch(out, arch):
    import numpy as np
    from numbavec import cuda

    for fn, sigs in PTX_CASES:
        for sig in sigs:
            write(out / "ptx" / f"{fn.__name__}-{sig_name(sig)}.ptx",
                  outcome(lambda: cuda.compile_ptx(fn, sig, arch=arch)))
            write(out / "ptx" / f"{fn.__name__}-{sig_name(sig)}.fastmath.ptx",
                  outcome(lambda: cuda.compile_ptx(fn, sig, arch=arch, fastmath=True)))
    for fn, sigs, opts in UFUNCS:
        f = outcome(lambda: cu_vectorize(fn, sigs, arch, **opts))
        if isinstance(f, str):
            write(out / "ufunc" / f"{fn.__name__}.error", f)
            continue
        for i, sig in enumerate(sigs):
            base = out / "ufunc" / f"{fn.__name__}-{i}"
            write(base.with_suffix(".ptx"), outcome(lambda: f.inspect_ptx(sig)))
            write(base.with_suffix(".ll"), outcome(lambda: f.inspect_llvm(sig)))
            write(base.with_suffix(".reduce.ptx"), outcome(lambda: f.inspect_ptx(sig, True)))
    # a signature-less ufunc compiles at its first call (which then ends at the driver)
    lazy = cu_vectorize(add, [], arch)
    write(out / "ufunc" / "lazy.call", outcome(lambda: lazy(np.ones(3, "i2"), 2.5)))
    for i in range(lazy.ntypes):
        write(out / "ufunc" / f"lazy-{i}.ptx", outcome(lambda: lazy.inspect_ptx(lazy.signatures[i])))
    for kind, (fn, sigs, layout, opts) in GUFUNCS.items():
        g = outcome(lambda: cu_guvectorize(fn, sigs, layout, arch, **opts))
        if isinstance(g, str):
            write(out / "gufunc" / f"{kind}.error", g)
            continue
        for i, sig in enumerate(sigs):
            base = out / "gufunc" / f"{kind}-{i}"
            write(base.with_suffix(".ptx"), outcome(lambda: g.inspect_ptx(sig)))
            write(base.with_suffix(".ll"), outcome(lambda: g.inspect_llvm(sig)))
    dyn = cu_guvectorize(dot, [], "(n),(n)->()", arch)
    write(out / "gufunc" / "dynamic.plan",
          outcome(lambda: dyn._plan(np.ones((3, 4), "f4"), np.ones(4, "f8"))))
    for i, t in enumerate(dyn.types):
        write(out / "gufunc" / f"dynamic-{i}.ptx", outcome(lambda: dyn.inspect_ptx(
            "void(%s)" % ", ".join(np.dtype(c).name + "[:]" for c in t.replace("->", "")))))
    if arch == "sm_90":
        for src, dst in CASTS:
            write(out / "cast" / f"{src}-{dst}.ptx",
                  outcome(lambda: cuda._cast_ufunc(np.dtype(src), np.dtype(dst)).inspect_ptx()))


def child(mode, outdir):
    for arch in ARCHS:
        snapshot_arch(outdir / mode / arch, arch)
    if mode == "default":
        write(outdir / "calls.txt", calls())


# ---- the host side of calls ----

def calls():
    import numpy as np
    from numbavec import _core, cuda, guvectorize, vectorize

    def dev(ptr, shape, dtype="float32", strides=None, readonly=False):
        shape = shape if isinstance(shape, tuple) else (shape,)
        return _core._cuda_test_array(ptr, shape, dtype, strides=strides, readonly=readonly)

    lines = []

    def record(label, fn):
        r = outcome(fn)
        if isinstance(r, dict):
            r = {k: r[k] for k in sorted(r)}
        lines.append(f"{label}: {r!r}".rstrip("\n") if not isinstance(r, str)
                     else f"{label}: {r.rstrip()}")

    f = vectorize(["float32(float32, float32)", "float64(float64, float64)",
                   "int64(int64, int64)", "complex128(complex128, complex128)"],
                  target="cuda", identity=0)(add)
    x = np.ones(10, "f4")
    big = np.ones(3 * 2**20, "f4")
    ro = np.ones(3, "f4")
    ro.setflags(write=False)
    table = [
        ("plan contiguous", lambda: f._plan(x, x)),
        ("plan scalar", lambda: f._plan(np.float32(2), x)),
        ("plan python scalars", lambda: f._plan(2, 3.5)),
        ("plan broadcast", lambda: f._plan(np.ones((4, 1), "f4"), np.ones(5, "f4"),
                                           sm_count=2, block=8)),
        ("plan strided", lambda: f._plan(np.ones((6, 8), "f8")[:, ::2], 1.0)),
        ("plan negative", lambda: f._plan(x[::-1], x)),
        ("plan 64-bit", lambda: f._plan(dev(0x1000, 2**31, "float32"), 1.0)),
        ("plan staged", lambda: f._plan(big, big)),
        ("plan staged out", lambda: f._plan(big, big, out=np.empty_like(big))),
        ("plan staged cast", lambda: f._plan(big.astype("i2"), big[::-1])),
        ("plan device out same", lambda: f._plan(dev(0x1000, 10), 1.0, out=dev(0x1000, 10))),
        ("plan device out shifted", lambda: f._plan(dev(0x1000, 10), 1.0,
                                                    out=dev(0x1004, 10))),
        ("plan device out reversed", lambda: f._plan(dev(0x1000, 10), 1.0,
                                                     out=dev(0x1000 + 36, 10, strides=(-4,)))),
        ("plan device out dtype", lambda: f._plan(dev(0x9000, 10), 1.0,
                                                  out=dev(0x1000, 10, "float64"))),
        ("plan device cast in", lambda: f._plan(dev(0x1000, 10, "int16"), np.float32(1),
                                                out=dev(0x1000, 10))),
        ("plan out tuple", lambda: f._plan(x, x, out=(np.empty(10, "f4"),))),
        ("plan positional out", lambda: f._plan(x, x, np.empty(10, "f4"))),
        ("resolve i2 f4", lambda: f._resolve(np.ones(3, "i2"), np.ones(3, "f4"))),
        ("resolve int float", lambda: f._resolve(1, 2.0)),
        ("resolve c16", lambda: f._resolve(1j, np.float32(1))),
        ("err nargs", lambda: f(x)),
        ("err nargs many", lambda: f(x, x, x, x)),
        ("err keyword", lambda: f(x, x, where=True)),
        ("err out tuple", lambda: f(x, x, out=(x, x))),
        ("err out scalar", lambda: f(x, x, out=1.0)),
        ("err out np scalar", lambda: f(x, x, out=np.float32(1))),
        ("err out shape", lambda: f(x, x, out=np.ones(4, "f4"))),
        ("err out cast", lambda: f(x, x, out=np.ones(10, "i4"))),
        ("err out readonly", lambda: f(ro, ro, out=ro)),
        ("err out device readonly", lambda: f(np.ones(3, "f4"), np.float32(1),
                                              out=dev(0x1000, 3, readonly=True))),
        ("err broadcast", lambda: f(np.ones(3, "f4"), np.ones(4, "f4"))),
        ("err no loop", lambda: f(np.ones(3, "U3"), x)),
        ("err device float16", lambda: f(dev(0x1000, 10, "float16"), 1.0)),
        ("err device swapped", lambda: f(dev(0x1000, 3, np.dtype(">f4")), 1.0)),
        ("err stream", lambda: f(x, x, stream="default")),
        ("err foreign", lambda: f(object(), x)),
        ("call host", lambda: f(x, x)),
        ("call device", lambda: f(dev(0x1000, 10), 1.0)),
        ("call stream", lambda: f(x, x, stream=0)),
        ("reduce plan", lambda: f._reduce_plan(np.ones((30, 40), "f4"), axis=1)),
        ("reduce plan none", lambda: f._reduce_plan(np.ones(10**6, "f4"), axis=None)),
        ("reduce plan neg axis", lambda: f._reduce_plan(np.ones((3, 5, 7)), axis=-2)),
        ("reduce err axis", lambda: f._reduce_plan(np.ones((3, 5)), axis=2)),
        ("reduce err scalar", lambda: f.reduce(1.0)),
        ("reduce err strided none", lambda: f.reduce(dev(0x1000, (4, 4), strides=(32, 4)),
                                                     axis=None)),
        ("reduce call", lambda: f.reduce(np.ones(5, "f4"))),
        ("reduce no identity", lambda: vectorize(["f4(f4, f4)"], target="cuda")(add)
         .reduce(x)),
    ]
    for label, fn in table:
        record("ufunc " + label, fn)

    made = {kind: guvectorize(sigs, layout, target="cuda", **opts)(fn)
            for kind, (fn, sigs, layout, opts) in GUFUNCS.items()}
    y = np.ones((50_000, 64))
    g = made["dot"]
    gtable = [
        ("plan staged", lambda: made["dot"]._plan(y, y)),
        ("plan f4", lambda: made["dot"]._plan(y.astype("f4"), y.astype("f4"))),
        ("plan whole", lambda: made["dot"]._plan(y, np.ones(64))),
        ("plan axes", lambda: made["dot"]._plan(y.T, y.T, axes=[(0,), (0,), ()])),
        ("plan out", lambda: made["dot"]._plan(y, y, out=np.empty(50_000))),
        ("plan out f4", lambda: made["dot"]._plan(y, y, out=np.empty(50_000, "f4"))),
        ("plan keepdims", lambda: made["dot"]._plan(y, y, out=np.empty((50_000, 1)),
                                                    keepdims=True)),
        ("plan two outputs", lambda: made["two_outputs"]._plan(y, out=(np.empty(50_000),
                                                                       np.empty(50_000)))),
        ("plan frozen", lambda: made["frozen"]._plan(np.ones(10**6))),
        ("plan search", lambda: made["search"]._plan(np.linspace(0, 1, 9), np.ones(3 * 10**6))),
        ("plan no output", lambda: made["no_output"]._plan(y, 2.0)),
        ("plan device", lambda: g._plan(dev(0x1000, (5, 4)), dev(0x9000, 4))),
        ("plan device cast", lambda: g._plan(dev(0x1000, (5, 4), "int16"), np.ones(4, "f4"))),
        ("plan nocheck", lambda: made["dot_nocheck"]._plan(np.ones((3, 4), "f4"),
                                                           np.ones(4, "f4"))),
        ("plan flexible", lambda: made["flexible"]._plan(np.ones(3), np.ones((3, 4)))),
        ("err nargs", lambda: g(np.ones(3))),
        ("err keyword", lambda: g(np.ones(3), np.ones(3), dtype=np.float32)),
        ("err no sig", lambda: g(np.ones(3, np.complex128), np.ones(3))),
        ("err no sig device", lambda: g(dev(0x1000, 3, "complex128"), np.ones(3))),
        ("err has no outputs", lambda: made["no_output"](np.ones(3), 2.0, out=np.ones(3))),
        ("err out list", lambda: g(np.ones((2, 3)), np.ones(3), out=[0.0, 0.0])),
        ("err out cast", lambda: g(np.ones(3), np.ones(3), out=np.zeros((), np.int8))),
        ("err out both", lambda: g(np.ones(3), np.ones(3), np.zeros(()), out=np.zeros(()))),
        ("err out count", lambda: made["two_outputs"](np.ones(3), out=(np.zeros(()),))),
        ("err None", lambda: g(None, np.ones(3))),
        ("err stream", lambda: g(np.ones(3), np.ones(3), stream="default")),
        ("err core dims", lambda: g(np.ones(3), np.float64(2.0))),
        ("err core mismatch", lambda: g(np.ones((2, 3)), np.ones((2, 4)))),
        ("err loop broadcast", lambda: g(np.ones((2, 3)), np.ones((3, 3)))),
        ("err frozen out", lambda: made["frozen"](1.0, out=np.zeros(4))),
        ("err frozen loop", lambda: made["frozen"](np.ones(2), out=np.zeros((3, 3)))),
        ("err axes both", lambda: g(y[:3, :4], y[:3, :4], axes=[(0,), (0,)], axis=0)),
        ("err axes tuple", lambda: g(y[:3, :4], y[:3, :4], axes=((0,), (0,)))),
        ("err axes missing", lambda: g(y[:3, :4], y[:3, :4], axes=[(0,)])),
        ("err axes many", lambda: g(y[:3, :4], y[:3, :4], axes=[(0,), (0,), (), ()])),
        ("err axes item", lambda: g(y[:3, :4], y[:3, :4], axes=[(0, 1), (0,)])),
        ("err axes bounds", lambda: g(y[:3, :4], y[:3, :4], axes=[(2,), (0,)])),
        ("err axes int", lambda: g(y[:3, :4], y[:3, :4], axes=[("x",), (0,)])),
        ("err keepdims bool", lambda: g(y[:3, :4], y[:3, :4], keepdims=1)),
        ("err keepdims out", lambda: g(y[:3, :4], y[:3, :4], keepdims=True,
                                       out=np.ones((3, 2)))),
        ("err keepdims layout", lambda: made["matmul"](np.ones((2, 2)), np.ones((2, 2)),
                                                       keepdims=True)),
        ("err axis layout", lambda: made["matmul"](np.ones((2, 2)), np.ones((2, 2)), axis=0)),
        ("err flexible axes", lambda: made["flexible"](np.ones((2, 2)), np.ones((2, 2)),
                                                       axis=0)),
        ("err flexible dims", lambda: made["flexible"](np.ones(()), np.ones((2, 2)))),
        ("err contig", lambda: made["rows_contig"](dev(0x1000, (4, 8), strides=(64, 8)), 1.0)),
        ("call host", lambda: g(np.ones(3), np.ones(3))),
        ("call device", lambda: g(dev(0x1000, (5, 4)), dev(0x9000, 4))),
        ("call keepdims axis", lambda: g(y[:4, :3], y[:4, :3], keepdims=True, axis=-1)),
        ("call flexible", lambda: made["flexible"](np.ones(3), np.ones((3, 4)))),
    ]
    for label, fn in gtable:
        record("gufunc " + label, fn)

    # seeded fuzz of operands through both plans
    rng = random.Random(20261127)
    dtypes = ["f8", "f4", "i2", "i8", "c16", "?", "u1"]
    for i in range(400):
        dt = rng.choice(dtypes)
        n = rng.choice([0, 1, 7, 300, 2**20 + 3])
        if rng.random() < 0.4:
            a = dev(0x10000 + 16 * rng.randrange(64), rng.choice([(n,), (3, 5), (1, 7)]), dt)
        else:
            a = np.zeros(n, dt)[:: rng.choice([1, 2, -1])]
        b = rng.choice([1.0, 2, 1j, np.float32(1), a, np.ones(1, dt), np.ones(4, "f4")])
        kw = {}
        if rng.random() < 0.4:
            kw["out"] = rng.choice([np.empty_like(np.asarray(a) if isinstance(a, np.ndarray)
                                                  else np.empty(n, dt)),
                                    dev(0x10000 + 16 * rng.randrange(64), (n,), dt),
                                    np.empty(n, "f4")])
        record(f"fuzz ufunc {i}", lambda: f._plan(a, b, **kw))
    kinds = sorted(made)
    for i in range(400):
        kind = rng.choice(kinds)
        gk = made[kind]
        rws = rng.choice([0, 1, 3, 300, 40000])
        core = rng.choice([0, 1, 5, 64, 600])
        dt = rng.choice(["f8", "f4", "i2", "c16", "?"])
        base = np.zeros((rws, core + 1), dt)
        a = base[:, :core] if rng.random() < 0.5 else base[:, ::-1][:, :core]
        args = {"dot": lambda: (a, rng.choice([a, a[:1], np.ones(core), 2.0])),
                "dot_nocheck": lambda: (a, a),
                "matmul": lambda: (a.reshape(rws, core, 1) if a.size else a, np.ones((1, 2))),
                "two_outputs": lambda: (a,), "frozen": lambda: (base[:, 0],),
                "search": lambda: (np.linspace(0, 1, 9), base[:, 0]),
                "no_output": lambda: (a, 2.0), "flexible": lambda: (a, np.ones((core, 2))),
                "math": lambda: (a,), "rows_contig": lambda: (a, 2.0)}[kind]()
        kw = {}
        if kind == "dot" and rng.random() < 0.6:
            kw["out"] = rng.choice([np.empty(rws), np.empty(rws, "f4"), base[:, 0],
                                    np.empty(2 * rws)[::2], np.empty(rws + 1)])
        if kind == "dot" and rng.random() < 0.2:
            kw["axes"] = [(0,), (0,), ()]
            args = tuple(v.T if isinstance(v, np.ndarray) and v.ndim == 2 else v for v in args)
        record(f"fuzz gufunc {i} {kind}", lambda: gk._plan(*args, **kw))
    return "\n".join(lines) + "\n"


def main():
    if len(sys.argv) == 4 and sys.argv[1] == "--child":
        sys.path.insert(0, str(ROOT))
        child(sys.argv[2], Path(sys.argv[3]))
        return
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    outdir = Path(sys.argv[1]).resolve()
    for mode, backend in MODES.items():
        env = dict(os.environ, PYTHONHASHSEED="0")
        env.pop("NUMBAVEC_CUDA_BACKEND", None)
        if backend:
            env["NUMBAVEC_CUDA_BACKEND"] = backend
        subprocess.run([sys.executable, __file__, "--child", mode, str(outdir)], env=env,
                       check=True, cwd=ROOT)
    count = sum(1 for p in outdir.rglob("*") if p.is_file())
    errors = sum(1 for p in outdir.rglob("*") if p.is_file() and p.suffix != ".txt"
                 and p.read_text().startswith("ERROR"))
    print(f"{outdir}: {count} files ({errors} of them a recorded compile error)")


if __name__ == "__main__":
    main()
