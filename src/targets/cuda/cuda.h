/*
 * cuda.h - numbavec's own GPU runtime and PTX generation (the cuda target's
 * foundation).  Nothing here needs CUDA to build or import: the driver and
 * libNVVM are opened with dlopen on first use.
 *
 *   driver.c       libcuda.so.1: loading, errors, primary context, detect()
 *   stream.c       Stream and Event types; `stream=` argument conversion
 *   devicearray.c  DeviceNDArray: allocation, views (devicearray.h: shared)
 *   devcopy.c      its copies: to and from the host, to_device, device_array*
 *   devexport.c    its exports: __cuda_array_interface__, __dlpack__
 *   interop.c      as_cuda_array: foreign CAI and DLPack arrays, checked
 *   toolkit.c      finding libNVVM and libdevice; libNVVM compilation
 *   nvvmir.c       the LLVM 7 typed-pointer text dialect libNVVM wants
 *   ptx.c          kernel modules -> PTX (libNVVM or LLVM's NVPTX back end)
 *   launch.c       PTX loaded into the context; cuLaunchKernel from C
 *   kernels.c      a cuda ufunc's entry points (grid-stride loops) in LLVM IR
 *   cufunc.c       the cuda ufunc object and its loops (cufunc.h: shared types)
 *   cucall.c       its calls: operands, broadcasting, launch plan, out=, copies
 *   cureduce.c     its reduce
 *   staging.c      host arrays in chunks through pinned buffers, two streams
 *   cudamodule.c   _core's cuda functions and exceptions
 */
#ifndef NV_CUDA_H
#define NV_CUDA_H

#include "common.h"
#include "compiler/compiler.h"
#include "targets/cuda/driver/drvapi.h"

/* ---- cudamodule.c: numbavec.cuda's functions and exceptions (in nv_state) ---- */

int cuda_init_module(PyObject *module); /* 0/-1 */

/* ---- driver.c ---- */

/* The loaded driver's entry points; NULL until cuda_driver() succeeds. */
extern const CudaDriver *cuda_drv;

/*
 * Loads libcuda.so.1, initialises it and retains device 0's primary context
 * (made current on the calling thread).  Returns the driver table, or NULL
 * with CudaSupportError saying what is missing.
 */
const CudaDriver *cuda_driver(void);
/* 1 when cuda_driver() would succeed; never raises. */
int cuda_is_available(void);
/* Makes the primary context current on this thread; 0/-1. */
int cuda_enter(void);
/*
 * Turns a failed CUresult into CudaError("NAME: string (what)") or, for
 * CUDA_ERROR_OUT_OF_MEMORY, MemoryError.  Returns -1; 0 for CUDA_SUCCESS.
 */
int cuda_check(CUresult rc, const char *what);
/* {'driver_version': (12, 4), 'devices': [{...}, ...]}: new reference. */
PyObject *cuda_detect(void);
PyObject *cuda_unavailable_reason(void); /* str, or None when available */
CUdevice cuda_device(void);              /* the device in use (after cuda_driver) */
/*
 * Stream-ordered device memory (free it with cuMemFreeAsync when *async,
 * else cuMemFree): from numbavec's own pool, which keeps freed memory for
 * the next allocation, trimmed and tried again once when it runs out;
 * without one, from the device's current pool, or cuMemAlloc where
 * stream-ordered allocation is not supported.  Returns the CUresult.
 */
CUresult cuda_mem_alloc(CUdeviceptr *p, size_t bytes, CUstream s, int *async);
/* Synchronises the context and hands the memory our pool keeps back to the
 * system.  Called with the GIL, which it releases while it waits. */
void cuda_mem_trim(void);

/* ---- stream.c ---- */

/*
 * The CUstream a `stream=` argument names: None or 0 (the default stream),
 * our Stream, an int handle, or an object with __cuda_stream__ (a
 * (version, handle) tuple).  0/-1.
 */
int cuda_stream_arg(PyObject *obj, CUstream *out);
/* Waits for s's work without the GIL (context current); 0/-1. */
int cuda_stream_wait(CUstream s);
PyObject *cuda_stream_new(PyObject *module, PyObject *args); /* stream() */
PyObject *cuda_event_new(PyObject *module, PyObject *args);  /* event() */
int cuda_stream_init_types(PyObject *module);

/* ---- devicearray.c ---- */

int cuda_devicearray_init(PyObject *module);

/* What a cuda ufunc call (cucall.c, cureduce.c) reads of a DeviceNDArray
 * (dtype borrowed). */
typedef struct CudaArrayInfo {
    CUdeviceptr ptr;
    int nd, readonly;
    int foreign; /* over another library's memory, which may since have been freed */
    Py_ssize_t shape[NPY_MAXDIMS], strides[NPY_MAXDIMS];
    PyArray_Descr *dtype;
} CudaArrayInfo;
int cuda_array_info(PyObject *obj, CudaArrayInfo *info); /* 0/-1 */
int cuda_is_device_array(PyObject *obj);
/* A new C-contiguous device array on stream (steals dtype); new reference. */
PyObject *cuda_array_empty(PyArray_Descr *dtype, int nd, const Py_ssize_t *shape, PyObject *stream);
/* A DeviceNDArray over foreign memory (never freed here) that keeps owner
 * alive; steals dtype; strides NULL: C-contiguous.  New reference. */
PyObject *cuda_array_wrap(PyArray_Descr *dtype, int nd, const Py_ssize_t *shape,
                          const Py_ssize_t *strides, CUdeviceptr ptr, PyObject *owner,
                          int readonly);

/* ---- devexport.c ---- */

/* The CUDA device numbavec uses (0 before the driver is loaded). */
int cuda_device_ordinal(void);

/* ---- interop.c ---- */

/* as_cuda_array(obj): ours, CAI or DLPack wrapped without a copy, every
 * field checked (TypeError/ValueError naming it); new reference. */
PyObject *cuda_as_array(PyObject *obj);
/* 1 with *out (new reference) when obj is a device array (ours, or one it
 * exports through CAI or DLPack); 0 when it exports neither protocol (no
 * exception); -1 with an exception. */
int cuda_foreign_array(PyObject *obj, PyObject **out);
/* 0 when the bytes [lo, hi) lie in one live device allocation; else -1 with
 * CudaError naming the driver's error, or ValueError past its end.  A call
 * checks each operand that CudaArrayInfo.foreign marks before it launches. */
int cuda_check_foreign_memory(CUdeviceptr lo, CUdeviceptr hi);

/* ---- toolkit.c ---- */

/* Paths found for libNVVM and libdevice (borrowed C strings or NULL). */
const char *cuda_libnvvm_path(void);
const char *cuda_libdevice_path(void);
/* The bytes of libdevice.10.bc, read once; NULL with an exception. */
const char *cuda_libdevice_bytes(size_t *size);
int cuda_nvvm_available(void);     /* libNVVM loads; never raises */
PyObject *cuda_toolkit_info(void); /* {'libnvvm':..., 'libdevice':..., 'nvvm_version':...} */
/*
 * Compiles NVVM IR text (ir, size bytes) with libdevice lazily added into
 * PTX for `arch` ("compute_90"), with opts (NULL-terminated).  Returns a new
 * str, or NULL with CudaError/CudaSupportError and libNVVM's log.
 */
PyObject *cuda_nvvm_compile(const char *ir, size_t size, const char *arch, const char *const *opts);

/* ---- nvvmir.c ---- */

/*
 * Prints mod in the LLVM 7 typed-pointer dialect of NVVM IR (every pointer
 * an i8* with bitcasts at each use; !nvvmir.version 2.0), with `kernel`
 * annotated as the entry point.  Returns a PyMem string (free with
 * PyMem_Free), or NULL with an exception naming an unsupported construct.
 */
char *cuda_nvvmir_legacy(LLVMModuleRef mod, const LLVMValueRef *kernels, int nkernels,
                         size_t *size);
/* Rewrites intrinsics that LLVM 7 lacks (fptosi.sat, minimum, maximum) into
 * internal functions of plain instructions.  0/-1. */
int cuda_legalize_llvm7(LLVMModuleRef mod);

/* ---- launch.c ---- */

int cuda_launch_init(PyObject *module); /* _cuda_load_ptx, CudaModule */

/* ---- kernels.c ---- */

/* The entries of one signature's module, in this order. */
enum { CUDA_C32, CUDA_C64, CUDA_S32, CUDA_S64, CUDA_NENTRIES };

/* How many dimensions the strided entries take (the 4 KiB parameter space). */
int cuda_kernel_dims(int nin, int wide);
/* Builds the entries names[CUDA_C32 ...] (<base>_c32, _c64, _s32, _s64)
 * around kernel into mod.  0/-1. */
int cuda_build_entries(LLVMModuleRef mod, LLVMValueRef kernel, const TsSignature *sig,
                       const char *const names[CUDA_NENTRIES], LLVMValueRef entries[CUDA_NENTRIES]);
/* Builds the block reduction <name> of the binary kernel over kind. */
LLVMValueRef cuda_build_reduce(LLVMModuleRef mod, LLVMValueRef kernel, TsKind kind,
                               const char *name);
/* A gufunc's entry <name>(i64 *desc, i32 *status) around the body that
 * gufunc/loops.c emits (GuBodyFn: one outer iteration per thread); ndims:
 * each argument's core dimensions; aligned: a second copy of the body for
 * launches whose rows start on 16 bytes (for LLVM's NVPTX back end, which
 * uses the hint); the layout of desc is in kernels.c. */
LLVMValueRef cuda_build_gufunc_entry(LLVMModuleRef mod, LLVMValueRef body, int nargs,
                                     const int *ndims, int ndimnames, int aligned,
                                     const char *name);
enum { CUDA_REDUCE_DIMS = NPY_MAXDIMS };

/* ---- ptx.c ---- */

/*
 * One signature's cuda ufunc code: the PTX of the elementwise module
 * (entries "<name>_c32" ...), its LLVM IR before code generation, and, when
 * reduce, the PTX of the reduce module ("<name>_r", always through the NVPTX
 * back end: it needs shared memory, a global the NVVM 7 printer lacks).
 * sig->ret may be TS_INFER (filled in).  New references, 0/-1.
 */
/* "sm_90", "compute_90", "sm_90a", "90" -> 90 and "" or "a".  0, or -1
 * with ValueError. */
int cuda_parse_arch(const char *arch, int *sm, char suffix[4]);
typedef struct CudaCode {
    PyObject *ptx, *llvm, *reduce_ptx;
    PyObject *var_types;   /* {variable: type name} */
    PyObject *raise_sites; /* the kernel's raise sites (CcCompiled.raise_sites), or NULL */
} CudaCode;
int cuda_compile_ufunc(CcKernel *k, TsSignature *sig, const char *arch, PyObject *backend,
                       int reduce, const char *name, CudaCode *out);
/* Whether cuda_compile_with takes LLVM's NVPTX back end for a gufunc's
 * kernels (1), or libNVVM (0); -1 with an exception. */
int cuda_loops_take_nvptx(const char *arch, PyObject *backend);
/* sig of k compiled to PTX for arch with builder b (a cuda gufunc's): the
 * driver's cc_compile with the PTX back end.  0/-1. */
int cuda_compile_with(CcKernel *k, const TsSignature *sig, const char *arch, PyObject *backend,
                      const CcBuilder *b, const char *name, CcCompiled *out);
/* "nv_" and pyname made a PTX identifier: the symbol base of PTX entries. */
void cuda_symbol_base(const char *pyname, char *buf, size_t size);
void cuda_code_clear(CudaCode *c);
/*
 * 0 when the PTX text (a str) calls nothing outside itself: libdevice is
 * linked in (or added by libNVVM) and device functions are inlined.  An
 * `.extern .func` left in it is a math function emit.c called that the GPU
 * does not have (the driver would fail to load the module): -1 with a
 * CudaError naming it.
 */
int cuda_check_resolved(PyObject *ptx);

/* ---- staging.c ---- */

/* One chunk of n elements, queued on s: operand k's chunk at dev[k] (0 for
 * one the job does not chunk), and `aux` bytes of pinned memory that the
 * launch may fill and copy to aux_dev first (a cuda gufunc's descriptor).
 * Called without the GIL; returns the CUresult. */
typedef CUresult (*CudaChunkFn)(void *ctx, const CUdeviceptr *dev, char *aux, CUdeviceptr aux_dev,
                                Py_ssize_t n, CUstream s);

/* A host call of n elements (a cuda ufunc's elements, a cuda gufunc's outer
 * iterations), in chunks: operand k's data is C-contiguous, unit[k] bytes an
 * element, in the loop's dtype; operands [0, nin) are copied in, [nin, nops)
 * copied out.  unit[k] 0: operand k is not chunked (a scalar, an array the
 * launch passes whole, an empty core). */
typedef struct CudaStaged {
    int nops, nin;
    char *data[TS_MAXARGS + 1];
    Py_ssize_t unit[TS_MAXARGS + 1];
    size_t aux;
    Py_ssize_t n;
    CudaChunkFn launch;
    void *ctx;
} CudaStaged;

/* Elements per chunk for the job's units (0: an element is too large). */
Py_ssize_t cuda_stage_chunk(const CudaStaged *job);
/* 1 when the job is worth staging (more than one chunk, staging enabled). */
int cuda_stage_worth(const CudaStaged *job);
/* Runs the job through the staging slots; returns when out is written.
 * 0; 1 (no exception) when the slots could not be allocated (the caller
 * copies whole arrays instead); -1 with an exception. */
int cuda_stage_run(const CudaStaged *job);
/* _cuda_staging(on=None) -> the previous setting (benchmarks compare). */
PyObject *cuda_staging_py(PyObject *module, PyObject *args);
/* Test hook _cuda_gufunc_geometry(block, sms, n, lines) -> (grid, block):
 * a cuda gufunc launch's shape (cugulaunch.c, geometry). */
PyObject *cg_geometry_py(PyObject *module, PyObject *args);

/* ---- cufunc.c ---- */

int cuda_cufunc_init(PyObject *module);

/* ---- cugufunc.c ---- */

struct TgTarget;
struct TgRequest;
/* The cuda target's guvectorize factory (target.h).  New reference or NULL. */
PyObject *cuda_make_guvectorize(const struct TgTarget *t, struct TgRequest *r);
int cuda_gufunc_init(PyObject *module);

/* How emit.c lowers math for the GPU: libdevice's __nv_* functions. */
extern const CcEmitTarget cuda_emit_target;
PyObject *cuda_ptx_py(PyObject *module, PyObject *args, PyObject *kwargs);
/* _core._cuda_ptx_info(): {compilations, loads} of the PTX back end (tests). */
PyObject *cuda_ptx_info_py(PyObject *module, PyObject *unused);

#endif /* NV_CUDA_H */
