/*
 * arith.c - integer, float and complex arithmetic for the emitter (emit.h):
 * the binary operators on two values already converted to the kind they
 * compute in.
 *
 * emit.c's binop converts both operands and calls em_arith; what needs care
 * is here: Python's floor division and modulo (NumPy's npy_divmod for
 * floats), integer division by zero (0, plus the divide-by-zero flag that
 * NumPy's np.errstate reads), NumPy's shifts, integer powers, float
 * compares that raise no flag on a quiet NaN, Smith's complex division and
 * NumPy's complex power.
 */
#include "compiler/emit.h"

#include <fenv.h>
#include <math.h>
#include <string.h>

/* ---- integer arithmetic ---- */

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
    LLVMBuildCall2(E->b, fty, f, &flag, 1, "feraiseexcept");
    LLVMBuildBr(E->b, after);
    LLVMPositionBuilderAtEnd(E->b, after);
}

/* Python's // and % on integers; by zero: 0 and the divide-by-zero flag. */
static LLVMValueRef
int_divmod(Emit *E, CcOp op, TsKind k, LLVMValueRef a, LLVMValueRef b)
{
    LLVMValueRef zero = em_int_const(E, k, 0), one = em_int_const(E, k, 1);
    LLVMValueRef is_zero = LLVMBuildICmp(E->b, LLVMIntEQ, b, zero, "b.zero");
    raise_divbyzero_if(E, is_zero);
    if (!ts_is_signed(k)) {
        LLVMValueRef safe = LLVMBuildSelect(E->b, is_zero, one, b, "b.safe");
        LLVMValueRef r = op == OP_FLOORDIV ? LLVMBuildUDiv(E->b, a, safe, "q")
                                           : LLVMBuildURem(E->b, a, safe, "r");
        return LLVMBuildSelect(E->b, is_zero, zero, r, op == OP_FLOORDIV ? "floordiv" : "mod");
    }
    /* b == -1 is special-cased: INT_MIN / -1 traps on x86 */
    LLVMValueRef is_m1 = LLVMBuildICmp(E->b, LLVMIntEQ, b, em_int_const(E, k, -1), "b.m1");
    LLVMValueRef special = LLVMBuildOr(E->b, is_zero, is_m1, "b.special");
    LLVMValueRef safe = LLVMBuildSelect(E->b, special, one, b, "b.safe");
    LLVMValueRef q = LLVMBuildSDiv(E->b, a, safe, "q");
    LLVMValueRef r = LLVMBuildSRem(E->b, a, safe, "r");
    /* C truncates; Python floors: adjust when the remainder's sign differs */
    LLVMValueRef r_nz = LLVMBuildICmp(E->b, LLVMIntNE, r, zero, "r.nz");
    LLVMValueRef sign =
        LLVMBuildICmp(E->b, LLVMIntSLT, LLVMBuildXor(E->b, r, b, "r.xor.b"), zero, "sign.differs");
    LLVMValueRef adj = LLVMBuildAnd(E->b, r_nz, sign, "adj");
    if (op == OP_FLOORDIV) {
        LLVMValueRef q2 =
            LLVMBuildSub(E->b, q, LLVMBuildZExt(E->b, adj, LLVMTypeOf(q), "adj.int"), "q.floor");
        LLVMValueRef neg = LLVMBuildSub(E->b, zero, a, "neg");
        return LLVMBuildSelect(E->b, is_zero, zero, LLVMBuildSelect(E->b, is_m1, neg, q2, "q.m1"),
                               "floordiv");
    }
    LLVMValueRef r2 =
        LLVMBuildAdd(E->b, r, LLVMBuildSelect(E->b, adj, b, zero, "r.adj"), "r.floor");
    return LLVMBuildSelect(E->b, special, zero, r2, "mod");
}

/*
 * Integer a ** b by squaring.  A negative exponent gives the truncated
 * value of the exact result: 1 for a == 1, +-1 for a == -1, 0 for the
 * other nonzero a; 0 ** -n, a division by zero, gives the type's minimum,
 * as Numba's ufuncs do (NumPy raises for arrays; a kernel does not:
 * docs/HISTORY.md, "Kernel language (cpu semantics)").
 *
 * A constant exponent (x ** 3, the usual case) is multiplied out in line;
 * any other calls one function per kind and module, `numbavec.ipow.<kind>`,
 * kept out of line: a loop in line per ** made a chain of n of them cost
 * LLVM about n^2.6 (a 2,000-statement chain took 45 s).  Wrapping
 * multiplication is associative, so both give the same bits.
 */

/* The truncated a ** b for a negative b (b_odd: b's lowest bit). */
static LLVMValueRef
int_pow_negative(LLVMBuilderRef bld, TsKind k, LLVMValueRef a, LLVMValueRef b_odd, LLVMTypeRef t)
{
    LLVMValueRef one = LLVMConstInt(t, 1, 0), zero = LLVMConstInt(t, 0, 0);
    LLVMValueRef m1 = LLVMConstInt(t, (unsigned long long)-1, 1);
    LLVMValueRef min = LLVMConstInt(t, 1ULL << (ts_bits(k) - 1), 0);
    LLVMValueRef a_one = LLVMBuildICmp(bld, LLVMIntEQ, a, one, "a.one");
    LLVMValueRef a_m1 = LLVMBuildICmp(bld, LLVMIntEQ, a, m1, "a.m1");
    LLVMValueRef a_zero = LLVMBuildICmp(bld, LLVMIntEQ, a, zero, "a.zero");
    LLVMValueRef m1_pow = LLVMBuildSelect(bld, b_odd, m1, one, "m1.pow");
    LLVMValueRef others = LLVMBuildSelect(bld, a_zero, min, zero, "pow.others");
    return LLVMBuildSelect(bld, a_one, one, LLVMBuildSelect(bld, a_m1, m1_pow, others, "pow.m1"),
                           "pow.neg");
}

/* a ** e for a constant e: at most two multiplications a bit of e. */
static LLVMValueRef
int_pow_const(Emit *E, TsKind k, LLVMValueRef a, LLVMValueRef b)
{
    LLVMTypeRef t = cc_value_type(E->ctx, k);
    if (ts_is_signed(k) && LLVMConstIntGetSExtValue(b) < 0) {
        LLVMValueRef odd = LLVMConstInt(LLVMInt1TypeInContext(E->ctx),
                                        (unsigned long long)LLVMConstIntGetSExtValue(b) & 1, 0);
        return int_pow_negative(E->b, k, a, odd, t);
    }
    unsigned long long e = LLVMConstIntGetZExtValue(b);
    LLVMValueRef r = NULL, base = a;
    while (e != 0) {
        if (e & 1) {
            r = r == NULL ? base : LLVMBuildMul(E->b, r, base, "pow.mul");
        }
        e >>= 1;
        if (e != 0) {
            base = LLVMBuildMul(E->b, base, base, "pow.sq");
        }
    }
    return r != NULL ? r : LLVMConstInt(t, 1, 0);
}

/* Fills ipow(a, b) of kind k: the loop by squaring, then negative b. */
static void
int_pow_body(LLVMContextRef ctx, LLVMValueRef fn, TsKind k)
{
    LLVMTypeRef t = cc_value_type(ctx, k);
    LLVMValueRef zero = LLVMConstInt(t, 0, 0), one = LLVMConstInt(t, 1, 0);
    LLVMValueRef a = LLVMGetParam(fn, 0), b = LLVMGetParam(fn, 1);
    LLVMSetValueName2(a, "a", 1);
    LLVMSetValueName2(b, "b", 1);
    LLVMBasicBlockRef entry = LLVMAppendBasicBlockInContext(ctx, fn, "entry");
    LLVMBasicBlockRef loop = LLVMAppendBasicBlockInContext(ctx, fn, "ipow.loop");
    LLVMBasicBlockRef done = LLVMAppendBasicBlockInContext(ctx, fn, "ipow.done");
    LLVMBuilderRef bld = LLVMCreateBuilderInContext(ctx);
    LLVMPositionBuilderAtEnd(bld, entry);
    LLVMValueRef neg = ts_is_signed(k) ? LLVMBuildICmp(bld, LLVMIntSLT, b, zero, "e.neg")
                                       : LLVMConstInt(LLVMInt1TypeInContext(ctx), 0, 0);
    LLVMValueRef e0 = LLVMBuildSelect(bld, neg, zero, b, "e");
    LLVMBuildCondBr(bld, LLVMBuildICmp(bld, LLVMIntEQ, e0, zero, "e.zero"), done, loop);

    LLVMPositionBuilderAtEnd(bld, loop);
    LLVMValueRef r = LLVMBuildPhi(bld, t, "r"), base = LLVMBuildPhi(bld, t, "base");
    LLVMValueRef e = LLVMBuildPhi(bld, t, "e");
    LLVMValueRef odd = LLVMBuildTrunc(bld, e, LLVMInt1TypeInContext(ctx), "odd");
    LLVMValueRef r2 = LLVMBuildSelect(bld, odd, LLVMBuildMul(bld, r, base, "r.mul"), r, "r.next");
    LLVMValueRef base2 = LLVMBuildMul(bld, base, base, "base.next");
    LLVMValueRef e2 = LLVMBuildLShr(bld, e, one, "e.next");
    LLVMBuildCondBr(bld, LLVMBuildICmp(bld, LLVMIntNE, e2, zero, "e.more"), loop, done);
    LLVMValueRef r_in[2] = {one, r2}, base_in[2] = {a, base2}, e_in[2] = {e0, e2};
    LLVMBasicBlockRef from[2] = {entry, loop};
    LLVMAddIncoming(r, r_in, from, 2);
    LLVMAddIncoming(base, base_in, from, 2);
    LLVMAddIncoming(e, e_in, from, 2);

    LLVMPositionBuilderAtEnd(bld, done);
    LLVMValueRef result = LLVMBuildPhi(bld, t, "ipow");
    LLVMValueRef res_in[2] = {one, r2};
    LLVMAddIncoming(result, res_in, from, 2);
    if (ts_is_signed(k)) {
        LLVMValueRef b_odd = LLVMBuildTrunc(bld, b, LLVMInt1TypeInContext(ctx), "b.odd");
        result = LLVMBuildSelect(bld, neg, int_pow_negative(bld, k, a, b_odd, t), result, "pow");
    }
    LLVMBuildRet(bld, result);
    LLVMDisposeBuilder(bld);
}

/* The module's numbavec.ipow.<kind>, made on first use. */
static LLVMValueRef
int_pow_function(Emit *E, TsKind k)
{
    char name[64];
    snprintf(name, sizeof(name), "numbavec.ipow.%s", ts_kind_name(k));
    LLVMValueRef fn = LLVMGetNamedFunction(E->mod, name);
    if (fn != NULL) {
        return fn;
    }
    LLVMTypeRef t = cc_value_type(E->ctx, k), params[2] = {t, t};
    fn = LLVMAddFunction(E->mod, name, LLVMFunctionType(t, params, 2, 0));
    LLVMSetLinkage(fn, LLVMInternalLinkage);
    unsigned noinline = LLVMGetEnumAttributeKindForName("noinline", 8);
    LLVMAddAttributeAtIndex(fn, LLVMAttributeFunctionIndex,
                            LLVMCreateEnumAttribute(E->ctx, noinline, 0));
    int_pow_body(E->ctx, fn, k);
    return fn;
}

LLVMValueRef
em_int_pow(Emit *E, TsKind k, LLVMValueRef a, LLVMValueRef b)
{
    if (LLVMIsAConstantInt(b)) {
        return int_pow_const(E, k, a, b);
    }
    LLVMValueRef fn = int_pow_function(E, k), args[2] = {a, b};
    LLVMTypeRef t = cc_value_type(E->ctx, k), params[2] = {t, t};
    return LLVMBuildCall2(E->b, LLVMFunctionType(t, params, 2, 0), fn, args, 2, "ipow");
}

/* NumPy's shifts: a shift by the width or more gives 0 (or -1 for >> of
 * a negative value) instead of LLVM's poison. */
static LLVMValueRef
int_shift(Emit *E, CcOp op, TsKind k, LLVMValueRef a, LLVMValueRef b)
{
    LLVMValueRef width = em_int_const(E, k, ts_bits(k));
    LLVMValueRef in_range = LLVMBuildICmp(E->b, LLVMIntULT, b, width, "sh.ok");
    LLVMValueRef safe = LLVMBuildSelect(E->b, in_range, b, em_int_const(E, k, 0), "sh.safe");
    if (op == OP_LSHIFT) {
        return LLVMBuildSelect(E->b, in_range, LLVMBuildShl(E->b, a, safe, "shl.raw"),
                               em_int_const(E, k, 0), "shl");
    }
    if (!ts_is_signed(k)) {
        return LLVMBuildSelect(E->b, in_range, LLVMBuildLShr(E->b, a, safe, "shr.raw"),
                               em_int_const(E, k, 0), "shr");
    }
    LLVMValueRef fill = LLVMBuildAShr(E->b, a, em_int_const(E, k, ts_bits(k) - 1), "shr.fill");
    return LLVMBuildSelect(E->b, in_range, LLVMBuildAShr(E->b, a, safe, "shr.raw"), fill, "shr");
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
        return em_int_pow(E, k, a, b);
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

static LLVMValueRef
floor_of(Emit *E, TsKind k, LLVMValueRef x)
{
    return em_float_intrinsic(E, "llvm.floor", k, &x, 1);
}

/*
 * An ordered relational comparison (<, <=, >, >=) that raises no invalid
 * flag for a quiet NaN.  x86 implements these predicates with signaling
 * compares (cmpltps & co.), so a plain `fcmp olt` would make NumPy warn
 * "invalid value" where its own np.less does not; and LLVM, which assumes
 * compares never trap, folds away any masking of NaN lanes done with floats.
 * So the order is computed on integer keys of the bit patterns.
 * em_order_key's (monotonic in the float order, -0 below +0) serve min/max
 * reductions; em_quiet_fcmp's compare sign-magnitude keys (-0 equal to +0)
 * with NaNs mapped where the compare is false (see there).  Under fastmath
 * (no NaNs) the plain compare is used.
 */
LLVMValueRef
em_order_key(Emit *E, LLVMValueRef x)
{
    LLVMTypeRef ft = LLVMTypeOf(x);
    int vector = LLVMGetTypeKind(ft) == LLVMVectorTypeKind;
    LLVMTypeRef scalar = vector ? LLVMGetElementType(ft) : ft;
    unsigned bits = LLVMGetTypeKind(scalar) == LLVMFloatTypeKind ? 32 : 64;
    LLVMTypeRef it = LLVMIntTypeInContext(E->ctx, bits);
    LLVMValueRef bitsv = LLVMBuildBitCast(E->b, x, it, "bits");
    /* negative values: flip the magnitude bits, so larger magnitudes order lower */
    LLVMValueRef sign = LLVMBuildAShr(E->b, bitsv, LLVMConstInt(it, bits - 1, 0), "sign");
    LLVMValueRef flip = LLVMBuildLShr(E->b, sign, LLVMConstInt(it, 1, 0), "flip");
    return LLVMBuildXor(E->b, bitsv, flip, "key");
}

/* The integer constant v in x's integer shape (a scalar, or a vector of
 * x's length), of `bits` bits. */
static LLVMValueRef
int_splat(Emit *E, LLVMValueRef x, unsigned bits, unsigned long long v)
{
    LLVMTypeRef ft = LLVMTypeOf(x), st = LLVMIntTypeInContext(E->ctx, bits);
    if (LLVMGetTypeKind(ft) != LLVMVectorTypeKind) {
        return LLVMConstInt(st, v, 0);
    }
    unsigned n = LLVMGetVectorSize(ft);
    LLVMValueRef elems[64];
    for (unsigned i = 0; i < n && i < 64; i++) {
        elems[i] = LLVMConstInt(st, v, 0);
    }
    return LLVMConstVector(elems, n < 64 ? n : 64);
}

LLVMValueRef
em_quiet_fcmp(Emit *E, LLVMRealPredicate pred, LLVMValueRef a, LLVMValueRef b, const char *name)
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
    if (E->fastmath || E->target == &cc_host_target) {
        /* host code: the JIT makes every relational compare quiet when the
         * module is optimised (prepare.c: cc_pass_quiet_compares) */
        return LLVMBuildFCmp(E->b, pred, a, b, name);
    }
    /*
     * Device code: one integer compare: the values as two's complement integers (sign
     * and magnitude, so -0 and +0 are both 0), with a NaN (a magnitude
     * above infinity's) made the extreme that makes the compare false: for
     * a > b and a >= b a NaN a is the least and a NaN b the greatest, for
     * a < b and a <= b the other way round (the keys of numbers lie strictly
     * between).  Float compares in the mix (ord, oeq), or an `and` of two
     * conditions, put a chain of masked moves on the selected value's path:
     * an exponential moving count ran 1.7x slower than with a plain fcmp.
     */
    LLVMTypeRef ft = LLVMTypeOf(a);
    int vector = LLVMGetTypeKind(ft) == LLVMVectorTypeKind;
    LLVMTypeRef scalar = vector ? LLVMGetElementType(ft) : ft;
    unsigned bits = LLVMGetTypeKind(scalar) == LLVMFloatTypeKind ? 32 : 64;
    LLVMTypeRef it = LLVMIntTypeInContext(E->ctx, bits);
    if (vector) {
        it = LLVMVectorType(it, LLVMGetVectorSize(ft));
    }
    unsigned long long sign = 1ULL << (bits - 1);
    LLVMValueRef mag_mask = int_splat(E, a, bits, sign - 1);
    LLVMValueRef inf = int_splat(E, a, bits, bits == 32 ? 0x7F800000ULL : 0x7FF0000000000000ULL);
    LLVMValueRef least = int_splat(E, a, bits, sign), most = int_splat(E, a, bits, sign - 1);
    int greater = pred == LLVMRealOGT || pred == LLVMRealOGE;
    LLVMValueRef c = LLVMIsAConstantFP(b) != NULL ? b : LLVMIsAConstantFP(a) != NULL ? a : NULL;
    int loses;
    double cv = c != NULL ? LLVMConstRealGetDouble(c, &loses) : 0;
    if (!vector && c != NULL && cv == cv) {
        /* against a number c: one unsigned range check of the other's key,
         * which folding cannot split (key(a) > key(c) and not NaN becomes
         * key(c) < key(a) <= key(+inf)) */
        LLVMValueRef x = LLVMBuildBitCast(E->b, c == b ? a : b, it, "bits");
        LLVMValueRef mag = LLVMBuildAnd(E->b, x, mag_mask, "mag");
        LLVMValueRef neg = LLVMBuildICmp(E->b, LLVMIntSLT, x, LLVMConstNull(it), "neg");
        LLVMValueRef k = LLVMBuildSelect(E->b, neg, LLVMBuildNeg(E->b, mag, ""), mag, "key");
        long long top = bits == 32 ? 0x7F800000LL : 0x7FF0000000000000LL, kc;
        if (bits == 32) {
            float f = (float)cv;
            unsigned u;
            memcpy(&u, &f, sizeof(u));
            kc = (u >> 31) ? -(long long)(u & 0x7FFFFFFFu) : (long long)u;
        } else {
            unsigned long long u;
            memcpy(&u, &cv, sizeof(u));
            kc = (u >> 63) ? -(long long)(u & 0x7FFFFFFFFFFFFFFFULL) : (long long)u;
        }
        /* the predicate seen from the other value: c < x is x > c */
        int gt = c == b ? greater : !greater;
        int strict = pred == LLVMRealOGT || pred == LLVMRealOLT;
        /* x in [lo, hi] */
        long long lo = gt ? kc + strict : -top, hi = gt ? top : kc - strict;
        if (lo > hi) {
            return LLVMConstInt(LLVMInt1TypeInContext(E->ctx), 0, 0);
        }
        LLVMValueRef off = LLVMBuildSub(E->b, k, LLVMConstInt(it, (unsigned long long)lo, 1), "");
        return LLVMBuildICmp(E->b, LLVMIntULE, off,
                             LLVMConstInt(it, (unsigned long long)(hi - lo), 0), name);
    }
    LLVMValueRef key[2], in[2] = {a, b};
    for (int i = 0; i < 2; i++) {
        LLVMValueRef x = LLVMBuildBitCast(E->b, in[i], it, "bits");
        LLVMValueRef mag = LLVMBuildAnd(E->b, x, mag_mask, "mag");
        LLVMValueRef neg = LLVMBuildICmp(E->b, LLVMIntSLT, x, LLVMConstNull(it), "neg");
        key[i] = LLVMBuildSelect(E->b, neg, LLVMBuildNeg(E->b, mag, ""), mag, "key");
        LLVMValueRef nan = LLVMBuildICmp(E->b, LLVMIntUGT, mag, inf, "nan");
        key[i] = LLVMBuildSelect(E->b, nan, (greater == (i == 0)) ? least : most, key[i], "key");
    }
    return LLVMBuildICmp(E->b, ip, key[0], key[1], name);
}

/* NumPy's npy_divmod: Python's floor division and modulo for floats. */
static LLVMValueRef
float_divmod(Emit *E, CcOp op, TsKind k, LLVMValueRef a, LLVMValueRef b)
{
    LLVMValueRef zero = em_real_const(E, k, 0.0), one = em_real_const(E, k, 1.0);
    LLVMValueRef mod = LLVMBuildFRem(E->b, a, b, "fmod");
    LLVMValueRef div = LLVMBuildFDiv(E->b, LLVMBuildFSub(E->b, a, mod, "a.sub.mod"), b, "div");
    LLVMValueRef mod_nz = LLVMBuildFCmp(E->b, LLVMRealUNE, mod, zero, "mod.nz");
    LLVMValueRef b_neg = em_quiet_fcmp(E, LLVMRealOLT, b, zero, "b.neg");
    LLVMValueRef mod_neg = em_quiet_fcmp(E, LLVMRealOLT, mod, zero, "mod.neg");
    LLVMValueRef fix =
        LLVMBuildAnd(E->b, mod_nz, LLVMBuildXor(E->b, b_neg, mod_neg, "sign.differs"), "fix");
    LLVMValueRef b_zero = LLVMBuildFCmp(E->b, LLVMRealOEQ, b, zero, "b.zero");
    if (op == OP_MOD) {
        LLVMValueRef m =
            LLVMBuildSelect(E->b, fix, LLVMBuildFAdd(E->b, mod, b, "mod.add.b"), mod, "mod.fixed");
        m = LLVMBuildSelect(E->b, mod_nz, m, em_copysign_of(E, k, zero, b), "mod.signed");
        return LLVMBuildSelect(E->b, b_zero, mod, m, "mod");
    }
    div = LLVMBuildSelect(E->b, fix, LLVMBuildFSub(E->b, div, one, "div.sub.1"), div, "div.fixed");
    LLVMValueRef fl = floor_of(E, k, div);
    LLVMValueRef up = em_quiet_fcmp(E, LLVMRealOGT, LLVMBuildFSub(E->b, div, fl, "div.frac"),
                                    em_real_const(E, k, 0.5), "round.up");
    fl =
        LLVMBuildSelect(E->b, up, LLVMBuildFAdd(E->b, fl, one, "floor.add.1"), fl, "floor.rounded");
    LLVMValueRef quotient = LLVMBuildFDiv(E->b, a, b, "q");
    LLVMValueRef div_nz = LLVMBuildFCmp(E->b, LLVMRealUNE, div, zero, "div.nz");
    LLVMValueRef r =
        LLVMBuildSelect(E->b, div_nz, fl, em_copysign_of(E, k, zero, quotient), "floordiv.signed");
    return LLVMBuildSelect(E->b, b_zero, quotient, r, "floordiv");
}

static LLVMValueRef
float_binop(Emit *E, CcOp op, TsKind k, LLVMValueRef a, LLVMValueRef b)
{
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
        return em_float_pow(E, k, a, b);
    default:
        return NULL;
    }
}

/* ---- complex arithmetic ---- */

static LLVMValueRef
complex_mul(Emit *E, TsKind k, LLVMValueRef x, LLVMValueRef y)
{
    LLVMValueRef a = em_re_of(E, x), b = em_im_of(E, x), c = em_re_of(E, y), d = em_im_of(E, y);
    LLVMValueRef re = LLVMBuildFSub(E->b, LLVMBuildFMul(E->b, a, c, "ac"),
                                    LLVMBuildFMul(E->b, b, d, "bd"), "prod.re");
    LLVMValueRef im = LLVMBuildFAdd(E->b, LLVMBuildFMul(E->b, a, d, "ad"),
                                    LLVMBuildFMul(E->b, b, c, "bc"), "prod.im");
    return em_make_complex(E, k, re, im);
}

/* 1 of kind p, which LLVM cannot see is 1 (a load of a module global it
 * may not assume unchanged), on the host: x / (c ? y : 1) would otherwise
 * become c ? x / y : x, and x / y run where y is 0 (a GPU keeps no flags). */
static LLVMValueRef
opaque_one(Emit *E, TsKind p)
{
    LLVMTypeRef t = cc_value_type(E->ctx, p);
    if (E->fn->device) {
        return LLVMConstReal(t, 1.0);
    }
    const char *name = p == TS_FLOAT32 ? "numbavec.one.f32" : "numbavec.one.f64";
    LLVMValueRef g = LLVMGetNamedGlobal(E->mod, name);
    if (g == NULL) {
        g = LLVMAddGlobal(E->mod, t, name);
        LLVMSetInitializer(g, LLVMConstReal(t, 1.0));
        LLVMSetLinkage(g, LLVMPrivateLinkage);
    }
    return LLVMBuildLoad2(E->b, t, g, "one");
}

/* Smith's algorithm, as NumPy divides complex numbers, computed on one
 * path: the operands are chosen by which part of y is larger (selects),
 * so that only the chosen arithmetic runs.  Branches (as before) let
 * LLVM if-convert a loop and compute both ways for every element, and the
 * way not taken divides by a zero part: a divide-by-zero flag NumPy does
 * not raise.  By parts, with |c| >= |d| (else the roles of c and d, and of
 * a and b, swap and the imaginary part changes sign, exactly):
 *   rat = d / c, scl = 1 / (c + d rat), (a + b rat) scl + (b - a rat) scl i
 * and for y = 0, NumPy's a / |c| + b / |d| i.  Where a way is not the one
 * taken its divisors are 1 and its numerators 0: no flag. */
static LLVMValueRef
complex_div(Emit *E, TsKind k, LLVMValueRef x, LLVMValueRef y)
{
    TsKind p = em_part_kind(k);
    LLVMBuilderRef b = E->b;
    LLVMValueRef xr = em_re_of(E, x), xi = em_im_of(E, x), c = em_re_of(E, y), d = em_im_of(E, y);
    LLVMValueRef ac = em_fabs_of(E, p, c), ad = em_fabs_of(E, p, d);
    LLVMValueRef zero = em_real_const(E, p, 0.0), one = em_real_const(E, p, 1.0);
    LLVMValueRef re_larger = em_quiet_fcmp(E, LLVMRealOGE, ac, ad, "re.larger");
    LLVMValueRef y_zero = LLVMBuildAnd(b, LLVMBuildFCmp(b, LLVMRealOEQ, ac, zero, "c.zero"),
                                       LLVMBuildFCmp(b, LLVMRealOEQ, ad, zero, "d.zero"), "y.zero");
    LLVMValueRef big =
        LLVMBuildSelect(b, y_zero, one, LLVMBuildSelect(b, re_larger, c, d, "big"), "big");
    LLVMValueRef small = LLVMBuildSelect(b, re_larger, d, c, "small");
    LLVMValueRef u =
        LLVMBuildSelect(b, y_zero, zero, LLVMBuildSelect(b, re_larger, xr, xi, "u"), "u");
    LLVMValueRef w =
        LLVMBuildSelect(b, y_zero, zero, LLVMBuildSelect(b, re_larger, xi, xr, "w"), "w");
    LLVMValueRef rat = LLVMBuildFDiv(b, small, big, "rat");
    LLVMValueRef scl = LLVMBuildFDiv(
        b, one, LLVMBuildFAdd(b, big, LLVMBuildFMul(b, small, rat, "small.rat"), "denom"), "scl");
    LLVMValueRef re = LLVMBuildFMul(
        b, LLVMBuildFAdd(b, u, LLVMBuildFMul(b, w, rat, "w.rat"), "num.re"), scl, "q.re");
    LLVMValueRef im = LLVMBuildFMul(
        b, LLVMBuildFSub(b, w, LLVMBuildFMul(b, u, rat, "u.rat"), "num.im"), scl, "q.im");
    im = LLVMBuildSelect(b, re_larger, im, LLVMBuildFNeg(b, im, "q.im"), "q.im");
    /* y = 0: NumPy's division of each part by the magnitude of y's part,
     * divided by 1 elsewhere.  y = 0 tested again ((|c| + |d|) ONE = 0, in
     * terms LLVM cannot reduce to the first test even where d is the
     * constant 0 of a real y): were it the condition that picks this
     * result, LLVM would drop the select inside it as known, and divide
     * by 0 wherever y is not 0 */
    LLVMValueRef opaque = opaque_one(E, p);
    LLVMValueRef y_mag = LLVMBuildFMul(b, LLVMBuildFAdd(b, ac, ad, "y.mag"), opaque, "y.mag");
    LLVMValueRef y_none = LLVMBuildFCmp(b, LLVMRealOEQ, y_mag, zero, "y.none");
    LLVMValueRef zr =
        LLVMBuildFDiv(b, xr, LLVMBuildSelect(b, y_none, ac, opaque, "zd.re"), "zdiv.re");
    LLVMValueRef zi =
        LLVMBuildFDiv(b, xi, LLVMBuildSelect(b, y_none, ad, opaque, "zd.im"), "zdiv.im");
    return em_make_complex(E, k, LLVMBuildSelect(b, y_zero, zr, re, "cdiv.re"),
                           LLVMBuildSelect(b, y_zero, zi, im, "cdiv.im"));
}

LLVMValueRef
em_complex_abs(Emit *E, TsKind k, LLVMValueRef z)
{
    LLVMValueRef parts[2] = {em_re_of(E, z), em_im_of(E, z)};
    return em_libm(E, "hypot", em_part_kind(k), parts, 2);
}

static LLVMValueRef
complex_exp(Emit *E, TsKind k, LLVMValueRef z)
{
    TsKind p = em_part_kind(k);
    LLVMValueRef x = em_re_of(E, z), y = em_im_of(E, z);
    LLVMValueRef ex = em_float_intrinsic(E, "llvm.exp", p, &x, 1);
    LLVMValueRef c = em_float_intrinsic(E, "llvm.cos", p, &y, 1);
    LLVMValueRef s = em_float_intrinsic(E, "llvm.sin", p, &y, 1);
    return em_make_complex(E, k, LLVMBuildFMul(E->b, ex, c, "exp.re"),
                           LLVMBuildFMul(E->b, ex, s, "exp.im"));
}

static LLVMValueRef
complex_log(Emit *E, TsKind k, LLVMValueRef z)
{
    TsKind p = em_part_kind(k);
    LLVMValueRef r = em_complex_abs(E, k, z);
    LLVMValueRef yx[2] = {em_im_of(E, z), em_re_of(E, z)};
    return em_make_complex(E, k, em_float_intrinsic(E, "llvm.log", p, &r, 1),
                           em_libm(E, "atan2", p, yx, 2));
}

/* z ** n for an integer |n| < 100 by squaring; a negative n divides 1 by it. */
static LLVMValueRef
complex_powi(Emit *E, TsKind k, LLVMValueRef z, LLVMValueRef n)
{
    TsKind p = em_part_kind(k);
    LLVMTypeRef ct = cc_value_type(E->ctx, k), i64 = LLVMInt64TypeInContext(E->ctx);
    LLVMValueRef zero64 = LLVMConstInt(i64, 0, 0);
    LLVMValueRef one = em_make_complex(E, k, em_real_const(E, p, 1.0), em_real_const(E, p, 0.0));
    LLVMValueRef r_slot = em_entry_alloca(E, ct, "cpow.r"),
                 p_slot = em_entry_alloca(E, ct, "cpow.p");
    LLVMValueRef m_slot = em_entry_alloca(E, i64, "cpow.m");
    LLVMValueRef neg = LLVMBuildICmp(E->b, LLVMIntSLT, n, zero64, "n.neg");
    LLVMBuildStore(E->b, one, r_slot);
    LLVMBuildStore(E->b, z, p_slot);
    LLVMBuildStore(E->b, LLVMBuildSelect(E->b, neg, LLVMBuildNeg(E->b, n, "minus.n"), n, "m"),
                   m_slot);
    LLVMBasicBlockRef loop = em_new_block(E, "cpow.loop"), done = em_new_block(E, "cpow.done");
    LLVMBuildBr(E->b, loop);
    LLVMPositionBuilderAtEnd(E->b, loop);
    LLVMValueRef m = LLVMBuildLoad2(E->b, i64, m_slot, "m");
    LLVMValueRef r = LLVMBuildLoad2(E->b, ct, r_slot, "r"),
                 pw = LLVMBuildLoad2(E->b, ct, p_slot, "p");
    LLVMValueRef odd = LLVMBuildTrunc(E->b, m, LLVMInt1TypeInContext(E->ctx), "odd");
    LLVMBuildStore(E->b, LLVMBuildSelect(E->b, odd, complex_mul(E, k, r, pw), r, "r.next"), r_slot);
    LLVMBuildStore(E->b, complex_mul(E, k, pw, pw), p_slot);
    LLVMValueRef m2 = LLVMBuildLShr(E->b, m, LLVMConstInt(i64, 1, 0), "m.next");
    LLVMBuildStore(E->b, m2, m_slot);
    LLVMBuildCondBr(E->b, LLVMBuildICmp(E->b, LLVMIntNE, m2, zero64, "m.more"), loop, done);
    LLVMPositionBuilderAtEnd(E->b, done);
    LLVMValueRef result = LLVMBuildLoad2(E->b, ct, r_slot, "cpow.int");
    LLVMBasicBlockRef inv = em_new_block(E, "cpow.inv"), out = em_new_block(E, "cpow.out");
    LLVMBasicBlockRef from = em_current_block(E);
    LLVMBuildCondBr(E->b, neg, inv, out);
    LLVMPositionBuilderAtEnd(E->b, inv);
    LLVMValueRef recip = complex_div(E, k, one, result);
    LLVMBasicBlockRef inv_end = em_current_block(E);
    LLVMBuildBr(E->b, out);
    LLVMPositionBuilderAtEnd(E->b, out);
    LLVMValueRef phi = em_join(E, result, from, recip, inv_end, "cpow.n");
    /* NumPy's npy_cpow: n = 1, 2, 3 multiply directly */
    LLVMValueRef sq = complex_mul(E, k, z, z), cube = complex_mul(E, k, sq, z);
    LLVMValueRef small =
        LLVMBuildSelect(E->b, LLVMBuildICmp(E->b, LLVMIntEQ, n, LLVMConstInt(i64, 3, 0), "n.is3"),
                        cube, phi, "cpow.3");
    small =
        LLVMBuildSelect(E->b, LLVMBuildICmp(E->b, LLVMIntEQ, n, LLVMConstInt(i64, 2, 0), "n.is2"),
                        sq, small, "cpow.2");
    return LLVMBuildSelect(E->b,
                           LLVMBuildICmp(E->b, LLVMIntEQ, n, LLVMConstInt(i64, 1, 0), "n.is1"), z,
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
    TsKind p = em_part_kind(k);
    LLVMValueRef zero = em_real_const(E, p, 0.0);
    LLVMValueRef wr = em_re_of(E, w), wi = em_im_of(E, w);
    LLVMValueRef w_zero = LLVMBuildNot(E->b, em_truthy(E, w, k), "w.zero");
    LLVMValueRef z_zero = LLVMBuildNot(E->b, em_truthy(E, z, k), "z.zero");
    LLVMValueRef wi_zero = LLVMBuildFCmp(E->b, LLVMRealOEQ, wi, zero, "wi.zero");
    LLVMValueRef trunc = em_float_intrinsic(E, "llvm.trunc", p, &wr, 1);
    LLVMValueRef small =
        em_quiet_fcmp(E, LLVMRealOLT, em_fabs_of(E, p, wr), em_real_const(E, p, 100.0), "wr.small");
    LLVMValueRef is_int = LLVMBuildAnd(
        E->b,
        LLVMBuildAnd(E->b, wi_zero, LLVMBuildFCmp(E->b, LLVMRealOEQ, wr, trunc, "wr.whole"),
                     "w.real.whole"),
        small, "w.int");
    LLVMBasicBlockRef b_int = em_new_block(E, "cpow.int"), b_gen = em_new_block(E, "cpow.gen");
    LLVMBasicBlockRef done = em_new_block(E, "cpow.done");
    /* the special cases: w == 0 gives 1; z == 0 gives 0 for a positive real w */
    LLVMValueRef nanv = em_real_const(E, p, NAN);
    LLVMValueRef one = em_make_complex(E, k, em_real_const(E, p, 1.0), zero);
    LLVMValueRef pos_real = em_quiet_fcmp(E, LLVMRealOGT, wr, zero, "wr.pos");
    LLVMValueRef at_zero = LLVMBuildSelect(E->b, pos_real, em_make_complex(E, k, zero, zero),
                                           em_make_complex(E, k, nanv, nanv), "cpow.at0");
    LLVMValueRef r_special = LLVMBuildSelect(E->b, w_zero, one, at_zero, "cpow.special");
    LLVMBasicBlockRef start = em_current_block(E);
    LLVMValueRef special = LLVMBuildOr(E->b, w_zero, z_zero, "cpow.is.special");
    LLVMBasicBlockRef b_rest = em_new_block(E, "cpow.rest");
    LLVMBuildCondBr(E->b, special, done, b_rest);
    LLVMPositionBuilderAtEnd(E->b, b_rest);
    LLVMBuildCondBr(E->b, is_int, b_int, b_gen);

    LLVMPositionBuilderAtEnd(E->b, b_int);
    LLVMValueRef n = LLVMBuildFPToSI(E->b, wr, LLVMInt64TypeInContext(E->ctx), "n");
    LLVMValueRef r_int = complex_powi(E, k, z, n);
    LLVMBasicBlockRef int_end = em_current_block(E);
    LLVMBuildBr(E->b, done);

    LLVMPositionBuilderAtEnd(E->b, b_gen);
    LLVMValueRef r_gen = complex_exp(E, k, complex_mul(E, k, w, complex_log(E, k, z)));
    LLVMBasicBlockRef gen_end = em_current_block(E);
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
        return em_make_complex(E, k, LLVMBuildFAdd(E->b, em_re_of(E, x), em_re_of(E, y), "sum.re"),
                               LLVMBuildFAdd(E->b, em_im_of(E, x), em_im_of(E, y), "sum.im"));
    case OP_SUB:
        return em_make_complex(E, k, LLVMBuildFSub(E->b, em_re_of(E, x), em_re_of(E, y), "diff.re"),
                               LLVMBuildFSub(E->b, em_im_of(E, x), em_im_of(E, y), "diff.im"));
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

/* ---- by kind ---- */

LLVMValueRef
em_arith(Emit *E, CcOp op, TsKind k, LLVMValueRef a, LLVMValueRef b)
{
    if (ts_is_complex(k)) {
        return complex_binop(E, op, k, a, b);
    }
    if (ts_is_float(k)) {
        return float_binop(E, op, k, a, b);
    }
    return int_binop(E, op, k, a, b);
}
