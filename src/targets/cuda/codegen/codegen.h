/*
 * codegen.h - cuda/codegen/: kernels made into PTX, without a GPU (Numba's
 * cuda/codegen.py, cudadrv/nvvm.py and the kernel wrappers).  The interface
 * of this folder, with a section per file; ufunc/ and cudamodule.c include
 * it, and it includes driver/ (the toolkit: libNVVM, libdevice) and the
 * compiler, nothing of array/ or ufunc/.
 *
 *   kernels.c  the entry points of a cuda ufunc, its reduce and a cuda
 *              gufunc (grid-stride loops) in LLVM IR, around the kernel
 *   nvvmir.c   the LLVM 7 typed-pointer text dialect libNVVM wants
 *   ptx.c      kernel modules -> PTX (libNVVM or LLVM's NVPTX back end):
 *              the compile entry points of the cuda ufunc and gufunc
 *
 * Cross-file names take the prefix ptx_ (types Ptx, constants PTX_).
 */
#ifndef NV_CUDA_CODEGEN_H
#define NV_CUDA_CODEGEN_H

#include "common.h"
#include "compiler/compiler.h"
#include "targets/cuda/driver/driver.h"

/* ---- kernels.c ---- */

/* The entries of one signature's module, in this order. */
enum { PTX_C32, PTX_C64, PTX_S32, PTX_S64, PTX_NENTRIES };

/* How many dimensions the strided entries take (the 4 KiB parameter space). */
int ptx_kernel_dims(int nin, int wide);
/* Builds the entries names[PTX_C32 ...] (<base>_c32, _c64, _s32, _s64)
 * around kernel into mod.  0/-1. */
int ptx_build_entries(LLVMModuleRef mod, LLVMValueRef kernel, const TsSignature *sig,
                      const char *const names[PTX_NENTRIES], LLVMValueRef entries[PTX_NENTRIES]);
/* Builds the block reduction <name> of the binary kernel over kind. */
LLVMValueRef ptx_build_reduce(LLVMModuleRef mod, LLVMValueRef kernel, TsKind kind,
                              const char *name);
/* A gufunc's entry <name>(i64 *desc, i32 *status) around the body that
 * gufunc/loops.c emits (GuBodyFn: one outer iteration per thread); ndims:
 * each argument's core dimensions; aligned: a second copy of the body for
 * launches whose rows start on 16 bytes (for LLVM's NVPTX back end, which
 * uses the hint); the layout of desc is in kernels.c. */
LLVMValueRef ptx_build_gufunc_entry(LLVMModuleRef mod, LLVMValueRef body, int nargs,
                                    const int *ndims, int ndimnames, int aligned, const char *name);
enum { PTX_REDUCE_DIMS = NPY_MAXDIMS };

/* ---- nvvmir.c ---- */

/*
 * Prints mod in the LLVM 7 typed-pointer dialect of NVVM IR (every pointer
 * an i8* with bitcasts at each use; !nvvmir.version 2.0), with `kernel`
 * annotated as the entry point.  Returns a PyMem string (free with
 * PyMem_Free), or NULL with an exception naming an unsupported construct.
 */
char *ptx_nvvmir_legacy(LLVMModuleRef mod, const LLVMValueRef *kernels, int nkernels, size_t *size);
/* Rewrites intrinsics that LLVM 7 lacks (fptosi.sat, minimum, maximum) into
 * internal functions of plain instructions.  0/-1. */
int ptx_legalize_llvm7(LLVMModuleRef mod);

/* ---- ptx.c ---- */

/* "sm_90", "compute_90", "sm_90a", "90" -> 90 and "" or "a".  0, or -1
 * with ValueError. */
int ptx_parse_arch(const char *arch, int *sm, char suffix[4]);
/*
 * One signature's cuda ufunc code: the PTX of the elementwise module
 * (entries "<name>_c32" ...), its LLVM IR before code generation, and, when
 * reduce, the PTX of the reduce module ("<name>_r", always through the NVPTX
 * back end: it needs shared memory, a global the NVVM 7 printer lacks).
 * sig->ret may be TS_INFER (filled in).  New references, 0/-1.
 */
typedef struct PtxCode {
    PyObject *ptx, *llvm, *reduce_ptx;
    PyObject *var_types;   /* {variable: type name} */
    PyObject *raise_sites; /* the kernel's raise sites (CcCompiled.raise_sites), or NULL */
} PtxCode;
int ptx_compile_ufunc(CcKernel *k, TsSignature *sig, const char *arch, PyObject *backend,
                      int reduce, const char *name, PtxCode *out);
/* Whether ptx_compile_with takes LLVM's NVPTX back end for a gufunc's
 * kernels (1), or libNVVM (0); -1 with an exception. */
int ptx_loops_take_nvptx(const char *arch, PyObject *backend);
/* sig of k compiled to PTX for arch with builder b (a cuda gufunc's): the
 * driver's cc_compile with the PTX back end.  0/-1. */
int ptx_compile_with(CcKernel *k, const TsSignature *sig, const char *arch, PyObject *backend,
                     const CcBuilder *b, const char *name, CcCompiled *out);
/* "nv_" and pyname made a PTX identifier: the symbol base of PTX entries. */
void ptx_symbol_base(const char *pyname, char *buf, size_t size);
void ptx_code_clear(PtxCode *c);
/*
 * 0 when the PTX text (a str) calls nothing outside itself: libdevice is
 * linked in (or added by libNVVM) and device functions are inlined.  An
 * `.extern .func` left in it is a math function emit.c called that the GPU
 * does not have (the driver would fail to load the module): -1 with a
 * CudaError naming it.
 */
int ptx_check_resolved(PyObject *ptx);
/* How emit.c lowers math for the GPU: libdevice's __nv_* functions. */
extern const CcEmitTarget ptx_emit_target;
/* _core._cuda_ptx (numbavec.cuda.compile_ptx): one scalar kernel's PTX. */
PyObject *ptx_compile_py(PyObject *module, PyObject *args, PyObject *kwargs);
/* _core._cuda_ptx_info(): {compilations, loads} of the PTX back end (tests). */
PyObject *ptx_info_py(PyObject *module, PyObject *unused);

#endif /* NV_CUDA_CODEGEN_H */
