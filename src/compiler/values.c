/*
 * values.c - the LLVM types of numbavec's scalar kinds, and how a value of
 * each kind is loaded from and stored to NumPy memory.
 *
 * Shared by emit.c (kernel bodies) and the loop wrappers (vectorize/loops.c).
 * In registers a bool is i1; in memory it is NumPy's one-byte bool (i8), and
 * any nonzero byte reads as true.  A complex value is the literal struct
 * { T, T }; in memory it is loaded and stored part by part, so that the loop
 * vectorizer sees two interleaved scalar streams rather than an aggregate.
 * Alignment is the element's natural alignment (a complex: its part's),
 * which NumPy guarantees to ufunc loops (it buffers unaligned operands).
 */
#include "compiler/compiler.h"

#include <string.h>

#include <llvm-c/DebugInfo.h>

void
cc_add_attr(LLVMValueRef f, unsigned index, const char *name)
{
    unsigned kind = LLVMGetEnumAttributeKindForName(name, strlen(name));
    if (kind != 0) {
        LLVMContextRef ctx = LLVMGetTypeContext(LLVMTypeOf(f));
        LLVMAddAttributeAtIndex(f, index, LLVMCreateEnumAttribute(ctx, kind, 0));
    }
}

void
cc_add_fn_attr(LLVMValueRef f, const char *name)
{
    cc_add_attr(f, LLVMAttributeFunctionIndex, name);
}

LLVMMetadataRef
cc_loop_prop(LLVMContextRef ctx, const char *key, LLVMMetadataRef value)
{
    LLVMMetadataRef prop[2] = {LLVMMDStringInContext2(ctx, key, strlen(key)), value};
    return LLVMMDNodeInContext2(ctx, prop, value != NULL ? 2 : 1);
}

void
cc_set_loop_id(LLVMValueRef br, LLVMMetadataRef *props, int n)
{
    LLVMContextRef ctx = LLVMGetTypeContext(LLVMTypeOf(br));
    LLVMMetadataRef ops[8];
    int count = 0;
    /* distinct because it names itself, which LLVM-C can only build by
     * replacing a temporary node */
    ops[count++] = LLVMTemporaryMDNode(ctx, NULL, 0);
    for (int i = 0; i < n && count < 8; i++) {
        ops[count++] = props[i];
    }
    LLVMMetadataRef id = LLVMMDNodeInContext2(ctx, ops, (size_t)count);
    LLVMMetadataReplaceAllUsesWith(ops[0], id); /* also frees the temporary */
    LLVMSetMetadata(br, LLVMGetMDKindIDInContext(ctx, "llvm.loop", 9),
                    LLVMMetadataAsValue(ctx, id));
}

void
cc_mark_fast_codegen(LLVMValueRef f)
{
    LLVMContextRef ctx = LLVMGetTypeContext(LLVMTypeOf(f));
    LLVMAddAttributeAtIndex(
        f, LLVMAttributeFunctionIndex,
        LLVMCreateStringAttribute(ctx, CC_FAST_CODEGEN, (unsigned)strlen(CC_FAST_CODEGEN), "", 0));
}

LLVMValueRef
cc_declare_pure(LLVMModuleRef mod, const char *name, LLVMTypeRef fty)
{
    LLVMValueRef f = LLVMGetNamedFunction(mod, name);
    if (f == NULL) {
        f = LLVMAddFunction(mod, name, fty);
        cc_add_fn_attr(f, "nounwind");
        cc_add_fn_attr(f, "willreturn");
        cc_add_fn_attr(f, "memory"); /* 0: memory(none) */
    }
    return f;
}

static LLVMTypeRef
part_type(LLVMContextRef ctx, TsKind k)
{
    return k == TS_COMPLEX64 ? LLVMFloatTypeInContext(ctx) : LLVMDoubleTypeInContext(ctx);
}

static LLVMTypeRef
complex_type(LLVMContextRef ctx, TsKind k)
{
    LLVMTypeRef parts[2] = {part_type(ctx, k), part_type(ctx, k)};
    return LLVMStructTypeInContext(ctx, parts, 2, 0);
}

LLVMTypeRef
cc_value_type(LLVMContextRef ctx, TsKind k)
{
    switch (k) {
    case TS_BOOL:
        return LLVMInt1TypeInContext(ctx);
    case TS_INT8:
    case TS_UINT8:
        return LLVMInt8TypeInContext(ctx);
    case TS_INT16:
    case TS_UINT16:
        return LLVMInt16TypeInContext(ctx);
    case TS_INT32:
    case TS_UINT32:
        return LLVMInt32TypeInContext(ctx);
    case TS_INT64:
    case TS_UINT64:
        return LLVMInt64TypeInContext(ctx);
    case TS_FLOAT32:
        return LLVMFloatTypeInContext(ctx);
    case TS_FLOAT64:
        return LLVMDoubleTypeInContext(ctx);
    case TS_COMPLEX64:
    case TS_COMPLEX128:
        return complex_type(ctx, k);
    case TS_VOID:
        return LLVMVoidTypeInContext(ctx);
    default:
        return NULL;
    }
}

LLVMTypeRef
cc_memory_type(LLVMContextRef ctx, TsKind k)
{
    if (k == TS_BOOL) {
        return LLVMInt8TypeInContext(ctx);
    }
    return cc_value_type(ctx, k);
}

static LLVMValueRef
load_scalar(LLVMBuilderRef b, LLVMTypeRef ty, TsKind k, LLVMValueRef ptr, const char *name)
{
    LLVMValueRef v = LLVMBuildLoad2(b, ty, ptr, name);
    LLVMSetAlignment(v, (unsigned)(ts_bits(k) / 8) /* natural: a scalar, a complex part */);
    return v;
}

static void
store_scalar(LLVMBuilderRef b, TsKind k, LLVMValueRef value, LLVMValueRef ptr)
{
    LLVMValueRef st = LLVMBuildStore(b, value, ptr);
    LLVMSetAlignment(st, (unsigned)(ts_bits(k) / 8));
}

static LLVMValueRef
load_complex(LLVMBuilderRef b, TsKind k, LLVMValueRef ptr, const char *name)
{
    LLVMContextRef ctx = LLVMGetTypeContext(LLVMTypeOf(ptr));
    LLVMTypeRef cty = complex_type(ctx, k);
    LLVMTypeRef pty = part_type(ctx, k);
    LLVMValueRef re = load_scalar(b, pty, k, LLVMBuildStructGEP2(b, cty, ptr, 0, ""), "re");
    LLVMValueRef im = load_scalar(b, pty, k, LLVMBuildStructGEP2(b, cty, ptr, 1, ""), "im");
    LLVMValueRef v = LLVMGetUndef(cty);
    v = LLVMBuildInsertValue(b, v, re, 0, "");
    return LLVMBuildInsertValue(b, v, im, 1, name);
}

LLVMValueRef
cc_load(LLVMBuilderRef b, TsKind k, LLVMValueRef ptr, const char *name)
{
    LLVMContextRef ctx = LLVMGetTypeContext(LLVMTypeOf(ptr));
    if (ts_is_complex(k)) {
        return load_complex(b, k, ptr, name);
    }
    if (k == TS_BOOL) {
        LLVMValueRef byte = load_scalar(b, LLVMInt8TypeInContext(ctx), k, ptr, "");
        return LLVMBuildICmp(b, LLVMIntNE, byte, LLVMConstInt(LLVMInt8TypeInContext(ctx), 0, 0),
                             name);
    }
    return load_scalar(b, cc_value_type(ctx, k), k, ptr, name);
}

void
cc_store(LLVMBuilderRef b, TsKind k, LLVMValueRef value, LLVMValueRef ptr)
{
    LLVMContextRef ctx = LLVMGetTypeContext(LLVMTypeOf(ptr));
    if (ts_is_complex(k)) {
        LLVMTypeRef cty = complex_type(ctx, k);
        store_scalar(b, k, LLVMBuildExtractValue(b, value, 0, ""),
                     LLVMBuildStructGEP2(b, cty, ptr, 0, ""));
        store_scalar(b, k, LLVMBuildExtractValue(b, value, 1, ""),
                     LLVMBuildStructGEP2(b, cty, ptr, 1, ""));
        return;
    }
    if (k == TS_BOOL) {
        value = LLVMBuildZExt(b, value, LLVMInt8TypeInContext(ctx), "");
    }
    store_scalar(b, k, value, ptr);
}
