/*
 * stats.c - statistics of arrays: np.cov and np.corrcoef, typed as the
 * array operations NumPy computes them with (the call is rewritten in
 * place once its argument is typed; nothing of their own is emitted).
 */
#include "compiler/arrays/arrays.h"

#include <stdio.h>

/* ---- nodes of the rewrite ---- */

static CcNode *
new_node(Infer *in, CcNodeKind kind, const CcNode *at)
{
    CcNode *n = cc_alloc(in->fn->arena, sizeof(CcNode));
    if (n != NULL) {
        *n = (CcNode){.kind = kind, .loc = at->loc};
    }
    return n;
}

/* builtin `name` of a (and b, c: NULL when absent). */
static CcNode *
call3(Infer *in, const CcNode *at, const char *name, CcNode *a, CcNode *b, CcNode *c)
{
    CcNode *n = a != NULL ? new_node(in, ND_CALL, at) : NULL;
    CcNode **args = n != NULL ? cc_alloc(in->fn->arena, sizeof(CcNode *) * 4) : NULL;
    if (args == NULL) {
        return NULL;
    }
    args[0] = a;
    args[1] = b;
    args[2] = c;
    n->args = args;
    n->nargs = c != NULL ? 3 : b != NULL ? 2 : 1;
    n->builtin = cc_builtin_by_name(name);
    return n;
}

static CcNode *
binop(Infer *in, const CcNode *at, CcOp op, CcNode *a, CcNode *b)
{
    CcNode *n = a != NULL && b != NULL ? new_node(in, ND_BINOP, at) : NULL;
    if (n != NULL) {
        n->op = op;
        n->lhs = a;
        n->rhs = b;
    }
    return n;
}

/* A constant: a weak int (v), or a float64 (strong: np.float64(v)). */
static CcNode *
constant(Infer *in, const CcNode *at, int is_float, long long v)
{
    CcNode *n = new_node(in, ND_CONST, at);
    if (n != NULL) {
        n->ty = is_float ? cc_scalar_type(TS_FLOAT64) : cc_weak_type(CT_WEAK_INT);
        n->ival = v;
        n->fval = (double)v;
    }
    return n;
}

/* a[:, None] (column, 1) or a[None, :] (column, 0). */
static CcNode *
spread(Infer *in, const CcNode *at, CcNode *a, int column)
{
    CcNode *n = a != NULL ? new_node(in, ND_INDEX, at) : NULL;
    CcNode **items = n != NULL ? cc_alloc(in->fn->arena, sizeof(CcNode *) * 3) : NULL;
    if (items == NULL || (items[0] = new_node(in, column ? ND_SLICE : ND_NEWAXIS, at)) == NULL
        || (items[1] = new_node(in, column ? ND_NEWAXIS : ND_SLICE, at)) == NULL) {
        return NULL;
    }
    n->lhs = a;
    n->args = items;
    n->nargs = 2;
    return n;
}

/* Dimension k of a's shape: a.shape[k]. */
static CcNode *
dim(Infer *in, const CcNode *at, CcNode *a, int k)
{
    CcNode *shape = new_node(in, ND_ARRAYATTR, at);
    CcNode *n = shape != NULL ? new_node(in, ND_GETITEM, at) : NULL;
    if (n != NULL) {
        shape->index = AA_SHAPE;
        shape->lhs = a;
        n->lhs = shape;
        n->index = k;
    }
    return n;
}

/* ---- np.cov, np.corrcoef ---- */

/* m with its variables in rows (m.T when rowvar is false), in float64
 * (NumPy: result_type(m, float64)); a new tree each time, so that no
 * operator is in two places of one elementwise loop. */
static CcNode *
rows(Infer *in, const CcNode *at, CcNode *m, const CcType *t, int rowvar)
{
    CcNode *x = m;
    if (t->n == 2 && !rowvar && (x = new_node(in, ND_ARRAYATTR, at)) != NULL) {
        x->index = AA_T;
        x->lhs = m;
    }
    return binop(in, at, OP_MUL, x, constant(in, at, 1, 1));
}

int
ti_cov_call(Infer *in, CcNode *n)
{
    const CcType *t;
    char tn[96];
    int corr = cc_builtin(n->builtin)->op == 1;
    const char *name = corr ? "np.corrcoef" : "np.cov";
    if (ti_expr(in, n->args[0], &t) < 0) {
        return -1;
    }
    if (t == UNKNOWN) {
        return 0;
    }
    if (!cc_is_array(t) || t->n > 2 || t->scalar == TS_INFER || ts_is_complex(t->scalar)) {
        return cc_error(in->fn, n->args[0]->loc,
                        "%s() of %s: it takes a 1-d or 2-d array of real numbers in a kernel", name,
                        cc_type_name(t, tn, sizeof(tn)));
    }
    int rowvar = (n->ival & 1) != 0, bias = (n->ival & 2) != 0;
    long long ddof = n->index == 1 ? n->ihigh : bias ? 0 : 1;
    CcNode *m = n->args[0];
    if (m->kind != ND_VAR && m->kind != ND_INDEX && m->kind != ND_CONST
        && !(m->kind == ND_ARRAYATTR && m->index == AA_T)) {
        /* m is read twice (its mean, then its deviations from it) */
        return cc_error(in->fn, m->loc,
                        "%s() of an array expression: assign it to a variable first", name);
    }
    CcNode *mean = t->n == 2 ? call3(in, n, "numpy.mean", rows(in, n, m, t, rowvar),
                                     constant(in, n, 0, 1), NULL)
                             : call3(in, n, "numpy.mean", rows(in, n, m, t, rowvar), NULL, NULL);
    CcNode *xc =
        binop(in, n, OP_SUB, rows(in, n, m, t, rowvar), t->n == 2 ? spread(in, n, mean, 1) : mean);
    CcNode *obs = dim(in, n, m, t->n == 2 && rowvar ? 1 : 0);
    CcNode *fact = call3(in, n, "max", binop(in, n, OP_SUB, obs, constant(in, n, 0, ddof)),
                         constant(in, n, 0, 0), NULL);
    CcNode *xt = t->n == 2 ? new_node(in, ND_ARRAYATTR, n) : xc;
    if (xt != xc && xt != NULL) {
        xt->index = AA_T;
        xt->lhs = xc;
    }
    CcNode *c = binop(in, n, OP_DIV, call3(in, n, "numpy.dot", xc, xt, NULL), fact);
    if (corr && t->n == 1) {
        c = call3(in, n, "numpy.clip", binop(in, n, OP_DIV, c, c), constant(in, n, 0, -1),
                  constant(in, n, 0, 1));
    } else if (corr) {
        CcNode *sq = call3(in, n, "numpy.square", xc, NULL, NULL);
        CcNode *var =
            binop(in, n, OP_DIV, call3(in, n, "numpy.sum", sq, constant(in, n, 0, 1), NULL), fact);
        CcNode *sd = call3(in, n, "numpy.sqrt", var, NULL, NULL);
        CcNode *r = binop(in, n, OP_DIV, binop(in, n, OP_DIV, c, spread(in, n, sd, 1)),
                          spread(in, n, sd, 0));
        c = call3(in, n, "numpy.clip", r, constant(in, n, 0, -1), constant(in, n, 0, 1));
    }
    if (c == NULL) {
        return -1;
    }
    CcLoc loc = n->loc;
    *n = *c;
    n->loc = loc;
    return 0;
}
