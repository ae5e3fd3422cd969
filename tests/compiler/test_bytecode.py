"""The bytecode front end (numbavec/_bytecode.py): kernels without source.

Differential: every kernel of the suite's collections (tests/support/array_kernels.py,
tests/support/examples.py, tests/support/progs.py programs, kernel fuzzer programs) is rebuilt
from its code object and compared with its parsed source (canonical trees,
tests/support/bytecode_corpus.py), then compiled through both front ends: the LLVM IR
and the results must be identical.  Then the places Python keeps no source
(child processes), edited files, errors, and damaged code objects.
"""
import ast
import dis
import os
import subprocess
import sys
import textwrap
import types

import numpy as np
import pytest

import bytecode_corpus as bc
import numbavec
from conftest import NUMBAVEC_ROOT, SUPPORT_DIR, TARGETS, TEST_PATHS, kernel_from_source
from numbavec import _bytecode, _bytecode_tables
from numbavec._source import KernelSource

pytestmark = pytest.mark.slow  # every kernel of the suite's collections through both front ends

HERE = os.path.dirname(os.path.abspath(__file__))
N_PROGS = int(os.environ.get("NUMBAVEC_BYTECODE_PROGS", "60"))
N_FUZZ = int(os.environ.get("NUMBAVEC_BYTECODE_FUZZ", "120"))


# ---- the version tables ----

def test_the_table_of_this_version_is_this_interpreters():
    import opcode

    rules = _bytecode_tables.rules_for(sys.version_info)
    assert rules is not None
    ours = {k: v for k, v in rules.opmap.items()}
    theirs = {k: v for k, v in opcode.opmap.items() if v < 256 and not k.startswith("INSTR")}
    assert ours == theirs
    caches = getattr(opcode, "_inline_cache_entries", {})
    if isinstance(caches, list):
        caches = {opcode.opname[i]: n for i, n in enumerate(caches) if n}
    assert {k: v for k, v in rules.caches.items() if v} == {k: v for k, v in caches.items()
                                                            if v and k in theirs}
    assert rules.have_argument == opcode.HAVE_ARGUMENT


@pytest.mark.parametrize("version", sorted(_bytecode_tables.RULES))
def test_tables_are_consistent(version):
    """Every table: opcodes unique and below 256, the jumps, caches and
    handled opcodes named in it, 3.14's from its documentation included."""
    rules = _bytecode_tables.RULES[version]
    assert len(set(rules.opmap.values())) == len(rules.opmap)
    assert all(0 <= v < 256 for v in rules.opmap.values())
    assert set(rules.jumps) - set(rules.opmap) <= {"JUMP_IF_NOT_EXC_MATCH"} - set(rules.opmap)
    assert set(rules.caches) <= set(rules.opmap)
    known = set(_bytecode._HANDLERS) | set(_bytecode._UNSUPPORTED_OPS)
    unread = {n for n in rules.opmap if n not in known}
    # what a function's code never holds (module and class bodies, the
    # interpreter's own): refused as an unknown opcode
    assert unread <= _NEVER_IN_A_FUNCTION, sorted(unread - _NEVER_IN_A_FUNCTION)
    for name in ("RETURN_VALUE", "LOAD_ATTR", "FOR_ITER", "BINARY_OP" if version >= (3, 11)
                 else "BINARY_ADD"):
        assert name in rules.opmap


_NEVER_IN_A_FUNCTION = {
    "PRINT_EXPR", "LOAD_BUILD_CLASS", "SETUP_ANNOTATIONS", "LOAD_LOCALS", "LOAD_CLASSDEREF",
    "LOAD_FROM_DICT_OR_DEREF", "LOAD_FROM_DICT_OR_GLOBALS", "LOAD_SUPER_ATTR", "DELETE_NAME",
    "INTERPRETER_EXIT", "RESERVED", "CALL_INTRINSIC_2", "CLEANUP_THROW", "EXIT_INIT_CHECK",
    "ASYNC_GEN_WRAP", "RETURN_GENERATOR", "ENTER_EXECUTOR", "INSTRUMENTED_LINE", "CACHE_OP",
    "BINARY_SUBSCR_ADAPTIVE", "END_SEND", "CHECK_EXC_MATCH", "CHECK_EG_MATCH", "MAP_ADD",
    "SETUP_CLEANUP", "BUILD_INTERPOLATION", "BUILD_TEMPLATE", "LOAD_SPECIAL", "GET_LEN",
    "EXTENDED_ARG",
} | {"STORE_NAME", "LOAD_NAME", "IMPORT_STAR"}


def test_locations_match_the_interpreters():
    """The line table parsed here gives what co_positions (co_lines) says."""
    import examples

    rules = _bytecode.current_rules()
    for f in (examples.gaussian_pdf, examples.polar_distance, bc.canonical, dis.findlabels):
        code = f.__code__
        n = len(code.co_code) // 2
        if rules.linetable == "310":
            ours = _bytecode._locations_310(code, n)
            for start, end, line in code.co_lines():
                for u in range(start // 2, end // 2):
                    assert (ours[u] or (None,))[0] == line
        else:
            ours = _bytecode._locations_311(code, n)
            theirs = list(code.co_positions())
            assert [(loc[0] if loc else None) for loc in ours] == [p[0] for p in theirs]
            for loc, p in zip(ours, theirs):
                if loc and p[2] is not None:
                    assert (loc[1], loc[3]) == (p[2], p[3])


# ---- differential: trees ----

def _module_pairs(name, text):
    tree = ast.parse(text)
    defs = bc.function_defs(tree)
    for code in bc.code_objects(compile(text, name, "exec")):
        fd = defs.get((code.co_name, code.co_firstlineno))
        if fd is not None:
            yield fd, code


def _corpus():
    for fname in ("array_kernels.py", "examples.py"):
        with open(os.path.join(SUPPORT_DIR, fname)) as fh:
            yield fname, fh.read()
    yield from bc.generated_sources(N_PROGS, N_FUZZ)


# constructs whose "... are not supported" message is one
_ALIKE = {"Import": {"Import", "ImportFrom"}, "ImportFrom": {"Import", "ImportFrom"},
          "Try": {"Try", "TryStar", "With"}, "TryStar": {"Try", "TryStar"}}


def test_rebuilt_trees_equal_the_parsed_ones():
    """Every hand-written kernel (array_kernels.py, examples.py) rebuilds to
    its parsed tree (canonically); generated programs rebuild, or are refused
    with a BytecodeError (counted: the rebuild never guesses), and each tree
    rebuilt is the parsed one or compiles to the same code (checked inside)."""
    counts = {"kernels": 0, "exact": 0, "canonical": 0, "other_form": 0, "unsupported": 0,
              "refused": 0}
    bad = []
    for name, text in _corpus():
        handwritten = name.endswith(".py")
        try:
            pairs = list(_module_pairs(name, text))
        except SyntaxError:
            continue
        for fd, code in pairs:
            counts["kernels"] += 1
            try:
                rebuilt = bc.rebuild(code)
            except _bytecode.BytecodeError as exc:
                counts["refused"] += 1
                if handwritten:
                    bad.append(f"{name} {code.co_name}: {exc}")
                continue
            except RecursionError:
                counts["refused"] += 1
                continue                    # a depth the source path refuses too
            stub = getattr(rebuilt, "refused_with", None)
            if stub is not None:
                counts["unsupported"] += 1
                alike = _ALIKE.get(stub, {stub})
                assert any(type(n).__name__ in alike for n in ast.walk(fd)), (name, stub)
                continue
            try:
                if bc.exact(fd, rebuilt):
                    counts["exact"] += 1
                elif bc.canonical(fd) == bc.canonical(rebuilt):
                    counts["canonical"] += 1
                else:
                    counts["other_form"] += 1
                    if handwritten:
                        bad.append(f"{name} {code.co_name}:\n{ast.unparse(fd)}\n----\n"
                                   f"{ast.unparse(rebuilt)}")
            except RecursionError:
                continue
    print(counts)
    assert not bad, f"{len(bad)} of {counts['kernels']}:\n" + "\n\n".join(bad[:5])
    assert counts["refused"] <= 0.2 * counts["kernels"], counts


# ---- differential: code and results ----

def _both(make, pyfunc):
    return make(pyfunc), make(bc.no_source(pyfunc))


def _llvm_of(obj, sig):
    return bc.llvm_text(obj, sig)


@pytest.mark.parametrize("target", TARGETS)
def test_array_kernels_compile_alike(target):
    from array_kernels import KERNELS, signature
    from test_arrays import make_inputs, out_shape, size_cases

    for name, (py, layout, kinds, out_kind) in sorted(KERNELS.items()):
        assert KernelSource(bc.no_source(py)).from_bytecode
        sig = signature(layout, kinds, out_kind, "float64")
        a, b = _both(numbavec.guvectorize([sig], layout, target=target), py)
        assert _llvm_of(a, sig) == _llvm_of(b, sig), name
        rng = np.random.default_rng(7)
        for sizes in size_cases(layout)[:3]:
            ins = make_inputs(layout, kinds, sizes, np.float64, rng, nan=True)
            kw = {}
            if any(d == "k" for d in "".join(layout.split("->")[1])):
                kw = {"out": np.zeros(out_shape(layout, sizes))}
            with np.errstate(all="ignore"):
                try:
                    ra = a(*ins, **{k: v.copy() for k, v in kw.items()})
                except Exception as exc:  # noqa: BLE001 - both must raise alike
                    with pytest.raises(type(exc)):
                        b(*ins, **{k: v.copy() for k, v in kw.items()})
                    continue
                rb = b(*ins, **{k: v.copy() for k, v in kw.items()})
            assert np.asarray(ra).tobytes() == np.asarray(rb).tobytes(), name


@pytest.mark.parametrize("target", TARGETS)
def test_examples_and_programs_compile_alike(target):
    import difftest as dt
    import examples
    import progs

    cases = [(examples.saxpy, ["f4(f4, f4, f4)", "f8(f8, f8, f8)"]),
             (examples.gaussian_pdf, ["f4(f4, f4, f4)", "f8(f8, f8, f8)"]),
             (examples.polar_distance, ["f8(f8, f8, f8, f8)"]),
             (examples.vmult, ["c8(c8, c8)"])]
    tmp = os.path.join(HERE, "..", "..", "build", "bytecode-progs")
    os.makedirs(tmp, exist_ok=True)
    for seed in range(min(N_PROGS, 40)):
        prog = progs.generate(seed)
        mod = dt.load_source(prog.source, tmp, name=f"nv_bc_prog_{seed}")
        cases.append((mod.f, prog.signatures()))
    refused = []
    for py, sigs in cases:
        for sig in sigs:
            try:
                a = numbavec.vectorize([sig], target=target)(py)
            except numbavec.TypingError as exc:
                with pytest.raises(numbavec.TypingError) as again:
                    numbavec.vectorize([sig], target=target)(bc.no_source(py))
                assert str(exc).split(":", 2)[2].split("\n")[0].strip() in str(again.value)
                continue
            try:
                b = numbavec.vectorize([sig], target=target)(bc.no_source(py))
            except numbavec.TypingError as exc:
                assert "from its bytecode" in str(exc)      # refused, never guessed
                refused.append(py.__name__)
                continue
            if _same_tree(py):
                assert _llvm_of(a, sig) == _llvm_of(b, sig), (py.__name__, sig)
            rng = np.random.default_rng(1)
            dtypes = [np.dtype(t) for t in a.types[0].split("->")[0]]
            args = [dt.random_values(d, 64, rng) for d in dtypes]
            with np.errstate(all="ignore"):
                assert a(*args).tobytes() == b(*args).tobytes(), (py.__name__, sig)
    assert len(set(refused)) <= 0.2 * len(cases), refused


def _same_tree(py):
    """Whether py's tree rebuilt from bytecode is its parsed tree exactly
    (then both front ends must give the same LLVM IR)."""
    import inspect

    fd = ast.parse(textwrap.dedent(inspect.getsource(py))).body[0]
    return bc.exact(fd, bc.rebuild(py.__code__))


# ---- where Python keeps no source ----

KERNEL = textwrap.dedent("""\
    import math
    def f(x, y):
        if x > y:
            return math.sqrt(x - y)
        t = 0.0
        for i in range(3):
            t += y * i
        return t if x else -t
    """)

CHECK = textwrap.dedent("""\
    import numpy as np, numbavec
    uf = numbavec.vectorize(['f8(f8, f8)'])(f)
    a = np.linspace(-3, 3, 13); b = np.linspace(2, -2, 13)
    want = np.array([f(x, y) for x, y in zip(a, b)])
    assert uf(a, b).tobytes() == want.tobytes()
    from numbavec._source import KernelSource
    print("OK", KernelSource(f).from_bytecode)
    """)


def _python(args, stdin=None, cwd=None, env=None, timeout=240):
    e = dict(os.environ)
    e["PYTHONPATH"] = os.pathsep.join([NUMBAVEC_ROOT, HERE, *TEST_PATHS] + (
        [e["PYTHONPATH"]] if e.get("PYTHONPATH") else []))
    e.update(env or {})
    return subprocess.run([sys.executable] + args, input=stdin, capture_output=True, text=True,
                          cwd=cwd, env=e, timeout=timeout)


def _ok(proc, from_bytecode=True):
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert f"OK {from_bytecode}" in proc.stdout, (proc.stdout[-2000:], proc.stderr[-2000:])


def test_python_c(tmp_path):
    """`python -c`: 3.13 keeps its source (in linecache), which is then used."""
    _ok(_python(["-c", KERNEL + CHECK], cwd=tmp_path), sys.version_info < (3, 13))


def test_python_stdin(tmp_path):
    _ok(_python(["-"], stdin=KERNEL + CHECK, cwd=tmp_path))


def test_exec_of_a_string(tmp_path):
    code = f"exec(compile({KERNEL!r}, '<kernel>', 'exec'))\n" + CHECK
    _ok(_python(["-c", code], cwd=tmp_path))


def test_interactive_interpreter(tmp_path):
    """A piped `python -i`: the REPL keeps no source before 3.13 (3.13's
    keeps it, and numbavec then compiles from it)."""
    lines = KERNEL.replace("\n    return t if", "\n    return t if") + "\n" + CHECK + "\n"
    proc = _python(["-i", "-q"], stdin=lines, cwd=tmp_path)
    assert "OK" in proc.stdout, proc.stderr[-3000:]
    assert "Error" not in proc.stderr, proc.stderr[-3000:]


def test_pyc_only_module(tmp_path):
    import compileall

    (tmp_path / "kmod.py").write_text(KERNEL)
    compileall.compile_file(str(tmp_path / "kmod.py"), quiet=1, legacy=True)
    os.remove(tmp_path / "kmod.py")
    assert os.path.exists(tmp_path / "kmod.pyc")
    _ok(_python(["-c", "from kmod import f\n" + CHECK], cwd=tmp_path))


def test_compile_of_a_rewritten_tree_naming_a_real_file(tmp_path):
    """numbagg's way: a function compiled from a rewritten tree whose file
    name is a real file holding other text; the source found there is not
    the function's, so it is compiled from its code."""
    other = tmp_path / "real.py"
    other.write_text("def f(x, y):\n    return x - y  # not the compiled function\n")
    tree = ast.parse(KERNEL)
    for node in ast.walk(tree):
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Sub):
            node.op = ast.Add()         # the rewrite: x - y becomes x + y
    code = compile(tree, str(other), "exec")
    ns = {}
    exec(code, ns)
    f = ns["f"]
    src = KernelSource(f)
    assert src.from_bytecode
    uf = numbavec.vectorize(["f8(f8, f8)"])(f)
    a, b = np.array([5.0, 1.0]), np.array([1.0, 2.0])
    assert uf(a, b).tolist() == [f(5.0, 1.0), f(1.0, 2.0)]
    assert uf(a, b)[0] == np.sqrt(6.0)


def test_ipython_time_cell(tmp_path):
    pytest.importorskip("IPython")
    cell = "%%time\n" + KERNEL + CHECK
    script = ("from IPython.testing.globalipapp import start_ipython\n"
              "ip = start_ipython()\n"
              f"r = ip.run_cell({cell!r})\n"
              "r.raise_error()\n")
    _ok(_python(["-c", script], cwd=tmp_path))


def test_spawn_worker_from_python_c(tmp_path):
    code = KERNEL + textwrap.dedent("""\
        import multiprocessing as mp, numpy as np, numbavec
        uf = numbavec.vectorize(['f8(f8, f8)'])(f)
        if __name__ == '__main__':
            # the ufunc itself is the task: pickled by value, as bytecode
            with mp.get_context('spawn').Pool(1) as pool:
                got = pool.apply_async(uf, (np.array([4.0, 1.0]), np.array([1.0, 2.0])))
                got = got.get(150).tolist()
            assert got == [f(4.0, 1.0), f(1.0, 2.0)], got
            print('OK True')
        """)
    _ok(_python(["-c", code], cwd=tmp_path))


def test_cuda_ptx_of_a_kernel_without_source():
    f = bc.no_source(kernel_from_source(KERNEL, "f"))
    assert KernelSource(f).from_bytecode
    ptx = numbavec.cuda.compile_ptx(f, "float64(float64, float64)", backend="llvm")
    assert ".entry" in ptx or ".visible" in ptx


# ---- source that is not the function's ----

def test_a_file_edited_after_import_compiles_the_old_code(tmp_path):
    path = tmp_path / "edited_mod.py"
    path.write_text("SCALE = 2.0\ndef f(x):\n    return x * SCALE\n")
    sys.path.insert(0, str(tmp_path))
    try:
        import edited_mod
    finally:
        sys.path.remove(str(tmp_path))
    path.write_text("SCALE = 2.0\ndef f(x):\n    return x + UNDEFINED_NOW\n")
    os.utime(path, (1, 1))
    src = KernelSource(edited_mod.f)
    assert src.from_bytecode
    uf = numbavec.vectorize(["f8(f8)"])(edited_mod.f)
    assert uf(np.array([3.0])).tolist() == [6.0]


LOOP_CONDITIONS = [
    "ai > best or (idx == -1 and not np.isnan(ai))",     # numbagg's nanargmax
    "ai > best or (idx == -1 and np.isnan(ai))",
    "(ai > best or idx == -1) and not np.isnan(ai)",
    "ai > best or (idx == -1 and ai == ai) or i == 3",
    "not (ai > best) and (idx == -1 or ai < 0.5)",
]


@pytest.mark.parametrize("cond", LOOP_CONDITIONS)
def test_a_compound_condition_closing_a_loop_body(target, cond):
    """`if a or (b and c):` as a loop body's last statement: after b, the
    tests leave for three places (the body, the loop's next turn, c), which
    ended the condition there ("a condition jumps out of its block", 3.10 and
    3.11)."""
    src = textwrap.dedent(f"""\
        import numpy as np
        def k(a, out):
            best = -np.inf
            idx = -1
            for i, ai in enumerate(a.flat):
                if {cond}:
                    best = ai
                    idx = i
            out[0] = idx
        """)
    py = kernel_from_source(src)
    f = bc.no_source(py)
    assert KernelSource(f).from_bytecode
    gu = numbavec.guvectorize(["void(float64[:], int64[:])"], "(n)->()", target=target)(f)
    a = np.array([[np.nan, 0.2, 0.9, 0.1, 0.7], [np.nan, np.nan, -1.0, 0.3, 0.8],
                  [0.4, 0.4, np.nan, 2.0, 0.0]])
    expected = np.zeros(3, dtype=np.int64)
    for row in range(3):
        py(a[row], expected[row:row + 1])
    np.testing.assert_array_equal(gu(a), expected)


FUTURE_MODULE = """from __future__ import annotations
import numpy as np

def allnan(a: np.ndarray, out: np.ndarray) -> None:
    out[0] = True
    for ai in a:
        if not np.isnan(ai):
            out[0] = False
"""


@pytest.mark.parametrize("source_kept", [True, False])
def test_a_module_with_future_imports(tmp_path, source_kept):
    """`from __future__ import annotations` sets a flag in each function's
    code: compiled again without it, the source seemed not to be the
    function's, and the rebuilt def failed its check (numbagg's kernels)."""
    (tmp_path / "future_mod.py").write_text(FUTURE_MODULE)
    sys.path.insert(0, str(tmp_path))
    try:
        import future_mod
    finally:
        sys.path.remove(str(tmp_path))
    py = future_mod.allnan if source_kept else bc.no_source(future_mod.allnan)
    assert KernelSource(py).from_bytecode is not source_kept
    gu = numbavec.guvectorize(["void(float64[:], boolean[:])"], "(a)->()")(py)
    a = np.array([[1.0, np.nan], [np.nan, np.nan], [0.0, 2.0]])
    expected = np.zeros(3, dtype=bool)
    for row in range(3):
        future_mod.allnan(a[row], expected[row:row + 1])
    np.testing.assert_array_equal(gu(a), expected)


def test_source_path_stays_the_default():
    import array_kernels
    import examples

    for f in (examples.saxpy, examples.gaussian_pdf, array_kernels.KERNELS["ema"][0]):
        assert not KernelSource(f).from_bytecode


# ---- errors ----

def test_errors_name_the_file_line_and_column():
    f = bc.no_source(kernel_from_source("def k(x):\n    y = x + 1\n    return y.nope\n"))
    with pytest.raises(numbavec.TypingError) as err:
        numbavec.vectorize(["f8(f8)"])(f)
    text = str(err.value)
    col = ":12" if sys.version_info >= (3, 11) else ""
    assert text.startswith(f"<no source: test>:3{col}: attribute 'nope'"), text
    assert "the source is not available" in text


def test_a_kernel_that_cannot_be_rebuilt_says_where_source_is_kept():
    """Issue 38's no-source message, now that kernels without source are
    rebuilt from bytecode: what remains is the rare refusal to rebuild (an
    assignment expression, here), and it says how to give the kernel its
    source."""
    f = bc.no_source(kernel_from_source(
        "def k(x):\n    if (y := x + 1) > 2:\n        return y\n    return x\n"))
    with pytest.raises(numbavec.TypingError) as err:
        numbavec.vectorize(["f8(f8)"])(f)
    text = str(err.value)
    assert "cannot compile 'k' from its bytecode" in text, text
    for where in ("in a file", "IPython or Jupyter", "Python 3.13's REPL",
                  "linecache.cache[filename] = (len(text), None, lines, filename)"):
        assert where in text, text


@pytest.mark.parametrize("body, says", [
    ("return [x for x in range(3)][0]", "list comprehensions are not supported"),
    ("return (lambda v: v)(x)", "lambda expressions are not supported"),
    ("with open('f') as fh:\n        pass\n    return x", "'with' statements"),
    ("try:\n        return x\n    except Exception:\n        return 0", "'try' statements"),
    ("return {1: x}[1]", "dict displays are not supported"),
    ("return f'{x}'", "f-strings are not supported"),
    ("import math\n    return x", "imports"),
    ("global G\n    G = 1\n    return x", "'global' declarations"),
    ("del x\n    return 1", "'del' statements"),
    ("yield x", "generators"),
])
def test_constructs_outside_the_language_are_named(body, says):
    f = bc.no_source(kernel_from_source(f"def k(x):\n    {body}\n"))
    with pytest.raises(numbavec.TypingError, match=says):
        numbavec.vectorize(["f8(f8)"])(f)


def test_an_unknown_version_is_a_typing_error(monkeypatch):
    f = bc.no_source(kernel_from_source("def k(x):\n    return x\n"))
    monkeypatch.setattr(_bytecode_tables, "rules_for", lambda v: None)
    with pytest.raises(numbavec.TypingError, match="cannot read the bytecode of Python"):
        numbavec.vectorize(["f8(f8)"])(f)


# ---- damaged and hostile code objects ----

def _hostile(**changes):
    f = kernel_from_source("def k(x, y):\n    if x > y:\n        x = x - y\n"
                           "    for i in range(3):\n        y += i\n    return x * y\n")
    code = f.__code__.replace(co_filename="<hostile>", **changes)
    return types.FunctionType(code, f.__globals__, "k")


def _refused_or_right(f):
    """A TypingError, or a kernel that gives what the function gives."""
    try:
        uf = numbavec.vectorize(["f8(f8, f8)"])(f)
    except numbavec.TypingError:
        return "refused"
    a, b = np.array([1.0, 5.0, -2.0]), np.array([2.0, 1.0, 0.5])
    try:
        want = [f(x, y) for x, y in zip(a.tolist(), b.tolist())]
    except Exception:  # noqa: BLE001 - a damaged function need not run
        return "compiled"
    assert uf(a, b).tolist() == want
    return "right"


def _co(f=None):
    return (f or _hostile()).__code__


def test_damaged_line_tables():
    code = _co()
    for table in (b"", b"\xff" * 3, b"\x80", code.co_linetable[:3], bytes(range(256))):
        _refused_or_right(_hostile(co_linetable=table))


class _FakeCode:
    """A code object with other bytecode, made without the interpreter:
    CPython 3.12 on prepares the inline caches of a code object it makes
    (code.replace), and malformed bytecode can make it write past them,
    so hostile bytecode is given to the front end this way instead."""

    def __init__(self, code, co_code):
        self._code, self.co_code = code, co_code

    def __getattr__(self, name):
        return getattr(self._code, name)


def _rebuilt_or_refused(co_code):
    """rebuild_code of the test kernel with co_code: a tree (then checked
    against its own code: it is a real compile of the tree) or BytecodeError,
    nothing else."""
    try:
        _bytecode.rebuild_code(_FakeCode(_co(), co_code))
    except _bytecode.BytecodeError:
        return "refused"
    return "rebuilt"


def test_truncated_and_foreign_bytecode():
    raw = _co().co_code
    for co in (raw[:-2], raw[:len(raw) // 2], raw[:1] + raw[2:], b"", bytes([255, 0]) * 4,
               raw[::-1], bytes([144, 255]) * 6 + raw):
        assert _rebuilt_or_refused(co) == "refused"


def test_opcodes_out_of_place_and_wrong_stack_effects():
    raw = bytearray(_co().co_code)
    rng = np.random.default_rng(5)
    results = {}
    for _ in range(400):
        co = bytearray(raw)
        for _ in range(int(rng.integers(1, 4))):
            k = int(rng.integers(0, len(co) // 2)) * 2
            co[k] = int(rng.integers(0, 256)) if rng.random() < 0.5 else co[k]
            co[k + 1] = int(rng.integers(0, 256))
        r = _rebuilt_or_refused(bytes(co))
        results[r] = results.get(r, 0) + 1
    # rebuilt: a change the check finds harmless (an inline cache's bytes,
    # a NOP's argument); anything else is refused, never an exception
    assert results.get("refused", 0) > 200, results


def test_jumps_out_of_range_and_extended_arg_chains():
    rules = _bytecode.current_rules()
    ext, jump = rules.opmap["EXTENDED_ARG"], rules.opmap["JUMP_FORWARD"]
    for co in (bytes([jump, 200]) + _co().co_code, bytes([ext, 255] * 5 + [jump, 255]),
               bytes([ext, 1, ext, 2, ext, 3, ext, 4]) + _co().co_code):
        assert _rebuilt_or_refused(co) == "refused"


def test_bytecode_of_another_version_is_refused():
    """`def k(x, y): return x + y` as 3.10 and as 3.12 write it, given as
    this test kernel's code: never rebuilt into anything but its own code."""
    as_310 = bytes([124, 0, 124, 1, 23, 0, 83, 0])
    as_312 = bytes([151, 0, 124, 0, 124, 1, 122, 0, 0, 0, 83, 0])
    for co in (as_310, as_312):
        assert _rebuilt_or_refused(co) == "refused"


def test_device_functions_without_source():
    """An exec'd @numbavec.jit helper and the exec'd kernel calling it: both
    compiled from bytecode, the helper inlined as from source."""
    ns = {}
    exec(textwrap.dedent("""\
        import math, numbavec
        @numbavec.jit
        def helper(r, t):
            return r * math.cos(t), r * math.sin(t)
        def kern(r, t):
            x, y = helper(r, t)
            return x * x + y if x > 0 else y
        """), ns)
    uf = numbavec.vectorize(["f8(f8, f8)"])(ns["kern"])
    r, t = np.array([1.0, 2.0, 0.5]), np.array([0.3, 2.5, -1.0])
    assert uf(r, t).tolist() == [ns["kern"](a, b) for a, b in zip(r.tolist(), t.tolist())]
    assert KernelSource(ns["kern"]).from_bytecode


def test_unary_plus():
    """+x: CALL_INTRINSIC_1 from 3.12 (UNARY_POSITIVE before)."""
    f = bc.no_source(kernel_from_source("def k(x):\n    return +x * 2\n"))
    uf = numbavec.vectorize(["f8(f8)"])(f)
    assert uf(np.array([1.5, -2.0])).tolist() == [3.0, -4.0]
    assert KernelSource(f).from_bytecode
