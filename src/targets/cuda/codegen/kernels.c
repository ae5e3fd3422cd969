/*
 * kernels.c - the entry points of a cuda ufunc: grid-stride loops around the
 * inlined scalar kernel, built in LLVM IR next to it (ptx.c compiles them).
 *
 * Per signature one module holds four entries (W = 32 or 64 bits of index
 * arithmetic, chosen per call by cucall.c from the element count and the
 * byte extents):
 *
 *   <name>_c<W>(x0, s0lo, s0hi, ..., out, iW n)
 *       every array operand contiguous and of the output's size
 *   <name>_s<W>(x0, s0lo, s0hi, ..., out, iW n, iW shape[D], iW st[nin+1][D])
 *       general strided N-d: dimension 0 is the innermost; broadcast
 *       operands have stride 0; shape entries past the call's ndim are 1
 *
 * An input k is an array when x_k is not null, else the scalar whose bytes
 * are (s_k_lo, s_k_hi) -- passed by value, converted to the register value
 * through a stack slot that SROA removes.  The null test is uniform across
 * the grid, so the branch costs nothing measurable and no 2^nin variants
 * are needed.  The strided index decomposition stops as soon as the
 * remaining index is 0 (all outer coordinates are then 0), so a call pays
 * one division per dimension it really has.
 *
 * The reduce module (<name>_r) is a block reduction per output element in
 * dynamic shared memory; see build_reduce.
 */
#include "targets/cuda/codegen/codegen.h"

#include <string.h>

typedef struct Kb {
    LLVMContextRef ctx;
    LLVMModuleRef mod;
    LLVMBuilderRef b;
    LLVMTypeRef ptr, i8, i32, i64, iw;
} Kb;

static void
kb_init(Kb *k, LLVMModuleRef mod, int wide)
{
    k->mod = mod;
    k->ctx = LLVMGetModuleContext(mod);
    k->b = LLVMCreateBuilderInContext(k->ctx);
    k->ptr = LLVMPointerTypeInContext(k->ctx, 0);
    k->i8 = LLVMInt8TypeInContext(k->ctx);
    k->i32 = LLVMInt32TypeInContext(k->ctx);
    k->i64 = LLVMInt64TypeInContext(k->ctx);
    k->iw = wide ? k->i64 : k->i32;
}

static LLVMValueRef
sreg(Kb *k, const char *which, LLVMTypeRef to)
{
    char name[64];
    snprintf(name, sizeof(name), "llvm.nvvm.read.ptx.sreg.%s", which);
    unsigned id = LLVMLookupIntrinsicID(name, strlen(name));
    LLVMValueRef f = LLVMGetIntrinsicDeclaration(k->mod, id, NULL, 0);
    LLVMTypeRef fty = LLVMIntrinsicGetType(k->ctx, id, NULL, 0);
    LLVMValueRef v = LLVMBuildCall2(k->b, fty, f, NULL, 0, which);
    return to == k->i32 ? v : LLVMBuildZExt(k->b, v, to, "");
}

static void
barrier(Kb *k)
{
    static const char name[] = "llvm.nvvm.barrier0";
    unsigned id = LLVMLookupIntrinsicID(name, sizeof(name) - 1);
    LLVMValueRef f = LLVMGetIntrinsicDeclaration(k->mod, id, NULL, 0);
    LLVMBuildCall2(k->b, LLVMIntrinsicGetType(k->ctx, id, NULL, 0), f, NULL, 0, "");
}

int
ptx_kernel_dims(int nin, int wide)
{
    /* kernel parameters must fit the classic 4 KiB: pointers, scalar words,
     * n, then shape and one stride row per operand */
    int w = wide ? 8 : 4;
    int room = (4000 - nin * 24 - 16) / (w * (nin + 2));
    return room < NPY_MAXDIMS ? room : NPY_MAXDIMS;
}

/* The byte address p + off (off of the index width, sign-extended). */
static LLVMValueRef
byte_gep(Kb *k, LLVMValueRef p, LLVMValueRef off, const char *name)
{
    if (LLVMTypeOf(off) != k->i64) {
        off = LLVMBuildSExt(k->b, off, k->i64, "");
    }
    return LLVMBuildInBoundsGEP2(k->b, k->i8, p, &off, 1, name);
}

/* The scalar of input j as a register value: its two words through a slot. */
static LLVMValueRef
scalar_value(Kb *k, LLVMValueRef f, int j, TsKind kind, LLVMValueRef slot)
{
    LLVMValueRef lo = LLVMGetParam(f, (unsigned)(3 * j + 1));
    LLVMValueRef hi = LLVMGetParam(f, (unsigned)(3 * j + 2));
    LLVMValueRef one = LLVMConstInt(k->i64, 1, 0);
    LLVMBuildStore(k->b, lo, slot);
    LLVMBuildStore(k->b, hi, LLVMBuildInBoundsGEP2(k->b, k->i64, slot, &one, 1, ""));
    return cc_load(k->b, kind, slot, "s");
}

/*
 * Loads input j at byte offset off (NULL: the contiguous index i times the
 * item size), or takes its by-value scalar when x_j is null.
 */
static LLVMValueRef
operand(Kb *k, LLVMValueRef f, int j, TsKind kind, LLVMValueRef idx, int by_offset,
        LLVMValueRef scalar)
{
    LLVMValueRef x = LLVMGetParam(f, (unsigned)(3 * j));
    LLVMBasicBlockRef here = LLVMGetInsertBlock(k->b);
    LLVMBasicBlockRef load_b = LLVMAppendBasicBlockInContext(k->ctx, f, "x.load");
    LLVMBasicBlockRef join = LLVMAppendBasicBlockInContext(k->ctx, f, "x.join");
    LLVMBuildCondBr(k->b, LLVMBuildIsNull(k->b, x, "x.scalar"), join, load_b);
    LLVMPositionBuilderAtEnd(k->b, load_b);
    LLVMValueRef p;
    if (by_offset) {
        p = byte_gep(k, x, idx, "x.p");
    } else {
        LLVMValueRef i64i = LLVMTypeOf(idx) == k->i64 ? idx : LLVMBuildZExt(k->b, idx, k->i64, "");
        p = LLVMBuildInBoundsGEP2(k->b, cc_memory_type(k->ctx, kind), x, &i64i, 1, "x.p");
    }
    LLVMValueRef v = cc_load(k->b, kind, p, "x");
    LLVMBasicBlockRef load_end = LLVMGetInsertBlock(k->b);
    LLVMBuildBr(k->b, join);
    LLVMPositionBuilderAtEnd(k->b, join);
    LLVMValueRef phi = LLVMBuildPhi(k->b, LLVMTypeOf(v), "x.v");
    LLVMValueRef vals[2] = {scalar, v};
    LLVMBasicBlockRef blocks[2] = {here, load_end};
    LLVMAddIncoming(phi, vals, blocks, 2);
    return phi;
}

/* Parameters: (ptr, i64, i64) per input, ptr out, iW n, then `extra`. */
static LLVMValueRef
declare_entry(Kb *k, const TsSignature *sig, const char *name, int extra)
{
    int nin = sig->nargs, np = 0;
    LLVMTypeRef params[3 * TS_MAXARGS + 2 + (NPY_MAXDIMS) * (TS_MAXARGS + 2)];
    for (int j = 0; j < nin; j++) {
        params[np++] = k->ptr;
        params[np++] = k->i64;
        params[np++] = k->i64;
    }
    params[np++] = k->ptr;
    params[np++] = k->iw;
    for (int e = 0; e < extra; e++) {
        params[np++] = k->iw;
    }
    LLVMTypeRef fty = LLVMFunctionType(LLVMVoidTypeInContext(k->ctx), params, (unsigned)np, 0);
    return LLVMAddFunction(k->mod, name, fty);
}

/* The per-element body: out at `oaddr` = kernel(operands at offsets). */
typedef struct Loop {
    LLVMValueRef f, i, next, stride, n;
    LLVMBasicBlockRef entry, body, done;
} Loop;

/* entry: i = ctaid*ntid + tid; body loops while i < n by ntid*nctaid. */
static void
loop_open(Kb *k, Loop *l, LLVMValueRef f, LLVMValueRef n)
{
    l->f = f;
    l->n = n;
    l->entry = LLVMAppendBasicBlockInContext(k->ctx, f, "entry");
    l->body = LLVMAppendBasicBlockInContext(k->ctx, f, "loop");
    l->done = LLVMAppendBasicBlockInContext(k->ctx, f, "done");
    LLVMPositionBuilderAtEnd(k->b, l->entry);
}

static void
loop_start(Kb *k, Loop *l)
{
    LLVMValueRef ntid = sreg(k, "ntid.x", k->iw);
    LLVMValueRef start = LLVMBuildAdd(k->b, LLVMBuildMul(k->b, sreg(k, "ctaid.x", k->iw), ntid, ""),
                                      sreg(k, "tid.x", k->iw), "start");
    l->stride = LLVMBuildMul(k->b, ntid, sreg(k, "nctaid.x", k->iw), "stride");
    LLVMBuildCondBr(k->b, LLVMBuildICmp(k->b, LLVMIntULT, start, l->n, ""), l->body, l->done);
    LLVMPositionBuilderAtEnd(k->b, l->body);
    l->i = LLVMBuildPhi(k->b, k->iw, "i");
    LLVMValueRef v[1] = {start};
    LLVMBasicBlockRef b[1] = {l->entry};
    LLVMAddIncoming(l->i, v, b, 1);
}

static void
loop_close(Kb *k, Loop *l)
{
    /* i + stride cannot wrap: cucall.c picks W so that n + grid size fits */
    LLVMValueRef next = LLVMBuildNUWAdd(k->b, l->i, l->stride, "i.next");
    LLVMBasicBlockRef tail = LLVMGetInsertBlock(k->b);
    LLVMBuildCondBr(k->b, LLVMBuildICmp(k->b, LLVMIntULT, next, l->n, ""), l->body, l->done);
    LLVMAddIncoming(l->i, &next, &tail, 1);
    LLVMPositionBuilderAtEnd(k->b, l->done);
    LLVMBuildRetVoid(k->b);
}

/* Slots and scalar values in the entry block (before loop_start). */
static void
prepare_scalars(Kb *k, LLVMValueRef f, const TsSignature *sig, LLVMValueRef *scalars)
{
    for (int j = 0; j < sig->nargs; j++) {
        LLVMValueRef slot = LLVMBuildAlloca(k->b, LLVMArrayType(k->i64, 2), "s.slot");
        scalars[j] = scalar_value(k, f, j, sig->args[j].kind, slot);
    }
}

static LLVMValueRef
call_kernel(Kb *k, LLVMValueRef kernel, LLVMValueRef *args, int n)
{
    return LLVMBuildCall2(k->b, LLVMGlobalGetValueType(kernel), kernel, args, (unsigned)n, "r");
}

static LLVMValueRef
build_contiguous(Kb *k, LLVMValueRef kernel, const TsSignature *sig, const char *name)
{
    int nin = sig->nargs;
    LLVMValueRef f = declare_entry(k, sig, name, 0), scalars[TS_MAXARGS], args[TS_MAXARGS];
    Loop l;
    loop_open(k, &l, f, LLVMGetParam(f, (unsigned)(3 * nin + 1)));
    prepare_scalars(k, f, sig, scalars);
    loop_start(k, &l);
    for (int j = 0; j < nin; j++) {
        args[j] = operand(k, f, j, sig->args[j].kind, l.i, 0, scalars[j]);
    }
    LLVMValueRef r = call_kernel(k, kernel, args, nin);
    LLVMValueRef i64i = k->iw == k->i64 ? l.i : LLVMBuildZExt(k->b, l.i, k->i64, "");
    LLVMValueRef op =
        LLVMBuildInBoundsGEP2(k->b, cc_memory_type(k->ctx, sig->ret.kind),
                              LLVMGetParam(f, (unsigned)(3 * nin)), &i64i, 1, "out.p");
    cc_store(k->b, sig->ret.kind, r, op);
    loop_close(k, &l);
    return f;
}

/*
 * Byte offsets of every operand for linear index i: dimension 0 innermost,
 * rem = i; for each d: off += (rem % shape[d]) * stride[op][d]; rem /= shape[d];
 * leaving as soon as rem is 0.
 */
static void
decompose(Kb *k, LLVMValueRef f, int first, int dims, int nops, LLVMValueRef i, LLVMValueRef *offs)
{
    LLVMBasicBlockRef done = LLVMAppendBasicBlockInContext(k->ctx, f, "idx.done");
    LLVMValueRef zero = LLVMConstInt(k->iw, 0, 0);
    LLVMValueRef phis[TS_MAXARGS + 1];
    LLVMBasicBlockRef from = LLVMGetInsertBlock(k->b);
    LLVMValueRef rem = i;
    LLVMValueRef cur[TS_MAXARGS + 1];
    for (int o = 0; o < nops; o++) {
        cur[o] = zero;
    }
    /* done's phis collect (offsets) from each exit */
    LLVMPositionBuilderAtEnd(k->b, done);
    for (int o = 0; o < nops; o++) {
        phis[o] = LLVMBuildPhi(k->b, k->iw, "off");
    }
    LLVMPositionBuilderAtEnd(k->b, from);
    for (int d = 0; d < dims; d++) {
        LLVMBasicBlockRef step = LLVMAppendBasicBlockInContext(k->ctx, f, "idx.dim");
        LLVMBuildCondBr(k->b, LLVMBuildICmp(k->b, LLVMIntEQ, rem, zero, ""), done, step);
        for (int o = 0; o < nops; o++) {
            LLVMAddIncoming(phis[o], &cur[o], &from, 1);
        }
        LLVMPositionBuilderAtEnd(k->b, step);
        LLVMValueRef shape = LLVMGetParam(f, (unsigned)(first + d));
        LLVMValueRef q = LLVMBuildUDiv(k->b, rem, shape, "q");
        LLVMValueRef r = LLVMBuildSub(k->b, rem, LLVMBuildMul(k->b, q, shape, ""), "r");
        for (int o = 0; o < nops; o++) {
            LLVMValueRef st = LLVMGetParam(f, (unsigned)(first + dims * (o + 1) + d));
            cur[o] = LLVMBuildAdd(k->b, cur[o], LLVMBuildMul(k->b, r, st, ""), "off");
        }
        rem = q;
        from = step;
    }
    LLVMBuildBr(k->b, done);
    for (int o = 0; o < nops; o++) {
        LLVMAddIncoming(phis[o], &cur[o], &from, 1);
        offs[o] = phis[o];
    }
    LLVMPositionBuilderAtEnd(k->b, done);
}

static LLVMValueRef
build_strided(Kb *k, LLVMValueRef kernel, const TsSignature *sig, const char *name, int dims)
{
    int nin = sig->nargs;
    LLVMValueRef f = declare_entry(k, sig, name, dims * (nin + 2));
    LLVMValueRef scalars[TS_MAXARGS], args[TS_MAXARGS], offs[TS_MAXARGS + 1];
    Loop l;
    loop_open(k, &l, f, LLVMGetParam(f, (unsigned)(3 * nin + 1)));
    prepare_scalars(k, f, sig, scalars);
    loop_start(k, &l);
    decompose(k, f, 3 * nin + 2, dims, nin + 1, l.i, offs);
    for (int j = 0; j < nin; j++) {
        args[j] = operand(k, f, j, sig->args[j].kind, offs[j], 1, scalars[j]);
    }
    LLVMValueRef r = call_kernel(k, kernel, args, nin);
    cc_store(k->b, sig->ret.kind, r,
             byte_gep(k, LLVMGetParam(f, (unsigned)(3 * nin)), offs[nin], "out.p"));
    loop_close(k, &l);
    return f;
}

int
ptx_build_entries(LLVMModuleRef mod, LLVMValueRef kernel, const TsSignature *sig,
                  const char *const names[PTX_NENTRIES], LLVMValueRef entries[PTX_NENTRIES])
{
    for (int v = 0; v < PTX_NENTRIES; v++) {
        Kb k;
        int wide = v == PTX_C64 || v == PTX_S64;
        kb_init(&k, mod, wide);
        entries[v] = v < PTX_S32 ? build_contiguous(&k, kernel, sig, names[v])
                                 : build_strided(&k, kernel, sig, names[v],
                                                 ptx_kernel_dims(sig->nargs, wide));
        LLVMDisposeBuilder(k.b);
    }
    return 0;
}

/* ---- reduction ---- */

/*
 * <name>_r(in, out, i64 m, i64 kchunk, i64 ktotal, i64 nchunks, i64 rstride,
 *          i64 shape[D], i64 istride[D]):
 * one block per output element o (grid-stride over o < m*nchunks).  Chunk
 * c = o % nchunks covers [c*kchunk, min((c+1)*kchunk, ktotal)) of the
 * reduced axis (byte stride rstride); o / nchunks decomposes over the outer
 * shape/istride (dimension 0 innermost).  Each thread folds a strided
 * subset, then a tree over the p = min(ntid, len) partials in dynamic shared
 * memory (ntid a power of two) -- which reorders operands, hence the
 * identity/'reorderable' requirement.  out is contiguous, one item per o.
 */
static LLVMValueRef
smem_global(Kb *k)
{
    LLVMTypeRef t = LLVMArrayType(k->i8, 0);
    LLVMValueRef g = LLVMAddGlobalInAddressSpace(k->mod, t, "nv_reduce_smem", 3);
    LLVMSetLinkage(g, LLVMExternalLinkage);
    LLVMSetAlignment(g, 16);
    return g;
}

/* &smem[idx] as a generic pointer (the element type's memory layout). */
static LLVMValueRef
smem_at(Kb *k, LLVMValueRef smem, LLVMTypeRef mt, LLVMValueRef idx)
{
    LLVMValueRef p = LLVMBuildAddrSpaceCast(k->b, smem, k->ptr, "smem");
    return LLVMBuildInBoundsGEP2(k->b, mt, p, &idx, 1, "smem.p");
}

LLVMValueRef
ptx_build_reduce(LLVMModuleRef mod, LLVMValueRef kernel, TsKind kind, const char *name)
{
    Kb k;
    kb_init(&k, mod, 1);
    int dims = NPY_MAXDIMS;
    LLVMTypeRef params[7 + 2 * NPY_MAXDIMS];
    params[0] = params[1] = k.ptr;
    for (int j = 2; j < 7 + 2 * dims; j++) {
        params[j] = k.i64;
    }
    LLVMValueRef f = LLVMAddFunction(
        mod, name, LLVMFunctionType(LLVMVoidTypeInContext(k.ctx), params, 7 + 2 * dims, 0));
    LLVMTypeRef mt = cc_memory_type(k.ctx, kind);
    LLVMValueRef smem = smem_global(&k);
    LLVMValueRef in = LLVMGetParam(f, 0), out = LLVMGetParam(f, 1);
    LLVMValueRef m = LLVMGetParam(f, 2), kchunk = LLVMGetParam(f, 3);
    LLVMValueRef ktotal = LLVMGetParam(f, 4), nchunks = LLVMGetParam(f, 5);
    LLVMValueRef rstride = LLVMGetParam(f, 6);
    LLVMValueRef zero = LLVMConstInt(k.i64, 0, 0), one = LLVMConstInt(k.i64, 1, 0);

    LLVMBasicBlockRef entry = LLVMAppendBasicBlockInContext(k.ctx, f, "entry");
    LLVMBasicBlockRef outer = LLVMAppendBasicBlockInContext(k.ctx, f, "out.loop");
    LLVMBasicBlockRef done = LLVMAppendBasicBlockInContext(k.ctx, f, "done");
    LLVMPositionBuilderAtEnd(k.b, entry);
    LLVMValueRef tid = sreg(&k, "tid.x", k.i64), ntid = sreg(&k, "ntid.x", k.i64);
    LLVMValueRef first = sreg(&k, "ctaid.x", k.i64), step = sreg(&k, "nctaid.x", k.i64);
    LLVMValueRef total = LLVMBuildMul(k.b, m, nchunks, "total");
    LLVMBuildCondBr(k.b, LLVMBuildICmp(k.b, LLVMIntULT, first, total, ""), outer, done);

    /* per output: chunk bounds and base address */
    LLVMPositionBuilderAtEnd(k.b, outer);
    LLVMValueRef o = LLVMBuildPhi(k.b, k.i64, "o");
    LLVMAddIncoming(o, &first, &entry, 1);
    LLVMValueRef c = LLVMBuildURem(k.b, o, nchunks, "chunk");
    LLVMValueRef lo = LLVMBuildMul(k.b, c, kchunk, "lo");
    LLVMValueRef left = LLVMBuildSub(k.b, ktotal, lo, "");
    LLVMValueRef len =
        LLVMBuildSelect(k.b, LLVMBuildICmp(k.b, LLVMIntULT, left, kchunk, ""), left, kchunk, "len");
    LLVMValueRef offs[1];
    decompose(&k, f, 7, dims, 1, LLVMBuildUDiv(k.b, o, nchunks, "row"), offs);
    /* decompose's parameters are shape[d] at 7+d and istride[d] at 7+dims+d */
    LLVMValueRef base = byte_gep(
        &k, in, LLVMBuildAdd(k.b, offs[0], LLVMBuildMul(k.b, lo, rstride, ""), ""), "base");

    /* each thread folds elements tid, tid+ntid, ... of the chunk */
    LLVMBasicBlockRef has = LLVMAppendBasicBlockInContext(k.ctx, f, "fold.first");
    LLVMBasicBlockRef fold = LLVMAppendBasicBlockInContext(k.ctx, f, "fold");
    LLVMBasicBlockRef folded = LLVMAppendBasicBlockInContext(k.ctx, f, "fold.done");
    LLVMBasicBlockRef tree = LLVMAppendBasicBlockInContext(k.ctx, f, "tree");
    LLVMBuildCondBr(k.b, LLVMBuildICmp(k.b, LLVMIntULT, tid, len, ""), has, tree);
    LLVMPositionBuilderAtEnd(k.b, has);
    LLVMValueRef acc0 =
        cc_load(k.b, kind, byte_gep(&k, base, LLVMBuildMul(k.b, tid, rstride, ""), "e.p"), "e");
    LLVMValueRef j0 = LLVMBuildAdd(k.b, tid, ntid, "j");
    LLVMBasicBlockRef has_end = LLVMGetInsertBlock(k.b);
    LLVMBuildCondBr(k.b, LLVMBuildICmp(k.b, LLVMIntULT, j0, len, ""), fold, folded);
    LLVMPositionBuilderAtEnd(k.b, fold);
    LLVMValueRef j = LLVMBuildPhi(k.b, k.i64, "j"),
                 acc = LLVMBuildPhi(k.b, LLVMTypeOf(acc0), "acc");
    LLVMValueRef e =
        cc_load(k.b, kind, byte_gep(&k, base, LLVMBuildMul(k.b, j, rstride, ""), "e.p"), "e");
    LLVMValueRef pair[2] = {acc, e};
    LLVMValueRef acc_next = call_kernel(&k, kernel, pair, 2);
    LLVMValueRef j_next = LLVMBuildAdd(k.b, j, ntid, "j.next");
    LLVMBasicBlockRef fold_end = LLVMGetInsertBlock(k.b);
    LLVMBuildCondBr(k.b, LLVMBuildICmp(k.b, LLVMIntULT, j_next, len, ""), fold, folded);
    LLVMValueRef jv[2] = {j0, j_next}, av[2] = {acc0, acc_next};
    LLVMBasicBlockRef jb[2] = {has_end, fold_end};
    LLVMAddIncoming(j, jv, jb, 2);
    LLVMAddIncoming(acc, av, jb, 2);
    LLVMPositionBuilderAtEnd(k.b, folded);
    LLVMValueRef fin = LLVMBuildPhi(k.b, LLVMTypeOf(acc0), "partial");
    LLVMBasicBlockRef fb[2] = {has_end, fold_end};
    LLVMValueRef fv[2] = {acc0, acc_next};
    LLVMAddIncoming(fin, fv, fb, 2);
    cc_store(k.b, kind, fin, smem_at(&k, smem, mt, tid));
    LLVMBuildBr(k.b, tree);

    /* tree: p = min(ntid, len); s = pow2 >= p, halved: combine [tid] and [tid+s] */
    LLVMPositionBuilderAtEnd(k.b, tree);
    barrier(&k);
    LLVMValueRef p =
        LLVMBuildSelect(k.b, LLVMBuildICmp(k.b, LLVMIntULT, len, ntid, ""), len, ntid, "p");
    LLVMBasicBlockRef lvl = LLVMAppendBasicBlockInContext(k.ctx, f, "tree.level");
    LLVMBasicBlockRef comb = LLVMAppendBasicBlockInContext(k.ctx, f, "tree.combine");
    LLVMBasicBlockRef sync = LLVMAppendBasicBlockInContext(k.ctx, f, "tree.sync");
    LLVMBasicBlockRef write = LLVMAppendBasicBlockInContext(k.ctx, f, "write");
    LLVMBasicBlockRef store = LLVMAppendBasicBlockInContext(k.ctx, f, "write.out");
    LLVMBasicBlockRef next = LLVMAppendBasicBlockInContext(k.ctx, f, "out.next");
    /* s0 = ntid / 2: ntid is a power of two >= p, so s0 >= p/2 */
    LLVMValueRef s0 = LLVMBuildLShr(k.b, ntid, one, "s0");
    LLVMBasicBlockRef tree_end = LLVMGetInsertBlock(k.b);
    LLVMBuildBr(k.b, lvl);
    LLVMPositionBuilderAtEnd(k.b, lvl);
    LLVMValueRef s = LLVMBuildPhi(k.b, k.i64, "s");
    LLVMBuildCondBr(k.b, LLVMBuildICmp(k.b, LLVMIntEQ, s, zero, ""), write, comb);
    LLVMPositionBuilderAtEnd(k.b, comb);
    LLVMValueRef partner = LLVMBuildAdd(k.b, tid, s, "partner");
    LLVMValueRef active = LLVMBuildAnd(k.b, LLVMBuildICmp(k.b, LLVMIntULT, tid, s, ""),
                                       LLVMBuildICmp(k.b, LLVMIntULT, partner, p, ""), "active");
    LLVMBasicBlockRef act = LLVMAppendBasicBlockInContext(k.ctx, f, "tree.act");
    LLVMBuildCondBr(k.b, active, act, sync);
    LLVMPositionBuilderAtEnd(k.b, act);
    LLVMValueRef mine = smem_at(&k, smem, mt, tid);
    LLVMValueRef ab[2] = {cc_load(k.b, kind, mine, "a"),
                          cc_load(k.b, kind, smem_at(&k, smem, mt, partner), "b")};
    cc_store(k.b, kind, call_kernel(&k, kernel, ab, 2), mine);
    LLVMBuildBr(k.b, sync);
    LLVMPositionBuilderAtEnd(k.b, sync);
    barrier(&k);
    LLVMValueRef s_next = LLVMBuildLShr(k.b, s, one, "s.next");
    LLVMBuildBr(k.b, lvl);
    LLVMValueRef sv[2] = {s0, s_next};
    LLVMBasicBlockRef sb[2] = {tree_end, sync};
    LLVMAddIncoming(s, sv, sb, 2);

    /* thread 0 writes out[o]; a barrier before smem is reused */
    LLVMPositionBuilderAtEnd(k.b, write);
    LLVMBuildCondBr(k.b, LLVMBuildICmp(k.b, LLVMIntEQ, tid, zero, ""), store, next);
    LLVMPositionBuilderAtEnd(k.b, store);
    LLVMValueRef r = cc_load(k.b, kind, smem_at(&k, smem, mt, zero), "red");
    cc_store(k.b, kind, r, LLVMBuildInBoundsGEP2(k.b, mt, out, &o, 1, "out.p"));
    LLVMBuildBr(k.b, next);
    LLVMPositionBuilderAtEnd(k.b, next);
    barrier(&k);
    LLVMValueRef o_next = LLVMBuildAdd(k.b, o, step, "o.next");
    LLVMBuildCondBr(k.b, LLVMBuildICmp(k.b, LLVMIntULT, o_next, total, ""), outer, done);
    LLVMAddIncoming(o, &o_next, &next, 1);
    LLVMPositionBuilderAtEnd(k.b, done);
    LLVMBuildRetVoid(k.b);
    LLVMDisposeBuilder(k.b);
    return f;
}

/* ---- a gufunc's entry ---- */

static LLVMValueRef
load_i64(Kb *k, LLVMValueRef base, LLVMValueRef idx, const char *name)
{
    LLVMValueRef p = LLVMBuildInBoundsGEP2(k->b, k->i64, base, &idx, 1, "");
    LLVMValueRef v = LLVMBuildLoad2(k->b, k->i64, p, name);
    LLVMSetAlignment(v, 8); /* the descriptor is an int64 array: one 8-byte load */
    return v;
}

static LLVMValueRef
i64c(Kb *k, long long v)
{
    return LLVMConstInt(k->i64, (unsigned long long)v, 1);
}

/*
 * The body behind noalias parameters: i32 <entry>.disjoint(ptr noalias
 * p[0..nargs-1], ptr noalias dims, ptr noalias steps) calls the body on
 * them.  Inlined, the parameters become alias scopes, so that LLVM may
 * keep a row's loads apart from its stores (hoist, reorder, merge them
 * into 16-byte accesses): the entry calls it only in launches whose
 * written arguments share no memory with any other (the host says so).
 * The row pointers of arguments with core dimensions are `align 16` too,
 * for a body too large to be inlined (the entry's assumptions would not
 * reach it).
 */
static LLVMValueRef
disjoint_body(Kb *k, LLVMValueRef body, int nargs, const int *ndims, const char *name)
{
    LLVMTypeRef bty = LLVMGlobalGetValueType(body), bparams[5], params[TS_MAXARGS + 2];
    LLVMGetParamTypes(bty, bparams);
    for (int a = 0; a < nargs + 2; a++) {
        params[a] = k->ptr;
    }
    char fname[CC_NAME_SIZE + 16];
    snprintf(fname, sizeof(fname), "%s.disjoint", name);
    LLVMValueRef w =
        LLVMAddFunction(k->mod, fname, LLVMFunctionType(k->i32, params, (unsigned)nargs + 2, 0));
    LLVMSetLinkage(w, LLVMInternalLinkage);
    unsigned noalias = LLVMGetEnumAttributeKindForName("noalias", 7);
    unsigned align = LLVMGetEnumAttributeKindForName("align", 5);
    for (int a = 0; a < nargs + 2; a++) {
        LLVMAddAttributeAtIndex(w, (unsigned)a + 1, LLVMCreateEnumAttribute(k->ctx, noalias, 0));
        if (a < nargs && ndims[a] > 0) {
            LLVMAddAttributeAtIndex(w, (unsigned)a + 1, LLVMCreateEnumAttribute(k->ctx, align, 16));
        }
    }
    LLVMBuilderRef b = LLVMCreateBuilderInContext(k->ctx);
    LLVMPositionBuilderAtEnd(b, LLVMAppendBasicBlockInContext(k->ctx, w, "entry"));
    LLVMTypeRef aty = LLVMArrayType(k->ptr, (unsigned)nargs);
    LLVMValueRef args = LLVMBuildAlloca(b, aty, "args");
    for (int a = 0; a < nargs; a++) {
        LLVMValueRef idx[2] = {i64c(k, 0), i64c(k, a)};
        LLVMBuildStore(b, LLVMGetParam(w, (unsigned)a),
                       LLVMBuildInBoundsGEP2(b, aty, args, idx, 2, ""));
    }
    LLVMValueRef bargs[5] = {args, LLVMGetParam(w, (unsigned)nargs),
                             LLVMGetParam(w, (unsigned)nargs + 1), LLVMConstInt(bparams[3], 0, 0),
                             LLVMConstInt(bparams[4], 1, 0)};
    LLVMBuildRet(b, LLVMBuildCall2(b, bty, body, bargs, 5, "st"));
    LLVMDisposeBuilder(b);
    return w;
}

/*
 * The body's call in two copies.  The fast one is for a launch in which
 * every argument with core dimensions starts each row on 16 bytes (bits:
 * the OR of their base pointers and loop strides, the same in every
 * thread, so the branch never diverges) and no written argument shares
 * memory with another (bit 0 of flags, the host's check): it is told so
 * (llvm.assume, and disjoint_body's noalias), so that an unrolled loop
 * over a contiguous row loads and stores 16 bytes at once and keeps what
 * it reads from other rows in registers.  A warp whose threads each walk
 * their own row touches 32 cache lines an access: with 4-byte accesses
 * the L1, not memory, is the limit.  Returns the body's status.
 */
static LLVMValueRef
aligned_or_not(Kb *k, LLVMValueRef f, LLVMValueRef body, LLVMValueRef *bargs, LLVMValueRef *p,
               int nargs, const int *ndims, LLVMValueRef bits, LLVMValueRef flags, const char *name)
{
    LLVMBasicBlockRef al = LLVMAppendBasicBlockInContext(k->ctx, f, "aligned");
    LLVMBasicBlockRef un = LLVMAppendBasicBlockInContext(k->ctx, f, "unaligned");
    LLVMBasicBlockRef joined = LLVMAppendBasicBlockInContext(k->ctx, f, "called");
    LLVMValueRef low = LLVMBuildAnd(k->b, bits, i64c(k, 15), "");
    LLVMValueRef disjoint = LLVMBuildAnd(k->b, flags, i64c(k, 1), "");
    LLVMValueRef fast =
        LLVMBuildAnd(k->b, LLVMBuildICmp(k->b, LLVMIntEQ, low, i64c(k, 0), ""),
                     LLVMBuildICmp(k->b, LLVMIntNE, disjoint, i64c(k, 0), ""), "fast");
    LLVMBuildCondBr(k->b, fast, al, un);
    LLVMPositionBuilderAtEnd(k->b, al);
    static const char assume_name[] = "llvm.assume";
    unsigned assume_id = LLVMLookupIntrinsicID(assume_name, sizeof(assume_name) - 1);
    LLVMValueRef assume = LLVMGetIntrinsicDeclaration(k->mod, assume_id, NULL, 0);
    LLVMTypeRef assume_ty = LLVMIntrinsicGetType(k->ctx, assume_id, NULL, 0);
    for (int a = 0; a < nargs; a++) {
        if (ndims[a] == 0) {
            continue;
        }
        /* (ptrtoint p & 15) == 0: the form every LLVM (NVVM's 7 too) reads */
        LLVMValueRef row_low =
            LLVMBuildAnd(k->b, LLVMBuildPtrToInt(k->b, p[a], k->i64, ""), i64c(k, 15), "");
        LLVMValueRef on16 = LLVMBuildICmp(k->b, LLVMIntEQ, row_low, i64c(k, 0), "on16");
        LLVMBuildCall2(k->b, assume_ty, assume, &on16, 1, "");
    }
    LLVMValueRef w = disjoint_body(k, body, nargs, ndims, name), wargs[TS_MAXARGS + 2];
    for (int a = 0; a < nargs; a++) {
        wargs[a] = p[a];
    }
    wargs[nargs] = bargs[1];
    wargs[nargs + 1] = bargs[2];
    LLVMValueRef st_al =
        LLVMBuildCall2(k->b, LLVMGlobalGetValueType(w), w, wargs, (unsigned)nargs + 2, "st");
    LLVMBuildBr(k->b, joined);
    LLVMPositionBuilderAtEnd(k->b, un);
    LLVMTypeRef bty = LLVMGlobalGetValueType(body);
    LLVMValueRef st_un = LLVMBuildCall2(k->b, bty, body, bargs, 5, "st");
    LLVMBuildBr(k->b, joined);
    LLVMPositionBuilderAtEnd(k->b, joined);
    LLVMValueRef st = LLVMBuildPhi(k->b, k->i32, "st");
    LLVMAddIncoming(st, (LLVMValueRef[]){st_al, st_un}, (LLVMBasicBlockRef[]){al, un}, 2);
    /* both copies inlined, so that the assumptions reach the loads: the body
     * at once (into the entry and into w), w by the inliner, after SROA has
     * made its pointers its parameters again (inlined with them still in
     * memory, LLVM cannot tell which parameter an access is based on) */
    unsigned inl = LLVMGetEnumAttributeKindForName("alwaysinline", 12);
    unsigned hint = LLVMGetEnumAttributeKindForName("inlinehint", 10);
    LLVMAddAttributeAtIndex(body, LLVMAttributeFunctionIndex,
                            LLVMCreateEnumAttribute(k->ctx, inl, 0));
    LLVMAddAttributeAtIndex(w, LLVMAttributeFunctionIndex,
                            LLVMCreateEnumAttribute(k->ctx, hint, 0));
    return st;
}

/*
 * <name>(i64 *desc, i32 *status): one thread per outer index, grid-stride.
 * desc (cugulaunch.c writes it): n, nd, shape[nd], base[A], lstride[A][nd]
 * (bytes, 0 where broadcast), then the body's dims (1 + ndimnames) and
 * steps (A outer steps, then the core strides), flags (bit 0: the written
 * arguments share no memory with any other).  Outer index i is
 * decomposed over shape (the last dimension fastest); argument k is at
 * base[k] + sum(index[d] * lstride[k][d]); the body runs that one outer
 * iteration.  A nonzero status (an index out of bounds) is stored in
 * *status when status is not null.
 */
LLVMValueRef
ptx_build_gufunc_entry(LLVMModuleRef mod, LLVMValueRef body, int nargs, const int *ndims,
                       int ndimnames, int aligned, const char *name)
{
    Kb k;
    kb_init(&k, mod, 1);
    LLVMTypeRef params[2] = {k.ptr, k.ptr};
    LLVMValueRef f =
        LLVMAddFunction(mod, name, LLVMFunctionType(LLVMVoidTypeInContext(k.ctx), params, 2, 0));
    LLVMValueRef desc = LLVMGetParam(f, 0), status = LLVMGetParam(f, 1);
    LLVMSetValueName2(desc, "desc", 4);
    LLVMSetValueName2(status, "status", 6);
    Loop l;
    loop_open(&k, &l, f, NULL);
    LLVMValueRef n = load_i64(&k, desc, i64c(&k, 0), "n");
    LLVMValueRef nd = load_i64(&k, desc, i64c(&k, 1), "nd");
    l.n = n;
    LLVMValueRef shape =
        LLVMBuildInBoundsGEP2(k.b, k.i64, desc, (LLVMValueRef[]){i64c(&k, 2)}, 1, "shape");
    LLVMValueRef base = LLVMBuildInBoundsGEP2(k.b, k.i64, shape, &nd, 1, "base");
    LLVMValueRef lstride =
        LLVMBuildInBoundsGEP2(k.b, k.i64, base, (LLVMValueRef[]){i64c(&k, nargs)}, 1, "lstride");
    LLVMValueRef an = LLVMBuildMul(k.b, nd, i64c(&k, nargs), "a.nd");
    LLVMValueRef dims = LLVMBuildInBoundsGEP2(k.b, k.i64, lstride, &an, 1, "dims");
    LLVMValueRef steps = LLVMBuildInBoundsGEP2(
        k.b, k.i64, dims, (LLVMValueRef[]){i64c(&k, 1 + ndimnames)}, 1, "steps");
    int words = nargs; /* steps' words: A outer steps, then the core strides */
    for (int a = 0; a < nargs; a++) {
        words += ndims[a];
    }
    LLVMValueRef flags = load_i64(&k, steps, i64c(&k, words), "flags");
    LLVMValueRef args = LLVMBuildAlloca(k.b, LLVMArrayType(k.ptr, (unsigned)nargs), "args");
    loop_start(&k, &l);

    /* dec: d from nd down to 1, rem = i, off[k] = 0 */
    LLVMValueRef bits0 = i64c(&k, 0);
    int cores = 0;
    for (int a = 0; a < nargs; a++) {
        if (ndims[a] > 0) {
            bits0 = LLVMBuildOr(k.b, bits0, load_i64(&k, base, i64c(&k, a), ""), "");
            cores++;
        }
    }
    LLVMBasicBlockRef pre = LLVMGetInsertBlock(k.b);
    LLVMBasicBlockRef head = LLVMAppendBasicBlockInContext(k.ctx, f, "dec.head");
    LLVMBasicBlockRef step = LLVMAppendBasicBlockInContext(k.ctx, f, "dec.dim");
    LLVMBasicBlockRef call = LLVMAppendBasicBlockInContext(k.ctx, f, "dec.done");
    LLVMBuildBr(k.b, head);
    LLVMPositionBuilderAtEnd(k.b, head);
    LLVMValueRef d = LLVMBuildPhi(k.b, k.i64, "d");
    LLVMValueRef rem = LLVMBuildPhi(k.b, k.i64, "rem");
    LLVMValueRef off[TS_MAXARGS];
    for (int a = 0; a < nargs; a++) {
        off[a] = LLVMBuildPhi(k.b, k.i64, "off");
        LLVMValueRef zero = i64c(&k, 0);
        LLVMAddIncoming(off[a], &zero, &pre, 1);
    }
    /* the bits of the base pointers and loop strides of the arguments with
     * core dimensions: the same in every thread (see "aligned" below) */
    LLVMValueRef bits = LLVMBuildPhi(k.b, k.i64, "bits");
    LLVMAddIncoming(d, &nd, &pre, 1);
    LLVMAddIncoming(rem, &l.i, &pre, 1);
    LLVMBuildCondBr(k.b, LLVMBuildICmp(k.b, LLVMIntEQ, d, i64c(&k, 0), "dec.end"), call, step);

    LLVMPositionBuilderAtEnd(k.b, step);
    LLVMValueRef dm = LLVMBuildSub(k.b, d, i64c(&k, 1), "d.next");
    LLVMValueRef size = load_i64(&k, shape, dm, "size");
    LLVMValueRef q = LLVMBuildUDiv(k.b, rem, size, "q");
    LLVMValueRef r = LLVMBuildSub(k.b, rem, LLVMBuildMul(k.b, q, size, ""), "r");
    LLVMValueRef bits_next = bits;
    for (int a = 0; a < nargs; a++) {
        LLVMValueRef at = LLVMBuildAdd(k.b, LLVMBuildMul(k.b, i64c(&k, a), nd, ""), dm, "");
        LLVMValueRef st = load_i64(&k, lstride, at, "lst");
        LLVMValueRef next = LLVMBuildAdd(k.b, off[a], LLVMBuildMul(k.b, r, st, ""), "off.next");
        LLVMAddIncoming(off[a], &next, &step, 1);
        if (ndims[a] > 0) {
            bits_next = LLVMBuildOr(k.b, bits_next, st, "");
        }
    }
    LLVMAddIncoming(bits, &bits0, &pre, 1);
    LLVMAddIncoming(bits, &bits_next, &step, 1);
    LLVMAddIncoming(d, &dm, &step, 1);
    LLVMAddIncoming(rem, &q, &step, 1);
    LLVMBuildBr(k.b, head);

    LLVMPositionBuilderAtEnd(k.b, call);
    LLVMTypeRef aty = LLVMArrayType(k.ptr, (unsigned)nargs);
    LLVMValueRef p[TS_MAXARGS];
    for (int a = 0; a < nargs; a++) {
        LLVMValueRef at =
            LLVMBuildAdd(k.b, load_i64(&k, base, i64c(&k, a), "arg.base"), off[a], "");
        /* device memory: made a global pointer first, so that the loads and
         * stores through it are ld.global/st.global, not generic ones (a
         * pointer read from memory has no address space LLVM can infer) */
        LLVMValueRef g =
            LLVMBuildIntToPtr(k.b, at, LLVMPointerTypeInContext(k.ctx, 1), "arg.global");
        p[a] = LLVMBuildAddrSpaceCast(k.b, g, k.ptr, "arg");
        LLVMValueRef idx[2] = {i64c(&k, 0), i64c(&k, a)};
        LLVMBuildStore(k.b, p[a], LLVMBuildInBoundsGEP2(k.b, aty, args, idx, 2, ""));
    }
    LLVMValueRef bargs[5] = {args, dims, steps, i64c(&k, 0), i64c(&k, 1)};
    LLVMValueRef st;
    if (cores == 0 || !aligned) {
        st = LLVMBuildCall2(k.b, LLVMGlobalGetValueType(body), body, bargs, 5, "st");
    } else {
        st = aligned_or_not(&k, f, body, bargs, p, nargs, ndims, bits, flags, name);
    }
    LLVMBasicBlockRef bad = LLVMAppendBasicBlockInContext(k.ctx, f, "status.set");
    LLVMBasicBlockRef next = LLVMAppendBasicBlockInContext(k.ctx, f, "next");
    LLVMValueRef failed =
        LLVMBuildAnd(k.b, LLVMBuildICmp(k.b, LLVMIntNE, st, LLVMConstInt(k.i32, 0, 0), ""),
                     LLVMBuildIsNotNull(k.b, status, ""), "failed");
    LLVMBuildCondBr(k.b, failed, bad, next);
    LLVMPositionBuilderAtEnd(k.b, bad);
    LLVMBuildStore(k.b, st, status);
    LLVMBuildBr(k.b, next);
    LLVMPositionBuilderAtEnd(k.b, next);
    loop_close(&k, &l);
    LLVMDisposeBuilder(k.b);
    return f;
}
