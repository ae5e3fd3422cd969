#!/usr/bin/env python3
"""Snapshot of the host IR that test modules make, to diff before and after a
change that should not alter it (a pure move inside src/compiler/).

    python tools/ir-snapshot.py OUTDIR [TEST_FILE ...]   # then: diff -r OLD NEW

Runs each test file (default: tests/compiler/test_language.py, tests/compiler/test_arrays.py,
tests/ufunc/test_vectorize.py) under pytest in a child process of its own with
NUMBAVEC_DUMP=ir,llvm and PYTHONHASHSEED=0, and splits what the compiler
prints on stderr into one file per compiled kernel, in the order they were
compiled: OUTDIR/<test file>/<n>-<label>.ir (the typed IR, the lowering and
inference passes' output) and .ll (the LLVM IR before optimisation, the
emitter's).  The tests' own verdicts go to OUTDIR/<test file>.pytest.txt
(the dump makes code at decoration, so a test about lazy code may fail
there: the same before and after).

Run from the repository root with the in-place build.  The cuda side has
tools/ptx-snapshot.py.
"""
import os
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DEFAULT = ["tests/compiler/test_language.py", "tests/compiler/test_arrays.py", "tests/ufunc/test_vectorize.py"]
IR_HEAD = re.compile(r"^; ---- typed IR: (.*) ----$")
LL_HEAD = re.compile(r"^=== numbavec: LLVM IR before optimisation of module '(.*)' ===$")


def safe(label):
    return re.sub(r"[^A-Za-z0-9_.@-]+", "_", label)[:80]


def split(text, outdir):
    """Writes each dumped block of text to a file of its own; how many."""
    blocks = []  # (suffix, label, lines)
    for line in text.splitlines():
        m = IR_HEAD.match(line)
        if m:
            blocks.append([".ir", m.group(1), [line]])
            continue
        m = LL_HEAD.match(line)
        if m:
            blocks.append([".ll", m.group(1), [line]])
            continue
        if blocks:
            blocks[-1][2].append(line)
    outdir.mkdir(parents=True, exist_ok=True)
    for i, (suffix, label, lines) in enumerate(blocks):
        (outdir / f"{i:05d}-{safe(label)}{suffix}").write_text("\n".join(lines) + "\n")
    return blocks


def main():
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    outdir = Path(sys.argv[1]).resolve()
    files = sys.argv[2:] or DEFAULT
    env = dict(os.environ, PYTHONHASHSEED="0", NUMBAVEC_DUMP="ir,llvm")
    total = {}
    for f in files:
        name = Path(f).stem
        run = subprocess.run([sys.executable, "-m", "pytest", "-q", "-s", "-p", "no:cacheprovider",
                              "-p", "no:randomly", f], env=env, cwd=ROOT, capture_output=True,
                             text=True)
        outdir.mkdir(parents=True, exist_ok=True)
        (outdir / f"{name}.pytest.txt").write_text(run.stdout.splitlines()[-1] + "\n"
                                                   if run.stdout else "")
        for b in split(run.stderr, outdir / name):
            total[b[0]] = total.get(b[0], 0) + 1
        print(f"{f}: {run.stdout.splitlines()[-1] if run.stdout else '?'}", flush=True)
    print(f"{outdir}: " + ", ".join(f"{n} {k} blocks" for k, n in sorted(total.items())))


if __name__ == "__main__":
    main()
