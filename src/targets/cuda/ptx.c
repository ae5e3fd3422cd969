/*
 * ptx.c - a numbavec kernel -> PTX text, through libNVVM or LLVM's NVPTX
 * back end.
 *
 * The kernel is emitted by the ordinary compiler (cc_lower, cc_typeinfer,
 * cc_emit_function_for) with cuda_emit_target: math calls go to libdevice's
 * __nv_* functions and integer division by zero sets no flag.  An entry
 * point `void name(T0 *x0, ..., Tout *out, i64 n)` runs it over a
 * grid-stride loop: this is the minimal kernel the cuda vectorize target
 * will generalise (layouts, scalars as parameters).
 *
 * Back ends (NUMBAVEC_CUDA_BACKEND=nvvm|llvm forces one; default: libNVVM
 * when found):
 *   nvvm  below compute_100, the module is printed in the LLVM 7 typed
 *         dialect (nvvmir.c); from compute_100, as modern LLVM text.
 *         libdevice is added lazily; libNVVM optimises at -opt=3.
 *   llvm  libdevice.10.bc is parsed and linked in with LLVM, everything but
 *         the entry internalised, __nvvm_reflect folded here, O3 with the
 *         nvptx64 target machine, then assembly.
 */
#include "targets/cuda/cuda.h"

#include <ctype.h>
#include <string.h>

#include <llvm/Config/llvm-config.h>
#include <llvm-c/Analysis.h>
#include <llvm-c/BitReader.h>
#include <llvm-c/Linker.h>
#include <llvm-c/Target.h>
#include <llvm-c/Transforms/PassBuilder.h>

/* ---- GPU math: libdevice ---- */

/* Math that the NVPTX back end and libNVVM lower themselves: intrinsics. */
static const char *const native_math[] = {
    "fabs", "floor", "ceil", "trunc", "sqrt", "copysign", "minimum", "maximum", NULL,
};

/*
 * emit.c's names (LLVM intrinsics without "llvm.", C's libm names) that
 * libdevice spells otherwise.  llvm.roundeven is newer than libNVVM's
 * LLVM 7 dialect; rint rounds half to even in the default rounding mode.
 */
static const char *const libdevice_renamed[][2] = {
    {"roundeven", "rint"},
    {"minnum", "fmin"},
    {"maxnum", "fmax"},
};

static const char *
gpu_math_name(const char *base, TsKind k, char *buf, size_t size)
{
    for (size_t i = 0; native_math[i] != NULL; i++) {
        if (strcmp(base, native_math[i]) == 0) {
            return NULL;
        }
    }
    for (size_t i = 0; i < sizeof(libdevice_renamed) / sizeof(libdevice_renamed[0]); i++) {
        if (strcmp(base, libdevice_renamed[i][0]) == 0) {
            base = libdevice_renamed[i][1];
            break;
        }
    }
    /* every other function emit.c calls has a libdevice twin of its C name;
     * cuda_check_resolved catches one that has none */
    snprintf(buf, size, "__nv_%s%s", base, k == TS_FLOAT32 ? "f" : "");
    return buf;
}

const CcEmitTarget cuda_emit_target = {"cuda", gpu_math_name, 0, 0};

/* ---- the options of one compilation ---- */

typedef struct PtxJob {
    int sm;         /* 90 for sm_90 */
    char suffix[4]; /* "a" for sm_90a, else "" */
    int fastmath;
    int use_nvvm;
} PtxJob;

int
cuda_parse_arch(const char *arch, int *sm_out, char suffix[4])
{
    const char *p = arch;
    if (strncmp(p, "sm_", 3) == 0) {
        p += 3;
    } else if (strncmp(p, "compute_", 8) == 0) {
        p += 8;
    }
    char *end;
    long sm = strtol(p, &end, 10);
    if (end == p || sm < 50 || sm > 999 || strlen(end) > 1 || (*end && !isalpha(*end))) {
        PyErr_Format(PyExc_ValueError, "arch='%s': expected 'sm_NN' such as 'sm_90'", arch);
        return -1;
    }
    *sm_out = (int)sm;
    snprintf(suffix, 4, "%s", end);
    return 0;
}

static int
parse_arch(const char *arch, PtxJob *job)
{
    return cuda_parse_arch(arch, &job->sm, job->suffix);
}

static int
choose_backend(PyObject *backend, PtxJob *job)
{
    const char *name = NULL;
    if (backend != Py_None) {
        if ((name = PyUnicode_AsUTF8AndSize(backend, NULL)) == NULL) {
            return -1;
        }
    } else {
        name = getenv("NUMBAVEC_CUDA_BACKEND");
    }
    if (name == NULL || name[0] == '\0') {
        job->use_nvvm = cuda_nvvm_available();
        return 0;
    }
    if (strcmp(name, "nvvm") == 0) {
        job->use_nvvm = 1;
        return 0;
    }
    if (strcmp(name, "llvm") == 0) {
        job->use_nvvm = 0;
        return 0;
    }
    PyErr_Format(PyExc_ValueError,
                 "CUDA back end %s: choose 'nvvm' or 'llvm' "
                 "(NUMBAVEC_CUDA_BACKEND)",
                 name);
    return -1;
}

/* ---- the entry point ---- */

static LLVMValueRef
sreg(LLVMBuilderRef b, LLVMModuleRef mod, const char *which)
{
    char name[64];
    snprintf(name, sizeof(name), "llvm.nvvm.read.ptx.sreg.%s", which);
    unsigned id = LLVMLookupIntrinsicID(name, strlen(name));
    LLVMContextRef ctx = LLVMGetModuleContext(mod);
    LLVMValueRef f = LLVMGetIntrinsicDeclaration(mod, id, NULL, 0);
    LLVMTypeRef fty = LLVMIntrinsicGetType(ctx, id, NULL, 0);
    LLVMValueRef v = LLVMBuildCall2(b, fty, f, NULL, 0, which);
    return LLVMBuildZExt(b, v, LLVMInt64TypeInContext(ctx), "");
}

/*
 * void name(T0 *x0, ..., Tout *out, i64 n):
 *   for (i = ctaid*ntid + tid; i < n; i += ntid*nctaid) out[i] = kernel(x0[i], ...)
 */
static LLVMValueRef
build_entry(LLVMModuleRef mod, LLVMValueRef kernel, const TsSignature *sig, const char *name)
{
    LLVMContextRef ctx = LLVMGetModuleContext(mod);
    LLVMTypeRef ptr = LLVMPointerTypeInContext(ctx, 0), i64 = LLVMInt64TypeInContext(ctx);
    LLVMTypeRef params[TS_MAXARGS + 2];
    int np = sig->nargs;
    for (int k = 0; k <= np; k++) {
        params[k] = ptr;
    }
    params[np + 1] = i64;
    LLVMTypeRef fty = LLVMFunctionType(LLVMVoidTypeInContext(ctx), params, (unsigned)np + 2, 0);
    LLVMValueRef f = LLVMAddFunction(mod, name, fty);
    LLVMValueRef n = LLVMGetParam(f, (unsigned)np + 1);
    LLVMSetValueName2(n, "n", 1);
    LLVMBasicBlockRef entry = LLVMAppendBasicBlockInContext(ctx, f, "entry");
    LLVMBasicBlockRef loop = LLVMAppendBasicBlockInContext(ctx, f, "loop");
    LLVMBasicBlockRef done = LLVMAppendBasicBlockInContext(ctx, f, "done");
    LLVMBuilderRef b = LLVMCreateBuilderInContext(ctx);

    LLVMPositionBuilderAtEnd(b, entry);
    LLVMValueRef ntid = sreg(b, mod, "ntid.x");
    LLVMValueRef start = LLVMBuildAdd(b, LLVMBuildMul(b, sreg(b, mod, "ctaid.x"), ntid, ""),
                                      sreg(b, mod, "tid.x"), "start");
    LLVMValueRef stride = LLVMBuildMul(b, ntid, sreg(b, mod, "nctaid.x"), "stride");
    LLVMBuildCondBr(b, LLVMBuildICmp(b, LLVMIntSLT, start, n, ""), loop, done);

    LLVMPositionBuilderAtEnd(b, loop);
    LLVMValueRef i = LLVMBuildPhi(b, i64, "i");
    LLVMValueRef args[TS_MAXARGS];
    for (int k = 0; k < np; k++) {
        TsKind kind = sig->args[k].kind;
        LLVMValueRef base = LLVMGetParam(f, (unsigned)k);
        LLVMValueRef p = LLVMBuildInBoundsGEP2(b, cc_memory_type(ctx, kind), base, &i, 1, "x.p");
        args[k] = cc_load(b, kind, p, "x");
    }
    LLVMValueRef r =
        LLVMBuildCall2(b, LLVMGlobalGetValueType(kernel), kernel, args, (unsigned)np, "r");
    LLVMValueRef op = LLVMBuildInBoundsGEP2(b, cc_memory_type(ctx, sig->ret.kind),
                                            LLVMGetParam(f, (unsigned)np), &i, 1, "out.p");
    cc_store(b, sig->ret.kind, r, op);
    LLVMValueRef next = LLVMBuildAdd(b, i, stride, "i.next");
    LLVMBuildCondBr(b, LLVMBuildICmp(b, LLVMIntSLT, next, n, ""), loop, done);
    LLVMValueRef in_v[2] = {start, next};
    LLVMBasicBlockRef in_b[2] = {entry, loop};
    LLVMAddIncoming(i, in_v, in_b, 2);

    LLVMPositionBuilderAtEnd(b, done);
    LLVMBuildRetVoid(b);
    LLVMDisposeBuilder(b);
    return f;
}

/* !nvvm.annotations = !{!{ptr @f, !"kernel", i32 1}}: the entry for libNVVM
 * (and for LLVM's NVPTX back end, which also reads it). */
static void
annotate_kernel(LLVMModuleRef mod, LLVMValueRef f)
{
    LLVMContextRef ctx = LLVMGetModuleContext(mod);
    LLVMMetadataRef md[3] = {
        LLVMValueAsMetadata(f),
        LLVMMDStringInContext2(ctx, "kernel", 6),
        LLVMValueAsMetadata(LLVMConstInt(LLVMInt32TypeInContext(ctx), 1, 0)),
    };
    LLVMValueRef node = LLVMMetadataAsValue(ctx, LLVMMDNodeInContext2(ctx, md, 3));
    LLVMAddNamedMetadataOperand(mod, "nvvm.annotations", node);
}

/* ---- diagnostics ---- */

typedef struct Diag {
    char message[512];
} Diag;

static void
on_diagnostic(LLVMDiagnosticInfoRef info, void *opaque)
{
    Diag *d = opaque;
    if (LLVMGetDiagInfoSeverity(info) != LLVMDSError || d->message[0] != '\0') {
        return; /* warnings (libdevice's data layout) are expected */
    }
    char *text = LLVMGetDiagInfoDescription(info);
    snprintf(d->message, sizeof(d->message), "%s", text);
    LLVMDisposeMessage(text);
}

static int
llvm_error(LLVMErrorRef err, const char *what)
{
    if (err == NULL) {
        return 0;
    }
    char *msg = LLVMGetErrorMessage(err);
    PyErr_Format(cuda_Error, "%s: %s", what, msg);
    LLVMDisposeErrorMessage(msg);
    return -1;
}

/* ---- back end: libNVVM ---- */

static PyObject *
ptx_nvvm(LLVMModuleRef mod, const LLVMValueRef *entries, int nentries, const PtxJob *job)
{
    char *text = NULL, arch[32];
    size_t size = 0;
    PyObject *ptx = NULL;
    snprintf(arch, sizeof(arch), "compute_%d%s", job->sm, job->suffix);
    if (job->sm >= 100) {
        /* Blackwell and later: libNVVM reads the modern (opaque pointer) dialect */
        LLVMContextRef ctx = LLVMGetModuleContext(mod);
        LLVMTypeRef i32 = LLVMInt32TypeInContext(ctx);
        LLVMMetadataRef v[2] = {LLVMValueAsMetadata(LLVMConstInt(i32, 2, 0)),
                                LLVMValueAsMetadata(LLVMConstInt(i32, 0, 0))};
        LLVMAddNamedMetadataOperand(mod, "nvvmir.version",
                                    LLVMMetadataAsValue(ctx, LLVMMDNodeInContext2(ctx, v, 2)));
        LLVMSetTarget(mod, "nvptx64-nvidia-cuda");
        LLVMSetDataLayout(mod, "e-p:64:64:64-i1:8:8-i8:8:8-i16:16:16-i32:32:32-i64:64:64-"
                               "i128:128:128-f32:32:32-f64:64:64-v16:16:16-v32:32:32-"
                               "v64:64:64-v128:128:128-n16:32:64");
        char *s = LLVMPrintModuleToString(mod);
        size = strlen(s);
        text = PyMem_Malloc(size + 1);
        if (text != NULL) {
            memcpy(text, s, size + 1);
        }
        LLVMDisposeMessage(s);
        if (text == NULL) {
            return PyErr_NoMemory();
        }
    } else if (cuda_legalize_llvm7(mod) < 0
               || (text = cuda_nvvmir_legacy(mod, entries, nentries, &size)) == NULL) {
        return NULL;
    }
    if (cc_dump_flags() & CC_DUMP_LLVM) {
        fprintf(stderr, "--- NVVM IR (%s) ---\n%s\n", arch, text);
    }
    static const char *const precise[] = {"-opt=3", NULL};
    static const char *const fast[] = {"-opt=3",       "-ftz=1", "-prec-div=0",
                                       "-prec-sqrt=0", "-fma=1", NULL};
    ptx = cuda_nvvm_compile(text, size, arch, job->fastmath ? fast : precise);
    PyMem_Free(text);
    return ptx;
}

/* ---- back end: LLVM NVPTX ---- */

static LLVMTargetRef
nvptx_target(void)
{
    static int initialised = 0;
    if (!initialised) {
        LLVMInitializeNVPTXTargetInfo();
        LLVMInitializeNVPTXTarget();
        LLVMInitializeNVPTXTargetMC();
        LLVMInitializeNVPTXAsmPrinter();
        initialised = 1;
    }
    LLVMTargetRef t = NULL;
    char *err = NULL;
    if (LLVMGetTargetFromTriple("nvptx64-nvidia-cuda", &t, &err)) {
        PyErr_Format(cuda_SupportError, "LLVM has no NVPTX back end: %s", err);
        LLVMDisposeMessage(err);
        return NULL;
    }
    return t;
}

/* The PTX ISA each architecture needs (ptxas rejects a lower .version). */
static const char *
ptx_features(int sm)
{
    return sm >= 90   ? "+ptx78"
           : sm >= 89 ? "+ptx78"
           : sm >= 86 ? "+ptx71"
           : sm >= 80 ? "+ptx70"
                      : "+ptx64";
}

/* Links libdevice into mod; everything but `keep` becomes internal. */
static int
is_entry(LLVMValueRef f, const LLVMValueRef *entries, int n)
{
    for (int k = 0; k < n; k++) {
        if (entries[k] == f) {
            return 1;
        }
    }
    return 0;
}

static int
link_libdevice(LLVMModuleRef mod, const LLVMValueRef *keep, int nkeep, Diag *diag)
{
    size_t size;
    const char *bytes = cuda_libdevice_bytes(&size);
    if (bytes == NULL) {
        return -1;
    }
    LLVMContextRef ctx = LLVMGetModuleContext(mod);
    LLVMMemoryBufferRef buf = LLVMCreateMemoryBufferWithMemoryRange(bytes, size, "libdevice", 0);
    LLVMModuleRef ld = NULL;
    int failed = LLVMParseBitcodeInContext2(ctx, buf, &ld);
    LLVMDisposeMemoryBuffer(buf);
    if (failed) {
        PyErr_Format(cuda_Error, "cannot parse libdevice: %s", diag->message);
        return -1;
    }
    LLVMSetTarget(ld, LLVMGetTarget(mod));
    LLVMSetDataLayout(ld, LLVMGetDataLayoutStr(mod));
    if (LLVMLinkModules2(mod, ld)) { /* ld is consumed in any case */
        PyErr_Format(cuda_Error, "linking libdevice failed: %s", diag->message);
        return -1;
    }
    for (LLVMValueRef f = LLVMGetFirstFunction(mod); f; f = LLVMGetNextFunction(f)) {
        if (!is_entry(f, keep, nkeep) && !LLVMIsDeclaration(f)) {
            LLVMSetLinkage(f, LLVMInternalLinkage);
        }
    }
    for (LLVMValueRef g = LLVMGetFirstGlobal(mod); g; g = LLVMGetNextGlobal(g)) {
        if (!LLVMIsDeclaration(g)) {
            LLVMSetLinkage(g, LLVMInternalLinkage);
        }
    }
    return 0;
}

/* The string a __nvvm_reflect argument points to ("__CUDA_FTZ"), or NULL. */
static const char *
reflect_key(LLVMValueRef arg)
{
    while (arg != NULL && LLVMIsAConstantExpr(arg)) {
        arg = LLVMGetOperand(arg, 0); /* GEPs and address-space casts */
    }
    if (arg == NULL || !LLVMIsAGlobalVariable(arg) || LLVMGetInitializer(arg) == NULL) {
        return NULL;
    }
    size_t len;
    return LLVMGetAsString(LLVMGetInitializer(arg), &len);
}

/*
 * libdevice asks __nvvm_reflect("__CUDA_FTZ") and ("__CUDA_ARCH") which path
 * to take; NVVMReflect answers in libNVVM and clang.  The calls are folded
 * here so that nothing depends on that pass being registered.
 */
static int
fold_reflect(LLVMModuleRef mod, const PtxJob *job)
{
    LLVMValueRef f = LLVMGetNamedFunction(mod, "__nvvm_reflect");
    if (f == NULL) {
        return 0;
    }
    LLVMTypeRef i32 = LLVMInt32TypeInContext(LLVMGetModuleContext(mod));
    LLVMUseRef u = LLVMGetFirstUse(f);
    while (u != NULL) {
        LLVMValueRef call = LLVMGetUser(u);
        u = LLVMGetNextUse(u);
        if (!LLVMIsACallInst(call)) {
            PyErr_SetString(cuda_Error, "__nvvm_reflect used other than by a call");
            return -1;
        }
        const char *key = reflect_key(LLVMGetOperand(call, 0));
        int value = 0;
        if (key != NULL && strcmp(key, "__CUDA_FTZ") == 0) {
            value = job->fastmath;
        } else if (key != NULL && strcmp(key, "__CUDA_ARCH") == 0) {
            value = job->sm * 10;
        } else if (key != NULL && strcmp(key, "__CUDA_PREC_SQRT") == 0) {
            value = !job->fastmath;
        }
        LLVMReplaceAllUsesWith(call, LLVMConstInt(i32, (unsigned long long)value, 0));
        LLVMInstructionEraseFromParent(call);
    }
    return 0;
}

static void
set_fast_attrs(LLVMModuleRef mod)
{
    LLVMContextRef ctx = LLVMGetModuleContext(mod);
    static const char *const attrs[][2] = {
        {"denormal-fp-math-f32", "preserve-sign,preserve-sign"},
        {"unsafe-fp-math", "true"},
    };
    for (LLVMValueRef f = LLVMGetFirstFunction(mod); f; f = LLVMGetNextFunction(f)) {
        for (size_t k = 0; k < 2; k++) {
            LLVMAddAttributeAtIndex(
                f, LLVMAttributeFunctionIndex,
                LLVMCreateStringAttribute(ctx, attrs[k][0], (unsigned)strlen(attrs[k][0]),
                                          attrs[k][1], (unsigned)strlen(attrs[k][1])));
        }
    }
}

static PyObject *
ptx_llvm(LLVMModuleRef mod, const LLVMValueRef *entries, int nentries, const PtxJob *job,
         Diag *diag)
{
    LLVMTargetRef target = nvptx_target();
    if (target == NULL) {
        return NULL;
    }
    char cpu[32];
    snprintf(cpu, sizeof(cpu), "sm_%d%s", job->sm, job->suffix);
    if (job->sm > (LLVM_VERSION_MAJOR >= 20 ? 120 : 90)) {
        PyErr_Format(cuda_SupportError,
                     "LLVM %d's NVPTX back end does not know %s: use "
                     "libNVVM (backend='nvvm') or a lower arch",
                     LLVM_VERSION_MAJOR, cpu);
        return NULL;
    }
    LLVMTargetMachineRef tm =
        LLVMCreateTargetMachine(target, "nvptx64-nvidia-cuda", cpu, ptx_features(job->sm),
                                LLVMCodeGenLevelAggressive, LLVMRelocDefault, LLVMCodeModelDefault);
    LLVMPassBuilderOptionsRef opts = NULL;
    LLVMMemoryBufferRef asm_buf = NULL;
    PyObject *ptx = NULL;
    char *err = NULL;
    LLVMSetTarget(mod, "nvptx64-nvidia-cuda");
    LLVMTargetDataRef td = LLVMCreateTargetDataLayout(tm);
    LLVMSetModuleDataLayout(mod, td);
    LLVMDisposeTargetData(td);
    /* the entry is a kernel by calling convention too (PTX_Kernel = 71) */
    for (int k = 0; k < nentries; k++) {
        LLVMSetFunctionCallConv(entries[k], 71);
    }
    if (link_libdevice(mod, entries, nentries, diag) < 0 || fold_reflect(mod, job) < 0) {
        goto error;
    }
    if (job->fastmath) {
        set_fast_attrs(mod);
    }
    opts = LLVMCreatePassBuilderOptions();
    if (llvm_error(LLVMRunPasses(mod, "default<O3>", tm, opts), "optimising for NVPTX") < 0) {
        goto error;
    }
    if (cc_dump_flags() & CC_DUMP_OPT) {
        char *s = LLVMPrintModuleToString(mod);
        fprintf(stderr, "--- NVPTX module (%s) ---\n%s\n", cpu, s);
        LLVMDisposeMessage(s);
    }
    if (LLVMTargetMachineEmitToMemoryBuffer(tm, mod, LLVMAssemblyFile, &err, &asm_buf)) {
        PyErr_Format(cuda_Error, "NVPTX code generation failed: %s", err);
        LLVMDisposeMessage(err);
        goto error;
    }
    ptx = PyUnicode_FromStringAndSize(LLVMGetBufferStart(asm_buf),
                                      (Py_ssize_t)LLVMGetBufferSize(asm_buf));
error:
    if (asm_buf != NULL) {
        LLVMDisposeMemoryBuffer(asm_buf);
    }
    if (opts != NULL) {
        LLVMDisposePassBuilderOptions(opts);
    }
    LLVMDisposeTargetMachine(tm);
    return ptx;
}

/* ---- _core._cuda_ptx ---- */

typedef struct Source {
    PyObject *pyfunc, *funcdef, *lines; /* borrowed */
    const char *filename;
    int first_line, line_offset;
} Source;

/* Which entry points emit_kernel builds around the scalar kernel. */
typedef enum { ENTRY_TEST, ENTRY_UFUNC, ENTRY_REDUCE } EntryKind;

/* Lowers, types and emits the kernel and its entries into mod; *nentries
 * set.  0/-1. */
static int
emit_kernel(const Source *src, TsSignature *sig, LLVMModuleRef mod, const PtxJob *job,
            const char *name, EntryKind what, LLVMValueRef *entries, int *nentries)
{
    CcFunction fn = {0};
    int rc = -1;
    if ((fn.arena = cc_arena_new()) == NULL) {
        return -1;
    }
    fn.name = name;
    fn.filename = src->filename;
    fn.source_lines = src->lines;
    fn.first_line = src->first_line;
    fn.line_offset = src->line_offset;
    if (cc_lower(&fn, src->funcdef, src->pyfunc) < 0 || cc_typeinfer(&fn, sig) < 0) {
        goto error;
    }
    if (sig->ret.kind == TS_INFER) {
        sig->ret.kind = cc_storage(fn.ret);
    }
    char kname[160];
    snprintf(kname, sizeof(kname), "%.100s.impl", name);
    LLVMValueRef kernel =
        cc_emit_function_for(&fn, sig, mod, kname, job->fastmath, &cuda_emit_target);
    if (kernel == NULL) {
        goto error;
    }
    if (what == ENTRY_TEST) {
        entries[0] = build_entry(mod, kernel, sig, name);
        *nentries = 1;
    } else if (what == ENTRY_UFUNC) {
        cuda_build_entries(mod, kernel, sig, name, entries);
        *nentries = CUDA_NENTRIES;
    } else {
        char rname[200];
        snprintf(rname, sizeof(rname), "%s_r", name);
        entries[0] = cuda_build_reduce(mod, kernel, sig->ret.kind, rname);
        *nentries = 1;
    }
    for (int k = 0; k < *nentries; k++) {
        annotate_kernel(mod, entries[k]);
    }
    char *msg = NULL;
    if (LLVMVerifyModule(mod, LLVMReturnStatusAction, &msg)) {
        PyErr_Format(cuda_Error,
                     "numbavec generated invalid LLVM IR (a bug in numbavec; please "
                     "report it): %s",
                     msg);
        LLVMDisposeMessage(msg);
        goto error;
    }
    LLVMDisposeMessage(msg);
    rc = 0;
error:
    cc_arena_free(fn.arena);
    return rc;
}

static int
parse_source(PyObject *location, Source *src)
{
    PyObject *filename;
    if (!PyArg_ParseTuple(location, "UiO!i", &filename, &src->first_line, &PyList_Type, &src->lines,
                          &src->line_offset)) {
        return -1;
    }
    src->filename = PyUnicode_AsUTF8AndSize(filename, NULL);
    return src->filename ? 0 : -1;
}

/*
 * Puts the kernel (its name, file and line) and the signature in front of
 * the message of the exception being raised, so that a failure after type
 * inference (an invalid module, libNVVM, the NVPTX back end) names the
 * kernel it is about.  The exception keeps its type and attributes: only a
 * one-string args is rewritten.  TypingErrors point at the source already;
 * they and MemoryError are left as they are.
 */
static void
name_kernel_in_error(const Source *src, const TsSignature *sig)
{
    if (!PyErr_Occurred() || PyErr_ExceptionMatches(nv_TypingError)
        || PyErr_ExceptionMatches(PyExc_MemoryError)) {
        return;
    }
    PyObject *type, *value, *tb, *args = NULL, *qualname = NULL, *text = NULL;
    PyErr_Fetch(&type, &value, &tb);
    PyErr_NormalizeException(&type, &value, &tb);
    if (value == NULL || (args = PyObject_GetAttrString(value, "args")) == NULL
        || !PyTuple_Check(args) || PyTuple_Size(args) != 1
        || !PyUnicode_Check(PyTuple_GetItem(args, 0))) {
        goto done;
    }
    if ((qualname = PyObject_GetAttrString(src->pyfunc, "__qualname__")) == NULL
        || !PyUnicode_Check(qualname)) {
        goto done;
    }
    char sigbuf[256];
    text = PyUnicode_FromFormat("cuda kernel '%U' (%s:%d) for %s: %U", qualname, src->filename,
                                src->first_line, ts_signature_str(sig, sigbuf, sizeof(sigbuf)),
                                PyTuple_GetItem(args, 0));
    PyObject *new_args = text != NULL ? PyTuple_Pack(1, text) : NULL;
    if (new_args != NULL) {
        PyObject_SetAttrString(value, "args", new_args);
        Py_DECREF(new_args);
    }
done:
    PyErr_Clear(); /* a failure here keeps the original message */
    Py_XDECREF(args);
    Py_XDECREF(qualname);
    Py_XDECREF(text);
    PyErr_Restore(type, value, tb);
}

/* A kernel's PTX must call nothing outside itself (cuda.h). */
int
cuda_check_resolved(PyObject *ptx)
{
    const char *text = PyUnicode_AsUTF8AndSize(ptx, NULL);
    if (text == NULL) {
        return -1;
    }
    const char *p = strstr(text, ".extern .func");
    if (p == NULL) {
        return 0;
    }
    p += strlen(".extern .func");
    while (isspace((unsigned char)*p)) {
        p++;
    }
    if (*p == '(') { /* the return parameter */
        const char *close = strchr(p, ')');
        p = close != NULL ? close + 1 : p;
    }
    while (isspace((unsigned char)*p)) {
        p++;
    }
    char name[128]; /* PyErr_Format has no %.*s before Python 3.12 */
    size_t len = 0;
    while (len < sizeof(name) - 1
           && (isalnum((unsigned char)p[len]) || p[len] == '_' || p[len] == '$')) {
        name[len] = p[len];
        len++;
    }
    name[len] = '\0';
    PyErr_Format(cuda_Error,
                 "the PTX calls %s, which neither libdevice nor the GPU provides (a bug in "
                 "numbavec's GPU math; please report it)",
                 name);
    return -1;
}

/* A PTX-safe entry name: the Python name with anything else as '_'. */
static void
entry_name(PyObject *pyfunc, char *buf, size_t size)
{
    PyObject *name = PyObject_GetAttrString(pyfunc, "__name__");
    const char *s = name && PyUnicode_Check(name) ? PyUnicode_AsUTF8AndSize(name, NULL) : NULL;
    PyErr_Clear();
    snprintf(buf, size, "nv_%s", s ? s : "kernel");
    for (char *p = buf; *p; p++) {
        if (!isalnum((unsigned char)*p) && *p != '_') {
            *p = '_';
        }
    }
    Py_XDECREF(name);
}

PyObject *
cuda_ptx_py(PyObject *module, PyObject *args, PyObject *kwargs)
{
    static char *kwlist[] = {"pyfunc", "funcdef", "source",   "signature",
                             "arch",   "backend", "fastmath", NULL};
    Source src = {0};
    PyObject *location, *signature, *backend = Py_None;
    const char *arch = "sm_90";
    int fastmath = 0;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "OOOO|sOp", kwlist, &src.pyfunc, &src.funcdef,
                                     &location, &signature, &arch, &backend, &fastmath)) {
        return NULL;
    }
    PtxJob job = {0};
    TsSignature sig;
    job.fastmath = fastmath;
    if (parse_source(location, &src) < 0 || parse_arch(arch, &job) < 0
        || choose_backend(backend, &job) < 0 || ts_parse_signature(signature, &sig) < 0) {
        return NULL;
    }
    if (sig.nargs == 0 || sig.ret.kind == TS_VOID) {
        PyErr_SetString(PyExc_TypeError, "a CUDA ufunc kernel takes arguments and returns "
                                         "a scalar");
        return NULL;
    }
    char name[128];
    entry_name(src.pyfunc, name, sizeof(name));
    Diag diag = {{0}};
    LLVMContextRef ctx = LLVMContextCreate();
    LLVMContextSetDiagnosticHandler(ctx, on_diagnostic, &diag);
    LLVMModuleRef mod = LLVMModuleCreateWithNameInContext(name, ctx);
    LLVMValueRef entry = NULL;
    int nentries = 0;
    PyObject *ptx = NULL;
    if (emit_kernel(&src, &sig, mod, &job, name, ENTRY_TEST, &entry, &nentries) == 0) {
        ptx = job.use_nvvm ? ptx_nvvm(mod, &entry, 1, &job) : ptx_llvm(mod, &entry, 1, &job, &diag);
    }
    LLVMDisposeModule(mod);
    LLVMContextDispose(ctx);
    if (ptx != NULL && cuda_check_resolved(ptx) < 0) {
        Py_CLEAR(ptx);
    }
    if (ptx == NULL) {
        name_kernel_in_error(&src, &sig);
    }
    if (ptx != NULL && (cc_dump_flags() & CC_DUMP_PTX)) {
        fprintf(stderr, "--- PTX (%s, %s) ---\n%s\n", arch, job.use_nvvm ? "nvvm" : "llvm",
                PyUnicode_AsUTF8AndSize(ptx, NULL));
    }
    return ptx;
}

/* ---- one signature of a cuda ufunc ---- */

void
cuda_code_clear(CudaCode *c)
{
    Py_CLEAR(c->ptx);
    Py_CLEAR(c->llvm);
    Py_CLEAR(c->reduce_ptx);
}

/* One module of `what` compiled to PTX (and its IR text when llvm != NULL). */
static PyObject *
compile_module(const Source *src, TsSignature *sig, PtxJob *job, const char *name, EntryKind what,
               PyObject **llvm)
{
    Diag diag = {{0}};
    LLVMContextRef ctx = LLVMContextCreate();
    LLVMContextSetDiagnosticHandler(ctx, on_diagnostic, &diag);
    LLVMModuleRef mod = LLVMModuleCreateWithNameInContext(name, ctx);
    LLVMValueRef entries[CUDA_NENTRIES];
    int n = 0;
    PyObject *ptx = NULL;
    if (emit_kernel(src, sig, mod, job, name, what, entries, &n) == 0) {
        if (llvm != NULL) {
            char *text = LLVMPrintModuleToString(mod);
            *llvm = PyUnicode_FromString(text);
            LLVMDisposeMessage(text);
        }
        if (llvm == NULL || *llvm != NULL) {
            ptx = job->use_nvvm ? ptx_nvvm(mod, entries, n, job)
                                : ptx_llvm(mod, entries, n, job, &diag);
        }
    }
    LLVMDisposeModule(mod);
    LLVMContextDispose(ctx);
    if (ptx != NULL && cuda_check_resolved(ptx) < 0) {
        Py_CLEAR(ptx);
    }
    if (ptx == NULL) {
        name_kernel_in_error(src, sig);
    }
    return ptx;
}

int
cuda_compile_ufunc(PyObject *pyfunc, PyObject *funcdef, PyObject *location, TsSignature *sig,
                   const char *arch, PyObject *backend, int fastmath, int reduce, const char *name,
                   CudaCode *out)
{
    Source src = {0};
    PtxJob job = {0};
    src.pyfunc = pyfunc;
    src.funcdef = funcdef;
    job.fastmath = fastmath;
    memset(out, 0, sizeof(*out));
    if (parse_source(location, &src) < 0 || parse_arch(arch, &job) < 0
        || choose_backend(backend, &job) < 0) {
        return -1;
    }
    out->ptx = compile_module(&src, sig, &job, name, ENTRY_UFUNC, &out->llvm);
    if (out->ptx != NULL && reduce) {
        PtxJob rjob = job;
        rjob.use_nvvm = 0; /* shared memory: see cuda.h */
        out->reduce_ptx = compile_module(&src, sig, &rjob, name, ENTRY_REDUCE, NULL);
    }
    if (out->ptx == NULL || (reduce && out->reduce_ptx == NULL)) {
        cuda_code_clear(out);
        return -1;
    }
    if (cc_dump_flags() & CC_DUMP_PTX) {
        fprintf(stderr, "--- PTX %s (%s, %s) ---\n%s\n", name, arch, job.use_nvvm ? "nvvm" : "llvm",
                PyUnicode_AsUTF8AndSize(out->ptx, NULL));
        if (out->reduce_ptx != NULL) {
            fprintf(stderr, "--- PTX %s_r (%s, llvm) ---\n%s\n", name, arch,
                    PyUnicode_AsUTF8AndSize(out->reduce_ptx, NULL));
        }
    }
    return 0;
}
