/*
 * selectfold.c - a select between x and x + y made an add of a select
 * (cc_pass_select_identity), the last step of optimisation (passes.c).
 *
 * `if not np.isnan(a_i): numer += a_i` in a loop becomes, once SimplifyCFG
 * has speculated it, numer' = c ? numer + a_i : numer, and the loop carries
 * numer through the add and then the select (numbagg's move_exp_nansum: a
 * multiply, an add and a masked move each element, 0.54 of Numba's speed,
 * Numba keeping the branch; 1.31 with the fold).  Written
 * numer + (c ? a_i : -0.0) instead, the select depends on the element only
 * and leaves the chain, which is the multiply and the add.  Exact: x + -0.0
 * is x for every x, -0.0, NaN and infinities included (x - +0.0 likewise),
 * in the default rounding that LLVM's own folds assume; and nothing is
 * computed that the code did not compute before (the add was speculated
 * already).  LLVM 19's pipeline left the select after the add here; the
 * pass runs after the last InstCombine, so that nothing turns it back.
 * Scalar floats only (a vectorized loop's selects are not carried so), the
 * add used by the select alone, and not a select that carries branch
 * weights (branchhint.c: it becomes a branch).
 */
#include "compiler/jit.h"

#include <llvm/Config/llvm-config.h>

/* Whether select s's arm `arm` is x + y or y + x (or x - y) used by s
 * alone, x being s's other arm; *y gets y. */
static int
adds_to(LLVMValueRef arm, LLVMValueRef x, LLVMValueRef *y)
{
    if (!LLVMIsAInstruction(arm) || LLVMGetFirstUse(arm) == NULL
        || LLVMGetNextUse(LLVMGetFirstUse(arm)) != NULL) {
        return 0;
    }
    LLVMOpcode op = LLVMGetInstructionOpcode(arm);
    if (op == LLVMFAdd && LLVMGetOperand(arm, 0) == x) {
        *y = LLVMGetOperand(arm, 1);
    } else if (op == LLVMFAdd && LLVMGetOperand(arm, 1) == x) {
        *y = LLVMGetOperand(arm, 0);
    } else if (op == LLVMFSub && LLVMGetOperand(arm, 0) == x) {
        *y = LLVMGetOperand(arm, 1);
    } else {
        return 0;
    }
    return *y != x;
}

/* Select s rewritten when it has the form; returns whether it had. */
static int
fold_select(LLVMBuilderRef b, LLVMValueRef s)
{
    LLVMTypeKind k = LLVMGetTypeKind(LLVMTypeOf(s));
    if ((k != LLVMFloatTypeKind && k != LLVMDoubleTypeKind) || cc_weighted(s)) {
        return 0;
    }
    LLVMValueRef c = LLVMGetOperand(s, 0), t = LLVMGetOperand(s, 1), f = LLVMGetOperand(s, 2);
    LLVMValueRef y = NULL, arm = NULL, x = NULL;
    int taken_if_true = 0;
    if (adds_to(t, f, &y)) {
        arm = t, x = f, taken_if_true = 1;
    } else if (adds_to(f, t, &y)) {
        arm = f, x = t;
    } else {
        return 0;
    }
    int sub = LLVMGetInstructionOpcode(arm) == LLVMFSub;
    /* the identity: x + -0.0 == x and x - +0.0 == x, exactly */
    LLVMValueRef id = LLVMConstReal(LLVMTypeOf(s), sub ? 0.0 : -0.0);
    LLVMPositionBuilderBefore(b, s);
    LLVMValueRef pick =
        LLVMBuildSelect(b, c, taken_if_true ? y : id, taken_if_true ? id : y, "term.picked");
    LLVMValueRef r =
        sub ? LLVMBuildFSub(b, x, pick, "chain.sub") : LLVMBuildFAdd(b, x, pick, "chain.add");
#if LLVM_VERSION_MAJOR >= 18
    LLVMSetFastMathFlags(r, LLVMGetFastMathFlags(arm));
#endif
    LLVMReplaceAllUsesWith(s, r);
    LLVMInstructionEraseFromParent(s);
    LLVMInstructionEraseFromParent(arm);
    return 1;
}

/* What fold_select erases (the select, and its add, which comes before
 * it) and makes (before it) is not the instruction after the select. */
static LLVMValueRef
fold_visit(LLVMBuilderRef b, LLVMValueRef in, void *ctx)
{
    (void)ctx;
    (void)fold_select(b, in);
    return NULL;
}

void
cc_pass_select_identity(LLVMModuleRef mod)
{
    cc_each_instruction(mod, LLVMSelect, fold_visit, NULL);
}
