/*
 * fpow.c - a float raised to a small integer constant (x ** 3, x ** -2,
 * math.pow(x, 4), np.power(x, 5)): multiplications instead of a call of pow,
 * which costs about ten times as much and keeps a loop from vectorizing
 * well.  arith.c's float ** and emitcall.c's math.pow/np.power come here.
 *
 * The promise (README, docs/DESIGN-NOTES.md): for an integer constant n with
 * |n| <= FP_MAX_EXPONENT the result is within 1 ulp of Python's (C's pow),
 * the same special values (signed zeros, infinities, NaN) and the same
 * floating-point flags; x ** 0, 1, 2, -1 are exact (1, x, x * x, 1 / x: one
 * rounding each, as pow gives them).
 *
 * float64 computes x ** |n| in double-double: each product's rounding error
 * is recovered exactly with an FMA (hi * x - fl(hi * x) is representable), so
 * the sum hi + lo is within ~2^-100 of the exact power and is rounded once;
 * a negative n divides once and corrects the quotient with its exact FMA
 * residual.  That error-free arithmetic holds while nothing overflows or
 * leaves the normal range, so |x| outside [2^-K, 2^K] (K = 1000 / |n|;
 * 100 / |n| for float32),
 * zeros, infinities and NaN take a second path that scales x by a power of
 * two first, clamps values whose result must be 0 or infinity, and scales
 * back in one multiplication, the only one that may overflow or underflow.
 * A branch picks the path: a scalar loop (a reduction) runs the short one,
 * and a vectorized loop runs both as selects.  x ** 3 and x ** 4 need
 * neither (cube_or_fourth): one clamp of x * x keeps their few operations
 * exact enough everywhere.
 *
 * float32 computes in double (each product exact to 2^-53 of it) and rounds
 * once to float32 where double costs what float does (a CPU), but x ** 3
 * there is x * x * x (float32_cube); on a GPU it takes the double-double
 * path in float32.  Under fastmath the power is plain multiplications.
 */
#include "compiler/emit.h"

#include <float.h>
#include <math.h>

enum { FP_MAX_EXPONENT = 8 };

/* A double-double value: hi + lo, |lo| about an ulp of hi or less. */
typedef struct Dd {
    LLVMValueRef hi, lo;
} Dd;

static LLVMValueRef
fma_of(Emit *E, TsKind k, LLVMValueRef a, LLVMValueRef b, LLVMValueRef c)
{
    /* llvm.fma itself on every target: libNVVM and the NVPTX back end take it */
    LLVMValueRef args[3] = {a, b, c};
    LLVMTypeRef t = cc_value_type(E->ctx, k);
    return em_intrinsic(E, "llvm.fma", &t, 1, args, 3);
}

/* x * x exactly, as hi + lo. */
static Dd
dd_square_of(Emit *E, TsKind k, LLVMValueRef x)
{
    LLVMValueRef hi = LLVMBuildFMul(E->b, x, x, "sq.hi");
    LLVMValueRef lo = fma_of(E, k, x, x, LLVMBuildFNeg(E->b, hi, "sq.neg"));
    return (Dd){hi, lo};
}

/* a * a: hi's error exactly, plus the cross term 2 * hi * lo (lo * lo is
 * ~2^-106 of the result and dropped). */
static Dd
dd_square(Emit *E, TsKind k, Dd a)
{
    LLVMValueRef hi = LLVMBuildFMul(E->b, a.hi, a.hi, "dsq.hi");
    LLVMValueRef err = fma_of(E, k, a.hi, a.hi, LLVMBuildFNeg(E->b, hi, "dsq.neg"));
    LLVMValueRef twice = LLVMBuildFAdd(E->b, a.hi, a.hi, "dsq.2hi");
    return (Dd){hi, fma_of(E, k, twice, a.lo, err)};
}

/* a * x: hi's error exactly, plus lo * x. */
static Dd
dd_times(Emit *E, TsKind k, Dd a, LLVMValueRef x)
{
    LLVMValueRef hi = LLVMBuildFMul(E->b, a.hi, x, "dmul.hi");
    LLVMValueRef err = fma_of(E, k, a.hi, x, LLVMBuildFNeg(E->b, hi, "dmul.neg"));
    return (Dd){hi, fma_of(E, k, a.lo, x, err)};
}

/* x ** m, m >= 2, by squaring from the leading bit down; last: whether
 * the last step is left to the caller (set: it is a multiplication by x if
 * m is odd, else a squaring). */
static Dd
dd_power(Emit *E, TsKind k, LLVMValueRef x, int m, int last)
{
    int top = 0;
    while ((m >> (top + 1)) != 0) {
        top++;
    }
    Dd r = {x, NULL};
    for (int bit = top - 1; bit >= 0; bit--) {
        if (bit == 0 && !(m & 1) && last) {
            break;
        }
        r = r.lo == NULL ? dd_square_of(E, k, x) : dd_square(E, k, r);
        if (bit == 0 && last) {
            break;
        }
        if ((m >> bit) & 1) {
            r = dd_times(E, k, r, x);
        }
    }
    return r;
}

/* The last step of x ** m from r, x ** (m - 1) (m odd) or x ** (m / 2):
 * one FMA of its high part and its low part's product, so that
 * hi * x + lo * x (hi * hi + 2 hi lo) is rounded once. */
static LLVMValueRef
dd_last_step(Emit *E, TsKind k, Dd r, LLVMValueRef x, int m)
{
    if (m & 1) {
        LLVMValueRef lo_x = LLVMBuildFMul(E->b, r.lo, x, "pow.lo.x");
        return fma_of(E, k, r.hi, x, lo_x);
    }
    LLVMValueRef twice = LLVMBuildFAdd(E->b, r.hi, r.hi, "pow.2hi");
    LLVMValueRef cross = LLVMBuildFMul(E->b, twice, r.lo, "pow.cross");
    return fma_of(E, k, r.hi, r.hi, cross);
}

/* x ** m, m >= 3, rounded once. */
static LLVMValueRef
dd_power_rounded(Emit *E, TsKind k, LLVMValueRef x, int m)
{
    return dd_last_step(E, k, dd_power(E, k, x, m, 1), x, m);
}

/* 1 / (hi + lo): the quotient q = 1 / hi, corrected by 1 - q * hi (exact
 * with an FMA) and by lo: 1 / (hi + lo) ~ q + q * ((1 - q * hi) - q * lo). */
static LLVMValueRef
dd_reciprocal(Emit *E, TsKind k, Dd a)
{
    LLVMValueRef q = LLVMBuildFDiv(E->b, em_real_const(E, k, 1.0), a.hi, "rcp.q");
    LLVMValueRef neg_q = LLVMBuildFNeg(E->b, q, "rcp.negq");
    LLVMValueRef resid = fma_of(E, k, neg_q, a.hi, em_real_const(E, k, 1.0));
    LLVMValueRef corr = fma_of(E, k, neg_q, a.lo, resid);
    return fma_of(E, k, q, corr, q);
}

/* x ** n (2 <= |n|) rounded once, for x whose powers stay normal. */
static LLVMValueRef
dd_int_power(Emit *E, TsKind k, LLVMValueRef x, int n)
{
    if (n > 0) {
        return dd_power_rounded(E, k, x, n);
    }
    return dd_reciprocal(E, k, dd_power(E, k, x, -n, 0));
}

/* x ** m by plain multiplications (fastmath, and float32 in double). */
static LLVMValueRef
multiplied_power(Emit *E, LLVMValueRef x, int m)
{
    LLVMValueRef r = NULL, base = x;
    for (; m != 0; m >>= 1) {
        if (m & 1) {
            r = r == NULL ? base : LLVMBuildFMul(E->b, r, base, "pow.mul");
        }
        if (m > 1) {
            base = LLVMBuildFMul(E->b, base, base, "pow.sq");
        }
    }
    return r;
}

/* x ** n without double-double: n < 0 is 1 / x ** -n, or, in float32's
 * double (fp_wide), (1 / x) ** -n, so that a float32 subnormal's power
 * overflows (flag and value) instead of dividing by a zero. */
static LLVMValueRef
plain_power(Emit *E, TsKind k, LLVMValueRef x, int n, int fp_wide)
{
    LLVMValueRef one = em_real_const(E, k, 1.0);
    if (n > 0) {
        return multiplied_power(E, x, n);
    }
    if (fp_wide) {
        return multiplied_power(E, LLVMBuildFDiv(E->b, one, x, "pow.rcp"), -n);
    }
    return LLVMBuildFDiv(E->b, one, multiplied_power(E, x, -n), "pow.inv");
}

/* Powers of two of a float kind (exponents base 2): `normal`, a bound on
 * |x ** n| within which the low parts of double-double products stay
 * normal too; `over`, a power that overflows; `under`, one whose
 * reciprocal rounds to zero. */
typedef struct FpRange {
    int normal, over, under;
} FpRange;

static const FpRange *
range_of(TsKind k)
{
    static const FpRange f64 = {1000, 1025, 1076}, f32 = {100, 129, 151};
    return k == TS_FLOAT32 ? &f32 : &f64;
}

static LLVMValueRef
pow2_const(Emit *E, TsKind k, int e)
{
    return em_real_const(E, k, ldexp(1.0, e));
}

/* select(c, a, b) with a name */
static LLVMValueRef
pick(Emit *E, LLVMValueRef c, LLVMValueRef a, LLVMValueRef b, const char *name)
{
    return LLVMBuildSelect(E->b, c, a, b, name);
}

/*
 * |x| above hi_c (or, n < 0, below lo_c) gives 0 or infinity whatever its
 * value: such x become +-hi_c (+-lo_c), whose double-double power cannot
 * overflow once scaled.  Ordered compares: NaN stays.
 */
static LLVMValueRef
clamped(Emit *E, TsKind k, LLVMValueRef x, LLVMValueRef ax, int n, int big_k)
{
    int m = n < 0 ? -n : n;
    const FpRange *r = range_of(k);
    int c_hi = ((n > 0 ? r->over : r->under) + m - 1) / m - big_k;
    int c_lo = (r->over + m - 1) / m - big_k;
    LLVMValueRef hi_c = pow2_const(E, k, big_k + c_hi), lo_c = pow2_const(E, k, -big_k - c_lo);
    LLVMValueRef huge = LLVMBuildFCmp(E->b, LLVMRealOGT, ax, hi_c, "pow.huge");
    x = pick(E, huge, em_copysign_of(E, k, hi_c, x), x, "pow.clamp.hi");
    if (n > 0) {
        return x;
    }
    LLVMValueRef tiny = LLVMBuildFCmp(E->b, LLVMRealOLT, ax, lo_c, "pow.tiny");
    return pick(E, tiny, em_copysign_of(E, k, lo_c, x), x, "pow.clamp.lo");
}

/* What pow gives for x = +-0 or +-inf: x ** n is x or |x| (n > 0), 1 / x or
 * 1 / |x| (n < 0: +-inf with the divide-by-zero flag for a zero, +-0 for an
 * infinity); the division sees 1.0 in other lanes, so it raises nothing. */
static LLVMValueRef
special_power(Emit *E, TsKind k, LLVMValueRef x, LLVMValueRef ax, LLVMValueRef special, int n)
{
    LLVMValueRef v = (n & 1) ? x : ax;
    if (n > 0) {
        return v;
    }
    LLVMValueRef d = pick(E, special, v, em_real_const(E, k, 1.0), "pow.special.d");
    return LLVMBuildFDiv(E->b, em_real_const(E, k, 1.0), d, "pow.special");
}

/* What the edge block hands to the join: the value to raise, the power of
 * two (or infinity) to scale its power by, and for n < 0 whether x is a zero
 * or infinity (then the result is special_value). */
typedef struct PowEdge {
    LLVMValueRef xs, scale, special, special_value;
} PowEdge;

/* n > 0, |x| >= 2^K, infinities and NaN: x / 2^K (clamped), scaled back by
 * 2^(K n).  An infinity raises +-1.0 scaled by infinity: +-inf, no flag. */
static PowEdge
edge_of_positive(Emit *E, TsKind k, LLVMValueRef x, LLVMValueRef ax, int n, int big_k)
{
    LLVMValueRef inf = em_real_const(E, k, INFINITY);
    LLVMValueRef is_inf = LLVMBuildFCmp(E->b, LLVMRealOEQ, ax, inf, "pow.inf");
    LLVMValueRef xs =
        LLVMBuildFMul(E->b, clamped(E, k, x, ax, n, big_k), pow2_const(E, k, -big_k), "pow.xs");
    xs = pick(E, is_inf, em_copysign_of(E, k, em_real_const(E, k, 1.0), x), xs, "pow.xs.safe");
    return (PowEdge){xs, pick(E, is_inf, inf, pow2_const(E, k, big_k * n), "pow.scale"), NULL,
                     NULL};
}

/* n < 0, |x| outside [2^-K, 2^K), zeros, infinities and NaN: x times 2^-K
 * (large) or 2^K (small), clamped, scaled back by 2^(K n) or 2^(-K n). */
static PowEdge
edge_of_negative(Emit *E, TsKind k, LLVMValueRef x, LLVMValueRef ax, int n, int big_k)
{
    LLVMValueRef inf = em_real_const(E, k, INFINITY), zero = em_real_const(E, k, 0.0);
    LLVMValueRef one = em_real_const(E, k, 1.0);
    LLVMValueRef special =
        LLVMBuildOr(E->b, LLVMBuildFCmp(E->b, LLVMRealOEQ, ax, inf, "pow.inf"),
                    LLVMBuildFCmp(E->b, LLVMRealOEQ, ax, zero, "pow.zero"), "pow.special.x");
    LLVMValueRef big = LLVMBuildFCmp(E->b, LLVMRealOGE, ax, pow2_const(E, k, big_k), "pow.big");
    LLVMValueRef small =
        LLVMBuildFCmp(E->b, LLVMRealOLT, ax, pow2_const(E, k, -big_k), "pow.small");
    LLVMValueRef s_in = pick(E, big, pow2_const(E, k, -big_k),
                             pick(E, small, pow2_const(E, k, big_k), one, ""), "pow.scale.in");
    LLVMValueRef s_out = pick(E, big, pow2_const(E, k, big_k * n),
                              pick(E, small, pow2_const(E, k, -big_k * n), one, ""), "pow.scale");
    LLVMValueRef xs = LLVMBuildFMul(E->b, clamped(E, k, x, ax, n, big_k), s_in, "pow.xs");
    return (PowEdge){pick(E, special, one, xs, "pow.xs.safe"), s_out, special,
                     special_power(E, k, x, ax, special, n)};
}

/* x ** n from x's double-double power times scale (NULL: 1); an odd power
 * that underflowed to zero may have lost x's sign in its low part's zero
 * (x ** 3 keeps it: its last FMA's exact product hi * x has x's sign, and
 * lo * x cannot cancel it). */
static LLVMValueRef
scaled_power(Emit *E, TsKind k, LLVMValueRef x, LLVMValueRef xs, LLVMValueRef scale, int n)
{
    LLVMValueRef r = dd_int_power(E, k, xs, n);
    if (scale != NULL) {
        r = LLVMBuildFMul(E->b, r, scale, "pow.scaled");
    }
    return (n & 1) && n != 3 ? em_copysign_of(E, k, r, x) : r;
}

/*
 * float64 x ** n, 3 <= |n| <= FP_MAX_EXPONENT or n = -2.  x whose powers
 * stay in the normal range (for n > 0 also those below: an underflowing
 * power loses at most an ulp of the subnormal result) branch to the
 * double-double evaluation of x itself; the rest are scaled in the edge
 * block first, which evaluates its own copy, so that the common path has
 * neither the scaling multiplication nor the joins of its operands (a
 * gufunc's scalar reduction runs a multiplication and a select fewer per
 * element).  A vectorized loop runs both blocks in every lane: the edge
 * block raises no flag for normal-range x.
 */
static LLVMValueRef
double_double_power(Emit *E, TsKind k, LLVMValueRef x, int n)
{
    int big_k = range_of(k)->normal / (n < 0 ? -n : n);
    LLVMValueRef ax = em_fabs_of(E, k, x);
    LLVMValueRef normal =
        LLVMBuildFCmp(E->b, LLVMRealOLT, ax, pow2_const(E, k, big_k), "pow.hi.ok");
    if (n < 0) {
        LLVMValueRef above =
            LLVMBuildFCmp(E->b, LLVMRealOGE, ax, pow2_const(E, k, -big_k), "pow.lo.ok");
        normal = LLVMBuildAnd(E->b, above, normal, "pow.normal");
    }
    LLVMBasicBlockRef b_dd = em_new_block(E, "pow.dd"), b_edge = em_new_block(E, "pow.edge");
    LLVMBasicBlockRef b_done = em_new_block(E, "pow.done");
    LLVMBuildCondBr(E->b, normal, b_dd, b_edge);
    LLVMPositionBuilderAtEnd(E->b, b_dd);
    LLVMValueRef r_dd = scaled_power(E, k, x, x, NULL, n);
    LLVMBasicBlockRef dd_end = em_current_block(E);
    LLVMBuildBr(E->b, b_done);
    LLVMPositionBuilderAtEnd(E->b, b_edge);
    PowEdge e =
        n > 0 ? edge_of_positive(E, k, x, ax, n, big_k) : edge_of_negative(E, k, x, ax, n, big_k);
    LLVMValueRef r_edge = scaled_power(E, k, x, e.xs, e.scale, n);
    if (n < 0) {
        r_edge = pick(E, e.special, e.special_value, r_edge, "pow.edge.r");
    }
    LLVMBasicBlockRef edge_end = em_current_block(E);
    LLVMBuildBr(E->b, b_done);
    LLVMPositionBuilderAtEnd(E->b, b_done);
    return em_join(E, r_dd, dd_end, r_edge, edge_end, "pow");
}

/*
 * x ** n, 3 <= n <= FP_MAX_EXPONENT, without a branch, in a ufunc's kernel: its
 * loop is vectorized, and there this form costs about half the vector
 * operations of the branch's two paths (a gufunc's loops often carry a value
 * from one element to the next and stay scalar, where the branch skips the
 * edge block).  For n > 0
 * the double-double evaluation of x itself is exact enough everywhere:
 * |x| > 1 makes every intermediate power smaller than the result, the last
 * product is one FMA that overflows (to inf, with the flag) only when the
 * result does, and an underflowing result loses at most an ulp of a
 * subnormal.  What must not reach it: x whose intermediate powers overflow
 * (inf - inf in an error term would raise the invalid flag), clamped to
 * +-2^ceil(over / n), whose n-th power overflows and (n-1)-th does not; and
 * infinities, which raise +-1.0 and take x or |x|.  An odd power keeps x's
 * sign when it underflows to zero (the low part's zero may have lost it).
 */
static LLVMValueRef
positive_power(Emit *E, TsKind k, LLVMValueRef x, int n)
{
    LLVMValueRef ax = em_fabs_of(E, k, x);
    LLVMValueRef c = pow2_const(E, k, (range_of(k)->over + n - 1) / n);
    LLVMValueRef huge = LLVMBuildFCmp(E->b, LLVMRealOGT, ax, c, "pow.huge");
    LLVMValueRef is_inf =
        LLVMBuildFCmp(E->b, LLVMRealOEQ, ax, em_real_const(E, k, INFINITY), "pow.inf");
    LLVMValueRef bound = pick(E, is_inf, em_real_const(E, k, 1.0), c, "pow.bound");
    LLVMValueRef xs = pick(E, huge, em_copysign_of(E, k, bound, x), x, "pow.x");
    LLVMValueRef r = dd_power_rounded(E, k, xs, n);
    if (n & 1) {
        r = em_copysign_of(E, k, r, x);
    }
    return pick(E, is_inf, (n & 1) ? x : ax, r, "pow");
}

/*
 * x ** 3 and x ** 4 without a branch, in five or six operations: x * x as
 * hi + lo, then one FMA.  lo is x * x - min(hi, big), big = 2^(2 ceil(over
 * / m)): below big it is hi's exact error (dd_power_rounded's evaluation:
 * underflowing results keep x's sign, as hi * x is the exact product's,
 * and lose at most an ulp of a subnormal); above, where the power
 * overflows whatever lo is, lo is x * x - big, positive (hi > big means
 * x * x > big), so that lo's product has the power's sign and the last FMA
 * adds two values of one sign: +-inf.  lo's error product neither
 * overflows with the wrong sign there nor is inf - inf (the invalid flag)
 * where x * x itself overflows; the flags are those x * x raises (overflow
 * for a finite x, none for an infinity), as pow gives them.
 */
static LLVMValueRef
cube_or_fourth(Emit *E, TsKind k, LLVMValueRef x, int m)
{
    LLVMValueRef big = pow2_const(E, k, 2 * ((range_of(k)->over + m - 1) / m));
    LLVMValueRef hi = LLVMBuildFMul(E->b, x, x, "sq.hi");
    /* hi < big ? hi : big, one vminsd (a NaN's lo is NaN either way) */
    LLVMValueRef under = LLVMBuildFCmp(E->b, LLVMRealOLT, hi, big, "sq.under");
    LLVMValueRef hi_c = pick(E, under, hi, big, "sq.hi.c");
    LLVMValueRef lo = fma_of(E, k, x, x, LLVMBuildFNeg(E->b, hi_c, "sq.neg"));
    return dd_last_step(E, k, (Dd){hi, lo}, x, m);
}

/* The integer value of a constant float exponent, if it is one in range. */
static int
small_int_exponent(LLVMValueRef b, int *n)
{
    LLVMBool loses = 0;
    if (b == NULL || !LLVMIsAConstantFP(b)) {
        return 0;
    }
    double v = LLVMConstRealGetDouble(b, &loses);
    if (!(fabs(v) <= FP_MAX_EXPONENT) || v != (double)(int)v) {
        return 0;
    }
    *n = (int)v;
    return 1;
}

/*
 * float32 x ** 3 on a CPU: x * x * x in float32.  Checked over every
 * float32 against glibc's powf (docs/HISTORY.md, "x ** 3 in float32"): the
 * product is within 1 ulp of powf's result, with its flags, for every
 * value but +-0x1.965feap+42, whose product rounds to infinity (overflow
 * raised) where its cube rounds to FLT_MAX.  That one value is cubed as 1,
 * raising nothing, and replaced by +-FLT_MAX.  Two multiplications and
 * three lane operations: a loop runs at Numba's x * x * x speed, where
 * float32_power's conversions cost a third more in cache.
 */
static LLVMValueRef
float32_cube(Emit *E, LLVMValueRef x)
{
    TsKind k = TS_FLOAT32;
    LLVMValueRef edge = LLVMBuildFCmp(E->b, LLVMRealOEQ, em_fabs_of(E, k, x),
                                      em_real_const(E, k, 0x1.965feap+42), "cube.edge");
    LLVMValueRef xs = pick(E, edge, em_real_const(E, k, 1.0), x, "cube.x");
    LLVMValueRef r = multiplied_power(E, xs, 3);
    LLVMValueRef top = em_copysign_of(E, k, em_real_const(E, k, FLT_MAX), x);
    return pick(E, edge, top, r, "cube");
}

/* x ** n in float32: in double, rounded once to float32. */
static LLVMValueRef
float32_power(Emit *E, LLVMValueRef x, int n)
{
    LLVMValueRef wide = LLVMBuildFPExt(E->b, x, cc_value_type(E->ctx, TS_FLOAT64), "pow.wide");
    LLVMValueRef r = plain_power(E, TS_FLOAT64, wide, n, 1);
    return LLVMBuildFPTrunc(E->b, r, cc_value_type(E->ctx, TS_FLOAT32), "pow.f32");
}

LLVMValueRef
em_float_pow(Emit *E, TsKind k, LLVMValueRef x, LLVMValueRef b)
{
    int n = 0;
    if (!small_int_exponent(b, &n)) {
        LLVMValueRef args[2] = {x, b};
        return em_float_intrinsic(E, "llvm.pow", k, args, 2);
    }
    if (n == 0) {
        return em_real_const(E, k, 1.0); /* pow(x, 0) is 1 for every x, NaN too */
    }
    if (n == 1 || n == 2 || n == -1 || E->fastmath) {
        return plain_power(E, k, x, n, 0); /* x, x * x, 1 / x: one rounding */
    }
    if (k == TS_FLOAT32 && E->target->fast_f64) {
        return n == 3 ? float32_cube(E, x) : float32_power(E, x, n);
    }
    if (n == 3 || n == 4) {
        return cube_or_fourth(E, k, x, n);
    }
    if (n > 0 && !E->gufunc) {
        return positive_power(E, k, x, n);
    }
    return double_double_power(E, k, x, n);
}
