/*
 * ndindex.c - np.ndindex's loop: nested loops, one per dimension.
 *
 * lower.c lowers `for idx in np.ndindex(shape)` to a range loop over a flat
 * k with `idx = .unravel(k, shape)` as the body's first statement (the
 * shape's length, so the loop's depth, is known only once typed).  Here
 * that loop is emitted as nested loops over each dimension, the innermost
 * running the body: the index tuple is the loops' counters, each an
 * induction variable LLVM bounds (0 <= i < dim), so the body's index
 * arithmetic is strength-reduced, its bounds checks fold and its loads of
 * loop-invariant values are hoisted.  Unravelling k by division cost one or
 * two 64-bit divisions an element, and carrying a tuple from one k to the
 * next (+1 with a carry into the dimension before, as selects) kept the
 * counters out of LLVM's sight: a grouped reduction over np.ndindex ran at
 * 0.5-0.7 of Numba's speed.  A shape of no dimensions (one empty tuple)
 * keeps the flat loop with em_ndindex_next.
 */
#include "compiler/emit.h"

/* dims[0..nd) of the shape expression (a tuple or an int) as int64; nd, or
 * -1 with an exception. */
int
em_shape_dims(Emit *E, CcNode *shape, LLVMValueRef *dims)
{
    LLVMValueRef s = em_expr(E, shape);
    if (s == NULL) {
        return -1;
    }
    int nd = shape->ty->kind == CT_TUPLE ? shape->ty->n : 1;
    for (int i = 0; i < nd; i++) {
        dims[i] = shape->ty->kind == CT_TUPLE
                      ? em_convert(E, LLVMBuildExtractValue(E->b, s, (unsigned)i, "dim"),
                                   cc_storage(shape->ty->elems[i]), TS_INT64)
                      : em_convert(E, s, cc_storage(shape->ty), TS_INT64);
    }
    return nd;
}

LLVMValueRef
em_ndindex_next(Emit *E, LLVMTypeRef tuple_t, LLVMValueRef k, LLVMValueRef *dims, int nd)
{
    LLVMTypeRef i64 = LLVMInt64TypeInContext(E->ctx);
    LLVMValueRef slot = em_entry_alloca(E, tuple_t, "ndindex.slot");
    LLVMValueRef prev = LLVMBuildLoad2(E->b, tuple_t, slot, "ndindex.prev");
    LLVMValueRef zero = LLVMConstInt(i64, 0, 0);
    LLVMValueRef first = LLVMBuildICmp(E->b, LLVMIntEQ, k, zero, "ndindex.first");
    LLVMValueRef carry = LLVMConstInt(LLVMInt1TypeInContext(E->ctx), 1, 0);
    LLVMValueRef t = LLVMGetUndef(tuple_t);
    for (int i = nd - 1; i >= 0; i--) {
        LLVMValueRef c = LLVMBuildExtractValue(E->b, prev, (unsigned)i, "ndindex.c");
        LLVMValueRef inc =
            LLVMBuildAdd(E->b, c, LLVMBuildZExt(E->b, carry, i64, ""), "ndindex.inc");
        LLVMValueRef wrap =
            LLVMBuildAnd(E->b, carry, LLVMBuildICmp(E->b, LLVMIntEQ, inc, dims[i], "ndindex.end"),
                         "ndindex.wrap");
        LLVMValueRef v = LLVMBuildSelect(E->b, wrap, zero, inc, "ndindex.v");
        v = LLVMBuildSelect(E->b, first, zero, v, "ndindex.v0");
        /* an index is never negative: with its sign bit known clear, the
         * negative-index wrap of a[idx] folds away */
        v = LLVMBuildAnd(E->b, v, LLVMConstInt(i64, 0x7FFFFFFFFFFFFFFFULL, 0), "ndindex.i");
        t = LLVMBuildInsertValue(E->b, t, v, (unsigned)i, "index");
        carry = wrap;
    }
    LLVMBuildStore(E->b, t, slot);
    return t;
}

/* The .ndsize(shape) call bounding np.ndindex's flat loop n, or NULL when
 * n is another loop. */
static CcNode *
ndsize_of(CcNode *n)
{
    if (n->nargs != 1 || n->args[0]->kind != ND_CALL) {
        return NULL;
    }
    return cc_builtin(n->args[0]->builtin)->flavor == FL_NDSIZE ? n->args[0] : NULL;
}

/* The blocks of one dimension's loop. */
typedef struct NdLevel {
    LLVMValueRef counter;
    LLVMBasicBlockRef cond, body, latch;
} NdLevel;

/* The innermost body: the index tuple from the counters, handed to the
 * body's .unravel(k, shape) (em_ndindex_tuple), then the user's statements. */
static int
innermost_body(Emit *E, CcNode *n, NdLevel *lv, int nd, LLVMBasicBlockRef done)
{
    LLVMTypeRef i64 = LLVMInt64TypeInContext(E->ctx);
    LLVMTypeRef *elems = cc_alloc(E->fn->arena, sizeof(LLVMTypeRef) * (size_t)nd);
    if (elems == NULL) {
        return -1;
    }
    for (int d = 0; d < nd; d++) {
        elems[d] = i64;
    }
    LLVMValueRef t = LLVMGetUndef(LLVMStructTypeInContext(E->ctx, elems, (unsigned)nd, 0));
    for (int d = 0; d < nd; d++) {
        LLVMValueRef c = LLVMBuildLoad2(E->b, i64, lv[d].counter, "ndindex.c");
        t = LLVMBuildInsertValue(E->b, t, c, (unsigned)d, "index");
    }
    CcVar *saved_k = E->ndindex_k;
    LLVMValueRef saved_t = E->ndindex_tuple;
    E->ndindex_k = n->var;
    E->ndindex_tuple = t;
    int rc = em_loop_body(E, n->then, done, lv[nd - 1].latch);
    E->ndindex_k = saved_k;
    E->ndindex_tuple = saved_t;
    return rc;
}

/* Each level's condition, and its body entering the next level at 0. */
static void
level_blocks(Emit *E, NdLevel *lv, int d, int nd, LLVMValueRef dim, LLVMBasicBlockRef exit)
{
    LLVMTypeRef i64 = LLVMInt64TypeInContext(E->ctx);
    em_continue_at(E, lv[d].cond, 1);
    LLVMValueRef c = LLVMBuildLoad2(E->b, i64, lv[d].counter, "ndindex.i");
    LLVMBuildCondBr(E->b, LLVMBuildICmp(E->b, LLVMIntSLT, c, dim, "ndindex.more"), lv[d].body,
                    exit);
    em_continue_at(E, lv[d].body, 1);
    if (d + 1 < nd) {
        LLVMBuildStore(E->b, LLVMConstInt(i64, 0, 0), lv[d + 1].counter);
        em_jump(E, lv[d + 1].cond);
    }
}

/* Each level's latch: its counter + 1 (below its dimension: no wrap). */
static void
latch_blocks(Emit *E, NdLevel *lv, int nd)
{
    LLVMTypeRef i64 = LLVMInt64TypeInContext(E->ctx);
    for (int d = nd - 1; d >= 0; d--) {
        em_continue_at(E, lv[d].latch, 1);
        LLVMValueRef c = LLVMBuildLoad2(E->b, i64, lv[d].counter, "ndindex.cur");
        LLVMBuildStore(E->b, LLVMBuildNSWAdd(E->b, c, LLVMConstInt(i64, 1, 0), "ndindex.next"),
                       lv[d].counter);
        em_jump(E, lv[d].cond);
    }
}

/* The counters and blocks of nd levels. */
static void
new_levels(Emit *E, NdLevel *lv, int nd)
{
    LLVMTypeRef i64 = LLVMInt64TypeInContext(E->ctx);
    for (int d = 0; d < nd; d++) {
        lv[d] =
            (NdLevel){em_entry_alloca(E, i64, "ndindex.counter"), em_new_block(E, "ndindex.cond"),
                      em_new_block(E, "ndindex.body"), em_new_block(E, "ndindex.next")};
    }
}

/* The loops of nd levels over dims, count indices in all; then the else
 * block.  0/-1. */
static int
nested_loops(Emit *E, CcNode *n, LLVMValueRef count, LLVMValueRef *dims, int nd)
{
    NdLevel lv[TS_MAXDIMS + 1];
    LLVMTypeRef i64 = LLVMInt64TypeInContext(E->ctx);
    new_levels(E, lv, nd);
    LLVMBasicBlockRef els = em_new_block(E, "for.else"), done = em_new_block(E, "for.done");
    /* no index at all (some dimension 0): straight to the else block */
    LLVMBuildStore(E->b, LLVMConstInt(i64, 0, 0), lv[0].counter);
    LLVMBuildCondBr(E->b,
                    LLVMBuildICmp(E->b, LLVMIntSGT, count, LLVMConstInt(i64, 0, 0), "ndindex.any"),
                    lv[0].cond, els);
    for (int d = 0; d < nd; d++) {
        level_blocks(E, lv, d, nd, dims[d], d == 0 ? els : lv[d - 1].latch);
    }
    if (innermost_body(E, n, lv, nd, done) < 0) {
        return -1;
    }
    latch_blocks(E, lv, nd);
    /* as array loops are: short rows reach the vector loop */
    em_one_vector_a_step(E, LLVMGetLastInstruction(lv[nd - 1].latch));
    em_continue_at(E, els, 1);
    if (em_block(E, n->els) < 0) {
        return -1;
    }
    if (E->reachable) {
        em_jump(E, done);
    }
    em_continue_at(E, done, 1);
    return 0;
}

int
em_ndindex_loop(Emit *E, CcNode *n)
{
    CcNode *size = ndsize_of(n);
    LLVMValueRef dims[TS_MAXDIMS + 1], count;
    if (size == NULL) {
        return 0;
    }
    CcNode *shape = size->args[size->nargs - 1];
    int nd = shape->ty->kind == CT_TUPLE ? shape->ty->n : 1;
    if (nd == 0) {
        return 0;
    }
    /* .ndsize checks the shape (a negative dimension, a size past int64) */
    if ((count = em_expr(E, size)) == NULL || em_shape_dims(E, shape, dims) < 0) {
        return -1;
    }
    return nested_loops(E, n, count, dims, nd) < 0 ? -1 : 1;
}
