/*
 * casting.c - NumPy's casting rules where the kernel language applies them
 * at compile time.  Types are static in a kernel, so a cast NumPy would
 * refuse when the kernel runs is refused when it is typed (typeinfer.c
 * calls in here), with the rule named and what to write instead.
 *
 * The one rule so far: an in-place operator on an array (t += v, t[1:] *= v,
 * t[mask] -= v) is NumPy's ufunc with out=t and casting='same_kind'.  Its
 * result, of the operands' promoted kind, must cast back into t within its
 * kind or upward (bool < unsigned < signed < float < complex): float64 into
 * float32 is allowed, float64 into int64 is not (NumPy raises
 * UFuncTypeError).  An element target (t[i] += v) is a scalar assignment,
 * cast as every assignment is.
 */
#include "compiler/compiler.h"

#include <stdio.h>

/* The order of kinds in NumPy's same_kind rule. */
static int
kind_rank(TsKind k)
{
    if (k == TS_BOOL) {
        return 0;
    }
    if (ts_is_int(k)) {
        return ts_is_signed(k) ? 2 : 1;
    }
    return ts_is_float(k) ? 3 : 4;
}

int
cc_can_cast_same_kind(TsKind from, TsKind to)
{
    return kind_rank(from) <= kind_rank(to);
}

/* How NumPy is spelled for kind k in a suggestion: np.float32, np.bool_. */
static const char *
np_name(TsKind k, char *buf, size_t size)
{
    snprintf(buf, size, "np.%s%s", ts_kind_name(k), k == TS_BOOL ? "_" : "");
    return buf;
}

/* The target of the in-place statement n and what it reads, as the
 * message writes them: t and t for t op= v on an array variable (typed as
 * t[...] op= v, n->index 2), else t[...] for both. */
static void
target_text(const CcNode *n, char *target, char *read, size_t size)
{
    const CcNode *t = n->lhs;
    const char *name = t->lhs != NULL && t->lhs->kind == ND_VAR ? t->lhs->var->name : "a";
    snprintf(target, size, "%s[...]", name);
    snprintf(read, size, n->index == 2 ? "%s" : "%s[...]", name);
}

int
cc_check_inplace(const CcFunction *fn, const CcNode *n, TsKind target, TsKind result)
{
    if (cc_can_cast_same_kind(result, target)) {
        return 0;
    }
    char lhs[96], read[96], to[32];
    const char *op = n->rhs->kind == ND_BINOP ? cc_op_name(n->rhs->op) : "op";
    target_text(n, lhs, read, sizeof(lhs));
    return cc_error(fn, n->loc,
                    "'%s=' on an array of %s works in place, and its result is %s: NumPy casts "
                    "an in-place result back only within its kind or to a larger kind "
                    "(casting='same_kind'), and refuses %s into %s (UFuncTypeError).  Write "
                    "the cast out, as in %s = (%s %s value).astype(%s), or keep the result "
                    "in an array of %s",
                    op, ts_kind_name(target), ts_kind_name(result), ts_kind_name(result),
                    ts_kind_name(target), lhs, read, op, np_name(target, to, sizeof(to)),
                    ts_kind_name(result));
}
