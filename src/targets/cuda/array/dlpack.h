/*
 * dlpack.h - the DLPack ABI (dlpack.h v0.8, unversioned "dltensor"
 * capsules) as numbavec needs it, declared here so that no DLPack header is
 * needed to build.  devexport.c exports through it, interop.c imports.
 */
#ifndef NV_CUDA_DLPACK_H
#define NV_CUDA_DLPACK_H

#include <stdint.h>

typedef struct {
    int32_t device_type, device_id;
} DLDevice;
typedef struct {
    uint8_t code, bits;
    uint16_t lanes;
} DLDataType;
typedef struct {
    void *data;
    DLDevice device;
    int32_t ndim;
    DLDataType dtype;
    int64_t *shape, *strides; /* strides in elements; NULL: C-contiguous */
    uint64_t byte_offset;
} DLTensor;
typedef struct DLManagedTensor {
    DLTensor dl_tensor;
    void *manager_ctx;
    void (*deleter)(struct DLManagedTensor *self); /* may be NULL */
} DLManagedTensor;

enum { kDLCPU = 1, kDLCUDA = 2, kDLCUDAHost = 3, kDLCUDAManaged = 13 };
enum { kDLInt = 0, kDLUInt = 1, kDLFloat = 2, kDLComplex = 5, kDLBool = 6 };

#endif /* NV_CUDA_DLPACK_H */
