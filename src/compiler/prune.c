/*
 * prune.c - conditions known when the kernel is compiled, and the branch
 * they rule out.
 *
 * Numba types only the branch an `if` takes when its condition is a
 * constant of the compilation (its dead-branch pruning), and generic code
 * leans on that: a helper that reads a[0] for a 1-d argument and a[0, 0]
 * for a 2-d one (`if a.ndim == 1:`), a global switch (`if DEBUG:`) around
 * what the kernel language lacks, a dtype test (`if a.dtype.kind == 'f':`).
 * typeinfer.c asks cc_known_truth of an if's (or a conditional
 * expression's) condition once it is typed, and where the answer is known
 * types and keeps the branch taken alone.  Known are: constants (numbers,
 * bools, None), an array's ndim (a tuple's length) and its (or a
 * scalar's) dtype tests (once its type is), comparisons of those, and
 * not/and/or of known truths; anything else is known only when the kernel
 * runs.  Nothing known has a side effect, so nothing is lost by not
 * emitting it.
 */
#include "compiler/typeinfer.h"

/* An integer known when compiling: a constant, an array's (a scalar's)
 * ndim or a tuple's length.  1 and *v, or 0. */
static int
known_int(const CcNode *n, long long *v)
{
    if (n->kind == ND_CONST && n->ty != UNKNOWN && ti_is_integral(n->ty) && !n->big) {
        *v = n->ival;
        return 1;
    }
    if (n->kind == ND_ARRAYATTR && n->index == AA_NDIM && n->lhs->ty != UNKNOWN
        && n->lhs->ty->kind != CT_TUPLE) {
        *v = cc_is_array(n->lhs->ty) ? n->lhs->ty->n : 0; /* a scalar's is 0 */
        return 1;
    }
    if (n->kind == ND_ARRAYATTR && n->index == AA_LEN && n->lhs->ty != UNKNOWN
        && n->lhs->ty->kind == CT_TUPLE) {
        *v = n->lhs->ty->n; /* len of a tuple */
        return 1;
    }
    return 0;
}

static int
compare_known(const CcNode *n)
{
    long long a, b;
    int truth = 1;
    for (int i = 0; i + 1 < n->nargs; i++) {
        if (!known_int(n->args[i], &a) || !known_int(n->args[i + 1], &b)) {
            return -1;
        }
        switch (n->ops[i]) {
        case OP_EQ:
            truth &= a == b;
            break;
        case OP_NE:
            truth &= a != b;
            break;
        case OP_LT:
            truth &= a < b;
            break;
        case OP_LE:
            truth &= a <= b;
            break;
        case OP_GT:
            truth &= a > b;
            break;
        case OP_GE:
            truth &= a >= b;
            break;
        default:
            return -1;
        }
    }
    return truth;
}

int
cc_dtype_test(const CcNode *n, TsKind k)
{
    int letter = k == TS_BOOL       ? 0
                 : ts_is_complex(k) ? 4
                 : ts_is_float(k)   ? 3
                 : ts_is_signed(k)  ? 1
                                    : 2;
    long long value = n->ival & ~CC_DTYPE_NEGATE;
    int yes = n->index == AA_KIND_IS ? (int)((value >> letter) & 1) : value == (long long)k;
    return yes ^ ((n->ival & CC_DTYPE_NEGATE) != 0);
}

/* a dtype test, once a's element kind (or a scalar's kind) is typed */
static int
dtype_known(const CcNode *n)
{
    const CcType *a = n->lhs->ty;
    if (a == UNKNOWN || a->kind == CT_TUPLE || a->scalar == TS_INFER) {
        return -1;
    }
    return cc_dtype_test(n, a->scalar);
}

void
cc_keep_branch(CcNode *n, CcNode *taken, CcNode *empty)
{
    empty->nargs = 0;
    n->then = taken != NULL ? taken : empty;
    n->els = empty;
    *n->cond = (CcNode){.kind = ND_CONST,
                        .loc = n->cond->loc,
                        .ty = cc_scalar_type(TS_BOOL),
                        .ival = 1,
                        .fval = 1.0};
}

int
cc_known_truth(const CcNode *n)
{
    switch (n->kind) {
    case ND_CONST:
        if (n->ty == UNKNOWN || ti_is_complex_type(n->ty)) {
            return -1;
        }
        return ti_is_integral(n->ty) ? n->big || n->ival != 0 : n->fval != 0.0;
    case ND_ARRAYATTR:
        return n->index == AA_KIND_IS || n->index == AA_DTYPE_IS ? dtype_known(n) : -1;
    case ND_COMPARE:
        return compare_known(n);
    case ND_UNARY: {
        int t = n->op == OP_NOT ? cc_known_truth(n->lhs) : -1;
        return t < 0 ? -1 : !t;
    }
    case ND_BOOLOP: {
        /* and: known false at a known false operand, true when all are */
        int all = 1;
        for (int i = 0; i < n->nargs; i++) {
            int t = cc_known_truth(n->args[i]);
            if (t >= 0 && t == (n->op == OP_OR)) {
                return t; /* decided (operands before it known too, below) */
            }
            if (t < 0) {
                return -1;
            }
            all &= t == (n->op != OP_OR);
        }
        return n->op == OP_OR ? !all : all;
    }
    default:
        return -1;
    }
}
