/*
 * prepare.c - the two passes that code generation needs and optimisation
 * must not see, which passes.c runs between the two on every host module
 * (prepare_codegen there): cc_pass_fast_codegen, the functions marked for
 * the fast code generator made optnone, and cc_pass_quiet_compares, float
 * compares made quiet.
 */
#include "compiler/jit.h"

#include <stdlib.h>
#include <string.h>

/*
 * The functions marked by cc_mark_fast_codegen become optnone (and
 * noinline, which optnone requires) now that they are optimised: code
 * generation then uses the fast instruction selector and register
 * allocator for them.  For a ufunc's loop function (checks and calls; its
 * loops are functions of their own) that cut a signature's code generation
 * from 6.1 to 5.1 ms (median of 120 signatures), at unchanged speed.
 */
void
cc_pass_fast_codegen(LLVMModuleRef mod)
{
    static const char mark[] = CC_FAST_CODEGEN;
    unsigned optnone = LLVMGetEnumAttributeKindForName("optnone", 7);
    unsigned noinline = LLVMGetEnumAttributeKindForName("noinline", 8);
    LLVMContextRef ctx = LLVMGetModuleContext(mod);
    for (LLVMValueRef f = LLVMGetFirstFunction(mod); f != NULL; f = LLVMGetNextFunction(f)) {
        if (LLVMGetStringAttributeAtIndex(f, LLVMAttributeFunctionIndex, mark, sizeof(mark) - 1)
            != NULL) {
            LLVMAddAttributeAtIndex(f, LLVMAttributeFunctionIndex,
                                    LLVMCreateEnumAttribute(ctx, noinline, 0));
            LLVMAddAttributeAtIndex(f, LLVMAttributeFunctionIndex,
                                    LLVMCreateEnumAttribute(ctx, optnone, 0));
        }
    }
}

/*
 * Relational float compares (<, <=, >, >= and their unordered forms) that
 * raise no invalid flag for a quiet NaN, as NumPy's own compares do not.
 * x86 makes a plain `fcmp olt` a signaling compare (cmpltpd, or minsd and
 * maxsd for a select of the operands); the constrained compare with strict
 * exceptions is quiet: vucomisd, vcmplt_oqpd.  Rewritten once the module is
 * optimised, so that the optimiser and the vectorizer saw plain compares,
 * and nothing after this can fold the quiet ones back.  (Before, the kernel
 * compared integer keys of the bit patterns: quiet everywhere, but some
 * thirty instructions a compare, which made a scalar maximum loop 4.4x
 * slower than Numba's.)
 *
 * A scalar compare that only chooses values (every use a select on it: a
 * running maximum, a count that grows or not) is made in lane 0 of a
 * 128-bit vector, and its selects too (quiet_select_form).  A scalar strict
 * compare is vucomisd and a flag, which code generation moves into a mask
 * register (seta, kmovd: AVX-512) or turns into a branch on the value
 * (AVX2, where the plain compare is a branch-free blend); in a vector the
 * compare writes the mask itself (vcmpgt_oqpd into k1, then a masked move)
 * or a blend's mask (vblendvpd).  An exponentially decaying count of values
 * above a threshold ran 1.2x faster.  Compares that branch stay scalar:
 * vucomisd and a jump is already the best form.
 */
/* Whether the host has feature f ("+avx": that token, not "+avx2"). */
static int
has_feature(const char *features, const char *f)
{
#if defined(__x86_64__)
    size_t n = strlen(f);
    for (const char *at = features; at != NULL && (at = strstr(at, f)) != NULL; at += n) {
        if (at[n] == ',' || at[n] == '\0') {
            return 1;
        }
    }
#else
    (void)f;
#endif
    return 0;
}

static const char *const quiet_names[] = {
    [LLVMRealOLT] = "olt", [LLVMRealOLE] = "ole", [LLVMRealOGT] = "ogt", [LLVMRealOGE] = "oge",
    [LLVMRealULT] = "ult", [LLVMRealULE] = "ule", [LLVMRealUGT] = "ugt", [LLVMRealUGE] = "uge",
};

/* The quiet compare of x and y (operands of `in`, any type) before `in`. */
static LLVMValueRef
quiet_fcmp_call(LLVMBuilderRef b, LLVMModuleRef mod, LLVMValueRef x, LLVMValueRef y,
                LLVMRealPredicate p)
{
    static const char intrinsic[] = "llvm.experimental.constrained.fcmp";
    static const char strict[] = "fpexcept.strict";
    LLVMContextRef ctx = LLVMGetModuleContext(mod);
    unsigned id = LLVMLookupIntrinsicID(intrinsic, sizeof(intrinsic) - 1);
    LLVMTypeRef t = LLVMTypeOf(x);
    LLVMValueRef args[4] = {
        x, y, LLVMMetadataAsValue(ctx, LLVMMDStringInContext2(ctx, quiet_names[p], 3)),
        LLVMMetadataAsValue(ctx, LLVMMDStringInContext2(ctx, strict, sizeof(strict) - 1))};
    return LLVMBuildCall2(b, LLVMIntrinsicGetType(ctx, id, &t, 1),
                          LLVMGetIntrinsicDeclaration(mod, id, &t, 1), args, 4, "cmp.quiet");
}

/* Lanes of a 128-bit vector of scalar type t when a select on a compare
 * may work in one (a float or a double compared; float, double or integer
 * values of at most 64 bits chosen), else 0. */
static unsigned
vector_lanes(LLVMTypeRef t)
{
    switch (LLVMGetTypeKind(t)) {
    case LLVMFloatTypeKind:
        return 4;
    case LLVMDoubleTypeKind:
        return 2;
    default:
        return 0;
    }
}

static int
selectable_in_lanes(LLVMTypeRef t)
{
    if (vector_lanes(t) > 0) {
        return 1;
    }
    if (LLVMGetTypeKind(t) != LLVMIntegerTypeKind) {
        return 0;
    }
    unsigned w = LLVMGetIntTypeWidth(t);
    return w == 8 || w == 16 || w == 32 || w == 64;
}

/* Whether every use of scalar compare `in` is the condition of a select of
 * values a vector lane can hold, and none carries branch weights (a
 * running extremum's, which code generation turns into a branch on the
 * scalar quiet compare: vucomisd and a jump, not a mask moved out). */
static int
chooses_only(LLVMValueRef in)
{
    if (vector_lanes(LLVMTypeOf(LLVMGetOperand(in, 0))) == 0 || LLVMGetFirstUse(in) == NULL) {
        return 0;
    }
    for (LLVMUseRef u = LLVMGetFirstUse(in); u != NULL; u = LLVMGetNextUse(u)) {
        LLVMValueRef s = LLVMGetUser(u);
        if (LLVMGetInstructionOpcode(s) != LLVMSelect || LLVMGetOperand(s, 0) != in
            || LLVMGetOperand(s, 1) == in || LLVMGetOperand(s, 2) == in
            || !selectable_in_lanes(LLVMTypeOf(s)) || cc_weighted(s)) {
            return 0; /* weighted (branchhint.c): code generation makes it a branch */
        }
    }
    return 1;
}

/* Scalar compare `in` and its selects, in lane 0 of 128-bit vectors (the
 * other lanes compare zeros, which raises nothing; a float compare choosing
 * 64-bit values hands them the mask's first two lanes).  Returns the new
 * compare, which takes `in`'s place in its block. */
static LLVMValueRef
quiet_select_form(LLVMBuilderRef b, LLVMModuleRef mod, LLVMValueRef in, LLVMRealPredicate p)
{
    LLVMContextRef ctx = LLVMGetModuleContext(mod);
    LLVMTypeRef t = LLVMTypeOf(LLVMGetOperand(in, 0)), i32 = LLVMInt32TypeInContext(ctx);
    unsigned lanes = vector_lanes(t);
    LLVMTypeRef vt = LLVMVectorType(t, lanes);
    LLVMValueRef lane0 = LLVMConstInt(i32, 0, 0);
    LLVMPositionBuilderBefore(b, in);
    LLVMValueRef x =
        LLVMBuildInsertElement(b, LLVMConstNull(vt), LLVMGetOperand(in, 0), lane0, "cmp.x");
    LLVMValueRef y =
        LLVMBuildInsertElement(b, LLVMConstNull(vt), LLVMGetOperand(in, 1), lane0, "cmp.y");
    LLVMValueRef mask = quiet_fcmp_call(b, mod, x, y, p), mask2 = NULL;
    if (lanes == 4) {
        LLVMValueRef two[2] = {lane0, LLVMConstInt(i32, 1, 0)};
        mask2 = LLVMBuildShuffleVector(b, mask, LLVMGetPoison(LLVMTypeOf(mask)),
                                       LLVMConstVector(two, 2), "cmp.2");
    }
    while (LLVMGetFirstUse(in) != NULL) { /* each select uses it once */
        LLVMValueRef s = LLVMGetUser(LLVMGetFirstUse(in));
        LLVMTypeRef vty = LLVMTypeOf(s);
        LLVMTypeKind kind = LLVMGetTypeKind(vty);
        int wide = lanes == 4
                   && (kind == LLVMDoubleTypeKind
                       || (kind == LLVMIntegerTypeKind && LLVMGetIntTypeWidth(vty) == 64));
        LLVMTypeRef st = LLVMVectorType(vty, wide ? 2 : lanes);
        LLVMPositionBuilderBefore(b, s);
        LLVMValueRef a =
            LLVMBuildInsertElement(b, LLVMGetPoison(st), LLVMGetOperand(s, 1), lane0, "sel.a");
        LLVMValueRef c =
            LLVMBuildInsertElement(b, LLVMGetPoison(st), LLVMGetOperand(s, 2), lane0, "sel.b");
        LLVMValueRef v = LLVMBuildSelect(b, wide ? mask2 : mask, a, c, "sel.v");
        LLVMValueRef r = LLVMBuildExtractElement(b, v, lane0, "sel");
        LLVMReplaceAllUsesWith(s, r);
        LLVMInstructionEraseFromParent(s);
    }
    LLVMInstructionEraseFromParent(in);
    if (mask2 != NULL && LLVMGetFirstUse(mask2) == NULL) {
        LLVMInstructionEraseFromParent(mask2);
    }
    return mask;
}

/*
 * AVX-512: a compare that chooses values is the scalar compare with a quiet
 * predicate itself, into a mask register (llvm.x86.avx512.mask.cmp.sd/ss:
 * vcmpgt_oqsd), its selects left scalar (a masked move).  A loaded operand
 * goes second, where the load folds into the compare.  Returns the i1 that
 * replaced `in`.
 */
static LLVMValueRef
quiet_mask_compare(LLVMBuilderRef b, LLVMModuleRef mod, LLVMValueRef in, LLVMRealPredicate p)
{
    static const int imm[] = {
        [LLVMRealOLT] = 0x11, [LLVMRealOLE] = 0x12, [LLVMRealOGT] = 0x1e, [LLVMRealOGE] = 0x1d,
        [LLVMRealULT] = 0x19, [LLVMRealULE] = 0x1a, [LLVMRealUGT] = 0x16, [LLVMRealUGE] = 0x15,
    };
    static const LLVMRealPredicate swapped[] = {
        [LLVMRealOLT] = LLVMRealOGT, [LLVMRealOLE] = LLVMRealOGE, [LLVMRealOGT] = LLVMRealOLT,
        [LLVMRealOGE] = LLVMRealOLE, [LLVMRealULT] = LLVMRealUGT, [LLVMRealULE] = LLVMRealUGE,
        [LLVMRealUGT] = LLVMRealULT, [LLVMRealUGE] = LLVMRealULE,
    };
    LLVMContextRef ctx = LLVMGetModuleContext(mod);
    LLVMValueRef x = LLVMGetOperand(in, 0), y = LLVMGetOperand(in, 1);
    if (LLVMIsALoadInst(x) != NULL && LLVMIsALoadInst(y) == NULL) {
        LLVMValueRef t = x; /* vcmpsd takes memory as its second operand */
        x = y;
        y = t;
        p = swapped[p];
    }
    LLVMTypeRef t = LLVMTypeOf(x), i32 = LLVMInt32TypeInContext(ctx);
    const char *name = LLVMGetTypeKind(t) == LLVMDoubleTypeKind ? "llvm.x86.avx512.mask.cmp.sd"
                                                                : "llvm.x86.avx512.mask.cmp.ss";
    unsigned id = LLVMLookupIntrinsicID(name, strlen(name));
    LLVMTypeRef vt = LLVMVectorType(t, vector_lanes(t));
    LLVMValueRef lane0 = LLVMConstInt(i32, 0, 0);
    LLVMPositionBuilderBefore(b, in);
    LLVMValueRef args[5] = {
        LLVMBuildInsertElement(b, LLVMGetPoison(vt), x, lane0, "cmp.x"),
        LLVMBuildInsertElement(b, LLVMGetPoison(vt), y, lane0, "cmp.y"),
        LLVMConstInt(i32, (unsigned long long)imm[p], 0),
        LLVMConstInt(LLVMInt8TypeInContext(ctx), 0xff, 0),
        LLVMConstInt(i32, 4, 0), /* the current rounding and exception mode */
    };
    LLVMValueRef k =
        LLVMBuildCall2(b, LLVMIntrinsicGetType(ctx, id, NULL, 0),
                       LLVMGetIntrinsicDeclaration(mod, id, NULL, 0), args, 5, "cmp.k");
    LLVMValueRef c = LLVMBuildTrunc(b, k, LLVMInt1TypeInContext(ctx), "cmp.quiet");
    LLVMReplaceAllUsesWith(in, c);
    LLVMInstructionEraseFromParent(in);
    return c;
}

/* How compares that choose values are made: scalar (SSE has no quiet
 * vector predicate, a strict vector compare being one vucomisd a lane;
 * AArch64's fcmp and fcsel are already best), in a vector lane (AVX), or
 * as AVX-512's scalar compare into a mask register. */
enum { QUIET_SCALAR, QUIET_LANES, QUIET_MASKS };

static int
quiet_form(const char *features)
{
    int form = has_feature(features, "+avx512f") ? QUIET_MASKS
               : has_feature(features, "+avx")   ? QUIET_LANES
                                                 : QUIET_SCALAR;
    /* NUMBAVEC_QUIET_FORM=scalar or lanes: what other hosts make (tests) */
    const char *want = getenv("NUMBAVEC_QUIET_FORM");
    if (want != NULL && strcmp(want, "scalar") == 0) {
        form = QUIET_SCALAR;
    } else if (want != NULL && strcmp(want, "lanes") == 0 && form == QUIET_MASKS) {
        form = QUIET_LANES;
    }
    return form;
}

int
cc_weighted(LLVMValueRef in)
{
    return LLVMGetMetadata(in, LLVMGetMDKindID("prof", 4)) != NULL;
}

void
cc_each_instruction(LLVMModuleRef mod, LLVMOpcode op, CcVisit visit, void *ctx)
{
    LLVMBuilderRef b = LLVMCreateBuilderInContext(LLVMGetModuleContext(mod));
    for (LLVMValueRef f = LLVMGetFirstFunction(mod); f != NULL; f = LLVMGetNextFunction(f)) {
        for (LLVMBasicBlockRef bb = LLVMGetFirstBasicBlock(f); bb != NULL;
             bb = LLVMGetNextBasicBlock(bb)) {
            LLVMValueRef next;
            for (LLVMValueRef in = LLVMGetFirstInstruction(bb); in != NULL; in = next) {
                next = LLVMGetNextInstruction(in);
                if (LLVMGetInstructionOpcode(in) == op) {
                    LLVMValueRef go_on = visit(b, in, ctx);
                    next = go_on != NULL ? go_on : next;
                }
            }
        }
    }
    LLVMDisposeBuilder(b);
}

typedef struct QuietPass {
    LLVMModuleRef mod;
    int form;
} QuietPass;

static LLVMValueRef
quiet_compare(LLVMBuilderRef b, LLVMValueRef in, void *ctx)
{
    const QuietPass *q = ctx;
    LLVMRealPredicate p = LLVMGetFCmpPredicate(in);
    if (p < 0 || (size_t)p >= sizeof(quiet_names) / sizeof(quiet_names[0])
        || quiet_names[p] == NULL) {
        return NULL; /* == and != are quiet compares already */
    }
    if (q->form != QUIET_SCALAR && chooses_only(in)) {
        /* its selects, which may follow it, are gone or stay scalar: go on
         * after what replaced it (nothing made here is an fcmp) */
        LLVMValueRef made = q->form == QUIET_MASKS ? quiet_mask_compare(b, q->mod, in, p)
                                                   : quiet_select_form(b, q->mod, in, p);
        return LLVMGetNextInstruction(made);
    }
    LLVMPositionBuilderBefore(b, in);
    LLVMValueRef call = quiet_fcmp_call(b, q->mod, LLVMGetOperand(in, 0), LLVMGetOperand(in, 1), p);
    LLVMReplaceAllUsesWith(in, call);
    LLVMInstructionEraseFromParent(in);
    return NULL;
}

void
cc_pass_quiet_compares(LLVMModuleRef mod, const char *features)
{
    QuietPass q = {mod, quiet_form(features)};
    cc_each_instruction(mod, LLVMFCmp, quiet_compare, &q);
}
