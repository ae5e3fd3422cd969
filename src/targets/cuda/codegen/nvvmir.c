/*
 * nvvmir.c - LLVM-C modules -> the NVVM IR text that libNVVM accepts below
 * compute_100: the LLVM 7 dialect with typed pointers.
 *
 * LLVM 19 only has opaque pointers (`ptr`); libNVVM 2.0 rejects them for
 * pre-Blackwell targets ("parse expected type").  This printer walks the
 * module and writes every pointer as `i8*` (in its address space), with a
 * bitcast to the typed pointer right before each load, store, GEP and
 * alloca use, which is all the typed dialect needs.  It covers what
 * numbavec's kernels contain (see ptx.c): functions, blocks, arithmetic,
 * casts, compares, select, phi, br/switch/ret, calls, GEP, load/store,
 * extract/insertvalue, scalar and struct constants; anything else fails
 * with a message naming it, never with wrong text.  The module is printed
 * before optimisation: libNVVM optimises (-opt=3), and unoptimised IR
 * holds none of the newer constructs (freeze, newer intrinsics) that
 * LLVM 19's passes introduce.  ptx_legalize_llvm7 first rewrites the few
 * intrinsics emit.c uses that LLVM 7 lacks.
 */
#include "targets/cuda/codegen/codegen.h"

#include <stdarg.h>
#include <math.h>
#include <string.h>

#include <llvm/Config/llvm-config.h>

/* ---- output buffer ---- */

typedef struct Out {
    char *s;
    size_t len, cap;
    int failed;   /* an exception is set */
    unsigned tmp; /* counter of the printer's own temporaries */
} Out;

static void
put(Out *o, const char *fmt, ...)
{
    if (o->failed) {
        return;
    }
    for (;;) {
        va_list ap;
        va_start(ap, fmt);
        int n = vsnprintf(o->s + o->len, o->cap - o->len, fmt, ap);
        va_end(ap);
        if (n >= 0 && (size_t)n < o->cap - o->len) {
            o->len += (size_t)n;
            return;
        }
        size_t cap = o->cap * 2 + (n > 0 ? (size_t)n : 0) + 256;
        char *s = PyMem_Realloc(o->s, cap);
        if (s == NULL) {
            PyErr_NoMemory();
            o->failed = 1;
            return;
        }
        o->s = s;
        o->cap = cap;
    }
}

static void
fail(Out *o, const char *what, LLVMValueRef v)
{
    if (o->failed) {
        return;
    }
    char *text = v ? LLVMPrintValueToString(v) : NULL;
    PyErr_Format(PyExc_NotImplementedError,
                 "NVVM IR (LLVM 7 dialect) export: %s is not supported%s%s", what, text ? ": " : "",
                 text ? text : "");
    if (text) {
        LLVMDisposeMessage(text);
    }
    o->failed = 1;
}

/* ---- types ---- */

static void type(Out *o, LLVMTypeRef t);

static void
struct_type(Out *o, LLVMTypeRef t)
{
    if (LLVMGetStructName(t) != NULL && !LLVMIsLiteralStruct(t)) {
        fail(o, "a named struct type", NULL);
        return;
    }
    unsigned n = LLVMCountStructElementTypes(t);
    put(o, LLVMIsPackedStruct(t) ? "<{ " : "{ ");
    for (unsigned i = 0; i < n; i++) {
        put(o, i ? ", " : "");
        type(o, LLVMStructGetTypeAtIndex(t, i));
    }
    put(o, LLVMIsPackedStruct(t) ? " }>" : " }");
}

/* A pointer as the dialect's byte pointer: i8* in its address space. */
static void
byte_ptr(Out *o, unsigned as)
{
    put(o, as ? "i8 addrspace(%u)*" : "i8*", as);
}

/* T* for a typed use of a pointer in address space as. */
static void
typed_ptr(Out *o, LLVMTypeRef t, unsigned as)
{
    type(o, t);
    put(o, as ? " addrspace(%u)*" : "*", as);
}

static void
type(Out *o, LLVMTypeRef t)
{
    switch (LLVMGetTypeKind(t)) {
    case LLVMVoidTypeKind:
        put(o, "void");
        break;
    case LLVMFloatTypeKind:
        put(o, "float");
        break;
    case LLVMDoubleTypeKind:
        put(o, "double");
        break;
    case LLVMHalfTypeKind:
        put(o, "half");
        break;
    case LLVMIntegerTypeKind:
        put(o, "i%u", LLVMGetIntTypeWidth(t));
        break;
    case LLVMPointerTypeKind:
        byte_ptr(o, LLVMGetPointerAddressSpace(t));
        break;
    case LLVMStructTypeKind:
        struct_type(o, t);
        break;
    case LLVMArrayTypeKind:
        put(o, "[%u x ", LLVMGetArrayLength(t));
        type(o, LLVMGetElementType(t));
        put(o, "]");
        break;
    case LLVMLabelTypeKind:
        put(o, "label");
        break;
    default:
        fail(o, "this type (vector, function, metadata, ...)", NULL);
    }
}

/* The function type written as a pointer: RET (P...)* */
static void
function_ptr_type(Out *o, LLVMTypeRef fty)
{
    type(o, LLVMGetReturnType(fty));
    unsigned n = LLVMCountParamTypes(fty);
    /* the cuda ufunc's strided entries take a few hundred (shape, strides) */
    LLVMTypeRef params[1024];
    if (n > 1024) {
        fail(o, "a function of more than 1024 parameters", NULL);
        return;
    }
    LLVMGetParamTypes(fty, params);
    put(o, " (");
    for (unsigned i = 0; i < n; i++) {
        put(o, i ? ", " : "");
        type(o, params[i]);
    }
    put(o, ")*");
}

/* ---- values ---- */

static void value(Out *o, LLVMValueRef v);

static void
local_name(Out *o, LLVMValueRef v)
{
    size_t len;
    const char *name = LLVMGetValueName2(v, &len);
    put(o, "%%\"%.*s\"", (int)len, name);
}

static void
operand(Out *o, LLVMValueRef v)
{
    type(o, LLVMTypeOf(v));
    put(o, " ");
    value(o, v);
}

static void
const_fp(Out *o, LLVMValueRef v)
{
    LLVMBool loses = 0;
    double d = LLVMConstRealGetDouble(v, &loses);
    unsigned long long bits;
    memcpy(&bits, &d, sizeof(bits));
    /* LLVM's text writes float constants as the exactly equal double too */
    put(o, "0x%016llX", bits);
}

static void
const_aggregate(Out *o, LLVMValueRef v)
{
    int n = LLVMGetNumOperands(v);
    put(o, "{ ");
    for (int i = 0; i < n; i++) {
        put(o, i ? ", " : "");
        operand(o, LLVMGetOperand(v, (unsigned)i));
    }
    put(o, " }");
}

/* [ T a, T b ] (a constant array: the views of arrays/ hold constant
 * strides) */
static void
const_array(Out *o, LLVMValueRef v)
{
    unsigned long long n = LLVMGetArrayLength2(LLVMTypeOf(v));
    put(o, "[ ");
    for (unsigned long long i = 0; i < n; i++) {
        put(o, i ? ", " : "");
        operand(o, LLVMGetAggregateElement(v, (unsigned)i));
    }
    put(o, " ]");
}

static void
value(Out *o, LLVMValueRef v)
{
    if (LLVMIsAArgument(v) || LLVMIsAInstruction(v) || LLVMValueIsBasicBlock(v)) {
        local_name(o, v);
    } else if (LLVMIsAConstantInt(v)) {
        LLVMTypeRef t = LLVMTypeOf(v);
        if (LLVMGetIntTypeWidth(t) == 1) {
            put(o, LLVMConstIntGetZExtValue(v) ? "true" : "false");
        } else if (LLVMGetIntTypeWidth(t) > 64) {
            /* no LLVM-C accessor for the value: its own text, "i128 <digits>" */
            char *text = LLVMPrintValueToString(v);
            if (text == NULL) { /* strdup's: no memory */
                PyErr_NoMemory();
                o->failed = 1;
                return;
            }
            const char *digits = strchr(text, ' ');
            put(o, "%s", digits != NULL ? digits + 1 : text);
            LLVMDisposeMessage(text);
        } else {
            put(o, "%lld", LLVMConstIntGetSExtValue(v));
        }
    } else if (LLVMIsAConstantFP(v)) {
        const_fp(o, v);
    } else if (LLVMIsAUndefValue(v)) { /* poison included: LLVM 7 has undef only */
        put(o, "undef");
    } else if (LLVMIsAConstantPointerNull(v)) {
        put(o, "null");
    } else if (LLVMIsAConstantAggregateZero(v)) {
        put(o, "zeroinitializer");
    } else if (LLVMIsAConstantStruct(v)) {
        const_aggregate(o, v);
    } else if (LLVMIsAConstantArray(v) || LLVMIsAConstantDataArray(v)) {
        const_array(o, v);
    } else if (LLVMIsAFunction(v)) {
        size_t len;
        const char *name = LLVMGetValueName2(v, &len);
        put(o, "@\"%.*s\"", (int)len, name);
    } else {
        fail(o, "this operand (a global, a constant expression or array)", v);
    }
}

/* ---- instructions ---- */

/* A fresh temporary; the printer's own names start with ".nv", which no
 * name from emit.c or ptx.c does. */
static unsigned
temp(Out *o)
{
    return ++o->tmp;
}

/* Writes `%.nvN = bitcast i8* p to T*` and returns N. */
static unsigned
cast_to_typed(Out *o, LLVMValueRef ptr, LLVMTypeRef elem)
{
    unsigned as = LLVMGetPointerAddressSpace(LLVMTypeOf(ptr));
    unsigned n = temp(o);
    put(o, "  %%\".nv%u\" = bitcast ", n);
    operand(o, ptr);
    put(o, " to ");
    typed_ptr(o, elem, as);
    put(o, "\n");
    return n;
}

static void
lhs(Out *o, LLVMValueRef i)
{
    if (LLVMGetTypeKind(LLVMTypeOf(i)) != LLVMVoidTypeKind) {
        put(o, "  ");
        local_name(o, i);
        put(o, " = ");
    } else {
        put(o, "  ");
    }
}

static void
fast_math(Out *o, LLVMValueRef i)
{
#if LLVM_VERSION_MAJOR >= 18
    if (!LLVMCanValueUseFastMathFlags(i)) {
        return;
    }
    LLVMFastMathFlags f = LLVMGetFastMathFlags(i);
    if (f == LLVMFastMathAll) {
        put(o, "fast ");
        return;
    }
    static const struct {
        LLVMFastMathFlags flag;
        const char *text;
    } names[] = {
        {LLVMFastMathAllowReassoc, "reassoc "}, {LLVMFastMathNoNaNs, "nnan "},
        {LLVMFastMathNoInfs, "ninf "},          {LLVMFastMathNoSignedZeros, "nsz "},
        {LLVMFastMathAllowReciprocal, "arcp "}, {LLVMFastMathAllowContract, "contract "},
        {LLVMFastMathApproxFunc, "afn "},
    };
    for (size_t k = 0; k < sizeof(names) / sizeof(names[0]); k++) {
        if (f & names[k].flag) {
            put(o, "%s", names[k].text);
        }
    }
#endif
}

static const char *
binop_name(LLVMOpcode op)
{
    switch (op) {
    case LLVMAdd:
        return "add";
    case LLVMFAdd:
        return "fadd";
    case LLVMSub:
        return "sub";
    case LLVMFSub:
        return "fsub";
    case LLVMMul:
        return "mul";
    case LLVMFMul:
        return "fmul";
    case LLVMUDiv:
        return "udiv";
    case LLVMSDiv:
        return "sdiv";
    case LLVMFDiv:
        return "fdiv";
    case LLVMURem:
        return "urem";
    case LLVMSRem:
        return "srem";
    case LLVMFRem:
        return "frem";
    case LLVMShl:
        return "shl";
    case LLVMLShr:
        return "lshr";
    case LLVMAShr:
        return "ashr";
    case LLVMAnd:
        return "and";
    case LLVMOr:
        return "or";
    case LLVMXor:
        return "xor";
    default:
        return NULL;
    }
}

static const char *
cast_name(LLVMOpcode op)
{
    switch (op) {
    case LLVMTrunc:
        return "trunc";
    case LLVMZExt:
        return "zext";
    case LLVMSExt:
        return "sext";
    case LLVMFPToUI:
        return "fptoui";
    case LLVMFPToSI:
        return "fptosi";
    case LLVMUIToFP:
        return "uitofp";
    case LLVMSIToFP:
        return "sitofp";
    case LLVMFPTrunc:
        return "fptrunc";
    case LLVMFPExt:
        return "fpext";
    case LLVMPtrToInt:
        return "ptrtoint";
    case LLVMIntToPtr:
        return "inttoptr";
    case LLVMBitCast:
        return "bitcast";
    case LLVMAddrSpaceCast:
        return "addrspacecast";
    default:
        return NULL;
    }
}

static const char *
icmp_name(LLVMIntPredicate p)
{
    static const char *const names[] = {"eq",  "ne",  "ugt", "uge", "ult",
                                        "ule", "sgt", "sge", "slt", "sle"};
    return names[p - LLVMIntEQ];
}

static const char *
fcmp_name(LLVMRealPredicate p)
{
    static const char *const names[] = {"false", "oeq", "ogt", "oge", "olt", "ole", "one", "ord",
                                        "uno",   "ueq", "ugt", "uge", "ult", "ule", "une", "true"};
    return names[p];
}

static void
print_binop(Out *o, LLVMValueRef i, const char *name)
{
    lhs(o, i);
    put(o, "%s ", name);
    fast_math(o, i);
    operand(o, LLVMGetOperand(i, 0));
    put(o, ", ");
    value(o, LLVMGetOperand(i, 1));
}

static void
print_load(Out *o, LLVMValueRef i)
{
    LLVMTypeRef t = LLVMTypeOf(i);
    LLVMValueRef ptr = LLVMGetOperand(i, 0);
    unsigned p = cast_to_typed(o, ptr, t);
    lhs(o, i);
    put(o, "load %s", LLVMGetVolatile(i) ? "volatile " : "");
    type(o, t);
    put(o, ", ");
    typed_ptr(o, t, LLVMGetPointerAddressSpace(LLVMTypeOf(ptr)));
    put(o, " %%\".nv%u\", align %u", p, LLVMGetAlignment(i));
}

static void
print_store(Out *o, LLVMValueRef i)
{
    LLVMValueRef v = LLVMGetOperand(i, 0), ptr = LLVMGetOperand(i, 1);
    unsigned p = cast_to_typed(o, ptr, LLVMTypeOf(v));
    put(o, "  store %s", LLVMGetVolatile(i) ? "volatile " : "");
    operand(o, v);
    put(o, ", ");
    typed_ptr(o, LLVMTypeOf(v), LLVMGetPointerAddressSpace(LLVMTypeOf(ptr)));
    put(o, " %%\".nv%u\", align %u", p, LLVMGetAlignment(i));
}

static void
print_alloca(Out *o, LLVMValueRef i)
{
    LLVMTypeRef t = LLVMGetAllocatedType(i);
    unsigned as = LLVMGetPointerAddressSpace(LLVMTypeOf(i));
    unsigned n = temp(o);
    put(o, "  %%\".nv%u\" = alloca ", n);
    type(o, t);
    put(o, ", align %u\n", LLVMGetAlignment(i));
    lhs(o, i);
    put(o, "bitcast ");
    typed_ptr(o, t, as);
    put(o, " %%\".nv%u\" to ", n);
    byte_ptr(o, as);
}

/* The element type a GEP's result points to. */
static LLVMTypeRef
gep_result_type(Out *o, LLVMValueRef i)
{
    LLVMTypeRef t = LLVMGetGEPSourceElementType(i);
    int n = LLVMGetNumOperands(i);
    for (int k = 2; k < n && t != NULL; k++) {
        LLVMValueRef idx = LLVMGetOperand(i, (unsigned)k);
        switch (LLVMGetTypeKind(t)) {
        case LLVMStructTypeKind:
            t = LLVMStructGetTypeAtIndex(t, (unsigned)LLVMConstIntGetZExtValue(idx));
            break;
        case LLVMArrayTypeKind:
            t = LLVMGetElementType(t);
            break;
        default:
            fail(o, "a GEP through a non-aggregate type", i);
            return NULL;
        }
    }
    return t;
}

static void
print_gep(Out *o, LLVMValueRef i)
{
    LLVMTypeRef src = LLVMGetGEPSourceElementType(i), res = gep_result_type(o, i);
    LLVMValueRef ptr = LLVMGetOperand(i, 0);
    unsigned as = LLVMGetPointerAddressSpace(LLVMTypeOf(ptr));
    if (res == NULL) {
        return;
    }
    unsigned p = cast_to_typed(o, ptr, src);
    unsigned g = temp(o);
    put(o, "  %%\".nv%u\" = getelementptr %s", g, LLVMIsInBounds(i) ? "inbounds " : "");
    type(o, src);
    put(o, ", ");
    typed_ptr(o, src, as);
    put(o, " %%\".nv%u\"", p);
    for (int k = 1; k < LLVMGetNumOperands(i); k++) {
        put(o, ", ");
        operand(o, LLVMGetOperand(i, (unsigned)k));
    }
    put(o, "\n");
    lhs(o, i);
    put(o, "bitcast ");
    typed_ptr(o, res, as);
    put(o, " %%\".nv%u\" to ", g);
    byte_ptr(o, as);
}

static void
print_call(Out *o, LLVMValueRef i)
{
    LLVMValueRef callee = LLVMGetCalledValue(i);
    LLVMTypeRef fty = LLVMGetCalledFunctionType(i);
    if (!LLVMIsAFunction(callee) || LLVMIsFunctionVarArg(fty)) {
        fail(o, "an indirect or variadic call", i);
        return;
    }
    size_t len;
    const char *name = LLVMGetValueName2(callee, &len);
    if (len == 11 && memcmp(name, "llvm.assume", 11) == 0) {
        return; /* an alignment hint, which libNVVM does not use: left out */
    }
    lhs(o, i);
    put(o, "call ");
    fast_math(o, i);
    type(o, LLVMGetReturnType(fty));
    put(o, " ");
    value(o, callee);
    put(o, "(");
    unsigned n = LLVMGetNumArgOperands(i);
    for (unsigned k = 0; k < n; k++) {
        put(o, k ? ", " : "");
        operand(o, LLVMGetOperand(i, k));
    }
    put(o, ")");
}

static void
print_phi(Out *o, LLVMValueRef i)
{
    lhs(o, i);
    put(o, "phi ");
    type(o, LLVMTypeOf(i));
    unsigned n = LLVMCountIncoming(i);
    for (unsigned k = 0; k < n; k++) {
        put(o, k ? ", [ " : " [ ");
        value(o, LLVMGetIncomingValue(i, k));
        put(o, ", ");
        local_name(o, LLVMBasicBlockAsValue(LLVMGetIncomingBlock(i, k)));
        put(o, " ]");
    }
}

static void
print_indices(Out *o, LLVMValueRef i)
{
    unsigned n = LLVMGetNumIndices(i);
    const unsigned *idx = LLVMGetIndices(i);
    for (unsigned k = 0; k < n; k++) {
        put(o, ", %u", idx[k]);
    }
}

static void
print_br(Out *o, LLVMValueRef i)
{
    if (LLVMIsConditional(i)) {
        put(o, "  br ");
        operand(o, LLVMGetCondition(i));
        put(o, ", label ");
        local_name(o, LLVMBasicBlockAsValue(LLVMGetSuccessor(i, 0)));
        put(o, ", label ");
        local_name(o, LLVMBasicBlockAsValue(LLVMGetSuccessor(i, 1)));
    } else {
        put(o, "  br label ");
        local_name(o, LLVMBasicBlockAsValue(LLVMGetSuccessor(i, 0)));
    }
}

static void
print_switch(Out *o, LLVMValueRef i)
{
    put(o, "  switch ");
    operand(o, LLVMGetOperand(i, 0));
    put(o, ", label ");
    local_name(o, LLVMBasicBlockAsValue(LLVMGetSwitchDefaultDest(i)));
    put(o, " [");
    int n = LLVMGetNumOperands(i);
    for (int k = 2; k + 1 < n; k += 2) {
        put(o, " ");
        operand(o, LLVMGetOperand(i, (unsigned)k));
        put(o, ", label ");
        local_name(o, LLVMGetOperand(i, (unsigned)k + 1));
    }
    put(o, " ]");
}

static void
print_cast(Out *o, LLVMValueRef i, const char *name)
{
    lhs(o, i);
    put(o, "%s ", name);
    operand(o, LLVMGetOperand(i, 0));
    put(o, " to ");
    type(o, LLVMTypeOf(i));
}

static void
instruction(Out *o, LLVMValueRef i)
{
    LLVMOpcode op = LLVMGetInstructionOpcode(i);
    const char *name;
    if ((name = binop_name(op)) != NULL) {
        print_binop(o, i, name);
    } else if ((name = cast_name(op)) != NULL) {
        print_cast(o, i, name);
    } else {
        switch (op) {
        case LLVMFNeg: /* LLVM 7 has no fneg: -0.0 - x */
            lhs(o, i);
            put(o, "fsub ");
            fast_math(o, i);
            type(o, LLVMTypeOf(i));
            put(o, " 0x8000000000000000, ");
            value(o, LLVMGetOperand(i, 0));
            break;
        case LLVMICmp:
            lhs(o, i);
            put(o, "icmp %s ", icmp_name(LLVMGetICmpPredicate(i)));
            operand(o, LLVMGetOperand(i, 0));
            put(o, ", ");
            value(o, LLVMGetOperand(i, 1));
            break;
        case LLVMFCmp:
            lhs(o, i);
            put(o, "fcmp ");
            fast_math(o, i);
            put(o, "%s ", fcmp_name(LLVMGetFCmpPredicate(i)));
            operand(o, LLVMGetOperand(i, 0));
            put(o, ", ");
            value(o, LLVMGetOperand(i, 1));
            break;
        case LLVMSelect:
            lhs(o, i);
            put(o, "select ");
            for (unsigned k = 0; k < 3; k++) {
                put(o, k ? ", " : "");
                operand(o, LLVMGetOperand(i, k));
            }
            break;
        case LLVMFreeze: /* LLVM 7 has no freeze: the value itself */
            lhs(o, i);
            put(o, "select i1 true, ");
            operand(o, LLVMGetOperand(i, 0));
            put(o, ", ");
            operand(o, LLVMGetOperand(i, 0));
            break;
        case LLVMPHI:
            print_phi(o, i);
            break;
        case LLVMCall:
            print_call(o, i);
            break;
        case LLVMLoad:
            print_load(o, i);
            break;
        case LLVMStore:
            print_store(o, i);
            break;
        case LLVMAlloca:
            print_alloca(o, i);
            break;
        case LLVMGetElementPtr:
            print_gep(o, i);
            break;
        case LLVMExtractValue:
            lhs(o, i);
            put(o, "extractvalue ");
            operand(o, LLVMGetOperand(i, 0));
            print_indices(o, i);
            break;
        case LLVMInsertValue:
            lhs(o, i);
            put(o, "insertvalue ");
            operand(o, LLVMGetOperand(i, 0));
            put(o, ", ");
            operand(o, LLVMGetOperand(i, 1));
            print_indices(o, i);
            break;
        case LLVMBr:
            print_br(o, i);
            break;
        case LLVMSwitch:
            print_switch(o, i);
            break;
        case LLVMRet:
            if (LLVMGetNumOperands(i) == 0) {
                put(o, "  ret void");
            } else {
                put(o, "  ret ");
                operand(o, LLVMGetOperand(i, 0));
            }
            break;
        case LLVMUnreachable:
            put(o, "  unreachable");
            break;
        default:
            fail(o, "this instruction", i);
            return;
        }
    }
    put(o, "\n");
}

/* ---- functions and the module ---- */

/* Gives every unnamed argument, instruction and block a name: the printer
 * writes names, and LLVM keeps names unique within a function. */
static void
name_values(LLVMValueRef f)
{
    for (LLVMValueRef a = LLVMGetFirstParam(f); a; a = LLVMGetNextParam(a)) {
        size_t len;
        if (LLVMGetValueName2(a, &len), len == 0) {
            LLVMSetValueName2(a, "arg", 3);
        }
    }
    for (LLVMBasicBlockRef bb = LLVMGetFirstBasicBlock(f); bb; bb = LLVMGetNextBasicBlock(bb)) {
        LLVMValueRef bv = LLVMBasicBlockAsValue(bb);
        size_t len;
        if (LLVMGetValueName2(bv, &len), len == 0) {
            LLVMSetValueName2(bv, "bb", 2);
        }
        for (LLVMValueRef i = LLVMGetFirstInstruction(bb); i; i = LLVMGetNextInstruction(i)) {
            if (LLVMGetTypeKind(LLVMTypeOf(i)) != LLVMVoidTypeKind
                && (LLVMGetValueName2(i, &len), len == 0)) {
                LLVMSetValueName2(i, "v", 1);
            }
        }
    }
}

static int
has_attr(LLVMValueRef f, const char *name)
{
    unsigned kind = LLVMGetEnumAttributeKindForName(name, strlen(name));
    return kind && LLVMGetEnumAttributeAtIndex(f, LLVMAttributeFunctionIndex, kind) != NULL;
}

static void
function(Out *o, LLVMValueRef f)
{
    int is_decl = LLVMIsDeclaration(f);
    LLVMLinkage link = LLVMGetLinkage(f);
    if (link != LLVMExternalLinkage && link != LLVMInternalLinkage && link != LLVMPrivateLinkage) {
        fail(o, "this linkage", f);
        return;
    }
    LLVMTypeRef fty = LLVMGlobalGetValueType(f);
    if (LLVMIsFunctionVarArg(fty)) {
        fail(o, "a variadic function", f);
        return;
    }
    name_values(f);
    put(o, "%s%s", is_decl ? "declare " : "define ",
        link == LLVMExternalLinkage ? "" : "internal ");
    type(o, LLVMGetReturnType(fty));
    put(o, " ");
    value(o, f);
    put(o, "(");
    unsigned n = LLVMCountParams(f);
    for (unsigned k = 0; k < n; k++) {
        LLVMValueRef a = LLVMGetParam(f, k);
        put(o, k ? ", " : "");
        type(o, LLVMTypeOf(a));
        if (!is_decl) {
            put(o, " ");
            local_name(o, a);
        }
    }
    put(o, ") nounwind%s", has_attr(f, "alwaysinline") ? " alwaysinline" : "");
    if (is_decl) {
        put(o, "\n\n");
        return;
    }
    put(o, " {\n");
    for (LLVMBasicBlockRef bb = LLVMGetFirstBasicBlock(f); bb && !o->failed;
         bb = LLVMGetNextBasicBlock(bb)) {
        size_t len;
        const char *name = LLVMGetValueName2(LLVMBasicBlockAsValue(bb), &len);
        put(o, "\"%.*s\":\n", (int)len, name);
        for (LLVMValueRef i = LLVMGetFirstInstruction(bb); i && !o->failed;
             i = LLVMGetNextInstruction(i)) {
            instruction(o, i);
        }
    }
    put(o, "}\n\n");
}

/* The data layout NVVM IR specifies for 64-bit pointers. */
static const char nvvm_datalayout[] =
    "e-p:64:64:64-i1:8:8-i8:8:8-i16:16:16-i32:32:32-i64:64:64-i128:128:128-f32:32:32-"
    "f64:64:64-v16:16:16-v32:32:32-v64:64:64-v128:128:128-n16:32:64";

char *
ptx_nvvmir_legacy(LLVMModuleRef mod, const LLVMValueRef *kernels, int nkernels, size_t *size)
{
    Out o = {0};
    if (LLVMGetFirstGlobal(mod) != NULL) {
        fail(&o, "a global variable", LLVMGetFirstGlobal(mod));
    }
    put(&o, "target datalayout = \"%s\"\ntarget triple = \"nvptx64-nvidia-cuda\"\n\n",
        nvvm_datalayout);
    for (LLVMValueRef f = LLVMGetFirstFunction(mod); f && !o.failed; f = LLVMGetNextFunction(f)) {
        function(&o, f);
    }
    /* the kernel annotation names the function through its typed pointer */
    put(&o, "!nvvm.annotations = !{");
    for (int k = 0; k < nkernels; k++) {
        put(&o, "%s!%d", k ? ", " : "", k + 1);
    }
    put(&o, "}\n!nvvmir.version = !{!0}\n!0 = !{i32 2, i32 0}\n");
    for (int k = 0; k < nkernels; k++) {
        put(&o, "!%d = !{", k + 1);
        function_ptr_type(&o, LLVMGlobalGetValueType(kernels[k]));
        put(&o, " ");
        value(&o, kernels[k]);
        put(&o, ", !\"kernel\", i32 1}\n");
    }
    if (o.failed) {
        PyMem_Free(o.s);
        return NULL;
    }
    *size = o.len;
    return o.s;
}

/* ---- LLVM 7 legalisation ---- */

typedef enum { SAT_SIGNED, SAT_UNSIGNED, FMINIMUM, FMAXIMUM } Rewrite;

static LLVMValueRef
fconst(LLVMTypeRef t, double v)
{
    return LLVMConstReal(t, v);
}

/* fptosi.sat / fptoui.sat: clamp to the integer range, NaN -> 0. */
static void
build_sat(LLVMBuilderRef b, LLVMValueRef f, int is_signed)
{
    LLVMValueRef x = LLVMGetParam(f, 0);
    LLVMTypeRef it = LLVMGetReturnType(LLVMGlobalGetValueType(f)), ft = LLVMTypeOf(x);
    unsigned w = LLVMGetIntTypeWidth(it);
    double hi = is_signed ? ldexp(1.0, (int)w - 1) : ldexp(1.0, (int)w);
    LLVMValueRef maxv =
        is_signed ? LLVMConstInt(it, (1ULL << (w - 1)) - 1, 0) : LLVMConstAllOnes(it);
    LLVMValueRef minv = is_signed ? LLVMConstInt(it, 1ULL << (w - 1), 0) : LLVMConstNull(it);
    LLVMValueRef r =
        is_signed ? LLVMBuildFPToSI(b, x, it, "conv") : LLVMBuildFPToUI(b, x, it, "conv");
    LLVMValueRef big = LLVMBuildFCmp(b, LLVMRealOGE, x, fconst(ft, hi), "big");
    r = LLVMBuildSelect(b, big, maxv, r, "hi");
    LLVMValueRef low = is_signed ? LLVMBuildFCmp(b, LLVMRealOLT, x, fconst(ft, -hi), "low")
                                 : LLVMBuildFCmp(b, LLVMRealOLE, x, fconst(ft, 0.0), "low");
    r = LLVMBuildSelect(b, low, minv, r, "lo");
    LLVMValueRef nan = LLVMBuildFCmp(b, LLVMRealUNO, x, x, "nan");
    LLVMBuildRet(b, LLVMBuildSelect(b, nan, LLVMConstNull(it), r, "sat"));
}

/* llvm.minimum/maximum: NaN-propagating, and -0.0 < +0.0. */
static void
build_minmax(LLVMBuilderRef b, LLVMValueRef f, int is_max)
{
    LLVMValueRef x = LLVMGetParam(f, 0), y = LLVMGetParam(f, 1);
    LLVMTypeRef ft = LLVMTypeOf(x);
    LLVMTypeRef it = LLVMIntTypeInContext(LLVMGetTypeContext(ft),
                                          LLVMGetTypeKind(ft) == LLVMFloatTypeKind ? 32 : 64);
    LLVMValueRef lt = LLVMBuildFCmp(b, is_max ? LLVMRealOGT : LLVMRealOLT, x, y, "better");
    LLVMValueRef r = LLVMBuildSelect(b, lt, x, y, "pick");
    /* equal: +0 and -0 differ in sign only; and/or of the bits picks */
    LLVMValueRef xi = LLVMBuildBitCast(b, x, it, ""), yi = LLVMBuildBitCast(b, y, it, "");
    LLVMValueRef bits = is_max ? LLVMBuildAnd(b, xi, yi, "") : LLVMBuildOr(b, xi, yi, "");
    LLVMValueRef eq = LLVMBuildFCmp(b, LLVMRealOEQ, x, y, "eq");
    r = LLVMBuildSelect(b, eq, LLVMBuildBitCast(b, bits, ft, "zeros"), r, "");
    LLVMValueRef nan = LLVMBuildFCmp(b, LLVMRealUNO, x, y, "nan");
    LLVMBuildRet(b, LLVMBuildSelect(b, nan, LLVMBuildFAdd(b, x, y, "nan.v"), r, "r"));
}

static int
rewrite_of(const char *name, Rewrite *how)
{
    static const struct {
        const char *prefix;
        Rewrite how;
    } table[] = {
        {"llvm.fptosi.sat.", SAT_SIGNED},
        {"llvm.fptoui.sat.", SAT_UNSIGNED},
        {"llvm.minimum.", FMINIMUM},
        {"llvm.maximum.", FMAXIMUM},
    };
    for (size_t k = 0; k < sizeof(table) / sizeof(table[0]); k++) {
        if (strncmp(name, table[k].prefix, strlen(table[k].prefix)) == 0) {
            *how = table[k].how;
            return 1;
        }
    }
    return 0;
}

int
ptx_legalize_llvm7(LLVMModuleRef mod)
{
    LLVMContextRef ctx = LLVMGetModuleContext(mod);
    LLVMBuilderRef b = LLVMCreateBuilderInContext(ctx);
    LLVMValueRef f = LLVMGetFirstFunction(mod);
    while (f != NULL) {
        LLVMValueRef next = LLVMGetNextFunction(f);
        Rewrite how;
        size_t len;
        const char *name = LLVMGetValueName2(f, &len);
        if (LLVMIsDeclaration(f) && rewrite_of(name, &how)) {
            char newname[96];
            snprintf(newname, sizeof(newname), "nv.%s", name + strlen("llvm."));
            LLVMValueRef g = LLVMAddFunction(mod, newname, LLVMGlobalGetValueType(f));
            LLVMSetLinkage(g, LLVMInternalLinkage);
            LLVMPositionBuilderAtEnd(b, LLVMAppendBasicBlockInContext(ctx, g, "entry"));
            if (how == SAT_SIGNED || how == SAT_UNSIGNED) {
                build_sat(b, g, how == SAT_SIGNED);
            } else {
                build_minmax(b, g, how == FMAXIMUM);
            }
            LLVMReplaceAllUsesWith(f, g);
            LLVMDeleteFunction(f);
        }
        f = next;
    }
    LLVMDisposeBuilder(b);
    return 0;
}
