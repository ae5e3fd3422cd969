/*
 * drvapi.h - the part of the CUDA driver API numbavec calls, declared here so
 * that no CUDA header is needed to build.  Types and values follow the
 * driver's cuda.h (ABI-stable since CUDA 3.2 for the _v2 names used); the
 * entry points are resolved from libcuda.so.1 by driver.c into CudaDriver.
 */
#ifndef NV_CUDA_DRVAPI_H
#define NV_CUDA_DRVAPI_H

#include <stddef.h>

typedef int CUresult;
typedef int CUdevice;
typedef unsigned long long CUdeviceptr;
typedef struct CUctx_st *CUcontext;
typedef struct CUmod_st *CUmodule;
typedef struct CUfunc_st *CUfunction;
typedef struct CUstream_st *CUstream;
typedef struct CUevent_st *CUevent;
typedef struct CUarray_st *CUarray;
typedef struct CUmemPoolHandle_st *CUmemoryPool;
typedef size_t (*CUoccupancyB2DSize)(int block_size);

enum {
    CUDA_SUCCESS = 0,
    CUDA_ERROR_INVALID_VALUE = 1,
    CUDA_ERROR_OUT_OF_MEMORY = 2,
    CUDA_ERROR_NOT_INITIALIZED = 3,
    CUDA_ERROR_NO_DEVICE = 100,
    CUDA_ERROR_UNSUPPORTED_PTX_VERSION = 222,
    CUDA_ERROR_NOT_SUPPORTED = 801,
};

/* CUdevice_attribute values */
enum {
    CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK = 1,
    CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT = 16,
    CU_DEVICE_ATTRIBUTE_PCI_BUS_ID = 33,
    CU_DEVICE_ATTRIBUTE_PCI_DEVICE_ID = 34,
    CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR = 75,
    CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR = 76,
    CU_DEVICE_ATTRIBUTE_MEMORY_POOLS_SUPPORTED = 115,
};

enum { CU_MEMORYTYPE_HOST = 1, CU_MEMORYTYPE_DEVICE = 2 };
enum { CU_STREAM_NON_BLOCKING = 1 };
enum { CU_EVENT_DEFAULT = 0, CU_EVENT_DISABLE_TIMING = 2 };
enum { CU_MEMHOSTALLOC_PORTABLE = 1 };
enum { CU_POINTER_ATTRIBUTE_RANGE_START_ADDR = 11, CU_POINTER_ATTRIBUTE_RANGE_SIZE = 12 };
enum { CU_MEMPOOL_ATTR_RELEASE_THRESHOLD = 4 };
enum { CU_MEM_ALLOCATION_TYPE_PINNED = 1, CU_MEM_LOCATION_TYPE_DEVICE = 1 };

/* CUmemPoolProps (v1): the fields we set, the rest zero.  reserved is
 * larger than the driver's own 54 bytes: what it reads is ours and zero. */
typedef struct CUmemPoolProps {
    int allocType, handleTypes;
    struct {
        int type, id;
    } location;
    void *win32SecurityAttributes;
    size_t maxSize;
    unsigned short usage;
    unsigned char reserved[64];
} CUmemPoolProps;

typedef struct CUDA_MEMCPY2D {
    size_t srcXInBytes, srcY;
    int srcMemoryType;
    const void *srcHost;
    CUdeviceptr srcDevice;
    CUarray srcArray;
    size_t srcPitch;
    size_t dstXInBytes, dstY;
    int dstMemoryType;
    void *dstHost;
    CUdeviceptr dstDevice;
    CUarray dstArray;
    size_t dstPitch;
    size_t WidthInBytes, Height;
} CUDA_MEMCPY2D;

/* One field per entry point; X(name, symbol, return, params). */
#define CUDA_DRIVER_ENTRY_POINTS(X)                                                                \
    X(Init, "cuInit", (unsigned flags))                                                            \
    X(DriverGetVersion, "cuDriverGetVersion", (int *version))                                      \
    X(DeviceGetCount, "cuDeviceGetCount", (int *count))                                            \
    X(DeviceGet, "cuDeviceGet", (CUdevice * dev, int ordinal))                                     \
    X(DeviceGetName, "cuDeviceGetName", (char *name, int len, CUdevice dev))                       \
    X(DeviceGetAttribute, "cuDeviceGetAttribute", (int *v, int attr, CUdevice dev))                \
    X(DeviceTotalMem, "cuDeviceTotalMem_v2", (size_t * bytes, CUdevice dev))                       \
    X(DevicePrimaryCtxRetain, "cuDevicePrimaryCtxRetain", (CUcontext * ctx, CUdevice d))           \
    X(DevicePrimaryCtxRelease, "cuDevicePrimaryCtxRelease_v2", (CUdevice dev))                     \
    X(CtxSetCurrent, "cuCtxSetCurrent", (CUcontext ctx))                                           \
    X(CtxGetCurrent, "cuCtxGetCurrent", (CUcontext * ctx))                                         \
    X(CtxPushCurrent, "cuCtxPushCurrent_v2", (CUcontext ctx))                                      \
    X(CtxPopCurrent, "cuCtxPopCurrent_v2", (CUcontext * ctx))                                      \
    X(CtxSynchronize, "cuCtxSynchronize", (void))                                                  \
    X(MemAllocAsync, "cuMemAllocAsync", (CUdeviceptr * p, size_t n, CUstream s))                   \
    X(MemFreeAsync, "cuMemFreeAsync", (CUdeviceptr p, CUstream s))                                 \
    X(MemPoolCreate, "cuMemPoolCreate", (CUmemoryPool * pool, const CUmemPoolProps *props))        \
    X(MemAllocFromPoolAsync, "cuMemAllocFromPoolAsync",                                            \
      (CUdeviceptr * p, size_t n, CUmemoryPool pool, CUstream s))                                  \
    X(MemPoolSetAttribute, "cuMemPoolSetAttribute", (CUmemoryPool pool, int attr, void *value))    \
    X(MemPoolTrimTo, "cuMemPoolTrimTo", (CUmemoryPool pool, size_t keep))                          \
    X(MemAlloc, "cuMemAlloc_v2", (CUdeviceptr * p, size_t n))                                      \
    X(MemFree, "cuMemFree_v2", (CUdeviceptr p))                                                    \
    X(MemcpyHtoDAsync, "cuMemcpyHtoDAsync_v2",                                                     \
      (CUdeviceptr dst, const void *src, size_t n, CUstream s))                                    \
    X(MemcpyDtoHAsync, "cuMemcpyDtoHAsync_v2", (void *dst, CUdeviceptr src, size_t n, CUstream s)) \
    X(MemcpyDtoDAsync, "cuMemcpyDtoDAsync_v2",                                                     \
      (CUdeviceptr dst, CUdeviceptr src, size_t n, CUstream s))                                    \
    X(Memcpy2DAsync, "cuMemcpy2DAsync_v2", (const CUDA_MEMCPY2D *p, CUstream s))                   \
    X(MemHostAlloc, "cuMemHostAlloc", (void **p, size_t n, unsigned flags))                        \
    X(MemFreeHost, "cuMemFreeHost", (void *p))                                                     \
    X(MemGetInfo, "cuMemGetInfo_v2", (size_t * free_bytes, size_t * total))                        \
    X(StreamCreate, "cuStreamCreate", (CUstream * s, unsigned flags))                              \
    X(StreamSynchronize, "cuStreamSynchronize", (CUstream s))                                      \
    X(StreamDestroy, "cuStreamDestroy_v2", (CUstream s))                                           \
    X(EventCreate, "cuEventCreate", (CUevent * e, unsigned flags))                                 \
    X(EventRecord, "cuEventRecord", (CUevent e, CUstream s))                                       \
    X(EventSynchronize, "cuEventSynchronize", (CUevent e))                                         \
    X(EventElapsedTime, "cuEventElapsedTime", (float *ms, CUevent a, CUevent b))                   \
    X(EventDestroy, "cuEventDestroy_v2", (CUevent e))                                              \
    X(ModuleLoadDataEx, "cuModuleLoadDataEx",                                                      \
      (CUmodule * m, const void *image, unsigned n, int *opts, void **vals))                       \
    X(ModuleUnload, "cuModuleUnload", (CUmodule m))                                                \
    X(ModuleGetGlobal, "cuModuleGetGlobal_v2",                                                     \
      (CUdeviceptr * p, size_t * bytes, CUmodule m, const char *name))                             \
    X(ModuleGetFunction, "cuModuleGetFunction", (CUfunction * f, CUmodule m, const char *n))       \
    X(LaunchKernel, "cuLaunchKernel",                                                              \
      (CUfunction f, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by, unsigned bz, \
       unsigned shmem, CUstream s, void **params, void **extra))                                   \
    X(OccupancyMaxPotentialBlockSize, "cuOccupancyMaxPotentialBlockSize",                          \
      (int *min_grid, int *block, CUfunction f, CUoccupancyB2DSize fn, size_t shmem, int limit))   \
    X(PointerGetAttribute, "cuPointerGetAttribute", (void *data, int attr, CUdeviceptr p))         \
    X(GetErrorName, "cuGetErrorName", (CUresult rc, const char **s))                               \
    X(GetErrorString, "cuGetErrorString", (CUresult rc, const char **s))

typedef struct CudaDriver {
#define CUDA_FIELD(field, symbol, params) CUresult(*field) params;
    CUDA_DRIVER_ENTRY_POINTS(CUDA_FIELD)
#undef CUDA_FIELD
} CudaDriver;

#endif /* NV_CUDA_DRVAPI_H */
