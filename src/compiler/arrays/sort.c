/*
 * sort.c - sorting and searching: np.sort, argsort, partition,
 * searchsorted (typing, and calls of runtime.c's functions on views).
 */
#include "compiler/arrays/arrays.h"

#include <stdio.h>
#include <string.h>

/* ======== typing ======== */

/* kth := int | 1-d array of integers      (every position placed) */
static int
kth_array(Infer *in, CcNode *k)
{
    const CcType *t;
    if (ti_expr(in, k, &t) < 0) {
        return -1;
    }
    if (t == UNKNOWN) {
        return 0; /* a later pass, once it is known */
    }
    if (cc_is_array(t)) {
        if (t->n != 1 || (t->scalar != TS_INFER && !ts_is_int(t->scalar))) {
            char name[96];
            return cc_error(in->fn, k->loc,
                            "kth must be an integer or a 1-d array of integers, "
                            "not %s",
                            cc_type_name(t, name, sizeof(name)));
        }
        return 0;
    }
    return ti_integer_index(in, k, "kth");
}

/*
 * sort := np.sort(a, axis=-1) | np.argsort(a) | np.partition(a, kth)   arrays
 *       | a.sort() | a.partition(kth)                  in place, statements
 *       | np.median(a) | np.quantile(a, q) | np.percentile(a, q) ...  a scalar
 *       | np.unique(a)                                 1-d
 *       | np.searchsorted(a, v, side=)                 v's shape, int64
 *   runtime.c does the work, on the host: not in a cuda kernel, but for
 *   np.searchsorted of one real or integer value, searched in line.  axis:
 *   the last one, or None (flattened) where NumPy allows it.
 */
int
ti_sort_call(Infer *in, CcNode *n, const CcBuiltin *b, const CcType **out)
{
    CcSortOp op = (CcSortOp)b->op;
    const CcType *a, *x = UNKNOWN;
    *out = UNKNOWN;
    if (in->fn->device && op != S_SEARCHSORTED) {
        return cc_error(in->fn, n->loc,
                        "%s() is not available in a cuda kernel (it runs on the "
                        "host)",
                        b->name);
    }
    if (ti_expr(in, n->args[0], &a) < 0 || (n->nargs > 1 && ti_expr(in, n->args[1], &x) < 0)) {
        return -1;
    }
    /* one value searched for is a search in line (sort.c:
     * search_in_line), which a cuda kernel can run; complex values and
     * arrays of values go to the runtime */
    if (in->fn->device && a != UNKNOWN && x != UNKNOWN
        && (cc_is_array(x) || ti_is_tuple(x) || !cc_is_array(a) || ts_is_complex(a->scalar))) {
        return cc_error(in->fn, n->loc,
                        "%s() in a cuda kernel searches for one real or integer value (an "
                        "array of values, or complex ones, are searched on the host)",
                        b->name);
    }
    int in_place = op == S_SORT_IN_PLACE || op == S_PARTITION_IN_PLACE;
    if (in_place && ti_check_writable(in, n, n->args[0]) < 0) {
        return -1;
    }
    if (in_place && !(n->index & 2)) {
        return cc_error(in->fn, n->loc,
                        "a%s() works in place and returns None: use np%s(a) for "
                        "a sorted copy",
                        b->name, b->name);
    }
    if (a == UNKNOWN) {
        return 0;
    }
    if (!cc_is_array(a)) {
        char name[96];
        return cc_error(in->fn, n->args[0]->loc, "%s() of %s: this function takes arrays", b->name,
                        cc_type_name(a, name, sizeof(name)));
    }
    if (a->scalar == TS_INFER) {
        return 0;
    }
    TsKind k = a->scalar;
    int ndim = a->n;
    int uses_axis = op == S_SORT || op == S_ARGSORT || op == S_PARTITION || in_place;
    if (ndim == 0) {
        return cc_error(in->fn, n->loc, "%s() of a 0-d array", b->name);
    }
    if (uses_axis && n->ival == CC_AXIS_NONE && in_place) {
        return cc_error(in->fn, n->loc, "a%s() sorts along an axis, not axis=None", b->name);
    }
    if (uses_axis && n->ival != CC_AXIS_NONE) {
        if (n->ival < -ndim || n->ival >= ndim) {
            return cc_error(in->fn, n->loc,
                            "axis %lld is out of bounds for an array of dimension %d", n->ival,
                            ndim);
        }
        n->ival += n->ival < 0 ? ndim : 0; /* the emission reads it as 0 .. ndim-1 */
    }
    if (op == S_PARTITION || op == S_PARTITION_IN_PLACE) {
        if (n->nargs < 2) {
            return cc_error(in->fn, n->loc, "%s() needs kth", b->name);
        }
        if (kth_array(in, n->args[1]) < 0) {
            return -1;
        }
    }
    int quantile =
        op == S_QUANTILE || op == S_NANQUANTILE || op == S_PERCENTILE || op == S_NANPERCENTILE;
    if (quantile || op == S_MEDIAN || op == S_NANMEDIAN) {
        if (quantile && n->nargs < 2) {
            return cc_error(in->fn, n->loc, "%s() needs q", b->name);
        }
        if (ts_is_complex(k) || k == TS_BOOL) {
            return ti_type_error(in, n, b->name, a, NULL);
        }
        if (x != UNKNOWN && (ti_is_tuple(x) || cc_is_array(x) || ti_is_complex_type(x))) {
            char name[96];
            return cc_error(in->fn, n->args[1]->loc,
                            "%s() takes one quantile, a real number, "
                            "not %s",
                            b->name, cc_type_name(x, name, sizeof(name)));
        }
        if (x != UNKNOWN && ti_fit_const(in, n->args[1], cc_scalar_type(TS_FLOAT64)) < 0) {
            return -1;
        }
        if (!in->gufunc) {
            return cc_error(in->fn, n->loc,
                            "%s() needs a scratch copy of its array, which only "
                            "a guvectorize kernel can allocate",
                            b->name);
        }
        in->fn->allocates = 1;
        *out = cc_scalar_type(k == TS_FLOAT32 ? TS_FLOAT32 : TS_FLOAT64);
        return 0;
    }
    if (op == S_SEARCHSORTED) {
        if (ndim != 1) {
            return cc_error(in->fn, n->args[0]->loc, "%s() takes a 1-d array to search", b->name);
        }
        if (x == UNKNOWN) {
            return 0;
        }
        if (ti_is_tuple(x)) {
            return ti_type_error(in, n->args[1], "np.searchsorted() of", x, NULL);
        }
        const CcType *xe = cc_is_array(x) ? cc_scalar_type(x->scalar) : x;
        const CcType *p = cc_promote(cc_scalar_type(k), xe);
        if (p == NULL || cc_storage(p) != k) {
            char an[96], xn[96];
            return cc_error(in->fn, n->args[1]->loc,
                            "np.searchsorted() of %s in an array of %s: "
                            "cast the values to the array's kind (or the array to theirs)",
                            cc_type_name(xe, xn, sizeof(xn)), cc_type_name(a, an, sizeof(an)));
        }
        if (ti_fit_const(in, n->args[1], cc_scalar_type(k)) < 0) {
            return -1;
        }
        if (!cc_is_array(x)) {
            *out = cc_scalar_type(TS_INT64);
            return 0;
        }
        if (!in->gufunc) {
            return cc_error(in->fn, n->loc,
                            "np.searchsorted() of an array allocates an array, "
                            "which only a guvectorize kernel can do");
        }
        in->fn->allocates = 1;
        *out = cc_array_type(TS_INT64, x->n);
        return 0;
    }
    if (in_place) {
        *out = cc_scalar_type(TS_BOOL); /* None, never read */
        return 0;
    }
    if (!in->gufunc) {
        return cc_error(in->fn, n->loc,
                        "%s() allocates an array, which only a guvectorize "
                        "kernel can do",
                        b->name);
    }
    in->fn->allocates = 1;
    int flat = op == S_UNIQUE || n->ival == CC_AXIS_NONE;
    *out = cc_array_type(op == S_ARGSORT ? TS_INT64 : k, flat ? 1 : ndim);
    return 0;
}

/* ======== emission ======== */

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
    LLVMValueRef f = em_libc_function(E, name, ret, params, n);
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
    LLVMTypeRef i64 = em_i64_type(E), arr = LLVMArrayType2(i64, (unsigned long long)v->ndim);
    *shape = em_entry_alloca(E, arr, "rt.shape");
    *strides = em_entry_alloca(E, arr, "rt.strides");
    for (int d = 0; d < v->ndim; d++) {
        LLVMValueRef at = em_i64c(E, d);
        LLVMBuildStore(E->b, v->shape[d], LLVMBuildInBoundsGEP2(E->b, i64, *shape, &at, 1, ""));
        LLVMBuildStore(E->b, v->stride[d], LLVMBuildInBoundsGEP2(E->b, i64, *strides, &at, 1, ""));
    }
}

LLVMValueRef
em_view_size(Emit *E, const View *v)
{
    LLVMValueRef total = em_i64c(E, 1);
    for (int d = 0; d < v->ndim; d++) {
        total = LLVMBuildMul(E->b, total, v->shape[d], "total");
    }
    return total;
}

/* n's value copied into a new C-contiguous array of kind k and n's shape
 * (one walk: an expression is computed into it). */
int
em_copy_as(Emit *E, CcNode *n, TsKind k, View *v)
{
    Walk w = {.visit = em_store_visit};
    if (em_collect_expr(E, &w, n) < 0) {
        return -1;
    }
    w.ndim = n->ty->n;
    w.target.data = NULL;
    em_broadcast(E, &w);
    if (em_alloc_array(E, n, k, w.ndim, w.shape, v) < 0) {
        return -1;
    }
    w.target = *v;
    return em_run_collected(E, &w);
}

/* A C-contiguous v as one dimension. */
static void
flatten(Emit *E, View *v)
{
    v->shape[0] = em_view_size(E, v);
    v->stride[0] = em_i64c(E, ts_itemsize(v->kind));
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

static LLVMValueRef kth_checked(Emit *E, LLVMValueRef i, const View *v);

/* An array of kths: each checked, then the rows sorted whole (-1), which
 * places every one of them (NumPy's partition leaves the order between
 * them unspecified). */
static LLVMValueRef
kths_of(Emit *E, CcNode *k, const View *v)
{
    View kv;
    Loop l;
    if (em_view_of(E, k, &kv) < 0) {
        return NULL;
    }
    em_loop_begin(E, &l, kv.shape[0], "kth.each");
    LLVMValueRef at = em_address(E, kv.data, kv.stride, &l.i, 0, 1);
    LLVMValueRef i = em_convert(E, cc_load(E->b, kv.kind, at, "kth.raw"), kv.kind, TS_INT64);
    kth_checked(E, i, v);
    em_loop_end(E, &l);
    return em_i64c(E, -1);
}

/* np.partition's kth along v's last axis, negative from the end; out of
 * range ends the kernel with CC_STATUS_KTH. */
static LLVMValueRef
kth_of(Emit *E, CcNode *k, const View *v)
{
    if (cc_is_array(k->ty)) {
        return kths_of(E, k, v);
    }
    LLVMValueRef i = em_expr_as(E, k, TS_INT64);
    return i == NULL ? NULL : kth_checked(E, i, v);
}

static LLVMValueRef
kth_checked(Emit *E, LLVMValueRef i, const View *v)
{
    LLVMValueRef len = v->shape[v->ndim - 1];
    LLVMValueRef neg = LLVMBuildICmp(E->b, LLVMIntSLT, i, em_i64c(E, 0), "neg");
    i = LLVMBuildSelect(E->b, neg, LLVMBuildAdd(E->b, i, len, ""), i, "kth");
    /* NumPy checks kth against a line that has elements only */
    em_check(E,
             LLVMBuildAnd(E->b, LLVMBuildICmp(E->b, LLVMIntUGE, i, len, "kth.oob"),
                          LLVMBuildICmp(E->b, LLVMIntSGT, len, em_i64c(E, 0), "some"), "kth.bad"),
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
int
em_sort_view(Emit *E, CcNode *n, View *v)
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
        if (em_view_of(E, a, &src) < 0) {
            return -1;
        }
        line = axis_moved(&src, axis, 0);
        CcNode node = {.kind = ND_VIEW, .loc = n->loc, .ty = a->ty, .view = &line};
        View c;
        if (op == S_ARGSORT) {
            if (em_alloc_array(E, n, TS_INT64, line.ndim, line.shape, &c) < 0) {
                return -1;
            }
            LLVMValueRef shape, strides;
            view_arrays(E, &line, &shape, &strides);
            LLVMValueRef args[6] = {
                i32c(E, line.kind), i32c(E, line.ndim), line.data, shape, strides, c.data};
            runtime_status(E, em_runtime_call(E, "numbavec_rt_argsort",
                                              LLVMInt32TypeInContext(E->ctx), args, 6));
        } else {
            if (em_copy_as(E, &node, a->ty->scalar, &c) < 0) {
                return -1;
            }
            LLVMValueRef kth = op == S_PARTITION ? kth_of(E, n->args[1], &c) : em_i64c(E, -1);
            if (kth == NULL) {
                return -1;
            }
            sort_rows(E, &c, kth);
        }
        *v = axis_moved(&c, axis, 1);
        return 0;
    }
    if (op == S_SORT || op == S_PARTITION || op == S_UNIQUE) {
        if (em_copy_as(E, a, a->ty->scalar, v) < 0) {
            return -1;
        }
        if (op == S_UNIQUE) {
            LLVMValueRef args[3] = {i32c(E, v->kind), em_view_size(E, v), v->data};
            flatten(E, v);
            v->shape[0] = em_runtime_call(E, "numbavec_rt_unique", em_i64_type(E), args, 3);
            return 0;
        }
        if (n->ival == CC_AXIS_NONE) {
            flatten(E, v);
        }
        LLVMValueRef kth = op == S_PARTITION ? kth_of(E, n->args[1], v) : em_i64c(E, -1);
        if (kth == NULL) {
            return -1;
        }
        sort_rows(E, v, kth);
        return 0;
    }
    if (op == S_ARGSORT) {
        View src;
        if ((n->ival == CC_AXIS_NONE && a->ty->n > 1) || em_is_elementwise_node(a)) {
            if (em_copy_as(E, a, a->ty->scalar, &src) < 0) {
                return -1;
            }
        } else if (em_view_of(E, a, &src) < 0) {
            return -1;
        }
        if (n->ival == CC_AXIS_NONE && src.ndim > 1) {
            flatten(E, &src);
        }
        if (em_alloc_array(E, n, TS_INT64, src.ndim, src.shape, v) < 0) {
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
    if (em_view_of(E, a, &sorted) < 0 || em_copy_as(E, n->args[1], sorted.kind, &x) < 0
        || em_alloc_array(E, n, TS_INT64, x.ndim, x.shape, v) < 0) {
        return -1;
    }
    LLVMValueRef args[9] = {i32c(E, sorted.kind),
                            sorted.data,
                            sorted.shape[0],
                            sorted.stride[0],
                            x.data,
                            em_view_size(E, &x),
                            em_i64c(E, ts_itemsize(x.kind)),
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

/* Whether a[i] comes before x's place: a[i] < x, right: not x < a[i]. */
static LLVMValueRef
goes_up(Emit *E, const View *a, LLVMValueRef i, LLVMValueRef x, int right)
{
    LLVMValueRef off = LLVMBuildNSWMul(E->b, i, a->stride[0], "");
    LLVMValueRef y = cc_load(
        E->b, a->kind,
        LLVMBuildInBoundsGEP2(E->b, LLVMInt8TypeInContext(E->ctx), a->data, &off, 1, ""), "y");
    return right ? LLVMBuildNot(E->b, sorts_before(E, a->kind, x, y), "up")
                 : sorts_before(E, a->kind, y, x);
}

/* After the halving: n is 1 (a[base] decides) or 0 (an empty a: index 0). */
static LLVMValueRef
last_step(Emit *E, const View *a, LLVMValueRef x, int right, LLVMValueRef base, LLVMValueRef n)
{
    LLVMBasicBlockRef last = LLVMGetInsertBlock(E->b);
    LLVMBasicBlockRef check = em_new_block(E, "search.check"),
                      done = em_new_block(E, "search.done");
    LLVMBuildCondBr(E->b, LLVMBuildICmp(E->b, LLVMIntEQ, n, em_i64c(E, 1), "one"), check, done);
    LLVMPositionBuilderAtEnd(E->b, check);
    LLVMValueRef up = LLVMBuildZExt(E->b, goes_up(E, a, base, x, right), em_i64_type(E), "");
    LLVMValueRef at = LLVMBuildNSWAdd(E->b, base, up, "at");
    LLVMBuildBr(E->b, done);
    LLVMPositionBuilderAtEnd(E->b, done);
    return em_join(E, base, last, at, check, "found");
}

/*
 * np.searchsorted(a, x) of one value x, a 1-d: a binary search in line, as
 * the runtime's (the first index i with not a[i] < x, right: with x <
 * a[i]), with selects in place of branches, which a search through values
 * in no order would mispredict half the time.  It halves a length, not a
 * [lo, hi) range: while n > 1, base moves up by half = n / 2 if
 * a[base + half] is below x, and n -= half; then base + (a[base] below x).
 * The number of steps depends on len(a) alone, so the loop's branch is
 * always predicted and the searches of successive elements overlap (a
 * range that ends when lo meets hi mispredicted its exit once a search:
 * 1.26x Numba's speed over 64 edges, where this is 3.8x).
 */
static LLVMValueRef
search_in_line(Emit *E, const View *a, LLVMValueRef x, int right)
{
    LLVMTypeRef i64 = em_i64_type(E);
    LLVMBasicBlockRef pre = LLVMGetInsertBlock(E->b);
    LLVMBasicBlockRef head = em_new_block(E, "search.head"), body = em_new_block(E, "search.body");
    LLVMBasicBlockRef last = em_new_block(E, "search.last");
    LLVMBuildBr(E->b, head);
    LLVMPositionBuilderAtEnd(E->b, head);
    LLVMValueRef base = LLVMBuildPhi(E->b, i64, "base"), n = LLVMBuildPhi(E->b, i64, "n");
    LLVMBuildCondBr(E->b, LLVMBuildICmp(E->b, LLVMIntSGT, n, em_i64c(E, 1), "more"), body, last);
    LLVMPositionBuilderAtEnd(E->b, body);
    LLVMValueRef half = LLVMBuildLShr(E->b, n, em_i64c(E, 1), "half");
    LLVMValueRef probe = LLVMBuildNSWAdd(E->b, base, half, "probe");
    LLVMValueRef next_base = unpredictable(
        E, LLVMBuildSelect(E->b, goes_up(E, a, probe, x, right), probe, base, "base.next"));
    LLVMValueRef next_n = LLVMBuildNSWSub(E->b, n, half, "n.next");
    LLVMBuildBr(E->b, head);
    LLVMValueRef bases[2] = {em_i64c(E, 0), next_base}, ns[2] = {a->shape[0], next_n};
    LLVMBasicBlockRef from[2] = {pre, body};
    LLVMAddIncoming(base, bases, from, 2);
    LLVMAddIncoming(n, ns, from, 2);
    LLVMPositionBuilderAtEnd(E->b, last);
    return last_step(E, a, x, right, base, n);
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
        if (em_view_of(E, a, &v) < 0) {
            return NULL;
        }
        v = axis_moved(&v, (int)n->ival, 0); /* the runtime sorts the last axis */
        LLVMValueRef kth = op == S_PARTITION_IN_PLACE ? kth_of(E, n->args[1], &v) : em_i64c(E, -1);
        if (kth == NULL) {
            return NULL;
        }
        sort_rows(E, &v, kth);
        return LLVMConstInt(LLVMInt1TypeInContext(E->ctx), 0, 0);
    }
    if (op == S_SEARCHSORTED) {
        LLVMValueRef x = em_view_of(E, a, &v) == 0 ? em_expr_as(E, n->args[1], v.kind) : NULL;
        if (x == NULL) {
            return NULL;
        }
        if (!ts_is_complex(v.kind)) {
            return search_in_line(E, &v, x, (int)n->ival);
        }
        LLVMValueRef slot = em_entry_alloca(E, cc_memory_type(E->ctx, v.kind), "rt.x");
        LLVMValueRef out = em_entry_alloca(E, em_i64_type(E), "rt.at");
        cc_store(E->b, v.kind, x, slot);
        LLVMValueRef args[9] = {i32c(E, v.kind), v.data,        v.shape[0], v.stride[0],     slot,
                                em_i64c(E, 1),   em_i64c(E, 0), out,        i32c(E, n->ival)};
        em_runtime_call(E, "numbavec_rt_searchsorted", LLVMVoidTypeInContext(E->ctx), args, 9);
        return LLVMBuildLoad2(E->b, em_i64_type(E), out, "at");
    }
    /* median, quantiles: on a scratch copy the runtime reorders */
    LLVMValueRef q = LLVMConstReal(LLVMDoubleTypeInContext(E->ctx), 0.5);
    if (n->nargs > 1 && (q = em_expr_as(E, n->args[1], TS_FLOAT64)) == NULL) {
        return NULL;
    }
    if (op == S_PERCENTILE || op == S_NANPERCENTILE) {
        q = LLVMBuildFDiv(E->b, q, LLVMConstReal(LLVMDoubleTypeInContext(E->ctx), 100.0), "q");
    }
    if (em_copy_as(E, a, a->ty->scalar, &v) < 0) {
        return NULL;
    }
    int mode =
        (op == S_MEDIAN || op == S_NANMEDIAN ? CC_Q_MEDIAN : 0)
        | (op == S_NANMEDIAN || op == S_NANQUANTILE || op == S_NANPERCENTILE ? CC_Q_SKIPNAN : 0);
    TsKind rk = cc_storage(n->ty);
    LLVMValueRef out = em_entry_alloca(E, cc_memory_type(E->ctx, rk), "rt.q");
    LLVMValueRef args[6] = {i32c(E, v.kind), em_view_size(E, &v), v.data, q, i32c(E, mode), out};
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
        return em_sort_view(E, n, &v) == 0 ? em_view_pack(E, &v) : NULL;
    }
    return sort_scalar(E, n);
}
