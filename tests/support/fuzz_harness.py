"""What the fuzzers share: worker processes, outcomes, minimization, reports.

A fuzzer (tests/support/fuzz_kernels.py, tests/support/fuzz_signatures.py) is a module with

* ``cases(seed)``: an endless iterator of cases, each a JSON-able dict with
  at least ``gen`` (the generator's name) and ``program`` (a text that names
  the program: the same for every configuration of one program).  The same
  seed gives the same cases in the same order on every machine;
* ``run_case(case, workdir)``: runs one case in a worker process and returns
  an outcome (see :func:`outcome`);
* ``shrink(case, outcome)``: candidate smaller cases, for the minimizer;
* ``render(case)``: the program text a case runs (``--show ID`` prints it);
* ``reproducer(case, outcome, note)``: the text of a standalone .py file;
* optionally ``known(case, outcome)``: the name of the known fault a failure
  is (None for a new one); the summary separates them, and the exit status
  is 1 only when a failure is not known.

The parent process (:func:`main`) hands the cases to a pool of worker
processes (``python fuzz_harness.py --worker MODULE``), one case at a time
each, with a time limit per case.  A worker that dies (segfault, abort) or
overruns its limit is replaced; its case is a crash or a hang.  A failure
found for the first few times (per failure key) is re-run alone in a fresh
worker (crashes that need earlier cases say so), then minimized by trying
the fuzzer's candidate reductions greedily, each in a fresh worker, and
written as a standalone reproducer to the output directory.

An outcome's ``status`` is "ok" (a correct result), "refused" (a
TypingError, or for signatures a TypeError/ValueError with a message) or
"fail"; a failure has a ``kind`` (crash, hang, system-error, runtime-error,
exception, mismatch, wrong-result, bad-message) and a ``key``: its kind,
exception type and message with names and numbers blanked, which groups the
occurrences of one fault.
"""
import argparse
import collections
import json
import os
import re
import select
import signal
import subprocess
import sys
import tempfile
import time
import traceback

HERE = os.path.dirname(os.path.abspath(__file__))
FAIL_KINDS = ("crash", "hang", "system-error", "runtime-error", "exception", "mismatch",
              "false-refusal", "wrong-result", "bad-message")
DEFAULT_TIMEOUT = 10.0      # seconds per case: a kernel compiles in milliseconds
RECYCLE = 400               # cases a worker runs before a fresh one replaces it (memory)
MEMORY_LIMIT = 4 << 30      # bytes of address space for a worker
PHASE_MARK = "@@fuzz-phase "


# ---- outcomes (built in the worker) ----

def outcome(status, kind=None, detail="", key=None, **extra):
    """An outcome dict; key defaults to the kind and the detail's first line
    with names and numbers blanked."""
    out = {"status": status, "kind": kind, "detail": detail}
    if status == "fail":
        out["key"] = key or f"{kind}: {normalize(detail)}"
    out.update(extra)
    return out


def normalize(message):
    """The first line of an error message with what varies between programs
    blanked: file names, positions, quoted names, numbers."""
    line = message.strip().splitlines()[0] if message.strip() else ""
    line = re.sub(r"\S+\.py:\d+(:\d+)?", "FILE", line)
    line = re.sub(r"'[^']*'", "'_'", line)
    line = re.sub(r'"[^"]*"', '"_"', line)
    line = re.sub(r"0x[0-9a-f]+", "N", line)
    line = re.sub(r"\d+", "N", line)
    return line[:160]


def exception_outcome(exc, phase):
    """The outcome of an exception that is not an accepted refusal."""
    name = type(exc).__name__
    kinds = {"SystemError": "system-error", "RuntimeError": "runtime-error"}
    kind = kinds.get(name, "exception")
    detail = f"{name} during {phase}: {exc}"
    key = f"{kind}: {name} during {phase}: {normalize(str(exc))}"
    return outcome("fail", kind, detail, key=key)


def mark_phase(phase):
    """Tells the parent (through stderr, which survives a crash) what the
    worker is doing, so that a crash names its phase."""
    sys.stderr.write(f"{PHASE_MARK}{phase}\n")
    sys.stderr.flush()


# ---- the worker process ----

def worker_main(module_name, result_fd):
    import faulthandler
    import importlib
    import resource

    faulthandler.enable()
    # not under ASan, which reserves terabytes of address space up front
    if "asan" not in os.environ.get("LD_PRELOAD", ""):
        try:
            resource.setrlimit(resource.RLIMIT_AS, (MEMORY_LIMIT, MEMORY_LIMIT))
        except (ValueError, OSError):
            pass
    fuzzer = importlib.import_module(module_name)
    workdir = tempfile.mkdtemp(prefix="nvfuzz-")
    sys.path.insert(0, workdir)
    results = os.fdopen(result_fd, "w")
    for line in sys.stdin:
        case = json.loads(line)
        mark_phase(f"case {case.get('id')}")
        try:
            out = fuzzer.run_case(case, workdir)
        except BaseException as exc:        # the fuzzer's own bug: reported, not hidden
            out = outcome("fail", "exception", "harness: " + traceback.format_exc(),
                          key=f"harness: {type(exc).__name__}: {normalize(str(exc))}")
        results.write(json.dumps(out) + "\n")
        results.flush()


class Worker:
    """One worker process running one case at a time."""

    def __init__(self, module_name, logdir, number):
        self.log = open(os.path.join(logdir, f"worker-{number}.log"), "ab")
        r, w = os.pipe()
        env = dict(os.environ)
        import numbavec

        root = os.path.dirname(os.path.dirname(os.path.abspath(numbavec.__file__)))
        env["PYTHONPATH"] = os.pathsep.join([HERE, root] + (
            [env["PYTHONPATH"]] if env.get("PYTHONPATH") else []))
        env.setdefault("PYTHONHASHSEED", "0")
        self.proc = subprocess.Popen(
            [sys.executable, os.path.join(HERE, "fuzz_harness.py"), "--worker", module_name,
             "--result-fd", str(w)],
            stdin=subprocess.PIPE, stdout=self.log, stderr=self.log, pass_fds=(w,),
            cwd=logdir, env=env)
        os.close(w)
        self.fd = r
        self.buf = b""
        self.case = None
        self.deadline = None
        self.log_start = 0
        self.history = []       # ids of the cases this process ran

    def submit(self, case, timeout):
        self.case = case
        self.log.flush()
        self.log_start = os.fstat(self.log.fileno()).st_size
        self.deadline = time.monotonic() + timeout
        self.history.append(case.get("id"))
        self.proc.stdin.write((json.dumps(case) + "\n").encode())
        self.proc.stdin.flush()

    def read(self):
        """The outcome once a full line has arrived, None while it has not;
        a crash outcome when the process died."""
        data = os.read(self.fd, 1 << 16)
        if not data:
            return self.crashed()
        self.buf += data
        if b"\n" not in self.buf:
            return None
        line, self.buf = self.buf.split(b"\n", 1)
        self.case = None
        return json.loads(line)

    def log_tail(self, limit=4000):
        self.log.flush()
        with open(self.log.name, "rb") as fh:
            fh.seek(self.log_start)
            text = fh.read().decode("utf-8", "replace")
        return text[-limit:]

    def phase(self, text):
        marks = [ln[len(PHASE_MARK):] for ln in text.splitlines() if ln.startswith(PHASE_MARK)]
        return marks[-1] if marks else "start-up"

    def crashed(self):
        rc = self.proc.wait()
        tail = self.log_tail()
        phase = self.phase(tail)
        try:
            sig = signal.Signals(-rc).name if rc < 0 else f"exit {rc}"
        except ValueError:
            sig = f"signal {-rc}"
        tail = "\n".join(ln for ln in tail.splitlines() if not ln.startswith(PHASE_MARK))
        self.case = None
        where = innermost_frame(tail)
        return outcome("fail", "crash", f"worker died ({sig}) during {phase}\n{tail}",
                       key=f"crash: {sig} during {re.sub(r'[0-9]+', 'N', phase)} in {where}",
                       returncode=rc)

    def hang(self, timeout):
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait()
        tail = self.log_tail()
        self.close()
        phase = self.phase(tail)
        return outcome("fail", "hang", f"no result within {timeout:g} s (during {phase})",
                       key=f"hang: during {re.sub(r'[0-9]+', 'N', phase)}")

    def kill(self):
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait()
        self.close()

    def close(self):
        for f in (self.proc.stdin,):
            try:
                f.close()
            except OSError:
                pass
        if self.fd is not None:
            os.close(self.fd)
            self.fd = None
        self.log.close()


def innermost_frame(faulthandler_text):
    """'file.py:function' of the crashed thread's innermost Python frame, as
    faulthandler printed it (digits blanked: generated files are numbered)."""
    lines = faulthandler_text.splitlines()
    for k, line in enumerate(lines):
        if line.startswith("Current thread") or line.startswith("Thread 0x"):
            for frame in lines[k + 1:]:
                m = re.match(r'\s+File "([^"]+)", line \d+ in (\S+)', frame)
                if m:
                    name = re.sub(r"[0-9]+", "N", os.path.basename(m.group(1)))
                    return f"{name}:{m.group(2)}"
            break
    return "?"


class Pool:
    """n workers; run() feeds them cases and yields (case, outcome)."""

    def __init__(self, module_name, logdir, n, timeout):
        self.module_name, self.logdir, self.n, self.timeout = module_name, logdir, n, timeout
        self.started = 0
        self.workers = [self.spawn() for _ in range(n)]

    def spawn(self):
        self.started += 1
        return Worker(self.module_name, self.logdir, self.started)

    def replace(self, w):
        w.kill()
        nw = self.spawn()
        self.workers[self.workers.index(w)] = nw
        return nw

    def case_timeout(self, case):
        return case.get("timeout", self.timeout)

    def run(self, cases, deadline=None):
        """Yields (case, outcome, history) for the cases, until they or the
        time run out; history: the ids of the cases the worker ran before."""
        cases = iter(cases)
        exhausted = False
        while True:
            now = time.monotonic()
            for w in self.workers:
                if w.case is None and not exhausted and (deadline is None or now < deadline):
                    case = next(cases, None)
                    if case is None:
                        exhausted = True
                    else:
                        w.submit(case, self.case_timeout(case))
            busy = [w for w in self.workers if w.case is not None]
            if not busy:
                return
            wait = max(0.0, min(w.deadline for w in busy) - time.monotonic())
            ready, _, _ = select.select([w.fd for w in busy], [], [], wait)
            for w in busy:
                case = w.case
                history = w.history[:-1]
                if w.fd in ready:
                    out = w.read()
                    if out is None:
                        continue
                    if out["kind"] == "crash" or len(w.history) >= RECYCLE:
                        self.replace(w)
                    yield case, out, history
                elif time.monotonic() >= w.deadline:
                    out = w.hang(self.case_timeout(case))
                    self.workers[self.workers.index(w)] = self.spawn()
                    yield case, out, history

    def close(self):
        for w in self.workers:
            w.kill()


def run_alone(module_name, logdir, case, timeout):
    """The outcome of case in a fresh worker of its own."""
    pool = Pool(module_name, logdir, 1, timeout)
    try:
        for _, out, _ in pool.run([case]):
            return out
    finally:
        pool.close()
    return outcome("fail", "exception", "no outcome", key="harness: no outcome")


# ---- minimization ----

def same_failure(a, b):
    """Whether outcome b is the failure a (for the minimizer): the same kind
    and, beyond crashes and hangs, the same exception type."""
    if b["status"] != "fail" or a["kind"] != b["kind"]:
        return False
    if a["kind"] in ("crash", "hang", "mismatch", "wrong-result"):
        return True
    return a["detail"].split(":", 1)[0] == b["detail"].split(":", 1)[0]


def minimize(fuzzer, module_name, logdir, case, out, timeout, budget_s, log=print):
    """The smallest case found (greedily, within budget_s) that still fails
    as out does, and its outcome."""
    stop = time.monotonic() + budget_s
    tries = 0
    progress = True
    while progress and time.monotonic() < stop:
        progress = False
        for cand in fuzzer.shrink(case, out):
            if time.monotonic() >= stop:
                break
            tries += 1
            cand_out = run_alone(module_name, logdir, cand, timeout)
            if same_failure(out, cand_out):
                case, out, progress = cand, cand_out, True
                break
    log(f"    minimized in {tries} tries")
    return case, out


# ---- the parent: statistics, reports ----

def plural(kind):
    return kind + ("es" if kind.endswith(("sh", "ch")) else "s")


class Stats:
    def __init__(self, known=None):
        self.known = known or (lambda case, out: None)
        self.labels = collections.defaultdict(collections.Counter)  # key -> {label: n}
        self.cases = 0
        self.programs = set()
        self.status = collections.Counter()
        self.kinds = collections.Counter()
        self.by_gen = collections.defaultdict(collections.Counter)
        self.keys = collections.Counter()
        self.key_example = {}
        self.extra = collections.Counter()      # counters the fuzzer adds (calls, elements)

    def add(self, case, out):
        self.cases += 1
        self.programs.add(case.get("program"))
        self.status[out["status"]] += 1
        self.by_gen[case["gen"]][out["status"] if out["status"] != "fail" else out["kind"]] += 1
        for k, v in out.get("counts", {}).items():
            self.extra[k] += v
        if out["status"] == "fail":
            self.kinds[out["kind"]] += 1
            self.keys[out["key"]] += 1
            self.key_example.setdefault(out["key"], case.get("id"))
            self.labels[out["key"]][self.known(case, out)] += 1

    def unknown(self):
        """The number of failures not labelled as known faults."""
        return sum(c[None] for c in self.labels.values())

    def summary(self, elapsed):
        lines = [f"{self.cases} executions (cases run in a worker) of {len(self.programs)} "
                 f"programs in {elapsed:.0f} s",
                 "  " + ", ".join(f"{k}: {v}" for k, v in sorted(self.extra.items())),
                 "  ok: {ok}, refused: {refused}, invalid (Python rejects the program): "
                 "{invalid}, failures: {fail}".format(
                     ok=self.status["ok"], refused=self.status["refused"],
                     invalid=self.status["invalid"], fail=self.status["fail"]),
                 "  " + ", ".join(f"{plural(k)}: {self.kinds[k]}" for k in FAIL_KINDS),
                 "by generator:"]
        for gen in sorted(self.by_gen):
            c = self.by_gen[gen]
            lines.append(f"  {gen:24} " + ", ".join(f"{k} {v}" for k, v in sorted(c.items())))
        lines.append(f"distinct failures (count, key, first case, known fault): "
                     f"{self.unknown()} failures not known")
        for key, n in self.keys.most_common():
            lines.append(f"  {n:6}  {key}  [{self.key_example[key]}]")
            for label, m in self.labels[key].most_common():
                lines.append(f"          {m:6} " + (f"known: {label}" if label else "NEW"))
        return "\n".join(lines)


def write_reproducer(fuzzer, outdir, case, out, note=""):
    name = re.sub(r"[^A-Za-z0-9_]+", "_", f"{out['kind']}_{case['gen']}_{case['id']}")
    path = os.path.join(outdir, name + ".py")
    with open(path, "w") as fh:
        fh.write(fuzzer.reproducer(case, out, note))
    return path


def parse_args(argv, description):
    p = argparse.ArgumentParser(description=description)
    p.add_argument("--minutes", type=float, default=None,
                   help="how long to generate cases (default 1, none with --cases)")
    p.add_argument("--cases", type=int, default=None, help="stop after this many cases")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--workers", type=int, default=1, help="worker processes (default 1)")
    p.add_argument("--timeout", type=float, default=DEFAULT_TIMEOUT,
                   help="seconds a case may take before it counts as a hang")
    p.add_argument("--out", default=None, help="directory for reproducers "
                   "(default: fuzz-out-NAME-SEED in the current directory)")
    p.add_argument("--minimize", type=int, default=2,
                   help="failures minimized per distinct key (0: none)")
    p.add_argument("--minimize-seconds", type=float, default=60.0,
                   help="time limit of one minimization")
    p.add_argument("--minimize-known-seconds", type=float, default=20.0,
                   help="time limit of the minimization of a known fault")
    p.add_argument("--only", default=None, help="comma-separated generators to run")
    p.add_argument("--list", action="store_true", help="print the first cases and exit")
    p.add_argument("--show", default=None, metavar="ID",
                   help="print the program of case ID (as its reproducer runs it) and exit")
    return p.parse_args(argv)


def main(fuzzer, module_name, argv=None):
    """The command line of a fuzzer; returns 0 when nothing failed, else 1."""
    args = parse_args(argv, fuzzer.__doc__.splitlines()[0])
    only = set(args.only.split(",")) if args.only else None
    cases = fuzzer.cases(args.seed, only)
    if args.show:
        for case in cases:
            if case["id"] == args.show:
                print(fuzzer.render(case))
                return 0
    if args.list:
        for case, _ in zip(cases, range(args.cases or 10)):
            print(json.dumps(case)[:2000])
        return 0
    outdir = os.path.abspath(args.out or f"fuzz-out-{module_name}-{args.seed}")
    os.makedirs(outdir, exist_ok=True)
    logdir = tempfile.mkdtemp(prefix=f"nvfuzz-{module_name}-")
    if args.cases is not None:
        cases = (c for c, _ in zip(cases, range(args.cases)))
    stats, start = Stats(getattr(fuzzer, "known", None)), time.monotonic()
    if args.minutes is None:
        args.minutes = float("inf") if args.cases is not None else 1.0
    deadline = start + 60 * args.minutes
    pending = []            # (case, outcome, history) to minimize after the run
    seen = collections.Counter()
    pool = Pool(module_name, logdir, args.workers, args.timeout)
    print(f"{module_name}: seed {args.seed}, {args.minutes:g} min, {args.workers} worker(s), "
          f"reproducers in {outdir}", flush=True)
    log = open(os.path.join(outdir, "failures.jsonl"), "w")
    try:
        for case, out, history in pool.run(cases, deadline):
            stats.add(case, out)
            if out["status"] == "fail":
                log.write(json.dumps({"id": case["id"], "gen": case["gen"], "key": out["key"],
                                      "known": stats.known(case, out),
                                      "detail": out["detail"][:3000]}) + "\n")
                log.flush()
                which = (out["key"], stats.known(case, out))     # a new fault may share a key
                seen[which] += 1
                if seen[which] <= max(args.minimize, 1):
                    print(f"  FAIL {case['id']} ({case['gen']}): {out['key']}", flush=True)
                    pending.append((case, out, history))
            if stats.cases % 200 == 0:
                print(f"  ... {stats.cases} cases, {stats.status['fail']} failures, "
                      f"{time.monotonic() - start:.0f} s", flush=True)
    finally:
        pool.close()
        log.close()
    elapsed = time.monotonic() - start
    for case, out, history in pending:
        report_failure(fuzzer, module_name, logdir, outdir, case, out, history, args,
                       stats.known(case, out))
    print(stats.summary(elapsed))
    with open(os.path.join(outdir, "summary.txt"), "w") as fh:
        fh.write(stats.summary(elapsed) + "\n")
    return 1 if stats.unknown() else 0


def report_failure(fuzzer, module_name, logdir, outdir, case, out, history, args, known):
    """Re-runs a failure alone, minimizes it (a known fault for a shorter
    time: the run's time goes to the new ones), writes its reproducer."""
    note = f"known fault: {known}" if known else ""
    minimizing = args.minimize > 0
    budget = min(args.minimize_seconds, args.minimize_known_seconds) if known \
        else args.minimize_seconds
    if minimizing and out["kind"] in ("crash", "hang"):
        again = run_alone(module_name, logdir, case, case.get("timeout", args.timeout))
        if not same_failure(out, again):
            note = (f"NOT reproducible alone (alone: {again['status']} {again.get('kind')}); "
                    f"the worker had run before it: {history[-20:]}")
            path = write_reproducer(fuzzer, outdir, case, out, note)
            print(f"  {case['id']}: {out['key']} -> {path} ({note[:60]})")
            return
    if minimizing:
        print(f"  minimizing {case['id']}: {out['key']}", flush=True)
        case, out = minimize(fuzzer, module_name, logdir, case, out,
                             case.get("timeout", args.timeout), budget)
    path = write_reproducer(fuzzer, outdir, case, out, note)
    print(f"  {case['id']}: {out['key']} -> {path}", flush=True)


if __name__ == "__main__":
    if len(sys.argv) == 5 and sys.argv[1] == "--worker" and sys.argv[3] == "--result-fd":
        worker_main(sys.argv[2], int(sys.argv[4]))
    else:
        sys.exit("fuzz_harness.py is run by tests/support/fuzz_kernels.py and tests/support/fuzz_signatures.py")
