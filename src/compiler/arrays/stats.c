/*
 * stats.c - statistics of arrays: np.cov and np.corrcoef, typed as the
 * array operations NumPy computes them with (the call is rewritten in
 * place once its argument is typed; nothing of their own is emitted), and
 * np.histogram with given edges (a walk that bins each value).
 */
#include "compiler/arrays/arrays.h"

#include <math.h>
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

/* The ddof of np.cov: the constant one, or `0 if bias else 1` for a bias
 * known at run time (args[1], lowernp.c) when no ddof= overrides it. */
static CcNode *
ddof_of(Infer *in, const CcNode *n, long long ddof)
{
    if (n->nargs < 2 || n->index == 1) {
        return constant(in, n, 0, ddof);
    }
    CcNode *pick = new_node(in, ND_IFEXP, n);
    if (pick != NULL) {
        pick->cond = n->args[1];
        pick->then = constant(in, n, 0, 0);
        pick->els = constant(in, n, 0, 1);
    }
    return pick != NULL && pick->then != NULL && pick->els != NULL ? pick : NULL;
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
    CcNode *fact = call3(in, n, "max", binop(in, n, OP_SUB, obs, ddof_of(in, n, ddof)),
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

/* ---- np.histogram(a, bins=edges), np.histogram(a, n, range=(lo, hi)) ---- */

/* n bins over range=(lo, hi): *edges the type of the edges NumPy makes
 * (a's float kind with the range's, float64 for integers). */
static int
ti_uniform_bins(Infer *in, CcNode *n, const CcType *a, const CcType *bins, const CcType **edges)
{
    const CcType *r = UNKNOWN;
    char tn[96];
    *edges = UNKNOWN;
    if (!ti_is_integral(bins) || ti_is_bool(bins) || ti_is_tuple(bins)) {
        return cc_error(in->fn, n->args[1]->loc,
                        "np.histogram() takes bins as an integer or an array of edges, not %s",
                        cc_type_name(bins, tn, sizeof(tn)));
    }
    if (n->nargs < 3) {
        return cc_error(in->fn, n->loc,
                        "np.histogram() with a number of bins takes range=(lo, hi) in a kernel "
                        "(the data's own range is not supported yet)");
    }
    if (ti_fit_const(in, n->args[1], cc_scalar_type(TS_INT64)) < 0
        || ti_expr(in, n->args[2], &r) < 0) {
        return -1;
    }
    if (r == UNKNOWN) {
        return 0;
    }
    if (!ti_is_tuple(r) || r->n != 2 || ti_is_tuple(r->elems[0]) || ti_is_tuple(r->elems[1])
        || cc_is_array(r->elems[0]) || cc_is_array(r->elems[1]) || ti_is_complex_type(r->elems[0])
        || ti_is_complex_type(r->elems[1])) {
        return cc_error(in->fn, n->args[2]->loc,
                        "np.histogram() takes range= as a pair of real numbers, not %s",
                        cc_type_name(r, tn, sizeof(tn)));
    }
    const CcType *k = cc_promote(cc_promote(cc_scalar_type(a->scalar), r->elems[0]), r->elems[1]);
    TsKind kind = cc_storage(k);
    *edges = cc_array_type(ts_is_float(kind) ? kind : TS_FLOAT64, 1);
    return 0;
}

int
ti_histogram_call(Infer *in, CcNode *n, const CcType **out)
{
    const CcType *a, *e;
    char tn[96];
    *out = UNKNOWN;
    if (!in->gufunc) {
        return cc_error(
            in->fn, n->loc,
            "np.histogram() allocates an array, which only a guvectorize kernel can do");
    }
    if (ti_expr(in, n->args[0], &a) < 0 || ti_expr(in, n->args[1], &e) < 0) {
        return -1;
    }
    if (a == UNKNOWN || e == UNKNOWN) {
        return 0;
    }
    if (!cc_is_array(a) || a->scalar == TS_INFER || ts_is_complex(a->scalar)) {
        return cc_error(in->fn, n->args[0]->loc,
                        "np.histogram() of %s: it takes an array of real numbers",
                        cc_type_name(a, tn, sizeof(tn)));
    }
    if (!cc_is_array(e)) {
        if (ti_uniform_bins(in, n, a, e, &e) < 0 || e == UNKNOWN) {
            return e == UNKNOWN && !PyErr_Occurred() ? 0 : -1;
        }
    } else if (n->nargs > 2) {
        return cc_error(in->fn, n->args[2]->loc,
                        "np.histogram() takes range= with a number of bins in a kernel");
    }
    if (e->n != 1 || e->scalar == TS_INFER || ts_is_complex(e->scalar)) {
        return cc_error(in->fn, n->args[1]->loc, "`bins` must be 1d, when an array of real edges");
    }
    CcType *t = n->view; /* one tuple type for the node: types compare by identity */
    const CcType **elems = t != NULL ? t->elems : cc_alloc(in->fn->arena, sizeof(CcType *) * 2);
    if (t == NULL && (elems == NULL || (t = cc_alloc(in->fn->arena, sizeof(CcType))) == NULL)) {
        return -1;
    }
    elems[0] = cc_array_type(TS_INT64, 1);
    elems[1] = e; /* the edges as given (NumPy: np.asarray(bins)) */
    *t = (CcType){.kind = CT_TUPLE, .n = 2, .elems = elems};
    n->view = t;
    in->fn->allocates = 1;
    *out = t;
    return 0;
}

typedef struct Binning {
    View edges, hist;
    LLVMValueRef nedges;          /* i64 */
    LLVMValueRef steps;           /* the binary search's halvings: bits of nedges */
    LLVMValueRef first, last;     /* float64 */
    LLVMValueRef lo_slot, n_slot; /* the search's state (entry allocas) */
} Binning;

static LLVMValueRef
edge_at(Emit *E, const Binning *b, LLVMValueRef i)
{
    LLVMValueRef off = LLVMBuildNSWMul(E->b, i, b->edges.stride[0], "off");
    LLVMValueRef at =
        LLVMBuildInBoundsGEP2(E->b, LLVMInt8TypeInContext(E->ctx), b->edges.data, &off, 1, "edge");
    return em_convert(E, cc_load(E->b, b->edges.kind, at, "e"), b->edges.kind, TS_FLOAT64);
}

/* Each value counts in the bin [edges[i], edges[i + 1]) it lies in (the
 * last bin holds its right edge too); values outside, and NaN, in none. */
static int
bin_visit(Emit *E, Walk *w, LLVMValueRef value)
{
    Binning *b = w->ctx;
    LLVMTypeRef i64 = em_i64_type(E);
    LLVMValueRef v = em_convert(E, value, cc_storage(w->expr->ty), TS_FLOAT64);
    LLVMValueRef in = LLVMBuildAnd(E->b, LLVMBuildFCmp(E->b, LLVMRealOGE, v, b->first, "ge"),
                                   LLVMBuildFCmp(E->b, LLVMRealOLE, v, b->last, "le"), "in");
    LLVMBasicBlockRef count = em_new_block(E, "bin"), done = em_new_block(E, "binned");
    LLVMBuildCondBr(E->b, in, count, done);
    LLVMPositionBuilderAtEnd(E->b, count);
    /* lo: the last edge <= v, by halving [0, nedges) */
    LLVMValueRef lo_slot = b->lo_slot, n_slot = b->n_slot;
    LLVMBuildStore(E->b, em_i64c(E, 0), lo_slot);
    LLVMBuildStore(E->b, b->nedges, n_slot);
    Loop s;
    em_loop_begin(E, &s, b->steps, "halve");
    LLVMValueRef lo = LLVMBuildLoad2(E->b, i64, lo_slot, "lo"),
                 n = LLVMBuildLoad2(E->b, i64, n_slot, "n");
    LLVMValueRef half = LLVMBuildLShr(E->b, n, em_i64c(E, 1), "half");
    LLVMValueRef mid = LLVMBuildAdd(E->b, lo, half, "mid");
    LLVMValueRef up = LLVMBuildAnd(
        E->b, LLVMBuildICmp(E->b, LLVMIntSGT, half, em_i64c(E, 0), "some"),
        LLVMBuildFCmp(
            E->b, LLVMRealOLE,
            edge_at(E, b,
                    LLVMBuildSelect(E->b, LLVMBuildICmp(E->b, LLVMIntSGT, half, em_i64c(E, 0), ""),
                                    mid, lo, "at")),
            v, "le"),
        "up");
    LLVMBuildStore(E->b, LLVMBuildSelect(E->b, up, mid, lo, "lo"), lo_slot);
    LLVMBuildStore(E->b, LLVMBuildSelect(E->b, up, LLVMBuildSub(E->b, n, half, ""), half, "n"),
                   n_slot);
    em_loop_end(E, &s);
    LLVMValueRef bin = LLVMBuildLoad2(E->b, i64, lo_slot, "bin");
    LLVMValueRef nbins = LLVMBuildSub(E->b, b->nedges, em_i64c(E, 1), "nbins");
    LLVMValueRef last = LLVMBuildSub(E->b, nbins, em_i64c(E, 1), "lastbin");
    /* the right edge, and repeated edges at the end: the last bin */
    bin = LLVMBuildSelect(E->b, LLVMBuildICmp(E->b, LLVMIntSGT, bin, last, ""), last, bin, "bin");
    LLVMValueRef off = LLVMBuildNSWMul(E->b, bin, em_i64c(E, 8), "off");
    LLVMValueRef at =
        LLVMBuildInBoundsGEP2(E->b, LLVMInt8TypeInContext(E->ctx), b->hist.data, &off, 1, "count");
    LLVMBuildStore(E->b, LLVMBuildAdd(E->b, LLVMBuildLoad2(E->b, i64, at, "c"), em_i64c(E, 1), "c"),
                   at);
    LLVMBuildBr(E->b, done);
    LLVMPositionBuilderAtEnd(E->b, done);
    return 0;
}

/*
 * np.histogram(a, n, range=(lo, hi))'s edges, as NumPy's linspace makes
 * them: lo + i * ((hi - lo) / n) in float64, the last one hi, cast to the
 * edges' kind.  lo > hi, a range that is not finite and n < 1 are
 * ValueErrors; lo == hi widens to (lo - 0.5, hi + 0.5).
 */
static int
uniform_edges(Emit *E, CcNode *n, View *v)
{
    CcNode *r = n->args[2];
    LLVMValueRef count = em_expr(E, n->args[1]), range = em_expr(E, r);
    if (count == NULL || range == NULL) {
        return -1;
    }
    const CcType *f8 = cc_scalar_type(TS_FLOAT64);
    count = em_convert_type(E, count, n->args[1]->ty, cc_scalar_type(TS_INT64));
    LLVMValueRef lo =
        em_convert_type(E, LLVMBuildExtractValue(E->b, range, 0, "lo"), r->ty->elems[0], f8);
    LLVMValueRef hi =
        em_convert_type(E, LLVMBuildExtractValue(E->b, range, 1, "hi"), r->ty->elems[1], f8);
    LLVMValueRef inf = em_real_const(E, TS_FLOAT64, HUGE_VAL);
    LLVMValueRef ninf = em_real_const(E, TS_FLOAT64, -HUGE_VAL);
    LLVMValueRef finite =
        LLVMBuildAnd(E->b,
                     LLVMBuildAnd(E->b, LLVMBuildFCmp(E->b, LLVMRealONE, lo, inf, ""),
                                  LLVMBuildFCmp(E->b, LLVMRealONE, lo, ninf, ""), "lo.finite"),
                     LLVMBuildAnd(E->b, LLVMBuildFCmp(E->b, LLVMRealONE, hi, inf, ""),
                                  LLVMBuildFCmp(E->b, LLVMRealONE, hi, ninf, ""), "hi.finite"),
                     "finite");
    LLVMValueRef bad = LLVMBuildOr(E->b, LLVMBuildNot(E->b, finite, ""),
                                   LLVMBuildFCmp(E->b, LLVMRealOGT, lo, hi, "backwards"), "bad");
    bad = LLVMBuildOr(E->b, bad, LLVMBuildICmp(E->b, LLVMIntSLT, count, em_i64c(E, 1), ""), "bad");
    em_check(E, bad, CC_STATUS_VALUE);
    LLVMValueRef same = LLVMBuildFCmp(E->b, LLVMRealOEQ, lo, hi, "same");
    LLVMValueRef half = em_real_const(E, TS_FLOAT64, 0.5);
    lo = LLVMBuildSelect(E->b, same, LLVMBuildFSub(E->b, lo, half, ""), lo, "lo");
    hi = LLVMBuildSelect(E->b, same, LLVMBuildFAdd(E->b, hi, half, ""), hi, "hi");
    TsKind k = n->ty->elems[1]->scalar;
    LLVMValueRef len = LLVMBuildAdd(E->b, count, em_i64c(E, 1), "nedges");
    if (em_alloc_array(E, n, k, 1, &len, v) < 0) {
        return -1;
    }
    LLVMTypeRef f64 = LLVMDoubleTypeInContext(E->ctx), i8 = LLVMInt8TypeInContext(E->ctx);
    LLVMValueRef step = LLVMBuildFDiv(E->b, LLVMBuildFSub(E->b, hi, lo, "delta"),
                                      LLVMBuildSIToFP(E->b, count, f64, ""), "step");
    Loop i;
    em_loop_begin(E, &i, len, "edge");
    LLVMValueRef y = LLVMBuildFAdd(
        E->b, LLVMBuildFMul(E->b, LLVMBuildSIToFP(E->b, i.i, f64, ""), step, ""), lo, "y");
    y = LLVMBuildSelect(E->b, LLVMBuildICmp(E->b, LLVMIntEQ, i.i, count, ""), hi, y, "y");
    LLVMValueRef off = LLVMBuildNSWMul(E->b, i.i, em_i64c(E, ts_itemsize(k)), "off");
    cc_store(E->b, k, em_convert(E, y, TS_FLOAT64, k),
             LLVMBuildInBoundsGEP2(E->b, i8, v->data, &off, 1, ""));
    em_loop_end(E, &i);
    return 0;
}

/* The edges must increase (ValueError, as NumPy); hist := zeros. */
static int
histogram_setup(Emit *E, CcNode *n, Binning *b)
{
    if (cc_is_array(n->args[1]->ty) ? em_view_of(E, n->args[1], &b->edges) < 0
                                    : uniform_edges(E, n, &b->edges) < 0) {
        return -1;
    }
    LLVMTypeRef i64 = em_i64_type(E);
    b->lo_slot = em_entry_alloca(E, i64, "bin.lo");
    b->n_slot = em_entry_alloca(E, i64, "bin.n");
    b->nedges = b->edges.shape[0];
    LLVMValueRef nbins = LLVMBuildSub(E->b, b->nedges, em_i64c(E, 1), "nbins");
    nbins = LLVMBuildSelect(E->b, LLVMBuildICmp(E->b, LLVMIntSLT, nbins, em_i64c(E, 0), ""),
                            em_i64c(E, 0), nbins, "nbins");
    Loop k;
    em_loop_begin(E, &k, nbins, "edges");
    LLVMValueRef next = LLVMBuildAdd(E->b, k.i, em_i64c(E, 1), "next");
    em_check(E, LLVMBuildFCmp(E->b, LLVMRealOGT, edge_at(E, b, k.i), edge_at(E, b, next), "down"),
             CC_STATUS_VALUE);
    em_loop_end(E, &k);
    if (em_alloc_array(E, n, TS_INT64, 1, &nbins, &b->hist) < 0) {
        return -1;
    }
    em_fill_view(E, &b->hist, n, LLVMConstInt(i64, 0, 0));
    /* halvings: 64 - ctlz(nedges) */
    LLVMTypeRef ft =
        LLVMFunctionType(i64, (LLVMTypeRef[]){i64, LLVMInt1TypeInContext(E->ctx)}, 2, 0);
    LLVMValueRef ctlz = LLVMGetNamedFunction(E->mod, "llvm.ctlz.i64");
    if (ctlz == NULL) {
        ctlz = LLVMAddFunction(E->mod, "llvm.ctlz.i64", ft);
    }
    LLVMValueRef lz = LLVMBuildCall2(
        E->b, ft, ctlz,
        (LLVMValueRef[]){b->nedges, LLVMConstInt(LLVMInt1TypeInContext(E->ctx), 0, 0)}, 2, "lz");
    b->steps = LLVMBuildSub(E->b, em_i64c(E, 64), lz, "steps");
    LLVMValueRef some = LLVMBuildICmp(E->b, LLVMIntSGT, nbins, em_i64c(E, 0), "some");
    LLVMValueRef lastix = LLVMBuildSelect(E->b, some, nbins, em_i64c(E, 0), "lastix");
    /* no bins: no value is in range (an empty range: first > last) */
    b->first = LLVMBuildSelect(E->b, some, edge_at(E, b, em_i64c(E, 0)),
                               em_real_const(E, TS_FLOAT64, 1.0), "first");
    b->last = LLVMBuildSelect(E->b, some, edge_at(E, b, lastix), em_real_const(E, TS_FLOAT64, 0.0),
                              "last");
    return 0;
}

LLVMValueRef
ec_histogram_call(Emit *E, CcNode *n, const CcBuiltin *builtin, TsKind out)
{
    (void)builtin;
    (void)out;
    Binning b;
    if (histogram_setup(E, n, &b) < 0) {
        return NULL;
    }
    Walk w = {.ndim = n->args[0]->ty->n, .visit = bin_visit, .ctx = &b};
    if (em_run_walk(E, &w, n->args[0]) < 0) {
        return NULL;
    }
    LLVMValueRef t = LLVMGetUndef(em_type_of(E, n->ty));
    t = LLVMBuildInsertValue(E->b, t, em_view_pack(E, &b.hist), 0, "hist");
    return LLVMBuildInsertValue(E->b, t, em_view_pack(E, &b.edges), 1, "edges");
}
