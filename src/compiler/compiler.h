/*
 * compiler.h - the kernel compiler: Python AST -> typed IR -> LLVM IR -> code.
 *
 * Pipeline, one file a pass (each section below belongs to one .c file):
 *
 *   arena.c      the per-compilation arena that owns every IR object
 *   stack.c      the C stack the compiling thread has left; calls on a
 *                thread with a larger one (parsing deep user code)
 *   diag.c       TypingErrors at a source location: file:line:col, the
 *                source line and a caret (every pass reports through it)
 *   lower.c      Python `ast` objects -> untyped IR tree (CcNode): locals,
 *                definite assignment; lowerexpr.c, lowercall.c and
 *                lowerstmt.c lower expressions, calls and statements;
 *                lowernp.c the NumPy calls whose arguments are constants
 *   astkind.c    the node classes of Python's `ast` module, as AstKinds
 *   resolve.c    names that are not locals (closure cells, globals,
 *                builtins, modules), frozen into constants; Python int
 *                arithmetic on constants, folded as Python computes it
 *   inline.c     device functions (@numbavec.jit), inlined at each call
 *                into the caller's IR (ND_INLINE)
 *                (astkind.c, resolve.c and inline.c are lower.c's helpers:
 *                their sections are in lower.h, internal to the pass)
 *   builtins.c   the functions a kernel may call (abs, min, math.exp, ...):
 *                their typing rules and their LLVM emission
 *   typeinfer.c  types every node: NumPy promotion, NEP 50 weak literals,
 *                variables get the promotion of everything assigned to them
 *                (the solver; typeinfer.h is what its files share):
 *   typecalls.c    the typing rules of builtin calls, by flavor
 *   casting.c    NumPy's casting rules applied at typing (in-place operators
 *                on arrays: same_kind)
 *   values.c     the LLVM types of scalar kinds; loads and stores of them
 *   emit.c       typed IR -> one LLVM function "ret kernel(args...)": the
 *                pass (expressions, statements, the function); emit.h is
 *                what the emitter's files share:
 *   convert.c      LLVM types of value types, casts between kinds, truth
 *   arith.c        integer, float and complex arithmetic
 *   emitcall.c     builtin calls; calls of LLVM intrinsics and libm
 *   arrays/      arrays, typed and emitted, one file per family (arrays.h):
 *                views.c (views, indexing, allocation freed when the call
 *                returns), elementwise.c (fused elementwise loops, broadcast
 *                assignment), reduce.c (reductions, masks, axes), sort.c,
 *                linalg.c (np.dot, @, np.linalg.norm), build.c (np.array
 *                of scalars), stats.c (np.cov, np.corrcoef, np.histogram)
 *   extent.c       index and length arithmetic of arrays (overflow-safe)
 *   cmath.c      complex math functions (cmath.exp ...) as C library calls
 *   dump.c       the typed IR as text (NUMBAVEC_DUMP=ir)
 *   jit.c        the host JIT (jit.h): target machine, ORC LLJIT, symbols,
 *                linking; passes.c its pass pipeline (optimisation + libmvec,
 *                prepare.c's passes, code generation); code.c its code
 *                objects (CcCode: keyed, lazy, quick); timing.c the stages'
 *                times for NUMBAVEC_DUMP=time
 *
 * The IR is a tree (as chibicc's), not SSA: variables are allocas that
 * mem2reg promotes.  Everything a compilation allocates lives in its arena
 * and is freed at once, on success and on error.
 */
#ifndef NV_COMPILER_H
#define NV_COMPILER_H

#include "common.h"
#include "typesig/typesig.h"

#include <llvm-c/Core.h>
#include <llvm-c/Orc.h>
#include <llvm-c/TargetMachine.h>

/* ---- arena.c ---- */

typedef struct CcArena CcArena;

CcArena *cc_arena_new(void);                 /* NULL with MemoryError */
void cc_arena_free(CcArena *arena);          /* releases memory and PyObjects */
void *cc_alloc(CcArena *arena, size_t size); /* zeroed; NULL with MemoryError */
char *cc_strdup(CcArena *arena, const char *s);
/* The arena keeps a reference to obj until it is freed (steals nothing). */
int cc_arena_keep(CcArena *arena, PyObject *obj);

/* ---- types (cctype.c) ---- */

/*
 * A value type: a scalar kind, or a weak Python literal kind (NEP 50), or a
 * tuple of value types.  Weak kinds promote to the other operand's kind and
 * are stored as int64/float64/complex128 when nothing else decides.
 */
typedef enum CcTypeKind {
    CT_SCALAR,
    CT_WEAK_INT,
    CT_WEAK_FLOAT,
    CT_WEAK_COMPLEX,
    CT_TUPLE,
    CT_ARRAY, /* an array view: scalar (its element kind), n = ndim */
} CcTypeKind;

typedef struct CcType CcType;
struct CcType {
    CcTypeKind kind;
    TsKind scalar;        /* CT_SCALAR; for weak kinds, their storage kind */
    int n;                /* CT_TUPLE */
    const CcType **elems; /* CT_TUPLE */
};

const CcType *cc_scalar_type(TsKind kind); /* static singletons */
const CcType *cc_weak_type(CcTypeKind kind);
const CcType *cc_array_type(TsKind kind, int ndim); /* static singletons */
/* An array's element type (a scalar type); any other type itself. */
const CcType *cc_elem_type(const CcType *t);
int cc_is_array(const CcType *t);   /* t is not NULL and an array */
TsKind cc_storage(const CcType *t); /* the kind a value is held in */
int cc_is_weak(const CcType *t);
/* NumPy 2's result_type of two value types (weak rules of NEP 50). */
const CcType *cc_promote(const CcType *a, const CcType *b);
const char *cc_type_name(const CcType *t, char *buf, size_t size);

/* ---- the IR (lower.c builds it, typeinfer.c types it, emit.c emits it) ---- */

typedef enum CcNodeKind {
    /* expressions */
    ND_CONST,   /* ival / fval / cval, with a (possibly weak) type */
    ND_VAR,     /* a local variable or parameter: var */
    ND_BINOP,   /* op, lhs, rhs */
    ND_UNARY,   /* op (OP_NEG, OP_POS, OP_INVERT, OP_NOT), lhs */
    ND_COMPARE, /* chained: args[0] ops[0] args[1] ops[1] args[2] ... */
    ND_BOOLOP,  /* op (OP_AND / OP_OR), args: Python's value semantics */
    ND_IFEXP,   /* cond ? then : els */
    ND_CALL,    /* builtin, args */
    ND_TUPLE,   /* args */
    ND_GETITEM, /* lhs[index] with a constant index (tuples) */
    ND_INLINE,  /* an inlined device function: then (body), var (result) */
    /* statements */
    ND_BLOCK,     /* args: statements */
    ND_ASSIGN,    /* var = rhs */
    ND_UNPACK,    /* vars[...] = rhs (a tuple) */
    ND_RETURN,    /* lhs (the value); var: the result variable of the
                      innermost ND_INLINE when inside a device function */
    ND_IF,        /* cond, then, els (els may be NULL) */
    ND_WHILE,     /* cond, then (body), els (else clause, may be NULL) */
    ND_FOR_RANGE, /* var = range(args[0..2]): then (body), els (else) */
    ND_BREAK,
    ND_CONTINUE,
    ND_EXPR,  /* lhs evaluated for its effects */
    ND_RAISE, /* raise / a failed assert: text names the exception (cc_raise_site) */
    ND_PRINT, /* print(args): args (string constants: ND_CONST with text), lhs: sep, rhs: end */
    /* arrays (arrays/) */
    ND_INDEX,     /* lhs[args[0], ...]: an element, or a view when an index is a
                     slice, None or ..., or fewer indices than dimensions */
    ND_ARRAYATTR, /* lhs.shape / .size / .ndim / .T ... or len(lhs): index is a CcArrayAttr */
    ND_SETITEM,   /* lhs (an ND_INDEX) = rhs (statement; a[i] += v lowers to it);
                     a view target takes rhs broadcast (a scalar or an array);
                     index: 1 for a[i] op= v, 2 for t op= v of an array t */
    ND_SLICE,     /* an index: lhs:rhs:cond (start, stop, step; each may be NULL) */
    ND_NEWAXIS,   /* an index: None (np.newaxis) */
    ND_ELLIPSIS,  /* an index: ... */
    ND_VIEW,      /* arrays/ only: a view computed already (view: its View) */
} CcNodeKind;

typedef enum CcArrayAttr {
    AA_SHAPE,
    AA_SIZE,
    AA_NDIM,
    AA_LEN,
    AA_T,        /* a.T: the view with its dimensions reversed */
    AA_STRIDES,  /* a tuple of byte strides */
    AA_ITEMSIZE, /* bytes per element */
    /* a.dtype.kind == 'f', a.dtype.kind in 'iu', a.dtype == np.float32 (and
     * != / not in): a bool constant once a's kind is known.  ival: bit k
     * for each kind letter "biufc"[k] (AA_KIND_IS) or the TsKind
     * (AA_DTYPE_IS), and CC_DTYPE_NEGATE for != and not in */
    AA_KIND_IS,
    AA_DTYPE_IS,
} CcArrayAttr;
#define CC_DTYPE_NEGATE (1LL << 32)

typedef enum CcOp {
    OP_ADD,
    OP_SUB,
    OP_MUL,
    OP_DIV,
    OP_FLOORDIV,
    OP_MOD,
    OP_POW,
    OP_LSHIFT,
    OP_RSHIFT,
    OP_BITAND,
    OP_BITOR,
    OP_BITXOR,
    OP_NEG,
    OP_POS,
    OP_INVERT,
    OP_NOT,
    OP_EQ,
    OP_NE,
    OP_LT,
    OP_LE,
    OP_GT,
    OP_GE,
    OP_AND,
    OP_OR,
} CcOp;

typedef struct CcVar {
    const char *name;
    int index;
    int is_param;
    const CcType *ty; /* set by typeinfer */
    void *slot;       /* emit.c: the alloca (LLVMValueRef) */
    /* typeinfer: an array parameter whose element kind the signature left
     * out (TS_INFER: a dynamic gufunc's output the call gave no type): the
     * promotion of every value stored into it, UNKNOWN until one is. */
    int infer_elem;
    const CcType *elem;
    int iterable; /* lower.c: the hidden variable holding what a for loop iterates */
    /* typeinfer: the type is given (a numbavec ufunc's loop, inlined:
     * inline_call sets it); what is assigned is cast to it */
    int declared;
    /* typeinfer: assigned by a statement that failed to type, so an error
     * where it is read may follow from that one alone */
    int poisoned;
    /* lower (rebind.c): the flag its reads after a loop test */
    struct CcVar *bound;
    int rebound; /* lower: a parameter the function binds again */
    /* emit.c: the variable of a range loop (its counter's values): indexing
     * by it takes extent.c's signed bounds check, which LLVM proves from the
     * loop's own bounds */
    int counter;
    /* typeinfer: an array variable holding a view of a global NumPy array
     * (arrays/views.c, ti_readonly), which cannot be written */
    int readonly;
    /* typeinfer: a parameter of a lifted ND_INLINE given an array: it holds
     * one element at a time */
    int lifted;
} CcVar;

/* Where a device function's source came from (a kernel's own source is
 * described by CcFunction; its nodes have src NULL). */
typedef struct CcSource {
    const char *name; /* the function's name */
    const char *filename;
    PyObject *lines; /* list of str, kept alive by the arena */
    int first_line;  /* file line of lines[0] */
    int line_offset; /* added to ast line numbers */
} CcSource;

typedef struct CcLoc {
    int line, col;       /* 1-based line in the file, 0-based column */
    const CcSource *src; /* NULL: the kernel's own source */
} CcLoc;

typedef struct CcNode CcNode;
struct CcNode {
    CcNodeKind kind;
    CcOp op;
    CcLoc loc;
    const CcType *ty; /* set by typeinfer (expressions) */
    CcNode *lhs, *rhs, *cond, *then, *els;
    CcNode **args;
    int nargs;
    CcOp *ops; /* ND_COMPARE: nargs - 1 operators */
    CcVar *var;
    CcVar **vars; /* ND_UNPACK targets */
    int builtin;  /* ND_CALL: a CcBuiltin */
    int index;    /* ND_GETITEM; ND_FOR_RANGE: 1 for reversed(range(...)) */
    /* ND_CONST */
    long long ival;     /* ints and bools (uint64 bit pattern) */
    double fval, fimag; /* floats; complex: fval + fimag j */
    /* ND_CONST of a Python int outside int64: big is set, (ihigh:ival) is its
     * value as an int128 (clamped to int128's range), and pyint the exact
     * value (kept by the arena); typeinfer lets it meet only the types it
     * fits (NEP 50) and makes it a float toward floats.  An ND_CONST of
     * array type is a global NumPy array: pyint is its frozen C-contiguous
     * copy (resolve.c), a read-only global of the module (views.c). */
    int big;
    long long ihigh;
    PyObject *pyint;
    /* arrays/: inside an elementwise loop, the value of this array leaf
     * at the loop's index (an LLVMValueRef), else NULL */
    void *elem;
    void *view; /* ND_VIEW; an np.histogram ND_CALL: its tuple type (stats.c) */
    /* ND_RAISE: "module\x1fqualname\x1frepr(args)"; ND_INLINE of a numbavec
     * ufunc with signatures: its loops, each nin + 1 letters 'a' + TsKind
     * (inputs, then output), one after the other */
    const char *text;
    /* typeinfer: this statement failed to type; its error is kept and the
     * passes after skip it */
    int failed;
    /* typeinfer: an ND_INLINE of a numbavec ufunc called with arrays, applied
     * to their elements (an elementwise node: arrays/elementwise.c) */
    int lifted;
};

/* One function being compiled for one signature. */
typedef struct CcFunction {
    CcArena *arena;
    const char *name;
    const char *filename;
    PyObject *source_lines; /* borrowed: list of str, for error carets */
    int line_offset;        /* added to ast line numbers */
    int first_line;         /* file line of source_lines[0] */
    CcVar **vars;
    int nvars, cap_vars;
    CcVar **var_index; /* lower.c: open addressing by name, var_index_cap slots */
    int var_index_cap;
    int nparams;
    int ninline;       /* device functions inlined so far (name prefixes) */
    CcNode *body;      /* ND_BLOCK */
    const CcType *ret; /* declared (scalar) or inferred; NULL: void (gufunc) */
    int boundscheck;   /* gufunc kernels: check indices (cc_emit_gufunc_kernel) */
    int depth;         /* lower.c: the nesting being lowered */
    int max_depth;     /* lower.c: the nesting this thread's stack has room for */
    int nnodes;        /* lower.c: the nodes made so far */
    int allocates;     /* typeinfer: the kernel may allocate arrays (np.zeros, a temporary) */
    int device;        /* driver: compiled for a device (cuda), which has no malloc */
    unsigned fails;    /* emit: bit k set when the kernel may return status k */
    int raises;        /* lower: the kernel has a raise or assert (ND_RAISE) */
    int raise_gen;     /* lower: the largest cc_raise_register generation met */
    /* lower: the IndexError site a scalar kernel's failed bounds check
     * raises (it has no status to return): set where it reads a global
     * array (resolve.c), NULL otherwise */
    const char *index_site;
    /* emit, device code: the sites its raises return CC_STATUS_USER + i for */
    const char **raise_sites;
    int nraise_sites, cap_raise_sites;
} CcFunction;

/* ---- stack.c ---- */

/* Bytes of C stack left below the caller on this thread (SIZE_MAX: unknown). */
size_t cc_stack_room(void);
/* The levels of nesting a kernel compiled from here may have: CC_MAX_DEPTH,
 * or less where this thread's stack has less room. */
#define CC_MAX_DEPTH 2000
int cc_depth_budget(void);
/* callable(*args) (args a tuple, both borrowed): here when this thread has
 * `stack` bytes of room, else on a new thread with a stack of that size,
 * the caller waiting without the GIL.  New reference, or NULL with the
 * exception the call raised. */
PyObject *cc_call_with_stack(size_t stack, PyObject *callable, PyObject *args);
int cc_init_module(PyObject *module); /* _call_with_stack, _stack_room, Inline; 0/-1 */
/* ---- inline.c ---- */
int cc_init_inline(PyObject *module); /* _core.Inline (lower.h says what it is); 0/-1 */

/* ---- lower.c ---- */

/*
 * Lowers the FunctionDef `funcdef` of `pyfunc` (the decorated function,
 * borrowed) into fn, resolving global and closure names.  0/-1 with a
 * TypingError.
 */
int cc_lower(CcFunction *fn, PyObject *funcdef, PyObject *pyfunc);

/* visit(node, ctx) on n and every node under it (lhs, rhs, cond, then, els,
 * args), depth first, until one returns nonzero: that value, else 0 (n may
 * be NULL). */
int cc_node_any(const CcNode *n, int (*visit)(const CcNode *n, void *ctx), void *ctx);

/* ---- diag.c ---- */

/* Raises TypingError "file:line:col: msg" + source line + caret; returns -1. */
int cc_error(const CcFunction *fn, CcLoc loc, const char *fmt, ...);
/* The same, for Python code the compiler ran (a property of a global) that
 * raised: the TypingError says what raised it, and the exception is its
 * __cause__.  BaseExceptions that are not Exceptions (KeyboardInterrupt)
 * are left to propagate.  Returns -1. */
int cc_error_raised(const CcFunction *fn, CcLoc loc, const char *what);
/* Lowering and typing report every statement that failed, not only the
 * first, one message and caret each: CC_MAX_ERRORS of them, then the one
 * that ended the pass. */
enum { CC_MAX_ERRORS = 16 };
/* The pending exception, normalized, appended to errors and cleared; -1
 * (the exception still pending) when that fails. */
int cc_keep_error(PyObject *errors);
/* Raises the errors kept: the one error itself (its cause kept), or a
 * TypingError with each message on its lines, the first's cause its own. */
void cc_raise_errors(PyObject *errors);

/* ---- builtins.c ---- */

/* How a builtin is typed and emitted: its row in calls.h's cc_flavor_ops. */
typedef enum CcFlavor {
    FL_ABS,
    FL_MIN,
    FL_MAX, /* Python's abs/min/max; np.abs */
    FL_INT,
    FL_FLOAT,
    FL_COMPLEX,   /* Python casts: weak results */
    FL_BOOL,      /* bool(x): truth value */
    FL_CAST,      /* np.float32(x) ...: op is the TsKind */
    FL_MATH,      /* math.f: float in, Python float out */
    FL_MATH_INT,  /* math.floor/ceil/trunc: an int out */
    FL_MATH_PRED, /* math.isnan ...: bool out */
    FL_NP,        /* np.f: the argument's float kind out */
    FL_NP_PRED,   /* np.isnan ...: bool out */
    FL_NP_MINMAX, /* np.minimum/np.maximum: NaN-propagating */
    FL_REAL,
    FL_IMAG,
    FL_CONJ,     /* x.real, x.imag, x.conjugate() */
    FL_CMATH,    /* cmath.f: complex in; out by op */
    FL_ROUND,    /* round(x[, n]) */
    FL_NP_SIGN,  /* np.sign: the argument's kind */
    FL_WHERE,    /* np.where(cond, x, y): elementwise choice, both computed */
    FL_OPERATOR, /* np.add, np.less ...: lowered to the operator (op is the CcOp) */
    FL_CLIP,     /* np.clip(x, lo, hi): min(max(x, lo), hi) in the promotion's kind */
    FL_ALLOC,    /* np.empty/zeros/ones/full(shape[, fill], dtype=): op is a CcAllocOp */
    FL_LIKE,     /* np.empty_like ... (a[, fill], dtype=), a.copy(): op is a CcAllocOp */
    FL_REDUCE,   /* np.sum(a), a.max() ...: op is a CcReduceOp */
    FL_NDSIZE,   /* np.ndindex's loop: the product of a shape (a tuple or an int) */
    FL_UNRAVEL,  /* np.ndindex's loop: the index tuple of a flat index in a shape */
    FL_SORT,     /* np.sort, argsort, partition, median, quantile ...: op is a CcSortOp */
    FL_DOT,      /* np.dot(a, b), a @ b (op 1) of 1-d and 2-d arrays */
    FL_ARANGE,   /* np.arange([start,] stop[, step], dtype=) */
    FL_NORM,     /* np.linalg.norm(x, ord, axis): typed as the reductions it is (linalg.c) */
    FL_ARRAY,    /* np.array([x, y]): a new 1-d array of scalars (build.c) */
    FL_COV,      /* np.cov (op 0), np.corrcoef (op 1): typed as what they compute (stats.c) */
    FL_HIST,     /* np.histogram(a, bins=edges): (counts, edges) (stats.c) */
    FL_RANDOM,   /* np.random.random(), normal(), seed() ...: op is a CcRandomOp (nprandom.c) */
    FL_GCD,      /* math.gcd/lcm, np.gcd/lcm of integers: op 0 gcd, 1 lcm */
    FL_RESHAPE,  /* a.reshape(), a.ravel(): a view, or NumPy's copy (op: CcReshapeOp) */
    FL_COUNT
} CcFlavor;

/* The numeric operation behind FL_MATH* and FL_NP* builtins. */
typedef enum CcMathOp {
    M_EXP,
    M_EXPM1,
    M_LOG,
    M_LOG2,
    M_LOG10,
    M_LOG1P,
    M_SQRT,
    M_SIN,
    M_COS,
    M_TAN,
    M_ASIN,
    M_ACOS,
    M_ATAN,
    M_SINH,
    M_COSH,
    M_TANH,
    M_ASINH,
    M_ACOSH,
    M_ATANH,
    M_ERF,
    M_ERFC,
    M_GAMMA,
    M_LGAMMA,
    M_FABS,
    M_FLOOR,
    M_CEIL,
    M_TRUNC,
    M_RINT,
    M_DEGREES,
    M_RADIANS,
    M_SQUARE,
    M_POW,
    M_ATAN2,
    M_HYPOT,
    M_COPYSIGN,
    M_FMOD, /* binary */
    M_ISNAN,
    M_ISINF,
    M_ISFINITE, /* predicates */
    M_MINIMUM,
    M_MAXIMUM,
    M_FMIN,
    M_FMAX,
    M_LDEXP, /* binary */
    M_PHASE,
    M_POLAR,
    M_RECT, /* cmath only */
    M_NONE,
} CcMathOp;

/* What an allocation fills its array with. */
typedef enum CcAllocOp {
    AL_EMPTY,
    AL_ZEROS,
    AL_ONES,
    AL_FULL,
    AL_COPY,
    AL_FLATTEN, /* a.flatten(): a copy, as one dimension */
} CcAllocOp;

/* What an FL_RESHAPE call is (arrays/reshape.c). */
typedef enum CcReshapeOp {
    RS_RESHAPE, /* a.reshape(shape), np.reshape(a, shape) */
    RS_RAVEL,   /* a.ravel(), np.ravel(a) */
} CcReshapeOp;

/* A reduction of a whole array to a scalar. */
typedef enum CcReduceOp {
    R_SUM,
    R_PROD,
    R_MIN,
    R_MAX,
    R_MEAN,
    R_ANY,
    R_ALL,
    R_NANSUM,
    R_NANPROD,
    R_NANMIN,
    R_NANMAX,
    R_NANMEAN,
    R_ARGMIN,
    R_ARGMAX,
    R_VAR, /* var/std: ddof in the call's ival */
    R_STD,
    R_CUMSUM, /* cumulative: a new 1-d array, a's elements in C order */
    R_CUMPROD,
} CcReduceOp;

/* What sorts or searches (runtime.c does the work).  The call's ival: the
 * axis of sort/argsort/partition (CC_AXIS_NONE: flattened), the side of
 * searchsorted (1: right). */
typedef enum CcSortOp {
    S_SORT,      /* np.sort(a, axis=-1): a new array */
    S_ARGSORT,   /* np.argsort(a, axis=-1): int64, stable */
    S_PARTITION, /* np.partition(a, kth, axis=-1) */
    S_MEDIAN,    /* np.median(a): a scalar */
    S_NANMEDIAN,
    S_QUANTILE, /* np.quantile(a, q): a scalar */
    S_NANQUANTILE,
    S_PERCENTILE, /* q / 100 */
    S_NANPERCENTILE,
    S_UNIQUE,        /* np.unique(a): sorted, 1-d */
    S_SEARCHSORTED,  /* np.searchsorted(a, v, side=) */
    S_SORT_IN_PLACE, /* a.sort(axis=-1): sorts a's view, None */
    S_PARTITION_IN_PLACE,
} CcSortOp;
#define CC_AXIS_NONE (-(1LL << 62))

/* np.random's functions (nprandom.c; random.c draws).  Their calls keep
 * every parameter, defaults filled in by the lowering. */
typedef enum CcRandomOp {
    RN_SEED,    /* np.random.seed(seed): this thread's generator */
    RN_RANDOM,  /* random(), random_sample(), rand(), sample(): [0, 1) */
    RN_UNIFORM, /* uniform(low, high) */
    RN_NORMAL,  /* normal(loc, scale) */
    RN_GAUSS,   /* randn(), standard_normal() */
    RN_RANDINT, /* randint(low, high): int64 in [low, high) */
} CcRandomOp;

typedef struct CcBuiltin {
    const char *name; /* as users write it: "math.exp" */
    CcFlavor flavor;
    int op; /* CcMathOp, or TsKind for FL_CAST */
    int min_args, max_args;
} CcBuiltin;

/* Maps a Python object (math.exp, np.float32, abs, ...) to a builtin id,
 * or returns -1 (no exception) when it is not one; -2 with an exception
 * if the table could not be built. */
int cc_builtin_lookup(PyObject *obj);
const CcBuiltin *cc_builtin(int id);
int cc_builtin_count(void); /* ids are 0 .. cc_builtin_count() - 1 */
int cc_math_arity(CcMathOp op);
/* 1 when builtins of flavor f apply elementwise to arrays (np.sqrt(a), abs(a),
 * np.where(c, a, b)): typeinfer lifts them over array operands. */
int cc_flavor_elementwise(CcFlavor f);
/* The id of the builtin named as builtins.c's table names it ("numpy.sum",
 * "min"), or -1. */
int cc_builtin_by_name(const char *name);
/* The builtin ids of x.real, x.imag, x.conjugate(). */
int cc_builtin_attr(CcFlavor flavor);
/* The builtin id of the cast to kind k (np.float32 ...), or -1. */
int cc_builtin_cast(TsKind k);
/* ---- prune.c ---- */

/* cond's truth when it is known as the kernel is compiled (constants, an
 * array's ndim and dtype tests once typed, their comparisons and
 * not/and/or): 1 or 0; -1 when only a run can tell.  An if with such a
 * condition lowers (global constants) or types (the rest) the branch it
 * takes alone. */
int cc_known_truth(const CcNode *cond);
/* The if n made `if True: taken` (empty, emptied, its else; taken NULL:
 * nothing runs), which emit.c emits as the block alone. */
void cc_keep_branch(CcNode *n, CcNode *taken, CcNode *empty);
/* The value of n, a dtype test (AA_KIND_IS, AA_DTYPE_IS: a.dtype.kind ==
 * 'f', a.dtype == np.float32, their negations), for elements of kind k. */
int cc_dtype_test(const CcNode *n, TsKind k);

/* ---- typeinfer.c ---- */

/* The float kind math on a value of type t runs in: float32 for float32 and
 * complex64 (and their parts), else float64. */
TsKind cc_math_kind(const CcType *t);
/* Types every node of fn, parameters typed by sig; sets fn->ret.  An array
 * argument of kind TS_INFER (a gufunc's) takes the promotion of what the
 * kernel stores into it.  0/-1. */
int cc_typeinfer(CcFunction *fn, const TsSignature *sig);
/* sig with each TS_INFER array kind replaced by the kind typeinfer found. */
void cc_inferred_signature(const CcFunction *fn, TsSignature *sig);

/* ---- dispatch.c ---- */

/* A helper with signatures (ND_INLINE n, n->text '!...', inline.c): the
 * one Numba's dispatcher takes for the np argument types args sets its
 * declared parameters' and result's types (*changed set when one changes).
 * 0, or -1 with a TypingError naming the signatures when none fits. */
int cc_dispatch_types(CcFunction *fn, CcNode *n, const CcType **args, int np, int *changed);

/* ---- casting.c ---- */

/* NumPy's can_cast(from, to, casting='same_kind'). */
int cc_can_cast_same_kind(TsKind from, TsKind to);
/* An in-place operator n (an ND_SETITEM of an array target, rhs the
 * operation) whose result of kind `result` goes into an array of kind
 * `target`: 0, or -1 with a TypingError where NumPy's same_kind rule
 * refuses the cast. */
int cc_check_inplace(const CcFunction *fn, const CcNode *n, TsKind target, TsKind result);

/* ---- values.c ---- */

/* Adds the enum attribute `name` (value 0: nounwind, noalias ...) to
 * function f at index (LLVMAttributeReturnIndex, a parameter's 1 + i); an
 * attribute this LLVM does not know is left out.  cc_add_fn_attr: to f
 * itself (LLVMAttributeFunctionIndex). */
void cc_add_attr(LLVMValueRef f, unsigned index, const char *name);
void cc_add_fn_attr(LLVMValueRef f, const char *name);
/* A loop property !{key, value} (value NULL: !{key}), for cc_set_loop_id. */
LLVMMetadataRef cc_loop_prop(LLVMContextRef ctx, const char *key, LLVMMetadataRef value);
/* Gives the loop whose latch branch is br the ID !{!self, props...} (at most 7). */
void cc_set_loop_id(LLVMValueRef br, LLVMMetadataRef *props, int n);
/*
 * Asks for f's machine code to be made by LLVM's fast instruction selector
 * and register allocator (optnone at code generation, after optimisation,
 * in passes.c): for functions that only check, dispatch and call, whose code
 * generation would otherwise cost as much as the loops they call.
 */
void cc_mark_fast_codegen(LLVMValueRef f);
#define CC_FAST_CODEGEN "numbavec-fast-codegen" /* the string attribute it adds */
/*
 * The C function `name` of type fty in mod, declared pure (nounwind,
 * willreturn, memory(none): no errno) when it is new, so that calls
 * vectorize and hoist.  LLVM 16+ rejects `readnone` on a function.
 */
LLVMValueRef cc_declare_pure(LLVMModuleRef mod, const char *name, LLVMTypeRef fty);

/* The LLVM type a value of kind k has in registers (bool: i1) and in
 * memory (bool: i8); complex: { T, T }. */
LLVMTypeRef cc_value_type(LLVMContextRef ctx, TsKind k);
LLVMTypeRef cc_memory_type(LLVMContextRef ctx, TsKind k);
LLVMValueRef cc_load(LLVMBuilderRef b, TsKind k, LLVMValueRef ptr, const char *name);
void cc_store(LLVMBuilderRef b, TsKind k, LLVMValueRef value, LLVMValueRef ptr);

/* ---- runtime.c: what kernels call by name (jit.c defines the names) ---- */

typedef struct CcRuntimeSymbol {
    const char *name;
    void *address;
} CcRuntimeSymbol;
extern const CcRuntimeSymbol cc_runtime_symbols[]; /* ends with a NULL name */

enum { CC_Q_MEDIAN = 1, CC_Q_SKIPNAN = 2 }; /* numbavec_rt_quantile's mode */
int numbavec_rt_sort(int kind, int ndim, char *data, const int64_t *shape, const int64_t *strides,
                     int64_t kth);
int numbavec_rt_argsort(int kind, int ndim, char *data, const int64_t *shape,
                        const int64_t *strides, int64_t *out);
int numbavec_rt_quantile(int kind, int64_t n, char *v, double q, int mode, void *result);
int64_t numbavec_rt_unique(int kind, int64_t n, char *v);
void numbavec_rt_searchsorted(int kind, const char *a, int64_t n, int64_t as, const char *x,
                              int64_t m, int64_t xs, int64_t *out, int right);
int64_t numbavec_rt_nocopy_reshape(int64_t ndim, const int64_t *dims, const int64_t *strides,
                                   int64_t newnd, const int64_t *newdims, int64_t *newstrides,
                                   int64_t itemsize);
void numbavec_raise(const char *site); /* a kernel's raise: see cc_take_raised */
/* random.c: np.random's generator, one per thread (NumPy's legacy algorithms) */
void *numbavec_random_state(void); /* this thread's generator: what the others take */
void numbavec_random_seed(void *state, uint32_t seed);
void numbavec_random_refill(void *state); /* seeds if need be, then 624 new words */
/* where a state keeps its words left (int32) and its 624 words (uint32):
 * kernels draw a word in line (nprandom.c); and the polar method's kept
 * second deviate (int32 flag, double), also drawn in line */
extern const size_t cc_random_left_at, cc_random_key_at;
extern const size_t cc_random_has_gauss_at, cc_random_gauss_at;
enum { CC_RANDOM_WORDS = 624 };
void cc_random_init(void); /* the fork handler, once (cc_runtime_init) */
/* print() in a kernel: the pieces of a line in a thread's buffer, written
 * to file descriptor 1 at once by numbavec_print_end (Python's repr of each
 * number: the shortest digits that read back, NumPy's for float32). */
void numbavec_print_str(const char *s);
void numbavec_print_int(int64_t v, int is_unsigned);
void numbavec_print_float(double v, int single);
void numbavec_print_complex(double re, double im, int single);
void numbavec_print_bool(int v);
void numbavec_print_end(const char *end);
int cc_runtime_init(void); /* with the GIL, once (jit.c): 0/-1 */

/* ---- emit.c ---- */

/*
 * Emits fn as an internal, always-inline function `name` into mod with the
 * value types of sig (return type fn->ret), and, when fn->raises, a last
 * parameter `ptr raised` through which a raise stores its site's address
 * (an i64; the site is a constant string, see cc_raise_site) before the
 * kernel returns a zero.  0/-1 with
 * an exception.
 */
LLVMValueRef cc_emit_function(CcFunction *fn, const TsSignature *sig, LLVMModuleRef mod,
                              const char *name, int fastmath);
/* A call numbavec_raise(site) at b (declared in mod on first use). */
void em_call_raise(LLVMModuleRef mod, LLVMBuilderRef b, LLVMValueRef site);
/* The word a cuda ufunc's kernel stores its raise's status in: a global of
 * the module (addrspace 1, i32, 0), found by name after the kernel. */
#define CC_DEVICE_STATUS "numbavec_status"
LLVMValueRef em_device_status(LLVMModuleRef mod);

/* ---- cmath.c ---- */

/* 1 when op has a complex form (cmath.op, np.op of a complex value): one
 * of C99's complex functions. */
int cc_math_has_complex(CcMathOp op);

/*
 * Emits op (M_EXP ... M_ATANH: a CcMathOp with a complex form) of the
 * complex value z of kind k (TS_COMPLEX64/128) at b's insertion point.
 * NULL with an exception when the host has no ABI-safe way to call it.
 */
LLVMValueRef cc_emit_cmath(LLVMBuilderRef b, LLVMModuleRef mod, CcMathOp op, TsKind k,
                           LLVMValueRef z);

/* ---- dump.c ---- */

/* The operator as Python writes it: "+", "<=", "not", "and". */
const char *cc_op_name(CcOp op);
/* Prints fn's typed IR to stderr (NUMBAVEC_DUMP=ir); label names it. */
void cc_dump_ir(const CcFunction *fn, const char *label);
/*
 * Emits a gufunc kernel (sig->ret.kind == TS_VOID, cc_typeinfer'd) as an
 * internal, always-inline function `i32 name(params)`: a scalar argument
 * is one parameter of its value type, an array argument of ndim d is
 * (ptr data, i64 shape[d], i64 strides[d]), strides in bytes.  Bit k of
 * unit_stride says that array argument k's last dimension has unit
 * element stride (its stride parameter is then ignored, so LLVM sees
 * consecutive accesses).  Returns 0, or CC_STATUS_INDEX when an index was
 * out of bounds (fn->boundscheck): the kernel stops there.  NULL with an
 * exception on failure.
 */
enum {
    CC_STATUS_OK = 0,
    CC_STATUS_INDEX = 1,    /* IndexError */
    CC_STATUS_NOMEM = 2,    /* MemoryError: an allocation failed */
    CC_STATUS_SHAPE = 3,    /* ValueError: shapes that do not broadcast */
    CC_STATUS_VALUE = 4,    /* ValueError: a negative dimension, an empty reduction */
    CC_STATUS_KTH = 5,      /* ValueError: np.partition's kth out of bounds */
    CC_STATUS_QUANTILE = 6, /* ValueError: a quantile outside [0, 1] */
    CC_STATUS_ZERO = 7,     /* ZeroDivisionError: np.arange's step of zero */
    CC_STATUS_RAISE = 8,    /* the kernel's raise or assert: the site is the thread's */
    CC_STATUS_OVERFLOW = 9, /* OverflowError: a uint64 index past int64 */
    CC_STATUS_UNPACK = 10,  /* ValueError: an array unpacked into another number of names */
    CC_STATUS_TRUTH = 11,   /* ValueError: the truth value of an array not of one element */
    CC_STATUS_RESHAPE = 12, /* ValueError: a reshape to a shape of another size */
    /* device code's raise at site i (CcCompiled.raise_sites): a GPU cannot
     * hand the host a pointer, so the status word says which */
    CC_STATUS_USER = 32,
};
/* The exception type and message of a nonzero status (with the GIL); the
 * exception a kernel raised for CC_STATUS_RAISE.  Takes this thread's
 * raised site in every case (cc_take_raised). */
void cc_raise_status(int status);

/*
 * A kernel's raise statement (host code) calls numbavec_raise(site), which
 * keeps the first site of this thread; the thread that called the loop
 * takes it after the loop and makes the exception from it (cc_raise_site):
 * a site is the text "module\x1fqualname\x1frepr(args)" in the code's
 * constants.  The pool passes a worker's site to the thread that ran the
 * job (the lowest chunk's: the first element that raised).
 */
const char *cc_take_raised(void);     /* this thread's site, cleared; or NULL */
void cc_put_raised(const char *site); /* keeps it unless this thread has one */
/* The site of a loop that could not run for want of its machine code: the
 * exception is set already, in this thread's state. */
extern const char cc_site_failed[];
/* Sets the exception site names (with the GIL); returns -1. */
int cc_raise_site(const char *site);
/*
 * The site text a raise of cls compiles to: text ("module\x1fqualname\x1f
 * repr(args)"), its class kept for the process, so that the exception is
 * the class the kernel read when it compiled, whatever the name is bound
 * to later.  A class already kept under text that is not cls (a class of
 * the same name defined again) gets text + "\x1f<n>" instead; *generation
 * is that n (0 for text itself).  A string in arena, or NULL with an
 * exception.
 */
const char *cc_raise_register(CcArena *arena, PyObject *text, PyObject *cls, int *generation);

/*
 * What the emitted code may rely on in the machine that runs it.  The host
 * has LLVM's lowering of math intrinsics, the C library and FP status flags;
 * a GPU has libdevice and no flags.
 */
typedef struct CcEmitTarget {
    const char *name;
    /*
     * Writes into buf the external function that computes `base` (C's
     * double name without "llvm.": "exp", "atan2", "tgamma") on float kind
     * k, and returns buf; NULL keeps the host's choice (an LLVM intrinsic
     * or libm).  NULL pointer: the host everywhere.
     */
    const char *(*math_name)(const char *base, TsKind k, char *buf, size_t size);
    int fp_flags;  /* integer division by zero raises FE_DIVBYZERO */
    int c_complex; /* the C library's complex functions (cexp ...) can be called */
    /* a CPU: float64 arithmetic is as fast as float32's, and loops are
     * vectorized (llvm.fptosi.sat is spelled out, see convert.c) */
    int fast_f64;
} CcEmitTarget;

extern const CcEmitTarget cc_host_target;

/* cc_emit_function for another machine (cuda: libdevice, no flags). */
LLVMValueRef cc_emit_function_for(CcFunction *fn, const TsSignature *sig, LLVMModuleRef mod,
                                  const char *name, int fastmath, const CcEmitTarget *target);
/* A gufunc kernel (arrays in, an i32 status out) for the machine target
 * (a cuda kernel's math is libdevice's, as a cuda ufunc's is). */
LLVMValueRef cc_emit_gufunc_kernel(CcFunction *fn, const TsSignature *sig, LLVMModuleRef mod,
                                   const char *name, int fastmath, unsigned long long unit_stride,
                                   const CcEmitTarget *target);

/* ---- the host JIT: jit.c, passes.c, code.c (jit.h inside) ---- */

/* A module under construction in its own context: a thread-safe one for the
 * host JIT, or a plain one (tsctx NULL) that cc_module_dispose disposes. */
typedef struct CcModule {
    LLVMOrcThreadSafeContextRef tsctx;
    LLVMContextRef ctx;
    LLVMModuleRef mod;
    int tainted; /* LLVM threw in its context: never freed (guard.h) */
} CcModule;

/* Compiled code of one CcModule, kept alive by the objects that call it. */
typedef struct CcCode CcCode;

enum {
    CC_DUMP_IR = 1,
    CC_DUMP_LLVM = 2,
    CC_DUMP_OPT = 4,
    CC_DUMP_ASM = 8,
    CC_DUMP_PTX = 16,
    CC_DUMP_TIME = 32, /* a line per compilation: the time of each stage */
};
/* The stages of the compilation under way (ns), which cc_compile records
 * (numbavec/events.py) and NUMBAVEC_DUMP=time prints; passes.c and jit.c
 * add the host back end's own (timing.c). */
typedef enum {
    CC_T_LOWER,
    CC_T_TYPE,
    CC_T_EMIT,
    CC_T_OPT,
    CC_T_CODEGEN,
    CC_T_LINK,
    CC_T_N
} CcStage;
double cc_now_ns(void);
void cc_time_add(CcStage stage, double ns);
void cc_time_reset(void);
/* " name ms" for the stages [from, to) into line (timing.c). */
void cc_time_format(char *line, size_t size, int from, int to);
/* A compile record to numbavec.events: kind "signature" (origin: the
 * kernel's Origin or NULL; sig; where: back end and builder) or a "machine
 * code" kind; code identifies the CcCode.  Never fails: an exception on
 * the Python side is reported as unraisable. */
void cc_time_record(const char *kind, const char *name, PyObject *origin, const void *code,
                    const char *sig, const char *where, double t0, double total, int lazy, int hit);
/* The record of machine code made at a call (code: which; module: its
 * name; what: "machine code made" or "quick machine code made"), and its
 * line with NUMBAVEC_DUMP=time. */
void cc_time_made(const void *code, const char *module, const char *what, double t0);
int cc_dump_flags(void); /* from NUMBAVEC_DUMP */

int cc_jit_init(void);              /* idempotent; 0/-1 */
const char *cc_host_cpu_name(void); /* after cc_jit_init */
const char *cc_host_cpu_features(void);
int cc_jit_has_libmvec(void);               /* 1 when libmvec's vector math is on */
Py_ssize_t cc_jit_live_codes(void);         /* CcCode objects not yet freed (tests) */
Py_ssize_t cc_jit_compilations(void);       /* modules optimised + code-generated */
Py_ssize_t cc_jit_object_loads(void);       /* stored objects linked (cache hits) */
Py_ssize_t cc_jit_outlined(void);           /* functions long kernels were cut into */
Py_ssize_t cc_jit_pending(void);            /* modules whose machine code waits for a call */
Py_ssize_t cc_jit_quick_compilations(void); /* quick code made (cc_code_quick_entry) */

/* A new module with the host's triple and data layout.  0/-1. */
int cc_module_new(CcModule *m, const char *name);
/* Frees what m holds and zeroes it: again, or after cc_jit_add*, does nothing;
 * a tainted m is forgotten, not freed. */
void cc_module_dispose(CcModule *m);

/*
 * Verifies, optimises (kernel_pipeline in passes.c: inlining, loop vectorization, libmvec) and JIT-
 * compiles m, then resolves names[i] into addrs[i].  Consumes m (zeroed)
 * in every case.  Returns NULL with an exception on failure.  names need only be
 * unique within m: each is renamed "<name>.<id>" with a process-wide id
 * (all code shares one JITDylib); every other global of m must be internal.
 */
CcCode *cc_jit_add(CcModule *m, const char *const *names, void **addrs, int n);
/*
 * cc_jit_add for cacheable code.  key (may be NULL: as cc_jit_add) names the
 * code across processes: the exported names become "<name>.<key>", and code
 * already live under that key is shared instead of compiled again.  When
 * object is not NULL it receives the object file (a new bytes) to store, or
 * NULL when the code was shared.  The key must be a C identifier-like string
 * (hex digits); names[i] must then be the same in every process.
 */
CcCode *cc_jit_add_keyed(CcModule *m, const char *const *names, void **addrs, int n,
                         const char *key, PyObject **object);
/*
 * Links a stored object file (bytes[size], as cc_jit_add_keyed returned it
 * under the same key) without running any LLVM pass, and resolves names as
 * cc_jit_add_keyed did.  ir: its optimised IR text (copied), for
 * inspect_llvm.  NULL with an exception on failure.
 */
CcCode *cc_jit_add_object(const char *key, const char *bytes, size_t size, const char *ir,
                          const char *const *names, void **addrs, int n);
/*
 * Code generation on demand.  cc_jit_add_lazy verifies m (consumed in
 * every case) and keeps it: its optimisation, code generation and linking
 * wait for the first cc_code_entry, so that a decoration pays only for
 * typing and IR, and a signature never called never pays for its machine
 * code.  key: as cc_jit_add_keyed (shared code may already be made).  NULL
 * with an exception.
 */
CcCode *cc_jit_add_lazy(CcModule *m, const char *const *names, int n, const char *key);
/*
 * The address of entry i, made now if it waits: callable from any thread,
 * GIL held or not (making it takes the GIL, which serialises it with every
 * other use of the JIT; a thread that waits for the caller while holding the
 * GIL, as the pool's caller may, must therefore resolve it before handing out
 * work).  After the first time, one atomic load.  NULL with an exception set
 * (in this thread's state) if the code could not be made.
 */
void *cc_code_entry(CcCode *code, int i);
/*
 * As cc_code_entry, but while code's optimised machine code waits, the
 * address of its quick code instead: made without optimisation (about a
 * fifth of the time) and kept until code is freed.  For a caller that runs
 * cheap first calls there and asks cc_code_entry once the work warrants
 * the optimised code (tg_quick_first_loop).  Keyed code has none: it is
 * made and stored.
 */
void *cc_code_quick_entry(CcCode *code, int i);
int cc_code_made(CcCode *code); /* 1 once its machine code exists */
/* Stores made code: fn(ctx, object file, optimised IR), GIL held; 0/-1. */
typedef int (*CcStoreFn)(PyObject *ctx, PyObject *object, const char *ir);
/* Asks code, still waiting, to call store once made (a reference to ctx is
 * kept until then); code already made, or already asked, is left as is. */
void cc_code_store_when_made(CcCode *code, CcStoreFn store, PyObject *ctx);
void cc_code_free(CcCode *code); /* drops one use; the last removes the code */
/* Optimised IR text (owned by code), making code first if it waits; NULL
 * with an exception. */
const char *cc_code_llvm(CcCode *code);
/* The assembly of the optimised module: a new str, or NULL with an exception. */
PyObject *cc_code_asm(CcCode *code);

/* ---- driver.c ---- */

/*
 * A decorated function, parsed once (cc_kernel_new): what every compilation
 * of it reads.  The factory that made it owns it (cc_kernel_free), and
 * traverses and clears it with its own Python object.
 */
typedef struct CcKernel {
    PyObject *pyfunc;  /* owned */
    PyObject *funcdef; /* owned: its ast.FunctionDef */
    PyObject *lines;   /* owned: list of str, its source lines */
    PyObject *filename_obj, *name_obj;
    const char *filename, *name; /* in the two str above */
    int first_line, line_offset;
    int fastmath, boundscheck;
    PyObject *cache; /* owned: a numbavec.cache.FunctionCache, or NULL */
    /* owned: numbavec's Origin (numbavec/_capture.py), or NULL.  What the
     * kernel compiles from: each compilation asks it for its environment(),
     * (capture, function whose names the compiler resolves), and tells it
     * compiled(capture) once the signature compiled; the cache keys that
     * capture.  NULL: names resolve in pyfunc's own globals, as they are. */
    PyObject *origin;
    int lazy; /* host code may wait for its first call (cc_jit_add_lazy) */
} CcKernel;

/* source: (filename, first_line, lines, line_offset); cache: None or a
 * FunctionCache; origin: None or an Origin (all borrowed).  NULL with an
 * exception. */
CcKernel *cc_kernel_new(PyObject *pyfunc, PyObject *funcdef, PyObject *source, const char *name,
                        int fastmath, int boundscheck, PyObject *cache, PyObject *origin);
int cc_kernel_traverse(const CcKernel *k, visitproc visit, void *arg);
void cc_kernel_clear(CcKernel *k);
/* The decorated function (new reference), or None once the kernel is
 * cleared (the object that owns it is being collected). */
PyObject *cc_kernel_pyfunc(const CcKernel *k); /* its Python references only (GC) */
/* The kernel's Origin (new reference), or None: what numbavec's pickling
 * and inlining read, held here so that no attribute can replace it. */
PyObject *cc_kernel_origin(const CcKernel *k);
void cc_kernel_free(CcKernel *k);

enum { CC_MAXENTRIES = 4, CC_NAME_SIZE = 160 };

/* The entry points of one compiled signature: their symbols, and once
 * emitted, their functions. */
typedef struct CcEntries {
    int n;
    char names[CC_MAXENTRIES][CC_NAME_SIZE];
    LLVMValueRef fns[CC_MAXENTRIES];
} CcEntries;

typedef enum CcForm {
    CC_SCALAR_KERNEL, /* cc_emit_function: scalars in, a scalar out */
    CC_GUFUNC_KERNEL, /* cc_emit_gufunc_kernel: arrays, a status out */
} CcForm;

/*
 * What a factory wraps around a kernel.  ctx is the factory's own data
 * (a gufunc's layout); every function gets it back.
 */
typedef struct CcBuilder {
    const char *what; /* names the entries in cache keys: "ufunc-loop" */
    CcForm form;
    int nentries;
    const char *const *suffixes; /* entry k is named base + suffixes[k] (NULL: base) */
    /* The signature the kernel is typed with (NULL: sig itself); written:
     * the parameters the kernel assigns to.  0/-1. */
    int (*kernel_signature)(const void *ctx, const TsSignature *sig, const unsigned char *written,
                            TsSignature *ksig);
    /* CC_GUFUNC_KERNEL: the unit-stride masks of the versions to emit,
     * masks[0] the general one; returns how many (1 or 2). */
    int (*variants)(const void *ctx, const TsSignature *ksig, unsigned long long masks[2]);
    /* Emits the entries e->names into mod around kernels[0..nk) (only
     * LLVM-C: the kernel is already emitted).  0/-1. */
    int (*wrap)(const void *ctx, LLVMModuleRef mod, LLVMValueRef *kernels, int nk,
                const TsSignature *ksig, CcEntries *e);
    const void *ctx;
} CcBuilder;

/* One signature, compiled. */
typedef struct CcCompiled {
    TsSignature sig;                   /* as asked, its return type resolved */
    TsSignature ksig;                  /* what the kernel was typed with */
    unsigned char written[TS_MAXARGS]; /* parameters the kernel assigns to */
    PyObject *var_types;               /* owned: {variable: type name} */
    double cost_ns;                    /* rough cost of one kernel call */
    CcCode *code;                      /* host: the machine code */
    void *addrs[CC_MAXENTRIES];        /* host: the entries (NULL while code waits) */
    int lazy;                          /* host: code may wait for its first call */
    PyObject *text;                    /* PTX: the text (owned) */
    PyObject *llvm;                    /* PTX: the module's IR text (owned), or NULL */
    unsigned fails;                    /* bit k: the kernel may return status k */
    PyObject *raise_sites; /* device code: a tuple, site texts by status - CC_STATUS_USER */
} CcCompiled;

/* Where compiled code runs: the host JIT (jit.c), or PTX (cuda's ptx.c). */
typedef struct CcBackend {
    const char *name;    /* in cache keys and error messages: "host", "cuda" */
    const char *variant; /* in cache keys: what else the code depends on, or NULL */
    const CcEmitTarget *target;
    int name_errors; /* a failure after typing names the kernel and signature */
    int (*module_new)(const struct CcBackend *be, CcModule *m, const char *name);
    /* Compiles m (consumed in every case) with its entries into out.  key
     * (may be NULL) names code that may be stored; *blob (when blob is not
     * NULL) then receives what to store, or NULL.  0/-1. */
    int (*finish)(const struct CcBackend *be, CcModule *m, const CcEntries *e, const char *key,
                  PyObject **blob, CcCompiled *out);
    /* Links a stored blob (and its IR text) instead; NULL: no cache.  0/-1. */
    int (*load)(const struct CcBackend *be, const char *key, PyObject *blob, const char *ir,
                const CcEntries *e, CcCompiled *out);
    const void *job; /* the back end's own options */
} CcBackend;

extern const CcBackend cc_host_backend;

/*
 * Compiles sig of k (lower -> typeinfer -> emit -> b's entries -> be), through
 * k's cache when it has one and be can load; the entries are named base +
 * b's suffixes.  0, or -1 with an exception (out cleared).
 */
int cc_compile(CcKernel *k, const TsSignature *sig, const CcBuilder *b, const CcBackend *be,
               const char *base, CcCompiled *out);
void cc_compiled_clear(CcCompiled *c);
/* Adds to written[TS_MAXARGS] the parameters fn's body stores into, directly
 * or through views kept in variables. */
void cc_written_params(const CcFunction *fn, unsigned char *written);

#endif /* NV_COMPILER_H */
