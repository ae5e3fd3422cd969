/*
 * array.h - cuda/array/: numbavec.cuda.DeviceNDArray and the device arrays
 * of other libraries (Numba's cudadrv/devicearray.py).  The interface of
 * this folder, with a section per file; ufunc/ includes it, and it includes
 * driver/ alone (nothing of codegen/ or ufunc/).
 *
 *   devicearray.c  the type: allocation, views, indexing; what a call reads of an array
 *   devcopy.c      its copies: to and from the host, to_device, device_array*
 *   devexport.c    its exports: __cuda_array_interface__, __dlpack__
 *   interop.c      as_cuda_array: foreign CAI and DLPack arrays, checked
 *   dlpack.h       the DLPack ABI (devexport.c and interop.c)
 *
 * Cross-file names take the prefix da_ (types Da).  Outside this folder an
 * array is seen through DaInfo and the functions of the first part; the
 * DaArray struct and the functions after it are for this folder's files.
 */
#ifndef NV_CUDA_ARRAY_H
#define NV_CUDA_ARRAY_H

#include "targets/cuda/driver/driver.h"

/* ---- devicearray.c: for other folders ---- */

int da_init_module(PyObject *module);

/* What a cuda ufunc or gufunc call (ufunc/) reads of a DeviceNDArray
 * (dtype borrowed). */
typedef struct DaInfo {
    CUdeviceptr ptr;
    int nd, readonly;
    int foreign; /* over another library's memory, which may since have been freed */
    Py_ssize_t shape[NPY_MAXDIMS], strides[NPY_MAXDIMS];
    PyArray_Descr *dtype;
} DaInfo;
int da_info(PyObject *obj, DaInfo *info); /* 0/-1 */
int da_is_device_array(PyObject *obj);    /* ours (a DeviceNDArray, or a subclass) */
/* A new C-contiguous device array on stream (steals dtype); new reference. */
PyObject *da_empty(PyArray_Descr *dtype, int nd, const Py_ssize_t *shape, PyObject *stream);
/* A DeviceNDArray over foreign memory (never freed here) that keeps owner
 * alive; steals dtype; strides NULL: C-contiguous.  New reference. */
PyObject *da_wrap(PyArray_Descr *dtype, int nd, const Py_ssize_t *shape, const Py_ssize_t *strides,
                  CUdeviceptr ptr, PyObject *owner, int readonly);

/* ---- interop.c ---- */

/* as_cuda_array(obj): ours, CAI or DLPack wrapped without a copy, every
 * field checked (TypeError/ValueError naming it); new reference. */
PyObject *da_as_array(PyObject *obj);
/* 1 with *out (new reference) when obj is a device array (ours, or one it
 * exports through CAI or DLPack); 0 when it exports neither protocol (no
 * exception); -1 with an exception. */
int da_foreign_array(PyObject *obj, PyObject **out);
/* 0 when the bytes [lo, hi) lie in one live device allocation; else -1 with
 * CudaError naming the driver's error, or ValueError past its end.  A call
 * checks each operand that DaInfo.foreign marks before it launches. */
int da_check_foreign_memory(CUdeviceptr lo, CUdeviceptr hi);

/* ---- inside array/: the struct of numbavec.cuda.DeviceNDArray ---- */

typedef struct DaArray {
    PyObject_HEAD CUdeviceptr ptr; /* element [0, ..., 0] */
    CUdeviceptr alloc;             /* owned allocation, or 0 */
    int async_alloc;               /* alloc is stream-ordered (cuMemFreeAsync) */
    int nd;
    Py_ssize_t shape[NPY_MAXDIMS];
    Py_ssize_t strides[NPY_MAXDIMS]; /* in bytes */
    PyArray_Descr *dtype;
    PyObject *base;       /* keeps the memory alive (or NULL) */
    PyObject *stream_obj; /* keeps a Stream alive (or NULL) */
    CUstream stream;
    int readonly;
} DaArray;

#define DA_CHECK(o) PyObject_TypeCheck((o), (PyTypeObject *)nv_state.devicearray_type)

/* ---- devicearray.c: inside array/ ---- */

Py_ssize_t da_elsize(const DaArray *a);                /* bytes per element */
Py_ssize_t da_nitems(int nd, const Py_ssize_t *shape); /* elements */
int da_is_contiguous(const DaArray *a, char order);    /* 'C' or 'F' */
/* A new array with its own device memory (uninitialised) on stream_arg's
 * stream.  Steals dtype; NULL with an exception. */
DaArray *da_allocate(PyArray_Descr *dtype, int nd, const Py_ssize_t *shape, char order,
                     PyObject *stream_arg);
/* Arguments: an int or a sequence of ints -> shape; 'C'/'A'/'K' -> 'C',
 * 'F' -> 'F'; a dtype (None: float64, a new reference).  0/-1. */
int da_parse_shape(PyObject *obj, int *nd, Py_ssize_t *shape);
int da_parse_order(const char *order, char *out);
int da_dtype_arg(PyObject *obj, PyArray_Descr **out);
PyObject *da_ssize_tuple(int n, const Py_ssize_t *v); /* new reference */

/* ---- devcopy.c ---- */

/* a.copy_to_host(ary=None, stream=None), a.copy_to_device(ary, stream=None) */
PyObject *da_copy_to_host(PyObject *self, PyObject *args, PyObject *kwargs);
PyObject *da_copy_to_device(PyObject *self, PyObject *args, PyObject *kwargs);
/* Adds _cuda_to_device, _cuda_device_array(_like), _cuda_pinned_array. */
int da_copy_init(PyObject *module);

/* ---- devexport.c ---- */

PyObject *da_cai(PyObject *self, void *closure); /* __cuda_array_interface__ */
/* a.__dlpack__(*, stream=None, max_version=None, dl_device=None, copy=None) */
PyObject *da_dlpack(PyObject *self, PyObject *args, PyObject *kwargs);
PyObject *da_dlpack_device(PyObject *self, PyObject *unused); /* (kDLCUDA, id) */

#endif /* NV_CUDA_ARRAY_H */
