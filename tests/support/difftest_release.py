"""Release run of the random-program differential test, at scale.

The pytest test (tests/compiler/test_language.py, ``test_random_program``) checks 300
programs of tests/support/progs.py per CI run; before a release, check many more,
each in a worker process (a crash or a hang is then one failure, not the end
of the run).  From the repository root::

    python -m tests.support.difftest_release --programs 10000 [--seed 20250101] [--workers 2]

Program k has seed ``SEED + k`` (the CI test's first 300 are the same
programs) and runs on the target ``TARGETS[seed % 2]`` as in CI; every other
pair of seeds is compiled lazily (``@vectorize`` without signatures) instead
of with signatures.  The comparison is tests/support/difftest.py's ``check_program``.
Prints the counts (programs, elements compared, ill-conditioned elements
skipped, failures by kind) and every failing seed; ``python tests/support/progs.py
SEED`` prints a program again.  Exits 1 when a program failed.
"""
import argparse
import collections
import os
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import difftest as dt  # noqa: E402
import fuzz_harness as fh  # noqa: E402

TARGETS = ["cpu", "parallel"]       # as tests/conftest.py
DEFAULT_SEED = 20250101             # as test_language.py's NUMBAVEC_DIFF_SEED


def cases(seed0, count):
    for k in range(count):
        seed = seed0 + k
        yield {"id": f"p{seed}", "program": str(seed), "gen": "progs", "seed": seed,
               "target": TARGETS[seed % 2], "lazy": (seed // 2) % 2 == 1}


def run_case(case, workdir):
    import numbavec
    import progs

    prog = progs.generate(case["seed"])
    try:
        compared, ill, failure = dt.check_program(prog, case["target"], workdir,
                                                  lazy=case["lazy"], refusal_ok=True)
    except numbavec.TypingError as exc:
        return fh.outcome("fail", "false-refusal", f"TypingError: {exc}",
                          key="false-refusal: a generated program does not compile")
    except Exception as exc:
        return fh.exception_outcome(exc, "check")
    counts = {"compared": compared, "ill-conditioned": ill}
    if failure:
        return fh.outcome("fail", "mismatch", failure, key="mismatch", counts=counts)
    return fh.outcome("ok", counts=counts)


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--programs", type=int, default=10000)
    p.add_argument("--seed", type=int, default=DEFAULT_SEED)
    p.add_argument("--workers", type=int, default=1)
    p.add_argument("--timeout", type=float, default=60.0,
                   help="seconds one program may take before it counts as a hang")
    args = p.parse_args(argv)
    logdir = tempfile.mkdtemp(prefix="nvdiff-")
    pool = fh.Pool("difftest_release", logdir, args.workers, args.timeout)
    kinds, counts, failures = collections.Counter(), collections.Counter(), []
    start = time.monotonic()
    n = 0
    try:
        for case, out, _ in pool.run(cases(args.seed, args.programs)):
            n += 1
            counts.update(out.get("counts", {}))
            if out["status"] == "fail":
                kinds[out["kind"]] += 1
                failures.append((case, out))
                print(f"FAIL seed {case['seed']} ({case['target']}"
                      f"{', lazy' if case['lazy'] else ''}): {out['kind']}\n"
                      f"{out['detail'][:3000]}\n", flush=True)
            if n % 500 == 0:
                print(f"... {n} programs, {len(failures)} failures, "
                      f"{time.monotonic() - start:.0f} s", flush=True)
    finally:
        pool.close()
    print(f"{n} programs in {time.monotonic() - start:.0f} s (seeds {args.seed}.."
          f"{args.seed + args.programs - 1}): {counts['compared']} elements compared, "
          f"{counts['ill-conditioned']} ill-conditioned elements skipped")
    print(f"failures: {len(failures)} (" + ", ".join(
        f"{k}: {kinds[k]}" for k in ("mismatch", "crash", "hang", "false-refusal",
                                     "system-error", "runtime-error", "exception")) + ")")
    if failures:
        print("failing seeds: " + " ".join(str(c["seed"]) for c, _ in failures))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
