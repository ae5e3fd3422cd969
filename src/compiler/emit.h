/*
 * emit.h - what the emitter's files share: the context of the function being
 * emitted (Emit), small constructors of values and blocks, and the helpers
 * the files call across (em_ prefix).
 *
 * The emitter turns typed IR into LLVM IR (compiler.h lists its entry points,
 * all in emit.c).  It is these files, one concern each:
 *
 *   emit.c      the pass: expressions, statements, the function, gufunc kernels
 *   convert.c   the LLVM types of value types, conversions between kinds,
 *               Python truth values
 *   arith.c     integer, float and complex arithmetic; quiet float compares
 *   fpow.c      a float to a small integer constant power, multiplied out
 *   ndindex.c   np.ndindex's index tuple, carried between iterations
 *   emitcall.c  calls of builtins (abs, min, math.exp, ...), and of LLVM
 *               intrinsics and libm
 *   arrays/     arrays, one file per family (views and allocation,
 *               elementwise and assignment, reductions and masks, sort,
 *               dot), each with its typing beside its emission (arrays.h)
 *   extent.c    index and length arithmetic: indices, slices, the bytes of
 *               shapes, np.arange's length (every int64 overflow)
 *   emitprint.c print(): a line written whole, on the host and on a GPU
 *   branchhint.c branch weights that keep a running extremum's `if` a branch
 *
 * The one-line constructors are static inline here, as PostgreSQL's
 * llvmjit_emit.h has them: a call per constant would only hide the IR.
 */
#ifndef NV_COMPILER_EMIT_H
#define NV_COMPILER_EMIT_H

#include "compiler/compiler.h"

enum { MAX_LOOP_DEPTH = 64 };

typedef struct Emit {
    CcFunction *fn;
    LLVMContextRef ctx;
    LLVMModuleRef mod;
    LLVMBuilderRef b;
    LLVMValueRef func;
    LLVMValueRef raise_slot; /* a scalar kernel that raises: its last parameter */
    int reachable;           /* the insertion point can be reached */
    int depth;               /* loops we are in */
    LLVMBasicBlockRef break_to[MAX_LOOP_DEPTH], continue_to[MAX_LOOP_DEPTH];
    int broken[MAX_LOOP_DEPTH];   /* a break reaches the loop's exit */
    LLVMBasicBlockRef inline_end; /* where the innermost inlined function returns to */
    int inline_returned;          /* some return of it jumped there */
    int fastmath;                 /* fast-math flags will be set: no NaNs */
    /* gufunc kernels (cc_emit_gufunc_kernel) */
    int gufunc;                 /* returns an i32 status, not a value */
    LLVMBasicBlockRef fail[16]; /* arrays/: the block returning status k, made on first use */
    LLVMValueRef alloc_head;    /* arrays/: the call's allocations (NULL: it makes none) */
    LLVMValueRef status_slot;   /* the status the cleanup block returns */
    LLVMBasicBlockRef cleanup;  /* frees the allocations, returns the status */
    const CcEmitTarget *target; /* host or GPU math and flags */
    /* ndindex.c: the innermost np.ndindex loop's flat counter and the index
     * tuple its body's .unravel(k, shape) stands for */
    CcVar *ndindex_k;
    LLVMValueRef ndindex_tuple;
    /* nprandom.c: this thread's generator, taken once in the entry block */
    LLVMValueRef random_state;
} Emit;

static inline TsKind
em_part_kind(TsKind k)
{
    return k == TS_COMPLEX64 ? TS_FLOAT32 : TS_FLOAT64;
}

static inline LLVMValueRef
em_real_const(Emit *E, TsKind k, double v)
{
    return LLVMConstReal(cc_value_type(E->ctx, k), v);
}

static inline LLVMValueRef
em_int_const(Emit *E, TsKind k, long long v)
{
    return LLVMConstInt(cc_value_type(E->ctx, k), (unsigned long long)v, 1);
}

static inline LLVMTypeRef
em_i64_type(Emit *E)
{
    return LLVMInt64TypeInContext(E->ctx);
}

static inline LLVMValueRef
em_i64c(Emit *E, long long v)
{
    return LLVMConstInt(em_i64_type(E), (unsigned long long)v, 1);
}

static inline LLVMValueRef
em_make_complex(Emit *E, TsKind k, LLVMValueRef re, LLVMValueRef im)
{
    LLVMValueRef v = LLVMGetUndef(cc_value_type(E->ctx, k));
    v = LLVMBuildInsertValue(E->b, v, re, 0, "c.re");
    return LLVMBuildInsertValue(E->b, v, im, 1, "c");
}

static inline LLVMValueRef
em_re_of(Emit *E, LLVMValueRef z)
{
    return LLVMBuildExtractValue(E->b, z, 0, "re");
}

static inline LLVMValueRef
em_im_of(Emit *E, LLVMValueRef z)
{
    return LLVMBuildExtractValue(E->b, z, 1, "im");
}

static inline LLVMBasicBlockRef
em_new_block(Emit *E, const char *name)
{
    return LLVMAppendBasicBlockInContext(E->ctx, E->func, name);
}

static inline LLVMBasicBlockRef
em_current_block(Emit *E)
{
    return LLVMGetInsertBlock(E->b);
}

/* ---- fpow.c ---- */

/* x ** b of float kind k: multiplied out (within 1 ulp of pow) where b is
 * a small integer constant, llvm.pow otherwise. */
LLVMValueRef em_float_pow(Emit *E, TsKind k, LLVMValueRef x, LLVMValueRef b);

/* ---- ndindex.c ---- */

/* np.ndindex's index tuple for the loop's k-th iteration (k = 0, 1, ... in
 * order): the previous one advanced in C order, dims[i] > 0. */
LLVMValueRef em_ndindex_next(Emit *E, LLVMTypeRef tuple_t, LLVMValueRef k, LLVMValueRef *dims,
                             int nd);
/* The dimensions of a shape (a tuple or an int) as int64: nd, -1 with an
 * exception. */
int em_shape_dims(Emit *E, CcNode *shape, LLVMValueRef *dims);
/* n, a range loop: emits it as nested loops if it is np.ndindex's over a
 * shape of one dimension or more: 1 done, 0 not such a loop, -1 error. */
int em_ndindex_loop(Emit *E, CcNode *n);

/* emit.c's statement helpers (0/-1; jump ends the path). */
int em_loop_body(Emit *E, CcNode *body, LLVMBasicBlockRef brk, LLVMBasicBlockRef cont);
int em_block(Emit *E, CcNode *n);
void em_jump(Emit *E, LLVMBasicBlockRef to);
void em_continue_at(Emit *E, LLVMBasicBlockRef bb, int reachable);

/* ---- emit.c ---- */

/* Emits n: its value, NULL with an exception. */
LLVMValueRef em_expr(Emit *E, CcNode *n);
/* Emits n and converts it to kind k. */
LLVMValueRef em_expr_as(Emit *E, CcNode *n, TsKind k);
/* A builder at the start of the function's entry block (the caller
 * disposes of it). */
LLVMBuilderRef em_entry_builder(Emit *E);
/* An alloca in the function's entry block (a loop's variables). */
LLVMValueRef em_entry_alloca(Emit *E, LLVMTypeRef t, const char *name);
/* The icmp predicate of a comparison operator (OP_EQ ... OP_GE). */
LLVMIntPredicate em_int_pred(CcOp op, int is_signed);
/* An integral value as an integer of `bits` (64 or 128) by value; node (may
 * be NULL): a Python int constant outside int64 is its own int128. */
LLVMValueRef em_wide_int_of(Emit *E, const CcNode *node, LLVMValueRef v, TsKind k, unsigned bits);

/* ---- arrays/ (arrays/arrays.h: the rest, and their typing) ---- */

/* sort.c: calls runtime.c's function `name` with args (declared on first use,
 * its parameter types those of args; ret void or a value type). */
LLVMValueRef em_runtime_call(Emit *E, const char *name, LLVMTypeRef ret, LLVMValueRef *args,
                             unsigned n);
/* A gufunc parameter's view from its LLVM parameters (data, shape...,
 * strides...); unit_last: its last stride is the item size. */
LLVMValueRef em_param_view(Emit *E, const CcType *t, LLVMValueRef *params, int unit_last);
/* An array-typed node's value (a view; an elementwise expression is
 * computed into a new array). */
LLVMValueRef em_array_expr(Emit *E, CcNode *n);
LLVMValueRef em_index(Emit *E, CcNode *n); /* ND_INDEX: an element or a view */
/* The n elements of the 1-d array rhs (a, b = row), its length checked:
 * CC_STATUS_UNPACK when it is not n.  0/-1. */
#define CC_MAX_UNPACK 64
int em_unpack_view(Emit *E, CcNode *rhs, int n, LLVMValueRef *items);
/* The truth value of the array cond, as NumPy's: its element's when it has
 * one, else CC_STATUS_TRUTH (NumPy's ValueError).  An i1, NULL on error. */
LLVMValueRef em_array_truth(Emit *E, CcNode *cond);
/* A phi, at the builder, of a from from_a and b from from_b. */
LLVMValueRef em_join(Emit *E, LLVMValueRef a, LLVMBasicBlockRef from_a, LLVMValueRef b,
                     LLVMBasicBlockRef from_b, const char *name);
/* The truth value of an if's, a while's or a conditional expression's
 * condition: an i1, NULL on error. */
LLVMValueRef em_condition(Emit *E, CcNode *cond);
LLVMValueRef em_array_attr(Emit *E, CcNode *n); /* ND_ARRAYATTR */
int em_setitem_view(Emit *E, CcNode *n);        /* ND_SETITEM */
/* Returns status from a gufunc kernel (through the cleanup of what it
 * allocated); ends the insertion block. */
void em_return_status(Emit *E, LLVMValueRef status);
/* Ends the kernel with status when bad (an i1) holds. */
void em_check(Emit *E, LLVMValueRef bad, int status);
/* Raises the exception of site (a raise's text: "module\x1fqualname\x1frepr(args)",
 * host code only) when bad (an i1) holds; the code goes on where it does not.
 * The function must have fn->raises set from its lowering. */
void em_raise_if(Emit *E, LLVMValueRef bad, const char *site);
void em_alloc_begin(Emit *E); /* in the entry block: the allocation list */
void em_alloc_end(Emit *E);   /* after the body: the cleanup block */

/* ---- extent.c ---- */

/* An index v of integer kind k into a dimension of length len: from the
 * end when negative (signed kinds); with bounds checks, outside [0, len)
 * ends the kernel with CC_STATUS_INDEX, a uint64 past int64 with
 * CC_STATUS_OVERFLOW.  An int64. */
LLVMValueRef em_wrap_index(Emit *E, LLVMValueRef v, TsKind k, LLVMValueRef len, int counter);
/* Python's slice.indices(len) of s (lo:hi:step, each may be NULL): the
 * start, the length and the step, int64s; a zero step ends the kernel
 * (CC_STATUS_VALUE).  0/-1. */
int em_slice_bounds(Emit *E, CcNode *s, LLVMValueRef len, LLVMValueRef *start, LLVMValueRef *count,
                    LLVMValueRef *step);
/* The bytes of a C-contiguous array of shape dims[0..n) and item size
 * unit (0 when a dimension is), its strides into strides (may be NULL;
 * all zero for an array of no elements, as NumPy's); a
 * negative dimension, or nonzero dimensions whose bytes pass int64, end
 * the kernel with CC_STATUS_VALUE (NumPy's ValueErrors). */
LLVMValueRef em_shape_bytes(Emit *E, LLVMValueRef *dims, int n, long long unit,
                            LLVMValueRef *strides);
/* np.arange(start, stop, step)'s length (an int64) as NumPy computes it
 * from node[i] (NULL: start 0, step 1) of values val[i]. */
LLVMValueRef em_arange_length(Emit *E, CcNode **node, LLVMValueRef *val);

/* ---- convert.c ---- */

/* The LLVM type of a view of ndim dimensions: { ptr, [n x i64], [n x i64],
 * i64 lo, i64 hi } (arrays/arrays.h's View). */
LLVMTypeRef em_array_type(Emit *E, int ndim);
/* The LLVM type of a value of type t (a tuple: a struct).  NULL with
 * MemoryError. */
LLVMTypeRef em_type_of(Emit *E, const CcType *t);
/* v of kind `from` as kind `to`: NumPy's casts (float -> int saturates). */
LLVMValueRef em_convert(Emit *E, LLVMValueRef v, TsKind from, TsKind to);
LLVMValueRef em_convert_type(Emit *E, LLVMValueRef v, const CcType *from, const CcType *to);
/* Python truth value: nonzero; NaN is true; complex: either part. */
LLVMValueRef em_truthy(Emit *E, LLVMValueRef v, TsKind k);

/* ---- arith.c ---- */

/* a op b for a binary arithmetic operator on kind k; NULL (no exception)
 * for an operator the kind has no emission for. */
LLVMValueRef em_arith(Emit *E, CcOp op, TsKind k, LLVMValueRef a, LLVMValueRef b);
/* Integer a ** b by squaring (a negative b: the truncated exact value). */
LLVMValueRef em_int_pow(Emit *E, TsKind k, LLVMValueRef a, LLVMValueRef b);
/* |z| of a complex value, in its part kind. */
LLVMValueRef em_complex_abs(Emit *E, TsKind k, LLVMValueRef z);
/* A float's bits as a signed integer that orders as the float does (-0
 * below +0; NaNs at the ends); its own inverse on the integer. */
LLVMValueRef em_order_key(Emit *E, LLVMValueRef x);
/* fcmp pred that raises no invalid flag for a quiet NaN (see arith.c). */
LLVMValueRef em_quiet_fcmp(Emit *E, LLVMRealPredicate pred, LLVMValueRef a, LLVMValueRef b,
                           const char *name);

/* ---- emitcall.c ---- */

/* A builtin call (ND_CALL). */
LLVMValueRef em_call(Emit *E, CcNode *n);
/* A call of the LLVM intrinsic `name` with its overload types, named after
 * it without "llvm." ("fabs", "sadd.with.overflow"), as libm calls are. */
LLVMValueRef em_intrinsic(Emit *E, const char *name, LLVMTypeRef *overloads, unsigned n_over,
                          LLVMValueRef *args, unsigned nargs);
/* A float intrinsic overloaded on its one float type: llvm.exp.f32 ... */
LLVMValueRef em_float_intrinsic(Emit *E, const char *name, TsKind k, LLVMValueRef *args,
                                unsigned nargs);
/* A libm function of float kind k (sinf for float32, sin for float64). */
LLVMValueRef em_libm(Emit *E, const char *base, TsKind k, LLVMValueRef *args, unsigned nargs);
LLVMValueRef em_fabs_of(Emit *E, TsKind k, LLVMValueRef x);
LLVMValueRef em_copysign_of(Emit *E, TsKind k, LLVMValueRef mag, LLVMValueRef sign);

/* arrays/elementwise.c: marks the loop of latch branch br to be vectorized one vector
 * a step (no interleaving: short core rows reach the vector loop) */
void em_one_vector_a_step(Emit *E, LLVMValueRef br);

/* ---- emitprint.c ---- */

/* Emits a print statement (ND_PRINT); 0/-1. */
int em_print(Emit *E, CcNode *n);

/* ---- branchhint.c ---- */

/* Whether `if` statement n is a running extremum's update in a loop
 * (`if x > best: best = x`), whose branch is kept (em_branch_rarely). */
int em_extremum_if(Emit *E, const CcNode *n);
/* Jumps to then where cond holds, to els where not, weighted: then is
 * taken rarely (an `or`: a weighted jump from each operand). */
int em_branch_rarely(Emit *E, CcNode *cond, LLVMBasicBlockRef then, LLVMBasicBlockRef els);

#endif /* NV_COMPILER_EMIT_H */
