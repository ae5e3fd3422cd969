/*
 * views.c - array views and allocation: indexing and slicing into views,
 * array attributes (a.shape, len, a.T), the arrays a kernel makes (np.zeros,
 * np.empty_like, np.arange, a temporary) and np.ndindex's shapes; the
 * kernel's status returns and the list that frees what it allocated.
 */
#include "compiler/arrays/arrays.h"

#include <stdio.h>
#include <string.h>

/* ======== typing ======== */

/* ---- arrays ---- */

/* The array type of an ND_INDEX/ND_ARRAYATTR operand; else an error
 * (tuples: *tuple set). */
int
ti_array_operand(Infer *in, CcNode *at, CcNode *lhs, const CcType **out)
{
    const CcType *t;
    if (ti_expr(in, lhs, &t) < 0) {
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

int
ti_dtype_owner(Infer *in, CcNode *at, CcNode *lhs, const CcType **out)
{
    if (ti_expr(in, lhs, out) < 0) {
        return -1;
    }
    return *out != UNKNOWN && (*out)->kind == CT_TUPLE ? ti_array_operand(in, at, lhs, out) : 0;
}

/* Whether n is a view of a global NumPy array (a read-only constant):
 * the array itself, a view or element of it, or a variable that was
 * assigned one (CcVar.readonly). */
int
ti_readonly(const CcNode *n)
{
    switch (n == NULL ? ND_BLOCK : n->kind) {
    case ND_CONST:
        return cc_is_array(n->ty);
    case ND_VAR:
    case ND_INLINE:
        return n->var != NULL && n->var->readonly;
    case ND_INDEX:
    case ND_ARRAYATTR:
        return ti_readonly(n->lhs);
    case ND_IFEXP:
        return ti_readonly(n->then) || ti_readonly(n->els);
    case ND_CALL: /* a.reshape(), a.ravel(): a view of a, or a copy */
        return cc_builtin(n->builtin)->flavor == FL_RESHAPE && ti_readonly(n->args[0]);
    default:
        return 0;
    }
}

/* A TypingError at `at` when `target` (an array written to) is read-only:
 * -1, else 0. */
int
ti_check_writable(Infer *in, const CcNode *at, const CcNode *target)
{
    if (!ti_readonly(target)) {
        return 0;
    }
    return cc_error(in->fn, at->loc,
                    "cannot write into a global NumPy array: it is a read-only constant of the "
                    "kernel, frozen when it compiles (write into a copy: a.copy())");
}

/* An integer index (or a slice bound): 0/-1. */
int
ti_integer_index(Infer *in, CcNode *i, const char *what)
{
    const CcType *t;
    if (ti_expr(in, i, &t) < 0) {
        return -1;
    }
    if (t != UNKNOWN && (!ti_is_integral(t) || ti_is_bool(t) || ti_is_tuple(t) || cc_is_array(t))) {
        char name[96];
        return cc_error(in->fn, i->loc, "%s must be integers, not %s%s", what,
                        cc_type_name(t, name, sizeof(name)),
                        cc_is_array(t) ? " (indexing by arrays is not supported yet)" : "");
    }
    return ti_fit_const(in, i, cc_scalar_type(TS_INT64));
}

/*
 * index := a[item, ...]     a: an array of d dimensions
 *   item: an integer (takes a dimension away), a slice (keeps it), None
 *   (adds one of length 1), ... (every dimension not indexed otherwise), or
 *   one tuple of integers (a[idx]).  Dimensions left unindexed are kept
 *   whole.  All integers and no slice, None or ...: an element; else a view.
 */
int
ti_array_index(Infer *in, CcNode *n, const CcType **out)
{
    const CcType *a;
    *out = UNKNOWN;
    if (ti_array_operand(in, n, n->lhs, &a) < 0) {
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
                if (parts[k] != NULL && ti_integer_index(in, parts[k], "slice bounds") < 0) {
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
            if (ti_expr(in, item, &t) < 0) {
                return -1;
            }
            if (n->nargs == 1 && t != UNKNOWN && ti_is_tuple(t)) {
                /* a[idx], idx a tuple of integers */
                for (int k = 0; k < t->n; k++) {
                    if (!ti_is_integral(t->elems[k]) || ti_is_bool(t->elems[k])) {
                        return ti_type_error(in, item, "indexing by the tuple", t, NULL);
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
                && ti_is_integral(cc_scalar_type(t->scalar))) {
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
            if (ti_integer_index(in, item, "array indices") < 0) {
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
int
ti_array_attr(Infer *in, CcNode *n, const CcType **out)
{
    const CcType *a = UNKNOWN;
    *out = UNKNOWN;
    if (n->index == AA_LEN) {
        /* len(tuple) is a constant; n->lhs->ty tells emit.c which it is */
        if (ti_expr(in, n->lhs, &a) < 0) {
            return -1;
        }
        if (a != UNKNOWN && a->kind == CT_TUPLE) {
            *out = cc_weak_type(CT_WEAK_INT);
            return 0;
        }
    }
    int owner = n->index == AA_KIND_IS || n->index == AA_DTYPE_IS || n->index == AA_NDIM;
    /* a NumPy scalar has a dtype too (a Python number: its stored kind,
     * int64, float64, complex128, as NumPy converts it), and ndim 0 */
    if ((owner ? ti_dtype_owner : ti_array_operand)(in, n, n->lhs, &a) < 0 || a == UNKNOWN) {
        return a == UNKNOWN && !PyErr_Occurred() ? 0 : -1;
    }
    if (a->kind != CT_ARRAY) {
        *out = n->index == AA_NDIM ? cc_weak_type(CT_WEAK_INT) : cc_scalar_type(TS_BOOL);
        return 0;
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

/* An integer argument of an array function (a dimension). */
static int
dimension(Infer *in, CcNode *d)
{
    return ti_integer_index(in, d, "array dimensions");
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
        if (ti_dtype_owner(in, n, n->rhs, &t) < 0) {
            return -1;
        }
        *out = t == UNKNOWN || t->scalar == TS_INFER ? TS_INFER : t->scalar;
    }
    return 0;
}

/*
 * array_function := np.empty/zeros/ones(shape, dtype=)       an array of shape
 *             | np.full(shape, fill, dtype=)             (an int or a tuple)
 *             | np.empty_like(a, dtype=) ... a.copy()    a's shape
 *             | np.sum(a), a.max(), ...                  a scalar
 *   Arrays are allocated only in guvectorize kernels, which can report that
 *   memory ran out.
 */
int
ti_array_function(Infer *in, CcNode *n, const CcBuiltin *b, const CcType **out)
{
    const CcType *t;
    *out = UNKNOWN;
    if (b->flavor == FL_LIKE && b->op == AL_COPY && (n->index > 0 || n->rhs != NULL)) {
        /* x.astype(dtype) of a NumPy scalar: the cast, as dtype.type(x) */
        if (ti_expr(in, n->args[0], &t) < 0) {
            return -1;
        }
        if (t != UNKNOWN && t->kind != CT_TUPLE && !cc_is_array(t)) {
            n->builtin = cc_builtin_cast(n->index > 0 ? (TsKind)(n->index - 1) : TS_FLOAT64);
            n->index = 0;
            return ti_expr(in, n, out);
        }
    }
    if (b->flavor != FL_REDUCE && !in->gufunc) {
        return cc_error(in->fn, n->loc,
                        "%s() allocates an array, which only a guvectorize kernel can do", b->name);
    }
    if (ti_expr(in, n->args[0], &t) < 0) {
        return -1;
    }
    const CcType *fill = UNKNOWN;
    int full = b->flavor != FL_REDUCE && b->op == AL_FULL;
    if (full && ti_expr(in, n->args[1], &fill) < 0) {
        return -1;
    }
    if (fill != UNKNOWN && (ti_is_tuple(fill) || cc_is_array(fill))) {
        return ti_type_error(in, n->args[1], "a fill value", fill, NULL);
    }
    if (t == UNKNOWN) {
        return 0;
    }
    int ndim = 0;
    TsKind elem = TS_FLOAT64;
    if (b->flavor == FL_ALLOC) {
        if (ti_is_tuple(t)) {
            if (n->args[0]->kind == ND_TUPLE) {
                for (int i = 0; i < n->args[0]->nargs; i++) {
                    if (dimension(in, n->args[0]->args[i]) < 0) {
                        return -1;
                    }
                }
            }
            for (int i = 0; i < t->n; i++) {
                if (!ti_is_integral(t->elems[i]) || ti_is_bool(t->elems[i])) {
                    return ti_type_error(in, n->args[0], "a shape of", t, NULL);
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
    } else if (b->flavor == FL_REDUCE && !ti_is_tuple(t) && !cc_is_array(t) && n->index != 1) {
        elem = cc_storage(t); /* np.max(x) of a scalar: x, as a 0-d array */
    } else {
        if (!cc_is_array(t)) {
            char name[96];
            return cc_error(in->fn, n->args[0]->loc,
                            n->index == 1 ? "%s has no method %s(): it is not an array"
                                          : "%s() of %s: this function takes arrays",
                            n->index == 1 ? cc_type_name(t, name, sizeof(name)) : b->name,
                            n->index != 1       ? cc_type_name(t, name, sizeof(name))
                            : b->name[0] == '.' ? b->name
                                                : b->name + strlen("numpy"));
        }
        if (t->scalar == TS_INFER) {
            return 0;
        }
        ndim = b->flavor == FL_LIKE && b->op == AL_FLATTEN ? 1 : t->n;
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
            elem = ti_sum_kind(elem);
            break;
        default:
            break;
        }
        if (ts_is_complex(in_kind) && b->op != R_SUM && b->op != R_PROD && b->op != R_MEAN
            && b->op != R_ANY && b->op != R_ALL && b->op != R_VAR && b->op != R_STD) {
            return ti_type_error(in, n, b->name, t, NULL);
        }
        if (b->op == R_CUMSUM || b->op == R_CUMPROD) {
            if (!cc_is_array(t)) {
                return cc_error(in->fn, n->loc, "%s() takes an array", b->name);
            }
            if (n->nargs == 2) {
                return ti_reduce_axis(in, n, b, ndim, elem, out);
            }
            in->fn->allocates = 1;
            *out = cc_array_type(elem, 1); /* flattened, as NumPy's without an axis */
            return 0;
        }
        *out = cc_scalar_type(elem);
        return n->nargs == 2 ? ti_reduce_axis(in, n, b, ndim, elem, out) : 0;
    }
    if (call_dtype(in, n, elem, &elem) < 0) {
        return -1;
    }
    if (elem == TS_INFER) {
        return 0;
    }
    if (fill != UNKNOWN) {
        if (ti_is_complex_type(fill) && !ts_is_complex(elem)) {
            char name[96];
            return cc_error(in->fn, n->args[1]->loc, "cannot fill an array of %s with %s",
                            ts_kind_name(elem), cc_type_name(fill, name, sizeof(name)));
        }
        if (ti_fit_const(in, n->args[1], cc_scalar_type(elem)) < 0) {
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
int
ti_shape_call(Infer *in, CcNode *n, const CcBuiltin *b, const CcType **out)
{
    CcNode *shape = n->args[n->nargs - 1];
    const CcType *t;
    *out = UNKNOWN;
    if ((b->flavor == FL_UNRAVEL && ti_integer_index(in, n->args[0], "indices") < 0)
        || ti_expr(in, shape, &t) < 0 || t == UNKNOWN) {
        return PyErr_Occurred() ? -1 : 0;
    }
    int nd = ti_is_tuple(t) ? t->n : 1;
    for (int i = 0; i < nd; i++) {
        const CcType *e = ti_is_tuple(t) ? t->elems[i] : t;
        if (!ti_is_integral(e) || ti_is_bool(e) || ti_is_tuple(e) || cc_is_array(e)) {
            return ti_type_error(in, shape, "np.ndindex() of", t, NULL);
        }
    }
    if (!ti_is_tuple(t) && ti_fit_const(in, shape, cc_scalar_type(TS_INT64)) < 0) {
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
 * arange := np.arange([start,] stop[, step], dtype=)    a new 1-d array
 *   of the arguments' promotion (ints: int64, floats: float64) or dtype.
 */
int
ti_arange_call(Infer *in, CcNode *n, const CcBuiltin *b, const CcType **out)
{
    const CcType *t;
    *out = UNKNOWN;
    if (ti_promote_all(in, n->args, n->nargs, &t) < 0) {
        return -1;
    }
    if (t == UNKNOWN) {
        return 0;
    }
    if (ti_is_tuple(t) || cc_is_array(t) || ti_is_complex_type(t)) {
        return ti_type_error(in, n, "np.arange() of", t, NULL);
    }
    TsKind elem = ti_is_integral(t)
                      ? (t->kind == CT_WEAK_INT || ti_is_bool(t) ? TS_INT64 : t->scalar)
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
    if (ti_fit_consts(in, n->args, n->nargs, ti_is_integral(t) ? cc_scalar_type(TS_INT64) : t)
        < 0) {
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
    return ti_array_function(in, n, b, out);
}

/* ======== emission ======== */

enum { HEADER = 16 }; /* bytes before an allocated array's data: the list link */

/* v's lo and hi, made its own span where they are not known. */
void
em_within(Emit *E, View *v)
{
    if (v->lo == NULL) {
        LLVMValueRef empty;
        em_span(E, v, &v->lo, &v->hi, &empty);
    }
}

LLVMValueRef
em_view_pack(Emit *E, const View *view)
{
    View w = *view, *v = &w;
    em_within(E, v);
    LLVMValueRef s = LLVMGetUndef(em_array_type(E, v->ndim));
    s = LLVMBuildInsertValue(E->b, s, v->data, 0, "view");
    LLVMValueRef shape = LLVMGetUndef(LLVMArrayType2(em_i64_type(E), (unsigned long long)v->ndim));
    LLVMValueRef stride = shape;
    for (int k = 0; k < v->ndim; k++) {
        shape = LLVMBuildInsertValue(E->b, shape, v->shape[k], (unsigned)k, "shape");
        stride = LLVMBuildInsertValue(E->b, stride, v->stride[k], (unsigned)k, "strides");
    }
    s = LLVMBuildInsertValue(E->b, s, shape, 1, "view");
    s = LLVMBuildInsertValue(E->b, s, stride, 2, "view");
    s = LLVMBuildInsertValue(E->b, s, v->lo, 3, "view");
    return LLVMBuildInsertValue(E->b, s, v->hi, 4, "view");
}

static void
view_unpack(Emit *E, LLVMValueRef s, const CcType *t, View *v)
{
    v->ndim = t->n;
    v->kind = t->scalar;
    v->data = LLVMBuildExtractValue(E->b, s, 0, "data");
    LLVMValueRef shape = LLVMBuildExtractValue(E->b, s, 1, "shape");
    LLVMValueRef stride = LLVMBuildExtractValue(E->b, s, 2, "strides");
    v->lo = LLVMBuildExtractValue(E->b, s, 3, "lo");
    v->hi = LLVMBuildExtractValue(E->b, s, 4, "hi");
    for (int k = 0; k < t->n; k++) {
        v->shape[k] = LLVMBuildExtractValue(E->b, shape, (unsigned)k, "dim");
        v->stride[k] = LLVMBuildExtractValue(E->b, stride, (unsigned)k, "stride");
    }
}

/* A gufunc parameter's view from its LLVM parameters (data, shape...,
 * strides...); unit_last: the last stride is the item size. */
LLVMValueRef
em_param_view(Emit *E, const CcType *t, LLVMValueRef *params, int unit_last)
{
    View v = {.ndim = t->n, .kind = t->scalar, .data = params[0]};
    for (int k = 0; k < t->n; k++) {
        v.shape[k] = params[1 + k];
        v.stride[k] = params[1 + t->n + k];
    }
    if (unit_last && t->n > 0) {
        v.stride[t->n - 1] = em_i64c(E, ts_itemsize(t->scalar));
    }
    return em_view_pack(E, &v);
}

/* ---- returns and failed checks ---- */

/* Returns status from the kernel: through the block that frees what the
 * call allocated, when it allocates.  Ends the insertion block. */
void
em_return_status(Emit *E, LLVMValueRef status)
{
    if (E->alloc_head == NULL) {
        LLVMBuildRet(E->b, status);
        E->reachable = 0;
        return;
    }
    LLVMBuildStore(E->b, status, E->status_slot);
    LLVMBuildBr(E->b, E->cleanup);
    E->reachable = 0;
}

/* The block that returns `status` (made once per status). */
static LLVMBasicBlockRef
fail_block(Emit *E, int status)
{
    E->fn->fails |= 1u << status;
    if (E->fail[status] == NULL) {
        LLVMBasicBlockRef here = LLVMGetInsertBlock(E->b);
        int reachable = E->reachable;
        E->fail[status] = em_new_block(E, "fail");
        LLVMPositionBuilderAtEnd(E->b, E->fail[status]);
        em_return_status(E, LLVMConstInt(LLVMInt32TypeInContext(E->ctx), (unsigned)status, 0));
        LLVMPositionBuilderAtEnd(E->b, here);
        E->reachable = reachable;
    }
    return E->fail[status];
}

/* A scalar kernel's failed bounds check: it raises the IndexError of its
 * site (resolve.c), stored as raise_stmt stores a raise's, when bad holds. */
static void
index_raise(Emit *E, LLVMValueRef bad)
{
    LLVMBasicBlockRef ok = em_new_block(E, "ok"), fail = em_new_block(E, "oob");
    LLVMBuildCondBr(E->b, bad, fail, ok);
    LLVMPositionBuilderAtEnd(E->b, fail);
    LLVMValueRef site = LLVMBuildGlobalString(E->b, E->fn->index_site, "raise.site");
    LLVMBuildStore(E->b, LLVMBuildPtrToInt(E->b, site, em_i64_type(E), ""), E->raise_slot);
    LLVMBuildRet(E->b, LLVMConstNull(cc_value_type(E->ctx, cc_storage(E->fn->ret))));
    LLVMPositionBuilderAtEnd(E->b, ok);
}

/* Ends the kernel with status when bad (an i1) holds; goes on otherwise. */
void
em_check(Emit *E, LLVMValueRef bad, int status)
{
    if (!E->gufunc && status == CC_STATUS_INDEX && E->raise_slot != NULL
        && E->fn->index_site != NULL) {
        index_raise(E, bad); /* a global array indexed in a scalar kernel */
        return;
    }
    if (!E->gufunc) {
        /* a scalar kernel has no status to return; only checks that cannot
         * fail reach it (a reduction of a scalar: one element) */
        return;
    }
    LLVMBasicBlockRef ok = em_new_block(E, "ok");
    LLVMBuildCondBr(E->b, bad, fail_block(E, status), ok);
    LLVMPositionBuilderAtEnd(E->b, ok);
}

/* Sets up the allocation list of a kernel that allocates (fn->allocates),
 * in its entry block. */
void
em_alloc_begin(Emit *E)
{
    if (!E->fn->allocates || E->fn->device) {
        return;
    }
    LLVMTypeRef ptr = LLVMPointerTypeInContext(E->ctx, 0);
    E->alloc_head = LLVMBuildAlloca(E->b, ptr, "alloc.head");
    LLVMBuildStore(E->b, LLVMConstNull(ptr), E->alloc_head);
    E->status_slot = LLVMBuildAlloca(E->b, LLVMInt32TypeInContext(E->ctx), "status");
    E->cleanup = em_new_block(E, "cleanup");
}

LLVMValueRef
em_libc_function(Emit *E, const char *name, LLVMTypeRef ret, LLVMTypeRef *params, unsigned n)
{
    LLVMTypeRef fty = LLVMFunctionType(ret, params, n, 0);
    LLVMValueRef f = LLVMGetNamedFunction(E->mod, name);
    if (f == NULL) {
        f = LLVMAddFunction(E->mod, name, fty);
        cc_add_fn_attr(f, "nounwind");
    }
    return f;
}

/* The cleanup block: frees the allocation list, returns the status. */
void
em_alloc_end(Emit *E)
{
    if (E->alloc_head == NULL) {
        return;
    }
    LLVMTypeRef ptr = LLVMPointerTypeInContext(E->ctx, 0);
    LLVMValueRef f = em_libc_function(E, "free", LLVMVoidTypeInContext(E->ctx), &ptr, 1);
    LLVMPositionBuilderAtEnd(E->b, E->cleanup);
    LLVMBasicBlockRef loop = em_new_block(E, "free.loop"), done = em_new_block(E, "free.done");
    LLVMBuildBr(E->b, loop);
    LLVMPositionBuilderAtEnd(E->b, loop);
    LLVMValueRef p = LLVMBuildLoad2(E->b, ptr, E->alloc_head, "p");
    LLVMBasicBlockRef body = em_new_block(E, "free.one");
    LLVMBuildCondBr(E->b, LLVMBuildIsNull(E->b, p, "end"), done, body);
    LLVMPositionBuilderAtEnd(E->b, body);
    LLVMBuildStore(E->b, LLVMBuildLoad2(E->b, ptr, p, "next"), E->alloc_head);
    LLVMBuildCall2(E->b, LLVMGlobalGetValueType(f), f, &p, 1, "");
    LLVMBuildBr(E->b, loop);
    LLVMPositionBuilderAtEnd(E->b, done);
    LLVMBuildRet(E->b, LLVMBuildLoad2(E->b, LLVMInt32TypeInContext(E->ctx), E->status_slot, "st"));
}

/* ---- allocation ---- */

enum { LOCAL_ARRAY_LIMIT = 16384 }; /* bytes of one local array in a cuda kernel */

/*
 * An array in a cuda kernel: a local array (an alloca in the entry block),
 * so its shape must be known when the kernel is compiled (literals, frozen
 * dimensions), and it must be made outside loops (one alloca serves every
 * call of the block; in a loop, the arrays of two iterations would be one).
 */
static int
local_array(Emit *E, CcNode *at, TsKind k, int ndim, LLVMValueRef *shape, View *v)
{
    unsigned long long bytes = (unsigned long long)ts_itemsize(k);
    for (int d = 0; d < ndim; d++) {
        if (LLVMIsAConstantInt(shape[d]) == NULL) {
            return cc_error(E->fn, at->loc,
                            "an array made in a cuda kernel is a local array: its shape must be "
                            "known when the kernel is compiled (literals such as np.zeros(4) or "
                            "np.empty((3, 3))), not computed from the arguments");
        }
        long long n = LLVMConstIntGetSExtValue(shape[d]);
        if (n < 0 || (n > 0 && bytes > LOCAL_ARRAY_LIMIT / (unsigned long long)n)) {
            return cc_error(E->fn, at->loc,
                            n < 0 ? "a negative dimension"
                                  : "a local array in a cuda kernel holds at most %d bytes",
                            LOCAL_ARRAY_LIMIT);
        }
        bytes *= (unsigned long long)n;
    }
    if (E->depth > 0) {
        return cc_error(E->fn, at->loc,
                        "a cuda kernel makes its local arrays outside loops (make it before the "
                        "loop and fill it in the loop)");
    }
    LLVMTypeRef t = LLVMArrayType2(LLVMInt8TypeInContext(E->ctx), bytes > 0 ? bytes : 1);
    v->data = em_entry_alloca(E, t, "local");
    LLVMSetAlignment(v->data, 16);
    v->ndim = ndim;
    v->kind = k;
    v->lo = v->hi = NULL;
    LLVMValueRef stride = em_i64c(E, ts_itemsize(k));
    for (int d = ndim - 1; d >= 0; d--) {
        v->shape[d] = shape[d];
        v->stride[d] = stride;
        stride = LLVMBuildNSWMul(E->b, stride, shape[d], "stride");
    }
    return 0;
}

/* A new C-contiguous array of kind k and shape[ndim]: a negative dimension
 * or a size past int64 bytes ends the kernel with CC_STATUS_VALUE (as
 * NumPy), a size past 2**60 bytes or an allocation that fails with
 * CC_STATUS_NOMEM. */
int
em_alloc_array(Emit *E, CcNode *at, TsKind k, int ndim, LLVMValueRef *shape, View *v)
{
    if (E->fn->device) {
        return local_array(E, at, k, ndim, shape, v);
    }
    if (E->alloc_head == NULL) {
        return cc_error(E->fn, at->loc,
                        "internal error: an allocation in a kernel that was not typed as "
                        "allocating");
    }
    LLVMTypeRef i64 = em_i64_type(E);
    v->ndim = ndim;
    v->kind = k;
    memcpy(v->shape, shape, sizeof(LLVMValueRef) * (size_t)ndim);
    LLVMValueRef bytes = em_shape_bytes(E, shape, ndim, ts_itemsize(k), v->stride);
    em_check(E, LLVMBuildICmp(E->b, LLVMIntUGT, bytes, em_i64c(E, (long long)1 << 60), "huge"),
             CC_STATUS_NOMEM);
    LLVMTypeRef ptr = LLVMPointerTypeInContext(E->ctx, 0);
    LLVMValueRef malloc_fn = em_libc_function(E, "malloc", ptr, &i64, 1);
    LLVMValueRef size = LLVMBuildAdd(E->b, bytes, em_i64c(E, HEADER), "size");
    LLVMValueRef p =
        LLVMBuildCall2(E->b, LLVMGlobalGetValueType(malloc_fn), malloc_fn, &size, 1, "block");
    em_check(E, LLVMBuildIsNull(E->b, p, "nomem"), CC_STATUS_NOMEM);
    LLVMBuildStore(E->b, LLVMBuildLoad2(E->b, ptr, E->alloc_head, "head"), p);
    LLVMBuildStore(E->b, p, E->alloc_head);
    LLVMValueRef off = em_i64c(E, HEADER);
    v->data = LLVMBuildGEP2(E->b, LLVMInt8TypeInContext(E->ctx), p, &off, 1, "array");
    v->lo = LLVMBuildPtrToInt(E->b, v->data, i64, "lo");
    v->hi = LLVMBuildAdd(E->b, v->lo, bytes, "hi");
    return 0;
}

/* ---- views ---- */

/* Whether n reads a range loop's variable (emit.c marks it). */
static int
is_counter(const CcNode *n)
{
    return n->kind == ND_VAR && n->var->counter;
}

/* The integer indices an index item stands for (one, or a tuple's
 * items), each of its own kind. */
static int
item_integers(Emit *E, CcNode *item, LLVMValueRef *out, TsKind *kinds, int *n)
{
    LLVMValueRef t = em_expr(E, item);
    if (t == NULL) {
        return -1;
    }
    if (item->ty->kind == CT_TUPLE) {
        for (int k = 0; k < item->ty->n; k++) {
            out[k] = LLVMBuildExtractValue(E->b, t, (unsigned)k, "i");
            kinds[k] = cc_storage(item->ty->elems[k]);
        }
        *n = item->ty->n;
        return 0;
    }
    *n = 1;
    out[0] = t;
    kinds[0] = cc_storage(item->ty);
    return 0;
}

/* The view a[items] (n an ND_INDEX): *element when it is one element
 * (v->data then addresses it). */
int
em_index_view(Emit *E, CcNode *n, View *v, int *element)
{
    View a;
    if (em_view_of(E, n->lhs, &a) < 0) {
        return -1;
    }
    int consumed = 0;
    for (int i = 0; i < n->nargs; i++) {
        CcNode *item = n->args[i];
        if (item->kind == ND_SLICE || (item->kind != ND_NEWAXIS && item->kind != ND_ELLIPSIS)) {
            consumed += item->kind != ND_SLICE && item->ty->kind == CT_TUPLE ? item->ty->n : 1;
        }
    }
    v->kind = a.kind;
    v->ndim = 0;
    v->lo = v->hi = NULL;
    *element = 1;
    LLVMValueRef offset = em_i64c(E, 0);
    int d = 0;
    for (int i = 0; i < n->nargs; i++) {
        CcNode *item = n->args[i];
        switch (item->kind) {
        case ND_SLICE: {
            LLVMValueRef start, count, step;
            if (em_slice_bounds(E, item, a.shape[d], &start, &count, &step) < 0) {
                return -1;
            }
            offset = LLVMBuildAdd(E->b, offset, LLVMBuildMul(E->b, start, a.stride[d], ""), "off");
            v->shape[v->ndim] = count;
            v->stride[v->ndim++] = LLVMBuildMul(E->b, a.stride[d], step, "stride");
            d++;
            *element = 0;
            break;
        }
        case ND_NEWAXIS:
            v->shape[v->ndim] = em_i64c(E, 1);
            v->stride[v->ndim++] = em_i64c(E, 0);
            *element = 0;
            break;
        case ND_ELLIPSIS:
            for (int k = 0; k < a.ndim - consumed; k++, d++) {
                v->shape[v->ndim] = a.shape[d];
                v->stride[v->ndim++] = a.stride[d];
            }
            *element = 0;
            break;
        default: {
            LLVMValueRef idx[TS_MAXDIMS];
            TsKind kinds[TS_MAXDIMS];
            int k;
            if (item_integers(E, item, idx, kinds, &k) < 0) {
                return -1;
            }
            for (int j = 0; j < k; j++, d++) {
                LLVMValueRef at =
                    em_wrap_index(E, idx[j], kinds[j], a.shape[d], k == 1 && is_counter(item));
                offset = LLVMBuildNSWAdd(
                    E->b, offset, LLVMBuildNSWMul(E->b, at, a.stride[d], "idx.bytes"), "off");
            }
        }
        }
    }
    for (; d < a.ndim; d++) {
        v->shape[v->ndim] = a.shape[d];
        v->stride[v->ndim++] = a.stride[d];
        *element = 0;
    }
    LLVMTypeRef i8 = LLVMInt8TypeInContext(E->ctx);
    v->data = *element && E->fn->boundscheck
                  ? LLVMBuildInBoundsGEP2(E->b, i8, a.data, &offset, 1, "elem")
                  : LLVMBuildGEP2(E->b, i8, a.data, &offset, 1, "view");
    if (!*element) {
        em_within(E, &a); /* a view lies in its array */
        v->lo = a.lo;
        v->hi = a.hi;
    }
    return 0;
}
static int alloc_call(Emit *E, CcNode *n, View *v);

/* The reductions along an axis that reduce each line of it as a whole
 * array (em_axis_lines), where the others combine elements (em_axis_reduce). */
static int
needs_lines(CcReduceOp op)
{
    switch (op) {
    case R_ARGMIN:
    case R_ARGMAX:
    case R_NANMEAN:
    case R_VAR:
    case R_STD:
    case R_CUMSUM:
    case R_CUMPROD:
        return 1;
    default:
        return 0;
    }
}
static int arange_view(Emit *E, CcNode *n, View *v);

/* The elementwise operations: their values are computed by element. */
int
em_is_elementwise_node(const CcNode *n)
{
    if (!cc_is_array(n->ty)) {
        return 0;
    }
    switch (n->kind) {
    case ND_BINOP:
    case ND_UNARY:
    case ND_COMPARE:
        return 1;
    case ND_CALL:
        return cc_flavor_elementwise(cc_builtin(n->builtin)->flavor);
    case ND_INLINE:
        return n->lifted; /* a numbavec ufunc applied to arrays */
    default:
        return 0;
    }
}

/* a[mask], mask a boolean array. */
int
em_is_mask_index(const CcNode *n)
{
    return n->kind == ND_INDEX && n->nargs == 1 && cc_is_array(n->args[0]->ty)
           && n->args[0]->ty->scalar == TS_BOOL;
}

/* a[idx], idx an array of integers */
int
em_is_fancy_index(const CcNode *n)
{
    return n->kind == ND_INDEX && n->nargs == 1 && cc_is_array(n->args[0]->ty)
           && n->args[0]->ty->scalar != TS_BOOL;
}

static int const_view(Emit *E, CcNode *n, View *v);

/* The view an array-typed node evaluates to. */
int
em_view_of(Emit *E, CcNode *n, View *v)
{
    if (n->kind == ND_VIEW) {
        *v = *(const View *)n->view;
        return 0;
    }
    if (em_is_mask_index(n)) {
        return em_mask_read(E, n, v);
    }
    if (em_is_fancy_index(n)) {
        return em_fancy_read(E, n, v);
    }
    if (n->kind == ND_INDEX) {
        int element;
        return em_index_view(E, n, v, &element);
    }
    if (n->kind == ND_ARRAYATTR && n->index == AA_T) {
        View a;
        if (em_view_of(E, n->lhs, &a) < 0) {
            return -1;
        }
        *v = a;
        for (int k = 0; k < a.ndim; k++) {
            v->shape[k] = a.shape[a.ndim - 1 - k];
            v->stride[k] = a.stride[a.ndim - 1 - k];
        }
        return 0;
    }
    if (em_is_elementwise_node(n)) {
        return em_materialize(E, n, v);
    }
    if (n->kind == ND_CALL) {
        const CcBuiltin *b = cc_builtin(n->builtin);
        if (b->flavor == FL_REDUCE && n->nargs == 2 && needs_lines((CcReduceOp)b->op)) {
            return em_axis_lines(E, n, v);
        }
        if (b->flavor == FL_REDUCE && (b->op == R_CUMSUM || b->op == R_CUMPROD)) {
            return em_cumulate(E, n, v);
        }
        if (b->flavor == FL_SORT) {
            return em_sort_view(E, n, v);
        }
        if (b->flavor == FL_DOT) {
            return em_dot_view(E, n, v);
        }
        if (b->flavor == FL_ARANGE) {
            return arange_view(E, n, v);
        }
        if (b->flavor == FL_RESHAPE) {
            return em_reshape_view(E, n, v);
        }
        if (b->flavor == FL_ARRAY) {
            return em_array_of(E, n, v);
        }
        return b->flavor == FL_REDUCE ? em_axis_reduce(E, n, v) : alloc_call(E, n, v);
    }
    if (n->kind == ND_CONST) {
        return const_view(E, n, v);
    }
    LLVMValueRef s = em_expr(E, n); /* a variable, an inlined function's result */
    if (s == NULL) {
        return -1;
    }
    view_unpack(E, s, n->ty, v);
    return 0;
}

/*
 * A global NumPy array (resolve.c's array_const): its bytes are a private,
 * unnamed_addr constant of the module, one per frozen array, viewed
 * C-contiguous with its shape and strides as constants.  A cuda kernel
 * has none yet (NVVM wants it in the constant address space).
 */
static int
const_view(Emit *E, CcNode *n, View *v)
{
    PyArrayObject *a = (PyArrayObject *)n->pyint;
    if (E->fn->device) {
        return cc_error(E->fn, n->loc,
                        "a global NumPy array cannot be read in a cuda kernel yet (pass it "
                        "as an argument)");
    }
    if (PyArray_NBYTES(a) > INT32_MAX) {
        return cc_error(E->fn, n->loc,
                        "a global NumPy array of more than 2 GiB cannot be a kernel's constant");
    }
    char name[64];
    snprintf(name, sizeof(name), "nv.global.%p", (void *)a);
    LLVMValueRef g = LLVMGetNamedGlobal(E->mod, name);
    if (g == NULL) {
        LLVMValueRef bytes =
            LLVMConstStringInContext(E->ctx, PyArray_BYTES(a), (unsigned)PyArray_NBYTES(a), 1);
        g = LLVMAddGlobal(E->mod, LLVMTypeOf(bytes), name);
        LLVMSetInitializer(g, bytes);
        LLVMSetGlobalConstant(g, 1);
        LLVMSetLinkage(g, LLVMPrivateLinkage);
        LLVMSetUnnamedAddress(g, LLVMGlobalUnnamedAddr);
        LLVMSetAlignment(g, 64);
    }
    *v = (View){.ndim = n->ty->n, .kind = n->ty->scalar, .data = g};
    for (int k = 0; k < v->ndim; k++) {
        v->shape[k] = em_i64c(E, (long long)PyArray_DIM(a, k));
        v->stride[k] = em_i64c(E, (long long)PyArray_STRIDE(a, k));
    }
    return 0;
}

LLVMValueRef
em_array_expr(Emit *E, CcNode *n)
{
    View v;
    return em_view_of(E, n, &v) == 0 ? em_view_pack(E, &v) : NULL;
}

/* a[i, j]: the element's value, or the view. */
LLVMValueRef
em_index(Emit *E, CcNode *n)
{
    View v;
    int element;
    if (em_is_mask_index(n) || em_is_fancy_index(n)) {
        return em_view_of(E, n, &v) == 0 ? em_view_pack(E, &v) : NULL;
    }
    if (em_index_view(E, n, &v, &element) < 0) {
        return NULL;
    }
    if (!element) {
        return em_view_pack(E, &v);
    }
    return cc_load(E->b, v.kind, v.data, "elem");
}

/* CC_STATUS_TRUTH unless the ndim dimensions of shape make one element. */
static void
check_one_element(Emit *E, const LLVMValueRef *shape, int ndim)
{
    LLVMValueRef size = em_i64c(E, 1);
    for (int k = 0; k < ndim; k++) {
        size = LLVMBuildMul(E->b, size, shape[k], "size");
    }
    LLVMValueRef one = LLVMBuildICmp(E->b, LLVMIntEQ, size, em_i64c(E, 1), "one");
    em_check(E, LLVMBuildNot(E->b, one, "ambiguous"), CC_STATUS_TRUTH);
}

/* The walk's one element, kept in w->ctx (an alloca). */
static int
keep_element(Emit *E, Walk *w, LLVMValueRef value)
{
    LLVMBuildStore(E->b, value, w->ctx);
    return 0;
}

LLVMValueRef
em_array_truth(Emit *E, CcNode *cond)
{
    TsKind k = cond->ty->scalar;
    if (!em_is_elementwise_node(cond)) {
        View v;
        if (em_view_of(E, cond, &v) < 0) {
            return NULL;
        }
        check_one_element(E, v.shape, v.ndim);
        return em_truthy(E, cc_load(E->b, v.kind, v.data, "truth.of"), v.kind);
    }
    /* `while new <= remainder`: the expression's one element computed in
     * place, not into an array made for it at each test */
    Walk w = {.visit = keep_element};
    if (em_collect_expr(E, &w, cond) < 0) {
        return NULL;
    }
    w.ndim = cond->ty->n;
    w.target.data = NULL;
    em_broadcast(E, &w);
    check_one_element(E, w.shape, w.ndim);
    w.ctx = em_entry_alloca(E, cc_value_type(E->ctx, k), "truth.slot");
    if (em_run_collected(E, &w) < 0) {
        return NULL;
    }
    return em_truthy(E, LLVMBuildLoad2(E->b, cc_value_type(E->ctx, k), w.ctx, "truth.of"), k);
}

int
em_unpack_view(Emit *E, CcNode *rhs, int n, LLVMValueRef *items)
{
    View v;
    if (em_view_of(E, rhs, &v) < 0) {
        return -1;
    }
    em_check(E, LLVMBuildICmp(E->b, LLVMIntNE, v.shape[0], em_i64c(E, n), "unpack.len"),
             CC_STATUS_UNPACK);
    for (int i = 0; i < n; i++) {
        LLVMValueRef idx = em_i64c(E, i);
        LLVMValueRef at = em_address(E, v.data, v.stride, &idx, 0, 1);
        items[i] = cc_load(E->b, v.kind, at, "unpacked");
    }
    return 0;
}

LLVMValueRef
em_array_attr(Emit *E, CcNode *n)
{
    if (n->index == AA_T) {
        return em_array_expr(E, n);
    }
    if (n->index == AA_KIND_IS || n->index == AA_DTYPE_IS) {
        /* a constant of the typed element kind: nothing is evaluated */
        return LLVMConstInt(LLVMInt1TypeInContext(E->ctx),
                            (unsigned)cc_dtype_test(n, n->lhs->ty->scalar), 0);
    }
    const CcType *t = n->lhs->ty;
    if (t->kind == CT_TUPLE) {
        return em_i64c(E, t->n); /* len(tuple) */
    }
    if (t->kind != CT_ARRAY) {
        return em_i64c(E, 0); /* a scalar's ndim */
    }
    View a;
    if (em_view_of(E, n->lhs, &a) < 0) {
        return NULL;
    }
    switch ((CcArrayAttr)n->index) {
    case AA_LEN:
        return a.shape[0];
    case AA_NDIM:
        return em_i64c(E, a.ndim);
    case AA_ITEMSIZE:
        return em_i64c(E, ts_itemsize(a.kind));
    case AA_KIND_IS:
    case AA_DTYPE_IS:
        break; /* above */
    case AA_SIZE: {
        LLVMValueRef size = em_i64c(E, 1);
        for (int k = 0; k < a.ndim; k++) {
            size = LLVMBuildMul(E->b, size, a.shape[k], "size");
        }
        return size;
    }
    case AA_SHAPE:
    case AA_STRIDES: {
        LLVMValueRef v = LLVMGetUndef(em_type_of(E, n->ty));
        for (int k = 0; k < a.ndim; k++) {
            v = LLVMBuildInsertValue(E->b, v, n->index == AA_SHAPE ? a.shape[k] : a.stride[k],
                                     (unsigned)k, "shape");
        }
        return v;
    }
    case AA_T:
        break;
    }
    return NULL;
}

/* np.empty/zeros/ones/full(shape, ...), np.*_like(a, ...), a.copy(). */
static int
alloc_call(Emit *E, CcNode *n, View *v)
{
    const CcBuiltin *b = cc_builtin(n->builtin);
    LLVMValueRef shape[TS_MAXDIMS];
    int ndim = n->ty->n;
    View src = {0};
    if (b->flavor == FL_ALLOC) {
        if (em_shape_dims(E, n->args[0], shape) < 0) {
            return -1;
        }
    } else {
        if (em_view_of(E, n->args[0], &src) < 0) {
            return -1;
        }
        ndim = src.ndim; /* a.flatten(): the copy is seen as one dimension below */
        memcpy(shape, src.shape, sizeof(LLVMValueRef) * (size_t)ndim);
    }
    if (em_alloc_array(E, n, n->ty->scalar, ndim, shape, v) < 0) {
        return -1;
    }
    CcNode *fill = NULL;
    CcNode value = {.kind = ND_CONST, .loc = n->loc};
    switch ((CcAllocOp)b->op) {
    case AL_EMPTY:
        return 0;
    case AL_ZEROS:
    case AL_ONES:
        value.ty = cc_scalar_type(TS_INT64);
        value.ival = b->op == AL_ONES;
        fill = &value;
        break;
    case AL_FULL:
        fill = n->args[1];
        break;
    case AL_COPY:
    case AL_FLATTEN:
        fill = n->args[0];
        break;
    }
    /* a fresh array overlaps nothing: no temporary */
    if (!cc_is_array(fill->ty)) {
        LLVMValueRef x = em_expr(E, fill);
        return x != NULL ? em_fill_view(E, v, fill, x) : -1;
    }
    Walk w = {.ndim = v->ndim, .target = *v, .visit = em_store_visit};
    if (em_run_walk(E, &w, fill) < 0) {
        return -1;
    }
    if (b->op == AL_FLATTEN) {
        /* the C-contiguous copy as one dimension */
        v->shape[0] = em_view_size(E, v);
        v->stride[0] = em_i64c(E, ts_itemsize(v->kind));
        v->ndim = 1;
    }
    return 0;
}

/* np.ndindex's loop: .ndsize(shape) and .unravel(k, shape). */
static LLVMValueRef
em_shape_call(Emit *E, CcNode *n, const CcBuiltin *b)
{
    if (b->flavor == FL_UNRAVEL && b->op != 1 && n->args[0]->kind == ND_VAR && E->ndindex_k != NULL
        && n->args[0]->var == E->ndindex_k) {
        return E->ndindex_tuple; /* the nested loops' counters (ndindex.c) */
    }
    LLVMValueRef dims[TS_MAXDIMS + 1];
    int nd = em_shape_dims(E, n->args[n->nargs - 1], dims);
    if (nd < 0) {
        return NULL;
    }
    if (b->flavor == FL_NDSIZE) {
        /* a negative dimension, or a size past int64, is ValueError (as
         * NumPy's arrays); in a scalar kernel, which has no status, a
         * negative dimension counts as none */
        return em_shape_bytes(E, dims, nd, 1, NULL);
    }
    LLVMValueRef k = em_expr(E, n->args[0]);
    if (k == NULL) {
        return NULL;
    }
    if (b->op == 1) {
        /* a.flat[k]: k within the array's size, from the end when negative */
        LLVMValueRef size = em_i64c(E, 1);
        for (int i = 0; i < nd; i++) {
            size = LLVMBuildMul(E->b, size, dims[i], "size");
        }
        k = em_wrap_index(E, k, cc_storage(n->args[0]->ty), size, is_counter(n->args[0]));
    } else {
        k = em_convert(E, k, cc_storage(n->args[0]->ty), TS_INT64);
    }
    if (b->op != 1) {
        return em_ndindex_next(E, em_type_of(E, n->ty), k, dims, nd); /* no division */
    }
    LLVMValueRef t = LLVMGetUndef(em_type_of(E, n->ty));
    for (int i = nd - 1; i >= 0; i--) {
        /* the loop only asks for k < size, so every dimension here is > 0 */
        LLVMValueRef d =
            LLVMBuildSelect(E->b, LLVMBuildICmp(E->b, LLVMIntSLT, dims[i], em_i64c(E, 1), ""),
                            em_i64c(E, 1), dims[i], "d");
        t = LLVMBuildInsertValue(E->b, t, LLVMBuildURem(E->b, k, d, "idx"), (unsigned)i, "index");
        k = LLVMBuildUDiv(E->b, k, d, "k");
    }
    return t;
}

LLVMValueRef
ec_array_call(Emit *E, CcNode *n, const CcBuiltin *b, TsKind out)
{
    (void)out;
    if (b->flavor == FL_NDSIZE || b->flavor == FL_UNRAVEL) {
        return em_shape_call(E, n, b);
    }
    View v;
    if (b->flavor == FL_REDUCE && cc_is_array(n->ty)) {
        return em_view_of(E, n, &v) == 0 ? em_view_pack(E, &v) : NULL;
    }
    if (b->flavor == FL_REDUCE) {
        return em_reduce(E, n, b);
    }
    return alloc_call(E, n, &v) == 0 ? em_view_pack(E, &v) : NULL;
}

/*
 * np.arange(start, stop, step): its length as NumPy computes it
 * (extent.c), element i as NumPy fills it: start, start + step, then
 * start + i * delta with delta = (start + step) - start, in the result's
 * kind (integers: in int64).
 */
static int
arange_view(Emit *E, CcNode *n, View *v)
{
    TsKind k = n->ty->scalar, c = ts_is_float(k) ? k : TS_INT64, wide = TS_INT64;
    LLVMValueRef arg[3];
    for (int i = 0; i < n->nargs; i++) {
        if ((arg[i] = em_expr(E, n->args[i])) == NULL) {
            return -1;
        }
        const CcType *t = n->args[i]->ty;
        if (t->kind != CT_WEAK_INT && (t->kind != CT_SCALAR || ts_is_float(t->scalar))) {
            wide = TS_FLOAT64;
        }
    }
    /* start, stop, step: the arguments given, else 0 and 1 */
    CcNode *node[3] = {n->nargs > 1 ? n->args[0] : NULL, n->args[n->nargs > 1],
                       n->nargs > 2 ? n->args[2] : NULL};
    LLVMValueRef val[3] = {n->nargs > 1 ? arg[0] : NULL, arg[n->nargs > 1],
                           n->nargs > 2 ? arg[2] : NULL};
    LLVMValueRef w[3];
    for (int i = 0; i < 3; i++) {
        w[i] = node[i] != NULL ? em_convert_type(E, val[i], node[i]->ty, cc_scalar_type(wide))
                               : em_convert(E, em_i64c(E, i == 2), TS_INT64, wide);
    }
    LLVMValueRef count = em_arange_length(E, node, val);
    if (em_alloc_array(E, n, k, 1, &count, v) < 0) {
        return -1;
    }
    /* NumPy: the first two in the arguments' kind, cast, then their difference */
    LLVMValueRef first = em_convert(E, em_convert(E, w[0], wide, k), k, c);
    LLVMValueRef second =
        em_convert(E, em_convert(E, em_arith(E, OP_ADD, wide, w[0], w[2]), wide, k), k, c);
    LLVMValueRef delta = em_arith(E, OP_SUB, c, second, first);
    Loop i;
    em_loop_begin(E, &i, count, "arange.i");
    LLVMValueRef y = em_arith(E, OP_ADD, c, first,
                              em_arith(E, OP_MUL, c, em_convert(E, i.i, TS_INT64, c), delta));
    y = LLVMBuildSelect(E->b, LLVMBuildICmp(E->b, LLVMIntEQ, i.i, em_i64c(E, 1), ""), second, y,
                        "y");
    y = LLVMBuildSelect(E->b, LLVMBuildICmp(E->b, LLVMIntEQ, i.i, em_i64c(E, 0), ""), first, y,
                        "y");
    LLVMValueRef off = LLVMBuildNSWMul(E->b, i.i, em_i64c(E, ts_itemsize(k)), "off");
    cc_store(E->b, k, em_convert(E, y, c, k),
             LLVMBuildInBoundsGEP2(E->b, LLVMInt8TypeInContext(E->ctx), v->data, &off, 1, ""));
    em_loop_end(E, &i);
    return 0;
}

LLVMValueRef
ec_arange_call(Emit *E, CcNode *n, const CcBuiltin *b, TsKind out)
{
    (void)b;
    (void)out;
    View v;
    return arange_view(E, n, &v) == 0 ? em_view_pack(E, &v) : NULL;
}
