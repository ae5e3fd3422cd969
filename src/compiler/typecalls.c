/*
 * typecalls.c - the typing rules of builtin calls: abs, min/max, int(),
 * math.*, cmath.*, np.* functions of scalars, by flavor (calls.h's rows),
 * and the call node itself (ti_call).  The array functions' rules are in
 * arrays/, beside their emission.
 */
#include "compiler/arrays/arrays.h"
#include "compiler/typeinfer.h"

#include <stdio.h>
#include <string.h>

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
    if (ti_is_tuple(t) || ti_is_complex_type(t)) {
        char name[96];
        return cc_error(in->fn, n->loc, "%s() does not accept %s%s", cc_builtin(n->builtin)->name,
                        cc_type_name(t, name, sizeof(name)),
                        ti_is_complex_type(t) ? " (use cmath for complex values)" : "");
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
    if (ti_is_bool(x)) {
        return ti_type_error(in, n, "round()", x, NULL); /* np.bool_ has no __round__ */
    }
    if (n->nargs == 2) {
        if (!ti_is_integral(n->args[1]->ty)) {
            return ti_type_error(in, n->args[1], "round() ndigits", n->args[1]->ty, NULL);
        }
        *out = x;
        return 0;
    }
    *out = ti_is_integral(x) ? x : cc_weak_type(CT_WEAK_INT);
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
         * (ti_held_const) */
        return ti_is_integral(result) ? UNKNOWN : result;
    case FIT_RESULT:
    default:
        return result;
    }
}

/* call_type, then its Python int constant arguments fitted (ldexp's
 * exponent and round's ndigits are ints of their own). */
int
ti_call(Infer *in, CcNode *n, const CcType **out)
{
    if (call_type(in, n, out) < 0) {
        return -1;
    }
    if (n->kind != ND_CALL) {
        return 0; /* np.cov(m): rewritten into the operations it is */
    }
    const CcBuiltin *b = cc_builtin(n->builtin);
    if (b->flavor == FL_ALLOC || b->flavor == FL_LIKE || b->flavor == FL_REDUCE
        || b->flavor == FL_NDSIZE || b->flavor == FL_UNRAVEL || b->flavor == FL_SORT
        || b->flavor == FL_DOT || b->flavor == FL_ARANGE || b->flavor == FL_NORM
        || b->flavor == FL_ARRAY || b->flavor == FL_COV || b->flavor == FL_HIST
        || b->flavor == FL_RANDOM || b->flavor == FL_RESHAPE) {
        return 0;
    }
    if (b->flavor == FL_BOOL) {
        ti_truth_only(n->args[0]);
        return 0;
    }
    const CcType *as = *out == UNKNOWN ? UNKNOWN : call_arg_type(n, *out);
    int nargs = b->op == M_LDEXP || b->flavor == FL_ROUND ? 1 : n->nargs;
    for (int i = 0; as == UNKNOWN && *out != UNKNOWN && i < n->nargs; i++) {
        if (ti_held_const(in, n->args[i], *out) < 0) {
            return -1;
        }
    }
    if (nargs < n->nargs && ti_fit_const(in, n->args[1], cc_weak_type(CT_WEAK_INT)) < 0) {
        return -1;
    }
    return ti_fit_consts(in, n->args, nargs, as);
}

static int
call_type(Infer *in, CcNode *n, const CcType **out)
{
    const CcBuiltin *b = cc_builtin(n->builtin);
    const CcType *t;
    if (b->flavor == FL_CAST && n->rhs != NULL) {
        /* a.dtype.type(x): the cast to a's element kind (or a scalar's
         * kind: a NumPy scalar has a dtype too) */
        const CcType *a;
        *out = UNKNOWN;
        if (ti_dtype_owner(in, n, n->rhs, &a) < 0) {
            return -1;
        }
        if (a == UNKNOWN || a->scalar == TS_INFER) {
            return 0;
        }
        n->builtin = cc_builtin_cast(a->scalar);
        b = cc_builtin(n->builtin);
    }
    if (b->flavor == FL_NORM || b->flavor == FL_COV) {
        /* np.linalg.norm, np.cov: the operations they are, once x is typed */
        *out = UNKNOWN;
        if ((b->flavor == FL_NORM ? ti_norm_call(in, n) : ti_cov_call(in, n)) < 0) {
            return -1;
        }
        if (n->kind != ND_CALL) {
            return ti_expr(in, n, out); /* an operator: ti_call ends here */
        }
        if (cc_builtin(n->builtin) == b) {
            return 0; /* x is not typed yet */
        }
        b = cc_builtin(n->builtin);
    }
    if (b->flavor == FL_ARRAY) {
        return ti_array_of(in, n, out);
    }
    if (b->flavor == FL_HIST) {
        return ti_histogram_call(in, n, out);
    }
    if (b->flavor == FL_ALLOC || b->flavor == FL_LIKE || b->flavor == FL_REDUCE) {
        return ti_array_function(in, n, b, out);
    }
    if (b->flavor == FL_NDSIZE || b->flavor == FL_UNRAVEL) {
        return ti_shape_call(in, n, b, out);
    }
    if (b->flavor == FL_SORT) {
        return ti_sort_call(in, n, b, out);
    }
    if (b->flavor == FL_DOT) {
        return ti_dot_call(in, n, b, out);
    }
    if (b->flavor == FL_ARANGE) {
        return ti_arange_call(in, n, b, out);
    }
    if (b->flavor == FL_RANDOM) {
        return ti_random_call(in, n, b, out);
    }
    if (b->flavor == FL_RESHAPE) {
        return ti_reshape_call(in, n, b, out);
    }
    if (ti_promote_all(in, n->args, n->nargs, &t) < 0) {
        return -1;
    }
    *out = UNKNOWN;
    if (t == UNKNOWN) {
        return 0;
    }
    if (ti_is_tuple(t)) {
        return check_real(in, n, t);
    }
    if (b->op == M_LDEXP && !ti_is_integral(n->args[1]->ty)) {
        return ti_type_error(in, n->args[1], "ldexp() exponent", n->args[1]->ty, NULL);
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
    if (ti_is_complex_type(t)) {
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
    if (ti_is_complex_type(t)) {
        return ti_type_error(in, n, b->name, t, NULL);
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
    if (ti_is_bool(t)) {
        return ti_type_error(in, n, b->name, t, NULL);
    }
    if (check_real(in, n, t) < 0) {
        return -1;
    }
    *out = t->kind == CT_SCALAR ? t : cc_scalar_type(cc_storage(t));
    return 0;
}

/* math.gcd/lcm(a, b): a Python int (weak), as the interpreter's; np.gcd/
 * lcm: the arguments' promoted integer kind.  Integers only. */
int
ti_gcd(Infer *in, CcNode *n, const CcBuiltin *b, const CcType *t, const CcType **out)
{
    if (!ti_is_integral(t)) {
        char name[96];
        return cc_error(in->fn, n->loc, "%s() takes integers, not %s", b->name,
                        cc_type_name(t, name, sizeof(name)));
    }
    int weak = strncmp(b->name, "math.", 5) == 0 || t->kind != CT_SCALAR;
    *out = weak ? cc_weak_type(CT_WEAK_INT)
                : cc_scalar_type(t->scalar == TS_BOOL ? TS_INT8 : t->scalar);
    return 0;
}

/* np.f(x...), np.minimum/np.maximum: the promoted float kind of the
 * arguments (strong); NumPy's complex loop for np.exp(z) and the like;
 * np.minimum of integers, np.square/np.power/np.floor... of an integral
 * argument stay integral, as NumPy 2's integer loops */
int
ti_np(Infer *in, CcNode *n, const CcBuiltin *b, const CcType *t, const CcType **out)
{
    if (b->flavor == FL_NP && ti_is_complex_type(t) && cc_math_has_complex((CcMathOp)b->op)) {
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
        return ti_type_error(in, n, b->name, x, y);
    }
    return 0;
}
