"""Kernel fuzzer: random and pathological kernels, compiled and compared with py_func.

Run from the repository root (with the in-place build, ``make inplace``, or an
installed numbavec)::

    python -m tests.support.fuzz_kernels --minutes 10 --seed 1 [--workers 2] [--out DIR]
    python -m tests.support.fuzz_kernels --cases 50 --seed 1 --only deep,literals
    python -m tests.support.fuzz_kernels --list --cases 5      # print the first cases

Each program (tests/support/fuzz_kernel_gens.py: random programs of tests/support/progs.py
and AST mutations of them, unsupported constructs, undefined and
maybe-unassigned names, reassigned parameters, huge literals, deep nesting,
long chains, globals of odd types, signedness, every signature type,
@numbavec.jit nests, gufunc array kernels, array kernels at their edges:
int64's and uint64's limits and non-finite floats as arguments and
constants, indices and slice bounds of mixed integer kinds, in-place
operators across dtypes, np.arange and allocations of overflowing lengths,
empty axes, masks of the wrong length, prints whose lines are long or whose
arguments raise) is compiled in one to three
configurations (``vectorize`` with signatures or lazily, ``guvectorize``;
target cpu or parallel; some on a 512 KB thread stack) and called on edge
values and random values, in a worker process with a time limit.  A correct
result (within tests/support/difftest.py's tolerance, with its perturbation check for
library results), the exception py_func raises at the same gufunc call (at
the first element that raises, for a scalar kernel), or
a ``numbavec.TypingError`` is a pass (for a program marked valid, as the
in-place ones NumPy accepts are, a TypingError is a false refusal);
anything else is a failure: a crash, a hang, SystemError, RuntimeError or
another exception, a result that differs from py_func, or a compiled kernel
where py_func raises (NameError, IndexError, UFuncTypeError...).  A kernel
that prints must write only whole lines py_func writes, and all of them when
nothing raised.  Failures are minimized (smaller inputs,
one signature, no small stack, smaller depths, statements and
sub-expressions deleted) and written as standalone reproducers
(``python DIR/crash_deep_k1-42.py``) with a summary (``DIR/summary.txt``).
The same seed generates the same cases.
"""
import ast
import itertools
import os
import re
import sys
import types

# the fuzzers import their siblings as top-level modules, as pytest does (with
# python -m tests.support.fuzz_kernels as with python tests/support/fuzz_kernels.py)
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import numpy as np  # noqa: E402

import difftest as dt  # noqa: E402
import fuzz_harness as fh  # noqa: E402
import fuzz_kernel_gens as gens  # noqa: E402

SMALL_STACK_KB = 512
N_INPUTS = 48           # elements per call beyond the full product of edge values
MAX_PRODUCT = 400       # the edge values' product is taken whole up to this size
GU_OUTER = 2            # outer loop length of gufunc calls
GU_ULPS = 4


# ---------------------------------------------------------------- the case stream (parent)

def cases(seed, only=None):
    """The endless, deterministic stream of cases for seed."""
    for p in itertools.count():
        r = gens.random_for(seed, p)
        gen, prog = gens.generate(r, only)
        rng = np.random.default_rng([seed, p])
        for k, cfg in enumerate(configurations(r, prog)):
            case = make_case(prog, cfg, rng)
            case.update(id=f"k{seed}-{p}-{k}", program=f"{seed}:{p}", gen=gen)
            yield case


def configurations(r, prog):
    """One to three (api, target, stack_kb) for a program.  A scalar kernel
    is sometimes also compiled as a gufunc ("gu_wrap": its returns written
    into an output, layout '(),()->()')."""
    apis = prog["apis"]
    if "lazy" in apis and r.random() < 0.2:
        apis = apis + ["gu_wrap"]
    n = r.choice([1, 1, 2, 3])
    out = []
    for k in range(n):
        api = apis[k % len(apis)] if k else r.choice(apis)
        stack = prog.get("stack")
        small = (stack == "always" or (stack == "sometimes" and k % 2 == 1)
                 or r.random() < 0.08)
        out.append((api, r.choice(["cpu", "parallel"]), SMALL_STACK_KB if small else 0))
    return out


def make_case(prog, cfg, rng):
    api, target, stack_kb = cfg
    case = {"module": prog["module"], "api": api, "target": target, "stack_kb": stack_kb,
            "compare": prog["compare"], "errors": prog.get("errors", "std"),
            "ulps": prog.get("ulps", 8), "valid": prog.get("valid", False)}
    for key in ("timeout", "build", "params", "ref_module", "ref_source", "accept",
                "ints_via_float", "prints"):
        if prog.get(key) is not None:
            case[key] = prog[key]
    if api == "guvectorize":
        gu = prog["gu"]
        case.update(layout=gu["layout"], sigs=gu["sigs"],
                    calls=[gu_call(gu, rng)])
        return case
    if api == "gu_wrap":
        return wrap_case(case, prog, rng)
    calls = []
    for argtypes, out in prog["loops"]:
        args = vector_inputs(argtypes, rng)
        sig = (f"{out}({', '.join(argtypes)})" if out else f"({', '.join(argtypes)})")
        calls.append({"sig": sig, "args": [encode(a) for a in args]})
    case["sigs"] = list(dict.fromkeys(c["sig"] for c in calls))
    case["calls"] = calls
    return case


def wrap_case(case, prog, rng):
    """The scalar kernel as a gufunc: f_gu(args..., out_) writes what f
    returns into out_[0]; compared with f (py_func) as vectorize is.  Only
    for a loop with a declared output type (the output array's), and a
    kernel that can be rewritten; else the lazy configuration."""
    loop = next((lp for lp in prog["loops"] if lp[1] is not None), None)
    try:
        wrapped_kernel(case["module"])
    except (SyntaxError, StopIteration, RecursionError, ValueError, MemoryError):
        loop = None
    if loop is None:
        return make_case(prog, ("lazy", case["target"], case["stack_kb"]), rng)
    argtypes, out = loop
    args = vector_inputs(argtypes, rng)
    zeros = np.zeros(len(args[0]), dtype=out)
    case.update(layout=",".join(["()"] * len(argtypes)) + "->()",
                sigs=[f"void({', '.join(argtypes)}, {out}[:])"],
                calls=[{"sig": None, "args": [encode(a) for a in args],
                        "outs": [encode(zeros)]}])
    return case


class _ReturnToOutput(ast.NodeTransformer):
    """``return e`` -> ``out_[0] = e; return`` (outside nested defs)."""

    def visit_Return(self, node):
        if node.value is None:
            return node
        store = ast.parse("out_[0] = 0").body[0]
        store.value = node.value
        return [ast.copy_location(store, node), ast.copy_location(ast.Return(None), node)]

    def visit_FunctionDef(self, node):
        return node         # nested defs keep their returns


def wrapped_kernel(module):
    """The text of f_gu, the gufunc form of the module's scalar kernel f."""
    tree = ast.parse(module)
    fdef = next(n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == "f")
    fdef.name = "f_gu"
    fdef.args.args.append(ast.arg("out_"))
    fdef.decorator_list = []
    fdef.body = [s for stmt in fdef.body for s in _as_list(_ReturnToOutput().visit(stmt))]
    return ast.unparse(ast.fix_missing_locations(fdef))


def _as_list(x):
    return x if isinstance(x, list) else [x]


def vector_inputs(dtypes, rng):
    """Every combination of edge values when there are few, else a sample;
    then random values."""
    edges = [dt.edge_values(d) for d in dtypes]
    size = 1
    for e in edges:
        size *= len(e)
        if size > MAX_PRODUCT:
            break
    if size <= MAX_PRODUCT:
        return dt.make_inputs(dtypes, rng, n_random=16, max_product=MAX_PRODUCT)
    cols = []
    for d, e in zip(dtypes, edges):
        pick = rng.choice(e, N_INPUTS)
        rand = dt.random_values(d, N_INPUTS, rng)
        cols.append(np.where(rng.random(N_INPUTS) < 0.5, pick, rand).astype(d))
    return cols


def gu_call(gu, rng):
    """Inputs and zeroed outputs for a gufunc call with GU_OUTER outer elements."""
    ins, outs = gens._layout_args(gu["layout"])
    argtypes = _sig_args(gu["sigs"][0])
    arrays = []
    for k, spec in enumerate(ins + outs):
        dtype = argtypes[k].split("[")[0]
        core = [gu["dims"].get(d.strip(), None) if not d.strip().isdigit() else int(d)
                for d in spec.split(",")] if spec else []
        shape = [GU_OUTER] + [c for c in core if c is not None]
        n = int(np.prod(shape))
        if k < len(ins):
            e = dt.edge_values(dtype)
            vals = np.where(rng.random(n) < 0.5, rng.choice(e, n),
                            dt.random_values(dtype, n, rng)).astype(dtype)
        else:
            vals = np.zeros(n, dtype=dtype)
        arrays.append(encode(vals.reshape(shape)))
    return {"sig": None, "args": arrays[:len(ins)], "outs": arrays[len(ins):]}


def _sig_args(sig):
    """The argument types of a signature string 'void(f8[:], f8)'."""
    inner = sig[sig.index("(") + 1:sig.rindex(")")]
    out, depth, cur = [], 0, ""
    for ch in inner:
        depth += ch == "["
        depth -= ch == "]"
        if ch == "," and depth == 0:
            out.append(cur.strip())
            cur = ""
        else:
            cur += ch
    return out + ([cur.strip()] if cur.strip() else [])


def encode(a):
    a = np.asarray(a)
    data = a.ravel().tolist()
    if a.dtype.kind == "c":
        data = [[v.real, v.imag] for v in data]
    return {"dtype": a.dtype.name, "shape": list(a.shape), "data": data}


def decode(e):
    data = e["data"]
    if np.dtype(e["dtype"]).kind == "c":
        data = [complex(re, im) for re, im in data]
    return np.array(data, dtype=e["dtype"]).reshape(e["shape"])


# ---------------------------------------------------------------- the driver text

def _value(v):
    if isinstance(v, float):
        if v != v:
            return "_nan"
        if v in (float("inf"), float("-inf")):
            return "_inf" if v > 0 else "-_inf"
    return repr(v)


def array_text(e):
    dt_ = np.dtype(e["dtype"])
    if dt_.kind == "c":
        vals = [f"complex({_value(float(re))}, {_value(float(im))})" for re, im in e["data"]]
    else:
        vals = [_value(v) for v in e["data"]]
    body = ", ".join(vals)
    text = f"_np.array([{body}], dtype={dt_.name!r})"
    if len(e["shape"]) != 1:
        text += f".reshape({tuple(e['shape'])!r})"
    return text


def build_text(case):
    t = case["target"]
    if case["api"] == "lazy":
        return f"_nv.vectorize(target={t!r})(f)"
    if case["api"] == "vectorize":
        return f"_nv.vectorize({case['sigs']!r}, target={t!r})(f)"
    fn = "f_gu" if case["api"] == "gu_wrap" else "f"
    return f"_nv.guvectorize({case['sigs']!r}, {case['layout']!r}, target={t!r})({fn})"


def calls_text(case):
    rows = []
    for c in case["calls"]:
        args = ", ".join(array_text(a) for a in c["args"])
        if case["api"] in ("guvectorize", "gu_wrap"):
            outs = ", ".join(array_text(a) for a in c["outs"])
            rows.append(f"    (None, [{args}], [{outs}]),")
        else:
            loop = None
            if case["api"] == "vectorize":
                loop = tuple(a["dtype"] for a in c["args"]) + (_loop_out(c["sig"]),)
            rows.append(f"    ({loop!r}, [{args}]),")
    return "\n".join(rows)


def _loop_out(sig):
    """The output dtype of a vectorize signature; None when inferred."""
    head = sig[:sig.index("(")]
    return np.dtype(head).name if head else None


DRIVER = '''

# ---- the driver (generated by tests/support/fuzz_kernels.py) ----
import threading as _threading

import numpy as _np
import numbavec as _nv
import numbavec._source

_nan, _inf = float("nan"), float("inf")
STACK_KB = {stack_kb}       # compile and call on a thread with this stack (0: this thread)


def build():
    return {build}


CALLS = [   # vectorize: (loop dtypes or None, args); guvectorize: (None, inputs, outputs)
{calls}
]


def call(uf):
    results = []
    for loop, args, *outs in CALLS:
        args = [a.copy() for a in args]
        with _np.errstate(all="ignore"):
            if outs:
                outs = [o.copy() for o in outs[0]]
                uf(*args, out=tuple(outs))
                results.append((args, outs))
            elif loop is not None and None not in loop:
                results.append(uf(*args, signature=loop))
            else:
                results.append(uf(*args))
    return results


def run(phase=lambda name: None):
    """Compiles and calls the kernel; the results of the calls."""
    if not STACK_KB:
        phase("compile")
        uf = build()
        phase("call")
        return call(uf)
    # numbavec caches a file's parse: parsing here first leaves the small
    # stack to numbavec's compiler rather than to CPython's parser
    numbavec._source.KernelSource(f)
    box = {{}}

    def body():
        try:
            phase("compile")
            uf = build()
            phase("call")
            box["results"] = call(uf)
        except BaseException as exc:
            box["error"] = exc

    old = _threading.stack_size(STACK_KB * 1024)
    try:
        thread = _threading.Thread(target=body)
        thread.start()
        thread.join()
    finally:
        _threading.stack_size(old)
    if "error" in box:
        raise box["error"]
    return box["results"]


if __name__ == "__main__":
    for (loop, args, *outs), got in zip(CALLS, run()):
        if outs:
            print("numbavec: inputs after the call:", got[0])
            print("numbavec: outputs:", got[1])
            for k in range(min(len(args[0]), 20)):
                ins = [a.copy()[k] for a in args]
                ref = [o.copy()[k:k + 1] if o[k].ndim == 0 else o.copy()[k] for o in outs[0]]
                try:
                    {kernel}(*ins, *ref)
                    print(f"py_func, outer element {{k}}: inputs", ins, "outputs", ref)
                except Exception as exc:
                    print(f"py_func, outer element {{k}} raises {{type(exc).__name__}}: {{exc}}")
            continue
        for i in range(min(len(got), 20)):
            elems = tuple(a[i] for a in args)
            try:
                with _np.errstate(all="ignore"):
                    want = repr(f(*elems))
            except Exception as exc:
                want = f"raises {{type(exc).__name__}}: {{exc}}"
            print(f"f{{elems!r}}: numbavec {{got[i]!r}}, py_func {{want}}")
'''


def render(case):
    """The module text the worker runs and the reproducer holds."""
    module = case["module"].rstrip("\n") + "\n"
    if case["api"] == "gu_wrap":
        try:
            module += "\n\n# f as a gufunc kernel: what f returns goes to out_[0]\n"
            module += wrapped_kernel(case["module"]) + "\n"
        except (SyntaxError, StopIteration, RecursionError, ValueError):
            module += "\n\nf_gu = None     # f could not be rewritten\n"
    return module + DRIVER.format(
        stack_kb=case["stack_kb"], build=build_text(case), calls=calls_text(case),
        kernel="f_gu" if case["api"] == "gu_wrap" else "f")


def reproducer(case, out, note=""):
    what = out["detail"].strip()
    doc = (f"numbavec fuzz reproducer ({case['gen']}, case {case['id']}).\n\n"
           f"What happens: {out['kind']}: {what}\n\n"
           f"What should happen: {expectation(out)}\n")
    if note:
        doc += f"\nNote: {note}\n"
    doc += "\nRun: python THIS_FILE (with numbavec importable)."
    doc = doc.replace("\\", "\\\\").replace('"""', "'''").replace("\0", "\\x00")
    return '"""' + doc + '\n"""\n' + render(case)


def expectation(out):
    if out["kind"] == "mismatch":
        return "the same results as py_func (or a numbavec.TypingError)."
    return ("a numbavec.TypingError (file:line:col and a caret) if the kernel is not "
            "supported, else results equal to py_func's; never a crash, a hang, "
            "SystemError or RuntimeError.")


# ---------------------------------------------------------------- the worker side

# Refusals of kernels Python runs that numbavec makes on purpose, at stated
# limits (DESIGN.md, "Bounded compilation"), or where NumPy 2 would raise
# (a Python int that does not fit the type it meets).
STATED_LIMITS = re.compile(
    r"nested too deeply|the kernel is too large|variables once its device functions"
    r"|too large for a kernel|out of bounds for|Python integer too large|did not settle")


def run_case(case, workdir):
    import numbavec

    path_name = "nvk_" + case["id"].replace("-", "_")
    try:
        mod = dt.load_source(render(case), workdir, name=path_name)
    except numbavec.TypingError:
        return fh.outcome("refused")
    except (SyntaxError, RecursionError, MemoryError) as exc:
        return fh.outcome("invalid", detail=f"{type(exc).__name__}: {exc}")
    except Exception as exc:
        return fh.exception_outcome(exc, "import")
    if case.get("prints"):
        return run_print_case(case, mod)
    phase = _Phase()
    try:
        results = mod.run(phase)
    except numbavec.TypingError as exc:
        if case["valid"] and not STATED_LIMITS.search(str(exc)):
            return fh.outcome("fail", "false-refusal", f"TypingError for a valid kernel: {exc}",
                              key=f"false-refusal: {fh.normalize(str(exc).split(': ', 1)[-1])}")
        return fh.outcome("refused")
    except Exception as exc:
        if type(exc).__name__ in case.get("accept", ()) and str(exc).strip():
            return fh.outcome("refused")
        if case["api"] == "guvectorize" and phase.name == "call":
            return check_gu_exception(case, mod, exc)
        if phase.name == "call":
            return check_vector_exception(case, mod, exc)
        return fh.exception_outcome(exc, phase.name)
    fh.mark_phase("compare")
    counts = {"calls": len(results), "elements": 0}
    if not case["compare"]:
        return fh.outcome("ok", counts=counts)
    if case["api"] == "guvectorize":
        return compare_gu(case, mod, results, counts)
    if case["api"] == "gu_wrap":
        results = [outs[0] for _, outs in results]
    return compare_vector(case, mod, results, counts)


# ---- programs that print (gen_prints) ----

class _CapturedStdout:
    """What is written to file descriptor 1 (numbavec's print writes there,
    past sys.stdout) while the block runs, as text."""

    def __enter__(self):
        import tempfile
        sys.stdout.flush()
        self.file = tempfile.TemporaryFile()
        self.saved = os.dup(1)
        os.dup2(self.file.fileno(), 1)
        return self

    def __exit__(self, *exc):
        sys.stdout.flush()
        os.dup2(self.saved, 1)
        os.close(self.saved)
        self.file.seek(0)
        self.text = self.file.read().decode("utf-8", "replace")
        self.file.close()
        return False


def _py_func_prints(case, mod):
    """The lines py_func prints for every element (outer element of a
    gufunc), each run alone, and the name of the first exception it raises
    (None)."""
    import contextlib
    import io

    buf, raised = io.StringIO(), None
    with contextlib.redirect_stdout(buf), np.errstate(all="ignore"):
        for c in case["calls"]:
            if case["api"] == "guvectorize":
                raised = raised or _gu_reference(case, mod, c)[2]
                continue
            args = [decode(a) for a in c["args"]]
            for i in range(len(args[0])):
                try:
                    mod.f(*(a[i] for a in args))
                except Exception as exc:
                    raised = raised or _Raised(exc)
    return buf.getvalue().splitlines(), raised and raised.name


def run_print_case(case, mod):
    """A program that prints: every line the kernel writes is whole, one
    py_func writes (a print whose argument raises writes nothing); when
    nothing raises, the same lines (in the same order on cpu) and results."""
    import numbavec

    raised, results = None, None
    with _CapturedStdout() as out:
        try:
            results = mod.run(_Phase())
        except numbavec.TypingError as exc:
            results = exc
        except (IndexError, ValueError) as exc:
            raised = exc
        except Exception as exc:
            results = exc
    if isinstance(results, numbavec.TypingError):
        return fh.outcome("fail", "false-refusal", f"TypingError for a print: {results}",
                          key=f"false-refusal: {fh.normalize(str(results).split(': ', 1)[-1])}")
    if isinstance(results, Exception):
        return fh.exception_outcome(results, "call")
    got = out.text.splitlines()
    want, py_raised = _py_func_prints(case, mod)
    if raised is not None and py_raised != type(raised).__name__:
        return fh.outcome("fail", "mismatch", f"the kernel raises {type(raised).__name__}: "
                          f"{raised}; py_func raises {py_raised}",
                          key=f"mismatch: raises {type(raised).__name__}")
    stray = [ln for ln in got if ln not in set(want)]
    if stray:
        return fh.outcome("fail", "mismatch", f"a line py_func never prints ({len(stray[0])} "
                          f"characters): {stray[0][:300]!r}", key="mismatch: print line")
    if raised is None:
        same = got == want if case["target"] == "cpu" else sorted(got) == sorted(want)
        if py_raised is not None or not same:
            return fh.outcome("fail", "mismatch", f"{len(got)} lines printed, py_func prints "
                              f"{len(want)}" + (f" and raises {py_raised}" if py_raised else ""),
                              key="mismatch: print lines")
        return _print_case_results(case, mod, results)
    return fh.outcome("ok", counts={"calls": len(case["calls"]), "elements": len(got)})


def _print_case_results(case, mod, results):
    """The results of a print program compared as any program's, py_func's
    prints kept from the worker's log."""
    import contextlib
    import io

    counts = {"calls": len(results), "elements": 0}
    with contextlib.redirect_stdout(io.StringIO()):
        if case["api"] == "guvectorize":
            return compare_gu(case, mod, results, counts)
        if case["api"] == "gu_wrap":
            results = [outs[0] for _, outs in results]
        return compare_vector(case, mod, results, counts)


class _Phase:
    """The driver's phase callback: tells the parent, and remembers."""

    def __init__(self):
        self.name = "compile"

    def __call__(self, name):
        self.name = name
        fh.mark_phase(name)


class _Raised:
    def __init__(self, exc):
        self.name = type(exc).__name__
        self.message = str(exc)


def _reference_elements(fn, args, skip):
    """fn over the elements: its result, SKIP where it raised one of skip
    (NumPy answers there), a _Raised where it raised something else."""
    out = []
    n = len(args[0]) if args else 0
    with np.errstate(all="ignore"):
        for i in range(n):
            try:
                out.append(fn(*(a[i] for a in args)))
            except skip as exc:
                out.append(_Raised(exc) if "unpack" in str(exc) else dt.SKIP)
            except Exception as exc:
                out.append(_Raised(exc))
    return out


def _skip_errors(case):
    return dt.PROG_ERRORS if case["errors"] == "prog" else dt.REFERENCE_ERRORS


def _reference_fn(case, mod):
    fn = mod.f
    if case.get("ref_module"):
        ref = types.ModuleType("nvk_reference")
        exec(compile(case["ref_module"], "<reference>", "exec"), ref.__dict__)
        fn = ref.f
    extra = {"_pow": dt._py_pow}
    if fn.__globals__.get("np") is np:
        extra["np"] = SATURATING_NP
    if "numbavec" in fn.__globals__:
        extra["numbavec"] = SATURATING_NUMBAVEC
    return dt.reference_function(fn, extra)


INT_TYPE_NAMES = ["int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64",
                  "intp", "uintp", "int_", "intc", "uintc", "uint", "longlong", "ulonglong",
                  "short", "ushort", "byte", "ubyte"]
CAST_NAMES = ["float32", "float64", "complex64", "complex128", "bool_", "double", "single"]


def _saturating(scalar_type):
    """np.int8(x) as a kernel casts: a float saturates (NaN -> 0), where
    NumPy's cast is undefined (DESIGN-NOTES: float to int conversions)."""
    def cast(v=0):
        if isinstance(v, (float, np.floating, complex, np.complexfloating)):
            return dt._saturate(np.real(v), scalar_type)
        return scalar_type(v)
    cast.dtype = np.dtype(scalar_type)  # a dtype too: x.astype(np.int8), np.empty(n, np.int8)
    return cast


class _Namespace(types.ModuleType):
    def __init__(self, name, base):
        super().__init__(name)
        self._base = base

    def __getattr__(self, attr):
        return getattr(self._base, attr)


SATURATING_NP = _Namespace("numpy", np)
for _name in INT_TYPE_NAMES:
    if hasattr(np, _name):
        setattr(SATURATING_NP, _name, _saturating(getattr(np, _name)))


def _numbavec_casts():
    """numbavec's types called in py_func: the casts they are in a kernel."""
    import numbavec

    ns = _Namespace("numbavec", numbavec)
    for t in numbavec._core.scalar_types:
        st = np.dtype(t.dtype).type
        cast = _saturating(st) if np.dtype(st).kind in "iu" else st
        for name in dir(numbavec):
            if getattr(numbavec, name) is t:
                setattr(ns, name, cast)
    return ns


class _LazyNumbavec(types.ModuleType):
    """SATURATING_NUMBAVEC, built on first use (the parent never imports numbavec for it)."""

    def __getattr__(self, attr):
        ns = self.__dict__.get("_ns") or self.__dict__.setdefault("_ns", _numbavec_casts())
        return getattr(ns, attr)


SATURATING_NUMBAVEC = _LazyNumbavec("numbavec")


def compare_vector(case, mod, results, counts):
    import warnings

    ref = _reference_fn(case, mod)
    skip = _skip_errors(case)
    for k, (c, got) in enumerate(zip(case["calls"], results)):
        args = [decode(a) for a in c["args"]]
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            raw = _reference_elements(ref, args, skip)
        if case["api"] == "gu_wrap":
            # a bare return is a gufunc kernel that writes nothing: not compared
            raw = [dt.SKIP if v is None else v for v in raw]
        for i, v in enumerate(raw):
            if isinstance(v, _Raised):
                return _mismatch(case, k, i, args, got, f"py_func raises {v.name}",
                                 f"py_func raises {v.name}: {v.message}", counts)
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                exp, mask = dt.cast_all(raw, got.dtype)
        except TypeError:
            i, v = next((i, v) for i, v in enumerate(raw)
                        if v is not dt.SKIP and not isinstance(v, (bool, int, float, complex,
                                                                   np.generic)))
            return _mismatch(case, k, i, args, got, f"py_func returns {type(v).__name__}",
                             f"py_func returns {v!r}", counts)
        ulps = case["ulps"] if got.dtype.kind in "fc" else 0
        if got.dtype.kind in "biu" and dt.natural_dtype(raw) == np.float16:
            continue    # NumPy rounded to float16 first (np.exp(uint8)); numbavec has none yet
        narrow = _comparable(got, raw)
        if narrow is not got:
            if narrow.dtype == np.float16:      # compared in float32, within 2 float16 ULP
                narrow, ulps = narrow.astype(np.float32), 2 << 13
            got = narrow
            exp, mask = dt.cast_all(raw, got.dtype)
        bad = dt.mismatch(got, exp, ulps) & mask
        if got.dtype.kind == "c" and "**" in case["module"]:
            # complex ** is exp(w log z) where it is not NumPy's repeated
            # multiplication, and differs at special values (DESIGN-NOTES)
            bad &= ~_nonfinite(got)
        if got.dtype.kind in "iu" and case.get("ints_via_float"):
            # a mutant may mix floats into min/max or a variable: one static
            # (promoted) type, float64, where Python keeps the int (DESIGN)
            with np.errstate(all="ignore"):
                bad &= got.astype(np.float64) != exp.astype(np.float64)
        counts["elements"] += int(mask.sum())
        if bad.any():
            still = _real_mismatches(case, args, got, np.flatnonzero(bad), ulps)
            if still:
                b = np.zeros_like(bad)
                b[still] = True
                return _mismatch(case, k, still[0], args, got, "wrong value",
                                 dt.describe(args, got, exp, b), counts)
    return fh.outcome("ok", counts=counts)


def _nonfinite(z):
    return ~np.isfinite(z.real) | ~np.isfinite(z.imag)


def _comparable(got, raw):
    """got as it compares with Python's results: in their type where that is
    narrower (a kernel's static, promoted type may be wider than the type
    Python's path ended in, DESIGN), and in float16 where NumPy computed in
    float16 (np.sqrt(int8)): numbavec has no float16 yet and computes wider."""
    nat = dt.natural_dtype(raw)
    with np.errstate(all="ignore"):
        if nat == np.float16 and got.dtype.kind in "fc":
            return (got.real if got.dtype.kind == "c" else got).astype(np.float16)
        if nat.kind == got.dtype.kind and nat.itemsize < got.dtype.itemsize:
            return got.astype(nat)
    return got


def _real_mismatches(case, args, got, idx, ulps):
    """The elements of idx that no perturbed reference explains (rounding
    of library results), as check_program decides."""
    if case.get("ref_module"):
        return list(idx)
    prog = types.SimpleNamespace(seed=case["id"], ref_source=case.get("ref_source")
                                 or derive_ref_source(case["module"]))
    try:
        runs = dt._perturbed_references(prog, args, idx)
    except Exception:
        return list(idx)
    out_dtype = got.dtype
    still = []
    for j, i in enumerate(idx):
        cands = [dt.cast_all([r[j]], out_dtype) for r in runs if r[j] is not dt.PAD]
        vals = [v for v, m in cands if m[0]]
        if not vals:
            continue
        if any(not dt.mismatch(got[i:i + 1], v, ulps).any() for v in vals):
            continue
        if any(dt.mismatch(vals[0], v, ulps).any() for v in vals[1:]):
            continue        # ill-conditioned
        still.append(int(i))
    return still


def _mismatch(case, k, i, args, got, what, detail, counts):
    head = f"{case['api']} {case['calls'][k]['sig'] or ''} on {case['target']}: "
    return fh.outcome("fail", "mismatch", head + detail, key=f"mismatch: {what}",
                      bad_call=k, bad_index=int(i), counts=counts)


def _gu_reference(case, mod, call, zero_division=False):
    """py_func per outer element on copies: (inputs after, outputs, raised or
    None).  A ZeroDivisionError counts only when zero_division is set: a
    kernel's integer division by zero gives 0 (DESIGN.md)."""
    ins = [decode(a) for a in call["args"]]
    outs = [decode(a) for a in call["outs"]]
    spec_in, spec_out = gens._layout_args(case["layout"])
    argtypes = _sig_args(case["sigs"][0])
    for k in range(GU_OUTER):
        args = []
        for j, a in enumerate(ins + outs):
            view = "[" in argtypes[j]
            if a.ndim == 1 and view:
                args.append(a[k:k + 1])
            else:
                args.append(a[k])
        try:
            with np.errstate(all="ignore"):
                mod.f(*args)
        except ZeroDivisionError as exc:
            if zero_division:
                return ins, outs, _Raised(exc)
        except Exception as exc:
            return ins, outs, _Raised(exc)
    return ins, outs, None


def compare_gu(case, mod, results, counts):
    for k, (c, (got_ins, got_outs)) in enumerate(zip(case["calls"], results)):
        ins, outs, raised = _gu_reference(case, mod, c)
        if raised is not None and raised.name == "OverflowError":
            continue        # an integer beyond int64 in Python: a kernel's is 64 bits
        if raised is not None:
            return fh.outcome("fail", "mismatch",
                              f"the gufunc ran, py_func raises {raised.name}: {raised.message}",
                              key=f"mismatch: py_func raises {raised.name}", bad_call=k,
                              counts=counts)
        for what, gots, exps in (("output", got_outs, outs), ("input", got_ins, ins)):
            for j, (g, e) in enumerate(zip(gots, exps)):
                ulps = GU_ULPS if g.dtype.kind in "fc" else 0
                bad = dt.mismatch(g.ravel(), e.ravel(), ulps)
                counts["elements"] += g.size
                if bad.any():
                    return fh.outcome(
                        "fail", "mismatch",
                        f"guvectorize on {case['target']}: {what} {j} is\n{g!r}\n"
                        f"py_func gives\n{e!r}", key="mismatch: wrong value", bad_call=k,
                        counts=counts)
    return fh.outcome("ok", counts=counts)


def check_gu_exception(case, mod, exc):
    """An exception from a gufunc call is right when py_func raises one of
    its type at the first call where it raises (NumPy's MemoryError is a
    subclass; an IndexError may be py_func's OverflowError: a Python int
    beyond int64 as an index)."""
    name = type(exc).__name__
    for c in case["calls"]:
        _, _, raised = _gu_reference(case, mod, c, zero_division=True)
        if raised is None:
            continue
        if (raised.name == name or (name == "IndexError" and raised.name == "OverflowError")
                or (name == "MemoryError" and raised.name == "_ArrayMemoryError")):
            return fh.outcome("ok", counts={"calls": 1})
        break
    return fh.exception_outcome(exc, "call")


def check_vector_exception(case, mod, exc):
    """An exception from a scalar kernel's call (its raise, or a read of a for
    loop's variable after the loop ran no iteration: UnboundLocalError) is
    right when py_func raises one of its type at the first element where it
    raises, in the first call where it raises."""
    import warnings

    ref, skip = _reference_fn(case, mod), _skip_errors(case)
    # the kernel's own raise of a type py_func's library errors have too
    # (`raise ValueError`): py_func's raising of it is not skipped here
    skip = tuple(e for e in skip if not isinstance(exc, e))
    for c in case["calls"]:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            raw = _reference_elements(ref, [decode(a) for a in c["args"]], skip)
        raised = next((v for v in raw if isinstance(v, _Raised)), None)
        if raised is None:
            continue
        if raised.name == type(exc).__name__:
            return fh.outcome("ok", counts={"calls": 1})
        break
    return fh.exception_outcome(exc, "call")


# ---- the reference source for the perturbation check ----

class _RefTransformer(ast.NodeTransformer):
    """``a ** b`` -> ``_h(_pow(a, b))``; inexact math/np calls -> ``_h(call)``,
    as tests/support/progs.py writes its reference programs."""

    def visit_BinOp(self, node):
        self.generic_visit(node)
        if isinstance(node.op, ast.Pow):
            call = ast.Call(ast.Name("_pow", ast.Load()), [node.left, node.right], [])
            return ast.copy_location(ast.Call(ast.Name("_h", ast.Load()), [call], []), node)
        return node

    def visit_Call(self, node):
        self.generic_visit(node)
        fn = node.func
        if (isinstance(fn, ast.Attribute) and isinstance(fn.value, ast.Name)
                and fn.value.id in ("math", "np") and fn.attr not in EXACT_FUNCS):
            return ast.copy_location(ast.Call(ast.Name("_h", ast.Load()), [node], []), node)
        return node


EXACT_FUNCS = {"fabs", "floor", "ceil", "copysign", "fmod", "trunc", "isnan", "isinf",
               "isfinite", "sign", "minimum", "maximum", "fmin", "fmax", "float32", "float64",
               "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64",
               "bool_", "complex64", "complex128", "abs", "absolute", "square", "negative",
               "ldexp", "frexp", "modf", "rint", "round"}


def derive_ref_source(module):
    try:
        tree = _RefTransformer().visit(ast.parse(module))
        return ast.unparse(ast.fix_missing_locations(tree))
    except (SyntaxError, RecursionError, ValueError):
        return module


# ---------------------------------------------------------------- known faults (parent)

# Faults found and not fixed yet: (label, test(case, outcome)).  A failure one
# of them matches is reported apart and does not fail a run or the smoke
# tests.  Empty: every fault this fuzzer has found is fixed (the first runs'
# list -- SystemErrors after a failed step, np.True_ globals, int/uint64
# comparisons, Python ints wrapping in int64, tuple indices cut to C int,
# reassigned gufunc array parameters, deep nesting on small stacks, type
# inference's pass limit, unbounded compile time -- is in the git history).
KNOWN_FAULTS = []


def known(case, out):
    """The known fault (being fixed on main) that this failure is, or None."""
    for label, test in KNOWN_FAULTS:
        if test(case, out):
            return label
    return None


# ---------------------------------------------------------------- minimization (parent)

def shrink(case, out):
    """Smaller variants of case, the biggest reductions first."""
    yield from _shrink_calls(case, out)
    if case["stack_kb"]:
        yield dict(case, stack_kb=0)
    if case["target"] != "cpu":
        yield dict(case, target="cpu")
    yield from _shrink_params(case)
    if not case.get("ref_module"):
        yield from _shrink_statements(case)
        yield from _shrink_expressions(case)


def _shrink_calls(case, out):
    calls = case["calls"]
    k = out.get("bad_call")
    if k is not None and len(calls) > 1:
        yield _with_calls(case, [calls[k]])
    if k is not None and case["api"] != "guvectorize":
        i = out.get("bad_index")
        c = calls[k]
        if i is not None and len(c["args"][0]["data"]) > 1:
            yield _with_calls(case, [_elements(c, i, i + 1)])
    if len(calls) > 1:
        for j in range(len(calls)):
            yield _with_calls(case, calls[:j] + calls[j + 1:])
    if case["api"] != "guvectorize":
        for j, c in enumerate(calls):
            n = len(c["args"][0]["data"])
            for size in (1, n // 4, n // 2):
                if 0 < size < n:
                    yield _with_calls(case, calls[:j] + [_elements(c, 0, size)] + calls[j + 1:])


def _elements(call, start, stop):
    """call with its 1-d arguments (and outputs) cut to [start:stop]."""
    def cut(a):
        return dict(a, data=a["data"][start:stop], shape=[stop - start])
    new = dict(call, args=[cut(a) for a in call["args"]])
    if "outs" in call:
        new["outs"] = [cut(a) for a in call["outs"]]
    return new


def _with_calls(case, calls):
    new = dict(case, calls=calls)
    if case["api"] == "vectorize":
        new["sigs"] = list(dict.fromkeys(c["sig"] for c in calls))
    return new


def _shrink_params(case):
    if "build" not in case:
        return
    for name, value in sorted(case["params"].items()):
        if not isinstance(value, int) or value <= 1:
            continue
        for smaller in sorted({value // 2, value * 3 // 4, value - 1}):
            if 0 < smaller < value:
                params = dict(case["params"], **{name: smaller})
                module, ref = gens.BUILDERS[case["build"]](params)
                new = dict(case, params=params, module=module)
                new.pop("ref_module", None)
                if ref:
                    new["ref_module"] = ref
                yield new


def _bodies(tree):
    """The statement lists inside the module's defs (the imports and globals
    stay: a reproducer without them fails for another reason)."""
    out = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Module):
            continue
        for field in ("body", "orelse", "finalbody"):
            lst = getattr(node, field, None)
            if isinstance(lst, list) and lst and isinstance(lst[0], ast.stmt):
                out.append((node, field))
    return out


def _module_variant(case, text):
    new = dict(case, module=text)
    for key in ("ref_source", "build", "params"):
        new.pop(key, None)
    return new


def _shrink_statements(case):
    """Chunks of statements deleted, halves first (ddmin's order)."""
    try:
        tree = ast.parse(case["module"])
    except (SyntaxError, RecursionError, MemoryError):
        return
    n_bodies = len(_bodies(tree))
    for b in range(n_bodies):
        size = len(getattr(*_bodies(tree)[b]))
        chunk = max(1, size // 2)
        while True:
            for start in range(0, size, chunk):
                text = _delete(case["module"], b, start, start + chunk)
                if text is not None and text != case["module"]:
                    yield _module_variant(case, text)
            if chunk == 1:
                break
            chunk //= 2


def _delete(module, b, start, stop):
    try:
        tree = ast.parse(module)
        node, field = _bodies(tree)[b]
        lst = getattr(node, field)
        del lst[start:stop]
        if not lst and field == "body":
            lst.append(ast.Pass())
        return ast.unparse(tree) + "\n"
    except (SyntaxError, RecursionError, IndexError, ValueError, MemoryError):
        return None


def _shrink_expressions(case):
    """Each sub-expression of a def replaced by one of its operands."""
    try:
        tree = ast.parse(case["module"])
    except (SyntaxError, RecursionError, MemoryError):
        return
    count = sum(1 for fdef in tree.body if isinstance(fdef, ast.FunctionDef)
                for n in ast.walk(fdef) if isinstance(n, ast.expr))
    for i in range(min(count, 400)):
        for choice in range(2):
            text = _replace_expr(case["module"], i, choice)
            if text is not None and text != case["module"]:
                yield _module_variant(case, text)


def _replace_expr(module, index, choice):
    try:
        tree = ast.parse(module)
        exprs = [(parent, n) for fdef in tree.body if isinstance(fdef, ast.FunctionDef)
                 for parent in ast.walk(fdef) for n in ast.iter_child_nodes(parent)
                 if isinstance(n, ast.expr)]
        parent, node = exprs[index]
        kids = [c for c in ast.iter_child_nodes(node) if isinstance(c, ast.expr)
                and not isinstance(c, (ast.Load, ast.Store))]
        if isinstance(node, ast.Call):
            kids = node.args
        if choice >= len(kids) or isinstance(node, ast.Name):
            return None
        for field, value in ast.iter_fields(parent):
            if value is node:
                setattr(parent, field, kids[choice])
            elif isinstance(value, list):
                for j, v in enumerate(value):
                    if v is node:
                        value[j] = kids[choice]
        return ast.unparse(tree) + "\n"
    except (SyntaxError, RecursionError, IndexError, ValueError, MemoryError):
        return None


def main(argv=None):
    return fh.main(sys.modules[__name__], "fuzz_kernels", argv)


if __name__ == "__main__":
    sys.exit(main())
