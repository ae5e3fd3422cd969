"""A fuzzer that fails on purpose, for tests/compiler/test_fuzz.py to check the harness
(tests/support/fuzz_harness.py) with: every outcome it must recognise, and a
minimization whose answer is known."""
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import fuzz_harness as fh  # noqa: E402


def cases(seed, only=None):
    for k, action in enumerate(["ok", "refuse", "crash", "ok", "hang", "system-error", "ok",
                                "runtime-error", "text"]):
        yield {"id": f"t{seed}-{k}", "program": str(k), "gen": action, "action": action,
               "text": "xxBADyyy" if action == "text" else "", "timeout": 2.0}


def run_case(case, workdir):
    action = case["action"]
    if action == "crash":
        os.abort()
    if action == "hang":
        time.sleep(60)
    if action == "refuse":
        return fh.outcome("refused")
    if action == "system-error":
        return fh.exception_outcome(SystemError("returned NULL"), "compile")
    if action == "runtime-error":
        return fh.exception_outcome(RuntimeError("invalid LLVM IR"), "compile")
    if action == "text" and "BAD" in case["text"]:
        return fh.outcome("fail", "mismatch", f"BAD in {case['text']!r}", key="mismatch: BAD")
    return fh.outcome("ok", counts={"calls": 1})


def shrink(case, out):
    text = case["text"]
    for i in range(len(text)):
        yield dict(case, text=text[:i] + text[i + 1:])


def render(case):
    return f"# {case['action']} {case['text']}\n"


def reproducer(case, out, note=""):
    return f'"""{out["kind"]}: {note}"""\n' + render(case)
