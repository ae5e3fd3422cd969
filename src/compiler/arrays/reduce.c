/*
 * reduce.c - reductions and masks: np.sum/mean/min/argmax/var ... of a
 * whole array or along an axis, np.cumsum/cumprod, a[mask] and a[idx]
 * (boolean and integer-array indexing), read and written.
 */
#include "compiler/arrays/arrays.h"

#include <stdio.h>
#include <string.h>

/* ======== typing ======== */

/* The kind NumPy's sum and prod accumulate an array of kind k in. */
TsKind
ti_sum_kind(TsKind k)
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
int
ti_reduce_axis(Infer *in, CcNode *n, const CcBuiltin *b, int ndim, TsKind elem, const CcType **out)
{
    CcNode *k = n->args[1];
    const CcType *t;
    if (ti_expr(in, k, &t) < 0) {
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

/* ======== emission ======== */

/* ---- reductions ---- */

typedef struct Reduce {
    CcReduceOp op;
    TsKind in;           /* the elements' kind */
    TsKind acc;          /* the result's */
    LLVMValueRef slot;   /* the accumulator (argmin/argmax: the index) */
    LLVMValueRef count;  /* mean: the elements counted */
    LLVMValueRef flat;   /* the flat C-order index of the element */
    LLVMValueRef best;   /* argmin/argmax: the best element */
    LLVMValueRef seen;   /* argmin/argmax: an element was seen; min/max: a NaN was */
    LLVMValueRef length; /* mean along an axis: the axis's length */
    LLVMValueRef center; /* var/std: the mean the squares are taken from */
    View out;            /* cumsum/cumprod: the array written */
    long long ddof;      /* var/std: the divisor is the count less this */
} Reduce;

static LLVMValueRef
is_nan(Emit *E, TsKind k, LLVMValueRef x)
{
    if (!ts_is_float(k)) {
        return LLVMConstInt(LLVMInt1TypeInContext(E->ctx), 0, 0);
    }
    return LLVMBuildFCmp(E->b, LLVMRealUNO, x, x, "isnan");
}

/*
 * min/max: a plain select of the larger (smaller) so that LLVM recognises a
 * min/max reduction and vectorizes it.  Floats are compared by their order
 * keys (em_order_key: integer compares raise no flag on a NaN), with the
 * NaNs kept aside: min/max remember that one was seen (the result is NaN),
 * nanmin/nanmax skip them (a key that never moved from its start: all NaN).
 */
static LLVMValueRef
minmax_sentinel(Emit *E, const Reduce *r)
{
    int max = r->op == R_MAX || r->op == R_NANMAX;
    TsKind k = r->in;
    if (ts_is_float(k)) {
        unsigned bits = (unsigned)ts_bits(k);
        unsigned long long lo = 1ULL << (bits - 1), hi = lo - 1;
        return LLVMConstInt(LLVMIntTypeInContext(E->ctx, bits), max ? lo : hi, 0);
    }
    if (k == TS_BOOL) {
        return LLVMConstInt(LLVMInt1TypeInContext(E->ctx), max ? 0 : 1, 0);
    }
    unsigned bits = (unsigned)ts_bits(k);
    unsigned long long all = bits == 64 ? ~0ULL : (1ULL << bits) - 1;
    unsigned long long smin = 1ULL << (bits - 1), smax = smin - 1;
    unsigned long long v = ts_is_signed(k) ? (max ? smin : smax) : (max ? 0 : all);
    return LLVMConstInt(cc_value_type(E->ctx, k), v, 0);
}

/* any/all: the accumulated truth with x's. */
static LLVMValueRef
truth_step(Emit *E, const Reduce *r, LLVMValueRef x, LLVMValueRef acc)
{
    LLVMValueRef t = em_truthy(E, x, r->in);
    return r->op == R_ANY ? LLVMBuildOr(E->b, acc, t, "any") : LLVMBuildAnd(E->b, acc, t, "all");
}

static LLVMValueRef
minmax_step(Emit *E, Reduce *r, LLVMValueRef x, LLVMValueRef acc, LLVMValueRef nan)
{
    int max = r->op == R_MAX || r->op == R_NANMAX;
    if (r->in == TS_BOOL) {
        return max ? LLVMBuildOr(E->b, acc, x, "max") : LLVMBuildAnd(E->b, acc, x, "min");
    }
    if (!ts_is_float(r->in)) {
        LLVMValueRef gt = LLVMBuildICmp(E->b, em_int_pred(max ? OP_GT : OP_LT, ts_is_signed(r->in)),
                                        x, acc, "better");
        return LLVMBuildSelect(E->b, gt, x, acc, "best");
    }
    LLVMValueRef key = em_order_key(E, x);
    if (r->op == R_NANMIN || r->op == R_NANMAX) {
        key = LLVMBuildSelect(E->b, nan, minmax_sentinel(E, r), key, "key");
    } else {
        LLVMTypeRef i1 = LLVMInt1TypeInContext(E->ctx);
        LLVMBuildStore(
            E->b, LLVMBuildOr(E->b, LLVMBuildLoad2(E->b, i1, r->seen, "nan"), nan, "nan"), r->seen);
    }
    LLVMValueRef better = LLVMBuildICmp(E->b, max ? LLVMIntSGT : LLVMIntSLT, key, acc, "better");
    return LLVMBuildSelect(E->b, better, key, acc, "best");
}


/* The kind var/std take the mean in: a complex input's own complex kind
 * (its variance is real: acc, its parts' kind), else acc. */
static TsKind
var_center_kind(TsKind in, TsKind acc)
{
    return !ts_is_complex(in) ? acc : acc == TS_FLOAT32 ? TS_COMPLEX64 : TS_COMPLEX128;
}

static int
reduce_visit(Emit *E, Walk *w, LLVMValueRef value)
{
    Reduce *r = w->ctx;
    LLVMTypeRef acc_t = cc_value_type(E->ctx, r->acc);
    if ((r->op == R_MIN || r->op == R_MAX || r->op == R_NANMIN || r->op == R_NANMAX)
        && ts_is_float(r->acc)) {
        acc_t = LLVMIntTypeInContext(E->ctx, (unsigned)ts_bits(r->acc)); /* order keys */
    }
    LLVMValueRef x = em_convert_type(E, value, w->expr->ty, cc_scalar_type(r->in));
    LLVMValueRef acc = LLVMBuildLoad2(E->b, acc_t, r->slot, "acc");
    LLVMValueRef nan = is_nan(E, r->in, x), out = NULL;
    LLVMTypeRef i64 = em_i64_type(E);
    LLVMValueRef flat = LLVMBuildLoad2(E->b, i64, r->flat, "k");
    LLVMBuildStore(E->b, LLVMBuildAdd(E->b, flat, em_i64c(E, 1), "k"), r->flat);
    switch (r->op) {
    case R_SUM:
    case R_NANSUM:
    case R_MEAN:
    case R_NANMEAN:
    case R_PROD:
    case R_NANPROD: {
        int prod = r->op == R_PROD || r->op == R_NANPROD;
        LLVMValueRef xa = em_convert(E, x, r->in, r->acc);
        out = em_arith(E, prod ? OP_MUL : OP_ADD, r->acc, acc, xa);
        if (r->op == R_NANSUM || r->op == R_NANPROD || r->op == R_NANMEAN) {
            out = LLVMBuildSelect(E->b, nan, acc, out, "skip.nan");
        }
        if (r->op == R_NANMEAN) { /* a mean divides by the walk's size */
            LLVMValueRef c = LLVMBuildLoad2(E->b, i64, r->count, "n");
            LLVMValueRef c1 = LLVMBuildAdd(E->b, c, em_i64c(E, 1), "n");
            LLVMBuildStore(E->b, LLVMBuildSelect(E->b, nan, c, c1, "n"), r->count);
        }
        break;
    }
    case R_ANY:
    case R_ALL:
        out = truth_step(E, r, x, acc);
        break;
    case R_MIN:
    case R_MAX:
    case R_NANMIN:
    case R_NANMAX:
        out = minmax_step(E, r, x, acc, nan);
        break;
    case R_VAR:
    case R_STD: {
        if (ts_is_complex(r->in)) {
            /* |x - mean|^2 of complex values, summed in their parts' kind */
            TsKind ck = var_center_kind(r->in, r->acc);
            LLVMValueRef d = em_arith(E, OP_SUB, ck, em_convert(E, x, r->in, ck), r->center);
            LLVMValueRef re = em_re_of(E, d), im = em_im_of(E, d);
            LLVMValueRef sq = LLVMBuildFAdd(E->b, LLVMBuildFMul(E->b, re, re, "re2"),
                                            LLVMBuildFMul(E->b, im, im, "im2"), "abs2");
            out = LLVMBuildFAdd(E->b, acc, sq, "ss");
            break;
        }
        LLVMValueRef d = LLVMBuildFSub(E->b, em_convert(E, x, r->in, r->acc), r->center, "dev");
        out = LLVMBuildFAdd(E->b, acc, LLVMBuildFMul(E->b, d, d, "dev2"), "ss");
        break;
    }
    case R_CUMSUM:
    case R_CUMPROD: {
        out = em_arith(E, r->op == R_CUMPROD ? OP_MUL : OP_ADD, r->acc, acc,
                       em_convert(E, x, r->in, r->acc));
        LLVMValueRef off = LLVMBuildNSWMul(E->b, flat, em_i64c(E, ts_itemsize(r->acc)), "off");
        cc_store(
            E->b, r->acc, out,
            LLVMBuildInBoundsGEP2(E->b, LLVMInt8TypeInContext(E->ctx), r->out.data, &off, 1, "at"));
        break;
    }
    case R_ARGMIN:
    case R_ARGMAX: {
        int max = r->op == R_MAX || r->op == R_NANMAX || r->op == R_ARGMAX;
        int nanskip = r->op == R_NANMIN || r->op == R_NANMAX;
        LLVMValueRef best = r->op == R_ARGMIN || r->op == R_ARGMAX
                                ? LLVMBuildLoad2(E->b, cc_value_type(E->ctx, r->in), r->best, "b")
                                : acc;
        LLVMValueRef better;
        if (ts_is_float(r->in)) {
            /* quiet: a NaN raises no invalid flag (NumPy's max warns of none) */
            better = em_quiet_fcmp(E, max ? LLVMRealOGT : LLVMRealOLT, x, best, "better");
        } else {
            better = LLVMBuildICmp(E->b, em_int_pred(max ? OP_GT : OP_LT, ts_is_signed(r->in)),
                                   r->in == TS_BOOL ? LLVMBuildZExt(E->b, x, i64, "") : x,
                                   r->in == TS_BOOL ? LLVMBuildZExt(E->b, best, i64, "") : best,
                                   "better");
        }
        LLVMValueRef best_nan = is_nan(E, r->in, best);
        if (nanskip) {
            /* the first non-NaN wins over the NaN the search starts from */
            better = LLVMBuildOr(E->b, better, best_nan, "better");
        } else {
            /* the first NaN wins, and stays */
            better = LLVMBuildOr(E->b, better,
                                 LLVMBuildAnd(E->b, nan, LLVMBuildNot(E->b, best_nan, ""), ""),
                                 "better");
        }
        LLVMValueRef seen = LLVMBuildLoad2(E->b, LLVMInt1TypeInContext(E->ctx), r->seen, "seen");
        better = LLVMBuildOr(E->b, better, LLVMBuildNot(E->b, seen, ""), "better");
        LLVMBuildStore(E->b, LLVMConstInt(LLVMInt1TypeInContext(E->ctx), 1, 0), r->seen);
        if (r->op == R_ARGMIN || r->op == R_ARGMAX) {
            LLVMBuildStore(E->b, LLVMBuildSelect(E->b, better, x, best, "b"), r->best);
            out = LLVMBuildSelect(E->b, better, flat, acc, "arg");
        } else {
            out = LLVMBuildSelect(E->b, better, x, acc, "best");
        }
        break;
    }
    }
    LLVMBuildStore(E->b, out, r->slot);
    return 0;
}

/* op of arg (an array expression or a scalar) into a value of kind acc;
 * center: var/std's mean; out: cumsum/cumprod's array. */
static LLVMValueRef
reduce_with(Emit *E, CcNode *arg, CcReduceOp op, TsKind acc, LLVMValueRef center, long long ddof,
            const View *out)
{
    Reduce r = {.op = op, .in = cc_storage(arg->ty), .acc = acc, .center = center, .ddof = ddof};
    if (out != NULL) {
        r.out = *out;
    }
    int minmax = r.op == R_MIN || r.op == R_MAX || r.op == R_NANMIN || r.op == R_NANMAX;
    LLVMTypeRef acc_t = cc_value_type(E->ctx, acc), i64 = em_i64_type(E);
    if (minmax && ts_is_float(acc)) {
        acc_t = LLVMIntTypeInContext(E->ctx, (unsigned)ts_bits(acc)); /* order keys */
    }
    r.slot = em_entry_alloca(E, acc_t, "acc");
    r.count = em_entry_alloca(E, i64, "count");
    r.flat = em_entry_alloca(E, i64, "flat");
    r.best = em_entry_alloca(E, cc_value_type(E->ctx, r.in), "best");
    r.seen = em_entry_alloca(E, LLVMInt1TypeInContext(E->ctx), "seen");
    LLVMValueRef init;
    switch (r.op) {
    case R_PROD:
    case R_NANPROD:
    case R_CUMPROD:
        init = em_convert(E, em_i64c(E, 1), TS_INT64, acc);
        break;
    case R_ALL:
        init = LLVMConstInt(LLVMInt1TypeInContext(E->ctx), 1, 0);
        break;
    case R_MIN:
    case R_MAX:
    case R_NANMIN:
    case R_NANMAX:
        init = minmax_sentinel(E, &r);
        break;
    default:
        init = LLVMConstNull(acc_t);
    }
    LLVMBuildStore(E->b, init, r.slot);
    LLVMBuildStore(E->b, em_i64c(E, 0), r.count);
    LLVMBuildStore(E->b, em_i64c(E, 0), r.flat);
    LLVMBuildStore(E->b, LLVMConstNull(cc_value_type(E->ctx, r.in)), r.best);
    LLVMBuildStore(E->b, LLVMConstInt(LLVMInt1TypeInContext(E->ctx), 0, 0), r.seen);
    Walk w = {.ndim = arg->ty->n, .visit = reduce_visit, .ctx = &r};
    if (em_run_walk(E, &w, arg) < 0) {
        return NULL;
    }
    LLVMValueRef result = LLVMBuildLoad2(E->b, acc_t, r.slot, "reduced");
    if (op == R_VAR || op == R_STD) {
        r.count = r.flat; /* the squares were taken of every element */
    }
    if (op == R_MEAN) {
        /* the walk's size, known before it: no count carried through the
         * loop, whose value after it LLVM would compute again */
        LLVMValueRef size = em_i64c(E, 1);
        for (int d = 0; d < w.ndim; d++) {
            size = LLVMBuildMul(E->b, size, w.shape[d], "size");
        }
        LLVMBuildStore(E->b, size, r.count);
    }
    switch (r.op) {
    case R_MIN:
    case R_MAX:
    case R_NANMIN:
    case R_NANMAX:
    case R_ARGMIN:
    case R_ARGMAX:
        /* of an empty array: ValueError, as NumPy */
        em_check(E,
                 LLVMBuildICmp(E->b, LLVMIntEQ, LLVMBuildLoad2(E->b, i64, r.flat, "n"),
                               em_i64c(E, 0), "empty"),
                 CC_STATUS_VALUE);
        if (minmax && ts_is_float(acc)) {
            /* the key back to its float; NaN when one was seen (min/max) or
             * when every element was one (nanmin/nanmax) */
            LLVMValueRef nan =
                r.op == R_MIN || r.op == R_MAX
                    ? LLVMBuildLoad2(E->b, LLVMInt1TypeInContext(E->ctx), r.seen, "nan")
                    : LLVMBuildICmp(E->b, LLVMIntEQ, result, minmax_sentinel(E, &r), "all.nan");
            LLVMValueRef sign = LLVMBuildAShr(
                E->b, result, LLVMConstInt(acc_t, (unsigned long long)ts_bits(acc) - 1, 0), "s");
            LLVMValueRef bits = LLVMBuildXor(
                E->b, result, LLVMBuildLShr(E->b, sign, LLVMConstInt(acc_t, 1, 0), ""), "bits");
            result = LLVMBuildSelect(E->b, nan, em_real_const(E, acc, __builtin_nan("")),
                                     LLVMBuildBitCast(E->b, bits, cc_value_type(E->ctx, acc), ""),
                                     "reduced");
        }
        break;
    case R_MEAN:
    case R_NANMEAN:
    case R_VAR:
    case R_STD: {
        LLVMValueRef c = LLVMBuildLoad2(E->b, i64, r.count, "n");
        if (r.op == R_VAR || r.op == R_STD) {
            /* NumPy divides by max(n - ddof, 0) */
            c = LLVMBuildSub(E->b, c, em_i64c(E, r.ddof), "n.ddof");
            c = LLVMBuildSelect(E->b, LLVMBuildICmp(E->b, LLVMIntSLT, c, em_i64c(E, 0), ""),
                                em_i64c(E, 0), c, "n.ddof");
        }
        TsKind part = ts_is_complex(acc) ? em_part_kind(acc) : acc;
        LLVMValueRef cf = LLVMBuildSIToFP(E->b, c, cc_value_type(E->ctx, part), "n.f");
        if (ts_is_complex(acc)) {
            result = em_make_complex(E, acc, LLVMBuildFDiv(E->b, em_re_of(E, result), cf, "re"),
                                     LLVMBuildFDiv(E->b, em_im_of(E, result), cf, "im"));
        } else {
            result = LLVMBuildFDiv(E->b, result, cf, "mean");
        }
        if (r.op == R_STD) {
            result = em_float_intrinsic(E, "llvm.sqrt", acc, &result, 1);
        }
        break;
    }
    default:
        break;
    }
    return result;
}

/* np.sum(a) ...: one walk; var/std: the mean first, then the squares of
 * the deviations from it (two walks over the same expression). */
LLVMValueRef
em_reduce(Emit *E, CcNode *n, const CcBuiltin *b)
{
    TsKind acc = cc_storage(n->ty);
    LLVMValueRef center = NULL;
    if (b->op == R_VAR || b->op == R_STD) {
        TsKind ck = var_center_kind(cc_storage(n->args[0]->ty), acc);
        if ((center = reduce_with(E, n->args[0], R_MEAN, ck, NULL, 0, NULL)) == NULL) {
            return NULL;
        }
    }
    return reduce_with(E, n->args[0], (CcReduceOp)b->op, acc, center, n->ival, NULL);
}

/* np.cumsum(a), np.cumprod(a): a new 1-d array of a's size, the running
 * sums (products) in C order. */
int
em_cumulate(Emit *E, CcNode *n, View *v)
{
    CcNode *arg = n->args[0];
    const CcBuiltin *b = cc_builtin(n->builtin);
    Walk probe = {.ndim = arg->ty->n};
    if (em_collect_expr(E, &probe, arg) < 0) {
        return -1;
    }
    em_broadcast(E, &probe);
    LLVMValueRef total = em_i64c(E, 1);
    for (int d = 0; d < probe.ndim; d++) {
        total = LLVMBuildMul(E->b, total, probe.shape[d], "total");
    }
    if (em_alloc_array(E, n, n->ty->scalar, 1, &total, v) < 0) {
        return -1;
    }
    return reduce_with(E, arg, (CcReduceOp)b->op, n->ty->scalar, NULL, 0, v) != NULL ? 0 : -1;
}

/* ---- boolean masks ---- */

typedef struct Masked {
    View out;           /* a[mask]: the array filled */
    LLVMValueRef count; /* the elements taken (a[mask]) or stored (= array) so far: an alloca */
    LLVMValueRef value; /* a[mask] = v: v in a's kind (NULL: an array, src) */
    View src;           /* a[mask] = array, a[idx] = array: its elements, C order */
    LLVMValueRef nsrc;  /* how many (1: the one for all) */
    View a;             /* a[idx]: a */
} Masked;

/* a[mask]: each element is stored at the next free place and the place
 * moves on when the mask holds (no branch; the array has room for all). */
static int
mask_take_visit(Emit *E, Walk *w, LLVMValueRef value)
{
    Masked *m = w->ctx;
    LLVMTypeRef i64 = em_i64_type(E);
    LLVMValueRef k = LLVMBuildLoad2(E->b, i64, m->count, "k");
    LLVMValueRef off = LLVMBuildNSWMul(E->b, k, em_i64c(E, ts_itemsize(m->out.kind)), "off");
    LLVMValueRef at =
        LLVMBuildInBoundsGEP2(E->b, LLVMInt8TypeInContext(E->ctx), m->out.data, &off, 1, "at");
    cc_store(E->b, m->out.kind, cc_load(E->b, m->out.kind, w->target_ptr, "x"), at);
    LLVMValueRef take = LLVMBuildZExt(E->b, em_truthy(E, value, cc_storage(w->expr->ty)), i64, "");
    LLVMBuildStore(E->b, LLVMBuildAdd(E->b, k, take, "k"), m->count);
    return 0;
}

/* a[mask] = v: v where the mask holds, the element itself elsewhere. */
static int
mask_put_visit(Emit *E, Walk *w, LLVMValueRef value)
{
    Masked *m = w->ctx;
    TsKind k = w->target.kind;
    LLVMValueRef put = em_truthy(E, value, cc_storage(w->expr->ty));
    LLVMValueRef old = cc_load(E->b, k, w->target_ptr, "x");
    cc_store(E->b, k, LLVMBuildSelect(E->b, put, m->value, old, "put"), w->target_ptr);
    return 0;
}

/* Whether the index expression w collected (a mask, walked element for
 * element along a; or an index array) reads the array a is a view of:
 * for a mask, other than a's own element at each place. */
static LLVMValueRef
index_reads_written(Emit *E, Walk *w, const View *a, int mask)
{
    View t = *a;
    em_within(E, &t);
    LLVMValueRef any = LLVMConstInt(LLVMInt1TypeInContext(E->ctx), 0, 0);
    for (int i = 0; i < w->nleaves; i++) {
        View *l = &w->leaves[i].v;
        if (!cc_is_array(w->leaves[i].ty)) {
            continue;
        }
        em_within(E, l);
        LLVMValueRef meet =
            LLVMBuildAnd(E->b, LLVMBuildICmp(E->b, LLVMIntULT, l->lo, t.hi, ""),
                         LLVMBuildICmp(E->b, LLVMIntULT, t.lo, l->hi, ""), "index.meets");
        if (mask) {
            meet = LLVMBuildAnd(E->b, meet, LLVMBuildNot(E->b, em_same_view(E, l, a), ""), "");
        }
        any = LLVMBuildOr(E->b, any, meet, "index.reads");
    }
    return any;
}

/*
 * Runs w, the walk of a mask or index array whose visit writes into a:
 * where the expression reads a, through a copy of its values made first,
 * as NumPy computes an index before it writes (a[a[::-1] > 0] = 1.5,
 * a[a] = 0).  A device, which cannot allocate, writes in element order.
 */
static int
run_index_write(Emit *E, Walk *w, CcNode *at, const View *a, int mask)
{
    if (E->alloc_head == NULL) {
        return em_run_collected(E, w);
    }
    LLVMBasicBlockRef copy = em_new_block(E, "index.copy"),
                      direct = em_new_block(E, "index.direct");
    LLVMBasicBlockRef done = em_new_block(E, "index.done");
    LLVMBuildCondBr(E->b, index_reads_written(E, w, a, mask), copy, direct);
    LLVMPositionBuilderAtEnd(E->b, direct);
    if (em_run_collected(E, w) < 0) {
        return -1;
    }
    LLVMBuildBr(E->b, done);
    LLVMPositionBuilderAtEnd(E->b, copy);
    Walk values = *w;
    values.visit = em_store_visit;
    View tmp;
    if (em_materialize_collected(E, &values, at, &tmp) < 0) {
        return -1;
    }
    CcNode leaf = {
        .kind = ND_VIEW, .loc = at->loc, .ty = cc_array_type(tmp.kind, tmp.ndim), .view = &tmp};
    Walk c = {.ndim = w->ndim, .target = w->target, .visit = w->visit, .ctx = w->ctx};
    if (em_collect_expr(E, &c, &leaf) < 0 || em_run_collected(E, &c) < 0) {
        return -1;
    }
    LLVMBuildBr(E->b, done);
    LLVMPositionBuilderAtEnd(E->b, done);
    return 0;
}

/* Walks a (n->lhs of an a[mask]) and the mask together (writes: the visit
 * writes into a).  Each dimension of the mask must be a's, or 0 (a mask of
 * no elements selects nothing, NumPy's old rule), else IndexError (NumPy's
 * "boolean index did not match"; a dimension of 1 does not broadcast
 * here). */
static int
mask_walk(Emit *E, CcNode *index, Walk *w, int writes)
{
    View a;
    if (em_view_of(E, index->lhs, &a) < 0 || em_collect_expr(E, w, index->args[0]) < 0) {
        return -1;
    }
    w->ndim = a.ndim;
    w->target.data = NULL;
    em_broadcast(E, w); /* the mask's own shape */
    LLVMValueRef bad = LLVMConstInt(LLVMInt1TypeInContext(E->ctx), 0, 0), none = bad;
    for (int d = 0; d < a.ndim; d++) {
        LLVMValueRef zero = LLVMBuildICmp(E->b, LLVMIntEQ, w->shape[d], em_i64c(E, 0), "mask.0");
        LLVMValueRef other = LLVMBuildICmp(E->b, LLVMIntNE, w->shape[d], a.shape[d], "");
        bad = LLVMBuildOr(E->b, bad, LLVMBuildAnd(E->b, other, LLVMBuildNot(E->b, zero, ""), ""),
                          "mask.bad");
        none = LLVMBuildOr(E->b, none, zero, "mask.none");
    }
    em_check(E, bad, CC_STATUS_INDEX);
    LLVMBasicBlockRef walk = em_new_block(E, "mask.walk"), done = em_new_block(E, "mask.done");
    LLVMBuildCondBr(E->b, none, done, walk);
    LLVMPositionBuilderAtEnd(E->b, walk);
    w->target = a;
    if ((writes ? run_index_write(E, w, index, &a, 1) : em_run_collected(E, w)) < 0) {
        return -1;
    }
    LLVMBuildBr(E->b, done);
    LLVMPositionBuilderAtEnd(E->b, done);
    return 0;
}

int
em_mask_read(Emit *E, CcNode *n, View *v)
{
    View a;
    if (em_view_of(E, n->lhs, &a) < 0) {
        return -1;
    }
    LLVMValueRef total = em_i64c(E, 1);
    for (int d = 0; d < a.ndim; d++) {
        total = LLVMBuildMul(E->b, total, a.shape[d], "total");
    }
    Masked m = {.count = em_entry_alloca(E, em_i64_type(E), "taken")};
    if (em_alloc_array(E, n, a.kind, 1, &total, &m.out) < 0) {
        return -1;
    }
    LLVMBuildStore(E->b, em_i64c(E, 0), m.count);
    Walk w = {.visit = mask_take_visit, .ctx = &m};
    if (mask_walk(E, n, &w, 0) < 0) {
        return -1;
    }
    *v = m.out;
    v->shape[0] = LLVMBuildLoad2(E->b, em_i64_type(E), m.count, "taken");
    return 0;
}

/* The next value of a[mask] = array or a[idx] = array: src's element
 * count (src's only one when it has one); one more than src has ends the
 * kernel with CC_STATUS_SHAPE. */
static LLVMValueRef
next_source(Emit *E, Masked *m)
{
    LLVMTypeRef i64 = em_i64_type(E);
    LLVMValueRef k = LLVMBuildLoad2(E->b, i64, m->count, "k");
    LLVMValueRef one = LLVMBuildICmp(E->b, LLVMIntEQ, m->nsrc, em_i64c(E, 1), "one");
    em_check(E,
             LLVMBuildAnd(E->b, LLVMBuildNot(E->b, one, ""),
                          LLVMBuildICmp(E->b, LLVMIntSGE, k, m->nsrc, "more"), "too.few"),
             CC_STATUS_SHAPE);
    LLVMValueRef at = LLVMBuildSelect(E->b, one, em_i64c(E, 0), k, "at");
    LLVMBuildStore(E->b, LLVMBuildNSWAdd(E->b, k, em_i64c(E, 1), "k"), m->count);
    LLVMValueRef off = LLVMBuildNSWMul(E->b, at, em_i64c(E, ts_itemsize(m->src.kind)), "off");
    return cc_load(
        E->b, m->src.kind,
        LLVMBuildInBoundsGEP2(E->b, LLVMInt8TypeInContext(E->ctx), m->src.data, &off, 1, ""), "v");
}

/* a[mask] = array: the next value where the mask holds. */
static int
mask_put_array_visit(Emit *E, Walk *w, LLVMValueRef value)
{
    Masked *m = w->ctx;
    LLVMBasicBlockRef put = em_new_block(E, "mask.put"), next = em_new_block(E, "mask.next");
    LLVMBuildCondBr(E->b, em_truthy(E, value, cc_storage(w->expr->ty)), put, next);
    LLVMPositionBuilderAtEnd(E->b, put);
    cc_store(E->b, w->target.kind, next_source(E, m), w->target_ptr);
    LLVMBuildBr(E->b, next);
    LLVMPositionBuilderAtEnd(E->b, next);
    return 0;
}

/* a[idx] (typeinfer: a is 1-d): the address of a[i], i wrapped and checked. */
static LLVMValueRef
fancy_address(Emit *E, Walk *w, const View *a, LLVMValueRef i)
{
    /* NumPy casts an index array to intp: a uint64 past int64 wraps */
    i = em_wrap_index(E, em_convert(E, i, cc_storage(w->expr->ty), TS_INT64), TS_INT64, a->shape[0],
                      0);
    LLVMValueRef off = LLVMBuildNSWMul(E->b, i, a->stride[0], "off");
    return LLVMBuildInBoundsGEP2(E->b, LLVMInt8TypeInContext(E->ctx), a->data, &off, 1, "at");
}

static int
fancy_take_visit(Emit *E, Walk *w, LLVMValueRef i)
{
    Masked *m = w->ctx;
    LLVMValueRef at = fancy_address(E, w, &m->a, i);
    if (m->a.ndim == 1) {
        cc_store(E->b, m->a.kind, cc_load(E->b, m->a.kind, at, "x"), w->target_ptr);
        return 0;
    }
    /* a row of an N-d a: copied into the result's block for this index */
    View row = {.ndim = m->a.ndim - 1, .kind = m->a.kind, .data = at};
    View dst = {.ndim = m->a.ndim - 1, .kind = m->a.kind, .data = w->target_ptr};
    for (int d = 1; d < m->a.ndim; d++) {
        row.shape[d - 1] = dst.shape[d - 1] = m->a.shape[d];
        row.stride[d - 1] = m->a.stride[d];
        dst.stride[d - 1] = w->target.stride[w->ndim + d - 1];
    }
    CcNode node = {.kind = ND_VIEW,
                   .loc = w->expr->loc,
                   .ty = cc_array_type(row.kind, row.ndim),
                   .view = &row};
    Walk copy = {.visit = em_store_visit};
    if (em_collect_expr(E, &copy, &node) < 0) {
        return -1;
    }
    copy.ndim = dst.ndim;
    copy.target = dst;
    em_broadcast(E, &copy);
    return em_run_collected(E, &copy);
}

static int
fancy_put_visit(Emit *E, Walk *w, LLVMValueRef i)
{
    Masked *m = w->ctx;
    LLVMValueRef at = fancy_address(E, w, &m->a, i);
    cc_store(E->b, m->a.kind, m->value != NULL ? m->value : next_source(E, m), at);
    return 0;
}

/* a[idx]: a new array of idx's shape. */
int
em_fancy_read(Emit *E, CcNode *n, View *v)
{
    Masked m = {0};
    Walk w = {.visit = fancy_take_visit, .ctx = &m};
    if (em_view_of(E, n->lhs, &m.a) < 0 || em_collect_expr(E, &w, n->args[0]) < 0) {
        return -1;
    }
    w.ndim = n->args[0]->ty->n;
    w.target.data = NULL;
    em_broadcast(E, &w);
    /* idx's shape, then a's other dimensions */
    LLVMValueRef shape[TS_MAXDIMS];
    int nd = 0;
    for (int d = 0; d < w.ndim; d++) {
        shape[nd++] = w.shape[d];
    }
    for (int d = 1; d < m.a.ndim && nd < TS_MAXDIMS; d++) {
        shape[nd++] = m.a.shape[d];
    }
    if (em_alloc_array(E, n, m.a.kind, nd, shape, v) < 0) {
        return -1;
    }
    w.target = *v;
    return em_run_collected(E, &w);
}

/*
 * a[mask] = v and a[idx] = v: a scalar v goes to every place chosen; an
 * array v (a copy, made first, in a's kind) gives its elements in order,
 * as many as there are places (or one for all), else ValueError.
 */
int
em_indexed_write(Emit *E, CcNode *n)
{
    CcNode *index = n->lhs;
    TsKind k = index->ty->scalar;
    Masked m = {.count = em_entry_alloca(E, em_i64_type(E), "stored")};
    if (cc_is_array(n->rhs->ty)) {
        if (em_copy_as(E, n->rhs, k, &m.src) < 0) {
            return -1;
        }
        m.nsrc = em_view_size(E, &m.src);
    } else {
        LLVMValueRef v = em_expr(E, n->rhs);
        if (v == NULL) {
            return -1;
        }
        m.value = em_convert_type(E, v, n->rhs->ty, cc_scalar_type(k));
    }
    LLVMBuildStore(E->b, em_i64c(E, 0), m.count);
    Walk w = {.ctx = &m};
    if (em_is_mask_index(index)) {
        w.visit = m.value != NULL ? mask_put_visit : mask_put_array_visit;
        if (mask_walk(E, index, &w, 1) < 0) {
            return -1;
        }
    } else {
        w.visit = fancy_put_visit;
        w.ndim = index->args[0]->ty->n;
        if (em_view_of(E, index->lhs, &m.a) < 0 || em_collect_expr(E, &w, index->args[0]) < 0
            || run_index_write(E, &w, index, &m.a, 0) < 0) {
            return -1;
        }
    }
    if (m.value == NULL) {
        /* fewer places than values: ValueError too */
        LLVMValueRef stored = LLVMBuildLoad2(E->b, em_i64_type(E), m.count, "stored");
        em_check(E,
                 LLVMBuildAnd(E->b, LLVMBuildICmp(E->b, LLVMIntNE, m.nsrc, em_i64c(E, 1), ""),
                              LLVMBuildICmp(E->b, LLVMIntNE, stored, m.nsrc, ""), "too.many"),
                 CC_STATUS_SHAPE);
    }
    return 0;
}

/* ---- reductions along an axis ---- */

/* Combines the element x into the result element at w->target_ptr (the
 * result seen through a zero stride along the reduced axis). */
static int
axis_visit(Emit *E, Walk *w, LLVMValueRef value)
{
    Reduce *r = w->ctx;
    TsKind k = r->acc;
    LLVMValueRef x = em_convert_type(E, value, w->expr->ty, cc_scalar_type(r->in));
    LLVMValueRef acc = cc_load(E->b, k, w->target_ptr, "acc"), out;
    LLVMValueRef nan = is_nan(E, r->in, x);
    switch (r->op) {
    case R_ANY:
    case R_ALL:
        out = truth_step(E, r, x, acc);
        break;
    case R_MIN:
    case R_MAX:
    case R_NANMIN:
    case R_NANMAX: {
        int max = r->op == R_MAX || r->op == R_NANMAX;
        if (k == TS_BOOL) {
            out = max ? LLVMBuildOr(E->b, acc, x, "max") : LLVMBuildAnd(E->b, acc, x, "min");
            break;
        }
        LLVMValueRef better =
            ts_is_float(k) ? em_quiet_fcmp(E, max ? LLVMRealOGT : LLVMRealOLT, x, acc, "better")
                           : LLVMBuildICmp(E->b, em_int_pred(max ? OP_GT : OP_LT, ts_is_signed(k)),
                                           x, acc, "better");
        LLVMValueRef acc_nan = is_nan(E, k, acc);
        if (r->op == R_NANMIN || r->op == R_NANMAX) {
            better = LLVMBuildOr(E->b, better, acc_nan, "better"); /* from the NaN start */
        } else {
            better = LLVMBuildAnd(E->b, LLVMBuildOr(E->b, better, nan, ""),
                                  LLVMBuildNot(E->b, acc_nan, ""), "better"); /* NaN stays */
        }
        out = LLVMBuildSelect(E->b, better, x, acc, "best");
        break;
    }
    default: {
        int prod = r->op == R_PROD || r->op == R_NANPROD;
        out = em_arith(E, prod ? OP_MUL : OP_ADD, k, acc, em_convert(E, x, r->in, k));
        if (r->op == R_NANSUM || r->op == R_NANPROD) {
            out = LLVMBuildSelect(E->b, nan, acc, out, "skip.nan");
        }
    }
    }
    cc_store(E->b, k, out, w->target_ptr);
    return 0;
}

/* mean along an axis: the sums divided by the axis's length. */
static int
divide_visit(Emit *E, Walk *w, LLVMValueRef value)
{
    Reduce *r = w->ctx;
    (void)value;
    TsKind k = r->acc, part = ts_is_complex(k) ? em_part_kind(k) : k;
    LLVMValueRef d = LLVMBuildSIToFP(E->b, r->length, cc_value_type(E->ctx, part), "n");
    LLVMValueRef v = cc_load(E->b, k, w->target_ptr, "sum");
    if (ts_is_complex(k)) {
        v = em_make_complex(E, k, LLVMBuildFDiv(E->b, em_re_of(E, v), d, "re"),
                            LLVMBuildFDiv(E->b, em_im_of(E, v), d, "im"));
    } else {
        v = LLVMBuildFDiv(E->b, v, d, "mean");
    }
    cc_store(E->b, k, v, w->target_ptr);
    return 0;
}

/*
 * np.sum(a, axis=k) ... of an N-d a: the result (the other dimensions) is
 * allocated and filled with the operation's start (0, 1, -inf/+inf or the
 * kind's extreme, NaN for nanmin/nanmax), then one walk over a's whole
 * shape combines each element into the result seen with a zero stride
 * along k.  An empty axis is ValueError for min/max (no identity).
 */
int
em_axis_reduce(Emit *E, CcNode *n, View *v)
{
    const CcBuiltin *b = cc_builtin(n->builtin);
    CcNode *arg = n->args[0];
    int axis = n->index - 1, ndim = arg->ty->n;
    Reduce r = {.op = (CcReduceOp)b->op, .in = cc_storage(arg->ty), .acc = n->ty->scalar};
    Walk w = {.ndim = ndim, .visit = axis_visit, .ctx = &r};
    if (em_collect_expr(E, &w, arg) < 0) {
        return -1;
    }
    em_broadcast(E, &w);
    LLVMValueRef shape[TS_MAXDIMS];
    for (int d = 0, j = 0; d < ndim; d++) {
        if (d != axis) {
            shape[j++] = w.shape[d];
        }
    }
    if (em_alloc_array(E, n, r.acc, ndim - 1, shape, v) < 0) {
        return -1;
    }
    TsKind k = r.acc;
    double inf = __builtin_inf();
    LLVMValueRef init;
    switch (r.op) {
    case R_PROD:
    case R_NANPROD:
    case R_ALL:
        init = em_convert(E, em_i64c(E, 1), TS_INT64, k);
        break;
    case R_MIN:
    case R_MAX:
    case R_NANMIN:
    case R_NANMAX:
        em_check(E, LLVMBuildICmp(E->b, LLVMIntEQ, w.shape[axis], em_i64c(E, 0), "empty"),
                 CC_STATUS_VALUE);
        if (ts_is_float(k)) {
            int max = r.op == R_MAX || r.op == R_NANMAX;
            init = em_real_const(E, k,
                                 r.op == R_NANMIN || r.op == R_NANMAX ? __builtin_nan("")
                                 : max                                ? -inf
                                                                      : inf);
        } else {
            r.op = r.op == R_NANMIN ? R_MIN : r.op == R_NANMAX ? R_MAX : r.op;
            init = minmax_sentinel(E, &r);
        }
        break;
    default:
        init = LLVMConstNull(cc_value_type(E->ctx, k));
    }
    CcNode start = {.kind = ND_CONST, .loc = n->loc, .ty = cc_scalar_type(k)};
    if (em_fill_view(E, v, &start, init) < 0) {
        return -1;
    }
    /* the result seen along a's whole shape: stride 0 on the axis */
    View t = {.ndim = ndim, .kind = k, .data = v->data};
    for (int d = 0, j = 0; d < ndim; d++) {
        t.shape[d] = w.shape[d];
        t.stride[d] = d == axis ? em_i64c(E, 0) : v->stride[j++];
    }
    w.target = t;
    if (em_run_collected(E, &w) < 0) {
        return -1;
    }
    if (r.op == R_MEAN) {
        r.length = w.shape[axis];
        Walk m = {.ndim = v->ndim, .target = *v, .visit = divide_visit, .ctx = &r};
        return em_run_collected(E, &m);
    }
    return 0;
}

/*
 * np.argmax(a, axis=k), nanmean, var, std, cumsum, cumprod along an axis:
 * a loop over the other dimensions reduces each line along k as a whole
 * 1-d array (reduce_with on an ND_VIEW).  The result is allocated with the
 * axis left out, or (cumsum/cumprod) moved last so that each line is
 * contiguous, and then seen with it back in place.
 */
int
em_axis_lines(Emit *E, CcNode *n, View *v)
{
    CcReduceOp op = (CcReduceOp)cc_builtin(n->builtin)->op;
    int axis = n->index - 1, cumulative = op == R_CUMSUM || op == R_CUMPROD;
    TsKind acc = n->ty->kind == CT_ARRAY ? n->ty->scalar : cc_storage(n->ty);
    View a, r;
    if (em_view_of(E, n->args[0], &a) < 0) {
        return -1;
    }
    int outer = a.ndim - 1;
    LLVMValueRef shape[TS_MAXDIMS];
    for (int d = 0, j = 0; d < a.ndim; d++) {
        if (d != axis) {
            shape[j++] = a.shape[d];
        }
    }
    shape[outer] = a.shape[axis];
    if (op == R_ARGMIN || op == R_ARGMAX) {
        /* NumPy refuses an empty axis even when no line is reduced */
        em_check(E, LLVMBuildICmp(E->b, LLVMIntEQ, a.shape[axis], em_i64c(E, 0), "empty"),
                 CC_STATUS_VALUE);
    }
    if (em_alloc_array(E, n, acc, outer + cumulative, shape, &r) < 0) {
        return -1;
    }
    Loop loops[TS_MAXDIMS];
    LLVMValueRef off = em_i64c(E, 0), roff = em_i64c(E, 0);
    for (int d = 0, j = 0; d < a.ndim; d++) {
        if (d == axis) {
            continue;
        }
        em_loop_begin(E, &loops[j], shape[j], "axis.line");
        off = LLVMBuildNSWAdd(E->b, off, LLVMBuildNSWMul(E->b, loops[j].i, a.stride[d], ""), "off");
        roff =
            LLVMBuildNSWAdd(E->b, roff, LLVMBuildNSWMul(E->b, loops[j].i, r.stride[j], ""), "roff");
        j++;
    }
    LLVMTypeRef i8 = LLVMInt8TypeInContext(E->ctx);
    View line = {.ndim = 1, .kind = a.kind};
    line.data = LLVMBuildGEP2(E->b, i8, a.data, &off, 1, "line");
    line.shape[0] = a.shape[axis];
    line.stride[0] = a.stride[axis];
    CcNode node = {.kind = ND_VIEW, .loc = n->loc, .ty = cc_array_type(a.kind, 1), .view = &line};
    LLVMValueRef at = LLVMBuildGEP2(E->b, i8, r.data, &roff, 1, "at");
    if (cumulative) {
        View o = {.ndim = 1, .kind = acc, .data = at};
        o.shape[0] = a.shape[axis];
        o.stride[0] = em_i64c(E, ts_itemsize(acc));
        if (reduce_with(E, &node, op, acc, NULL, 0, &o) == NULL) {
            return -1;
        }
    } else {
        LLVMValueRef center = NULL, x;
        if ((op == R_VAR || op == R_STD)
            && (center = reduce_with(E, &node, R_MEAN, var_center_kind(a.kind, acc), NULL, 0, NULL))
                   == NULL) {
            return -1;
        }
        node.elem = NULL;
        if ((x = reduce_with(E, &node, op, acc, center, n->ival, NULL)) == NULL) {
            return -1;
        }
        cc_store(E->b, acc, x, at);
    }
    for (int j = outer - 1; j >= 0; j--) {
        em_loop_end(E, &loops[j]);
    }
    *v = r;
    if (cumulative) {
        /* the axis back in its place */
        for (int d = 0, j = 0; d < a.ndim; d++) {
            v->shape[d] = d == axis ? r.shape[outer] : r.shape[j];
            v->stride[d] = d == axis ? r.stride[outer] : r.stride[j];
            j += d != axis;
        }
    }
    return 0;
}
