/*
 * branchhint.c - branch weights on the `if` of a running extremum, which
 * keep it a branch (em_extremum_if and em_branch_rarely, which emit.c's
 * if_stmt calls).
 *
 * `if x > best: best = x` in a loop (a maximum, an argmax, numbagg's
 * nanmax and nanargmax) is taken rarely: on n values in random order the
 * running maximum changes about ln(n) times.  Unweighted, SimplifyCFG
 * speculates the block into selects, and code generation keeps them
 * branch-free: `best` is then carried from one element to the next through
 * the compare and the select, and the loop runs at that chain's latency
 * (the quiet compare into a mask and a masked move, about 6 cycles an
 * element; Numba's maxsd, 4, but it raises the invalid flag on a NaN).
 * Weighted (the then-block taken once in CC_RARE + 1, beyond LLVM's
 * predictable-branch threshold of 99%), SimplifyCFG still makes the
 * selects in LLVM 19, but they keep the weights, and CodeGenPrepare turns
 * a select with predictable weights back into a branch; prepare.c leaves
 * their compare scalar (vucomisd and a jump, quiet).  Then nothing waits
 * on `best`: a float argmax ran 3.6x faster (1.9x Numba's speed), numbagg's
 * nanmax 7.7x.  Data that sets a new extreme at random half the time (a
 * rising trend under noise) mispredicts instead; that is the price.
 *
 * Only where the select form gains nothing: the host (a GPU's selects are
 * cheap, its compares integer keys), a float variable (an integer one's
 * compare and cmov cost a cycle or two; left as it was), not under
 * fast-math (whose float maximum reductions vectorize), an `if` without
 * else in a loop whose condition compares that variable and whose block
 * assigns it.
 */
#include "compiler/emit.h"

enum { CC_RARE = 2000 };

/* Whether block `then` assigns v in one of its own statements. */
static int
assigns(const CcNode *then, const CcVar *v)
{
    if (then == NULL || then->kind != ND_BLOCK) {
        return 0;
    }
    for (int i = 0; i < then->nargs; i++) {
        const CcNode *s = then->args[i];
        if (s->kind == ND_ASSIGN && s->var == v) {
            return 1;
        }
        for (int k = 0; s->kind == ND_UNPACK && k < s->nargs; k++) {
            if (s->vars[k] == v) { /* best, at = x, i */
                return 1;
            }
        }
    }
    return 0;
}

/* Whether e is a float variable that `then` assigns. */
static int
assigned_float(const CcNode *e, const CcNode *then)
{
    return e->kind == ND_VAR && e->var != NULL && e->ty != NULL && !cc_is_array(e->ty)
           && ts_is_float(cc_storage(e->ty)) && assigns(then, e->var);
}

/* Whether condition e (a compare, `not`, `and`/`or` of them) orders a float
 * variable that `then` assigns against something. */
static int
orders_assigned(const CcNode *e, const CcNode *then)
{
    switch (e->kind) {
    case ND_COMPARE:
        for (int k = 0; k + 1 < e->nargs; k++) {
            int relational = e->ops[k] == OP_LT || e->ops[k] == OP_LE || e->ops[k] == OP_GT
                             || e->ops[k] == OP_GE;
            if (relational
                && (assigned_float(e->args[k], then) || assigned_float(e->args[k + 1], then))) {
                return 1;
            }
        }
        return 0;
    case ND_BOOLOP:
        for (int i = 0; i < e->nargs; i++) {
            if (orders_assigned(e->args[i], then)) {
                return 1;
            }
        }
        return 0;
    case ND_UNARY:
        return e->op == OP_NOT && orders_assigned(e->lhs, then);
    default:
        return 0;
    }
}

static int
is_empty_block(const CcNode *b)
{
    return b == NULL || (b->kind == ND_BLOCK && b->nargs == 0);
}

int
em_extremum_if(Emit *E, const CcNode *n)
{
    return E->target == &cc_host_target && !E->fastmath && E->depth > 0 && is_empty_block(n->els)
           && orders_assigned(n->cond, n->then);
}

static void
rarely_taken(Emit *E, LLVMValueRef br)
{
    LLVMTypeRef i32 = LLVMInt32TypeInContext(E->ctx);
    static const char kind[] = "branch_weights";
    LLVMMetadataRef ops[3] = {
        LLVMMDStringInContext2(E->ctx, kind, sizeof(kind) - 1),
        LLVMValueAsMetadata(LLVMConstInt(i32, 1, 0)),
        LLVMValueAsMetadata(LLVMConstInt(i32, CC_RARE, 0)),
    };
    LLVMSetMetadata(br, LLVMGetMDKindIDInContext(E->ctx, "prof", 4),
                    LLVMMetadataAsValue(E->ctx, LLVMMDNodeInContext2(E->ctx, ops, 3)));
}

/* Jumps to then where cond holds, to els where not, every jump weighted
 * rarely taken.  `and`/`or` jump from each operand in turn (Python's
 * order, each evaluated only where the ones before did not decide): as one
 * value, the operands' computed conjunction or disjunction, every operand
 * would be evaluated at every element (numbagg's nanargmax, `ai > amax or
 * (idx == -1 and not np.isnan(ai))`, ran at 0.73 of Numba's speed so). */
int
em_branch_rarely(Emit *E, CcNode *cond, LLVMBasicBlockRef then, LLVMBasicBlockRef els)
{
    if (cond->kind == ND_BOOLOP) {
        for (int i = 0; i < cond->nargs; i++) {
            int last = i == cond->nargs - 1;
            LLVMBasicBlockRef next = last ? NULL : em_new_block(E, "bool.next");
            LLVMBasicBlockRef t = last || cond->op == OP_OR ? then : next;
            LLVMBasicBlockRef f = last || cond->op == OP_AND ? els : next;
            if (em_branch_rarely(E, cond->args[i], t, f) < 0) {
                return -1;
            }
            if (!last) {
                LLVMPositionBuilderAtEnd(E->b, next);
            }
        }
        return 0;
    }
    LLVMValueRef c = em_expr(E, cond);
    if (c == NULL) {
        return -1;
    }
    rarely_taken(E, LLVMBuildCondBr(E->b, em_truthy(E, c, cc_storage(cond->ty)), then, els));
    return 0;
}
