#!/usr/bin/env python3
"""Numba's own ufunc tests (numba/tests/npyufunc), run against numbavec.

The tests are run where the installed Numba keeps them, unchanged, by
pytest in a subprocess per file.  Before any test module is imported, a
plugin replaces ``numba.vectorize`` and ``numba.guvectorize`` with
numbavec's, so that a test's ``from numba import vectorize, guvectorize``
(and the helper modules' ones) get numbavec's decorators; everything else
(``jit``, the types, ``numba.tests.support``) stays Numba's.  Module names
are kept, so that tests of ``__module__`` and ``__qualname__`` mean what
they mean in Numba's own run.

Each test is put in or out of scope by SCOPE below (the first rule that
matches its id), with the reason: in scope are the tests of the public
decorator API (@vectorize, @guvectorize, the DUFunc/GUFunc surface they
return); out of scope are tests of Numba's internal builder classes, of
object mode, of calling a ufunc from Numba-compiled code, of Numba's own
cache files and thread configuration, and exact repeats.  Failures in scope
are grouped by what they test (GROUPS); those that fail only at an
assertion of a deliberate difference from Numba (DIFFERENCES, checked on
the failure itself) are counted apart, with the reason.

  python tools/try_numba_tests.py                  # about 1-3 minutes
  python tools/try_numba_tests.py --json numba-tests.json --all-failures
  python tools/try_numba_tests.py --tests-dir /path/to/numba/tests/npyufunc

Not run by CI; see tools/README.md.
"""
import argparse
import json
import os
import re
import subprocess
import sys
import tempfile

TOOLS = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(TOOLS)

# (regular expression on the test id "file::Class::test", scope, reason);
# the first match decides.
OUT, IN = "out", "in"
SCOPE = [
    (r"^test_caching\.py", OUT,
     "checks Numba's own cache index files and its cache debug log"),
    (r"^test_parallel_env_variable\.py", OUT, "Numba's NUMBA_NUM_THREADS configuration"),
    (r"^test_parallel_low_work\.py|^test_ufunc\.py::TestUFuncs::", OUT,
     "builds ufuncs with Numba's internal Vectorize class, not a decorator"),
    (r"^test_ufunc\.py::TestUFuncsMisc", OUT, "tests @njit alone; no ufunc is made"),
    (r"^test_ufuncbuilding\.py::Test(G?U[Ff]unc)Building", OUT,
     "Numba's internal UFuncBuilder/GUFuncBuilder classes"),
    (r"JitDisabled::", OUT,
     "a repeat of the class above with Numba's DISABLE_JIT set to False, its default"),
    (r"objmode|objectmode|forceobj", OUT,
     "object mode (numbavec always compiles nopython; forceobj=True is refused)"),
    (r"^test_dufunc\.py::TestDUFunc::", OUT,
     "constructs dufunc.DUFunc directly, and calls it from @njit"),
    (r"^test_dufunc\.py::TestDUFunc(At|Reduce|ReduceAt|ReduceNumPyTests)::", OUT,
     "calls the ufunc's methods from @njit (Numba compiling a call to a foreign ufunc)"),
    (r"^test_dufunc\.py::TestDUFuncPickling", OUT,
     "calls the unpickled ufunc from @njit"),
    (r"^test_gufunc\.py::TestGUVectorizeJit::", OUT,
     "calls the gufunc from @jit (Numba compiling a call to a foreign gufunc)"),
    (r"^test_gufunc\.py::TestGUFunc(Parallel)?::test_(gufunc|ufunc_like)$"
     r"|^test_gufunc\.py::TestDynamicGUFunc::test_dynamic_(matmul|ufunc_like)$", OUT,
     "builds the gufunc with Numba's internal GUVectorize class"),
    (r"^test_gufunc\.py::TestGUVectorizePickling", OUT,
     "asserts Numba's private attributes (_frozen, gufunc_builder._sigs)"),
    (r"^test_parallel_ufunc_issues\.py::.*::test_gil_reacquire_deadlock", OUT,
     "calls a ctypes function from the kernel, outside numbavec's kernel language"),
    (r"^test_(vectorize_decor|ufuncbuilding|gufunc|update_inplace|errors"
     r"|parallel_ufunc_issues)\.py::", IN, "the public vectorize/guvectorize API"),
]

# Tests in scope that fail only where numbavec deliberately differs from
# Numba: (regular expression on the test id, one on the failure's message and
# traceback that must match, so that any other failure of the test still
# counts as one, the difference).  Each was checked by hand to pass with that
# one assertion removed (2026-11-27).
DIFFERENCES = [
    (r"^test_update_inplace\.py::.*::test_update_inplace(_3)?$", r"is not false : input",
     "asserts that a kernel's write into an input not named in writable_args is lost when "
     "NumPy casts that input (f4 into an f8 loop); numbavec writes back every input its "
     "kernel assigns to (docs/DESIGN-NOTES.md, 'Writes into inputs')"),
    (r"^test_update_inplace\.py::.*::test_exceptions$", r"TypeError not raised[\s\S]*target='cuda'",
     "asserts writable_args is refused on target='cuda'; numbavec's cuda gufuncs write "
     "inputs back as its host ones do"),
    (r"^test_ufuncbuilding\.py::.*::test_(gu)?vectorize_identity$",
     r"ValueError not raised[\s\S]*identity=2\)|identity=2\)\(add\)",
     "asserts identity=2 is refused; numbavec takes any number as identity (NumPy's "
     "PyUFunc_IdentityValue, docs/DESIGN-NOTES.md 'identity'); 'none' is refused as in Numba"),
    (r"^test_ufuncbuilding\.py::.*::test_guvectorize_invalid_layout$",
     r"NameError|type and shape signature mismatch for arg #3",
     "asserts output-only dimensions ('->(x,z,v)') are a NameError; numbavec takes them as "
     "NumPy does (their sizes come from out=), and reports the 2-d signature given for "
     "that 3-d argument instead"),
    (r"^test_gufunc\.py::TestDynamicGUFunc::test_dynamic_scalar_output$",
     r"TypeError not raised[\s\S]*sum_row\(inp\)",
     "asserts that a dynamic gufunc called without its output raises 'Too few arguments'; "
     "numbavec gives the output the type the kernel stores into it (docs/HISTORY.md, "
     "'guvectorize'); the out= part of the test (an int32 out types the loop) passes"),
    (r"^test_gufunc\.py::TestMultipleOutputs::test_incorrect_number_of_pos_args$",
     r"Too few arguments for function 'f'\" not found in 'f\(\) takes from 2 to 4",
     "a numbavec gufunc is a real numpy.ufunc: NumPy checks the argument count, a "
     "TypeError in NumPy's words, not Numba's"),
]


def failing_source(tests_dir, test_id, longrepr):
    """The failing statement of test_id and the 3 lines after it (pytest's
    --tb=short shows only a `with self.assertRaises(...)` line)."""
    found = re.findall(r"^(test_\w+\.py):(\d+): in ", longrepr or "", re.M)
    if not found:
        return ""
    name, line = found[-1]
    try:
        with open(os.path.join(tests_dir, name)) as f:
            lines = f.readlines()
    except OSError:
        return ""
    return "".join(lines[int(line) - 1:int(line) + 3])


def difference_of(test_id, text):
    for id_pattern, failure, reason in DIFFERENCES:
        if re.search(id_pattern, test_id) and re.search(failure, text or ""):
            return reason
    return None


# (group, regular expression on the test id, on the failure's message); a
# failure goes to the first group either matches.
GROUPS = [
    ("Numba's type objects as signatures (float64[:], void(...))", None,
     r"holds numbavec types or type names|a signature must be a str, a Signature"),
    ("a Numba @jit function given to vectorize", None,
     r"decorates a Python function, not CPUDispatcher"),
    ("is_dynamic", None, r"is_dynamic"),
    ("dynamic gufuncs: out= does not type the output",
     r"test_dynamic_scalar_output", r"Cannot cast ufunc .* output"),
    ("layout error message printing a literal %*s", None, r"%\*s"),
    ("error types and messages (too few arguments, a scalar type for an array argument)",
     r"test_incorrect_number_of_pos_args|test_scalar_input_core_type_error|"
     r"test_ndim_mismatch|test_dynamic_scalar_output|test_guvectorize_invalid_layout", None),
    ("a gufunc's __doc__", r"test_docstring", r"__doc__|docstring"),
    ("0 ** -1 for integers", r"test_power_integer", None),
    ("in-place argument updates (writable_args by name, inputs left untouched)",
     r"test_update_inplace", None),
    ("unknown decorator options raising Numba's error type",
     r"unrecognized_arg|test_exceptions", r"Unrecognized options"),
    ("identity: values Numba refuses (2, 'none') raise ValueError, before other checks",
     r"identity", None),
]


def scope_of(test_id):
    for pattern, scope, reason in SCOPE:
        if re.search(pattern, test_id):
            return scope, reason
    return "unclassified", "no rule in SCOPE matches (a test new in this Numba?)"


def group_of(test_id, message):
    for name, id_pattern, message_pattern in GROUPS:
        if (id_pattern and re.search(id_pattern, test_id)) or \
                (message_pattern and re.search(message_pattern, message or "")):
            return name
    return "other"


# --------------------------------------------------------------------------
# Inside the pytest subprocess
# --------------------------------------------------------------------------

def switched_names(level):
    """The names of the numba module that are given numbavec's objects:
    the two decorators; with level 'imports', also every type and ``jit``
    (what a user who changes whole import lines gets)."""
    import numbavec
    names = ["vectorize", "guvectorize"]
    if level == "imports":
        names += ["jit"] + sorted(n for n in dir(numbavec)
                                  if isinstance(getattr(numbavec, n), numbavec.Type))
    return names


class SwitchPlugin:
    """Gives numba's names (switched_names) numbavec's objects before any
    test module is imported, and writes one JSON line per test phase."""

    def __init__(self, path, level):
        import numba
        import numbavec
        for name in switched_names(level):
            if hasattr(numba, name):
                setattr(numba, name, getattr(numbavec, name))
        self.out = open(path, "a")

    def pytest_runtest_logstart(self, nodeid, location):
        self._write({"nodeid": nodeid, "when": "start"})

    def pytest_runtest_logreport(self, report):
        message = ""
        if report.failed:
            crash = getattr(report.longrepr, "reprcrash", None)
            message = crash.message if crash is not None else str(report.longrepr)[-800:]
        self._write({"nodeid": report.nodeid, "when": report.when, "outcome": report.outcome,
                     "xfail": hasattr(report, "wasxfail"), "message": message,
                     "longrepr": str(report.longrepr)[-3000:] if report.failed else ""})

    def _write(self, item):
        self.out.write(json.dumps(item) + "\n")
        self.out.flush()


def worker(opts):
    import pytest
    args = [*opts.files, "-q", "-p", "no:cacheprovider", "-p", "no:randomly",
            "--rootdir", opts.tests_dir, "-o", "python_files=test_*.py", "--tb=short"]
    for nodeid in opts.deselect or ():
        args += ["--deselect", nodeid]
    return pytest.main(args, plugins=[SwitchPlugin(opts.out, opts.switch)])


# --------------------------------------------------------------------------
# The parent
# --------------------------------------------------------------------------

def default_tests_dir():
    import numba
    path = os.path.join(os.path.dirname(numba.__file__), "tests", "npyufunc")
    if not os.path.isdir(path):
        raise SystemExit(f"{path} is missing: this Numba ships no tests; pass --tests-dir")
    return path


def run_file(opts, path, workdir):
    """Run one test file in a subprocess; a test that kills the process is
    recorded as crashed and the file run again without it."""
    deselect, crashed = [], {}
    out = os.path.join(workdir, os.path.basename(path) + ".jsonl")
    rel = os.path.basename(path)
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(
        p for p in (REPO, os.environ.get("PYTHONPATH")) if p),
        NUMBAVEC_CACHE_DIR=os.path.join(workdir, "cache"), PYTHONDONTWRITEBYTECODE="1")
    for _ in range(10):
        results = dict(crashed)
        if os.path.exists(out):
            os.remove(out)
        command = [sys.executable, os.path.abspath(__file__), "--worker", "--out", out,
                   "--tests-dir", opts.tests_dir, "--switch", opts.switch, path]
        for nodeid in deselect:
            command += ["--deselect", nodeid]
        try:
            proc = subprocess.run(command, env=env, capture_output=True, text=True,
                                  cwd=opts.tests_dir, timeout=opts.timeout)
            code, stderr = proc.returncode, proc.stderr or proc.stdout
        except subprocess.TimeoutExpired:
            code, stderr = f"a timeout ({opts.timeout} s)", ""
        last = None
        with open(out) if os.path.exists(out) else open(os.devnull) as f:
            for line in f:
                item = json.loads(line)
                tid = _test_id(rel, item["nodeid"])
                if item["when"] == "start":
                    last = tid
                    continue
                results.setdefault(tid, []).append(item)
        if code in (0, 1, 5):                # passed, some failed, none collected
            break
        finished = any(i["when"] == "teardown" for i in results.get(last, []))
        if last is None or last in crashed or finished:
            results[f"{rel}::<the run>"] = [{"when": "call", "outcome": "failed",
                                            "message": f"pytest ended with {code}: "
                                            f"{stderr[-600:]}", "longrepr": ""}]
            break
        crashed[last] = [{"when": "call", "outcome": "crashed",
                          "message": f"the process ended with {code}",
                          "longrepr": stderr[-1500:]}]
        deselect.append(_nodeid(path, last))
    return results


def _test_id(rel, nodeid):
    """'test_gufunc.py::TestGUFunc::test_axis' whatever path pytest printed."""
    parts = nodeid.split("::")
    return "::".join([rel] + parts[1:])


def _nodeid(path, test_id):
    return "::".join([path] + test_id.split("::")[1:])


def outcome_of(items):
    """passed / failed / crashed / skipped / xfail, and the message."""
    for item in items:
        if item["outcome"] in ("failed", "crashed"):
            return item["outcome"], item.get("message", ""), item.get("longrepr", "")
    calls = [i for i in items if i["when"] == "call"]
    if calls and calls[0].get("xfail"):
        return "xfail", "", ""
    if any(i["outcome"] == "skipped" for i in items):
        return "skipped", "", ""
    return "passed", "", ""


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("files", nargs="*", help="test files (default: every test_*.py)")
    ap.add_argument("--tests-dir", help="numba/tests/npyufunc (default: the installed Numba's)")
    ap.add_argument("--json", help="write the results here")
    ap.add_argument("--all-failures", action="store_true",
                    help="also list the failures out of scope")
    ap.add_argument("--switch", choices=("ufuncs", "imports"), default="ufuncs",
                    help="ufuncs: only vectorize/guvectorize are numbavec's (default); "
                    "imports: also jit and the type names (float64, void, ...)")
    ap.add_argument("--timeout", type=int, default=900, help="seconds per test file")
    ap.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--out", help=argparse.SUPPRESS)
    ap.add_argument("--deselect", action="append", help=argparse.SUPPRESS)
    opts = ap.parse_args(argv)
    if REPO not in sys.path:
        sys.path.insert(0, REPO)
    opts.tests_dir = opts.tests_dir or default_tests_dir()
    if opts.worker:
        return worker(opts)
    files = opts.files or sorted(os.path.join(opts.tests_dir, f)
                                 for f in os.listdir(opts.tests_dir)
                                 if f.startswith("test_") and f.endswith(".py"))
    rows = []
    with tempfile.TemporaryDirectory(prefix="numbatests-") as workdir:
        for path in files:
            for tid, items in sorted(run_file(opts, path, workdir).items()):
                result, message, longrepr = outcome_of(items)
                scope, reason = scope_of(tid)
                row = {"test": tid, "scope": scope, "reason": reason, "result": result,
                       "message": message}
                if result in ("failed", "crashed"):
                    row["group"] = group_of(tid, f"{message}\n{longrepr}")
                    row["longrepr"] = longrepr
                    reason = difference_of(tid, f"{message}\n{longrepr}\n" +
                                           failing_source(opts.tests_dir, tid, longrepr))
                    if scope == IN and reason is not None:
                        row["result"], row["difference"] = "differs", reason
                rows.append(row)
    report(rows, opts)
    if opts.json:
        import numba
        import numbavec
        with open(opts.json, "w") as f:
            json.dump({"numba": numba.__version__, "numbavec": numbavec.__version__,
                       "switch": opts.switch, "tests": rows}, f, indent=1)
    return 0


def report(rows, opts):
    import numba
    inscope = [r for r in rows if r["scope"] == IN]
    passed = [r for r in inscope if r["result"] in ("passed", "xfail")]
    failed = [r for r in inscope if r["result"] in ("failed", "crashed")]
    differs = [r for r in inscope if r["result"] == "differs"]
    print(f"Numba {numba.__version__}'s npyufunc tests with numba's "
          f"{', '.join(switched_names(opts.switch)[:3])}"
          f"{' and the type names' if opts.switch == 'imports' else ''} switched to numbavec's")
    print(f"in scope: {len(passed)}/{len(inscope)} pass, {len(failed)} fail, "
          f"{len(differs)} fail only where numbavec deliberately differs, "
          f"{len(inscope) - len(passed) - len(failed) - len(differs)} skipped")
    by_file = {}
    for r in inscope:
        f = by_file.setdefault(r["test"].split("::")[0], [0, 0])
        f[0] += r["result"] in ("passed", "xfail")
        f[1] += 1
    for name, (ok, n) in sorted(by_file.items()):
        print(f"  {name:<32} {ok}/{n}")
    groups = {}
    for r in failed:
        groups.setdefault(r["group"], []).append(r)
    print("\nFailures in scope, by what they test:")
    for name, items in sorted(groups.items(), key=lambda kv: -len(kv[1])):
        print(f"  {len(items):>2}  {name}")
        for r in items:
            print(f"        {r['test']}: {_short(r['message'])}")
    print(f"\nFailing only where numbavec deliberately differs from Numba: {len(differs)}")
    for r in differs:
        print(f"        {r['test']}: {_short(r['difference'])}")
    out = [r for r in rows if r["scope"] != IN]
    reasons = {}
    for r in out:
        reasons.setdefault((r["scope"], r["reason"]), []).append(r)
    print(f"\nOut of scope: {len(out)} tests")
    for (scope, reason), items in sorted(reasons.items(), key=lambda kv: -len(kv[1])):
        bad = sum(1 for r in items if r["result"] in ("failed", "crashed"))
        print(f"  {len(items):>3}  ({bad} failing) {reason}" +
              (" [UNCLASSIFIED]" if scope != OUT else ""))
        if opts.all_failures:
            for r in items:
                if r["result"] in ("failed", "crashed"):
                    print(f"         {r['test']}: {_short(r['message'])}")


def _short(message, width=240):
    text = " ".join((message or "").split())
    return text if len(text) <= width else text[:width - 3] + "..."


if __name__ == "__main__":
    sys.exit(main())
