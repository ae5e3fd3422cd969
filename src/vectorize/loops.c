/*
 * loops.c - the NumPy inner loop wrapped around a compiled kernel.
 *
 * Sits between emit.c (which puts an always-inline `kernel` into the
 * module) and jit.c.  The emitted function has NumPy's loop signature
 *
 *     void name(char **args, npy_intp *dims, npy_intp *steps, void *data)
 *
 * and dispatches at run time, once per call, between:
 *
 *   contig      every operand contiguous: a call of `name.contig`, the one
 *               vectorized loop (GEP-indexed loads and stores), kept out of
 *               line so that it is optimised and compiled once;
 *   bcast       inputs of step 0 (scalars, broadcast operands) and the rest
 *               contiguous: each step-0 value is replicated once into a
 *               stack buffer of BCAST_BYTES, and `name.contig` runs block by
 *               block over it.  One vectorized body serves every mix of
 *               scalar and array inputs, instead of one loop per mix, which
 *               keeps compile time low (the vectorizer's cost is per loop);
 *   strided     anything else: pointer arithmetic, a load per element.
 *
 * The fast paths require every step, the output's included, to fit, and
 * no input overlapping the output unless it is the very same array: NumPy
 * promises that for ordinary calls, but ufunc.accumulate passes the output
 * shifted by one element as an input (a loop-carried dependence), so the
 * overlap is checked at run time and such calls take the strided path.
 * Because that check was made, the fast loops carry
 * llvm.loop.parallel_accesses and LLVM vectorizes them without adding alias
 * checks of its own.  The loop never calls into Python or NumPy.
 */
#include "vectorize/vectorize.h"

#include <stdio.h>
#include <string.h>

#include <llvm-c/IRReader.h>

/* Short names by TsKind, for readable IR value names. */
static const char *const short_name[TS_NSCALAR] = {
    "b1", "i8", "i16", "i32", "i64", "u8", "u16", "u32", "u64", "f32", "f64", "c64", "c128",
};

/* Bytes of stack for the replicated step-0 inputs of one call (all inputs
 * together); a block is at least 16 elements. */
#define BCAST_BYTES 16384

typedef struct LoopGen {
    LLVMContextRef ctx;
    LLVMModuleRef mod;
    LLVMBuilderRef b;
    LLVMValueRef fn;
    LLVMValueRef kernel;
    LLVMTypeRef kernel_ty;
    LLVMTypeRef intp; /* npy_intp */
    LLVMTypeRef ptr;
    int nin; /* operands 0..nin-1 in, nin out */
    TsKind kind[TS_MAXARGS + 1];
    LLVMValueRef base[TS_MAXARGS + 1]; /* args[k] */
    LLVMValueRef step[TS_MAXARGS + 1]; /* steps[k] */
    LLVMValueRef n;                    /* dims[0] */
    LLVMBasicBlockRef exit;
    LLVMValueRef access_group; /* distinct !{} as a value */
    LLVMValueRef contig;       /* name.contig */
    LLVMTypeRef contig_ty;
    LLVMValueRef strided;          /* name.strided */
    LLVMValueRef bufs[TS_MAXARGS]; /* bcast: a block of each input */
    npy_intp block;                /* bcast: elements per block */
    unsigned md_access_group;
    /* a kernel that may raise: its last parameter is where it stores the
     * address of the site it raised at; flag is the current function's slot
     * for it (an intp, 0 while nothing raised: LLVM vectorizes the loop
     * that keeps "any of" an integer, not of a pointer) */
    int raises;
    LLVMValueRef flag;
    LLVMBasicBlockRef done; /* the loop function's return, after any raise */
} LoopGen;

/* ---- small helpers ---- */

static LLVMValueRef
intp_const(LoopGen *g, long long v)
{
    return LLVMConstInt(g->intp, (unsigned long long)v, 1);
}

static LLVMBasicBlockRef
new_block(LoopGen *g, const char *name)
{
    return LLVMAppendBasicBlockInContext(g->ctx, g->fn, name);
}

/* "x1.f32", "out.c64": operand names that read like the kernel's. */
static const char *
operand_name(LoopGen *g, int k, const char *suffix, char *buf, size_t size)
{
    if (k == g->nin) {
        snprintf(buf, size, "out%s", suffix);
    } else {
        snprintf(buf, size, "x%d.%s%s", k, short_name[g->kind[k]], suffix);
    }
    return buf;
}

/* Loads args[k] and steps[k] from NumPy's arrays into the entry block. */
static void
load_operands(LoopGen *g, LLVMValueRef args, LLVMValueRef steps)
{
    char name[32];
    for (int k = 0; k <= g->nin; k++) {
        LLVMValueRef idx = intp_const(g, k);
        LLVMValueRef slot = LLVMBuildGEP2(g->b, g->ptr, args, &idx, 1, "");
        g->base[k] =
            LLVMBuildLoad2(g->b, g->ptr, slot, operand_name(g, k, ".ptr", name, sizeof(name)));
        slot = LLVMBuildGEP2(g->b, g->intp, steps, &idx, 1, "");
        g->step[k] =
            LLVMBuildLoad2(g->b, g->intp, slot, operand_name(g, k, ".step", name, sizeof(name)));
    }
}

/* ---- run-time dispatch ---- */

/* i1: every operand contiguous, or (inputs only) of step 0.  *mask gets the
 * bit mask of step-0 inputs. */
static LLVMValueRef
emit_layout_check(LoopGen *g, LLVMValueRef *mask)
{
    LLVMValueRef ok = LLVMBuildICmp(g->b, LLVMIntEQ, g->step[g->nin],
                                    intp_const(g, ts_itemsize(g->kind[g->nin])), "out.contig");
    *mask = LLVMConstInt(LLVMInt32TypeInContext(g->ctx), 0, 0);
    for (int k = 0; k < g->nin; k++) {
        LLVMValueRef contig =
            LLVMBuildICmp(g->b, LLVMIntEQ, g->step[k], intp_const(g, ts_itemsize(g->kind[k])), "");
        LLVMValueRef zero = LLVMBuildICmp(g->b, LLVMIntEQ, g->step[k], intp_const(g, 0), "");
        ok = LLVMBuildAnd(g->b, ok, LLVMBuildOr(g->b, contig, zero, ""), "layout.ok");
        LLVMValueRef bit = LLVMBuildZExt(g->b, zero, LLVMInt32TypeInContext(g->ctx), "");
        bit = LLVMBuildShl(g->b, bit, LLVMConstInt(LLVMInt32TypeInContext(g->ctx), k, 0), "");
        *mask = LLVMBuildOr(g->b, *mask, bit, "mask");
    }
    return ok;
}

/* [start, end) of operand k as integers, its steps being 0 or its size. */
static void
operand_range(LoopGen *g, int k, LLVMValueRef *start, LLVMValueRef *end)
{
    LLVMValueRef last = LLVMBuildSub(g->b, g->n, intp_const(g, 1), "");
    LLVMValueRef extent = LLVMBuildAdd(g->b, LLVMBuildMul(g->b, last, g->step[k], ""),
                                       intp_const(g, ts_itemsize(g->kind[k])), "");
    *start = LLVMBuildPtrToInt(g->b, g->base[k], g->intp, "");
    *end = LLVMBuildAdd(g->b, *start, extent, "");
}

/*
 * i1: no input overlaps the output, except one that is the output itself
 * (same address and step), which each iteration reads before writing.
 */
static LLVMValueRef
emit_overlap_check(LoopGen *g)
{
    LLVMValueRef out_start, out_end;
    LLVMValueRef ok = LLVMConstInt(LLVMInt1TypeInContext(g->ctx), 1, 0);
    operand_range(g, g->nin, &out_start, &out_end);
    for (int k = 0; k < g->nin; k++) {
        LLVMValueRef start, end;
        operand_range(g, k, &start, &end);
        LLVMValueRef same =
            LLVMBuildAnd(g->b, LLVMBuildICmp(g->b, LLVMIntEQ, start, out_start, ""),
                         LLVMBuildICmp(g->b, LLVMIntEQ, g->step[k], g->step[g->nin], ""), "");
        LLVMValueRef before = LLVMBuildICmp(g->b, LLVMIntULE, end, out_start, "");
        LLVMValueRef after = LLVMBuildICmp(g->b, LLVMIntULE, out_end, start, "");
        LLVMValueRef safe = LLVMBuildOr(g->b, same, LLVMBuildOr(g->b, before, after, ""), "");
        ok = LLVMBuildAnd(g->b, ok, safe, "alias.ok");
    }
    return ok;
}

/* ---- loop bodies ---- */

/* Marks the loop of latch branch br as one whose accesses (in the access
 * group) may run in any order: LLVM vectorizes it without alias checks. */
static void
set_parallel_loop(LoopGen *g, LLVMValueRef br)
{
    LLVMMetadataRef prop =
        cc_loop_prop(g->ctx, "llvm.loop.parallel_accesses", LLVMValueAsMetadata(g->access_group));
    cc_set_loop_id(br, &prop, 1);
}

/*
 * Marks the strided loop: left scalar and not unrolled.  Vectorizing it
 * needs gathers, scatters and alias checks that rarely pay off for strided
 * NumPy operands, and doubles the optimiser's and code generator's work.
 */
static void
set_scalar_loop(LoopGen *g, LLVMValueRef br)
{
    LLVMMetadataRef one = LLVMValueAsMetadata(LLVMConstInt(LLVMInt32TypeInContext(g->ctx), 1, 0));
    LLVMMetadataRef props[3] = {
        cc_loop_prop(g->ctx, "llvm.loop.vectorize.width", one),
        cc_loop_prop(g->ctx, "llvm.loop.interleave.count", one),
        cc_loop_prop(g->ctx, "llvm.loop.unroll.disable", NULL),
    };
    cc_set_loop_id(br, props, 3);
}

/* Puts every memory access (and the kernel call, whose accesses inherit it
 * when inlined) of block into the parallel access group. */
static void
mark_parallel_accesses(LoopGen *g, LLVMBasicBlockRef block)
{
    for (LLVMValueRef in = LLVMGetFirstInstruction(block); in != NULL;
         in = LLVMGetNextInstruction(in)) {
        LLVMOpcode op = LLVMGetInstructionOpcode(in);
        if (op == LLVMLoad || op == LLVMStore || op == LLVMCall) {
            LLVMSetMetadata(in, g->md_access_group, g->access_group);
        }
    }
}

/* Calls the kernel on vals and stores its result through out_ptr. */
static void
emit_call_store(LoopGen *g, LLVMValueRef *vals, LLVMValueRef out_ptr)
{
    char name[32];
    TsKind ret = g->kind[g->nin];
    snprintf(name, sizeof(name), "r.%s", short_name[ret]);
    vals[g->nin] = g->flag; /* vals has room for it; used when g->raises */
    LLVMValueRef r =
        LLVMBuildCall2(g->b, g->kernel_ty, g->kernel, vals, (unsigned)(g->nin + g->raises), name);
    if (out_ptr != NULL) {
        cc_store(g->b, ret, r, out_ptr);
    }
}

/* A new slot for the site a kernel raised at, null (at the insertion point,
 * which is the function's entry block). */
static LLVMValueRef
new_flag(LoopGen *g)
{
    LLVMValueRef flag = LLVMBuildAlloca(g->b, g->intp, "raised");
    LLVMBuildStore(g->b, intp_const(g, 0), flag);
    return flag;
}

/*
 * Closes a loop whose body is `body`: i.next = i + 1, back to body until n.
 * Returns the latch branch.
 */
static LLVMValueRef
emit_latch(LoopGen *g, LLVMValueRef i, LLVMBasicBlockRef pre, LLVMBasicBlockRef body)
{
    LLVMValueRef next = LLVMBuildNSWAdd(g->b, i, intp_const(g, 1), "i.next");
    LLVMValueRef done = LLVMBuildICmp(g->b, LLVMIntEQ, next, g->n, "done");
    LLVMValueRef br = LLVMBuildCondBr(g->b, done, g->exit, body);
    LLVMValueRef in_vals[2] = {intp_const(g, 0), next};
    LLVMBasicBlockRef in_blocks[2] = {pre, LLVMGetInsertBlock(g->b)};
    LLVMAddIncoming(i, in_vals, in_blocks, 2);
    return br;
}

/*
 * `name.contig(n, x0, ..., out)`: the vectorizable loop over n > 0
 * contiguous elements whose inputs are the output or disjoint from it (the
 * caller checked), hence llvm.loop.parallel_accesses.
 */
static LLVMValueRef
emit_contig_function(LoopGen *g, const char *loop_name)
{
    char name[128];
    LLVMTypeRef params[TS_MAXARGS + 2];
    params[0] = g->intp;
    for (int k = 0; k <= g->nin; k++) {
        params[k + 1] = g->ptr;
    }
    snprintf(name, sizeof(name), "%s.contig", loop_name);
    /* a kernel that may raise: the contig loop returns the site, or null */
    LLVMTypeRef ty = LLVMFunctionType(g->raises ? g->intp : LLVMVoidTypeInContext(g->ctx), params,
                                      (unsigned)g->nin + 2, 0);
    LLVMValueRef fn = LLVMAddFunction(g->mod, name, ty);
    LLVMSetLinkage(fn, LLVMInternalLinkage);
    cc_add_fn_attr(fn, "noinline");
    cc_add_fn_attr(fn, "nounwind");
    /* the body is emitted with g pointing at this function's operands */
    LoopGen saved = *g;
    g->fn = fn;
    g->n = LLVMGetParam(fn, 0);
    LLVMSetValueName2(g->n, "n", 1);
    for (int k = 0; k <= g->nin; k++) {
        g->base[k] = LLVMGetParam(fn, (unsigned)k + 1);
        operand_name(g, k, ".ptr", name, sizeof(name));
        LLVMSetValueName2(g->base[k], name, strlen(name));
    }
    LLVMBasicBlockRef pre = new_block(g, "entry");
    LLVMBasicBlockRef body = new_block(g, "contig.loop");
    g->exit = new_block(g, "exit");
    LLVMPositionBuilderAtEnd(g->b, pre);
    if (g->raises) {
        g->flag = new_flag(g);
    }
    LLVMBuildBr(g->b, body);
    LLVMPositionBuilderAtEnd(g->b, body);
    LLVMValueRef vals[TS_MAXARGS + 1];
    LLVMValueRef i = LLVMBuildPhi(g->b, g->intp, "i");
    for (int k = 0; k < g->nin; k++) {
        LLVMTypeRef et = cc_memory_type(g->ctx, g->kind[k]);
        LLVMValueRef p = LLVMBuildInBoundsGEP2(g->b, et, g->base[k], &i, 1, "");
        vals[k] = cc_load(g->b, g->kind[k], p, operand_name(g, k, "", name, sizeof(name)));
    }
    LLVMTypeRef out_ty = cc_memory_type(g->ctx, g->kind[g->nin]);
    emit_call_store(g, vals, LLVMBuildInBoundsGEP2(g->b, out_ty, g->base[g->nin], &i, 1, "out"));
    LLVMValueRef br = emit_latch(g, i, pre, body);
    mark_parallel_accesses(g, body);
    set_parallel_loop(g, br);
    LLVMPositionBuilderAtEnd(g->b, g->exit);
    if (g->raises) {
        LLVMBuildRet(g->b, LLVMBuildLoad2(g->b, g->intp, g->flag, "site"));
    } else {
        LLVMBuildRetVoid(g->b);
    }
    LLVMTypeRef saved_ty = ty;
    *g = saved;
    g->contig = fn;
    g->contig_ty = saved_ty;
    return fn;
}

static LLVMValueRef
declare_loop(LoopGen *g, const char *name)
{
    LLVMTypeRef params[4] = {g->ptr, g->ptr, g->ptr, g->ptr};
    LLVMTypeRef ty = LLVMFunctionType(LLVMVoidTypeInContext(g->ctx), params, 4, 0);
    LLVMValueRef fn = LLVMAddFunction(g->mod, name, ty);
    static const char *const pnames[4] = {"args", "dims", "steps", "data"};
    for (unsigned p = 0; p < 4; p++) {
        LLVMSetValueName2(LLVMGetParam(fn, p), pnames[p], strlen(pnames[p]));
    }
    cc_add_fn_attr(fn, "nounwind");
    return fn;
}

/* Address of element i of operand k: base + i * step. */
static LLVMValueRef
strided_address(LoopGen *g, int k, LLVMValueRef i)
{
    LLVMValueRef offset = LLVMBuildNSWMul(g->b, i, g->step[k], "");
    return LLVMBuildGEP2(g->b, LLVMInt8TypeInContext(g->ctx), g->base[k], &offset, 1, "");
}

/* numbavec_raise(site), then the loop function returns. */
static void
emit_raise_and_return(LoopGen *g, LLVMValueRef site)
{
    em_call_raise(g->mod, g->b, LLVMBuildIntToPtr(g->b, site, g->ptr, "site.ptr"));
    LLVMBuildBr(g->b, g->done);
}

/*
 * The general loop: any steps (0 or negative included), any overlap, in
 * sequential order (reduce passes in0 == out with both steps 0).  store 0:
 * the same walk without writing, to find the first element that raises
 * (after a fast path saw a raise).  A kernel that may raise is checked
 * after each element: the first site is raised there.
 */
static void
emit_sequential(LoopGen *g, LLVMBasicBlockRef pre, int store, const char *what)
{
    char name[32];
    LLVMValueRef vals[TS_MAXARGS + 1];
    LLVMBasicBlockRef body = new_block(g, what);
    LLVMPositionBuilderAtEnd(g->b, pre);
    LLVMBuildBr(g->b, body);
    LLVMPositionBuilderAtEnd(g->b, body);
    LLVMValueRef i = LLVMBuildPhi(g->b, g->intp, "i");
    for (int k = 0; k < g->nin; k++) {
        vals[k] = cc_load(g->b, g->kind[k], strided_address(g, k, i),
                          operand_name(g, k, "", name, sizeof(name)));
    }
    emit_call_store(g, vals, store ? strided_address(g, g->nin, i) : NULL);
    if (g->raises) {
        LLVMBasicBlockRef hit = new_block(g, "raised"), next = new_block(g, "next");
        LLVMValueRef site = LLVMBuildLoad2(g->b, g->intp, g->flag, "site");
        LLVMBuildCondBr(g->b, LLVMBuildIsNotNull(g->b, site, ""), hit, next);
        LLVMPositionBuilderAtEnd(g->b, hit);
        emit_raise_and_return(g, site);
        LLVMPositionBuilderAtEnd(g->b, next);
    }
    LLVMValueRef br = emit_latch(g, i, pre, body);
    set_scalar_loop(g, br);
}

/*
 * `name.strided(args, dims, steps, data)`: the general loop as a function of
 * its own (raising from it, for a kernel that may raise).  Out of the loop
 * function, which holds only checks, calls and block copies, so that the
 * loop function's machine code can be made cheaply (cc_mark_fast_codegen)
 * while this loop gets the full code generator.
 */
static LLVMValueRef
emit_strided_function(LoopGen *g, const char *loop_name)
{
    char name[128];
    snprintf(name, sizeof(name), "%s.strided", loop_name);
    LoopGen saved = *g;
    g->fn = declare_loop(g, name);
    LLVMSetLinkage(g->fn, LLVMInternalLinkage);
    cc_add_fn_attr(g->fn, "noinline");
    LLVMBasicBlockRef entry = new_block(g, "entry"), pre = new_block(g, "strided");
    g->exit = g->done = new_block(g, "exit");
    LLVMPositionBuilderAtEnd(g->b, entry);
    if (g->raises) {
        g->flag = new_flag(g);
    }
    g->n = LLVMBuildLoad2(g->b, g->intp, LLVMGetParam(g->fn, 1), "n");
    load_operands(g, LLVMGetParam(g->fn, 0), LLVMGetParam(g->fn, 2));
    LLVMBuildCondBr(g->b, LLVMBuildICmp(g->b, LLVMIntSGT, g->n, intp_const(g, 0), "nonempty"), pre,
                    g->exit);
    emit_sequential(g, pre, 1, "strided.loop");
    LLVMMoveBasicBlockAfter(g->exit, LLVMGetLastBasicBlock(g->fn));
    LLVMPositionBuilderAtEnd(g->b, g->exit);
    LLVMBuildRetVoid(g->b);
    LLVMValueRef fn = g->fn;
    *g = saved;
    return fn;
}

/* The general path: a call of name.strided, which raises itself. */
static void
emit_strided_path(LoopGen *g, LLVMBasicBlockRef pre)
{
    LLVMValueRef args[4];
    for (unsigned p = 0; p < 4; p++) {
        args[p] = LLVMGetParam(g->fn, p);
    }
    LLVMPositionBuilderAtEnd(g->b, pre);
    LLVMBuildCall2(g->b, LLVMGlobalGetValueType(g->strided), g->strided, args, 4, "");
    LLVMBuildBr(g->b, g->done);
}

/*
 * After the fast paths, when a kernel raised (the flag holds a site): the
 * elements are walked again in order, without writing, up to the first
 * that raises, whose site is raised.  The kernel has no other effect, so
 * walking again changes nothing; if no element raises now (the call wrote
 * over its own inputs), the site the fast path saw is raised.
 */
static void
emit_exit_check(LoopGen *g)
{
    LLVMBasicBlockRef again = new_block(g, "raised.again");
    LLVMBasicBlockRef not_found = new_block(g, "raised.seen");
    LLVMValueRef seen = LLVMBuildLoad2(g->b, g->intp, g->flag, "seen");
    LLVMBuildCondBr(g->b, LLVMBuildIsNotNull(g->b, seen, ""), again, g->done);
    LLVMPositionBuilderAtEnd(g->b, again);
    LLVMBuildStore(g->b, intp_const(g, 0), g->flag);
    LLVMBasicBlockRef exit = g->exit;
    g->exit = not_found; /* where the walk ends when no element raised */
    emit_sequential(g, again, 0, "raised.walk");
    g->exit = exit;
    LLVMPositionBuilderAtEnd(g->b, not_found);
    emit_raise_and_return(g, seen);
}

/* ---- the function ---- */

/*
 * A distinct, operand-less node (an access group) cannot be made through
 * LLVM-C's node constructors, which unique; the IR parser makes one in the
 * module's context, where it outlives the scratch module it came from.
 */
static int
make_access_group(LoopGen *g)
{
    static const char text[] = "!nv.group = !{!0}\n!0 = distinct !{}\n";
    LLVMModuleRef scratch = NULL;
    char *msg = NULL;
    LLVMMemoryBufferRef buf =
        LLVMCreateMemoryBufferWithMemoryRangeCopy(text, sizeof(text) - 1, "access-group");
    if (LLVMParseIRInContext(g->ctx, buf, &scratch, &msg)) {
        PyErr_Format(PyExc_RuntimeError, "cannot make an access group: %s", msg);
        LLVMDisposeMessage(msg);
        return -1;
    }
    LLVMGetNamedMetadataOperands(scratch, "nv.group", &g->access_group);
    LLVMDisposeModule(scratch);
    return 0;
}

static int
check_kernel(LoopGen *g, const TsSignature *sig)
{
    if (sig->nargs < 0 || sig->nargs > TS_MAXARGS) {
        PyErr_Format(PyExc_ValueError, "a ufunc loop takes 0 to %d inputs", TS_MAXARGS);
        return -1;
    }
    g->nin = sig->nargs;
    for (int k = 0; k <= g->nin; k++) {
        const TsType *t = k < g->nin ? &sig->args[k] : &sig->ret;
        if (t->kind < 0 || t->kind >= TS_NSCALAR || t->ndim != 0) {
            PyErr_SetString(PyExc_TypeError, "ufunc loops take and return scalars only");
            return -1;
        }
        g->kind[k] = t->kind;
    }
    g->kernel_ty = LLVMGlobalGetValueType(g->kernel);
    LLVMTypeRef params[TS_MAXARGS + 1];
    unsigned np = LLVMCountParamTypes(g->kernel_ty);
    g->raises = np == (unsigned)g->nin + 1; /* and the last is a ptr: checked below */
    if ((np != (unsigned)g->nin && !g->raises)
        || LLVMGetReturnType(g->kernel_ty) != cc_value_type(g->ctx, g->kind[g->nin])) {
        PyErr_SetString(PyExc_TypeError, "the kernel's LLVM type does not match the signature");
        return -1;
    }
    LLVMGetParamTypes(g->kernel_ty, params);
    if (g->raises && params[g->nin] != g->ptr) { /* it points at an i64 */
        PyErr_SetString(PyExc_TypeError, "the kernel's last parameter is not where it raises");
        return -1;
    }
    for (int k = 0; k < g->nin; k++) {
        if (params[k] != cc_value_type(g->ctx, g->kind[k])) {
            PyErr_Format(PyExc_TypeError, "the kernel's parameter %d does not match the signature",
                         k);
            return -1;
        }
    }
    return 0;
}

/* Calls name.contig(count, operands...) with operand pointers ptrs; the
 * first site it returns (a kernel that may raise) is kept in the flag. */
static void
call_contig(LoopGen *g, LLVMValueRef count, LLVMValueRef *ptrs)
{
    LLVMValueRef args[TS_MAXARGS + 2];
    args[0] = count;
    for (int k = 0; k <= g->nin; k++) {
        args[k + 1] = ptrs[k];
    }
    LLVMValueRef site =
        LLVMBuildCall2(g->b, g->contig_ty, g->contig, args, (unsigned)g->nin + 2, "");
    if (g->raises) {
        LLVMValueRef old = LLVMBuildLoad2(g->b, g->intp, g->flag, "");
        LLVMBuildStore(
            g->b, LLVMBuildSelect(g->b, LLVMBuildIsNotNull(g->b, old, ""), old, site, ""), g->flag);
    }
}

static LLVMValueRef
memcpy_fn(LoopGen *g, LLVMTypeRef *fty)
{
    LLVMTypeRef over[3] = {g->ptr, g->ptr, g->intp};
    unsigned id = LLVMLookupIntrinsicID("llvm.memcpy", 11);
    *fty = LLVMIntrinsicGetType(g->ctx, id, over, 3);
    return LLVMGetIntrinsicDeclaration(g->mod, id, over, 3);
}

/*
 * Fills bufs[k][0..count) with the value of input k when its step is 0:
 * one element, then copies of what is there, doubling (log2 copies).
 */
static void
emit_fill(LoopGen *g, int k, LLVMValueRef count)
{
    LLVMBasicBlockRef fill = new_block(g, "bcast.fill"), loop = new_block(g, "bcast.grow");
    LLVMBasicBlockRef done = new_block(g, "bcast.filled");
    LLVMValueRef is_zero = LLVMBuildICmp(g->b, LLVMIntEQ, g->step[k], intp_const(g, 0), "");
    LLVMBuildCondBr(g->b, is_zero, fill, done);

    LLVMPositionBuilderAtEnd(g->b, fill);
    npy_intp size = ts_itemsize(g->kind[k]);
    LLVMTypeRef i8 = LLVMInt8TypeInContext(g->ctx);
    LLVMValueRef v = LLVMBuildLoad2(g->b, LLVMArrayType(i8, (unsigned)size), g->base[k], "");
    LLVMBuildStore(g->b, v, g->bufs[k]);
    LLVMValueRef total = LLVMBuildMul(g->b, count, intp_const(g, size), "bytes");
    LLVMBasicBlockRef entry_end = LLVMGetInsertBlock(g->b);
    LLVMBuildBr(g->b, loop);

    LLVMPositionBuilderAtEnd(g->b, loop);
    LLVMValueRef have = LLVMBuildPhi(g->b, g->intp, "have");
    LLVMValueRef room = LLVMBuildSub(g->b, total, have, "");
    LLVMValueRef less = LLVMBuildICmp(g->b, LLVMIntSLT, room, have, "");
    LLVMValueRef chunk = LLVMBuildSelect(g->b, less, room, have, "chunk");
    LLVMValueRef dst = LLVMBuildGEP2(g->b, i8, g->bufs[k], &have, 1, "");
    LLVMTypeRef fty;
    LLVMValueRef memcpy = memcpy_fn(g, &fty);
    LLVMValueRef margs[4] = {dst, g->bufs[k], chunk,
                             LLVMConstInt(LLVMInt1TypeInContext(g->ctx), 0, 0)};
    LLVMBuildCall2(g->b, fty, memcpy, margs, 4, "");
    LLVMValueRef next = LLVMBuildAdd(g->b, have, chunk, "");
    LLVMValueRef more = LLVMBuildICmp(g->b, LLVMIntSLT, next, total, "");
    LLVMBuildCondBr(g->b, more, loop, done);
    LLVMValueRef hv[2] = {intp_const(g, size), next};
    LLVMBasicBlockRef hb[2] = {entry_end, loop};
    LLVMAddIncoming(have, hv, hb, 2);
    LLVMPositionBuilderAtEnd(g->b, done);
}

/* The fast paths: contig directly, or block by block over the buffers. */
static void
emit_fast_paths(LoopGen *g, LLVMValueRef mask)
{
    LLVMBasicBlockRef direct = new_block(g, "contig"), bcast = new_block(g, "bcast");
    LLVMValueRef none = LLVMBuildICmp(g->b, LLVMIntEQ, mask,
                                      LLVMConstInt(LLVMInt32TypeInContext(g->ctx), 0, 0), "");
    LLVMBuildCondBr(g->b, none, direct, bcast);
    LLVMPositionBuilderAtEnd(g->b, direct);
    call_contig(g, g->n, g->base);
    LLVMBuildBr(g->b, g->exit);

    LLVMPositionBuilderAtEnd(g->b, bcast);
    LLVMValueRef block = intp_const(g, g->block);
    LLVMValueRef small = LLVMBuildICmp(g->b, LLVMIntSLT, g->n, block, "");
    LLVMValueRef first = LLVMBuildSelect(g->b, small, g->n, block, "fill.n");
    for (int k = 0; k < g->nin; k++) {
        emit_fill(g, k, first);
    }
    LLVMBasicBlockRef pre = LLVMGetInsertBlock(g->b);
    LLVMBasicBlockRef loop = new_block(g, "bcast.block");
    LLVMBuildBr(g->b, loop);
    LLVMPositionBuilderAtEnd(g->b, loop);
    LLVMValueRef j = LLVMBuildPhi(g->b, g->intp, "j");
    LLVMValueRef left = LLVMBuildSub(g->b, g->n, j, "");
    LLVMValueRef count = LLVMBuildSelect(g->b, LLVMBuildICmp(g->b, LLVMIntSLT, left, block, ""),
                                         left, block, "count");
    LLVMValueRef ptrs[TS_MAXARGS + 1];
    LLVMTypeRef i8 = LLVMInt8TypeInContext(g->ctx);
    for (int k = 0; k <= g->nin; k++) {
        LLVMValueRef off = LLVMBuildMul(g->b, j, intp_const(g, ts_itemsize(g->kind[k])), "");
        ptrs[k] = LLVMBuildGEP2(g->b, i8, g->base[k], &off, 1, "");
        if (k < g->nin) {
            LLVMValueRef zero = LLVMBuildICmp(g->b, LLVMIntEQ, g->step[k], intp_const(g, 0), "");
            ptrs[k] = LLVMBuildSelect(g->b, zero, g->bufs[k], ptrs[k], "");
        }
    }
    call_contig(g, count, ptrs);
    LLVMValueRef next = LLVMBuildAdd(g->b, j, block, "j.next");
    LLVMValueRef more = LLVMBuildICmp(g->b, LLVMIntSLT, next, g->n, "");
    LLVMValueRef br = LLVMBuildCondBr(g->b, more, loop, g->exit);
    set_scalar_loop(g, br);
    LLVMValueRef jv[2] = {intp_const(g, 0), next};
    LLVMBasicBlockRef jb[2] = {pre, loop};
    LLVMAddIncoming(j, jv, jb, 2);
}

/* Stack buffers for step-0 inputs, sized so all of them fit BCAST_BYTES. */
static void
emit_buffers(LoopGen *g)
{
    npy_intp bytes = 0;
    for (int k = 0; k < g->nin; k++) {
        bytes += ts_itemsize(g->kind[k]);
    }
    npy_intp block = bytes ? BCAST_BYTES / bytes : 16;
    g->block = block < 16 ? 16 : block & ~(npy_intp)15;
    for (int k = 0; k < g->nin; k++) {
        char name[32];
        LLVMTypeRef t = LLVMArrayType(LLVMInt8TypeInContext(g->ctx),
                                      (unsigned)(g->block * ts_itemsize(g->kind[k])));
        g->bufs[k] = LLVMBuildAlloca(g->b, t, operand_name(g, k, ".block", name, sizeof(name)));
        LLVMSetAlignment(g->bufs[k], 64);
    }
}

static void
emit_body(LoopGen *g)
{
    LLVMBasicBlockRef entry = new_block(g, "entry");
    LLVMBasicBlockRef layout = new_block(g, "check.layout");
    LLVMBasicBlockRef overlap = new_block(g, "check.overlap");
    LLVMBasicBlockRef dispatch = new_block(g, "dispatch");
    LLVMBasicBlockRef strided = new_block(g, "strided");
    g->exit = new_block(g, "exit");

    g->done = g->raises ? new_block(g, "done") : g->exit;

    LLVMPositionBuilderAtEnd(g->b, entry);
    emit_buffers(g);
    if (g->raises) {
        g->flag = new_flag(g);
    }
    g->n = LLVMBuildLoad2(g->b, g->intp, LLVMGetParam(g->fn, 1), "n");
    load_operands(g, LLVMGetParam(g->fn, 0), LLVMGetParam(g->fn, 2));
    LLVMBuildCondBr(g->b, LLVMBuildICmp(g->b, LLVMIntSGT, g->n, intp_const(g, 0), "nonempty"),
                    layout, g->exit);

    LLVMValueRef mask;
    LLVMPositionBuilderAtEnd(g->b, layout);
    LLVMBuildCondBr(g->b, emit_layout_check(g, &mask), overlap, strided);
    LLVMPositionBuilderAtEnd(g->b, overlap);
    LLVMBuildCondBr(g->b, emit_overlap_check(g), dispatch, strided);
    LLVMPositionBuilderAtEnd(g->b, dispatch);
    emit_fast_paths(g, mask);

    emit_strided_path(g, strided);
    LLVMMoveBasicBlockAfter(g->exit, LLVMGetLastBasicBlock(g->fn));
    LLVMPositionBuilderAtEnd(g->b, g->exit);
    if (g->raises) {
        emit_exit_check(g);
        LLVMMoveBasicBlockAfter(g->done, LLVMGetLastBasicBlock(g->fn));
        LLVMPositionBuilderAtEnd(g->b, g->done);
    }
    LLVMBuildRetVoid(g->b);
}

LLVMValueRef
vz_emit_loop(LLVMModuleRef mod, LLVMValueRef kernel, const TsSignature *sig, const char *name)
{
    LoopGen g = {0};
    g.mod = mod;
    g.ctx = LLVMGetModuleContext(mod);
    g.kernel = kernel;
    g.intp = LLVMIntTypeInContext(g.ctx, 8 * sizeof(npy_intp));
    g.ptr = LLVMPointerTypeInContext(g.ctx, 0);
    g.md_access_group = LLVMGetMDKindIDInContext(g.ctx, "llvm.access.group", 17);
    if (check_kernel(&g, sig) < 0 || make_access_group(&g) < 0) {
        return NULL;
    }
    g.b = LLVMCreateBuilderInContext(g.ctx);
    emit_contig_function(&g, name);
    g.strided = emit_strided_function(&g, name);
    g.fn = declare_loop(&g, name);
    cc_mark_fast_codegen(g.fn);
    emit_body(&g);
    LLVMDisposeBuilder(g.b);
    return g.fn;
}
