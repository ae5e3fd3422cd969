/*
 * driver.h - cuda/driver/: what talks to the CUDA driver and finds the
 * toolkit (Numba's cudadrv/).  The interface of this folder, with a
 * section per file; array/, codegen/ and ufunc/ include it, and it
 * includes none of them.  Nothing here needs CUDA to build or import: the
 * driver and libNVVM are opened with dlopen on first use.
 *
 *   drvapi.h    the driver API subset we call: types, constants, entry points
 *   driver.c    libcuda.so.1: loading, errors, primary context, memory, detect()
 *   stream.c    Stream and Event types; `stream=` argument conversion
 *   launch.c    PTX loaded into the context from Python; cuLaunchKernel from C
 *   toolkit.c   finding libNVVM and libdevice; libNVVM compilation
 *   staging.c   host arrays in chunks through pinned buffers, two streams
 *
 * Cross-file names take the prefix cuda_ (types Cuda), as the driver table
 * cuda_drv does; the driver's own types and constants keep its names (CU).
 */
#ifndef NV_CUDA_DRIVER_H
#define NV_CUDA_DRIVER_H

#include "common.h"
#include "targets/cuda/driver/drvapi.h"
#include "typesig/typesig.h" /* TS_MAXARGS: the operands of a staging job */

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
/* The CUDA device numbavec uses (0 before the driver is loaded). */
int cuda_device_ordinal(void);
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

/* ---- launch.c ---- */

int cuda_launch_init(PyObject *module); /* _cuda_load_ptx, CudaModule */

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

#endif /* NV_CUDA_DRIVER_H */
