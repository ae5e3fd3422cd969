/*
 * convert.c - the LLVM type of a value type, conversions between scalar
 * kinds, and Python truth values, for the emitter (emit.h).
 *
 * Values are held in their storage kind (cc_storage); typeinfer decides where
 * one kind meets another, and the emitter converts there through here.  The
 * conversions are NumPy's casts, except float -> int, which saturates (NaN
 * -> 0) where C and LLVM leave the result undefined.
 */
#include "compiler/emit.h"

#include <math.h>

#include <stdio.h>
#include <string.h>

/* ---- types ---- */

/* { data, shape, strides, lo, hi } */
LLVMTypeRef
em_array_type(Emit *E, int ndim)
{
    LLVMTypeRef dims = LLVMArrayType2(em_i64_type(E), (unsigned long long)ndim);
    LLVMTypeRef fields[5] = {LLVMPointerTypeInContext(E->ctx, 0), dims, dims, em_i64_type(E),
                             em_i64_type(E)};
    return LLVMStructTypeInContext(E->ctx, fields, 5, 0);
}

LLVMTypeRef
em_type_of(Emit *E, const CcType *t)
{
    if (t->kind == CT_ARRAY) {
        return em_array_type(E, t->n);
    }
    if (t->kind != CT_TUPLE) {
        return cc_value_type(E->ctx, cc_storage(t));
    }
    LLVMTypeRef *elems = cc_alloc(E->fn->arena, sizeof(LLVMTypeRef) * (size_t)(t->n + 1));
    if (elems == NULL) {
        return NULL;
    }
    for (int i = 0; i < t->n; i++) {
        if ((elems[i] = em_type_of(E, t->elems[i])) == NULL) {
            return NULL;
        }
    }
    return LLVMStructTypeInContext(E->ctx, elems, (unsigned)t->n, 0);
}

/* ---- conversions ---- */

/* The name of v converted to kind k: "x.f32" for a value named x ("conv.f32"
 * for an unnamed one), so that a dump shows where the kernel converts. */
static const char *
cast_name(LLVMValueRef v, TsKind k, char *buf, size_t size)
{
    static const char *const suffix[TS_NSCALAR] = {
        [TS_BOOL] = "bool",       [TS_INT8] = "i8",     [TS_INT16] = "i16",
        [TS_INT32] = "i32",       [TS_INT64] = "i64",   [TS_UINT8] = "u8",
        [TS_UINT16] = "u16",      [TS_UINT32] = "u32",  [TS_UINT64] = "u64",
        [TS_FLOAT32] = "f32",     [TS_FLOAT64] = "f64", [TS_COMPLEX64] = "c64",
        [TS_COMPLEX128] = "c128",
    };
    size_t len = 0;
    const char *base = LLVMGetValueName2(v, &len);
    if (len == 0) {
        base = "conv";
        len = strlen(base);
    }
    snprintf(buf, size, "%.*s.%s", (int)len, base, k < TS_NSCALAR ? suffix[k] : "?");
    return buf;
}

/*
 * llvm.fptosi.sat's result spelled out: compares, one plain conversion of a
 * value known in range, and selects.  LLVM 19's x86 back end expands a
 * vector llvm.fptosi.sat lane by lane, with a branch per lane, so a
 * vectorized loop converting floats to integers ran 5-10x slower than its
 * scalar form (`int(math.floor(x))` on a branch); this form is a vector
 * conversion and a few vector compares.
 */
static LLVMValueRef
float_to_int_in_line(Emit *E, LLVMValueRef v, TsKind from, TsKind to, const char *name)
{
    int bits = ts_bits(to), is_signed = ts_is_signed(to);
    LLVMTypeRef it = cc_value_type(E->ctx, to);
    /* [lo, end): the floats whose truncation fits `to`; both are exact */
    double lo = is_signed ? -ldexp(1.0, bits - 1) : 0.0;
    double end = ldexp(1.0, is_signed ? bits - 1 : bits);
    LLVMValueRef at_lo = LLVMBuildFCmp(E->b, LLVMRealOGE, v, em_real_const(E, from, lo), "cv.lo");
    LLVMValueRef below_end =
        LLVMBuildFCmp(E->b, LLVMRealOLT, v, em_real_const(E, from, end), "cv.end");
    LLVMValueRef fits = LLVMBuildAnd(E->b, at_lo, below_end, "cv.fits");
    LLVMValueRef safe = LLVMBuildSelect(E->b, fits, v, em_real_const(E, from, 0.0), "cv.safe");
    LLVMValueRef r = is_signed ? LLVMBuildFPToSI(E->b, safe, it, "cv.int")
                               : LLVMBuildFPToUI(E->b, safe, it, "cv.int");
    LLVMValueRef max =
        is_signed ? LLVMConstInt(it, (1ULL << (bits - 1)) - 1, 0) : LLVMConstAllOnes(it);
    LLVMValueRef min = is_signed ? LLVMConstInt(it, 1ULL << (bits - 1), 0) : LLVMConstNull(it);
    LLVMValueRef high = LLVMBuildFCmp(E->b, LLVMRealOGE, v, em_real_const(E, from, end), "cv.high");
    LLVMValueRef low = LLVMBuildFCmp(E->b, LLVMRealOLT, v, em_real_const(E, from, lo), "cv.low");
    LLVMValueRef outside = LLVMBuildSelect(
        E->b, high, max, LLVMBuildSelect(E->b, low, min, LLVMConstNull(it), "cv.nan"), "cv.sat");
    return LLVMBuildSelect(E->b, fits, r, outside, name);
}

/* float -> integer kind `to`: saturating, NaN -> 0 (Python would raise). */
static LLVMValueRef
float_to_int(Emit *E, LLVMValueRef v, TsKind from, TsKind to, const char *name)
{
    /* saturating at the target's own range, NaN -> 0: defined for every
     * input (a C or LLVM cast is not), e.g. int8(300.0) == 127 */
    if (E->target->fast_f64) {
        return float_to_int_in_line(E, v, from, to, name);
    }
    LLVMTypeRef over[2] = {cc_value_type(E->ctx, to), cc_value_type(E->ctx, from)};
    LLVMValueRef r =
        em_intrinsic(E, ts_is_signed(to) ? "llvm.fptosi.sat" : "llvm.fptoui.sat", over, 2, &v, 1);
    LLVMSetValueName2(r, name, strlen(name));
    return r;
}

LLVMValueRef
em_convert(Emit *E, LLVMValueRef v, TsKind from, TsKind to)
{
    if (from == to) {
        return v;
    }
    LLVMTypeRef t = cc_value_type(E->ctx, to);
    if (to == TS_BOOL) {
        return em_truthy(E, v, from);
    }
    if (ts_is_complex(to)) {
        TsKind p = em_part_kind(to);
        if (ts_is_complex(from)) {
            return em_make_complex(E, to, em_convert(E, em_re_of(E, v), em_part_kind(from), p),
                                   em_convert(E, em_im_of(E, v), em_part_kind(from), p));
        }
        return em_make_complex(E, to, em_convert(E, v, from, p), em_real_const(E, p, 0.0));
    }
    if (ts_is_complex(from)) {
        return em_convert(E, em_re_of(E, v), em_part_kind(from), to);
    }
    char name[64];
    cast_name(v, to, name, sizeof(name));
    if (from == TS_BOOL) {
        return ts_is_float(to) ? LLVMBuildUIToFP(E->b, v, t, name)
                               : LLVMBuildZExt(E->b, v, t, name);
    }
    if (ts_is_float(from)) {
        if (ts_is_float(to)) {
            return ts_bits(to) > ts_bits(from) ? LLVMBuildFPExt(E->b, v, t, name)
                                               : LLVMBuildFPTrunc(E->b, v, t, name);
        }
        return float_to_int(E, v, from, to, name);
    }
    if (ts_is_float(to)) {
        return ts_is_signed(from) ? LLVMBuildSIToFP(E->b, v, t, name)
                                  : LLVMBuildUIToFP(E->b, v, t, name);
    }
    if (ts_bits(to) < ts_bits(from)) {
        return LLVMBuildTrunc(E->b, v, t, name);
    }
    return ts_is_signed(from) ? LLVMBuildSExt(E->b, v, t, name) : LLVMBuildZExt(E->b, v, t, name);
}

LLVMValueRef
em_convert_type(Emit *E, LLVMValueRef v, const CcType *from, const CcType *to)
{
    if (from->kind == CT_TUPLE && to->kind == CT_TUPLE && from != to && from->n == to->n) {
        /* a tuple into a variable of its promoted tuple (typeinfer's
         * bindings): each item converted */
        LLVMValueRef r = LLVMGetUndef(em_type_of(E, to));
        for (int i = 0; i < to->n && r != NULL; i++) {
            LLVMValueRef item = LLVMBuildExtractValue(E->b, v, (unsigned)i, "item");
            item = em_convert_type(E, item, from->elems[i], to->elems[i]);
            r = item != NULL ? LLVMBuildInsertValue(E->b, r, item, (unsigned)i, "tuple") : NULL;
        }
        return r;
    }
    if (from->kind == CT_TUPLE || to->kind == CT_TUPLE || cc_is_array(from)) {
        return v; /* equal tuples; views are never converted */
    }
    return em_convert(E, v, cc_storage(from), cc_storage(to));
}

/* Python truth value: nonzero; NaN is true; complex: either part. */
LLVMValueRef
em_truthy(Emit *E, LLVMValueRef v, TsKind k)
{
    if (k == TS_BOOL) {
        return v;
    }
    if (ts_is_complex(k)) {
        TsKind p = em_part_kind(k);
        return LLVMBuildOr(E->b, em_truthy(E, em_re_of(E, v), p), em_truthy(E, em_im_of(E, v), p),
                           "nz");
    }
    if (ts_is_float(k)) {
        return LLVMBuildFCmp(E->b, LLVMRealUNE, v, em_real_const(E, k, 0.0), "nz");
    }
    return LLVMBuildICmp(E->b, LLVMIntNE, v, em_int_const(E, k, 0), "nz");
}
