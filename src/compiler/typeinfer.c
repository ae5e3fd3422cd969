/*
 * typeinfer.c - types every node of a lowered function.
 *
 * Rules (DESIGN.md, "Semantics of the kernel language"):
 *  - arithmetic between typed values follows NumPy 2's result_type;
 *  - Python literals and the results of int()/float()/complex() and of the
 *    math module are weak (NEP 50): they take the other operand's kind, so
 *    `x * 2.0` stays float32 when x is float32;
 *  - a variable's type is the promotion of every value assigned to it,
 *    found by iterating to a fixed point (types only grow);
 *  - bool arithmetic is NumPy's: + is or, * is and, - is an error.
 * Each visitor carries its typing rule in the comment above it; the type
 * values and promotion are cctype.c's, the builtins' rules calls.h's rows.
 */
#include "compiler/calls.h"

#include <stdio.h>
#include <string.h>

/* ---- inference ---- */

typedef struct Infer {
    CcFunction *fn;
    int changed;          /* a variable's type grew in this pass */
    int final;            /* last pass: unknown types are errors, constants fitted */
    int backward;         /* this pass visits statements last first */
    const CcType *ret_as; /* final pass: the kernel's return type, if declared */
    const CcType *ret;    /* promotion of the returned values */
    CcNode *bare_return;  /* a `return` without a value, if any */
    CcNode *last_return;  /* the kernel's last `return value`: where errors point */
    int gufunc;           /* a guvectorize kernel: arrays may be allocated */
    /* the elementwise operation being typed took an array operand: the
     * largest ndim of those (-1: none); its operands are typed by element */
    int lift;
    int inlining;     /* typing an inlined function's body: its errors are its call's */
    PyObject *errors; /* the TypingErrors of statements that failed (cc_keep_error) */
} Infer;

/* A sentinel for "not known yet" (a variable not typed in this pass). */
#define UNKNOWN NULL

static int expr(Infer *in, CcNode *n, const CcType **out);
static int condition(Infer *in, CcNode *cond);
static int array_index(Infer *in, CcNode *n, const CcType **out);
static int array_operand(Infer *in, CcNode *at, CcNode *lhs, const CcType **out);
static int array_call(Infer *in, CcNode *n, const CcBuiltin *b, const CcType **out);
static int shape_call(Infer *in, CcNode *n, const CcBuiltin *b, const CcType **out);
static int sort_call(Infer *in, CcNode *n, const CcBuiltin *b, const CcType **out);
static int dot_call(Infer *in, CcNode *n, const CcBuiltin *b, const CcType **out);
static int arange_call(Infer *in, CcNode *n, const CcBuiltin *b, const CcType **out);
static int setitem(Infer *in, CcNode *n);

static int
type_error(Infer *in, CcNode *n, const char *what, const CcType *a, const CcType *b)
{
    char an[96], bn[96];
    if (b == NULL) {
        return cc_error(in->fn, n->loc, "%s is not supported for %s", what,
                        cc_type_name(a, an, sizeof(an)));
    }
    return cc_error(in->fn, n->loc, "%s is not supported between %s and %s", what,
                    cc_type_name(a, an, sizeof(an)), cc_type_name(b, bn, sizeof(bn)));
}

static int
is_tuple(const CcType *t)
{
    return t->kind == CT_TUPLE;
}

/* A Python int constant whose truth alone is used (if 2**100:, not G,
 * bool(G)): held as 1 when it lies outside int64 (and so is nonzero), where
 * its low 64 bits could be 0. */
static void
truth_only(CcNode *n)
{
    if (n->kind == ND_CONST && n->ty->kind == CT_WEAK_INT && n->big) {
        n->big = 0;
        n->ival = 1;
        n->ihigh = 0;
    }
}

static int
is_complex_type(const CcType *t)
{
    return t->kind == CT_WEAK_COMPLEX || (t->kind == CT_SCALAR && ts_is_complex(t->scalar));
}

static int
is_integral(const CcType *t)
{
    return t->kind == CT_WEAK_INT
           || (t->kind == CT_SCALAR && !ts_is_float(t->scalar) && !ts_is_complex(t->scalar));
}

static int
is_bool(const CcType *t)
{
    return t->kind == CT_SCALAR && t->scalar == TS_BOOL;
}

/* ---- Python int constants meeting typed values (NEP 50) ---- */

/* Whether the constant n (a weak int) is a value of integer kind k. */
static int
const_fits(const CcNode *n, TsKind k)
{
    long long v = n->ival;
    int bits = ts_bits(k);
    if (n->big) {
        /* outside int64: only the upper half of uint64 fits anything */
        return k == TS_UINT64 && n->ihigh == 0;
    }
    if (ts_is_signed(k)) {
        return bits == 64 || (v >= -(1LL << (bits - 1)) && v < (1LL << (bits - 1)));
    }
    return v >= 0 && (bits == 64 || v < (1LL << bits));
}

static int
out_of_bounds(Infer *in, CcNode *n, const char *kind)
{
    PyObject *value = n->big ? Py_NewRef(n->pyint) : PyLong_FromLongLong(n->ival);
    PyObject *text = value != NULL ? PyObject_Str(value) : NULL;
    const char *digits = text != NULL ? PyUnicode_AsUTF8AndSize(text, NULL) : NULL;
    if (digits != NULL) {
        cc_error(in->fn, n->loc,
                 "Python integer %.60s%s out of bounds for %s (a Python int takes the type of "
                 "the value it meets, as in NumPy 2)",
                 digits, strlen(digits) > 60 ? "..." : "", kind);
    }
    Py_XDECREF(value);
    Py_XDECREF(text);
    return -1;
}

/*
 * A Python int constant n used as a value of type `as` (the type its
 * parent converts it to), in the final pass: it must fit an integer kind,
 * as NumPy 2 requires (np.int8(1) + 300 raises OverflowError); toward a
 * float or complex it becomes a float, rounded from its exact value (the
 * kernel's int64 would wrap 10**20).  A bool takes its truth.  Other nodes,
 * and earlier passes: nothing.  0/-1.
 */
static int
fit_const(Infer *in, CcNode *n, const CcType *as)
{
    if (!in->final || as == UNKNOWN || n->kind != ND_CONST || n->ty->kind != CT_WEAK_INT
        || as->kind == CT_TUPLE || as->kind == CT_ARRAY) {
        return 0;
    }
    TsKind k = cc_storage(as);
    if (k == TS_BOOL) {
        return 0;
    }
    if (ts_is_float(k) || ts_is_complex(k)) {
        if (!n->big) {
            return 0; /* int64 to float is exact rounding already */
        }
        double d = PyLong_AsDouble(n->pyint);
        if (d == -1.0 && PyErr_Occurred()) {
            PyErr_Clear();
            return cc_error(in->fn, n->loc, "Python integer too large to convert to float");
        }
        n->ty = cc_weak_type(CT_WEAK_FLOAT);
        n->fval = d;
        n->big = 0;
        return 0;
    }
    if (!const_fits(n, as->kind == CT_WEAK_INT ? TS_INT64 : k)) {
        return out_of_bounds(
            in, n, as->kind == CT_WEAK_INT ? "int64 (a Python int in a kernel)" : ts_kind_name(k));
    }
    return 0;
}

/*
 * A Python int constant n that Python's min/max may return as it is, held in
 * the kernel's result of type `as`: an int64, or the upper half of uint64
 * for a uint64 result (by value comparison is emit.c's).  0/-1.
 */
static int
held_const(Infer *in, CcNode *n, const CcType *as)
{
    if (!in->final || n->kind != ND_CONST || n->ty->kind != CT_WEAK_INT || !n->big
        || !is_integral(as)) {
        return 0;
    }
    TsKind k = cc_storage(as);
    return k == TS_UINT64 && const_fits(n, k) ? 0 : out_of_bounds(in, n, ts_kind_name(k));
}

/* fit_const for each of args[0..nargs). */
static int
fit_consts(Infer *in, CcNode **args, int nargs, const CcType *as)
{
    for (int i = 0; i < nargs; i++) {
        if (fit_const(in, args[i], as) < 0) {
            return -1;
        }
    }
    return 0;
}

/* An operand of an elementwise operation: an array stands for its element
 * (the operation is lifted over it: in->lift). */
static const CcType *
lift_operand(Infer *in, const CcType *t)
{
    if (!cc_is_array(t)) {
        return t;
    }
    if (t->n > in->lift) {
        in->lift = t->n;
    }
    return t->scalar == TS_INFER ? UNKNOWN : cc_scalar_type(t->scalar);
}

/* Types the operands of a binary node; *out is UNKNOWN if either is. */
static int
operands(Infer *in, CcNode *n, const CcType **l, const CcType **r)
{
    if (expr(in, n->lhs, l) < 0 || expr(in, n->rhs, r) < 0) {
        return -1;
    }
    *l = lift_operand(in, *l);
    *r = lift_operand(in, *r);
    return 0;
}

/*
 * binop := lhs op rhs
 *   + - *        promote(l, r); bool+bool is bool (or), bool*bool bool (and),
 *                bool-bool an error (as in NumPy)
 *   /            promote(l, r), integers and bools give float64 (weak: float)
 *   // % **      promote(l, r); bools compute in int8 (NumPy); // and % of
 *                complex are errors
 *   << >> & | ^  integers and bools only; shifts of bools compute in int8
 */
static int
binop(Infer *in, CcNode *n, const CcType **out)
{
    const CcType *l, *r;
    if (operands(in, n, &l, &r) < 0) {
        return -1;
    }
    *out = UNKNOWN;
    if (l == UNKNOWN || r == UNKNOWN) {
        return 0;
    }
    if (is_tuple(l) || is_tuple(r)) {
        return type_error(in, n, cc_op_name(n->op), l, r);
    }
    const CcType *t = cc_promote(l, r);
    int bools = is_bool(l) && is_bool(r);
    switch (n->op) {
    case OP_ADD:
    case OP_MUL:
        break;
    case OP_SUB:
        if (bools) {
            return cc_error(in->fn, n->loc,
                            "boolean subtract (-) is not supported; "
                            "use ^ or != instead (as in NumPy)");
        }
        break;
    case OP_DIV:
        if (t->kind == CT_WEAK_INT) {
            t = cc_weak_type(CT_WEAK_FLOAT);
        } else if (is_integral(t)) {
            t = cc_scalar_type(TS_FLOAT64);
        }
        break;
    case OP_FLOORDIV:
    case OP_MOD:
        if (is_complex_type(t)) {
            return type_error(in, n, cc_op_name(n->op), l, r);
        }
        /* fall through */
    case OP_POW:
    case OP_LSHIFT:
    case OP_RSHIFT:
        if (bools) {
            t = cc_scalar_type(TS_INT8);
        }
        if (n->op >= OP_LSHIFT && !is_integral(t)) {
            return type_error(in, n, cc_op_name(n->op), l, r);
        }
        break;
    case OP_BITAND:
    case OP_BITOR:
    case OP_BITXOR:
        if (!is_integral(t)) {
            return type_error(in, n, cc_op_name(n->op), l, r);
        }
        break;
    default:
        return cc_error(in->fn, n->loc, "internal error: bad binary operator");
    }
    *out = t;
    /* both operands are computed in the result's kind (/ of ints: float64) */
    if (fit_const(in, n->lhs, t) < 0 || fit_const(in, n->rhs, t) < 0) {
        return -1;
    }
    return 0;
}

/*
 * unary := -x | +x | ~x | not x
 *   -x, +x   the type of x; -bool is an error (NumPy)
 *   ~x       integers and bools (~bool is logical not, as in NumPy)
 *   not x    bool
 */
static int
unary(Infer *in, CcNode *n, const CcType **out)
{
    const CcType *t;
    if (expr(in, n->lhs, &t) < 0) {
        return -1;
    }
    t = lift_operand(in, t);
    *out = t;
    if (t == UNKNOWN) {
        return 0;
    }
    if (n->op == OP_NOT) {
        truth_only(n->lhs);
        *out = cc_scalar_type(TS_BOOL);
        return is_tuple(t) ? type_error(in, n, "not", t, NULL) : 0;
    }
    /* np.negative and np.positive have no bool loop */
    if (is_tuple(t) || ((n->op == OP_NEG || n->op == OP_POS) && is_bool(t))
        || (n->op == OP_INVERT && !is_integral(t))) {
        char what[16]; /* "unary -", "unary +", "~" */
        snprintf(what, sizeof(what), n->op == OP_INVERT ? "%s" : "unary %s", cc_op_name(n->op));
        return type_error(in, n, what, t, NULL);
    }
    return 0;
}

/*
 * compare := a op b [op c ...]     bool; each pair is compared in
 *   promote(a, b); complex values only with == and !=
 */
static int
compare(Infer *in, CcNode *n, const CcType **out)
{
    const CcType *prev = UNKNOWN;
    *out = cc_scalar_type(TS_BOOL);
    for (int i = 0; i < n->nargs; i++) {
        const CcType *t;
        if (expr(in, n->args[i], &t) < 0) {
            return -1;
        }
        t = lift_operand(in, t);
        if (in->lift >= 0 && n->nargs > 2) {
            return cc_error(in->fn, n->loc,
                            "a chained comparison of arrays has no truth value (NumPy raises); "
                            "compare them pair by pair with &");
        }
        if (t != UNKNOWN && is_tuple(t)) {
            return type_error(in, n->args[i], "comparison", t, NULL);
        }
        if (i > 0 && prev != UNKNOWN && t != UNKNOWN) {
            CcOp op = n->ops[i - 1];
            if ((is_complex_type(prev) || is_complex_type(t)) && op != OP_EQ && op != OP_NE) {
                return type_error(in, n->args[i], cc_op_name(op), prev, t);
            }
            /* an int against an int compares by value (emit.c); against a
             * float, as that float */
            if ((!is_integral(t) && fit_const(in, n->args[i - 1], t) < 0)
                || (!is_integral(prev) && fit_const(in, n->args[i], prev) < 0)) {
                return -1;
            }
        }
        prev = t;
    }
    return 0;
}

/* Promotes the types of args[0..n) (UNKNOWN if any is). */
static int
promote_all(Infer *in, CcNode **args, int nargs, const CcType **out)
{
    const CcType *acc = UNKNOWN;
    int unknown = 0;
    for (int i = 0; i < nargs; i++) {
        const CcType *t;
        if (expr(in, args[i], &t) < 0) {
            return -1;
        }
        t = lift_operand(in, t);
        if (t == UNKNOWN) {
            unknown = 1;
            continue;
        }
        const CcType *p = acc == UNKNOWN ? t : cc_promote(acc, t);
        if (p == NULL) {
            return type_error(in, args[i], "combining values", acc, t);
        }
        acc = p;
    }
    *out = unknown ? UNKNOWN : acc;
    return 0;
}

/* The float kind a math function computes in: float32 stays float32. */
TsKind
cc_math_kind(const CcType *t)
{
    if (t->kind == CT_SCALAR && (t->scalar == TS_FLOAT32 || t->scalar == TS_COMPLEX64)) {
        return TS_FLOAT32;
    }
    return TS_FLOAT64;
}

static int
check_real(Infer *in, CcNode *n, const CcType *t)
{
    if (is_tuple(t) || is_complex_type(t)) {
        char name[96];
        return cc_error(in->fn, n->loc, "%s() does not accept %s%s", cc_builtin(n->builtin)->name,
                        cc_type_name(t, name, sizeof(name)),
                        is_complex_type(t) ? " (use cmath for complex values)" : "");
    }
    return 0;
}

/* The complex kind a cmath function computes in: complex64 for float32
 * and complex64 arguments, else complex128. */
static TsKind
complex_kind_of(const CcType *t)
{
    return cc_math_kind(t) == TS_FLOAT32 ? TS_COMPLEX64 : TS_COMPLEX128;
}

/* cmath results are weak (Python complex/float) unless computed in single
 * precision, as math.f's are. */
static const CcType *
cmath_result(const CcType *arg, int is_complex)
{
    if (cc_math_kind(arg) == TS_FLOAT32) {
        return cc_scalar_type(is_complex ? TS_COMPLEX64 : TS_FLOAT32);
    }
    return cc_weak_type(is_complex ? CT_WEAK_COMPLEX : CT_WEAK_FLOAT);
}

static const CcType *
pair_type(Infer *in, const CcType *a, const CcType *b)
{
    CcType *t = cc_alloc(in->fn->arena, sizeof(CcType));
    const CcType **elems = cc_alloc(in->fn->arena, 2 * sizeof(CcType *));
    if (t == NULL || elems == NULL) {
        return NULL;
    }
    elems[0] = a;
    elems[1] = b;
    t->kind = CT_TUPLE;
    t->n = 2;
    t->elems = elems;
    return t;
}

/*
 * cmath.f(z) := any number, taken as complex
 *   exp log sqrt sin ... atanh   complex64 for float32/complex64, else
 *                                a weak complex
 *   phase(z)                     float32 or a weak float
 *   polar(z)                     tuple(abs, phase) of those
 *   rect(r, phi)                 r, phi real: complex, as exp
 *   isnan isinf isfinite         bool
 */
int
ti_cmath(Infer *in, CcNode *n, const CcBuiltin *b, const CcType *t, const CcType **out)
{
    CcMathOp op = (CcMathOp)b->op;
    switch (op) {
    case M_PHASE:
        *out = cmath_result(t, 0);
        return 0;
    case M_POLAR:
        *out = pair_type(in, cmath_result(t, 0), cmath_result(t, 0));
        return *out ? 0 : -1;
    case M_RECT:
        if (check_real(in, n, t) < 0) {
            return -1;
        }
        *out = cmath_result(t, 1);
        return 0;
    case M_ISNAN:
    case M_ISINF:
    case M_ISFINITE:
        *out = cc_scalar_type(TS_BOOL);
        return 0;
    default:
        *out = cmath_result(t, 1);
        return 0;
    }
}

/*
 * round(x)     Python's: half to even, an int (x's type if x is integral)
 * round(x, n)  n integral: NumPy's np.round, x's type
 */
int
ti_round(Infer *in, CcNode *n, const CcBuiltin *b, const CcType *t, const CcType **out)
{
    const CcType *x = n->args[0]->ty;
    if (check_real(in, n, x) < 0) {
        return -1;
    }
    if (is_bool(x)) {
        return type_error(in, n, "round()", x, NULL); /* np.bool_ has no __round__ */
    }
    if (n->nargs == 2) {
        if (!is_integral(n->args[1]->ty)) {
            return type_error(in, n->args[1], "round() ndigits", n->args[1]->ty, NULL);
        }
        *out = x;
        return 0;
    }
    *out = is_integral(x) ? x : cc_weak_type(CT_WEAK_INT);
    return 0;
}

/* The NumPy functions with integer loops: an integral argument (bool
 * computes in int8) keeps an integer result. */
static int
np_integer_op(const CcBuiltin *b, const CcType *t)
{
    int integral =
        t->kind == CT_WEAK_INT
        || (t->kind == CT_SCALAR && !ts_is_float(t->scalar) && !ts_is_complex(t->scalar));
    return b->flavor == FL_NP && integral
           && (b->op == M_SQUARE || b->op == M_POW || b->op == M_FLOOR || b->op == M_CEIL
               || b->op == M_TRUNC);
}

/*
 * call := builtin(args)
 *   abs(x)              x's type; complex gives its part's float kind
 *   min/max(a, b, ...)  promote(args)
 *   int(x) float(x) complex(x[, y])   weak int / float / complex
 *   bool(x)             bool
 *   np.float32(x) ...   that kind (complex to real takes the real part)
 *   math.f(x...)        float32 for float32 arguments, else a weak float
 *   math.floor/ceil/trunc   weak int;  math.isnan ...: bool
 *   np.f(x...)          the promoted float kind of the arguments (strong)
 *   x.real / x.imag     the part's kind;  x.conjugate(): x's type
 */
static int call_type(Infer *in, CcNode *n, const CcType **out);

/* The type a builtin converts its (Python int constant) arguments to. */
static const CcType *
call_arg_type(const CcNode *n, const CcType *result)
{
    switch (cc_flavor_ops[cc_builtin(n->builtin)->flavor].fit) {
    case FIT_FLOAT:
        return cc_weak_type(CT_WEAK_FLOAT);
    case FIT_TRUTH:
        return UNKNOWN; /* its truth */
    case FIT_BY_VALUE:
        /* Python's min/max compare by value and convert nothing: max(u8, -30)
         * is fine; an int only needs to be one the result's storage holds
         * (held_const) */
        return is_integral(result) ? UNKNOWN : result;
    case FIT_RESULT:
    default:
        return result;
    }
}

/* call_type, then its Python int constant arguments fitted (ldexp's
 * exponent and round's ndigits are ints of their own). */
static int
call(Infer *in, CcNode *n, const CcType **out)
{
    if (call_type(in, n, out) < 0) {
        return -1;
    }
    const CcBuiltin *b = cc_builtin(n->builtin);
    if (b->flavor == FL_ALLOC || b->flavor == FL_LIKE || b->flavor == FL_REDUCE
        || b->flavor == FL_NDSIZE || b->flavor == FL_UNRAVEL || b->flavor == FL_SORT
        || b->flavor == FL_DOT || b->flavor == FL_ARANGE) {
        return 0;
    }
    if (b->flavor == FL_BOOL) {
        truth_only(n->args[0]);
        return 0;
    }
    const CcType *as = *out == UNKNOWN ? UNKNOWN : call_arg_type(n, *out);
    int nargs = b->op == M_LDEXP || b->flavor == FL_ROUND ? 1 : n->nargs;
    for (int i = 0; as == UNKNOWN && *out != UNKNOWN && i < n->nargs; i++) {
        if (held_const(in, n->args[i], *out) < 0) {
            return -1;
        }
    }
    if (nargs < n->nargs && fit_const(in, n->args[1], cc_weak_type(CT_WEAK_INT)) < 0) {
        return -1;
    }
    return fit_consts(in, n->args, nargs, as);
}

static int
call_type(Infer *in, CcNode *n, const CcType **out)
{
    const CcBuiltin *b = cc_builtin(n->builtin);
    const CcType *t;
    if (b->flavor == FL_CAST && n->rhs != NULL) {
        /* a.dtype.type(x): the cast to a's element kind */
        const CcType *a;
        *out = UNKNOWN;
        if (array_operand(in, n, n->rhs, &a) < 0) {
            return -1;
        }
        if (a == UNKNOWN || a->scalar == TS_INFER) {
            return 0;
        }
        n->builtin = cc_builtin_cast(a->scalar);
        b = cc_builtin(n->builtin);
    }
    if (b->flavor == FL_ALLOC || b->flavor == FL_LIKE || b->flavor == FL_REDUCE) {
        return array_call(in, n, b, out);
    }
    if (b->flavor == FL_NDSIZE || b->flavor == FL_UNRAVEL) {
        return shape_call(in, n, b, out);
    }
    if (b->flavor == FL_SORT) {
        return sort_call(in, n, b, out);
    }
    if (b->flavor == FL_DOT) {
        return dot_call(in, n, b, out);
    }
    if (b->flavor == FL_ARANGE) {
        return arange_call(in, n, b, out);
    }
    if (promote_all(in, n->args, n->nargs, &t) < 0) {
        return -1;
    }
    *out = UNKNOWN;
    if (t == UNKNOWN) {
        return 0;
    }
    if (is_tuple(t)) {
        return check_real(in, n, t);
    }
    if (b->op == M_LDEXP && !is_integral(n->args[1]->ty)) {
        return type_error(in, n->args[1], "ldexp() exponent", n->args[1]->ty, NULL);
    }
    if (b->op == M_LDEXP) {
        t = n->args[0]->ty; /* the exponent does not widen the result */
    }
    return cc_flavor_ops[b->flavor].type(in, n, b, t, out);
}

/* abs(x): x's type; a complex gives its part's float kind */
int
ti_abs(Infer *in, CcNode *n, const CcBuiltin *b, const CcType *t, const CcType **out)
{
    if (is_complex_type(t)) {
        t = t->kind == CT_WEAK_COMPLEX ? cc_weak_type(CT_WEAK_FLOAT)
                                       : cc_scalar_type(cc_math_kind(t));
    }
    *out = t;
    return 0;
}

/* min/max(a, b, ...): the promotion; complex numbers have no order */
int
ti_minmax(Infer *in, CcNode *n, const CcBuiltin *b, const CcType *t, const CcType **out)
{
    if (is_complex_type(t)) {
        return type_error(in, n, b->name, t, NULL);
    }
    *out = t;
    return 0;
}

/* int(x), float(x): a weak int / float of a real x */
int
ti_int_float(Infer *in, CcNode *n, const CcBuiltin *b, const CcType *t, const CcType **out)
{
    if (check_real(in, n, t) < 0) {
        return -1;
    }
    *out = cc_weak_type(b->flavor == FL_INT ? CT_WEAK_INT : CT_WEAK_FLOAT);
    return 0;
}

/* complex(x[, y]): a weak complex; with two arguments both real */
int
ti_complex(Infer *in, CcNode *n, const CcBuiltin *b, const CcType *t, const CcType **out)
{
    if (n->nargs == 2 && check_real(in, n, t) < 0) {
        return -1;
    }
    *out = cc_weak_type(CT_WEAK_COMPLEX);
    return 0;
}

/* bool(x), math.isnan ..., np.isnan ...: bool (np.isnan(z) is NumPy's:
 * either part; math's take reals only) */
int
ti_predicate(Infer *in, CcNode *n, const CcBuiltin *b, const CcType *t, const CcType **out)
{
    if (b->flavor == FL_MATH_PRED && check_real(in, n, t) < 0) {
        return -1;
    }
    *out = cc_scalar_type(TS_BOOL);
    return 0;
}

/* np.float32(x) ...: that kind (complex to real takes the real part) */
int
ti_cast(Infer *in, CcNode *n, const CcBuiltin *b, const CcType *t, const CcType **out)
{
    *out = cc_scalar_type((TsKind)b->op);
    return 0;
}

/* math.f(x...): float32 for float32 arguments, else a weak float */
int
ti_math(Infer *in, CcNode *n, const CcBuiltin *b, const CcType *t, const CcType **out)
{
    if (check_real(in, n, t) < 0) {
        return -1;
    }
    *out = cc_math_kind(t) == TS_FLOAT32 ? cc_scalar_type(TS_FLOAT32) : cc_weak_type(CT_WEAK_FLOAT);
    return 0;
}

/* math.floor/ceil/trunc: a weak int */
int
ti_math_int(Infer *in, CcNode *n, const CcBuiltin *b, const CcType *t, const CcType **out)
{
    if (check_real(in, n, t) < 0) {
        return -1;
    }
    *out = cc_weak_type(CT_WEAK_INT);
    return 0;
}

/* np.sign(x): x's kind, strong; not of a bool (NumPy has no such loop) */
int
ti_np_sign(Infer *in, CcNode *n, const CcBuiltin *b, const CcType *t, const CcType **out)
{
    if (is_bool(t)) {
        return type_error(in, n, b->name, t, NULL);
    }
    if (check_real(in, n, t) < 0) {
        return -1;
    }
    *out = t->kind == CT_SCALAR ? t : cc_scalar_type(cc_storage(t));
    return 0;
}

/* np.f(x...), np.minimum/np.maximum: the promoted float kind of the
 * arguments (strong); NumPy's complex loop for np.exp(z) and the like;
 * np.minimum of integers, np.square/np.power/np.floor... of an integral
 * argument stay integral, as NumPy 2's integer loops */
int
ti_np(Infer *in, CcNode *n, const CcBuiltin *b, const CcType *t, const CcType **out)
{
    if (b->flavor == FL_NP && is_complex_type(t) && cc_math_has_complex((CcMathOp)b->op)) {
        *out = cc_scalar_type(complex_kind_of(t));
        return 0;
    }
    if (check_real(in, n, t) < 0) {
        return -1;
    }
    if (b->flavor == FL_NP_MINMAX && t->kind == CT_SCALAR && !ts_is_float(t->scalar)) {
        *out = t;
    } else if (np_integer_op(b, t)) {
        *out = cc_scalar_type(cc_storage(t) == TS_BOOL ? TS_INT8 : cc_storage(t));
    } else {
        *out = cc_scalar_type(cc_math_kind(t));
    }
    return 0;
}

/* x.real, x.imag: the part's kind (a weak int or float is its own part) */
int
ti_part(Infer *in, CcNode *n, const CcBuiltin *b, const CcType *t, const CcType **out)
{
    if (t->kind == CT_WEAK_COMPLEX || t->kind == CT_WEAK_INT) {
        t = t->kind == CT_WEAK_COMPLEX ? cc_weak_type(CT_WEAK_FLOAT) : t;
    } else if (ts_is_complex(t->scalar)) {
        t = cc_scalar_type(cc_math_kind(t));
    }
    *out = t;
    return 0;
}

/* x.conjugate(): x's type */
int
ti_same(Infer *in, CcNode *n, const CcBuiltin *b, const CcType *t, const CcType **out)
{
    *out = t;
    return 0;
}

/* np.where(c, x, y): the promotion of x and y (c is only a truth value) */
int
ti_where(Infer *in, CcNode *n, const CcBuiltin *b, const CcType *t, const CcType **out)
{
    const CcType *x = cc_elem_type(n->args[1]->ty), *y = cc_elem_type(n->args[2]->ty);
    (void)t;
    *out = UNKNOWN;
    if (x == UNKNOWN || y == UNKNOWN) {
        return 0;
    }
    if ((*out = cc_promote(x, y)) == NULL) {
        return type_error(in, n, b->name, x, y);
    }
    return 0;
}

static int
tuple_getitem(Infer *in, CcNode *n, const CcType **out)
{
    const CcType *t;
    if (expr(in, n->lhs, &t) < 0) {
        return -1;
    }
    *out = UNKNOWN;
    if (t == UNKNOWN) {
        return 0;
    }
    if (cc_is_array(t)) {
        /* a[3] on an array that is not a parameter: array indexing after all */
        CcNode *k = cc_alloc(in->fn->arena, sizeof(CcNode));
        CcNode **args = cc_alloc(in->fn->arena, sizeof(CcNode *));
        if (k == NULL || args == NULL) {
            return -1;
        }
        k->kind = ND_CONST;
        k->loc = n->loc;
        k->ty = cc_weak_type(CT_WEAK_INT);
        k->ival = n->index;
        args[0] = k;
        n->kind = ND_INDEX;
        n->args = args;
        n->nargs = 1;
        return array_index(in, n, out);
    }
    if (!is_tuple(t)) {
        return type_error(in, n, "indexing", t, NULL);
    }
    int i = n->index < 0 ? n->index + t->n : n->index;
    if (i < 0 || i >= t->n) {
        return cc_error(in->fn, n->loc, "tuple index %d out of range (length %d)", n->index, t->n);
    }
    n->index = i;
    *out = t->elems[i];
    return 0;
}

static int
make_tuple(Infer *in, CcNode *n, const CcType **out)
{
    const CcType **elems = cc_alloc(in->fn->arena, sizeof(CcType *) * (size_t)(n->nargs + 1));
    if (elems == NULL) {
        return -1;
    }
    *out = UNKNOWN;
    for (int i = 0; i < n->nargs; i++) {
        if (expr(in, n->args[i], &elems[i]) < 0 || fit_const(in, n->args[i], elems[i]) < 0) {
            return -1;
        }
        if (elems[i] == UNKNOWN) {
            return 0;
        }
    }
    /* structurally equal tuples must be the same object for cc_promote */
    CcType *t = cc_alloc(in->fn->arena, sizeof(CcType));
    if (t == NULL) {
        return -1;
    }
    t->kind = CT_TUPLE;
    t->n = n->nargs;
    t->elems = elems;
    *out = t;
    return 0;
}

static int block(Infer *in, CcNode *n);

/*
 * inline := device_function(args)    the type of its result variable: the
 *   promotion of everything its returns give, for these argument types
 */
/*
 * A numbavec ufunc inlined (n->text: its loops): the first loop whose inputs
 * the arguments reach by a safe cast (NumPy's choice: their promotion with
 * the loop's type is that type, weak Python numbers included) gives the
 * parameters' and the result's types.  0 when set, 1 when the arguments'
 * types are not known yet, -1 with an error.
 */
static int
ufunc_loop_types(Infer *in, CcNode *n)
{
    CcNode *body = n->then;
    int np = body->nargs - 1;
    const CcType *args[TS_MAXARGS];
    for (int k = 0; k < np; k++) {
        if (expr(in, body->args[k]->rhs, &args[k]) < 0) {
            return -1;
        }
        if (args[k] == UNKNOWN) {
            return 1;
        }
    }
    if (n->text[0] == '!') {
        return cc_dispatch_types(in->fn, n, args, np, &in->changed); /* a helper's signatures */
    }
    size_t nloops = strlen(n->text) / (size_t)(np + 1);
    for (size_t i = 0; i < nloops; i++) {
        const char *loop = n->text + i * (size_t)(np + 1);
        int k = 0;
        while (k < np && !cc_is_array(args[k])
               && cc_promote(args[k], cc_scalar_type((TsKind)(loop[k] - 'a')))
                      == cc_scalar_type((TsKind)(loop[k] - 'a'))) {
            k++;
        }
        if (k < np) {
            continue;
        }
        for (k = 0; k <= np; k++) {
            CcVar *v = k < np ? body->args[k]->var : n->var;
            const CcType *t = cc_scalar_type((TsKind)(loop[k] - 'a'));
            if (v->ty != t) {
                v->ty = t;
                in->changed = 1;
            }
        }
        return 0;
    }
    char got[TS_STRSIZE] = "", name[96];
    size_t at = 0;
    for (int k = 0; k < np && at < sizeof(got); k++) {
        at += (size_t)snprintf(got + at, sizeof(got) - at, "%s%s", k ? ", " : "",
                               cc_type_name(args[k], name, sizeof(name)));
    }
    return cc_error(in->fn, n->loc,
                    "no loop of this numbavec ufunc takes (%s) by a safe cast, as NumPy would "
                    "call it (its loops are its signatures; cast the arguments, or call a lazy "
                    "ufunc, whose loop for any types is its function)",
                    got);
}

static int
inline_call(Infer *in, CcNode *n, const CcType **out)
{
    if (n->text != NULL) {
        int rc = ufunc_loop_types(in, n);
        if (rc != 0) {
            *out = UNKNOWN;
            return rc < 0 ? -1 : 0;
        }
    }
    in->inlining++;
    int rc = block(in, n->then);
    in->inlining--;
    if (rc < 0) {
        return -1;
    }
    *out = n->var->ty;
    if (*out == UNKNOWN && in->final) {
        if (n->index == 1) {
            /* called for its effect: its value (None) is never read */
            *out = n->var->ty = cc_scalar_type(TS_BOOL);
            return 0;
        }
        return cc_error(in->fn, n->then->loc,
                        "the device function never returns a value, and its value is used");
    }
    return 0;
}

/* ---- arrays ---- */

/* The array type of an ND_INDEX/ND_ARRAYATTR operand; else an error
 * (tuples: *tuple set). */
static int
array_operand(Infer *in, CcNode *at, CcNode *lhs, const CcType **out)
{
    const CcType *t;
    if (expr(in, lhs, &t) < 0) {
        return -1;
    }
    *out = t;
    if (t == UNKNOWN || t->kind == CT_ARRAY) {
        return 0;
    }
    char name[96];
    if (lhs->kind == ND_VAR && lhs->var->iterable) {
        /* lower_for_each's hidden iterable */
        return cc_error(in->fn, lhs->loc,
                        "cannot loop over %s: a kernel loops over range(...), arrays, "
                        "enumerate(array) and zip(arrays)",
                        cc_type_name(t, name, sizeof(name)));
    }
    return cc_error(in->fn, at->loc, "%s is not an array: it cannot be indexed%s",
                    cc_type_name(t, name, sizeof(name)),
                    at->kind == ND_ARRAYATTR ? " or asked for its shape" : "");
}

/* An integer index (or a slice bound): 0/-1. */
static int
integer_index(Infer *in, CcNode *i, const char *what)
{
    const CcType *t;
    if (expr(in, i, &t) < 0) {
        return -1;
    }
    if (t != UNKNOWN && (!is_integral(t) || is_bool(t) || is_tuple(t) || cc_is_array(t))) {
        char name[96];
        return cc_error(in->fn, i->loc, "%s must be integers, not %s%s", what,
                        cc_type_name(t, name, sizeof(name)),
                        cc_is_array(t) ? " (indexing by arrays is not supported yet)" : "");
    }
    return fit_const(in, i, cc_scalar_type(TS_INT64));
}

/*
 * index := a[item, ...]     a: an array of d dimensions
 *   item: an integer (takes a dimension away), a slice (keeps it), None
 *   (adds one of length 1), ... (every dimension not indexed otherwise), or
 *   one tuple of integers (a[idx]).  Dimensions left unindexed are kept
 *   whole.  All integers and no slice, None or ...: an element; else a view.
 */
static int
array_index(Infer *in, CcNode *n, const CcType **out)
{
    const CcType *a;
    *out = UNKNOWN;
    if (array_operand(in, n, n->lhs, &a) < 0) {
        return -1;
    }
    int consumed = 0, added = 0, ellipses = 0, element = 1;
    for (int i = 0; i < n->nargs; i++) {
        CcNode *item = n->args[i];
        switch (item->kind) {
        case ND_SLICE: {
            CcNode *parts[3] = {item->lhs, item->rhs, item->cond};
            for (int k = 0; k < 3; k++) {
                if (parts[k] != NULL && parts[k]->kind == ND_CONST && parts[k]->big) {
                    /* a Python int past int64 slices as int64's extreme does */
                    parts[k]->ival = parts[k]->ihigh < 0 ? INT64_MIN : INT64_MAX;
                    parts[k]->ihigh = parts[k]->ihigh < 0 ? -1 : 0;
                    parts[k]->big = 0;
                }
                if (parts[k] != NULL && integer_index(in, parts[k], "slice bounds") < 0) {
                    return -1;
                }
            }
            consumed++;
            added++;
            element = 0;
            break;
        }
        case ND_NEWAXIS:
            added++;
            element = 0;
            break;
        case ND_ELLIPSIS:
            if (++ellipses > 1) {
                return cc_error(in->fn, item->loc, "an index can only have a single ellipsis");
            }
            element = 0;
            break;
        default: {
            const CcType *t;
            if (expr(in, item, &t) < 0) {
                return -1;
            }
            if (n->nargs == 1 && t != UNKNOWN && is_tuple(t)) {
                /* a[idx], idx a tuple of integers */
                for (int k = 0; k < t->n; k++) {
                    if (!is_integral(t->elems[k]) || is_bool(t->elems[k])) {
                        return type_error(in, item, "indexing by the tuple", t, NULL);
                    }
                }
                consumed += t->n;
                break;
            }
            if (n->nargs == 1 && cc_is_array(t) && t->scalar == TS_BOOL) {
                /* a[mask]: the elements where mask holds, in a new 1-d array */
                if (a != UNKNOWN && t->n != a->n) {
                    return cc_error(in->fn, item->loc,
                                    "a boolean index of %d dimension(s) for an array of %d", t->n,
                                    a->n);
                }
                in->fn->allocates = 1;
                *out =
                    a == UNKNOWN || a->scalar == TS_INFER ? UNKNOWN : cc_array_type(a->scalar, 1);
                return 0;
            }
            if (n->nargs == 1 && cc_is_array(t) && t->scalar != TS_INFER
                && is_integral(cc_scalar_type(t->scalar))) {
                /* a[idx]: the items of a (elements, or rows of an N-d a) at the
                 * indices idx holds, in a new array of idx's shape + a's rest */
                if (a != UNKNOWN && t->n + a->n - 1 > TS_MAXDIMS) {
                    return cc_error(in->fn, n->loc, "a view of more than %d dimensions",
                                    TS_MAXDIMS);
                }
                in->fn->allocates = 1;
                *out = a == UNKNOWN || a->scalar == TS_INFER
                           ? UNKNOWN
                           : cc_array_type(a->scalar, t->n + a->n - 1);
                return 0;
            }
            if (integer_index(in, item, "array indices") < 0) {
                return -1;
            }
            consumed++;
        }
        }
    }
    if (a == UNKNOWN) {
        return 0;
    }
    if (consumed > a->n) {
        return cc_error(in->fn, n->loc, "too many indices for an array of %d dimension%s: %d", a->n,
                        a->n == 1 ? "" : "s", consumed);
    }
    int ndim = a->n - consumed + added;
    if (ndim > TS_MAXDIMS) {
        return cc_error(in->fn, n->loc, "a view of more than %d dimensions", TS_MAXDIMS);
    }
    if (a->scalar == TS_INFER) {
        return 0; /* known once something is stored into a */
    }
    *out = element && consumed == a->n ? cc_scalar_type(a->scalar) : cc_array_type(a->scalar, ndim);
    return 0;
}

/*
 * array_attr := a.shape | a.strides | a.size | a.ndim | a.itemsize | a.T | len(a)
 *   shape, strides: a tuple of d Python ints; size, ndim, itemsize, len: a
 *   Python int (weak, so `n * x` keeps x's kind); .T: the reversed view;
 *   len of a tuple is its length
 */
static int
array_attr(Infer *in, CcNode *n, const CcType **out)
{
    const CcType *a = UNKNOWN;
    *out = UNKNOWN;
    if (n->index == AA_LEN) {
        /* len(tuple) is a constant; n->lhs->ty tells emit.c which it is */
        if (expr(in, n->lhs, &a) < 0) {
            return -1;
        }
        if (a != UNKNOWN && a->kind == CT_TUPLE) {
            *out = cc_weak_type(CT_WEAK_INT);
            return 0;
        }
    }
    if (array_operand(in, n, n->lhs, &a) < 0 || a == UNKNOWN) {
        return a == UNKNOWN && !PyErr_Occurred() ? 0 : -1;
    }
    switch ((CcArrayAttr)n->index) {
    case AA_T:
        *out = a->scalar == TS_INFER ? UNKNOWN : a;
        return 0;
    case AA_LEN:
        if (a->n == 0) {
            return cc_error(in->fn, n->loc, "len() of a 0-d array (it has no length)");
        }
        /* fall through */
    case AA_SIZE:
    case AA_NDIM:
    case AA_ITEMSIZE:
        if (n->index == AA_ITEMSIZE && a->scalar == TS_INFER) {
            return 0;
        }
        *out = cc_weak_type(CT_WEAK_INT);
        return 0;
    case AA_KIND_IS:
    case AA_DTYPE_IS:
        *out = a->scalar == TS_INFER ? UNKNOWN : cc_scalar_type(TS_BOOL);
        return 0;
    case AA_SHAPE:
    case AA_STRIDES:
        break;
    }
    CcType *t = cc_alloc(in->fn->arena, sizeof(CcType));
    const CcType **elems = cc_alloc(in->fn->arena, sizeof(CcType *) * (size_t)(a->n + 1));
    if (t == NULL || elems == NULL) {
        return -1;
    }
    for (int i = 0; i < a->n; i++) {
        elems[i] = cc_weak_type(CT_WEAK_INT);
    }
    t->kind = CT_TUPLE;
    t->n = a->n;
    t->elems = elems;
    *out = t;
    return 0;
}

/*
 * a[...] = v, a an array whose element kind is inferred: that kind is
 *   the promotion of every v stored into a (weak values as NEP 50 has
 *   them: 1.0 into an array holding float32 keeps float32)
 */
static int
infer_element(Infer *in, CcNode *n, const CcType *t, const CcType **elem)
{
    CcNode *base = n->lhs->lhs;
    t = cc_elem_type(t);
    if (base->kind != ND_VAR || !base->var->infer_elem || t == UNKNOWN) {
        return 0;
    }
    CcVar *a = base->var;
    const CcType *p = a->elem == UNKNOWN ? t : cc_promote(a->elem, t);
    if (is_tuple(t) || p == NULL) {
        char name[96];
        return cc_error(in->fn, n->loc, "cannot store %s into the array '%s'",
                        cc_type_name(t, name, sizeof(name)), a->name);
    }
    if (p != a->elem) {
        a->elem = p;
        a->ty = cc_array_type(cc_storage(p), a->ty->n);
        in->changed = 1;
    }
    if (*elem == UNKNOWN) {
        /* the target typed again with a's kind known: an element, or a view
         * (out[:] = a * 2) */
        return expr(in, n->lhs, elem);
    }
    return 0;
}

/*
 * setitem := a[index] = v
 *   an element: v is cast to a's element kind (as NumPy's casting='unsafe'
 *   assignment does), except complex into a real array, which is an error;
 *   a view: v (a scalar or an array) is broadcast to the view's shape and
 *   cast the same way; in place (a[...] op= v, t op= v), NumPy's ufunc with
 *   out=: its result must cast into a's kind by same_kind (casting.c)
 */
static int
setitem(Infer *in, CcNode *n)
{
    const CcType *target, *t;
    if (expr(in, n->lhs, &target) < 0 || expr(in, n->rhs, &t) < 0
        || infer_element(in, n, t, &target) < 0) {
        return -1;
    }
    if (target == UNKNOWN || t == UNKNOWN) {
        return 0;
    }
    const CcType *elem = cc_elem_type(target), *v = cc_elem_type(t);
    const CcType *base = n->lhs->kind == ND_INDEX ? n->lhs->lhs->ty : NULL;
    if (n->lhs->kind == ND_INDEX && n->lhs->nargs == 1 && cc_is_array(n->lhs->args[0]->ty)
        && n->lhs->args[0]->ty->scalar != TS_BOOL && cc_is_array(base) && base->n > 1) {
        return cc_error(in->fn, n->loc,
                        "storing through an integer-array index of a %d-d array "
                        "is not supported yet (reading it is; 1-d arrays take "
                        "both)",
                        base->n);
    }
    if (cc_is_array(t) && n->lhs->kind == ND_INDEX && n->lhs->nargs == 1
        && cc_is_array(n->lhs->args[0]->ty) && t->n > 1) {
        /* a[mask] = v, a[idx] = v: v's elements in order (or its one) */
        return cc_error(in->fn, n->loc,
                        "a %d-d array stored through an index array: NumPy takes a 1-d one "
                        "(its elements in order) or a scalar",
                        t->n);
    }
    if (cc_is_array(t) && !cc_is_array(target)) {
        return cc_error(in->fn, n->loc,
                        "cannot store an array into one element (setting an array element "
                        "with a sequence)");
    }
    if (cc_is_array(t) && t->n > target->n) {
        return cc_error(in->fn, n->loc, "cannot store a %d-d array into a %d-d view", t->n,
                        target->n);
    }
    if (cc_is_array(t)) {
        in->fn->allocates = 1; /* a source that overlaps the target is copied first */
    }
    if (v == UNKNOWN) {
        return 0;
    }
    if (n->index > 0 && cc_is_array(target) && !is_tuple(v)
        && cc_check_inplace(in->fn, n, elem->scalar, cc_storage(v)) < 0) {
        return -1; /* t[1:] += 0.5 of ints: NumPy's same_kind rule */
    }
    if (is_tuple(v) || (is_complex_type(v) && !is_complex_type(elem))) {
        char a[96], b[96];
        return cc_error(in->fn, n->loc, "cannot store %s into an array of %s",
                        cc_type_name(t, a, sizeof(a)), cc_type_name(elem, b, sizeof(b)));
    }
    return fit_const(in, n->rhs, elem); /* a[i] = 300 into int8 raises in NumPy 2 */
}

/* An integer argument of an array function (a dimension). */
static int
dimension(Infer *in, CcNode *d)
{
    return integer_index(in, d, "array dimensions");
}

/* The kind dtype= gives a call (n->index, or n->rhs's element), or dflt. */
static int
call_dtype(Infer *in, CcNode *n, TsKind dflt, TsKind *out)
{
    *out = dflt;
    if (n->index > 0) {
        *out = (TsKind)(n->index - 1);
    } else if (n->rhs != NULL) {
        const CcType *t;
        if (array_operand(in, n, n->rhs, &t) < 0) {
            return -1;
        }
        *out = t == UNKNOWN || t->scalar == TS_INFER ? TS_INFER : t->scalar;
    }
    return 0;
}

/* The kind NumPy's sum and prod accumulate an array of kind k in. */
static TsKind
sum_kind(TsKind k)
{
    if (k == TS_BOOL || (ts_is_int(k) && ts_is_signed(k) && ts_bits(k) < 64)) {
        return TS_INT64;
    }
    if (ts_is_int(k) && !ts_is_signed(k) && ts_bits(k) < 64) {
        return TS_UINT64;
    }
    return k;
}

/*
 * np.sum(a, axis=k) ...: k an integer constant (negative from the end);
 *   a 1-d a gives the scalar, an N-d one the array of the other dimensions
 *   (allocated).  n->index takes the normalised axis (1 + k, as a method's
 *   flag 1 is no longer needed once typed).  argmin/argmax and nanmean take
 *   no axis yet.
 */
static int
reduce_axis(Infer *in, CcNode *n, const CcBuiltin *b, int ndim, TsKind elem, const CcType **out)
{
    CcNode *k = n->args[1];
    const CcType *t;
    if (expr(in, k, &t) < 0) {
        return -1;
    }
    long long axis = k->kind == ND_CONST && t != UNKNOWN && t->kind == CT_WEAK_INT ? k->ival : 0;
    if (k->kind == ND_UNARY && k->op == OP_NEG && k->lhs->kind == ND_CONST
        && k->lhs->ty->kind == CT_WEAK_INT) {
        axis = -k->lhs->ival;
    } else if (k->kind != ND_CONST || t == UNKNOWN || t->kind != CT_WEAK_INT) {
        return cc_error(in->fn, k->loc, "the axis of %s() must be an integer constant", b->name);
    }
    if (axis < -ndim || axis >= ndim || ndim == 0) {
        return cc_error(in->fn, k->loc, "axis %lld is out of bounds for an array of dimension %d",
                        axis, ndim);
    }
    n->index = 1 + (int)(axis < 0 ? axis + ndim : axis);
    if (b->op == R_CUMSUM || b->op == R_CUMPROD) {
        in->fn->allocates = 1;
        *out = cc_array_type(elem, ndim); /* a's shape */
        return 0;
    }
    if (ndim > 1) {
        in->fn->allocates = 1;
        *out = cc_array_type(elem, ndim - 1);
    }
    return 0;
}

/*
 * array_call := np.empty/zeros/ones(shape, dtype=)       an array of shape
 *             | np.full(shape, fill, dtype=)             (an int or a tuple)
 *             | np.empty_like(a, dtype=) ... a.copy()    a's shape
 *             | np.sum(a), a.max(), ...                  a scalar
 *   Arrays are allocated only in guvectorize kernels, which can report that
 *   memory ran out.
 */
static int
array_call(Infer *in, CcNode *n, const CcBuiltin *b, const CcType **out)
{
    const CcType *t;
    *out = UNKNOWN;
    if (b->flavor != FL_REDUCE && !in->gufunc) {
        return cc_error(in->fn, n->loc,
                        "%s() allocates an array, which only a guvectorize kernel can do", b->name);
    }
    if (expr(in, n->args[0], &t) < 0) {
        return -1;
    }
    const CcType *fill = UNKNOWN;
    int full = b->flavor != FL_REDUCE && b->op == AL_FULL;
    if (full && expr(in, n->args[1], &fill) < 0) {
        return -1;
    }
    if (fill != UNKNOWN && (is_tuple(fill) || cc_is_array(fill))) {
        return type_error(in, n->args[1], "a fill value", fill, NULL);
    }
    if (t == UNKNOWN) {
        return 0;
    }
    int ndim = 0;
    TsKind elem = TS_FLOAT64;
    if (b->flavor == FL_ALLOC) {
        if (is_tuple(t)) {
            if (n->args[0]->kind == ND_TUPLE) {
                for (int i = 0; i < n->args[0]->nargs; i++) {
                    if (dimension(in, n->args[0]->args[i]) < 0) {
                        return -1;
                    }
                }
            }
            for (int i = 0; i < t->n; i++) {
                if (!is_integral(t->elems[i]) || is_bool(t->elems[i])) {
                    return type_error(in, n->args[0], "a shape of", t, NULL);
                }
            }
            ndim = t->n;
        } else if (dimension(in, n->args[0]) < 0) {
            return -1;
        } else {
            ndim = 1;
        }
        if (full && fill != UNKNOWN) {
            elem = cc_storage(fill); /* np.full(3, 7) holds int64 */
        }
    } else if (b->flavor == FL_REDUCE && !is_tuple(t) && !cc_is_array(t) && n->index != 1) {
        elem = cc_storage(t); /* np.max(x) of a scalar: x, as a 0-d array */
    } else {
        if (!cc_is_array(t)) {
            char name[96];
            return cc_error(in->fn, n->args[0]->loc,
                            n->index == 1 ? "%s has no method %s(): it is not an array"
                                          : "%s() of %s: this function takes arrays",
                            n->index == 1 ? cc_type_name(t, name, sizeof(name)) : b->name,
                            n->index == 1 ? b->name + strlen("numpy")
                                          : cc_type_name(t, name, sizeof(name)));
        }
        if (t->scalar == TS_INFER) {
            return 0;
        }
        ndim = t->n;
        elem = t->scalar;
    }
    if (b->flavor == FL_REDUCE) {
        TsKind in_kind = elem;
        switch ((CcReduceOp)b->op) {
        case R_ANY:
        case R_ALL:
            elem = TS_BOOL;
            break;
        case R_ARGMIN:
        case R_ARGMAX:
            elem = TS_INT64;
            break;
        case R_MEAN:
        case R_NANMEAN:
            elem = ts_is_float(elem) || ts_is_complex(elem) ? elem : TS_FLOAT64;
            break;
        case R_VAR:
        case R_STD:
            /* of complex values: real, their parts' kind (NumPy) */
            elem = ts_is_float(elem)       ? elem
                   : elem == TS_COMPLEX64  ? TS_FLOAT32
                   : elem == TS_COMPLEX128 ? TS_FLOAT64
                                           : TS_FLOAT64;
            break;
        case R_SUM:
        case R_PROD:
        case R_NANSUM:
        case R_NANPROD:
        case R_CUMSUM:
        case R_CUMPROD:
            elem = sum_kind(elem);
            break;
        default:
            break;
        }
        if (ts_is_complex(in_kind) && b->op != R_SUM && b->op != R_PROD && b->op != R_MEAN
            && b->op != R_ANY && b->op != R_ALL && b->op != R_VAR && b->op != R_STD) {
            return type_error(in, n, b->name, t, NULL);
        }
        if (b->op == R_CUMSUM || b->op == R_CUMPROD) {
            if (!cc_is_array(t)) {
                return cc_error(in->fn, n->loc, "%s() takes an array", b->name);
            }
            if (n->nargs == 2) {
                return reduce_axis(in, n, b, ndim, elem, out);
            }
            in->fn->allocates = 1;
            *out = cc_array_type(elem, 1); /* flattened, as NumPy's without an axis */
            return 0;
        }
        *out = cc_scalar_type(elem);
        return n->nargs == 2 ? reduce_axis(in, n, b, ndim, elem, out) : 0;
    }
    if (call_dtype(in, n, elem, &elem) < 0) {
        return -1;
    }
    if (elem == TS_INFER) {
        return 0;
    }
    if (fill != UNKNOWN) {
        if (is_complex_type(fill) && !ts_is_complex(elem)) {
            char name[96];
            return cc_error(in->fn, n->args[1]->loc, "cannot fill an array of %s with %s",
                            ts_kind_name(elem), cc_type_name(fill, name, sizeof(name)));
        }
        if (fit_const(in, n->args[1], cc_scalar_type(elem)) < 0) {
            return -1;
        }
    }
    in->fn->allocates = 1;
    *out = cc_array_type(elem, ndim);
    return 0;
}

/*
 * np.ndindex's loop (lower.c): .ndsize(shape), the number of indices, a
 *   Python int; .unravel(k, shape), the k-th index in C order, a tuple of
 *   Python ints as long as the shape.  shape: a tuple of integers or one.
 */
static int
shape_call(Infer *in, CcNode *n, const CcBuiltin *b, const CcType **out)
{
    CcNode *shape = n->args[n->nargs - 1];
    const CcType *t;
    *out = UNKNOWN;
    if ((b->flavor == FL_UNRAVEL && integer_index(in, n->args[0], "indices") < 0)
        || expr(in, shape, &t) < 0 || t == UNKNOWN) {
        return PyErr_Occurred() ? -1 : 0;
    }
    int nd = is_tuple(t) ? t->n : 1;
    for (int i = 0; i < nd; i++) {
        const CcType *e = is_tuple(t) ? t->elems[i] : t;
        if (!is_integral(e) || is_bool(e) || is_tuple(e) || cc_is_array(e)) {
            return type_error(in, shape, "np.ndindex() of", t, NULL);
        }
    }
    if (!is_tuple(t) && fit_const(in, shape, cc_scalar_type(TS_INT64)) < 0) {
        return -1;
    }
    if (b->flavor == FL_NDSIZE) {
        *out = cc_weak_type(CT_WEAK_INT);
        return 0;
    }
    CcType *r = cc_alloc(in->fn->arena, sizeof(CcType));
    const CcType **elems = cc_alloc(in->fn->arena, sizeof(CcType *) * (size_t)(nd + 1));
    if (r == NULL || elems == NULL) {
        return -1;
    }
    for (int i = 0; i < nd; i++) {
        elems[i] = cc_weak_type(CT_WEAK_INT);
    }
    *r = (CcType){.kind = CT_TUPLE, .n = nd, .elems = elems};
    *out = r;
    return 0;
}

/*
 * sort := np.sort(a, axis=-1) | np.argsort(a) | np.partition(a, kth)   arrays
 *       | a.sort() | a.partition(kth)                  in place, statements
 *       | np.median(a) | np.quantile(a, q) | np.percentile(a, q) ...  a scalar
 *       | np.unique(a)                                 1-d
 *       | np.searchsorted(a, v, side=)                 v's shape, int64
 *   runtime.c does the work, on the host: not in a cuda kernel, but for
 *   np.searchsorted of one real or integer value, searched in line.  axis:
 *   the last one, or None (flattened) where NumPy allows it.
 */
static int
sort_call(Infer *in, CcNode *n, const CcBuiltin *b, const CcType **out)
{
    CcSortOp op = (CcSortOp)b->op;
    const CcType *a, *x = UNKNOWN;
    *out = UNKNOWN;
    if (in->fn->device && op != S_SEARCHSORTED) {
        return cc_error(in->fn, n->loc,
                        "%s() is not available in a cuda kernel (it runs on the "
                        "host)",
                        b->name);
    }
    if (expr(in, n->args[0], &a) < 0 || (n->nargs > 1 && expr(in, n->args[1], &x) < 0)) {
        return -1;
    }
    /* one value searched for is a search in line (emitarray.c:
     * search_in_line), which a cuda kernel can run; complex values and
     * arrays of values go to the runtime */
    if (in->fn->device && a != UNKNOWN && x != UNKNOWN
        && (cc_is_array(x) || is_tuple(x) || !cc_is_array(a) || ts_is_complex(a->scalar))) {
        return cc_error(in->fn, n->loc,
                        "%s() in a cuda kernel searches for one real or integer value (an "
                        "array of values, or complex ones, are searched on the host)",
                        b->name);
    }
    int in_place = op == S_SORT_IN_PLACE || op == S_PARTITION_IN_PLACE;
    if (in_place && !(n->index & 2)) {
        return cc_error(in->fn, n->loc,
                        "a%s() works in place and returns None: use np%s(a) for "
                        "a sorted copy",
                        b->name, b->name);
    }
    if (a == UNKNOWN) {
        return 0;
    }
    if (!cc_is_array(a)) {
        char name[96];
        return cc_error(in->fn, n->args[0]->loc, "%s() of %s: this function takes arrays", b->name,
                        cc_type_name(a, name, sizeof(name)));
    }
    if (a->scalar == TS_INFER) {
        return 0;
    }
    TsKind k = a->scalar;
    int ndim = a->n;
    int uses_axis = op == S_SORT || op == S_ARGSORT || op == S_PARTITION || in_place;
    if (ndim == 0) {
        return cc_error(in->fn, n->loc, "%s() of a 0-d array", b->name);
    }
    if (uses_axis && n->ival == CC_AXIS_NONE && in_place) {
        return cc_error(in->fn, n->loc, "a%s() sorts along an axis, not axis=None", b->name);
    }
    if (uses_axis && n->ival != CC_AXIS_NONE) {
        if (n->ival < -ndim || n->ival >= ndim) {
            return cc_error(in->fn, n->loc,
                            "axis %lld is out of bounds for an array of dimension %d", n->ival,
                            ndim);
        }
        n->ival += n->ival < 0 ? ndim : 0; /* emitarray.c reads it as 0 .. ndim-1 */
    }
    if (op == S_PARTITION || op == S_PARTITION_IN_PLACE) {
        if (n->nargs < 2) {
            return cc_error(in->fn, n->loc, "%s() needs kth", b->name);
        }
        if (integer_index(in, n->args[1], "kth") < 0) {
            return -1;
        }
    }
    int quantile =
        op == S_QUANTILE || op == S_NANQUANTILE || op == S_PERCENTILE || op == S_NANPERCENTILE;
    if (quantile || op == S_MEDIAN || op == S_NANMEDIAN) {
        if (quantile && n->nargs < 2) {
            return cc_error(in->fn, n->loc, "%s() needs q", b->name);
        }
        if (ts_is_complex(k) || k == TS_BOOL) {
            return type_error(in, n, b->name, a, NULL);
        }
        if (x != UNKNOWN && (is_tuple(x) || cc_is_array(x) || is_complex_type(x))) {
            char name[96];
            return cc_error(in->fn, n->args[1]->loc,
                            "%s() takes one quantile, a real number, "
                            "not %s",
                            b->name, cc_type_name(x, name, sizeof(name)));
        }
        if (x != UNKNOWN && fit_const(in, n->args[1], cc_scalar_type(TS_FLOAT64)) < 0) {
            return -1;
        }
        if (!in->gufunc) {
            return cc_error(in->fn, n->loc,
                            "%s() needs a scratch copy of its array, which only "
                            "a guvectorize kernel can allocate",
                            b->name);
        }
        in->fn->allocates = 1;
        *out = cc_scalar_type(k == TS_FLOAT32 ? TS_FLOAT32 : TS_FLOAT64);
        return 0;
    }
    if (op == S_SEARCHSORTED) {
        if (ndim != 1) {
            return cc_error(in->fn, n->args[0]->loc, "%s() takes a 1-d array to search", b->name);
        }
        if (x == UNKNOWN) {
            return 0;
        }
        if (is_tuple(x)) {
            return type_error(in, n->args[1], "np.searchsorted() of", x, NULL);
        }
        const CcType *xe = cc_is_array(x) ? cc_scalar_type(x->scalar) : x;
        const CcType *p = cc_promote(cc_scalar_type(k), xe);
        if (p == NULL || cc_storage(p) != k) {
            char an[96], xn[96];
            return cc_error(in->fn, n->args[1]->loc,
                            "np.searchsorted() of %s in an array of %s: "
                            "cast the values to the array's kind (or the array to theirs)",
                            cc_type_name(xe, xn, sizeof(xn)), cc_type_name(a, an, sizeof(an)));
        }
        if (fit_const(in, n->args[1], cc_scalar_type(k)) < 0) {
            return -1;
        }
        if (!cc_is_array(x)) {
            *out = cc_scalar_type(TS_INT64);
            return 0;
        }
        if (!in->gufunc) {
            return cc_error(in->fn, n->loc,
                            "np.searchsorted() of an array allocates an array, "
                            "which only a guvectorize kernel can do");
        }
        in->fn->allocates = 1;
        *out = cc_array_type(TS_INT64, x->n);
        return 0;
    }
    if (in_place) {
        *out = cc_scalar_type(TS_BOOL); /* None, never read */
        return 0;
    }
    if (!in->gufunc) {
        return cc_error(in->fn, n->loc,
                        "%s() allocates an array, which only a guvectorize "
                        "kernel can do",
                        b->name);
    }
    in->fn->allocates = 1;
    int flat = op == S_UNIQUE || n->ival == CC_AXIS_NONE;
    *out = cc_array_type(op == S_ARGSORT ? TS_INT64 : k, flat ? 1 : ndim);
    return 0;
}

/*
 * dot := np.dot(a, b) | a @ b     a, b: 1-d or 2-d arrays
 *   1-d with 1-d: a scalar (their inner product); with a 2-d array: a 1-d
 *   array (the vector as a row, or as a column, as NumPy has it); 2-d with
 *   2-d: the matrix product.  The kind is the operands' promotion.
 */
static int
dot_call(Infer *in, CcNode *n, const CcBuiltin *b, const CcType **out)
{
    const CcType *t[2];
    const char *name = b->op == 1 ? "a @ b" : "np.dot()";
    *out = UNKNOWN;
    for (int i = 0; i < 2; i++) {
        if (expr(in, n->args[i], &t[i]) < 0) {
            return -1;
        }
    }
    for (int i = 0; i < 2; i++) {
        char tn[96];
        if (t[i] == UNKNOWN) {
            return 0;
        }
        if (!cc_is_array(t[i])) {
            return cc_error(in->fn, n->args[i]->loc,
                            "%s of %s: it takes 1-d and 2-d arrays (to "
                            "scale by a number, use *)",
                            name, cc_type_name(t[i], tn, sizeof(tn)));
        }
        if (t[i]->scalar == TS_INFER) {
            return 0;
        }
        if (t[i]->n < 1 || t[i]->n > 2) {
            return cc_error(in->fn, n->args[i]->loc,
                            "%s of a %d-d array is not supported yet "
                            "(1-d and 2-d only)",
                            name, t[i]->n);
        }
    }
    const CcType *k = cc_promote(cc_scalar_type(t[0]->scalar), cc_scalar_type(t[1]->scalar));
    if (k == NULL || cc_storage(k) == TS_BOOL) {
        return type_error(in, n, name, t[0], t[1]);
    }
    int nd = t[0]->n + t[1]->n - 2;
    if (nd == 0) {
        *out = k;
        return 0;
    }
    if (!in->gufunc) {
        return cc_error(in->fn, n->loc,
                        "%s allocates an array, which only a guvectorize kernel "
                        "can do",
                        name);
    }
    in->fn->allocates = 1;
    *out = cc_array_type(cc_storage(k), nd);
    return 0;
}

/*
 * arange := np.arange([start,] stop[, step], dtype=)    a new 1-d array
 *   of the arguments' promotion (ints: int64, floats: float64) or dtype.
 */
static int
arange_call(Infer *in, CcNode *n, const CcBuiltin *b, const CcType **out)
{
    const CcType *t;
    *out = UNKNOWN;
    if (promote_all(in, n->args, n->nargs, &t) < 0) {
        return -1;
    }
    if (t == UNKNOWN) {
        return 0;
    }
    if (is_tuple(t) || cc_is_array(t) || is_complex_type(t)) {
        return type_error(in, n, "np.arange() of", t, NULL);
    }
    TsKind elem = is_integral(t) ? (t->kind == CT_WEAK_INT || is_bool(t) ? TS_INT64 : t->scalar)
                                 : cc_storage(t);
    if (call_dtype(in, n, elem, &elem) < 0) {
        return -1;
    }
    if (elem == TS_INFER) {
        return 0;
    }
    if (ts_is_complex(elem) || elem == TS_BOOL) {
        return cc_error(in->fn, n->loc, "np.arange() of %s is not supported", ts_kind_name(elem));
    }
    if (!in->gufunc) {
        return cc_error(in->fn, n->loc,
                        "np.arange() allocates an array, which only a guvectorize kernel can do");
    }
    if (fit_consts(in, n->args, n->nargs, is_integral(t) ? cc_scalar_type(TS_INT64) : t) < 0) {
        return -1;
    }
    in->fn->allocates = 1;
    *out = cc_array_type(elem, 1);
    return 0;
}

int
ti_array_call(Infer *in, CcNode *n, const CcBuiltin *b, const CcType *t, const CcType **out)
{
    (void)t;
    return array_call(in, n, b, out);
}

/*
 * An elementwise operation (operators, np.sqrt ...) typed by elements: an
 * array operand is lifted (lift_operand), and the result is an array of
 * the element result's kind with the largest operand's ndim.  and/or,
 * `not` and `x if c else y` take truth values, which arrays do not have.
 */
static int
elementwise(Infer *in, CcNode *n, int rc, int lift, const CcType **t)
{
    if (rc < 0 || lift < 0) {
        return rc;
    }
    const char *bad = NULL;
    if (n->kind == ND_BOOLOP || (n->kind == ND_UNARY && n->op == OP_NOT)) {
        bad = "'and', 'or' and 'not' take truth values, which arrays do not have (NumPy "
              "raises); use &, | and ~";
    } else if (n->kind == ND_IFEXP) {
        bad = "an if-expression cannot choose between arrays in a kernel (use np.where "
              "semantics by assignment)";
    } else if (n->kind == ND_CALL && !cc_flavor_elementwise(cc_builtin(n->builtin)->flavor)) {
        bad = "this function takes scalars, not arrays (NumPy's np.* functions take both)";
    }
    if (bad != NULL) {
        return cc_error(in->fn, n->loc, "%s", bad);
    }
    if (*t != UNKNOWN) {
        *t = cc_array_type(cc_storage(*t), lift);
    }
    if (in->gufunc) {
        /* where its value is needed as an array (a.shape, np.dot, a view of
         * it), the expression is computed into one */
        in->fn->allocates = 1;
    }
    return 0;
}

/*
 * `a if c else b` where a branch is an array: the view chosen, as Python
 * binds the object (nothing is computed elementwise, nothing copied).  The
 * branches must be arrays of one type, which the variable it is assigned to
 * can hold.  0 with *t set, 1 when neither branch is an array (the scalar
 * rule applies), -1 with an error.
 */
static int
array_choice(Infer *in, CcNode *n, const CcType **t)
{
    const CcType *a, *b;
    if (expr(in, n->then, &a) < 0 || expr(in, n->els, &b) < 0) {
        return -1;
    }
    if (!cc_is_array(a) && !cc_is_array(b)) {
        return 1;
    }
    if (a == UNKNOWN || b == UNKNOWN) {
        *t = cc_is_array(a) && b == UNKNOWN ? a : cc_is_array(b) && a == UNKNOWN ? b : UNKNOWN;
        return 0;
    }
    if (a != b) {
        char x[96], y[96];
        return cc_error(in->fn, n->loc,
                        "an if-expression chooses one object: here %s or %s, which no variable "
                        "can hold both of (make both arrays of one type, or use np.where)",
                        cc_type_name(a, x, sizeof(x)), cc_type_name(b, y, sizeof(y)));
    }
    *t = a;
    return 0;
}

static int
expr(Infer *in, CcNode *n, const CcType **out)
{
    int rc = 0;
    const CcType *t = UNKNOWN;
    int saved_lift = in->lift;
    in->lift = -1;
    switch (n->kind) {
    case ND_CONST:
        t = n->ty;
        break;
    case ND_VAR:
        t = n->var->ty;
        if (t == UNKNOWN && in->final) {
            rc = cc_error(in->fn, n->loc, "the type of '%s' could not be inferred", n->var->name);
        }
        break;
    case ND_INDEX:
        rc = array_index(in, n, &t);
        break;
    case ND_ARRAYATTR:
        rc = array_attr(in, n, &t);
        break;
    case ND_BINOP:
        rc = binop(in, n, &t);
        break;
    case ND_UNARY:
        rc = unary(in, n, &t);
        break;
    case ND_COMPARE:
        rc = compare(in, n, &t);
        break;
    case ND_BOOLOP:
        rc = promote_all(in, n->args, n->nargs, &t);
        if (rc == 0) {
            rc = fit_consts(in, n->args, n->nargs, t);
        }
        break;
    case ND_IFEXP: {
        CcNode *both[2] = {n->then, n->els};
        rc = condition(in, n->cond);
        if (rc == 0 && (rc = array_choice(in, n, &t)) != 1) {
            break; /* views: the one chosen (or an error) */
        }
        if (rc == 1) { /* scalars: their promotion */
            rc = promote_all(in, both, 2, &t);
        }
        if (rc == 0) {
            rc = fit_consts(in, both, 2, t);
        }
        break;
    }
    case ND_CALL:
        rc = call(in, n, &t);
        break;
    case ND_TUPLE:
        rc = make_tuple(in, n, &t);
        break;
    case ND_GETITEM:
        rc = tuple_getitem(in, n, &t);
        break;
    case ND_INLINE:
        rc = inline_call(in, n, &t);
        break;
    case ND_SLICE:
    case ND_NEWAXIS:
    case ND_ELLIPSIS:
        rc = cc_error(in->fn, n->loc, "slices, None and ... are only array indices");
        break;
    default:
        rc = cc_error(in->fn, n->loc, "internal error: statement in expression position");
    }
    rc = elementwise(in, n, rc, in->lift, &t);
    in->lift = saved_lift;
    n->ty = t;
    *out = t;
    return rc;
}

/* Records that var receives a value of type t. */
static int
assign(Infer *in, CcNode *at, CcVar *var, const CcType *t)
{
    if (t == UNKNOWN) {
        return 0;
    }
    if (cc_is_array(var->ty) || cc_is_array(t)) {
        /* a variable holds one kind of array: a view of it, never a copy */
        char a[96], b[96];
        if (var->is_param && var->ty != t) {
            return cc_error(in->fn, at->loc,
                            "cannot assign to '%s': it is an array argument (%s), and this is %s",
                            var->name, cc_type_name(var->ty, a, sizeof(a)),
                            cc_type_name(t, b, sizeof(b)));
        }
        if (var->infer_elem) {
            return cc_error(in->fn, at->loc,
                            "cannot assign to '%s': it is an output whose type is inferred "
                            "(write its elements: %s[...] = value)",
                            var->name, var->name);
        }
        if (var->ty == UNKNOWN) {
            var->ty = t;
            in->changed = 1;
            return 0;
        }
        if (var->ty == t) {
            return 0;
        }
        return cc_error(in->fn, at->loc, "'%s' is assigned both %s and %s", var->name,
                        cc_type_name(var->ty, a, sizeof(a)), cc_type_name(t, b, sizeof(b)));
    }
    if (var->declared) {
        return 0; /* its type is set (a ufunc's loop); the value is cast */
    }
    if (var->ty == UNKNOWN) {
        var->ty = t;
        in->changed = 1;
        return 0;
    }
    const CcType *p = cc_promote(var->ty, t);
    if (p == NULL) {
        char a[96], b[96];
        return cc_error(in->fn, at->loc, "'%s' is assigned both %s and %s", var->name,
                        cc_type_name(var->ty, a, sizeof(a)), cc_type_name(t, b, sizeof(b)));
    }
    if (p != var->ty) {
        if (var->is_param) {
            /* a parameter keeps its declared type; the value is cast */
            return 0;
        }
        var->ty = p;
        in->changed = 1;
    }
    return 0;
}

static int stmt(Infer *in, CcNode *n);

/* A node reading a poisoned variable (cc_node_any). */
static int
reads_poisoned(const CcNode *n, void *ctx)
{
    return (n->kind == ND_VAR || n->kind == ND_INLINE) && n->var != NULL && n->var->poisoned;
}

/* Poisons what a node assigns: an assignment's, a loop's, a return's
 * variable, an unpacking's (cc_node_any). */
static int
poison_assigned(const CcNode *n, void *ctx)
{
    if (n->var != NULL && n->kind != ND_VAR) {
        n->var->poisoned = 1;
    }
    for (int i = 0; n->vars != NULL && i < n->nargs; i++) {
        n->vars[i]->poisoned = 1;
    }
    return 0;
}

/*
 * Statement n of the kernel failed with a TypingError: it is kept, unless
 * n reads a variable a failed statement assigned (the error may follow from
 * that one alone), and typing goes on without n, as lowering does.  What n
 * assigns is poisoned.  1 when kept or dropped; 0 (the error pending) for
 * any other error, past CC_MAX_ERRORS, and in an inlined function's body
 * (the statement calling it fails).
 */
static int
keep_error(Infer *in, CcNode *n)
{
    if (in->errors == NULL || in->inlining > 0 || PyList_Size(in->errors) >= CC_MAX_ERRORS
        || !PyErr_ExceptionMatches(nv_state.typing_error)) {
        return 0;
    }
    if (cc_node_any(n, reads_poisoned, NULL)) {
        PyErr_Clear();
    } else if (cc_keep_error(in->errors) < 0) {
        return 0;
    }
    n->failed = 1;
    (void)cc_node_any(n, poison_assigned, NULL);
    return 1;
}

/* The statements of a block, last first on the backward passes (see
 * cc_typeinfer).  Order changes nothing but how soon types settle. */
static int
block(Infer *in, CcNode *n)
{
    for (int j = 0; n != NULL && j < n->nargs; j++) {
        int i = in->backward ? n->nargs - 1 - j : j;
        if (!n->args[i]->failed && stmt(in, n->args[i]) < 0 && !keep_error(in, n->args[i])) {
            return -1;
        }
    }
    return 0;
}

static int
condition(Infer *in, CcNode *cond)
{
    const CcType *t;
    if (expr(in, cond, &t) < 0) {
        return -1;
    }
    if (t != UNKNOWN && is_tuple(t)) {
        return type_error(in, cond, "truth value", t, NULL);
    }
    if (cc_is_array(t)) {
        return cc_error(in->fn, cond->loc,
                        "the truth value of an array is ambiguous (NumPy raises); use .any() "
                        "or .all()");
    }
    truth_only(cond);
    return 0;
}

static int
unpack(Infer *in, CcNode *n)
{
    const CcType *t;
    if (expr(in, n->rhs, &t) < 0) {
        return -1;
    }
    if (t == UNKNOWN) {
        return 0;
    }
    if (!is_tuple(t) || t->n != n->nargs) {
        char name[96];
        return cc_error(in->fn, n->loc, "cannot unpack %s into %d names",
                        cc_type_name(t, name, sizeof(name)), n->nargs);
    }
    for (int i = 0; i < n->nargs; i++) {
        if (assign(in, n, n->vars[i], t->elems[i]) < 0) {
            return -1;
        }
    }
    return 0;
}

static int
range_args(Infer *in, CcNode *n)
{
    for (int i = 0; i < n->nargs; i++) {
        const CcType *t;
        if (expr(in, n->args[i], &t) < 0) {
            return -1;
        }
        if (t != UNKNOWN && !is_integral(t)) {
            char name[96];
            return cc_error(in->fn, n->args[i]->loc,
                            "range() arguments must be integers, "
                            "not %s",
                            cc_type_name(t, name, sizeof(name)));
        }
        if (fit_const(in, n->args[i], cc_scalar_type(TS_INT64)) < 0) {
            return -1;
        }
    }
    /* range() yields Python ints */
    return assign(in, n, n->var, cc_weak_type(CT_WEAK_INT));
}

static int
ret(Infer *in, CcNode *n)
{
    const CcType *t;
    if (n->lhs == NULL) {
        if (n->var == NULL) {
            in->bare_return = n; /* check_return decides whether it may */
        }
        return 0; /* in a device function: inline_call decides */
    }
    if (expr(in, n->lhs, &t) < 0) {
        return -1;
    }
    if (t == UNKNOWN) {
        return 0;
    }
    if (n->var != NULL) {
        /* a return of an inlined function */
        if (assign(in, n, n->var, t) < 0) {
            return -1;
        }
        return fit_const(in, n->lhs, n->var->ty);
    }
    if (fit_const(in, n->lhs, in->ret_as) < 0) {
        return -1;
    }
    in->last_return = n;
    if (in->ret == UNKNOWN) {
        in->ret = t;
        return 0;
    }
    const CcType *p = cc_promote(in->ret, t);
    if (p == NULL) {
        return type_error(in, n, "returning values of different shapes", in->ret, t);
    }
    in->ret = p;
    return 0;
}

static int
stmt(Infer *in, CcNode *n)
{
    const CcType *t;
    switch (n->kind) {
    case ND_BLOCK:
        return block(in, n);
    case ND_ASSIGN:
        if (n->index == 1 && cc_is_array(n->var->ty)) {
            /* a op= v on an array: in place, a[...] = a op v */
            CcNode *target = cc_alloc(in->fn->arena, sizeof(CcNode));
            CcNode *whole = cc_alloc(in->fn->arena, sizeof(CcNode));
            CcNode *base = cc_alloc(in->fn->arena, sizeof(CcNode));
            CcNode **args = cc_alloc(in->fn->arena, sizeof(CcNode *));
            if (target == NULL || whole == NULL || base == NULL || args == NULL) {
                return -1;
            }
            *base = (CcNode){.kind = ND_VAR, .loc = n->loc, .var = n->var};
            *whole = (CcNode){.kind = ND_ELLIPSIS, .loc = n->loc};
            args[0] = whole;
            *target =
                (CcNode){.kind = ND_INDEX, .loc = n->loc, .lhs = base, .args = args, .nargs = 1};
            n->kind = ND_SETITEM;
            n->index = 2; /* in place, of the whole variable */
            n->lhs = target;
            n->var = NULL;
            return setitem(in, n);
        }
        if (expr(in, n->rhs, &t) < 0 || assign(in, n, n->var, t) < 0) {
            return -1;
        }
        return fit_const(in, n->rhs, n->var->ty);
    case ND_UNPACK:
        return unpack(in, n);
    case ND_RETURN:
        return ret(in, n);
    case ND_IF:
    case ND_WHILE:
        if (condition(in, n->cond) < 0 || block(in, n->then) < 0) {
            return -1;
        }
        return block(in, n->els);
    case ND_FOR_RANGE:
        if (range_args(in, n) < 0 || block(in, n->then) < 0) {
            return -1;
        }
        return block(in, n->els);
    case ND_EXPR:
        if (n->lhs->kind == ND_INLINE) {
            n->lhs->index = 1; /* a device function called for its effect */
        }
        if (n->lhs->kind == ND_CALL && cc_builtin(n->lhs->builtin)->flavor == FL_SORT) {
            n->lhs->index |= 2; /* a.sort(): a statement, as it must be */
        }
        return expr(in, n->lhs, &t);
    case ND_BREAK:
    case ND_CONTINUE:
        return 0;
    case ND_PRINT:
        for (int i = 0; i < n->nargs; i++) {
            if (n->args[i]->text != NULL) {
                continue; /* a string constant */
            }
            if (expr(in, n->args[i], &t) < 0) {
                return -1;
            }
            if (t != UNKNOWN && (cc_is_array(t) || t->kind == CT_TUPLE)) {
                char name[96];
                return cc_error(in->fn, n->args[i]->loc,
                                "print() in a kernel prints numbers and string constants, not %s",
                                cc_type_name(t, name, sizeof(name)));
            }
        }
        return 0;
    case ND_RAISE:
        return 0; /* on a device, emit.c's raise_stmt says where it can be reported */
    case ND_SETITEM:
        return setitem(in, n);
    default:
        return cc_error(in->fn, n->loc, "internal error: expression in statement position");
    }
}

/* The declared return type must be able to hold what is returned. */
static int
check_return(Infer *in, const TsSignature *sig)
{
    CcFunction *fn = in->fn;
    const CcType *got = in->ret;
    if (sig->ret.kind == TS_VOID) {
        /* a gufunc kernel: results go into its arrays */
        fn->ret = NULL;
        if (got != UNKNOWN) {
            return cc_error(fn, fn->body->loc,
                            "a guvectorize kernel returns nothing: it "
                            "writes its results into its output arrays (res[0] = ... for a "
                            "() output)");
        }
        return 0;
    }
    if (in->bare_return) {
        return cc_error(fn, in->bare_return->loc, "a kernel must return a value");
    }
    if (got == UNKNOWN) {
        return cc_error(fn, fn->body->loc, "the kernel never returns a value");
    }
    if (is_tuple(got) || cc_is_array(got)) {
        return cc_error(fn, in->last_return ? in->last_return->loc : fn->body->loc,
                        "a kernel returns one scalar, not %s",
                        is_tuple(got) ? "a tuple" : "an array");
    }
    if (sig->ret.kind == TS_INFER) {
        fn->ret = cc_scalar_type(cc_storage(got));
        return 0;
    }
    fn->ret = cc_scalar_type(sig->ret.kind);
    if (is_complex_type(got) && !ts_is_complex(sig->ret.kind)) {
        char name[96];
        return cc_error(fn, in->last_return ? in->last_return->loc : fn->body->loc,
                        "the kernel returns %s, which %s cannot hold",
                        cc_type_name(got, name, sizeof(name)), ts_kind_name(sig->ret.kind));
    }
    return 0;
}

/* How often a variable's type can grow: weak int, float, complex, then up
 * NumPy's chain of kinds (bool, int8 ... int64, float32, float64,
 * complex64, complex128), with room. */
#define TYPE_HEIGHT 16
/* Passes times nodes: a bound on the time inference may take. */
#define MAX_PASS_WORK 50000000LL

static int infer(Infer *in, CcFunction *fn, const TsSignature *sig);

/* Types fn for sig.  A statement that fails does not end typing: every
 * such statement is reported, one message and caret each. */
int
cc_typeinfer(CcFunction *fn, const TsSignature *sig)
{
    Infer in = {.fn = fn, .changed = 1, .gufunc = sig->ret.kind == TS_VOID, .lift = -1};
    if ((in.errors = PyList_New(0)) == NULL) {
        return -1;
    }
    int rc = infer(&in, fn, sig);
    if (PyList_Size(in.errors) > 0) {
        if (PyErr_Occurred() && PyErr_ExceptionMatches(nv_state.typing_error)) {
            (void)cc_keep_error(in.errors); /* past CC_MAX_ERRORS: the last one too */
        }
        if (!PyErr_Occurred()) {
            cc_raise_errors(in.errors);
        }
        rc = -1;
    }
    Py_DECREF(in.errors);
    return rc;
}

static int
infer(Infer *in, CcFunction *fn, const TsSignature *sig)
{
    if (sig->nargs != fn->nparams) {
        return cc_error(fn, fn->body->loc, "the signature has %d argument(s) but %s takes %d",
                        sig->nargs, fn->name, fn->nparams);
    }
    for (int i = 0; i < fn->nparams; i++) {
        CcVar *v = fn->vars[i];
        v->infer_elem =
            sig->ret.kind == TS_VOID && sig->args[i].ndim > 0 && sig->args[i].kind == TS_INFER;
        v->elem = UNKNOWN;
        if (v->infer_elem
            || (sig->ret.kind == TS_VOID && sig->args[i].ndim > 0
                && sig->args[i].kind < TS_NSCALAR)) {
            v->ty = cc_array_type(sig->args[i].kind, sig->args[i].ndim);
            continue;
        }
        if (sig->args[i].ndim != 0 || sig->args[i].kind >= TS_NSCALAR) {
            return cc_error(fn, fn->body->loc,
                            "argument %d of a vectorize signature must be "
                            "a scalar type",
                            i + 1);
        }
        fn->vars[i]->ty = cc_scalar_type(sig->args[i].kind);
    }
    /*
     * Passes until no variable's type grows.  Types only grow, each at most
     * TYPE_HEIGHT times, so nvars * TYPE_HEIGHT passes always suffice; the
     * passes alternate direction, so that chains of assignments written
     * either way settle in a few.  The work is bounded all the same.
     */
    long long max_passes = (long long)fn->nvars * TYPE_HEIGHT + 2;
    long long budget = MAX_PASS_WORK / (fn->nnodes > 0 ? fn->nnodes : 1);
    for (long long pass = 0; in->changed; pass++) {
        if (pass > max_passes || pass > budget) {
            return cc_error(fn, fn->body->loc,
                            "type inference did not settle after %lld passes over the kernel "
                            "(a long chain of assignments in a loop?)",
                            pass);
        }
        in->changed = 0;
        in->backward = pass % 2 == 1;
        in->ret = UNKNOWN;
        if (block(in, fn->body) < 0) {
            return -1;
        }
    }
    /* after a failed statement, what the checks below find may follow from it */
    int failed = PyList_Size(in->errors) > 0;
    for (int i = 0; i < fn->nparams && !failed; i++) {
        if (fn->vars[i]->infer_elem && fn->vars[i]->elem == UNKNOWN) {
            return cc_error(fn, fn->body->loc,
                            "the type of '%s' cannot be inferred: the kernel stores no value "
                            "of a known type into it (pass it to the call, or give signatures)",
                            fn->vars[i]->name);
        }
    }
    in->backward = 0;
    in->final = 1;
    in->ret = UNKNOWN;
    if (sig->ret.kind < TS_NSCALAR) {
        in->ret_as = cc_scalar_type(sig->ret.kind);
    }
    if (block(in, fn->body) < 0) {
        return -1;
    }
    return failed || PyList_Size(in->errors) > 0 ? -1 : check_return(in, sig);
}

void
cc_inferred_signature(const CcFunction *fn, TsSignature *sig)
{
    for (int i = 0; i < fn->nparams && i < sig->nargs; i++) {
        if (fn->vars[i]->infer_elem) {
            sig->args[i].kind = cc_storage(fn->vars[i]->ty);
        }
    }
}
