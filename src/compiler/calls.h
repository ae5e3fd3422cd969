/*
 * calls.h - the builtin functions a kernel may call, as one table.
 *
 * builtins.c lists every builtin (name as users write it, flavor, numeric
 * operation, arity).  Its flavor selects one row of cc_flavor_ops, which
 * holds what the two passes do with such a call:
 *
 *   type   typecalls.c: the result type, given t, the promotion of the
 *          arguments' types (typeinfer has already reported UNKNOWN
 *          arguments, tuples, and ldexp's exponent);
 *   emit   emitcall.c: the value, given out, the storage kind of the
 *          result that typeinfer chose;
 *   fit    the type Python int constant arguments are fitted to.
 *
 * A new builtin of an existing flavor is one row in builtins.c.  A new
 * flavor is an enumerator in compiler.h, a type and an emit function
 * (ti_ in typecalls.c, ec_ in emitcall.c; an array function's in its
 * file of arrays/) and their row in builtins.c.
 */
#ifndef NV_COMPILER_CALLS_H
#define NV_COMPILER_CALLS_H

#include "compiler/emit.h"

typedef struct Infer Infer; /* the type inference's pass state (typeinfer.h) */

/* What a call's Python int constant arguments are fitted to. */
typedef enum CcArgFit {
    FIT_RESULT,   /* the result type */
    FIT_FLOAT,    /* a weak float: math.exp(1) computes in float */
    FIT_TRUTH,    /* nothing: bool(x) takes its truth */
    FIT_BY_VALUE, /* nothing but storage: min/max compare by value */
} CcArgFit;

typedef int (*CcCallType)(Infer *in, CcNode *n, const CcBuiltin *b, const CcType *t,
                          const CcType **out);
typedef LLVMValueRef (*CcCallEmit)(Emit *E, CcNode *n, const CcBuiltin *b, TsKind out);

typedef struct CcFlavorOps {
    CcCallType type;
    CcCallEmit emit;
    CcArgFit fit;
} CcFlavorOps;

extern const CcFlavorOps cc_flavor_ops[FL_COUNT];

/* ---- typecalls.c: a call's result type, by flavor (0/-1) ---- */

int ti_abs(Infer *in, CcNode *n, const CcBuiltin *b, const CcType *t, const CcType **out);
int ti_minmax(Infer *in, CcNode *n, const CcBuiltin *b, const CcType *t, const CcType **out);
int ti_int_float(Infer *in, CcNode *n, const CcBuiltin *b, const CcType *t, const CcType **out);
int ti_complex(Infer *in, CcNode *n, const CcBuiltin *b, const CcType *t, const CcType **out);
int ti_predicate(Infer *in, CcNode *n, const CcBuiltin *b, const CcType *t, const CcType **out);
int ti_cast(Infer *in, CcNode *n, const CcBuiltin *b, const CcType *t, const CcType **out);
int ti_math(Infer *in, CcNode *n, const CcBuiltin *b, const CcType *t, const CcType **out);
int ti_math_int(Infer *in, CcNode *n, const CcBuiltin *b, const CcType *t, const CcType **out);
int ti_cmath(Infer *in, CcNode *n, const CcBuiltin *b, const CcType *t, const CcType **out);
int ti_round(Infer *in, CcNode *n, const CcBuiltin *b, const CcType *t, const CcType **out);
int ti_np_sign(Infer *in, CcNode *n, const CcBuiltin *b, const CcType *t, const CcType **out);
int ti_gcd(Infer *in, CcNode *n, const CcBuiltin *b, const CcType *t, const CcType **out);
int ti_np(Infer *in, CcNode *n, const CcBuiltin *b, const CcType *t, const CcType **out);
int ti_part(Infer *in, CcNode *n, const CcBuiltin *b, const CcType *t, const CcType **out);
int ti_same(Infer *in, CcNode *n, const CcBuiltin *b, const CcType *t, const CcType **out);
int ti_where(Infer *in, CcNode *n, const CcBuiltin *b, const CcType *t, const CcType **out);
/* array functions (np.zeros, np.sum ...): typed by arrays/views.c's ti_array_function,
 * not through the promotion of their arguments; this row only says so */
int ti_array_call(Infer *in, CcNode *n, const CcBuiltin *b, const CcType *t, const CcType **out);

/* ---- emitcall.c: a call's value, by flavor (NULL with an error) ---- */

LLVMValueRef ec_abs(Emit *E, CcNode *n, const CcBuiltin *b, TsKind out);
LLVMValueRef ec_minmax(Emit *E, CcNode *n, const CcBuiltin *b, TsKind out);
LLVMValueRef ec_convert(Emit *E, CcNode *n, const CcBuiltin *b, TsKind out);
LLVMValueRef ec_bool(Emit *E, CcNode *n, const CcBuiltin *b, TsKind out);
LLVMValueRef ec_complex(Emit *E, CcNode *n, const CcBuiltin *b, TsKind out);
LLVMValueRef ec_part(Emit *E, CcNode *n, const CcBuiltin *b, TsKind out);
LLVMValueRef ec_cmath(Emit *E, CcNode *n, const CcBuiltin *b, TsKind out);
LLVMValueRef ec_round(Emit *E, CcNode *n, const CcBuiltin *b, TsKind out);
LLVMValueRef ec_sign(Emit *E, CcNode *n, const CcBuiltin *b, TsKind out);
LLVMValueRef ec_gcd(Emit *E, CcNode *n, const CcBuiltin *b, TsKind out);
LLVMValueRef ec_np_minmax(Emit *E, CcNode *n, const CcBuiltin *b, TsKind out);
LLVMValueRef ec_math(Emit *E, CcNode *n, const CcBuiltin *b, TsKind out);
LLVMValueRef ec_where(Emit *E, CcNode *n, const CcBuiltin *b, TsKind out);
LLVMValueRef ec_clip(Emit *E, CcNode *n, const CcBuiltin *b, TsKind out);
/* arrays/: np.zeros(...), np.sum(a) ... */
LLVMValueRef ec_array_call(Emit *E, CcNode *n, const CcBuiltin *b, TsKind out);
LLVMValueRef ec_sort_call(Emit *E, CcNode *n, const CcBuiltin *b, TsKind out);
LLVMValueRef ec_dot_call(Emit *E, CcNode *n, const CcBuiltin *b, TsKind out);
LLVMValueRef ec_histogram_call(Emit *E, CcNode *n, const CcBuiltin *b, TsKind out);
LLVMValueRef ec_arange_call(Emit *E, CcNode *n, const CcBuiltin *b, TsKind out);
/* nprandom.c: np.random.seed(), random(), normal() ... (typed by ti_random_call) */
LLVMValueRef ec_random_call(Emit *E, CcNode *n, const CcBuiltin *b, TsKind out);
int ti_random_call(Infer *in, CcNode *n, const CcBuiltin *b, const CcType **out);

#endif /* NV_COMPILER_CALLS_H */
