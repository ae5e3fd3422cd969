"""Signature and layout fuzzer: random and mutated signatures fed to the parsers and decorators.

Run from the repository root (with the in-place build, ``make inplace``, or an
installed numbavec)::

    python -m tests.support.fuzz_signatures --minutes 10 --seed 1 [--workers 2] [--out DIR]
    python -m tests.support.fuzz_signatures --cases 200 --seed 1 --only layouts

Each case feeds one signature (a string, a list, numbavec type objects,
tuples; valid ones, mutated ones with unicode, NUL bytes, deep parentheses,
huge numbers of arguments and dimensions) or one gufunc layout (long
dimension names sharing a 63-character prefix, frozen sizes, '?', bad
arrows) to ``numbavec._core.parse_signature``/``parse_signatures``/
``_parse_type``, ``vectorize`` or ``guvectorize``, in a worker process.
Success, or a TypeError/ValueError with a message, passes; anything else
fails (a crash, a hang, another exception type, an empty message).  A
success is then checked: a parsed signature round-trips through its repr
and pickle; a ufunc's ``.types`` are the signatures asked for, in order; a
gufunc's ``.signature`` is the layout asked for, and calling it with a
different length for every distinct dimension name gives py_func's
results.  Failures are minimized and written as reproducers, as
tests/support/fuzz_kernels.py does.
"""
import itertools
import os
import random
import re
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import fuzz_harness as fh  # noqa: E402

SCALARS = {  # canonical name -> its other spellings
    "bool": ["b1", "boolean", "bool_"], "int8": ["i1"], "int16": ["i2"], "int32": ["i4"],
    "int64": ["i8"], "uint8": ["u1", "byte"], "uint16": ["u2"], "uint32": ["u4"],
    "uint64": ["u8"], "float32": ["f4"], "float64": ["f8", "double"],
    "complex64": ["c8"], "complex128": ["c16"],
}
CHARS = {"bool": "?", "int8": "b", "int16": "h", "int32": "i", "int64": "l", "uint8": "B",
         "uint16": "H", "uint32": "I", "uint64": "L", "float32": "f", "float64": "d",
         "complex64": "F", "complex128": "D"}
ODD_CHARS = ["\0", "é", "\u2212", "\uffff", "\U0001f600", "(", ")", "[", "]", ":", ",", "-",
             ">", " ", "\t", "\n", "?", "1", "0", "::", "->", "void", "f4", "_", "'", "\\",
             "\ud800"]


# ---------------------------------------------------------------- generators (parent)

def spell(r, name):
    return r.choice([name] + SCALARS[name])


def array_type(r, name, ndim, contig=None):
    dims = [":"] * ndim
    if ndim and (contig if contig is not None else r.random() < 0.3):
        dims[-1] = "::1"
    return f"{spell(r, name)}[{', '.join(dims)}]"


def space(r):
    return r.choice(["", "", " ", "  ", "\t", "\n"])


def scalar_sig(r, nargs, ret="random"):
    """A valid scalar signature string and its canonical form."""
    args = [r.choice(list(SCALARS)) for _ in range(nargs)]
    if ret == "random":
        ret = r.choice(list(SCALARS) + [None])
    text_args = (space(r) + ",").join(space(r) + spell(r, a) for a in args)
    head = spell(r, ret) if ret else ""
    text = f"{space(r)}{head}{space(r)}({text_args}{space(r)}){space(r)}"
    canon = f"{ret or ''}({', '.join(args)})"
    return text, canon, args, ret


def gen_valid(r):
    """A valid signature through every entry point."""
    nargs = r.choice([0, 1, 2, 3, 5, 8, 31, 32])
    text, canon, args, ret = scalar_sig(r, max(nargs, 1))
    call = r.choice(["parse_signature", "parse_signatures", "vectorize", "vectorize"])
    return {"call": call, "sig": repr(text), "expect": {"canon": [canon], "args": [args],
                                                       "ret": [ret]},
            "arity": len(args)}


def gen_objects(r):
    """Signatures made of numbavec's type objects, tuples and lists."""
    n = r.choice([1, 2, 3])
    args = [r.choice(list(SCALARS)) for _ in range(n)]
    ret = r.choice(list(SCALARS))
    form = r.choice(["call", "tuple", "list", "mixed", "odd"])
    attr = {"bool": "bool_"}      # numbavec's name for it (as NumPy's)
    expect = {"canon": [f"{ret}({', '.join(args)})"], "args": [args], "ret": [ret]}
    if form == "call":
        expr = f"nv.{attr.get(ret, ret)}({', '.join('nv.' + attr.get(a, a) for a in args)})"
    elif form == "tuple":
        expr = f"({', '.join('nv.' + attr.get(a, a) for a in args)},)"
        expect = {"canon": [f"({', '.join(args)})"], "args": [args], "ret": [None]}
    elif form == "list":
        expr = (f"[nv.{attr.get(ret, ret)}({', '.join('nv.' + attr.get(a, a) for a in args)}), "
                f"{expect['canon'][0]!r}]")
        expect = {"canon": expect["canon"] * 2, "args": [args] * 2, "ret": [ret] * 2}
    elif form == "mixed":
        expr = f"[({', '.join(repr(spell(r, a)) for a in args)})]"
        expect = {"canon": [f"({', '.join(args)})"], "args": [args], "ret": [None]}
    else:
        expr = re.sub(r"\bT\b", f"nv.{attr.get(ret, ret)}", r.choice(ODD_OBJECTS))
        expect = None
    return {"call": r.choice(["parse_signature", "parse_signatures", "vectorize"]),
            "sig": expr, "expect": expect, "arity": n}


# (a list of 100 equal signatures compiles each of them: some seconds)
ODD_OBJECTS = [
    "T(T(T))", "T(T)(T)", "T[:](T)", "T[::1, :]", "T[1]", "T['x']", "T[:, :, :][:]",
    "T[(slice(None),) * 33]", "T[(slice(None),) * 32]", "T[...]", "T[None]", "T[::2]",
    "T[1:]", "nv.void[:]", "nv.void(nv.void)", "T(nv.void)", "nv.void()", "T()",
    "T(*[T] * 33)", "T(*[T] * 32)", "T(T, x=T)", "T(3)", "T('f4')", "T('f4[:]')", "T(None)",
    "[[T(T)]]", "[T(T), [T(T)]]", "(T(T), T(T))", "{T(T): 1}", "iter([T(T)])",
    "(x for x in [T(T)])", "b'f4(f4)'", "bytearray(b'f4(f4)')", "memoryview(b'f4(f4)')",
    "Str('f4(f4)')", "RaisingStr()", "np.float32", "np.dtype('f4')", "(np.float32,)",
    "[np.dtype('f4')]", "('f4', np.dtype('f8'))", "[T(T)] * 100", "['f4(f4)'] * 100",
    "(T,) * 33", "(T,) * 32", "('f4[:, ::1]', T[:, ::1])", "[(), ()]", "[[]]", "[()]",
    "T(T[:, ::1], T[::1])", "T.__class__", "type(T)()", "T(T) == T(T)", "T[:] == T[::1]",
    "hash(T(T))", "[T(T)] + ['f8(f8)']", "T(T, T[:]) ", "(T[:],) * 2", "1.5", "-1", "True",
]

ODD_PRELUDE = '''

class Str(str):
    """a str subclass"""


class RaisingStr:
    def __str__(self):
        raise RuntimeError("__str__ raised")

    def __repr__(self):
        raise RuntimeError("__repr__ raised")

'''


def mutate_text(r, text):
    """One to three character-level mutations."""
    for _ in range(r.choice([1, 1, 2, 3])):
        if not text:
            text = r.choice(ODD_CHARS)
            continue
        i = r.randrange(len(text) + 1)
        op = r.random()
        if op < 0.3:
            text = text[:i] + r.choice(ODD_CHARS) + text[i:]
        elif op < 0.5:
            text = text[:i] + text[i + 1:]
        elif op < 0.6:
            j = r.randrange(len(text) + 1)
            a, b = sorted((i, j))
            text = text[:b] + text[a:b] + text[b:]
        elif op < 0.7:
            text = text[:i]
        elif op < 0.8:
            k = r.choice([2, 10, 1000, 30000])
            text = text[:i] + r.choice(ODD_CHARS) * k + text[i:]
        elif op < 0.9:
            d = r.choice([10, 200, 5000, 100000])
            text = "(" * d + text + ")" * d if r.random() < 0.5 else text[:i] + "[" * d + text[i:]
        else:
            text = text.replace(r.choice(["f4", "f8", "float32", "(", ",", ":"]),
                                r.choice(["flaot32", "f16", "f", "", "((", ",,", ":::"]), 1)
    return text


def gen_mutated(r):
    """A valid signature mutated at the character level."""
    if r.random() < 0.5:
        text, _, args, _ = scalar_sig(r, r.choice([1, 2, 3]))
    else:
        n = r.choice([1, 2, 3])
        text = "void(" + ", ".join(array_type(r, r.choice(list(SCALARS)), r.choice([0, 1, 2]))
                                   for _ in range(n)) + ")"
        args = [None] * n
    text = mutate_text(r, text)
    call = r.choice(["parse_signature", "parse_signatures", "_parse_type", "vectorize",
                     "guvectorize"])
    return {"call": call, "sig": repr(text), "expect": None, "arity": len(args),
            "layout": repr(",".join(["(n)"] * len(args)))}


def gen_sizes(r):
    """Huge numbers of arguments and dimensions, long names, deep parentheses."""
    n = r.choice([31, 32, 33, 63, 64, 65, 100, 1000, 100000])
    form = r.choice(["args", "dims", "typename", "parens", "list"])
    if form == "args":
        text = "f4(" + ", ".join(["f4"] * n) + ")"
        expect = {"canon": ["float32(" + ", ".join(["float32"] * n) + ")"],
                  "args": [["float32"] * n], "ret": ["float32"]} if n <= 32 else None
        return {"call": r.choice(["parse_signature", "vectorize"]), "sig": repr(text),
                "expect": expect, "arity": min(n, 300)}
    if form == "dims":
        text = "void(f8[" + ", ".join([":"] * n) + "])"
        return {"call": r.choice(["parse_signature", "guvectorize"]), "sig": repr(text),
                "expect": None, "arity": 1,
                "layout": repr("(" + ",".join(f"d{k}" for k in range(min(n, 2000))) + ")")}
    if form == "typename":
        text = "f" * n + "(f4)"
        return {"call": "parse_signature", "sig": repr(text), "expect": None, "arity": 1}
    if form == "parens":
        text = "f4" + "(" * n + "f4" + ")" * n
        return {"call": r.choice(["parse_signature", "vectorize"]), "sig": repr(text),
                "expect": None, "arity": 1}
    # each signature is compiled again (some 20 ms each, duplicates too)
    return {"call": "vectorize", "sig": repr(["f8(f8)"] * min(n, 64)), "expect": None,
            "arity": 1, "timeout": 30}


# ---- layouts ----

def long_names(r, k):
    """k distinct names longer than 63 characters that share a 63-character prefix."""
    prefix = "d" + "_" * r.choice([62, 63, 70, 200])
    return [prefix + f"{j}x" * r.choice([1, 4]) for j in range(k)]


def random_layout(r):
    """(layout text, input specs, output specs): specs are lists of dim names
    (str) or frozen sizes (int)."""
    pool = r.choice([["n", "m", "p"], ["n"], long_names(r, 3), ["a" * 64, "a" * 65, "b"],
                     ["n_" + "x" * 100, "n_" + "x" * 99], ["dim%d" % k for k in range(40)]])
    nin = r.choice([1, 1, 2, 3])
    nout = r.choice([0, 1, 1, 2])

    def spec():
        d = r.choice([0, 1, 1, 2, 3])
        return [r.choice(pool) if r.random() < 0.85 else r.choice([1, 2, 3, 17])
                for _ in range(d)]
    ins = [spec() for _ in range(nin)]
    outs = [spec() for _ in range(nout)]
    names = {d for s in ins for d in s}
    # an output may only use dimensions some input has (or the caller gives out=)
    outs = [[d if d in names or isinstance(d, int) else next(iter(names), 2) for d in s]
            for s in outs]
    ins_text = ",".join(layout_arg(r, s) for s in ins)
    outs_text = ",".join(layout_arg(r, s) for s in outs)
    text = ins_text + (space(r) + "->" + space(r) + outs_text if outs else "")
    return text, ins, outs


def layout_arg(r, spec):
    return "(" + ("," + space(r)).join(str(d) for d in spec) + ")"


def gen_layouts(r):
    """Valid layouts (long names sharing a prefix, frozen sizes, many
    dimensions) with a matching signature and kernel, called and compared."""
    text, ins, outs = random_layout(r)
    dtype = r.choice(["float64", "float64", "float32", "int64", "int16"])
    sig_args = [array_type(r, dtype, len(s), False) if s else dtype for s in ins]
    sig_args += [array_type(r, "float64", max(len(s), 1), False) for s in outs]
    sig = "void(" + ", ".join(sig_args) + ")"
    # distinct sizes for the distinct names (frozen sizes as written)
    names = []
    for s in ins + outs:
        for d in s:
            if isinstance(d, str) and d not in names:
                names.append(d)
    sizes = {d: 2 + k for k, d in enumerate(names)}
    mutated = r.random() < 0.2
    if mutated:         # then only the layout's round trip is checked
        text = mutate_text(r, text)
    return {"call": "guvectorize", "sig": repr([sig]), "layout": repr(text), "expect": None,
            "arity": len(ins) + len(outs), "ins": ins, "outs": outs, "sizes": sizes,
            "dtype": dtype, "check_call": not mutated}


def gen_bad_layouts(r):
    """Layouts with bad arrows, NUL bytes, deep parentheses, odd names."""
    base = r.choice(["(n),(n)->(n)", "(n)->()", "(m,n),(n,p)->(m,p)", "(3)->()", "(n?)->()",
                     "(n),(n)"])
    bad = r.choice(["-->", "=>", "->->", "- >", "<-", "->", "\0", "\0->()", "((n))", "()",
                    "(,)", "(n,)", "(n),", ",(n)", "(n)->(m)", "(é)", "(n n)", "(1a)",
                    "(0)", "(-1)", "(99999999999999999999)", "(n?),(n)", "( n ? )", "(_)",
                    "(" * 5000, ")" * 10, "(n)" * 100, "->(n)", "(n)->", " ", ""])
    i = r.randrange(len(base) + 1)
    text = base[:i] + bad + base[i:] if r.random() < 0.7 else bad
    nargs = text.count("(") if text.count("(") < 50 else 2
    sig = "void(" + ", ".join(["f8[:]"] * max(1, min(nargs, 40))) + ")"
    return {"call": "guvectorize", "sig": repr([sig]), "layout": repr(text), "expect": None,
            "arity": max(1, min(nargs, 40))}


GENERATORS = {"valid": (gen_valid, 2), "objects": (gen_objects, 2), "mutated": (gen_mutated, 4),
              "sizes": (gen_sizes, 1), "layouts": (gen_layouts, 4),
              "bad_layouts": (gen_bad_layouts, 2)}


def cases(seed, only=None):
    names = [n for n in GENERATORS if only is None or n in only]
    weights = [GENERATORS[n][1] for n in names]
    for p in itertools.count():
        r = random.Random(f"{seed}:{p}")
        gen = r.choices(names, weights)[0]
        case = GENERATORS[gen][0](r)
        case.update(id=f"s{seed}-{p}", program=f"{seed}:{p}", gen=gen,
                    target=r.choice(["cpu", "parallel"]))
        case.setdefault("layout", None)
        yield case


# ---------------------------------------------------------------- the script a case runs

def kernel_text(case):
    """A kernel for the case's arity: a sum of its arguments (vectorize), or
    for gufuncs a code made of every input's shape, written into every output."""
    n = case["arity"]
    params = [f"p{k}" for k in range(n)]
    if case["call"] != "guvectorize" or "ins" not in case:
        if case["call"] == "guvectorize":
            body = "    pass\n"
        else:
            body = f"    return {' + '.join(params) if params else '0'}\n"
        return f"def f({', '.join(params)}):\n{body}"
    lines = ["code = 0.0"]
    for k, spec in enumerate(case["ins"]):
        for j in range(len(spec)):
            lines.append(f"code = code * 7 + p{k}.shape[{j}]")
    first = len(case["ins"])
    for k, spec in enumerate(case["outs"]):
        index = ", ".join(["0"] * max(len(spec), 1))
        lines.append(f"p{first + k}[{index}] = code + {k}")
    return f"def f({', '.join(params)}):\n" + "".join(f"    {ln}\n" for ln in lines)


SCRIPT = '''import pickle

import numpy as np
import numbavec as nv
from numbavec import _core as core
{prelude}

{kernel}

CALL = {call!r}
TARGET = {target!r}


def signature():
    return {sig}


def layout():
    return {layout}


def run():
    """What the call returns (a TypeError or ValueError with a message is a pass)."""
    if CALL == "parse_signature":
        return core.parse_signature(signature())
    if CALL == "parse_signatures":
        return core.parse_signatures(signature())
    if CALL == "_parse_type":
        return core._parse_type(signature())
    if CALL == "vectorize":
        return nv.vectorize(signature(), target=TARGET)(f)
    return nv.guvectorize(signature(), layout(), target=TARGET)(f)


if __name__ == "__main__":
    try:
        result = run()
    except (TypeError, ValueError) as exc:
        print(f"refused: {{type(exc).__name__}}: {{exc!r}}")
    else:
        print("result:", repr(result)[:2000])
        print("types:", getattr(result, "types", None), "signature:",
              repr(getattr(result, "signature", None)))
'''


def render(case):
    return SCRIPT.format(prelude=ODD_PRELUDE, kernel=kernel_text(case), call=case["call"],
                         target=case["target"], sig=case["sig"], layout=case["layout"])


def reproducer(case, out, note=""):
    doc = (f"numbavec signature fuzz reproducer ({case['gen']}, case {case['id']}).\n\n"
           f"What happens: {out['kind']}: {out['detail'].strip()}\n\n"
           "What should happen: success, or a TypeError/ValueError with a message; a "
           "successful result matches what was asked (types, layout, results).\n")
    if note:
        doc += f"\nNote: {note}\n"
    doc = doc.replace("\\", "\\\\").replace('"""', "'''").replace("\0", "\\x00")
    doc = doc.encode("utf-8", "backslashreplace").decode("utf-8")
    return '"""' + doc + '\n"""\n' + render(case)


# ---------------------------------------------------------------- the worker side

def run_case(case, workdir):
    import importlib.util

    path = os.path.join(workdir, "nvs_" + case["id"].replace("-", "_") + ".py")
    with open(path, "w", encoding="utf-8", errors="surrogatepass") as fh_:
        fh_.write(render(case))
    spec = importlib.util.spec_from_file_location(os.path.basename(path)[:-3], path)
    mod = importlib.util.module_from_spec(spec)
    try:
        spec.loader.exec_module(mod)
    except (SyntaxError, ValueError, MemoryError, RecursionError) as exc:
        return fh.outcome("invalid", detail=f"{type(exc).__name__}: {exc}")
    fh.mark_phase(case["call"])
    try:
        result = mod.run()
    except (TypeError, ValueError) as exc:
        if not str(exc).strip():
            return fh.outcome("fail", "bad-message",
                              f"{type(exc).__name__} with an empty message",
                              key=f"bad-message: {type(exc).__name__} in {case['call']}")
        return fh.outcome("refused", detail=f"{type(exc).__name__}: {exc}")
    except RecursionError as exc:
        return fh.exception_outcome(exc, case["call"])
    except Exception as exc:
        return fh.exception_outcome(exc, case["call"])
    fh.mark_phase("check")
    problem = check_result(case, mod, result)
    if problem:
        what, detail = problem if isinstance(problem, tuple) else (problem, problem)
        return fh.outcome("fail", "wrong-result", detail,
                          key=f"wrong-result: {case['call']}: {fh.normalize(what)}")
    return fh.outcome("ok", counts={"accepted": 1})


def check_result(case, mod, result):
    """What is wrong with a successful result, or None."""
    from numbavec import _core as core

    call = case["call"]
    expect = case.get("expect")
    if call in ("parse_signature", "_parse_type"):
        if expect and call == "parse_signature" and repr(result) != expect["canon"][0]:
            return f"parsed as {result!r}, expected {expect['canon'][0]}"
        return _round_trip(core, result, call)
    if call == "parse_signatures":
        for s in result:
            problem = _round_trip(core, s, "parse_signature")
            if problem:
                return problem
        if expect and [repr(s) for s in result] != expect["canon"]:
            return f"parsed as {[repr(s) for s in result]}, expected {expect['canon']}"
        return None
    sigs = core.parse_signatures(mod.signature())
    if call == "vectorize":
        return _check_ufunc(result, sigs, expect)
    return _check_gufunc(case, mod, result, sigs)


def _round_trip(core, obj, call):
    text = repr(obj)
    again = core.parse_signature(text) if call == "parse_signature" else core._parse_type(text)
    if again != obj or hash(again) != hash(obj):
        return f"{text!r} does not parse back to itself (got {again!r})"
    if pickle_round_trip(obj) != obj:
        return f"{text!r} does not survive pickling"
    return None


def pickle_round_trip(obj):
    import pickle

    return pickle.loads(pickle.dumps(obj))


def _check_ufunc(uf, sigs, expect):
    import numpy as np

    if uf.nin != len(sigs[0].args):
        return f"nin {uf.nin} for {len(sigs[0].args)} arguments"
    wanted = []
    for s in sigs:
        ins = "".join(np.dtype(a.dtype).char for a in s.args)
        out = np.dtype(s.return_type.dtype).char if s.return_type is not None else None
        wanted.append((ins, out))
    got = [t.split("->") for t in uf.types]
    dedup = list(dict.fromkeys(wanted))
    if len(got) not in (len(wanted), len(dedup)):
        return f"types {uf.types} for the signatures {[repr(s) for s in sigs]}"
    for (ins, out), (gins, gout) in zip(wanted if len(got) == len(wanted) else dedup, got):
        if ins != gins or (out is not None and out != gout):
            return f"types {uf.types} for the signatures {[repr(s) for s in sigs]}"
    if expect:
        for s, canon in zip(sigs, expect["canon"]):
            if repr(s) != canon:
                return f"{canon} parsed as {s!r}"
    # the loops compute: the first loop is called on its own types
    args = [np.arange(1, 4).astype(np.dtype(a.dtype)) for a in sigs[0].args]
    if args and uf.nout == 1:
        with np.errstate(all="ignore"):
            res = uf(*args, signature=tuple(np.dtype(t) for t in
                                            got[0][0]) + (np.dtype(got[0][1]),))
            exp = sum(args[1:], args[0]).astype(res.dtype) if len(args) > 1 else \
                args[0].astype(res.dtype)
        if not np.array_equal(res, exp):
            return f"the first loop gives {res!r}, the sum of its arguments is {exp!r}"
    return None


def _check_gufunc(case, mod, uf, sigs):
    import numpy as np

    text = mod.layout()
    asked = "".join(text.split())
    if uf.signature is None and not any(ch.isalnum() for ch in asked):
        return None         # no core dimension: NumPy makes an ordinary ufunc
    got = "".join((uf.signature or "").split())
    if "->" not in asked:
        asked_cmp = asked + "->()"     # no outputs: NumPy spells it with an empty output list
        if got not in (asked, asked_cmp, asked + "->"):
            return f"layout {text!r} became the gufunc signature {uf.signature!r}"
    elif got != asked:
        return f"layout {text!r} became the gufunc signature {uf.signature!r}"
    if not case.get("check_call"):
        return None
    ins, outs, sizes = case["ins"], case["outs"], case["sizes"]
    if uf.nin != len(ins) or uf.nout != len(outs):
        return f"nin/nout {uf.nin}/{uf.nout} for layout {text!r}"
    outer = 2
    arrays = []
    for k, spec in enumerate(ins + outs):
        shape = [outer] + [sizes[d] if isinstance(d, str) else d for d in spec]
        dtype = np.dtype(case["dtype"] if k < len(ins) else "float64")
        arrays.append(np.zeros(shape, dtype=dtype))
    res_outs = [a.copy() for a in arrays[len(ins):]]
    try:
        uf(*arrays[:len(ins)], out=tuple(res_outs))
    except Exception as exc:
        return (f"a call with valid shapes raises {type(exc).__name__}",
                f"calling it with sizes {sizes} raised {type(exc).__name__}: {exc}")
    ref_outs = [a.copy() for a in arrays[len(ins):]]
    for i in range(outer):
        pargs = [a[i] for a in arrays[:len(ins)]]
        pargs += [o[i:i + 1] if o.ndim == 1 else o[i] for o in ref_outs]
        mod.f(*pargs)
    for j, (g, e) in enumerate(zip(res_outs, ref_outs)):
        if not np.array_equal(g, e):
            return ("results differ from py_func's",
                    f"output {j} is {g.ravel()[:8]!r}, py_func gives {e.ravel()[:8]!r} "
                    f"(sizes {sizes})")
    return None


# ---------------------------------------------------------------- known faults, minimization

# Faults found and not fixed yet (label, test(case, outcome)); empty: the
# first runs' (layout dimension names cut at 63 characters, a NUL byte
# cutting a layout) are fixed.
KNOWN_FAULTS = []


def known(case, out):
    for label, test in KNOWN_FAULTS:
        if test(case, out):
            return label
    return None


def shrink(case, out):
    """Shorter signature and layout texts (string literals only)."""
    import ast

    for field in ("sig", "layout"):
        text = case.get(field)
        if not text:
            continue
        try:
            value = ast.literal_eval(text)
        except (ValueError, SyntaxError, MemoryError, RecursionError):
            continue
        if isinstance(value, str) and len(value) > 1:
            chunk = max(1, len(value) // 2)
            while chunk >= 1:
                for start in range(0, len(value), chunk):
                    smaller = value[:start] + value[start + chunk:]
                    yield dict(case, **{field: repr(smaller)})
                if chunk == 1:
                    break
                chunk //= 2
    if case["target"] != "cpu":
        yield dict(case, target="cpu")


def main(argv=None):
    return fh.main(sys.modules[__name__], "fuzz_signatures", argv)


if __name__ == "__main__":
    sys.exit(main())
