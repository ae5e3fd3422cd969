"""The program generators of the kernel fuzzer (tests/support/fuzz_kernels.py).

A generator takes a ``random.Random`` and returns a program: a dict with

* ``module``: the text of a Python module that defines the kernel ``f``
  (and whatever it uses: globals, ``@numbavec.jit`` helpers);
* ``loops``: the type combinations to compile and call, each
  ``[argtypes, outtype]`` (outtype None: the signature's return type is left
  for numbavec to infer, ``'(float64, int8)'``);
* ``apis``: the decorators the program may be compiled with ("vectorize"
  with signatures, "lazy" without), or ``gu``: a gufunc program (layout,
  signatures, core dimension sizes);
* ``compare``: whether results are compared with ``py_func`` (False where
  the kernel language deliberately differs, DESIGN.md);
* ``valid``: the program is in the kernel language (a TypingError is then
  a failure too); ``accept``: exception types that are right answers too
  (with a message), beyond TypingError;
* optionally ``build``/``params`` (the program is ``BUILDERS[build](params)``,
  which lets the minimizer shrink numeric parameters such as a depth),
  ``timeout``, ``stack`` ("always": every configuration runs on a 512 KB
  thread stack), ``errors`` ("prog": a TypeError in the reference is not
  compared, as for tests/support/progs.py programs).

Generators write pathological programs on purpose (deep, long, undefined
names, odd globals, unsupported constructs); the oracle in fuzz_kernels.py
accepts a TypingError or a result equal to py_func's, nothing else.
"""
import ast
import random
import re

import progs

HEADER = "import math\nimport numpy as np\nimport numbavec\n"
INTS = ["int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64"]
SIGNED = INTS[:4]
UNSIGNED = INTS[4:]
FLOATS = ["float32", "float64"]
COMPLEX = ["complex64", "complex128"]
REAL = INTS + FLOATS
ALL = ["bool"] + REAL + COMPLEX


def indent(text, n=1):
    pad = "    " * n
    return "".join(pad + ln + "\n" if ln.strip() else "\n" for ln in text.splitlines())


def kernel(body, params=("x", "y"), prelude="", name="f"):
    """A module defining name(params) with body (statements, unindented)."""
    prelude = f"\n\n{prelude.strip()}\n" if prelude.strip() else ""
    return f"{HEADER}{prelude}\n\ndef {name}({', '.join(params)}):\n{indent(body)}"


def program(module, loops, apis=("vectorize", "lazy"), compare=True, **extra):
    out = {"module": module, "loops": [list(lp) for lp in loops], "apis": list(apis),
           "compare": compare}
    out.update(extra)
    return out


def same_types(r, nparams, pool, k=2, out=None):
    """k loops of nparams equal argument types drawn from pool."""
    types = r.sample(pool, min(k, len(pool)))
    return [[[t] * nparams, out] for t in types]


# ---------------------------------------------------------------- random programs

def gen_progs(r):
    """A program of tests/support/progs.py, as the differential test checks it."""
    p = progs.generate(r.randrange(1 << 30))
    return program(p.source, [[[t] * p.nparams, o] for t, o in zip(p.argtypes, p.out_types)],
                   ref_source=p.ref_source, errors="prog", ulps=8, valid=True)


# ---- AST mutations of random programs ----

PATHOLOGICAL_CONSTANTS = [0, 1, -1, 2, 7, 127, 128, 255, 256, 2 ** 31, 2 ** 32 + 1, 2 ** 63 - 1,
                          2 ** 63, 2 ** 64 - 1, 2 ** 64, -2 ** 63, 10 ** 20, 0.0, -0.0, 0.5,
                          1e308, 1e-320, 3.5, True, False, float("inf"), -float("inf")]
BINOPS = [ast.Add, ast.Sub, ast.Mult, ast.Div, ast.FloorDiv, ast.Mod, ast.Pow, ast.LShift,
          ast.RShift, ast.BitAnd, ast.BitOr, ast.BitXor]
CMPOPS = [ast.Lt, ast.LtE, ast.Gt, ast.GtE, ast.Eq, ast.NotEq]


class _Mutator:
    """One random AST mutation of a kernel module (the def named f)."""

    def __init__(self, r, tree):
        self.r = r
        self.tree = tree
        self.fdef = next(n for n in tree.body if isinstance(n, ast.FunctionDef))
        self.params = [a.arg for a in self.fdef.args.args]

    def bodies(self):
        """Every statement list in the kernel (with its owner)."""
        out = []
        for node in ast.walk(self.fdef):
            for field in ("body", "orelse"):
                lst = getattr(node, field, None)
                if isinstance(lst, list) and lst and isinstance(lst[0], ast.stmt):
                    out.append(lst)
        return out

    def exprs(self):
        return [n for n in ast.walk(self.fdef) if isinstance(n, ast.expr)
                and not isinstance(n, (ast.Name, ast.Constant)) or isinstance(n, ast.Name)
                and isinstance(n.ctx, ast.Load)]

    def names(self):
        names = {n.id for n in ast.walk(self.fdef) if isinstance(n, ast.Name)}
        return sorted(names - {"math", "np", "range", "min", "max", "abs", "float", "int"})

    def replace_expr(self, old, new):
        for node in ast.walk(self.fdef):
            for field, value in ast.iter_fields(node):
                if value is old:
                    setattr(node, field, new)
                    return True
                if isinstance(value, list):
                    for i, v in enumerate(value):
                        if v is old:
                            value[i] = new
                            return True
        return False

    def parse_expr(self, text):
        return ast.parse(text, mode="eval").body

    def parse_stmts(self, text):
        return ast.parse(text).body

    # the mutations; each returns a short description, or None when it did not apply
    def m_delete_stmt(self):
        body = self.r.choice(self.bodies())
        del body[self.r.randrange(len(body))]
        if not body:
            body.append(ast.Pass())
        return "delete a statement"

    def m_duplicate_stmt(self):
        body = self.r.choice(self.bodies())
        i = self.r.randrange(len(body))
        body.insert(i, ast.parse(ast.unparse(body[i])).body[0])
        return "duplicate a statement"

    def m_swap_stmts(self):
        body = self.r.choice(self.bodies())
        if len(body) < 2:
            return None
        i = self.r.randrange(len(body) - 1)
        body[i], body[i + 1] = body[i + 1], body[i]
        return "swap two statements"

    def m_operator(self):
        nodes = [n for n in ast.walk(self.fdef) if isinstance(n, (ast.BinOp, ast.AugAssign,
                                                                    ast.Compare))]
        if not nodes:
            return None
        n = self.r.choice(nodes)
        if isinstance(n, ast.Compare):
            n.ops[self.r.randrange(len(n.ops))] = self.r.choice(CMPOPS)()
        else:
            n.op = self.r.choice(BINOPS)()
        return "change an operator"

    def m_constant(self):
        nodes = [n for n in ast.walk(self.fdef) if isinstance(n, ast.Constant)]
        if not nodes:
            return None
        self.r.choice(nodes).value = self.r.choice(PATHOLOGICAL_CONSTANTS)
        return "replace a constant"

    def m_name(self):
        loads = [n for n in ast.walk(self.fdef) if isinstance(n, ast.Name)
                 and isinstance(n.ctx, ast.Load) and n.id not in ("math", "np")]
        if not loads:
            return None
        self.r.choice(loads).id = self.r.choice(self.names() + ["q", "acc"])
        return "replace a name"

    def m_wrap_expr(self):
        exprs = [e for e in self.exprs() if not isinstance(e, ast.Starred)]
        if not exprs:
            return None
        e = self.r.choice(exprs)
        text = ast.unparse(e)
        form = self.r.choice(["-(-({}))", "+({})", "(({}) if True else ({}))", "({}).real",
                              "({}).imag", "({}).conjugate()", "abs({})", "(({}),)[0]",
                              "(({}), 0)[0]", "min(({}), ({}))", "(not ({}))", "~({})",
                              "({}) * 1", "({}) ** 1", "({}) // 1", "float({})", "int({})",
                              "np.float32({})", "bool({})", "({}) + 0j"])
        self.replace_expr(e, self.parse_expr(form.format(text, text)))
        return "wrap an expression"

    def m_insert_stmt(self):
        body = self.r.choice(self.bodies())
        p = self.r.choice(self.params)
        v = self.r.choice(self.names() or [p])
        stmt = self.r.choice([
            f"acc += {p}", f"{v} = {v}", f"{v} += 0", "pass", f"del {v}",
            f"{p} = {v}", f"if {p} > 0:\n    acc = {v}", f"{v} = q.real",
            f"for {p} in range(2):\n    pass", f"{v}: float = {p}", f"{v} = ({v}, {p})[0]",
            f"{v} **= 2", f"{v} = -{v}", f"while False:\n    {v} = q",
            f"if {v} != {v}:\n    return {p}", "return", f"return {v}, {p}",
        ])
        body.insert(self.r.randrange(len(body) + 1), *self.parse_stmts(stmt)[:1])
        return "insert a statement"

    def m_wrap_stmt(self):
        body = self.r.choice(self.bodies())
        i = self.r.randrange(len(body))
        form = self.r.choice(["if True:\n{}", "for _w in range(1):\n{}",
                              "if {p} == {p}:\n{}\nelse:\n    pass"])
        inner = indent(ast.unparse(body[i]))
        text = form.replace("{p}", self.params[0]).format(inner.rstrip("\n"))
        body[i:i + 1] = self.parse_stmts(text)
        return "wrap a statement"

    def m_augassign(self):
        nodes = [n for n in ast.walk(self.fdef) if isinstance(n, ast.AugAssign)]
        assigns = [n for n in ast.walk(self.fdef) if isinstance(n, ast.Assign)
                   and isinstance(n.targets[0], ast.Name)]
        if nodes and self.r.random() < 0.5:
            n = self.r.choice(nodes)
            self.replace_stmt(n, ast.Assign(targets=[n.target], value=n.value, lineno=1))
            return "augmented assignment to assignment"
        if not assigns:
            return None
        n = self.r.choice(assigns)
        self.replace_stmt(n, ast.AugAssign(target=n.targets[0], op=self.r.choice(BINOPS)(),
                                           value=n.value))
        return "assignment to augmented assignment"

    def replace_stmt(self, old, new):
        for body in self.bodies():
            for i, s in enumerate(body):
                if s is old:
                    body[i] = new
                    return

    def mutate(self, n):
        done = []
        ops = [m for m in dir(self) if m.startswith("m_")]
        while len(done) < n:
            what = getattr(self, self.r.choice(ops))()
            if what:
                done.append(what)
        return done


def _counter_starts_small(tree, name):
    """Whether every plain assignment to a while loop's counter is a small
    constant (a replaced constant, k1 = -2**63, would count 2**63 times)."""
    for node in ast.walk(tree):
        if isinstance(node, ast.Assign) and any(
                isinstance(t, ast.Name) and t.id == name for t in node.targets):
            v = node.value
            if isinstance(v, ast.UnaryOp) and isinstance(v.op, ast.USub):
                v = v.operand
            if not (isinstance(v, ast.Constant) and type(v.value) is int
                    and abs(v.value) <= 64):
                return False
    return True


def _loops_bounded(tree):
    """Whether every loop still ends: progs.py's loops are range()s of small
    constants (or min(param, k)) and `while cond and kN < n:` with `kN += 1`
    first; a mutation that breaks that may make the kernel, and py_func,
    loop for ever, which is no fault."""
    for node in ast.walk(tree):
        if isinstance(node, ast.While):
            t = node.test
            first = node.body[0] if node.body else None
            if not (isinstance(t, ast.BoolOp) and isinstance(t.op, ast.And)
                    and isinstance(t.values[-1], ast.Compare)
                    and isinstance(t.values[-1].left, ast.Name)
                    and [type(o) for o in t.values[-1].ops] == [ast.Lt]
                    and isinstance(t.values[-1].comparators[0], ast.Constant)
                    and abs(t.values[-1].comparators[0].value) <= 64
                    and isinstance(first, ast.AugAssign) and isinstance(first.op, ast.Add)
                    and isinstance(first.target, ast.Name)
                    and first.target.id == t.values[-1].left.id
                    and isinstance(first.value, ast.Constant) and type(first.value.value) is int
                    and first.value.value == 1):
                return False
            if not _counter_starts_small(tree, first.target.id):
                return False
        if isinstance(node, ast.For):
            for c in ast.walk(node.iter):
                if isinstance(c, ast.Constant) and isinstance(c.value, (int, float)) \
                        and abs(c.value) > 64:
                    return False
                if isinstance(c, ast.Name) and c.id not in ("range", "min") and not any(
                        isinstance(m, ast.Call) and getattr(m.func, "id", "") == "min"
                        for m in ast.walk(node.iter)):
                    if not any(isinstance(b, ast.BinOp) and isinstance(b.op, ast.BitAnd)
                               for b in ast.walk(node.iter)):
                        return False
    return True


def gen_mutant(r):
    """A random program with 1-3 AST mutations (tests/support/progs.py programs are
    valid and typed consistently; the mutations make them unusual, invalid
    or undefined; loops keep their bounds)."""
    p = progs.generate(r.randrange(1 << 30))
    for _ in range(5):
        tree = ast.parse(p.source)
        what = _Mutator(r, tree).mutate(r.choice([1, 1, 2, 3]))
        ast.fix_missing_locations(tree)
        try:
            text = ast.unparse(tree)
        except Exception:       # an AST that cannot be printed
            continue
        if _loops_bounded(ast.parse(text)):
            break
    else:
        return gen_progs(r)
    module = f"# mutations: {'; '.join(what)}\n{text}\n"
    return program(module, [[[t] * p.nparams, o] for t, o in zip(p.argtypes, p.out_types)],
                   errors="prog", ulps=8, ints_via_float=True)


# ---------------------------------------------------------------- unsupported constructs

UNSUPPORTED = [
    "l = [x, y]", "d = {x: y}", "s = {x, y}", "t = 'abc'", "t = f'{x}'", "t = b'ab'",
    "g = lambda z: z", "def h(z):\n    return z", "class C:\n    pass",
    "try:\n    r = x\nexcept Exception:\n    r = y", "with x:\n    pass", "raise ValueError",
    "assert x > y", "del r\nr = 1.0", "global G\nG = 1", "r = [i for i in range(3)][0]",
    "r = sum(i for i in range(3))", "r = (s := y)", "r, *s = (x, y, x)", "r = x[0]",
    "r = x[0:1]", "r = x.shape", "r = x @ y", "r = x is y", "r = x in (y,)",
    "r = x is not None", "print(x)", "r = len(x)", "r = range(3)", "r = int('3')",
    "r = float(x, y)", "r = abs()", "r = min(x)", "r = max()", "r = math.sqrt()",
    "r = math.sqrt(x, y)", "r = math.nope(x)", "r = np.nope(x)", "r = np.float32(x, y)",
    "r = x()", "r = y(x)", "r = r.conjugate()", "r = r.real", "r = r.imag",
    "r = complex(x, y).real", "r = x.__class__", "r = type(x)", "r = isinstance(x, float)",
    "r = round(x, 2)", "r = divmod(x, y)[0]", "r = pow(x, y)", "r = pow(x, y, 3)",
    "r = hash(x)", "r = sum((x, y))", "r = any((x, y))", "r = sorted((x, y))[0]",
    "r = (x, y)[x > y]", "r = (x, y)[0:1][0]", "r = (x, y)[-1]", "r = (x, y)[2]",
    "r = (x, y)[-3]", "a, b = x", "a, b = x, y, x", "a, b, c = x, y", "r = x if True else q",
    "while False:\n    r = q", "for i in range(0):\n    r = q", "r = x ** y ** x",
    "r = -x ** 2", "r = not x", "r = x < y < x < y", "r = x if x > y else None", "return",
    "return None", "return (x, y)", "return x, y", "pass", "...", "x", "x + y", "'doc'",
    "r = ...", "r = None", "r = True + x", "r = 1j * x", "r = x.real + 0j",
    "match x:\n    case 1:\n        r = y\n    case _:\n        r = x", "r = __import__('os')",
    "r = globals()", "r = x.__add__(y)", "r = numbavec.float32(x)",
    "r = np.float32(x) + np.float16(y)", "r = np.int8(300)", "r = np.uint8(-1)",
    "for i in range(3, 0, 0):\n    r += 1", "for i in range(min(x, 5)):\n    r += 1",
    "for i in (1, 2, 3):\n    r += i", "for i, j in ((1, 2),):\n    r += i",
    "for i in range(2):\n    pass\nelse:\n    r += 1", "while r < 0:\n    break\nelse:\n    r += 1",
    "r += q", "r = r if r else q", "import math as m", "from math import sqrt",
    "r = math.pi.real", "math.pi = 3", "x.y = 3", "r[0] = 1", "r += 1j", "(r, s) = (x, y)",
    "[r, s] = (x, y)", "r = s = x", "r: float = x", "r: int", "r = ~x", "r = x << 1",
    "r = x & y", "r = x // 0", "r = x % 0.0", "r = 0 // 0", "r = 10 ** -1", "r = 0 ** -1",
    "r = 2 ** 0.5", "r = (-8) ** (1 / 3)", "r = x.real.real.imag", "r = (x).conjugate().real",
    "r = math.inf - math.inf", "r = math.nan", "r = np.nan", "r = np.inf * 0",
    "r = math.e ** x", "r = np.float64(x).item()", "r = x.item()", "r = x.astype(np.float32)",
    "r = np.array(x)", "r = np.zeros(3)[0]", "r = np.sum(x)", "r = r.__neg__()",
    "r = +r", "r = -r", "r = --r", "r = r if r == r else -r", "nonexistent_function(x)",
    "r = max(x, y, key=abs)", "r = min(*(x, y))", "r = min(x, y, default=0)",
    "r = int(x, 2)", "r = float()", "r = int()", "r = bool()", "r = complex()",
    "r = x if x else (y if y else r)", "r = (lambda: x)()", "r = [x][0]", "r = {x: y}[x]",
    "r = x.__int__()", "r = np.int64(x) << np.int64(64)", "r = np.int8(x) >> -1",
]


def gen_unsupported(r):
    """A simple kernel with one statement that is unsupported, unusual or
    wrong inserted before its return."""
    snippet = r.choice(UNSUPPORTED)
    # r keeps one type: a variable assigned several types has their promoted
    # type in a kernel (DESIGN.md), not the last one assigned as in Python
    assigns_r = snippet.startswith("r = ") and not re.search(r"\br\b", snippet[4:])
    body = f"{snippet}\nreturn r" if assigns_r else f"r = x + y\n{snippet}\nreturn r"
    t = r.choice(ALL + FLOATS * 3)
    return program(kernel(body), [[[t, t], None], [[t, t], "float64"]])


# ---------------------------------------------------------------- undefined names

UNDEFINED = [
    "if x > 0:\n    acc = 1.0\nacc += y\nreturn acc",
    "return q.real",
    "return q",
    "if x > 0:\n    q = x\nreturn q.real",
    "for i in range(3):\n    pass\nreturn i",
    "for i in range(0):\n    pass\nreturn i",
    "while x > 0:\n    acc = x\n    break\nreturn acc",
    "acc = acc + 1\nreturn acc",
    "if x > 0:\n    return x\nreturn acc",
    "acc += 1\nreturn x",
    "del x\nreturn y",
    "x = y\ndel y\nreturn x",
    "if x > y:\n    r = x\nelse:\n    pass\nreturn r.imag",
    "r = r\nreturn x",
    "return x.real.imag.real",
    "return (q, x)[1]",
    "return y if x > 0 else q",
    "return x if True else q",
    "return min(x, q)",
    "return math.sqrt(q)",
    "return q(x)",
    "return q.r.s",
    "return x.q",
    "return x.real.q",
    "return f(x, y)",
    "if x > 0:\n    acc = 1.0\nelse:\n    acc = 2\nreturn acc",
    "for i in range(3):\n    if i == 2:\n        acc = i\nreturn acc",
    "if x > 0:\n    acc = 1\nif x > 0:\n    return acc\nreturn x",
    "if x > 0:\n    acc = x\nacc -= y\nreturn acc",
    "if x > 0:\n    acc = x\nacc *= y\nreturn acc",
    "if x > 0:\n    acc = x\nacc **= y\nreturn acc",
    "if x > 0:\n    acc = x\nacc //= y\nreturn acc",
    "if x > 0:\n    acc = x\nacc = acc.real\nreturn acc",
    "if x > 0:\n    acc = x\nreturn -acc",
    "if x > 0:\n    acc = x\nreturn abs(acc)",
    "if x > 0:\n    acc = x\nreturn (acc, y)[0]",
    # bound after the loop unless it ran no iteration (UnboundLocalError then, issue 36);
    # k bounds the loop: x may be -2**63 or -inf
    "k = 0\nwhile x < 0 and k < 3:\n    t = x\n    x = x + 1\n    k += 1\nreturn t",
    "for i in range(int(y) % 3):\n    t = i\nreturn t",
    "k = 0\nwhile k < 2:\n    k += 1\n    if k == 2:\n        t = x\nreturn t",
    "if x > 0:\n    pass\nelse:\n    t = y\nt += x\nreturn t",
    "return q.real + q.imag",
    "t = q.real\nreturn t",
    "q.real = x\nreturn x",
    "if x != x:\n    z = x\nreturn z.conjugate()",
    "abs = x\nreturn abs(y)",
    "min = 3\nreturn min + x",
    "range = x\nreturn range",
    "math = x\nreturn math * 2",
    "np = 2\nreturn x + np",
    "numbavec = x\nreturn numbavec",
    "float = int\nreturn float(x)",
    "x, y = y, x\nreturn x",
]

SHADOW_PARAMS = [("abs", "min"), ("math", "np"), ("f", "x"), ("range", "int"),
                 ("numbavec", "float"), ("q", "acc")]


def gen_undefined(r):
    """Undefined, maybe-unassigned, deleted and shadowed names."""
    t = r.choice(FLOATS * 3 + REAL + COMPLEX)
    if r.random() < 0.15:
        a, b = r.choice(SHADOW_PARAMS)
        body = r.choice([f"return {a} + {b}", f"return {a} * 2", f"{a} = {b}\nreturn {a}",
                         f"return abs({a}) + {b}" if a != "abs" else f"return {a}"])
        return program(kernel(body, (a, b)), [[[t, t], None]])
    return program(kernel(r.choice(UNDEFINED)), [[[t, t], None], [[t, t], t]])


# ---------------------------------------------------------------- reassigned parameters

REASSIGN = [  # (body, valid): each binding of a parameter is a variable of its own, or,
    # where it meets the argument, a local copied from it that promotes (issue 36, as Numba
    # unifies there), so every one that compiles is compared with py_func; "valid" ones
    # must compile
    ("x = 1.0\nreturn x + y", True),
    ("x = x * 2\nreturn x", True),
    ("for x in range(3):\n    y = y + x\nreturn y", True),
    ("x += 1\nreturn x", True),
    ("x, y = y, x\nreturn x - y", True),
    ("x = y = x + y\nreturn x * y", True),
    ("if x > 0:\n    x = -x\nreturn x", True),
    ("k = 0\nwhile x > 1 and k < 60:\n    x = x / 2\n    k += 1\nreturn x", True),
    ("x = 0.5\nreturn x", True),
    ("x = (x, y)\nreturn y", True),
    ("x = None\nreturn y", False),
    ("x = x.real\nreturn x", True),
    ("for y in range(2):\n    x = x + y\nreturn x", True),
    ("y = x if x > y else y\nx = y\nreturn x", True),
    ("x = f\nreturn y", False),
    ("x = math\nreturn y", False),
    ("for x in range(int(y) % 3):\n    pass\nreturn x", False),  # UnboundLocalError at 0
    ("x = x // 2\nx = x * 0.5\nreturn x", True),
]

GU_REASSIGN = [  # (body of g(a, out) for '(n)->()', void(T[:], T[:]), valid): an array
    # argument bound again is a variable of its own (issue 36); "valid" ones must compile
    ("a = 1.0\nout[0] = a", True),
    ("for a in range(3):\n    out[0] = a", True),
    ("a = a[0]\nout[0] = a", True),
    ("s = 0.0\nfor i in range(len(a)):\n    s += a[i]\na = s\nout[0] = a", True),
    ("out = a\nout[0] = 5.0", True),
    ("a, out = out, a\nout[0] = 1.0", True),
    ("t = a\nt[0] = 2.0\nout[0] = a[0]", True),
    ("a = out\na[0] = 3.0", True),
    ("out[0] = 1.0\nout = 2.0", True),
    ("a += 1.0\nout[0] = a[0]", False),  # NumPy refuses it on int arrays
    ("a[:] = 0.0\nout[0] = a[0]", True),
    ("out[:] = a[0]", True),
    ("del a\nout[0] = 1.0", False),
    ("a = None\nout[0] = 1.0", False),
    ("if len(a) > 2:\n    a = out\nout[0] = a[0]", True),
    ("while len(a) > 100:\n    a = 1.0\nout[0] = a[0]", False),
    ("a = a\nout[0] = a[-1]", True),
    ("out[0] = a[0]\nfor out in range(2):\n    pass", True),
    ("for x in a:\n    pass\nout[0] = x", True),  # UnboundLocalError where n is 0
    ("for i in range(len(a)):\n    pass\nout[0] = a[i]", True),
    ("a = a * 2.0\nout[0] = a.sum()", True),
    ("out = out[::-1]\nout[0] = a[0]", True),
]


def gen_reassign(r):
    """Parameters assigned in the kernel: scalars, and gufunc array parameters."""
    if r.random() < 0.5:
        body, valid = r.choice(REASSIGN)
        t = r.choice(FLOATS * 2 + REAL)
        return program(kernel(body), [[[t, t], None], [[t, t], "float64"]], valid=valid)
    t = r.choice(FLOATS + ["int64", "int32"])
    body, valid = r.choice(GU_REASSIGN)
    return gu_program(kernel(body, ("a", "out")), "(n)->()",
                      [f"void({t}[:], {t}[:])"], {"n": r.choice([0, 1, 3, 5])}, valid=valid)


def gu_program(module, layout, sigs, dims, compare=True, **extra):
    """A gufunc program; dims: the sizes of the core dimensions by name."""
    return program(module, [], apis=("guvectorize",), compare=compare,
                   gu={"layout": layout, "sigs": list(sigs), "dims": dims}, **extra)


# ---------------------------------------------------------------- huge literals

LITERAL_EXPRS = [
    "x / 10**20", "x * 10**20", "x + 2**64", "x - 2**63", "x + (2**64 - 2**64)",
    "x * (10**20 // 10**19)", "(x, y)[4294967297]", "(x, y)[-4294967297]", "(x, y)[2**63]",
    "(x, y)[2**64 + 1]", "(x, y)[True]", "(x, y)[1.0]", "x ** 10**20", "x ** -10**20",
    "x % 10**30", "x // 2**70", "x * 1e309", "x + 1e-400", "x * -0.0",
    "x + 0x7fffffffffffffff", "x + 0xffffffffffffffff", "x + -0x8000000000000000",
    "x < 2**64", "x > -2**64", "x == 2**53 + 1", "x != 10**30", "min(x, 10**20)",
    "max(x, -10**20)", "abs(-2**63) + x", "round(x, 10**20)", "round(x, -10**20)",
    "math.ldexp(x, 10**10)", "math.ldexp(x, -2**63)", "x + 10**20 - 10**20",
    "x * (1 << 100)", "x + (1 << 63)", "x + ((1 << 64) - 1)", "x + (-1 >> 100)",
    "x + (2**64 >> 60)", "x + (10**20 % 7)", "x + (-10**20) // 3", "x + (2**63 * 2) // 2**63",
    "x + 9223372036854775807 + 1", "x + 1e308 + 1e308", "x * (2**64 * 0)", "x + 2**-1074",
    "x + 10**-400", "x + (3 ** 40) % 1000", "x + (7 ** 23) // 7 ** 22", "x + (-2) ** 63",
    "x + (-2) ** 64 // 2**62", "x + 2**62 * 4 // 8", "x + (1 << 62) * 4 // 8",
    "x + abs(-2**64) // 2**62", "x + (2**63 - 1) + 1 - 2**63", "x * 10**20 / 10**20",
    "y + (x > 2**63)", "y + (x < -2**63 - 1)", "x == 18446744073709551615",
    "x > -1", "x >= -1", "x < -1", "x == -1", "x != -1", "max(x, -1)", "min(x, -1)",
    "x < 255", "x > 256", "x == 128", "x + 1e20 * 1e20 * 1e20", "(x, y, x)[3 - 2**64]",
]


def gen_literals(r):
    """Huge, tiny and out-of-range literals, and constant expressions over them."""
    expr = r.choice(LITERAL_EXPRS)
    t = r.choice(REAL + FLOATS * 3)
    loops = [[[t, t], None]]
    if not expr.startswith(("min(", "max(")):
        # min/max have one static (promoted) type in a kernel, Python's is the
        # winner's (DESIGN): compared in the promoted type only
        loops.append([[t, t], "float64"])
    return program(kernel(f"return {expr}"), loops)


# ---------------------------------------------------------------- deep nesting

def build_deep(p):
    """A kernel nested p['depth'] deep in the form p['form']; its reference,
    when not py_func itself, is an equivalent loop (ref_module)."""
    n, form = p["depth"], p["form"]
    ref = None
    if form == "neg":
        body = "return " + "-" * n + "x"
    elif form == "invert":
        body = "return " + "~" * n + "x"
    elif form == "not":
        body = "return " + "not " * n + "x"
    elif form == "add":
        body = "return x" + " + x" * n
        ref = kernel(f"s = x\nfor _ in range({n}):\n    s = s + x\nreturn s")
    elif form == "parens":
        body = "return " + "(" * n + "x" + ")" * n
    elif form == "abs":
        body = "return " + "abs(" * n + "x" + ")" * n
    elif form == "minmax":
        body = "return " + "min(y, " * n + "x" + ")" * n
    elif form == "ifexp":
        body = "return " + " ".join(f"{k} if x > {k} else" for k in range(n, 0, -1)) + " -1"
    elif form == "tuple":
        body = "return " + "(" * n + "x" + ",)" * n + "[0]" * n
    elif form == "pow1":
        body = "return x" + " ** 1" * n
    elif form == "if":
        body = "r = x\n" + "".join("    " * k + f"if y > {-k}:\n" for k in range(n)) \
            + "    " * n + "r = r + y\nreturn r"
    elif form == "for":
        body = "r = x\n" + "".join("    " * k + f"for i{k} in range(1):\n" for k in range(n)) \
            + "    " * n + "r = r + y\nreturn r"
    elif form == "while":
        body = "r = x\n" + "".join("    " * k + f"k{k} = 0\n" + "    " * k
                                   + f"while k{k} < 1:\n" + "    " * (k + 1) + f"k{k} += 1\n"
                                   for k in range(n)) + "    " * n + "r = r + y\nreturn r"
    elif form == "elif":
        body = "if x == 0:\n    r = 0\n" + "".join(f"elif x == {k}:\n    r = {k}\n"
                                                   for k in range(1, n))
        body += "else:\n    r = -1\nreturn r"
    else:
        raise ValueError(form)
    return kernel(body), ref


DEEP_FORMS = {  # form: (largest depth Python parses, argument types)
    "neg": (2000, REAL), "invert": (2000, INTS), "not": (2000, REAL), "add": (2000, REAL),
    "parens": (199, REAL), "abs": (199, REAL), "minmax": (199, REAL), "ifexp": (1500, REAL),
    "tuple": (66, REAL), "pow1": (2000, FLOATS + INTS), "if": (98, REAL), "for": (98, REAL),
    "while": (49, REAL), "elif": (2000, INTS),
}


def gen_deep(r):
    """Deep nesting: unary chains, parentheses, calls, conditional
    expressions, nested statements, elif chains (run on a 512 KB stack too)."""
    form = r.choice(sorted(DEEP_FORMS))
    top, types = DEEP_FORMS[form]
    depth = r.choice([top, top, top // 2, r.randint(10, top)])
    return deep_program(r, form, depth, types)


def deep_program(r, form, depth, types):
    params = {"form": form, "depth": depth}
    module, ref = build_deep(params)
    t = r.choice(types)
    out = program(module, [[[t, t], None]], build="deep", params=params,
                  stack="sometimes", timeout=30, valid=True)
    if ref:
        out["ref_module"] = ref
    return out


# ---------------------------------------------------------------- long chains

def build_chain(p):
    n, form = p["length"], p["form"]
    ref = None
    if form == "pow_int":     # x ** (2 ** (2 ** ...)): compiled, not compared
        body = "return x" + " ** 2" * n
    elif form == "pow_int_left":
        body = "return " + "(" * n + "x" + " ** 2)" * n
    elif form == "pow_float":
        body = "return x" + " ** 1.0" * n
    elif form == "statements":
        body = "r = x\n" + "r = r + y\n" * n + "return r"
        ref = kernel(f"r = x\nfor _ in range({n}):\n    r = r + y\nreturn r")
    elif form == "backward":
        # v{k} is assigned from v{k+1}: each pass of type inference learns one more
        names = [f"v{k}" for k in range(n + 1)]
        body = f"{names[n]} = x\n" + "".join(f"{names[k]} = {names[k + 1]}\n"
                                             for k in range(n - 1, -1, -1))
        loop = "".join(f"    {names[k]} = {names[k + 1]} + y\n" for k in range(n))
        body = f"for k in range(2):\n    {names[n]} = x\n" + loop \
            + "    " + names[n] + " = " + names[0] + "\nreturn " + names[n]
        body = f"{names[n]} = x\n" + "".join(f"{names[k]} = x\n" for k in range(n)) + body
    elif form == "backward_types":
        # the widest type flows backwards, one assignment per loop iteration
        body = "".join(f"v{k} = x\n" for k in range(n + 1))
        body += "for k in range(3):\n" + "".join(f"    v{k} = v{k + 1}\n" for k in range(n))
        body += f"    v{n} = y\nreturn v0"
    elif form == "forward":
        body = "v0 = x\n" + "".join(f"v{k + 1} = v{k} + y\n" for k in range(n)) + f"return v{n}"
    elif form == "and":
        body = "return " + " and ".join(f"x > {-k}" for k in range(n))
    elif form == "or":
        body = "return " + " or ".join(f"x == {k}" for k in range(n))
    elif form == "compare":
        body = "return " + " < ".join(["x"] + [f"y + {k}" for k in range(n)])
    elif form == "names":
        body = "".join(f"a{k} = x + {k}\n" for k in range(n)) + "return " + \
            " + ".join(f"a{k}" for k in range(0, n, max(1, n // 50)))
    elif form == "longname":
        name = "v" * n
        body = f"{name} = x + y\nreturn {name} * 2"
    elif form == "tuple":
        body = "t = (" + ", ".join(f"x + {k}" for k in range(n)) + ",)\nreturn t[" + \
            str(n - 1) + "] + t[0]"
    elif form == "params":
        ps = [f"p{k}" for k in range(n)]
        return kernel("return " + " + ".join(ps), ps), None
    else:
        raise ValueError(form)
    return kernel(body), ref


CHAIN_FORMS = {  # form: (lengths, argument types)
    "pow_int": ([4, 8, 16, 32], INTS), "pow_int_left": ([4, 16, 64, 150], INTS),
    "pow_float": ([8, 64, 512], FLOATS),
    "statements": ([1000, 10000, 100000], FLOATS + INTS), "backward": ([10, 40, 70, 200], REAL),
    "backward_types": ([10, 40, 70, 200], REAL), "forward": ([1000, 5000], REAL),
    "and": ([100, 2000], REAL), "or": ([100, 2000], INTS), "compare": ([50, 1000], REAL),
    "names": ([1000, 10000], FLOATS), "longname": ([1000, 100000], REAL),
    "tuple": ([100, 2000], FLOATS), "params": ([16, 31, 32, 33, 63, 64, 65, 200], FLOATS),
}


def gen_chains(r):
    """Long chains: ** chains, 100,000-statement bodies, backward and forward
    chains of assignments, long and/or/comparison chains, many names,
    parameters, tuple elements."""
    form = r.choice(sorted(CHAIN_FORMS))
    lengths, types = CHAIN_FORMS[form]
    params = {"form": form, "length": r.choice(lengths)}
    module, ref = build_chain(params)
    t = r.choice(types)
    if form == "params":
        loops = [[[t] * params["length"], None]]
    elif form == "backward_types":
        t2 = r.choice(REAL)
        loops = [[[t, t2], None]]
    else:
        loops = [[[t, t], None]]
    # valid, but for more operands than numbavec's ufuncs take (32): a
    # TypeError or ValueError saying so is right there
    valid = form != "params" or params["length"] <= 32
    out = program(module, loops, build="chain", params=params, timeout=30, valid=valid,
                  compare=form != "pow_int")
    if not valid:
        out["accept"] = ["TypeError", "ValueError"]
    if ref:
        out["ref_module"] = ref
    return out


# ---------------------------------------------------------------- odd globals

ODD_GLOBALS = [
    "np.True_", "np.False_", "True", "None", "'str'", "b'bytes'", "np.array(3.0)",
    "np.ones(3)", "[1, 2]", "(1, 2)", "(1.5, np.float32(2))", "((1, 2), (3, 4))", "{1: 2}",
    "{1, 2}", "2**100", "-2**63", "2**64", "float('nan')", "float('inf')", "1e308", "3 + 4j",
    "np.float16(1.5)", "np.longdouble(1.5)", "np.int8(-3)", "np.uint64(2**64 - 1)",
    "np.datetime64('2020-01-01')", "np.timedelta64(3, 's')", "np.str_('a')",
    "np.bytes_(b'a')", "np.void(b'ab')", "Ellipsis", "NotImplemented", "math", "os",
    "numbavec", "np.add", "len", "lambda v: v", "RaisingProperty()", "RaisingFloat()",
    "RaisingGetattr()", "RaisingEq()", "fractions.Fraction(1, 3)", "decimal.Decimal('1.5')",
    "Color.RED", "numbavec.float32", "numbavec.float32[:]", "plain_function",
    "np.float64", "np.dtype('f8')", "np.iinfo(np.int8)", "type", "object()", "sys.maxsize",
    "np.clongdouble(1 + 2j)", "np.uint8(255)", "np.bool_(True) + np.bool_(True)",
    "np.int64(2**63 - 1)", "np.float32('nan')", "np.finfo(np.float32).max", "range(3)",
    "slice(1, 2)", "memoryview(b'ab')", "bytearray(b'ab')", "complex('nan+nanj')",
    "np.array([1.0, 2.0])[0]", "np.ma.masked", "np.newaxis", "np.e", "numbavec.jit",
]

ODD_PRELUDE = '''import os
import sys
import enum
import decimal
import fractions


class FuzzPropertyError(Exception):
    """raised by the odd objects' special methods"""


class RaisingProperty:
    @property
    def value(self):
        raise FuzzPropertyError("property raised")

    @property
    def real(self):
        raise FuzzPropertyError("real raised")


class RaisingFloat:
    def __float__(self):
        raise FuzzPropertyError("__float__ raised")

    def __index__(self):
        raise FuzzPropertyError("__index__ raised")

    def __int__(self):
        raise FuzzPropertyError("__int__ raised")


class RaisingGetattr:
    def __getattr__(self, name):
        raise FuzzPropertyError(f"getattr {name} raised")


class RaisingEq:
    def __eq__(self, other):
        raise FuzzPropertyError("__eq__ raised")

    def __hash__(self):
        raise FuzzPropertyError("__hash__ raised")


class Color(enum.IntEnum):
    RED = 1


def plain_function(v):
    return v

'''

ODD_USES = ["x + G", "G", "x if G else -x", "G.value", "G[0]", "G(x)", "x * G[1]", "len(G)",
            "G.real", "x < G", "G.imag + x", "float(G) + x", "int(G) + x", "G + G",
            "-G", "abs(G)", "min(x, G)", "G.real.imag", "G.sqrt(x)", "G.RED + x", "G[0][1]",
            "x + G * 0"]


def gen_globals(r):
    """Globals (and closure-free constants) of odd types used by a kernel."""
    value = r.choice(ODD_GLOBALS)
    use = r.choice(ODD_USES)
    module = kernel(f"return {use}", prelude=ODD_PRELUDE + f"G = {value}\n")
    t = r.choice(FLOATS * 2 + REAL + ["bool"] + COMPLEX)
    return program(module, [[[t, t], None]])


# ---------------------------------------------------------------- signedness

MIXED_OPS = ["<", "<=", ">", ">=", "==", "!=", "+", "-", "*", "//", "%", "**", "&", "|", "^",
             "<<", ">>", "min", "max", "/", "cmpchain"]
WEAK_INTS = [-1, 0, 1, 127, 128, 255, 256, 2 ** 31, 2 ** 63 - 1, 2 ** 63, 2 ** 64 - 1, -2 ** 63]


def mixed_expr(op, a, b):
    if op in ("min", "max"):
        return f"{op}({a}, {b})"
    if op == "cmpchain":
        return f"{a} < {b} <= {a}"
    return f"{a} {op} {b}"


def gen_signedness(r):
    """Operators across integer types of different signedness and widths
    (int8..int64 with uint64 and the rest), bool and floats, and against
    Python ints at the types' limits."""
    op = r.choice(MIXED_OPS)
    ta = r.choice(INTS + ["bool"])
    tb = r.choice(["uint64", "uint64", "int64"] + INTS + ["bool", "float32", "float64"])
    if r.random() < 0.3:
        body = f"return {mixed_expr(op, 'x', str(r.choice(WEAK_INTS)))}"
        if r.random() < 0.5:
            body = f"return {mixed_expr(op, str(r.choice(WEAK_INTS)), 'x')}"
    else:
        body = f"return {mixed_expr(op, 'x', 'y')}"
    return program(kernel(body), [[[ta, tb], None], [[tb, ta], None]])


# ---------------------------------------------------------------- every signature type

TYPE_BODIES = ["return x", "return x + 1", "return -x", "return x * x", "return abs(x)",
               "return x // 2", "return x ** 2", "return not x", "return x and y",
               "return x or y", "return x == y", "return x + y", "return x - y",
               "return x / y", "return x % y", "return min(x, y)", "return max(x, y)",
               "return math.sqrt(x)", "return np.sign(x)", "return round(x)", "return int(x)",
               "return float(x)", "return complex(x)", "return bool(x)", "return x.real",
               "return x.imag", "return x.conjugate()", "return np.float32(x)",
               "return np.int8(x)", "return np.uint64(x)", "return numbavec.int16(x)",
               "return np.complex64(x)", "return abs(x) > y", "return x if y else -x",
               "return np.exp(x)", "return np.sqrt(x)", "return np.isnan(x)",
               "return np.minimum(x, y)", "return np.fmax(x, y)", "return x ** y",
               "return divmod(x, y)[0]", "return np.bool_(x)", "return x != x"]


# bodies whose value has one static (promoted) type in a kernel but the type
# of the path taken in Python (DESIGN): compared for equal argument types only
PATH_TYPED = {"return min(x, y)", "return max(x, y)", "return x and y", "return x or y",
              "return x if y else -x"}


def gen_alltypes(r):
    """Every scalar type as argument and as declared result (each cast)."""
    body = r.choice(TYPE_BODIES)
    ta = r.choice(ALL)
    tb = r.choice([ta, ta, r.choice(ALL)])
    outs = r.sample(ALL, 3)
    return program(kernel(body), [[[ta, tb], o] for o in outs] + [[[ta, tb], None]],
                   apis=("vectorize",), compare=ta == tb or body not in PATH_TYPED)


# ---------------------------------------------------------------- @numbavec.jit nests

def build_jit(p):
    """A chain (width 1) or tree (width 2: each helper calls the next twice)
    of depth helpers h0 <- h1 <- ... <- f."""
    depth, width, form = p["depth"], p["width"], p["form"]
    lines = ["@numbavec.jit\ndef h0(a, b):\n    return a * 0.5 + b\n"]
    for k in range(1, depth + 1):
        calls = " + ".join(f"h{k - 1}(a, b + {j})" for j in range(width))
        if form == "tuple":
            body = f"u, v = h{k - 1}t(a, b)\n    return h{k - 1}(u, v) + {calls}"
        elif form == "reassign":    # not compared: see JIT_ODD on promoted parameters
            body = f"a = a + 1\n    b = {calls}\n    return b"
        elif form == "branch":
            body = f"if a > b:\n        return {calls}\n    return h{k - 1}(b, a)"
        else:
            body = f"return {calls}"
        lines.append(f"@numbavec.jit\ndef h{k}(a, b):\n    {body}\n")
        if form == "tuple":
            lines.append(f"@numbavec.jit\ndef h{k - 1}t(a, b):\n    return b, a\n")
    prelude = "\n\n".join(lines)
    return kernel(f"return h{depth}(x, y)", prelude=prelude)


JIT_ODD = [
    ("@numbavec.jit\ndef h(a):\n    return h(a)\n", "return h(x)"),
    ("@numbavec.jit\ndef h(a):\n    return g(a)\n\n\n@numbavec.jit\ndef g(a):\n    return h(a)\n",
     "return h(x)"),
    ("def h(a):\n    return a\n", "return h(x)"),
    ("@numbavec.jit\ndef h(a, b=2.0):\n    return a * b\n", "return h(x)"),
    ("@numbavec.jit\ndef h(a, b=2.0):\n    return a * b\n", "return h(x, b=y)"),
    ("@numbavec.jit\ndef h(*a):\n    return a[0]\n", "return h(x, y)"),
    ("@numbavec.jit\ndef h(a):\n    return a\n", "return h(x, y)"),
    ("@numbavec.jit\ndef h(a, b):\n    return a\n", "return h(x)"),
    ("@numbavec.jit\ndef h(a):\n    if a > 0:\n        return a\n", "return h(x)"),
    ("@numbavec.jit\ndef h(a):\n    if a > 0:\n        return 1\n    return 2.5\n", "return h(x)"),
    # a helper's parameter assigned a wider type is promoted from the start
    # (DESIGN-NOTES), so h(uint8 255) is 256.5 where Python wraps to 0.5: not compared
    ("@numbavec.jit\ndef h(a):\n    a = a + 1\n    a += 0.5\n    return a\n", "return h(x)",
     False),
    ("@numbavec.jit\ndef h(a):\n    return a, a\n", "return h(x)"),
    ("@numbavec.jit\ndef h(a):\n    return a, a\n", "u, v = h(x)\nreturn u + v"),
    ("@numbavec.jit\ndef h(a):\n    return a, a\n", "u, v, w = h(x)\nreturn u"),
    ("@numbavec.jit\ndef h(a):\n    return (a, (a, a))\n", "u, (v, w) = h(x)\nreturn u + w"),
    ("@numbavec.jit\ndef h(a):\n    return a\n", "return h"),
    ("@numbavec.jit\ndef h(a):\n    return a\n", "g = h\nreturn g(x)"),
    ("@numbavec.jit\ndef h(a):\n    return q\n", "return h(x)"),
    ("@numbavec.jit\ndef h(a):\n    return math.sqrt(a) + np.exp(a)\n", "return h(x) + h(y)"),
    ("@numbavec.jit\ndef h(a):\n    return f(a, a)\n", "return h(x) if x > 100 else x"),
    ("@numbavec.jit\ndef h(a):\n    return a.real\n", "return h(x)"),
    ("h = numbavec.jit(lambda a: a * 2)\n", "return h(x)"),
    ("@numbavec.jit()\ndef h(a):\n    return a + 1\n", "return h(h(h(x)))"),
    ("@numbavec.jit\ndef h(f):\n    return f\n", "return h(x)"),
    ("@numbavec.jit\ndef h(a):\n    for i in range(3):\n        a = a + i\n    return a\n",
     "return h(x)"),
    ("@numbavec.jit\ndef h(a):\n    acc = 0\n    if a > 0:\n        acc = 1\n    acc += a\n"
     "    return acc\n", "return h(x)"),
    ("@numbavec.jit\ndef h(a):\n    if a > 0:\n        acc = 1\n    acc += a\n    return acc\n",
     "return h(x)"),
    ("@numbavec.jit\ndef h(a):\n    return h2(a)\n\n\n@numbavec.jit\ndef h2(a):\n    return a\n",
     "return h(x)"),
]


def gen_jit(r):
    """@numbavec.jit helper nests (chains, trees, tuples, branches) and
    odd helpers (recursion, defaults, keywords, wrong arity, no return)."""
    t = r.choice(FLOATS * 2 + REAL)
    if r.random() < 0.4:
        prelude, body, *compare = r.choice(JIT_ODD)
        return program(kernel(body, prelude=prelude), [[[t, t], None]],
                       compare=compare[0] if compare else True)
    form = r.choice(["chain", "tuple", "reassign", "branch"])
    width = r.choice([1, 1, 1, 2])
    depth = r.choice([2, 4, 8, 12, 16]) if width == 1 else r.choice([2, 4, 6, 8, 10, 13])
    params = {"form": form, "width": width, "depth": depth}
    return program(build_jit(params), [[[t, t], None]], build="jit", params=params,
                   timeout=30, valid=True, compare=form != "reassign" or t in FLOATS)


# ---------------------------------------------------------------- gufuncs

GU_KERNELS = [  # (layout, params, body, dims)
    ("(n)->()", "a, out", "s = 0.0\nfor i in range(len(a)):\n    s += a[i]\nout[0] = s", "n"),
    ("(n)->()", "a, out", "out[0] = a[-1] + a[0]", "n"),
    ("(n)->()", "a, out", "out[0] = a[len(a)]", "n"),
    ("(n)->()", "a, out", "out[0] = a[-len(a) - 1]", "n"),
    ("(n)->()", "a, out", "out[0] = a.shape[0] + a.size + a.ndim", "n"),
    ("(n)->()", "a, out", "out[0] = a.shape[1]", "n"),
    ("(n)->()", "a, out", "out[0] = a[0, 0]", "n"),
    ("(n)->()", "a, out", "out[1] = a[0]", "n"),
    ("(n)->()", "a, out", "out[0] = len(a[0])", "n"),
    ("(n)->()", "a, out", "out[0] = a", "n"),
    ("(n)->()", "a, out", "out[0] = a.sum()", "n"),
    ("(n)->()", "a, out", "out[0] = np.sum(a)", "n"),
    ("(n)->()", "a, out", "out[0] = a[1:][0]", "n"),
    ("(n)->()", "a, out", "out[0] = a[::-1][0]", "n"),
    ("(n)->()", "a, out", "out[0] = max(a[0], a[-1])", "n"),
    ("(n)->()", "a, out", "for i in range(len(a) + 1):\n    out[0] = a[i]", "n"),
    ("(n),(n)->(n)", "a, b, out", "for i in range(len(a)):\n    out[i] = a[i] * b[i]", "n"),
    ("(n),(n)->(n)", "a, b, out", "for i in range(len(out)):\n    out[i] = a[-i] - b[i - 1]",
     "n"),
    ("(n),(m)->()", "a, b, out", "out[0] = len(a) * 1000 + len(b)", "nm"),
    ("(n),(m)->()", "a, b, out", "out[0] = a[len(b) - 1]", "nm"),
    ("(n,m)->(m)", "a, out", "for j in range(a.shape[1]):\n    out[j] = a[a.shape[0] - 1, j]",
     "nm"),
    ("(n,m)->(m)", "a, out", "for j in range(a.shape[1]):\n    out[j] = a[j, 0]", "nm"),
    ("(n,m)->()", "a, out", "out[0] = a[-1, -1] + a.shape[0] * 10 + a.shape[1]", "nm"),
    ("(n),()->(n)", "a, s, out", "for i in range(len(a)):\n    out[i] = a[i] * s", "n"),
    ("(n),()->(n)", "a, s, out", "for i in range(len(a)):\n    out[i] = a[i] * s[0]", "n"),
    ("(3)->()", "a, out", "out[0] = a[0] + a[1] + a[2]", "3"),
    ("(3)->()", "a, out", "out[0] = a[3]", "3"),
    ("(n)->(n)", "a, out", "out[:] = a", "n"),
    ("(n)->(n)", "a, out", "out[:] = a + 1.0", "n"),
    ("(n)->(n)", "a, out", "for i in range(len(a)):\n    out[i] = a[i]\n    a[i] = 0", "n"),
    ("(n)->(n)", "a, out", "i = 0\nwhile i < len(a):\n    out[i] = a[len(a) - 1 - i]\n"
     "    i += 1", "n"),
    ("(n)->()", "a, out", "acc = 0.0\nfor v in a:\n    acc += v\nout[0] = acc", "n"),
    ("(n)->()", "a, out", "out[0] = a[np.int8(-1)] + a[np.uint64(0)]", "n"),
    ("(n)->()", "a, out", "out[0] = a[True]", "n"),
    ("(n)->()", "a, out", "out[0] = a[0.0]", "n"),
    ("(n)->()", "a, out", "out[0] = a[2**63]", "n"),
    ("(n)->()", "a, out", "out[0] = a[-2**63]", "n"),
    ("(n)->()", "a, out", "out[0] = a[4294967296]", "n"),
    ("(n)->()", "a, out", "out[0] = a[(0, 1)[1]]", "n"),
    ("(n)->()", "a, out", "t = (a, a)\nout[0] = t[0][0]", "n"),
    ("(n)->()", "a, out", "out[0] = h(a)", "n"),
    ("(n)->()", "a, out", "out[0] = h(a[0])", "n"),
    ("(n)->()", "a, out", "out[0] = a[0] if len(a) else 0.0", "n"),
    ("(n),(n)->()", "a, b, out", "out[0] = a is b", "n"),
    ("(n)->()", "a, out", "a[0] = 5.0\nout[0] = a[0]", "n"),
    ("(n)", "a", "for i in range(len(a)):\n    a[i] = a[i] * 2", "n"),
    ("(n),(n)", "a, b", "for i in range(len(a)):\n    b[i] = a[i] + b[i]", "n"),
    ("()->()", "a, out", "out[0] = a * 2", ""),
    ("()->()", "a, out", "out[0] = a[0] * 2", ""),
]

GU_HELPER = "@numbavec.jit\ndef h(v):\n    return v[0] if False else v\n"


def gen_gufunc(r):
    """Array kernels: indexing (in bounds, out of bounds, odd index types),
    shapes, slices, writes into inputs, frozen dimensions."""
    layout, params, body, dimnames = r.choice(GU_KERNELS)
    t = r.choice(FLOATS * 3 + ["int64", "int32", "uint8", "complex128"])
    if "0.0" in body:
        # a float stored into an integer array: a kernel saturates, NumPy's
        # assignment wraps (DESIGN-NOTES): float arrays only
        t = r.choice(FLOATS)
    ins, outs = _layout_args(layout)
    names = params.split(", ")
    sig_args = []
    for k, spec in enumerate(ins + outs):
        ndim = len(spec.split(",")) if spec else 0
        if ndim == 0 and (k >= len(ins) or f"{names[k]}[0]" in body):
            ndim = 1        # a () output, or an input the body indexes: a 1-element view
        sig_args.append(f"{t}[{', '.join([':'] * ndim)}]" if ndim else t)
    sigs = [f"void({', '.join(sig_args)})"]
    dims = {d: r.choice([1, 2, 3, 5]) for d in dimnames if not d.isdigit()}
    module = kernel(body, params.split(", "), prelude=GU_HELPER)
    return gu_program(module, layout, sigs, dims)


# ---- arrays at their edges (issue 34) ----

I64_MAX, I64_MIN, U64_MAX = 2 ** 63 - 1, -2 ** 63, 2 ** 64 - 1
EDGE_INDICES = ["i", "u", "-i", "len(a) - 1 - i", f"np.uint64({U64_MAX})", "np.uint64(2 ** 63)",
                "np.int8(-1)", "np.uint8(255)", str(I64_MIN), str(I64_MAX), "0", "-1"]
EDGE_BOUNDS = EDGE_INDICES[:4] + ["", "", "2 ** 64", "-2 ** 64", f"np.uint64({U64_MAX})",
                                  str(I64_MIN), str(I64_MAX), "np.int16(-3)", "1"]
EDGE_STEPS = ["", "i", "u", "-1", "2", str(I64_MIN), str(I64_MAX), "-2 ** 70", "np.uint8(200)"]
EDGE_KINDS = ["bool_", "uint8", "uint64", "int8", "int64", "float32", "float64", "complex128"]
EDGE_OPS = ["+", "-", "*", "/", "//", "%", "**", "<<", ">>", "&", "|", "^"]
# (forms with i only where i is an int64: NumPy's arange of a narrower scalar
# computes in its kind and returns int64, a difference kept, DESIGN-NOTES)
EDGE_ARANGE = ["0, 10, np.inf", "0, np.nan", "np.nan, i", "0, np.inf", "0, -np.inf", "i, 10",
               "0, 1e-320, 1e10", "-0.0, 0.0, np.inf", f"{I64_MIN}, {I64_MAX}",
               f"{I64_MAX}, -1, -1", f"0, {I64_MAX}, 2 ** 62", "i, i + 3", "0, len(a), 0",
               "i, 5, -1", "0.5, len(a), 0.25", "np.inf, np.inf", f"{I64_MAX} - 2, {I64_MAX}"]
# (forms with i or u only where their edge values are small or past int64
# bytes: np.zeros(2**31) is seconds of zeroing where NumPy's calloc is not)
EDGE_SHAPES = ["i", "u", "(i, 0)", "(0, u)", "(2, -1)", str(I64_MAX), "(1 << 32, 1 << 32)",
               "(0, 1 << 40, 1 << 40)", "(1 << 40, 0)", "len(a) - 6"]
SMALL_OR_HUGE = ("int8", "int16", "int64", "uint8", "uint16", "uint64")
EDGE_REDUCE = ["argmin", "argmax", "min", "max", "nanmax", "sum", "mean", "var", "any", "prod"]


def _edge_slice(r):
    return f"{r.choice(EDGE_BOUNDS)}:{r.choice(EDGE_BOUNDS)}:{r.choice(EDGE_STEPS)}"


def _inplace_refused(kind, op, value, akind, ikind, ukind):
    """Whether NumPy refuses w op= value (value as the kernel writes it, with
    a, i and u of the kinds given) with a TypeError: NumPy's same_kind rule,
    or no loop for the types."""
    import numpy as np
    w = np.ones(2, kind)
    env = {"np": np, "w": w, "a": np.ones(2, akind), "i": np.dtype(ikind).type(1),
           "u": np.dtype(ukind).type(1)}
    try:
        with np.errstate(all="ignore"):
            exec(f"w {op}= {value}", env)
    except TypeError:
        return True
    except Exception:       # noqa: BLE001 - a value error is the run's to compare
        return False
    return False


def _edge_inplace(r, t, ikind, ukind):
    """w op= v across dtypes, and whether NumPy refuses it.  What would meet
    a deliberate difference (an integer to a negative power, a shift by a
    negative count, complex powers at zero: DESIGN-NOTES) is left out."""
    k, op = r.choice(EDGE_KINDS), r.choice(EDGE_OPS)
    if op == "**" and k.startswith("complex"):
        op = "+"
    values = ["2", "(a > 0)", f"np.ones(len(a), dtype=np.{r.choice(EDGE_KINDS)})"]
    if ukind == "uint64" or op not in ("**", "<<", ">>"):
        values.append("u")
    if op not in ("**", "<<", ">>"):
        values += ["a", "i", "1", "1.5", "True", "a * 0.5", "np.nan", "-np.inf", "1j"]
    v = r.choice(values)
    target = r.choice(["w", "w[1:]", "w[::-2]", "w[w != 0]"])
    if target != "w" and (v[0] in "(a" or v.startswith("np.ones")):
        v = f"({v})[{target[2:-1]}]"        # an array value: the target's shape
    body = (f"w = np.{r.choice(['zeros', 'ones'])}(len(a), dtype=np.{k})\n"
            f"{target} {op}= {v}\nout[:] = w.real")
    return body, _inplace_refused(k, op, v.replace("w != 0", ":"), t, ikind, ukind)


def _edge_statement(r, n, ikind, ukind):
    """One statement; its variables end in n (each statement its own)."""
    kind = r.randrange(9)
    if kind == 0:
        return f"out[0] = a[{r.choice(EDGE_INDICES)}]"
    if kind == 1:
        return f"out[0] = len(a[{_edge_slice(r)}])"
    if kind == 2:
        return f"t{n} = a[{_edge_slice(r)}]\nout[:len(t{n})] = t{n}"
    if kind == 3:
        return (f"r{n} = np.{r.choice(EDGE_REDUCE)}(a[{_edge_slice(r)}][None, :], "
                f"axis={r.randrange(2)})\nout[:r{n}.size] = r{n}")
    if kind == 4:
        f = r.choice(["np.median({})", "np.percentile({}, 50)", "np.argmax({})", "np.min({})",
                      "np.nanmin({})", "np.quantile({}, 0.5)"])
        return f"out[0] = {f.format(f'a[{_edge_slice(r)}]')}"
    if kind == 5:
        return f"out[0] = a[a[{_edge_slice(r)}] > 0].sum()"
    if kind == 6:
        return f"a[a[{_edge_slice(r)}] > 0] = {r.choice(['1.5', 'np.nan', 'a[:1]'])}\nout[:] = a"
    if kind == 7:
        args = r.choice([x for x in EDGE_ARANGE if not re.search(r"\bi\b", x) or ikind == "int64"])
        return f"r{n} = np.arange({args})\nm = min(len(r{n}), len(out))\nout[:m] = r{n}[:m]"
    shape = r.choice([x for x in EDGE_SHAPES
                      if not (re.search(r"\bi\b", x) and ikind not in SMALL_OR_HUGE
                              or re.search(r"\bu\b", x) and ukind not in SMALL_OR_HUGE)])
    return f"z{n} = np.zeros({shape})\nout[0] = z{n}.size + z{n}.sum()"


def gen_array_edges(r):
    """Array kernels at their edges, what found issue 34's faults: indices
    and slice bounds of extreme integers and mixed kinds (arguments i and u
    take int64's and uint64's limits, constants are written), in-place
    operators across dtypes (a TypingError exactly where NumPy refuses),
    np.arange and allocations whose lengths overflow or are NaN, reductions
    of empty axes, boolean masks of the wrong length, non-finite floats."""
    t = r.choice(FLOATS)
    ikind, ukind = r.choice(SIGNED), r.choice(UNSIGNED)
    stmts = [_edge_statement(r, n, ikind, ukind) for n in range(r.randint(1, 3))]
    valid = True
    if r.random() < 0.3:
        body, refused = _edge_inplace(r, t, ikind, ukind)
        stmts.insert(0, body)
        valid = not refused
    module = kernel("out[:] = 0\n" + "\n".join(stmts), ("a", "i", "u", "out"))
    sigs = [f"void({t}[:], {ikind}, {ukind}, {t}[:])"]
    return gu_program(module, "(n),(),()->(n)", sigs, {"n": r.choice([1, 2, 3, 5, 7])},
                      valid=valid)


def _layout_args(layout):
    """(input core specs, output core specs) of a layout such as '(n),()->(n)'."""
    lhs, _, rhs = layout.partition("->")

    def specs(side):
        return [s.strip("()") for s in side.replace("),(", ")|(").split("|")] if side else []
    return specs(lhs), specs(rhs)


# ---------------------------------------------------------------- print (issue 34)

PRINT_HELPER = ("@numbavec.jit\ndef checked(v):\n    if v < {limit}:\n"
                "        raise ValueError('below the limit')\n    return v\n")
SCALAR_PRINT_ARGS = ["x", "y", "x * 0.5", "x > y", "-x", "checked(x)", "checked(y)"]
ARRAY_PRINT_ARGS = ["a[0]", "a[i % 7 - 3]", "a[-1]", "len(a)", "a.sum()", "a[0] > a[-1]",
                    "checked(a[0])"]


def print_text(r):
    """A string constant for print(): empty, short, or longer than the
    4,096 bytes a line once held; '%' and quotes in it sometimes."""
    n = r.choice([0, 1, 3, 12, 80, 3000, 4095, 4097, 6000, 12000])
    alphabet = r.choice(["ab", "xyz 0123", "%d %s %%", "<'\"|>", "é→∑"])
    return "".join(r.choice(alphabet) for _ in range(n))


def print_call(r, args):
    """print(...) of 1-6 pieces among args and string constants, with sep=
    and end= sometimes (end always ends a line: lines are compared)."""
    pieces = [repr(print_text(r)) if r.random() < 0.4 else r.choice(args)
              for _ in range(r.randint(1, 6))]
    if r.random() < 0.4:
        pieces.append(f"sep={print_text(r)!r}")
    if r.random() < 0.4:
        pieces.append(f"end={print_text(r) + chr(10)!r}")
    return f"print({', '.join(pieces)})"


def print_body(r, args, tail):
    """One to three prints (one maybe under an if), then tail."""
    lines = []
    for _ in range(r.randint(1, 3)):
        call = print_call(r, args)
        if r.random() < 0.25:
            call = f"if {args[0]} > 0:\n    {call}"
        lines.append(call)
    return "\n".join(lines + [tail])


def gen_prints(r):
    """print() in kernels: lines longer than 4,096 bytes, sep= and end=, and
    prints one of whose arguments raises (a device function's raise, an
    index out of bounds), which print nothing: the kernel's lines are
    compared with the lines py_func prints (tests/support/fuzz_kernels.py,
    run_print_case)."""
    prelude = PRINT_HELPER.format(limit=r.choice([-1.0, 0.0, 0.5, 1e300]))
    if r.random() < 0.4:
        body = print_body(r, ARRAY_PRINT_ARGS, "out[0] = a[0]")
        module = kernel(body, ("a", "i", "out"), prelude=prelude)
        return gu_program(module, "(n),()->()", ["void(float64[:], int64, float64[:])"],
                          {"n": r.choice([1, 2, 3, 5])}, prints=True, valid=True)
    body = print_body(r, SCALAR_PRINT_ARGS, "return x")
    return program(kernel(body, prelude=prelude), [[["float64", "int64"], "float64"]],
                   prints=True, valid=True, accept=("ValueError",))


GENERATORS = {
    "progs": (gen_progs, 3), "mutant": (gen_mutant, 6), "unsupported": (gen_unsupported, 3),
    "undefined": (gen_undefined, 3), "reassign": (gen_reassign, 2),
    "literals": (gen_literals, 3), "deep": (gen_deep, 2), "chains": (gen_chains, 1),
    "globals": (gen_globals, 2), "signedness": (gen_signedness, 3),
    "alltypes": (gen_alltypes, 2), "jit": (gen_jit, 2), "gufunc": (gen_gufunc, 3),
    "array_edges": (gen_array_edges, 4),
    "prints": (gen_prints, 3),
}

BUILDERS = {"deep": build_deep, "chain": build_chain,
            "jit": lambda p: (build_jit(p), None)}


def generate(r, only=None):
    """(generator name, program) drawn with the generators' weights."""
    names = [n for n in GENERATORS if only is None or n in only]
    weights = [GENERATORS[n][1] for n in names]
    name = r.choices(names, weights)[0]
    return name, GENERATORS[name][0](r)


def random_for(seed, index):
    return random.Random(f"{seed}:{index}")
