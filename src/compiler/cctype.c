/*
 * cctype.c - the types of the kernel language's values (CcType): the
 * shared type values, their names in messages, and promotion, which
 * follows NumPy 2's result_type with NEP 50's weak Python scalars.
 * typeinfer.c assigns them; emit.c and the builders read them.
 */
#include "compiler/compiler.h"

#include <stdio.h>
#include <string.h>

/* ---- the type values ---- */

static const CcType scalar_types[TS_NSCALAR] = {
#define S(k) [k] = {CT_SCALAR, k, 0, NULL}
    S(TS_BOOL),    S(TS_INT8),      S(TS_INT16),      S(TS_INT32),  S(TS_INT64),
    S(TS_UINT8),   S(TS_UINT16),    S(TS_UINT32),     S(TS_UINT64), S(TS_FLOAT32),
    S(TS_FLOAT64), S(TS_COMPLEX64), S(TS_COMPLEX128),
#undef S
};

static const CcType weak_types[3] = {
    {CT_WEAK_INT, TS_INT64, 0, NULL},
    {CT_WEAK_FLOAT, TS_FLOAT64, 0, NULL},
    {CT_WEAK_COMPLEX, TS_COMPLEX128, 0, NULL},
};

const CcType *
cc_scalar_type(TsKind kind)
{
    return &scalar_types[kind];
}

const CcType *
cc_weak_type(CcTypeKind kind)
{
    return &weak_types[kind - CT_WEAK_INT];
}

/* Arrays of up to TS_MAXDIMS dimensions, made on first use (with the GIL;
 * the entries never change once set). */
static CcType array_types[TS_NSCALAR + 1][TS_MAXDIMS + 1]; /* + arrays of TS_INFER */

const CcType *
cc_array_type(TsKind kind, int ndim)
{
    CcType *t = &array_types[kind == TS_INFER ? TS_NSCALAR : kind][ndim];
    t->kind = CT_ARRAY;
    t->scalar = kind;
    t->n = ndim;
    return t;
}

const CcType *
cc_elem_type(const CcType *t)
{
    if (t == NULL || t->kind != CT_ARRAY) {
        return t;
    }
    return t->scalar == TS_INFER ? NULL : cc_scalar_type(t->scalar); /* NULL: not known yet */
}

int
cc_is_array(const CcType *t)
{
    return t != NULL && t->kind == CT_ARRAY;
}

TsKind
cc_storage(const CcType *t)
{
    return t->scalar;
}

int
cc_is_weak(const CcType *t)
{
    return t->kind >= CT_WEAK_INT && t->kind <= CT_WEAK_COMPLEX;
}

const char *
cc_type_name(const CcType *t, char *buf, size_t size)
{
    switch (t->kind) {
    case CT_SCALAR:
        snprintf(buf, size, "%s", ts_kind_name(t->scalar));
        break;
    case CT_WEAK_INT:
        snprintf(buf, size, "int");
        break;
    case CT_WEAK_FLOAT:
        snprintf(buf, size, "float");
        break;
    case CT_WEAK_COMPLEX:
        snprintf(buf, size, "complex");
        break;
    case CT_ARRAY: {
        TsType a = {t->scalar, t->n, 0};
        ts_type_str(&a, buf, size);
        break;
    }
    case CT_TUPLE: {
        size_t used = (size_t)snprintf(buf, size, "tuple(");
        for (int i = 0; i < t->n && used < size; i++) {
            char elem[64];
            used += (size_t)snprintf(buf + used, size - used, "%s%s", i ? ", " : "",
                                     cc_type_name(t->elems[i], elem, sizeof(elem)));
        }
        if (used < size) {
            snprintf(buf + used, size - used, ")");
        }
        break;
    }
    }
    return buf;
}

/* ---- promotion ---- */

static TsKind
int_kind(int is_signed, int bits)
{
    static const TsKind s[] = {TS_INT8, TS_INT16, TS_INT32, TS_INT64};
    static const TsKind u[] = {TS_UINT8, TS_UINT16, TS_UINT32, TS_UINT64};
    int i = bits == 8 ? 0 : bits == 16 ? 1 : bits == 32 ? 2 : 3;
    return is_signed ? s[i] : u[i];
}

static TsKind
inexact_kind(int is_complex, int part_bits)
{
    if (is_complex) {
        return part_bits <= 32 ? TS_COMPLEX64 : TS_COMPLEX128;
    }
    return part_bits <= 32 ? TS_FLOAT32 : TS_FLOAT64;
}

/* np.result_type of two scalar kinds. */
static TsKind
promote_kinds(TsKind a, TsKind b)
{
    if (a == b || b == TS_BOOL) {
        return a;
    }
    if (a == TS_BOOL) {
        return b;
    }
    int ai = ts_is_int(a), bi = ts_is_int(b);
    if (ai && bi) {
        if (ts_is_signed(a) == ts_is_signed(b)) {
            return ts_bits(a) > ts_bits(b) ? a : b;
        }
        TsKind s = ts_is_signed(a) ? a : b, u = ts_is_signed(a) ? b : a;
        if (ts_bits(s) > ts_bits(u)) {
            return s;
        }
        return ts_bits(u) < 64 ? int_kind(1, 2 * ts_bits(u)) : TS_FLOAT64;
    }
    int cplx = ts_is_complex(a) || ts_is_complex(b);
    if (ai || bi) {
        /* an int needs a float wide enough: up to 16 bits fit float32 */
        TsKind i = ai ? a : b, f = ai ? b : a;
        int need = ts_bits(i) <= 16 ? 32 : 64;
        return inexact_kind(cplx, ts_bits(f) > need ? ts_bits(f) : need);
    }
    int bits = ts_bits(a) > ts_bits(b) ? ts_bits(a) : ts_bits(b);
    return inexact_kind(cplx, bits);
}

/* A weak Python value meeting a typed one (NEP 50). */
static TsKind
weak_with(CcTypeKind weak, TsKind k)
{
    switch (weak) {
    case CT_WEAK_INT:
        return k == TS_BOOL ? TS_INT64 : k;
    case CT_WEAK_FLOAT:
        return ts_is_float(k) || ts_is_complex(k) ? k : TS_FLOAT64;
    default:
        if (ts_is_complex(k)) {
            return k;
        }
        return k == TS_FLOAT32 ? TS_COMPLEX64 : TS_COMPLEX128;
    }
}

static int
same_type(const CcType *a, const CcType *b)
{
    if (a->kind != b->kind || a->scalar != b->scalar || a->n != b->n) {
        return 0;
    }
    for (int i = 0; a->kind == CT_TUPLE && i < a->n; i++) { /* an array's n is its ndim */
        if (!same_type(a->elems[i], b->elems[i])) {
            return 0;
        }
    }
    return 1;
}

const CcType *
cc_promote(const CcType *a, const CcType *b)
{
    if (a->kind == CT_TUPLE || b->kind == CT_TUPLE) {
        return same_type(a, b) ? a : NULL; /* tuples unify only when equal */
    }
    if (cc_is_weak(a) && cc_is_weak(b)) {
        return a->kind > b->kind ? a : b;
    }
    if (cc_is_weak(a)) {
        return cc_scalar_type(weak_with(a->kind, b->scalar));
    }
    if (cc_is_weak(b)) {
        return cc_scalar_type(weak_with(b->kind, a->scalar));
    }
    return cc_scalar_type(promote_kinds(a->scalar, b->scalar));
}
