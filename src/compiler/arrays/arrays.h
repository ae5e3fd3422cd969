/*
 * arrays.h - arrays in kernels, typed and emitted: what the files of
 * arrays/ share, and what the type inference and the emitter call.
 *
 * One file per family, each holding its typing rules (ti_, called by
 * typeinfer.c) and its emission (em_, called by emit.c and each other):
 *
 *   views.c        views, indexing, attributes, allocation (np.zeros,
 *                  np.arange ...), np.ndindex's shapes; the kernel's
 *                  status returns and its allocation list
 *   elementwise.c  elementwise loops over broadcast shapes, assignment
 *                  into views (overlap, temporaries), counted loops
 *   reduce.c       reductions (whole and along an axis), cumulative
 *                  sums, boolean masks and integer-array indexing
 *   sort.c         np.sort, argsort, partition, searchsorted: runtime.c's
 *                  functions
 *   linalg.c       np.dot and @; np.linalg.norm (typed as reductions)
 *   build.c        np.array of scalars, list displays stored into views
 *   stats.c        np.cov, np.corrcoef (typed as what they compute),
 *                  np.histogram with edges
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
#ifndef NV_COMPILER_ARRAYS_H
#define NV_COMPILER_ARRAYS_H

#include "compiler/calls.h"
#include "compiler/typeinfer.h"

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

/* A counted loop (em_loop_begin, em_loop_end). */
typedef struct Loop {
    LLVMBasicBlockRef pre, head, done;
    LLVMValueRef i, count;
} Loop;

/* ======== typing: what typeinfer.c calls (0/-1) ======== */

/* ---- views.c ---- */

/* The array type of an ND_INDEX/ND_ARRAYATTR operand; else an error
 * (tuples: *tuple set). */
int ti_array_operand(Infer *in, CcNode *at, CcNode *lhs, const CcType **out);
/* The type of lhs in lhs.dtype (and lhs.ndim): an array or a scalar (a
 * NumPy scalar has a dtype and ndim 0); a tuple is ti_array_operand's error. */
int ti_dtype_owner(Infer *in, CcNode *at, CcNode *lhs, const CcType **out);
/* Whether n is a view of a global NumPy array (a read-only constant). */
int ti_readonly(const CcNode *n);
/* A TypingError at `at` when `target` (an array written to) is read-only:
 * -1, else 0. */
int ti_check_writable(Infer *in, const CcNode *at, const CcNode *target);
/* An integer index (or a slice bound): 0/-1. */
int ti_integer_index(Infer *in, CcNode *i, const char *what);
/*
 * index := a[item, ...]     a: an array of d dimensions
 *   item: an integer (takes a dimension away), a slice (keeps it), None
 *   (adds one of length 1), ... (every dimension not indexed otherwise), or
 *   one tuple of integers (a[idx]).  Dimensions left unindexed are kept
 *   whole.  All integers and no slice, None or ...: an element; else a view.
 */
int ti_array_index(Infer *in, CcNode *n, const CcType **out);
/*
 * array_attr := a.shape | a.strides | a.size | a.ndim | a.itemsize | a.T | len(a)
 *   shape, strides: a tuple of d Python ints; size, ndim, itemsize, len: a
 *   Python int (weak, so `n * x` keeps x's kind); .T: the reversed view;
 *   len of a tuple is its length
 */
int ti_array_attr(Infer *in, CcNode *n, const CcType **out);
int ti_array_function(Infer *in, CcNode *n, const CcBuiltin *b, const CcType **out);
/*
 * np.ndindex's loop (lower.c): .ndsize(shape), the number of indices, a
 *   Python int; .unravel(k, shape), the k-th index in C order, a tuple of
 *   Python ints as long as the shape.  shape: a tuple of integers or one.
 */
int ti_shape_call(Infer *in, CcNode *n, const CcBuiltin *b, const CcType **out);
/*
 * arange := np.arange([start,] stop[, step], dtype=)    a new 1-d array
 *   of the arguments' promotion (ints: int64, floats: float64) or dtype.
 */
int ti_arange_call(Infer *in, CcNode *n, const CcBuiltin *b, const CcType **out);
/*
 * array_of := np.array([x, y, ...]) | np.array((x, y)) | np.array(t)
 *   a new 1-d array of the scalars (t: a tuple's items), of their
 *   promotion with Python numbers as NumPy makes arrays of them (int64,
 *   float64, complex128: not weak).  A list display stored into a view
 *   (out[i] = [lo, hi]) is one too.
 */
int ti_array_of(Infer *in, CcNode *n, const CcType **out);

/* ---- elementwise.c ---- */

/*
 * setitem := a[index] = v
 *   an element: v is cast to a's element kind (as NumPy's casting='unsafe'
 *   assignment does), except complex into a real array, which is an error;
 *   a view: v (a scalar or an array) is broadcast to the view's shape and
 *   cast the same way; in place (a[...] op= v, t op= v), NumPy's ufunc with
 *   out=: its result must cast into a's kind by same_kind (casting.c)
 */
int ti_setitem(Infer *in, CcNode *n);
/*
 * An elementwise operation (operators, np.sqrt ...) typed by elements: an
 * array operand is lifted (lift_operand), and the result is an array of
 * the element result's kind with the largest operand's ndim.  and/or,
 * `not` and `x if c else y` take truth values, which arrays do not have.
 */
int ti_elementwise(Infer *in, CcNode *n, int rc, int lift, const CcType **t);
/*
 * `a if c else b` where a branch is an array: the view chosen, as Python
 * binds the object (nothing is computed elementwise, nothing copied).  The
 * branches must be arrays of one type, which the variable it is assigned to
 * can hold.  0 with *t set, 1 when neither branch is an array (the scalar
 * rule applies), -1 with an error.
 */
int ti_array_choice(Infer *in, CcNode *n, const CcType *types[2], const CcType **t);

/* ---- reduce.c ---- */

/* The kind NumPy's sum and prod accumulate an array of kind k in. */
TsKind ti_sum_kind(TsKind k);
/*
 * np.sum(a, axis=k) ...: k an integer constant (negative from the end);
 *   a 1-d a gives the scalar, an N-d one the array of the other dimensions
 *   (allocated).  n->index takes the normalised axis (1 + k, as a method's
 *   flag 1 is no longer needed once typed).  argmin/argmax and nanmean take
 *   no axis yet.
 */
int ti_reduce_axis(Infer *in, CcNode *n, const CcBuiltin *b, int ndim, TsKind elem,
                   const CcType **out);

/* ---- sort.c ---- */

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
int ti_sort_call(Infer *in, CcNode *n, const CcBuiltin *b, const CcType **out);
/* reshape.c: a.reshape(), a.ravel() */
int ti_reshape_call(Infer *in, CcNode *n, const CcBuiltin *b, const CcType **out);

/* ---- linalg.c ---- */

/*
 * dot := np.dot(a, b) | a @ b     a, b: 1-d or 2-d arrays
 *   1-d with 1-d: a scalar (their inner product); with a 2-d array: a 1-d
 *   array (the vector as a row, or as a column, as NumPy has it); 2-d with
 *   2-d: the matrix product.  The kind is the operands' promotion.
 */
int ti_dot_call(Infer *in, CcNode *n, const CcBuiltin *b, const CcType **out);

/*
 * norm := np.linalg.norm(x, ord=None, axis=None)    x: 1-d or 2-d
 *   rewritten in place, once x is typed, into the reductions NumPy
 *   computes, of y = abs(x * 1.0) (ints as float64): a vector (or each
 *   line along axis) sqrt(sum(y**2)) for ord None/2, max/min(y) for
 *   +-inf, sum(y) for 1, sum(y**p)**(1/p) otherwise; a matrix: Frobenius
 *   for None/'fro', max/min of column (1, -1) or row (inf, -inf) sums.
 *   The node is left as it is while x is not typed.
 */
int ti_norm_call(Infer *in, CcNode *n);

/* ---- stats.c ---- */

/*
 * cov := np.cov(m, rowvar=True, bias=False, ddof=None)
 *      | np.corrcoef(m, rowvar=True)          m: 1-d or 2-d, real
 *   rewritten in place, once m is typed, into what NumPy computes: the
 *   deviations from the means in float64, np.dot of them with their
 *   transpose over max(N - ddof, 0); corrcoef divides by the standard
 *   deviations and clips to [-1, 1].  A 1-d m gives a scalar (NumPy: a
 *   0-d array), a 2-d m a 2-d array.  n->ival: bit 0 rowvar, bit 1 bias;
 *   n->index 1: ddof given, in n->ihigh.
 */
int ti_cov_call(Infer *in, CcNode *n);
/*
 * histogram := np.histogram(a, bins=edges) | np.histogram(a, n, range=(lo, hi))
 *   a: real, any ndim.  (counts, edges): counts int64, one per bin
 *   [edges[i], edges[i+1]) (the last one closed), values outside and NaN
 *   counted nowhere; edges as given, or n + 1 of a's float kind from lo
 *   to hi.  Edges that decrease, lo > hi, a range not finite and n < 1
 *   are ValueErrors.  No range= with n bins, density= and weights= are
 *   not supported yet.
 */
int ti_histogram_call(Infer *in, CcNode *n, const CcType **out);

/* ======== emission: what the files call across ======== */

/* ---- views.c ---- */

/* v's lo and hi, made its own span where they are not known. */
void em_within(Emit *E, View *v);
LLVMValueRef em_view_pack(Emit *E, const View *view);
LLVMValueRef em_libc_function(Emit *E, const char *name, LLVMTypeRef ret, LLVMTypeRef *params,
                              unsigned n);
/* A new C-contiguous array of kind k and shape[ndim]: a negative dimension
 * or a size past int64 bytes ends the kernel with CC_STATUS_VALUE (as
 * NumPy), a size past 2**60 bytes or an allocation that fails with
 * CC_STATUS_NOMEM. */
int em_alloc_array(Emit *E, CcNode *at, TsKind k, int ndim, LLVMValueRef *shape, View *v);
/* The view a[items] (n an ND_INDEX): *element when it is one element
 * (v->data then addresses it). */
int em_index_view(Emit *E, CcNode *n, View *v, int *element);
/* The elementwise operations: their values are computed by element. */
int em_is_elementwise_node(const CcNode *n);
/* a[mask], mask a boolean array. */
int em_is_mask_index(const CcNode *n);
/* a[idx], idx an array of integers */
int em_is_fancy_index(const CcNode *n);
/* The view an array-typed node evaluates to. */
int em_view_of(Emit *E, CcNode *n, View *v);

/* ---- elementwise.c ---- */

/* The iteration shape: the target's, or the broadcast of the leaves'; a
 * leaf that does not broadcast to it ends the kernel (CC_STATUS_SHAPE). */
void em_broadcast(Emit *E, Walk *w);
LLVMValueRef em_address(Emit *E, LLVMValueRef data, LLVMValueRef *stride, LLVMValueRef *idx,
                        int lead, int ndim);
/* Collects expr (the whole elementwise tree) into w: its leaves are viewed
 * and computed here, in Python's order, before anything is written. */
int em_collect_expr(Emit *E, Walk *w, CcNode *expr);
/* Emits a collected walk: the shape checks, then the loop without and the
 * loop with broadcast strides, chosen at run time. */
int em_run_collected(Emit *E, Walk *w);
int em_run_walk(Emit *E, Walk *w, CcNode *expr);
int em_store_visit(Emit *E, Walk *w, LLVMValueRef value);
/* The bytes a view spans: [lo, hi) as integers; empty views span nothing. */
void em_span(Emit *E, const View *v, LLVMValueRef *lo, LLVMValueRef *hi, LLVMValueRef *empty);
/* Whether leaf l is the target t itself (a[:] = a * 2), whose elements are
 * each read before they are written. */
LLVMValueRef em_same_view(Emit *E, const View *l, const View *t);
/* target[...] = value, a scalar computed already, broadcast. */
int em_fill_view(Emit *E, const View *target, CcNode *expr, LLVMValueRef value);
/* A collected expression (w: its leaves) into a new array of its shape. */
int em_materialize_collected(Emit *E, Walk *w, CcNode *at, View *v);
/* An elementwise expression's value: a new array of its broadcast shape. */
int em_materialize(Emit *E, CcNode *n, View *v);
/* for (l->i = 0; l->i < count; l->i++): the body follows; em_loop_end closes it. */
void em_loop_begin(Emit *E, Loop *l, LLVMValueRef count, const char *name);
void em_loop_end(Emit *E, Loop *l);

/* ---- reduce.c ---- */

/* np.sum(a) ...: one walk; var/std: the mean first, then the squares of
 * the deviations from it (two walks over the same expression). */
LLVMValueRef em_reduce(Emit *E, CcNode *n, const CcBuiltin *b);
/* np.cumsum(a), np.cumprod(a): a new 1-d array of a's size, the running
 * sums (products) in C order. */
int em_cumulate(Emit *E, CcNode *n, View *v);
int em_mask_read(Emit *E, CcNode *n, View *v);
/* a[idx]: a new array of idx's shape. */
int em_fancy_read(Emit *E, CcNode *n, View *v);
/*
 * a[index] = v: the value first, then the target, as Python evaluates them,
 * where the order can show (which error is raised).  A value that can only
 * fail as the target can (an out-of-bounds index) comes after the target's
 * address: a check of out[i] before out[i - 1] is read lets LLVM prove the
 * second and forward stored values across iterations (a moving average).
 */
int em_indexed_write(Emit *E, CcNode *n);
/*
 * np.sum(a, axis=k) ... of an N-d a: the result (the other dimensions) is
 * allocated and filled with the operation's start (0, 1, -inf/+inf or the
 * kind's extreme, NaN for nanmin/nanmax), then one walk over a's whole
 * shape combines each element into the result seen with a zero stride
 * along k.  An empty axis is ValueError for min/max (no identity).
 */
int em_axis_reduce(Emit *E, CcNode *n, View *v);
/*
 * np.argmax(a, axis=k), nanmean, var, std, cumsum, cumprod along an axis:
 * a loop over the other dimensions reduces each line along k as a whole
 * 1-d array (reduce_with on an ND_VIEW).  The result is allocated with the
 * axis left out, or (cumsum/cumprod) moved last so that each line is
 * contiguous, and then seen with it back in place.
 */
int em_axis_lines(Emit *E, CcNode *n, View *v);

/* ---- sort.c ---- */

LLVMValueRef em_view_size(Emit *E, const View *v);
/* n's value copied into a new C-contiguous array of kind k and n's shape
 * (one walk: an expression is computed into it). */
int em_copy_as(Emit *E, CcNode *n, TsKind k, View *v);
/* The arrays of np.sort, argsort, partition, unique and searchsorted. */
int em_sort_view(Emit *E, CcNode *n, View *v);
int em_reshape_view(Emit *E, CcNode *n, View *v);

/* ---- build.c ---- */

/* The new array of np.array([x, y, ...]) or np.array(t). */
int em_array_of(Emit *E, CcNode *n, View *v);

/* ---- linalg.c ---- */

/* The array of np.dot(a, b): (m, p) computed, the 1-d operand's
 * dimension of 1 left out. */
int em_dot_view(Emit *E, CcNode *n, View *v);

#endif /* NV_COMPILER_ARRAYS_H */
