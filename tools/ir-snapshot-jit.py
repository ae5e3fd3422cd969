#!/usr/bin/env python3
"""Snapshot of what the host JIT makes, to diff before and after a change
that should not alter it (the split of src/compiler/jit.c, issue 35).

    python tools/ir-snapshot-jit.py OUTDIR [TESTFILE ...]   # then: diff -r OLD NEW

Writes into OUTDIR:

  - kernels/<target>/<kind>-<name>-<i>.ll/.s   inspect_llvm / inspect_asm of
    each signature of the scalar ufuncs and gufuncs of tools/ptx-snapshot.py
    (the same broad table: arithmetic, control flow, integers, math, complex,
    bools, raising kernels, array gufuncs), on the cpu and parallel targets,
    and of lazy ufuncs after a call with each input type (their code is made
    at the first call);
  - tests/<file>.txt for each TESTFILE: pytest run on it in a child process
    with NUMBAVEC_DUMP=opt,asm, keeping only the dumped blocks (optimised IR
    and assembly of every module the test file compiles, in order).

Run from the repository root with the in-place build.
"""
import importlib.util
import os
import re
import subprocess
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import numbavec as nv  # noqa: E402

spec = importlib.util.spec_from_file_location("ptx_snapshot", ROOT / "tools" / "ptx-snapshot.py")
ptx = importlib.util.module_from_spec(spec)
sys.modules["ptx_snapshot"] = ptx
spec.loader.exec_module(ptx)

LAZY_TYPES = [np.float32, np.float64, np.int32, np.int64, np.uint8]


def write(path, text):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text if isinstance(text, str) else repr(text))


def dump_signatures(out, f, sigs):
    for i, sig in enumerate(sigs):
        try:
            write(out.with_name(f"{out.name}-{i}.ll"), f.inspect_llvm(sig))
            write(out.with_name(f"{out.name}-{i}.s"), f.inspect_asm(sig))
        except Exception as e:  # recorded, so that a change of failure shows too
            write(out.with_name(f"{out.name}-{i}.err"), f"{type(e).__name__}: {e}")


def signatures_of(f):
    return [t for t in getattr(f, "types", [])]


def snapshot_kernels(outdir):
    for target in ("cpu", "parallel"):
        base = outdir / "kernels" / target
        for kernel, sigs in ptx.PTX_CASES:
            f = nv.vectorize(sigs, target=target)(kernel)
            dump_signatures(base / f"scalar-{kernel.__name__}", f, sigs)
        for kernel, sigs, opts in ptx.UFUNCS:
            f = nv.vectorize(sigs, target=target, **opts)(kernel)
            dump_signatures(base / f"ufunc-{kernel.__name__}", f, sigs)
        for kind, (kernel, sigs, layout, opts) in ptx.GUFUNCS.items():
            try:
                g = nv.guvectorize(sigs, layout, target=target, **opts)(kernel)
            except Exception as e:
                write(base / f"gufunc-{kind}.err", f"{type(e).__name__}: {e}")
                continue
            dump_signatures(base / f"gufunc-{kind}", g, sigs)
        for kernel in (ptx.add, ptx.arith, ptx.control):
            f = nv.vectorize(target=target)(kernel)
            for ty in LAZY_TYPES:
                a = np.arange(1, 40, dtype=ty)
                with np.errstate(all="ignore"):
                    f(a, a[::-1])
            dump_signatures(base / f"lazy-{kernel.__name__}", f, [None])


BLOCK = re.compile(r"^=== numbavec: .*?(?=^=== numbavec: |\Z)", re.S | re.M)


def snapshot_tests(outdir, files):
    env = dict(os.environ, NUMBAVEC_DUMP="opt,asm", PYTHONHASHSEED="0")
    for name in files:
        # -s: pytest would otherwise keep each test's stderr to itself
        run = subprocess.run([sys.executable, "-m", "pytest", "-q", "-s", "-p",
                              "no:cacheprovider", name], cwd=ROOT, env=env,
                             capture_output=True, text=True)
        blocks = BLOCK.findall(run.stderr)
        write(outdir / "tests" / (Path(name).name + ".txt"),
              f"{len(blocks)} blocks\n" + "".join(blocks))


def main():
    outdir = Path(sys.argv[1])
    snapshot_kernels(outdir)
    snapshot_tests(outdir, sys.argv[2:])


if __name__ == "__main__":
    main()
