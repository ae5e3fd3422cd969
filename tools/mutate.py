#!/usr/bin/env python3
"""A small, reproducible mutation round over numbavec's hot paths.

Each mutant (tools/mutants.py) is one realistic bug: a text in one file
replaced by another.  For each, this tool applies it, rebuilds in place
(`make inplace`, C files only), runs the test selection of that file (or the
mutant's own) with a timeout, restores the file and records one of

    killed      a test failed (or the test process crashed)
    survived    every selected test passed
    timeout     the tests ran past --timeout (counted as caught)
    build-fail  the mutant did not compile (not counted)
    gpu-only    needs a GPU to show (not run without --gpu)

as one JSON line in the results file.  The file is restored in a `finally`,
on SIGINT/SIGTERM too; a copy of the original is kept in
build/mutate/backup/ while a mutant is applied, and a later run restores
from it first if a run was killed hard.  The worktree's build is rebuilt
from the restored sources at the end.

    python tools/mutate.py check                 # every pattern applies once
    python tools/mutate.py list [--file loops.c]
    nohup python tools/mutate.py run --results build/mutate/round.jsonl &
    python tools/mutate.py run --ids L01,L02 --results ... [--resume]
    python tools/mutate.py report build/mutate/round.jsonl [--after other.jsonl]
    python tools/mutate.py show L01              # the mutant as a diff

Equivalent mutants (no observable change) are listed in mutants.py with the
reason and are not run unless --equivalent is given (to confirm that they
survive).  Run from the repository root, with the Python whose build is
tested (its interpreter builds and runs the tests).
"""
import argparse
import difflib
import json
import os
import shlex
import shutil
import signal
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "tools"))

import mutants as M  # noqa: E402  (tools/mutants.py)

BACKUP = os.path.join(ROOT, "build", "mutate", "backup")
PYTEST = ["-m", "pytest", "-x", "-q", "-p", "no:cacheprovider", "-p", "no:randomly"]


# ---- applying and restoring ----------------------------------------------

def _read(path):
    with open(os.path.join(ROOT, path), "rb") as fh:
        return fh.read()


def _write(path, data):
    full = os.path.join(ROOT, path)
    tmp = full + ".mutate-tmp"
    with open(tmp, "wb") as fh:
        fh.write(data)
    os.replace(tmp, full)


def mutated_text(m, original):
    """original (bytes) with mutant m applied; ValueError unless its pattern
    occurs exactly once (or m.nth picks one)."""
    find, repl = m.find.encode(), m.replace.encode()
    count = original.count(find)
    if m.nth is None and count != 1:
        raise ValueError(f"{m.id}: pattern occurs {count} times in {m.file}")
    if m.nth is not None and count <= m.nth:
        raise ValueError(f"{m.id}: pattern occurs {count} times, nth={m.nth}")
    at = -1
    for _ in range((m.nth or 0) + 1):
        at = original.index(find, at + 1)
    return original[:at] + repl + original[at + len(find):]


def _backup_path(path):
    return os.path.join(BACKUP, path.replace("/", "__"))


def restore_leftovers():
    """Puts back any file a killed run left mutated."""
    if not os.path.isdir(BACKUP):
        return []
    restored = []
    for name in os.listdir(BACKUP):
        path = name.replace("__", "/")
        with open(os.path.join(BACKUP, name), "rb") as fh:
            data = fh.read()
        if _read(path) != data:
            _write(path, data)
            restored.append(path)
        os.unlink(os.path.join(BACKUP, name))
    return restored


class Applied:
    """Context manager: m applied to its file, restored on exit."""

    def __init__(self, m):
        self.m = m
        self.original = _read(m.file)

    def __enter__(self):
        os.makedirs(BACKUP, exist_ok=True)
        with open(_backup_path(self.m.file), "wb") as fh:
            fh.write(self.original)
        _write(self.m.file, mutated_text(self.m, self.original))
        return self

    def __exit__(self, *exc):
        _write(self.m.file, self.original)
        os.unlink(_backup_path(self.m.file))


# ---- building and testing ------------------------------------------------

def _run(cmd, timeout, log):
    """(returncode or 'timeout', seconds); output appended to log.  The
    command runs in its own process group, killed whole on timeout."""
    t0 = time.monotonic()
    with open(log, "ab") as out:
        out.write(("\n$ " + " ".join(cmd) + "\n").encode())
        out.flush()
        proc = subprocess.Popen(cmd, cwd=ROOT, stdout=out, stderr=subprocess.STDOUT,
                                start_new_session=True)
        try:
            rc = proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
            rc = "timeout"
    return rc, time.monotonic() - t0


def build(log, timeout=900):
    """The whole in-place build (`make inplace`)."""
    if os.environ.get("MUTATE_BUILD"):
        cmd = ["bash", "-c", os.environ["MUTATE_BUILD"]]
    else:
        cmd = ["make", "inplace", f"PYTHON={sys.executable}"]
    return _run(cmd, timeout, log)


# The quick build: setuptools recompiles every source when any is newer, so
# the commands of one full build are recorded (compile per source, link,
# copy into numbavec/), and a mutant recompiles its own file and relinks.
COMMANDS = os.path.join(ROOT, "build", "mutate", "commands.json")


def record_commands(log):
    """Runs a full forced build and keeps its commands; None on failure."""
    env = dict(os.environ, NUMBAVEC_LLVM_SHARED="1")
    proc = subprocess.run([sys.executable, "setup.py", "build_ext", "--inplace", "--force"],
                          cwd=ROOT, env=env, capture_output=True, text=True)
    with open(log, "a") as out:
        out.write(proc.stdout + proc.stderr)
    if proc.returncode != 0:
        return None
    compile_, link, copy = {}, None, None
    for line in proc.stdout.splitlines():
        words = shlex.split(line)
        if not words:
            continue
        if "-c" in words and "-o" in words:
            compile_[words[words.index("-c") + 1]] = words
        elif "-shared" in words:
            link = words
        elif words[0] == "copying" and "->" in words:
            copy = [words[1], words[3]]
    if not compile_ or link is None or copy is None:
        return None
    cmds = {"compile": compile_, "link": link, "copy": copy}
    os.makedirs(os.path.dirname(COMMANDS), exist_ok=True)
    with open(COMMANDS, "w") as fh:
        json.dump(cmds, fh)
    return cmds


def quick_commands(log):
    if os.path.exists(COMMANDS):
        with open(COMMANDS) as fh:
            return json.load(fh)
    return record_commands(log)


def quick_compile(path, log, cmds):
    return _run(cmds["compile"][path], 600, log)


def quick_build(path, log, cmds):
    """Recompiles path and relinks; (rc, seconds)."""
    rc, t1 = quick_compile(path, log, cmds)
    if rc != 0:
        return rc, t1
    rc, t2 = _run(cmds["link"], 600, log)
    if rc == 0:
        src, dst = cmds["copy"]
        shutil.copy(os.path.join(ROOT, src), os.path.join(ROOT, dst))
    return rc, t1 + t2


def tests_for(m, override=None, wide=False):
    if override:
        return override
    if wide:
        return M.wide_tests(m.file)
    return m.tests or M.FILE_TESTS[m.file]


def run_tests(tests, timeout, log):
    return _run([sys.executable, *PYTEST, *tests], timeout, log)


def _first_failure(log):
    """The first FAILED/ERROR line pytest printed for the last run, if any."""
    try:
        with open(log, "rb") as fh:
            text = fh.read().decode(errors="replace")
    except OSError:
        return None
    tail = text[text.rfind("\n$ "):]
    for line in tail.splitlines():
        if line.startswith(("FAILED ", "ERROR ")) or "Fatal Python error" in line:
            return line.strip()[:300]
    return None


def run_one(m, args, log, cmds):
    rec = {"id": m.id, "file": m.file, "why": m.why}
    try:
        mutated_text(m, _read(m.file))
    except ValueError as exc:      # the code moved: fix the pattern (`check` says)
        rec.update(status="no-match", error=str(exc))
        return rec
    quick = cmds is not None and m.file in cmds["compile"]
    try:
        with Applied(m):
            return _run_applied(m, args, log, rec, quick, cmds)
    finally:
        if quick:     # the object file of the restored source, for the next link
            quick_compile(m.file, log, cmds)


def _run_applied(m, args, log, rec, quick, cmds):
    """Builds (C files) and tests the applied mutant m into rec."""
    if m.file.endswith((".c", ".h")):
        rc, secs = quick_build(m.file, log, cmds) if quick else build(log)
        rec["build_s"] = round(secs, 1)
        if rc != 0:
            rec["status"] = "build-fail"
            return rec
    tests = tests_for(m, args.tests, args.wide)
    rc, secs = run_tests(tests, args.timeout, log)
    rec.update(tests=tests, test_s=round(secs, 1), rc=rc)
    if rc == "timeout":
        rec["status"] = "timeout"
    elif rc == 0:
        rec["status"] = "survived"
    elif rc in (4, 5):     # usage error, nothing collected: the selection is wrong
        rec["status"] = "error"
    else:
        rec["status"] = "killed"
        rec["by"] = _first_failure(log)
    return rec


# ---- commands --------------------------------------------------------------

def select(ids=None, file=None, equivalent=False):
    pool = list(M.MUTANTS) + (list(M.EQUIVALENT) if equivalent else [])
    if ids:
        wanted = ids.split(",")
        by_id = {m.id: m for m in list(M.MUTANTS) + list(M.EQUIVALENT)}
        missing = [i for i in wanted if i not in by_id]
        if missing:
            sys.exit(f"unknown mutant ids: {missing}")
        pool = [by_id[i] for i in wanted]
    if file:
        pool = [m for m in pool if file in m.file]
    return pool


def cmd_check(args):
    bad = 0
    ids = set()
    for m in list(M.MUTANTS) + list(M.EQUIVALENT):
        if m.id in ids:
            print(f"{m.id}: duplicate id")
            bad += 1
        ids.add(m.id)
        try:
            mutated_text(m, _read(m.file))
        except (ValueError, OSError) as exc:
            print(exc)
            bad += 1
        if m.file not in M.FILE_TESTS and not m.tests:
            print(f"{m.id}: no test selection for {m.file}")
            bad += 1
    n, e = len(M.MUTANTS), len(M.EQUIVALENT)
    g = sum(1 for m in M.MUTANTS if m.gpu)
    print(f"{n} mutants ({g} need a GPU), {e} equivalent; {bad} problems")
    return 1 if bad else 0


def cmd_list(args):
    for m in select(args.ids, args.file, equivalent=True):
        kind = "EQUIV" if m in M.EQUIVALENT else ("GPU" if m.gpu else "")
        print(f"{m.id:5} {kind:5} {m.file}: {m.why}")


def cmd_show(args):
    for m in select(args.ids):
        original = _read(m.file).decode()
        new = mutated_text(m, _read(m.file)).decode()
        sys.stdout.writelines(difflib.unified_diff(
            original.splitlines(True), new.splitlines(True), f"a/{m.file}", f"b/{m.file}", n=2))
        print(f"# {m.id}: {m.why}\n")


def _done_ids(path):
    done = set()
    if os.path.exists(path):
        with open(path) as fh:
            for line in fh:
                if line.strip():
                    done.add(json.loads(line)["id"])
    return done


LOCK = os.path.join(ROOT, "build", "mutate", "lock")


def take_lock():
    """One run at a time in a checkout (they share the build); exits if
    another live run holds it."""
    os.makedirs(os.path.dirname(LOCK), exist_ok=True)
    try:
        with open(LOCK) as fh:
            pid = int(fh.read().strip() or 0)
        os.kill(pid, 0)
    except (OSError, ValueError):
        pass                    # no lock, or its run is gone
    else:
        if pid != os.getpid():
            sys.exit(f"another mutate.py run (pid {pid}) is using this checkout")
    with open(LOCK, "w") as fh:
        fh.write(str(os.getpid()))


def cmd_run(args):
    take_lock()
    for path in restore_leftovers():
        print(f"restored {path} (left mutated by a killed run)", flush=True)
    pool = select(args.ids, args.file, args.equivalent)
    if args.survivors_of:
        old = _load(args.survivors_of)
        pool = [m for m in pool if old.get(m.id, {}).get("status") == "survived"]
    dirty = subprocess.run(["git", "diff", "--quiet", "--", *sorted({m.file for m in pool})],
                           cwd=ROOT).returncode
    if dirty and not args.allow_dirty:
        sys.exit("a file to mutate has uncommitted changes: commit or stash them "
                 "(or --allow-dirty)")
    os.makedirs(os.path.dirname(os.path.abspath(args.results)), exist_ok=True)
    log = os.path.abspath(args.results) + ".log"
    done = _done_ids(args.results) if args.resume else set()
    cmds = None
    if not args.full_build and any(m.file.endswith(".c") for m in pool):
        cmds = quick_commands(log)
        print("quick builds (one file, relink)" if cmds else "full builds", flush=True)
    stop = []

    def on_signal(signum, frame):
        stop.append(signum)
        raise KeyboardInterrupt

    signal.signal(signal.SIGTERM, on_signal)
    try:
        for m in pool:
            if m.id in done:
                continue
            if m.gpu and not args.gpu:
                rec = {"id": m.id, "file": m.file, "why": m.why, "status": "gpu-only"}
            else:
                rec = run_one(m, args, log, cmds)
            rec["equivalent"] = m in M.EQUIVALENT
            with open(args.results, "a") as fh:
                fh.write(json.dumps(rec) + "\n")
            print(f"{m.id:5} {rec['status']:10} {m.file}", flush=True)
    except KeyboardInterrupt:
        print("interrupted: the file is restored", flush=True)
    finally:
        if any(m.file.endswith((".c", ".h")) for m in pool) and not args.no_final_build:
            rc, _ = build(log)
            print(f"final build of the restored sources: {'ok' if rc == 0 else rc}", flush=True)
        os.unlink(LOCK)
    return 1 if stop else 0


def _load(path):
    with open(path) as fh:
        return {r["id"]: r for r in map(json.loads, filter(str.strip, fh))}


CAUGHT = ("killed", "timeout")


def cmd_report(args):
    before = _load(args.results)
    after = _load(args.after) if args.after else None
    files = sorted({m.file for m in M.MUTANTS} | {m.file for m in M.EQUIVALENT})
    head = ["file", "mutants", "killed before"] + (["killed after"] if after else []) + \
           ["equivalent excluded", "not checkable here"]
    rows = []
    tot = [0, 0, 0, 0, 0]
    for f in files:
        ms = [m for m in M.MUTANTS if m.file == f]
        gpu = sum(1 for m in ms if m.gpu)
        checkable = [m for m in ms if not m.gpu]
        kb = sum(1 for m in checkable if before.get(m.id, {}).get("status") in CAUGHT)
        ka = sum(1 for m in checkable if after and after.get(m.id, {}).get("status") in CAUGHT)
        eq = sum(1 for m in M.EQUIVALENT if m.file == f)
        row = [f, str(len(ms)), str(kb)] + ([str(ka)] if after else []) + [str(eq), str(gpu)]
        rows.append(row)
        for i, v in enumerate((len(ms), kb, ka, eq, gpu)):
            tot[i] += v
    rows.append(["total", str(tot[0]), str(tot[1])] + ([str(tot[2])] if after else [])
                + [str(tot[3]), str(tot[4])])
    widths = [max(len(r[i]) for r in rows + [head]) for i in range(len(head))]
    line = lambda r: "| " + " | ".join(c.ljust(w) for c, w in zip(r, widths)) + " |"  # noqa: E731
    print(line(head))
    print("|" + "|".join("-" * (w + 2) for w in widths) + "|")
    for r in rows:
        print(line(r))
    checkable = tot[0] - tot[4]
    print(f"\ncaught before: {tot[1]}/{checkable} = {tot[1] / checkable:.1%} of the checkable, "
          f"non-equivalent mutants")
    if after:
        print(f"caught after:  {tot[2]}/{checkable} = {tot[2] / checkable:.1%}")
    for name, res in (("before", before), ("after", after)):
        if not res:
            continue
        left = [m.id for m in M.MUTANTS if not m.gpu and res.get(m.id, {}).get("status")
                not in CAUGHT]
        print(f"not caught {name}: {', '.join(left) or 'none'}")
    return 0


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = p.add_subparsers(dest="cmd", required=True)
    sub.add_parser("check")
    ls = sub.add_parser("list")
    ls.add_argument("--ids")
    ls.add_argument("--file")
    sh = sub.add_parser("show")
    sh.add_argument("ids")
    r = sub.add_parser("run")
    r.add_argument("--results", default="build/mutate/results.jsonl")
    r.add_argument("--ids", help="comma-separated mutant ids (default: all)")
    r.add_argument("--file", help="only mutants of files whose path contains this")
    r.add_argument("--timeout", type=float, default=600, help="seconds for the tests")
    r.add_argument("--tests", nargs="+", help="test selection instead of the file's own")
    r.add_argument("--wide", action="store_true",
                   help="every test file but mutants.WIDE_EXCLUDE (to confirm a survivor)")
    r.add_argument("--survivors-of", metavar="RESULTS",
                   help="only the mutants that survived in this results file")
    r.add_argument("--resume", action="store_true", help="skip ids already in --results")
    r.add_argument("--equivalent", action="store_true", help="run the equivalent ones too")
    r.add_argument("--gpu", action="store_true", help="run the GPU-only mutants too")
    r.add_argument("--allow-dirty", action="store_true")
    r.add_argument("--no-final-build", action="store_true")
    r.add_argument("--full-build", action="store_true",
                   help="`make inplace` for each mutant instead of the quick build")
    rp = sub.add_parser("report")
    rp.add_argument("results")
    rp.add_argument("--after")
    args = p.parse_args(argv)
    return {"check": cmd_check, "list": cmd_list, "show": cmd_show, "run": cmd_run,
            "report": cmd_report}[args.cmd](args)


if __name__ == "__main__":
    sys.exit(main())
