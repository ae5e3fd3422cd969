/*
 * elementwise.c - elementwise array expressions and assignment: the
 * typing of operations lifted over arrays, of a[...] = v and of
 * `a if c else b`; one loop nest over the broadcast shape evaluating the
 * whole expression tree, assignment into views (a temporary where source
 * and target overlap), and counted loops.
 */
#include "compiler/arrays/arrays.h"

#include <stdio.h>
#include <string.h>

/* ======== typing ======== */

/*
 * a[...] = v, a an array whose element kind is inferred: that kind is
 *   the promotion of every v stored into a (weak values as NEP 50 has
 *   them: 1.0 into an array holding float32 keeps float32)
 */
static int
infer_element(Infer *in, CcNode *n, const CcType *t, const CcType **elem)
{
    CcNode *base = n->lhs->lhs;
    t = cc_elem_type(t);
    if (base->kind != ND_VAR || !base->var->infer_elem || t == UNKNOWN) {
        return 0;
    }
    CcVar *a = base->var;
    const CcType *p = a->elem == UNKNOWN ? t : cc_promote(a->elem, t);
    if (ti_is_tuple(t) || p == NULL) {
        char name[96];
        return cc_error(in->fn, n->loc, "cannot store %s into the array '%s'",
                        cc_type_name(t, name, sizeof(name)), a->name);
    }
    if (p != a->elem) {
        a->elem = p;
        a->ty = cc_array_type(cc_storage(p), a->ty->n);
        in->changed = 1;
    }
    if (*elem == UNKNOWN) {
        /* the target typed again with a's kind known: an element, or a view
         * (out[:] = a * 2) */
        return ti_expr(in, n->lhs, elem);
    }
    return 0;
}

/*
 * setitem := a[index] = v
 *   an element: v is cast to a's element kind (as NumPy's casting='unsafe'
 *   assignment does), except complex into a real array, which is an error;
 *   a view: v (a scalar or an array) is broadcast to the view's shape and
 *   cast the same way; in place (a[...] op= v, t op= v), NumPy's ufunc with
 *   out=: its result must cast into a's kind by same_kind (casting.c)
 */
int
ti_setitem(Infer *in, CcNode *n)
{
    const CcType *target, *t;
    if (ti_expr(in, n->lhs, &target) < 0 || ti_expr(in, n->rhs, &t) < 0
        || infer_element(in, n, t, &target) < 0) {
        return -1;
    }
    if (ti_check_writable(in, n, n->lhs) < 0) {
        return -1;
    }
    if (target == UNKNOWN || t == UNKNOWN) {
        return 0;
    }
    const CcType *elem = cc_elem_type(target), *v = cc_elem_type(t);
    const CcType *base = n->lhs->kind == ND_INDEX ? n->lhs->lhs->ty : NULL;
    if (n->lhs->kind == ND_INDEX && n->lhs->nargs == 1 && cc_is_array(n->lhs->args[0]->ty)
        && n->lhs->args[0]->ty->scalar != TS_BOOL && cc_is_array(base) && base->n > 1) {
        return cc_error(in->fn, n->loc,
                        "storing through an integer-array index of a %d-d array "
                        "is not supported yet (reading it is; 1-d arrays take "
                        "both)",
                        base->n);
    }
    if (cc_is_array(t) && n->lhs->kind == ND_INDEX && n->lhs->nargs == 1
        && cc_is_array(n->lhs->args[0]->ty) && t->n > 1) {
        /* a[mask] = v, a[idx] = v: v's elements in order (or its one) */
        return cc_error(in->fn, n->loc,
                        "a %d-d array stored through an index array: NumPy takes a 1-d one "
                        "(its elements in order) or a scalar",
                        t->n);
    }
    if (cc_is_array(t) && !cc_is_array(target)) {
        return cc_error(in->fn, n->loc,
                        "cannot store an array into one element (setting an array element "
                        "with a sequence)");
    }
    if (cc_is_array(t) && t->n > target->n) {
        return cc_error(in->fn, n->loc, "cannot store a %d-d array into a %d-d view", t->n,
                        target->n);
    }
    if (cc_is_array(t)) {
        in->fn->allocates = 1; /* a source that overlaps the target is copied first */
    }
    if (v == UNKNOWN) {
        return 0;
    }
    if (n->index > 0 && cc_is_array(target) && !ti_is_tuple(v)
        && cc_check_inplace(in->fn, n, elem->scalar, cc_storage(v)) < 0) {
        return -1; /* t[1:] += 0.5 of ints: NumPy's same_kind rule */
    }
    if (ti_is_tuple(v) || (ti_is_complex_type(v) && !ti_is_complex_type(elem))) {
        char a[96], b[96];
        return cc_error(in->fn, n->loc, "cannot store %s into an array of %s",
                        cc_type_name(t, a, sizeof(a)), cc_type_name(elem, b, sizeof(b)));
    }
    return ti_fit_const(in, n->rhs, elem); /* a[i] = 300 into int8 raises in NumPy 2 */
}

/*
 * An elementwise operation (operators, np.sqrt ...) typed by elements: an
 * array operand is lifted (lift_operand), and the result is an array of
 * the element result's kind with the largest operand's ndim.  and/or,
 * `not` and `x if c else y` take truth values, which arrays do not have.
 */
int
ti_elementwise(Infer *in, CcNode *n, int rc, int lift, const CcType **t)
{
    if (rc < 0 || lift < 0) {
        return rc;
    }
    const char *bad = NULL;
    if (n->kind == ND_BOOLOP || (n->kind == ND_UNARY && n->op == OP_NOT)) {
        bad = "'and', 'or' and 'not' take truth values, which arrays do not have (NumPy "
              "raises); use &, | and ~";
    } else if (n->kind == ND_IFEXP) {
        bad = "an if-expression cannot choose between arrays in a kernel (use np.where "
              "semantics by assignment)";
    } else if (n->kind == ND_CALL && !cc_flavor_elementwise(cc_builtin(n->builtin)->flavor)) {
        bad = "this function takes scalars, not arrays (NumPy's np.* functions take both)";
    }
    if (bad != NULL) {
        return cc_error(in->fn, n->loc, "%s", bad);
    }
    if (*t != UNKNOWN) {
        *t = cc_array_type(cc_storage(*t), lift);
    }
    if (in->gufunc) {
        /* where its value is needed as an array (a.shape, np.dot, a view of
         * it), the expression is computed into one */
        in->fn->allocates = 1;
    }
    return 0;
}

/*
 * `a if c else b` where a branch is an array: the view chosen, as Python
 * binds the object (nothing is computed elementwise, nothing copied).  The
 * branches must be arrays of one type, which the variable it is assigned to
 * can hold.  0 with *t set, 1 when neither branch is an array (the scalar
 * rule applies), -1 with an error; types[] gets the branches' types either
 * way (typed once: nested if-expressions would be typed 2^depth times).
 */
int
ti_array_choice(Infer *in, CcNode *n, const CcType *types[2], const CcType **t)
{
    if (ti_expr(in, n->then, &types[0]) < 0 || ti_expr(in, n->els, &types[1]) < 0) {
        return -1;
    }
    const CcType *a = types[0], *b = types[1];
    if (!cc_is_array(a) && !cc_is_array(b)) {
        return 1;
    }
    if (a == UNKNOWN || b == UNKNOWN) {
        *t = cc_is_array(a) && b == UNKNOWN ? a : cc_is_array(b) && a == UNKNOWN ? b : UNKNOWN;
        return 0;
    }
    if (a != b) {
        char x[96], y[96];
        return cc_error(in->fn, n->loc,
                        "an if-expression chooses one object: here %s or %s, which no variable "
                        "can hold both of (make both arrays of one type, or use np.where)",
                        cc_type_name(a, x, sizeof(x)), cc_type_name(b, y, sizeof(y)));
    }
    *t = a;
    return 0;
}

/* ======== emission ======== */

/* Collects the leaves of the elementwise tree n into w: array leaves are
 * viewed and scalar leaves computed here, once, before the loop. */
static int
collect(Emit *E, Walk *w, CcNode *n)
{
    if (em_is_elementwise_node(n)) {
        if (w->nswapped >= MAX_LEAVES) {
            return cc_error(E->fn, n->loc, "an array expression with more than %d operations",
                            MAX_LEAVES);
        }
        w->swapped[w->nswapped] = n;
        w->swapped_ty[w->nswapped++] = n->ty;
        CcNode *kids[2] = {n->lhs, n->rhs};
        if (n->kind == ND_INLINE) {
            /* a lifted ufunc: its arguments, the values its parameters take */
            for (int i = 0; i + 1 < n->then->nargs; i++) {
                if (collect(E, w, n->then->args[i]->rhs) < 0) {
                    return -1;
                }
            }
            return 0;
        }
        if (n->kind == ND_BINOP || n->kind == ND_UNARY) {
            for (int i = 0; i < (n->kind == ND_BINOP ? 2 : 1); i++) {
                if (collect(E, w, kids[i]) < 0) {
                    return -1;
                }
            }
            return 0;
        }
        for (int i = 0; i < n->nargs; i++) {
            if (collect(E, w, n->args[i]) < 0) {
                return -1;
            }
        }
        return 0;
    }
    if (w->nleaves >= MAX_LEAVES) {
        return cc_error(E->fn, n->loc, "an array expression with more than %d operands",
                        MAX_LEAVES);
    }
    Leaf *l = &w->leaves[w->nleaves++];
    memset(l, 0, sizeof(*l));
    l->node = n;
    l->ty = n->ty;
    if (cc_is_array(n->ty)) {
        return em_view_of(E, n, &l->v);
    }
    return (l->value = em_expr(E, n)) != NULL ? 0 : -1;
}

/* The iteration shape: the target's, or the broadcast of the leaves'; a
 * leaf that does not broadcast to it ends the kernel (CC_STATUS_SHAPE). */
void
em_broadcast(Emit *E, Walk *w)
{
    LLVMValueRef one = em_i64c(E, 1), bad = LLVMConstInt(LLVMInt1TypeInContext(E->ctx), 0, 0);
    int fixed = w->target.data != NULL;
    for (int d = 0; d < w->ndim; d++) {
        w->shape[d] = fixed ? w->target.shape[d] : one;
    }
    for (int i = 0; i < w->nleaves; i++) {
        Leaf *l = &w->leaves[i];
        if (!cc_is_array(l->ty)) {
            continue;
        }
        int lead = w->ndim - l->v.ndim;
        for (int k = 0; k < l->v.ndim; k++) {
            int d = lead + k;
            LLVMValueRef s = l->v.shape[k];
            LLVMValueRef s1 = LLVMBuildICmp(E->b, LLVMIntEQ, s, one, "s1");
            LLVMValueRef same = LLVMBuildICmp(E->b, LLVMIntEQ, s, w->shape[d], "same");
            if (fixed) {
                bad = LLVMBuildOr(E->b, bad,
                                  LLVMBuildNot(E->b, LLVMBuildOr(E->b, s1, same, ""), ""), "bad");
            } else {
                LLVMValueRef o1 = LLVMBuildICmp(E->b, LLVMIntEQ, w->shape[d], one, "o1");
                bad = LLVMBuildOr(
                    E->b, bad,
                    LLVMBuildNot(E->b, LLVMBuildOr(E->b, LLVMBuildOr(E->b, s1, o1, ""), same, ""),
                                 ""),
                    "bad");
                w->shape[d] = LLVMBuildSelect(E->b, s1, w->shape[d], s, "bshape");
            }
        }
    }
    em_check(E, bad, CC_STATUS_SHAPE);
}

/* Whether no leaf is broadcast: every leaf has the iteration's shape. */
static LLVMValueRef
no_broadcast(Emit *E, Walk *w)
{
    LLVMValueRef all = LLVMConstInt(LLVMInt1TypeInContext(E->ctx), 1, 0);
    for (int i = 0; i < w->nleaves; i++) {
        Leaf *l = &w->leaves[i];
        if (!cc_is_array(l->ty)) {
            continue;
        }
        if (l->v.ndim != w->ndim) {
            return LLVMConstInt(LLVMInt1TypeInContext(E->ctx), 0, 0);
        }
        for (int k = 0; k < l->v.ndim; k++) {
            all = LLVMBuildAnd(
                E->b, all, LLVMBuildICmp(E->b, LLVMIntEQ, l->v.shape[k], w->shape[k], ""), "exact");
        }
    }
    return all;
}

LLVMValueRef
em_address(Emit *E, LLVMValueRef data, LLVMValueRef *stride, LLVMValueRef *idx, int lead, int ndim)
{
    /* inside the loop every index is within its dimension: the offsets
     * cannot wrap and the address is in bounds, which lets LLVM compute the
     * accesses' ranges (and vectorize with runtime alias checks) */
    LLVMValueRef off = em_i64c(E, 0);
    for (int k = 0; k < ndim; k++) {
        off =
            LLVMBuildNSWAdd(E->b, off, LLVMBuildNSWMul(E->b, idx[lead + k], stride[k], ""), "off");
    }
    return LLVMBuildInBoundsGEP2(E->b, LLVMInt8TypeInContext(E->ctx), data, &off, 1, "at");
}

/* The loop body at index idx: each leaf's element, the expression, visit. */
static int
loop_body_at(Emit *E, Walk *w, LLVMValueRef *idx)
{
    for (int i = 0; i < w->nleaves; i++) {
        Leaf *l = &w->leaves[i];
        if (!cc_is_array(l->ty)) {
            l->node->elem = l->value;
            continue;
        }
        int lead = w->ndim - l->v.ndim;
        LLVMValueRef p = em_address(E, l->v.data, l->bstride, idx, lead, l->v.ndim);
        l->node->elem = cc_load(E->b, l->v.kind, p, "x");
    }
    if (w->target.data != NULL) {
        w->target_ptr = em_address(E, w->target.data, w->target.stride, idx, 0, w->ndim);
    }
    LLVMValueRef value = NULL;
    if (w->expr != NULL && (value = em_expr(E, w->expr)) == NULL) {
        return -1;
    }
    return w->visit(E, w, value);
}

/*
 * Marks the loop of latch branch br to be vectorized without interleaving,
 * so that a vector iteration takes VF elements (8 doubles with AVX-512), not
 * the VF x 4 LLVM would choose.  The core dimensions a gufunc kernel walks
 * are often short (rows of 8 or 16), and with interleaving such rows never
 * reached the vector loop: their elements all ran in the scalar remainder,
 * which for a float min/max is a dozen instructions an element (order keys
 * and the NaN flag).  A row maximum over rows of 8 ran 3.5x faster, a
 * copy-and-update kernel over rows of 256 1.5x; long rows in cache lose
 * about 10% (one accumulator).
 */
void
em_one_vector_a_step(Emit *E, LLVMValueRef br)
{
    LLVMMetadataRef one = LLVMValueAsMetadata(LLVMConstInt(LLVMInt32TypeInContext(E->ctx), 1, 0));
    LLVMMetadataRef prop = cc_loop_prop(E->ctx, "llvm.loop.interleave.count", one);
    cc_set_loop_id(br, &prop, 1);
}

/* The loop nest over w->shape, one dimension a level. */
static int
nest(Emit *E, Walk *w, int d, LLVMValueRef *idx)
{
    if (d == w->ndim) {
        return loop_body_at(E, w, idx);
    }
    LLVMTypeRef i64 = em_i64_type(E);
    LLVMBasicBlockRef pre = LLVMGetInsertBlock(E->b);
    LLVMBasicBlockRef head = em_new_block(E, "ew.head"), body = em_new_block(E, "ew.body");
    LLVMBasicBlockRef done = em_new_block(E, "ew.done");
    LLVMValueRef any = LLVMBuildICmp(E->b, LLVMIntSGT, w->shape[d], em_i64c(E, 0), "any");
    for (int k = d + 1; d == 0 && k < w->ndim; k++) {
        /* an empty shape walks nothing, however long its other dimensions */
        any = LLVMBuildAnd(E->b, any,
                           LLVMBuildICmp(E->b, LLVMIntSGT, w->shape[k], em_i64c(E, 0), ""), "any");
    }
    LLVMBuildCondBr(E->b, any, head, done);
    LLVMPositionBuilderAtEnd(E->b, head);
    LLVMValueRef i = LLVMBuildPhi(E->b, i64, "ew.i");
    LLVMBuildBr(E->b, body);
    LLVMPositionBuilderAtEnd(E->b, body);
    idx[d] = i;
    if (nest(E, w, d + 1, idx) < 0) {
        return -1;
    }
    LLVMValueRef next = LLVMBuildNSWAdd(E->b, i, em_i64c(E, 1), "ew.next");
    LLVMBasicBlockRef latch = LLVMGetInsertBlock(E->b);
    LLVMValueRef br = LLVMBuildCondBr(
        E->b, LLVMBuildICmp(E->b, LLVMIntSLT, next, w->shape[d], "more"), head, done);
    if (d == w->ndim - 1) {
        em_one_vector_a_step(E, br);
    }
    LLVMValueRef in_vals[2] = {em_i64c(E, 0), next};
    LLVMBasicBlockRef in_bbs[2] = {pre, latch};
    LLVMAddIncoming(i, in_vals, in_bbs, 2);
    LLVMPositionBuilderAtEnd(E->b, done);
    return 0;
}

/* Swaps the operators' types to their elements' (in the loop) and back. */
static void
swap_types(Walk *w, int into_loop)
{
    for (int i = 0; i < w->nswapped; i++) {
        w->swapped[i]->ty = into_loop ? cc_elem_type(w->swapped_ty[i]) : w->swapped_ty[i];
    }
    for (int i = 0; i < w->nleaves; i++) {
        Leaf *l = &w->leaves[i];
        l->node->ty = into_loop ? cc_elem_type(l->ty) : l->ty;
        if (!into_loop) {
            l->node->elem = NULL;
        }
    }
}

/* The loop once, each leaf walked with its strides or, broadcast, zero ones. */
static int
emit_loop(Emit *E, Walk *w, int broadcast_strides)
{
    for (int i = 0; i < w->nleaves; i++) {
        Leaf *l = &w->leaves[i];
        int lead = w->ndim - l->v.ndim;
        for (int k = 0; cc_is_array(l->ty) && k < l->v.ndim; k++) {
            l->bstride[k] = l->v.stride[k];
            if (broadcast_strides) {
                LLVMValueRef b =
                    LLVMBuildICmp(E->b, LLVMIntNE, l->v.shape[k], w->shape[lead + k], "bcast");
                l->bstride[k] = LLVMBuildSelect(E->b, b, em_i64c(E, 0), l->v.stride[k], "bstride");
            }
        }
    }
    LLVMValueRef idx[TS_MAXDIMS];
    swap_types(w, 1);
    int rc = nest(E, w, 0, idx);
    swap_types(w, 0);
    return rc;
}

/* Runs w: collects expr's leaves, checks the shapes, emits both loops. */
/* Collects expr (the whole elementwise tree) into w: its leaves are viewed
 * and computed here, in Python's order, before anything is written. */
int
em_collect_expr(Emit *E, Walk *w, CcNode *expr)
{
    w->expr = expr;
    w->nleaves = 0;
    w->nswapped = 0;
    if ((w->leaves = cc_alloc(E->fn->arena, sizeof(Leaf) * MAX_LEAVES)) == NULL) {
        return -1;
    }
    return collect(E, w, expr);
}

/* Emits a collected walk: the shape checks, then the loop without and the
 * loop with broadcast strides, chosen at run time. */
int
em_run_collected(Emit *E, Walk *w)
{
    int arrays = 0, full = 1;
    for (int i = 0; i < w->nleaves; i++) {
        if (cc_is_array(w->leaves[i].ty)) {
            arrays++;
            full &= w->leaves[i].v.ndim == w->ndim;
        }
    }
    if (w->target.data == NULL && arrays <= 1 && full) {
        /* one array of the walk's rank and no target (a reduction, a copy
         * made): its shape is the walk's, nothing can be broadcast */
        em_broadcast(E, w);
        return emit_loop(E, w, 0);
    }
    em_broadcast(E, w);
    LLVMBasicBlockRef exact = em_new_block(E, "ew.exact"), general = em_new_block(E, "ew.bcast");
    LLVMBasicBlockRef done = em_new_block(E, "ew.end");
    LLVMBuildCondBr(E->b, no_broadcast(E, w), exact, general);
    LLVMPositionBuilderAtEnd(E->b, exact);
    if (emit_loop(E, w, 0) < 0) {
        return -1;
    }
    LLVMBuildBr(E->b, done);
    LLVMPositionBuilderAtEnd(E->b, general);
    if (emit_loop(E, w, 1) < 0) {
        return -1;
    }
    LLVMBuildBr(E->b, done);
    LLVMPositionBuilderAtEnd(E->b, done);
    return 0;
}

int
em_run_walk(Emit *E, Walk *w, CcNode *expr)
{
    return em_collect_expr(E, w, expr) < 0 ? -1 : em_run_collected(E, w);
}

/* ---- assignment ---- */

int
em_store_visit(Emit *E, Walk *w, LLVMValueRef value)
{
    const CcType *from = w->expr->ty; /* its element type, in the loop */
    cc_store(E->b, w->target.kind, em_convert_type(E, value, from, cc_scalar_type(w->target.kind)),
             w->target_ptr);
    return 0;
}

/* The bytes a view spans: [lo, hi) as integers; empty views span nothing. */
void
em_span(Emit *E, const View *v, LLVMValueRef *lo, LLVMValueRef *hi, LLVMValueRef *empty)
{
    LLVMTypeRef i64 = em_i64_type(E);
    LLVMValueRef base = LLVMBuildPtrToInt(E->b, v->data, i64, "base");
    *lo = base;
    *hi = LLVMBuildAdd(E->b, base, em_i64c(E, ts_itemsize(v->kind)), "hi");
    *empty = LLVMConstInt(LLVMInt1TypeInContext(E->ctx), 0, 0);
    for (int k = 0; k < v->ndim; k++) {
        LLVMValueRef ext = LLVMBuildMul(E->b, LLVMBuildSub(E->b, v->shape[k], em_i64c(E, 1), ""),
                                        v->stride[k], "ext");
        LLVMValueRef neg = LLVMBuildICmp(E->b, LLVMIntSLT, ext, em_i64c(E, 0), "");
        *lo = LLVMBuildAdd(E->b, *lo, LLVMBuildSelect(E->b, neg, ext, em_i64c(E, 0), ""), "lo");
        *hi = LLVMBuildAdd(E->b, *hi, LLVMBuildSelect(E->b, neg, em_i64c(E, 0), ext, ""), "hi");
        *empty = LLVMBuildOr(
            E->b, *empty, LLVMBuildICmp(E->b, LLVMIntSLE, v->shape[k], em_i64c(E, 0), ""), "empty");
    }
}

/* Whether leaf l is the target t itself (a[:] = a * 2), whose elements are
 * each read before they are written. */
LLVMValueRef
em_same_view(Emit *E, const View *l, const View *t)
{
    if (l->ndim != t->ndim) {
        return LLVMConstInt(LLVMInt1TypeInContext(E->ctx), 0, 0);
    }
    LLVMValueRef same = LLVMBuildICmp(E->b, LLVMIntEQ, l->data, t->data, "same");
    for (int k = 0; k < l->ndim; k++) {
        LLVMValueRef eq =
            LLVMBuildAnd(E->b, LLVMBuildICmp(E->b, LLVMIntEQ, l->shape[k], t->shape[k], ""),
                         LLVMBuildICmp(E->b, LLVMIntEQ, l->stride[k], t->stride[k], ""), "");
        same = LLVMBuildAnd(E->b, same, eq, "same");
    }
    return same;
}

/* Whether leaf l may overlap the target t other than element for element. */
static LLVMValueRef
overlaps(Emit *E, const View *l, const View *t)
{
    LLVMValueRef llo, lhi, lempty, tlo, thi, tempty;
    em_span(E, l, &llo, &lhi, &lempty);
    em_span(E, t, &tlo, &thi, &tempty);
    LLVMValueRef meet = LLVMBuildAnd(E->b, LLVMBuildICmp(E->b, LLVMIntULT, llo, thi, ""),
                                     LLVMBuildICmp(E->b, LLVMIntULT, tlo, lhi, ""), "meet");
    meet = LLVMBuildAnd(E->b, meet, LLVMBuildNot(E->b, LLVMBuildOr(E->b, lempty, tempty, ""), ""),
                        "meet");
    return LLVMBuildAnd(E->b, meet, LLVMBuildNot(E->b, em_same_view(E, l, t), ""), "overlap");
}

/* target[...] = value, a scalar computed already, broadcast. */
int
em_fill_view(Emit *E, const View *target, CcNode *expr, LLVMValueRef value)
{
    Walk w = {.ndim = target->ndim, .target = *target, .visit = em_store_visit};
    Leaf leaf = {.node = expr, .ty = expr->ty, .value = value};
    w.expr = expr;
    w.leaves = &leaf;
    w.nleaves = 1;
    em_broadcast(E, &w);
    return emit_loop(E, &w, 0);
}

/* A collected expression (w: its leaves) into a new array of its shape. */
int
em_materialize_collected(Emit *E, Walk *w, CcNode *at, View *v)
{
    const CcType *t = w->expr->ty;
    w->ndim = t->n;
    w->target.data = NULL;
    em_broadcast(E, w);
    if (em_alloc_array(E, at, t->scalar, t->n, w->shape, v) < 0) {
        return -1;
    }
    w->target = *v;
    return em_run_collected(E, w);
}

/* An elementwise expression's value: a new array of its broadcast shape. */
int
em_materialize(Emit *E, CcNode *n, View *v)
{
    Walk w = {.visit = em_store_visit};
    return em_collect_expr(E, &w, n) < 0 ? -1 : em_materialize_collected(E, &w, n, v);
}

/*
 * target[...] = w's expression (collected before the target was viewed, as
 * Python evaluates the value first).  An array leaf that overlaps the target
 * other than element for element sends the value through a temporary.
 */
static int
assign_collected(Emit *E, CcNode *at, const View *target, Walk *w)
{
    w->ndim = target->ndim;
    w->target = *target;
    int arrays = 0;
    for (int i = 0; i < w->nleaves; i++) {
        arrays += cc_is_array(w->leaves[i].ty);
    }
    if (arrays == 0 || E->alloc_head == NULL) {
        /* nothing can overlap (all scalars), or no temporary can be made
         * (a device): element order then decides, as a loop written out would */
        return em_run_collected(E, w);
    }
    /* First whether a leaf other than the target itself lies in an array
     * that meets the target's: tests of values that, for views of the
     * kernel's arguments, LICM takes out of the loops making the views.
     * Only then the views themselves. */
    View t = *target;
    em_within(E, &t);
    LLVMBasicBlockRef check = em_new_block(E, "assign.check");
    LLVMBasicBlockRef direct = em_new_block(E, "assign.direct");
    LLVMBasicBlockRef copy = em_new_block(E, "assign.copy"), done = em_new_block(E, "assign.done");
    for (int i = 0; i < w->nleaves; i++) {
        if (!cc_is_array(w->leaves[i].ty)) {
            continue;
        }
        View *l = &w->leaves[i].v;
        em_within(E, l);
        LLVMValueRef meet =
            LLVMBuildAnd(E->b, LLVMBuildICmp(E->b, LLVMIntULT, l->lo, t.hi, ""),
                         LLVMBuildICmp(E->b, LLVMIntULT, t.lo, l->hi, ""), "arrays.meet");
        LLVMBasicBlockRef same = em_new_block(E, "assign.same"),
                          next = em_new_block(E, "assign.next");
        LLVMBuildCondBr(E->b, meet, same, next);
        LLVMPositionBuilderAtEnd(E->b, same);
        LLVMBuildCondBr(E->b, em_same_view(E, l, target), next, check);
        LLVMPositionBuilderAtEnd(E->b, next);
    }
    LLVMBuildBr(E->b, direct);
    LLVMPositionBuilderAtEnd(E->b, check);
    LLVMValueRef any = LLVMConstInt(LLVMInt1TypeInContext(E->ctx), 0, 0);
    for (int i = 0; i < w->nleaves; i++) {
        if (cc_is_array(w->leaves[i].ty)) {
            any = LLVMBuildOr(E->b, any, overlaps(E, &w->leaves[i].v, target), "any");
        }
    }
    LLVMBuildCondBr(E->b, any, copy, direct);
    LLVMPositionBuilderAtEnd(E->b, direct);
    if (em_run_collected(E, w) < 0) {
        return -1;
    }
    LLVMBuildBr(E->b, done);
    LLVMPositionBuilderAtEnd(E->b, copy);
    View tmp;
    if (em_materialize_collected(E, w, at, &tmp) < 0) {
        return -1;
    }
    CcNode leaf = {.kind = ND_VAR, .loc = at->loc, .ty = cc_array_type(tmp.kind, tmp.ndim)};
    Walk c = {.ndim = target->ndim, .target = *target, .visit = em_store_visit};
    Leaf l = {.node = &leaf, .ty = leaf.ty, .v = tmp};
    c.expr = &leaf;
    c.leaves = &l;
    c.nleaves = 1;
    if (em_run_collected(E, &c) < 0) {
        return -1;
    }
    LLVMBuildBr(E->b, done);
    LLVMPositionBuilderAtEnd(E->b, done);
    return 0;
}

/* Whether node n itself can end the kernel with a status other than
 * CC_STATUS_INDEX (cc_node_any). */
static int
fails_otherwise(const CcNode *n, void *ctx)
{
    if (n->kind == ND_INLINE || n->kind == ND_SLICE
        || (cc_is_array(n->ty) && n->kind != ND_VAR && n->kind != ND_INDEX)) {
        return 1; /* an array expression can fail to broadcast */
    }
    for (int i = 0; n->kind == ND_INDEX && i < n->nargs; i++) {
        const CcType *t = n->args[i]->ty;
        for (int k = 0; t != NULL && k < (t->kind == CT_TUPLE ? t->n : 1); k++) {
            if ((t->kind == CT_TUPLE ? t->elems[k] : t)->scalar == TS_UINT64) {
                return 1; /* a uint64 index past int64: OverflowError */
            }
        }
    }
    if (n->kind == ND_CALL) {
        CcFlavor f = cc_builtin(n->builtin)->flavor;
        if (f == FL_ALLOC || f == FL_LIKE || f == FL_REDUCE || f == FL_SORT || f == FL_DOT
            || f == FL_ARANGE || f == FL_ARRAY || f == FL_HIST || f == FL_RESHAPE) {
            return 1;
        }
    }
    return 0;
}

/* Whether evaluating n can end the kernel with a status other than
 * CC_STATUS_INDEX (a reduction of an empty array, an allocation, a slice's
 * zero step, whatever a device function does). */
static int
may_fail_otherwise(const CcNode *n)
{
    return cc_node_any(n, fails_otherwise, NULL);
}

int
em_setitem_view(Emit *E, CcNode *n)
{
    if (em_is_mask_index(n->lhs) || em_is_fancy_index(n->lhs)) {
        return em_indexed_write(E, n);
    }
    View target;
    int element = 0;
    Walk w = {.visit = em_store_visit};
    LLVMValueRef v = NULL;
    int target_first = !cc_is_array(n->lhs->ty) && !may_fail_otherwise(n->rhs);
    if (target_first && em_index_view(E, n->lhs, &target, &element) < 0) {
        return -1;
    }
    if (cc_is_array(n->rhs->ty) ? em_collect_expr(E, &w, n->rhs) < 0
                                : (v = em_expr(E, n->rhs)) == NULL) {
        return -1;
    }
    if (!target_first && em_index_view(E, n->lhs, &target, &element) < 0) {
        return -1;
    }
    if (element) {
        cc_store(E->b, target.kind, em_convert_type(E, v, n->rhs->ty, cc_scalar_type(target.kind)),
                 target.data);
        return 0;
    }
    return v != NULL ? em_fill_view(E, &target, n->rhs, v) : assign_collected(E, n, &target, &w);
}

/* ---- counted loops (np.dot, reductions along an axis) ---- */

/* for (l->i = 0; l->i < count; l->i++): the body follows; em_loop_end closes it. */
void
em_loop_begin(Emit *E, Loop *l, LLVMValueRef count, const char *name)
{
    l->pre = LLVMGetInsertBlock(E->b);
    l->head = em_new_block(E, name);
    l->done = em_new_block(E, "loop.done");
    l->count = count;
    LLVMBuildCondBr(E->b, LLVMBuildICmp(E->b, LLVMIntSGT, count, em_i64c(E, 0), "any"), l->head,
                    l->done);
    LLVMPositionBuilderAtEnd(E->b, l->head);
    l->i = LLVMBuildPhi(E->b, em_i64_type(E), name);
}

void
em_loop_end(Emit *E, Loop *l)
{
    LLVMValueRef next = LLVMBuildNSWAdd(E->b, l->i, em_i64c(E, 1), "next");
    LLVMBasicBlockRef latch = LLVMGetInsertBlock(E->b);
    LLVMBuildCondBr(E->b, LLVMBuildICmp(E->b, LLVMIntSLT, next, l->count, "more"), l->head,
                    l->done);
    LLVMValueRef vals[2] = {em_i64c(E, 0), next};
    LLVMBasicBlockRef bbs[2] = {l->pre, latch};
    LLVMAddIncoming(l->i, vals, bbs, 2);
    LLVMPositionBuilderAtEnd(E->b, l->done);
}
