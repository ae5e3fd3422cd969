/*
 * extent.c - the index and length arithmetic of arrays in kernels: every
 * computation on an index, a slice's bounds, a shape's size or np.arange's
 * length that could overflow int64, each with Python's or NumPy's rule.
 * arrays/ calls it where it makes views (an index, a slice) and arrays
 * (a shape's bytes, np.arange's length); the tests check each rule against
 * the interpreter running the kernel.
 *
 *   An index of a signed kind counts from the end when negative; one of an
 *   unsigned kind never does, and a uint64 past int64 is OverflowError
 *   (NumPy makes it a Python int, too large for an index).
 *
 *   A slice bound or step past int64 (a uint64 value; a Python int, which
 *   typeinfer clamps) stands for int64's extreme, which every dimension's
 *   length clamps the same way.  The length of start:stop:step is
 *   (span - 1) / |step| + 1 computed unsigned, so that no step (2**63 - 1,
 *   -2**63) overflows.
 *
 *   A shape's bytes are its item size times its nonzero dimensions: past
 *   int64 that is ValueError, as NumPy's "array is too big" (zero
 *   dimensions do not excuse it there either), and a negative dimension is
 *   ValueError.  An array with no elements has zero strides, as NumPy 2's.
 *
 *   np.arange's length is NumPy's: stop - start in NumPy's scalar kind (or
 *   exactly, between Python ints), divided by step in the kind NumPy's true
 *   division gives, then ceil; a zero quotient of a nonzero span is one
 *   element; NaN, or a length outside int64, is ValueError; a length of
 *   exactly 2**63 is none (NumPy's bounds check lets 2**63 through and its
 *   cast to intp makes it negative, on x86).  Only a division of Python
 *   scalars raises ZeroDivisionError on a zero step; NumPy's own division
 *   gives inf or NaN, and so ValueError.
 */
#include "compiler/emit.h"

static LLVMTypeRef
i64_type(Emit *E)
{
    return LLVMInt64TypeInContext(E->ctx);
}

static LLVMValueRef
i64c(Emit *E, long long v)
{
    return LLVMConstInt(i64_type(E), (unsigned long long)v, 1);
}

static LLVMValueRef
is_neg(Emit *E, LLVMValueRef i, const char *name)
{
    return LLVMBuildICmp(E->b, LLVMIntSLT, i, i64c(E, 0), name);
}

/* ---- indices ---- */

LLVMValueRef
em_wrap_index(Emit *E, LLVMValueRef v, TsKind k, LLVMValueRef len, int counter)
{
    LLVMValueRef i = em_convert(E, v, k, TS_INT64);
    if (ts_is_signed(k)) {
        LLVMValueRef neg = is_neg(E, i, "neg");
        i = LLVMBuildSelect(E->b, neg, LLVMBuildAdd(E->b, i, len, "idx.wrapped"), i, "idx");
    } else if (k == TS_UINT64 && E->fn->boundscheck) {
        em_check(E, is_neg(E, i, "idx.huge"), CC_STATUS_OVERFLOW);
    }
    if (E->fn->boundscheck && counter && ts_is_signed(k)) {
        /* a range loop's counter: the same test as two signed compares of
         * the index as given (i >= len, i < -len), each of which LLVM proves
         * false from the loop's bounds (a window, range(max(0, j - w),
         * min(n, j + w + 1))), where the unsigned test of the wrapped index
         * needs both facts at once; elsewhere that one compare is cheaper */
        LLVMValueRef i0 = em_convert(E, v, k, TS_INT64);
        LLVMValueRef over = LLVMBuildICmp(E->b, LLVMIntSGE, i0, len, "oob.hi");
        LLVMValueRef under =
            LLVMBuildICmp(E->b, LLVMIntSLT, i0, LLVMBuildNeg(E->b, len, ""), "oob.lo");
        em_check(E, LLVMBuildOr(E->b, over, under, "oob"), CC_STATUS_INDEX);
    } else if (E->fn->boundscheck) {
        em_check(E, LLVMBuildICmp(E->b, LLVMIntUGE, i, len, "oob"), CC_STATUS_INDEX);
    }
    return i;
}

/* ---- slices ---- */

/* A slice bound or step of node n as an int64: a uint64 past int64 is
 * int64's largest, which every length clamps as Python clamps the value. */
static LLVMValueRef
slice_int(Emit *E, CcNode *n)
{
    LLVMValueRef v = em_expr(E, n);
    if (v == NULL) {
        return NULL;
    }
    TsKind k = cc_storage(n->ty);
    LLVMValueRef i = em_convert(E, v, k, TS_INT64);
    if (k == TS_UINT64) {
        i = LLVMBuildSelect(E->b, is_neg(E, i, "huge"), i64c(E, INT64_MAX), i, "bound");
    }
    return i;
}

/* A bound b clamped as Python's slice.indices does: b < 0 counts from the
 * end; then into [0, len] going up, [-1, len - 1] going down. */
static LLVMValueRef
clamp_bound(Emit *E, LLVMValueRef b, LLVMValueRef len, LLVMValueRef up)
{
    LLVMValueRef zero = i64c(E, 0), minus1 = i64c(E, -1);
    LLVMValueRef last = LLVMBuildSub(E->b, len, i64c(E, 1), "last");
    b = LLVMBuildSelect(E->b, is_neg(E, b, "b.neg"), LLVMBuildAdd(E->b, b, len, "b.end"), b, "b");
    LLVMValueRef floor = LLVMBuildSelect(E->b, up, zero, minus1, "floor");
    LLVMValueRef ceil = LLVMBuildSelect(E->b, up, len, last, "ceil");
    b = LLVMBuildSelect(E->b, LLVMBuildICmp(E->b, LLVMIntSLT, b, floor, "lt"), floor, b, "b");
    return LLVMBuildSelect(E->b, LLVMBuildICmp(E->b, LLVMIntSGT, b, ceil, "gt"), ceil, b, "b");
}

int
em_slice_bounds(Emit *E, CcNode *s, LLVMValueRef len, LLVMValueRef *start, LLVMValueRef *count,
                LLVMValueRef *step)
{
    LLVMValueRef zero = i64c(E, 0), one = i64c(E, 1);
    LLVMValueRef lo = NULL, hi = NULL;
    *step = one;
    if ((s->cond != NULL && (*step = slice_int(E, s->cond)) == NULL)
        || (s->lhs != NULL && (lo = slice_int(E, s->lhs)) == NULL)
        || (s->rhs != NULL && (hi = slice_int(E, s->rhs)) == NULL)) {
        return -1;
    }
    if (s->cond != NULL) {
        em_check(E, LLVMBuildICmp(E->b, LLVMIntEQ, *step, zero, "step0"), CC_STATUS_VALUE);
    }
    LLVMValueRef up = LLVMBuildICmp(E->b, LLVMIntSGT, *step, zero, "up");
    LLVMValueRef last = LLVMBuildSub(E->b, len, one, "last");
    LLVMValueRef bounds[2] = {lo, hi}, out[2];
    LLVMValueRef dflt[2] = {LLVMBuildSelect(E->b, up, zero, last, "start.dflt"),
                            LLVMBuildSelect(E->b, up, len, i64c(E, -1), "stop.dflt")};
    for (int k = 0; k < 2; k++) {
        out[k] = bounds[k] == NULL ? dflt[k] : clamp_bound(E, bounds[k], len, up);
    }
    /* frozen: opaque to SCEV, so that a loop over the slice and loop
     * strength reduction take the bounds as they are rather than expand the
     * clamps again (a moving mean over a[lo:i + 1]: 57 -> 48 instructions
     * an element, 0.93 -> 1.05 of Numba's speed) */
    out[0] = LLVMBuildFreeze(E->b, out[0], "start");
    out[1] = LLVMBuildFreeze(E->b, out[1], "stop");
    *start = out[0];
    /* the span lies in [0, len + 1] once positive; |step| is taken
     * unsigned (-(-2**63) is 2**63), and a zero step (refused above; a
     * scalar kernel has no status) divides by one */
    LLVMValueRef span = LLVMBuildSelect(E->b, up, LLVMBuildSub(E->b, out[1], out[0], "span"),
                                        LLVMBuildSub(E->b, out[0], out[1], "span"), "span");
    LLVMValueRef mag = LLVMBuildSelect(E->b, up, *step, LLVMBuildNeg(E->b, *step, "neg"), "mag");
    mag = LLVMBuildSelect(E->b, LLVMBuildICmp(E->b, LLVMIntEQ, mag, zero, "mag0"), one, mag, "mag");
    LLVMValueRef n = LLVMBuildAdd(
        E->b, LLVMBuildUDiv(E->b, LLVMBuildSub(E->b, span, one, "span1"), mag, "steps"), one,
        "count");
    *count =
        LLVMBuildSelect(E->b, LLVMBuildICmp(E->b, LLVMIntSGT, span, zero, "any"), n, zero, "count");
    return 0;
}

/* ---- shapes ---- */

LLVMValueRef
em_shape_bytes(Emit *E, LLVMValueRef *dims, int n, long long unit, LLVMValueRef *strides)
{
    LLVMTypeRef i64 = i64_type(E), i1 = LLVMInt1TypeInContext(E->ctx);
    LLVMValueRef run = i64c(E, unit), none = LLVMConstInt(i1, 0, 0);
    LLVMValueRef bad = none, overflow = none;
    for (int d = n - 1; d >= 0; d--) {
        if (strides != NULL) {
            strides[d] = run;
        }
        LLVMValueRef empty = LLVMBuildICmp(E->b, LLVMIntSLE, dims[d], i64c(E, 0), "dim.none");
        bad = LLVMBuildOr(E->b, bad, empty, "none");
        LLVMValueRef args[2] = {run, LLVMBuildSelect(E->b, empty, i64c(E, 1), dims[d], "dim")};
        LLVMValueRef r = em_intrinsic(E, "llvm.smul.with.overflow", &i64, 1, args, 2);
        run = LLVMBuildExtractValue(E->b, r, 0, "bytes");
        overflow = LLVMBuildOr(E->b, overflow, LLVMBuildExtractValue(E->b, r, 1, "ovf"), "ovf");
    }
    for (int d = 0; d < n; d++) {
        em_check(E, is_neg(E, dims[d], "neg.dim"), CC_STATUS_VALUE);
        if (strides != NULL) {
            strides[d] = LLVMBuildSelect(E->b, bad, i64c(E, 0), strides[d], "stride");
        }
    }
    em_check(E, overflow, CC_STATUS_VALUE); /* NumPy: "array is too big" */
    return LLVMBuildSelect(E->b, bad, i64c(E, 0), run, "bytes");
}

/* ---- np.arange ---- */

/* The value of arange argument i (NULL: start 0, step 1) as kind k. */
static LLVMValueRef
arange_arg(Emit *E, CcNode *node, LLVMValueRef v, long long dflt, TsKind k)
{
    return node != NULL ? em_convert(E, v, cc_storage(node->ty), k)
                        : em_convert(E, i64c(E, dflt), TS_INT64, k);
}

static int
is_python(const CcNode *node, CcTypeKind weak)
{
    return node == NULL ? weak == CT_WEAK_INT : node->ty->kind == weak;
}

/* A Python number (a literal, len(a)): NumPy's arange computes with it
 * as Python does. */
static int
is_python_number(const CcNode *node)
{
    return is_python(node, CT_WEAK_INT) || is_python(node, CT_WEAK_FLOAT);
}

/* stop - start as NumPy computes it, into *span_t (its type): exact
 * between Python ints (as a double), else in NumPy's scalar kind (integers
 * wrap, float32 stays float32).  *nonzero: the span is not zero. */
static LLVMValueRef
arange_span(Emit *E, CcNode **node, LLVMValueRef *val, const CcType **span_t, LLVMValueRef *nonzero)
{
    const CcType *weak = cc_weak_type(CT_WEAK_INT);
    const CcType *t0 = node[0] != NULL ? node[0]->ty : weak, *t1 = node[1]->ty;
    if (is_python(node[0], CT_WEAK_INT) && is_python(node[1], CT_WEAK_INT)) {
        /* |b - a| < 2**64 is exact as a uint64 whatever int64 wraps to */
        LLVMValueRef a = arange_arg(E, node[0], val[0], 0, TS_INT64);
        LLVMValueRef b = arange_arg(E, node[1], val[1], 0, TS_INT64);
        LLVMValueRef down = LLVMBuildICmp(E->b, LLVMIntSLT, b, a, "down");
        LLVMValueRef mag = LLVMBuildSelect(E->b, down, LLVMBuildSub(E->b, a, b, ""),
                                           LLVMBuildSub(E->b, b, a, ""), "span.mag");
        LLVMValueRef d = LLVMBuildUIToFP(E->b, mag, LLVMDoubleTypeInContext(E->ctx), "span");
        *span_t = weak;
        *nonzero = LLVMBuildICmp(E->b, LLVMIntNE, a, b, "span.any");
        return LLVMBuildSelect(E->b, down, LLVMBuildFNeg(E->b, d, "span.neg"), d, "span");
    }
    *span_t = cc_promote(t1, t0);
    TsKind k = cc_storage(*span_t) == TS_BOOL ? TS_INT64 : cc_storage(*span_t);
    LLVMValueRef span = em_arith(E, OP_SUB, k, arange_arg(E, node[1], val[1], 0, k),
                                 arange_arg(E, node[0], val[0], 0, k));
    *nonzero = ts_is_float(k)
                   ? LLVMBuildFCmp(E->b, LLVMRealUNE, span, em_real_const(E, k, 0), "")
                   : LLVMBuildICmp(E->b, LLVMIntNE, span, LLVMConstNull(LLVMTypeOf(span)), "");
    if (!ts_is_float(k)) {
        *span_t = cc_scalar_type(k);
    }
    return span;
}

/* (stop - start) / step as NumPy divides: in float32 where both are
 * float32, else in float64 (the quotient of integers); a double.  Between
 * Python numbers a zero step is Python's ZeroDivisionError.  *nonzero:
 * the span is not zero. */
static LLVMValueRef
arange_quotient(Emit *E, CcNode **node, LLVMValueRef *val, LLVMValueRef *nonzero)
{
    const CcType *span_t, *step_t = node[2] != NULL ? node[2]->ty : cc_weak_type(CT_WEAK_INT);
    LLVMValueRef span = arange_span(E, node, val, &span_t, nonzero);
    if (is_python_number(node[0]) && is_python_number(node[1]) && is_python_number(node[2])) {
        LLVMValueRef step = arange_arg(E, node[2], val[2], 1, TS_FLOAT64);
        em_check(E,
                 LLVMBuildFCmp(E->b, LLVMRealOEQ, step, em_real_const(E, TS_FLOAT64, 0), "step0"),
                 CC_STATUS_ZERO);
    }
    const CcType *qt = cc_promote(span_t, step_t);
    TsKind q = qt != NULL && ts_is_float(cc_storage(qt)) ? cc_storage(qt) : TS_FLOAT64;
    span = em_convert(E, span, span_t->kind == CT_WEAK_INT ? TS_FLOAT64 : cc_storage(span_t), q);
    LLVMValueRef quot = em_arith(E, OP_DIV, q, span, arange_arg(E, node[2], val[2], 1, q));
    return em_convert(E, quot, q, TS_FLOAT64);
}

LLVMValueRef
em_arange_length(Emit *E, CcNode **node, LLVMValueRef *val)
{
    LLVMTypeRef dbl = LLVMDoubleTypeInContext(E->ctx), i64 = i64_type(E);
    LLVMValueRef nonzero, quot = arange_quotient(E, node, val, &nonzero);
    LLVMValueRef c = em_float_intrinsic(E, "llvm.ceil", TS_FLOAT64, &quot, 1);
    LLVMValueRef zero = LLVMConstReal(dbl, 0), two63 = LLVMConstReal(dbl, 9223372036854775808.0);
    em_check(E, LLVMBuildFCmp(E->b, LLVMRealUNO, c, c, "nan"), CC_STATUS_VALUE);
    LLVMValueRef fits =
        LLVMBuildAnd(E->b,
                     LLVMBuildFCmp(E->b, LLVMRealOGE, c, LLVMConstReal(dbl, -9223372036854775808.0),
                                   "above.min"),
                     LLVMBuildFCmp(E->b, LLVMRealOLE, c, two63, "below.max"), "fits");
    em_check(E, LLVMBuildNot(E->b, fits, "huge"), CC_STATUS_VALUE);
    /* none when negative, and when 2**63 (NumPy's cast to intp) */
    LLVMValueRef none = LLVMBuildOr(E->b, LLVMBuildFCmp(E->b, LLVMRealOLE, c, zero, "none"),
                                    LLVMBuildFCmp(E->b, LLVMRealOEQ, c, two63, "two63"), "none");
    LLVMValueRef count =
        LLVMBuildFPToSI(E->b, LLVMBuildSelect(E->b, none, zero, c, "len"), i64, "count");
    /* a quotient that underflowed to zero: one element when positive */
    LLVMValueRef tiny =
        LLVMBuildAnd(E->b, LLVMBuildFCmp(E->b, LLVMRealOEQ, quot, zero, "q0"), nonzero, "tiny");
    LLVMValueRef sign = is_neg(E, LLVMBuildBitCast(E->b, quot, i64, "bits"), "sign");
    LLVMValueRef one = LLVMBuildZExt(E->b, LLVMBuildNot(E->b, sign, "positive"), i64, "one");
    return LLVMBuildSelect(E->b, tiny, one, count, "count");
}
