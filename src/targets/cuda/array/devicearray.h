/*
 * devicearray.h - what the files of numbavec.cuda.DeviceNDArray share
 * (private to devicearray.c, the type; devcopy.c, its copies; devexport.c,
 * its CAI and DLPack exports).  Other files see arrays through cuda.h's
 * CudaArrayInfo and constructors.
 */
#ifndef NV_CUDA_DEVICEARRAY_H
#define NV_CUDA_DEVICEARRAY_H

#include "targets/cuda/cuda.h"

typedef struct DeviceArray {
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
} DeviceArray;

#define DA_CHECK(o) PyObject_TypeCheck((o), (PyTypeObject *)nv_state.devicearray_type)

/* ---- devicearray.c ---- */

Py_ssize_t da_elsize(const DeviceArray *a);             /* bytes per element */
Py_ssize_t da_nitems(int nd, const Py_ssize_t *shape);  /* elements */
int da_is_contiguous(const DeviceArray *a, char order); /* 'C' or 'F' */
/* A new array with its own device memory (uninitialised) on stream_arg's
 * stream.  Steals dtype; NULL with an exception. */
DeviceArray *da_allocate(PyArray_Descr *dtype, int nd, const Py_ssize_t *shape, char order,
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

#endif /* NV_CUDA_DEVICEARRAY_H */
