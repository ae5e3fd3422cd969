/*
 * emit.c - typed IR -> one LLVM function per kernel signature: the pass.
 *
 * The kernel becomes `internal alwaysinline <ret> name(<args>)`; the loop
 * wrappers of vectorize/loops.c call it and LLVM inlines it there, so the
 * kernel's body is vectorized inside each loop.  Variables are allocas in
 * the entry block (mem2reg promotes them).  Values are held in their
 * storage kind (cc_storage).  This file walks the tree: expressions (exact
 * int64/uint64 comparisons, Python's and/or value semantics), statements,
 * the function and gufunc kernels; the operators are arith.c's, the builtin
 * calls emitcall.c's and the conversions convert.c's (emit.h).
 */
#include "compiler/emit.h"

#include <string.h>

#include <llvm/Config/llvm-config.h>

/* The host: LLVM's math intrinsics and the C library, real FP flags. */
const CcEmitTarget cc_host_target = {"host", NULL, 1, 1, 1};

/* ---- blocks ---- */

/* A builder at the start of the entry block (the caller disposes of it). */
LLVMBuilderRef
em_entry_builder(Emit *E)
{
    LLVMBasicBlockRef entry = LLVMGetEntryBasicBlock(E->func);
    LLVMBuilderRef at = LLVMCreateBuilderInContext(E->ctx);
    LLVMPositionBuilder(at, entry, LLVMGetFirstInstruction(entry));
    return at;
}

LLVMValueRef
em_entry_alloca(Emit *E, LLVMTypeRef t, const char *name)
{
    LLVMBuilderRef at = em_entry_builder(E);
    LLVMValueRef slot = LLVMBuildAlloca(at, t, name);
    LLVMDisposeBuilder(at);
    return slot;
}

/* ---- expressions ---- */

/* Emits n and converts it to kind k. */
LLVMValueRef
em_expr_as(Emit *E, CcNode *n, TsKind k)
{
    LLVMValueRef v = em_expr(E, n);
    return v ? em_convert(E, v, cc_storage(n->ty), k) : NULL;
}

static LLVMValueRef
binop(Emit *E, CcNode *n)
{
    TsKind k = cc_storage(n->ty);
    LLVMValueRef a = em_expr_as(E, n->lhs, k);
    LLVMValueRef b = a ? em_expr_as(E, n->rhs, k) : NULL;
    if (b == NULL) {
        return NULL;
    }
    LLVMValueRef r = em_arith(E, n->op, k, a, b);
    if (r == NULL) {
        cc_error(E->fn, n->loc, "internal error: operator not emitted");
    }
    return r;
}

static LLVMValueRef
unary(Emit *E, CcNode *n)
{
    TsKind k = cc_storage(n->ty);
    if (n->op == OP_NOT) {
        LLVMValueRef v = em_expr(E, n->lhs);
        return v ? LLVMBuildNot(E->b, em_truthy(E, v, cc_storage(n->lhs->ty)), "not") : NULL;
    }
    LLVMValueRef v = em_expr_as(E, n->lhs, k);
    if (v == NULL || n->op == OP_POS) {
        return v;
    }
    if (n->op == OP_INVERT) {
        return LLVMBuildNot(E->b, v, "inv");
    }
    if (ts_is_complex(k)) {
        return em_make_complex(E, k, LLVMBuildFNeg(E->b, em_re_of(E, v), "neg.re"),
                               LLVMBuildFNeg(E->b, em_im_of(E, v), "neg.im"));
    }
    return ts_is_float(k) ? LLVMBuildFNeg(E->b, v, "neg") : LLVMBuildNeg(E->b, v, "neg");
}

LLVMIntPredicate
em_int_pred(CcOp op, int is_signed)
{
    switch (op) {
    case OP_EQ:
        return LLVMIntEQ;
    case OP_NE:
        return LLVMIntNE;
    case OP_LT:
        return is_signed ? LLVMIntSLT : LLVMIntULT;
    case OP_LE:
        return is_signed ? LLVMIntSLE : LLVMIntULE;
    case OP_GT:
        return is_signed ? LLVMIntSGT : LLVMIntUGT;
    default:
        return is_signed ? LLVMIntSGE : LLVMIntUGE;
    }
}

static LLVMRealPredicate
real_pred(CcOp op)
{
    switch (op) {
    case OP_EQ:
        return LLVMRealOEQ;
    case OP_NE:
        return LLVMRealUNE; /* NaN != NaN */
    case OP_LT:
        return LLVMRealOLT;
    case OP_LE:
        return LLVMRealOLE;
    case OP_GT:
        return LLVMRealOGT;
    default:
        return LLVMRealOGE;
    }
}

static int
is_big_const(const CcNode *node)
{
    return node != NULL && node->kind == ND_CONST && node->big;
}

/* An integral value as an integer of `bits` (64 or 128) by value: bools and
 * unsigned kinds zero-extended, signed ones sign-extended; a Python int
 * constant outside int64 (node, may be NULL) is its own int128. */
LLVMValueRef
em_wide_int_of(Emit *E, const CcNode *node, LLVMValueRef v, TsKind k, unsigned bits)
{
    LLVMTypeRef t = LLVMIntTypeInContext(E->ctx, bits);
    if (is_big_const(node)) {
        uint64_t words[2] = {(uint64_t)node->ival, (uint64_t)node->ihigh};
        return LLVMConstIntOfArbitraryPrecision(t, 2, words);
    }
    if ((unsigned)ts_bits(k) == bits && k != TS_BOOL) {
        return v;
    }
    if (k == TS_BOOL || !ts_is_signed(k)) {
        return LLVMBuildZExt(E->b, v, t, "wide");
    }
    return LLVMBuildSExt(E->b, v, t, "wide");
}

static int
integral_kind(TsKind k)
{
    return k == TS_BOOL || ts_is_int(k);
}

/*
 * a op b.  Integers compare by value, as NumPy 2 does: a Python int against
 * a typed integer (uint8 x > -1 is true, not x > 255), or signed against
 * unsigned (int8 x < uint64 y), exactly in int128 rather than through the
 * promoted kind (which may be float64).  na, nb: the operands' nodes when
 * known (a Python int constant outside int64 has its own value), or NULL.
 */
static LLVMValueRef
compare_values(Emit *E, CcOp op, LLVMValueRef a, const CcType *ta, const CcNode *na, LLVMValueRef b,
               const CcType *tb, const CcNode *nb)
{
    TsKind ka = cc_storage(ta), kb = cc_storage(tb);
    TsKind k = cc_storage(cc_promote(ta, tb));
    int weak = ta->kind == CT_WEAK_INT || tb->kind == CT_WEAK_INT;
    int mixed = ka != TS_BOOL && kb != TS_BOOL && ts_is_signed(ka) != ts_is_signed(kb);
    if (integral_kind(ka) && integral_kind(kb) && (weak || mixed)) {
        /* int64 holds both values unless a uint64 or a larger constant is involved */
        unsigned bits =
            ka == TS_UINT64 || kb == TS_UINT64 || is_big_const(na) || is_big_const(nb) ? 128 : 64;
        return LLVMBuildICmp(E->b, em_int_pred(op, 1), em_wide_int_of(E, na, a, ka, bits),
                             em_wide_int_of(E, nb, b, kb, bits), "cmp");
    }
    a = em_convert(E, a, ka, k);
    b = em_convert(E, b, kb, k);
    if (ts_is_complex(k)) {
        TsKind p = em_part_kind(k);
        LLVMValueRef re = compare_values(E, op, em_re_of(E, a), cc_scalar_type(p), NULL,
                                         em_re_of(E, b), cc_scalar_type(p), NULL);
        LLVMValueRef im = compare_values(E, op, em_im_of(E, a), cc_scalar_type(p), NULL,
                                         em_im_of(E, b), cc_scalar_type(p), NULL);
        return op == OP_EQ ? LLVMBuildAnd(E->b, re, im, "ceq") : LLVMBuildOr(E->b, re, im, "cne");
    }
    if (ts_is_float(k)) {
        return em_quiet_fcmp(E, real_pred(op), a, b, "cmp");
    }
    return LLVMBuildICmp(E->b, em_int_pred(op, k != TS_BOOL && ts_is_signed(k)), a, b, "cmp");
}

/* a < b < c: each operand evaluated once, stopping at the first false. */
static LLVMValueRef
compare(Emit *E, CcNode *n)
{
    LLVMValueRef prev = em_expr(E, n->args[0]);
    if (prev == NULL) {
        return NULL;
    }
    if (n->nargs == 2) {
        LLVMValueRef b = em_expr(E, n->args[1]);
        return b ? compare_values(E, n->ops[0], prev, n->args[0]->ty, n->args[0], b, n->args[1]->ty,
                                  n->args[1])
                 : NULL;
    }
    LLVMBasicBlockRef done = em_new_block(E, "cmp.done");
    LLVMValueRef *phi_vals = cc_alloc(E->fn->arena, sizeof(LLVMValueRef) * (size_t)n->nargs);
    LLVMBasicBlockRef *phi_from =
        cc_alloc(E->fn->arena, sizeof(LLVMBasicBlockRef) * (size_t)n->nargs);
    if (phi_vals == NULL || phi_from == NULL) {
        return NULL;
    }
    int nphi = 0;
    for (int i = 1; i < n->nargs; i++) {
        LLVMValueRef b = em_expr(E, n->args[i]);
        if (b == NULL) {
            return NULL;
        }
        LLVMValueRef c = compare_values(E, n->ops[i - 1], prev, n->args[i - 1]->ty, n->args[i - 1],
                                        b, n->args[i]->ty, n->args[i]);
        if (i == n->nargs - 1) {
            phi_vals[nphi] = c;
            phi_from[nphi++] = em_current_block(E);
            LLVMBuildBr(E->b, done);
            break;
        }
        LLVMBasicBlockRef next = em_new_block(E, "cmp.next");
        phi_vals[nphi] = c;
        phi_from[nphi++] = em_current_block(E);
        LLVMBuildCondBr(E->b, c, next, done);
        LLVMPositionBuilderAtEnd(E->b, next);
        prev = b;
    }
    LLVMPositionBuilderAtEnd(E->b, done);
    LLVMValueRef phi = LLVMBuildPhi(E->b, LLVMInt1TypeInContext(E->ctx), "chain");
    LLVMAddIncoming(phi, phi_vals, phi_from, (unsigned)nphi);
    return phi;
}

/* x and y / x or y: the deciding operand's value, converted to the node's
 * type (Python returns an operand, not a bool). */
static LLVMValueRef
boolop(Emit *E, CcNode *n)
{
    LLVMTypeRef t = em_type_of(E, n->ty);
    LLVMBasicBlockRef done = em_new_block(E, n->op == OP_AND ? "and.done" : "or.done");
    int count = n->nargs;
    LLVMValueRef *vals = cc_alloc(E->fn->arena, sizeof(LLVMValueRef) * (size_t)count);
    LLVMBasicBlockRef *from = cc_alloc(E->fn->arena, sizeof(LLVMBasicBlockRef) * (size_t)count);
    if (vals == NULL || from == NULL) {
        return NULL;
    }
    for (int i = 0; i < count; i++) {
        LLVMValueRef v = em_expr(E, n->args[i]);
        if (v == NULL) {
            return NULL;
        }
        LLVMValueRef as = em_convert_type(E, v, n->args[i]->ty, n->ty);
        vals[i] = as;
        if (i == count - 1) {
            from[i] = em_current_block(E);
            LLVMBuildBr(E->b, done);
            break;
        }
        LLVMValueRef c = em_truthy(E, v, cc_storage(n->args[i]->ty));
        from[i] = em_current_block(E);
        LLVMBasicBlockRef next = em_new_block(E, "bool.next");
        if (n->op == OP_AND) {
            LLVMBuildCondBr(E->b, c, next, done);
        } else {
            LLVMBuildCondBr(E->b, c, done, next);
        }
        LLVMPositionBuilderAtEnd(E->b, next);
    }
    LLVMPositionBuilderAtEnd(E->b, done);
    LLVMValueRef phi = LLVMBuildPhi(E->b, t, "boolop");
    LLVMAddIncoming(phi, vals, from, (unsigned)count);
    return phi;
}

LLVMValueRef
em_join(Emit *E, LLVMValueRef a, LLVMBasicBlockRef from_a, LLVMValueRef b, LLVMBasicBlockRef from_b,
        const char *name)
{
    LLVMValueRef phi = LLVMBuildPhi(E->b, LLVMTypeOf(a), name);
    LLVMValueRef vals[2] = {a, b};
    LLVMBasicBlockRef from[2] = {from_a, from_b};
    LLVMAddIncoming(phi, vals, from, 2);
    return phi;
}

LLVMValueRef
em_condition(Emit *E, CcNode *cond)
{
    if (cc_is_array(cond->ty)) {
        return em_array_truth(E, cond);
    }
    LLVMValueRef c = em_expr(E, cond);
    return c != NULL ? em_truthy(E, c, cc_storage(cond->ty)) : NULL;
}

static LLVMValueRef
ifexp(Emit *E, CcNode *n)
{
    LLVMValueRef c = em_condition(E, n->cond);
    if (c == NULL) {
        return NULL;
    }
    LLVMBasicBlockRef then = em_new_block(E, "ifx.then"), els = em_new_block(E, "ifx.else");
    LLVMBasicBlockRef done = em_new_block(E, "ifx.done");
    LLVMBuildCondBr(E->b, c, then, els);
    LLVMPositionBuilderAtEnd(E->b, then);
    LLVMValueRef a = em_expr(E, n->then);
    if (a == NULL) {
        return NULL;
    }
    a = em_convert_type(E, a, n->then->ty, n->ty);
    LLVMBasicBlockRef then_end = em_current_block(E);
    LLVMBuildBr(E->b, done);
    LLVMPositionBuilderAtEnd(E->b, els);
    LLVMValueRef b = em_expr(E, n->els);
    if (b == NULL) {
        return NULL;
    }
    b = em_convert_type(E, b, n->els->ty, n->ty);
    LLVMBasicBlockRef els_end = em_current_block(E);
    LLVMBuildBr(E->b, done);
    LLVMPositionBuilderAtEnd(E->b, done);
    return em_join(E, a, then_end, b, els_end, "ifx");
}

static LLVMValueRef
constant(Emit *E, CcNode *n)
{
    TsKind k = cc_storage(n->ty);
    if (ts_is_complex(k)) {
        LLVMValueRef parts[2] = {em_real_const(E, em_part_kind(k), n->fval),
                                 em_real_const(E, em_part_kind(k), n->fimag)};
        return LLVMConstStructInContext(E->ctx, parts, 2, 0);
    }
    if (ts_is_float(k)) {
        return em_real_const(E, k, n->fval);
    }
    return LLVMConstInt(cc_value_type(E->ctx, k), (unsigned long long)n->ival, 0);
}

static LLVMValueRef
make_tuple(Emit *E, CcNode *n)
{
    LLVMValueRef t = LLVMGetUndef(em_type_of(E, n->ty));
    for (int i = 0; i < n->nargs; i++) {
        LLVMValueRef v = em_expr(E, n->args[i]);
        if (v == NULL) {
            return NULL;
        }
        t = LLVMBuildInsertValue(E->b, t, v, (unsigned)i, "tuple");
    }
    return t;
}

static int block(Emit *E, CcNode *n);
static void jump(Emit *E, LLVMBasicBlockRef to);
static void continue_at(Emit *E, LLVMBasicBlockRef bb, int reachable);

/* An inlined device function: its body, whose returns store the result
 * variable and jump to the end, then the result. */
static LLVMValueRef
inline_call(Emit *E, CcNode *n)
{
    LLVMBasicBlockRef end = em_new_block(E, "inline.end");
    LLVMBasicBlockRef outer_end = E->inline_end;
    int outer_returned = E->inline_returned;
    E->inline_end = end;
    E->inline_returned = 0;
    int rc = block(E, n->then);
    if (rc == 0 && E->reachable && n->index == 1) {
        E->inline_returned = 1; /* called for its effect: it may end without a return */
        jump(E, end);
    } else if (rc == 0 && E->reachable) {
        rc = cc_error(E->fn, n->then->loc,
                      "the device function can end without returning "
                      "a value");
    }
    int returned = E->inline_returned;
    E->inline_end = outer_end;
    E->inline_returned = outer_returned;
    if (rc < 0) {
        return NULL;
    }
    continue_at(E, end, returned);
    return LLVMBuildLoad2(E->b, em_type_of(E, n->var->ty), (LLVMValueRef)n->var->slot,
                          n->var->name);
}

LLVMValueRef
em_expr(Emit *E, CcNode *n)
{
    if (n->elem != NULL) {
        return n->elem; /* an array leaf inside an elementwise loop: its element */
    }
    if (cc_is_array(n->ty) && n->kind != ND_VAR && (n->kind != ND_INLINE || n->lifted)
        && n->kind != ND_GETITEM && n->kind != ND_IFEXP) {
        return em_array_expr(E, n); /* a view, or an expression computed into an array */
    }
    switch (n->kind) {
    case ND_INDEX:
        return em_index(E, n);
    case ND_ARRAYATTR:
        return em_array_attr(E, n);
    case ND_CONST:
        return constant(E, n);
    case ND_VAR:
        return LLVMBuildLoad2(E->b, em_type_of(E, n->var->ty), (LLVMValueRef)n->var->slot,
                              n->var->name);
    case ND_BINOP:
        return binop(E, n);
    case ND_UNARY:
        return unary(E, n);
    case ND_COMPARE:
        return compare(E, n);
    case ND_BOOLOP:
        return boolop(E, n);
    case ND_IFEXP:
        return ifexp(E, n);
    case ND_CALL:
        return em_call(E, n);
    case ND_TUPLE:
        return make_tuple(E, n);
    case ND_GETITEM: {
        LLVMValueRef t = em_expr(E, n->lhs);
        return t ? LLVMBuildExtractValue(E->b, t, (unsigned)n->index, "item") : NULL;
    }
    case ND_INLINE:
        return inline_call(E, n);
    default:
        cc_error(E->fn, n->loc, "internal error: cannot emit this expression");
        return NULL;
    }
}

/* ---- statements ---- */

static int stmt(Emit *E, CcNode *n);

static int
block(Emit *E, CcNode *n)
{
    for (int i = 0; n != NULL && i < n->nargs; i++) {
        if (E->reachable && stmt(E, n->args[i]) < 0) {
            return -1;
        }
    }
    return 0;
}

static void
store_var(Emit *E, CcVar *var, LLVMValueRef v, const CcType *from)
{
    if (cc_is_array(var->ty)) {
        LLVMBuildStore(E->b, v, (LLVMValueRef)var->slot); /* a view: the same type */
        return;
    }
    LLVMBuildStore(E->b, em_convert_type(E, v, from, var->ty), (LLVMValueRef)var->slot);
}

/* Ends the current path with a jump; later statements are dead. */
static void
jump(Emit *E, LLVMBasicBlockRef to)
{
    LLVMBuildBr(E->b, to);
    E->reachable = 0;
}

/* Continues at bb; it is reachable if some path jumped to it. */
static void
continue_at(Emit *E, LLVMBasicBlockRef bb, int reachable)
{
    LLVMPositionBuilderAtEnd(E->b, bb);
    E->reachable = reachable;
}

static int
is_true_constant(CcNode *n)
{
    return n->kind == ND_CONST && !ts_is_complex(cc_storage(n->ty))
           && (ts_is_float(cc_storage(n->ty)) ? n->fval != 0.0 : n->ival != 0);
}

static int
if_stmt(Emit *E, CcNode *n)
{
    if (is_true_constant(n->cond) && (n->els == NULL || n->els->nargs == 0)) {
        /* `if True:`, and the ifs prune.c kept one branch of */
        return block(E, n->then);
    }
    LLVMBasicBlockRef then = em_new_block(E, "if.then"), els = em_new_block(E, "if.else");
    LLVMBasicBlockRef done = em_new_block(E, "if.done");
    if (em_extremum_if(E, n)) {
        if (em_branch_rarely(E, n->cond, then, els) < 0) {
            return -1;
        }
    } else {
        LLVMValueRef c = em_condition(E, n->cond);
        if (c == NULL) {
            return -1;
        }
        LLVMBuildCondBr(E->b, c, then, els);
    }
    continue_at(E, then, 1);
    if (block(E, n->then) < 0) {
        return -1;
    }
    int then_live = E->reachable;
    if (then_live) {
        jump(E, done);
    }
    continue_at(E, els, 1);
    if (block(E, n->els) < 0) {
        return -1;
    }
    int els_live = E->reachable;
    if (els_live) {
        jump(E, done);
    }
    continue_at(E, done, then_live || els_live);
    return 0;
}

/* Emits a loop body with its break/continue targets; returns 0/-1. */
static int
loop_body(Emit *E, CcNode *body, LLVMBasicBlockRef brk, LLVMBasicBlockRef cont)
{
    if (E->depth == MAX_LOOP_DEPTH) {
        return cc_error(E->fn, body->loc, "loops nested too deeply");
    }
    E->break_to[E->depth] = brk;
    E->continue_to[E->depth] = cont;
    E->broken[E->depth] = 0;
    E->depth++;
    int rc = block(E, body);
    E->depth--;
    if (rc == 0 && E->reachable) {
        jump(E, cont);
    }
    return rc;
}

/* emit.c's statement helpers, for ndindex.c's nested loops */
int
em_loop_body(Emit *E, CcNode *body, LLVMBasicBlockRef brk, LLVMBasicBlockRef cont)
{
    return loop_body(E, body, brk, cont);
}

int
em_block(Emit *E, CcNode *n)
{
    return block(E, n);
}

void
em_jump(Emit *E, LLVMBasicBlockRef to)
{
    jump(E, to);
}

void
em_continue_at(Emit *E, LLVMBasicBlockRef bb, int reachable)
{
    continue_at(E, bb, reachable);
}

static int
while_stmt(Emit *E, CcNode *n)
{
    LLVMBasicBlockRef cond = em_new_block(E, "while.cond"), body = em_new_block(E, "while.body");
    LLVMBasicBlockRef els = em_new_block(E, "while.else"), done = em_new_block(E, "while.done");
    jump(E, cond);
    continue_at(E, cond, 1);
    LLVMValueRef c = em_condition(E, n->cond);
    if (c == NULL) {
        return -1;
    }
    LLVMBuildCondBr(E->b, c, body, els);
    continue_at(E, body, 1);
    if (loop_body(E, n->then, done, cond) < 0) {
        return -1;
    }
    int broken = E->broken[E->depth];
    continue_at(E, els, !is_true_constant(n->cond));
    if (block(E, n->els) < 0) {
        return -1;
    }
    if (E->reachable) {
        jump(E, done);
    }
    continue_at(E, done, 1);
    E->reachable = broken || !is_true_constant(n->cond);
    return 0;
}

/* range() with no step, or a constant step of 1 or -1. */
static int
given_unit_step(const CcNode *n)
{
    if (n->nargs < 3) {
        return 1;
    }
    const CcNode *s = n->args[2];
    if (s->kind == ND_UNARY && s->op == OP_NEG && s->lhs->kind == ND_CONST) {
        s = s->lhs; /* -1 is written as a negated constant */
    }
    return s->kind == ND_CONST && !ts_is_float(cc_storage(s->ty))
           && !ts_is_complex(cc_storage(s->ty)) && s->ival == 1;
}

/* A loop whose counter steps by 1 or -1 (reversed(): by 1 always). */
static int
unit_step(const CcNode *n)
{
    return n->index || given_unit_step(n);
}

/*
 * reversed(range(start, stop, step)): the range's length, for a counter k
 * over range(len) that gives v = start + (len - 1 - k) * step, the range's
 * values from its last (each in int64, as every value of the range is).
 * The length is counted in unsigned arithmetic, which no int64 range
 * overflows; a zero step has none.
 */
static LLVMValueRef
range_length(Emit *E, LLVMValueRef start, LLVMValueRef stop, LLVMValueRef step)
{
    LLVMValueRef zero = em_int_const(E, TS_INT64, 0), one = em_int_const(E, TS_INT64, 1);
    LLVMValueRef up = LLVMBuildICmp(E->b, LLVMIntSGT, step, zero, "rev.up");
    LLVMValueRef lo = LLVMBuildSelect(E->b, up, start, stop, "rev.lo");
    LLVMValueRef hi = LLVMBuildSelect(E->b, up, stop, start, "rev.hi");
    LLVMValueRef size = LLVMBuildSelect(E->b, up, step, LLVMBuildNeg(E->b, step, "rev.neg"),
                                        "rev.size"); /* |step|; INT64_MIN's as unsigned */
    LLVMValueRef any =
        LLVMBuildAnd(E->b, LLVMBuildICmp(E->b, LLVMIntSLT, lo, hi, "rev.some"),
                     LLVMBuildICmp(E->b, LLVMIntNE, step, zero, "rev.step"), "rev.any");
    LLVMValueRef safe = LLVMBuildSelect(E->b, any, size, one, "rev.div");
    LLVMValueRef span = LLVMBuildSub(E->b, LLVMBuildSub(E->b, hi, lo, "rev.span"), one, "rev.m1");
    LLVMValueRef len = LLVMBuildAdd(E->b, LLVMBuildUDiv(E->b, span, safe, "rev.q"), one, "rev.len");
    return LLVMBuildSelect(E->b, any, len, zero, "rev.count");
}

/* for v in range(start, stop, step): a hidden counter drives the loop, so
 * assigning to v in the body does not change the iteration (Python).  A
 * zero step runs no iteration (Python raises ValueError).  reversed(range(
 * ...)) (n->index) counts k over range(len) and gives v its value from the
 * end (range_length). */
static int
for_stmt(Emit *E, CcNode *n)
{
    int nested = em_ndindex_loop(E, n); /* np.ndindex's loop: one loop a dimension */
    if (nested != 0) {
        return nested < 0 ? -1 : 0;
    }
    LLVMValueRef start = em_int_const(E, TS_INT64, 0), step = em_int_const(E, TS_INT64, 1), stop;
    LLVMValueRef vals[3] = {NULL, NULL, NULL};
    for (int i = 0; i < n->nargs; i++) {
        if ((vals[i] = em_expr_as(E, n->args[i], TS_INT64)) == NULL) {
            return -1;
        }
    }
    stop = n->nargs == 1 ? vals[0] : vals[1];
    if (n->nargs >= 2) {
        start = vals[0];
    }
    if (n->nargs == 3) {
        step = vals[2];
    }
    LLVMValueRef rev_start = start, rev_step = step, rev_last = NULL;
    int backward = n->index && given_unit_step(n)
                   && (n->nargs == 1
                       || (n->args[0]->kind == ND_CONST && !n->args[0]->big
                           && n->args[0]->ival > INT64_MIN && n->args[0]->ival < INT64_MAX));
    if (backward) {
        /* reversed(range(n)), reversed(range(c, n[, 1 or -1])): the range
         * from its other end, range(n - 1, c - 1, -1) (or (n + 1, c + 1, 1)),
         * which LLVM counts and bounds as it does any range; c +- 1 cannot
         * wrap, and an empty range starts at its stop */
        LLVMValueRef one = em_int_const(E, TS_INT64, 1);
        int up = n->nargs < 3 || n->args[2]->kind == ND_CONST;
        LLVMValueRef from = up ? LLVMBuildSub(E->b, start, one, "rev.stop")
                               : LLVMBuildAdd(E->b, start, one, "rev.stop");
        LLVMValueRef some =
            LLVMBuildICmp(E->b, up ? LLVMIntSGT : LLVMIntSLT, stop, start, "rev.some");
        LLVMValueRef last = up ? LLVMBuildSub(E->b, stop, one, "rev.last")
                               : LLVMBuildAdd(E->b, stop, one, "rev.last");
        start = LLVMBuildSelect(E->b, some, last, from, "rev.start");
        stop = from;
        step = em_int_const(E, TS_INT64, up ? -1 : 1);
    } else if (n->index) {
        LLVMValueRef len = range_length(E, start, stop, step);
        rev_last = LLVMBuildSub(E->b, len, em_int_const(E, TS_INT64, 1), "rev.last");
        start = em_int_const(E, TS_INT64, 0);
        stop = len;
        step = em_int_const(E, TS_INT64, 1);
    }
    LLVMTypeRef i64 = LLVMInt64TypeInContext(E->ctx);
    LLVMValueRef counter = em_entry_alloca(E, i64, "range.i");
    LLVMBuildStore(E->b, start, counter);

    LLVMBasicBlockRef cond = em_new_block(E, "for.cond"), body = em_new_block(E, "for.body");
    LLVMBasicBlockRef latch = em_new_block(E, "for.next"), els = em_new_block(E, "for.else");
    LLVMBasicBlockRef done = em_new_block(E, "for.done");
    jump(E, cond);
    continue_at(E, cond, 1);
    LLVMValueRef i = LLVMBuildLoad2(E->b, i64, counter, "i");
    LLVMValueRef zero = em_int_const(E, TS_INT64, 0);
    LLVMValueRef up = LLVMBuildICmp(E->b, LLVMIntSGT, step, zero, "up");
    LLVMValueRef down = LLVMBuildICmp(E->b, LLVMIntSLT, step, zero, "down");
    LLVMValueRef more = LLVMBuildOr(
        E->b,
        LLVMBuildAnd(E->b, up, LLVMBuildICmp(E->b, LLVMIntSLT, i, stop, "below.stop"), "up.more"),
        LLVMBuildAnd(E->b, down, LLVMBuildICmp(E->b, LLVMIntSGT, i, stop, "above.stop"),
                     "down.more"),
        "more");
    LLVMBuildCondBr(E->b, more, body, els);

    continue_at(E, body, 1);
    if (n->index && !backward) {
        /* start + (len - 1 - k) * step, a value of the range: the offset may
         * pass int64's range, the sum wraps back */
        LLVMValueRef back = LLVMBuildNSWSub(E->b, rev_last, i, "rev.k");
        i = LLVMBuildAdd(E->b, rev_start, LLVMBuildMul(E->b, back, rev_step, "rev.off"), "rev.i");
    }
    store_var(E, n->var, i, cc_scalar_type(TS_INT64));
    n->var->counter = 1;
    if (loop_body(E, n->then, done, latch) < 0) {
        return -1;
    }
    continue_at(E, latch, 1);
    LLVMValueRef i2 = LLVMBuildLoad2(E->b, i64, counter, "i.cur");
    if (unit_step(n)) {
        /* i < stop <= INT64_MAX (or i > stop >= INT64_MIN): i + 1 cannot
         * wrap, and saying so (nsw) lets LLVM count and vectorize the loop */
        LLVMBuildStore(E->b, LLVMBuildNSWAdd(E->b, i2, step, "i.next"), counter);
        jump(E, cond);
        /* as array loops are: short core rows reach the vector loop */
        em_one_vector_a_step(E, LLVMGetLastInstruction(LLVMGetInsertBlock(E->b)));
    } else {
        /* a step that carries i past INT64's range ends the loop (Python's
         * range has no overflow: the next value would be past stop anyway) */
        LLVMTypeRef over = i64;
        LLVMValueRef add_args[2] = {i2, step};
        LLVMValueRef sum = em_intrinsic(E, "llvm.sadd.with.overflow", &over, 1, add_args, 2);
        LLVMBuildStore(E->b, LLVMBuildExtractValue(E->b, sum, 0, "i.next"), counter);
        LLVMBuildCondBr(E->b, LLVMBuildExtractValue(E->b, sum, 1, "i.overflow"), els, cond);
        E->reachable = 0;
    }
    continue_at(E, els, 1);
    if (block(E, n->els) < 0) {
        return -1;
    }
    if (E->reachable) {
        jump(E, done);
    }
    continue_at(E, done, 1);
    return 0;
}

/*
 * raise (host code): the site is a constant string (cc_raise_site's text).
 * A gufunc kernel passes it to numbavec_raise, which keeps it for the thread
 * that called the loop, and returns CC_STATUS_RAISE: its loop stops.  A
 * scalar kernel stores its address (an i64) through its last parameter and
 * returns a zero:
 * the ufunc loop (vectorize/loops.c) finds the first element that raised,
 * and a loop with no call in it stays vectorizable.
 */
static int
raise_stmt(Emit *E, CcNode *n)
{
    CcFunction *fn = E->fn;
    fn->fails |= 1u << CC_STATUS_RAISE;
    if (fn->device) {
        /* a GPU's status word says which site: CC_STATUS_USER + its index */
        if (fn->nraise_sites == fn->cap_raise_sites) {
            int cap = fn->cap_raise_sites ? 2 * fn->cap_raise_sites : 8;
            const char **sites = cc_alloc(fn->arena, sizeof(char *) * (size_t)cap);
            if (sites == NULL) {
                return -1;
            }
            if (fn->nraise_sites > 0) {
                memcpy(sites, fn->raise_sites, sizeof(char *) * (size_t)fn->nraise_sites);
            }
            fn->raise_sites = sites;
            fn->cap_raise_sites = cap;
        }
        int status = CC_STATUS_USER + fn->nraise_sites;
        fn->raise_sites[fn->nraise_sites++] = n->text;
        LLVMValueRef st = LLVMConstInt(LLVMInt32TypeInContext(E->ctx), (unsigned)status, 0);
        if (E->gufunc) {
            em_return_status(E, st); /* the gufunc entry stores it in its status word */
            return 0;
        }
        /* a cuda ufunc's kernel: into its module's word (CC_DEVICE_STATUS),
         * which the call reads after the kernel; the element gets a zero */
        LLVMBuildStore(E->b, st, em_device_status(E->mod));
        LLVMBuildRet(E->b, LLVMConstNull(cc_value_type(E->ctx, cc_storage(fn->ret))));
        E->reachable = 0;
        return 0;
    }
    LLVMValueRef site = LLVMBuildGlobalString(E->b, n->text, "raise.site");
    if (E->gufunc) {
        em_call_raise(E->mod, E->b, site);
        em_return_status(E, LLVMConstInt(LLVMInt32TypeInContext(E->ctx), CC_STATUS_RAISE, 0));
        return 0;
    }
    /* as an integer: LLVM vectorizes a loop that keeps "any of" an integer */
    LLVMBuildStore(E->b, LLVMBuildPtrToInt(E->b, site, LLVMInt64TypeInContext(E->ctx), ""),
                   E->raise_slot);
    LLVMBuildRet(E->b, LLVMConstNull(cc_value_type(E->ctx, cc_storage(E->fn->ret))));
    E->reachable = 0;
    return 0;
}

void
em_raise_if(Emit *E, LLVMValueRef bad, const char *site)
{
    LLVMBasicBlockRef raise = em_new_block(E, "raise"), ok = em_new_block(E, "ok");
    LLVMBuildCondBr(E->b, bad, raise, ok);
    LLVMPositionBuilderAtEnd(E->b, raise);
    CcNode n = {.kind = ND_RAISE, .text = site};
    (void)raise_stmt(E, &n); /* host code: it cannot fail */
    LLVMPositionBuilderAtEnd(E->b, ok);
    E->reachable = 1;
}

LLVMValueRef
em_device_status(LLVMModuleRef mod)
{
    LLVMValueRef g = LLVMGetNamedGlobal(mod, CC_DEVICE_STATUS);
    if (g == NULL) {
        LLVMTypeRef i32 = LLVMInt32TypeInContext(LLVMGetModuleContext(mod));
        g = LLVMAddGlobalInAddressSpace(mod, i32, CC_DEVICE_STATUS, 1);
        LLVMSetInitializer(g, LLVMConstInt(i32, 0, 0));
        LLVMSetAlignment(g, 4);
    }
    return g;
}

void
em_call_raise(LLVMModuleRef mod, LLVMBuilderRef b, LLVMValueRef site)
{
    LLVMContextRef ctx = LLVMGetModuleContext(mod);
    LLVMTypeRef ptr = LLVMPointerTypeInContext(ctx, 0);
    LLVMTypeRef fty = LLVMFunctionType(LLVMVoidTypeInContext(ctx), &ptr, 1, 0);
    LLVMValueRef f = LLVMGetNamedFunction(mod, "numbavec_raise");
    if (f == NULL) {
        f = LLVMAddFunction(mod, "numbavec_raise", fty);
        cc_add_fn_attr(f, "nounwind");
        cc_add_fn_attr(f, "cold");
    }
    LLVMBuildCall2(b, fty, f, &site, 1, "");
}

/* a, b = row: row's elements, its length checked (CC_STATUS_UNPACK). */
static int
unpack_array(Emit *E, CcNode *n)
{
    LLVMValueRef items[CC_MAX_UNPACK];
    if (n->nargs > CC_MAX_UNPACK) {
        return cc_error(E->fn, n->loc, "an array unpacked into more than %d names", CC_MAX_UNPACK);
    }
    if (em_unpack_view(E, n->rhs, n->nargs, items) < 0) {
        return -1;
    }
    for (int i = 0; i < n->nargs; i++) {
        store_var(E, n->vars[i], items[i], cc_scalar_type(n->rhs->ty->scalar));
    }
    return 0;
}

static int
stmt(Emit *E, CcNode *n)
{
    LLVMValueRef v;
    switch (n->kind) {
    case ND_BLOCK:
        return block(E, n);
    case ND_ASSIGN:
        if ((v = em_expr(E, n->rhs)) == NULL) {
            return -1;
        }
        store_var(E, n->var, v, n->rhs->ty);
        return 0;
    case ND_UNPACK:
        if (cc_is_array(n->rhs->ty)) {
            return unpack_array(E, n);
        }
        if ((v = em_expr(E, n->rhs)) == NULL) {
            return -1;
        }
        for (int i = 0; i < n->nargs; i++) {
            LLVMValueRef item = LLVMBuildExtractValue(E->b, v, (unsigned)i, n->vars[i]->name);
            store_var(E, n->vars[i], item, n->rhs->ty->elems[i]);
        }
        return 0;
    case ND_RETURN:
        if (E->gufunc && n->var == NULL) {
            /* a gufunc kernel's own return (a device function's inlined
             * return, n->var set, only leaves the inlined body) */
            em_return_status(E, LLVMConstInt(LLVMInt32TypeInContext(E->ctx), CC_STATUS_OK, 0));
            return 0;
        }
        if (n->lhs == NULL) {
            /* a bare return of an inlined device function called for its effect */
            E->inline_returned = 1;
            jump(E, E->inline_end);
            return 0;
        }
        if ((v = em_expr(E, n->lhs)) == NULL) {
            return -1;
        }
        if (n->var != NULL) {
            /* a return of an inlined device function */
            store_var(E, n->var, v, n->lhs->ty);
            E->inline_returned = 1;
            jump(E, E->inline_end);
            return 0;
        }
        LLVMBuildRet(E->b, em_convert_type(E, v, n->lhs->ty, E->fn->ret));
        E->reachable = 0;
        return 0;
    case ND_IF:
        return if_stmt(E, n);
    case ND_WHILE:
        return while_stmt(E, n);
    case ND_FOR_RANGE:
        return for_stmt(E, n);
    case ND_BREAK:
        E->broken[E->depth - 1] = 1;
        jump(E, E->break_to[E->depth - 1]);
        return 0;
    case ND_CONTINUE:
        jump(E, E->continue_to[E->depth - 1]);
        return 0;
    case ND_EXPR:
        return em_expr(E, n->lhs) != NULL ? 0 : -1;
    case ND_SETITEM:
        return em_setitem_view(E, n);
    case ND_RAISE:
        return raise_stmt(E, n);
    case ND_PRINT:
        return em_print(E, n);
    default:
        return cc_error(E->fn, n->loc, "internal error: cannot emit this statement");
    }
}

/* ---- the function ---- */

static void
set_fastmath(LLVMValueRef func)
{
#if LLVM_VERSION_MAJOR >= 18
    for (LLVMBasicBlockRef bb = LLVMGetFirstBasicBlock(func); bb; bb = LLVMGetNextBasicBlock(bb)) {
        for (LLVMValueRef i = LLVMGetFirstInstruction(bb); i; i = LLVMGetNextInstruction(i)) {
            if (LLVMCanValueUseFastMathFlags(i)) {
                LLVMSetFastMathFlags(i, LLVMFastMathAll);
            }
        }
    }
#else
    LLVMContextRef ctx = LLVMGetTypeContext(LLVMTypeOf(func));
    static const char *const attrs[] = {"unsafe-fp-math", "no-nans-fp-math", "no-infs-fp-math",
                                        "no-signed-zeros-fp-math"};
    for (size_t i = 0; i < sizeof(attrs) / sizeof(attrs[0]); i++) {
        LLVMAddAttributeAtIndex(
            func, LLVMAttributeFunctionIndex,
            LLVMCreateStringAttribute(ctx, attrs[i], (unsigned)strlen(attrs[i]), "true", 4));
    }
#endif
}

/*
 * Ends an emitted function: blocks left open after a return or a jump are
 * unreachable; fast-math flags go on every FP instruction.  On failure
 * (rc < 0) the half-built function is deleted.  Returns it, or NULL.
 */
static LLVMValueRef
finish_function(Emit *E, int rc)
{
    if (rc == 0) {
        for (LLVMBasicBlockRef bb = LLVMGetFirstBasicBlock(E->func); bb;
             bb = LLVMGetNextBasicBlock(bb)) {
            if (LLVMGetBasicBlockTerminator(bb) == NULL) {
                LLVMPositionBuilderAtEnd(E->b, bb);
                LLVMBuildUnreachable(E->b);
            }
        }
        if (E->fastmath) {
            set_fastmath(E->func);
        }
    }
    LLVMDisposeBuilder(E->b);
    if (rc < 0) {
        LLVMDeleteFunction(E->func);
        return NULL;
    }
    return E->func;
}

static LLVMValueRef
declare(Emit *E, const TsSignature *sig, const char *name)
{
    LLVMTypeRef params[TS_MAXARGS + 1];
    for (int i = 0; i < sig->nargs; i++) {
        params[i] = cc_value_type(E->ctx, sig->args[i].kind);
    }
    /* a kernel that raises stores its site through a last parameter (host
     * code; device code stores a status word of its module, raise_stmt) */
    unsigned np = (unsigned)sig->nargs;
    if (E->fn->raises && !E->fn->device) {
        params[np++] = LLVMPointerTypeInContext(E->ctx, 0);
    }
    LLVMTypeRef ret = cc_value_type(E->ctx, cc_storage(E->fn->ret));
    LLVMValueRef f = LLVMAddFunction(E->mod, name, LLVMFunctionType(ret, params, np, 0));
    LLVMSetLinkage(f, LLVMInternalLinkage);
    cc_add_fn_attr(f, "alwaysinline");
    cc_add_fn_attr(f, "nounwind");
    return f;
}

LLVMValueRef
cc_emit_function(CcFunction *fn, const TsSignature *sig, LLVMModuleRef mod, const char *name,
                 int fastmath)
{
    return cc_emit_function_for(fn, sig, mod, name, fastmath, &cc_host_target);
}

LLVMValueRef
cc_emit_function_for(CcFunction *fn, const TsSignature *sig, LLVMModuleRef mod, const char *name,
                     int fastmath, const CcEmitTarget *target)
{
    Emit E = {.fn = fn,
              .ctx = LLVMGetModuleContext(mod),
              .mod = mod,
              .reachable = 1,
              .fastmath = fastmath,
              .target = target};
    E.func = declare(&E, sig, name);
    if (fn->raises && !fn->device) {
        E.raise_slot = LLVMGetParam(E.func, (unsigned)sig->nargs);
        LLVMSetValueName2(E.raise_slot, "raised", 6);
    }
    E.b = LLVMCreateBuilderInContext(E.ctx);
    LLVMPositionBuilderAtEnd(E.b, em_new_block(&E, "entry"));
    for (int i = 0; i < fn->nvars; i++) {
        CcVar *v = fn->vars[i];
        if (v->ty == NULL) {
            v->slot = NULL; /* never assigned on a typed path */
            continue;
        }
        v->slot = LLVMBuildAlloca(E.b, em_type_of(&E, v->ty), v->name);
        if (v->is_param) {
            LLVMValueRef p = LLVMGetParam(E.func, (unsigned)i);
            LLVMSetValueName2(p, v->name, strlen(v->name));
            store_var(&E, v, p, cc_scalar_type(sig->args[i].kind));
        }
    }
    LLVMBasicBlockRef body = em_new_block(&E, "body");
    LLVMBuildBr(E.b, body);
    continue_at(&E, body, 1);
    int rc = block(&E, fn->body);
    if (rc == 0 && E.reachable) {
        rc = cc_error(fn, fn->body->loc, "%s can end without returning a value", fn->name);
    }
    return finish_function(&E, rc);
}

/* ---- gufunc kernels ---- */

/* i32 name(params): scalars as values; arrays as (ptr, shape..., strides...). */
static LLVMValueRef
declare_gufunc(Emit *E, const TsSignature *sig, const char *name)
{
    LLVMTypeRef params[TS_MAXARGS * (1 + 2 * TS_MAXDIMS)];
    LLVMTypeRef i64 = LLVMInt64TypeInContext(E->ctx);
    unsigned np = 0;
    for (int i = 0; i < sig->nargs; i++) {
        if (sig->args[i].ndim == 0) {
            params[np++] = cc_value_type(E->ctx, sig->args[i].kind);
            continue;
        }
        params[np++] = LLVMPointerTypeInContext(E->ctx, 0);
        for (int k = 0; k < 2 * sig->args[i].ndim; k++) {
            params[np++] = i64;
        }
    }
    LLVMTypeRef fty = LLVMFunctionType(LLVMInt32TypeInContext(E->ctx), params, np, 0);
    LLVMValueRef f = LLVMAddFunction(E->mod, name, fty);
    LLVMSetLinkage(f, LLVMInternalLinkage);
    cc_add_fn_attr(f, "alwaysinline");
    cc_add_fn_attr(f, "nounwind");
    return f;
}

/* Binds parameter var (argument i, first LLVM parameter *p) to its value:
 * an array's view is built from its data, shape and strides parameters. */
static int
bind_param(Emit *E, CcVar *var, const TsType *t, unsigned *p, unsigned long long unit_stride, int i)
{
    char name[96];
    var->slot = LLVMBuildAlloca(E->b, em_type_of(E, var->ty), var->name);
    if (t->ndim == 0) {
        LLVMValueRef v = LLVMGetParam(E->func, (*p)++);
        LLVMSetValueName2(v, var->name, strlen(var->name));
        store_var(E, var, v, cc_scalar_type(t->kind));
        return 0;
    }
    LLVMValueRef params[1 + 2 * TS_MAXDIMS];
    static const char *const what[3] = {"data", "shape", "stride"};
    for (int k = 0; k < 1 + 2 * t->ndim; k++) {
        params[k] = LLVMGetParam(E->func, (*p)++);
        int part = k == 0 ? 0 : k <= t->ndim ? 1 : 2;
        snprintf(name, sizeof(name), "%s.%s%d", var->name, what[part],
                 part == 0 ? 0 : (k - 1) % t->ndim);
        LLVMSetValueName2(params[k], name, strlen(name));
    }
    int unit_last = i < 64 && (unit_stride >> i) & 1;
    LLVMBuildStore(E->b, em_param_view(E, var->ty, params, unit_last), (LLVMValueRef)var->slot);
    return 0;
}

LLVMValueRef
cc_emit_gufunc_kernel(CcFunction *fn, const TsSignature *sig, LLVMModuleRef mod, const char *name,
                      int fastmath, unsigned long long unit_stride, const CcEmitTarget *target)
{
    Emit E = {.fn = fn,
              .ctx = LLVMGetModuleContext(mod),
              .mod = mod,
              .reachable = 1,
              .gufunc = 1,
              .fastmath = fastmath,
              .target = target};
    E.func = declare_gufunc(&E, sig, name);
    E.b = LLVMCreateBuilderInContext(E.ctx);
    LLVMPositionBuilderAtEnd(E.b, em_new_block(&E, "entry"));
    unsigned p = 0;
    int rc = 0;
    for (int i = 0; rc == 0 && i < fn->nvars; i++) {
        CcVar *v = fn->vars[i];
        if (v->is_param) {
            rc = bind_param(&E, v, &sig->args[i], &p, unit_stride, i);
        } else {
            v->slot = v->ty != NULL ? LLVMBuildAlloca(E.b, em_type_of(&E, v->ty), v->name) : NULL;
        }
    }
    em_alloc_begin(&E);
    LLVMBasicBlockRef body = em_new_block(&E, "body");
    LLVMBuildBr(E.b, body);
    continue_at(&E, body, 1);
    if (rc == 0) {
        rc = block(&E, fn->body);
    }
    if (rc == 0 && E.reachable) {
        em_return_status(&E, LLVMConstInt(LLVMInt32TypeInContext(E.ctx), CC_STATUS_OK, 0));
    }
    if (rc == 0) {
        em_alloc_end(&E);
    }
    return finish_function(&E, rc);
}
