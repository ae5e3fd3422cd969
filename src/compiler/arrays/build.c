/*
 * build.c - arrays built from scalars: np.array([x, y, z]), np.array of a
 * tuple, and a list display stored into a view (out[i] = [lo, hi], which
 * lowernp.c makes the same call).  Typing beside emission.
 */
#include "compiler/arrays/arrays.h"

#include <stdio.h>

/* ======== typing ======== */

/* The kind NumPy makes an array of a Python number in: not weak. */
static const CcType *
strong(const CcType *t)
{
    return cc_is_weak(t) ? cc_scalar_type(cc_storage(t)) : t;
}

/* The item types of np.array's argument(s): *items (count) or an error. */
static int
item_types(Infer *in, CcNode *n, const CcType **items, int *count)
{
    const CcType *t;
    *count = -1;
    if (n->index == 1) { /* np.array(t): a tuple's items */
        if (ti_expr(in, n->args[0], &t) < 0 || t == UNKNOWN) {
            return t == UNKNOWN && !PyErr_Occurred() ? 0 : -1;
        }
        if (!ti_is_tuple(t)) {
            char tn[96];
            return cc_error(in->fn, n->args[0]->loc,
                            "np.array() of %s: a kernel makes arrays of a list or tuple of "
                            "scalars (copy an array with a.copy())",
                            cc_type_name(t, tn, sizeof(tn)));
        }
        for (int i = 0; i < t->n && i < 64; i++) {
            items[i] = t->elems[i];
        }
        *count = t->n;
        return 0;
    }
    for (int i = 0; i < n->nargs; i++) {
        if (ti_expr(in, n->args[i], &items[i]) < 0) {
            return -1;
        }
        if (items[i] == UNKNOWN) {
            return 0;
        }
    }
    *count = n->nargs;
    return 0;
}

int
ti_array_of(Infer *in, CcNode *n, const CcType **out)
{
    const CcType *items[64];
    int count;
    *out = UNKNOWN;
    if (!in->gufunc) {
        return cc_error(in->fn, n->loc,
                        "np.array() allocates an array, which only a guvectorize kernel can do");
    }
    if (n->index == 0 && n->nargs > 64) {
        return cc_error(in->fn, n->loc, "np.array() of more than 64 items in a kernel");
    }
    if (item_types(in, n, items, &count) < 0 || count < 0) {
        return count < 0 && PyErr_Occurred() ? -1 : 0;
    }
    if (count > 64) {
        return cc_error(in->fn, n->loc, "np.array() of more than 64 items in a kernel");
    }
    const CcType *kind = count == 0 ? cc_scalar_type(TS_FLOAT64) : strong(items[0]);
    for (int i = 0; i < count; i++) {
        if (ti_is_tuple(items[i]) || cc_is_array(items[i])) {
            return cc_error(in->fn, n->index == 1 ? n->args[0]->loc : n->args[i]->loc,
                            "np.array() of nested sequences (a 2-d array) is not supported in "
                            "a kernel yet: a list or tuple of scalars is");
        }
        kind = cc_promote(kind, strong(items[i]));
    }
    if (n->index == 0 && ti_fit_consts(in, n->args, n->nargs, kind) < 0) {
        return -1;
    }
    in->fn->allocates = 1;
    *out = cc_array_type(cc_storage(kind), 1);
    return 0;
}

/* ======== emission ======== */

/* The items first (as Python evaluates the display), then the array. */
int
em_array_of(Emit *E, CcNode *n, View *v)
{
    LLVMValueRef vals[64];
    const CcType *tys[64];
    int count = n->nargs;
    if (n->index == 1) {
        LLVMValueRef t = em_expr(E, n->args[0]);
        if (t == NULL) {
            return -1;
        }
        count = n->args[0]->ty->n;
        for (int i = 0; i < count; i++) {
            vals[i] = LLVMBuildExtractValue(E->b, t, (unsigned)i, "item");
            tys[i] = n->args[0]->ty->elems[i];
        }
    }
    for (int i = 0; n->index == 0 && i < count; i++) {
        if ((vals[i] = em_expr(E, n->args[i])) == NULL) {
            return -1;
        }
        tys[i] = n->args[i]->ty;
    }
    TsKind k = n->ty->scalar;
    LLVMValueRef len = em_i64c(E, count);
    if (em_alloc_array(E, n, k, 1, &len, v) < 0) {
        return -1;
    }
    for (int i = 0; i < count; i++) {
        LLVMValueRef off = em_i64c(E, (long long)i * ts_itemsize(k));
        LLVMValueRef at =
            LLVMBuildInBoundsGEP2(E->b, LLVMInt8TypeInContext(E->ctx), v->data, &off, 1, "item");
        cc_store(E->b, k, em_convert_type(E, vals[i], tys[i], cc_scalar_type(k)), at);
    }
    return 0;
}
