/*
 * jit.c - the host JIT: target machine, optimisation pipeline, ORC LLJIT.
 *
 * Last stage of the cpu pipeline: emit.c and vectorize/loops.c fill a
 * CcModule; cc_jit_add verifies it, runs the optimisation pipeline (loop
 * vectorization, math intrinsics vectorized through glibc's libmvec),
 * emits an object file with the host target machine, hands that object to
 * one process-wide LLJIT under its own ResourceTracker and resolves the
 * requested functions.  Going through an object file ourselves (rather than
 * giving ORC the IR) is what makes the compiled-code cache possible: LLVM-C
 * has no ObjectCache hook for LLJIT, so the object bytes are handed back to
 * the caller, and cc_jit_add_object links stored bytes without running any
 * LLVM pass.  A CcCode is what keeps that machine code alive; freeing it
 * removes the code from the JIT.
 *
 * Code may also be added lazily (cc_jit_add_lazy): the verified module is
 * kept, and optimised, compiled and linked at its first cc_code_entry, so
 * that a decoration costs typing and IR only and a signature never called
 * never costs machine code.
 *
 * The JIT is created on first use and never torn down: ufuncs holding code
 * may die at interpreter exit in any order, and a live JIT costs nothing.
 * Every function here runs with the GIL held (cc_code_entry takes it before
 * making code), which serialises use of the shared target machine and of
 * the context below.
 */
#include "compiler/compiler.h"
#include "compiler/guard.h"
#include "compiler/outline.h"

#include <llvm/Config/llvm-config.h>

#include <dlfcn.h>
#include <errno.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <llvm-c/Analysis.h>
#include <llvm-c/BitReader.h>
#include <llvm-c/BitWriter.h>
#include <llvm-c/Error.h>
#include <llvm-c/IRReader.h>
#include <llvm-c/LLJIT.h>
#include <llvm-c/Support.h>
#include <llvm-c/Target.h>
#include <llvm-c/Transforms/PassBuilder.h>

struct CcCode {
    LLVMOrcResourceTrackerRef tracker; /* owns the machine code in the JIT */
    char *name;                        /* the module's name (PyMem) */
    char *ir;                          /* optimised IR (PyMem) */
    char *key;                         /* keyed code: its key (PyMem), else NULL */
    Py_ssize_t refs;                   /* keyed code is shared: see keyed_find */
    CcCode *next;                      /* in jit.keyed */
    int n;                             /* its entries */
    void *addrs[CC_MAXENTRIES];        /* and their addresses, once made */
    atomic_int made;                   /* 1: addrs are valid (release/acquire) */
    /* code generation left for the first call (cc_jit_add_lazy) */
    CcModule pending;    /* the verified module, until made (a failure keeps it) */
    int link_broken;     /* LLVM threw while linking it: not tried again */
    char (*unique)[128]; /* the entries' exported names (PyMem) */
    CcStoreFn store;     /* called with the object file once made, or NULL */
    PyObject *store_ctx; /* owned: its first argument */
    /* quick code (cc_code_quick_entry): a copy of the pending module made
     * without optimisation, kept until code is freed (a thread may still be
     * running it when the optimised code is made) */
    LLVMOrcResourceTrackerRef quick_tracker;
    void *quick[CC_MAXENTRIES];
    atomic_int quick_made; /* 1: quick is valid (release/acquire) */
    int quick_broken;      /* LLVM threw while linking the quick code */
};

/*
 * The process-wide JIT state, in one place.  `ready` is set once everything
 * below it exists; a failed initialisation releases what it made and may
 * be retried.  `options_parsed` is separate because LLVM's command line can
 * be parsed only once per process.
 */
static struct JitContext {
    int ready;
    int options_parsed;
    int libmvec;                      /* libmvec.so.1 loaded: vector math on */
    Py_ssize_t live_codes;            /* CcCode objects not yet freed */
    Py_ssize_t compilations;          /* modules optimised and code-generated */
    Py_ssize_t quick_compilations;    /* quick code made (cc_code_quick_entry) */
    Py_ssize_t pending;               /* modules whose code waits for a first call */
    Py_ssize_t object_loads;          /* stored objects linked (cache hits) */
    Py_ssize_t outlined;              /* functions outline.cpp cut long kernels into */
    unsigned long long next_id;       /* makes exported names unique */
    CcCode *keyed;                    /* live keyed code, to share (list) */
    char *cpu;                        /* LLVMGetHostCPUName */
    char *features;                   /* LLVMGetHostCPUFeatures */
    char *triple;                     /* LLVMGetDefaultTargetTriple */
    LLVMTargetMachineRef tm;          /* optimisation (TTI) and assembly */
    LLVMTargetMachineRef quick_tm;    /* quick code: no optimisation */
    LLVMPassBuilderOptionsRef passes; /* for LLVMRunPasses (kernel_pipeline) */
    LLVMOrcLLJITRef lljit;
    LLVMOrcJITDylibRef main; /* borrowed from lljit */
    char session_error[512]; /* last error ORC reported, or "" */
} jit;

/* ---- errors ---- */

/* Consumes err; raises exc "what: <LLVM's message>".  Returns -1. */
static int
raise_llvm_error(PyObject *exc, const char *what, LLVMErrorRef err)
{
    char *msg = LLVMGetErrorMessage(err);
    if (strstr(msg, strerror(ENOMEM)) != NULL || strstr(jit.session_error, strerror(ENOMEM))) {
        exc = PyExc_MemoryError; /* ORC could not map memory for the code */
    }
    if (jit.session_error[0] != '\0') {
        PyErr_Format(exc, "%s: %s (%s)", what, msg, jit.session_error);
    } else {
        PyErr_Format(exc, "%s: %s", what, msg);
    }
    LLVMDisposeErrorMessage(msg);
    return -1;
}

/* Raises exc with a message LLVM allocated, then frees it.  Returns -1. */
static int
raise_llvm_message(PyObject *exc, const char *what, char *msg)
{
    PyErr_Format(exc, "%s: %s", what, msg != NULL ? msg : "unknown error");
    LLVMDisposeMessage(msg);
    return -1;
}

/*
 * ORC reports materialization failures (e.g. an unresolved symbol) to the
 * session while the lookup itself only says "failed to materialize"; keep
 * the detailed message so the lookup's exception can quote it.
 */
static void
session_error_reporter(void *ctx, LLVMErrorRef err)
{
    char *msg = LLVMGetErrorMessage(err);
    snprintf(jit.session_error, sizeof(jit.session_error), "%s", msg);
    LLVMDisposeErrorMessage(msg);
}

/* ---- NUMBAVEC_DUMP ---- */

static void
dump_text(const char *what, const char *module, const char *text)
{
    fprintf(stderr, "=== numbavec: %s of module '%s' ===\n%s\n", what, module, text);
    fflush(stderr);
}

/* ---- initialisation ---- */

/*
 * Loads glibc's vector math library into the global namespace so that the
 * process symbol generator resolves the `_ZGV...` functions the vectorizer
 * calls, and tells LLVM (once per process) that it may call them.  Without
 * libmvec everything still works, only math calls stay scalar.
 */
static void
enable_libmvec(void)
{
#if defined(__x86_64__)
    if (jit.options_parsed) {
        return;
    }
    jit.options_parsed = 1;
    if (dlopen("libmvec.so.1", RTLD_NOW | RTLD_GLOBAL) == NULL) {
        return;
    }
    /* The value is spelled "LIBMVEC-X86" from LLVM 17 through 20. */
    const char *argv[] = {"numbavec", "-vector-library=LIBMVEC-X86"};
    LLVMParseCommandLineOptions(2, argv, NULL);
    jit.libmvec = 1;
#endif
}

static int
create_target_machine(void)
{
    LLVMTargetRef target = NULL;
    char *msg = NULL;
    jit.triple = LLVMGetDefaultTargetTriple();
    jit.cpu = LLVMGetHostCPUName();
    jit.features = LLVMGetHostCPUFeatures();
    if (jit.triple == NULL || jit.cpu == NULL || jit.features == NULL) { /* strdup's */
        PyErr_NoMemory();
        return -1;
    }
    if (LLVMGetTargetFromTriple(jit.triple, &target, &msg)) {
        return raise_llvm_message(PyExc_RuntimeError, "no LLVM target for the host", msg);
    }
    jit.tm = LLVMCreateTargetMachine(target, jit.triple, jit.cpu, jit.features,
                                     LLVMCodeGenLevelAggressive, LLVMRelocDefault,
                                     LLVMCodeModelJITDefault);
    jit.quick_tm =
        LLVMCreateTargetMachine(target, jit.triple, jit.cpu, jit.features, LLVMCodeGenLevelNone,
                                LLVMRelocDefault, LLVMCodeModelJITDefault);
    if (jit.tm == NULL || jit.quick_tm == NULL) {
        PyErr_SetString(PyExc_RuntimeError, "LLVM could not create the host target machine");
        return -1;
    }
    /* LLVMRunPasses needs one; its tuning options apply to default<On>
     * pipelines only, and kernel_pipeline names its passes itself */
    jit.passes = LLVMCreatePassBuilderOptions();
    return 0;
}

/* The runtime functions kernels call (runtime.c) by their names, at this
 * process's addresses: the extension's symbols are hidden from dlsym, and
 * code loaded from the cache links to them here too. */
static int
define_runtime(void)
{
    LLVMOrcCSymbolMapPair pairs[32];
    size_t n = 0;
    for (const CcRuntimeSymbol *r = cc_runtime_symbols; r->name != NULL && n < 32; r++, n++) {
        pairs[n].Name = LLVMOrcLLJITMangleAndIntern(jit.lljit, r->name);
        pairs[n].Sym.Address = (LLVMOrcJITTargetAddress)(uintptr_t)r->address;
        pairs[n].Sym.Flags.GenericFlags =
            LLVMJITSymbolGenericFlagsExported | LLVMJITSymbolGenericFlagsCallable;
        pairs[n].Sym.Flags.TargetFlags = 0;
    }
    LLVMErrorRef err = LLVMOrcJITDylibDefine(jit.main, LLVMOrcAbsoluteSymbols(pairs, n));
    if (err != NULL) {
        return raise_llvm_error(PyExc_RuntimeError, "cannot define numbavec's runtime", err);
    }
    return cc_runtime_init();
}

static int
create_lljit(void)
{
    LLVMOrcJITTargetMachineBuilderRef jtmb = NULL;
    LLVMOrcDefinitionGeneratorRef gen = NULL;
    LLVMErrorRef err = LLVMOrcJITTargetMachineBuilderDetectHost(&jtmb);
    if (err != NULL) {
        return raise_llvm_error(PyExc_RuntimeError, "LLVM cannot target the host", err);
    }
    LLVMOrcLLJITBuilderRef builder = LLVMOrcCreateLLJITBuilder();
    LLVMOrcLLJITBuilderSetJITTargetMachineBuilder(builder, jtmb); /* consumed */
    err = LLVMOrcCreateLLJIT(&jit.lljit, builder);                /* consumed */
    if (err != NULL) {
        jit.lljit = NULL;
        return raise_llvm_error(PyExc_RuntimeError, "cannot create the LLVM JIT", err);
    }
    LLVMOrcExecutionSessionSetErrorReporter(LLVMOrcLLJITGetExecutionSession(jit.lljit),
                                            session_error_reporter, NULL);
    jit.main = LLVMOrcLLJITGetMainJITDylib(jit.lljit);
    err = LLVMOrcCreateDynamicLibrarySearchGeneratorForProcess(
        &gen, LLVMOrcLLJITGetGlobalPrefix(jit.lljit), NULL, NULL);
    if (err != NULL) {
        return raise_llvm_error(PyExc_RuntimeError, "cannot search the process's symbols", err);
    }
    LLVMOrcJITDylibAddGenerator(jit.main, gen); /* consumed */
    return define_runtime();
}

/* Releases what a failed cc_jit_init made, so that it can be retried. */
static void
jit_reset(void)
{
    if (jit.lljit != NULL) {
        LLVMErrorRef err = LLVMOrcDisposeLLJIT(jit.lljit);
        if (err != NULL) {
            LLVMConsumeError(err);
        }
    }
    if (jit.passes != NULL) {
        LLVMDisposePassBuilderOptions(jit.passes);
    }
    if (jit.tm != NULL) {
        LLVMDisposeTargetMachine(jit.tm);
    }
    if (jit.quick_tm != NULL) {
        LLVMDisposeTargetMachine(jit.quick_tm);
    }
    LLVMDisposeMessage(jit.cpu);
    LLVMDisposeMessage(jit.features);
    LLVMDisposeMessage(jit.triple);
    jit.lljit = NULL;
    jit.main = NULL;
    jit.passes = NULL;
    jit.tm = jit.quick_tm = NULL;
    jit.cpu = jit.features = jit.triple = NULL;
}

static int
init_step(void *unused)
{
    enable_libmvec();
    return create_target_machine() < 0 || create_lljit() < 0 ? -1 : 0;
}

int
cc_jit_init(void)
{
    if (jit.ready) {
        return 0;
    }
    cg_init();
    if (LLVMInitializeNativeTarget() || LLVMInitializeNativeAsmPrinter()
        || LLVMInitializeNativeAsmParser()) {
        PyErr_SetString(PyExc_RuntimeError, "LLVM has no native target for this machine");
        return -1;
    }
    int rc = cg_run(init_step, NULL);
    if (rc == CG_THREW) { /* what LLVM made is left, not freed (guard.h) */
        jit.cpu = jit.features = jit.triple = NULL;
        jit.tm = jit.quick_tm = NULL;
        jit.passes = NULL;
        jit.lljit = NULL;
    }
    if (rc < 0) {
        jit_reset();
        return -1;
    }
    jit.ready = 1;
    return 0;
}

const char *
cc_host_cpu_name(void)
{
    return jit.cpu;
}

const char *
cc_host_cpu_features(void)
{
    return jit.features;
}

int
cc_jit_has_libmvec(void)
{
    return jit.libmvec;
}

Py_ssize_t
cc_jit_live_codes(void)
{
    return jit.live_codes;
}

Py_ssize_t
cc_jit_compilations(void)
{
    return jit.compilations;
}

Py_ssize_t
cc_jit_pending(void)
{
    return jit.pending;
}

Py_ssize_t
cc_jit_object_loads(void)
{
    return jit.object_loads;
}

Py_ssize_t
cc_jit_outlined(void)
{
    return jit.outlined;
}

/* ---- modules ---- */

typedef struct NewModule {
    CcModule *m;
    const char *name;
} NewModule;

static int
module_step(void *arg)
{
    CcModule *m = ((NewModule *)arg)->m;
    m->tsctx = LLVMOrcCreateNewThreadSafeContext();
    m->ctx = LLVMOrcThreadSafeContextGetContext(m->tsctx);
    m->mod = LLVMModuleCreateWithNameInContext(((NewModule *)arg)->name, m->ctx);
    LLVMSetTarget(m->mod, LLVMOrcLLJITGetTripleString(jit.lljit));
    /* The JIT refuses modules whose layout differs from its own. */
    LLVMSetDataLayout(m->mod, LLVMOrcLLJITGetDataLayoutStr(jit.lljit));
    return 0;
}

int
cc_module_new(CcModule *m, const char *name)
{
    memset(m, 0, sizeof(*m));
    if (cc_jit_init() < 0) {
        return -1;
    }
    NewModule a = {m, name};
    if (cg_run(module_step, &a) == CG_THREW) {
        m->tainted = 1;
        cc_module_dispose(m);
        return -1;
    }
    return 0;
}

void
cc_module_dispose(CcModule *m)
{
    if (m->tainted) { /* LLVM threw in its context: left as it is (guard.h) */
        memset(m, 0, sizeof(*m));
        return;
    }
    if (m->mod != NULL) {
        LLVMDisposeModule(m->mod);
    }
    if (m->tsctx != NULL) {
        LLVMOrcDisposeThreadSafeContext(m->tsctx);
    } else if (m->ctx != NULL) {
        LLVMContextDispose(m->ctx); /* a context of its own (PTX modules) */
    }
    memset(m, 0, sizeof(*m));
}

/* ---- compilation ---- */

static int
verify(LLVMModuleRef mod)
{
    char *msg = NULL;
    if (LLVMVerifyModule(mod, LLVMReturnStatusAction, &msg)) {
        return raise_llvm_message(PyExc_RuntimeError, "invalid LLVM IR", msg);
    }
    LLVMDisposeMessage(msg);
    return 0;
}

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
        && (err = LLVMRunPasses(mod, outline_pipeline, jit.tm, jit.passes)) == NULL) {
        jit.outlined += cc_outline(mod, CC_OUTLINE_PIECE);
    }
    if (err == NULL) {
        err = LLVMRunPasses(mod, kernel_pipeline, jit.tm, jit.passes);
    }
    if (err == NULL && mark_unrolled_loops(mod) > 0) {
        err = LLVMRunPasses(mod, unroll_pipeline, jit.tm, jit.passes);
    }
    cc_time_add(CC_T_OPT, cc_now_ns() - t0);
    if (err != NULL) {
        return raise_llvm_error(PyExc_RuntimeError, "LLVM optimisation failed", err);
    }
    return 0;
}

/*
 * Assembly of IR text, through a fresh context: code generation rewrites
 * the module it runs on, and the JIT owns the original by then.
 */
static PyObject *
asm_from_ir(const char *ir)
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
        raise_llvm_message(PyExc_RuntimeError, "cannot re-read the optimised IR", msg);
        goto error;
    }
    cc_prepare_codegen(mod, jit.features); /* as the machine code was made */
    if (LLVMTargetMachineEmitToMemoryBuffer(jit.tm, mod, LLVMAssemblyFile, &msg, &out)) {
        out = NULL;
        raise_llvm_message(PyExc_RuntimeError, "LLVM could not emit assembly", msg);
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
    PyObject *text = asm_from_ir(ir);
    if (text == NULL) {
        PyErr_Clear(); /* a dump is best effort */
        return;
    }
    const char *s = PyUnicode_AsUTF8AndSize(text, NULL);
    if (s != NULL) {
        dump_text("assembly", module, s);
    }
    PyErr_Clear();
    Py_DECREF(text);
}

static CcCode *
code_new(const char *name, size_t len)
{
    CcCode *code = PyMem_Calloc(1, sizeof(*code));
    if (code == NULL || (code->name = PyMem_Malloc(len + 1)) == NULL) {
        PyMem_Free(code);
        PyErr_NoMemory();
        return NULL;
    }
    memcpy(code->name, name, len);
    code->name[len] = '\0';
    code->refs = 1;
    jit.live_codes++;
    return code;
}

static char *
pymem_strdup(const char *s)
{
    size_t len = strlen(s) + 1;
    char *copy = PyMem_Malloc(len);
    if (copy == NULL) {
        PyErr_NoMemory();
        return NULL;
    }
    return memcpy(copy, s, len);
}

/*
 * Every module lands in the JIT's main JITDylib, where external names must
 * be unique; callers only keep them unique within a module, so each
 * requested function gets a suffix: ".<key>" for keyed (cacheable) code,
 * whose names must be the same in every process that loads it, else
 * ".<id>" with a process-wide id.  Returns the n names in a new PyMem
 * array, or NULL with an exception.
 */
static char (*unique_names(const char *const *names, int n, const char *key))[128]
{
    char(*unique)[128] = PyMem_Malloc(sizeof(*unique) * (size_t)(n > 0 ? n : 1));
    if (unique == NULL) {
        PyErr_NoMemory();
        return NULL;
    }
    unsigned long long id = jit.next_id++;
    for (int i = 0; i < n; i++) {
        int len = key != NULL ? snprintf(unique[i], sizeof(unique[i]), "%s.%s", names[i], key)
                              : snprintf(unique[i], sizeof(unique[i]), "%s.%llu", names[i], id);
        if (len < 0 || len >= (int)sizeof(unique[i])) {
            PyErr_Format(PyExc_ValueError, "function name too long: '%s'", names[i]);
            PyMem_Free(unique);
            return NULL;
        }
    }
    return unique;
}

typedef struct Rename {
    LLVMModuleRef mod;
    const char *const *names;
    int n;
    char (*unique)[128];
    int verify; /* and verify the module */
} Rename;

static int
rename_step(void *arg)
{
    Rename *r = arg;
    for (int i = 0; i < r->n; i++) {
        LLVMValueRef fn = LLVMGetNamedFunction(r->mod, r->names[i]);
        if (fn == NULL) {
            PyErr_Format(PyExc_RuntimeError, "the module defines no function '%s'", r->names[i]);
            return -1;
        }
        LLVMSetValueName2(fn, r->unique[i], strlen(r->unique[i]));
    }
    return r->verify ? verify(r->mod) : 0;
}

/* Renames m's names[i] unique[i] (and verifies m), m tainted if LLVM threw. */
static int
rename_exports(CcModule *m, const char *const *names, int n, char (*unique)[128], int check)
{
    Rename r = {m->mod, names, n, unique, check};
    int rc = cg_run(rename_step, &r);
    m->tainted |= rc == CG_THREW;
    return rc < 0 ? -1 : 0;
}

/* ---- keyed code: one copy per process ---- */

/*
 * Code added under a key (the cache key of a signature) has the same
 * exported names in every process, so adding it twice to the one JITDylib
 * would define them twice: the same function decorated twice, or a module
 * reloaded.  Live keyed code is therefore shared, with a reference count.
 */
static CcCode *
keyed_find(const char *key)
{
    for (CcCode *c = jit.keyed; c != NULL; c = c->next) {
        if (strcmp(c->key, key) == 0) {
            c->refs++;
            return c;
        }
    }
    return NULL;
}

static int
keyed_register(CcCode *code, const char *key)
{
    if ((code->key = pymem_strdup(key)) == NULL) {
        return -1;
    }
    code->next = jit.keyed;
    jit.keyed = code;
    return 0;
}

static void
keyed_unlink(CcCode *code)
{
    for (CcCode **p = &jit.keyed; *p != NULL; p = &(*p)->next) {
        if (*p == code) {
            *p = code->next;
            return;
        }
    }
}

/* ---- object code ---- */

/* Code generation of the module into an in-memory object file, by tm
 * (jit.tm, or jit.quick_tm for quick code). */
static int
emit_object(LLVMTargetMachineRef tm, LLVMModuleRef mod, LLVMMemoryBufferRef *out)
{
    char *msg = NULL;
    double t0 = cc_now_ns();
    int failed = LLVMTargetMachineEmitToMemoryBuffer(tm, mod, LLVMObjectFile, &msg, out);
    cc_time_add(CC_T_CODEGEN, cc_now_ns() - t0);
    if (failed) {
        *out = NULL;
        return raise_llvm_message(PyExc_RuntimeError, "LLVM could not emit machine code", msg);
    }
    return 0;
}

/* ORC's linking cannot be stopped halfway (guard.h): it starts only with
 * this much address space free, and four times the object's size. */
enum { LINK_HEADROOM = 8 << 20 };

typedef struct Link {
    LLVMOrcResourceTrackerRef *tracker;
    LLVMMemoryBufferRef obj; /* consumed */
    char (*names)[128];
    void **addrs;
    int n;
} Link;

static int
link_step(void *arg)
{
    Link *l = arg;
    *l->tracker = LLVMOrcJITDylibCreateResourceTracker(jit.main);
    LLVMErrorRef err = LLVMOrcLLJITAddObjectFileWithRT(jit.lljit, *l->tracker, l->obj);
    if (err != NULL) {
        return raise_llvm_error(PyExc_RuntimeError, "the JIT refused the object code", err);
    }
    double t0 = cc_now_ns();
    for (int i = 0; i < l->n; i++) {
        LLVMOrcExecutorAddress addr = 0;
        jit.session_error[0] = '\0';
        if ((err = LLVMOrcLLJITLookup(jit.lljit, &addr, l->names[i])) != NULL) {
            return raise_llvm_error(PyExc_RuntimeError, "JIT linking failed", err);
        }
        l->addrs[i] = (void *)(uintptr_t)addr;
    }
    cc_time_add(CC_T_LINK, cc_now_ns() - t0); /* materialisation happens at lookup */
    return 0;
}

static void remove_tracker(LLVMOrcResourceTrackerRef tracker);

/* Links obj (consumed) into the JIT under a new tracker, *tracker (code's
 * own, or its quick code's), and resolves names into addrs.  0, or -1 with
 * an exception: what ORC refused is unlinked, so that a later try finds
 * the names free; after LLVM threw, *broken is set and nothing is touched. */
static int
link_object(CcCode *code, LLVMOrcResourceTrackerRef *tracker, LLVMMemoryBufferRef obj,
            char (*names)[128], void **addrs, int *broken)
{
    if (cg_headroom(LINK_HEADROOM + 4 * LLVMGetBufferSize(obj)) < 0) {
        LLVMDisposeMemoryBuffer(obj);
        return -1;
    }
    Link l = {tracker, obj, names, addrs, code->n};
    int rc = cg_run(link_step, &l);
    if (rc == CG_THREW) {
        *broken = 1;
        *tracker = NULL;
    } else if (rc < 0) {
        remove_tracker(*tracker);
        *tracker = NULL;
    }
    return rc < 0 ? -1 : 0;
}

/* Optimises m (dumps as NUMBAVEC_DUMP asks), keeps its IR text in code and
 * turns it into an object file.  Does not consume m.  verified: m was
 * verified when it was made (cc_jit_add_lazy). */
static int
compile_steps(CcCode *code, CcModule *m, LLVMMemoryBufferRef *obj, int verified)
{
    int dump = cc_dump_flags();
    if (dump & CC_DUMP_LLVM) {
        char *text = LLVMPrintModuleToString(m->mod);
        dump_text("LLVM IR before optimisation", code->name, text ? text : "(no memory)");
        LLVMDisposeMessage(text);
    }
    if ((!verified && verify(m->mod) < 0) || optimise(m->mod) < 0) {
        return -1;
    }
    /* Kept for inspect_llvm (and stored in cache entries); printing a loop
     * module takes microseconds.  Code generation below rewrites the
     * module, so this is the last moment to print it. */
    char *ir = LLVMPrintModuleToString(m->mod); /* strdup's: NULL without memory */
    PyMem_Free(code->ir);                       /* an earlier try's */
    code->ir = ir != NULL ? pymem_strdup(ir) : NULL;
    LLVMDisposeMessage(ir);
    if (code->ir == NULL) {
        return ir == NULL ? (PyErr_NoMemory(), -1) : -1;
    }
    if (dump & CC_DUMP_OPT) {
        dump_text("LLVM IR after optimisation", code->name, code->ir);
    }
    if (dump & CC_DUMP_ASM) {
        dump_asm(code->name, code->ir);
    }
    cc_prepare_codegen(m->mod, jit.features);
    if (emit_object(jit.tm, m->mod, obj) < 0) {
        return -1;
    }
    jit.compilations++;
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
static int
compile_module(CcCode *code, CcModule *m, LLVMMemoryBufferRef *obj, int verified)
{
    Compile c = {code, m, obj, verified};
    *obj = NULL;
    int rc = cg_run(compile_step, &c);
    m->tainted |= rc == CG_THREW;
    return rc < 0 ? -1 : 0;
}

/* Marks code's addresses valid, for cc_code_entry's readers. */
static void
set_made(CcCode *code)
{
    atomic_store_explicit(&code->made, 1, memory_order_release);
}

typedef struct Copy {
    CcModule *from, *to;
} Copy;

/* A copy of the pending module in a context of its own, through bitcode:
 * the only way out of a context LLVM threw in (guard.h) which reads it and
 * changes nothing in it. */
static int
restore_step(void *arg)
{
    Copy *c = arg;
    LLVMMemoryBufferRef bc = LLVMWriteBitcodeToMemoryBuffer(c->from->mod);
    c->to->tsctx = LLVMOrcCreateNewThreadSafeContext();
    c->to->ctx = LLVMOrcThreadSafeContextGetContext(c->to->tsctx);
    int bad = LLVMParseBitcodeInContext2(c->to->ctx, bc, &c->to->mod);
    LLVMDisposeMemoryBuffer(bc);
    if (bad) {
        c->to->mod = NULL;
        PyErr_SetString(PyExc_RuntimeError, "numbavec: cannot read back its own bitcode");
        return -1;
    }
    return 0;
}

/* A copy of the pending module in its context, for the passes to work on. */
static int
clone_step(void *arg)
{
    Copy *c = arg;
    c->to->mod = LLVMCloneModule(c->from->mod);
    return 0;
}

/* to = a copy of code's pending module: in its context (clone_step) or, if
 * that context is tainted, in a fresh one that becomes the pending module's
 * (the tainted one is left).  The pending module is tainted when LLVM threw
 * in its context. */
static int
copy_pending(CcCode *code, CcModule *to)
{
    CcModule fresh = {0};
    memset(to, 0, sizeof(*to));
    if (code->pending.tainted) {
        Copy c = {&code->pending, &fresh};
        int rc = cg_run(restore_step, &c);
        if (rc < 0) {
            fresh.tainted = rc == CG_THREW;
            cc_module_dispose(&fresh);
            return -1;
        }
        cc_module_dispose(&code->pending); /* forgotten: it is tainted */
        code->pending = fresh;
    }
    Copy c = {&code->pending, to};
    if (cg_run(clone_step, &c) == CG_THREW) {
        code->pending.tainted = 1;
        return -1;
    }
    return 0;
}

/* Before making code's machine code from its pending module: -1 with an
 * exception when LLVM threw while linking it before; else the start time in
 * *t0 (and the timed stages reset). */
static int
start_making(CcCode *code, double *t0)
{
    if (code->pending.mod == NULL || code->link_broken) {
        PyErr_Format(PyExc_RuntimeError, "numbavec: the machine code of '%s' could not be made",
                     code->name);
        return -1;
    }
    *t0 = cc_now_ns();
    cc_time_reset();
    return 0;
}

/* After a failure to make code (its exception set): anything but a
 * MemoryError would come again, so the pending module goes, and the code
 * is not tried again; a MemoryError may pass.  Returns -1. */
static int
give_up_unless_memory(CcCode *code)
{
    if (!PyErr_ExceptionMatches(PyExc_MemoryError) && code->pending.mod != NULL) {
        cc_module_dispose(&code->pending);
        jit.pending--;
    }
    return -1;
}

/*
 * Makes the machine code of lazily added code (cc_jit_add_lazy): optimises
 * and compiles a copy of its pending module, links it, resolves its entries
 * and, when asked to, hands the object file to its store.  The GIL is held:
 * it serialises this with every other use of the JIT.  0, or -1 with an
 * exception; after a MemoryError the pending module stays for the next
 * try, unless LLVM threw while linking.
 */
static int
code_make(CcCode *code)
{
    LLVMMemoryBufferRef obj = NULL;
    PyObject *blob = NULL;
    CcModule work;
    double t0;
    if (atomic_load_explicit(&code->made, memory_order_acquire)) {
        return 0;
    }
    if (start_making(code, &t0) < 0 || copy_pending(code, &work) < 0) {
        return -1;
    }
    int rc = compile_module(code, &work, &obj, 1);
    code->pending.tainted |= work.tainted; /* one context */
    cc_module_dispose(&work);
    if (rc < 0) {
        return give_up_unless_memory(code);
    }
    if (code->store != NULL
        && (blob = PyBytes_FromStringAndSize(LLVMGetBufferStart(obj),
                                             (Py_ssize_t)LLVMGetBufferSize(obj)))
               == NULL) {
        LLVMDisposeMemoryBuffer(obj);
        return -1;
    }
    if (link_object(code, &code->tracker, obj, code->unique, code->addrs, &code->link_broken) < 0) {
        Py_XDECREF(blob);
        return give_up_unless_memory(code);
    }
    set_made(code);
    cc_module_dispose(&code->pending);
    jit.pending--;
    cc_time_made(code, code->name, "machine code made", t0);
    if (code->store != NULL) {
        /* the code runs whatever the store does: a store that fails is
         * reported, and the call goes on */
        if (code->store(code->store_ctx, blob, code->ir) < 0) {
            PyErr_WriteUnraisable(code->store_ctx);
        }
        code->store = NULL;
        Py_CLEAR(code->store_ctx);
    }
    Py_XDECREF(blob);
    return 0;
}

/* Resolves code's entries into addrs, making code first if it waits. */
static int
code_addresses(CcCode *code, void **addrs, int n)
{
    if (code_make(code) < 0) {
        return -1;
    }
    for (int i = 0; i < n && i < code->n; i++) {
        addrs[i] = code->addrs[i];
    }
    return 0;
}

CcCode *
cc_jit_add_keyed(CcModule *m, const char *const *names, void **addrs, int n, const char *key,
                 PyObject **object)
{
    CcCode *code = NULL;
    LLVMMemoryBufferRef obj = NULL;
    char(*unique)[128] = NULL;
    if (object != NULL) {
        *object = NULL;
    }
    if (cc_jit_init() < 0) {
        goto error;
    }
    if ((unique = unique_names(names, n, key)) == NULL) {
        goto error;
    }
    if (key != NULL && (code = keyed_find(key)) != NULL) {
        cc_module_dispose(m); /* already in the JIT: nothing to compile */
        if (code_addresses(code, addrs, n) < 0) {
            goto error;
        }
        PyMem_Free(unique);
        return code;
    }
    if (rename_exports(m, names, n, unique, 0) < 0) {
        goto error;
    }
    size_t len = 0;
    const char *name = LLVMGetModuleIdentifier(m->mod, &len);
    if ((code = code_new(name, len)) == NULL || compile_module(code, m, &obj, 0) < 0) {
        goto error;
    }
    cc_module_dispose(m);
    if (object != NULL
        && (*object = PyBytes_FromStringAndSize(LLVMGetBufferStart(obj),
                                                (Py_ssize_t)LLVMGetBufferSize(obj)))
               == NULL) {
        goto error;
    }
    LLVMMemoryBufferRef consumed = obj;
    obj = NULL;
    code->n = n;
    if (link_object(code, &code->tracker, consumed, unique, code->addrs, &code->link_broken) < 0
        || (key != NULL && keyed_register(code, key) < 0)) {
        goto error;
    }
    set_made(code);
    memcpy(addrs, code->addrs, sizeof(void *) * (size_t)n);
    PyMem_Free(unique);
    return code;
error:
    if (object != NULL) {
        Py_CLEAR(*object);
    }
    if (obj != NULL) {
        LLVMDisposeMemoryBuffer(obj);
    }
    PyMem_Free(unique);
    cc_module_dispose(m);
    cc_code_free(code);
    return NULL;
}

CcCode *
cc_jit_add_lazy(CcModule *m, const char *const *names, int n, const char *key)
{
    CcCode *code = NULL;
    char(*unique)[128] = NULL;
    if (cc_jit_init() < 0 || (unique = unique_names(names, n, key)) == NULL) {
        goto error;
    }
    if (key != NULL && (code = keyed_find(key)) != NULL) {
        cc_module_dispose(m); /* already in the JIT, made or waiting */
        PyMem_Free(unique);
        return code;
    }
    if (rename_exports(m, names, n, unique, 1) < 0) {
        goto error;
    }
    size_t len = 0;
    const char *name = LLVMGetModuleIdentifier(m->mod, &len);
    if ((code = code_new(name, len)) == NULL) {
        goto error;
    }
    code->n = n;
    code->unique = unique;
    unique = NULL;
    code->pending = *m;
    memset(m, 0, sizeof(*m));
    jit.pending++;
    if (key != NULL && keyed_register(code, key) < 0) {
        goto error;
    }
    return code;
error:
    PyMem_Free(unique);
    cc_module_dispose(m);
    cc_code_free(code);
    return NULL;
}

int
cc_code_made(CcCode *code)
{
    return atomic_load_explicit(&code->made, memory_order_acquire);
}

void *
cc_code_entry(CcCode *code, int i)
{
    if (atomic_load_explicit(&code->made, memory_order_acquire)) {
        return code->addrs[i];
    }
    PyGILState_STATE gil = PyGILState_Ensure();
    int rc = code_make(code);
    PyGILState_Release(gil);
    return rc == 0 ? code->addrs[i] : NULL;
}

/*
 * Quick code: what a lazily added module's first calls run while its
 * optimised code waits (cc_code_quick_entry).  A copy of the pending module
 * has its always-inline functions inlined and its variables put in
 * registers (SROA), and nothing more, and the fast instruction selector and
 * register allocator make its code: about a fifth of the optimised code's
 * making, for code some times slower.  Its exports are the code's names
 * with ".quick" appended, so that both may live in the one JITDylib.
 */
static const char quick_pipeline[] = "always-inline,function(sroa)";

/* The quick passes and code generation of work (a copy of the pending
 * module, its exports renamed). */
static int
quick_step(void *arg)
{
    Compile *c = arg;
    double t1 = cc_now_ns();
    LLVMErrorRef err = LLVMRunPasses(c->m->mod, quick_pipeline, jit.quick_tm, jit.passes);
    cc_time_add(CC_T_OPT, cc_now_ns() - t1);
    if (err != NULL) {
        return raise_llvm_error(PyExc_RuntimeError, "LLVM optimisation failed", err);
    }
    cc_prepare_codegen(c->m->mod, jit.features);
    return emit_object(jit.quick_tm, c->m->mod, c->obj);
}

static int
code_make_quick(CcCode *code)
{
    LLVMMemoryBufferRef obj = NULL;
    char(*names)[128] = NULL;
    const char *old[CC_MAXENTRIES];
    CcModule work = {0};
    double t0;
    if (code->quick_broken) {
        return code_make(code); /* LLVM threw while linking quick code */
    }
    if (start_making(code, &t0) < 0 || copy_pending(code, &work) < 0) {
        return -1;
    }
    if ((names = PyMem_Malloc(sizeof(*names) * (size_t)code->n)) == NULL) {
        PyErr_NoMemory();
        goto error;
    }
    for (int i = 0; i < code->n; i++) {
        old[i] = code->unique[i];
        int len = snprintf(names[i], sizeof(names[i]), "%s.quick", code->unique[i]);
        if (len < 0 || len >= (int)sizeof(names[i])) {
            PyErr_Format(PyExc_ValueError, "function name too long: '%s'", code->unique[i]);
            goto error;
        }
    }
    Compile c = {code, &work, &obj, 1};
    int rc = rename_exports(&work, old, code->n, names, 0);
    if (rc < 0 || (rc = cg_run(quick_step, &c)) < 0) {
        work.tainted |= rc == CG_THREW;
        goto error;
    }
    cc_module_dispose(&work);
    if (link_object(code, &code->quick_tracker, obj, names, code->quick, &code->quick_broken) < 0) {
        goto error;
    }
    atomic_store_explicit(&code->quick_made, 1, memory_order_release);
    jit.quick_compilations++;
    cc_time_made(code, code->name, "quick machine code made", t0);
    PyMem_Free(names);
    return 0;
error:
    code->pending.tainted |= work.tainted; /* one context */
    cc_module_dispose(&work);
    PyMem_Free(names);
    return -1;
}

void *
cc_code_quick_entry(CcCode *code, int i)
{
    if (atomic_load_explicit(&code->made, memory_order_acquire)) {
        return code->addrs[i];
    }
    if (atomic_load_explicit(&code->quick_made, memory_order_acquire)) {
        return code->quick[i];
    }
    PyGILState_STATE gil = PyGILState_Ensure();
    int rc = 0;
    if (!cc_code_made(code) && !atomic_load_explicit(&code->quick_made, memory_order_acquire)) {
        /* keyed code is stored when made: it has no quick code */
        rc = code->key != NULL ? code_make(code) : code_make_quick(code);
    }
    PyGILState_Release(gil);
    if (rc < 0) {
        return NULL;
    }
    return cc_code_made(code) ? code->addrs[i] : code->quick[i];
}

Py_ssize_t
cc_jit_quick_compilations(void)
{
    return jit.quick_compilations;
}

void
cc_code_store_when_made(CcCode *code, CcStoreFn store, PyObject *ctx)
{
    if (cc_code_made(code) || code->store != NULL) {
        return; /* made (and stored) already, or someone will store it */
    }
    code->store = store;
    code->store_ctx = Py_NewRef(ctx);
}

CcCode *
cc_jit_add(CcModule *m, const char *const *names, void **addrs, int n)
{
    return cc_jit_add_keyed(m, names, addrs, n, NULL, NULL);
}

CcCode *
cc_jit_add_object(const char *key, const char *bytes, size_t size, const char *ir,
                  const char *const *names, void **addrs, int n)
{
    CcCode *code = NULL;
    char(*unique)[128] = NULL;
    if (cc_jit_init() < 0) {
        return NULL;
    }
    if ((unique = unique_names(names, n, key)) == NULL) {
        goto error;
    }
    if ((code = keyed_find(key)) == NULL) {
        if ((code = code_new(key, strlen(key))) == NULL || (code->ir = pymem_strdup(ir)) == NULL) {
            goto error;
        }
        LLVMMemoryBufferRef obj = LLVMCreateMemoryBufferWithMemoryRangeCopy(bytes, size, key);
        code->n = n;
        if (obj == NULL) { /* the one allocation there, made nothrow */
            PyErr_NoMemory();
            goto error;
        }
        if (link_object(code, &code->tracker, obj, unique, code->addrs, &code->link_broken) < 0
            || keyed_register(code, key) < 0) {
            goto error;
        }
        jit.object_loads++;
        set_made(code);
    }
    if (code_addresses(code, addrs, n) < 0) {
        goto error;
    }
    PyMem_Free(unique);
    return code;
error:
    PyMem_Free(unique);
    cc_code_free(code);
    return NULL;
}

static int
remove_step(void *tracker)
{
    /* Nothing can be done about a failure here; the code stays mapped. */
    LLVMErrorRef err = LLVMOrcResourceTrackerRemove(tracker);
    if (err != NULL) {
        LLVMConsumeError(err);
    }
    LLVMOrcReleaseResourceTracker(tracker);
    return 0;
}

/* Removes a tracker's code from the JIT (tracker may be NULL); what LLVM
 * threw on the way (out of memory) is reported as unraisable. */
static void
remove_tracker(LLVMOrcResourceTrackerRef tracker)
{
    if (tracker != NULL && cg_run(remove_step, tracker) == CG_THREW) {
        PyErr_WriteUnraisable(NULL);
    }
}

void
cc_code_free(CcCode *code)
{
    if (code == NULL || --code->refs > 0) {
        return;
    }
    if (code->key != NULL) {
        keyed_unlink(code);
    }
    remove_tracker(code->tracker);
    remove_tracker(code->quick_tracker);
    if (code->pending.mod != NULL) {
        jit.pending--;
    }
    cc_module_dispose(&code->pending);
    Py_XDECREF(code->store_ctx);
    PyMem_Free(code->unique);
    PyMem_Free(code->ir);
    PyMem_Free(code->key);
    PyMem_Free(code->name);
    PyMem_Free(code);
    jit.live_codes--;
}

const char *
cc_code_llvm(CcCode *code)
{
    return code_make(code) == 0 ? code->ir : NULL;
}

typedef struct Asm {
    const char *ir;
    PyObject *text;
} Asm;

static int
asm_step(void *arg)
{
    Asm *a = arg;
    a->text = asm_from_ir(a->ir);
    return a->text != NULL ? 0 : -1;
}

PyObject *
cc_code_asm(CcCode *code)
{
    if (code_make(code) < 0) {
        return NULL;
    }
    Asm a = {code->ir, NULL};
    return cg_run(asm_step, &a) == 0 ? a.text : NULL;
}

/* ---- the host back end of the driver ---- */

static int
host_module_new(const CcBackend *be, CcModule *m, const char *name)
{
    return cc_module_new(m, name);
}

static void
entry_name_list(const CcEntries *e, const char **names)
{
    for (int i = 0; i < e->n; i++) {
        names[i] = e->names[i];
    }
}

static int
host_finish(const CcBackend *be, CcModule *m, const CcEntries *e, const char *key, PyObject **blob,
            CcCompiled *out)
{
    const char *names[CC_MAXENTRIES];
    entry_name_list(e, names);
    out->code = out->lazy ? cc_jit_add_lazy(m, names, e->n, key)
                          : cc_jit_add_keyed(m, names, out->addrs, e->n, key, blob);
    return out->code != NULL ? 0 : -1;
}

static int
host_load(const CcBackend *be, const char *key, PyObject *blob, const char *ir, const CcEntries *e,
          CcCompiled *out)
{
    const char *names[CC_MAXENTRIES];
    char *bytes;
    Py_ssize_t size;
    if (PyBytes_AsStringAndSize(blob, &bytes, &size) < 0) {
        return -1;
    }
    entry_name_list(e, names);
    out->code = cc_jit_add_object(key, bytes, (size_t)size, ir, names, out->addrs, e->n);
    return out->code != NULL ? 0 : -1;
}

const CcBackend cc_host_backend = {
    .name = "host",
    .target = &cc_host_target,
    .module_new = host_module_new,
    .finish = host_finish,
    .load = host_load,
};
