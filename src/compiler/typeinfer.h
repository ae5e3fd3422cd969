/*
 * typeinfer.h - what the type inference's files share: the pass state
 * (Infer) and the ti_ helpers they call across.
 *
 * The pass is typeinfer.c (the solver: expressions, statements, the fixed
 * point), typecalls.c (the builtin functions' rules, by flavor: calls.h's
 * rows) and the array rules, each beside its emission in arrays/ (their
 * entry points are arrays/arrays.h's).
 */
#ifndef NV_COMPILER_TYPEINFER_H
#define NV_COMPILER_TYPEINFER_H

#include "compiler/calls.h"

struct Infer {
    CcFunction *fn;
    int changed;          /* a variable's type grew in this pass */
    int final;            /* last pass: unknown types are errors, constants fitted */
    int backward;         /* this pass visits statements last first */
    const CcType *ret_as; /* final pass: the kernel's return type, if declared */
    const CcType *ret;    /* promotion of the returned values */
    CcNode *bare_return;  /* a `return` without a value, if any */
    CcNode *last_return;  /* the kernel's last `return value`: where errors point */
    int gufunc;           /* a guvectorize kernel: arrays may be allocated */
    /* the elementwise operation being typed took an array operand: the
     * largest ndim of those (-1: none); its operands are typed by element */
    int lift;
    int inlining;     /* typing an inlined function's body: its errors are its call's */
    PyObject *errors; /* the TypingErrors of statements that failed (cc_keep_error) */
};

/* A sentinel for "not known yet" (a variable not typed in this pass). */
#define UNKNOWN NULL

/* ---- typeinfer.c ---- */

int ti_type_error(Infer *in, CcNode *n, const char *what, const CcType *a, const CcType *b);
int ti_is_tuple(const CcType *t);
/* A Python int constant whose truth alone is used (if 2**100:, not G,
 * bool(G)): held as 1 when it lies outside int64 (and so is nonzero), where
 * its low 64 bits could be 0. */
void ti_truth_only(CcNode *n);
int ti_is_complex_type(const CcType *t);
int ti_is_integral(const CcType *t);
int ti_is_bool(const CcType *t);
/*
 * A Python int constant n used as a value of type `as` (the type its
 * parent converts it to), in the final pass: it must fit an integer kind,
 * as NumPy 2 requires (np.int8(1) + 300 raises OverflowError); toward a
 * float or complex it becomes a float, rounded from its exact value (the
 * kernel's int64 would wrap 10**20).  A bool takes its truth.  Other nodes,
 * and earlier passes: nothing.  0/-1.
 */
int ti_fit_const(Infer *in, CcNode *n, const CcType *as);
/*
 * A Python int constant n that Python's min/max may return as it is, held in
 * the kernel's result of type `as`: an int64, or the upper half of uint64
 * for a uint64 result (by value comparison is emit.c's).  0/-1.
 */
int ti_held_const(Infer *in, CcNode *n, const CcType *as);
/* ti_fit_const for each of args[0..nargs). */
int ti_fit_consts(Infer *in, CcNode **args, int nargs, const CcType *as);
/* Promotes the types of args[0..n) (UNKNOWN if any is). */
int ti_promote_all(Infer *in, CcNode **args, int nargs, const CcType **out);
int ti_promote_typed(Infer *in, CcNode **args, const CcType **types, int nargs, const CcType **out);
int ti_expr(Infer *in, CcNode *n, const CcType **out);

/* ---- typecalls.c ---- */

/* call_type, then its Python int constant arguments fitted (ldexp's
 * exponent and round's ndigits are ints of their own). */
int ti_call(Infer *in, CcNode *n, const CcType **out);

#endif /* NV_COMPILER_TYPEINFER_H */
