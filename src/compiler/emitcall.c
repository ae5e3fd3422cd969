/*
 * emitcall.c - calls in a kernel, for the emitter (emit.h): the builtins
 * (abs, min/max, casts, math.*, np.*, cmath.*, round, ...) emitted by
 * flavor and CcMathOp, and the calls of LLVM intrinsics and libm that they
 * and the arithmetic lower to.
 *
 * builtins.c says which builtins exist and typeinfer.c types their calls;
 * here each becomes IR.  A target without LLVM's lowering of a math
 * intrinsic (the GPU) names its own library function (CcEmitTarget's
 * math_name); complex functions go to cmath.c.
 */
#include "compiler/calls.h"

#include <math.h>
#include <string.h>

/* ---- calls of intrinsics and libm ---- */

/* The call is named after the intrinsic ("floor" for llvm.floor), as a libm
 * call is after its function, so that dumps read like the source. */
LLVMValueRef
em_intrinsic(Emit *E, const char *name, LLVMTypeRef *overloads, unsigned n_over, LLVMValueRef *args,
             unsigned nargs)
{
    unsigned id = LLVMLookupIntrinsicID(name, strlen(name));
    LLVMValueRef f = LLVMGetIntrinsicDeclaration(E->mod, id, overloads, n_over);
    LLVMTypeRef fty = LLVMIntrinsicGetType(E->ctx, id, overloads, n_over);
    return LLVMBuildCall2(E->b, fty, f, args, nargs, name + strlen("llvm."));
}

/* A float intrinsic overloaded on its one float type: llvm.exp.f32 ... */
LLVMValueRef
em_float_intrinsic(Emit *E, const char *name, TsKind k, LLVMValueRef *args, unsigned nargs)
{
    char buf[48];
    /* a target without LLVM's lowering of llvm.exp & co calls its own
     * library instead (libdevice's __nv_expf on the GPU) */
    if (E->target->math_name != NULL
        && E->target->math_name(name + strlen("llvm."), k, buf, sizeof(buf)) != NULL) {
        return em_libm(E, name + strlen("llvm."), k, args, nargs);
    }
    LLVMTypeRef t = cc_value_type(E->ctx, k);
    return em_intrinsic(E, name, &t, 1, args, nargs);
}

/* A libm function of float kind k (sinf for float32, sin for float64),
 * declared pure so that calls vectorize (through libmvec) and hoist. */
LLVMValueRef
em_libm(Emit *E, const char *base, TsKind k, LLVMValueRef *args, unsigned nargs)
{
    char name[48];
    if (E->target->math_name == NULL || E->target->math_name(base, k, name, sizeof(name)) == NULL) {
        snprintf(name, sizeof(name), "%s%s", base, k == TS_FLOAT32 ? "f" : "");
    }
    LLVMTypeRef t = cc_value_type(E->ctx, k);
    LLVMTypeRef params[2] = {t, t};
    LLVMTypeRef fty = LLVMFunctionType(t, params, nargs, 0);
    LLVMValueRef f = cc_declare_pure(E->mod, name, fty);
    return LLVMBuildCall2(E->b, fty, f, args, nargs, name);
}

LLVMValueRef
em_fabs_of(Emit *E, TsKind k, LLVMValueRef x)
{
    return em_float_intrinsic(E, "llvm.fabs", k, &x, 1);
}

LLVMValueRef
em_copysign_of(Emit *E, TsKind k, LLVMValueRef mag, LLVMValueRef sign)
{
    LLVMValueRef args[2] = {mag, sign};
    return em_float_intrinsic(E, "llvm.copysign", k, args, 2);
}

/* ---- builtins ---- */

static LLVMValueRef
math_op(Emit *E, CcMathOp op, TsKind k, LLVMValueRef *a)
{
    static const char *const intrinsics[] = {
        [M_EXP] = "llvm.exp",           [M_LOG] = "llvm.log",        [M_LOG2] = "llvm.log2",
        [M_LOG10] = "llvm.log10",       [M_SQRT] = "llvm.sqrt",      [M_SIN] = "llvm.sin",
        [M_COS] = "llvm.cos",           [M_FABS] = "llvm.fabs",      [M_FLOOR] = "llvm.floor",
        [M_CEIL] = "llvm.ceil",         [M_TRUNC] = "llvm.trunc",    [M_POW] = "llvm.pow",
        [M_COPYSIGN] = "llvm.copysign", [M_RINT] = "llvm.roundeven", [M_NONE] = NULL,
    };
    static const char *const libm_names[] = {
        [M_EXPM1] = "expm1", [M_LOG1P] = "log1p", [M_TAN] = "tan",      [M_ASIN] = "asin",
        [M_ACOS] = "acos",   [M_ATAN] = "atan",   [M_SINH] = "sinh",    [M_COSH] = "cosh",
        [M_TANH] = "tanh",   [M_ASINH] = "asinh", [M_ACOSH] = "acosh",  [M_ATANH] = "atanh",
        [M_ERF] = "erf",     [M_ERFC] = "erfc",   [M_GAMMA] = "tgamma", [M_LGAMMA] = "lgamma",
        [M_ATAN2] = "atan2", [M_HYPOT] = "hypot", [M_NONE] = NULL,
    };
    unsigned n = (unsigned)cc_math_arity(op);
    LLVMValueRef inf = em_real_const(E, k, INFINITY);
    switch (op) {
    case M_DEGREES:
        return LLVMBuildFMul(E->b, a[0], em_real_const(E, k, 180.0 / M_PI), "degrees");
    case M_RADIANS:
        return LLVMBuildFMul(E->b, a[0], em_real_const(E, k, M_PI / 180.0), "radians");
    case M_SQUARE:
        return LLVMBuildFMul(E->b, a[0], a[0], "square");
    case M_POW:
        return em_float_pow(E, k, a[0], a[1]);
    case M_FMOD:
        return LLVMBuildFRem(E->b, a[0], a[1], "fmod");
    case M_MINIMUM:
    case M_MAXIMUM: {
        /* NumPy's definition, (a < b || isnan(a)) ? a : b, with quiet
         * compares only: a NaN in either operand propagates, no flag */
        LLVMRealPredicate p = op == M_MINIMUM ? LLVMRealOLT : LLVMRealOGT;
        LLVMValueRef a_nan = LLVMBuildFCmp(E->b, LLVMRealUNO, a[0], a[0], "a.nan");
        LLVMValueRef a_wins =
            em_quiet_fcmp(E, p, a[0], a[1], op == M_MINIMUM ? "cmp.lt" : "cmp.gt");
        LLVMValueRef pick_a = LLVMBuildOr(E->b, a_wins, a_nan, "pick.a");
        return LLVMBuildSelect(E->b, pick_a, a[0], a[1], op == M_MINIMUM ? "minimum" : "maximum");
    }
    case M_ISNAN:
        return LLVMBuildFCmp(E->b, LLVMRealUNO, a[0], a[0], "isnan");
    case M_ISINF:
        return LLVMBuildFCmp(E->b, LLVMRealOEQ, em_fabs_of(E, k, a[0]), inf, "isinf");
    case M_ISFINITE:
        return LLVMBuildFCmp(E->b, LLVMRealONE, em_fabs_of(E, k, a[0]), inf, "isfinite");
    default:
        break;
    }
    if (op < (int)(sizeof(intrinsics) / sizeof(intrinsics[0])) && intrinsics[op] != NULL) {
        return em_float_intrinsic(E, intrinsics[op], k, a, n);
    }
    return em_libm(E, libm_names[op], k, a, n);
}

/* 1 when some operand of n is a Python int (weak). */
static int
has_weak_int(const CcNode *n)
{
    for (int i = 0; i < n->nargs; i++) {
        if (n->args[i]->ty->kind == CT_WEAK_INT) {
            return 1;
        }
    }
    return 0;
}

/*
 * A min/max operand as the value it is compared by.  Python ints meeting
 * typed integers compare by value (NumPy 2): in int64, or in i128 when the
 * result is uint64 (both a uint64 and a negative Python int are exact there).
 */
static LLVMValueRef
minmax_key(Emit *E, const CcNode *node, LLVMValueRef v, TsKind from, TsKind k, int weak)
{
    if (!weak || !ts_is_int(k) || k == TS_INT64) {
        return em_convert(E, v, from, k);
    }
    if (k != TS_UINT64) {
        return em_convert(E, v, from, TS_INT64);
    }
    return em_wide_int_of(E, node, v, from, 128);
}

/* Python's min/max: the first operand that no later one beats. */
static LLVMValueRef
minmax(Emit *E, CcNode *n, TsKind k, int is_max)
{
    int weak = has_weak_int(n);
    LLVMValueRef best = NULL, best_key = NULL;
    for (int i = 0; i < n->nargs; i++) {
        LLVMValueRef v = em_expr(E, n->args[i]);
        if (v == NULL) {
            return NULL;
        }
        TsKind from = cc_storage(n->args[i]->ty);
        LLVMValueRef x = em_convert(E, v, from, k);
        LLVMValueRef key = minmax_key(E, n->args[i], v, from, k, weak);
        if (i == 0) {
            best = x;
            best_key = key;
            continue;
        }
        LLVMValueRef better;
        if (ts_is_float(k)) {
            better = em_quiet_fcmp(E, is_max ? LLVMRealOGT : LLVMRealOLT, key, best_key, "better");
        } else {
            /* keys of integers compared with Python ints are signed */
            int s = (weak && ts_is_int(k)) || (k != TS_BOOL && ts_is_signed(k));
            better = LLVMBuildICmp(E->b, em_int_pred(is_max ? OP_GT : OP_LT, s), key, best_key,
                                   "better");
        }
        best = LLVMBuildSelect(E->b, better, x, best, is_max ? "max" : "min");
        best_key = LLVMBuildSelect(E->b, better, key, best_key, "best.key");
    }
    return best;
}

LLVMValueRef
ec_abs(Emit *E, CcNode *n, const CcBuiltin *b, TsKind out)
{
    TsKind k = cc_storage(n->args[0]->ty);
    LLVMValueRef v = em_expr(E, n->args[0]);
    if (v == NULL) {
        return NULL;
    }
    if (ts_is_complex(k)) {
        return em_convert(E, em_complex_abs(E, k, v), em_part_kind(k), cc_storage(n->ty));
    }
    if (ts_is_float(k)) {
        return em_fabs_of(E, k, v);
    }
    if (k == TS_BOOL || !ts_is_signed(k)) {
        return v;
    }
    LLVMValueRef neg = LLVMBuildICmp(E->b, LLVMIntSLT, v, em_int_const(E, k, 0), "is.neg");
    return LLVMBuildSelect(E->b, neg, LLVMBuildNeg(E->b, v, "neg"), v, "abs");
}

/* x.real, x.imag, x.conjugate() */
LLVMValueRef
ec_part(Emit *E, CcNode *n, const CcBuiltin *b, TsKind out)
{
    CcFlavor flavor = b->flavor;
    TsKind k = cc_storage(n->args[0]->ty);
    LLVMValueRef v = em_expr(E, n->args[0]);
    if (v == NULL) {
        return NULL;
    }
    if (flavor == FL_CONJ) {
        if (!ts_is_complex(k)) {
            return v;
        }
        return em_make_complex(E, k, em_re_of(E, v),
                               LLVMBuildFNeg(E->b, em_im_of(E, v), "conj.im"));
    }
    if (ts_is_complex(k)) {
        return flavor == FL_REAL ? em_re_of(E, v) : em_im_of(E, v);
    }
    if (flavor == FL_REAL) {
        return em_convert(E, v, k, out);
    }
    return em_convert(E, LLVMConstNull(cc_value_type(E->ctx, k)), k, out);
}

/* The complex kind a cmath function computes in for argument type t. */
static TsKind
complex_math_kind(const CcType *t)
{
    return cc_math_kind(t) == TS_FLOAT32 ? TS_COMPLEX64 : TS_COMPLEX128;
}

/* NumPy's isnan/isinf/isfinite of a complex value: of either part. */
static LLVMValueRef
complex_pred(Emit *E, CcMathOp op, TsKind k, LLVMValueRef z)
{
    TsKind p = em_part_kind(k);
    LLVMValueRef re = em_re_of(E, z), im = em_im_of(E, z);
    LLVMValueRef a = math_op(E, op, p, &re), b = math_op(E, op, p, &im);
    return op == M_ISFINITE ? LLVMBuildAnd(E->b, a, b, "finite")
                            : LLVMBuildOr(E->b, a, b, op == M_ISNAN ? "isnan" : "isinf");
}

/* cmath.f(z): the C library's complex function, or phase/polar/rect. */
static LLVMValueRef
cmath_call(Emit *E, CcNode *n, CcMathOp op)
{
    const CcType *argty =
        n->nargs == 2 ? cc_promote(n->args[0]->ty, n->args[1]->ty) : n->args[0]->ty;
    TsKind k = complex_math_kind(argty), p = em_part_kind(k);
    if (op == M_RECT) {
        /* r * (cos(phi) + i sin(phi)) */
        LLVMValueRef r = em_expr_as(E, n->args[0], p);
        LLVMValueRef phi = r ? em_expr_as(E, n->args[1], p) : NULL;
        if (phi == NULL) {
            return NULL;
        }
        LLVMValueRef c = em_float_intrinsic(E, "llvm.cos", p, &phi, 1);
        LLVMValueRef s = em_float_intrinsic(E, "llvm.sin", p, &phi, 1);
        return em_convert(E,
                          em_make_complex(E, k, LLVMBuildFMul(E->b, r, c, "rect.re"),
                                          LLVMBuildFMul(E->b, r, s, "rect.im")),
                          k, cc_storage(n->ty));
    }
    LLVMValueRef z = em_expr_as(E, n->args[0], k);
    if (z == NULL) {
        return NULL;
    }
    LLVMValueRef yx[2] = {em_im_of(E, z), em_re_of(E, z)};
    switch (op) {
    case M_PHASE:
        return em_libm(E, "atan2", p, yx, 2);
    case M_POLAR: {
        LLVMValueRef t = LLVMGetUndef(em_type_of(E, n->ty));
        t = LLVMBuildInsertValue(
            E->b, t, em_convert(E, em_complex_abs(E, k, z), p, cc_storage(n->ty->elems[0])), 0,
            "polar.r");
        return LLVMBuildInsertValue(
            E->b, t, em_convert(E, em_libm(E, "atan2", p, yx, 2), p, cc_storage(n->ty->elems[1])),
            1, "polar");
    }
    case M_ISNAN:
    case M_ISINF:
    case M_ISFINITE:
        return complex_pred(E, op, k, z);
    default: {
        if (!E->target->c_complex) {
            /* they call the C library's complex functions, which a GPU lacks */
            cc_error(E->fn, n->loc, "%s of a complex value is not supported on the %s target yet",
                     cc_builtin(n->builtin)->name, E->target->name);
            return NULL;
        }
        LLVMValueRef r = cc_emit_cmath(E->b, E->mod, op, k, z);
        return r ? em_convert(E, r, k, cc_storage(n->ty)) : NULL;
    }
    }
}

/*
 * round(x): half to even, to an int.  round(x, n): NumPy's np.round, in
 * x's kind: rint(x * 10**n) / 10**n, or rint(x / 10**-n) * 10**-n for n < 0
 * (an integer x: itself for n >= 0, through float64 for n < 0).
 */
LLVMValueRef
ec_round(Emit *E, CcNode *n, const CcBuiltin *b, TsKind out)
{
    TsKind xk = cc_storage(n->args[0]->ty);
    if (n->nargs == 1 && !ts_is_float(xk)) {
        return em_expr_as(E, n->args[0], out);
    }
    TsKind k = ts_is_float(xk) ? xk : TS_FLOAT64;
    LLVMValueRef x = em_expr_as(E, n->args[0], k);
    if (x == NULL) {
        return NULL;
    }
    if (n->nargs == 1) {
        return em_convert(E, em_float_intrinsic(E, "llvm.roundeven", k, &x, 1), k, out);
    }
    LLVMValueRef nd = em_expr_as(E, n->args[1], TS_INT64);
    if (nd == NULL) {
        return NULL;
    }
    LLVMValueRef neg = LLVMBuildICmp(E->b, LLVMIntSLT, nd, em_int_const(E, TS_INT64, 0), "nd.neg");
    LLVMValueRef mag = LLVMBuildSelect(E->b, neg, LLVMBuildNeg(E->b, nd, "minus.nd"), nd, "nd.abs");
    LLVMValueRef pw[2] = {em_real_const(E, k, 10.0), em_convert(E, mag, TS_INT64, k)};
    LLVMValueRef f = em_float_intrinsic(E, "llvm.pow", k, pw, 2);
    LLVMValueRef up = LLVMBuildFMul(E->b, x, f, "x.mul"), down = LLVMBuildFDiv(E->b, x, f, "x.div");
    LLVMValueRef y = LLVMBuildSelect(E->b, neg, down, up, "x.scaled");
    y = em_float_intrinsic(E, "llvm.rint", k, &y, 1);
    LLVMValueRef r = LLVMBuildSelect(E->b, neg, LLVMBuildFMul(E->b, y, f, "y.mul"),
                                     LLVMBuildFDiv(E->b, y, f, "y.div"), "round");
    r = em_convert(E, r, k, out);
    if (ts_is_float(xk)) {
        return r;
    }
    /* NumPy rounds an integer to n >= 0 digits as itself, exactly */
    LLVMValueRef same = em_expr_as(E, n->args[0], out);
    return same != NULL ? LLVMBuildSelect(E->b, neg, r, same, "round.int") : NULL;
}

/* np.where(c, x, y): x where c is true, else y, both in the result's kind
 * (both are computed, as NumPy computes both arrays). */
LLVMValueRef
ec_where(Emit *E, CcNode *n, const CcBuiltin *b, TsKind out)
{
    (void)b;
    LLVMValueRef c = em_expr(E, n->args[0]);
    LLVMValueRef x = c != NULL ? em_expr_as(E, n->args[1], out) : NULL;
    LLVMValueRef y = x != NULL ? em_expr_as(E, n->args[2], out) : NULL;
    if (y == NULL) {
        return NULL;
    }
    return LLVMBuildSelect(E->b, em_truthy(E, c, cc_storage(n->args[0]->ty)), x, y, "where");
}

/* np.sign: -1, 0 or 1 in x's kind; NaN stays NaN. */
LLVMValueRef
ec_sign(Emit *E, CcNode *n, const CcBuiltin *b, TsKind out)
{
    TsKind k = cc_storage(n->ty);
    LLVMValueRef x = em_expr_as(E, n->args[0], k);
    if (x == NULL) {
        return NULL;
    }
    if (ts_is_float(k)) {
        /* only quiet predicates (oeq, uno): vector < and > raise the invalid
         * flag on NaN, which np.sign does not */
        LLVMValueRef zero = em_real_const(E, k, 0.0);
        LLVMValueRef r = em_copysign_of(E, k, em_real_const(E, k, 1.0), x);
        r = LLVMBuildSelect(E->b, LLVMBuildFCmp(E->b, LLVMRealUNO, x, x, "x.nan"), x, r,
                            "sign.nan");
        return LLVMBuildSelect(E->b, LLVMBuildFCmp(E->b, LLVMRealOEQ, x, zero, "x.zero"), zero, r,
                               "sign");
    }
    LLVMValueRef zero = em_int_const(E, k, 0);
    LLVMValueRef r = LLVMBuildSelect(E->b, LLVMBuildICmp(E->b, LLVMIntNE, x, zero, "x.nz"),
                                     em_int_const(E, k, 1), zero, "sign.nz");
    if (ts_is_signed(k)) {
        r = LLVMBuildSelect(E->b, LLVMBuildICmp(E->b, LLVMIntSLT, x, zero, "x.neg"),
                            em_int_const(E, k, -1), r, "sign");
    }
    return r;
}

/* |x| of an integer of kind k (the minimum stays itself: as unsigned, its
 * magnitude) */
static LLVMValueRef
magnitude(Emit *E, TsKind k, LLVMValueRef x)
{
    if (!ts_is_signed(k)) {
        return x;
    }
    LLVMValueRef neg = LLVMBuildICmp(E->b, LLVMIntSLT, x, em_int_const(E, k, 0), "gcd.neg");
    return LLVMBuildSelect(E->b, neg, LLVMBuildNeg(E->b, x, "gcd.minus"), x, "gcd.abs");
}

/* gcd(a, b) (b->op 0) by Euclid's remainders of the magnitudes, or
 * lcm(a, b) = |a| / gcd * |b| (0 if either is), in the result's kind,
 * wrapping as NumPy's do. */
LLVMValueRef
ec_gcd(Emit *E, CcNode *n, const CcBuiltin *b, TsKind out)
{
    TsKind k = cc_storage(n->ty);
    LLVMValueRef x = em_expr_as(E, n->args[0], k);
    LLVMValueRef y = x != NULL ? em_expr_as(E, n->args[1], k) : NULL;
    if (y == NULL) {
        return NULL;
    }
    LLVMValueRef ax = magnitude(E, k, x), ay = magnitude(E, k, y);
    LLVMBasicBlockRef entry = em_current_block(E), head = em_new_block(E, "gcd.head");
    LLVMBasicBlockRef step = em_new_block(E, "gcd.step"), done = em_new_block(E, "gcd.done");
    LLVMBuildBr(E->b, head);
    LLVMPositionBuilderAtEnd(E->b, head);
    LLVMTypeRef t = LLVMTypeOf(ax);
    LLVMValueRef u = LLVMBuildPhi(E->b, t, "gcd.u"), v = LLVMBuildPhi(E->b, t, "gcd.v");
    LLVMBuildCondBr(E->b, LLVMBuildICmp(E->b, LLVMIntEQ, v, em_int_const(E, k, 0), "gcd.end"), done,
                    step);
    LLVMPositionBuilderAtEnd(E->b, step);
    LLVMValueRef r = LLVMBuildURem(E->b, u, v, "gcd.r");
    LLVMBuildBr(E->b, head);
    LLVMValueRef us[2] = {ax, v}, vs[2] = {ay, r};
    LLVMBasicBlockRef from[2] = {entry, step};
    LLVMAddIncoming(u, us, from, 2);
    LLVMAddIncoming(v, vs, from, 2);
    LLVMPositionBuilderAtEnd(E->b, done);
    if (b->op == 0) {
        return u;
    }
    /* gcd is 0 only where both are: then lcm is 0 */
    LLVMValueRef zero = LLVMBuildICmp(E->b, LLVMIntEQ, u, em_int_const(E, k, 0), "lcm.zero");
    LLVMValueRef g = LLVMBuildSelect(E->b, zero, em_int_const(E, k, 1), u, "lcm.g");
    LLVMValueRef l = LLVMBuildMul(E->b, LLVMBuildUDiv(E->b, ax, g, "lcm.q"), ay, "lcm");
    (void)out;
    return LLVMBuildSelect(E->b, zero, em_int_const(E, k, 0), l, "lcm.r");
}

/* math.ldexp(x, i): the exponent clamped to int (beyond it the result is
 * 0 or inf anyway), the libm function of x's float kind. */
static LLVMValueRef
ldexp_call(Emit *E, CcNode *n, TsKind out)
{
    TsKind k = cc_math_kind(n->args[0]->ty);
    LLVMValueRef x = em_expr_as(E, n->args[0], k);
    LLVMValueRef e = x ? em_expr_as(E, n->args[1], TS_INT64) : NULL;
    if (e == NULL) {
        return NULL;
    }
    LLVMValueRef lim = em_int_const(E, TS_INT64, 1 << 20);
    e = LLVMBuildSelect(E->b, LLVMBuildICmp(E->b, LLVMIntSGT, e, lim, "e.over"), lim, e, "e.max");
    LLVMValueRef nlim = em_int_const(E, TS_INT64, -(1 << 20));
    e = LLVMBuildSelect(E->b, LLVMBuildICmp(E->b, LLVMIntSLT, e, nlim, "e.under"), nlim, e,
                        "e.clamped");
    LLVMTypeRef i32 = LLVMInt32TypeInContext(E->ctx), t = cc_value_type(E->ctx, k);
    LLVMTypeRef params[2] = {t, i32};
    LLVMTypeRef fty = LLVMFunctionType(t, params, 2, 0);
    char buf[48];
    const char *name = E->target->math_name != NULL
                           ? E->target->math_name("ldexp", k, buf, sizeof(buf))
                           : NULL; /* the GPU: libdevice's __nv_ldexpf */
    if (name == NULL) {
        name = k == TS_FLOAT32 ? "ldexpf" : "ldexp";
    }
    LLVMValueRef f = cc_declare_pure(E->mod, name, fty);
    LLVMValueRef args[2] = {x, LLVMBuildTrunc(E->b, e, i32, "e.i32")};
    return em_convert(E, LLVMBuildCall2(E->b, fty, f, args, 2, name), k, out);
}

/* np.fmin/np.fmax: the non-NaN operand.  NaNs are replaced before
 * llvm.minnum, whose x86 lowering (minpd) raises the invalid flag on NaN
 * where NumPy's loops stay quiet. */
static LLVMValueRef
fminmax(Emit *E, CcMathOp op, TsKind k, LLVMValueRef a, LLVMValueRef b)
{
    LLVMValueRef a_nan = LLVMBuildFCmp(E->b, LLVMRealUNO, a, a, "a.nan");
    LLVMValueRef b_nan = LLVMBuildFCmp(E->b, LLVMRealUNO, b, b, "b.nan");
    LLVMValueRef zero = em_real_const(E, k, 0.0);
    LLVMValueRef a2 = LLVMBuildSelect(
        E->b, a_nan, LLVMBuildSelect(E->b, b_nan, zero, b, "b.or.zero"), a, "a.nonnan");
    LLVMValueRef b2 = LLVMBuildSelect(E->b, b_nan, a2, b, "b.nonnan");
    LLVMValueRef args[2] = {a2, b2};
    LLVMValueRef r =
        em_float_intrinsic(E, op == M_FMIN ? "llvm.minnum" : "llvm.maxnum", k, args, 2);
    return LLVMBuildSelect(E->b, LLVMBuildAnd(E->b, a_nan, b_nan, "both.nan"), a, r,
                           op == M_FMIN ? "fmin" : "fmax");
}

/* np.square, np.power, np.floor/ceil/trunc of integers (typeinfer gave an
 * integer result): integer arithmetic, wrapping, as NumPy's integer loops. */
static LLVMValueRef
np_integer_call(Emit *E, CcNode *n, CcMathOp op, TsKind k)
{
    LLVMValueRef a = em_expr_as(E, n->args[0], k);
    if (a == NULL || op == M_FLOOR || op == M_CEIL || op == M_TRUNC) {
        return a;
    }
    if (op == M_SQUARE) {
        return LLVMBuildMul(E->b, a, a, "square");
    }
    LLVMValueRef b = em_expr_as(E, n->args[1], k);
    return b ? em_int_pow(E, k, a, b) : NULL;
}

LLVMValueRef
ec_minmax(Emit *E, CcNode *n, const CcBuiltin *b, TsKind out)
{
    return minmax(E, n, out, b->flavor == FL_MAX);
}

/* int(x), float(x), np.float32(x) ...: a conversion */
LLVMValueRef
ec_convert(Emit *E, CcNode *n, const CcBuiltin *b, TsKind out)
{
    return em_expr_as(E, n->args[0], out);
}

LLVMValueRef
ec_bool(Emit *E, CcNode *n, const CcBuiltin *b, TsKind out)
{
    LLVMValueRef v = em_expr(E, n->args[0]);
    return v ? em_truthy(E, v, cc_storage(n->args[0]->ty)) : NULL;
}

/* complex(x), complex(re, im) */
LLVMValueRef
ec_complex(Emit *E, CcNode *n, const CcBuiltin *b, TsKind out)
{
    if (n->nargs == 1) {
        return em_expr_as(E, n->args[0], out);
    }
    LLVMValueRef re = em_expr_as(E, n->args[0], TS_FLOAT64);
    LLVMValueRef im = re ? em_expr_as(E, n->args[1], TS_FLOAT64) : NULL;
    return im ? em_make_complex(E, TS_COMPLEX128, re, im) : NULL;
}

LLVMValueRef
ec_cmath(Emit *E, CcNode *n, const CcBuiltin *b, TsKind out)
{
    return cmath_call(E, n, (CcMathOp)b->op);
}

/* np.clip(x, lo, hi): x raised to lo, then lowered to hi, in the result's
 * kind; a NaN anywhere is the result (NumPy's maximum/minimum), and the
 * float compares are quiet. */
LLVMValueRef
ec_clip(Emit *E, CcNode *n, const CcBuiltin *b, TsKind out)
{
    (void)b;
    LLVMValueRef v[3];
    for (int i = 0; i < 3; i++) {
        if ((v[i] = em_expr_as(E, n->args[i], out)) == NULL) {
            return NULL;
        }
    }
    if (!ts_is_float(out)) {
        int s = ts_is_signed(out) && out != TS_BOOL;
        LLVMValueRef t = LLVMBuildSelect(
            E->b, LLVMBuildICmp(E->b, s ? LLVMIntSLT : LLVMIntULT, v[0], v[1], "low"), v[1], v[0],
            "clip");
        return LLVMBuildSelect(E->b,
                               LLVMBuildICmp(E->b, s ? LLVMIntSGT : LLVMIntUGT, t, v[2], "high"),
                               v[2], t, "clip");
    }
    LLVMValueRef low = LLVMBuildOr(E->b, em_quiet_fcmp(E, LLVMRealOLT, v[0], v[1], "low"),
                                   LLVMBuildFCmp(E->b, LLVMRealUNO, v[1], v[1], "lo.nan"), "low");
    LLVMValueRef t = LLVMBuildSelect(E->b, low, v[1], v[0], "clip");
    LLVMValueRef high = LLVMBuildOr(E->b, em_quiet_fcmp(E, LLVMRealOGT, t, v[2], "high"),
                                    LLVMBuildFCmp(E->b, LLVMRealUNO, v[2], v[2], "hi.nan"), "high");
    return LLVMBuildSelect(E->b, high, v[2], t, "clip");
}

/* np.minimum/np.maximum: integers compare as they are; floats as np.fmin
 * and np.fmax do not (NaN-propagating) */
LLVMValueRef
ec_np_minmax(Emit *E, CcNode *n, const CcBuiltin *b, TsKind out)
{
    if (!ts_is_float(out)) {
        return minmax(E, n, out, b->op == M_MAXIMUM || b->op == M_FMAX);
    }
    return ec_math(E, n, b, out);
}

/* math.f, np.f and their predicates: the arguments in the computing float
 * kind (np.exp(z) is cmath's; np.square of an integer stays integral) */
LLVMValueRef
ec_math(Emit *E, CcNode *n, const CcBuiltin *b, TsKind out)
{
    LLVMValueRef args[2];
    if (b->op == M_LDEXP) {
        return ldexp_call(E, n, out);
    }
    if ((b->flavor == FL_NP || b->flavor == FL_NP_PRED)
        && ts_is_complex(cc_storage(n->args[0]->ty))) {
        return cmath_call(E, n, (CcMathOp)b->op); /* np.exp(z) ... */
    }
    if (b->flavor == FL_NP && !ts_is_float(out) && !ts_is_complex(out)) {
        return np_integer_call(E, n, (CcMathOp)b->op, out);
    }
    const CcType *argty =
        n->nargs == 2 ? cc_promote(n->args[0]->ty, n->args[1]->ty) : n->args[0]->ty;
    TsKind k = cc_math_kind(argty);
    for (int i = 0; i < n->nargs; i++) {
        if ((args[i] = em_expr_as(E, n->args[i], k)) == NULL) {
            return NULL;
        }
    }
    LLVMValueRef r = b->op == M_FMIN || b->op == M_FMAX
                         ? fminmax(E, (CcMathOp)b->op, k, args[0], args[1])
                         : math_op(E, (CcMathOp)b->op, k, args);
    return em_convert(E, r, (b->flavor == FL_MATH_PRED || b->flavor == FL_NP_PRED) ? TS_BOOL : k,
                      out);
}

/* A call of a builtin: its flavor's row of cc_flavor_ops (calls.h). */
LLVMValueRef
em_call(Emit *E, CcNode *n)
{
    const CcBuiltin *b = cc_builtin(n->builtin);
    return cc_flavor_ops[b->flavor].emit(E, n, b, cc_storage(n->ty));
}
