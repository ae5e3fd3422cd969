#!/usr/bin/env python3
"""Snapshot of the LLVM IR (and PTX) the compiler makes for the kernels of a
set of test modules, to diff before and after a change that should not
alter it (a pure move of compiler code: emitarray.c and typeinfer.c split
into src/compiler/arrays/).

    python tools/ir-snapshot-arrays.py OUTDIR [TESTFILE ...]   # then: diff -r OLD NEW

First ARRAY_KERNELS: each kernel of tests/support/array_kernels.py (views,
assignment, reductions, masks, axes, sorting, dot, allocation) compiled for
float32 and float64 on cpu, in a child process with PYTHONHASHSEED=0 and
NUMBAVEC_DUMP=llvm: OUTDIR/array_kernels/<name>-<float>.ll holds its IR
before optimisation (the dump) and after (inspect_llvm).  Then PROGRAMS
seeded random scalar kernels of tests/support/progs.py (the solver, the builtins'
typing rules, control flow), each signature into OUTDIR/programs/.

Then, for each test file named (none by default: a run of the tests under
a dump is slow), it runs pytest on it in a child process with
NUMBAVEC_DUMP=llvm,opt,ptx (every signature compiled eagerly, its IR before
and after optimisation and any PTX printed to stderr) and PYTHONHASHSEED=0,
and writes OUTDIR/<testfile>.ll: every dump, in the order the tests made
them.  The tests' own pass or fail is not the point (a dump changes what
some of them see on stderr) and is only counted; it must match too.

Run from the repository root with the in-place build.
"""
import os
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PROGRAMS = 120
HEADER = re.compile(r"^=== numbavec: (.*) of module '(.*)' ===$", re.M)


def run_tests(outdir, test):
    env = dict(os.environ, PYTHONHASHSEED="0", NUMBAVEC_DUMP="llvm,opt,ptx")
    proc = subprocess.run([sys.executable, "-m", "pytest", "-q", "-s", "-p", "no:cacheprovider",
                           "-p", "no:randomly", test], env=env, cwd=ROOT,
                          capture_output=True, text=True)
    text = proc.stderr
    start = HEADER.search(text)
    dumps = text[start.start():] if start else ""
    summary = proc.stdout.strip().splitlines()[-1] if proc.stdout.strip() else ""
    summary = re.sub(r" in [0-9.]+s.*", "", summary)  # the time differs
    out = outdir / (Path(test).stem + ".ll")
    out.write_text(f"; {test}: {summary}\n" + dumps)
    return len(HEADER.findall(dumps)), summary


def kernel_snapshot(outdir):
    sys.path.insert(0, str(ROOT))
    sys.path.insert(0, str(ROOT / "tests" / "support"))
    import array_kernels
    from array_kernels import signature
    from numbavec import guvectorize
    
    out = outdir / "array_kernels"
    out.mkdir(parents=True, exist_ok=True)
    n = 0
    for name, (py, layout, kinds, out_kind, *_sizes) in sorted(array_kernels.KERNELS.items()):
        for ftype in ("float32", "float64"):
            sig = signature(layout, kinds, out_kind, ftype)
            mark = f"=== ir-snapshot-arrays: {name}-{ftype} ==="
            print(mark, file=sys.stderr, flush=True)
            try:
                text = guvectorize([sig], layout, target="cpu")(py).inspect_llvm(sig)
            except Exception as e:  # noqa: BLE001 - the snapshot records whatever happens
                text = f"ERROR {type(e).__name__}: {e}\n"
            print(mark, file=sys.stderr, flush=True)
            sys.stderr.flush()
            (out / f"{name}-{ftype}.opt.ll").write_text(text)
            n += 1
    return n + program_snapshot(outdir)


def program_snapshot(outdir):
    import math

    import numpy as np
    import progs
    from conftest import kernel_from_source
    from numbavec import vectorize

    out = outdir / "programs"
    out.mkdir(parents=True, exist_ok=True)
    n = 0
    for seed in range(PROGRAMS):
        p = progs.generate(seed)
        for i, sig in enumerate(p.signatures()):
            mark = f"=== ir-snapshot-arrays: ../programs/{seed}-{i} ==="
            print(mark, file=sys.stderr, flush=True)
            try:
                f = kernel_from_source(p.source, "f", {"math": math, "np": np})
                text = vectorize([sig], target="cpu")(f).inspect_llvm(sig)
            except Exception as e:  # noqa: BLE001 - the snapshot records whatever happens
                text = f"ERROR {type(e).__name__}: {e}\n"
            print(mark, file=sys.stderr, flush=True)
            (out / f"{seed}-{i}.opt.ll").write_text(text)
            n += 1
    return n


def main():
    if len(sys.argv) == 3 and sys.argv[1] == "--kernels":
        print(kernel_snapshot(Path(sys.argv[2])))
        return
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    outdir = Path(sys.argv[1]).resolve()
    outdir.mkdir(parents=True, exist_ok=True)
    env = dict(os.environ, PYTHONHASHSEED="0", NUMBAVEC_DUMP="llvm")
    proc = subprocess.run([sys.executable, __file__, "--kernels", str(outdir)], env=env, cwd=ROOT,
                          check=True, capture_output=True, text=True)
    # the dump of each kernel lies between its two marks
    parts = re.split(r"^=== ir-snapshot-arrays: (.*) ===$", proc.stderr, flags=re.M)
    for i in range(1, len(parts) - 1, 4):
        (outdir / "array_kernels" / f"{parts[i]}.ll").write_text(parts[i + 1])
    print(f"array_kernels and programs: {proc.stdout.strip()} signatures", flush=True)
    for test in sys.argv[2:]:
        count, summary = run_tests(outdir, test)
        print(f"{test}: {count} dumps ({summary})", flush=True)


if __name__ == "__main__":
    main()
