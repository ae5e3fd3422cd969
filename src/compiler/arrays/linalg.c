/*
 * linalg.c - linear algebra: np.dot and the @ operator on vectors and
 * matrices.
 */
#include "compiler/arrays/arrays.h"

#include <stdio.h>
#include <string.h>

/* ======== typing ======== */

/*
 * dot := np.dot(a, b) | a @ b     a, b: 1-d or 2-d arrays
 *   1-d with 1-d: a scalar (their inner product); with a 2-d array: a 1-d
 *   array (the vector as a row, or as a column, as NumPy has it); 2-d with
 *   2-d: the matrix product.  The kind is the operands' promotion.
 */
int
ti_dot_call(Infer *in, CcNode *n, const CcBuiltin *b, const CcType **out)
{
    const CcType *t[2];
    const char *name = b->op == 1 ? "a @ b" : "np.dot()";
    *out = UNKNOWN;
    for (int i = 0; i < 2; i++) {
        if (ti_expr(in, n->args[i], &t[i]) < 0) {
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
        return ti_type_error(in, n, name, t[0], t[1]);
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

/* ======== emission ======== */

/* ---- np.dot and @ ---- */

/* The operands of np.dot(a, b) as matrices: a 1-d a is a row (1, n), a
 * 1-d b a column (n, 1); their inner dimensions must agree
 * (CC_STATUS_SHAPE). */
static int
dot_operands(Emit *E, CcNode *n, View *a, View *b)
{
    if (em_view_of(E, n->args[0], a) < 0 || em_view_of(E, n->args[1], b) < 0) {
        return -1;
    }
    if (a->ndim == 1) {
        a->shape[1] = a->shape[0];
        a->stride[1] = a->stride[0];
        a->shape[0] = em_i64c(E, 1);
        a->stride[0] = em_i64c(E, 0);
        a->ndim = 2;
    }
    if (b->ndim == 1) {
        b->shape[1] = em_i64c(E, 1);
        b->stride[1] = em_i64c(E, 0);
        b->ndim = 2;
    }
    em_check(E, LLVMBuildICmp(E->b, LLVMIntNE, a->shape[1], b->shape[0], "dot.shape"),
             CC_STATUS_SHAPE);
    return 0;
}

/* sum over k of a[i, k] * b[k, j], in kind r, k in order. */
static LLVMValueRef
dot_element(Emit *E, View *a, View *b, LLVMValueRef i, LLVMValueRef j, TsKind r)
{
    LLVMValueRef acc = em_entry_alloca(E, cc_value_type(E->ctx, r), "dot.acc");
    LLVMBuildStore(E->b, em_convert(E, em_i64c(E, 0), TS_INT64, r), acc);
    Loop k;
    em_loop_begin(E, &k, a->shape[1], "dot.k");
    LLVMValueRef ia[2] = {i, k.i}, ib[2] = {k.i, j};
    LLVMValueRef x = em_convert(
        E, cc_load(E->b, a->kind, em_address(E, a->data, a->stride, ia, 0, 2), "x"), a->kind, r);
    LLVMValueRef y = em_convert(
        E, cc_load(E->b, b->kind, em_address(E, b->data, b->stride, ib, 0, 2), "y"), b->kind, r);
    LLVMValueRef s = LLVMBuildLoad2(E->b, cc_value_type(E->ctx, r), acc, "acc");
    LLVMBuildStore(E->b, em_arith(E, OP_ADD, r, s, em_arith(E, OP_MUL, r, x, y)), acc);
    em_loop_end(E, &k);
    return LLVMBuildLoad2(E->b, cc_value_type(E->ctx, r), acc, "dot");
}

/* The array of np.dot(a, b): (m, p) computed, the 1-d operand's
 * dimension of 1 left out. */
int
em_dot_view(Emit *E, CcNode *n, View *v)
{
    View a, b;
    TsKind r = n->ty->scalar;
    int a1 = n->args[0]->ty->n == 1, b1 = n->args[1]->ty->n == 1;
    if (dot_operands(E, n, &a, &b) < 0) {
        return -1;
    }
    LLVMValueRef shape[2] = {a.shape[0], b.shape[1]};
    if (em_alloc_array(E, n, r, 2, shape, v) < 0) {
        return -1;
    }
    Loop i, j;
    em_loop_begin(E, &i, shape[0], "dot.i");
    em_loop_begin(E, &j, shape[1], "dot.j");
    LLVMValueRef x = dot_element(E, &a, &b, i.i, j.i, r);
    LLVMValueRef ij[2] = {i.i, j.i};
    cc_store(E->b, r, x, em_address(E, v->data, v->stride, ij, 0, 2));
    em_loop_end(E, &j);
    em_loop_end(E, &i);
    if (a1 || b1) {
        v->ndim = 1;
        v->shape[0] = a1 ? shape[1] : shape[0];
        v->stride[0] = em_i64c(E, ts_itemsize(r));
    }
    return 0;
}

LLVMValueRef
ec_dot_call(Emit *E, CcNode *n, const CcBuiltin *b, TsKind out)
{
    (void)b;
    (void)out;
    if (cc_is_array(n->ty)) {
        View v;
        return em_dot_view(E, n, &v) == 0 ? em_view_pack(E, &v) : NULL;
    }
    View x, y;
    if (dot_operands(E, n, &x, &y) < 0) {
        return NULL;
    }
    return dot_element(E, &x, &y, em_i64c(E, 0), em_i64c(E, 0), cc_storage(n->ty));
}
