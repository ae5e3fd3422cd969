/*
 * linalg.c - linear algebra: np.dot and the @ operator on vectors and
 * matrices.
 */
#include "compiler/arrays/arrays.h"

#include <math.h>
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

/* ======== np.linalg.norm: typed as the reductions it is ======== */

static CcNode *
norm_node(Infer *in, CcNodeKind kind, const CcNode *at)
{
    CcNode *n = cc_alloc(in->fn->arena, sizeof(CcNode));
    if (n != NULL) {
        *n = (CcNode){.kind = kind, .loc = at->loc};
    }
    return n;
}

/* The call of builtin `name` on a (and b, NULL when none). */
static CcNode *
norm_call(Infer *in, const CcNode *at, const char *name, CcNode *a, CcNode *b)
{
    CcNode *n = a != NULL ? norm_node(in, ND_CALL, at) : NULL;
    CcNode **args = n != NULL ? cc_alloc(in->fn->arena, sizeof(CcNode *) * 3) : NULL;
    if (args == NULL) {
        return NULL;
    }
    args[0] = a;
    args[1] = b;
    n->args = args;
    n->nargs = b != NULL ? 2 : 1;
    n->builtin = cc_builtin_by_name(name);
    return n;
}

static CcNode *
norm_const(Infer *in, const CcNode *at, CcTypeKind weak, double v)
{
    CcNode *n = norm_node(in, ND_CONST, at);
    if (n != NULL) {
        n->ty = cc_weak_type(weak);
        n->fval = v;
        n->ival = (long long)v;
    }
    return n;
}

/* The reduction `name` of y, along axis k (k < 0: the whole of y). */
static CcNode *
norm_reduce(Infer *in, const CcNode *at, const char *name, CcNode *y, long long k)
{
    CcNode *axis = k >= 0 ? norm_const(in, at, CT_WEAK_INT, (double)k) : NULL;
    return k >= 0 && axis == NULL ? NULL : norm_call(in, at, name, y, axis);
}

/* A vector norm of y (along axis k, or of all of y when k < 0). */
static CcNode *
vector_norm(Infer *in, CcNode *n, CcNode *y, long long k)
{
    double p = n->ival == 0 ? 2.0 : n->fval;
    if (n->ival >= 2 || p == 0.0) {
        return cc_error(in->fn, n->loc,
                        n->ival >= 2 ? "np.linalg.norm(): invalid norm order '%s' for vectors"
                                     : "np.linalg.norm() of ord=0 (a count) is not supported "
                                       "in a kernel yet%s",
                        n->ival == 2   ? "fro"
                        : n->ival == 3 ? "nuc"
                                       : ""),
               NULL;
    }
    if (p == 2.0) {
        return norm_call(
            in, n, "numpy.sqrt",
            norm_reduce(in, n, "numpy.sum", norm_call(in, n, "numpy.square", y, NULL), k), NULL);
    }
    if (isinf(p)) {
        return norm_reduce(in, n, p > 0 ? "numpy.max" : "numpy.min", y, k);
    }
    if (p == 1.0) {
        return norm_reduce(in, n, "numpy.sum", y, k);
    }
    CcNode *powered = norm_call(in, n, "numpy.power", y, norm_const(in, n, CT_WEAK_FLOAT, p));
    return norm_call(in, n, "numpy.power", norm_reduce(in, n, "numpy.sum", powered, k),
                     norm_const(in, n, CT_WEAK_FLOAT, 1.0 / p));
}

/* A matrix norm of y (2-d, no axis): Frobenius, or the largest/smallest
 * column (ord 1, -1) or row (inf, -inf) sum. */
static CcNode *
matrix_norm(Infer *in, CcNode *n, CcNode *y)
{
    double p = n->fval;
    if (n->ival == 0 || n->ival == 2) {
        return vector_norm(in, &(CcNode){.loc = n->loc}, y, -1);
    }
    if (n->ival == 1 && (p == 1.0 || p == -1.0 || isinf(p))) {
        CcNode *sums = norm_reduce(in, n, "numpy.sum", y, isinf(p) ? 1 : 0);
        return norm_reduce(in, n, p > 0 ? "numpy.max" : "numpy.min", sums, -1);
    }
    if (n->ival == 3 || p == 2.0 || p == -2.0) {
        return cc_error(in->fn, n->loc,
                        "np.linalg.norm() of a matrix with ord=2, -2 or 'nuc' needs its singular "
                        "values, which a kernel cannot compute yet"),
               NULL;
    }
    return cc_error(in->fn, n->loc, "np.linalg.norm(): invalid norm order for matrices"), NULL;
}

int
ti_norm_call(Infer *in, CcNode *n)
{
    const CcType *t;
    char tn[96];
    if (ti_expr(in, n->args[0], &t) < 0) {
        return -1;
    }
    if (t == UNKNOWN) {
        return 0;
    }
    if (!cc_is_array(t) || t->n > 2 || t->scalar == TS_INFER) {
        return cc_error(in->fn, n->args[0]->loc,
                        "np.linalg.norm() of %s: it takes a 1-d or 2-d array in a kernel",
                        cc_type_name(t, tn, sizeof(tn)));
    }
    long long axis = n->index == 1 ? n->ihigh : -1;
    if (n->index == 1 && (axis < -t->n || axis >= t->n)) {
        return cc_error(in->fn, n->loc, "axis %lld is out of bounds for an array of dimension %d",
                        axis, t->n);
    }
    axis = n->index == 1 && axis < 0 ? axis + t->n : axis;
    /* ints become float64, as NumPy's norm casts them; complex: magnitudes */
    CcNode *scaled = norm_node(in, ND_BINOP, n);
    if (scaled == NULL) {
        return -1;
    }
    scaled->op = OP_MUL;
    scaled->lhs = n->args[0];
    scaled->rhs = norm_const(in, n, CT_WEAK_FLOAT, 1.0);
    CcNode *y = scaled->rhs != NULL ? norm_call(in, n, "numpy.absolute", scaled, NULL) : NULL;
    CcNode *r = y == NULL               ? NULL
                : t->n == 2 && axis < 0 ? matrix_norm(in, n, y)
                                        : vector_norm(in, n, y, t->n == 2 ? axis : -1);
    if (r == NULL) {
        return -1;
    }
    CcLoc loc = n->loc;
    *n = *r;
    n->loc = loc;
    return 0;
}
