"""A seeded random program generator over the kernel language.

``generate(seed)`` returns a :class:`Program`: the kernel's source, a variant
of it for the reference where every inexact library result is passed through
``_h`` (so the reference can be re-run with those results nudged by a few
ULP, to tell an ill-conditioned element from a wrong one), the signatures to
compile and the argument dtypes.  The same seed gives the same program on
every machine (``random.Random`` only).

Grammar (kinds: T = the parameters' dtype; F = a float: T itself in a float
family, float64 in an integer family; I = a loop counter, a Python int):

    program := def f(params): stmt* return expr(K)
    stmt    := v = expr(K) | v op= expr(kind v) | if cond: stmt+ [elif] [else]
             | for i in range(...): stmt+ (break/continue under if)
             | k = 0; while cond and k < N: k += 1; stmt+
    expr(T) := param | var | literal | T op T | -T | ~T | abs | min | max
             | (T if cond else T) | (T and T) | (T or T) | T ** small
    expr(F) := the float forms, / of integers, float(T), math.f(F), np.f(F),
               math.pow/atan2/hypot/copysign/fmod, F ** F
    cond    := expr < expr [<= expr] | not cond | cond and cond | cond or cond
             | math.isnan(F) | math.isfinite(F) | expr (truth value)

Each variable keeps one kind (and so one dtype) over the program: a kernel
variable has one promoted type, a Python variable takes whatever is assigned,
and the two agree only when the types do not change.
"""
import random
import re

FAMILIES = {
    "float": ["float64", "float32"],
    "int": ["int8", "int16", "int32", "int64"],
    "uint": ["uint8", "uint16", "uint32", "uint64"],
}

MATH1_SAFE = ["exp", "log", "sqrt", "sin", "cos", "tan", "atan", "tanh", "fabs", "log1p",
              "expm1", "erf", "asinh", "sinh", "cosh", "log2", "log10"]
NP1_SAFE = ["exp", "sqrt", "sin", "cos", "log", "arctan", "tanh", "fabs", "floor", "ceil"]
MATH2 = ["pow", "atan2", "hypot", "copysign", "fmod"]
EXACT_MATH = {"fabs", "floor", "ceil", "copysign", "fmod"}


class Program:
    def __init__(self, seed, family, source, ref_source, argtypes, out_types, nparams):
        self.seed, self.family, self.source, self.ref_source = seed, family, source, ref_source
        self.argtypes, self.out_types, self.nparams = argtypes, out_types, nparams

    def signatures(self):
        return [f"{o}({', '.join([t] * self.nparams)})" for t, o in zip(self.argtypes,
                                                                       self.out_types)]


class _Gen:
    def __init__(self, seed, exclude=()):
        self.math1 = [f for f in MATH1_SAFE if f"math.{f}" not in exclude]
        self.np1 = [f for f in NP1_SAFE if f"np.{f}" not in exclude]
        self.math2 = [f for f in MATH2 if f"math.{f}" not in exclude] or ["copysign"]
        self.r = random.Random(seed)
        self.seed = seed
        self.family = self.r.choice(["float", "float", "int", "uint"])
        self.unsigned = self.family == "uint"
        self.isfloat = self.family == "float"
        self.nparams = self.r.choice([1, 2, 2, 3])
        self.params = ["a", "b", "c"][: self.nparams]
        self.scopes = [{p: "T" for p in self.params}]
        self.nvars = 0
        self.nloops = 0
        self.loop_depth = 0
        self.lines = []       # (indent, kernel text, reference text)

    # ---- helpers ----
    def visible(self, kind):
        out = []
        for s in self.scopes:
            out += [v for v, k in s.items() if k == kind]
        return out

    def kind_f(self):
        return "T" if self.isfloat else "F"

    def chance(self, p):
        return self.r.random() < p

    # ---- expressions: each returns (kernel text, reference text) ----
    def expr(self, kind, depth):
        if kind == "F" and self.isfloat:
            kind = "T"
        if depth <= 0 or self.chance(0.25):
            return self.leaf(kind)
        if kind == "T" and not self.isfloat:
            return self.int_expr(depth)
        return self.float_expr(depth)

    def leaf(self, kind):
        names = self.visible(kind)
        if kind == "T" and self.isfloat:
            names += self.visible("F")
        if names and self.chance(0.8):
            v = self.r.choice(names)
            return v, v
        if kind == "T" and not self.isfloat:
            lit = str(self.r.choice([0, 1, 2, 3, 5, 7, 10, 100]))
            return lit, lit
        # "(-1.25)": a bare -1.25 as the base of ** would be -(1.25 ** x) in
        # the kernel and _pow(-1.25, x) in the reference
        lit = self.r.choice(["0.5", "2.0", "1.5", "0.1", "3.0", "1e-3", "10.0", "(-1.25)", "0.0"])
        if self.chance(0.3) and not self.isfloat:
            t = self.expr("T", 0)
            return f"float({t[0]})", f"float({t[1]})"
        return lit, lit

    _NAME = re.compile(r"\b([abc]|v\d+)\b")

    def typed(self, e):
        """e anchored to the parameters' dtype when it holds no typed name:
        where a weak value would leak into a variable, a conditional
        expression, and/or or min/max, Python keeps a Python int or float
        (its type depends on the path) while the kernel has one static type
        (a deliberate difference, not compared).  In the float family the
        difference is a float32 rounding, which a cancellation later can
        make large (found by the 10,000-program release run)."""
        if self._NAME.search(e[0]):
            return e
        p = self.params[0]
        if self.isfloat:        # p ** 0.0 is 1.0 in p's dtype, for nan and inf too
            return f"({e[0]} * ({p} ** 0.0))", f"({e[1]} * ({p} ** 0.0))"
        return f"({e[0]} + ({p} ^ {p}))", f"({e[1]} + ({p} ^ {p}))"

    def bin(self, op, a, b):
        return f"({a[0]} {op} {b[0]})", f"({a[1]} {op} {b[1]})"

    def int_expr(self, depth):
        d = depth - 1
        roll = self.r.random()
        if roll < 0.45:
            op = self.r.choice(["+", "-", "*", "//", "%", "&", "|", "^", "<<", ">>", "+", "*"])
            rhs = self.expr("T", d)
            loops = self.visible("I")
            if op in "+-*" and loops and self.chance(0.3):
                v = self.r.choice(loops)
                rhs = (v, v)
            return self.bin(op, self.expr("T", d), rhs)
        if roll < 0.52:
            e = str(self.r.choice([0, 1, 2, 3]))
            return self.bin("**", self.expr("T", d), (e, e))
        if roll < 0.60:
            op = self.r.choice(["-", "~"])
            a = self.expr("T", d)
            return f"({op}{a[0]})", f"({op}{a[1]})"
        if roll < 0.70:
            fn = self.r.choice(["abs", "min", "max", "min", "max"])
            args = [self.typed(self.expr("T", d))
                    for _ in range(1 if fn == "abs" else self.r.choice([2, 3]))]
            return (f"{fn}({', '.join(a[0] for a in args)})",
                    f"{fn}({', '.join(a[1] for a in args)})")
        if roll < 0.82:
            return self.ifexp("T", d)
        if roll < 0.88:
            op = self.r.choice(["and", "or"])
            return self.bin(op, self.typed(self.expr("T", d)), self.typed(self.expr("T", d)))
        return self.leaf("T")

    def float_expr(self, depth):
        d = depth - 1
        k = self.kind_f()
        roll = self.r.random()
        if roll < 0.35:
            op = self.r.choice(["+", "-", "*", "/", "+", "*", "//", "%"])
            rhs = self.expr(k, d)
            loops = self.visible("I")
            if op in "+-*" and loops and self.chance(0.3):
                v = self.r.choice(loops)
                rhs = (v, v)
            return self.bin(op, self.expr(k, d), rhs)
        if roll < 0.42 and not self.isfloat:
            return self.bin("/", self.expr("T", d), self.expr("T", d))
        if roll < 0.62:
            a = self.expr(k, d)
            if self.chance(0.7):
                fn = self.r.choice(self.math1)
                call = f"math.{fn}({a[0]})"
                ref = f"math.{fn}({a[1]})"
            else:
                # np.f of a Python float is a (strong) float64: anchored, as a
                # float32 kernel variable would otherwise be float64 throughout
                fn = self.r.choice(self.np1)
                a = self.typed(a) if self.isfloat else a
                call = f"np.{fn}({a[0]})"
                ref = f"np.{fn}({a[1]})"
            return call, (ref if fn in EXACT_MATH else f"_h({ref})")
        if roll < 0.68:
            fn = self.r.choice(self.math2)
            a, b = self.expr(k, d), self.expr(k, d)
            ref = f"math.{fn}({a[1]}, {b[1]})"
            return f"math.{fn}({a[0]}, {b[0]})", (ref if fn in EXACT_MATH else f"_h({ref})")
        if roll < 0.72:
            a, b = self.expr(k, d), self.expr(k, d)
            return f"({a[0]} ** {b[0]})", f"_h(_pow({a[1]}, {b[1]}))"
        if roll < 0.78:
            a = self.expr(k, d)
            fn = self.r.choice(["abs", "-", "min", "max", "math.floor"])
            if fn == "-":
                return f"(-{a[0]})", f"(-{a[1]})"
            if fn in ("min", "max"):
                a, b = self.typed(a), self.typed(self.expr(k, d))
                return f"{fn}({a[0]}, {b[0]})", f"{fn}({a[1]}, {b[1]})"
            if fn == "math.floor":
                # a weak int meeting a float operand
                b = self.expr(k, d)
                return f"({b[0]} + math.floor({a[0]}))", f"({b[1]} + math.floor({a[1]}))"
            return f"abs({a[0]})", f"abs({a[1]})"
        if roll < 0.90:
            return self.ifexp(k, d)
        if roll < 0.94:
            op = self.r.choice(["and", "or"])
            return self.bin(op, self.typed(self.expr(k, d)), self.typed(self.expr(k, d)))
        return self.leaf(k)

    def ifexp(self, kind, d):
        a, c, b = self.expr(kind, d), self.cond(d), self.expr(kind, d)
        if kind == "T":
            a, b = self.typed(a), self.typed(b)
        return f"({a[0]} if {c[0]} else {b[0]})", f"({a[1]} if {c[1]} else {b[1]})"

    def cond(self, depth):
        d = max(depth - 1, 0)
        roll = self.r.random()
        kinds = ["T", "T", self.kind_f()]
        if roll < 0.5 or depth <= 0:
            k = self.r.choice(kinds)
            ops = ["<", "<=", ">", ">=", "==", "!="]
            a, b = self.expr(k, d), self.expr(k, d)
            op = self.r.choice(ops)
            if self.chance(0.25):
                c = self.expr(k, d)
                op2 = self.r.choice(ops)
                return (f"({a[0]} {op} {b[0]} {op2} {c[0]})",
                        f"({a[1]} {op} {b[1]} {op2} {c[1]})")
            return self.bin(op, a, b)
        if roll < 0.6:
            c = self.cond(d)
            return f"(not {c[0]})", f"(not {c[1]})"
        if roll < 0.8:
            return self.bin(self.r.choice(["and", "or"]), self.cond(d), self.cond(d))
        if roll < 0.9:
            fn = self.r.choice(["isnan", "isfinite", "isinf"])
            a = self.expr(self.kind_f(), d)
            return f"math.{fn}({a[0]})", f"math.{fn}({a[1]})"
        return self.expr("T", d)

    # ---- statements ----
    def emit(self, indent, k, r=None):
        self.lines.append((indent, k, k if r is None else r))

    def new_var(self, kind):
        self.nvars += 1
        name = f"v{self.nvars}"
        return name

    def block(self, indent, n, depth):
        self.scopes.append({})
        for _ in range(n):
            self.stmt(indent, depth)
        self.scopes.pop()

    def stmt(self, indent, depth):
        roll = self.r.random()
        if roll < 0.3 or depth <= 0:
            kind = self.r.choice(["T", "T", self.kind_f()])
            name = self.new_var(kind)
            e = self.expr(kind, 2)
            if kind == "T":
                e = self.typed(e)
            self.emit(indent, f"{name} = {e[0]}", f"{name} = {e[1]}")
            self.scopes[-1][name] = kind
        elif roll < 0.5:
            kind = self.r.choice(["T", self.kind_f()])
            names = [v for v in self.visible(kind) if v not in self.params]
            if not names:
                return self.stmt(indent, 0)
            v = self.r.choice(names)
            ops = ["+", "-", "*"] + (["/"] if kind == "F" or self.isfloat else ["//", "%", "&", "|", "^"])
            op = self.r.choice(ops)
            e = self.expr(kind, 2)
            if self.chance(0.5):
                self.emit(indent, f"{v} {op}= {e[0]}", f"{v} {op}= {e[1]}")
            else:
                self.emit(indent, f"{v} = {v} {op} {e[0]}", f"{v} = {v} {op} {e[1]}")
        elif roll < 0.7:
            c = self.cond(2)
            self.emit(indent, f"if {c[0]}:", f"if {c[1]}:")
            self.body(indent + 1, depth - 1)
            if self.chance(0.3):
                c = self.cond(2)
                self.emit(indent, f"elif {c[0]}:", f"elif {c[1]}:")
                self.body(indent + 1, depth - 1)
            if self.chance(0.5):
                self.emit(indent, "else:")
                self.body(indent + 1, depth - 1)
        elif roll < 0.87 and self.loop_depth < 2:
            self.for_loop(indent, depth)
        elif self.loop_depth < 2:
            self.while_loop(indent, depth)
        else:
            self.stmt(indent, 0)

    def body(self, indent, depth):
        self.scopes.append({})
        n = self.r.choice([1, 1, 2])
        for _ in range(n):
            self.stmt(indent, depth)
        if self.loop_depth and self.chance(0.25):
            c = self.cond(1)
            self.emit(indent, f"if {c[0]}:", f"if {c[1]}:")
            self.emit(indent + 1, self.r.choice(["break", "continue"]))
        elif self.chance(0.1):
            e = self.expr(self.out_kind, 2)
            self.emit(indent, f"return {e[0]}", f"return {e[1]}")
        self.scopes.pop()

    def range_args(self):
        forms = ["k", "lo_hi", "neg"]
        if not self.isfloat:
            forms += ["param", "var_step"]
        form = self.r.choice(forms)
        if form == "k":
            return str(self.r.randint(0, 6))
        if form == "lo_hi":
            lo = self.r.randint(-3, 3)
            return f"{lo}, {lo + self.r.randint(0, 6)}"
        if form == "neg":
            hi = self.r.randint(0, 6)
            return f"{hi}, {hi - self.r.randint(0, 8)}, {-self.r.randint(1, 3)}"
        p = self.r.choice(self.params)
        if form == "param":
            return f"min({p}, {self.r.randint(0, 6)})"
        step = f"(({p} & 3) + 1)"
        if not self.unsigned and self.chance(0.5):
            return f"6, -4, -{step}"
        return f"-2, 8, {step}"

    def for_loop(self, indent, depth):
        self.nloops += 1
        i = f"i{self.nloops}"
        self.emit(indent, f"for {i} in range({self.range_args()}):")
        self.loop_depth += 1
        self.scopes.append({i: "I"})
        self.body(indent + 1, depth - 1)
        self.scopes.pop()
        self.loop_depth -= 1

    def while_loop(self, indent, depth):
        self.nloops += 1
        k = f"k{self.nloops}"
        self.emit(indent, f"{k} = 0")
        c = self.cond(1)
        n = self.r.randint(1, 6)
        self.emit(indent, f"while {c[0]} and {k} < {n}:", f"while {c[1]} and {k} < {n}:")
        self.emit(indent + 1, f"{k} += 1")
        self.loop_depth += 1
        self.body(indent + 1, depth - 1)
        self.loop_depth -= 1

    def program(self):
        self.out_kind = self.r.choice(["T", "T", self.kind_f()])
        for _ in range(self.r.randint(1, 2)):       # top-level variables the blocks update
            self.stmt(1, 0)
        for _ in range(self.r.randint(1, 4)):
            self.stmt(1, 2)
        e = self.expr(self.out_kind, 3)
        self.emit(1, f"return {e[0]}", f"return {e[1]}")
        head = f"def f({', '.join(self.params)}):"
        hdr = f"# numbavec random program, seed {self.seed}\nimport math\nimport numpy as np\n\n\n"
        src = hdr + head + "\n" + "\n".join("    " * i + k for i, k, _ in self.lines) + "\n"
        ref = hdr + head + "\n" + "\n".join("    " * i + r for i, _, r in self.lines) + "\n"
        types = self.r.sample(FAMILIES[self.family], 2)
        outs = []
        for t in types:
            if self.out_kind == "F" and not self.isfloat:
                outs.append(self.r.choice(["float64", t]))
            else:
                outs.append(t)
        return Program(self.seed, self.family, src, ref, types, outs, self.nparams)


def generate(seed, exclude=()):
    """The program for seed; exclude: functions ("math.tan", "np.sqrt") not to use."""
    return _Gen(seed, frozenset(exclude)).program()


if __name__ == "__main__":
    # python tests/support/progs.py SEED... [--exclude math.tan,np.arctan,...]
    import sys
    argv = sys.argv[1:]
    excl = ()
    if "--exclude" in argv:
        k = argv.index("--exclude")
        excl = argv[k + 1].split(",") if k + 1 < len(argv) else ()
        argv = argv[:k] + argv[k + 2:]
    for s in argv or ["1"]:
        p = generate(int(s), excl)
        print(p.source, p.signatures())
