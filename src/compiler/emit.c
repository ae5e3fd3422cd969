/*
 * emit.c - typed IR -> one LLVM function per kernel signature.
 *
 * The kernel becomes `internal alwaysinline <ret> name(<args>)`; the loop
 * wrappers of vectorize/loops.c call it and LLVM inlines it there, so the
 * kernel's body is vectorized inside each loop.  Variables are allocas in
 * the entry block (mem2reg promotes them).  Values are held in their
 * storage kind (cc_storage); the semantics that need care are here:
 * Python's floor division and modulo (NumPy's npy_divmod for floats),
 * integer division by zero (0, plus the divide-by-zero flag that NumPy's
 * np.errstate reads), saturating float->int casts, exact int64/uint64
 * comparisons, Smith's complex division, Python's and/or value semantics.
 */
#include "compiler/compiler.h"

#include <fenv.h>
#include <math.h>
#include <string.h>

#include <llvm/Config/llvm-config.h>

enum { MAX_LOOP_DEPTH = 64 };

typedef struct Emit {
    CcFunction *fn;
    LLVMContextRef ctx;
    LLVMModuleRef mod;
    LLVMBuilderRef b;
    LLVMValueRef func;
    int reachable; /* the insertion point can be reached */
    int depth;     /* loops we are in */
    LLVMBasicBlockRef break_to[MAX_LOOP_DEPTH], continue_to[MAX_LOOP_DEPTH];
    int broken[MAX_LOOP_DEPTH];   /* a break reaches the loop's exit */
    LLVMBasicBlockRef inline_end; /* where the innermost inlined function returns to */
    int inline_returned;          /* some return of it jumped there */
    int fastmath;                 /* fast-math flags will be set: no NaNs */
    /* gufunc kernels (cc_emit_gufunc_kernel) */
    int gufunc;                    /* returns an i32 status, not a value */
    LLVMBasicBlockRef index_error; /* `ret CC_STATUS_INDEX`, made on first use */
    const CcEmitTarget *target;    /* host or GPU math and flags */
} Emit;

/* An array parameter: its data pointer, shape and byte strides (SSA values;
 * an array is never assigned).  var->slot points at one. */
typedef struct ArrayVal {
    LLVMValueRef data;
    LLVMValueRef shape[TS_MAXDIMS];
    LLVMValueRef stride[TS_MAXDIMS];
    int unit_last; /* last dimension: unit element stride */
} ArrayVal;

/* The host: LLVM's math intrinsics and the C library, real FP flags. */
const CcEmitTarget cc_host_target = {"host", NULL, 1, 1};

/* ---- types and constants ---- */

static LLVMTypeRef
type_of(Emit *E, const CcType *t)
{
    if (t->kind != CT_TUPLE) {
        return cc_value_type(E->ctx, cc_storage(t));
    }
    LLVMTypeRef *elems = cc_alloc(E->fn->arena, sizeof(LLVMTypeRef) * (size_t)(t->n + 1));
    if (elems == NULL) {
        return NULL;
    }
    for (int i = 0; i < t->n; i++) {
        if ((elems[i] = type_of(E, t->elems[i])) == NULL) {
            return NULL;
        }
    }
    return LLVMStructTypeInContext(E->ctx, elems, (unsigned)t->n, 0);
}

static TsKind
part_kind(TsKind k)
{
    return k == TS_COMPLEX64 ? TS_FLOAT32 : TS_FLOAT64;
}

static LLVMValueRef
real_const(Emit *E, TsKind k, double v)
{
    return LLVMConstReal(cc_value_type(E->ctx, k), v);
}

static LLVMValueRef
int_const(Emit *E, TsKind k, long long v)
{
    return LLVMConstInt(cc_value_type(E->ctx, k), (unsigned long long)v, 1);
}

static LLVMValueRef
make_complex(Emit *E, TsKind k, LLVMValueRef re, LLVMValueRef im)
{
    LLVMValueRef v = LLVMGetUndef(cc_value_type(E->ctx, k));
    v = LLVMBuildInsertValue(E->b, v, re, 0, "c.re");
    return LLVMBuildInsertValue(E->b, v, im, 1, "c");
}

static LLVMValueRef
re_of(Emit *E, LLVMValueRef z)
{
    return LLVMBuildExtractValue(E->b, z, 0, "re");
}

static LLVMValueRef
im_of(Emit *E, LLVMValueRef z)
{
    return LLVMBuildExtractValue(E->b, z, 1, "im");
}

/* ---- calls of intrinsics and libm ---- */

static LLVMValueRef
intrinsic(Emit *E, const char *name, LLVMTypeRef *overloads, unsigned n_over, LLVMValueRef *args,
          unsigned nargs)
{
    unsigned id = LLVMLookupIntrinsicID(name, strlen(name));
    LLVMValueRef f = LLVMGetIntrinsicDeclaration(E->mod, id, overloads, n_over);
    LLVMTypeRef fty = LLVMIntrinsicGetType(E->ctx, id, overloads, n_over);
    return LLVMBuildCall2(E->b, fty, f, args, nargs, "");
}

/* A float intrinsic overloaded on its one float type: llvm.exp.f32 ... */
static LLVMValueRef libm(Emit *E, const char *base, TsKind k, LLVMValueRef *args, unsigned nargs);

static LLVMValueRef
float_intrinsic(Emit *E, const char *name, TsKind k, LLVMValueRef *args, unsigned nargs)
{
    char buf[48];
    /* a target without LLVM's lowering of llvm.exp & co calls its own
     * library instead (libdevice's __nv_expf on the GPU) */
    if (E->target->math_name != NULL
        && E->target->math_name(name + strlen("llvm."), k, buf, sizeof(buf)) != NULL) {
        return libm(E, name + strlen("llvm."), k, args, nargs);
    }
    LLVMTypeRef t = cc_value_type(E->ctx, k);
    return intrinsic(E, name, &t, 1, args, nargs);
}

/* A libm function of float kind k (sinf for float32, sin for float64),
 * declared pure so that calls vectorize (through libmvec) and hoist. */
static LLVMValueRef
libm(Emit *E, const char *base, TsKind k, LLVMValueRef *args, unsigned nargs)
{
    char name[48];
    if (E->target->math_name == NULL || E->target->math_name(base, k, name, sizeof(name)) == NULL) {
        snprintf(name, sizeof(name), "%s%s", base, k == TS_FLOAT32 ? "f" : "");
    }
    LLVMTypeRef t = cc_value_type(E->ctx, k);
    LLVMTypeRef params[2] = {t, t};
    LLVMTypeRef fty = LLVMFunctionType(t, params, nargs, 0);
    LLVMValueRef f = cc_declare_pure(E->mod, name, fty);
    return LLVMBuildCall2(E->b, fty, f, args, nargs, name);
}

static LLVMValueRef
fabs_of(Emit *E, TsKind k, LLVMValueRef x)
{
    return float_intrinsic(E, "llvm.fabs", k, &x, 1);
}

static LLVMValueRef
floor_of(Emit *E, TsKind k, LLVMValueRef x)
{
    return float_intrinsic(E, "llvm.floor", k, &x, 1);
}

static LLVMValueRef
copysign_of(Emit *E, TsKind k, LLVMValueRef mag, LLVMValueRef sign)
{
    LLVMValueRef args[2] = {mag, sign};
    return float_intrinsic(E, "llvm.copysign", k, args, 2);
}

/* Raises the divide-by-zero flag when cond holds (integer division by 0),
 * as NumPy's integer loops do, so np.errstate applies. */
static void
raise_divbyzero_if(Emit *E, LLVMValueRef cond)
{
    if (!E->target->fp_flags) {
        return; /* a GPU has no flags to raise: the 0 result stays */
    }
    LLVMBasicBlockRef raise = LLVMAppendBasicBlockInContext(E->ctx, E->func, "divzero");
    LLVMBasicBlockRef after = LLVMAppendBasicBlockInContext(E->ctx, E->func, "divzero.after");
    LLVMBuildCondBr(E->b, cond, raise, after);
    LLVMPositionBuilderAtEnd(E->b, raise);
    LLVMTypeRef i32 = LLVMInt32TypeInContext(E->ctx);
    LLVMTypeRef fty = LLVMFunctionType(i32, &i32, 1, 0);
    LLVMValueRef f = LLVMGetNamedFunction(E->mod, "feraiseexcept");
    if (f == NULL) {
        f = LLVMAddFunction(E->mod, "feraiseexcept", fty);
        cc_add_fn_attr(f, "nounwind");
        cc_add_fn_attr(f, "cold");
    }
    LLVMValueRef flag = LLVMConstInt(i32, FE_DIVBYZERO, 0);
    LLVMBuildCall2(E->b, fty, f, &flag, 1, "");
    LLVMBuildBr(E->b, after);
    LLVMPositionBuilderAtEnd(E->b, after);
}

/*
 * An ordered relational comparison (<, <=, >, >=) that raises no invalid
 * flag for a quiet NaN.  x86 implements these predicates with signaling
 * compares (cmpltps & co.), so a plain `fcmp olt` would make NumPy warn
 * "invalid value" where its own np.less does not; and LLVM, which assumes
 * compares never trap, folds away any masking of NaN lanes done with floats.
 * So the order is computed on integer keys of the bit patterns (monotonic
 * in the float order, -0 below +0), and only the quiet predicates `ord` and
 * `oeq` see the floats: a < b is ord(a, b) && key(a) < key(b) && !(a == b).
 * Under fastmath (no NaNs) the plain compare is used.
 */
static LLVMValueRef
order_key(Emit *E, LLVMValueRef x)
{
    LLVMTypeRef ft = LLVMTypeOf(x);
    int vector = LLVMGetTypeKind(ft) == LLVMVectorTypeKind;
    LLVMTypeRef scalar = vector ? LLVMGetElementType(ft) : ft;
    unsigned bits = LLVMGetTypeKind(scalar) == LLVMFloatTypeKind ? 32 : 64;
    LLVMTypeRef it = LLVMIntTypeInContext(E->ctx, bits);
    LLVMValueRef bitsv = LLVMBuildBitCast(E->b, x, it, "bits");
    /* negative values: flip the magnitude bits, so larger magnitudes order lower */
    LLVMValueRef sign = LLVMBuildAShr(E->b, bitsv, LLVMConstInt(it, bits - 1, 0), "");
    LLVMValueRef flip = LLVMBuildLShr(E->b, sign, LLVMConstInt(it, 1, 0), "");
    return LLVMBuildXor(E->b, bitsv, flip, "key");
}

static LLVMValueRef
quiet_fcmp(Emit *E, LLVMRealPredicate pred, LLVMValueRef a, LLVMValueRef b, const char *name)
{
    LLVMIntPredicate ip;
    switch (pred) {
    case LLVMRealOLT:
        ip = LLVMIntSLT;
        break;
    case LLVMRealOLE:
        ip = LLVMIntSLE;
        break;
    case LLVMRealOGT:
        ip = LLVMIntSGT;
        break;
    case LLVMRealOGE:
        ip = LLVMIntSGE;
        break;
    default:
        return LLVMBuildFCmp(E->b, pred, a, b, name);
    }
    if (E->fastmath) {
        return LLVMBuildFCmp(E->b, pred, a, b, name);
    }
    LLVMValueRef ord = LLVMBuildFCmp(E->b, LLVMRealORD, a, b, "ord");
    LLVMValueRef eq = LLVMBuildFCmp(E->b, LLVMRealOEQ, a, b, "eq");
    LLVMValueRef order = LLVMBuildICmp(E->b, ip, order_key(E, a), order_key(E, b), "");
    LLVMValueRef r;
    if (pred == LLVMRealOLE || pred == LLVMRealOGE) {
        r = LLVMBuildOr(E->b, order, eq, ""); /* -0 <= +0 and +0 <= -0 */
    } else {
        r = LLVMBuildAnd(E->b, order, LLVMBuildNot(E->b, eq, ""), "");
    }
    return LLVMBuildAnd(E->b, r, ord, name);
}

/* ---- conversions ---- */

static LLVMValueRef truthy(Emit *E, LLVMValueRef v, TsKind k);

/* float -> integer kind `to`: saturating, NaN -> 0 (Python would raise). */
static LLVMValueRef
float_to_int(Emit *E, LLVMValueRef v, TsKind from, TsKind to)
{
    /* saturating at the target's own range, NaN -> 0: defined for every
     * input (a C or LLVM cast is not), e.g. int8(300.0) == 127 */
    LLVMTypeRef over[2] = {cc_value_type(E->ctx, to), cc_value_type(E->ctx, from)};
    const char *name = ts_is_signed(to) ? "llvm.fptosi.sat" : "llvm.fptoui.sat";
    return intrinsic(E, name, over, 2, &v, 1);
}

static LLVMValueRef
convert(Emit *E, LLVMValueRef v, TsKind from, TsKind to)
{
    if (from == to) {
        return v;
    }
    LLVMTypeRef t = cc_value_type(E->ctx, to);
    if (to == TS_BOOL) {
        return truthy(E, v, from);
    }
    if (ts_is_complex(to)) {
        TsKind p = part_kind(to);
        if (ts_is_complex(from)) {
            return make_complex(E, to, convert(E, re_of(E, v), part_kind(from), p),
                                convert(E, im_of(E, v), part_kind(from), p));
        }
        return make_complex(E, to, convert(E, v, from, p), real_const(E, p, 0.0));
    }
    if (ts_is_complex(from)) {
        return convert(E, re_of(E, v), part_kind(from), to);
    }
    if (from == TS_BOOL) {
        return ts_is_float(to) ? LLVMBuildUIToFP(E->b, v, t, "") : LLVMBuildZExt(E->b, v, t, "");
    }
    if (ts_is_float(from)) {
        if (ts_is_float(to)) {
            return ts_bits(to) > ts_bits(from) ? LLVMBuildFPExt(E->b, v, t, "")
                                               : LLVMBuildFPTrunc(E->b, v, t, "");
        }
        return float_to_int(E, v, from, to);
    }
    if (ts_is_float(to)) {
        return ts_is_signed(from) ? LLVMBuildSIToFP(E->b, v, t, "")
                                  : LLVMBuildUIToFP(E->b, v, t, "");
    }
    if (ts_bits(to) < ts_bits(from)) {
        return LLVMBuildTrunc(E->b, v, t, "");
    }
    return ts_is_signed(from) ? LLVMBuildSExt(E->b, v, t, "") : LLVMBuildZExt(E->b, v, t, "");
}

static LLVMValueRef
convert_type(Emit *E, LLVMValueRef v, const CcType *from, const CcType *to)
{
    if (from->kind == CT_TUPLE || to->kind == CT_TUPLE) {
        return v; /* typeinfer only lets equal tuple types meet */
    }
    return convert(E, v, cc_storage(from), cc_storage(to));
}

/* Python truth value: nonzero; NaN is true; complex: either part. */
static LLVMValueRef
truthy(Emit *E, LLVMValueRef v, TsKind k)
{
    if (k == TS_BOOL) {
        return v;
    }
    if (ts_is_complex(k)) {
        TsKind p = part_kind(k);
        return LLVMBuildOr(E->b, truthy(E, re_of(E, v), p), truthy(E, im_of(E, v), p), "nz");
    }
    if (ts_is_float(k)) {
        return LLVMBuildFCmp(E->b, LLVMRealUNE, v, real_const(E, k, 0.0), "nz");
    }
    return LLVMBuildICmp(E->b, LLVMIntNE, v, int_const(E, k, 0), "nz");
}

/* ---- blocks ---- */

static LLVMBasicBlockRef
new_block(Emit *E, const char *name)
{
    return LLVMAppendBasicBlockInContext(E->ctx, E->func, name);
}

static LLVMBasicBlockRef
current_block(Emit *E)
{
    return LLVMGetInsertBlock(E->b);
}

/* ---- integer arithmetic ---- */

/* Python's // and % on integers; by zero: 0 and the divide-by-zero flag. */
static LLVMValueRef
int_divmod(Emit *E, CcOp op, TsKind k, LLVMValueRef a, LLVMValueRef b)
{
    LLVMValueRef zero = int_const(E, k, 0), one = int_const(E, k, 1);
    LLVMValueRef is_zero = LLVMBuildICmp(E->b, LLVMIntEQ, b, zero, "b.zero");
    raise_divbyzero_if(E, is_zero);
    if (!ts_is_signed(k)) {
        LLVMValueRef safe = LLVMBuildSelect(E->b, is_zero, one, b, "b.safe");
        LLVMValueRef r = op == OP_FLOORDIV ? LLVMBuildUDiv(E->b, a, safe, "q")
                                           : LLVMBuildURem(E->b, a, safe, "r");
        return LLVMBuildSelect(E->b, is_zero, zero, r, op == OP_FLOORDIV ? "floordiv" : "mod");
    }
    /* b == -1 is special-cased: INT_MIN / -1 traps on x86 */
    LLVMValueRef is_m1 = LLVMBuildICmp(E->b, LLVMIntEQ, b, int_const(E, k, -1), "b.m1");
    LLVMValueRef special = LLVMBuildOr(E->b, is_zero, is_m1, "");
    LLVMValueRef safe = LLVMBuildSelect(E->b, special, one, b, "b.safe");
    LLVMValueRef q = LLVMBuildSDiv(E->b, a, safe, "q");
    LLVMValueRef r = LLVMBuildSRem(E->b, a, safe, "r");
    /* C truncates; Python floors: adjust when the remainder's sign differs */
    LLVMValueRef r_nz = LLVMBuildICmp(E->b, LLVMIntNE, r, zero, "");
    LLVMValueRef sign = LLVMBuildICmp(E->b, LLVMIntSLT, LLVMBuildXor(E->b, r, b, ""), zero, "");
    LLVMValueRef adj = LLVMBuildAnd(E->b, r_nz, sign, "adj");
    if (op == OP_FLOORDIV) {
        LLVMValueRef q2 = LLVMBuildSub(E->b, q, LLVMBuildZExt(E->b, adj, LLVMTypeOf(q), ""), "");
        LLVMValueRef neg = LLVMBuildSub(E->b, zero, a, "neg");
        return LLVMBuildSelect(E->b, is_zero, zero, LLVMBuildSelect(E->b, is_m1, neg, q2, ""),
                               "floordiv");
    }
    LLVMValueRef r2 = LLVMBuildAdd(E->b, r, LLVMBuildSelect(E->b, adj, b, zero, ""), "");
    return LLVMBuildSelect(E->b, special, zero, r2, "mod");
}

/*
 * Integer a ** b by squaring.  A negative exponent gives the truncated
 * value of the exact result: 1 for a == 1, +-1 for a == -1, else 0
 * (NumPy raises for arrays; a kernel cannot, see DESIGN.md).
 */
static LLVMValueRef
int_pow(Emit *E, TsKind k, LLVMValueRef a, LLVMValueRef b)
{
    LLVMValueRef zero = int_const(E, k, 0), one = int_const(E, k, 1);
    LLVMBasicBlockRef entry = current_block(E);
    LLVMBasicBlockRef loop = new_block(E, "ipow.loop"), done = new_block(E, "ipow.done");
    LLVMValueRef neg = ts_is_signed(k) ? LLVMBuildICmp(E->b, LLVMIntSLT, b, zero, "e.neg")
                                       : LLVMConstInt(LLVMInt1TypeInContext(E->ctx), 0, 0);
    LLVMValueRef e0 = LLVMBuildSelect(E->b, neg, zero, b, "e");
    LLVMValueRef start = LLVMBuildICmp(E->b, LLVMIntEQ, e0, zero, "");
    LLVMBuildCondBr(E->b, start, done, loop);

    LLVMPositionBuilderAtEnd(E->b, loop);
    LLVMTypeRef t = cc_value_type(E->ctx, k);
    LLVMValueRef r = LLVMBuildPhi(E->b, t, "r"), base = LLVMBuildPhi(E->b, t, "base");
    LLVMValueRef e = LLVMBuildPhi(E->b, t, "e");
    LLVMValueRef odd = LLVMBuildTrunc(E->b, e, LLVMInt1TypeInContext(E->ctx), "odd");
    LLVMValueRef r2 = LLVMBuildSelect(E->b, odd, LLVMBuildMul(E->b, r, base, ""), r, "");
    LLVMValueRef base2 = LLVMBuildMul(E->b, base, base, "");
    LLVMValueRef e2 = LLVMBuildLShr(E->b, e, one, "");
    LLVMValueRef more = LLVMBuildICmp(E->b, LLVMIntNE, e2, zero, "");
    LLVMBasicBlockRef loop_end = current_block(E);
    LLVMBuildCondBr(E->b, more, loop, done);
    LLVMValueRef r_in[2] = {one, r2}, base_in[2] = {a, base2}, e_in[2] = {e0, e2};
    LLVMBasicBlockRef from[2] = {entry, loop_end};
    LLVMAddIncoming(r, r_in, from, 2);
    LLVMAddIncoming(base, base_in, from, 2);
    LLVMAddIncoming(e, e_in, from, 2);

    LLVMPositionBuilderAtEnd(E->b, done);
    LLVMValueRef result = LLVMBuildPhi(E->b, t, "ipow");
    LLVMValueRef res_in[2] = {one, r2};
    LLVMAddIncoming(result, res_in, from, 2);
    if (!ts_is_signed(k)) {
        return result;
    }
    /* negative exponents */
    LLVMValueRef a_one = LLVMBuildICmp(E->b, LLVMIntEQ, a, one, "");
    LLVMValueRef a_m1 = LLVMBuildICmp(E->b, LLVMIntEQ, a, int_const(E, k, -1), "");
    LLVMValueRef b_odd = LLVMBuildTrunc(E->b, b, LLVMInt1TypeInContext(E->ctx), "");
    LLVMValueRef m1_pow = LLVMBuildSelect(E->b, b_odd, int_const(E, k, -1), one, "");
    LLVMValueRef negres =
        LLVMBuildSelect(E->b, a_one, one, LLVMBuildSelect(E->b, a_m1, m1_pow, zero, ""), "");
    return LLVMBuildSelect(E->b, neg, negres, result, "pow");
}

/* NumPy's shifts: a shift by the width or more gives 0 (or -1 for >> of
 * a negative value) instead of LLVM's poison. */
static LLVMValueRef
int_shift(Emit *E, CcOp op, TsKind k, LLVMValueRef a, LLVMValueRef b)
{
    LLVMValueRef width = int_const(E, k, ts_bits(k));
    LLVMValueRef in_range = LLVMBuildICmp(E->b, LLVMIntULT, b, width, "sh.ok");
    LLVMValueRef safe = LLVMBuildSelect(E->b, in_range, b, int_const(E, k, 0), "");
    if (op == OP_LSHIFT) {
        return LLVMBuildSelect(E->b, in_range, LLVMBuildShl(E->b, a, safe, ""), int_const(E, k, 0),
                               "shl");
    }
    if (!ts_is_signed(k)) {
        return LLVMBuildSelect(E->b, in_range, LLVMBuildLShr(E->b, a, safe, ""), int_const(E, k, 0),
                               "shr");
    }
    LLVMValueRef fill = LLVMBuildAShr(E->b, a, int_const(E, k, ts_bits(k) - 1), "");
    return LLVMBuildSelect(E->b, in_range, LLVMBuildAShr(E->b, a, safe, ""), fill, "shr");
}

static LLVMValueRef
int_binop(Emit *E, CcOp op, TsKind k, LLVMValueRef a, LLVMValueRef b)
{
    if (k == TS_BOOL) {
        /* NumPy's bool loops: + is or, * is and */
        switch (op) {
        case OP_ADD:
        case OP_BITOR:
            return LLVMBuildOr(E->b, a, b, "or");
        case OP_MUL:
        case OP_BITAND:
            return LLVMBuildAnd(E->b, a, b, "and");
        case OP_BITXOR:
            return LLVMBuildXor(E->b, a, b, "xor");
        default:
            break;
        }
    }
    switch (op) {
    case OP_ADD:
        return LLVMBuildAdd(E->b, a, b, "add");
    case OP_SUB:
        return LLVMBuildSub(E->b, a, b, "sub");
    case OP_MUL:
        return LLVMBuildMul(E->b, a, b, "mul");
    case OP_FLOORDIV:
    case OP_MOD:
        return int_divmod(E, op, k, a, b);
    case OP_POW:
        return int_pow(E, k, a, b);
    case OP_LSHIFT:
    case OP_RSHIFT:
        return int_shift(E, op, k, a, b);
    case OP_BITAND:
        return LLVMBuildAnd(E->b, a, b, "and");
    case OP_BITOR:
        return LLVMBuildOr(E->b, a, b, "or");
    case OP_BITXOR:
        return LLVMBuildXor(E->b, a, b, "xor");
    default:
        return NULL;
    }
}

/* ---- float arithmetic ---- */

/* NumPy's npy_divmod: Python's floor division and modulo for floats. */
static LLVMValueRef
float_divmod(Emit *E, CcOp op, TsKind k, LLVMValueRef a, LLVMValueRef b)
{
    LLVMValueRef zero = real_const(E, k, 0.0), one = real_const(E, k, 1.0);
    LLVMValueRef mod = LLVMBuildFRem(E->b, a, b, "fmod");
    LLVMValueRef div = LLVMBuildFDiv(E->b, LLVMBuildFSub(E->b, a, mod, ""), b, "div");
    LLVMValueRef mod_nz = LLVMBuildFCmp(E->b, LLVMRealUNE, mod, zero, "");
    LLVMValueRef b_neg = quiet_fcmp(E, LLVMRealOLT, b, zero, "");
    LLVMValueRef mod_neg = quiet_fcmp(E, LLVMRealOLT, mod, zero, "");
    LLVMValueRef fix = LLVMBuildAnd(E->b, mod_nz, LLVMBuildXor(E->b, b_neg, mod_neg, ""), "fix");
    LLVMValueRef b_zero = LLVMBuildFCmp(E->b, LLVMRealOEQ, b, zero, "b.zero");
    if (op == OP_MOD) {
        LLVMValueRef m = LLVMBuildSelect(E->b, fix, LLVMBuildFAdd(E->b, mod, b, ""), mod, "");
        m = LLVMBuildSelect(E->b, mod_nz, m, copysign_of(E, k, zero, b), "");
        return LLVMBuildSelect(E->b, b_zero, mod, m, "mod");
    }
    div = LLVMBuildSelect(E->b, fix, LLVMBuildFSub(E->b, div, one, ""), div, "");
    LLVMValueRef fl = floor_of(E, k, div);
    LLVMValueRef up =
        quiet_fcmp(E, LLVMRealOGT, LLVMBuildFSub(E->b, div, fl, ""), real_const(E, k, 0.5), "");
    fl = LLVMBuildSelect(E->b, up, LLVMBuildFAdd(E->b, fl, one, ""), fl, "");
    LLVMValueRef quotient = LLVMBuildFDiv(E->b, a, b, "q");
    LLVMValueRef div_nz = LLVMBuildFCmp(E->b, LLVMRealUNE, div, zero, "");
    LLVMValueRef r = LLVMBuildSelect(E->b, div_nz, fl, copysign_of(E, k, zero, quotient), "");
    return LLVMBuildSelect(E->b, b_zero, quotient, r, "floordiv");
}

static LLVMValueRef
float_binop(Emit *E, CcOp op, TsKind k, LLVMValueRef a, LLVMValueRef b)
{
    LLVMValueRef args[2] = {a, b};
    switch (op) {
    case OP_ADD:
        return LLVMBuildFAdd(E->b, a, b, "fadd");
    case OP_SUB:
        return LLVMBuildFSub(E->b, a, b, "fsub");
    case OP_MUL:
        return LLVMBuildFMul(E->b, a, b, "fmul");
    case OP_DIV:
        return LLVMBuildFDiv(E->b, a, b, "fdiv");
    case OP_FLOORDIV:
    case OP_MOD:
        return float_divmod(E, op, k, a, b);
    case OP_POW:
        return float_intrinsic(E, "llvm.pow", k, args, 2);
    default:
        return NULL;
    }
}

/* ---- complex arithmetic ---- */

static LLVMValueRef
complex_mul(Emit *E, TsKind k, LLVMValueRef x, LLVMValueRef y)
{
    LLVMValueRef a = re_of(E, x), b = im_of(E, x), c = re_of(E, y), d = im_of(E, y);
    LLVMValueRef re =
        LLVMBuildFSub(E->b, LLVMBuildFMul(E->b, a, c, ""), LLVMBuildFMul(E->b, b, d, ""), "");
    LLVMValueRef im =
        LLVMBuildFAdd(E->b, LLVMBuildFMul(E->b, a, d, ""), LLVMBuildFMul(E->b, b, c, ""), "");
    return make_complex(E, k, re, im);
}

/* Smith's algorithm, as NumPy divides complex numbers; branches (not
 * selects) so that no division of an untaken path raises a flag. */
static LLVMValueRef
complex_div(Emit *E, TsKind k, LLVMValueRef x, LLVMValueRef y)
{
    TsKind p = part_kind(k);
    LLVMValueRef a = re_of(E, x), b = im_of(E, x), c = re_of(E, y), d = im_of(E, y);
    LLVMValueRef ac = fabs_of(E, p, c), ad = fabs_of(E, p, d);
    LLVMValueRef zero = real_const(E, p, 0.0), one = real_const(E, p, 1.0);
    LLVMBasicBlockRef bb_re = new_block(E, "cdiv.re"), bb_im = new_block(E, "cdiv.im");
    LLVMBasicBlockRef bb_zero = new_block(E, "cdiv.zero"), bb_smith = new_block(E, "cdiv.smith");
    LLVMBasicBlockRef done = new_block(E, "cdiv.done");
    LLVMBuildCondBr(E->b, quiet_fcmp(E, LLVMRealOGE, ac, ad, ""), bb_re, bb_im);

    LLVMPositionBuilderAtEnd(E->b, bb_re);
    LLVMValueRef both_zero = LLVMBuildAnd(E->b, LLVMBuildFCmp(E->b, LLVMRealOEQ, ac, zero, ""),
                                          LLVMBuildFCmp(E->b, LLVMRealOEQ, ad, zero, ""), "");
    LLVMBuildCondBr(E->b, both_zero, bb_zero, bb_smith);

    LLVMPositionBuilderAtEnd(E->b, bb_zero);
    LLVMValueRef z =
        make_complex(E, k, LLVMBuildFDiv(E->b, a, ac, ""), LLVMBuildFDiv(E->b, b, ad, ""));
    LLVMBuildBr(E->b, done);

    LLVMPositionBuilderAtEnd(E->b, bb_smith);
    LLVMValueRef rat = LLVMBuildFDiv(E->b, d, c, "rat");
    LLVMValueRef scl = LLVMBuildFDiv(
        E->b, one, LLVMBuildFAdd(E->b, c, LLVMBuildFMul(E->b, d, rat, ""), ""), "scl");
    LLVMValueRef s1 = make_complex(
        E, k,
        LLVMBuildFMul(E->b, LLVMBuildFAdd(E->b, a, LLVMBuildFMul(E->b, b, rat, ""), ""), scl, ""),
        LLVMBuildFMul(E->b, LLVMBuildFSub(E->b, b, LLVMBuildFMul(E->b, a, rat, ""), ""), scl, ""));
    LLVMBasicBlockRef smith_end = current_block(E);
    LLVMBuildBr(E->b, done);

    LLVMPositionBuilderAtEnd(E->b, bb_im);
    LLVMValueRef rat2 = LLVMBuildFDiv(E->b, c, d, "rat");
    LLVMValueRef scl2 = LLVMBuildFDiv(
        E->b, one, LLVMBuildFAdd(E->b, d, LLVMBuildFMul(E->b, c, rat2, ""), ""), "scl");
    LLVMValueRef s2 = make_complex(
        E, k,
        LLVMBuildFMul(E->b, LLVMBuildFAdd(E->b, LLVMBuildFMul(E->b, a, rat2, ""), b, ""), scl2, ""),
        LLVMBuildFMul(E->b, LLVMBuildFSub(E->b, LLVMBuildFMul(E->b, b, rat2, ""), a, ""), scl2,
                      ""));
    LLVMBasicBlockRef im_end = current_block(E);
    LLVMBuildBr(E->b, done);

    LLVMPositionBuilderAtEnd(E->b, done);
    LLVMValueRef phi = LLVMBuildPhi(E->b, cc_value_type(E->ctx, k), "cdiv");
    LLVMValueRef vals[3] = {z, s1, s2};
    LLVMBasicBlockRef from[3] = {bb_zero, smith_end, im_end};
    LLVMAddIncoming(phi, vals, from, 3);
    return phi;
}

static LLVMValueRef
complex_abs(Emit *E, TsKind k, LLVMValueRef z)
{
    LLVMValueRef parts[2] = {re_of(E, z), im_of(E, z)};
    return libm(E, "hypot", part_kind(k), parts, 2);
}

static LLVMValueRef
complex_exp(Emit *E, TsKind k, LLVMValueRef z)
{
    TsKind p = part_kind(k);
    LLVMValueRef x = re_of(E, z), y = im_of(E, z);
    LLVMValueRef ex = float_intrinsic(E, "llvm.exp", p, &x, 1);
    LLVMValueRef c = float_intrinsic(E, "llvm.cos", p, &y, 1);
    LLVMValueRef s = float_intrinsic(E, "llvm.sin", p, &y, 1);
    return make_complex(E, k, LLVMBuildFMul(E->b, ex, c, ""), LLVMBuildFMul(E->b, ex, s, ""));
}

static LLVMValueRef
complex_log(Emit *E, TsKind k, LLVMValueRef z)
{
    TsKind p = part_kind(k);
    LLVMValueRef r = complex_abs(E, k, z);
    LLVMValueRef yx[2] = {im_of(E, z), re_of(E, z)};
    return make_complex(E, k, float_intrinsic(E, "llvm.log", p, &r, 1), libm(E, "atan2", p, yx, 2));
}

/* An alloca in the function's entry block (a loop's variables). */
static LLVMValueRef
entry_alloca(Emit *E, LLVMTypeRef t, const char *name)
{
    LLVMBasicBlockRef entry = LLVMGetEntryBasicBlock(E->func);
    LLVMBuilderRef at = LLVMCreateBuilderInContext(E->ctx);
    LLVMPositionBuilder(at, entry, LLVMGetFirstInstruction(entry));
    LLVMValueRef slot = LLVMBuildAlloca(at, t, name);
    LLVMDisposeBuilder(at);
    return slot;
}

/* z ** n for an integer |n| < 100 by squaring; a negative n divides 1 by it. */
static LLVMValueRef
complex_powi(Emit *E, TsKind k, LLVMValueRef z, LLVMValueRef n)
{
    TsKind p = part_kind(k);
    LLVMTypeRef ct = cc_value_type(E->ctx, k), i64 = LLVMInt64TypeInContext(E->ctx);
    LLVMValueRef zero64 = LLVMConstInt(i64, 0, 0);
    LLVMValueRef one = make_complex(E, k, real_const(E, p, 1.0), real_const(E, p, 0.0));
    LLVMValueRef r_slot = entry_alloca(E, ct, "cpow.r"), p_slot = entry_alloca(E, ct, "cpow.p");
    LLVMValueRef m_slot = entry_alloca(E, i64, "cpow.m");
    LLVMValueRef neg = LLVMBuildICmp(E->b, LLVMIntSLT, n, zero64, "");
    LLVMBuildStore(E->b, one, r_slot);
    LLVMBuildStore(E->b, z, p_slot);
    LLVMBuildStore(E->b, LLVMBuildSelect(E->b, neg, LLVMBuildNeg(E->b, n, ""), n, "m"), m_slot);
    LLVMBasicBlockRef loop = new_block(E, "cpow.loop"), done = new_block(E, "cpow.done");
    LLVMBuildBr(E->b, loop);
    LLVMPositionBuilderAtEnd(E->b, loop);
    LLVMValueRef m = LLVMBuildLoad2(E->b, i64, m_slot, "");
    LLVMValueRef r = LLVMBuildLoad2(E->b, ct, r_slot, ""),
                 pw = LLVMBuildLoad2(E->b, ct, p_slot, "");
    LLVMValueRef odd = LLVMBuildTrunc(E->b, m, LLVMInt1TypeInContext(E->ctx), "");
    LLVMBuildStore(E->b, LLVMBuildSelect(E->b, odd, complex_mul(E, k, r, pw), r, ""), r_slot);
    LLVMBuildStore(E->b, complex_mul(E, k, pw, pw), p_slot);
    LLVMValueRef m2 = LLVMBuildLShr(E->b, m, LLVMConstInt(i64, 1, 0), "");
    LLVMBuildStore(E->b, m2, m_slot);
    LLVMBuildCondBr(E->b, LLVMBuildICmp(E->b, LLVMIntNE, m2, zero64, ""), loop, done);
    LLVMPositionBuilderAtEnd(E->b, done);
    LLVMValueRef result = LLVMBuildLoad2(E->b, ct, r_slot, "cpow.int");
    LLVMBasicBlockRef inv = new_block(E, "cpow.inv"), out = new_block(E, "cpow.out");
    LLVMBasicBlockRef from = current_block(E);
    LLVMBuildCondBr(E->b, neg, inv, out);
    LLVMPositionBuilderAtEnd(E->b, inv);
    LLVMValueRef recip = complex_div(E, k, one, result);
    LLVMBasicBlockRef inv_end = current_block(E);
    LLVMBuildBr(E->b, out);
    LLVMPositionBuilderAtEnd(E->b, out);
    LLVMValueRef phi = LLVMBuildPhi(E->b, ct, "cpow.n");
    LLVMValueRef vals[2] = {result, recip};
    LLVMBasicBlockRef blocks[2] = {from, inv_end};
    LLVMAddIncoming(phi, vals, blocks, 2);
    /* NumPy's npy_cpow: n = 1, 2, 3 multiply directly */
    LLVMValueRef sq = complex_mul(E, k, z, z), cube = complex_mul(E, k, sq, z);
    LLVMValueRef small = LLVMBuildSelect(
        E->b, LLVMBuildICmp(E->b, LLVMIntEQ, n, LLVMConstInt(i64, 3, 0), ""), cube, phi, "");
    small = LLVMBuildSelect(E->b, LLVMBuildICmp(E->b, LLVMIntEQ, n, LLVMConstInt(i64, 2, 0), ""),
                            sq, small, "");
    return LLVMBuildSelect(E->b, LLVMBuildICmp(E->b, LLVMIntEQ, n, LLVMConstInt(i64, 1, 0), ""), z,
                           small, "cpow.small");
}

/*
 * z ** w as NumPy computes it (npy_cpow): w == 0 gives 1; z == 0 gives 0
 * for a positive real w, else NaN; an integer real w with |w| < 100 is
 * repeated multiplication (so (1j)**2 is exactly -1; n = 1, 2, 3 are z, z*z,
 * z*z*z, never 1*z, whose 0*inf would make NaNs); otherwise exp(w log z).
 */
static LLVMValueRef
complex_pow(Emit *E, TsKind k, LLVMValueRef z, LLVMValueRef w)
{
    TsKind p = part_kind(k);
    LLVMValueRef zero = real_const(E, p, 0.0);
    LLVMValueRef wr = re_of(E, w), wi = im_of(E, w);
    LLVMValueRef w_zero = LLVMBuildNot(E->b, truthy(E, w, k), "w.zero");
    LLVMValueRef z_zero = LLVMBuildNot(E->b, truthy(E, z, k), "z.zero");
    LLVMValueRef wi_zero = LLVMBuildFCmp(E->b, LLVMRealOEQ, wi, zero, "");
    LLVMValueRef trunc = float_intrinsic(E, "llvm.trunc", p, &wr, 1);
    LLVMValueRef small = quiet_fcmp(E, LLVMRealOLT, fabs_of(E, p, wr), real_const(E, p, 100.0), "");
    LLVMValueRef is_int = LLVMBuildAnd(
        E->b, LLVMBuildAnd(E->b, wi_zero, LLVMBuildFCmp(E->b, LLVMRealOEQ, wr, trunc, ""), ""),
        small, "w.int");
    LLVMBasicBlockRef b_int = new_block(E, "cpow.int"), b_gen = new_block(E, "cpow.gen");
    LLVMBasicBlockRef done = new_block(E, "cpow.done");
    /* the special cases: w == 0 gives 1; z == 0 gives 0 for a positive real w */
    LLVMValueRef nanv = real_const(E, p, NAN);
    LLVMValueRef one = make_complex(E, k, real_const(E, p, 1.0), zero);
    LLVMValueRef pos_real = quiet_fcmp(E, LLVMRealOGT, wr, zero, "");
    LLVMValueRef at_zero = LLVMBuildSelect(E->b, pos_real, make_complex(E, k, zero, zero),
                                           make_complex(E, k, nanv, nanv), "");
    LLVMValueRef r_special = LLVMBuildSelect(E->b, w_zero, one, at_zero, "cpow.special");
    LLVMBasicBlockRef start = current_block(E);
    LLVMValueRef special = LLVMBuildOr(E->b, w_zero, z_zero, "");
    LLVMBasicBlockRef b_rest = new_block(E, "cpow.rest");
    LLVMBuildCondBr(E->b, special, done, b_rest);
    LLVMPositionBuilderAtEnd(E->b, b_rest);
    LLVMBuildCondBr(E->b, is_int, b_int, b_gen);

    LLVMPositionBuilderAtEnd(E->b, b_int);
    LLVMValueRef n = LLVMBuildFPToSI(E->b, wr, LLVMInt64TypeInContext(E->ctx), "n");
    LLVMValueRef r_int = complex_powi(E, k, z, n);
    LLVMBasicBlockRef int_end = current_block(E);
    LLVMBuildBr(E->b, done);

    LLVMPositionBuilderAtEnd(E->b, b_gen);
    LLVMValueRef r_gen = complex_exp(E, k, complex_mul(E, k, w, complex_log(E, k, z)));
    LLVMBasicBlockRef gen_end = current_block(E);
    LLVMBuildBr(E->b, done);

    LLVMMoveBasicBlockAfter(done, gen_end);
    LLVMPositionBuilderAtEnd(E->b, done);
    LLVMValueRef phi = LLVMBuildPhi(E->b, cc_value_type(E->ctx, k), "cpow");
    LLVMValueRef vals[3] = {r_special, r_int, r_gen};
    LLVMBasicBlockRef from[3] = {start, int_end, gen_end};
    LLVMAddIncoming(phi, vals, from, 3);
    return phi;
}

static LLVMValueRef
complex_binop(Emit *E, CcOp op, TsKind k, LLVMValueRef x, LLVMValueRef y)
{
    switch (op) {
    case OP_ADD:
        return make_complex(E, k, LLVMBuildFAdd(E->b, re_of(E, x), re_of(E, y), ""),
                            LLVMBuildFAdd(E->b, im_of(E, x), im_of(E, y), ""));
    case OP_SUB:
        return make_complex(E, k, LLVMBuildFSub(E->b, re_of(E, x), re_of(E, y), ""),
                            LLVMBuildFSub(E->b, im_of(E, x), im_of(E, y), ""));
    case OP_MUL:
        return complex_mul(E, k, x, y);
    case OP_DIV:
        return complex_div(E, k, x, y);
    case OP_POW:
        return complex_pow(E, k, x, y);
    default:
        return NULL;
    }
}

/* ---- expressions ---- */

static LLVMValueRef expr(Emit *E, CcNode *n);

/* Emits n and converts it to kind k. */
static LLVMValueRef
expr_as(Emit *E, CcNode *n, TsKind k)
{
    LLVMValueRef v = expr(E, n);
    return v ? convert(E, v, cc_storage(n->ty), k) : NULL;
}

static LLVMValueRef
arith(Emit *E, CcOp op, TsKind k, LLVMValueRef a, LLVMValueRef b)
{
    if (ts_is_complex(k)) {
        return complex_binop(E, op, k, a, b);
    }
    if (ts_is_float(k)) {
        return float_binop(E, op, k, a, b);
    }
    return int_binop(E, op, k, a, b);
}

static LLVMValueRef
binop(Emit *E, CcNode *n)
{
    TsKind k = cc_storage(n->ty);
    LLVMValueRef a = expr_as(E, n->lhs, k);
    LLVMValueRef b = a ? expr_as(E, n->rhs, k) : NULL;
    if (b == NULL) {
        return NULL;
    }
    LLVMValueRef r = arith(E, n->op, k, a, b);
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
        LLVMValueRef v = expr(E, n->lhs);
        return v ? LLVMBuildNot(E->b, truthy(E, v, cc_storage(n->lhs->ty)), "not") : NULL;
    }
    LLVMValueRef v = expr_as(E, n->lhs, k);
    if (v == NULL || n->op == OP_POS) {
        return v;
    }
    if (n->op == OP_INVERT) {
        return LLVMBuildNot(E->b, v, "inv");
    }
    if (ts_is_complex(k)) {
        return make_complex(E, k, LLVMBuildFNeg(E->b, re_of(E, v), ""),
                            LLVMBuildFNeg(E->b, im_of(E, v), ""));
    }
    return ts_is_float(k) ? LLVMBuildFNeg(E->b, v, "neg") : LLVMBuildNeg(E->b, v, "neg");
}

static LLVMIntPredicate
int_pred(CcOp op, int is_signed)
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
static LLVMValueRef
wide_int_of(Emit *E, const CcNode *node, LLVMValueRef v, TsKind k, unsigned bits)
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
        return LLVMBuildZExt(E->b, v, t, "");
    }
    return LLVMBuildSExt(E->b, v, t, "");
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
        return LLVMBuildICmp(E->b, int_pred(op, 1), wide_int_of(E, na, a, ka, bits),
                             wide_int_of(E, nb, b, kb, bits), "cmp");
    }
    a = convert(E, a, ka, k);
    b = convert(E, b, kb, k);
    if (ts_is_complex(k)) {
        TsKind p = part_kind(k);
        LLVMValueRef re = compare_values(E, op, re_of(E, a), cc_scalar_type(p), NULL, re_of(E, b),
                                         cc_scalar_type(p), NULL);
        LLVMValueRef im = compare_values(E, op, im_of(E, a), cc_scalar_type(p), NULL, im_of(E, b),
                                         cc_scalar_type(p), NULL);
        return op == OP_EQ ? LLVMBuildAnd(E->b, re, im, "ceq") : LLVMBuildOr(E->b, re, im, "cne");
    }
    if (ts_is_float(k)) {
        return quiet_fcmp(E, real_pred(op), a, b, "cmp");
    }
    return LLVMBuildICmp(E->b, int_pred(op, k != TS_BOOL && ts_is_signed(k)), a, b, "cmp");
}

/* a < b < c: each operand evaluated once, stopping at the first false. */
static LLVMValueRef
compare(Emit *E, CcNode *n)
{
    LLVMValueRef prev = expr(E, n->args[0]);
    if (prev == NULL) {
        return NULL;
    }
    if (n->nargs == 2) {
        LLVMValueRef b = expr(E, n->args[1]);
        return b ? compare_values(E, n->ops[0], prev, n->args[0]->ty, n->args[0], b, n->args[1]->ty,
                                  n->args[1])
                 : NULL;
    }
    LLVMBasicBlockRef done = new_block(E, "cmp.done");
    LLVMValueRef *phi_vals = cc_alloc(E->fn->arena, sizeof(LLVMValueRef) * (size_t)n->nargs);
    LLVMBasicBlockRef *phi_from =
        cc_alloc(E->fn->arena, sizeof(LLVMBasicBlockRef) * (size_t)n->nargs);
    if (phi_vals == NULL || phi_from == NULL) {
        return NULL;
    }
    int nphi = 0;
    for (int i = 1; i < n->nargs; i++) {
        LLVMValueRef b = expr(E, n->args[i]);
        if (b == NULL) {
            return NULL;
        }
        LLVMValueRef c = compare_values(E, n->ops[i - 1], prev, n->args[i - 1]->ty, n->args[i - 1],
                                        b, n->args[i]->ty, n->args[i]);
        if (i == n->nargs - 1) {
            phi_vals[nphi] = c;
            phi_from[nphi++] = current_block(E);
            LLVMBuildBr(E->b, done);
            break;
        }
        LLVMBasicBlockRef next = new_block(E, "cmp.next");
        phi_vals[nphi] = c;
        phi_from[nphi++] = current_block(E);
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
    LLVMTypeRef t = type_of(E, n->ty);
    LLVMBasicBlockRef done = new_block(E, n->op == OP_AND ? "and.done" : "or.done");
    int count = n->nargs;
    LLVMValueRef *vals = cc_alloc(E->fn->arena, sizeof(LLVMValueRef) * (size_t)count);
    LLVMBasicBlockRef *from = cc_alloc(E->fn->arena, sizeof(LLVMBasicBlockRef) * (size_t)count);
    if (vals == NULL || from == NULL) {
        return NULL;
    }
    for (int i = 0; i < count; i++) {
        LLVMValueRef v = expr(E, n->args[i]);
        if (v == NULL) {
            return NULL;
        }
        LLVMValueRef as = convert_type(E, v, n->args[i]->ty, n->ty);
        vals[i] = as;
        if (i == count - 1) {
            from[i] = current_block(E);
            LLVMBuildBr(E->b, done);
            break;
        }
        LLVMValueRef c = truthy(E, v, cc_storage(n->args[i]->ty));
        from[i] = current_block(E);
        LLVMBasicBlockRef next = new_block(E, "bool.next");
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

static LLVMValueRef
ifexp(Emit *E, CcNode *n)
{
    LLVMValueRef c = expr(E, n->cond);
    if (c == NULL) {
        return NULL;
    }
    c = truthy(E, c, cc_storage(n->cond->ty));
    LLVMBasicBlockRef then = new_block(E, "ifx.then"), els = new_block(E, "ifx.else");
    LLVMBasicBlockRef done = new_block(E, "ifx.done");
    LLVMBuildCondBr(E->b, c, then, els);
    LLVMPositionBuilderAtEnd(E->b, then);
    LLVMValueRef a = expr(E, n->then);
    if (a == NULL) {
        return NULL;
    }
    a = convert_type(E, a, n->then->ty, n->ty);
    LLVMBasicBlockRef then_end = current_block(E);
    LLVMBuildBr(E->b, done);
    LLVMPositionBuilderAtEnd(E->b, els);
    LLVMValueRef b = expr(E, n->els);
    if (b == NULL) {
        return NULL;
    }
    b = convert_type(E, b, n->els->ty, n->ty);
    LLVMBasicBlockRef els_end = current_block(E);
    LLVMBuildBr(E->b, done);
    LLVMPositionBuilderAtEnd(E->b, done);
    LLVMValueRef phi = LLVMBuildPhi(E->b, type_of(E, n->ty), "ifx");
    LLVMValueRef vals[2] = {a, b};
    LLVMBasicBlockRef from[2] = {then_end, els_end};
    LLVMAddIncoming(phi, vals, from, 2);
    return phi;
}

static LLVMValueRef
constant(Emit *E, CcNode *n)
{
    TsKind k = cc_storage(n->ty);
    if (ts_is_complex(k)) {
        LLVMValueRef parts[2] = {real_const(E, part_kind(k), n->fval),
                                 real_const(E, part_kind(k), n->fimag)};
        return LLVMConstStructInContext(E->ctx, parts, 2, 0);
    }
    if (ts_is_float(k)) {
        return real_const(E, k, n->fval);
    }
    return LLVMConstInt(cc_value_type(E->ctx, k), (unsigned long long)n->ival, 0);
}

/* ---- builtins ---- */

static LLVMValueRef
math_op(Emit *E, CcMathOp op, TsKind k, LLVMValueRef *a)
{
    static const char *const intrinsics[] = {
        [M_EXP] = "llvm.exp",           [M_LOG] = "llvm.log",     [M_LOG2] = "llvm.log2",
        [M_LOG10] = "llvm.log10",       [M_SQRT] = "llvm.sqrt",   [M_SIN] = "llvm.sin",
        [M_COS] = "llvm.cos",           [M_FABS] = "llvm.fabs",   [M_FLOOR] = "llvm.floor",
        [M_CEIL] = "llvm.ceil",         [M_TRUNC] = "llvm.trunc", [M_POW] = "llvm.pow",
        [M_COPYSIGN] = "llvm.copysign", [M_NONE] = NULL,
    };
    static const char *const libm_names[] = {
        [M_EXPM1] = "expm1", [M_LOG1P] = "log1p", [M_TAN] = "tan",      [M_ASIN] = "asin",
        [M_ACOS] = "acos",   [M_ATAN] = "atan",   [M_SINH] = "sinh",    [M_COSH] = "cosh",
        [M_TANH] = "tanh",   [M_ASINH] = "asinh", [M_ACOSH] = "acosh",  [M_ATANH] = "atanh",
        [M_ERF] = "erf",     [M_ERFC] = "erfc",   [M_GAMMA] = "tgamma", [M_LGAMMA] = "lgamma",
        [M_ATAN2] = "atan2", [M_HYPOT] = "hypot", [M_NONE] = NULL,
    };
    unsigned n = (unsigned)cc_math_arity(op);
    LLVMValueRef inf = real_const(E, k, INFINITY);
    switch (op) {
    case M_DEGREES:
        return LLVMBuildFMul(E->b, a[0], real_const(E, k, 180.0 / M_PI), "degrees");
    case M_RADIANS:
        return LLVMBuildFMul(E->b, a[0], real_const(E, k, M_PI / 180.0), "radians");
    case M_SQUARE:
        return LLVMBuildFMul(E->b, a[0], a[0], "square");
    case M_FMOD:
        return LLVMBuildFRem(E->b, a[0], a[1], "fmod");
    case M_MINIMUM:
    case M_MAXIMUM: {
        /* NumPy's definition, (a < b || isnan(a)) ? a : b, with quiet
         * compares only: a NaN in either operand propagates, no flag */
        LLVMRealPredicate p = op == M_MINIMUM ? LLVMRealOLT : LLVMRealOGT;
        LLVMValueRef a_nan = LLVMBuildFCmp(E->b, LLVMRealUNO, a[0], a[0], "");
        LLVMValueRef pick_a = LLVMBuildOr(E->b, quiet_fcmp(E, p, a[0], a[1], ""), a_nan, "");
        return LLVMBuildSelect(E->b, pick_a, a[0], a[1], op == M_MINIMUM ? "minimum" : "maximum");
    }
    case M_ISNAN:
        return LLVMBuildFCmp(E->b, LLVMRealUNO, a[0], a[0], "isnan");
    case M_ISINF:
        return LLVMBuildFCmp(E->b, LLVMRealOEQ, fabs_of(E, k, a[0]), inf, "isinf");
    case M_ISFINITE:
        return LLVMBuildFCmp(E->b, LLVMRealONE, fabs_of(E, k, a[0]), inf, "isfinite");
    default:
        break;
    }
    if (op < (int)(sizeof(intrinsics) / sizeof(intrinsics[0])) && intrinsics[op] != NULL) {
        return float_intrinsic(E, intrinsics[op], k, a, n);
    }
    return libm(E, libm_names[op], k, a, n);
}

/* Python's min/max: the first operand that no later one beats. */
static int
has_weak_int(const CcNode *n)
{
    for (int i = 0; i < n->nargs; i++) {
        if (n->args[i]->ty->kind == CT_WEAK_INT) {
            return 1;
        }
    }
    return 0;
}

/*
 * A min/max operand as the value it is compared by.  Python ints meeting
 * typed integers compare by value (NumPy 2): in int64, or in i128 when the
 * result is uint64 (both a uint64 and a negative Python int are exact there).
 */
static LLVMValueRef
minmax_key(Emit *E, const CcNode *node, LLVMValueRef v, TsKind from, TsKind k, int weak)
{
    if (!weak || !ts_is_int(k) || k == TS_INT64) {
        return convert(E, v, from, k);
    }
    if (k != TS_UINT64) {
        return convert(E, v, from, TS_INT64);
    }
    return wide_int_of(E, node, v, from, 128);
}

/* Python's min/max: the first operand that no later one beats. */
static LLVMValueRef
minmax(Emit *E, CcNode *n, TsKind k, int is_max)
{
    int weak = has_weak_int(n);
    LLVMValueRef best = NULL, best_key = NULL;
    for (int i = 0; i < n->nargs; i++) {
        LLVMValueRef v = expr(E, n->args[i]);
        if (v == NULL) {
            return NULL;
        }
        TsKind from = cc_storage(n->args[i]->ty);
        LLVMValueRef x = convert(E, v, from, k);
        LLVMValueRef key = minmax_key(E, n->args[i], v, from, k, weak);
        if (i == 0) {
            best = x;
            best_key = key;
            continue;
        }
        LLVMValueRef better;
        if (ts_is_float(k)) {
            better = quiet_fcmp(E, is_max ? LLVMRealOGT : LLVMRealOLT, key, best_key, "");
        } else {
            /* keys of integers compared with Python ints are signed */
            int s = (weak && ts_is_int(k)) || (k != TS_BOOL && ts_is_signed(k));
            better = LLVMBuildICmp(E->b, int_pred(is_max ? OP_GT : OP_LT, s), key, best_key, "");
        }
        best = LLVMBuildSelect(E->b, better, x, best, is_max ? "max" : "min");
        best_key = LLVMBuildSelect(E->b, better, key, best_key, "");
    }
    return best;
}

static LLVMValueRef
abs_value(Emit *E, CcNode *n)
{
    TsKind k = cc_storage(n->args[0]->ty);
    LLVMValueRef v = expr(E, n->args[0]);
    if (v == NULL) {
        return NULL;
    }
    if (ts_is_complex(k)) {
        return convert(E, complex_abs(E, k, v), part_kind(k), cc_storage(n->ty));
    }
    if (ts_is_float(k)) {
        return fabs_of(E, k, v);
    }
    if (k == TS_BOOL || !ts_is_signed(k)) {
        return v;
    }
    LLVMValueRef neg = LLVMBuildICmp(E->b, LLVMIntSLT, v, int_const(E, k, 0), "");
    return LLVMBuildSelect(E->b, neg, LLVMBuildNeg(E->b, v, ""), v, "abs");
}

static LLVMValueRef
complex_part(Emit *E, CcNode *n, CcFlavor flavor)
{
    TsKind k = cc_storage(n->args[0]->ty), out = cc_storage(n->ty);
    LLVMValueRef v = expr(E, n->args[0]);
    if (v == NULL) {
        return NULL;
    }
    if (flavor == FL_CONJ) {
        if (!ts_is_complex(k)) {
            return v;
        }
        return make_complex(E, k, re_of(E, v), LLVMBuildFNeg(E->b, im_of(E, v), ""));
    }
    if (ts_is_complex(k)) {
        return flavor == FL_REAL ? re_of(E, v) : im_of(E, v);
    }
    if (flavor == FL_REAL) {
        return convert(E, v, k, out);
    }
    return convert(E, LLVMConstNull(cc_value_type(E->ctx, k)), k, out);
}

/* The complex kind a cmath function computes in for argument type t. */
static TsKind
complex_math_kind(const CcType *t)
{
    return cc_math_kind(t) == TS_FLOAT32 ? TS_COMPLEX64 : TS_COMPLEX128;
}

/* NumPy's isnan/isinf/isfinite of a complex value: of either part. */
static LLVMValueRef
complex_pred(Emit *E, CcMathOp op, TsKind k, LLVMValueRef z)
{
    TsKind p = part_kind(k);
    LLVMValueRef re = re_of(E, z), im = im_of(E, z);
    LLVMValueRef a = math_op(E, op, p, &re), b = math_op(E, op, p, &im);
    return op == M_ISFINITE ? LLVMBuildAnd(E->b, a, b, "finite") : LLVMBuildOr(E->b, a, b, "");
}

/* cmath.f(z): the C library's complex function, or phase/polar/rect. */
static LLVMValueRef
cmath_call(Emit *E, CcNode *n, CcMathOp op)
{
    const CcType *argty =
        n->nargs == 2 ? cc_promote(n->args[0]->ty, n->args[1]->ty) : n->args[0]->ty;
    TsKind k = complex_math_kind(argty), p = part_kind(k);
    if (op == M_RECT) {
        /* r * (cos(phi) + i sin(phi)) */
        LLVMValueRef r = expr_as(E, n->args[0], p);
        LLVMValueRef phi = r ? expr_as(E, n->args[1], p) : NULL;
        if (phi == NULL) {
            return NULL;
        }
        LLVMValueRef c = float_intrinsic(E, "llvm.cos", p, &phi, 1);
        LLVMValueRef s = float_intrinsic(E, "llvm.sin", p, &phi, 1);
        return convert(
            E, make_complex(E, k, LLVMBuildFMul(E->b, r, c, ""), LLVMBuildFMul(E->b, r, s, "")), k,
            cc_storage(n->ty));
    }
    LLVMValueRef z = expr_as(E, n->args[0], k);
    if (z == NULL) {
        return NULL;
    }
    LLVMValueRef yx[2] = {im_of(E, z), re_of(E, z)};
    switch (op) {
    case M_PHASE:
        return libm(E, "atan2", p, yx, 2);
    case M_POLAR: {
        LLVMValueRef t = LLVMGetUndef(type_of(E, n->ty));
        t = LLVMBuildInsertValue(
            E->b, t, convert(E, complex_abs(E, k, z), p, cc_storage(n->ty->elems[0])), 0, "");
        return LLVMBuildInsertValue(
            E->b, t, convert(E, libm(E, "atan2", p, yx, 2), p, cc_storage(n->ty->elems[1])), 1,
            "polar");
    }
    case M_ISNAN:
    case M_ISINF:
    case M_ISFINITE:
        return complex_pred(E, op, k, z);
    default: {
        if (!E->target->c_complex) {
            /* they call the C library's complex functions, which a GPU lacks */
            cc_error(E->fn, n->loc, "%s of a complex value is not supported on the %s target yet",
                     cc_builtin(n->builtin)->name, E->target->name);
            return NULL;
        }
        LLVMValueRef r = cc_emit_cmath(E->b, E->mod, op, k, z);
        return r ? convert(E, r, k, cc_storage(n->ty)) : NULL;
    }
    }
}

/*
 * round(x): half to even, to an int.  round(x, n): NumPy's np.round, in
 * x's kind: rint(x * 10**n) / 10**n, or rint(x / 10**-n) * 10**-n for n < 0
 * (an integer x: itself for n >= 0, through float64 for n < 0).
 */
static LLVMValueRef
round_call(Emit *E, CcNode *n)
{
    TsKind out = cc_storage(n->ty), xk = cc_storage(n->args[0]->ty);
    if (n->nargs == 1 && !ts_is_float(xk)) {
        return expr_as(E, n->args[0], out);
    }
    TsKind k = ts_is_float(xk) ? xk : TS_FLOAT64;
    LLVMValueRef x = expr_as(E, n->args[0], k);
    if (x == NULL) {
        return NULL;
    }
    if (n->nargs == 1) {
        return convert(E, float_intrinsic(E, "llvm.roundeven", k, &x, 1), k, out);
    }
    LLVMValueRef nd = expr_as(E, n->args[1], TS_INT64);
    if (nd == NULL) {
        return NULL;
    }
    LLVMValueRef neg = LLVMBuildICmp(E->b, LLVMIntSLT, nd, int_const(E, TS_INT64, 0), "nd.neg");
    LLVMValueRef mag = LLVMBuildSelect(E->b, neg, LLVMBuildNeg(E->b, nd, ""), nd, "");
    LLVMValueRef pw[2] = {real_const(E, k, 10.0), convert(E, mag, TS_INT64, k)};
    LLVMValueRef f = float_intrinsic(E, "llvm.pow", k, pw, 2);
    LLVMValueRef up = LLVMBuildFMul(E->b, x, f, ""), down = LLVMBuildFDiv(E->b, x, f, "");
    LLVMValueRef y = LLVMBuildSelect(E->b, neg, down, up, "");
    y = float_intrinsic(E, "llvm.rint", k, &y, 1);
    LLVMValueRef r = LLVMBuildSelect(E->b, neg, LLVMBuildFMul(E->b, y, f, ""),
                                     LLVMBuildFDiv(E->b, y, f, ""), "round");
    r = convert(E, r, k, out);
    if (ts_is_float(xk)) {
        return r;
    }
    /* NumPy rounds an integer to n >= 0 digits as itself, exactly */
    LLVMValueRef same = expr_as(E, n->args[0], out);
    return same != NULL ? LLVMBuildSelect(E->b, neg, r, same, "round.int") : NULL;
}

/* np.sign: -1, 0 or 1 in x's kind; NaN stays NaN. */
static LLVMValueRef
sign_call(Emit *E, CcNode *n)
{
    TsKind k = cc_storage(n->ty);
    LLVMValueRef x = expr_as(E, n->args[0], k);
    if (x == NULL) {
        return NULL;
    }
    if (ts_is_float(k)) {
        /* only quiet predicates (oeq, uno): vector < and > raise the invalid
         * flag on NaN, which np.sign does not */
        LLVMValueRef zero = real_const(E, k, 0.0);
        LLVMValueRef r = copysign_of(E, k, real_const(E, k, 1.0), x);
        r = LLVMBuildSelect(E->b, LLVMBuildFCmp(E->b, LLVMRealUNO, x, x, ""), x, r, "");
        return LLVMBuildSelect(E->b, LLVMBuildFCmp(E->b, LLVMRealOEQ, x, zero, ""), zero, r,
                               "sign");
    }
    LLVMValueRef zero = int_const(E, k, 0);
    LLVMValueRef r = LLVMBuildSelect(E->b, LLVMBuildICmp(E->b, LLVMIntNE, x, zero, ""),
                                     int_const(E, k, 1), zero, "");
    if (ts_is_signed(k)) {
        r = LLVMBuildSelect(E->b, LLVMBuildICmp(E->b, LLVMIntSLT, x, zero, ""), int_const(E, k, -1),
                            r, "sign");
    }
    return r;
}

/* math.ldexp(x, i): the exponent clamped to int (beyond it the result is
 * 0 or inf anyway), the libm function of x's float kind. */
static LLVMValueRef
ldexp_call(Emit *E, CcNode *n, TsKind out)
{
    TsKind k = cc_math_kind(n->args[0]->ty);
    LLVMValueRef x = expr_as(E, n->args[0], k);
    LLVMValueRef e = x ? expr_as(E, n->args[1], TS_INT64) : NULL;
    if (e == NULL) {
        return NULL;
    }
    LLVMValueRef lim = int_const(E, TS_INT64, 1 << 20);
    e = LLVMBuildSelect(E->b, LLVMBuildICmp(E->b, LLVMIntSGT, e, lim, ""), lim, e, "");
    LLVMValueRef nlim = int_const(E, TS_INT64, -(1 << 20));
    e = LLVMBuildSelect(E->b, LLVMBuildICmp(E->b, LLVMIntSLT, e, nlim, ""), nlim, e, "");
    LLVMTypeRef i32 = LLVMInt32TypeInContext(E->ctx), t = cc_value_type(E->ctx, k);
    LLVMTypeRef params[2] = {t, i32};
    LLVMTypeRef fty = LLVMFunctionType(t, params, 2, 0);
    char buf[48];
    const char *name = E->target->math_name != NULL
                           ? E->target->math_name("ldexp", k, buf, sizeof(buf))
                           : NULL; /* the GPU: libdevice's __nv_ldexpf */
    if (name == NULL) {
        name = k == TS_FLOAT32 ? "ldexpf" : "ldexp";
    }
    LLVMValueRef f = cc_declare_pure(E->mod, name, fty);
    LLVMValueRef args[2] = {x, LLVMBuildTrunc(E->b, e, i32, "")};
    return convert(E, LLVMBuildCall2(E->b, fty, f, args, 2, name), k, out);
}

/* np.fmin/np.fmax: the non-NaN operand.  NaNs are replaced before
 * llvm.minnum, whose x86 lowering (minpd) raises the invalid flag on NaN
 * where NumPy's loops stay quiet. */
static LLVMValueRef
fminmax(Emit *E, CcMathOp op, TsKind k, LLVMValueRef a, LLVMValueRef b)
{
    LLVMValueRef a_nan = LLVMBuildFCmp(E->b, LLVMRealUNO, a, a, "a.nan");
    LLVMValueRef b_nan = LLVMBuildFCmp(E->b, LLVMRealUNO, b, b, "b.nan");
    LLVMValueRef zero = real_const(E, k, 0.0);
    LLVMValueRef a2 =
        LLVMBuildSelect(E->b, a_nan, LLVMBuildSelect(E->b, b_nan, zero, b, ""), a, "");
    LLVMValueRef b2 = LLVMBuildSelect(E->b, b_nan, a2, b, "");
    LLVMValueRef args[2] = {a2, b2};
    LLVMValueRef r = float_intrinsic(E, op == M_FMIN ? "llvm.minnum" : "llvm.maxnum", k, args, 2);
    return LLVMBuildSelect(E->b, LLVMBuildAnd(E->b, a_nan, b_nan, ""), a, r,
                           op == M_FMIN ? "fmin" : "fmax");
}

/* np.square, np.power, np.floor/ceil/trunc of integers (typeinfer gave an
 * integer result): integer arithmetic, wrapping, as NumPy's integer loops. */
static LLVMValueRef
np_integer_call(Emit *E, CcNode *n, CcMathOp op, TsKind k)
{
    LLVMValueRef a = expr_as(E, n->args[0], k);
    if (a == NULL || op == M_FLOOR || op == M_CEIL || op == M_TRUNC) {
        return a;
    }
    if (op == M_SQUARE) {
        return LLVMBuildMul(E->b, a, a, "square");
    }
    LLVMValueRef b = expr_as(E, n->args[1], k);
    return b ? int_pow(E, k, a, b) : NULL;
}

static LLVMValueRef
call(Emit *E, CcNode *n)
{
    const CcBuiltin *b = cc_builtin(n->builtin);
    TsKind out = cc_storage(n->ty);
    LLVMValueRef args[2];
    switch (b->flavor) {
    case FL_ABS:
        return abs_value(E, n);
    case FL_MIN:
    case FL_MAX:
        return minmax(E, n, out, b->flavor == FL_MAX);
    case FL_INT:
    case FL_FLOAT:
    case FL_CAST:
        return expr_as(E, n->args[0], out);
    case FL_BOOL: {
        LLVMValueRef v = expr(E, n->args[0]);
        return v ? truthy(E, v, cc_storage(n->args[0]->ty)) : NULL;
    }
    case FL_COMPLEX:
        if (n->nargs == 1) {
            return expr_as(E, n->args[0], out);
        }
        args[0] = expr_as(E, n->args[0], TS_FLOAT64);
        args[1] = args[0] ? expr_as(E, n->args[1], TS_FLOAT64) : NULL;
        return args[1] ? make_complex(E, TS_COMPLEX128, args[0], args[1]) : NULL;
    case FL_REAL:
    case FL_IMAG:
    case FL_CONJ:
        return complex_part(E, n, b->flavor);
    case FL_CMATH:
        return cmath_call(E, n, (CcMathOp)b->op);
    case FL_ROUND:
        return round_call(E, n);
    case FL_NP_SIGN:
        return sign_call(E, n);
    case FL_NP_MINMAX:
        if (!ts_is_float(out)) {
            return minmax(E, n, out, b->op == M_MAXIMUM || b->op == M_FMAX);
        }
        /* fall through */
    default: {
        if (b->op == M_LDEXP) {
            return ldexp_call(E, n, out);
        }
        if ((b->flavor == FL_NP || b->flavor == FL_NP_PRED)
            && ts_is_complex(cc_storage(n->args[0]->ty))) {
            return cmath_call(E, n, (CcMathOp)b->op); /* np.exp(z) ... */
        }
        if (b->flavor == FL_NP && !ts_is_float(out) && !ts_is_complex(out)) {
            return np_integer_call(E, n, (CcMathOp)b->op, out);
        }
        /* math and NumPy functions: arguments in the computing float kind */
        const CcType *argty =
            n->nargs == 2 ? cc_promote(n->args[0]->ty, n->args[1]->ty) : n->args[0]->ty;
        TsKind k = cc_math_kind(argty);
        for (int i = 0; i < n->nargs; i++) {
            if ((args[i] = expr_as(E, n->args[i], k)) == NULL) {
                return NULL;
            }
        }
        LLVMValueRef r = b->op == M_FMIN || b->op == M_FMAX
                             ? fminmax(E, (CcMathOp)b->op, k, args[0], args[1])
                             : math_op(E, (CcMathOp)b->op, k, args);
        return convert(E, r, (b->flavor == FL_MATH_PRED || b->flavor == FL_NP_PRED) ? TS_BOOL : k,
                       out);
    }
    }
}

static LLVMValueRef
make_tuple(Emit *E, CcNode *n)
{
    LLVMValueRef t = LLVMGetUndef(type_of(E, n->ty));
    for (int i = 0; i < n->nargs; i++) {
        LLVMValueRef v = expr(E, n->args[i]);
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
    LLVMBasicBlockRef end = new_block(E, "inline.end");
    LLVMBasicBlockRef outer_end = E->inline_end;
    int outer_returned = E->inline_returned;
    E->inline_end = end;
    E->inline_returned = 0;
    int rc = block(E, n->then);
    if (rc == 0 && E->reachable) {
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
    return LLVMBuildLoad2(E->b, type_of(E, n->var->ty), (LLVMValueRef)n->var->slot, n->var->name);
}

/* ---- arrays (gufunc kernels) ---- */

/* The block that ends the kernel with CC_STATUS_INDEX. */
static LLVMBasicBlockRef
index_error_block(Emit *E)
{
    if (E->index_error == NULL) {
        LLVMBasicBlockRef here = LLVMGetInsertBlock(E->b);
        E->index_error = new_block(E, "index.error");
        LLVMPositionBuilderAtEnd(E->b, E->index_error);
        LLVMBuildRet(E->b, LLVMConstInt(LLVMInt32TypeInContext(E->ctx), CC_STATUS_INDEX, 0));
        LLVMPositionBuilderAtEnd(E->b, here);
    }
    return E->index_error;
}

/*
 * The address of a[i, j, ...]: data + sum(index_k * stride_k), a negative
 * index counting from the end (Python).  With boundscheck an index still
 * outside [0, shape) ends the kernel with CC_STATUS_INDEX; LLVM removes
 * the check where the loop bounds prove it (for i in range(len(a))).
 */
static LLVMValueRef
element_address(Emit *E, CcNode *n)
{
    ArrayVal *a = n->lhs->var->slot;
    LLVMTypeRef i64 = LLVMInt64TypeInContext(E->ctx);
    LLVMValueRef offset = LLVMConstInt(i64, 0, 0);
    for (int k = 0; k < n->nargs; k++) {
        LLVMValueRef idx = expr_as(E, n->args[k], TS_INT64);
        if (idx == NULL) {
            return NULL;
        }
        LLVMValueRef neg = LLVMBuildICmp(E->b, LLVMIntSLT, idx, LLVMConstInt(i64, 0, 0), "neg");
        LLVMValueRef wrapped = LLVMBuildAdd(E->b, idx, a->shape[k], "");
        idx = LLVMBuildSelect(E->b, neg, wrapped, idx, "idx");
        if (E->fn->boundscheck) {
            LLVMValueRef bad = LLVMBuildICmp(E->b, LLVMIntUGE, idx, a->shape[k], "oob");
            LLVMBasicBlockRef ok = new_block(E, "index.ok");
            LLVMBuildCondBr(E->b, bad, index_error_block(E), ok);
            LLVMPositionBuilderAtEnd(E->b, ok);
        }
        LLVMValueRef stride = a->stride[k];
        if (k == n->nargs - 1 && a->unit_last) {
            stride = LLVMConstInt(i64, (unsigned long long)ts_itemsize(n->lhs->var->ty->scalar), 0);
        }
        offset = LLVMBuildNSWAdd(E->b, offset, LLVMBuildNSWMul(E->b, idx, stride, ""), "off");
    }
    return LLVMBuildInBoundsGEP2(E->b, LLVMInt8TypeInContext(E->ctx), a->data, &offset, 1, "elem");
}

static LLVMValueRef
load_element(Emit *E, CcNode *n)
{
    LLVMValueRef p = element_address(E, n);
    return p ? cc_load(E->b, n->lhs->var->ty->scalar, p, n->lhs->var->name) : NULL;
}

static LLVMValueRef
array_attr(Emit *E, CcNode *n)
{
    LLVMTypeRef i64 = LLVMInt64TypeInContext(E->ctx);
    const CcType *t = n->lhs->kind == ND_VAR ? n->lhs->var->ty : n->lhs->ty;
    if (t->kind == CT_TUPLE) {
        return LLVMConstInt(i64, (unsigned long long)t->n, 0); /* len(tuple) */
    }
    ArrayVal *a = n->lhs->var->slot;
    switch ((CcArrayAttr)n->index) {
    case AA_LEN:
        return a->shape[0];
    case AA_NDIM:
        return LLVMConstInt(i64, (unsigned long long)t->n, 0);
    case AA_SIZE: {
        LLVMValueRef size = LLVMConstInt(i64, 1, 0);
        for (int k = 0; k < t->n; k++) {
            size = LLVMBuildNSWMul(E->b, size, a->shape[k], "size");
        }
        return size;
    }
    case AA_SHAPE: {
        LLVMValueRef v = LLVMGetUndef(type_of(E, n->ty));
        for (int k = 0; k < t->n; k++) {
            v = LLVMBuildInsertValue(E->b, v, a->shape[k], (unsigned)k, "shape");
        }
        return v;
    }
    }
    return NULL;
}

static int
setitem(Emit *E, CcNode *n)
{
    TsKind kind = n->lhs->lhs->var->ty->scalar;
    LLVMValueRef v = expr(E, n->rhs);
    LLVMValueRef p = v != NULL ? element_address(E, n->lhs) : NULL;
    if (p == NULL) {
        return -1;
    }
    cc_store(E->b, kind, convert_type(E, v, n->rhs->ty, cc_scalar_type(kind)), p);
    return 0;
}

static LLVMValueRef
expr(Emit *E, CcNode *n)
{
    switch (n->kind) {
    case ND_INDEX:
        return load_element(E, n);
    case ND_ARRAYATTR:
        return array_attr(E, n);
    case ND_CONST:
        return constant(E, n);
    case ND_VAR:
        return LLVMBuildLoad2(E->b, type_of(E, n->var->ty), (LLVMValueRef)n->var->slot,
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
        return call(E, n);
    case ND_TUPLE:
        return make_tuple(E, n);
    case ND_GETITEM: {
        LLVMValueRef t = expr(E, n->lhs);
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
    LLVMBuildStore(E->b, convert_type(E, v, from, var->ty), (LLVMValueRef)var->slot);
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
if_stmt(Emit *E, CcNode *n)
{
    LLVMValueRef c = expr(E, n->cond);
    if (c == NULL) {
        return -1;
    }
    c = truthy(E, c, cc_storage(n->cond->ty));
    LLVMBasicBlockRef then = new_block(E, "if.then"), els = new_block(E, "if.else");
    LLVMBasicBlockRef done = new_block(E, "if.done");
    LLVMBuildCondBr(E->b, c, then, els);
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

static int
is_true_constant(CcNode *n)
{
    return n->kind == ND_CONST && !ts_is_complex(cc_storage(n->ty))
           && (ts_is_float(cc_storage(n->ty)) ? n->fval != 0.0 : n->ival != 0);
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

static int
while_stmt(Emit *E, CcNode *n)
{
    LLVMBasicBlockRef cond = new_block(E, "while.cond"), body = new_block(E, "while.body");
    LLVMBasicBlockRef els = new_block(E, "while.else"), done = new_block(E, "while.done");
    jump(E, cond);
    continue_at(E, cond, 1);
    LLVMValueRef c = expr(E, n->cond);
    if (c == NULL) {
        return -1;
    }
    LLVMBuildCondBr(E->b, truthy(E, c, cc_storage(n->cond->ty)), body, els);
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
unit_step(const CcNode *n)
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

/* for v in range(start, stop, step): a hidden counter drives the loop, so
 * assigning to v in the body does not change the iteration (Python).  A
 * zero step runs no iteration (Python raises ValueError). */
static int
for_stmt(Emit *E, CcNode *n)
{
    LLVMValueRef start = int_const(E, TS_INT64, 0), step = int_const(E, TS_INT64, 1), stop;
    LLVMValueRef vals[3] = {NULL, NULL, NULL};
    for (int i = 0; i < n->nargs; i++) {
        if ((vals[i] = expr_as(E, n->args[i], TS_INT64)) == NULL) {
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
    LLVMTypeRef i64 = LLVMInt64TypeInContext(E->ctx);
    LLVMValueRef counter = entry_alloca(E, i64, "range.i");
    LLVMBuildStore(E->b, start, counter);

    LLVMBasicBlockRef cond = new_block(E, "for.cond"), body = new_block(E, "for.body");
    LLVMBasicBlockRef latch = new_block(E, "for.next"), els = new_block(E, "for.else");
    LLVMBasicBlockRef done = new_block(E, "for.done");
    jump(E, cond);
    continue_at(E, cond, 1);
    LLVMValueRef i = LLVMBuildLoad2(E->b, i64, counter, "i");
    LLVMValueRef zero = int_const(E, TS_INT64, 0);
    LLVMValueRef up = LLVMBuildICmp(E->b, LLVMIntSGT, step, zero, "up");
    LLVMValueRef down = LLVMBuildICmp(E->b, LLVMIntSLT, step, zero, "down");
    LLVMValueRef more = LLVMBuildOr(
        E->b, LLVMBuildAnd(E->b, up, LLVMBuildICmp(E->b, LLVMIntSLT, i, stop, ""), ""),
        LLVMBuildAnd(E->b, down, LLVMBuildICmp(E->b, LLVMIntSGT, i, stop, ""), ""), "more");
    LLVMBuildCondBr(E->b, more, body, els);

    continue_at(E, body, 1);
    store_var(E, n->var, i, cc_scalar_type(TS_INT64));
    if (loop_body(E, n->then, done, latch) < 0) {
        return -1;
    }
    continue_at(E, latch, 1);
    LLVMValueRef i2 = LLVMBuildLoad2(E->b, i64, counter, "");
    if (unit_step(n)) {
        /* i < stop <= INT64_MAX (or i > stop >= INT64_MIN): i + 1 cannot
         * wrap, and saying so (nsw) lets LLVM count and vectorize the loop */
        LLVMBuildStore(E->b, LLVMBuildNSWAdd(E->b, i2, step, "i.next"), counter);
        jump(E, cond);
    } else {
        /* a step that carries i past INT64's range ends the loop (Python's
         * range has no overflow: the next value would be past stop anyway) */
        LLVMTypeRef over = i64;
        LLVMValueRef add_args[2] = {i2, step};
        LLVMValueRef sum = intrinsic(E, "llvm.sadd.with.overflow", &over, 1, add_args, 2);
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

static int
stmt(Emit *E, CcNode *n)
{
    LLVMValueRef v;
    switch (n->kind) {
    case ND_BLOCK:
        return block(E, n);
    case ND_ASSIGN:
        if ((v = expr(E, n->rhs)) == NULL) {
            return -1;
        }
        store_var(E, n->var, v, n->rhs->ty);
        return 0;
    case ND_UNPACK:
        if ((v = expr(E, n->rhs)) == NULL) {
            return -1;
        }
        for (int i = 0; i < n->nargs; i++) {
            LLVMValueRef item = LLVMBuildExtractValue(E->b, v, (unsigned)i, "");
            store_var(E, n->vars[i], item, n->rhs->ty->elems[i]);
        }
        return 0;
    case ND_RETURN:
        if (E->gufunc && n->var == NULL) {
            /* a gufunc kernel's own return (a device function's inlined
             * return, n->var set, only leaves the inlined body) */
            LLVMBuildRet(E->b, LLVMConstInt(LLVMInt32TypeInContext(E->ctx), CC_STATUS_OK, 0));
            E->reachable = 0;
            return 0;
        }
        if ((v = expr(E, n->lhs)) == NULL) {
            return -1;
        }
        if (n->var != NULL) {
            /* a return of an inlined device function */
            store_var(E, n->var, v, n->lhs->ty);
            E->inline_returned = 1;
            jump(E, E->inline_end);
            return 0;
        }
        LLVMBuildRet(E->b, convert_type(E, v, n->lhs->ty, E->fn->ret));
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
        return expr(E, n->lhs) != NULL ? 0 : -1;
    case ND_SETITEM:
        return setitem(E, n);
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
    LLVMTypeRef params[TS_MAXARGS];
    for (int i = 0; i < sig->nargs; i++) {
        params[i] = cc_value_type(E->ctx, sig->args[i].kind);
    }
    LLVMTypeRef ret = cc_value_type(E->ctx, cc_storage(E->fn->ret));
    LLVMValueRef f =
        LLVMAddFunction(E->mod, name, LLVMFunctionType(ret, params, (unsigned)sig->nargs, 0));
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
    E.b = LLVMCreateBuilderInContext(E.ctx);
    LLVMPositionBuilderAtEnd(E.b, new_block(&E, "entry"));
    for (int i = 0; i < fn->nvars; i++) {
        CcVar *v = fn->vars[i];
        if (v->ty == NULL) {
            v->slot = NULL; /* never assigned on a typed path */
            continue;
        }
        v->slot = LLVMBuildAlloca(E.b, type_of(&E, v->ty), v->name);
        if (v->is_param) {
            LLVMValueRef p = LLVMGetParam(E.func, (unsigned)i);
            LLVMSetValueName2(p, v->name, strlen(v->name));
            store_var(&E, v, p, cc_scalar_type(sig->args[i].kind));
        }
    }
    LLVMBasicBlockRef body = new_block(&E, "body");
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

/* Binds parameter var (argument i, first LLVM parameter *p) to its value. */
static int
bind_param(Emit *E, CcVar *var, const TsType *t, unsigned *p, unsigned long long unit_stride, int i)
{
    char name[96];
    if (t->ndim == 0) {
        LLVMValueRef v = LLVMGetParam(E->func, (*p)++);
        LLVMSetValueName2(v, var->name, strlen(var->name));
        var->slot = LLVMBuildAlloca(E->b, type_of(E, var->ty), var->name);
        store_var(E, var, v, cc_scalar_type(t->kind));
        return 0;
    }
    ArrayVal *a = cc_alloc(E->fn->arena, sizeof(ArrayVal));
    if (a == NULL) {
        return -1;
    }
    a->data = LLVMGetParam(E->func, (*p)++);
    snprintf(name, sizeof(name), "%s.data", var->name);
    LLVMSetValueName2(a->data, name, strlen(name));
    for (int k = 0; k < t->ndim; k++) {
        a->shape[k] = LLVMGetParam(E->func, (*p)++);
        snprintf(name, sizeof(name), "%s.shape%d", var->name, k);
        LLVMSetValueName2(a->shape[k], name, strlen(name));
    }
    for (int k = 0; k < t->ndim; k++) {
        a->stride[k] = LLVMGetParam(E->func, (*p)++);
        snprintf(name, sizeof(name), "%s.stride%d", var->name, k);
        LLVMSetValueName2(a->stride[k], name, strlen(name));
    }
    a->unit_last = i < 64 && (unit_stride >> i) & 1;
    var->slot = a;
    return 0;
}

LLVMValueRef
cc_emit_gufunc_kernel(CcFunction *fn, const TsSignature *sig, LLVMModuleRef mod, const char *name,
                      int fastmath, unsigned long long unit_stride)
{
    Emit E = {.fn = fn,
              .ctx = LLVMGetModuleContext(mod),
              .mod = mod,
              .reachable = 1,
              .gufunc = 1,
              .fastmath = fastmath,
              .target = &cc_host_target};
    E.func = declare_gufunc(&E, sig, name);
    E.b = LLVMCreateBuilderInContext(E.ctx);
    LLVMPositionBuilderAtEnd(E.b, new_block(&E, "entry"));
    unsigned p = 0;
    int rc = 0;
    for (int i = 0; rc == 0 && i < fn->nvars; i++) {
        CcVar *v = fn->vars[i];
        if (v->is_param) {
            rc = bind_param(&E, v, &sig->args[i], &p, unit_stride, i);
        } else {
            v->slot = v->ty != NULL ? LLVMBuildAlloca(E.b, type_of(&E, v->ty), v->name) : NULL;
        }
    }
    LLVMBasicBlockRef body = new_block(&E, "body");
    LLVMBuildBr(E.b, body);
    continue_at(&E, body, 1);
    if (rc == 0) {
        rc = block(&E, fn->body);
    }
    if (rc == 0 && E.reachable) {
        LLVMBuildRet(E.b, LLVMConstInt(LLVMInt32TypeInContext(E.ctx), CC_STATUS_OK, 0));
    }
    return finish_function(&E, rc);
}
