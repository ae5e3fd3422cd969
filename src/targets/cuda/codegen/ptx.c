/*
 * ptx.c - a numbavec kernel -> PTX text, through libNVVM or LLVM's NVPTX
 * back end.
 *
 * The kernel is emitted by the ordinary compiler (cc_lower, cc_typeinfer,
 * cc_emit_function_for) with ptx_emit_target: math calls go to libdevice's
 * __nv_* functions and integer division by zero sets no flag.  An entry
 * point `void name(T0 *x0, ..., Tout *out, i64 n)` runs it over a
 * grid-stride loop: this is the minimal kernel the cuda vectorize target
 * will generalise (layouts, scalars as parameters).
 *
 * Back ends (NUMBAVEC_CUDA_BACKEND=nvvm|llvm forces one; default: libNVVM
 * when found, but LLVM for gufunc kernels where it knows the arch,
 * nvptx_knows):
 *   nvvm  below compute_100, the module is printed in the LLVM 7 typed
 *         dialect (nvvmir.c); from compute_100, as modern LLVM text.
 *         libdevice is added lazily; libNVVM optimises at -opt=3.
 *   llvm  libdevice.10.bc is parsed and linked in with LLVM, everything but
 *         the entry internalised, __nvvm_reflect folded here, O3 with the
 *         nvptx64 target machine, then assembly.
 */
#include "targets/cuda/codegen/codegen.h"

#include "compiler/guard.h"
#include "compiler/passrun.h"

#include <ctype.h>
#include <string.h>

#include <llvm/Config/llvm-config.h>
#include <llvm-c/Analysis.h>
#include <llvm-c/BitReader.h>
#include <llvm-c/Linker.h>
#include <llvm-c/Target.h>

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
     * ptx_check_resolved catches one that has none */
    snprintf(buf, size, "__nv_%s%s", base, k == TS_FLOAT32 ? "f" : "");
    return buf;
}

const CcEmitTarget ptx_emit_target = {"cuda", gpu_math_name, 0, 0};

/* ---- the options of one compilation ---- */

typedef struct PtxJob {
    int sm;         /* 90 for sm_90 */
    char suffix[4]; /* "a" for sm_90a, else "" */
    int fastmath;
    int use_nvvm;
    int loops;        /* a gufunc kernel: its body walks rows */
    char variant[32]; /* "sm_90/nvvm": what the PTX depends on, for cache keys */
} PtxJob;

int
ptx_parse_arch(const char *arch, int *sm_out, char suffix[4])
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
    return ptx_parse_arch(arch, &job->sm, job->suffix);
}

/* Whether LLVM's NVPTX back end knows the arch by name (it takes an
 * unknown one with a warning and makes PTX ptxas refuses): the archs of
 * LLVM 17-19, and those LLVM 20 added; 'a' on sm_90 and later.  Gufunc
 * kernels take libNVVM for the others; ptx_llvm refuses them. */
static int
nvptx_knows(const PtxJob *job)
{
    static const int known[] = {50, 52, 53, 60, 61, 62, 70, 72, 75, 80, 86, 87, 89, 90};
    if (job->suffix[0] != '\0' && !(strcmp(job->suffix, "a") == 0 && job->sm >= 90)) {
        return 0;
    }
    if (LLVM_VERSION_MAJOR >= 20 && (job->sm == 100 || job->sm == 120)) {
        return 1;
    }
    for (size_t i = 0; i < sizeof(known) / sizeof(known[0]); i++) {
        if (known[i] == job->sm) {
            return 1;
        }
    }
    return 0;
}

/* The back end: backend= or NUMBAVEC_CUDA_BACKEND when given, else libNVVM
 * when found -- or, for gufunc kernels (loops), LLVM's NVPTX back end where
 * it knows the arch: LLVM's optimiser proves the bounds checks of a loop
 * over an array's own length redundant and unrolls the loop, which
 * libNVVM's does not (a batched dot product ran 1.54x faster on an H100,
 * benchmarks/README.md). */
static int
choose_backend(PyObject *backend, PtxJob *job, int loops)
{
    const char *name = NULL;
    job->loops = loops;
    if (backend != Py_None) {
        if ((name = PyUnicode_AsUTF8AndSize(backend, NULL)) == NULL) {
            return -1;
        }
    } else {
        name = getenv("NUMBAVEC_CUDA_BACKEND");
    }
    if (name == NULL || name[0] == '\0') {
        job->use_nvvm = cuda_nvvm_available() && !(loops && nvptx_knows(job));
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

/* The diagnostics of the module being compiled (the GIL serialises
 * compilations; one per thread all the same). */
static _Thread_local Diag diag_now;

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
    PyErr_Format(nv_state.cuda_error, "%s: %s", what, msg);
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
        char *s = LLVMPrintModuleToString(mod); /* strdup's: NULL without memory */
        size = s != NULL ? strlen(s) : 0;
        text = s != NULL ? PyMem_Malloc(size + 1) : NULL;
        if (text != NULL) {
            memcpy(text, s, size + 1);
        }
        LLVMDisposeMessage(s);
        if (text == NULL) {
            return PyErr_NoMemory();
        }
    } else if (ptx_legalize_llvm7(mod) < 0
               || (text = ptx_nvvmir_legacy(mod, entries, nentries, &size)) == NULL) {
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
        PyErr_Format(nv_state.cuda_support_error, "LLVM has no NVPTX back end: %s", err);
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

/* Whether mod calls a libdevice function (__nv_*). */
static int
uses_libdevice(LLVMModuleRef mod)
{
    for (LLVMValueRef f = LLVMGetFirstFunction(mod); f; f = LLVMGetNextFunction(f)) {
        size_t len;
        const char *name = LLVMGetValueName2(f, &len);
        if (LLVMIsDeclaration(f) && len > 5 && memcmp(name, "__nv_", 5) == 0) {
            return 1;
        }
    }
    return 0;
}

static int
link_libdevice(LLVMModuleRef mod, const LLVMValueRef *keep, int nkeep, Diag *diag)
{
    size_t size;
    const char *bytes = NULL;
    if (uses_libdevice(mod) && (bytes = cuda_libdevice_bytes(&size)) == NULL) {
        return -1;
    }
    LLVMModuleRef ld = NULL;
    if (bytes != NULL) { /* else only the linkage below: a kernel without math */
        LLVMContextRef ctx = LLVMGetModuleContext(mod);
        LLVMMemoryBufferRef buf =
            LLVMCreateMemoryBufferWithMemoryRange(bytes, size, "libdevice", 0);
        /* read lazily (the module owns buf: function bodies are read when
         * linked), its functions linkonce_odr, so that the linker takes
         * only those the kernel calls, and what they call */
        if (LLVMGetBitcodeModuleInContext2(ctx, buf, &ld)) {
            LLVMDisposeMemoryBuffer(buf);
            PyErr_Format(nv_state.cuda_error, "cannot parse libdevice: %s", diag->message);
            return -1;
        }
        for (LLVMValueRef f = LLVMGetFirstFunction(ld); f; f = LLVMGetNextFunction(f)) {
            if (!LLVMIsDeclaration(f) && LLVMGetLinkage(f) == LLVMExternalLinkage) {
                LLVMSetLinkage(f, LLVMLinkOnceODRLinkage);
            }
        }
        LLVMSetTarget(ld, LLVMGetTarget(mod));
        LLVMSetDataLayout(ld, LLVMGetDataLayoutStr(mod));
        if (LLVMLinkModules2(mod, ld)) { /* ld is consumed in any case */
            PyErr_Format(nv_state.cuda_error, "linking libdevice failed: %s", diag->message);
            return -1;
        }
    }
    for (LLVMValueRef f = LLVMGetFirstFunction(mod); f; f = LLVMGetNextFunction(f)) {
        if (!is_entry(f, keep, nkeep) && !LLVMIsDeclaration(f)) {
            LLVMSetLinkage(f, LLVMInternalLinkage);
        }
    }
    for (LLVMValueRef g = LLVMGetFirstGlobal(mod); g; g = LLVMGetNextGlobal(g)) {
        size_t len;
        const char *name = LLVMGetValueName2(g, &len);
        if (!LLVMIsDeclaration(g) && strcmp(name, CC_DEVICE_STATUS) != 0) {
            LLVMSetLinkage(g, LLVMInternalLinkage); /* not the status word: the host reads it */
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
            PyErr_SetString(nv_state.cuda_error, "__nvvm_reflect used other than by a call");
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

/* A 16-byte load (v4 of a 32-bit type, v2 of a 64-bit one) at the start
 * of src, left bytes long (a line's opcode): the length of "ld.global." or
 * "ld.global.nc." before its vector, or 0. */
static size_t
wide_load(const char *src, size_t left)
{
    if (left < 20) { /* "ld.global.nc.v4.f32 " */
        return 0;
    }
    static const char *const vec[] = {"v4.f32", "v4.b32", "v4.u32", "v4.s32",
                                      "v2.f64", "v2.b64", "v2.u64", "v2.s64"};
    size_t head = strncmp(src, "ld.global.nc.", 13) == 0 ? 13
                  : strncmp(src, "ld.global.", 10) == 0  ? 10
                                                         : 0;
    for (size_t i = 0; head && i < sizeof(vec) / sizeof(vec[0]); i++) {
        if (strncmp(src + head, vec[i], 6) == 0 && isspace((unsigned char)src[head + 6])) {
            return head;
        }
    }
    return 0;
}

/*
 * The PTX of a gufunc kernel with its 16-byte loads asking the L2 for 256
 * bytes (.L2::256B, PTX 7.4, sm_80 on).  The entry's aligned copy of the
 * body makes them, from a row walked element by element, so the rest of
 * the row is on its way to the L2 when the thread asks for it; any other
 * 16-byte load gets the hint too (a gather of complex128 elements in that
 * copy: 256 bytes fetched for 16).  LLVM's NVPTX back end has no way to
 * say it.  On an H100, a batched dot product over 1e5 rows of 1024 floats:
 * 0.62 -> 0.89 of the copy bandwidth; over 1e6 rows of 32 doubles 0.70 ->
 * 0.84.  New reference, or NULL.
 */
static PyObject *
l2_prefetch(const char *src, size_t n)
{
    static const char hint[] = "L2::256B.";
    size_t found = 0;
    for (size_t i = 0; i < n; i++) {
        found += (i == 0 || src[i - 1] == '\t') && wide_load(src + i, n - i) > 0;
    }
    char *out = PyMem_Malloc(n + found * (sizeof(hint) - 1) + 1);
    if (out == NULL) {
        PyErr_NoMemory();
        return NULL;
    }
    size_t o = 0;
    for (size_t i = 0; i < n; i++) {
        size_t head = (i == 0 || src[i - 1] == '\t') ? wide_load(src + i, n - i) : 0;
        if (head > 0) {
            memcpy(out + o, src + i, head);
            memcpy(out + o + head, hint, sizeof(hint) - 1);
            o += head + sizeof(hint) - 1;
            i += head - 1;
            continue;
        }
        out[o++] = src[i];
    }
    PyObject *ptx = PyUnicode_FromStringAndSize(out, (Py_ssize_t)o);
    PyMem_Free(out);
    return ptx;
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
    if (!nvptx_knows(job)) {
        PyErr_Format(nv_state.cuda_support_error,
                     "LLVM %d's NVPTX back end does not know %s: use "
                     "libNVVM (backend='nvvm') or a lower arch",
                     LLVM_VERSION_MAJOR, cpu);
        return NULL;
    }
    LLVMTargetMachineRef tm =
        LLVMCreateTargetMachine(target, "nvptx64-nvidia-cuda", cpu, ptx_features(job->sm),
                                LLVMCodeGenLevelAggressive, LLVMRelocDefault, LLVMCodeModelDefault);
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
    if (llvm_error(cc_run_passes(mod, "globaldce,default<O3>", tm), "optimising for NVPTX") < 0) {
        goto error;
    }
    if (cc_dump_flags() & CC_DUMP_OPT) {
        char *s = LLVMPrintModuleToString(mod);
        fprintf(stderr, "--- NVPTX module (%s) ---\n%s\n", cpu, s ? s : "(no memory)");
        LLVMDisposeMessage(s);
    }
    if (LLVMTargetMachineEmitToMemoryBuffer(tm, mod, LLVMAssemblyFile, &err, &asm_buf)) {
        PyErr_Format(nv_state.cuda_error, "NVPTX code generation failed: %s", err);
        LLVMDisposeMessage(err);
        goto error;
    }
    /* PTX 7.4 is the .version of sm_89 on (ptx_features) */
    ptx = job->loops && job->sm >= 89
              ? l2_prefetch(LLVMGetBufferStart(asm_buf), LLVMGetBufferSize(asm_buf))
              : PyUnicode_FromStringAndSize(LLVMGetBufferStart(asm_buf),
                                            (Py_ssize_t)LLVMGetBufferSize(asm_buf));
error:
    if (asm_buf != NULL) {
        LLVMDisposeMemoryBuffer(asm_buf);
    }
    LLVMDisposeTargetMachine(tm);
    return ptx;
}

/* ---- the PTX back end of the driver ---- */

/* What the back end did in this process: modules compiled to PTX, stored
 * PTX taken from the cache instead (the GIL guards both). */
static struct {
    Py_ssize_t compilations, loads;
} ptx_stats;

PyObject *
ptx_info_py(PyObject *module, PyObject *unused)
{
    return Py_BuildValue("{s:n,s:n}", "compilations", ptx_stats.compilations, "loads",
                         ptx_stats.loads);
}

static int
ptx_module_new(const CcBackend *be, CcModule *m, const char *name)
{
    memset(m, 0, sizeof(*m));
    memset(&diag_now, 0, sizeof(diag_now));
    cg_init();
    m->ctx = LLVMContextCreate();
    LLVMContextSetDiagnosticHandler(m->ctx, on_diagnostic, &diag_now);
    m->mod = LLVMModuleCreateWithNameInContext(name, m->ctx);
    return 0;
}

typedef struct PtxFinish {
    const PtxJob *job;
    CcModule *m;
    const CcEntries *e;
    CcCompiled *out;
} PtxFinish;

/* The entries annotated as kernels, the module checked, then PTX through the
 * chosen back end into out->text; out->llvm keeps the IR as the back end
 * got it. */
static int
finish_step(void *arg)
{
    PtxFinish *f = arg;
    LLVMModuleRef mod = f->m->mod;
    for (int k = 0; k < f->e->n; k++) {
        annotate_kernel(mod, f->e->fns[k]);
    }
    char *msg = NULL;
    if (LLVMVerifyModule(mod, LLVMReturnStatusAction, &msg)) {
        PyErr_Format(nv_state.cuda_error,
                     "numbavec generated invalid LLVM IR (a bug in numbavec; please "
                     "report it): %s",
                     msg);
        LLVMDisposeMessage(msg);
        return -1;
    }
    LLVMDisposeMessage(msg);
    char *text = LLVMPrintModuleToString(mod); /* strdup's: NULL without memory */
    f->out->llvm = text != NULL ? PyUnicode_FromString(text) : PyErr_NoMemory();
    LLVMDisposeMessage(text);
    if (f->out->llvm != NULL) {
        /* a module with a global (a status word) takes LLVM's NVPTX back end,
         * as the reduce module does: nvvmir.c prints no globals */
        int nvvm = f->job->use_nvvm && LLVMGetFirstGlobal(mod) == NULL;
        f->out->text = nvvm ? ptx_nvvm(mod, f->e->fns, f->e->n, f->job)
                            : ptx_llvm(mod, f->e->fns, f->e->n, f->job, &diag_now);
    }
    return f->out->text != NULL ? 0 : -1;
}

/* finish_step under the guard (guard.h): out of memory in LLVM or libNVVM
 * is a MemoryError, and leaves the module's context unfreed. */
static int
ptx_finish(const CcBackend *be, CcModule *m, const CcEntries *e, const char *key, PyObject **blob,
           CcCompiled *out)
{
    PtxFinish f = {be->job, m, e, out};
    int rc = cg_run(finish_step, &f);
    m->tainted |= rc == CG_THREW;
    cc_module_dispose(m);
    if (rc < 0 || ptx_check_resolved(out->text) < 0) {
        return -1;
    }
    ptx_stats.compilations++;
    if (blob != NULL) {
        *blob = Py_NewRef(out->text);
    }
    return 0;
}

/* A stored PTX text: nothing to link, the driver loads it on first use. */
static int
ptx_load(const CcBackend *be, const char *key, PyObject *blob, const char *ir, const CcEntries *e,
         CcCompiled *out)
{
    if (!PyUnicode_Check(blob)) {
        PyErr_SetString(PyExc_ValueError, "a cuda cache entry holds PTX text");
        return -1;
    }
    out->text = Py_NewRef(blob);
    out->llvm = PyUnicode_FromString(ir);
    ptx_stats.loads += out->llvm != NULL;
    return out->llvm != NULL ? 0 : -1;
}

/* The back end for job (which it points to: job must outlive it). */
static CcBackend
ptx_backend(PtxJob *job)
{
    CcBackend be = {
        .name = "cuda",
        .target = &ptx_emit_target,
        .name_errors = 1,
        .module_new = ptx_module_new,
        .finish = ptx_finish,
        .load = ptx_load,
        .job = job,
    };
    snprintf(job->variant, sizeof(job->variant), "sm_%d%s/%s%s", job->sm, job->suffix,
             job->use_nvvm ? "nvvm" : "llvm", job->fastmath ? "/fast" : "");
    be.variant = job->variant;
    return be;
}

/* ---- the builders: the ufunc's entries, its reduce entry ---- */

static int
ufunc_wrap(const void *ctx, LLVMModuleRef mod, LLVMValueRef *kernels, int nk,
           const TsSignature *ksig, CcEntries *e)
{
    const char *names[PTX_NENTRIES];
    for (int v = 0; v < PTX_NENTRIES; v++) {
        names[v] = e->names[v];
    }
    return ptx_build_entries(mod, kernels[0], ksig, names, e->fns);
}

static const char *const ufunc_suffixes[PTX_NENTRIES] = {"_c32", "_c64", "_s32", "_s64"};

/* The grid-stride entries a cuda ufunc runs (kernels.c): also what
 * compile_ptx shows, so the PTX it shows is the PTX that runs. */
static const CcBuilder ufunc_builder = {
    .what = "cuda-ufunc",
    .form = CC_SCALAR_KERNEL,
    .nentries = PTX_NENTRIES,
    .suffixes = ufunc_suffixes,
    .wrap = ufunc_wrap,
};

static int
reduce_wrap(const void *ctx, LLVMModuleRef mod, LLVMValueRef *kernels, int nk,
            const TsSignature *ksig, CcEntries *e)
{
    e->fns[0] = ptx_build_reduce(mod, kernels[0], ksig->ret.kind, e->names[0]);
    return e->fns[0] != NULL ? 0 : -1;
}

static const char *const reduce_suffix[] = {"_r"};

static const CcBuilder reduce_builder = {
    .what = "cuda-reduce",
    .form = CC_SCALAR_KERNEL,
    .nentries = 1,
    .suffixes = reduce_suffix,
    .wrap = reduce_wrap,
};

/* A kernel's PTX must call nothing outside itself (cuda.h), but vprintf,
 * which the driver provides (print() in a kernel). */
int
ptx_check_resolved(PyObject *ptx)
{
    const char *text = PyUnicode_AsUTF8AndSize(ptx, NULL);
    if (text == NULL) {
        return -1;
    }
    for (const char *p = strstr(text, ".extern .func"); p != NULL; p = strstr(p, ".extern .func")) {
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
        if (strcmp(name, "vprintf") == 0) {
            continue;
        }
        PyErr_Format(nv_state.cuda_error,
                     "the PTX calls %s, which neither libdevice nor the GPU provides (a bug in "
                     "numbavec's GPU math; please report it)",
                     name);
        return -1;
    }
    return 0;
}

/* A PTX-safe symbol base: "nv_" and the Python name, anything else as '_'. */
void
ptx_symbol_base(const char *pyname, char *buf, size_t size)
{
    snprintf(buf, size, "nv_%.100s", pyname != NULL ? pyname : "kernel");
    for (char *p = buf; *p; p++) {
        if (!isalnum((unsigned char)*p) && *p != '_') {
            *p = '_';
        }
    }
}

static void
dump_ptx(const char *name, const PtxJob *job, const char *arch, PyObject *ptx)
{
    if (ptx != NULL && (cc_dump_flags() & CC_DUMP_PTX)) {
        fprintf(stderr, "--- PTX %s (%s, %s) ---\n%s\n", name, arch,
                job->use_nvvm ? "nvvm" : "llvm", PyUnicode_AsUTF8AndSize(ptx, NULL));
    }
}

PyObject *
ptx_compile_py(PyObject *module, PyObject *args, PyObject *kwargs)
{
    static char *kwlist[] = {"pyfunc", "funcdef", "source",   "signature",
                             "arch",   "backend", "fastmath", NULL};
    PyObject *pyfunc, *funcdef, *location, *signature, *backend = Py_None;
    const char *arch = "sm_90";
    int fastmath = 0;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "OOOO|sOp", kwlist, &pyfunc, &funcdef, &location,
                                     &signature, &arch, &backend, &fastmath)) {
        return NULL;
    }
    PtxJob job = {0};
    TsSignature sig;
    job.fastmath = fastmath;
    if (parse_arch(arch, &job) < 0 || choose_backend(backend, &job, 0) < 0
        || ts_parse_signature(signature, &sig) < 0) {
        return NULL;
    }
    if (sig.nargs == 0 || sig.ret.kind == TS_VOID) {
        PyErr_SetString(PyExc_TypeError, "a CUDA ufunc kernel takes arguments and returns "
                                         "a scalar");
        return NULL;
    }
    PyObject *pyname = PyObject_GetAttrString(pyfunc, "__name__");
    const char *s =
        pyname != NULL && PyUnicode_Check(pyname) ? PyUnicode_AsUTF8AndSize(pyname, NULL) : NULL;
    PyErr_Clear();
    char base[CC_NAME_SIZE];
    ptx_symbol_base(s, base, sizeof(base));
    Py_XDECREF(pyname);
    CcKernel *k = cc_kernel_new(pyfunc, funcdef, location, base, fastmath, 1, NULL, NULL);
    if (k == NULL) {
        return NULL;
    }
    CcBackend be = ptx_backend(&job);
    CcCompiled out;
    PyObject *ptx = NULL;
    if (cc_compile(k, &sig, &ufunc_builder, &be, base, &out) == 0) {
        ptx = Py_NewRef(out.text);
        cc_compiled_clear(&out);
    }
    cc_kernel_free(k);
    dump_ptx(base, &job, arch, ptx);
    return ptx;
}

/* ---- one signature through another builder (a cuda gufunc's) ---- */

int
ptx_loops_take_nvptx(const char *arch, PyObject *backend)
{
    PtxJob job = {0};
    if (parse_arch(arch, &job) < 0 || choose_backend(backend, &job, 1) < 0) {
        return -1;
    }
    return !job.use_nvvm;
}

int
ptx_compile_with(CcKernel *k, const TsSignature *sig, const char *arch, PyObject *backend,
                 const CcBuilder *b, const char *name, CcCompiled *out)
{
    PtxJob job = {0};
    job.fastmath = k->fastmath;
    if (parse_arch(arch, &job) < 0 || choose_backend(backend, &job, 1) < 0) {
        return -1;
    }
    CcBackend be = ptx_backend(&job);
    if (cc_compile(k, sig, b, &be, name, out) < 0) {
        return -1;
    }
    dump_ptx(name, &job, arch, out->text);
    return 0;
}

/* ---- one signature of a cuda ufunc ---- */

void
ptx_code_clear(PtxCode *c)
{
    Py_CLEAR(c->ptx);
    Py_CLEAR(c->llvm);
    Py_CLEAR(c->reduce_ptx);
    Py_CLEAR(c->var_types);
    Py_CLEAR(c->raise_sites);
}

int
ptx_compile_ufunc(CcKernel *k, TsSignature *sig, const char *arch, PyObject *backend, int reduce,
                  const char *name, PtxCode *out)
{
    PtxJob job = {0};
    CcCompiled c;
    job.fastmath = k->fastmath;
    memset(out, 0, sizeof(*out));
    if (parse_arch(arch, &job) < 0 || choose_backend(backend, &job, 0) < 0) {
        return -1;
    }
    CcBackend be = ptx_backend(&job);
    if (cc_compile(k, sig, &ufunc_builder, &be, name, &c) < 0) {
        return -1;
    }
    *sig = c.sig;
    out->ptx = Py_NewRef(c.text);
    out->llvm = Py_NewRef(c.llvm);
    out->var_types = Py_NewRef(c.var_types);
    out->raise_sites = Py_XNewRef(c.raise_sites);
    cc_compiled_clear(&c);
    if (reduce) {
        PtxJob rjob = job;
        rjob.use_nvvm = 0; /* shared memory: see cuda.h */
        CcBackend rbe = ptx_backend(&rjob);
        if (cc_compile(k, sig, &reduce_builder, &rbe, name, &c) < 0) {
            ptx_code_clear(out);
            return -1;
        }
        out->reduce_ptx = Py_NewRef(c.text);
        cc_compiled_clear(&c);
    }
    dump_ptx(name, &job, arch, out->ptx);
    if (out->reduce_ptx != NULL) {
        PtxJob rjob = job;
        rjob.use_nvvm = 0;
        dump_ptx(name, &rjob, arch, out->reduce_ptx);
    }
    return 0;
}
