/*
 * jit.c - the host JIT: the target machine, ORC's LLJIT, symbols and linking.
 *
 * The bottom of the host pipeline, in three files (jit.h is their internal
 * header): passes.c turns a verified module into an object file (the
 * optimisation pipeline, the rewrites before code generation, code
 * generation); code.c keeps that machine code alive as a CcCode (keyed,
 * lazy, quick); this file owns what both stand on.  One process-wide LLJIT
 * (cc_jit) holds every module in its main JITDylib, each object file under
 * its own ResourceTracker, so that freeing a CcCode removes its code.
 * Going through an object file ourselves (rather than giving ORC the IR) is
 * what makes the compiled-code cache possible: LLVM-C has no ObjectCache
 * hook for LLJIT, so the object bytes are handed back to the caller, and
 * stored bytes are linked without running any LLVM pass.
 *
 * The JIT is created on first use and never torn down: ufuncs holding code
 * may die at interpreter exit in any order, and a live JIT costs nothing.
 * Every function here runs with the GIL held (cc_code_entry takes it before
 * making code), which serialises use of the shared target machine and of
 * the context below.
 */
#include "compiler/jit.h"

#include <dlfcn.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <llvm-c/Analysis.h>
#include <llvm-c/Support.h>

CcJit cc_jit; /* the process-wide JIT state (jit.h) */

/* ---- errors ---- */

/* Consumes err; raises exc "what: <LLVM's message>".  Returns -1. */
int
cc_jit_error(PyObject *exc, const char *what, LLVMErrorRef err)
{
    char *msg = LLVMGetErrorMessage(err);
    if (strstr(msg, strerror(ENOMEM)) != NULL || strstr(cc_jit.session_error, strerror(ENOMEM))) {
        exc = PyExc_MemoryError; /* ORC could not map memory for the code */
    }
    if (cc_jit.session_error[0] != '\0') {
        PyErr_Format(exc, "%s: %s (%s)", what, msg, cc_jit.session_error);
    } else {
        PyErr_Format(exc, "%s: %s", what, msg);
    }
    LLVMDisposeErrorMessage(msg);
    return -1;
}

/* Raises exc with a message LLVM allocated, then frees it.  Returns -1. */
int
cc_jit_message(PyObject *exc, const char *what, char *msg)
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
    snprintf(cc_jit.session_error, sizeof(cc_jit.session_error), "%s", msg);
    LLVMDisposeErrorMessage(msg);
}

/* ---- NUMBAVEC_DUMP ---- */

void
cc_jit_dump(const char *what, const char *module, const char *text)
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
    if (cc_jit.options_parsed) {
        return;
    }
    cc_jit.options_parsed = 1;
    if (dlopen("libmvec.so.1", RTLD_NOW | RTLD_GLOBAL) == NULL) {
        return;
    }
    /* The value is spelled "LIBMVEC-X86" from LLVM 17 through 20. */
    const char *argv[] = {"numbavec", "-vector-library=LIBMVEC-X86"};
    LLVMParseCommandLineOptions(2, argv, NULL);
    cc_jit.libmvec = 1;
#endif
}

static int
create_target_machine(void)
{
    LLVMTargetRef target = NULL;
    char *msg = NULL;
    cc_jit.triple = LLVMGetDefaultTargetTriple();
    cc_jit.cpu = LLVMGetHostCPUName();
    cc_jit.features = LLVMGetHostCPUFeatures();
    if (cc_jit.triple == NULL || cc_jit.cpu == NULL || cc_jit.features == NULL) { /* strdup's */
        PyErr_NoMemory();
        return -1;
    }
    if (LLVMGetTargetFromTriple(cc_jit.triple, &target, &msg)) {
        return cc_jit_message(PyExc_RuntimeError, "no LLVM target for the host", msg);
    }
    cc_jit.tm = LLVMCreateTargetMachine(target, cc_jit.triple, cc_jit.cpu, cc_jit.features,
                                        LLVMCodeGenLevelAggressive, LLVMRelocDefault,
                                        LLVMCodeModelJITDefault);
    cc_jit.quick_tm =
        LLVMCreateTargetMachine(target, cc_jit.triple, cc_jit.cpu, cc_jit.features,
                                LLVMCodeGenLevelNone, LLVMRelocDefault, LLVMCodeModelJITDefault);
    if (cc_jit.tm == NULL || cc_jit.quick_tm == NULL) {
        PyErr_SetString(PyExc_RuntimeError, "LLVM could not create the host target machine");
        return -1;
    }
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
        pairs[n].Name = LLVMOrcLLJITMangleAndIntern(cc_jit.lljit, r->name);
        pairs[n].Sym.Address = (LLVMOrcJITTargetAddress)(uintptr_t)r->address;
        pairs[n].Sym.Flags.GenericFlags =
            LLVMJITSymbolGenericFlagsExported | LLVMJITSymbolGenericFlagsCallable;
        pairs[n].Sym.Flags.TargetFlags = 0;
    }
    LLVMErrorRef err = LLVMOrcJITDylibDefine(cc_jit.main, LLVMOrcAbsoluteSymbols(pairs, n));
    if (err != NULL) {
        return cc_jit_error(PyExc_RuntimeError, "cannot define numbavec's runtime", err);
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
        return cc_jit_error(PyExc_RuntimeError, "LLVM cannot target the host", err);
    }
    LLVMOrcLLJITBuilderRef builder = LLVMOrcCreateLLJITBuilder();
    LLVMOrcLLJITBuilderSetJITTargetMachineBuilder(builder, jtmb); /* consumed */
    err = LLVMOrcCreateLLJIT(&cc_jit.lljit, builder);             /* consumed */
    if (err != NULL) {
        cc_jit.lljit = NULL;
        return cc_jit_error(PyExc_RuntimeError, "cannot create the LLVM JIT", err);
    }
    LLVMOrcExecutionSessionSetErrorReporter(LLVMOrcLLJITGetExecutionSession(cc_jit.lljit),
                                            session_error_reporter, NULL);
    cc_jit.main = LLVMOrcLLJITGetMainJITDylib(cc_jit.lljit);
    err = LLVMOrcCreateDynamicLibrarySearchGeneratorForProcess(
        &gen, LLVMOrcLLJITGetGlobalPrefix(cc_jit.lljit), NULL, NULL);
    if (err != NULL) {
        return cc_jit_error(PyExc_RuntimeError, "cannot search the process's symbols", err);
    }
    LLVMOrcJITDylibAddGenerator(cc_jit.main, gen); /* consumed */
    return define_runtime();
}

/* Releases what a failed cc_jit_init made, so that it can be retried. */
static void
jit_reset(void)
{
    if (cc_jit.lljit != NULL) {
        LLVMErrorRef err = LLVMOrcDisposeLLJIT(cc_jit.lljit);
        if (err != NULL) {
            LLVMConsumeError(err);
        }
    }
    if (cc_jit.tm != NULL) {
        LLVMDisposeTargetMachine(cc_jit.tm);
    }
    if (cc_jit.quick_tm != NULL) {
        LLVMDisposeTargetMachine(cc_jit.quick_tm);
    }
    LLVMDisposeMessage(cc_jit.cpu);
    LLVMDisposeMessage(cc_jit.features);
    LLVMDisposeMessage(cc_jit.triple);
    cc_jit.lljit = NULL;
    cc_jit.main = NULL;
    cc_jit.tm = cc_jit.quick_tm = NULL;
    cc_jit.cpu = cc_jit.features = cc_jit.triple = NULL;
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
    if (cc_jit.ready) {
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
        cc_jit.cpu = cc_jit.features = cc_jit.triple = NULL;
        cc_jit.tm = cc_jit.quick_tm = NULL;
        cc_jit.lljit = NULL;
    }
    if (rc < 0) {
        jit_reset();
        return -1;
    }
    cc_jit.ready = 1;
    return 0;
}

const char *
cc_host_cpu_name(void)
{
    return cc_jit.cpu;
}

const char *
cc_host_cpu_features(void)
{
    return cc_jit.features;
}

int
cc_jit_has_libmvec(void)
{
    return cc_jit.libmvec;
}

Py_ssize_t
cc_jit_live_codes(void)
{
    return cc_jit.live_codes;
}

Py_ssize_t
cc_jit_compilations(void)
{
    return cc_jit.compilations;
}

Py_ssize_t
cc_jit_pending(void)
{
    return cc_jit.pending;
}

Py_ssize_t
cc_jit_object_loads(void)
{
    return cc_jit.object_loads;
}

Py_ssize_t
cc_jit_outlined(void)
{
    return cc_jit.outlined;
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
    LLVMSetTarget(m->mod, LLVMOrcLLJITGetTripleString(cc_jit.lljit));
    /* The JIT refuses modules whose layout differs from its own. */
    LLVMSetDataLayout(m->mod, LLVMOrcLLJITGetDataLayoutStr(cc_jit.lljit));
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

int
cc_jit_verify(LLVMModuleRef mod)
{
    char *msg = NULL;
    if (LLVMVerifyModule(mod, LLVMReturnStatusAction, &msg)) {
        return cc_jit_message(PyExc_RuntimeError, "invalid LLVM IR", msg);
    }
    LLVMDisposeMessage(msg);
    return 0;
}

char *
cc_jit_strdup(const char *s)
{
    size_t len = strlen(s) + 1;
    char *copy = PyMem_Malloc(len);
    if (copy == NULL) {
        PyErr_NoMemory();
        return NULL;
    }
    return memcpy(copy, s, len);
}

/* ---- symbols ---- */

/*
 * Every module lands in the JIT's main JITDylib, where external names must
 * be unique; callers only keep them unique within a module, so each
 * requested function gets a suffix: ".<key>" for keyed (cacheable) code,
 * whose names must be the same in every process that loads it, else
 * ".<id>" with a process-wide id.  Returns the n names in a new PyMem
 * array, or NULL with an exception.
 */
char (*cc_jit_unique_names(const char *const *names, int n, const char *key))[128]
{
    char(*unique)[128] = PyMem_Malloc(sizeof(*unique) * (size_t)(n > 0 ? n : 1));
    if (unique == NULL) {
        PyErr_NoMemory();
        return NULL;
    }
    unsigned long long id = cc_jit.next_id++;
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
    return r->verify ? cc_jit_verify(r->mod) : 0;
}

/* Renames m's names[i] unique[i] (and verifies m), m tainted if LLVM threw. */
int
cc_jit_rename(CcModule *m, const char *const *names, int n, char (*unique)[128], int check)
{
    Rename r = {m->mod, names, n, unique, check};
    int rc = cg_run(rename_step, &r);
    m->tainted |= rc == CG_THREW;
    return rc < 0 ? -1 : 0;
}

/* ---- object code ---- */

/* Code generation of the module into an in-memory object file, by tm
 * (cc_jit.tm, or cc_jit.quick_tm for quick code). */
int
cc_jit_emit_object(LLVMTargetMachineRef tm, LLVMModuleRef mod, LLVMMemoryBufferRef *out)
{
    char *msg = NULL;
    double t0 = cc_now_ns();
    int failed = LLVMTargetMachineEmitToMemoryBuffer(tm, mod, LLVMObjectFile, &msg, out);
    cc_time_add(CC_T_CODEGEN, cc_now_ns() - t0);
    if (failed) {
        *out = NULL;
        return cc_jit_message(PyExc_RuntimeError, "LLVM could not emit machine code", msg);
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
    *l->tracker = LLVMOrcJITDylibCreateResourceTracker(cc_jit.main);
    LLVMErrorRef err = LLVMOrcLLJITAddObjectFileWithRT(cc_jit.lljit, *l->tracker, l->obj);
    if (err != NULL) {
        return cc_jit_error(PyExc_RuntimeError, "the JIT refused the object code", err);
    }
    double t0 = cc_now_ns();
    for (int i = 0; i < l->n; i++) {
        LLVMOrcExecutorAddress addr = 0;
        cc_jit.session_error[0] = '\0';
        if ((err = LLVMOrcLLJITLookup(cc_jit.lljit, &addr, l->names[i])) != NULL) {
            return cc_jit_error(PyExc_RuntimeError, "JIT linking failed", err);
        }
        l->addrs[i] = (void *)(uintptr_t)addr;
    }
    cc_time_add(CC_T_LINK, cc_now_ns() - t0); /* materialisation happens at lookup */
    return 0;
}


/* Links obj (consumed) into the JIT under a new tracker, *tracker (code's
 * own, or its quick code's), and resolves names into addrs.  0, or -1 with
 * an exception: what ORC refused is unlinked, so that a later try finds
 * the names free; after LLVM threw, *broken is set and nothing is touched. */
int
cc_jit_link(CcCode *code, LLVMOrcResourceTrackerRef *tracker, LLVMMemoryBufferRef obj,
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
        cc_jit_remove_tracker(*tracker);
        *tracker = NULL;
    }
    return rc < 0 ? -1 : 0;
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
void
cc_jit_remove_tracker(LLVMOrcResourceTrackerRef tracker)
{
    if (tracker != NULL && cg_run(remove_step, tracker) == CG_THREW) {
        PyErr_WriteUnraisable(NULL);
    }
}
