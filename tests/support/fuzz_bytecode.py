"""Fuzzer of the bytecode front end: kernel fuzzer programs rebuilt from bytecode.

    python tests/support/fuzz_bytecode.py --minutes 10 [--seed 1] [--results]

Each program (tests/support/progs.py random programs and tests/support/fuzz_kernel_gens.py
programs, endlessly, seeded) is compiled by this interpreter; every function
in it is rebuilt from its code object (numbavec/_bytecode.py) and compared
with its parsed source (tests/support/bytecode_corpus.py: exact, canonical).  With
--results, the progs.py kernels are also compiled through both front ends for
their signatures, and the LLVM IR and the results on random inputs must be
identical.  A failure is a rebuilt tree that differs from the source's and
still compiles to other code than it (impossible by construction: the
rebuild is checked), an exception other than BytecodeError, or a result or IR
that differs; a refusal (BytecodeError) is counted, not a failure.
"""
import argparse
import ast
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(1, os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))

import numpy as np  # noqa: E402

import bytecode_corpus as bc  # noqa: E402
from numbavec import _bytecode  # noqa: E402


def sources(seed):
    import fuzz_kernel_gens as gens
    import progs

    k = 0
    while True:
        yield f"<prog {seed}:{k}>", progs.generate(seed * 1_000_003 + k), None
        r = gens.random_for(seed, k)
        try:
            gen, prog = gens.generate(r, None)
        except Exception:  # noqa: BLE001
            gen, prog = None, {}
        if "module" in prog:
            yield f"<fuzz {gen} {seed}:{k}>", None, prog["module"]
        k += 1


def check_results(prog, tmp, counts, same_tree):
    import difftest as dt
    import numbavec

    mod = dt.load_source(prog.source, tmp, name=f"nv_fzbc_{abs(hash(prog.source)) % 10**9}")
    rng = np.random.default_rng(prog.seed)
    for sig in prog.signatures():
        try:
            a = numbavec.vectorize([sig])(mod.f)
        except numbavec.TypingError:
            continue
        try:
            b = numbavec.vectorize([sig])(bc.no_source(mod.f))
        except numbavec.TypingError as exc:
            if "from its bytecode" not in str(exc):
                return f"only the bytecode path refused {sig}: {exc}\n{prog.source}"
            counts["refused_compile"] = counts.get("refused_compile", 0) + 1
            return None
        if same_tree and bc.llvm_text(a, sig) != bc.llvm_text(b, sig):
            counts["ir_differs"] += 1
            return f"IR differs for {sig}:\n{prog.source}"
        dtypes = [np.dtype(t) for t in a.types[0].split("->")[0]]
        args = [dt.random_values(d, 64, rng) for d in dtypes]
        with np.errstate(all="ignore"):
            if a(*args).tobytes() != b(*args).tobytes():
                return f"results differ for {sig}:\n{prog.source}"
        counts["results_same"] += 1
    return None


def main(argv=None):
    ap = argparse.ArgumentParser()
    ap.add_argument("--minutes", type=float, default=1.0)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--results", action="store_true")
    args = ap.parse_args(argv)
    import tempfile
    tmp = tempfile.mkdtemp(prefix="nv-fuzz-bc-")
    counts = dict(programs=0, functions=0, exact=0, canonical=0, differs_verified=0,
                  refused=0, unsupported=0, results_same=0, ir_differs=0, failures=0)
    refusals = {}
    deadline = time.time() + 60 * args.minutes
    for name, prog, text in sources(args.seed):
        if time.time() > deadline:
            break
        text = text if text is not None else prog.source
        try:
            tree = ast.parse(text)
            top = compile(text, name, "exec")
        except (SyntaxError, ValueError, RecursionError, MemoryError):
            continue
        counts["programs"] += 1
        defs = bc.function_defs(tree)
        same_tree = True
        for code in bc.code_objects(top):
            fd = defs.get((code.co_name, code.co_firstlineno))
            if fd is None:
                continue
            counts["functions"] += 1
            try:
                rebuilt = bc.rebuild(code)
            except _bytecode.BytecodeError as exc:
                counts["refused"] += 1
                why = exc.why.split("(")[0].strip()
                refusals[why] = refusals.get(why, 0) + 1
                continue
            except RecursionError:
                counts["refused"] += 1
                continue
            except Exception as exc:  # noqa: BLE001 - what the fuzzer is for
                counts["failures"] += 1
                print(f"FAILURE {name}: {type(exc).__name__}: {exc}\n{text}", flush=True)
                continue
            if getattr(rebuilt, "refused_with", None):
                counts["unsupported"] += 1
                continue
            try:
                if bc.exact(fd, rebuilt):
                    counts["exact"] += 1
                    continue
                same_tree = False
                if bc.canonical(fd) == bc.canonical(rebuilt):
                    counts["canonical"] += 1
                else:
                    counts["differs_verified"] += 1
            except RecursionError:
                pass
        if args.results and prog is not None:
            why = check_results(prog, tmp, counts, same_tree)
            if why:
                counts["failures"] += 1
                print("FAILURE", name, why, flush=True)
    print(counts)
    print("refusals:", dict(sorted(refusals.items(), key=lambda kv: -kv[1])))
    return 1 if counts["failures"] else 0


if __name__ == "__main__":
    sys.exit(main())
