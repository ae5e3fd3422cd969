/*
 * emitarray.c - arrays in kernels: views, elementwise loops, allocation and
 * reductions.
 *
 * An array value is a view: { ptr data, [n x i64] shape, [n x i64] strides }
 * (strides in bytes), an SSA struct that SROA splits into registers.  A
 * parameter's view holds its unit stride as a constant when the loop proved
 * it (the contiguous kernel variant), so LLVM sees consecutive accesses in
 * every view taken from it.  Indexing and slicing make views and allocate
 * nothing.
 *
 * Elementwise expressions (a * 2 + b, np.sqrt(a), a > 0) are not values
 * until something needs them: an assignment into a view, a reduction or a
 * variable.  Then one loop nest walks the broadcast shape and evaluates the
 * whole expression tree at each index (no temporaries): the tree's array
 * leaves are viewed once before the loop, its scalar leaves computed once,
 * and inside the loop each leaf's node stands for its element (CcNode.elem)
 * while the operators' types are their elements' (the scalar emitters of
 * emit.c, arith.c and emitcall.c then emit one element).  The loop is
 * emitted twice: with the leaves' own strides when no leaf is broadcast
 * (the common case, where constant strides let LLVM vectorize), and with
 * zero strides for broadcast dimensions.
 *
 * An assignment whose source may overlap its target in memory (a[1:] =
 * a[:-1]) evaluates the source into a temporary first, as NumPy does.
 * Every view carries the byte range of the array it was taken from, so
 * that views of two different arrays (out += row, for row in a) are told
 * apart by a test of values that do not change in the loop making the
 * views: LICM takes it out, and the exact test runs only where the arrays
 * meet.
 *
 * Arrays allocated in a kernel (np.zeros ...) live until the kernel call
 * returns: each is malloc'd with a header that links it into the call's
 * list, and every return of the kernel goes through one block that frees
 * the list.  A failed check (broadcasting, a negative dimension, memory)
 * returns its CC_STATUS_ code through the same block.
 */
#include "compiler/calls.h"

#include <string.h>

enum { HEADER = 16 }; /* bytes before an allocated array's data: the list link */

typedef struct View {
    int ndim;
    TsKind kind;
    LLVMValueRef data;
    LLVMValueRef shape[TS_MAXDIMS];
    LLVMValueRef stride[TS_MAXDIMS];
    /* i64s lo <= hi: every byte of the view is in [lo, hi), the bytes of
     * the array it was taken from (NULL: not known yet; within() makes it
     * the view's own) */
    LLVMValueRef lo, hi;
} View;

static LLVMTypeRef
i64_type(Emit *E)
{
    return LLVMInt64TypeInContext(E->ctx);
}

static LLVMValueRef
i64c(Emit *E, long long v)
{
    return LLVMConstInt(i64_type(E), (unsigned long long)v, 1);
}

/* { data, shape, strides, lo, hi } */
LLVMTypeRef
em_array_type(Emit *E, int ndim)
{
    LLVMTypeRef dims = LLVMArrayType2(i64_type(E), (unsigned long long)ndim);
    LLVMTypeRef fields[5] = {LLVMPointerTypeInContext(E->ctx, 0), dims, dims, i64_type(E),
                             i64_type(E)};
    return LLVMStructTypeInContext(E->ctx, fields, 5, 0);
}

static void span(Emit *E, const View *v, LLVMValueRef *lo, LLVMValueRef *hi, LLVMValueRef *empty);

/* v's lo and hi, made its own span where they are not known. */
static void
within(Emit *E, View *v)
{
    if (v->lo == NULL) {
        LLVMValueRef empty;
        span(E, v, &v->lo, &v->hi, &empty);
    }
}

static LLVMValueRef
view_pack(Emit *E, const View *view)
{
    View w = *view, *v = &w;
    within(E, v);
    LLVMValueRef s = LLVMGetUndef(em_array_type(E, v->ndim));
    s = LLVMBuildInsertValue(E->b, s, v->data, 0, "view");
    LLVMValueRef shape = LLVMGetUndef(LLVMArrayType2(i64_type(E), (unsigned long long)v->ndim));
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
        v.stride[t->n - 1] = i64c(E, ts_itemsize(t->scalar));
    }
    return view_pack(E, &v);
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

/* Ends the kernel with status when bad (an i1) holds; goes on otherwise. */
void
em_check(Emit *E, LLVMValueRef bad, int status)
{
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

static LLVMValueRef
libc_function(Emit *E, const char *name, LLVMTypeRef ret, LLVMTypeRef *params, unsigned n)
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
    LLVMValueRef f = libc_function(E, "free", LLVMVoidTypeInContext(E->ctx), &ptr, 1);
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
    LLVMValueRef stride = i64c(E, ts_itemsize(k));
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
static int
alloc_array(Emit *E, CcNode *at, TsKind k, int ndim, LLVMValueRef *shape, View *v)
{
    if (E->fn->device) {
        return local_array(E, at, k, ndim, shape, v);
    }
    if (E->alloc_head == NULL) {
        return cc_error(E->fn, at->loc,
                        "internal error: an allocation in a kernel that was not typed as "
                        "allocating");
    }
    LLVMTypeRef i64 = i64_type(E);
    v->ndim = ndim;
    v->kind = k;
    memcpy(v->shape, shape, sizeof(LLVMValueRef) * (size_t)ndim);
    LLVMValueRef bytes = em_shape_bytes(E, shape, ndim, ts_itemsize(k), v->stride);
    em_check(E, LLVMBuildICmp(E->b, LLVMIntUGT, bytes, i64c(E, (long long)1 << 60), "huge"),
             CC_STATUS_NOMEM);
    LLVMTypeRef ptr = LLVMPointerTypeInContext(E->ctx, 0);
    LLVMValueRef malloc_fn = libc_function(E, "malloc", ptr, &i64, 1);
    LLVMValueRef size = LLVMBuildAdd(E->b, bytes, i64c(E, HEADER), "size");
    LLVMValueRef p =
        LLVMBuildCall2(E->b, LLVMGlobalGetValueType(malloc_fn), malloc_fn, &size, 1, "block");
    em_check(E, LLVMBuildIsNull(E->b, p, "nomem"), CC_STATUS_NOMEM);
    LLVMBuildStore(E->b, LLVMBuildLoad2(E->b, ptr, E->alloc_head, "head"), p);
    LLVMBuildStore(E->b, p, E->alloc_head);
    LLVMValueRef off = i64c(E, HEADER);
    v->data = LLVMBuildGEP2(E->b, LLVMInt8TypeInContext(E->ctx), p, &off, 1, "array");
    v->lo = LLVMBuildPtrToInt(E->b, v->data, i64, "lo");
    v->hi = LLVMBuildAdd(E->b, v->lo, bytes, "hi");
    return 0;
}

/* ---- views ---- */

static int view_of(Emit *E, CcNode *n, View *v);

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
static int
index_view(Emit *E, CcNode *n, View *v, int *element)
{
    View a;
    if (view_of(E, n->lhs, &a) < 0) {
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
    LLVMValueRef offset = i64c(E, 0);
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
            v->shape[v->ndim] = i64c(E, 1);
            v->stride[v->ndim++] = i64c(E, 0);
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
                LLVMValueRef at = em_wrap_index(E, idx[j], kinds[j], a.shape[d]);
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
        within(E, &a); /* a view lies in its array */
        v->lo = a.lo;
        v->hi = a.hi;
    }
    return 0;
}

static int materialize(Emit *E, CcNode *n, View *v);
static int alloc_call(Emit *E, CcNode *n, View *v);
static int axis_reduce(Emit *E, CcNode *n, View *v);
static int cumulate(Emit *E, CcNode *n, View *v);
static int axis_lines(Emit *E, CcNode *n, View *v);

/* The reductions along an axis that reduce each line of it as a whole
 * array (axis_lines), where the others combine elements (axis_reduce). */
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
static int sort_view(Emit *E, CcNode *n, View *v);
static int copy_as(Emit *E, CcNode *n, TsKind k, View *v);
static LLVMValueRef view_size(Emit *E, const View *v);
static int dot_view(Emit *E, CcNode *n, View *v);
static int arange_view(Emit *E, CcNode *n, View *v);

/* The elementwise operations: their values are computed by element. */
static int
is_elementwise_node(const CcNode *n)
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
    default:
        return 0;
    }
}

static int mask_read(Emit *E, CcNode *n, View *v);

/* a[mask], mask a boolean array. */
static int
is_mask_index(const CcNode *n)
{
    return n->kind == ND_INDEX && n->nargs == 1 && cc_is_array(n->args[0]->ty)
           && n->args[0]->ty->scalar == TS_BOOL;
}

/* a[idx], idx an array of integers */
static int
is_fancy_index(const CcNode *n)
{
    return n->kind == ND_INDEX && n->nargs == 1 && cc_is_array(n->args[0]->ty)
           && n->args[0]->ty->scalar != TS_BOOL;
}

static int fancy_read(Emit *E, CcNode *n, View *v);

/* The view an array-typed node evaluates to. */
static int
view_of(Emit *E, CcNode *n, View *v)
{
    if (n->kind == ND_VIEW) {
        *v = *(const View *)n->view;
        return 0;
    }
    if (is_mask_index(n)) {
        return mask_read(E, n, v);
    }
    if (is_fancy_index(n)) {
        return fancy_read(E, n, v);
    }
    if (n->kind == ND_INDEX) {
        int element;
        return index_view(E, n, v, &element);
    }
    if (n->kind == ND_ARRAYATTR && n->index == AA_T) {
        View a;
        if (view_of(E, n->lhs, &a) < 0) {
            return -1;
        }
        *v = a;
        for (int k = 0; k < a.ndim; k++) {
            v->shape[k] = a.shape[a.ndim - 1 - k];
            v->stride[k] = a.stride[a.ndim - 1 - k];
        }
        return 0;
    }
    if (is_elementwise_node(n)) {
        return materialize(E, n, v);
    }
    if (n->kind == ND_CALL) {
        const CcBuiltin *b = cc_builtin(n->builtin);
        if (b->flavor == FL_REDUCE && n->nargs == 2 && needs_lines((CcReduceOp)b->op)) {
            return axis_lines(E, n, v);
        }
        if (b->flavor == FL_REDUCE && (b->op == R_CUMSUM || b->op == R_CUMPROD)) {
            return cumulate(E, n, v);
        }
        if (b->flavor == FL_SORT) {
            return sort_view(E, n, v);
        }
        if (b->flavor == FL_DOT) {
            return dot_view(E, n, v);
        }
        if (b->flavor == FL_ARANGE) {
            return arange_view(E, n, v);
        }
        return b->flavor == FL_REDUCE ? axis_reduce(E, n, v) : alloc_call(E, n, v);
    }
    LLVMValueRef s = em_expr(E, n); /* a variable, an inlined function's result */
    if (s == NULL) {
        return -1;
    }
    view_unpack(E, s, n->ty, v);
    return 0;
}

LLVMValueRef
em_array_expr(Emit *E, CcNode *n)
{
    View v;
    return view_of(E, n, &v) == 0 ? view_pack(E, &v) : NULL;
}

/* a[i, j]: the element's value, or the view. */
LLVMValueRef
em_index(Emit *E, CcNode *n)
{
    View v;
    int element;
    if (is_mask_index(n) || is_fancy_index(n)) {
        return view_of(E, n, &v) == 0 ? view_pack(E, &v) : NULL;
    }
    if (index_view(E, n, &v, &element) < 0) {
        return NULL;
    }
    if (!element) {
        return view_pack(E, &v);
    }
    return cc_load(E->b, v.kind, v.data, "elem");
}

LLVMValueRef
em_array_attr(Emit *E, CcNode *n)
{
    if (n->index == AA_T) {
        return em_array_expr(E, n);
    }
    if (n->index == AA_KIND_IS || n->index == AA_DTYPE_IS) {
        /* a constant of the typed element kind: nothing is evaluated */
        TsKind k = n->lhs->ty->scalar;
        int letter = k == TS_BOOL       ? 0
                     : ts_is_complex(k) ? 4
                     : ts_is_float(k)   ? 3
                     : ts_is_signed(k)  ? 1
                                        : 2;
        long long value = n->ival & ~CC_DTYPE_NEGATE;
        int yes = n->index == AA_KIND_IS ? (int)((value >> letter) & 1) : value == (long long)k;
        return LLVMConstInt(LLVMInt1TypeInContext(E->ctx),
                            (unsigned)(yes ^ ((n->ival & CC_DTYPE_NEGATE) != 0)), 0);
    }
    const CcType *t = n->lhs->ty;
    if (t->kind == CT_TUPLE) {
        return i64c(E, t->n); /* len(tuple) */
    }
    View a;
    if (view_of(E, n->lhs, &a) < 0) {
        return NULL;
    }
    switch ((CcArrayAttr)n->index) {
    case AA_LEN:
        return a.shape[0];
    case AA_NDIM:
        return i64c(E, a.ndim);
    case AA_ITEMSIZE:
        return i64c(E, ts_itemsize(a.kind));
    case AA_KIND_IS:
    case AA_DTYPE_IS:
        break; /* above */
    case AA_SIZE: {
        LLVMValueRef size = i64c(E, 1);
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

/* ---- elementwise loops ---- */

enum { MAX_LEAVES = 256 };

typedef struct Leaf {
    CcNode *node;
    const CcType *ty;                 /* the node's own type, restored after the loop */
    View v;                           /* array leaves */
    LLVMValueRef value;               /* scalar leaves: computed once */
    LLVMValueRef bstride[TS_MAXDIMS]; /* the strides the loop walks it with */
} Leaf;

typedef struct Walk {
    CcNode *expr; /* what is evaluated at each index (NULL: nothing) */
    int ndim;     /* of the iteration */
    LLVMValueRef shape[TS_MAXDIMS];
    Leaf *leaves;
    int nleaves;
    CcNode *swapped[MAX_LEAVES]; /* the operators whose type is their element's in the loop */
    const CcType *swapped_ty[MAX_LEAVES];
    int nswapped;
    View target;             /* an assignment's target (target.data NULL: none) */
    LLVMValueRef target_ptr; /* in the loop: the target element's address */
    /* called at each index with the expression's element (NULL when none) */
    int (*visit)(Emit *E, struct Walk *w, LLVMValueRef value);
    void *ctx;
} Walk;

/* Collects the leaves of the elementwise tree n into w: array leaves are
 * viewed and scalar leaves computed here, once, before the loop. */
static int
collect(Emit *E, Walk *w, CcNode *n)
{
    if (is_elementwise_node(n)) {
        if (w->nswapped >= MAX_LEAVES) {
            return cc_error(E->fn, n->loc, "an array expression with more than %d operations",
                            MAX_LEAVES);
        }
        w->swapped[w->nswapped] = n;
        w->swapped_ty[w->nswapped++] = n->ty;
        CcNode *kids[2] = {n->lhs, n->rhs};
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
        return view_of(E, n, &l->v);
    }
    return (l->value = em_expr(E, n)) != NULL ? 0 : -1;
}

/* The iteration shape: the target's, or the broadcast of the leaves'; a
 * leaf that does not broadcast to it ends the kernel (CC_STATUS_SHAPE). */
static void
broadcast(Emit *E, Walk *w)
{
    LLVMValueRef one = i64c(E, 1), bad = LLVMConstInt(LLVMInt1TypeInContext(E->ctx), 0, 0);
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

static LLVMValueRef
address(Emit *E, LLVMValueRef data, LLVMValueRef *stride, LLVMValueRef *idx, int lead, int ndim)
{
    /* inside the loop every index is within its dimension: the offsets
     * cannot wrap and the address is in bounds, which lets LLVM compute the
     * accesses' ranges (and vectorize with runtime alias checks) */
    LLVMValueRef off = i64c(E, 0);
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
        LLVMValueRef p = address(E, l->v.data, l->bstride, idx, lead, l->v.ndim);
        l->node->elem = cc_load(E->b, l->v.kind, p, "x");
    }
    if (w->target.data != NULL) {
        w->target_ptr = address(E, w->target.data, w->target.stride, idx, 0, w->ndim);
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
    LLVMTypeRef i64 = i64_type(E);
    LLVMBasicBlockRef pre = LLVMGetInsertBlock(E->b);
    LLVMBasicBlockRef head = em_new_block(E, "ew.head"), body = em_new_block(E, "ew.body");
    LLVMBasicBlockRef done = em_new_block(E, "ew.done");
    LLVMValueRef any = LLVMBuildICmp(E->b, LLVMIntSGT, w->shape[d], i64c(E, 0), "any");
    for (int k = d + 1; d == 0 && k < w->ndim; k++) {
        /* an empty shape walks nothing, however long its other dimensions */
        any = LLVMBuildAnd(E->b, any, LLVMBuildICmp(E->b, LLVMIntSGT, w->shape[k], i64c(E, 0), ""),
                           "any");
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
    LLVMValueRef next = LLVMBuildNSWAdd(E->b, i, i64c(E, 1), "ew.next");
    LLVMBasicBlockRef latch = LLVMGetInsertBlock(E->b);
    LLVMValueRef br = LLVMBuildCondBr(
        E->b, LLVMBuildICmp(E->b, LLVMIntSLT, next, w->shape[d], "more"), head, done);
    if (d == w->ndim - 1) {
        em_one_vector_a_step(E, br);
    }
    LLVMValueRef in_vals[2] = {i64c(E, 0), next};
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
                l->bstride[k] = LLVMBuildSelect(E->b, b, i64c(E, 0), l->v.stride[k], "bstride");
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
static int
collect_expr(Emit *E, Walk *w, CcNode *expr)
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
static int
run_collected(Emit *E, Walk *w)
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
        broadcast(E, w);
        return emit_loop(E, w, 0);
    }
    broadcast(E, w);
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

static int
run_walk(Emit *E, Walk *w, CcNode *expr)
{
    return collect_expr(E, w, expr) < 0 ? -1 : run_collected(E, w);
}

/* ---- assignment ---- */

static int
store_visit(Emit *E, Walk *w, LLVMValueRef value)
{
    const CcType *from = w->expr->ty; /* its element type, in the loop */
    cc_store(E->b, w->target.kind, em_convert_type(E, value, from, cc_scalar_type(w->target.kind)),
             w->target_ptr);
    return 0;
}

/* The bytes a view spans: [lo, hi) as integers; empty views span nothing. */
static void
span(Emit *E, const View *v, LLVMValueRef *lo, LLVMValueRef *hi, LLVMValueRef *empty)
{
    LLVMTypeRef i64 = i64_type(E);
    LLVMValueRef base = LLVMBuildPtrToInt(E->b, v->data, i64, "base");
    *lo = base;
    *hi = LLVMBuildAdd(E->b, base, i64c(E, ts_itemsize(v->kind)), "hi");
    *empty = LLVMConstInt(LLVMInt1TypeInContext(E->ctx), 0, 0);
    for (int k = 0; k < v->ndim; k++) {
        LLVMValueRef ext = LLVMBuildMul(E->b, LLVMBuildSub(E->b, v->shape[k], i64c(E, 1), ""),
                                        v->stride[k], "ext");
        LLVMValueRef neg = LLVMBuildICmp(E->b, LLVMIntSLT, ext, i64c(E, 0), "");
        *lo = LLVMBuildAdd(E->b, *lo, LLVMBuildSelect(E->b, neg, ext, i64c(E, 0), ""), "lo");
        *hi = LLVMBuildAdd(E->b, *hi, LLVMBuildSelect(E->b, neg, i64c(E, 0), ext, ""), "hi");
        *empty = LLVMBuildOr(E->b, *empty,
                             LLVMBuildICmp(E->b, LLVMIntSLE, v->shape[k], i64c(E, 0), ""), "empty");
    }
}

/* Whether leaf l is the target t itself (a[:] = a * 2), whose elements are
 * each read before they are written. */
static LLVMValueRef
same_view(Emit *E, const View *l, const View *t)
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
    span(E, l, &llo, &lhi, &lempty);
    span(E, t, &tlo, &thi, &tempty);
    LLVMValueRef meet = LLVMBuildAnd(E->b, LLVMBuildICmp(E->b, LLVMIntULT, llo, thi, ""),
                                     LLVMBuildICmp(E->b, LLVMIntULT, tlo, lhi, ""), "meet");
    meet = LLVMBuildAnd(E->b, meet, LLVMBuildNot(E->b, LLVMBuildOr(E->b, lempty, tempty, ""), ""),
                        "meet");
    return LLVMBuildAnd(E->b, meet, LLVMBuildNot(E->b, same_view(E, l, t), ""), "overlap");
}

static int store_visit(Emit *E, Walk *w, LLVMValueRef value);

/* target[...] = value, a scalar computed already, broadcast. */
static int
fill_view(Emit *E, const View *target, CcNode *expr, LLVMValueRef value)
{
    Walk w = {.ndim = target->ndim, .target = *target, .visit = store_visit};
    Leaf leaf = {.node = expr, .ty = expr->ty, .value = value};
    w.expr = expr;
    w.leaves = &leaf;
    w.nleaves = 1;
    broadcast(E, &w);
    return emit_loop(E, &w, 0);
}

/* A collected expression (w: its leaves) into a new array of its shape. */
static int
materialize_collected(Emit *E, Walk *w, CcNode *at, View *v)
{
    const CcType *t = w->expr->ty;
    w->ndim = t->n;
    w->target.data = NULL;
    broadcast(E, w);
    if (alloc_array(E, at, t->scalar, t->n, w->shape, v) < 0) {
        return -1;
    }
    w->target = *v;
    return run_collected(E, w);
}

/* An elementwise expression's value: a new array of its broadcast shape. */
static int
materialize(Emit *E, CcNode *n, View *v)
{
    Walk w = {.visit = store_visit};
    return collect_expr(E, &w, n) < 0 ? -1 : materialize_collected(E, &w, n, v);
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
        return run_collected(E, w);
    }
    /* First whether a leaf other than the target itself lies in an array
     * that meets the target's: tests of values that, for views of the
     * kernel's arguments, LICM takes out of the loops making the views.
     * Only then the views themselves. */
    View t = *target;
    within(E, &t);
    LLVMBasicBlockRef check = em_new_block(E, "assign.check");
    LLVMBasicBlockRef direct = em_new_block(E, "assign.direct");
    LLVMBasicBlockRef copy = em_new_block(E, "assign.copy"), done = em_new_block(E, "assign.done");
    for (int i = 0; i < w->nleaves; i++) {
        if (!cc_is_array(w->leaves[i].ty)) {
            continue;
        }
        View *l = &w->leaves[i].v;
        within(E, l);
        LLVMValueRef meet =
            LLVMBuildAnd(E->b, LLVMBuildICmp(E->b, LLVMIntULT, l->lo, t.hi, ""),
                         LLVMBuildICmp(E->b, LLVMIntULT, t.lo, l->hi, ""), "arrays.meet");
        LLVMBasicBlockRef same = em_new_block(E, "assign.same"),
                          next = em_new_block(E, "assign.next");
        LLVMBuildCondBr(E->b, meet, same, next);
        LLVMPositionBuilderAtEnd(E->b, same);
        LLVMBuildCondBr(E->b, same_view(E, l, target), next, check);
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
    if (run_collected(E, w) < 0) {
        return -1;
    }
    LLVMBuildBr(E->b, done);
    LLVMPositionBuilderAtEnd(E->b, copy);
    View tmp;
    if (materialize_collected(E, w, at, &tmp) < 0) {
        return -1;
    }
    CcNode leaf = {.kind = ND_VAR, .loc = at->loc, .ty = cc_array_type(tmp.kind, tmp.ndim)};
    Walk c = {.ndim = target->ndim, .target = *target, .visit = store_visit};
    Leaf l = {.node = &leaf, .ty = leaf.ty, .v = tmp};
    c.expr = &leaf;
    c.leaves = &l;
    c.nleaves = 1;
    if (run_collected(E, &c) < 0) {
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
            || f == FL_ARANGE) {
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

/*
 * a[index] = v: the value first, then the target, as Python evaluates them,
 * where the order can show (which error is raised).  A value that can only
 * fail as the target can (an out-of-bounds index) comes after the target's
 * address: a check of out[i] before out[i - 1] is read lets LLVM prove the
 * second and forward stored values across iterations (a moving average).
 */
static int indexed_write(Emit *E, CcNode *n);

int
em_setitem_view(Emit *E, CcNode *n)
{
    if (is_mask_index(n->lhs) || is_fancy_index(n->lhs)) {
        return indexed_write(E, n);
    }
    View target;
    int element = 0;
    Walk w = {.visit = store_visit};
    LLVMValueRef v = NULL;
    int target_first = !cc_is_array(n->lhs->ty) && !may_fail_otherwise(n->rhs);
    if (target_first && index_view(E, n->lhs, &target, &element) < 0) {
        return -1;
    }
    if (cc_is_array(n->rhs->ty) ? collect_expr(E, &w, n->rhs) < 0
                                : (v = em_expr(E, n->rhs)) == NULL) {
        return -1;
    }
    if (!target_first && index_view(E, n->lhs, &target, &element) < 0) {
        return -1;
    }
    if (element) {
        cc_store(E->b, target.kind, em_convert_type(E, v, n->rhs->ty, cc_scalar_type(target.kind)),
                 target.data);
        return 0;
    }
    return v != NULL ? fill_view(E, &target, n->rhs, v) : assign_collected(E, n, &target, &w);
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
        CcNode *s = n->args[0];
        if (s->ty->kind == CT_TUPLE) {
            LLVMValueRef t = em_expr(E, s);
            if (t == NULL) {
                return -1;
            }
            for (int k = 0; k < ndim; k++) {
                shape[k] = em_convert(E, LLVMBuildExtractValue(E->b, t, (unsigned)k, "dim"),
                                      cc_storage(s->ty->elems[k]), TS_INT64);
            }
        } else if ((shape[0] = em_expr_as(E, s, TS_INT64)) == NULL) {
            return -1;
        }
    } else {
        if (view_of(E, n->args[0], &src) < 0) {
            return -1;
        }
        memcpy(shape, src.shape, sizeof(LLVMValueRef) * (size_t)ndim);
    }
    if (alloc_array(E, n, n->ty->scalar, ndim, shape, v) < 0) {
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
        fill = n->args[0];
        break;
    }
    /* a fresh array overlaps nothing: no temporary */
    if (!cc_is_array(fill->ty)) {
        LLVMValueRef x = em_expr(E, fill);
        return x != NULL ? fill_view(E, v, fill, x) : -1;
    }
    Walk w = {.ndim = v->ndim, .target = *v, .visit = store_visit};
    return run_walk(E, &w, fill);
}

/* ---- reductions ---- */

typedef struct Reduce {
    CcReduceOp op;
    TsKind in;           /* the elements' kind */
    TsKind acc;          /* the result's */
    LLVMValueRef slot;   /* the accumulator (argmin/argmax: the index) */
    LLVMValueRef count;  /* mean: the elements counted */
    LLVMValueRef flat;   /* the flat C-order index of the element */
    LLVMValueRef best;   /* argmin/argmax: the best element */
    LLVMValueRef seen;   /* argmin/argmax: an element was seen; min/max: a NaN was */
    LLVMValueRef length; /* mean along an axis: the axis's length */
    LLVMValueRef center; /* var/std: the mean the squares are taken from */
    View out;            /* cumsum/cumprod: the array written */
    long long ddof;      /* var/std: the divisor is the count less this */
} Reduce;

static LLVMValueRef
is_nan(Emit *E, TsKind k, LLVMValueRef x)
{
    if (!ts_is_float(k)) {
        return LLVMConstInt(LLVMInt1TypeInContext(E->ctx), 0, 0);
    }
    return LLVMBuildFCmp(E->b, LLVMRealUNO, x, x, "isnan");
}

/*
 * min/max: a plain select of the larger (smaller) so that LLVM recognises a
 * min/max reduction and vectorizes it.  Floats are compared by their order
 * keys (em_order_key: integer compares raise no flag on a NaN), with the
 * NaNs kept aside: min/max remember that one was seen (the result is NaN),
 * nanmin/nanmax skip them (a key that never moved from its start: all NaN).
 */
static LLVMValueRef
minmax_sentinel(Emit *E, const Reduce *r)
{
    int max = r->op == R_MAX || r->op == R_NANMAX;
    TsKind k = r->in;
    if (ts_is_float(k)) {
        unsigned bits = (unsigned)ts_bits(k);
        unsigned long long lo = 1ULL << (bits - 1), hi = lo - 1;
        return LLVMConstInt(LLVMIntTypeInContext(E->ctx, bits), max ? lo : hi, 0);
    }
    if (k == TS_BOOL) {
        return LLVMConstInt(LLVMInt1TypeInContext(E->ctx), max ? 0 : 1, 0);
    }
    unsigned bits = (unsigned)ts_bits(k);
    unsigned long long all = bits == 64 ? ~0ULL : (1ULL << bits) - 1;
    unsigned long long smin = 1ULL << (bits - 1), smax = smin - 1;
    unsigned long long v = ts_is_signed(k) ? (max ? smin : smax) : (max ? 0 : all);
    return LLVMConstInt(cc_value_type(E->ctx, k), v, 0);
}

/* any/all: the accumulated truth with x's. */
static LLVMValueRef
truth_step(Emit *E, const Reduce *r, LLVMValueRef x, LLVMValueRef acc)
{
    LLVMValueRef t = em_truthy(E, x, r->in);
    return r->op == R_ANY ? LLVMBuildOr(E->b, acc, t, "any") : LLVMBuildAnd(E->b, acc, t, "all");
}

static LLVMValueRef
minmax_step(Emit *E, Reduce *r, LLVMValueRef x, LLVMValueRef acc, LLVMValueRef nan)
{
    int max = r->op == R_MAX || r->op == R_NANMAX;
    if (r->in == TS_BOOL) {
        return max ? LLVMBuildOr(E->b, acc, x, "max") : LLVMBuildAnd(E->b, acc, x, "min");
    }
    if (!ts_is_float(r->in)) {
        LLVMValueRef gt = LLVMBuildICmp(E->b, em_int_pred(max ? OP_GT : OP_LT, ts_is_signed(r->in)),
                                        x, acc, "better");
        return LLVMBuildSelect(E->b, gt, x, acc, "best");
    }
    LLVMValueRef key = em_order_key(E, x);
    if (r->op == R_NANMIN || r->op == R_NANMAX) {
        key = LLVMBuildSelect(E->b, nan, minmax_sentinel(E, r), key, "key");
    } else {
        LLVMTypeRef i1 = LLVMInt1TypeInContext(E->ctx);
        LLVMBuildStore(
            E->b, LLVMBuildOr(E->b, LLVMBuildLoad2(E->b, i1, r->seen, "nan"), nan, "nan"), r->seen);
    }
    LLVMValueRef better = LLVMBuildICmp(E->b, max ? LLVMIntSGT : LLVMIntSLT, key, acc, "better");
    return LLVMBuildSelect(E->b, better, key, acc, "best");
}


/* The kind var/std take the mean in: a complex input's own complex kind
 * (its variance is real: acc, its parts' kind), else acc. */
static TsKind
var_center_kind(TsKind in, TsKind acc)
{
    return !ts_is_complex(in) ? acc : acc == TS_FLOAT32 ? TS_COMPLEX64 : TS_COMPLEX128;
}

static int
reduce_visit(Emit *E, Walk *w, LLVMValueRef value)
{
    Reduce *r = w->ctx;
    LLVMTypeRef acc_t = cc_value_type(E->ctx, r->acc);
    if ((r->op == R_MIN || r->op == R_MAX || r->op == R_NANMIN || r->op == R_NANMAX)
        && ts_is_float(r->acc)) {
        acc_t = LLVMIntTypeInContext(E->ctx, (unsigned)ts_bits(r->acc)); /* order keys */
    }
    LLVMValueRef x = em_convert_type(E, value, w->expr->ty, cc_scalar_type(r->in));
    LLVMValueRef acc = LLVMBuildLoad2(E->b, acc_t, r->slot, "acc");
    LLVMValueRef nan = is_nan(E, r->in, x), out = NULL;
    LLVMTypeRef i64 = i64_type(E);
    LLVMValueRef flat = LLVMBuildLoad2(E->b, i64, r->flat, "k");
    LLVMBuildStore(E->b, LLVMBuildAdd(E->b, flat, i64c(E, 1), "k"), r->flat);
    switch (r->op) {
    case R_SUM:
    case R_NANSUM:
    case R_MEAN:
    case R_NANMEAN:
    case R_PROD:
    case R_NANPROD: {
        int prod = r->op == R_PROD || r->op == R_NANPROD;
        LLVMValueRef xa = em_convert(E, x, r->in, r->acc);
        out = em_arith(E, prod ? OP_MUL : OP_ADD, r->acc, acc, xa);
        if (r->op == R_NANSUM || r->op == R_NANPROD || r->op == R_NANMEAN) {
            out = LLVMBuildSelect(E->b, nan, acc, out, "skip.nan");
        }
        if (r->op == R_NANMEAN) { /* a mean divides by the walk's size */
            LLVMValueRef c = LLVMBuildLoad2(E->b, i64, r->count, "n");
            LLVMValueRef c1 = LLVMBuildAdd(E->b, c, i64c(E, 1), "n");
            LLVMBuildStore(E->b, LLVMBuildSelect(E->b, nan, c, c1, "n"), r->count);
        }
        break;
    }
    case R_ANY:
    case R_ALL:
        out = truth_step(E, r, x, acc);
        break;
    case R_MIN:
    case R_MAX:
    case R_NANMIN:
    case R_NANMAX:
        out = minmax_step(E, r, x, acc, nan);
        break;
    case R_VAR:
    case R_STD: {
        if (ts_is_complex(r->in)) {
            /* |x - mean|^2 of complex values, summed in their parts' kind */
            TsKind ck = var_center_kind(r->in, r->acc);
            LLVMValueRef d = em_arith(E, OP_SUB, ck, em_convert(E, x, r->in, ck), r->center);
            LLVMValueRef re = em_re_of(E, d), im = em_im_of(E, d);
            LLVMValueRef sq = LLVMBuildFAdd(E->b, LLVMBuildFMul(E->b, re, re, "re2"),
                                            LLVMBuildFMul(E->b, im, im, "im2"), "abs2");
            out = LLVMBuildFAdd(E->b, acc, sq, "ss");
            break;
        }
        LLVMValueRef d = LLVMBuildFSub(E->b, em_convert(E, x, r->in, r->acc), r->center, "dev");
        out = LLVMBuildFAdd(E->b, acc, LLVMBuildFMul(E->b, d, d, "dev2"), "ss");
        break;
    }
    case R_CUMSUM:
    case R_CUMPROD: {
        out = em_arith(E, r->op == R_CUMPROD ? OP_MUL : OP_ADD, r->acc, acc,
                       em_convert(E, x, r->in, r->acc));
        LLVMValueRef off = LLVMBuildNSWMul(E->b, flat, i64c(E, ts_itemsize(r->acc)), "off");
        cc_store(
            E->b, r->acc, out,
            LLVMBuildInBoundsGEP2(E->b, LLVMInt8TypeInContext(E->ctx), r->out.data, &off, 1, "at"));
        break;
    }
    case R_ARGMIN:
    case R_ARGMAX: {
        int max = r->op == R_MAX || r->op == R_NANMAX || r->op == R_ARGMAX;
        int nanskip = r->op == R_NANMIN || r->op == R_NANMAX;
        LLVMValueRef best = r->op == R_ARGMIN || r->op == R_ARGMAX
                                ? LLVMBuildLoad2(E->b, cc_value_type(E->ctx, r->in), r->best, "b")
                                : acc;
        LLVMValueRef better;
        if (ts_is_float(r->in)) {
            /* quiet: a NaN raises no invalid flag (NumPy's max warns of none) */
            better = em_quiet_fcmp(E, max ? LLVMRealOGT : LLVMRealOLT, x, best, "better");
        } else {
            better = LLVMBuildICmp(E->b, em_int_pred(max ? OP_GT : OP_LT, ts_is_signed(r->in)),
                                   r->in == TS_BOOL ? LLVMBuildZExt(E->b, x, i64, "") : x,
                                   r->in == TS_BOOL ? LLVMBuildZExt(E->b, best, i64, "") : best,
                                   "better");
        }
        LLVMValueRef best_nan = is_nan(E, r->in, best);
        if (nanskip) {
            /* the first non-NaN wins over the NaN the search starts from */
            better = LLVMBuildOr(E->b, better, best_nan, "better");
        } else {
            /* the first NaN wins, and stays */
            better = LLVMBuildOr(E->b, better,
                                 LLVMBuildAnd(E->b, nan, LLVMBuildNot(E->b, best_nan, ""), ""),
                                 "better");
        }
        LLVMValueRef seen = LLVMBuildLoad2(E->b, LLVMInt1TypeInContext(E->ctx), r->seen, "seen");
        better = LLVMBuildOr(E->b, better, LLVMBuildNot(E->b, seen, ""), "better");
        LLVMBuildStore(E->b, LLVMConstInt(LLVMInt1TypeInContext(E->ctx), 1, 0), r->seen);
        if (r->op == R_ARGMIN || r->op == R_ARGMAX) {
            LLVMBuildStore(E->b, LLVMBuildSelect(E->b, better, x, best, "b"), r->best);
            out = LLVMBuildSelect(E->b, better, flat, acc, "arg");
        } else {
            out = LLVMBuildSelect(E->b, better, x, acc, "best");
        }
        break;
    }
    }
    LLVMBuildStore(E->b, out, r->slot);
    return 0;
}

/* op of arg (an array expression or a scalar) into a value of kind acc;
 * center: var/std's mean; out: cumsum/cumprod's array. */
static LLVMValueRef
reduce_with(Emit *E, CcNode *arg, CcReduceOp op, TsKind acc, LLVMValueRef center, long long ddof,
            const View *out)
{
    Reduce r = {.op = op, .in = cc_storage(arg->ty), .acc = acc, .center = center, .ddof = ddof};
    if (out != NULL) {
        r.out = *out;
    }
    int minmax = r.op == R_MIN || r.op == R_MAX || r.op == R_NANMIN || r.op == R_NANMAX;
    LLVMTypeRef acc_t = cc_value_type(E->ctx, acc), i64 = i64_type(E);
    if (minmax && ts_is_float(acc)) {
        acc_t = LLVMIntTypeInContext(E->ctx, (unsigned)ts_bits(acc)); /* order keys */
    }
    r.slot = em_entry_alloca(E, acc_t, "acc");
    r.count = em_entry_alloca(E, i64, "count");
    r.flat = em_entry_alloca(E, i64, "flat");
    r.best = em_entry_alloca(E, cc_value_type(E->ctx, r.in), "best");
    r.seen = em_entry_alloca(E, LLVMInt1TypeInContext(E->ctx), "seen");
    LLVMValueRef init;
    switch (r.op) {
    case R_PROD:
    case R_NANPROD:
    case R_CUMPROD:
        init = em_convert(E, i64c(E, 1), TS_INT64, acc);
        break;
    case R_ALL:
        init = LLVMConstInt(LLVMInt1TypeInContext(E->ctx), 1, 0);
        break;
    case R_MIN:
    case R_MAX:
    case R_NANMIN:
    case R_NANMAX:
        init = minmax_sentinel(E, &r);
        break;
    default:
        init = LLVMConstNull(acc_t);
    }
    LLVMBuildStore(E->b, init, r.slot);
    LLVMBuildStore(E->b, i64c(E, 0), r.count);
    LLVMBuildStore(E->b, i64c(E, 0), r.flat);
    LLVMBuildStore(E->b, LLVMConstNull(cc_value_type(E->ctx, r.in)), r.best);
    LLVMBuildStore(E->b, LLVMConstInt(LLVMInt1TypeInContext(E->ctx), 0, 0), r.seen);
    Walk w = {.ndim = arg->ty->n, .visit = reduce_visit, .ctx = &r};
    if (run_walk(E, &w, arg) < 0) {
        return NULL;
    }
    LLVMValueRef result = LLVMBuildLoad2(E->b, acc_t, r.slot, "reduced");
    if (op == R_VAR || op == R_STD) {
        r.count = r.flat; /* the squares were taken of every element */
    }
    if (op == R_MEAN) {
        /* the walk's size, known before it: no count carried through the
         * loop, whose value after it LLVM would compute again */
        LLVMValueRef size = i64c(E, 1);
        for (int d = 0; d < w.ndim; d++) {
            size = LLVMBuildMul(E->b, size, w.shape[d], "size");
        }
        LLVMBuildStore(E->b, size, r.count);
    }
    switch (r.op) {
    case R_MIN:
    case R_MAX:
    case R_NANMIN:
    case R_NANMAX:
    case R_ARGMIN:
    case R_ARGMAX:
        /* of an empty array: ValueError, as NumPy */
        em_check(E,
                 LLVMBuildICmp(E->b, LLVMIntEQ, LLVMBuildLoad2(E->b, i64, r.flat, "n"), i64c(E, 0),
                               "empty"),
                 CC_STATUS_VALUE);
        if (minmax && ts_is_float(acc)) {
            /* the key back to its float; NaN when one was seen (min/max) or
             * when every element was one (nanmin/nanmax) */
            LLVMValueRef nan =
                r.op == R_MIN || r.op == R_MAX
                    ? LLVMBuildLoad2(E->b, LLVMInt1TypeInContext(E->ctx), r.seen, "nan")
                    : LLVMBuildICmp(E->b, LLVMIntEQ, result, minmax_sentinel(E, &r), "all.nan");
            LLVMValueRef sign = LLVMBuildAShr(
                E->b, result, LLVMConstInt(acc_t, (unsigned long long)ts_bits(acc) - 1, 0), "s");
            LLVMValueRef bits = LLVMBuildXor(
                E->b, result, LLVMBuildLShr(E->b, sign, LLVMConstInt(acc_t, 1, 0), ""), "bits");
            result = LLVMBuildSelect(E->b, nan, em_real_const(E, acc, __builtin_nan("")),
                                     LLVMBuildBitCast(E->b, bits, cc_value_type(E->ctx, acc), ""),
                                     "reduced");
        }
        break;
    case R_MEAN:
    case R_NANMEAN:
    case R_VAR:
    case R_STD: {
        LLVMValueRef c = LLVMBuildLoad2(E->b, i64, r.count, "n");
        if (r.op == R_VAR || r.op == R_STD) {
            /* NumPy divides by max(n - ddof, 0) */
            c = LLVMBuildSub(E->b, c, i64c(E, r.ddof), "n.ddof");
            c = LLVMBuildSelect(E->b, LLVMBuildICmp(E->b, LLVMIntSLT, c, i64c(E, 0), ""),
                                i64c(E, 0), c, "n.ddof");
        }
        TsKind part = ts_is_complex(acc) ? em_part_kind(acc) : acc;
        LLVMValueRef cf = LLVMBuildSIToFP(E->b, c, cc_value_type(E->ctx, part), "n.f");
        if (ts_is_complex(acc)) {
            result = em_make_complex(E, acc, LLVMBuildFDiv(E->b, em_re_of(E, result), cf, "re"),
                                     LLVMBuildFDiv(E->b, em_im_of(E, result), cf, "im"));
        } else {
            result = LLVMBuildFDiv(E->b, result, cf, "mean");
        }
        if (r.op == R_STD) {
            result = em_float_intrinsic(E, "llvm.sqrt", acc, &result, 1);
        }
        break;
    }
    default:
        break;
    }
    return result;
}

/* np.sum(a) ...: one walk; var/std: the mean first, then the squares of
 * the deviations from it (two walks over the same expression). */
static LLVMValueRef
reduce(Emit *E, CcNode *n, const CcBuiltin *b)
{
    TsKind acc = cc_storage(n->ty);
    LLVMValueRef center = NULL;
    if (b->op == R_VAR || b->op == R_STD) {
        TsKind ck = var_center_kind(cc_storage(n->args[0]->ty), acc);
        if ((center = reduce_with(E, n->args[0], R_MEAN, ck, NULL, 0, NULL)) == NULL) {
            return NULL;
        }
    }
    return reduce_with(E, n->args[0], (CcReduceOp)b->op, acc, center, n->ival, NULL);
}

/* np.cumsum(a), np.cumprod(a): a new 1-d array of a's size, the running
 * sums (products) in C order. */
static int
cumulate(Emit *E, CcNode *n, View *v)
{
    CcNode *arg = n->args[0];
    const CcBuiltin *b = cc_builtin(n->builtin);
    Walk probe = {.ndim = arg->ty->n};
    if (collect_expr(E, &probe, arg) < 0) {
        return -1;
    }
    broadcast(E, &probe);
    LLVMValueRef total = i64c(E, 1);
    for (int d = 0; d < probe.ndim; d++) {
        total = LLVMBuildMul(E->b, total, probe.shape[d], "total");
    }
    if (alloc_array(E, n, n->ty->scalar, 1, &total, v) < 0) {
        return -1;
    }
    return reduce_with(E, arg, (CcReduceOp)b->op, n->ty->scalar, NULL, 0, v) != NULL ? 0 : -1;
}

/* ---- boolean masks ---- */

typedef struct Masked {
    View out;           /* a[mask]: the array filled */
    LLVMValueRef count; /* the elements taken (a[mask]) or stored (= array) so far: an alloca */
    LLVMValueRef value; /* a[mask] = v: v in a's kind (NULL: an array, src) */
    View src;           /* a[mask] = array, a[idx] = array: its elements, C order */
    LLVMValueRef nsrc;  /* how many (1: the one for all) */
    View a;             /* a[idx]: a */
} Masked;

/* a[mask]: each element is stored at the next free place and the place
 * moves on when the mask holds (no branch; the array has room for all). */
static int
mask_take_visit(Emit *E, Walk *w, LLVMValueRef value)
{
    Masked *m = w->ctx;
    LLVMTypeRef i64 = i64_type(E);
    LLVMValueRef k = LLVMBuildLoad2(E->b, i64, m->count, "k");
    LLVMValueRef off = LLVMBuildNSWMul(E->b, k, i64c(E, ts_itemsize(m->out.kind)), "off");
    LLVMValueRef at =
        LLVMBuildInBoundsGEP2(E->b, LLVMInt8TypeInContext(E->ctx), m->out.data, &off, 1, "at");
    cc_store(E->b, m->out.kind, cc_load(E->b, m->out.kind, w->target_ptr, "x"), at);
    LLVMValueRef take = LLVMBuildZExt(E->b, em_truthy(E, value, cc_storage(w->expr->ty)), i64, "");
    LLVMBuildStore(E->b, LLVMBuildAdd(E->b, k, take, "k"), m->count);
    return 0;
}

/* a[mask] = v: v where the mask holds, the element itself elsewhere. */
static int
mask_put_visit(Emit *E, Walk *w, LLVMValueRef value)
{
    Masked *m = w->ctx;
    TsKind k = w->target.kind;
    LLVMValueRef put = em_truthy(E, value, cc_storage(w->expr->ty));
    LLVMValueRef old = cc_load(E->b, k, w->target_ptr, "x");
    cc_store(E->b, k, LLVMBuildSelect(E->b, put, m->value, old, "put"), w->target_ptr);
    return 0;
}

/* Whether the index expression w collected (a mask, walked element for
 * element along a; or an index array) reads the array a is a view of:
 * for a mask, other than a's own element at each place. */
static LLVMValueRef
index_reads_written(Emit *E, Walk *w, const View *a, int mask)
{
    View t = *a;
    within(E, &t);
    LLVMValueRef any = LLVMConstInt(LLVMInt1TypeInContext(E->ctx), 0, 0);
    for (int i = 0; i < w->nleaves; i++) {
        View *l = &w->leaves[i].v;
        if (!cc_is_array(w->leaves[i].ty)) {
            continue;
        }
        within(E, l);
        LLVMValueRef meet =
            LLVMBuildAnd(E->b, LLVMBuildICmp(E->b, LLVMIntULT, l->lo, t.hi, ""),
                         LLVMBuildICmp(E->b, LLVMIntULT, t.lo, l->hi, ""), "index.meets");
        if (mask) {
            meet = LLVMBuildAnd(E->b, meet, LLVMBuildNot(E->b, same_view(E, l, a), ""), "");
        }
        any = LLVMBuildOr(E->b, any, meet, "index.reads");
    }
    return any;
}

/*
 * Runs w, the walk of a mask or index array whose visit writes into a:
 * where the expression reads a, through a copy of its values made first,
 * as NumPy computes an index before it writes (a[a[::-1] > 0] = 1.5,
 * a[a] = 0).  A device, which cannot allocate, writes in element order.
 */
static int
run_index_write(Emit *E, Walk *w, CcNode *at, const View *a, int mask)
{
    if (E->alloc_head == NULL) {
        return run_collected(E, w);
    }
    LLVMBasicBlockRef copy = em_new_block(E, "index.copy"),
                      direct = em_new_block(E, "index.direct");
    LLVMBasicBlockRef done = em_new_block(E, "index.done");
    LLVMBuildCondBr(E->b, index_reads_written(E, w, a, mask), copy, direct);
    LLVMPositionBuilderAtEnd(E->b, direct);
    if (run_collected(E, w) < 0) {
        return -1;
    }
    LLVMBuildBr(E->b, done);
    LLVMPositionBuilderAtEnd(E->b, copy);
    Walk values = *w;
    values.visit = store_visit;
    View tmp;
    if (materialize_collected(E, &values, at, &tmp) < 0) {
        return -1;
    }
    CcNode leaf = {
        .kind = ND_VIEW, .loc = at->loc, .ty = cc_array_type(tmp.kind, tmp.ndim), .view = &tmp};
    Walk c = {.ndim = w->ndim, .target = w->target, .visit = w->visit, .ctx = w->ctx};
    if (collect_expr(E, &c, &leaf) < 0 || run_collected(E, &c) < 0) {
        return -1;
    }
    LLVMBuildBr(E->b, done);
    LLVMPositionBuilderAtEnd(E->b, done);
    return 0;
}

/* Walks a (n->lhs of an a[mask]) and the mask together (writes: the visit
 * writes into a).  Each dimension of the mask must be a's, or 0 (a mask of
 * no elements selects nothing, NumPy's old rule), else IndexError (NumPy's
 * "boolean index did not match"; a dimension of 1 does not broadcast
 * here). */
static int
mask_walk(Emit *E, CcNode *index, Walk *w, int writes)
{
    View a;
    if (view_of(E, index->lhs, &a) < 0 || collect_expr(E, w, index->args[0]) < 0) {
        return -1;
    }
    w->ndim = a.ndim;
    w->target.data = NULL;
    broadcast(E, w); /* the mask's own shape */
    LLVMValueRef bad = LLVMConstInt(LLVMInt1TypeInContext(E->ctx), 0, 0), none = bad;
    for (int d = 0; d < a.ndim; d++) {
        LLVMValueRef zero = LLVMBuildICmp(E->b, LLVMIntEQ, w->shape[d], i64c(E, 0), "mask.0");
        LLVMValueRef other = LLVMBuildICmp(E->b, LLVMIntNE, w->shape[d], a.shape[d], "");
        bad = LLVMBuildOr(E->b, bad, LLVMBuildAnd(E->b, other, LLVMBuildNot(E->b, zero, ""), ""),
                          "mask.bad");
        none = LLVMBuildOr(E->b, none, zero, "mask.none");
    }
    em_check(E, bad, CC_STATUS_INDEX);
    LLVMBasicBlockRef walk = em_new_block(E, "mask.walk"), done = em_new_block(E, "mask.done");
    LLVMBuildCondBr(E->b, none, done, walk);
    LLVMPositionBuilderAtEnd(E->b, walk);
    w->target = a;
    if ((writes ? run_index_write(E, w, index, &a, 1) : run_collected(E, w)) < 0) {
        return -1;
    }
    LLVMBuildBr(E->b, done);
    LLVMPositionBuilderAtEnd(E->b, done);
    return 0;
}

static int
mask_read(Emit *E, CcNode *n, View *v)
{
    View a;
    if (view_of(E, n->lhs, &a) < 0) {
        return -1;
    }
    LLVMValueRef total = i64c(E, 1);
    for (int d = 0; d < a.ndim; d++) {
        total = LLVMBuildMul(E->b, total, a.shape[d], "total");
    }
    Masked m = {.count = em_entry_alloca(E, i64_type(E), "taken")};
    if (alloc_array(E, n, a.kind, 1, &total, &m.out) < 0) {
        return -1;
    }
    LLVMBuildStore(E->b, i64c(E, 0), m.count);
    Walk w = {.visit = mask_take_visit, .ctx = &m};
    if (mask_walk(E, n, &w, 0) < 0) {
        return -1;
    }
    *v = m.out;
    v->shape[0] = LLVMBuildLoad2(E->b, i64_type(E), m.count, "taken");
    return 0;
}

/* The next value of a[mask] = array or a[idx] = array: src's element
 * count (src's only one when it has one); one more than src has ends the
 * kernel with CC_STATUS_SHAPE. */
static LLVMValueRef
next_source(Emit *E, Masked *m)
{
    LLVMTypeRef i64 = i64_type(E);
    LLVMValueRef k = LLVMBuildLoad2(E->b, i64, m->count, "k");
    LLVMValueRef one = LLVMBuildICmp(E->b, LLVMIntEQ, m->nsrc, i64c(E, 1), "one");
    em_check(E,
             LLVMBuildAnd(E->b, LLVMBuildNot(E->b, one, ""),
                          LLVMBuildICmp(E->b, LLVMIntSGE, k, m->nsrc, "more"), "too.few"),
             CC_STATUS_SHAPE);
    LLVMValueRef at = LLVMBuildSelect(E->b, one, i64c(E, 0), k, "at");
    LLVMBuildStore(E->b, LLVMBuildNSWAdd(E->b, k, i64c(E, 1), "k"), m->count);
    LLVMValueRef off = LLVMBuildNSWMul(E->b, at, i64c(E, ts_itemsize(m->src.kind)), "off");
    return cc_load(
        E->b, m->src.kind,
        LLVMBuildInBoundsGEP2(E->b, LLVMInt8TypeInContext(E->ctx), m->src.data, &off, 1, ""), "v");
}

/* a[mask] = array: the next value where the mask holds. */
static int
mask_put_array_visit(Emit *E, Walk *w, LLVMValueRef value)
{
    Masked *m = w->ctx;
    LLVMBasicBlockRef put = em_new_block(E, "mask.put"), next = em_new_block(E, "mask.next");
    LLVMBuildCondBr(E->b, em_truthy(E, value, cc_storage(w->expr->ty)), put, next);
    LLVMPositionBuilderAtEnd(E->b, put);
    cc_store(E->b, w->target.kind, next_source(E, m), w->target_ptr);
    LLVMBuildBr(E->b, next);
    LLVMPositionBuilderAtEnd(E->b, next);
    return 0;
}

/* a[idx] (typeinfer: a is 1-d): the address of a[i], i wrapped and checked. */
static LLVMValueRef
fancy_address(Emit *E, Walk *w, const View *a, LLVMValueRef i)
{
    /* NumPy casts an index array to intp: a uint64 past int64 wraps */
    i = em_wrap_index(E, em_convert(E, i, cc_storage(w->expr->ty), TS_INT64), TS_INT64,
                      a->shape[0]);
    LLVMValueRef off = LLVMBuildNSWMul(E->b, i, a->stride[0], "off");
    return LLVMBuildInBoundsGEP2(E->b, LLVMInt8TypeInContext(E->ctx), a->data, &off, 1, "at");
}

static int
fancy_take_visit(Emit *E, Walk *w, LLVMValueRef i)
{
    Masked *m = w->ctx;
    LLVMValueRef at = fancy_address(E, w, &m->a, i);
    if (m->a.ndim == 1) {
        cc_store(E->b, m->a.kind, cc_load(E->b, m->a.kind, at, "x"), w->target_ptr);
        return 0;
    }
    /* a row of an N-d a: copied into the result's block for this index */
    View row = {.ndim = m->a.ndim - 1, .kind = m->a.kind, .data = at};
    View dst = {.ndim = m->a.ndim - 1, .kind = m->a.kind, .data = w->target_ptr};
    for (int d = 1; d < m->a.ndim; d++) {
        row.shape[d - 1] = dst.shape[d - 1] = m->a.shape[d];
        row.stride[d - 1] = m->a.stride[d];
        dst.stride[d - 1] = w->target.stride[w->ndim + d - 1];
    }
    CcNode node = {.kind = ND_VIEW,
                   .loc = w->expr->loc,
                   .ty = cc_array_type(row.kind, row.ndim),
                   .view = &row};
    Walk copy = {.visit = store_visit};
    if (collect_expr(E, &copy, &node) < 0) {
        return -1;
    }
    copy.ndim = dst.ndim;
    copy.target = dst;
    broadcast(E, &copy);
    return run_collected(E, &copy);
}

static int
fancy_put_visit(Emit *E, Walk *w, LLVMValueRef i)
{
    Masked *m = w->ctx;
    LLVMValueRef at = fancy_address(E, w, &m->a, i);
    cc_store(E->b, m->a.kind, m->value != NULL ? m->value : next_source(E, m), at);
    return 0;
}

/* a[idx]: a new array of idx's shape. */
static int
fancy_read(Emit *E, CcNode *n, View *v)
{
    Masked m = {0};
    Walk w = {.visit = fancy_take_visit, .ctx = &m};
    if (view_of(E, n->lhs, &m.a) < 0 || collect_expr(E, &w, n->args[0]) < 0) {
        return -1;
    }
    w.ndim = n->args[0]->ty->n;
    w.target.data = NULL;
    broadcast(E, &w);
    /* idx's shape, then a's other dimensions */
    LLVMValueRef shape[TS_MAXDIMS];
    int nd = 0;
    for (int d = 0; d < w.ndim; d++) {
        shape[nd++] = w.shape[d];
    }
    for (int d = 1; d < m.a.ndim && nd < TS_MAXDIMS; d++) {
        shape[nd++] = m.a.shape[d];
    }
    if (alloc_array(E, n, m.a.kind, nd, shape, v) < 0) {
        return -1;
    }
    w.target = *v;
    return run_collected(E, &w);
}

/*
 * a[mask] = v and a[idx] = v: a scalar v goes to every place chosen; an
 * array v (a copy, made first, in a's kind) gives its elements in order,
 * as many as there are places (or one for all), else ValueError.
 */
static int
indexed_write(Emit *E, CcNode *n)
{
    CcNode *index = n->lhs;
    TsKind k = index->ty->scalar;
    Masked m = {.count = em_entry_alloca(E, i64_type(E), "stored")};
    if (cc_is_array(n->rhs->ty)) {
        if (copy_as(E, n->rhs, k, &m.src) < 0) {
            return -1;
        }
        m.nsrc = view_size(E, &m.src);
    } else {
        LLVMValueRef v = em_expr(E, n->rhs);
        if (v == NULL) {
            return -1;
        }
        m.value = em_convert_type(E, v, n->rhs->ty, cc_scalar_type(k));
    }
    LLVMBuildStore(E->b, i64c(E, 0), m.count);
    Walk w = {.ctx = &m};
    if (is_mask_index(index)) {
        w.visit = m.value != NULL ? mask_put_visit : mask_put_array_visit;
        if (mask_walk(E, index, &w, 1) < 0) {
            return -1;
        }
    } else {
        w.visit = fancy_put_visit;
        w.ndim = index->args[0]->ty->n;
        if (view_of(E, index->lhs, &m.a) < 0 || collect_expr(E, &w, index->args[0]) < 0
            || run_index_write(E, &w, index, &m.a, 0) < 0) {
            return -1;
        }
    }
    if (m.value == NULL) {
        /* fewer places than values: ValueError too */
        LLVMValueRef stored = LLVMBuildLoad2(E->b, i64_type(E), m.count, "stored");
        em_check(E,
                 LLVMBuildAnd(E->b, LLVMBuildICmp(E->b, LLVMIntNE, m.nsrc, i64c(E, 1), ""),
                              LLVMBuildICmp(E->b, LLVMIntNE, stored, m.nsrc, ""), "too.many"),
                 CC_STATUS_SHAPE);
    }
    return 0;
}

/* ---- reductions along an axis ---- */

/* Combines the element x into the result element at w->target_ptr (the
 * result seen through a zero stride along the reduced axis). */
static int
axis_visit(Emit *E, Walk *w, LLVMValueRef value)
{
    Reduce *r = w->ctx;
    TsKind k = r->acc;
    LLVMValueRef x = em_convert_type(E, value, w->expr->ty, cc_scalar_type(r->in));
    LLVMValueRef acc = cc_load(E->b, k, w->target_ptr, "acc"), out;
    LLVMValueRef nan = is_nan(E, r->in, x);
    switch (r->op) {
    case R_ANY:
    case R_ALL:
        out = truth_step(E, r, x, acc);
        break;
    case R_MIN:
    case R_MAX:
    case R_NANMIN:
    case R_NANMAX: {
        int max = r->op == R_MAX || r->op == R_NANMAX;
        if (k == TS_BOOL) {
            out = max ? LLVMBuildOr(E->b, acc, x, "max") : LLVMBuildAnd(E->b, acc, x, "min");
            break;
        }
        LLVMValueRef better =
            ts_is_float(k) ? em_quiet_fcmp(E, max ? LLVMRealOGT : LLVMRealOLT, x, acc, "better")
                           : LLVMBuildICmp(E->b, em_int_pred(max ? OP_GT : OP_LT, ts_is_signed(k)),
                                           x, acc, "better");
        LLVMValueRef acc_nan = is_nan(E, k, acc);
        if (r->op == R_NANMIN || r->op == R_NANMAX) {
            better = LLVMBuildOr(E->b, better, acc_nan, "better"); /* from the NaN start */
        } else {
            better = LLVMBuildAnd(E->b, LLVMBuildOr(E->b, better, nan, ""),
                                  LLVMBuildNot(E->b, acc_nan, ""), "better"); /* NaN stays */
        }
        out = LLVMBuildSelect(E->b, better, x, acc, "best");
        break;
    }
    default: {
        int prod = r->op == R_PROD || r->op == R_NANPROD;
        out = em_arith(E, prod ? OP_MUL : OP_ADD, k, acc, em_convert(E, x, r->in, k));
        if (r->op == R_NANSUM || r->op == R_NANPROD) {
            out = LLVMBuildSelect(E->b, nan, acc, out, "skip.nan");
        }
    }
    }
    cc_store(E->b, k, out, w->target_ptr);
    return 0;
}

/* mean along an axis: the sums divided by the axis's length. */
static int
divide_visit(Emit *E, Walk *w, LLVMValueRef value)
{
    Reduce *r = w->ctx;
    (void)value;
    TsKind k = r->acc, part = ts_is_complex(k) ? em_part_kind(k) : k;
    LLVMValueRef d = LLVMBuildSIToFP(E->b, r->length, cc_value_type(E->ctx, part), "n");
    LLVMValueRef v = cc_load(E->b, k, w->target_ptr, "sum");
    if (ts_is_complex(k)) {
        v = em_make_complex(E, k, LLVMBuildFDiv(E->b, em_re_of(E, v), d, "re"),
                            LLVMBuildFDiv(E->b, em_im_of(E, v), d, "im"));
    } else {
        v = LLVMBuildFDiv(E->b, v, d, "mean");
    }
    cc_store(E->b, k, v, w->target_ptr);
    return 0;
}

/*
 * np.sum(a, axis=k) ... of an N-d a: the result (the other dimensions) is
 * allocated and filled with the operation's start (0, 1, -inf/+inf or the
 * kind's extreme, NaN for nanmin/nanmax), then one walk over a's whole
 * shape combines each element into the result seen with a zero stride
 * along k.  An empty axis is ValueError for min/max (no identity).
 */
static int
axis_reduce(Emit *E, CcNode *n, View *v)
{
    const CcBuiltin *b = cc_builtin(n->builtin);
    CcNode *arg = n->args[0];
    int axis = n->index - 1, ndim = arg->ty->n;
    Reduce r = {.op = (CcReduceOp)b->op, .in = cc_storage(arg->ty), .acc = n->ty->scalar};
    Walk w = {.ndim = ndim, .visit = axis_visit, .ctx = &r};
    if (collect_expr(E, &w, arg) < 0) {
        return -1;
    }
    broadcast(E, &w);
    LLVMValueRef shape[TS_MAXDIMS];
    for (int d = 0, j = 0; d < ndim; d++) {
        if (d != axis) {
            shape[j++] = w.shape[d];
        }
    }
    if (alloc_array(E, n, r.acc, ndim - 1, shape, v) < 0) {
        return -1;
    }
    TsKind k = r.acc;
    double inf = __builtin_inf();
    LLVMValueRef init;
    switch (r.op) {
    case R_PROD:
    case R_NANPROD:
    case R_ALL:
        init = em_convert(E, i64c(E, 1), TS_INT64, k);
        break;
    case R_MIN:
    case R_MAX:
    case R_NANMIN:
    case R_NANMAX:
        em_check(E, LLVMBuildICmp(E->b, LLVMIntEQ, w.shape[axis], i64c(E, 0), "empty"),
                 CC_STATUS_VALUE);
        if (ts_is_float(k)) {
            int max = r.op == R_MAX || r.op == R_NANMAX;
            init = em_real_const(E, k,
                                 r.op == R_NANMIN || r.op == R_NANMAX ? __builtin_nan("")
                                 : max                                ? -inf
                                                                      : inf);
        } else {
            r.op = r.op == R_NANMIN ? R_MIN : r.op == R_NANMAX ? R_MAX : r.op;
            init = minmax_sentinel(E, &r);
        }
        break;
    default:
        init = LLVMConstNull(cc_value_type(E->ctx, k));
    }
    CcNode start = {.kind = ND_CONST, .loc = n->loc, .ty = cc_scalar_type(k)};
    if (fill_view(E, v, &start, init) < 0) {
        return -1;
    }
    /* the result seen along a's whole shape: stride 0 on the axis */
    View t = {.ndim = ndim, .kind = k, .data = v->data};
    for (int d = 0, j = 0; d < ndim; d++) {
        t.shape[d] = w.shape[d];
        t.stride[d] = d == axis ? i64c(E, 0) : v->stride[j++];
    }
    w.target = t;
    if (run_collected(E, &w) < 0) {
        return -1;
    }
    if (r.op == R_MEAN) {
        r.length = w.shape[axis];
        Walk m = {.ndim = v->ndim, .target = *v, .visit = divide_visit, .ctx = &r};
        return run_collected(E, &m);
    }
    return 0;
}

/* A counted loop (loop_begin, loop_end). */
typedef struct Loop {
    LLVMBasicBlockRef pre, head, done;
    LLVMValueRef i, count;
} Loop;
static void loop_begin(Emit *E, Loop *l, LLVMValueRef count, const char *name);
static void loop_end(Emit *E, Loop *l);

/*
 * np.argmax(a, axis=k), nanmean, var, std, cumsum, cumprod along an axis:
 * a loop over the other dimensions reduces each line along k as a whole
 * 1-d array (reduce_with on an ND_VIEW).  The result is allocated with the
 * axis left out, or (cumsum/cumprod) moved last so that each line is
 * contiguous, and then seen with it back in place.
 */
static int
axis_lines(Emit *E, CcNode *n, View *v)
{
    CcReduceOp op = (CcReduceOp)cc_builtin(n->builtin)->op;
    int axis = n->index - 1, cumulative = op == R_CUMSUM || op == R_CUMPROD;
    TsKind acc = n->ty->kind == CT_ARRAY ? n->ty->scalar : cc_storage(n->ty);
    View a, r;
    if (view_of(E, n->args[0], &a) < 0) {
        return -1;
    }
    int outer = a.ndim - 1;
    LLVMValueRef shape[TS_MAXDIMS];
    for (int d = 0, j = 0; d < a.ndim; d++) {
        if (d != axis) {
            shape[j++] = a.shape[d];
        }
    }
    shape[outer] = a.shape[axis];
    if (op == R_ARGMIN || op == R_ARGMAX) {
        /* NumPy refuses an empty axis even when no line is reduced */
        em_check(E, LLVMBuildICmp(E->b, LLVMIntEQ, a.shape[axis], i64c(E, 0), "empty"),
                 CC_STATUS_VALUE);
    }
    if (alloc_array(E, n, acc, outer + cumulative, shape, &r) < 0) {
        return -1;
    }
    Loop loops[TS_MAXDIMS];
    LLVMValueRef off = i64c(E, 0), roff = i64c(E, 0);
    for (int d = 0, j = 0; d < a.ndim; d++) {
        if (d == axis) {
            continue;
        }
        loop_begin(E, &loops[j], shape[j], "axis.line");
        off = LLVMBuildNSWAdd(E->b, off, LLVMBuildNSWMul(E->b, loops[j].i, a.stride[d], ""), "off");
        roff =
            LLVMBuildNSWAdd(E->b, roff, LLVMBuildNSWMul(E->b, loops[j].i, r.stride[j], ""), "roff");
        j++;
    }
    LLVMTypeRef i8 = LLVMInt8TypeInContext(E->ctx);
    View line = {.ndim = 1, .kind = a.kind};
    line.data = LLVMBuildGEP2(E->b, i8, a.data, &off, 1, "line");
    line.shape[0] = a.shape[axis];
    line.stride[0] = a.stride[axis];
    CcNode node = {.kind = ND_VIEW, .loc = n->loc, .ty = cc_array_type(a.kind, 1), .view = &line};
    LLVMValueRef at = LLVMBuildGEP2(E->b, i8, r.data, &roff, 1, "at");
    if (cumulative) {
        View o = {.ndim = 1, .kind = acc, .data = at};
        o.shape[0] = a.shape[axis];
        o.stride[0] = i64c(E, ts_itemsize(acc));
        if (reduce_with(E, &node, op, acc, NULL, 0, &o) == NULL) {
            return -1;
        }
    } else {
        LLVMValueRef center = NULL, x;
        if ((op == R_VAR || op == R_STD)
            && (center = reduce_with(E, &node, R_MEAN, var_center_kind(a.kind, acc), NULL, 0, NULL))
                   == NULL) {
            return -1;
        }
        node.elem = NULL;
        if ((x = reduce_with(E, &node, op, acc, center, n->ival, NULL)) == NULL) {
            return -1;
        }
        cc_store(E->b, acc, x, at);
    }
    for (int j = outer - 1; j >= 0; j--) {
        loop_end(E, &loops[j]);
    }
    *v = r;
    if (cumulative) {
        /* the axis back in its place */
        for (int d = 0, j = 0; d < a.ndim; d++) {
            v->shape[d] = d == axis ? r.shape[outer] : r.shape[j];
            v->stride[d] = d == axis ? r.stride[outer] : r.stride[j];
            j += d != axis;
        }
    }
    return 0;
}

/* np.ndindex's loop: .ndsize(shape) and .unravel(k, shape). */
static LLVMValueRef
shape_call(Emit *E, CcNode *n, const CcBuiltin *b)
{
    CcNode *shape = n->args[n->nargs - 1];
    LLVMValueRef s = em_expr(E, shape), dims[TS_MAXDIMS + 1];
    if (s == NULL) {
        return NULL;
    }
    int nd = shape->ty->kind == CT_TUPLE ? shape->ty->n : 1;
    for (int i = 0; i < nd; i++) {
        dims[i] = shape->ty->kind == CT_TUPLE
                      ? em_convert(E, LLVMBuildExtractValue(E->b, s, (unsigned)i, "dim"),
                                   cc_storage(shape->ty->elems[i]), TS_INT64)
                      : em_convert(E, s, cc_storage(shape->ty), TS_INT64);
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
        LLVMValueRef size = i64c(E, 1);
        for (int i = 0; i < nd; i++) {
            size = LLVMBuildMul(E->b, size, dims[i], "size");
        }
        k = em_wrap_index(E, k, cc_storage(n->args[0]->ty), size);
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
            LLVMBuildSelect(E->b, LLVMBuildICmp(E->b, LLVMIntSLT, dims[i], i64c(E, 1), ""),
                            i64c(E, 1), dims[i], "d");
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
        return shape_call(E, n, b);
    }
    View v;
    if (b->flavor == FL_REDUCE && cc_is_array(n->ty)) {
        return view_of(E, n, &v) == 0 ? view_pack(E, &v) : NULL;
    }
    if (b->flavor == FL_REDUCE) {
        return reduce(E, n, b);
    }
    return alloc_call(E, n, &v) == 0 ? view_pack(E, &v) : NULL;
}

/* ---- sorting and searching: runtime.c's functions ---- */

static LLVMValueRef
i32c(Emit *E, long long v)
{
    return LLVMConstInt(LLVMInt32TypeInContext(E->ctx), (unsigned long long)v, 1);
}

LLVMValueRef
em_runtime_call(Emit *E, const char *name, LLVMTypeRef ret, LLVMValueRef *args, unsigned n)
{
    LLVMTypeRef params[12];
    for (unsigned i = 0; i < n; i++) {
        params[i] = LLVMTypeOf(args[i]);
    }
    LLVMValueRef f = libc_function(E, name, ret, params, n);
    return LLVMBuildCall2(E->b, LLVMGlobalGetValueType(f), f, args, n, "");
}

/* Ends the kernel with the status st (an i32) that a runtime call gave,
 * when it is not CC_STATUS_OK. */
static void
runtime_status(Emit *E, LLVMValueRef st)
{
    E->fn->fails |= ~1u; /* whatever the runtime reports */
    LLVMBasicBlockRef bad = em_new_block(E, "rt.fail"), ok = em_new_block(E, "rt.ok");
    LLVMBuildCondBr(E->b, LLVMBuildICmp(E->b, LLVMIntNE, st, i32c(E, 0), "rt.bad"), bad, ok);
    LLVMPositionBuilderAtEnd(E->b, bad);
    em_return_status(E, st);
    LLVMPositionBuilderAtEnd(E->b, ok);
    E->reachable = 1;
}

/* v's shape and strides in two i64 arrays (entry-block allocas), as the
 * runtime takes them. */
static void
view_arrays(Emit *E, const View *v, LLVMValueRef *shape, LLVMValueRef *strides)
{
    LLVMTypeRef i64 = i64_type(E), arr = LLVMArrayType2(i64, (unsigned long long)v->ndim);
    *shape = em_entry_alloca(E, arr, "rt.shape");
    *strides = em_entry_alloca(E, arr, "rt.strides");
    for (int d = 0; d < v->ndim; d++) {
        LLVMValueRef at = i64c(E, d);
        LLVMBuildStore(E->b, v->shape[d], LLVMBuildInBoundsGEP2(E->b, i64, *shape, &at, 1, ""));
        LLVMBuildStore(E->b, v->stride[d], LLVMBuildInBoundsGEP2(E->b, i64, *strides, &at, 1, ""));
    }
}

static LLVMValueRef
view_size(Emit *E, const View *v)
{
    LLVMValueRef total = i64c(E, 1);
    for (int d = 0; d < v->ndim; d++) {
        total = LLVMBuildMul(E->b, total, v->shape[d], "total");
    }
    return total;
}

/* n's value copied into a new C-contiguous array of kind k and n's shape
 * (one walk: an expression is computed into it). */
static int
copy_as(Emit *E, CcNode *n, TsKind k, View *v)
{
    Walk w = {.visit = store_visit};
    if (collect_expr(E, &w, n) < 0) {
        return -1;
    }
    w.ndim = n->ty->n;
    w.target.data = NULL;
    broadcast(E, &w);
    if (alloc_array(E, n, k, w.ndim, w.shape, v) < 0) {
        return -1;
    }
    w.target = *v;
    return run_collected(E, &w);
}

/* A C-contiguous v as one dimension. */
static void
flatten(Emit *E, View *v)
{
    v->shape[0] = view_size(E, v);
    v->stride[0] = i64c(E, ts_itemsize(v->kind));
    v->ndim = 1;
}

/* numbavec_rt_sort on v's rows (kth < 0: sorted; else partitioned). */
static void
sort_rows(Emit *E, const View *v, LLVMValueRef kth)
{
    LLVMValueRef shape, strides;
    view_arrays(E, v, &shape, &strides);
    LLVMValueRef args[6] = {i32c(E, v->kind), i32c(E, v->ndim), v->data, shape, strides, kth};
    runtime_status(E,
                   em_runtime_call(E, "numbavec_rt_sort", LLVMInt32TypeInContext(E->ctx), args, 6));
}

/* np.partition's kth along v's last axis, negative from the end; out of
 * range ends the kernel with CC_STATUS_KTH. */
static LLVMValueRef
kth_of(Emit *E, CcNode *k, const View *v)
{
    LLVMValueRef i = em_expr_as(E, k, TS_INT64);
    if (i == NULL) {
        return NULL;
    }
    LLVMValueRef len = v->shape[v->ndim - 1];
    LLVMValueRef neg = LLVMBuildICmp(E->b, LLVMIntSLT, i, i64c(E, 0), "neg");
    i = LLVMBuildSelect(E->b, neg, LLVMBuildAdd(E->b, i, len, ""), i, "kth");
    /* NumPy checks kth against a line that has elements only */
    em_check(E,
             LLVMBuildAnd(E->b, LLVMBuildICmp(E->b, LLVMIntUGE, i, len, "kth.oob"),
                          LLVMBuildICmp(E->b, LLVMIntSGT, len, i64c(E, 0), "some"), "kth.bad"),
             CC_STATUS_KTH);
    return i;
}

/* v with its dimension `axis` moved last (back: from last to `axis`),
 * the others in order: the runtime sorts along the last. */
static View
axis_moved(const View *v, int axis, int back)
{
    View r = *v;
    for (int d = 0, j = 0; d < v->ndim; d++) {
        if (d == axis) {
            continue;
        }
        if (back) {
            r.shape[d] = v->shape[j];
            r.stride[d] = v->stride[j];
        } else {
            r.shape[j] = v->shape[d];
            r.stride[j] = v->stride[d];
        }
        j++;
    }
    int last = v->ndim - 1;
    r.shape[back ? axis : last] = v->shape[back ? last : axis];
    r.stride[back ? axis : last] = v->stride[back ? last : axis];
    return r;
}

/* The arrays of np.sort, argsort, partition, unique and searchsorted. */
static int
sort_view(Emit *E, CcNode *n, View *v)
{
    CcSortOp op = (CcSortOp)cc_builtin(n->builtin)->op;
    CcNode *a = n->args[0];
    int axis = (int)n->ival; /* searchsorted: the side */
    int moved = (op == S_SORT || op == S_ARGSORT || op == S_PARTITION) && n->ival != CC_AXIS_NONE
                && axis != a->ty->n - 1;
    View src, line;
    if (moved) {
        /* sorting along another axis: the copy is made with it last, and
         * seen with it back in place */
        if (view_of(E, a, &src) < 0) {
            return -1;
        }
        line = axis_moved(&src, axis, 0);
        CcNode node = {.kind = ND_VIEW, .loc = n->loc, .ty = a->ty, .view = &line};
        View c;
        if (op == S_ARGSORT) {
            if (alloc_array(E, n, TS_INT64, line.ndim, line.shape, &c) < 0) {
                return -1;
            }
            LLVMValueRef shape, strides;
            view_arrays(E, &line, &shape, &strides);
            LLVMValueRef args[6] = {
                i32c(E, line.kind), i32c(E, line.ndim), line.data, shape, strides, c.data};
            runtime_status(E, em_runtime_call(E, "numbavec_rt_argsort",
                                              LLVMInt32TypeInContext(E->ctx), args, 6));
        } else {
            if (copy_as(E, &node, a->ty->scalar, &c) < 0) {
                return -1;
            }
            LLVMValueRef kth = op == S_PARTITION ? kth_of(E, n->args[1], &c) : i64c(E, -1);
            if (kth == NULL) {
                return -1;
            }
            sort_rows(E, &c, kth);
        }
        *v = axis_moved(&c, axis, 1);
        return 0;
    }
    if (op == S_SORT || op == S_PARTITION || op == S_UNIQUE) {
        if (copy_as(E, a, a->ty->scalar, v) < 0) {
            return -1;
        }
        if (op == S_UNIQUE) {
            LLVMValueRef args[3] = {i32c(E, v->kind), view_size(E, v), v->data};
            flatten(E, v);
            v->shape[0] = em_runtime_call(E, "numbavec_rt_unique", i64_type(E), args, 3);
            return 0;
        }
        if (n->ival == CC_AXIS_NONE) {
            flatten(E, v);
        }
        LLVMValueRef kth = op == S_PARTITION ? kth_of(E, n->args[1], v) : i64c(E, -1);
        if (kth == NULL) {
            return -1;
        }
        sort_rows(E, v, kth);
        return 0;
    }
    if (op == S_ARGSORT) {
        View src;
        if ((n->ival == CC_AXIS_NONE && a->ty->n > 1) || is_elementwise_node(a)) {
            if (copy_as(E, a, a->ty->scalar, &src) < 0) {
                return -1;
            }
        } else if (view_of(E, a, &src) < 0) {
            return -1;
        }
        if (n->ival == CC_AXIS_NONE && src.ndim > 1) {
            flatten(E, &src);
        }
        if (alloc_array(E, n, TS_INT64, src.ndim, src.shape, v) < 0) {
            return -1;
        }
        LLVMValueRef shape, strides;
        view_arrays(E, &src, &shape, &strides);
        LLVMValueRef args[6] = {
            i32c(E, src.kind), i32c(E, src.ndim), src.data, shape, strides, v->data};
        runtime_status(
            E, em_runtime_call(E, "numbavec_rt_argsort", LLVMInt32TypeInContext(E->ctx), args, 6));
        return 0;
    }
    /* np.searchsorted(a, values): the values in a's kind, C order */
    View sorted, x;
    if (view_of(E, a, &sorted) < 0 || copy_as(E, n->args[1], sorted.kind, &x) < 0
        || alloc_array(E, n, TS_INT64, x.ndim, x.shape, v) < 0) {
        return -1;
    }
    LLVMValueRef args[9] = {i32c(E, sorted.kind),
                            sorted.data,
                            sorted.shape[0],
                            sorted.stride[0],
                            x.data,
                            view_size(E, &x),
                            i64c(E, ts_itemsize(x.kind)),
                            v->data,
                            i32c(E, n->ival)};
    em_runtime_call(E, "numbavec_rt_searchsorted", LLVMVoidTypeInContext(E->ctx), args, 9);
    return 0;
}

/* y < x in NumPy's sort order (NaNs last), for a real or integer kind k. */
static LLVMValueRef
sorts_before(Emit *E, TsKind k, LLVMValueRef y, LLVMValueRef x)
{
    if (!ts_is_float(k)) {
        return LLVMBuildICmp(E->b, ts_is_signed(k) ? LLVMIntSLT : LLVMIntULT, y, x, "lt");
    }
    LLVMValueRef lt = em_quiet_fcmp(E, LLVMRealOLT, y, x, "lt"); /* no 'invalid' on NaNs */
    LLVMValueRef nan_after = LLVMBuildAnd(E->b, LLVMBuildFCmp(E->b, LLVMRealUNO, x, x, ""),
                                          LLVMBuildFCmp(E->b, LLVMRealORD, y, y, ""), "");
    return LLVMBuildOr(E->b, lt, nan_after, "lt");
}

/* select, marked !unpredictable: code generation keeps it a conditional
 * move, where it would otherwise make a branch of a select on a loaded
 * value. */
static LLVMValueRef
unpredictable(Emit *E, LLVMValueRef select)
{
    LLVMSetMetadata(select, LLVMGetMDKindIDInContext(E->ctx, "unpredictable", 13),
                    LLVMMetadataAsValue(E->ctx, LLVMMDNodeInContext2(E->ctx, NULL, 0)));
    return select;
}

/*
 * np.searchsorted(a, x) of one value x, a 1-d: a binary search in line, as
 * the runtime's (where the first index i with not a[i] < x, right: with
 * x < a[i]), with selects in place of branches, which a search through
 * values in no order would mispredict half the time.
 */
static LLVMValueRef
search_in_line(Emit *E, const View *a, LLVMValueRef x, int right)
{
    LLVMTypeRef i64 = i64_type(E);
    LLVMBasicBlockRef pre = LLVMGetInsertBlock(E->b);
    LLVMBasicBlockRef head = em_new_block(E, "search.head"), body = em_new_block(E, "search.body");
    LLVMBasicBlockRef done = em_new_block(E, "search.done");
    LLVMBuildBr(E->b, head);
    LLVMPositionBuilderAtEnd(E->b, head);
    LLVMValueRef lo = LLVMBuildPhi(E->b, i64, "lo"), hi = LLVMBuildPhi(E->b, i64, "hi");
    LLVMBuildCondBr(E->b, LLVMBuildICmp(E->b, LLVMIntSLT, lo, hi, "more"), body, done);
    LLVMPositionBuilderAtEnd(E->b, body);
    LLVMValueRef mid = LLVMBuildNSWAdd(
        E->b, lo, LLVMBuildLShr(E->b, LLVMBuildNSWSub(E->b, hi, lo, ""), i64c(E, 1), ""), "mid");
    LLVMValueRef off = LLVMBuildNSWMul(E->b, mid, a->stride[0], "");
    LLVMValueRef y = cc_load(
        E->b, a->kind,
        LLVMBuildInBoundsGEP2(E->b, LLVMInt8TypeInContext(E->ctx), a->data, &off, 1, ""), "y");
    LLVMValueRef up = right ? LLVMBuildNot(E->b, sorts_before(E, a->kind, x, y), "up")
                            : sorts_before(E, a->kind, y, x);
    LLVMValueRef next_lo = unpredictable(
        E, LLVMBuildSelect(E->b, up, LLVMBuildNSWAdd(E->b, mid, i64c(E, 1), ""), lo, "lo.next"));
    LLVMValueRef next_hi = unpredictable(E, LLVMBuildSelect(E->b, up, hi, mid, "hi.next"));
    LLVMBuildBr(E->b, head);
    LLVMValueRef los[2] = {i64c(E, 0), next_lo}, his[2] = {a->shape[0], next_hi};
    LLVMBasicBlockRef from[2] = {pre, body};
    LLVMAddIncoming(lo, los, from, 2);
    LLVMAddIncoming(hi, his, from, 2);
    LLVMPositionBuilderAtEnd(E->b, done);
    return lo;
}

/* The scalars: median and quantiles, searchsorted of one value; and the
 * in-place a.sort() and a.partition(kth). */
static LLVMValueRef
sort_scalar(Emit *E, CcNode *n)
{
    CcSortOp op = (CcSortOp)cc_builtin(n->builtin)->op;
    CcNode *a = n->args[0];
    View v;
    if (op == S_SORT_IN_PLACE || op == S_PARTITION_IN_PLACE) {
        if (view_of(E, a, &v) < 0) {
            return NULL;
        }
        v = axis_moved(&v, (int)n->ival, 0); /* the runtime sorts the last axis */
        LLVMValueRef kth = op == S_PARTITION_IN_PLACE ? kth_of(E, n->args[1], &v) : i64c(E, -1);
        if (kth == NULL) {
            return NULL;
        }
        sort_rows(E, &v, kth);
        return LLVMConstInt(LLVMInt1TypeInContext(E->ctx), 0, 0);
    }
    if (op == S_SEARCHSORTED) {
        LLVMValueRef x = view_of(E, a, &v) == 0 ? em_expr_as(E, n->args[1], v.kind) : NULL;
        if (x == NULL) {
            return NULL;
        }
        if (!ts_is_complex(v.kind)) {
            return search_in_line(E, &v, x, (int)n->ival);
        }
        LLVMValueRef slot = em_entry_alloca(E, cc_memory_type(E->ctx, v.kind), "rt.x");
        LLVMValueRef out = em_entry_alloca(E, i64_type(E), "rt.at");
        cc_store(E->b, v.kind, x, slot);
        LLVMValueRef args[9] = {i32c(E, v.kind), v.data,     v.shape[0], v.stride[0],     slot,
                                i64c(E, 1),      i64c(E, 0), out,        i32c(E, n->ival)};
        em_runtime_call(E, "numbavec_rt_searchsorted", LLVMVoidTypeInContext(E->ctx), args, 9);
        return LLVMBuildLoad2(E->b, i64_type(E), out, "at");
    }
    /* median, quantiles: on a scratch copy the runtime reorders */
    LLVMValueRef q = LLVMConstReal(LLVMDoubleTypeInContext(E->ctx), 0.5);
    if (n->nargs > 1 && (q = em_expr_as(E, n->args[1], TS_FLOAT64)) == NULL) {
        return NULL;
    }
    if (op == S_PERCENTILE || op == S_NANPERCENTILE) {
        q = LLVMBuildFDiv(E->b, q, LLVMConstReal(LLVMDoubleTypeInContext(E->ctx), 100.0), "q");
    }
    if (copy_as(E, a, a->ty->scalar, &v) < 0) {
        return NULL;
    }
    int mode =
        (op == S_MEDIAN || op == S_NANMEDIAN ? CC_Q_MEDIAN : 0)
        | (op == S_NANMEDIAN || op == S_NANQUANTILE || op == S_NANPERCENTILE ? CC_Q_SKIPNAN : 0);
    TsKind rk = cc_storage(n->ty);
    LLVMValueRef out = em_entry_alloca(E, cc_memory_type(E->ctx, rk), "rt.q");
    LLVMValueRef args[6] = {i32c(E, v.kind), view_size(E, &v), v.data, q, i32c(E, mode), out};
    runtime_status(
        E, em_runtime_call(E, "numbavec_rt_quantile", LLVMInt32TypeInContext(E->ctx), args, 6));
    return cc_load(E->b, rk, out, "quantile");
}

LLVMValueRef
ec_sort_call(Emit *E, CcNode *n, const CcBuiltin *b, TsKind out)
{
    (void)b;
    (void)out;
    if (cc_is_array(n->ty)) {
        View v;
        return sort_view(E, n, &v) == 0 ? view_pack(E, &v) : NULL;
    }
    return sort_scalar(E, n);
}

/* ---- np.dot and @ ---- */


/* for (l->i = 0; l->i < count; l->i++): the body follows; loop_end closes it. */
static void
loop_begin(Emit *E, Loop *l, LLVMValueRef count, const char *name)
{
    l->pre = LLVMGetInsertBlock(E->b);
    l->head = em_new_block(E, name);
    l->done = em_new_block(E, "loop.done");
    l->count = count;
    LLVMBuildCondBr(E->b, LLVMBuildICmp(E->b, LLVMIntSGT, count, i64c(E, 0), "any"), l->head,
                    l->done);
    LLVMPositionBuilderAtEnd(E->b, l->head);
    l->i = LLVMBuildPhi(E->b, i64_type(E), name);
}

static void
loop_end(Emit *E, Loop *l)
{
    LLVMValueRef next = LLVMBuildNSWAdd(E->b, l->i, i64c(E, 1), "next");
    LLVMBasicBlockRef latch = LLVMGetInsertBlock(E->b);
    LLVMBuildCondBr(E->b, LLVMBuildICmp(E->b, LLVMIntSLT, next, l->count, "more"), l->head,
                    l->done);
    LLVMValueRef vals[2] = {i64c(E, 0), next};
    LLVMBasicBlockRef bbs[2] = {l->pre, latch};
    LLVMAddIncoming(l->i, vals, bbs, 2);
    LLVMPositionBuilderAtEnd(E->b, l->done);
}

/* The operands of np.dot(a, b) as matrices: a 1-d a is a row (1, n), a
 * 1-d b a column (n, 1); their inner dimensions must agree
 * (CC_STATUS_SHAPE). */
static int
dot_operands(Emit *E, CcNode *n, View *a, View *b)
{
    if (view_of(E, n->args[0], a) < 0 || view_of(E, n->args[1], b) < 0) {
        return -1;
    }
    if (a->ndim == 1) {
        a->shape[1] = a->shape[0];
        a->stride[1] = a->stride[0];
        a->shape[0] = i64c(E, 1);
        a->stride[0] = i64c(E, 0);
        a->ndim = 2;
    }
    if (b->ndim == 1) {
        b->shape[1] = i64c(E, 1);
        b->stride[1] = i64c(E, 0);
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
    LLVMBuildStore(E->b, em_convert(E, i64c(E, 0), TS_INT64, r), acc);
    Loop k;
    loop_begin(E, &k, a->shape[1], "dot.k");
    LLVMValueRef ia[2] = {i, k.i}, ib[2] = {k.i, j};
    LLVMValueRef x = em_convert(
        E, cc_load(E->b, a->kind, address(E, a->data, a->stride, ia, 0, 2), "x"), a->kind, r);
    LLVMValueRef y = em_convert(
        E, cc_load(E->b, b->kind, address(E, b->data, b->stride, ib, 0, 2), "y"), b->kind, r);
    LLVMValueRef s = LLVMBuildLoad2(E->b, cc_value_type(E->ctx, r), acc, "acc");
    LLVMBuildStore(E->b, em_arith(E, OP_ADD, r, s, em_arith(E, OP_MUL, r, x, y)), acc);
    loop_end(E, &k);
    return LLVMBuildLoad2(E->b, cc_value_type(E->ctx, r), acc, "dot");
}

/* The array of np.dot(a, b): (m, p) computed, the 1-d operand's
 * dimension of 1 left out. */
static int
dot_view(Emit *E, CcNode *n, View *v)
{
    View a, b;
    TsKind r = n->ty->scalar;
    int a1 = n->args[0]->ty->n == 1, b1 = n->args[1]->ty->n == 1;
    if (dot_operands(E, n, &a, &b) < 0) {
        return -1;
    }
    LLVMValueRef shape[2] = {a.shape[0], b.shape[1]};
    if (alloc_array(E, n, r, 2, shape, v) < 0) {
        return -1;
    }
    Loop i, j;
    loop_begin(E, &i, shape[0], "dot.i");
    loop_begin(E, &j, shape[1], "dot.j");
    LLVMValueRef x = dot_element(E, &a, &b, i.i, j.i, r);
    LLVMValueRef ij[2] = {i.i, j.i};
    cc_store(E->b, r, x, address(E, v->data, v->stride, ij, 0, 2));
    loop_end(E, &j);
    loop_end(E, &i);
    if (a1 || b1) {
        v->ndim = 1;
        v->shape[0] = a1 ? shape[1] : shape[0];
        v->stride[0] = i64c(E, ts_itemsize(r));
    }
    return 0;
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
                               : em_convert(E, i64c(E, i == 2), TS_INT64, wide);
    }
    LLVMValueRef count = em_arange_length(E, node, val);
    if (alloc_array(E, n, k, 1, &count, v) < 0) {
        return -1;
    }
    /* NumPy: the first two in the arguments' kind, cast, then their difference */
    LLVMValueRef first = em_convert(E, em_convert(E, w[0], wide, k), k, c);
    LLVMValueRef second =
        em_convert(E, em_convert(E, em_arith(E, OP_ADD, wide, w[0], w[2]), wide, k), k, c);
    LLVMValueRef delta = em_arith(E, OP_SUB, c, second, first);
    Loop i;
    loop_begin(E, &i, count, "arange.i");
    LLVMValueRef y = em_arith(E, OP_ADD, c, first,
                              em_arith(E, OP_MUL, c, em_convert(E, i.i, TS_INT64, c), delta));
    y = LLVMBuildSelect(E->b, LLVMBuildICmp(E->b, LLVMIntEQ, i.i, i64c(E, 1), ""), second, y, "y");
    y = LLVMBuildSelect(E->b, LLVMBuildICmp(E->b, LLVMIntEQ, i.i, i64c(E, 0), ""), first, y, "y");
    LLVMValueRef off = LLVMBuildNSWMul(E->b, i.i, i64c(E, ts_itemsize(k)), "off");
    cc_store(E->b, k, em_convert(E, y, c, k),
             LLVMBuildInBoundsGEP2(E->b, LLVMInt8TypeInContext(E->ctx), v->data, &off, 1, ""));
    loop_end(E, &i);
    return 0;
}

LLVMValueRef
ec_arange_call(Emit *E, CcNode *n, const CcBuiltin *b, TsKind out)
{
    (void)b;
    (void)out;
    View v;
    return arange_view(E, n, &v) == 0 ? view_pack(E, &v) : NULL;
}

LLVMValueRef
ec_dot_call(Emit *E, CcNode *n, const CcBuiltin *b, TsKind out)
{
    (void)b;
    (void)out;
    if (cc_is_array(n->ty)) {
        View v;
        return dot_view(E, n, &v) == 0 ? view_pack(E, &v) : NULL;
    }
    View x, y;
    if (dot_operands(E, n, &x, &y) < 0) {
        return NULL;
    }
    return dot_element(E, &x, &y, i64c(E, 0), i64c(E, 0), cc_storage(n->ty));
}
