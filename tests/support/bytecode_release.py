"""Release run of the bytecode front end on the CPython versions CI does not cover.

    python tests/support/bytecode_release.py [--progs 400] [--fuzz 800] [--minutes 10]

CI runs tests/compiler/test_bytecode.py on 3.10 and 3.13.  This runs it, with more
programs, on every interpreter named by NUMBAVEC_RELEASE_PYTHONS (default:
the 3.11 and 3.12 virtual environments next to the checkout, /work/venv and
/work/venv312, where they exist), then the bytecode fuzzer
(tests/support/fuzz_bytecode.py --results) for --minutes on each.  Exit status 0
when all pass.
"""
import argparse
import os
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
DEFAULT = ["/work/venv/bin/python", "/work/venv312/bin/python"]


def main(argv=None):
    ap = argparse.ArgumentParser()
    ap.add_argument("--progs", type=int, default=400)
    ap.add_argument("--fuzz", type=int, default=800)
    ap.add_argument("--minutes", type=float, default=10.0)
    args = ap.parse_args(argv)
    pythons = os.environ.get("NUMBAVEC_RELEASE_PYTHONS", "").split() or [
        p for p in DEFAULT if os.path.exists(p)]
    env = dict(os.environ, NUMBAVEC_BYTECODE_PROGS=str(args.progs),
               NUMBAVEC_BYTECODE_FUZZ=str(args.fuzz))
    failed = []
    for py in pythons:
        for cmd in ([py, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-s",
                     "tests/compiler/test_bytecode.py"],
                    [py, "-W", "ignore", "tests/support/fuzz_bytecode.py", "--results",
                     "--minutes", str(args.minutes)]):
            print("+", " ".join(cmd), flush=True)
            if subprocess.run(cmd, cwd=ROOT, env=env).returncode:
                failed.append(" ".join(cmd))
    for f in failed:
        print("FAILED:", f)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
