/*
 * reshape.c - a.reshape(shape), a.reshape(d0, d1, ...), np.reshape(a,
 * shape), a.ravel() and np.ravel(a): a view where NumPy gives a view, a copy
 * where NumPy copies, so that writing through the result reaches the array
 * exactly when it does in NumPy.
 *
 * NumPy's rules, followed here: a C-contiguous array (an empty one too) is
 * viewed with the new shape's C strides; ravel() copies any other array
 * (even a 1-d one with a step); reshape() first tries to view it without a
 * copy, grouping the old and new dimensions whose products meet and
 * checking that each group of old ones is contiguous in itself
 * (numbavec_rt_nocopy_reshape in runtime.c), and copies into C order only
 * where that fails.  One dimension may be negative, which stands for what
 * the size leaves (NumPy takes any negative number so); a size that does
 * not match, or two unknown dimensions, end the kernel with NumPy's
 * ValueError.  A cuda kernel cannot allocate an array of a size known only
 * when it runs: there a reshape that needs a copy, or the grouping, is that
 * ValueError too (views of contiguous arrays are what GPU kernels reshape).
 */
#include "compiler/arrays/arrays.h"

#include <string.h>

/* ======== typing ======== */

/* A dimension of the new shape: an integer (not a bool), int64 if weak. */
static int
shape_item(Infer *in, CcNode *at, const CcType *t)
{
    if (!ti_is_integral(t) || ti_is_bool(t) || ti_is_tuple(t) || cc_is_array(t)) {
        return ti_type_error(in, at, "reshape() to a shape of", t, NULL);
    }
    return 0;
}

/*
 * reshape := a.reshape(shape) | a.reshape(d0, d1, ...) | np.reshape(a, shape)
 *          | a.ravel() | np.ravel(a)
 *   shape: a tuple of integers or one integer; the result is an array of
 *   as many dimensions, of a's elements (ravel: one dimension).
 */
int
ti_reshape_call(Infer *in, CcNode *n, const CcBuiltin *b, const CcType **out)
{
    const CcType *a, *t;
    *out = UNKNOWN;
    if (ti_expr(in, n->args[0], &a) < 0) {
        return -1;
    }
    if (a != UNKNOWN && !cc_is_array(a)) {
        char name[96];
        return cc_error(in->fn, n->args[0]->loc, "%s() of %s: it takes an array", b->name,
                        cc_type_name(a, name, sizeof(name)));
    }
    int nd = 1;
    if (b->op == RS_RESHAPE && n->nargs == 2) {
        if (ti_expr(in, n->args[1], &t) < 0) {
            return -1;
        }
        if (t == UNKNOWN) {
            return 0;
        }
        nd = ti_is_tuple(t) ? t->n : 1;
        for (int i = 0; i < nd; i++) {
            if (shape_item(in, n->args[1], ti_is_tuple(t) ? t->elems[i] : t) < 0) {
                return -1;
            }
        }
        if (!ti_is_tuple(t) && ti_fit_const(in, n->args[1], cc_scalar_type(TS_INT64)) < 0) {
            return -1;
        }
    } else if (b->op == RS_RESHAPE) {
        nd = n->nargs - 1;
        for (int i = 1; i < n->nargs; i++) {
            if (ti_expr(in, n->args[i], &t) < 0) {
                return -1;
            }
            if (t == UNKNOWN) {
                return 0;
            }
            if (shape_item(in, n->args[i], t) < 0
                || ti_fit_const(in, n->args[i], cc_scalar_type(TS_INT64)) < 0) {
                return -1;
            }
        }
    }
    if (nd < 1 || nd > TS_MAXDIMS) {
        return cc_error(in->fn, n->loc,
                        "reshape() to %d dimensions: a kernel's arrays have 1 to %d", nd,
                        TS_MAXDIMS);
    }
    if (a == UNKNOWN || a->scalar == TS_INFER) {
        return 0;
    }
    if (!in->fn->device) {
        in->fn->allocates = 1; /* the copy, where no view can be had */
    }
    *out = cc_array_type(a->scalar, nd);
    return 0;
}

/* ======== emission ======== */

/* The new shape's dimensions, as int64s: one argument (a tuple or an int,
 * em_shape_dims), or one argument a dimension. */
static int
new_dims(Emit *E, CcNode *n, int nd, LLVMValueRef *dims)
{
    if (n->nargs == 2) {
        return em_shape_dims(E, n->args[1], dims) < 0 ? -1 : 0;
    }
    for (int i = 0; i < nd; i++) {
        if ((dims[i] = em_expr_as(E, n->args[1 + i], TS_INT64)) == NULL) {
            return -1;
        }
    }
    return 0;
}

/* A negative dimension takes what the others leave of size; true where
 * that is not whole, two are negative, or the product is not size. */
static LLVMValueRef
fix_unknown(Emit *E, LLVMValueRef *dims, int nd, LLVMValueRef size)
{
    LLVMValueRef zero = em_i64c(E, 0), one = em_i64c(E, 1);
    LLVMValueRef known = one, unknowns = zero;
    for (int i = 0; i < nd; i++) {
        LLVMValueRef neg = LLVMBuildICmp(E->b, LLVMIntSLT, dims[i], zero, "rs.neg");
        known = LLVMBuildMul(E->b, known, LLVMBuildSelect(E->b, neg, one, dims[i], ""), "rs.known");
        unknowns = LLVMBuildAdd(E->b, unknowns, LLVMBuildZExt(E->b, neg, em_i64_type(E), ""),
                                "rs.unknowns");
    }
    /* size / known, or 0 where known is 0 (then the product cannot be size
     * unless size is 0 too, and NumPy refuses -1 beside a 0 even then) */
    LLVMValueRef nonzero = LLVMBuildICmp(E->b, LLVMIntNE, known, zero, "rs.nonzero");
    LLVMValueRef safe = LLVMBuildSelect(E->b, nonzero, known, one, "rs.div");
    LLVMValueRef rest = LLVMBuildSDiv(E->b, size, safe, "rs.rest");
    LLVMValueRef whole =
        LLVMBuildICmp(E->b, LLVMIntEQ, LLVMBuildSRem(E->b, size, safe, ""), zero, "rs.whole");
    for (int i = 0; i < nd; i++) {
        LLVMValueRef neg = LLVMBuildICmp(E->b, LLVMIntSLT, dims[i], zero, "rs.neg");
        dims[i] = LLVMBuildSelect(E->b, neg, rest, dims[i], "rs.dim");
    }
    LLVMValueRef has = LLVMBuildICmp(E->b, LLVMIntNE, unknowns, zero, "rs.has");
    LLVMValueRef bad_unknown = LLVMBuildAnd(
        E->b, has,
        LLVMBuildOr(E->b, LLVMBuildNot(E->b, LLVMBuildAnd(E->b, nonzero, whole, ""), ""),
                    LLVMBuildICmp(E->b, LLVMIntUGT, unknowns, one, ""), ""),
        "rs.bad.unknown");
    LLVMValueRef product = one;
    for (int i = 0; i < nd; i++) {
        product = LLVMBuildMul(E->b, product, dims[i], "rs.product");
    }
    LLVMValueRef differs = LLVMBuildICmp(E->b, LLVMIntNE, product, size, "rs.differs");
    return LLVMBuildOr(E->b, bad_unknown, differs, "rs.bad");
}

/* Whether a is C-contiguous as NumPy's flag says: empty, or each
 * dimension's stride the product of those after it (dimensions of one
 * skipped: their stride never moves). */
static LLVMValueRef
c_contiguous(Emit *E, const View *a, LLVMValueRef size)
{
    LLVMValueRef ok = LLVMBuildICmp(E->b, LLVMIntEQ, size, em_i64c(E, 0), "rs.empty");
    LLVMValueRef all = LLVMConstInt(LLVMInt1TypeInContext(E->ctx), 1, 0);
    LLVMValueRef expect = em_i64c(E, ts_itemsize(a->kind)), one = em_i64c(E, 1);
    for (int d = a->ndim - 1; d >= 0; d--) {
        LLVMValueRef unit = LLVMBuildICmp(E->b, LLVMIntEQ, a->shape[d], one, "rs.unit");
        LLVMValueRef same = LLVMBuildICmp(E->b, LLVMIntEQ, a->stride[d], expect, "rs.same");
        all = LLVMBuildAnd(E->b, all, LLVMBuildOr(E->b, unit, same, ""), "rs.c");
        expect = LLVMBuildMul(E->b, expect, a->shape[d], "rs.expect");
    }
    return LLVMBuildOr(E->b, ok, all, "rs.contiguous");
}

/* i64 slots for nd values (an entry-block array). */
static LLVMValueRef
slots(Emit *E, int nd, const char *name)
{
    return em_entry_alloca(E, LLVMArrayType2(em_i64_type(E), (unsigned long long)nd), name);
}

static LLVMValueRef
slot_at(Emit *E, LLVMValueRef base, int i)
{
    LLVMValueRef at = em_i64c(E, i);
    return LLVMBuildInBoundsGEP2(E->b, em_i64_type(E), base, &at, 1, "");
}

/* The copy of a in C order, its data and span stored in the slots. */
static int
copy_into(Emit *E, CcNode *n, View *a, LLVMValueRef data, LLVMValueRef lo, LLVMValueRef hi)
{
    CcNode src = {.kind = ND_VIEW, .loc = n->loc, .ty = cc_array_type(a->kind, a->ndim), .view = a};
    View c;
    if (em_copy_as(E, &src, a->kind, &c) < 0) {
        return -1;
    }
    em_within(E, &c);
    LLVMBuildStore(E->b, c.data, data);
    LLVMBuildStore(E->b, c.lo, lo);
    LLVMBuildStore(E->b, c.hi, hi);
    return 0;
}

int
em_reshape_view(Emit *E, CcNode *n, View *v)
{
    const CcBuiltin *b = cc_builtin(n->builtin);
    View a;
    int nd = n->ty->n;
    LLVMValueRef dims[TS_MAXDIMS], strides[TS_MAXDIMS];
    if (em_view_of(E, n->args[0], &a) < 0) {
        return -1;
    }
    em_within(E, &a);
    LLVMValueRef size = em_view_size(E, &a);
    if (b->op == RS_RAVEL) {
        dims[0] = size;
    } else {
        if (new_dims(E, n, nd, dims) < 0) {
            return -1;
        }
        em_check(E, fix_unknown(E, dims, nd, size), CC_STATUS_RESHAPE);
    }
    em_shape_bytes(E, dims, nd, ts_itemsize(a.kind), strides); /* C order's */
    LLVMValueRef contiguous = c_contiguous(E, &a, size);
    LLVMTypeRef ptr = LLVMPointerTypeInContext(E->ctx, 0), i64 = em_i64_type(E);
    LLVMValueRef data = em_entry_alloca(E, ptr, "rs.data"), stride = slots(E, nd, "rs.strides");
    LLVMValueRef lo = em_entry_alloca(E, i64, "rs.lo"), hi = em_entry_alloca(E, i64, "rs.hi");
    LLVMBuildStore(E->b, a.data, data);
    LLVMBuildStore(E->b, a.lo, lo);
    LLVMBuildStore(E->b, a.hi, hi);
    for (int i = 0; i < nd; i++) {
        LLVMBuildStore(E->b, strides[i], slot_at(E, stride, i));
    }
    if (E->fn->device) {
        em_check(E, LLVMBuildNot(E->b, contiguous, "rs.copy"), CC_STATUS_RESHAPE);
    } else {
        LLVMBasicBlockRef other = em_new_block(E, "rs.other"), done = em_new_block(E, "rs.done");
        LLVMBuildCondBr(E->b, contiguous, done, other);
        em_continue_at(E, other, 1);
        if (b->op == RS_RESHAPE) {
            /* NumPy's grouping: the strides it finds, or a copy */
            LLVMValueRef old_dims = slots(E, a.ndim, "rs.old.dims");
            LLVMValueRef old_strides = slots(E, a.ndim, "rs.old.strides");
            LLVMValueRef wanted = slots(E, nd, "rs.new.dims");
            for (int d = 0; d < a.ndim; d++) {
                LLVMBuildStore(E->b, a.shape[d], slot_at(E, old_dims, d));
                LLVMBuildStore(E->b, a.stride[d], slot_at(E, old_strides, d));
            }
            for (int i = 0; i < nd; i++) {
                LLVMBuildStore(E->b, dims[i], slot_at(E, wanted, i));
            }
            LLVMValueRef args[7] = {em_i64c(E, a.ndim),
                                    old_dims,
                                    old_strides,
                                    em_i64c(E, nd),
                                    wanted,
                                    stride,
                                    em_i64c(E, ts_itemsize(a.kind))};
            LLVMValueRef found = em_runtime_call(E, "numbavec_rt_nocopy_reshape", i64, args, 7);
            LLVMBasicBlockRef copy = em_new_block(E, "rs.copy");
            LLVMBuildCondBr(E->b, LLVMBuildICmp(E->b, LLVMIntNE, found, em_i64c(E, 0), ""), done,
                            copy);
            em_continue_at(E, copy, 1);
            for (int i = 0; i < nd; i++) { /* the runtime wrote some: C order again */
                LLVMBuildStore(E->b, strides[i], slot_at(E, stride, i));
            }
        }
        if (copy_into(E, n, &a, data, lo, hi) < 0) {
            return -1;
        }
        LLVMBuildBr(E->b, done);
        em_continue_at(E, done, 1);
    }
    v->ndim = nd;
    v->kind = a.kind;
    v->data = LLVMBuildLoad2(E->b, ptr, data, "rs.data");
    v->lo = LLVMBuildLoad2(E->b, i64, lo, "rs.lo");
    v->hi = LLVMBuildLoad2(E->b, i64, hi, "rs.hi");
    for (int i = 0; i < nd; i++) {
        v->shape[i] = dims[i];
        v->stride[i] = LLVMBuildLoad2(E->b, i64, slot_at(E, stride, i), "rs.stride");
    }
    return 0;
}
