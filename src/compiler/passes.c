/*
 * passes.c - the host pass pipeline: what turns a verified module into an
 * object file.
 *
 * In order: the optimisation pipeline (kernel_pipeline, and the unroller
 * where it pays), the IR kept as text for inspect_llvm and the cache, the
 * rewrites that code generation needs and optimisation must not see
 * (prepare_codegen: fast code generation, then the quiet-compare rewrite,
 * both in prepare.c), and code generation by the host target machine
 * (jit.c).  Quick code (code.c) takes a shorter pipeline to the same
 * object file.  Sits between code.c above and jit.c below.
 */
#include "compiler/jit.h"
#include "compiler/outline.h"
#include "compiler/passrun.h"

#include <llvm/Config/llvm-config.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <llvm-c/IRReader.h>

/* ---- optimisation ---- */

/*
 * The optimisation pipeline.  A kernel module is small and regular: one
 * always-inline kernel, the loop wrapper and its contiguous loop.  What it
 * needs is the kernel inlined, promoted to registers and simplified, the
 * loops put in canonical form, the math calls mapped to libmvec and the
 * contiguous loop vectorized.  This does exactly that; LLVM's default<O3>
 * gives the same machine code for these modules (checked with the
 * benchmarks) at five times the optimisation time (13 ms against 2.6 ms
 * here), most of it in the CGSCC inliner and repeated simplification.
 * Gufunc kernels that carry a value through memory (out[i] = f(out[i - 1]),
 * an exponential moving average) need two passes more: correlated-propagation
 * proves the index in bounds (i - 1 >= 0 from the loop's start), which takes
 * the bounds check out of the loop, and loop-load-elim then forwards the
 * value stored in one iteration to the next instead of reloading it (the
 * moving average ran 1.9x faster, about 1 ms more compile time).  After
 * inlining, a kernel reads a[i] twice where its source writes a[i] twice
 * (`if not np.isnan(a[i]): x = a[i]`): early-cse<memssa> merges those loads
 * across the blocks between them, so the branch becomes a select (a backward
 * fill ran 1.4x faster).  LICM runs again once indvars and
 * correlated-propagation have taken the bounds checks out of the loops:
 * before that, a load of a loop-invariant element (mu[i] in a covariance's
 * innermost loop) comes after a check that may leave the loop, so it is not
 * sure to execute and cannot be hoisted (the covariance kernel ran 1.26x
 * faster).  A last LICM takes the vectorizer's runtime checks of an inner
 * loop (whether two arrays overlap, whether a stride is 1) out of the loop
 * around it, where they do not change: a gufunc summing rows of 8 into its
 * output (`for row in a: out += row`) tested them once per row, and ran
 * 1.1x faster without.
 */
/*
 * InstCombine named in a textual pipeline checks, in LLVM 18+, that one
 * iteration reached a fixed point, and LLVM calls exit() when it did not
 * (seen with `not a or b` on int8); default<O3> turns that check off, and
 * so must we: a kernel must never take the interpreter down.
 */
#if LLVM_VERSION_MAJOR >= 18
#define INSTCOMBINE "instcombine<no-verify-fixpoint>"
#else
#define INSTCOMBINE "instcombine"
#endif

static const char kernel_pipeline[] =
    "always-inline,"
    "function(sroa,early-cse," INSTCOMBINE ",simplifycfg,"
    "loop-mssa(licm),loop(loop-rotate),loop-simplify,lcssa,loop(indvars),"
    "correlated-propagation,early-cse<memssa>," INSTCOMBINE
    ",simplifycfg,loop(indvars),loop-mssa(licm),loop-load-elim,"
    "inject-tli-mappings,loop-vectorize," INSTCOMBINE ",simplifycfg,loop-mssa(licm))";

/*
 * Unrolling, for the loops the vectorizer left scalar only.  A loop that
 * carries a value from one iteration to the next (a backward fill's last
 * value, the in-order sum of a moving mean's window) is not vectorized, and
 * then its compare, increment and branch cost as much as its work.  Numba's
 * default<O3> unrolls every loop it can (8x for those), which is also what
 * makes its code slow to compile: loop-unroll<O3> over every loop made our
 * optimised gufunc code 1.7x slower to make (median 25 -> 43 ms a signature,
 * the 39 realistic kernels).  So the unroller runs only where it pays.  A
 * loop that is one block (a rotated innermost loop; by then the branches of
 * its body are selects), whose only loop metadata is ours asking for one
 * vector a step (the vectorizer marks the loops it made, and
 * vectorize/loops.c the ufunc loops it emits), and whose body is small,
 * gets an unroll count (8, 4 or 2) that brings it to at most 64
 * instructions, phis and address arithmetic not counted.  loop-unroll then
 * unrolls those loops and no other (no heuristic partial, runtime or full
 * unrolling).  The moving mean ran 1.1x faster (0.91 -> 1.02 of Numba's
 * speed); making optimised gufunc code took 13% longer (the same 39).
 *
 * The vector bodies the vectorizer made (one vector a step: see above) are
 * unrolled too, at most 4x, ahead of a remainder loop of one vector a step,
 * so that a short row still runs in vectors: Numba's interleaved loops do
 * four vectors a step but need 16 elements before they run at all.  Passes
 * over rows that stay in cache gain most (a copy, then two in-place
 * updates, then a copy out, rows of 256: 1.5x), rows of 8 lose a little
 * (a row maximum 0.42 -> 0.48 ms, still 2x Numba); optimised gufunc code
 * takes 30% longer to make (median 20 -> 26 ms, the 39 kernels).
 */
enum { UNROLL_BODY = 64, UNROLL_SCALAR = 8, UNROLL_VECTOR = 4 };

/* The properties of loop id `id` (NULL: none) into props, how many; -1 when
 * one of them is other than em_one_vector_a_step's interleave count (the
 * vectorizer's marks, loops.c's, parallel accesses: loops left alone). */
static int
interleave_only(LLVMValueRef id, LLVMMetadataRef *props, int max)
{
    if (id == NULL) {
        return 0;
    }
    static const char keep[] = "llvm.loop.interleave.count";
    unsigned n = LLVMGetMDNodeNumOperands(id);
    if (n > (unsigned)max + 1) {
        return -1;
    }
    LLVMValueRef ops[8];
    LLVMGetMDNodeOperands(id, ops);
    for (unsigned i = 1; i < n; i++) { /* ops[0] is the id itself */
        unsigned len = 0;
        const char *key = NULL;
        if (ops[i] != NULL && LLVMIsAMDNode(ops[i]) && LLVMGetMDNodeNumOperands(ops[i]) == 2) {
            LLVMValueRef kv[2];
            LLVMGetMDNodeOperands(ops[i], kv);
            key = kv[0] != NULL ? LLVMGetMDString(kv[0], &len) : NULL;
        }
        if (key == NULL || len != sizeof(keep) - 1 || memcmp(key, keep, len) != 0) {
            return -1;
        }
        props[i - 1] = LLVMValueAsMetadata(ops[i]);
    }
    return (int)n - 1;
}

/* Whether loop id `id` is exactly the vectorizer's marks on a loop it made
 * (isvectorized, runtime unrolling disabled) and block bb computes in
 * vectors (the vector body, not the scalar remainder, which carries the
 * same marks); *vectorized: the isvectorized property, kept. */
static int
vector_body(LLVMValueRef id, LLVMBasicBlockRef bb, LLVMMetadataRef *vectorized)
{
    static const char isvec[] = "llvm.loop.isvectorized",
                      norun[] = "llvm.loop.unroll.runtime.disable";
    if (id == NULL || LLVMGetMDNodeNumOperands(id) != 3) {
        return 0;
    }
    LLVMValueRef ops[3];
    LLVMGetMDNodeOperands(id, ops);
    int have = 0;
    for (int i = 1; i < 3; i++) {
        unsigned len = 0,
                 n = ops[i] != NULL && LLVMIsAMDNode(ops[i]) ? LLVMGetMDNodeNumOperands(ops[i]) : 0;
        LLVMValueRef kv[2] = {NULL, NULL};
        if (n == 1 || n == 2) {
            LLVMGetMDNodeOperands(ops[i], kv);
        }
        const char *key = kv[0] != NULL ? LLVMGetMDString(kv[0], &len) : NULL;
        if (key != NULL && n == 2 && len == sizeof(isvec) - 1 && memcmp(key, isvec, len) == 0) {
            *vectorized = LLVMValueAsMetadata(ops[i]);
            have |= 1;
        } else if (key != NULL && n == 1 && len == sizeof(norun) - 1
                   && memcmp(key, norun, len) == 0) {
            have |= 2;
        }
    }
    if (have != 3) {
        return 0;
    }
    for (LLVMValueRef in = LLVMGetFirstInstruction(bb); in != NULL;
         in = LLVMGetNextInstruction(in)) {
        LLVMValueRef v = LLVMGetInstructionOpcode(in) == LLVMStore ? LLVMGetOperand(in, 0) : in;
        if (LLVMGetTypeKind(LLVMTypeOf(v)) == LLVMVectorTypeKind) { /* a fill stores splats */
            return 1;
        }
    }
    return 0;
}

static int
mark_unrolled_loops(LLVMModuleRef mod)
{
    LLVMContextRef ctx = LLVMGetModuleContext(mod);
    unsigned loop_kind = LLVMGetMDKindIDInContext(ctx, "llvm.loop", 9);
    int marked = 0;
    for (LLVMValueRef f = LLVMGetFirstFunction(mod); f != NULL; f = LLVMGetNextFunction(f)) {
        for (LLVMBasicBlockRef bb = LLVMGetFirstBasicBlock(f); bb != NULL;
             bb = LLVMGetNextBasicBlock(bb)) {
            LLVMValueRef br = LLVMGetBasicBlockTerminator(bb);
            LLVMMetadataRef props[8];
            int nprops;
            if (br == NULL || LLVMGetInstructionOpcode(br) != LLVMBr
                || LLVMGetNumSuccessors(br) != 2
                || (LLVMGetSuccessor(br, 0) != bb && LLVMGetSuccessor(br, 1) != bb)) {
                continue;
            }
            int vec = vector_body(LLVMGetMetadata(br, loop_kind), bb, &props[0]);
            if (vec) {
                nprops = 1; /* isvectorized, without the ban on runtime unrolling */
            } else if ((nprops = interleave_only(LLVMGetMetadata(br, loop_kind), props, 7)) < 0) {
                continue;
            }
            int size = 0, calls = 0; /* phis and address arithmetic fold into others */
            for (LLVMValueRef in = LLVMGetFirstInstruction(bb); in != NULL;
                 in = LLVMGetNextInstruction(in)) {
                LLVMOpcode op = LLVMGetInstructionOpcode(in);
                size += op != LLVMPHI && op != LLVMGetElementPtr;
                calls |= op == LLVMCall && LLVMGetIntrinsicID(LLVMGetCalledValue(in)) == 0;
            }
            if (calls) {
                continue; /* a call (free, the runtime) outweighs the loop around it */
            }
            unsigned count = vec ? UNROLL_VECTOR : UNROLL_SCALAR;
            while (count > 1 && (int)count * size > UNROLL_BODY) {
                count /= 2;
            }
            if (count == 1) {
                continue;
            }
            props[nprops++] = cc_loop_prop(
                ctx, "llvm.loop.unroll.count",
                LLVMValueAsMetadata(LLVMConstInt(LLVMInt32TypeInContext(ctx), count, 0)));
            cc_set_loop_id(br, props, nprops);
            marked++;
        }
    }
    return marked;
}

static const char unroll_pipeline[] =
    "function(loop-unroll<O3;no-partial;no-runtime;no-upperbound;no-profile-peeling;"
    "full-unroll-max=0>," INSTCOMBINE ")";

/* A long kernel simplified (its variables in registers) before outline.cpp
 * cuts it, not yet inlined into its loop function. */
static const char outline_pipeline[] = "function(sroa,early-cse," INSTCOMBINE ",simplifycfg)";

static int
optimise(LLVMModuleRef mod)
{
    double t0 = cc_now_ns();
    LLVMErrorRef err = NULL;
    if (cc_module_size(mod) > CC_OUTLINE_ABOVE
        && (err = cc_run_passes(mod, outline_pipeline, cc_jit.tm)) == NULL) {
        cc_jit.outlined += cc_outline(mod, CC_OUTLINE_PIECE);
    }
    if (err == NULL) {
        err = cc_run_passes(mod, kernel_pipeline, cc_jit.tm);
    }
    if (err == NULL && mark_unrolled_loops(mod) > 0) {
        err = cc_run_passes(mod, unroll_pipeline, cc_jit.tm);
    }
    if (err == NULL) {
        cc_pass_select_identity(mod); /* after the last InstCombine */
    }
    cc_time_add(CC_T_OPT, cc_now_ns() - t0);
    if (err != NULL) {
        return cc_jit_error(PyExc_RuntimeError, "LLVM optimisation failed", err);
    }
    return 0;
}

/* ---- before code generation ---- */

/* What code generation needs and optimisation must not see, in this order
 * (prepare.c): the functions marked for the fast code generator made
 * optnone, then the quiet-compare rewrite. */
static void
prepare_codegen(LLVMModuleRef mod)
{
    cc_pass_fast_codegen(mod);
    cc_pass_quiet_compares(mod, cc_jit.features);
}

/* ---- assembly ---- */

/*
 * Assembly of IR text, through a fresh context: code generation rewrites
 * the module it runs on, and the JIT owns the original by then.
 */
PyObject *
cc_jit_asm_from_ir(const char *ir)
{
    PyObject *result = NULL;
    LLVMModuleRef mod = NULL;
    LLVMMemoryBufferRef out = NULL;
    char *msg = NULL;
    LLVMContextRef ctx = LLVMContextCreate();
    LLVMMemoryBufferRef buf =
        LLVMCreateMemoryBufferWithMemoryRangeCopy(ir, strlen(ir), "numbavec.ir");
    if (LLVMParseIRInContext(ctx, buf, &mod, &msg)) { /* consumes buf */
        mod = NULL;
        cc_jit_message(PyExc_RuntimeError, "cannot re-read the optimised IR", msg);
        goto error;
    }
    prepare_codegen(mod); /* as the machine code was made */
    if (LLVMTargetMachineEmitToMemoryBuffer(cc_jit.tm, mod, LLVMAssemblyFile, &msg, &out)) {
        out = NULL;
        cc_jit_message(PyExc_RuntimeError, "LLVM could not emit assembly", msg);
        goto error;
    }
    result =
        PyUnicode_FromStringAndSize(LLVMGetBufferStart(out), (Py_ssize_t)LLVMGetBufferSize(out));
error:
    if (out != NULL) {
        LLVMDisposeMemoryBuffer(out);
    }
    if (mod != NULL) {
        LLVMDisposeModule(mod);
    }
    LLVMContextDispose(ctx);
    return result;
}

static void
dump_asm(const char *module, const char *ir)
{
    PyObject *text = cc_jit_asm_from_ir(ir);
    if (text == NULL) {
        PyErr_Clear(); /* a dump is best effort */
        return;
    }
    const char *s = PyUnicode_AsUTF8AndSize(text, NULL);
    if (s != NULL) {
        cc_jit_dump("assembly", module, s);
    }
    PyErr_Clear();
    Py_DECREF(text);
}

/* ---- object code ---- */

/* Optimises m (dumps as NUMBAVEC_DUMP asks), keeps its IR text in code and
 * turns it into an object file.  Does not consume m.  verified: m was
 * verified when it was made (cc_jit_add_lazy). */
static int
compile_steps(CcCode *code, CcModule *m, LLVMMemoryBufferRef *obj, int verified)
{
    int dump = cc_dump_flags();
    if (dump & CC_DUMP_LLVM) {
        char *text = LLVMPrintModuleToString(m->mod);
        cc_jit_dump("LLVM IR before optimisation", code->name, text ? text : "(no memory)");
        LLVMDisposeMessage(text);
    }
    if ((!verified && cc_jit_verify(m->mod) < 0) || optimise(m->mod) < 0) {
        return -1;
    }
    /* Kept for inspect_llvm (and stored in cache entries); printing a loop
     * module takes microseconds.  Code generation below rewrites the
     * module, so this is the last moment to print it. */
    char *ir = LLVMPrintModuleToString(m->mod); /* strdup's: NULL without memory */
    PyMem_Free(code->ir);                       /* an earlier try's */
    code->ir = ir != NULL ? cc_jit_strdup(ir) : NULL;
    LLVMDisposeMessage(ir);
    if (code->ir == NULL) {
        return ir == NULL ? (PyErr_NoMemory(), -1) : -1;
    }
    if (dump & CC_DUMP_OPT) {
        cc_jit_dump("LLVM IR after optimisation", code->name, code->ir);
    }
    if (dump & CC_DUMP_ASM) {
        dump_asm(code->name, code->ir);
    }
    prepare_codegen(m->mod);
    if (cc_jit_emit_object(cc_jit.tm, m->mod, obj) < 0) {
        return -1;
    }
    cc_jit.compilations++;
    return 0;
}

typedef struct Compile {
    CcCode *code;
    CcModule *m;
    LLVMMemoryBufferRef *obj;
    int verified;
} Compile;

static int
compile_step(void *arg)
{
    Compile *c = arg;
    return compile_steps(c->code, c->m, c->obj, c->verified);
}

/* compile_steps under the guard: m is tainted when LLVM threw in it. */
int
cc_jit_compile_module(CcCode *code, CcModule *m, LLVMMemoryBufferRef *obj, int verified)
{
    Compile c = {code, m, obj, verified};
    *obj = NULL;
    int rc = cg_run(compile_step, &c);
    m->tainted |= rc == CG_THREW;
    return rc < 0 ? -1 : 0;
}

/* ---- quick code ---- */

/*
 * Quick code: what a lazily added module's first calls run while its
 * optimised code waits (cc_code_quick_entry).  A copy of the pending module
 * has its always-inline functions inlined, its variables put in registers
 * (SROA) and the reads of a tuple's items folded (instsimplify: instruction
 * selection of a chain of aggregates is quadratic in the tuple's length, 80
 * s for 2,000 items), and nothing more, and the fast instruction selector and
 * register allocator make its code: about a fifth of the optimised code's
 * making, for code some times slower.  Its exports are the code's names
 * with ".quick" appended, so that both may live in the one JITDylib.
 */
static const char quick_pipeline[] = "always-inline,function(sroa,instsimplify)";

/* The quick passes and code generation of work (a copy of the pending
 * module, its exports renamed). */
static int
quick_step(void *arg)
{
    Compile *c = arg;
    double t1 = cc_now_ns();
    LLVMErrorRef err = cc_run_passes(c->m->mod, quick_pipeline, cc_jit.quick_tm);
    cc_time_add(CC_T_OPT, cc_now_ns() - t1);
    if (err != NULL) {
        return cc_jit_error(PyExc_RuntimeError, "LLVM optimisation failed", err);
    }
    prepare_codegen(c->m->mod);
    return cc_jit_emit_object(cc_jit.quick_tm, c->m->mod, c->obj);
}

int
cc_jit_compile_quick(CcModule *work, LLVMMemoryBufferRef *obj)
{
    Compile c = {NULL, work, obj, 1};
    return cg_run(quick_step, &c);
}
