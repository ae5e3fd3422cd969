"""Statements and expressions rebuilt from decoded bytecode (numbavec/_bytecode.py).

The kernel language's control flow is structured, and CPython lays a
function's code out in source order, so the tree is rebuilt by one pass
over the instruction list that runs the evaluation stack symbolically
(stack entries are ``ast`` expressions) and recognises each construct by
the shape the code generator gives it:

  1. Undo the optimiser's tail duplication first: a small block ending in a
     return is copied into each jump to it, with the location of the
     statement it came from.  Copies are found by equal instructions at
     equal locations and folded back into a jump to the last copy, which is
     where the source has the statement.  Implicit ``return None``s (no
     statement of their own) are folded likewise.
  2. Statements: a region [start, end) is run instruction by instruction;
     a store, a popped value, a return or a raise ends a statement when the
     stack is back at its base (the iterators of the enclosing for loops).
  3. Conditions: a conditional jump starts a chain of tests (each a pure
     expression ending in a conditional jump) whose jumps leave it at two
     places, T (the fall-through) and E.  The chain collapses into one
     boolean expression (and/or/not) by merging neighbouring tests whose
     edges allow it.  What follows decides the construct: an if/else, an
     ``assert``, a conditional expression (both arms leave one value), or
     a test within a larger condition.
  4. Loops: ``for`` is GET_ITER + FOR_ITER; ``while`` is a test before a
     body that the test, copied at the bottom, jumps back to (``while
     True`` has no test).  break and continue are jumps to the loop's ends;
     the else clause lies between the loop's exit and the break target.
  5. Value and/or, chained comparisons and augmented assignments have their
     fixed shapes (DUP/COPY, SWAP/ROT) and are matched as such.

Anything it cannot place raises BytecodeError; a construct outside the kernel
language raises Unsupported.  The caller compiles the result again and
compares it with the original code, so a wrong guess here is refused, not
compiled.
"""
import ast
import itertools
import sys

from numbavec._bytecode import BytecodeError, Unsupported


class _Marker:
    """A stack entry that is not an expression."""

    __slots__ = ("kind", "data")

    def __init__(self, kind, data=None):
        self.kind, self.data = kind, data

    def __repr__(self):
        return f"<{self.kind}>"


NULL = _Marker("NULL")
SELF = _Marker("SELF")


class _Elem:
    """Element k of an UNPACK_SEQUENCE of value."""

    __slots__ = ("unpack", "k")

    def __init__(self, unpack, k):
        self.unpack, self.k = unpack, k


class _Unpack:
    __slots__ = ("value", "targets", "loc")

    def __init__(self, value, n, loc):
        self.value, self.targets, self.loc = value, [None] * n, loc


class _InPlace:
    """The result of an in-place operator (x += y) before it is stored."""

    __slots__ = ("op", "left", "right", "ins")

    def __init__(self, op, left, right, ins):
        self.op, self.left, self.right, self.ins = op, left, right, ins


class _Leaf:
    """One test of a condition: expr, jumping to target when its truth is
    sense, else going on at fall; start is its first instruction."""

    __slots__ = ("expr", "sense", "target", "fall", "start", "line")

    def __init__(self, expr, sense, target, fall, start, line):
        self.expr, self.sense, self.target, self.fall = expr, sense, target, fall
        self.start, self.line = start, line


class _NotHere(Exception):
    """A tentative parse (a test, a value) met something it is not."""


class _Ctx:
    """Where a region sits: the stack below its statements (iterators),
    the indices that mean "the end of this region", and the innermost
    loop's continue and break targets."""

    __slots__ = ("base", "cont", "cont_targets", "break_targets", "back_loc")

    def __init__(self, base, cont, cont_targets=frozenset(), break_targets=frozenset(),
                 back_loc=None):
        self.base, self.cont = base, cont
        self.cont_targets, self.break_targets = cont_targets, break_targets
        self.back_loc = back_loc

    def derive(self, cont):
        """A region inside this one, ending where cont says."""
        return _Ctx(self.base, cont, self.cont_targets, self.break_targets, self.back_loc)


class _State:
    __slots__ = ("stack", "base", "out", "stores", "mode", "leaf", "ctx", "start")

    def __init__(self, stack, mode, ctx, start):
        self.stack, self.base, self.mode, self.ctx = stack, len(stack), mode, ctx
        self.out, self.stores, self.leaf, self.start = [], [], None, start


_SKIP = ("DEAD", "NOP")
MAX_DEPTH = 100         # nested blocks (a kernel has a handful)
_MAX_CHAIN = 64         # tests looked at for one condition (each is kept: leaf_at)
# what never lies inside a condition (a chained comparison's cleanup has
# POP_TOP and jumps, so those do)
_ENDS_A_TEST = frozenset({"STORE", "STORE_ATTR", "STORE_SUBSCR", "STORE_SLICE", "RETURN",
                          "RAISE", "GET_ITER", "FOR_ITER", "UNPACK"})


class Rebuilder:
    def __init__(self, code, ins, rules, filename):
        self.code, self.I, self.rules, self.filename = code, ins, rules, filename
        self.n = len(ins)
        self.seq = itertools.count()
        self.col = rules.linetable != "310"
        self._merge_tails()
        self._unthread_boolops()
        self.back = {}
        for j, x in enumerate(self.I):
            if x.target is not None and x.target <= j and x.op in ("JUMP", "CJUMP"):
                self.back[x.target] = max(self.back.get(x.target, -1), j)
        self.lines = {x.loc[0] for x in self.I if x.loc and x.op not in _SKIP}
        self.last_loc = None
        self.leaves = {}
        self.depth = 0

    # ---- navigation ----
    def live(self, i):
        while i < self.n and self.I[i].op in _SKIP:
            i += 1
        return i

    def prev_live(self, i):
        i -= 1
        while i >= 0 and self.I[i].op in _SKIP:
            i -= 1
        return i

    def follow(self, i, seen=None):
        """The indices equivalent to reaching i: through jumps and skipped
        instructions; an implicit return is the function's end (self.n)."""
        out = set()
        while True:
            if i in out:
                return out
            out.add(i)
            if i >= self.n:
                return out
            x = self.I[i]
            if x.op in _SKIP:
                i += 1
            elif x.op == "JUMP":
                i = x.target
            elif x.op == "CONST" and x.arg is None and self._implicit_at(i):
                out.add(self.n)
                return out
            else:
                return out

    def _implicit_at(self, i):
        j = self.live(i + 1)
        return j < self.n and self.I[j].op == "RETURN" and self.I[j].implicit

    # ---- 1. tail duplication ----
    def _merge_tails(self):
        I = self.I
        for j, x in enumerate(I):
            if x.op == "RETURN":
                p = self._prev_raw(j)
                if p >= 0 and I[p].op == "CONST" and I[p].arg is None:
                    x.implicit = I[p].implicit = self._looks_implicit(p, j)
        groups = {}
        for j, x in enumerate(I):
            if x.op in ("RETURN", "RAISE"):
                key = ("implicit",) if x.implicit else (x.op, _key(x.arg), x.loc)
                groups.setdefault(key, []).append(j)
        redirect = {}
        for key, members in groups.items():
            if len(members) < 2:
                continue
            canon = members[-1]
            for m in members[:-1]:
                length = self._common_suffix(m, canon, key == ("implicit",))
                if length == 0:
                    continue
                start_m, start_c = m - length + 1, canon - length + 1
                for k in range(length):
                    redirect[start_m + k] = start_c + k
                    I[start_m + k].op = "DEAD"
                I[start_m].op, I[start_m].target, I[start_m].arg = "JUMP", start_c, None
                I[start_m].implicit = True
                del redirect[start_m]
        if redirect:
            for x in I:
                if x.target is not None and x.target in redirect:
                    x.target = redirect[x.target]

    def _unthread_boolops(self):
        """3.10/3.11 thread `a and b or c`'s JUMP_IF_FALSE_OR_POP into the
        or's POP_JUMP_IF_FALSE past it (a false `a` is tested false again
        there): put it back, so that the and/or reads as written."""
        for j, x in enumerate(self.I):
            if x.op != "CJUMP" or x.target is None or x.target <= j:
                continue
            p = self.prev_live(x.target)
            if p > j and self.I[p].op == "CJUMP_OR_POP" and self.I[p].arg != x.arg:
                x.op, x.target = "CJUMP_OR_POP", p

    def _prev_raw(self, j):
        j -= 1
        while j >= 0 and self.I[j].op == "NOP":
            j -= 1
        return j

    def _looks_implicit(self, p, j):
        """Whether the `return None` at p, j is the one the compiler adds at
        the end of a function (no statement of its own: its location is the
        preceding instruction's, or none, or not a return statement's)."""
        loc = self.I[j].loc
        if loc is None:
            return True
        q = self._prev_raw(p)
        while q >= 0 and self.I[q].loc is None and not self.col:
            q -= 1              # 3.10 gives the jump closing a loop no line
        prev = self.I[q].loc if q >= 0 else None
        if prev is not None and (loc == prev or (not self.col and loc[0] <= prev[0])):
            return True
        if self.col and loc[1] >= 0:
            width = loc[3] - loc[1] if loc[0] == loc[2] else -1
            return width not in (6, 11)
        return False

    def _common_suffix(self, a, b, implicit):
        """How many instructions ending at a equal those ending at b."""
        I = self.I
        k = 0
        while a - k >= 0 and b - k > a:
            x, y = I[a - k], I[b - k]
            if x.op != y.op or _key(x.arg) != _key(y.arg) or x.op == "DEAD":
                break
            if x.loc != y.loc and not (implicit and k < 2):
                break
            if k > 0 and (x.target is not None or x.op in ("RETURN", "RAISE")):
                break
            k += 1
        return k

    # ---- locations ----
    def at(self, node, x):
        loc = x.loc if x is not None and x.loc is not None else self.last_loc
        if loc is None:
            loc = (self.code.co_firstlineno, -1, self.code.co_firstlineno, -1)
        self.last_loc = loc
        node.lineno, node.col_offset = loc[0], loc[1]
        node.end_lineno, node.end_col_offset = loc[2], loc[3]
        node._nv_seq = next(self.seq)
        return node

    def span(self, node, first, last=None):
        """node located from first's start to last's end (expressions)."""
        node.lineno, node.col_offset = first.lineno, first.col_offset
        last = last or first
        node.end_lineno = getattr(last, "end_lineno", last.lineno)
        node.end_col_offset = getattr(last, "end_col_offset", last.col_offset)
        node._nv_seq = next(self.seq)
        return node

    def const(self, value, x):
        """The expression a constant comes from: tuples as Tuple displays,
        negative numbers as -n (the parser's forms; the compiler folds
        them back), sets of `in` as Set."""
        if isinstance(value, tuple):
            return self.at(ast.Tuple(elts=[self.const(v, x) for v in value], ctx=ast.Load()), x)
        if isinstance(value, frozenset):
            return self.at(ast.Set(elts=[self.const(v, x) for v in value]), x)
        if isinstance(value, slice):
            return self.at(ast.Slice(lower=self._bound(value.start, x),
                                     upper=self._bound(value.stop, x),
                                     step=self._bound(value.step, x)), x)
        if value is Ellipsis or value is None or isinstance(value, (bool, str, bytes)):
            return self.at(ast.Constant(value=value), x)
        if isinstance(value, (int, float, complex)):
            neg = -value
            if _negative(value) and repr(-neg) == repr(value):
                return self.at(ast.UnaryOp(op=ast.USub(),
                                           operand=self.at(ast.Constant(value=neg), x)), x)
            return self.at(ast.Constant(value=value), x)
        # a code object (MAKE_FUNCTION, refused there) or an odd constant
        node = self.at(ast.Constant(value=None), x)
        node._nv_odd = value
        return node

    def _bound(self, v, x):
        return None if v is None else self.const(v, x)

    # ---- the function ----
    def function(self):
        code = self.code
        ctx = _Ctx([], self.follow(self.n) | {self.n})
        body = self.block(0, self.n, ctx)
        if code.co_consts and isinstance(code.co_consts[0], str) and _has_docstring(code):
            doc = ast.Expr(value=ast.Constant(value=code.co_consts[0]))
            line = code.co_firstlineno + 1
            for node in (doc, doc.value):
                node.lineno, node.col_offset, node.end_lineno, node.end_col_offset = \
                    line, -1 if not self.col else 4, line, -1 if not self.col else 4
            body.insert(0, doc)
        if not body:
            body = [self.at(ast.Pass(), None)]
        return body

    # ---- 2. statements ----
    def block(self, i, end, ctx):
        """The statements of [i, end)."""
        self.depth += 1
        try:
            return self._block(i, end, ctx)
        finally:
            self.depth -= 1

    def _block(self, i, end, ctx):
        if self.depth > MAX_DEPTH:
            # an explicit bound: Python's own recursion limit is not a C
            # stack bound on every version (3.13 can overflow first)
            raise BytecodeError(f"the function is nested too deeply (more than {MAX_DEPTH} "
                                f"blocks)", self.I[i].loc if i < self.n else None)
        st = _State(list(ctx.base), "stmt", ctx, i)
        while i < end:
            x = self.I[i]
            if x.op == "DEAD":
                i += 1
                continue
            if len(st.stack) == st.base and not st.stores:
                if x.op == "NOP":
                    if x.loc is not None and x.loc[0] not in self.lines:
                        self.lines.add(x.loc[0])
                        st.out.append(self.at(ast.Pass(), x))
                    i += 1
                    continue
                found = self.while_at(i, end, ctx)
                if found is not None:
                    st.out.append(found[0])
                    i = found[1]
                    continue
                st.start = i
            i = self.step(i, end, st)
            self.flush(st)
        if len(st.stack) != st.base or st.stores:
            raise BytecodeError("a statement does not end where its block does",
                                self.I[min(end, self.n) - 1].loc if self.n else None)
        return st.out

    def flush(self, st):
        """Ends the statement when the stack is back at its base."""
        if st.mode != "stmt" or len(st.stack) != st.base or not st.stores:
            return
        stores, st.stores = st.stores, []
        st.out.append(self.assignment(stores))

    def assignment(self, stores):
        plain = []
        pending = list(stores)
        while pending:
            target, value = pending.pop(0)
            if isinstance(value, _Elem):
                u = value.unpack
                u.targets[value.k] = target
                if all(t is not None for t in u.targets):
                    tup = ast.Tuple(elts=u.targets, ctx=ast.Store())
                    self.span(tup, u.targets[0], u.targets[-1])
                    pending.insert(0, (tup, u.value))
                continue
            plain.append((target, value))
        if not plain:
            raise BytecodeError("an unpacking is not stored whole")
        first = plain[0][1]
        if len(plain) == 1 and isinstance(first, _InPlace):
            return self.augmented(plain[0][0], first)
        if isinstance(first, _Marker) and first.kind == "NEXT":
            if len(plain) != 1:
                raise BytecodeError("a for loop's target is stored twice")
            return plain[0][0]
        if all(v is first for _, v in plain):
            node = ast.Assign(targets=[t for t, _ in plain], value=self.expr_of(first),
                              type_comment=None)
            return self.span(node, plain[0][0], first)
        values = [v for _, v in plain]
        if len({id(v) for v in values}) != len(values):
            raise BytecodeError("an assignment numbavec cannot read")
        order = sorted(plain, key=lambda tv: getattr(tv[1], "_nv_seq", 0))
        targets = ast.Tuple(elts=[t for t, _ in order], ctx=ast.Store())
        vals = ast.Tuple(elts=[self.expr_of(v) for _, v in order], ctx=ast.Load())
        self.span(targets, order[0][0], order[-1][0])
        self.span(vals, order[0][1], order[-1][1])
        return self.span(ast.Assign(targets=[targets], value=vals, type_comment=None),
                         targets, vals)

    def augmented(self, target, inplace):
        left = inplace.left
        same = (isinstance(target, ast.Name) and isinstance(left, ast.Name)
                and target.id == left.id) or \
               (isinstance(target, ast.Subscript) and isinstance(left, ast.Subscript)
                and target.value is left.value and target.slice is left.slice) or \
               (isinstance(target, ast.Attribute) and isinstance(left, ast.Attribute)
                and target.value is left.value and target.attr == left.attr)
        if not same:
            raise BytecodeError("an augmented assignment stores elsewhere", inplace.ins.loc)
        op = getattr(ast, inplace.op)()
        return self.span(ast.AugAssign(target=target, op=op, value=inplace.right),
                         target, inplace.right)

    def expr_of(self, v):
        if isinstance(v, (_Marker, _Elem, _InPlace)) or v is None:
            raise BytecodeError("a value numbavec cannot read")
        return v

    # ---- one instruction ----
    def pop(self, st):
        if len(st.stack) <= st.base and st.mode == "stmt" and not (
                st.stack and isinstance(st.stack[-1], _Marker) and st.stack[-1].kind == "ITER"):
            raise BytecodeError("the stack is read below its base")
        if not st.stack:
            raise _NotHere()
        return st.stack.pop()

    def pop_expr(self, st):
        v = self.pop(st)
        if isinstance(v, (_Marker, _Elem, _InPlace)):
            raise BytecodeError("a value numbavec cannot read")
        return v

    def step(self, i, end, st):
        x = self.I[i]
        handler = getattr(self, "op_" + x.op, None)
        if handler is None:
            if x.op == "UNSUPPORTED":
                raise Unsupported(x.arg, x.loc)
            if x.op.startswith("UNARY_"):
                v = self.pop_expr(st)
                node = ast.UnaryOp(op=getattr(ast, x.op[6:])(), operand=v)
                st.stack.append(self.at(node, x))
                return i + 1
            raise BytecodeError(f"{x.op} where numbavec does not expect it", x.loc)
        r = handler(i, end, st, x)
        return i + 1 if r is None else r

    def op_NOP(self, i, end, st, x):
        return None

    def op_CONST(self, i, end, st, x):
        node = self.const(x.arg, x)
        node._nv_const = x.arg
        st.stack.append(node)

    def op_LOAD(self, i, end, st, x):
        st.stack.append(self.at(ast.Name(id=x.arg, ctx=ast.Load()), x))

    def op_NULL(self, i, end, st, x):
        st.stack.append(NULL)

    def op_ASSERTION_ERROR(self, i, end, st, x):
        node = self.at(ast.Name(id="AssertionError", ctx=ast.Load()), x)
        node._nv_assert = True
        st.stack.append(node)

    def op_ATTR(self, i, end, st, x):
        v = self.pop_expr(st)
        st.stack.append(self.at(ast.Attribute(value=v, attr=x.arg, ctx=ast.Load()), x))

    def op_METHOD(self, i, end, st, x):
        self.op_ATTR(i, end, st, x)
        st.stack.append(SELF)

    def op_BINOP(self, i, end, st, x):
        op, inplace = x.arg
        r = self.pop_expr(st)
        left = self.pop_expr(st)
        if inplace:
            st.stack.append(_InPlace(op, left, r, x))
        else:
            st.stack.append(self.at(ast.BinOp(left=left, op=getattr(ast, op)(), right=r), x))

    def op_COMPARE(self, i, end, st, x):
        r = self.pop_expr(st)
        left = self.pop_expr(st)
        node = ast.Compare(left=left, ops=[getattr(ast, x.arg)()], comparators=[r])
        st.stack.append(self.at(node, x))

    def op_SUBSCR(self, i, end, st, x):
        idx = self.pop_expr(st)
        obj = self.pop_expr(st)
        st.stack.append(self.at(ast.Subscript(value=obj, slice=idx, ctx=ast.Load()), x))

    def op_SLICE(self, i, end, st, x):
        stop, start = self.pop_expr(st), self.pop_expr(st)
        obj = self.pop_expr(st)
        sl = self.at(ast.Slice(lower=_none_is_absent(start), upper=_none_is_absent(stop),
                               step=None), x)
        st.stack.append(self.at(ast.Subscript(value=obj, slice=sl, ctx=ast.Load()), x))

    def op_BUILD_SLICE(self, i, end, st, x):
        if x.arg not in (2, 3):
            raise BytecodeError("BUILD_SLICE of an odd size", x.loc)
        parts = [self.pop_expr(st) for _ in range(x.arg)][::-1]
        parts += [None] * (3 - len(parts))
        node = ast.Slice(lower=_none_is_absent(parts[0]), upper=_none_is_absent(parts[1]),
                         step=_none_is_absent(parts[2]))
        st.stack.append(self.at(node, x))

    def op_BUILD_TUPLE(self, i, end, st, x):
        elts = [self.pop_expr(st) for _ in range(x.arg)][::-1]
        st.stack.append(self.at(ast.Tuple(elts=elts, ctx=ast.Load()), x))

    def op_BUILD_LIST(self, i, end, st, x):
        elts = [self.pop_expr(st) for _ in range(x.arg)][::-1]
        st.stack.append(self.at(ast.List(elts=elts, ctx=ast.Load()), x))

    def op_LIST_EXTEND(self, i, end, st, x):
        seq = self.pop_expr(st)
        lst = st.stack[-1] if st.stack else None
        if x.arg != 1 or not isinstance(lst, ast.List) or not isinstance(seq, ast.Tuple):
            raise Unsupported("Starred", x.loc)
        lst.elts.extend(seq.elts)

    def op_LIST_APPEND(self, i, end, st, x):
        """A display of more than 30 items is built a list element at a time."""
        v = self.pop_expr(st)
        if not 1 <= x.arg <= len(st.stack) or not isinstance(st.stack[-x.arg], ast.List):
            raise Unsupported("ListComp", x.loc)
        st.stack[-x.arg].elts.append(v)

    def op_LIST_TO_TUPLE(self, i, end, st, x):
        v = self.pop_expr(st)
        if not isinstance(v, ast.List):
            raise Unsupported("Starred", x.loc)
        st.stack.append(self.span(ast.Tuple(elts=v.elts, ctx=ast.Load()), v))

    def op_CALL(self, i, end, st, x):
        n, kwnames = x.arg
        args = [self.pop_expr(st) for _ in range(n)][::-1]
        top, below = self.pop(st), self.pop(st)
        if top is NULL or top is SELF:
            func = below
        elif below is NULL:
            func = top
        else:
            func, args = below, [top] + args     # (method, self) order: self is an argument
        self.push_call(st, func, args, tuple(kwnames), x)

    def op_CALL310(self, i, end, st, x):
        args = [self.pop_expr(st) for _ in range(x.arg)][::-1]
        self.push_call(st, self.pop_expr(st), args, (), x)

    def op_CALL_KW(self, i, end, st, x):
        names = self.pop_expr(st)
        kwnames = getattr(names, "_nv_const", None)
        if not isinstance(kwnames, tuple) or not all(isinstance(k, str) for k in kwnames):
            raise BytecodeError("a call's keyword names are not constant", x.loc)
        args = [self.pop_expr(st) for _ in range(x.arg)][::-1]
        if self.rules.global_null is None:
            func = self.pop_expr(st)
        else:
            top, below = self.pop(st), self.pop(st)
            func = below if top is NULL or top is SELF else top if below is NULL else None
            if func is None:
                func, args = below, [top] + args
        self.push_call(st, func, args, kwnames, x)

    def push_call(self, st, func, args, kwnames, x):
        if isinstance(func, (_Marker, _Elem, _InPlace)):
            raise BytecodeError("a call of something numbavec cannot read", x.loc)
        nkw = len(kwnames)
        if nkw > len(args):
            raise BytecodeError("a call has more keywords than arguments", x.loc)
        pos, kwv = (args[:len(args) - nkw], args[len(args) - nkw:]) if nkw else (args, [])
        keywords = []
        for name, v in zip(kwnames, kwv):
            kw = ast.keyword(arg=name, value=v)
            self.span(kw, v)
            keywords.append(kw)
        node = self.at(ast.Call(func=func, args=pos, keywords=keywords), x)
        st.stack.append(node)

    def op_STORE(self, i, end, st, x):
        self.store(st, self.at(ast.Name(id=x.arg, ctx=ast.Store()), x), self.pop(st), x)

    def op_STORE_ATTR(self, i, end, st, x):
        obj = self.pop_expr(st)
        value = self.pop(st)
        self.store(st, self.at(ast.Attribute(value=obj, attr=x.arg, ctx=ast.Store()), x),
                   value, x)

    def op_STORE_SUBSCR(self, i, end, st, x):
        idx, obj = self.pop_expr(st), self.pop_expr(st)
        value = self.pop(st)
        node = self.at(ast.Subscript(value=obj, slice=idx, ctx=ast.Store()), x)
        self.store(st, node, value, x)

    def op_STORE_SLICE(self, i, end, st, x):
        stop, start = self.pop_expr(st), self.pop_expr(st)
        obj = self.pop_expr(st)
        value = self.pop(st)
        sl = self.at(ast.Slice(lower=_none_is_absent(start), upper=_none_is_absent(stop),
                               step=None), x)
        self.store(st, self.at(ast.Subscript(value=obj, slice=sl, ctx=ast.Store()), x), value, x)

    def store(self, st, target, value, x):
        if st.mode != "stmt":
            raise _NotHere()
        if value is NULL or value is SELF or (isinstance(value, _Marker) and value.kind == "ITER"):
            raise BytecodeError("a store of something numbavec cannot read", x.loc)
        st.stores.append((target, value))

    def op_UNPACK(self, i, end, st, x):
        v = self.pop(st)
        u = _Unpack(v, x.arg, x.loc)
        for k in reversed(range(x.arg)):
            st.stack.append(_Elem(u, k))

    def op_COPY(self, i, end, st, x):
        if x.arg == 1:
            r = self.boolop_312(i, end, st, x)
            if r is not None:
                return r
        r = self.chained_at(i, end, st)
        if r is not None:
            return r
        if not 1 <= x.arg <= len(st.stack):
            raise BytecodeError("COPY below the stack", x.loc)
        st.stack.append(st.stack[-x.arg])

    def op_SWAP(self, i, end, st, x):
        r = self.chained_at(i, end, st)
        if r is not None:
            return r
        n = x.arg
        if not 2 <= n <= len(st.stack):
            raise BytecodeError("SWAP below the stack", x.loc)
        st.stack[-1], st.stack[-n] = st.stack[-n], st.stack[-1]

    def op_ROT(self, i, end, st, x):
        n = x.arg
        if not 2 <= n <= len(st.stack):
            raise BytecodeError("ROT below the stack", x.loc)
        v = st.stack.pop()
        st.stack.insert(len(st.stack) - (n - 1), v)

    def op_POP_TOP(self, i, end, st, x):
        v = self.pop(st)
        if isinstance(v, _Marker) and v.kind == "ITER":
            return self.unwind(i, end, st, v)
        if st.mode != "stmt" or len(st.stack) != st.base:
            raise _NotHere() if st.mode != "stmt" else BytecodeError(
                "a value is dropped inside an expression", x.loc)
        v = self.expr_of(v)
        st.out.append(self.span(ast.Expr(value=v), v))

    def op_RETURN(self, i, end, st, x):
        if st.mode != "stmt":
            raise _NotHere()
        v = self.pop(st)
        self.returned(st, v, x)

    def returned(self, st, v, x, unwound=0):
        if len(st.stack) + unwound != st.base:
            raise BytecodeError("a return leaves values behind", x.loc)
        if not x.implicit:
            v = self.expr_of(v)
            value = None if isinstance(v, ast.Constant) and v.value is None \
                and getattr(v, "_nv_bare", True) else v
            node = self.at(ast.Return(value=value), x)
            if value is not None:
                node.lineno, node.col_offset = min((node.lineno, node.col_offset),
                                                   (value.lineno, value.col_offset))
            st.out.append(node)

    def op_RAISE(self, i, end, st, x):
        if st.mode != "stmt":
            raise _NotHere()
        if x.arg not in (0, 1, 2):
            raise BytecodeError("RAISE_VARARGS of an odd count", x.loc)
        parts = [self.pop_expr(st) for _ in range(x.arg)][::-1]
        parts += [None] * (2 - len(parts))
        st.out.append(self.at(ast.Raise(exc=parts[0], cause=parts[1]), x))

    def unwind(self, i, end, st, it):
        """The iterator of the innermost for loop popped: a break (a jump to
        the loop's end) or a return from inside the loop."""
        if st.mode != "stmt":
            raise _NotHere()
        j = self.live(i + 1)
        if j >= self.n:
            raise BytecodeError("an iterator is dropped at the end of the code")
        y = self.I[j]
        if y.op == "JUMP" and not st.stack[st.base - 1:] and len(st.stack) == st.base - 1:
            if not ({y.target} | self.follow(y.target)) & st.ctx.break_targets:
                raise BytecodeError("a break numbavec cannot place", y.loc)
            st.out.append(self.at(ast.Break(), self.I[i] if self.I[i].loc else y))
            st.stack.append(it)
            return j + 1
        if y.op == "RETURN" and len(st.stack) == st.base:
            # `return v` inside the loop: v computed, swapped under, the
            # iterator popped
            v = st.stack.pop()
            self.returned(st, v, y, unwound=1)
            st.stack.append(it)
            return j + 1
        # return from inside the loop: the iterator popped, then the value
        # (a constant) loaded
        sub = _State(st.stack[:], "stmt", st.ctx, j)
        sub.base = len(st.stack)
        k = j
        while k < self.n and self.I[k].op != "RETURN":
            k = self.step(k, end, sub)
            if sub.out or sub.stores:
                raise BytecodeError("an iterator is dropped before a statement", y.loc)
        if k >= self.n:
            raise BytecodeError("an iterator is dropped before a statement", y.loc)
        v = sub.stack.pop() if len(sub.stack) > len(st.stack) else None
        if v is None:
            raise BytecodeError("a return numbavec cannot read", self.I[k].loc)
        st.stack[:] = sub.stack
        self.returned(st, v, self.I[k], unwound=1)
        st.stack.append(it)
        return k + 1

    def op_JUMP(self, i, end, st, x):
        if st.mode != "stmt" or len(st.stack) != st.base:
            raise _NotHere() if st.mode != "stmt" else BytecodeError(
                "a jump inside an expression", x.loc)
        reach = self.follow(x.target) | {x.target}
        if reach & st.ctx.cont_targets:
            st.out.append(self.at(ast.Continue(), x))
        elif reach & st.ctx.break_targets:
            st.out.append(self.at(ast.Break(), x))
        elif reach & st.ctx.cont and self.live(i + 1) >= end:
            pass                        # the region's own end, reached by a jump
        else:
            raise BytecodeError("a jump numbavec cannot place", x.loc)

    # ---- 3. conditions ----
    def op_CJUMP(self, i, end, st, x):
        test = self.pop_expr(st)
        leaf = _Leaf(test, x.arg, x.target, i + 1, st.start, _line(test))
        return self.conditional(leaf, i, end, st)

    def op_CJUMP_OR_POP(self, i, end, st, x):
        left = self.pop_expr(st)
        target = self.within(x.target, end)
        right = self.expr(i + 1, target, st.ctx) if target > i else None
        if right is None:
            raise BytecodeError("an and/or numbavec cannot read", x.loc)
        st.stack.append(self.boolop("Or" if x.arg else "And", left, right))
        return target

    def within(self, target, end):
        """target, or end where target is a jump threaded past end (the
        enclosing region's end leads there)."""
        if target > end and target in self.follow(end):
            return end
        return target

    def boolop_312(self, i, end, st, x):
        """`a and b` as 3.12 writes it: COPY 1; POP_JUMP_IF_x L; POP_TOP; b; L:"""
        j = self.live(i + 1)
        k = self.live(j + 1)
        if k >= self.n or self.I[j].op != "CJUMP" or self.I[k].op != "POP_TOP" \
                or not st.stack:
            return None
        target = self.within(self.I[j].target, end)
        if target <= k:
            return None
        right = self.expr(k + 1, target, st.ctx)
        if right is None:
            return None
        left = self.pop_expr(st)
        st.stack.append(self.boolop("Or" if self.I[j].arg else "And", left, right))
        return target

    def boolop(self, op, left, right):
        values = []
        for v in (left, right):
            if isinstance(v, ast.BoolOp) and type(v.op).__name__ == op and \
                    not getattr(v, "_nv_paren", False):
                values.extend(v.values)
            else:
                values.append(v)
        return self.span(ast.BoolOp(op=getattr(ast, op)(), values=values), left, right)

    def conditional(self, leaf, j, end, st):
        """A conditional jump at j with its test popped: an if, an assert, a
        conditional expression, or one test of a larger condition."""
        if st.mode == "leaf" and len(st.stack) == st.base:
            # a test of a larger condition (a conditional expression starting
            # here is found when its statement is parsed)
            st.leaf = leaf
            return leaf.fall
        leaves, t_exit, e_exit = self.chain(leaf, end)
        found = self.collapse(leaves, t_exit, e_exit)
        if found is not None:
            expr, t_to = found
            r = self.ifexp(expr if t_to == t_exit else self.negate(expr), t_exit, e_exit, end,
                           st.ctx)
            if r is not None:
                node, nxt = r
                st.stack.append(node)
                return nxt
        if st.mode == "leaf" and len(st.stack) == st.base:
            st.leaf = leaf
            return leaf.fall
        if st.mode != "stmt" or len(st.stack) != st.base or found is None:
            raise _NotHere() if st.mode != "stmt" else BytecodeError(
                "a condition numbavec cannot read", self.I[j].loc)
        expr, t_to = found
        test = expr if t_to == t_exit else self.negate(expr)
        r = self.assertion(expr if t_to == e_exit else self.negate(expr), t_exit, e_exit, st)
        if r is not None:
            return r
        return self.if_statement(test, leaves, t_exit, e_exit, end, st)

    def chain(self, first, end):
        """The tests that form one condition with first: [leaves], T, E.
        The longest run of tests, each falling into the next, whose jumps
        leave it for two places only; a shorter run may leave it for three
        (`a or (b and c)`: after b, the body, the else and c)."""
        leaves = cand = [first]
        while len(cand) < _MAX_CHAIN:
            fall = self.live(cand[-1].fall)
            if fall >= end or fall in self.back:
                break
            nxt = self.leaf_at(fall, end)
            if nxt is None:
                break
            nfall = self.live(nxt.fall)
            if nfall in self.back:
                break
            cand = cand + [nxt]
            if any(lf.target <= lf.start for lf in cand[1:]):
                break
            starts = {self.live(lf.start) for lf in cand[1:]}
            exits = {self.live(lf.target) for lf in cand if self.live(lf.target) not in starts}
            exits.add(nfall)
            if len(exits) == 2:
                leaves = cand
        t_exit = self.live(leaves[-1].fall)
        others = {self.live(lf.target) for lf in leaves} - {self.live(lf.start)
                                                           for lf in leaves[1:]}
        others.discard(t_exit)
        e_exit = others.pop() if len(others) == 1 else t_exit
        return leaves, t_exit, e_exit

    def leaf_at(self, i, end):
        """The test starting at i (a pure expression then a conditional
        jump), or None.  Kept: conditions look ahead at the tests after
        theirs, and nested ones would otherwise parse them again and again."""
        key = (i, end)
        if key not in self.leaves:
            self.leaves[key] = self._leaf_at(i, end)
        return self.leaves[key]

    def _leaf_at(self, i, end):
        st = _State([], "leaf", _Ctx([], frozenset()), i)
        try:
            while i < end and st.leaf is None:
                if self.I[i].op in _SKIP:
                    i += 1
                    continue
                i = self.step(i, end, st)
        except (_NotHere, BytecodeError, Unsupported):
            return None
        if st.leaf is None or st.stack:
            return None
        return st.leaf

    def expr(self, i, end, ctx):
        """The one value [i, end) computes, with no statement, or None."""
        st = _State([], "expr", ctx, i)
        try:
            while i < end:
                if self.I[i].op in _SKIP:
                    i += 1
                    continue
                i = self.step(i, end, st)
        except (_NotHere, BytecodeError):
            return None
        if i != end or len(st.stack) != 1 or isinstance(st.stack[0], (_Marker, _Elem, _InPlace)):
            return None
        return st.stack[0]

    def collapse(self, leaves, t_exit, e_exit):
        """(expression, where it goes when true) of the chain, merging
        neighbouring tests into and/or; None when the jumps do not form one."""
        nodes = []
        for lf in leaves:
            fall = self.live(lf.fall)
            tgt = self.live(lf.target)
            t, f = (tgt, fall) if lf.sense else (fall, tgt)
            nodes.append([self.live(lf.start), lf.expr, t, f, lf.line])
        nodes[0][0] = -1            # nothing jumps to the first test
        refs = {}
        for nd in nodes:
            for e in (nd[2], nd[3]):
                refs[e] = refs.get(e, 0) + 1
        k = len(nodes) - 2
        while len(nodes) > 1:
            if k < 0:
                return None
            n, m = nodes[k], nodes[k + 1]
            if refs.get(m[0], 0) == 1 and m[0] in (n[2], n[3]):
                merged = self.merge(n, m)
                if merged is not None:
                    for e in (n[2], n[3], m[2], m[3]):
                        refs[e] -= 1
                    for e in (merged[2], merged[3]):
                        refs[e] = refs.get(e, 0) + 1
                    nodes[k:k + 2] = [merged]
                    k = min(k, len(nodes) - 2)
                    continue
            k -= 1
        _, expr, t, f, _ = nodes[0]
        if {t, f} != {t_exit, e_exit} and not (t == f == t_exit):
            return None
        return expr, t

    def merge(self, n, m):
        start, a, nt, nf, line = n
        _, b, mt, mf, _ = m
        if nt == m[0] and nf == mf:
            return [start, self.boolop("And", a, b), mt, mf, line]
        if nf == m[0] and nt == mt:
            return [start, self.boolop("Or", a, b), mt, mf, line]
        if nt == m[0] and nf == mt:
            return [start, self.boolop("And", a, self.negate(b)), mf, mt, line]
        if nf == m[0] and nt == mf:
            return [start, self.boolop("Or", a, self.negate(b)), mf, mt, line]
        return None

    def negate(self, e):
        if isinstance(e, ast.UnaryOp) and isinstance(e.op, ast.Not):
            return e.operand
        return self.span(ast.UnaryOp(op=ast.Not(), operand=e), e)

    def ifexp(self, test, t_exit, e_exit, end, ctx):
        """`body if test else orelse`: both arms a value, the first jumping
        over the second."""
        if e_exit <= t_exit:
            return None
        p = self.prev_live(e_exit)
        if p < t_exit or self.I[p].op != "JUMP" or self.I[p].target <= e_exit:
            return None
        m = self.I[p].target
        if m > end:
            if m not in self.follow(end):
                return None
            m = end             # a jump threaded past the enclosing expression's end
        body = self.expr(t_exit, p, ctx)
        if body is None:
            return None
        orelse = self.expr(e_exit, m, ctx)
        if orelse is None:
            return None
        return self.span(ast.IfExp(test=test, body=body, orelse=orelse), test, orelse), m

    def assertion(self, test, t_exit, e_exit, st):
        """`assert test, msg`: the fall-through raises AssertionError, the
        test being true jumps over it."""
        if e_exit <= t_exit or self.I[t_exit].op != "ASSERTION_ERROR":
            return None
        body = self.block(t_exit, e_exit, st.ctx.derive(frozenset({e_exit})))
        if len(body) != 1 or not isinstance(body[0], ast.Raise) or body[0].cause is not None:
            return None
        exc = body[0].exc
        msg = None
        if isinstance(exc, ast.Call) and getattr(exc.func, "_nv_assert", False) \
                and len(exc.args) == 1 and not exc.keywords:
            msg = exc.args[0]
        elif not getattr(exc, "_nv_assert", False):
            return None
        st.out.append(self.span(ast.Assert(test=test, msg=msg), test))
        return e_exit

    def if_statement(self, test, leaves, t_exit, e_exit, end, st):
        ctx = st.ctx
        if e_exit == t_exit:
            raise BytecodeError("a condition that goes nowhere", self.I[t_exit].loc)
        if not t_exit < e_exit <= end and (self.follow(e_exit) | {e_exit}) & ctx.cont:
            # the false branch goes where this region's end goes (a jump
            # threaded to the loop's head): the rest of the region is the body
            return self.if_rest(test, t_exit, end, st)
        if self.live(t_exit) == self.prev_live(e_exit) and self._copied_back_jump(t_exit, ctx):
            # 3.12: `if c: rest` at a loop's end as `if not c: continue` + rest,
            # the loop's closing jump copied into the branch
            return self.if_rest(self.negate(test), e_exit, end, st)
        p = self.prev_live(e_exit)
        orelse = []
        nxt = e_exit
        body_end = e_exit
        if p >= t_exit and self.I[p].op == "JUMP" and self._structural(p):
            m = self.I[p].target
            reach = self.follow(m) | {m}
            if e_exit < m <= end:
                else_end, nxt = m, m
            elif reach & ctx.cont:
                else_end, nxt = end, end
            else:
                else_end = None
            if else_end is not None:
                body_end = p
                else_ctx = ctx.derive(self.follow(else_end) | {else_end} | (
                    ctx.cont if else_end == end else set()))
                orelse = self.block(e_exit, else_end, else_ctx)
        if e_exit > end:
            raise BytecodeError("a condition jumps out of its block", self.I[t_exit].loc)
        body_ctx = ctx.derive(self.follow(body_end) | {body_end, nxt} | (
            ctx.cont if nxt == end else set()))
        body = self.block(t_exit, body_end, body_ctx) or [self.at(ast.Pass(), self.I[t_exit])]
        node = self.at(ast.If(test=test, body=body, orelse=orelse), None)
        self.span(node, test)
        st.out.append(self.split_nested(node))
        return nxt

    def if_rest(self, test, start, end, st):
        body = self.block(start, end, st.ctx.derive(st.ctx.cont)) or [
            self.at(ast.Pass(), self.I[start])]
        node = self.span(ast.If(test=test, body=body, orelse=[]), test)
        st.out.append(self.split_nested(node))
        return end

    def _copied_back_jump(self, t, ctx):
        """A jump to the loop's head made by the compiler from the condition
        before it (located as it), not a continue statement."""
        k = self.live(t)
        x = self.I[k]
        q = self.prev_live(k)
        return x.op == "JUMP" and x.target in ctx.cont_targets and x.target in ctx.cont \
            and q >= 0 and self.I[q].op == "CJUMP" and x.loc == self.I[q].loc

    def forward(self, i):
        """Where i leads through unconditional forward jumps."""
        seen = 0
        while seen < 64:
            k = self.live(i)
            if k >= self.n or self.I[k].op != "JUMP" or self.I[k].target <= k:
                return k
            i = self.I[k].target
            seen += 1
        return i

    def _structural(self, p):
        """Whether the jump at p closes an if's body (placed by the compiler,
        located as what precedes it) rather than being a break or continue
        statement of its own."""
        x = self.I[p]
        if getattr(x, "implicit", False) or x.loc is None:
            return True
        q = self.prev_live(p)
        if q < 0 or self.I[q].op in ("CJUMP", "CJUMP_OR_POP"):
            return False
        return self.I[q].loc == x.loc or self.I[q].loc is None

    def split_nested(self, node):
        """`if a and b:` whose b starts on a later line and has no else:
        the source had `if a:` then `if b:` (the two compile alike)."""
        test = node.test
        if node.orelse or not isinstance(test, ast.BoolOp) or not isinstance(test.op, ast.And):
            return node
        vals = test.values
        for k in range(1, len(vals)):
            if vals[k].lineno > vals[k - 1].end_lineno:
                outer = vals[:k]
                inner = vals[k:]
                inner_test = inner[0] if len(inner) == 1 else self.span(
                    ast.BoolOp(op=ast.And(), values=inner), inner[0], inner[-1])
                inner_if = self.span(ast.If(test=inner_test, body=node.body, orelse=[]),
                                     inner_test)
                node.test = outer[0] if len(outer) == 1 else self.span(
                    ast.BoolOp(op=ast.And(), values=outer), outer[0], outer[-1])
                node.body = [self.split_nested(inner_if)]
                return node
        return node

    # ---- 4. loops ----
    def op_GET_ITER(self, i, end, st, x):
        if st.mode != "stmt" or len(st.stack) != st.base + 1:
            raise _NotHere() if st.mode != "stmt" else BytecodeError(
                "an iterator inside an expression", x.loc)
        iterable = self.pop_expr(st)
        h = self.live(i + 1)
        if h >= self.n or self.I[h].op != "FOR_ITER":
            raise BytecodeError("GET_ITER without a for loop", x.loc)
        return self.for_loop(iterable, h, end, st, x)

    def for_loop(self, iterable, h, end, st, x):
        ctx = st.ctx
        jmax = self.back.get(h)
        if jmax is None:
            jmax = self.I[h].target     # its body always leaves it (a return)
        after = self.live(self.I[h].target)
        for name in self.rules.for_exit:
            if after < self.n and self.I[after].op == name:
                after = self.live(after + 1)
        it = _Marker("ITER")
        # the loop variable: stores of the value FOR_ITER pushes
        tst = _State(st.stack + [it, _Marker("NEXT")], "stmt", ctx, h + 1)
        tst.base = len(st.stack) + 1
        k = h + 1
        while len(tst.stack) > tst.base or tst.stores:
            if k >= jmax:
                raise BytecodeError("a for loop without a target", x.loc)
            if self.I[k].op in _SKIP:
                k += 1
                continue
            k = self.step(k, end, tst)
            if len(tst.stack) == tst.base and tst.stores:
                break
        target = self.assignment(tst.stores)
        return self.loop_rest(ast.For, target, iterable, h, k, jmax, after, end, st, x,
                              st.stack + [it], {jmax, h})

    def loop_rest(self, cls, target, head, cont_at, body_start, body_end, after, end, st, x,
                  base, cont):
        ctx = st.ctx
        brk = self.break_target(body_start, body_end, after, end, ctx)
        if brk is None or brk == after:
            else_end, nxt = after, after
        elif brk <= end:
            else_end, nxt = brk, brk
        else:
            else_end, nxt = end, end
        brk_set = self.follow(nxt) | {nxt} | (ctx.cont if nxt >= end else set())
        cont_set = set()
        for c in cont:
            cont_set |= self.follow(c) | {c}
        body_ctx = _Ctx(base, cont_set, frozenset(cont_set), frozenset(brk_set),
                        self.I[body_end].loc if body_end < self.n else None)
        body = self.block(body_start, body_end, body_ctx)
        orelse = []
        if else_end > after:
            orelse = self.block(after, else_end, ctx.derive(brk_set))
        body = body or [self.at(ast.Pass(), self.I[body_start])]
        if cls is ast.For:
            node = ast.For(target=target, iter=head, body=body, orelse=orelse, type_comment=None)
        else:
            node = ast.While(test=head, body=body, orelse=orelse)
        self.at(node, x)
        st.out.append(node)
        return nxt

    def break_target(self, start, stop, after, end, ctx):
        """Where the loop's breaks go: the first jump from [start, stop) to
        at or after after; None when there is none."""
        found = None
        for j in range(start, stop):
            y = self.I[j]
            if y.op == "JUMP" and y.target >= after:
                if found is None or y.target < found:
                    found = y.target
        return found

    def while_at(self, s, end, ctx):
        """A while loop starting at s: (While, next index), or None."""
        x = self.I[s]
        rotated = self.rotated_while(s, end, ctx)
        jtrue = self.back.get(s)
        if jtrue is not None and jtrue < end and self.I[jtrue].op == "JUMP" and \
                (rotated is None or jtrue > rotated[3]):
            st = _State(list(ctx.base), "stmt", ctx, s)
            test = self.at(ast.Constant(value=True), x)
            nxt = self.loop_rest(ast.While, None, test, s, s, jtrue, self.live(jtrue + 1), end,
                                 st, x, list(ctx.base), {jtrue, s})
            return st.out[0], nxt
        if rotated is None:
            return None
        test, body, bottom, jmax, e_exit = rotated
        st = _State(list(ctx.base), "stmt", ctx, s)
        nxt = self.loop_rest(ast.While, None, test, s, body, bottom, e_exit, end, st, x,
                             list(ctx.base), {bottom, s})
        return st.out[0], nxt

    def rotated_while(self, s, end, ctx):
        """(test, body start, bottom test start, back jump, exit) of `while
        test:` compiled as the test, the body, and the test again jumping
        back to the body; None when s starts no such loop."""
        if not self._loop_ahead(s, end):
            return None
        first = self.leaf_at(s, end)
        if first is None:
            return None
        leaves = [first]
        while True:
            t_exit = self.live(leaves[-1].fall)
            jmax = self.back.get(t_exit)
            if jmax is not None and t_exit < jmax < end:
                r = self.match_bottom(s, t_exit, jmax, leaves)
                if r is not None:
                    return r
            if t_exit >= end:
                return None
            nxt = self.leaf_at(t_exit, end)
            if nxt is None:
                return None
            leaves.append(nxt)

    def _loop_ahead(self, s, end):
        """Whether a loop's body could start after a test at s: a jump back
        lands after s with no statement between (a quick filter: most
        statements start no loop)."""
        for k in range(s, end):
            if k > s and k in self.back:
                return True
            if self.I[k].op in _ENDS_A_TEST:
                return False
        return False

    def match_bottom(self, s, body, jmax, leaves):
        top = [k for k in range(s, body) if self.I[k].op not in _SKIP]
        last = jmax if self.I[jmax].op == "CJUMP" else self.prev_live(jmax)
        bottom = []
        k = last
        while k >= body and len(bottom) < len(top):
            if self.I[k].op not in _SKIP:
                bottom.append(k)
            k -= 1
        bottom.reverse()
        if len(bottom) != len(top):
            return None
        for a, b in zip(top, bottom):
            x, y = self.I[a], self.I[b]
            if x.op != y.op or x.loc != y.loc:
                return None
            if x.op != "CJUMP" and _key(x.arg) != _key(y.arg):
                return None
        ends = {self.live(lf.target) for lf in leaves} - {self.live(lf.start) for lf in leaves}
        ends.discard(body)
        if len(ends) != 1:
            return None
        e_exit = ends.pop()
        if e_exit <= jmax:
            return None
        found = self.collapse(leaves, body, e_exit)
        if found is None:
            return None
        expr, t_to = found
        test = expr if t_to == body else self.negate(expr)
        return test, body, bottom[0], jmax, e_exit

    # ---- 5. chained comparisons ----
    def chained_at(self, i, end, st):
        """`a < b < c`: at the SWAP 2; COPY 2 (DUP_TOP; ROT_THREE) before a
        COMPARE, with b on the stack over a."""
        j = self.live(i + 1)
        k = self.live(j + 1)
        if k >= self.n:
            return None
        x, y, z = self.I[i], self.I[j], self.I[k]
        pattern = (x.op == "SWAP" and x.arg == 2 and y.op == "COPY" and y.arg == 2) or \
                  (x.op == "COPY" and x.arg == 1 and y.op == "ROT" and y.arg == 3)
        if not pattern or z.op != "COMPARE" or len(st.stack) < 2:
            return None
        right = self.pop_expr(st)
        left = self.pop_expr(st)
        ops, comps = [z.arg], [right]
        i = self.live(k + 1)
        cleanup = None
        jump_ctx = False
        while True:
            y = self.I[i]
            if y.op == "CJUMP_OR_POP" and not y.arg:
                tgt, i = y.target, i + 1
            elif y.op == "COPY" and y.arg == 1 and self.I[self.live(i + 1)].op == "CJUMP" \
                    and self.I[self.live(self.live(i + 1) + 1)].op == "POP_TOP":
                jj = self.live(i + 1)
                if self.I[jj].arg:
                    return self._chain_fail(st, left, right)
                tgt, i = self.I[jj].target, self.live(jj + 1) + 1
            elif y.op == "CJUMP" and not y.arg:
                tgt, i = y.target, i + 1
                jump_ctx = True
            else:
                return self._chain_fail(st, left, right)
            if cleanup is not None and tgt != cleanup:
                return self._chain_fail(st, left, right)
            cleanup = tgt
            sub = _State([], "expr", st.ctx, i)
            # the next operand, up to the next dup pattern or the last COMPARE
            while True:
                if i >= self.n:
                    return self._chain_fail(st, left, right)
                if self.I[i].op in _SKIP:
                    i += 1
                    continue
                a, b = self.live(i + 1), None
                b = self.live(a + 1) if a < self.n else self.n
                if b < self.n and ((self.I[i].op == "SWAP" and self.I[i].arg == 2
                                    and self.I[a].op == "COPY" and self.I[a].arg == 2)
                                   or (self.I[i].op == "COPY" and self.I[i].arg == 1
                                       and self.I[a].op == "ROT" and self.I[a].arg == 3)) \
                        and self.I[b].op == "COMPARE" and len(sub.stack) == 1:
                    comps.append(sub.stack.pop())
                    ops.append(self.I[b].arg)
                    i = self.live(b + 1)
                    break
                if self.I[i].op == "COMPARE" and len(sub.stack) == 1:
                    comps.append(sub.stack.pop())
                    ops.append(self.I[i].arg)
                    i += 1
                    return self._chain_end(st, left, ops, comps, i, cleanup, jump_ctx, end)
                try:
                    i = self.step(i, end, sub)
                except (_NotHere, BytecodeError):
                    return self._chain_fail(st, left, right)

    def _chain_fail(self, st, left, right):
        raise BytecodeError("a chained comparison numbavec cannot read")

    def _chain_end(self, st, left, ops, comps, i, cleanup, jump_ctx, end):
        node = ast.Compare(left=left, ops=[getattr(ast, o)() for o in ops], comparators=comps)
        self.span(node, left, comps[-1])
        c = self.live(cleanup)
        if not jump_ctx:
            # value: JUMP end; cleanup: SWAP 2 (ROT_TWO); POP_TOP; end:
            j = self.live(i)
            if self.I[j].op != "JUMP":
                raise BytecodeError("a chained comparison numbavec cannot read")
            after = self.I[j].target
            if not (self.I[c].op == "SWAP" and self.I[c].arg == 2
                    and self.I[self.live(c + 1)].op == "POP_TOP"
                    and self.live(self.live(c + 1) + 1) == self.live(after)):
                raise BytecodeError("a chained comparison numbavec cannot read")
            st.stack.append(node)
            return after
        # test: COMPARE; POP_JUMP_IF_x X; JUMP Y; cleanup: POP_TOP [; JUMP Z]
        # where the cleanup goes on as the chain does when false
        bad = BytecodeError("a chained comparison numbavec cannot read")
        j = self.live(i)
        y = self.I[j]
        jt = self.live(j + 1)
        if y.op != "CJUMP" or jt >= self.n or self.I[jt].op != "JUMP" \
                or self.I[c].op != "POP_TOP":
            raise bad
        fall = self.I[jt].target
        cn = self.live(c + 1)
        after_cleanup = self.I[cn].target if cn < self.n and self.I[cn].op == "JUMP" else cn
        false_dest = fall if y.arg else y.target
        if not (self.follow(false_dest) | {false_dest}) & (self.follow(after_cleanup)
                                                           | {after_cleanup}):
            raise bad
        if fall < j:
            # the fall-through jumps back (a loop's head): the test as a jump there
            leaf = _Leaf(node, not y.arg, fall, self.forward(y.target), st.start, _line(node))
        else:
            leaf = _Leaf(node, y.arg, y.target, fall, st.start, _line(node))
        return self.conditional(leaf, j, end, st)


def _key(arg):
    """A hashable, type-exact stand-in for an instruction argument."""
    if isinstance(arg, (float, complex)):
        return (type(arg), repr(arg))
    if isinstance(arg, tuple):
        return (tuple, tuple(_key(a) for a in arg))
    try:
        hash(arg)
    except TypeError:
        return (type(arg), id(arg))
    return (type(arg), arg)


def _negative(v):
    if isinstance(v, complex):
        return False
    return v < 0 or (isinstance(v, float) and repr(v).startswith("-"))


def _none_is_absent(e):
    if isinstance(e, ast.Constant) and e.value is None:
        return None
    return e


def _line(e):
    return getattr(e, "lineno", 0)


def _has_docstring(code):
    """co_consts[0] is the docstring when it is a str (3.10-3.13 put None
    there otherwise); 3.14 says so in a flag."""
    flag = 0x4000000        # CO_HAS_DOCSTRING, 3.14
    if sys.version_info >= (3, 14):
        return bool(code.co_flags & flag)
    return True
