/*
 * cmath.c - the complex math functions (cmath.exp, np.sqrt of a complex
 * value, ...) as calls into the C library's C99 complex functions.
 *
 * NumPy's complex loops (npy_cexp, npy_csqrt, ...) call the platform's
 * C99 functions when it has them, as glibc does, so calling the same
 * functions gives NumPy's results bit for bit, branch cuts and special
 * values included (where NumPy and Python's cmath disagree, we follow
 * NumPy, see docs/HISTORY.md, "Device functions").  A `double complex` argument cannot be
 * spelled portably in LLVM IR: the x86-64 System V ABI passes and returns
 * double complex in two SSE registers ({double, double} returned,
 * (double, double) passed) and float complex packed in one (<2 x float>),
 * which is what clang emits.  Other hosts get a clear error until the
 * formulas are written in IR (as the cuda target will need).
 */
#include "compiler/compiler.h"

#include <stdio.h>
#include <string.h>

static const char *
c99_name(CcMathOp op)
{
    switch (op) {
    case M_EXP:
        return "cexp";
    case M_LOG:
        return "clog";
    case M_SQRT:
        return "csqrt";
    case M_SIN:
        return "csin";
    case M_COS:
        return "ccos";
    case M_TAN:
        return "ctan";
    case M_ASIN:
        return "casin";
    case M_ACOS:
        return "cacos";
    case M_ATAN:
        return "catan";
    case M_SINH:
        return "csinh";
    case M_COSH:
        return "ccosh";
    case M_TANH:
        return "ctanh";
    case M_ASINH:
        return "casinh";
    case M_ACOSH:
        return "cacosh";
    case M_ATANH:
        return "catanh";
    default:
        return NULL;
    }
}

int
cc_math_has_complex(CcMathOp op)
{
    return c99_name(op) != NULL;
}

#if defined(__x86_64__) && !defined(_WIN32)

/* double complex f(double complex): {double, double} f(double, double) */
static LLVMValueRef
call_c128(LLVMBuilderRef b, LLVMModuleRef mod, const char *name, LLVMValueRef z)
{
    LLVMContextRef ctx = LLVMGetModuleContext(mod);
    LLVMTypeRef d = LLVMDoubleTypeInContext(ctx);
    LLVMTypeRef params[2] = {d, d};
    LLVMTypeRef ret = LLVMStructTypeInContext(ctx, params, 2, 0);
    LLVMTypeRef fty = LLVMFunctionType(ret, params, 2, 0);
    LLVMValueRef args[2] = {LLVMBuildExtractValue(b, z, 0, "z.re"),
                            LLVMBuildExtractValue(b, z, 1, "z.im")};
    LLVMValueRef r = LLVMBuildCall2(b, fty, cc_declare_pure(mod, name, fty), args, 2, name);
    /* the value type of complex128 is that same literal struct */
    return r;
}

/* float complex f(float complex): <2 x float> f(<2 x float>) */
static LLVMValueRef
call_c64(LLVMBuilderRef b, LLVMModuleRef mod, const char *base, LLVMValueRef z)
{
    LLVMContextRef ctx = LLVMGetModuleContext(mod);
    LLVMTypeRef f32 = LLVMFloatTypeInContext(ctx), i32 = LLVMInt32TypeInContext(ctx);
    LLVMTypeRef vec = LLVMVectorType(f32, 2);
    LLVMTypeRef fty = LLVMFunctionType(vec, &vec, 1, 0);
    char name[16];
    snprintf(name, sizeof(name), "%sf", base);
    LLVMValueRef v = LLVMGetUndef(vec);
    v = LLVMBuildInsertElement(b, v, LLVMBuildExtractValue(b, z, 0, "z.re"),
                               LLVMConstInt(i32, 0, 0), "");
    v = LLVMBuildInsertElement(b, v, LLVMBuildExtractValue(b, z, 1, "z.im"),
                               LLVMConstInt(i32, 1, 0), "z.vec");
    LLVMValueRef r = LLVMBuildCall2(b, fty, cc_declare_pure(mod, name, fty), &v, 1, name);
    LLVMTypeRef parts[2] = {f32, f32};
    LLVMValueRef out = LLVMGetUndef(LLVMStructTypeInContext(ctx, parts, 2, 0));
    out = LLVMBuildInsertValue(b, out, LLVMBuildExtractElement(b, r, LLVMConstInt(i32, 0, 0), ""),
                               0, "");
    return LLVMBuildInsertValue(b, out, LLVMBuildExtractElement(b, r, LLVMConstInt(i32, 1, 0), ""),
                                1, name);
}

LLVMValueRef
cc_emit_cmath(LLVMBuilderRef b, LLVMModuleRef mod, CcMathOp op, TsKind k, LLVMValueRef z)
{
    const char *name = c99_name(op);
    if (name == NULL) {
        PyErr_SetString(PyExc_SystemError, "numbavec: no complex form of this function");
        return NULL;
    }
    return k == TS_COMPLEX64 ? call_c64(b, mod, name, z) : call_c128(b, mod, name, z);
}

#else

LLVMValueRef
cc_emit_cmath(LLVMBuilderRef b, LLVMModuleRef mod, CcMathOp op, TsKind k, LLVMValueRef z)
{
    (void)b, (void)mod, (void)k, (void)z;
    PyErr_Format(nv_state.typing_error,
                 "complex %s() is only available on x86-64 hosts in this "
                 "build",
                 c99_name(op) ? c99_name(op) + 1 : "math");
    return NULL;
}

#endif
