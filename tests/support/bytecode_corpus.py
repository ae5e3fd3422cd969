"""The kernels both front ends compile, for tests/compiler/test_bytecode.py and the
release run (tests/support/difftest_release.py --bytecode).

A kernel "without source" is the same function object rebuilt around its code
object with a file name inspect cannot read, so numbavec compiles it from its
bytecode (numbavec/_bytecode.py), next to the function compiled from its
source.  :func:`canonical` is the form both trees are compared in: the same
parse, without what bytecode cannot keep (decorators, annotations, constant
folding the compiler does anyway, parentheses around same-operator and/or,
and the forms that compile to identical code: ``not (a and b)`` and
``not a or not b``, ``if c: return x`` followed by statements and the same
with ``else:``).  :func:`exact` says whether the two trees were equal before
that (the strongest check; counted, not required).
"""
import ast
import copy
import operator
import re
import types

from numbavec import _bytecode

_BIN = {ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul,
        ast.Div: operator.truediv, ast.FloorDiv: operator.floordiv, ast.Mod: operator.mod,
        ast.Pow: operator.pow, ast.LShift: operator.lshift, ast.RShift: operator.rshift,
        ast.BitAnd: operator.and_, ast.BitOr: operator.or_, ast.BitXor: operator.xor}


def no_source(pyfunc, tag="test"):
    """pyfunc's twin whose source inspect cannot find."""
    code = pyfunc.__code__.replace(co_filename=f"<no source: {tag}>")
    f = types.FunctionType(code, pyfunc.__globals__, pyfunc.__name__, pyfunc.__defaults__,
                           pyfunc.__closure__)
    f.__kwdefaults__ = pyfunc.__kwdefaults__
    f.__qualname__ = pyfunc.__qualname__
    return f


def function_defs(tree):
    """{(name, first line): FunctionDef} of a module tree (first line: the
    first decorator's, as the code's co_firstlineno)."""
    out = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef):
            first = node.decorator_list[0].lineno if node.decorator_list else node.lineno
            out[(node.name, first)] = node
    return out


def code_objects(code):
    """The function code objects in a module's code (nested too)."""
    for c in code.co_consts:
        if isinstance(c, types.CodeType):
            if not c.co_name.startswith("<"):
                yield c
            yield from code_objects(c)


def _too_large(op, a, b):
    """Whether an int ** or << of these operands would pass 128 bits (CPython's
    folding limit), told without computing it (7 ** (2**64 - 1) never ends)."""
    if type(a) is not int or type(b) is not int or b <= 0:
        return False
    if isinstance(op, ast.Pow):
        return a not in (0, 1, -1) and a.bit_length() * b > 128
    if isinstance(op, ast.LShift):
        return a != 0 and a.bit_length() + b > 128
    return False


class _Fold(ast.NodeTransformer):
    """CPython's constant folding (as far as kernels meet it), and and/or
    flattened."""

    def visit_UnaryOp(self, node):
        self.generic_visit(node)
        v = node.operand
        if isinstance(v, ast.Constant) and type(v.value) in (int, float, complex):
            if isinstance(node.op, ast.USub):
                return ast.Constant(value=-v.value)
            if isinstance(node.op, ast.UAdd):
                return ast.Constant(value=+v.value)
            if isinstance(node.op, ast.Invert) and type(v.value) is int:
                return ast.Constant(value=~v.value)
        return node

    def visit_BinOp(self, node):
        self.generic_visit(node)
        a, b = node.left, node.right
        if isinstance(a, ast.Constant) and isinstance(b, ast.Constant) and type(node.op) in _BIN:
            if _too_large(node.op, a.value, b.value):
                return node     # CPython checks the size before it computes, too
            try:
                v = _BIN[type(node.op)](a.value, b.value)
            except Exception:  # noqa: BLE001 - left for run time, as CPython does
                return node
            if isinstance(v, int) and v.bit_length() > 128:
                return node
            return ast.Constant(value=v)
        return node

    def visit_BoolOp(self, node):
        self.generic_visit(node)
        values = []
        for v in node.values:
            values.extend(v.values if isinstance(v, ast.BoolOp) and type(v.op) is type(node.op)
                          else [v])
        node.values = values
        return node


def _nots_out(e):
    """A test with its negations pushed outward (De Morgan): `not a or not b`
    and `not (a and b)` compile to the same jumps."""
    if isinstance(e, ast.BoolOp):
        vals = [_nots_out(v) for v in e.values]
        if all(isinstance(v, ast.UnaryOp) and isinstance(v.op, ast.Not) for v in vals):
            other = ast.Or() if isinstance(e.op, ast.And) else ast.And()
            return ast.UnaryOp(op=ast.Not(), operand=ast.BoolOp(op=other,
                                                                 values=[v.operand for v in vals]))
        return ast.BoolOp(op=e.op, values=vals)
    if isinstance(e, ast.UnaryOp) and isinstance(e.op, ast.Not):
        inner = _nots_out(e.operand)
        if isinstance(inner, ast.UnaryOp) and isinstance(inner.op, ast.Not):
            return inner.operand
        return ast.UnaryOp(op=ast.Not(), operand=inner)
    return e


_TERMINAL = (ast.Return, ast.Raise, ast.Break, ast.Continue)


class _Forms(ast.NodeTransformer):
    """The forms that compile alike, as one: tests with nots outward, and
    `if c: ...return` + rest as `if c: ...return` `else: rest`."""

    def _body(self, stmts):
        out = []
        for k, s in enumerate(stmts):
            if isinstance(s, ast.If) and not s.orelse and s.body \
                    and isinstance(s.body[-1], _TERMINAL) and k + 1 < len(stmts):
                s.orelse = self._body(stmts[k + 1:])
                out.append(s)
                return out
            out.append(s)
        return out

    def generic_visit(self, node):
        super().generic_visit(node)
        for field in ("body", "orelse"):
            v = getattr(node, field, None)
            if isinstance(v, list) and v and isinstance(v[0], ast.stmt):
                setattr(node, field, self._body(v))
        if isinstance(node, ast.If) and node.orelse and node.body \
                and isinstance(node.body[-1], _TERMINAL):
            pass
        if isinstance(node, (ast.If, ast.While, ast.IfExp, ast.Assert)):
            node.test = _nots_out(node.test)
        return node


def _strip(fd):
    fd = copy.deepcopy(fd)
    fd.decorator_list = []
    fd.returns = None
    for a in ast.walk(fd.args):
        if isinstance(a, ast.arg):
            a.annotation = None
    return fd


def exact(parsed, rebuilt):
    """Whether the trees are equal (but for decorators and annotations)."""
    return ast.dump(_strip(parsed)) == ast.dump(_strip(rebuilt))


def canonical(fd):
    return ast.dump(_Forms().visit(_Fold().visit(_strip(fd))))


def rebuild(code):
    """The FunctionDef rebuilt from code (BytecodeError when it cannot be)."""
    return _bytecode.rebuild_code(code)


def generated_sources(nprogs, nfuzz, seed=1):
    """(name, module text) of tests/support/progs.py programs and kernel fuzzer
    programs (tests/support/fuzz_kernel_gens.py) that compile."""
    import fuzz_kernel_gens as gens
    import progs

    for s in range(nprogs):
        yield f"<prog {s}>", progs.generate(s).source
    for p in range(nfuzz):
        r = gens.random_for(seed, p)
        try:
            gen, prog = gens.generate(r, None)
        except Exception:  # noqa: BLE001 - a generator that gives no module here
            continue
        if "module" in prog:
            yield f"<fuzz {gen} {seed}:{p}>", prog["module"]


def llvm_text(obj, sig):
    """obj's LLVM IR for sig, with what numbers each compiled loop in a
    process (nv.f.loop.N) and the name of the file made uniform."""
    text = obj.inspect_llvm(sig).replace("<no source: test>", "<file>")
    return re.sub(r"\.(loop|gufunc|ufunc|kernel)\.\d+", r".\1.N", text)
