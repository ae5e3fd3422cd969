"""The second front end: a kernel's ``ast.FunctionDef`` rebuilt from its code object.

numbavec compiles a kernel from the ``ast`` of its source (numbavec/_source.py).
Where Python keeps no source (``python -c``, the REPL before 3.13, ``exec``
of a string, ``.pyc``-only modules, functions built by ``compile()`` from a
rewritten AST) or the source found is not the one the function was compiled
from, the function's code object is all there is.  This module reads it
(bytecode, constants, names, closure cells, line table and, from 3.11,
positions) and rebuilds the FunctionDef the parser would have given, so the
lowering, its checks and every error message stay the C compiler's own.

Pipeline:
  1. decode: co_code -> a version-independent list of instructions (_Ins),
     with jump targets as indices and each instruction's location.  What
     differs between CPython versions is in numbavec/_bytecode_tables.py.
  2. numbavec/_bytecode_ast.py undoes the code generator's optimisations
     (tail duplication of returns) and rebuilds the statements and
     expressions (control flow is structured in the kernel language).
  3. check: the rebuilt tree is compiled again by this interpreter and its
     code compared with the original (instructions, constants, names,
     variables; line numbers and NOPs aside).  A tree whose code differs is
     never compiled: the kernel is refused with a TypingError instead.  So a
     construct the rebuilder misreads, a hostile or damaged code object, or
     bytecode of another version cannot become a wrong program.

The same comparison tells whether a function's source still matches its
code (:func:`source_matches`): a file edited after import is not compiled
against the old code's globals.
"""
import __future__
import ast
import functools
import operator
import sys
import types

from numbavec import _bytecode_tables as tables

MAX_CODE_UNITS = 1 << 16       # a kernel's bytecode is a few hundred units


class BytecodeError(Exception):
    """The code object cannot be rebuilt: why, and the (line, col) it is about."""

    def __init__(self, why, loc=None):
        super().__init__(why)
        self.why, self.loc = why, loc


class Unsupported(Exception):
    """A construct outside the kernel language: the ast class the source
    path would have given, so that the compiler's own message comes out."""

    def __init__(self, cls, loc=None, node=None):
        super().__init__(cls)
        self.cls, self.loc, self.node = cls, loc, node


class _Ins:
    """One decoded instruction: a normalized op name, its argument, its jump
    target (an index into the list) and its location (line, col, end line,
    end col), or None where the line table gives none."""

    __slots__ = ("op", "arg", "target", "loc", "off", "implicit")

    def __init__(self, op, arg=None, target=None, loc=None, off=0):
        self.op, self.arg, self.target, self.loc, self.off = op, arg, target, loc, off
        self.implicit = False

    def __repr__(self):
        tgt = f" ->{self.target}" if self.target is not None else ""
        return f"<{self.op} {self.arg!r}{tgt} @{self.loc}>"


# ---- locations ------------------------------------------------------------

def _varint(data, i):
    """(value, next index) of a location table varint: 6-bit chunks, bit 6 set
    while more follow."""
    shift = value = 0
    while True:
        if i >= len(data):
            raise BytecodeError("the line table is truncated")
        b = data[i]
        i += 1
        value |= (b & 63) << shift
        shift += 6
        if not b & 64:
            return value, i
        if shift > 60:
            raise BytecodeError("the line table has an oversized number")


def _svarint(data, i):
    value, i = _varint(data, i)
    return (-(value >> 1) if value & 1 else value >> 1), i


def _locations_311(code, nunits):
    """[(line, col, end_line, end_col) or None] per code unit, from the
    location table of 3.11 on (Objects/locations.md); bounds-checked, so a
    damaged table is a BytecodeError, never a read past its end."""
    data = code.co_linetable
    out = []
    line = code.co_firstlineno
    i = 0
    while i < len(data) and len(out) < nunits:
        first = data[i]
        i += 1
        if not first & 0x80:
            raise BytecodeError("the line table is damaged")
        kind, length = (first >> 3) & 15, (first & 7) + 1
        if kind == 15:
            loc = None
        elif kind == 14:
            delta, i = _svarint(data, i)
            end_delta, i = _varint(data, i)
            col, i = _varint(data, i)
            end_col, i = _varint(data, i)
            line += delta
            loc = (line, col - 1, line + end_delta, end_col - 1)
        elif kind == 13:
            delta, i = _svarint(data, i)
            line += delta
            loc = (line, -1, line, -1)
        elif kind >= 10:
            if i + 2 > len(data):
                raise BytecodeError("the line table is truncated")
            line += kind - 10
            loc = (line, data[i], line, data[i + 1])
            i += 2
        else:
            if i >= len(data):
                raise BytecodeError("the line table is truncated")
            second = data[i]
            i += 1
            col = kind * 8 + ((second >> 4) & 7)
            loc = (line, col, line, col + (second & 15))
        out.extend([loc] * length)
    out.extend([None] * (nunits - len(out)))
    return out[:nunits]


def _locations_310(code, nunits):
    """[(line, -1, line, -1) or None] per code unit, from 3.10's line table:
    (bytes delta, signed line delta) pairs, -128 meaning no line."""
    data = code.co_linetable
    out = []
    line = code.co_firstlineno
    for i in range(0, len(data) - 1, 2):
        sdelta, ldelta = data[i], data[i + 1]
        if ldelta >= 128:
            ldelta -= 256
        if ldelta == -128:
            loc = None
        else:
            line += ldelta
            loc = (line, -1, line, -1)
        out.extend([loc] * (sdelta // 2))
        if len(out) >= nunits:
            break
    out.extend([None] * (nunits - len(out)))
    return out[:nunits]


# ---- decoding -------------------------------------------------------------

def _raw(code, rules):
    """[(unit, name, arg, target unit or None, units)] of co_code: EXTENDED_ARG
    folded into the next argument, inline caches skipped."""
    co = code.co_code
    if len(co) % 2 or len(co) // 2 > MAX_CODE_UNITS:
        raise BytecodeError("the bytecode has an impossible length")
    names = _opnames(rules)
    n = len(co) // 2
    out = []
    unit = 0
    ext = 0
    start = 0
    while unit < n:
        opcode, arg = co[2 * unit], co[2 * unit + 1]
        name = names.get(opcode)
        if name is None:
            raise BytecodeError(f"unknown opcode {opcode} at offset {2 * unit}")
        arg |= ext
        if name == "EXTENDED_ARG":
            ext = arg << 8
            if ext >= 1 << 32:
                raise BytecodeError("an EXTENDED_ARG chain is too long")
            unit += 1
            continue
        ext = 0
        if opcode < rules.have_argument:
            arg = None
        nxt = unit + 1 + rules.caches.get(name, 0)
        kind = rules.jumps.get(name)
        target = None
        if kind is not None and arg is None:
            raise BytecodeError(f"{name} at offset {2 * unit} has no target")
        if kind == "abs":
            target = arg
        elif kind == "fwd":
            target = nxt + arg
        elif kind == "back":
            target = nxt - arg
        if target is not None and not 0 <= target < n:
            raise BytecodeError(f"a jump at offset {2 * unit} leaves the code")
        out.append((start, name, arg, target, nxt))
        unit = nxt
        start = unit
    if ext:
        raise BytecodeError("the bytecode ends in EXTENDED_ARG")
    return out


_names_cache = {}


def _opnames(rules):
    found = _names_cache.get(id(rules))
    if found is None:
        found = _names_cache[id(rules)] = {v: k for k, v in rules.opmap.items()}
    return found


def current_rules():
    rules = tables.rules_for(sys.version_info)
    if rules is None:
        raise BytecodeError(
            f"numbavec cannot read the bytecode of Python {sys.version_info[0]}."
            f"{sys.version_info[1]} (it reads 3.10 to "
            f"{max(tables.RULES)[0]}.{max(tables.RULES)[1]})")
    return rules


def decode(code, rules=None):
    """The normalized instructions of code (a list of _Ins)."""
    rules = rules or current_rules()
    raw = _raw(code, rules)
    nunits = len(code.co_code) // 2
    locs = (_locations_310 if rules.linetable == "310" else _locations_311)(code, nunits)
    dec = _Decoder(code, rules, locs)
    first_of = {}
    for unit, name, arg, target, nxt in raw:
        first_of[unit] = len(dec.out)
        dec.one(unit, name, arg, target)
    # a target is the first normalized instruction at or after its unit
    index_of = {}
    nxt_index = len(dec.out)
    for unit in range(nunits, -1, -1):
        if unit in first_of:
            nxt_index = first_of[unit]
        index_of[unit] = nxt_index
    for ins in dec.out:
        if ins.target is not None:
            ins.target = index_of[ins.target]
    return dec.out


class _Decoder:
    """Turns each raw instruction into zero or more _Ins."""

    def __init__(self, code, rules, locs):
        self.code, self.rules, self.locs = code, rules, locs
        self.out = []
        self.kwnames = None
        n = code.co_varnames + code.co_cellvars + code.co_freevars
        self.cells_310 = code.co_cellvars + code.co_freevars
        self.localsplus = n
        self.nlocalsplus = (len(code.co_varnames) + len(code.co_freevars)
                            + sum(1 for c in code.co_cellvars if c not in code.co_varnames))

    def emit(self, op, arg=None, target=None, unit=0):
        self.out.append(_Ins(op, arg, target, self.locs[unit] if unit < len(self.locs) else None,
                             2 * unit))

    def const(self, i):
        try:
            return self.code.co_consts[i]
        except (IndexError, TypeError):
            raise BytecodeError(f"a constant index {i} is out of range") from None

    def name(self, i):
        try:
            return self.code.co_names[i]
        except (IndexError, TypeError):
            raise BytecodeError(f"a name index {i} is out of range") from None

    def local(self, i):
        if self.rules.linetable != "310":
            return self.deref(i)        # 3.11 on: an index into all the frame's variables
        try:
            return self.code.co_varnames[i]
        except (IndexError, TypeError):
            raise BytecodeError(f"a local variable index {i} is out of range") from None

    def deref(self, i):
        """The name of a cell or free variable (3.10: an index into cells and
        frees; 3.11 on: into all the frame's variables)."""
        if self.rules.linetable == "310":
            names = self.cells_310
        else:
            # _varname_from_oparg does not check its index (3.13 reads past
            # the names and crashes): checked here, against the frame's count
            if not 0 <= i < self.nlocalsplus:
                raise BytecodeError(f"a variable index {i} is out of range")
            try:
                return self.code._varname_from_oparg(i)
            except Exception:  # noqa: BLE001 - a damaged code object: say so below
                raise BytecodeError(f"a variable index {i} is out of range") from None
        if not 0 <= i < len(names):
            raise BytecodeError(f"a variable index {i} is out of range")
        return names[i]

    def one(self, unit, name, arg, target):
        handler = _HANDLERS.get(name)
        if handler is None:
            cls = _UNSUPPORTED_OPS.get(name)
            if cls is not None:
                self.emit("UNSUPPORTED", cls, None, unit)
                return
            raise BytecodeError(f"the opcode {name} is not one numbavec reads", self.locs[unit])
        handler(self, unit, arg, target)


def _simple(op, with_arg=False):
    def handler(dec, unit, arg, target):
        dec.emit(op, arg if with_arg else None, target, unit)
    return handler


def _h_load_const(dec, unit, arg, target):
    dec.emit("CONST", dec.const(arg), None, unit)


def _h_return_const(dec, unit, arg, target):
    dec.emit("CONST", dec.const(arg), None, unit)
    dec.emit("RETURN", None, None, unit)


def _h_small_int(dec, unit, arg, target):
    dec.emit("CONST", arg, None, unit)


def _h_load_fast(dec, unit, arg, target):
    dec.emit("LOAD", dec.local(arg), None, unit)


def _h_store_fast(dec, unit, arg, target):
    dec.emit("STORE", dec.local(arg), None, unit)


def _h_load_fast2(dec, unit, arg, target):
    dec.emit("LOAD", dec.local(arg >> 4), None, unit)
    dec.emit("LOAD", dec.local(arg & 15), None, unit)


def _h_store_fast2(dec, unit, arg, target):
    dec.emit("STORE", dec.local(arg >> 4), None, unit)
    dec.emit("STORE", dec.local(arg & 15), None, unit)


def _h_store_load_fast(dec, unit, arg, target):
    dec.emit("STORE", dec.local(arg >> 4), None, unit)
    dec.emit("LOAD", dec.local(arg & 15), None, unit)


def _h_load_deref(dec, unit, arg, target):
    dec.emit("LOAD", dec.deref(arg), None, unit)


def _h_store_deref(dec, unit, arg, target):
    name = dec.deref(arg)
    if name in dec.code.co_freevars:
        dec.emit("UNSUPPORTED", "Nonlocal", None, unit)
    else:
        dec.emit("STORE", name, None, unit)


def _h_load_global(dec, unit, arg, target):
    null = dec.rules.global_null
    if null is None:
        dec.emit("LOAD", dec.name(arg), None, unit)
        return
    if arg & 1 and null == "before":
        dec.emit("NULL", None, None, unit)
    dec.emit("LOAD", dec.name(arg >> 1), None, unit)
    if arg & 1 and null == "after":
        dec.emit("NULL", None, None, unit)


def _h_load_name(dec, unit, arg, target):
    dec.emit("LOAD", dec.name(arg), None, unit)


def _h_store_name(dec, unit, arg, target):
    dec.emit("STORE", dec.name(arg), None, unit)


def _h_load_attr(dec, unit, arg, target):
    if dec.rules.attr_method:
        dec.emit("METHOD" if arg & 1 else "ATTR", dec.name(arg >> 1), None, unit)
    else:
        dec.emit("ATTR", dec.name(arg), None, unit)


def _h_load_method(dec, unit, arg, target):
    dec.emit("METHOD", dec.name(arg), None, unit)


def _h_store_attr(dec, unit, arg, target):
    dec.emit("STORE_ATTR", dec.name(arg), None, unit)


def _h_binary_op(dec, unit, arg, target):
    if dec.rules.binary_subscr_nb is not None and arg == dec.rules.binary_subscr_nb:
        dec.emit("SUBSCR", None, None, unit)
        return
    if not 0 <= arg < len(tables._NB_OPS):
        raise BytecodeError(f"BINARY_OP has an unknown operator {arg}")
    dec.emit("BINOP", tables._NB_OPS[arg], None, unit)


def _binary_310(op, inplace):
    def handler(dec, unit, arg, target):
        dec.emit("BINOP", (op, inplace), None, unit)
    return handler


def _h_compare(dec, unit, arg, target):
    i = arg >> dec.rules.compare_shift
    if not 0 <= i < len(tables.COMPARES):
        raise BytecodeError(f"COMPARE_OP has an unknown comparison {arg}")
    dec.emit("COMPARE", tables.COMPARES[i], None, unit)


def _h_is(dec, unit, arg, target):
    dec.emit("COMPARE", "IsNot" if arg else "Is", None, unit)


def _h_contains(dec, unit, arg, target):
    dec.emit("COMPARE", "NotIn" if arg else "In", None, unit)


def _h_cjump(sense, pop=True):
    def handler(dec, unit, arg, target):
        dec.emit("CJUMP" if pop else "CJUMP_OR_POP", sense, target, unit)
    return handler


def _h_none_jump(is_none):
    """POP_JUMP_IF_NONE: `x is None` tested, as the compiler wrote it."""
    def handler(dec, unit, arg, target):
        dec.emit("CONST", None, None, unit)
        dec.emit("COMPARE", "Is", None, unit)
        dec.emit("CJUMP", is_none, target, unit)
    return handler


def _h_call(dec, unit, arg, target):
    dec.emit("CALL", (arg, dec.kwnames or ()), None, unit)
    dec.kwnames = None


def _h_kw_names(dec, unit, arg, target):
    dec.kwnames = dec.const(arg)


def _h_call_kw(dec, unit, arg, target):
    dec.emit("CALL_KW", arg, None, unit)


def _h_call_310(dec, unit, arg, target):
    dec.emit("CALL310", arg, None, unit)


def _h_call_method_310(dec, unit, arg, target):
    dec.emit("CALL", (arg, ()), None, unit)


def _h_intrinsic(dec, unit, arg, target):
    if arg == tables.INTRINSIC_UNARY_POSITIVE:
        dec.emit("UNARY_UAdd", None, None, unit)
    elif arg == tables.INTRINSIC_LIST_TO_TUPLE:
        dec.emit("LIST_TO_TUPLE", None, None, unit)
    else:
        raise BytecodeError(f"CALL_INTRINSIC_1 {arg} is not one numbavec reads")


def _h_common_constant(dec, unit, arg, target):
    if not 0 <= arg < len(tables.COMMON_CONSTANTS):
        raise BytecodeError(f"LOAD_COMMON_CONSTANT {arg} is not one numbavec reads")
    name = tables.COMMON_CONSTANTS[arg]
    dec.emit("ASSERTION_ERROR" if name == "AssertionError" else "LOAD", name, None, unit)


def _h_make_function(dec, unit, arg, target):
    """A nested function, lambda or (before 3.12) comprehension: the ast class
    the source path gives, from the name of the code object made."""
    code = None
    for ins in reversed(dec.out[-3:]):
        if ins.op == "CONST" and isinstance(ins.arg, types.CodeType):
            code = ins.arg
            break
    name = code.co_name if code is not None else ""
    cls = {"<lambda>": "Lambda", "<listcomp>": "ListComp", "<setcomp>": "SetComp",
           "<dictcomp>": "DictComp", "<genexpr>": "GeneratorExp"}.get(name, "FunctionDef")
    dec.emit("UNSUPPORTED", cls, None, unit)


def _h_fast_and_clear(dec, unit, arg, target):
    dec.emit("UNSUPPORTED", "ListComp", None, unit)


_NOOPS = ("RESUME", "CACHE", "PRECALL", "TO_BOOL", "NOT_TAKEN", "COPY_FREE_VARS", "MAKE_CELL",
          "GEN_START_NOOP", "RESUME_CHECK")

_HANDLERS = {
    "NOP": _simple("NOP"),
    "LOAD_CONST": _h_load_const, "RETURN_CONST": _h_return_const,
    "LOAD_SMALL_INT": _h_small_int,
    "LOAD_FAST": _h_load_fast, "LOAD_FAST_CHECK": _h_load_fast, "LOAD_FAST_BORROW": _h_load_fast,
    "STORE_FAST": _h_store_fast, "LOAD_FAST_LOAD_FAST": _h_load_fast2,
    "LOAD_FAST_BORROW_LOAD_FAST_BORROW": _h_load_fast2,
    "STORE_FAST_STORE_FAST": _h_store_fast2, "STORE_FAST_LOAD_FAST": _h_store_load_fast,
    "LOAD_DEREF": _h_load_deref, "LOAD_CLOSURE": _h_load_deref, "STORE_DEREF": _h_store_deref,
    "LOAD_GLOBAL": _h_load_global, "LOAD_NAME": _h_load_name, "STORE_NAME": _h_store_name,
    "LOAD_ATTR": _h_load_attr, "LOAD_METHOD": _h_load_method, "STORE_ATTR": _h_store_attr,
    "PUSH_NULL": _simple("NULL"),
    "BINARY_OP": _h_binary_op, "BINARY_SUBSCR": _simple("SUBSCR"),
    "STORE_SUBSCR": _simple("STORE_SUBSCR"), "BINARY_SLICE": _simple("SLICE"),
    "STORE_SLICE": _simple("STORE_SLICE"), "BUILD_SLICE": _simple("BUILD_SLICE", True),
    "UNARY_NEGATIVE": _simple("UNARY_USub"), "UNARY_POSITIVE": _simple("UNARY_UAdd"),
    "UNARY_INVERT": _simple("UNARY_Invert"), "UNARY_NOT": _simple("UNARY_Not"),
    "CALL_INTRINSIC_1": _h_intrinsic,
    "COMPARE_OP": _h_compare, "IS_OP": _h_is, "CONTAINS_OP": _h_contains,
    "JUMP_FORWARD": _simple("JUMP"), "JUMP_BACKWARD": _simple("JUMP"),
    "JUMP_ABSOLUTE": _simple("JUMP"), "JUMP_BACKWARD_NO_INTERRUPT": _simple("JUMP"),
    "POP_JUMP_IF_FALSE": _h_cjump(False), "POP_JUMP_IF_TRUE": _h_cjump(True),
    "POP_JUMP_FORWARD_IF_FALSE": _h_cjump(False), "POP_JUMP_FORWARD_IF_TRUE": _h_cjump(True),
    "POP_JUMP_BACKWARD_IF_FALSE": _h_cjump(False), "POP_JUMP_BACKWARD_IF_TRUE": _h_cjump(True),
    "POP_JUMP_IF_NONE": _h_none_jump(True), "POP_JUMP_IF_NOT_NONE": _h_none_jump(False),
    "POP_JUMP_FORWARD_IF_NONE": _h_none_jump(True),
    "POP_JUMP_FORWARD_IF_NOT_NONE": _h_none_jump(False),
    "POP_JUMP_BACKWARD_IF_NONE": _h_none_jump(True),
    "POP_JUMP_BACKWARD_IF_NOT_NONE": _h_none_jump(False),
    "JUMP_IF_FALSE_OR_POP": _h_cjump(False, pop=False),
    "JUMP_IF_TRUE_OR_POP": _h_cjump(True, pop=False),
    "GET_ITER": _simple("GET_ITER"), "FOR_ITER": _simple("FOR_ITER"),
    "END_FOR": _simple("END_FOR"), "POP_ITER": _simple("POP_TOP"),
    "RETURN_VALUE": _simple("RETURN"), "POP_TOP": _simple("POP_TOP"),
    "DUP_TOP": lambda dec, unit, arg, target: dec.emit("COPY", 1, None, unit),
    "DUP_TOP_TWO": lambda dec, unit, arg, target: (dec.emit("COPY", 2, None, unit),
                                                   dec.emit("COPY", 2, None, unit)),
    "ROT_TWO": lambda dec, unit, arg, target: dec.emit("SWAP", 2, None, unit),
    "ROT_THREE": lambda dec, unit, arg, target: dec.emit("ROT", 3, None, unit),
    "ROT_FOUR": lambda dec, unit, arg, target: dec.emit("ROT", 4, None, unit),
    "ROT_N": _simple("ROT", True), "COPY": _simple("COPY", True), "SWAP": _simple("SWAP", True),
    "BUILD_TUPLE": _simple("BUILD_TUPLE", True), "BUILD_LIST": _simple("BUILD_LIST", True),
    "LIST_EXTEND": _simple("LIST_EXTEND", True), "LIST_APPEND": _simple("LIST_APPEND", True),
    "LIST_TO_TUPLE": _simple("LIST_TO_TUPLE"),
    "UNPACK_SEQUENCE": _simple("UNPACK", True), "RAISE_VARARGS": _simple("RAISE", True),
    "LOAD_ASSERTION_ERROR": _simple("ASSERTION_ERROR"), "LOAD_COMMON_CONSTANT": _h_common_constant,
    "CALL": _h_call, "KW_NAMES": _h_kw_names, "CALL_KW": _h_call_kw,
    "CALL_FUNCTION": _h_call_310, "CALL_METHOD": _h_call_method_310,
    "CALL_FUNCTION_KW": lambda dec, unit, arg, target: dec.emit("CALL_KW", arg, None, unit),
    "MAKE_FUNCTION": _h_make_function, "LOAD_FAST_AND_CLEAR": _h_fast_and_clear,
}
for _name in _NOOPS:
    _HANDLERS[_name] = lambda dec, unit, arg, target: None
for _name, _op in tables._BINARY_310.items():
    _HANDLERS[_name] = _binary_310(_op, False)
    _HANDLERS["INPLACE_" + _name[len("BINARY_"):]] = _binary_310(_op, True)
_HANDLERS["GEN_START"] = lambda dec, unit, arg, target: dec.emit("UNSUPPORTED", "Yield", None,
                                                                 unit)

# Opcodes of constructs outside the kernel language: the ast class whose
# "... are not supported" message the compiler gives.
_UNSUPPORTED_OPS = {
    "BUILD_MAP": "Dict", "BUILD_CONST_KEY_MAP": "Dict", "DICT_UPDATE": "Dict",
    "DICT_MERGE": "Starred", "MAP_ADD": "DictComp",
    "BUILD_SET": "Set", "SET_UPDATE": "Set", "SET_ADD": "SetComp",
    "CALL_FUNCTION_EX": "Starred", "UNPACK_EX": "Starred",
    "FORMAT_VALUE": "JoinedStr", "FORMAT_SIMPLE": "JoinedStr", "FORMAT_WITH_SPEC": "JoinedStr",
    "CONVERT_VALUE": "JoinedStr", "BUILD_STRING": "JoinedStr", "BUILD_TEMPLATE": "JoinedStr",
    "BUILD_INTERPOLATION": "JoinedStr",
    "YIELD_VALUE": "Yield", "YIELD_FROM": "YieldFrom", "RETURN_GENERATOR": "Yield",
    "SEND": "YieldFrom", "GET_YIELD_FROM_ITER": "YieldFrom", "END_SEND": "YieldFrom",
    "GET_AWAITABLE": "Await", "GET_AITER": "AsyncFor", "GET_ANEXT": "AsyncFor",
    "END_ASYNC_FOR": "AsyncFor", "BEFORE_ASYNC_WITH": "AsyncWith", "SETUP_ASYNC_WITH": "AsyncWith",
    "IMPORT_NAME": "Import", "IMPORT_FROM": "ImportFrom", "IMPORT_STAR": "ImportFrom",
    "SETUP_FINALLY": "Try", "POP_EXCEPT": "Try", "RERAISE": "Try", "PUSH_EXC_INFO": "Try",
    "CHECK_EXC_MATCH": "Try", "CHECK_EG_MATCH": "TryStar", "JUMP_IF_NOT_EXC_MATCH": "Try",
    "PREP_RERAISE_STAR": "TryStar",
    "POP_BLOCK": "Try", "WITH_EXCEPT_START": "With", "SETUP_WITH": "With",
    "BEFORE_WITH": "With", "LOAD_SPECIAL": "With",
    "STORE_GLOBAL": "Global", "DELETE_GLOBAL": "Global", "DELETE_FAST": "Delete",
    "DELETE_NAME": "Delete", "DELETE_ATTR": "Delete", "DELETE_SUBSCR": "Delete",
    "DELETE_DEREF": "Delete",
    "MATCH_CLASS": "Match", "MATCH_KEYS": "Match", "MATCH_MAPPING": "Match",
    "MATCH_SEQUENCE": "Match", "GET_LEN": "Match", "COPY_DICT_WITHOUT_KEYS": "Match",
    "LOAD_BUILD_CLASS": "ClassDef", "SET_FUNCTION_ATTRIBUTE": "FunctionDef",
}


# ---- checking a tree against the code -------------------------------------

# co_flags that differ between a nested def and the same def alone (CO_NESTED)
_FLAG_MASK = ~0x10
# co_flags a module's `from __future__ import ...` sets in each of its functions
_FUTURE_FLAGS = functools.reduce(operator.or_, (getattr(__future__, name).compiler_flag
                                                for name in __future__.all_feature_names), 0)


def imported_names(code, ins):
    """The global names of code that its module binds by import: from 3.11,
    CPython calls `name.attr(...)` as a plain attribute, not a method, when
    name comes from an import (it may be a module), and compiling the
    function alone must know it."""
    local = set(code.co_varnames) | set(code.co_cellvars) | set(code.co_freevars)
    out = set()
    for c in code.co_consts:
        if isinstance(c, types.CodeType):
            try:
                out |= imported_names(c, decode(c))
            except BytecodeError:
                pass
    for k, x in enumerate(ins):
        if x.op == "ATTR" and k > 0 and ins[k - 1].op == "LOAD" and ins[k - 1].arg not in local:
            if (k > 1 and ins[k - 2].op == "NULL") or (k + 1 < len(ins)
                                                         and ins[k + 1].op == "NULL"):
                out.add(ins[k - 1].arg)
    return out


def compile_like(funcdef, code, filename, imported=()):
    """The code object this interpreter makes of funcdef, compiled with the
    scope code was (its free variables as an enclosing function's locals,
    the names its module imports as imports), or None when it does not
    compile; RecursionError when it is nested deeper than compile() goes
    from this depth of the stack (not evidence either way)."""
    fn = ast.FunctionDef(name=code.co_name, args=_no_defaults(funcdef.args),
                         body=funcdef.body, decorator_list=[], returns=None,
                         type_comment=None)
    if "type_params" in ast.FunctionDef._fields:
        fn.type_params = []
    ast.copy_location(fn, funcdef)
    if code.co_name == "<lambda>":
        if len(funcdef.body) != 1 or not isinstance(funcdef.body[0], ast.Return):
            return None
        top = ast.Expr(value=ast.Lambda(args=_no_defaults(funcdef.args),
                                        body=funcdef.body[0].value))
        ast.copy_location(top, funcdef)
        ast.copy_location(top.value, funcdef)
    else:
        top = fn
    body = [top]
    if code.co_freevars:
        sets = [ast.Assign(targets=[ast.Name(id=v, ctx=ast.Store())],
                           value=ast.Constant(value=None)) for v in code.co_freevars]
        outer = ast.FunctionDef(name="_nv_outer", args=_empty_args(), body=sets + body,
                                decorator_list=[], returns=None, type_comment=None)
        if "type_params" in ast.FunctionDef._fields:
            outer.type_params = []
        body = [outer]
    imports = [ast.Import(names=[ast.alias(name=name, asname=None)]) for name in sorted(imported)]
    module = ast.Module(body=imports + body, type_ignores=[])
    _fill_locations(module, funcdef)
    try:
        top_code = compile(module, filename, "exec", flags=code.co_flags & _FUTURE_FLAGS,
                           dont_inherit=True)
    except (SyntaxError, ValueError, TypeError, MemoryError):
        return None
    return _find_code(top_code, code.co_name, 2)


def _fill_locations(module, near):
    line = getattr(near, "lineno", 1) or 1
    for node in ast.walk(module):
        if "lineno" in node._attributes:
            if getattr(node, "lineno", None) is None:
                node.lineno = line
            if getattr(node, "col_offset", None) is None:
                node.col_offset = 0
            if getattr(node, "end_lineno", None) is None:
                node.end_lineno = node.lineno
            if getattr(node, "end_col_offset", None) is None:
                node.end_col_offset = node.col_offset


def _find_code(code, name, depth):
    for c in code.co_consts:
        if isinstance(c, types.CodeType):
            if c.co_name == name:
                return c
            if depth > 1:
                found = _find_code(c, name, depth - 1)
                if found is not None:
                    return found
    return None


def _empty_args():
    return ast.arguments(posonlyargs=[], args=[], vararg=None, kwonlyargs=[], kw_defaults=[],
                         kwarg=None, defaults=[])


def _no_defaults(args):
    """args without default values: they are evaluated where the function is
    defined, and change nothing in its own code."""
    return ast.arguments(posonlyargs=args.posonlyargs, args=args.args, vararg=args.vararg,
                         kwonlyargs=args.kwonlyargs, kw_defaults=[None] * len(args.kwonlyargs),
                         kwarg=args.kwarg, defaults=[])


def same_code(a, b, rules=None):
    """None when code objects a and b do the same (line numbers, NOPs and
    the position of the function aside), else a short reason."""
    if a is None or b is None:
        return "it does not compile"
    for attr in ("co_argcount", "co_posonlyargcount", "co_kwonlyargcount", "co_varnames",
                 "co_freevars", "co_cellvars", "co_names"):
        if getattr(a, attr) != getattr(b, attr):
            return f"{attr} differs"
    if (a.co_flags & _FLAG_MASK) != (b.co_flags & _FLAG_MASK):
        return "co_flags differs"
    if bool(getattr(a, "co_exceptiontable", b"")) != bool(getattr(b, "co_exceptiontable", b"")):
        return "the exception table differs"    # (its offsets move with NOPs: not compared)
    if len(a.co_consts) != len(b.co_consts):
        return "co_consts differs"
    for x, y in zip(a.co_consts, b.co_consts):
        if isinstance(x, types.CodeType) and isinstance(y, types.CodeType):
            why = same_code(x, y, rules)
            if why:
                return why
        elif not _same_const(x, y):
            return "co_consts differs"
    if a.co_code == b.co_code:
        return None
    try:
        ra, rb = _stream(a, rules), _stream(b, rules)
    except BytecodeError as exc:
        return str(exc)
    return None if ra == rb else "the instructions differ"


def _same_const(x, y):
    if type(x) is not type(y):
        return False
    if isinstance(x, (tuple, frozenset)):
        if len(x) != len(y):
            return False
        xs, ys = (x, y) if isinstance(x, tuple) else (sorted(x, key=repr), sorted(y, key=repr))
        return all(_same_const(p, q) for p, q in zip(xs, ys))
    if isinstance(x, (float, complex)):
        return repr(x) == repr(y)      # -0.0 and nan told apart as written
    try:
        return bool(x == y)
    except Exception:  # noqa: BLE001 - a constant that cannot compare: not the same
        return False


def _stream(code, rules):
    """The instructions of code without NOPs, jumps as indices into that list."""
    rules = rules or current_rules()
    raw = [r for r in _raw(code, rules) if r[1] != "NOP"]
    index = {}
    for k, r in enumerate(raw):
        index[r[0]] = k
    out = []
    n = len(code.co_code) // 2
    for r in raw:
        target = r[3]
        if target is not None:
            while target < n and target not in index:
                target += 1
            target = index.get(target, len(raw))
        out.append((r[1], None if target is not None else r[2], target))
    return out


def source_matches(funcdef, pyfunc, filename=None):
    """Whether funcdef (from the source found for pyfunc) compiles to
    pyfunc's code: False for a file edited since the function was compiled,
    or source text that is not the function's (compile() of a rewritten
    tree pointing at a real file)."""
    code = pyfunc.__code__
    if "@pytest_ar" in code.co_names:
        # pytest rewrote the asserts of the test module the kernel is in
        # (their code calls its helpers): the source is what the user wrote
        return True
    try:
        rules = current_rules()
    except BytecodeError:
        return True             # an interpreter numbavec cannot read: trust the source
    try:
        again = compile_like(funcdef, code, filename or code.co_filename)
        if same_code(again, code, rules) is None:
            return True
        imported = imported_names(code, decode(code, rules))
        if not imported:
            return False
        again = compile_like(funcdef, code, filename or code.co_filename, imported)
        return same_code(again, code, rules) is None
    except BytecodeError:
        return False
    except RecursionError:
        # a def nested deeper than CPython compiles from inside a call
        # (it compiled it at import, higher up the stack): the check cannot
        # be made, and the bytecode of so deep a function cannot be rebuilt
        # either; the source found is the best there is (the compiler has
        # its own stated depth limits)
        return True


# ---- the entry point ------------------------------------------------------

class Rebuilt:
    """A kernel's FunctionDef rebuilt from its code: ``funcdef`` and the
    location tuple _core takes, ``(filename, first_line, [], 0)``: no source
    lines (so errors print no caret line), node line numbers those of the
    file."""

    __slots__ = ("funcdef", "location")


def rebuild(pyfunc):
    """The Rebuilt of pyfunc; raises TypingError (via _core) when its code
    cannot be rebuilt faithfully."""
    from numbavec import _core

    code = pyfunc.__code__
    filename = code.co_filename
    try:
        funcdef = rebuild_code(code, pyfunc.__defaults__, pyfunc.__kwdefaults__)
    except BytecodeError as exc:
        raise _core.TypingError(_where(code, exc.loc) + f"cannot compile {code.co_name!r} from "
                                f"its bytecode: {exc.why} (its source is not available{WHERE_SOURCE})") \
            from None
    out = Rebuilt()
    out.funcdef = funcdef
    out.location = (filename, code.co_firstlineno, [], 0)
    return out


# where a kernel's source is kept, so that it compiles from its source
WHERE_SOURCE = ("; a def in a file, in IPython or Jupyter, or in Python 3.13's REPL keeps it, "
                "or register it: linecache.cache[filename] = (len(text), None, lines, filename)")


def _where(code, loc):
    line = loc[0] if loc else code.co_firstlineno
    col = f"{loc[1] + 1}:" if loc and loc[1] >= 0 else ""
    return f"{code.co_filename}:{line}:{col} "


def rebuild_code(code, defaults=None, kwdefaults=None):
    """The ast.FunctionDef of code, checked against it: BytecodeError when it
    cannot be rebuilt or the rebuilt tree compiles to other code.  A
    construct outside the kernel language gives a FunctionDef holding just
    that construct, so the compiler refuses it with its own message."""
    from numbavec import _bytecode_ast

    rules = current_rules()
    if code.co_flags & 0x20:            # CO_GENERATOR
        return _stub(code, Unsupported("Yield", None))
    if code.co_flags & 0x180:           # CO_COROUTINE, CO_ITERABLE_COROUTINE
        return _stub(code, Unsupported("Await", None))
    if getattr(code, "co_exceptiontable", b""):
        return _stub(code, _handled_construct(code, rules))
    try:
        ins = decode(code, rules)
        rb = _bytecode_ast.Rebuilder(code, ins, rules, code.co_filename)
        body = rb.function()
    except Unsupported as exc:
        return _stub(code, exc)
    except RecursionError:
        raise BytecodeError("the function is nested too deeply") from None
    funcdef = _funcdef(code, body, defaults, kwdefaults)
    try:
        again = compile_like(funcdef, code, code.co_filename, imported_names(code, ins))
    except RecursionError:
        raise BytecodeError("the function is nested too deeply") from None
    why = same_code(again, code, rules)
    if why is not None:
        raise BytecodeError(f"numbavec could not rebuild it faithfully ({why})",
                            (code.co_firstlineno, -1, code.co_firstlineno, -1))
    return funcdef


def _handled_construct(code, rules):
    """The with or try statement that gave code an exception table (3.11 on),
    with where it starts as far as its instructions say."""
    try:
        ins = decode(code, rules)
    except BytecodeError:
        return Unsupported("Try", None)
    found = [x for x in ins if x.op == "UNSUPPORTED"]
    for x in found:
        if x.arg in ("With", "AsyncWith"):
            return Unsupported(x.arg, x.loc)
    for x in found:
        if x.arg not in ("Try", "TryStar"):
            return Unsupported(x.arg, x.loc)        # e.g. a comprehension's
    return Unsupported(found[0].arg if found else "Try", found[0].loc if found else None)


def _funcdef(code, body, defaults, kwdefaults):
    names = code.co_varnames
    npos, nargs, nkw = code.co_posonlyargcount, code.co_argcount, code.co_kwonlyargcount
    line = code.co_firstlineno

    def arg(name):
        node = ast.arg(arg=name, annotation=None, type_comment=None)
        node.lineno, node.col_offset, node.end_lineno, node.end_col_offset = line, -1, line, -1
        return node

    k = nargs + nkw
    vararg = arg(names[k]) if code.co_flags & 0x04 else None
    kwarg = arg(names[k + (1 if vararg else 0)]) if code.co_flags & 0x08 else None
    args = ast.arguments(posonlyargs=[arg(n) for n in names[:npos]],
                         args=[arg(n) for n in names[npos:nargs]], vararg=vararg,
                         kwonlyargs=[arg(n) for n in names[nargs:nargs + nkw]],
                         kw_defaults=[_value(kwdefaults[n], line)
                                      if kwdefaults and n in kwdefaults else None
                                      for n in names[nargs:nargs + nkw]],
                         kwarg=kwarg, defaults=[_value(v, line) for v in defaults or ()])
    fn = ast.FunctionDef(name=code.co_name, args=args, body=body, decorator_list=[],
                         returns=None, type_comment=None)
    if "type_params" in ast.FunctionDef._fields:
        fn.type_params = []
    fn.lineno, fn.col_offset, fn.end_lineno, fn.end_col_offset = line, 0, line, 0
    return fn


def _value(v, line):
    node = ast.Constant(value=v)
    node.lineno, node.col_offset, node.end_lineno, node.end_col_offset = line, -1, line, -1
    return node


def _stub(code, exc):
    """A FunctionDef whose body is the unsupported construct exc names, at
    its location: compiling it gives the compiler's own refusal."""
    line, col = (exc.loc[0], exc.loc[1]) if exc.loc else (code.co_firstlineno, -1)
    cls = getattr(ast, exc.cls, None)
    if cls is None:
        raise BytecodeError(f"it uses {exc.cls}", exc.loc)
    node = cls.__new__(cls)
    for f in cls._fields:
        setattr(node, f, [] if f in ("body", "orelse", "elts", "values", "names", "handlers",
                                     "finalbody", "generators", "keys", "targets", "cases",
                                     "decorator_list", "items", "ops", "comparators",
                                     "type_params") else None)
    if isinstance(node, ast.stmt):
        stmt = node
    else:
        stmt = ast.Expr(value=node)
    for n in (node, stmt):
        n.lineno, n.col_offset = line, col
        n.end_lineno, n.end_col_offset = line, col
    fn = _funcdef(code, [stmt], None, None)
    fn.refused_with = exc.cls
    return fn
