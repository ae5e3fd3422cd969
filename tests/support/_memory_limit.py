"""A child process for test_robustness.py: one way into LLVM, run under an
address-space limit (RLIMIT_AS) a little above what the process uses, at
several headrooms.

    python _memory_limit.py SCENARIO HEADROOM_KIB[,HEADROOM_KIB...]

For each headroom a fresh kernel goes through SCENARIO with the limit set,
in a child forked for it (each try meets the parent's heap, whose free
space would otherwise let later tries allocate without new address
space); what happened is "ok" or "MemoryError".  Then, with the limit
raised again, the same kernel must compute what its py_func computes (a
PTX text: the one made without a limit); a child that dies by a signal or
fails its check is "signal N" or "exit N".  Prints one JSON line: the
outcomes and how many steps LLVM threw in (_jit_info's llvm_threw, summed).
"""
import json
import linecache
import os
import resource
import sys

import numpy as np

import numbavec
from numbavec import _core, guvectorize, vectorize

LINES = 200          # a ufunc kernel's statements: enough IR to need memory
ARRAY_LINES = 8     # a gufunc kernel's array statements


def address_space():
    with open("/proc/self/statm") as fh:
        return int(fh.read().split()[0]) * os.sysconf("SC_PAGE_SIZE")


def under_limit(headroom, step):
    """step() with RLIMIT_AS at what the process maps now + headroom bytes."""
    soft, hard = resource.getrlimit(resource.RLIMIT_AS)
    resource.setrlimit(resource.RLIMIT_AS, (address_space() + headroom, hard))
    try:
        step()
        return "ok"
    except MemoryError:
        return "MemoryError"
    finally:
        resource.setrlimit(resource.RLIMIT_AS, (soft, hard))


def from_source(name, text):
    filename = f"<memory-limit {name}>"
    linecache.cache[filename] = (len(text), None, text.splitlines(True), filename)
    ns = {"np": np}
    exec(compile(text, filename, "exec"), ns)
    return ns[name]


def scalar_kernel(i, lines=LINES):
    body = "".join(f"    s += x * {j + i}.5 - y / {j + 1}.0\n" for j in range(lines))
    return from_source(f"k{i}", f"def k{i}(x, y):\n    s = 0.0\n{body}    return s\n")


def array_kernel(i):
    body = "".join(f"    s += (a * c + {j + i}.0)[{j % 3}]\n" for j in range(ARRAY_LINES))
    return from_source(f"g{i}", f"def g{i}(a, c, out):\n    s = 0.0\n{body}    out[0] = s\n")


X = np.linspace(-2.0, 2.0, 200_000)
Y = np.linspace(1.0, 3.0, 200_000)
SAMPLE = slice(0, None, 997)
A = np.linspace(-1.0, 1.0, 20_000 * 8).reshape(20_000, 8)
C = np.linspace(0.5, 1.5, 8)
UFUNC_SIG = ["float64(float64, float64)"]
GUFUNC_SIG = ["void(float64[:], float64[:], float64[:])"]


def check_ufunc(f, k):
    got = f(X, Y)[SAMPLE]
    want = np.array([k(a, b) for a, b in zip(X[SAMPLE], Y[SAMPLE])])
    np.testing.assert_array_equal(got, want)


def check_gufunc(g, k):
    got = g(A, C)[SAMPLE]
    want = np.empty(len(got))
    for row, out in zip(A[SAMPLE], want.reshape(-1, 1)):
        k(row, C, out)
    np.testing.assert_array_equal(got, want)


def prepare(scenario, i):
    """The kernel of try i, and what the try makes under the limit (made
    in the parent, before the fork, as far as it comes before the limit)."""
    if scenario in ("eager", "decoration"):  # NUMBAVEC_EAGER=1 for "eager"
        # decoration only emits IR, which fits in the heap's free space
        # unless the kernel is long
        k = scalar_kernel(i, LINES if scenario == "eager" else 10 * LINES)
        return (lambda: vectorize(UFUNC_SIG)(k)), (lambda made: check_ufunc(
            made or vectorize(UFUNC_SIG)(k), k))
    if scenario == "lazy":
        k = scalar_kernel(i)
        f = vectorize(k)
        return (lambda: f(X, Y)), (lambda made: check_ufunc(f, k))
    if scenario in ("ufunc-switch", "parallel-switch"):
        k = scalar_kernel(i)
        target = "parallel" if scenario == "parallel-switch" else "cpu"
        f = vectorize(UFUNC_SIG, target=target)(k)
        f(X[:10], Y[:10])  # quick code
        return (lambda: f(X, Y)), (lambda made: check_ufunc(f, k))
    if scenario == "gufunc-switch":
        k = array_kernel(i)
        g = guvectorize(GUFUNC_SIG, "(n),(n)->()")(k)
        g(A[:2], C)  # quick code
        return (lambda: g(A, C)), (lambda made: check_gufunc(g, k))
    if scenario.startswith("ptx-"):
        k = scalar_kernel(i)
        backend = scenario[4:]
        ptx = lambda: numbavec.cuda.compile_ptx(k, UFUNC_SIG[0], arch="sm_80", backend=backend)
        reference = ptx()
        return ptx, (lambda made: ptx() == reference or sys.exit("another PTX"))
    raise SystemExit(f"unknown scenario {scenario}")


def one_try(step, check, headroom):
    """In a forked child, so that every try meets the heap the parent left:
    step() under the limit, then check what it made with the limit raised.
    The outcome and the child's llvm_threw, or the signal that ended it."""
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(read)
        made = {}
        outcome = under_limit(headroom, lambda: made.setdefault("it", step()))
        check(made.get("it"))
        os.write(write, json.dumps([outcome, _core._jit_info().get("llvm_threw", 0)]).encode())
        os._exit(0)
    os.close(write)
    with os.fdopen(read) as fh:
        text = fh.read()
    _, status = os.waitpid(pid, 0)
    if os.WIFSIGNALED(status):
        return f"signal {os.WTERMSIG(status)}", 0
    if os.WEXITSTATUS(status) != 0 or not text:
        return f"exit {os.WEXITSTATUS(status)}", 0
    return tuple(json.loads(text))


def main():
    scenario, headrooms = sys.argv[1], [int(h) << 10 for h in sys.argv[2].split(",")]
    vectorize(["float64(float64)"])(lambda x: x + 1.0)(np.ones(100_000))  # the JIT made
    if scenario == "eager":
        # A kernel of the scenario's size compiled to machine code once,
        # before any limit: the main thread's stack grows as deep as such a
        # compile needs and stays mapped, since a stack that cannot grow
        # under RLIMIT_AS is SIGSEGV in any program (3.10 died so at 256 KiB
        # and 1 MiB, in code generation, not at an allocation).
        vectorize(UFUNC_SIG)(scalar_kernel(len(headrooms)))(X, Y)
    outcomes, threw = [], 0
    for i, headroom in enumerate(headrooms):
        step, check = prepare(scenario, i)
        outcome, n = one_try(step, check, headroom)
        outcomes.append(outcome)
        threw += n
    print(json.dumps({"outcomes": outcomes, "llvm_threw": threw}))


if __name__ == "__main__":
    main()
