/*
 * typeinfer.c - types every node of a lowered function.
 *
 * Rules (docs/DESIGN-NOTES.md, section 7, kernel language semantics):
 *  - arithmetic between typed values follows NumPy 2's result_type;
 *  - Python literals and the results of int()/float()/complex() and of the
 *    math module are weak (NEP 50): they take the other operand's kind, so
 *    `x * 2.0` stays float32 when x is float32;
 *  - a variable's type is the promotion of every value assigned to it,
 *    found by iterating to a fixed point (types only grow);
 *  - bool arithmetic is NumPy's: + is or, * is and, - is an error.
 * Each visitor carries its typing rule in the comment above it; the type
 * values and promotion are cctype.c's, the builtins' rules typecalls.c's
 * (calls.h's rows), the arrays' in arrays/, beside their emission.  This
 * file is the solver: expressions, statements and the fixed point.
 */
#include "compiler/arrays/arrays.h"
#include "compiler/typeinfer.h"

#include <stdio.h>
#include <string.h>

/* ---- inference ---- */

static int condition(Infer *in, CcNode *cond);

int
ti_type_error(Infer *in, CcNode *n, const char *what, const CcType *a, const CcType *b)
{
    char an[96], bn[96];
    if (b == NULL) {
        return cc_error(in->fn, n->loc, "%s is not supported for %s", what,
                        cc_type_name(a, an, sizeof(an)));
    }
    return cc_error(in->fn, n->loc, "%s is not supported between %s and %s", what,
                    cc_type_name(a, an, sizeof(an)), cc_type_name(b, bn, sizeof(bn)));
}

int
ti_is_tuple(const CcType *t)
{
    return t->kind == CT_TUPLE;
}

/* A Python int constant whose truth alone is used (if 2**100:, not G,
 * bool(G)): held as 1 when it lies outside int64 (and so is nonzero), where
 * its low 64 bits could be 0. */
void
ti_truth_only(CcNode *n)
{
    if (n->kind == ND_CONST && n->ty->kind == CT_WEAK_INT && n->big) {
        n->big = 0;
        n->ival = 1;
        n->ihigh = 0;
    }
}

int
ti_is_complex_type(const CcType *t)
{
    return t->kind == CT_WEAK_COMPLEX || (t->kind == CT_SCALAR && ts_is_complex(t->scalar));
}

int
ti_is_integral(const CcType *t)
{
    return t->kind == CT_WEAK_INT
           || (t->kind == CT_SCALAR && !ts_is_float(t->scalar) && !ts_is_complex(t->scalar));
}

int
ti_is_bool(const CcType *t)
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
int
ti_fit_const(Infer *in, CcNode *n, const CcType *as)
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
int
ti_held_const(Infer *in, CcNode *n, const CcType *as)
{
    if (!in->final || n->kind != ND_CONST || n->ty->kind != CT_WEAK_INT || !n->big
        || !ti_is_integral(as)) {
        return 0;
    }
    TsKind k = cc_storage(as);
    return k == TS_UINT64 && const_fits(n, k) ? 0 : out_of_bounds(in, n, ts_kind_name(k));
}

/* ti_fit_const for each of args[0..nargs). */
int
ti_fit_consts(Infer *in, CcNode **args, int nargs, const CcType *as)
{
    for (int i = 0; i < nargs; i++) {
        if (ti_fit_const(in, args[i], as) < 0) {
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
    if (ti_expr(in, n->lhs, l) < 0 || ti_expr(in, n->rhs, r) < 0) {
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
    if (ti_is_tuple(l) || ti_is_tuple(r)) {
        return ti_type_error(in, n, cc_op_name(n->op), l, r);
    }
    const CcType *t = cc_promote(l, r);
    int bools = ti_is_bool(l) && ti_is_bool(r);
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
        } else if (ti_is_integral(t)) {
            t = cc_scalar_type(TS_FLOAT64);
        }
        break;
    case OP_FLOORDIV:
    case OP_MOD:
        if (ti_is_complex_type(t)) {
            return ti_type_error(in, n, cc_op_name(n->op), l, r);
        }
        /* fall through */
    case OP_POW:
    case OP_LSHIFT:
    case OP_RSHIFT:
        if (bools) {
            t = cc_scalar_type(TS_INT8);
        }
        if (n->op >= OP_LSHIFT && !ti_is_integral(t)) {
            return ti_type_error(in, n, cc_op_name(n->op), l, r);
        }
        break;
    case OP_BITAND:
    case OP_BITOR:
    case OP_BITXOR:
        if (!ti_is_integral(t)) {
            return ti_type_error(in, n, cc_op_name(n->op), l, r);
        }
        break;
    default:
        return cc_error(in->fn, n->loc, "internal error: bad binary operator");
    }
    *out = t;
    /* both operands are computed in the result's kind (/ of ints: float64) */
    if (ti_fit_const(in, n->lhs, t) < 0 || ti_fit_const(in, n->rhs, t) < 0) {
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
    if (ti_expr(in, n->lhs, &t) < 0) {
        return -1;
    }
    t = lift_operand(in, t);
    *out = t;
    if (t == UNKNOWN) {
        return 0;
    }
    if (n->op == OP_NOT) {
        ti_truth_only(n->lhs);
        *out = cc_scalar_type(TS_BOOL);
        return ti_is_tuple(t) ? ti_type_error(in, n, "not", t, NULL) : 0;
    }
    /* np.negative and np.positive have no bool loop */
    if (ti_is_tuple(t) || ((n->op == OP_NEG || n->op == OP_POS) && ti_is_bool(t))
        || (n->op == OP_INVERT && !ti_is_integral(t))) {
        char what[16]; /* "unary -", "unary +", "~" */
        snprintf(what, sizeof(what), n->op == OP_INVERT ? "%s" : "unary %s", cc_op_name(n->op));
        return ti_type_error(in, n, what, t, NULL);
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
        if (ti_expr(in, n->args[i], &t) < 0) {
            return -1;
        }
        t = lift_operand(in, t);
        if (in->lift >= 0 && n->nargs > 2) {
            return cc_error(in->fn, n->loc,
                            "a chained comparison of arrays has no truth value (NumPy raises); "
                            "compare them pair by pair with &");
        }
        if (t != UNKNOWN && ti_is_tuple(t)) {
            return ti_type_error(in, n->args[i], "comparison", t, NULL);
        }
        if (i > 0 && prev != UNKNOWN && t != UNKNOWN) {
            CcOp op = n->ops[i - 1];
            if ((ti_is_complex_type(prev) || ti_is_complex_type(t)) && op != OP_EQ && op != OP_NE) {
                return ti_type_error(in, n->args[i], cc_op_name(op), prev, t);
            }
            /* an int against an int compares by value (emit.c); against a
             * float, as that float */
            if ((!ti_is_integral(t) && ti_fit_const(in, n->args[i - 1], t) < 0)
                || (!ti_is_integral(prev) && ti_fit_const(in, n->args[i], prev) < 0)) {
                return -1;
            }
        }
        prev = t;
    }
    return 0;
}

/* One operand of a promotion: arg, of type t, promoted into *acc (an
 * UNKNOWN operand sets *unknown instead). */
static int
promote_into(Infer *in, CcNode *arg, const CcType *t, const CcType **acc, int *unknown)
{
    t = lift_operand(in, t);
    if (t == UNKNOWN) {
        *unknown = 1;
        return 0;
    }
    const CcType *p = *acc == UNKNOWN ? t : cc_promote(*acc, t);
    if (p == NULL) {
        return ti_type_error(in, arg, "combining values", *acc, t);
    }
    *acc = p;
    return 0;
}

/* Promotes the types of args[0..n) (UNKNOWN if any is). */
int
ti_promote_all(Infer *in, CcNode **args, int nargs, const CcType **out)
{
    const CcType *acc = UNKNOWN;
    int unknown = 0;
    for (int i = 0; i < nargs; i++) {
        const CcType *t;
        if (ti_expr(in, args[i], &t) < 0 || promote_into(in, args[i], t, &acc, &unknown) < 0) {
            return -1;
        }
    }
    *out = unknown ? UNKNOWN : acc;
    return 0;
}

/* ti_promote_all of operands already typed (types[i] is args[i]'s): an
 * operand is typed once, so that nested if-expressions are not typed again
 * at each level (that was 2^depth). */
int
ti_promote_typed(Infer *in, CcNode **args, const CcType **types, int nargs, const CcType **out)
{
    const CcType *acc = UNKNOWN;
    int unknown = 0;
    for (int i = 0; i < nargs; i++) {
        if (promote_into(in, args[i], types[i], &acc, &unknown) < 0) {
            return -1;
        }
    }
    *out = unknown ? UNKNOWN : acc;
    return 0;
}

static int
tuple_getitem(Infer *in, CcNode *n, const CcType **out)
{
    const CcType *t;
    if (ti_expr(in, n->lhs, &t) < 0) {
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
        return ti_array_index(in, n, out);
    }
    if (in->gufunc && t->kind == CT_SCALAR && (n->index == 0 || n->index == -1)
        && n->lhs->kind == ND_VAR && n->lhs->var != NULL && n->lhs->var->is_param) {
        /* Numba passes a gufunc's "()" argument as an array of one element
         * where its signature says so, and kernels written for it read
         * x[0] (scoringrules' `ow = ow[0]`): here x is that element */
        CcLoc at = n->loc;
        *n = *n->lhs;
        n->loc = at;
        *out = t;
        return 0;
    }
    if (!ti_is_tuple(t)) {
        return ti_type_error(in, n, "indexing", t, NULL);
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
        if (ti_expr(in, n->args[i], &elems[i]) < 0 || ti_fit_const(in, n->args[i], elems[i]) < 0) {
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

/* Whether an argument of type arg (an array: its elements) reaches a
 * loop's input of kind k by a safe cast: its promotion with k is k, weak
 * Python numbers included. */
static int
reaches_loop(const CcType *arg, TsKind k)
{
    arg = cc_elem_type(arg);
    return cc_promote(arg, cc_scalar_type(k)) == cc_scalar_type(k);
}

/* A lifted ufunc's parameter v, given the array arg: it holds one element
 * at a time, and the call is lifted over arg's dimensions. */
static void
lift_parameter(Infer *in, CcVar *v, const CcType *arg)
{
    v->lifted = 1;
    in->lift = arg->n > in->lift ? arg->n : in->lift;
}

/*
 * inline := device_function(args)    the type of its result variable: the
 *   promotion of everything its returns give, for these argument types
 */
/*
 * A numbavec ufunc inlined (n->text: its loops): the first loop whose inputs
 * the arguments reach by a safe cast (NumPy's choice) gives the
 * parameters' and the result's types.  Called with arrays (f(t, t0) in a
 * gufunc, as in Numba), it is applied to their elements, broadcast, as the
 * ufunc itself would be: the call is lifted (an elementwise node, its
 * result an array), and its array parameters hold one element at a time.
 * 0 when set, 1 when the arguments' types are not known yet, -1 with an
 * error.
 */
static int
ufunc_loop_types(Infer *in, CcNode *n)
{
    CcNode *body = n->then;
    int np = body->nargs - 1;
    const CcType *args[TS_MAXARGS];
    for (int k = 0; k < np; k++) {
        if (ti_expr(in, body->args[k]->rhs, &args[k]) < 0) {
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
    int arrays = 0;
    for (int k = 0; k < np; k++) {
        arrays |= cc_is_array(args[k]);
    }
    if (nloops == 0) {
        /* a lazy ufunc: its loop takes the arguments' types, an array's
         * elements where it is given arrays (lifted) */
        n->lifted = arrays;
        for (int k = 0; k < np; k++) {
            CcVar *v = body->args[k]->var;
            if (cc_is_array(args[k])) {
                lift_parameter(in, v, args[k]);
                if (v->ty != cc_elem_type(args[k])) {
                    v->ty = cc_elem_type(args[k]);
                    in->changed = 1;
                }
            }
        }
        return 0;
    }
    for (size_t i = 0; i < nloops; i++) {
        const char *loop = n->text + i * (size_t)(np + 1);
        int k = 0;
        while (k < np && reaches_loop(args[k], (TsKind)(loop[k] - 'a'))) {
            k++;
        }
        if (k < np) {
            continue;
        }
        n->lifted = arrays;
        for (k = 0; k <= np; k++) {
            CcVar *v = k < np ? body->args[k]->var : n->var;
            const CcType *t = cc_scalar_type((TsKind)(loop[k] - 'a'));
            if (k < np && cc_is_array(args[k])) {
                lift_parameter(in, v, args[k]);
            }
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
                    "call it (its loops are its signatures; cast the arguments, or call a "
                    "lazy ufunc, whose loop for any types is its function)",
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

int
ti_expr(Infer *in, CcNode *n, const CcType **out)
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
        rc = ti_array_index(in, n, &t);
        break;
    case ND_ARRAYATTR:
        rc = ti_array_attr(in, n, &t);
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
        rc = ti_promote_all(in, n->args, n->nargs, &t);
        if (rc == 0) {
            rc = ti_fit_consts(in, n->args, n->nargs, t);
        }
        break;
    case ND_IFEXP: {
        CcNode *both[2] = {n->then, n->els};
        const CcType *types[2];
        rc = condition(in, n->cond);
        int known = rc == 0 ? cc_known_truth(n->cond) : -1;
        if (known >= 0) { /* the arm taken, alone (prune.c) */
            *n = *(known ? n->then : n->els);
            rc = ti_expr(in, n, &t);
            break;
        }
        if (rc == 0 && (rc = ti_array_choice(in, n, types, &t)) != 1) {
            break; /* views: the one chosen (or an error) */
        }
        if (rc == 1) { /* scalars: their promotion (each branch typed once) */
            rc = ti_promote_typed(in, both, types, 2, &t);
        }
        if (rc == 0) {
            rc = ti_fit_consts(in, both, 2, t);
        }
        break;
    }
    case ND_CALL:
        rc = ti_call(in, n, &t);
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
    rc = ti_elementwise(in, n, rc, in->lift, &t);
    in->lift = saved_lift;
    n->ty = t;
    *out = t;
    return rc;
}

/* t as a variable holding it and a value of type other sees it: a Python
 * float or complex (weak) meeting a typed value is the double it is,
 * float64 or complex128, so that `s = 0.0; s += x` with float32 x
 * accumulates in float64, as Numba does (an expression, `x * 2.0`, stays
 * float32: NEP 50).  A Python int stays weak: small integer types keep
 * their type (README, "Coming from Numba"). */
static const CcType *
held(const CcType *t, const CcType *other)
{
    if ((t->kind == CT_WEAK_FLOAT || t->kind == CT_WEAK_COMPLEX) && other->kind == CT_SCALAR) {
        return cc_scalar_type(t->scalar);
    }
    return t;
}

/* The type of a variable holding values of types a and b: their promotion
 * (held), item by item for tuples of one length (Numba's unification of
 * `return np.nan, np.nan` with `return x, y`); a view only meets itself.
 * NULL where they cannot meet. */
static const CcType *
binding_type(Infer *in, const CcType *a, const CcType *b)
{
    if (a->kind != CT_TUPLE || b->kind != CT_TUPLE || a->n != b->n) {
        if (cc_is_array(a) || cc_is_array(b)) {
            return a == b ? a : NULL;
        }
        return cc_promote(held(a, b), held(b, a));
    }
    const CcType **elems = NULL;
    for (int i = 0; i < a->n; i++) {
        const CcType *e = binding_type(in, a->elems[i], b->elems[i]);
        if (e == NULL) {
            return NULL;
        }
        if (e != a->elems[i] && elems == NULL) {
            elems = cc_alloc(in->fn->arena, sizeof(CcType *) * (size_t)(a->n + 1));
            if (elems == NULL) {
                return NULL;
            }
            memcpy(elems, a->elems, sizeof(CcType *) * (size_t)a->n);
        }
        if (elems != NULL) {
            elems[i] = e;
        }
    }
    if (elems == NULL) {
        return a; /* a holds b's items already */
    }
    CcType *t = cc_alloc(in->fn->arena, sizeof(CcType));
    if (t != NULL) {
        *t = (CcType){.kind = CT_TUPLE, .n = a->n, .elems = elems};
    }
    return t;
}

/* Records that var receives a value of type t. */
static int
assign(Infer *in, CcNode *at, CcVar *var, const CcType *t)
{
    if (t == UNKNOWN || (var->lifted && cc_is_array(t))) {
        return 0; /* a lifted ufunc's parameter: given the array's elements */
    }
    if (cc_is_array(var->ty) || cc_is_array(t)) {
        /* a variable holds one kind of array: a view of it, never a copy */
        char a[96], b[96];
        var->readonly |= ti_readonly(at->kind == ND_ASSIGN ? at->rhs : at->lhs);
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
    const CcType *p = binding_type(in, var->ty, t);
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

/* An if whose condition is known when compiling keeps the branch it takes
 * alone (prune.c): the other's statements go untyped and not emitted. */
static void
prune(CcNode *n)
{
    int known = cc_known_truth(n->cond);
    if (known == 1 && n->els != NULL) {
        cc_keep_branch(n, n->then, n->els);
    } else if (known == 0) {
        cc_keep_branch(n, n->els, n->then);
    }
}

static int
condition(Infer *in, CcNode *cond)
{
    const CcType *t;
    if (ti_expr(in, cond, &t) < 0) {
        return -1;
    }
    if (t != UNKNOWN && ti_is_tuple(t)) {
        return ti_type_error(in, cond, "truth value", t, NULL);
    }
    /* an array's: its one element's, checked at run time (em_condition) */
    ti_truth_only(cond);
    return 0;
}

static int
unpack(Infer *in, CcNode *n)
{
    const CcType *t;
    if (ti_expr(in, n->rhs, &t) < 0) {
        return -1;
    }
    if (t == UNKNOWN) {
        return 0;
    }
    if (cc_is_array(t) && t->n == 1 && t->scalar != TS_INFER) {
        /* a, b = row: its elements; another length is a ValueError */
        for (int i = 0; i < n->nargs; i++) {
            if (assign(in, n, n->vars[i], cc_scalar_type(t->scalar)) < 0) {
                return -1;
            }
        }
        return 0;
    }
    if (!ti_is_tuple(t) || t->n != n->nargs) {
        char name[96];
        return cc_error(in->fn, n->loc, "cannot unpack %s into %d names%s",
                        cc_type_name(t, name, sizeof(name)), n->nargs,
                        cc_is_array(t) ? " (a 1-d array unpacks into its elements)" : "");
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
        if (ti_expr(in, n->args[i], &t) < 0) {
            return -1;
        }
        if (t != UNKNOWN && ti_is_bool(t)) {
            /* NumPy's bool is no integer to range(), as the interpreter says */
            return cc_error(in->fn, n->args[i]->loc,
                            "range() arguments must be integers, not bool (write int(...))");
        }
        if (t != UNKNOWN && !ti_is_integral(t)) {
            char name[96];
            return cc_error(in->fn, n->args[i]->loc,
                            "range() arguments must be integers, "
                            "not %s",
                            cc_type_name(t, name, sizeof(name)));
        }
        if (ti_fit_const(in, n->args[i], cc_scalar_type(TS_INT64)) < 0) {
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
    if (ti_expr(in, n->lhs, &t) < 0) {
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
        return ti_fit_const(in, n->lhs, n->var->ty);
    }
    if (ti_fit_const(in, n->lhs, in->ret_as) < 0) {
        return -1;
    }
    in->last_return = n;
    if (in->ret == UNKNOWN) {
        in->ret = t;
        return 0;
    }
    const CcType *p = cc_promote(in->ret, t);
    if (p == NULL) {
        return ti_type_error(in, n, "returning values of different shapes", in->ret, t);
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
            return ti_setitem(in, n);
        }
        if (ti_expr(in, n->rhs, &t) < 0 || assign(in, n, n->var, t) < 0) {
            return -1;
        }
        return ti_fit_const(in, n->rhs, n->var->ty);
    case ND_UNPACK:
        return unpack(in, n);
    case ND_RETURN:
        return ret(in, n);
    case ND_IF:
    case ND_WHILE:
        if (condition(in, n->cond) < 0) {
            return -1;
        }
        if (n->kind == ND_IF) {
            prune(n);
        }
        if (block(in, n->then) < 0) {
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
        if (n->lhs->kind == ND_CALL
            && (cc_builtin(n->lhs->builtin)->flavor == FL_SORT
                || cc_builtin(n->lhs->builtin)->flavor == FL_RANDOM)) {
            n->lhs->index |= 2; /* a.sort(), np.random.seed(): statements, as they must be */
        }
        return ti_expr(in, n->lhs, &t);
    case ND_BREAK:
    case ND_CONTINUE:
        return 0;
    case ND_PRINT:
        for (int i = 0; i < n->nargs; i++) {
            if (n->args[i]->text != NULL) {
                continue; /* a string constant */
            }
            if (ti_expr(in, n->args[i], &t) < 0) {
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
        return ti_setitem(in, n);
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
    if (ti_is_tuple(got) || cc_is_array(got)) {
        return cc_error(fn, in->last_return ? in->last_return->loc : fn->body->loc,
                        "a kernel returns one scalar, not %s",
                        ti_is_tuple(got) ? "a tuple" : "an array");
    }
    if (sig->ret.kind == TS_INFER) {
        fn->ret = cc_scalar_type(cc_storage(got));
        return 0;
    }
    fn->ret = cc_scalar_type(sig->ret.kind);
    if (ti_is_complex_type(got) && !ts_is_complex(sig->ret.kind)) {
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
