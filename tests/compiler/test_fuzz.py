"""Smoke tests of the fuzzers (tests/support/fuzz_kernels.py, tests/support/fuzz_signatures.py)
and of the release differential run (tests/support/difftest_release.py): a few cases
each with fixed seeds, so that the harness cannot rot.  The long runs are
commands (see the modules' docstrings and benchmarks/README.md), not tests.

Failures the fuzzers label as known faults (``known()``: found and not fixed
yet, listed in the fuzzers' KNOWN_FAULTS, empty today) are allowed here; any
other failure fails the test with the fuzzer's description of it.
"""
import itertools
import json
import os
import subprocess
import sys

import pytest

import _fuzz_selftest
import difftest_release
from conftest import NUMBAVEC_ROOT
import fuzz_harness as fh
import fuzz_kernels
import fuzz_signatures

pytestmark = pytest.mark.slow  # the fuzzers' smoke runs, in worker processes


def run_cases(module_name, cases, tmp_path, timeout=fh.DEFAULT_TIMEOUT):
    pool = fh.Pool(module_name, str(tmp_path), 1, timeout)
    try:
        return [(case, out) for case, out, _ in pool.run(cases)]
    finally:
        pool.close()


# ---- the harness itself ----

def test_harness_recognises_every_outcome(tmp_path):
    results = {case["action"]: out for case, out in
               run_cases("_fuzz_selftest", _fuzz_selftest.cases(0), tmp_path)}
    assert results["ok"]["status"] == "ok"
    assert results["refuse"]["status"] == "refused"
    assert results["crash"]["kind"] == "crash"
    assert results["crash"]["returncode"] < 0
    assert "SIGABRT" in results["crash"]["key"]
    assert results["hang"]["kind"] == "hang"
    assert results["system-error"]["kind"] == "system-error"
    assert results["runtime-error"]["kind"] == "runtime-error"
    assert results["text"]["kind"] == "mismatch"


def test_harness_keeps_going_after_crashes_and_hangs(tmp_path):
    """The cases after a crash and after a hang still run, in fresh workers."""
    cases = list(_fuzz_selftest.cases(1))
    outs = run_cases("_fuzz_selftest", cases, tmp_path)
    assert [c["id"] for c, _ in outs] == [c["id"] for c in cases]
    assert [o["status"] for c, o in outs if c["action"] == "ok"] == ["ok"] * 3


def test_minimizer_finds_the_smallest_failing_case(tmp_path):
    case = next(c for c in _fuzz_selftest.cases(2) if c["action"] == "text")
    out = fh.run_alone("_fuzz_selftest", str(tmp_path), case, 5)
    small, small_out = fh.minimize(_fuzz_selftest, "_fuzz_selftest", str(tmp_path), case, out,
                                   5, budget_s=60, log=lambda *a: None)
    assert small["text"] == "BAD"
    assert small_out["key"] == out["key"]


def test_normalize_blanks_what_varies():
    a = fh.normalize("/tmp/a/nvk_k1_2.py:3:12: name 'q' is not defined\n    return q")
    b = fh.normalize("/tmp/b/nvk_k9_7.py:5:4: name 'acc' is not defined")
    assert a == b == "FILE: name '_' is not defined"


# ---- the kernel fuzzer ----

def test_kernel_cases_are_deterministic():
    first = list(itertools.islice(fuzz_kernels.cases(7), 15))
    again = list(itertools.islice(fuzz_kernels.cases(7), 15))
    assert json.dumps(first) == json.dumps(again)
    assert len({c["gen"] for c in itertools.islice(fuzz_kernels.cases(3), 200)}) == \
        len(fuzz_kernels.gens.GENERATORS)


# Every generator runs in the smoke tests (the nested @jit helpers, integer
# ** chains and long bodies of "jit" and "chains" stop at the compiler's
# stated limits, within seconds).
SMOKE_GENERATORS = sorted(fuzz_kernels.gens.GENERATORS)


def assert_only_known(module, results):
    new = [(c, o) for c, o in results if o["status"] == "fail" and not module.known(c, o)]
    assert not new, "\n\n".join(f"{c['id']} ({c['gen']}): {o['key']}\n{o['detail'][:1500]}\n"
                                f"{module.render(c)[:3000]}" for c, o in new)


@pytest.mark.parametrize("seed", [11, 12])
def test_kernel_fuzzer_smoke(seed, tmp_path):
    cases = itertools.islice(fuzz_kernels.cases(seed, set(SMOKE_GENERATORS)), 30)
    results = run_cases("fuzz_kernels", cases, tmp_path)
    assert len(results) == 30
    assert sum(o["status"] == "ok" for _, o in results) >= 5
    assert sum(o.get("counts", {}).get("elements", 0) for _, o in results) > 100
    assert_only_known(fuzz_kernels, results)


def test_kernel_fuzzer_sees_a_fixed_fault_compiled(tmp_path):
    """The first fault the fuzzer found (a SystemError for `acc += y` where
    acc may be unassigned) became a TypingError, and is now what the
    interpreter does (rebind.c: UnboundLocalError where acc is unbound):
    the case compiles and the oracle finds py_func's results and
    exceptions; it would report anything else."""
    case = next(c for c in fuzz_kernels.cases(5, {"undefined"})
                if "acc += y" in c["module"] and c["api"] == "vectorize")
    out = fh.run_alone("fuzz_kernels", str(tmp_path), case, 20)
    assert out["status"] == "ok", out


@pytest.mark.parametrize("api", ["vectorize", "lazy", "gu_wrap", "guvectorize"])
def test_kernel_reproducer_runs_standalone(api, tmp_path):
    """A case the fuzzer passes runs as its own reproducer and prints the
    results beside py_func's."""
    candidates = (c for c in fuzz_kernels.cases(4, {"progs", "gufunc"}) if c["api"] == api
                  and (c["gen"] == "gufunc") == (api == "guvectorize") and c["stack_kb"] == 0)
    case = next(c for c in candidates
                if fh.run_alone("fuzz_kernels", str(tmp_path), c, 20).get("counts", {})
                .get("elements"))     # it ran and was compared
    out = fh.outcome("fail", "mismatch", "(for the test)", key="mismatch: test")
    path = tmp_path / "repro.py"
    path.write_text(fuzz_kernels.reproducer(case, out))
    # standalone: numbavec (the one under test) is all it imports
    env = dict(os.environ, PYTHONPATH=NUMBAVEC_ROOT)
    proc = subprocess.run([sys.executable, str(path)], capture_output=True, text=True,
                          cwd=tmp_path, env=env, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert "numbavec" in proc.stdout and "py_func" in proc.stdout


# ---- the signature fuzzer ----

@pytest.mark.parametrize("seed", [21, 22])
def test_signature_fuzzer_smoke(seed, tmp_path):
    cases = itertools.islice(fuzz_signatures.cases(seed), 60)
    results = run_cases("fuzz_signatures", cases, tmp_path)
    assert len(results) == 60
    assert sum(o["status"] == "ok" for _, o in results) >= 10
    assert sum(o["status"] == "refused" for _, o in results) >= 10
    assert_only_known(fuzz_signatures, results)


def test_signature_fuzzer_checks_long_dimension_names(tmp_path):
    """Two 70-character names sharing 63 characters are two dimensions: the
    fuzzer's call check tells (a known fault until main fixes it)."""
    case = next(c for c in fuzz_signatures.cases(3, {"layouts"}) if c.get("check_call")
                and any(len(d) > 63 for s in c["ins"] for d in s if isinstance(d, str))
                and len({d for s in c["ins"] for d in s if isinstance(d, str)}) > 1)
    out = fh.run_alone("fuzz_signatures", str(tmp_path), case, 20)
    assert out["status"] in ("ok", "fail"), out
    if out["status"] == "fail":
        assert fuzz_signatures.known(case, out) is not None, out


# ---- the release differential run ----

def test_difftest_release_smoke(capsys):
    assert difftest_release.main(["--programs", "12", "--seed", "777"]) == 0
    out = capsys.readouterr().out
    assert "12 programs" in out and "failures: 0" in out
