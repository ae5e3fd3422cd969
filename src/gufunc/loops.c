/*
 * loops.c - the body of a gufunc inner loop, in LLVM IR.
 *
 * NumPy calls a gufunc loop with dims = (outer count, core sizes by
 * dimension index) and steps = (outer step of each argument, then the
 * core strides of each argument in layout order).  The emitted body
 *
 *     i32 name(ptr args, ptr dims, ptr steps, i64 start, i64 stop)
 *
 * runs outer iterations [start, stop) (call.c gives it the whole range, or
 * one chunk per pool thread), unpacking each argument into the kernel's
 * ABI: a scalar is loaded, an array is (data, shape..., strides...).
 *
 * Two copies of the outer loop call the two versions of the kernel that
 * emit.c made: `general` (byte strides from NumPy) and `contig` (the last
 * core dimension of every array has unit element stride, so the kernel's
 * inner loops see consecutive addresses and LLVM vectorizes them).  The
 * choice is made once per call from the core strides; a core dimension of
 * size 1 counts as contiguous (NumPy gives it stride 0).
 */
#include "gufunc/gufunc.h"

#include <stdio.h>
#include <string.h>

typedef struct BodyGen {
    LLVMContextRef ctx;
    LLVMModuleRef mod;
    LLVMBuilderRef b;
    LLVMValueRef fn;
    LLVMTypeRef i64, i32, ptr;
    const GuLayout *layout;
    const TsSignature *kernel;
    LLVMValueRef base[TS_MAXARGS], outer[TS_MAXARGS]; /* args[k], steps[k] */
    LLVMValueRef size[GU_MAXCORE];                    /* dims[1 + ix] */
    LLVMValueRef stride[TS_MAXARGS][TS_MAXDIMS];      /* core strides */
    LLVMValueRef start, stop;
} BodyGen;

static LLVMValueRef
load_at(BodyGen *g, LLVMTypeRef t, LLVMValueRef array, int k, const char *name)
{
    LLVMValueRef idx = LLVMConstInt(g->i64, (unsigned long long)k, 0);
    LLVMValueRef p = LLVMBuildInBoundsGEP2(g->b, t, array, &idx, 1, "");
    return LLVMBuildLoad2(g->b, t, p, name);
}

/* Loads args, dims and steps in the entry block. */
static void
load_params(BodyGen *g)
{
    LLVMValueRef args = LLVMGetParam(g->fn, 0), dims = LLVMGetParam(g->fn, 1);
    LLVMValueRef steps = LLVMGetParam(g->fn, 2);
    const GuLayout *L = g->layout;
    char name[48];
    int core = L->nargs;
    for (int k = 0; k < L->nargs; k++) {
        snprintf(name, sizeof(name), "a%d.ptr", k);
        g->base[k] = load_at(g, g->ptr, args, k, name);
        snprintf(name, sizeof(name), "a%d.step", k);
        g->outer[k] = load_at(g, g->i64, steps, k, name);
        for (int j = 0; j < L->ndims[k]; j++) {
            snprintf(name, sizeof(name), "a%d.stride%d", k, j);
            g->stride[k][j] = load_at(g, g->i64, steps, core++, name);
        }
    }
    for (int ix = 0; ix < L->ndimnames; ix++) {
        snprintf(name, sizeof(name), "dim%d", ix);
        g->size[ix] = load_at(g, g->i64, dims, 1 + ix, name);
    }
}

/* i1: every array's last core dimension has unit element stride (or size <= 1). */
static LLVMValueRef
contig_check(BodyGen *g)
{
    LLVMValueRef ok = LLVMConstInt(LLVMInt1TypeInContext(g->ctx), 1, 0);
    const GuLayout *L = g->layout;
    for (int k = 0; k < L->nargs; k++) {
        int c = L->ndims[k];
        if (c == 0) {
            continue; /* a scalar, or the 1-element view: nothing to check */
        }
        LLVMValueRef s = g->stride[k][c - 1];
        LLVMValueRef unit = LLVMBuildICmp(
            g->b, LLVMIntEQ, s,
            LLVMConstInt(g->i64, (unsigned long long)ts_itemsize(g->kernel->args[k].kind), 0), "");
        LLVMValueRef one = LLVMBuildICmp(g->b, LLVMIntSLE, g->size[L->dim[k][c - 1]],
                                         LLVMConstInt(g->i64, 1, 0), "");
        ok = LLVMBuildAnd(g->b, ok, LLVMBuildOr(g->b, unit, one, ""), "contig");
    }
    return ok;
}

/* The kernel's arguments for outer index i; returns how many. */
static unsigned
kernel_args(BodyGen *g, LLVMValueRef i, LLVMValueRef *out)
{
    const GuLayout *L = g->layout;
    unsigned n = 0;
    char name[48];
    for (int k = 0; k < L->nargs; k++) {
        const TsType *t = &g->kernel->args[k];
        LLVMValueRef off = LLVMBuildNSWMul(g->b, i, g->outer[k], "");
        snprintf(name, sizeof(name), "a%d", k);
        LLVMValueRef p =
            LLVMBuildInBoundsGEP2(g->b, LLVMInt8TypeInContext(g->ctx), g->base[k], &off, 1, name);
        if (t->ndim == 0) {
            out[n++] = cc_load(g->b, t->kind, p, name);
            continue;
        }
        out[n++] = p;
        if (L->ndims[k] == 0) { /* the 1-element view */
            out[n++] = LLVMConstInt(g->i64, 1, 0);
            out[n++] = LLVMConstInt(g->i64, 0, 0);
            continue;
        }
        for (int j = 0; j < L->ndims[k]; j++) {
            out[n++] = g->size[L->dim[k][j]];
        }
        for (int j = 0; j < L->ndims[k]; j++) {
            out[n++] = g->stride[k][j];
        }
    }
    return n;
}

/* for i in [start, stop): status = kernel(...); stop early on a nonzero status. */
static void
outer_loop(BodyGen *g, LLVMValueRef kernel, LLVMBasicBlockRef pre, LLVMBasicBlockRef done,
           const char *tag)
{
    char name[48];
    LLVMValueRef args[TS_MAXARGS * (1 + 2 * TS_MAXDIMS)];
    snprintf(name, sizeof(name), "outer.%s", tag);
    LLVMBasicBlockRef body = LLVMAppendBasicBlockInContext(g->ctx, g->fn, name);
    snprintf(name, sizeof(name), "outer.%s.next", tag);
    LLVMBasicBlockRef next = LLVMAppendBasicBlockInContext(g->ctx, g->fn, name);
    LLVMBasicBlockRef failed = LLVMAppendBasicBlockInContext(g->ctx, g->fn, "status.error");
    LLVMPositionBuilderAtEnd(g->b, pre);
    LLVMValueRef empty = LLVMBuildICmp(g->b, LLVMIntSGE, g->start, g->stop, "empty");
    LLVMBuildCondBr(g->b, empty, done, body);

    LLVMPositionBuilderAtEnd(g->b, body);
    LLVMValueRef i = LLVMBuildPhi(g->b, g->i64, "i");
    unsigned n = kernel_args(g, i, args);
    LLVMValueRef status =
        LLVMBuildCall2(g->b, LLVMGlobalGetValueType(kernel), kernel, args, n, "status");
    LLVMValueRef bad = LLVMBuildICmp(g->b, LLVMIntNE, status, LLVMConstInt(g->i32, 0, 0), "");
    LLVMBuildCondBr(g->b, bad, failed, next);

    LLVMPositionBuilderAtEnd(g->b, failed);
    LLVMBuildRet(g->b, status);

    LLVMPositionBuilderAtEnd(g->b, next);
    LLVMValueRef inext = LLVMBuildNSWAdd(g->b, i, LLVMConstInt(g->i64, 1, 0), "i.next");
    LLVMValueRef more = LLVMBuildICmp(g->b, LLVMIntSLT, inext, g->stop, "more");
    LLVMBuildCondBr(g->b, more, body, done);
    LLVMValueRef vals[2] = {g->start, inext};
    LLVMBasicBlockRef from[2] = {pre, next};
    LLVMAddIncoming(i, vals, from, 2);
}

LLVMValueRef
gu_emit_body(LLVMModuleRef mod, LLVMValueRef general, LLVMValueRef contig, const GuLayout *layout,
             const TsSignature *kernel, const char *name, int contig_only)
{
    BodyGen g = {0};
    g.mod = mod;
    g.ctx = LLVMGetModuleContext(mod);
    g.i64 = LLVMInt64TypeInContext(g.ctx);
    g.i32 = LLVMInt32TypeInContext(g.ctx);
    g.ptr = LLVMPointerTypeInContext(g.ctx, 0);
    g.layout = layout;
    g.kernel = kernel;
    if (sizeof(npy_intp) != 8) {
        PyErr_SetString(PyExc_RuntimeError, "guvectorize needs a 64-bit npy_intp");
        return NULL;
    }
    LLVMTypeRef params[5] = {g.ptr, g.ptr, g.ptr, g.i64, g.i64};
    g.fn = LLVMAddFunction(mod, name, LLVMFunctionType(g.i32, params, 5, 0));
    static const char *const pnames[5] = {"args", "dims", "steps", "start", "stop"};
    for (unsigned k = 0; k < 5; k++) {
        LLVMSetValueName2(LLVMGetParam(g.fn, k), pnames[k], strlen(pnames[k]));
    }
    g.start = LLVMGetParam(g.fn, 3);
    g.stop = LLVMGetParam(g.fn, 4);
    g.b = LLVMCreateBuilderInContext(g.ctx);
    LLVMBasicBlockRef entry = LLVMAppendBasicBlockInContext(g.ctx, g.fn, "entry");
    LLVMBasicBlockRef pre_g = LLVMAppendBasicBlockInContext(g.ctx, g.fn, "strided");
    LLVMBasicBlockRef done = LLVMAppendBasicBlockInContext(g.ctx, g.fn, "done");
    LLVMPositionBuilderAtEnd(g.b, entry);
    load_params(&g);
    if (contig != NULL) {
        LLVMBasicBlockRef pre_c = LLVMAppendBasicBlockInContext(g.ctx, g.fn, "contig");
        LLVMBuildCondBr(g.b, contig_check(&g), pre_c, pre_g);
        outer_loop(&g, contig, pre_c, done, "contig");
    } else {
        LLVMBuildBr(g.b, pre_g);
    }
    if (contig_only && contig != NULL) {
        /* before any work: the caller runs the whole body instead */
        LLVMPositionBuilderAtEnd(g.b, pre_g);
        LLVMBuildRet(g.b, LLVMConstInt(g.i32, GU_STATUS_GENERAL, 0));
        LLVMDeleteFunction(general); /* called by nothing here */
    } else {
        outer_loop(&g, general, pre_g, done, "strided");
    }
    LLVMPositionBuilderAtEnd(g.b, done);
    LLVMBuildRet(g.b, LLVMConstInt(g.i32, 0, 0));
    LLVMDisposeBuilder(g.b);
    return g.fn;
}
