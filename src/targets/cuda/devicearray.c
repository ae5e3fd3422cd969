/*
 * devicearray.c - numbavec.cuda.DeviceNDArray: device memory with a shape,
 * and everything that moves data to, from and between devices.
 *
 * An array is (pointer to element [0,...,0], shape, byte strides, dtype)
 * plus what keeps the memory alive: a root array owns its allocation
 * (stream-ordered: cuda_mem_alloc/cuMemFreeAsync on numbavec's pool, so
 * repeated allocations do not pay cuMemAlloc), a view holds its root in
 * `base`, a wrapped foreign array holds the foreign owner.  Views never
 * copy; strides may be negative.
 *
 * Copies of non-contiguous views move only the viewed elements: trailing
 * dimensions that are contiguous form rows, each outer index is one
 * cuMemcpy2DAsync over the next dimension.  Negative strides are flipped to
 * positive ones and the host side is reversed by NumPy, so gaps in the
 * host array or in device memory are never written.
 *
 * Interop: __cuda_array_interface__ (v3, with the stream) and
 * __dlpack__/__dlpack_device__ (a DLManagedTensor capsule "dltensor",
 * kDLCUDA) are exported; as_cuda_array() (interop.c) wraps either without
 * a copy.
 */
#include "targets/cuda/cuda.h"
#include "targets/cuda/dlpack.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

PyObject *cuda_devicearray_type = NULL;

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

#define IS_DEVARRAY(o) PyObject_TypeCheck((o), (PyTypeObject *)cuda_devicearray_type)

/* ---- construction ---- */

static Py_ssize_t
itemsize(const DeviceArray *a)
{
    return (Py_ssize_t)PyDataType_ELSIZE(a->dtype);
}

static Py_ssize_t
size_of(int nd, const Py_ssize_t *shape)
{
    Py_ssize_t n = 1;
    for (int i = 0; i < nd; i++) {
        n *= shape[i];
    }
    return n;
}

/* Contiguous strides in order 'C' or 'F'. */
static void
contiguous_strides(int nd, const Py_ssize_t *shape, Py_ssize_t item, char order,
                   Py_ssize_t *strides)
{
    Py_ssize_t s = item;
    for (int k = 0; k < nd; k++) {
        int i = order == 'F' ? k : nd - 1 - k;
        strides[i] = s;
        s *= shape[i] > 0 ? shape[i] : 1;
    }
}

static int
is_contiguous(const DeviceArray *a, char order)
{
    if (size_of(a->nd, a->shape) == 0) {
        return 1;
    }
    Py_ssize_t expect = itemsize(a);
    for (int k = 0; k < a->nd; k++) {
        int i = order == 'F' ? k : a->nd - 1 - k;
        if (a->shape[i] != 1) {
            if (a->strides[i] != expect) {
                return 0;
            }
            expect *= a->shape[i];
        }
    }
    return 1;
}

/* A new array; steals dtype, borrows base and stream_obj.  NULL on error. */
static DeviceArray *
new_array(PyArray_Descr *dtype, int nd, const Py_ssize_t *shape, const Py_ssize_t *strides,
          CUdeviceptr ptr, PyObject *base, CUstream stream, PyObject *stream_obj)
{
    PyTypeObject *tp = (PyTypeObject *)cuda_devicearray_type;
    allocfunc alloc = (allocfunc)PyType_GetSlot(tp, Py_tp_alloc);
    DeviceArray *a = (DeviceArray *)alloc(tp, 0);
    if (a == NULL) {
        Py_DECREF(dtype);
        return NULL;
    }
    a->dtype = dtype;
    a->nd = nd;
    memcpy(a->shape, shape, sizeof(Py_ssize_t) * (size_t)nd);
    if (strides != NULL) {
        memcpy(a->strides, strides, sizeof(Py_ssize_t) * (size_t)nd);
    } else {
        contiguous_strides(nd, shape, itemsize(a), 'C', a->strides);
    }
    a->ptr = ptr;
    a->base = Py_XNewRef(base);
    a->stream = stream;
    a->stream_obj = stream_obj && stream_obj != Py_None && !PyLong_Check(stream_obj)
                        ? Py_NewRef(stream_obj)
                        : NULL;
    return a;
}

/* A view of a sharing its memory, stream and read-only flag. */
static DeviceArray *
view_of(DeviceArray *a, int nd, const Py_ssize_t *shape, const Py_ssize_t *strides, CUdeviceptr ptr)
{
    Py_INCREF(a->dtype);
    PyObject *owner = a->alloc ? (PyObject *)a : a->base;
    DeviceArray *v = new_array(a->dtype, nd, shape, strides, ptr, owner, a->stream, a->stream_obj);
    if (v != NULL) {
        v->readonly = a->readonly;
    }
    return v;
}

/* A new array with its own device memory (uninitialised).  Steals dtype. */
static DeviceArray *
allocate(PyArray_Descr *dtype, int nd, const Py_ssize_t *shape, char order, PyObject *stream_arg)
{
    CUstream s;
    if (cuda_stream_arg(stream_arg, &s) < 0 || cuda_enter() < 0) {
        Py_DECREF(dtype);
        return NULL;
    }
    Py_ssize_t strides[NPY_MAXDIMS];
    size_t bytes = (size_t)size_of(nd, shape) * (size_t)PyDataType_ELSIZE(dtype);
    contiguous_strides(nd, shape, (Py_ssize_t)PyDataType_ELSIZE(dtype), order, strides);
    CUdeviceptr p = 0;
    int async = 1;
    if (bytes > 0) {
        CUresult rc = cuda_mem_alloc(&p, bytes, s, &async);
        if (cuda_check(rc, "allocating device memory") < 0) {
            Py_DECREF(dtype);
            return NULL;
        }
    }
    DeviceArray *a = new_array(dtype, nd, shape, strides, p, NULL, s, stream_arg);
    if (a == NULL) {
        if (p) {
            async ? cuda_drv->MemFreeAsync(p, s) : cuda_drv->MemFree(p);
        }
        return NULL;
    }
    a->alloc = p;
    a->async_alloc = async;
    return a;
}

static int
da_traverse(PyObject *self, visitproc visit, void *arg)
{
    DeviceArray *a = (DeviceArray *)self;
    Py_VISIT(a->base);
    Py_VISIT(a->stream_obj);
    Py_VISIT(Py_TYPE(self));
    return 0;
}

static int
da_clear(PyObject *self)
{
    DeviceArray *a = (DeviceArray *)self;
    Py_CLEAR(a->base);
    Py_CLEAR(a->stream_obj);
    return 0;
}

static void
da_dealloc(PyObject *self)
{
    DeviceArray *a = (DeviceArray *)self;
    PyObject_GC_UnTrack(self);
    if (a->alloc != 0 && cuda_drv != NULL) {
        PyObject *et, *ev, *tb;
        PyErr_Fetch(&et, &ev, &tb);
        if (cuda_enter() == 0) {
            /* stream-ordered: the memory is reused only after queued work */
            CUresult rc = a->async_alloc ? cuda_drv->MemFreeAsync(a->alloc, a->stream)
                                         : cuda_drv->MemFree(a->alloc);
            if (cuda_check(rc, "freeing device memory") < 0) {
                PyErr_WriteUnraisable(self);
            }
        } else {
            PyErr_WriteUnraisable(self);
        }
        PyErr_Restore(et, ev, tb);
    }
    da_clear(self);
    Py_XDECREF(a->dtype);
    PyTypeObject *tp = Py_TYPE(self);
    freefunc tp_free = (freefunc)PyType_GetSlot(tp, Py_tp_free);
    tp_free(self);
    Py_DECREF(tp);
}

/* ---- argument helpers ---- */

/* An int or a sequence of ints -> shape.  0/-1. */
static int parse_shape_ex(PyObject *obj, int *nd, Py_ssize_t *shape, int allow_unknown);

static int
parse_shape(PyObject *obj, int *nd, Py_ssize_t *shape)
{
    return parse_shape_ex(obj, nd, shape, 0);
}

/* allow_unknown: one -1 may stand for the remaining size (reshape). */
static int
parse_shape_ex(PyObject *obj, int *nd, Py_ssize_t *shape, int allow_unknown)
{
    if (PyIndex_Check(obj)) {
        *nd = 1;
        shape[0] = PyNumber_AsSsize_t(obj, PyExc_OverflowError);
        if (shape[0] == -1 && PyErr_Occurred()) {
            return -1;
        }
    } else {
        PyObject *seq = PySequence_Tuple(obj);
        if (seq == NULL) {
            return -1;
        }
        Py_ssize_t n = PyTuple_Size(seq);
        if (n > NPY_MAXDIMS) {
            Py_DECREF(seq);
            PyErr_Format(PyExc_ValueError, "at most %d dimensions", NPY_MAXDIMS);
            return -1;
        }
        *nd = (int)n;
        for (Py_ssize_t i = 0; i < n; i++) {
            shape[i] = PyNumber_AsSsize_t(PyTuple_GetItem(seq, i), PyExc_OverflowError);
            if (shape[i] == -1 && PyErr_Occurred()) {
                Py_DECREF(seq);
                return -1;
            }
        }
        Py_DECREF(seq);
    }
    for (int i = 0; i < *nd; i++) {
        if (shape[i] < 0 && !(allow_unknown && shape[i] == -1)) {
            PyErr_SetString(PyExc_ValueError, "negative dimensions are not allowed");
            return -1;
        }
    }
    return 0;
}

static int
parse_order(const char *order, char *out)
{
    if (order == NULL || strcmp(order, "C") == 0 || strcmp(order, "A") == 0
        || strcmp(order, "K") == 0) {
        *out = 'C';
        return 0;
    }
    if (strcmp(order, "F") == 0) {
        *out = 'F';
        return 0;
    }
    PyErr_Format(PyExc_ValueError, "order must be 'C' or 'F', not '%s'", order);
    return -1;
}

static PyObject *
ssize_tuple(int n, const Py_ssize_t *v)
{
    PyObject *t = PyTuple_New(n);
    for (int i = 0; t != NULL && i < n; i++) {
        PyObject *x = PyLong_FromSsize_t(v[i]);
        if (x == NULL) {
            Py_CLEAR(t);
            break;
        }
        PyTuple_SetItem(t, i, x);
    }
    return t;
}

/* ---- copies ---- */

/* The array seen with every stride non-negative (negative axes flipped). */
typedef struct Plan {
    CUdeviceptr ptr;
    int nd;
    Py_ssize_t shape[NPY_MAXDIMS], strides[NPY_MAXDIMS];
    int flipped[NPY_MAXDIMS];
    int any_flip;
    Py_ssize_t item;
} Plan;

static void
make_plan(const DeviceArray *a, Plan *p)
{
    p->ptr = a->ptr;
    p->nd = a->nd;
    p->any_flip = 0;
    p->item = itemsize(a);
    for (int i = 0; i < a->nd; i++) {
        p->shape[i] = a->shape[i];
        p->strides[i] = a->strides[i];
        p->flipped[i] = a->strides[i] < 0 && a->shape[i] > 1;
        if (p->flipped[i]) {
            p->ptr += (CUdeviceptr)((a->shape[i] - 1) * a->strides[i]);
            p->strides[i] = -a->strides[i];
            p->any_flip = 1;
        }
    }
}

enum { MAX_PITCH = 0x7fffffff }; /* cuMemcpy2D's pitch limit on current GPUs */

/*
 * Moves the elements of the plan between device memory and a C-contiguous
 * host buffer of the plan's shape.  Returns the first failing CUresult.
 * Called without the GIL.
 */
static CUresult
transfer(const Plan *p, char *host, int to_host, CUstream s)
{
    Py_ssize_t size = size_of(p->nd, p->shape);
    if (size == 0) {
        return CUDA_SUCCESS;
    }
    /* trailing dimensions that are contiguous form one run of `run` bytes */
    Py_ssize_t run = p->item;
    int j = p->nd - 1;
    while (j >= 0 && (p->shape[j] == 1 || p->strides[j] == run)) {
        run *= p->shape[j];
        j--;
    }
    if (j < 0) {
        return to_host ? cuda_drv->MemcpyDtoHAsync(host, p->ptr, (size_t)run, s)
                       : cuda_drv->MemcpyHtoDAsync(p->ptr, host, (size_t)run, s);
    }
    /* dimension j is the 2D copy's height; dimensions before j are looped */
    Py_ssize_t idx[NPY_MAXDIMS] = {0}, block = run * p->shape[j];
    Py_ssize_t outer = size / (p->shape[j] * (run / p->item));
    int use_2d = p->strides[j] >= run && p->strides[j] <= MAX_PITCH;
    for (Py_ssize_t n = 0; n < outer; n++) {
        CUdeviceptr d = p->ptr;
        for (int k = 0; k < j; k++) {
            d += (CUdeviceptr)(idx[k] * p->strides[k]);
        }
        char *h = host + n * block;
        CUresult rc = CUDA_SUCCESS;
        if (use_2d) {
            CUDA_MEMCPY2D m = {0};
            m.WidthInBytes = (size_t)run;
            m.Height = (size_t)p->shape[j];
            if (to_host) {
                m.srcMemoryType = CU_MEMORYTYPE_DEVICE;
                m.srcDevice = d;
                m.srcPitch = (size_t)p->strides[j];
                m.dstMemoryType = CU_MEMORYTYPE_HOST;
                m.dstHost = h;
                m.dstPitch = (size_t)run;
            } else {
                m.srcMemoryType = CU_MEMORYTYPE_HOST;
                m.srcHost = h;
                m.srcPitch = (size_t)run;
                m.dstMemoryType = CU_MEMORYTYPE_DEVICE;
                m.dstDevice = d;
                m.dstPitch = (size_t)p->strides[j];
            }
            rc = cuda_drv->Memcpy2DAsync(&m, s);
        } else {
            /* overlapping or huge pitches (foreign arrays): row by row */
            for (Py_ssize_t r = 0; r < p->shape[j] && rc == CUDA_SUCCESS; r++) {
                CUdeviceptr dr = d + (CUdeviceptr)(r * p->strides[j]);
                rc = to_host ? cuda_drv->MemcpyDtoHAsync(h + r * run, dr, (size_t)run, s)
                             : cuda_drv->MemcpyHtoDAsync(dr, h + r * run, (size_t)run, s);
            }
        }
        if (rc != CUDA_SUCCESS) {
            return rc;
        }
        for (int k = j - 1; k >= 0; k--) { /* odometer over the outer index */
            if (++idx[k] < p->shape[k]) {
                break;
            }
            idx[k] = 0;
        }
    }
    return CUDA_SUCCESS;
}

static int
run_transfer(const Plan *p, char *host, int to_host, CUstream s, int sync)
{
    CUresult rc;
    Py_BEGIN_ALLOW_THREADS rc = transfer(p, host, to_host, s);
    if (rc == CUDA_SUCCESS && sync) {
        rc = cuda_drv->StreamSynchronize(s);
    }
    Py_END_ALLOW_THREADS return cuda_check(rc, to_host ? "copying device to host"
                                                       : "copying host to device");
}

/* arr[::-1] along the plan's flipped axes (a NumPy view; new reference). */
static PyObject *
reversed_view(PyObject *arr, const Plan *p)
{
    PyObject *key = PyTuple_New(p->nd), *m1 = PyLong_FromLong(-1);
    for (int i = 0; key != NULL && m1 != NULL && i < p->nd; i++) {
        PyObject *sl = PySlice_New(NULL, NULL, p->flipped[i] ? m1 : NULL);
        if (sl == NULL) {
            Py_CLEAR(key);
            break;
        }
        PyTuple_SetItem(key, i, sl);
    }
    PyObject *view = key && m1 ? PyObject_GetItem(arr, key) : NULL;
    Py_XDECREF(key);
    Py_XDECREF(m1);
    return view;
}

static PyObject *
empty_host(const Plan *p, PyArray_Descr *dtype)
{
    npy_intp dims[NPY_MAXDIMS];
    for (int i = 0; i < p->nd; i++) {
        dims[i] = p->shape[i];
    }
    Py_INCREF(dtype);
    return PyArray_Empty(p->nd, dims, dtype, 0);
}

static int
same_shape(DeviceArray *a, PyArrayObject *h)
{
    if (PyArray_NDIM(h) != a->nd) {
        return 0;
    }
    for (int i = 0; i < a->nd; i++) {
        if (PyArray_DIMS(h)[i] != a->shape[i]) {
            return 0;
        }
    }
    return 1;
}

static PyObject *
da_copy_to_host(PyObject *self, PyObject *args, PyObject *kwargs)
{
    static char *kwlist[] = {"ary", "stream", NULL};
    DeviceArray *a = (DeviceArray *)self;
    PyObject *ary = Py_None, *stream = Py_None, *host = NULL, *result = NULL;
    CUstream s;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "|OO", kwlist, &ary, &stream)
        || cuda_stream_arg(stream, &s) < 0) {
        return NULL;
    }
    if (ary != Py_None
        && (!PyArray_Check(ary) || !same_shape(a, (PyArrayObject *)ary)
            || !PyArray_EquivTypes(PyArray_DESCR((PyArrayObject *)ary), a->dtype))) {
        PyErr_SetString(PyExc_TypeError, "copy_to_host(ary): ary must be a NumPy array of the "
                                         "device array's shape and dtype");
        return NULL;
    }
    if (cuda_enter() < 0) {
        return NULL;
    }
    Plan p;
    make_plan(a, &p);
    int direct = !p.any_flip && (ary == Py_None || PyArray_IS_C_CONTIGUOUS((PyArrayObject *)ary));
    host = direct && ary != Py_None ? Py_NewRef(ary) : empty_host(&p, a->dtype);
    if (host == NULL) {
        return NULL;
    }
    /* an async copy into the caller's memory may stay pending on their stream;
     * a staging buffer must be complete before NumPy reads it */
    int sync = s == NULL || !direct;
    if (run_transfer(&p, PyArray_DATA((PyArrayObject *)host), 1, s, sync) < 0) {
        goto error;
    }
    if (direct) {
        return host;
    }
    PyObject *view = p.any_flip ? reversed_view(host, &p) : Py_NewRef(host);
    if (view == NULL) {
        goto error;
    }
    if (ary == Py_None) {
        result = PyArray_NewCopy((PyArrayObject *)view, NPY_CORDER);
    } else if (PyArray_CopyInto((PyArrayObject *)ary, (PyArrayObject *)view) == 0) {
        result = Py_NewRef(ary); /* only ary's own elements were written */
    }
    Py_DECREF(view);
error:
    Py_DECREF(host);
    return result;
}

static PyObject *
copy_device_to_device(DeviceArray *a, DeviceArray *src, CUstream s)
{
    if (!PyArray_EquivTypes(a->dtype, src->dtype) || a->nd != src->nd
        || memcmp(a->shape, src->shape, sizeof(Py_ssize_t) * (size_t)a->nd) != 0) {
        PyErr_SetString(PyExc_TypeError, "copy_to_device: shapes and dtypes differ");
        return NULL;
    }
    int same = memcmp(a->strides, src->strides, sizeof(Py_ssize_t) * (size_t)a->nd) == 0;
    if (!same || !(is_contiguous(a, 'C') || is_contiguous(a, 'F'))) {
        PyErr_SetString(PyExc_NotImplementedError, "device-to-device copies need both arrays "
                                                   "contiguous with the same layout");
        return NULL;
    }
    size_t bytes = (size_t)(size_of(a->nd, a->shape) * itemsize(a));
    if (cuda_enter() < 0
        || (bytes
            && cuda_check(cuda_drv->MemcpyDtoDAsync(a->ptr, src->ptr, bytes, s),
                          "copying device to device")
                   < 0)) {
        return NULL;
    }
    Py_RETURN_NONE;
}

static PyObject *
da_copy_to_device(PyObject *self, PyObject *args, PyObject *kwargs)
{
    static char *kwlist[] = {"ary", "stream", NULL};
    DeviceArray *a = (DeviceArray *)self;
    PyObject *ary, *stream = Py_None, *host = NULL, *result = NULL;
    CUstream s;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "O|O", kwlist, &ary, &stream)
        || cuda_stream_arg(stream, &s) < 0) {
        return NULL;
    }
    if (a->readonly) {
        PyErr_SetString(PyExc_ValueError, "the device array is read-only");
        return NULL;
    }
    if (IS_DEVARRAY(ary)) {
        return copy_device_to_device(a, (DeviceArray *)ary, s);
    }
    Py_INCREF(a->dtype);
    PyObject *arr = PyArray_FromAny(ary, a->dtype, 0, 0, 0, NULL);
    if (arr == NULL) {
        return NULL;
    }
    if (!same_shape(a, (PyArrayObject *)arr)) {
        PyErr_SetString(PyExc_ValueError, "copy_to_device: the host array's shape differs");
        goto error;
    }
    Plan p;
    make_plan(a, &p);
    PyObject *oriented = p.any_flip ? reversed_view(arr, &p) : Py_NewRef(arr);
    if (oriented == NULL) {
        goto error;
    }
    int staged = !PyArray_IS_C_CONTIGUOUS((PyArrayObject *)oriented);
    host = staged ? PyArray_NewCopy((PyArrayObject *)oriented, NPY_CORDER) : Py_NewRef(oriented);
    Py_DECREF(oriented);
    if (host == NULL || cuda_enter() < 0) {
        goto error;
    }
    staged = staged || host != ary; /* a buffer we free right after */
    if (run_transfer(&p, PyArray_DATA((PyArrayObject *)host), 0, s, s == NULL || staged) == 0) {
        result = Py_NewRef(Py_None);
    }
error:
    Py_XDECREF(host);
    Py_DECREF(arr);
    return result;
}

/* ---- views ---- */

/* Full integer indexing gives a host scalar, as NumPy and Numba do. */
static PyObject *
scalar_at(DeviceArray *v)
{
    PyObject *empty = PyTuple_New(0);
    PyObject *host = empty ? da_copy_to_host((PyObject *)v, empty, NULL) : NULL;
    PyObject *item = host ? PyObject_GetItem(host, empty) : NULL;
    Py_XDECREF(host);
    Py_XDECREF(empty);
    return item;
}

static PyObject *
da_getitem(PyObject *self, PyObject *key)
{
    DeviceArray *a = (DeviceArray *)self;
    PyObject *items = PyTuple_Check(key) ? Py_NewRef(key) : PyTuple_Pack(1, key);
    if (items == NULL) {
        return NULL;
    }
    Py_ssize_t n = PyTuple_Size(items), specified = 0;
    int ellipses = 0, all_ints = 1;
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *it = PyTuple_GetItem(items, i);
        if (it == Py_Ellipsis) {
            ellipses++;
        } else if (it != Py_None) {
            specified++;
        }
        all_ints &= it != Py_Ellipsis && it != Py_None && !PySlice_Check(it);
    }
    if (ellipses > 1 || specified > a->nd) {
        Py_DECREF(items);
        PyErr_SetString(PyExc_IndexError, ellipses > 1 ? "an index can only have a single "
                                                         "ellipsis ('...')"
                                                       : "too many indices for the device array");
        return NULL;
    }
    Py_ssize_t shape[NPY_MAXDIMS], strides[NPY_MAXDIMS];
    CUdeviceptr ptr = a->ptr;
    int dim = 0, out = 0;
    for (Py_ssize_t i = 0; i <= n; i++) {
        PyObject *it = i < n ? PyTuple_GetItem(items, i) : Py_Ellipsis;
        if (out >= NPY_MAXDIMS && it != Py_Ellipsis) {
            PyErr_SetString(PyExc_IndexError, "too many dimensions");
            goto error;
        }
        if (it == Py_None) {
            shape[out] = 1;
            strides[out++] = 0;
        } else if (it == Py_Ellipsis) {
            Py_ssize_t fill = i < n ? a->nd - specified : a->nd - dim;
            for (Py_ssize_t k = 0; k < fill; k++, dim++) {
                shape[out] = a->shape[dim];
                strides[out++] = a->strides[dim];
            }
        } else if (PySlice_Check(it)) {
            Py_ssize_t start, stop, step;
            if (PySlice_Unpack(it, &start, &stop, &step) < 0) {
                goto error;
            }
            Py_ssize_t len = PySlice_AdjustIndices(a->shape[dim], &start, &stop, step);
            if (len > 0) {
                ptr += (CUdeviceptr)(start * a->strides[dim]);
            }
            shape[out] = len;
            strides[out++] = a->strides[dim] * step;
            dim++;
        } else if (PyIndex_Check(it)) {
            Py_ssize_t k = PyNumber_AsSsize_t(it, PyExc_IndexError);
            if (k == -1 && PyErr_Occurred()) {
                goto error;
            }
            if (k < 0) {
                k += a->shape[dim];
            }
            if (k < 0 || k >= a->shape[dim]) {
                PyErr_Format(PyExc_IndexError,
                             "index %zd is out of bounds for axis %d with "
                             "size %zd",
                             k, dim, a->shape[dim]);
                goto error;
            }
            ptr += (CUdeviceptr)(k * a->strides[dim]);
            dim++;
        } else {
            PyErr_Format(PyExc_IndexError,
                         "device arrays take basic indexing only (ints, "
                         "slices, ..., None), not %R",
                         it);
            goto error;
        }
    }
    Py_DECREF(items);
    DeviceArray *v = view_of(a, out, shape, strides, ptr);
    if (v != NULL && out == 0 && all_ints) {
        PyObject *s = scalar_at(v);
        Py_DECREF(v);
        return s;
    }
    return (PyObject *)v;
error:
    Py_DECREF(items);
    return NULL;
}

static Py_ssize_t
da_len(PyObject *self)
{
    DeviceArray *a = (DeviceArray *)self;
    if (a->nd == 0) {
        PyErr_SetString(PyExc_TypeError, "len() of a 0-d device array");
        return -1;
    }
    return a->shape[0];
}

/* reshape(*shape, order='C'): a view when the data need not move. */
static PyObject *
reshape_to(DeviceArray *a, int nd, Py_ssize_t *shape, char order)
{
    Py_ssize_t known = 1, size = size_of(a->nd, a->shape);
    int unknown = -1;
    for (int i = 0; i < nd; i++) {
        if (shape[i] == -1 && unknown < 0) {
            unknown = i;
        } else if (shape[i] < 0) {
            PyErr_SetString(PyExc_ValueError, "can only specify one unknown dimension");
            return NULL;
        } else {
            known *= shape[i];
        }
    }
    if (unknown >= 0) {
        shape[unknown] = known ? size / known : 0;
        known *= shape[unknown];
    }
    if (known != size) {
        PyErr_Format(PyExc_ValueError,
                     "cannot reshape a device array of size %zd into that "
                     "shape",
                     size);
        return NULL;
    }
    /* a 1-d contiguous array reads the same in both orders */
    int c = is_contiguous(a, 'C'), f = is_contiguous(a, 'F');
    int ok = order == 'C' ? c || (a->nd <= 1 && f) : f || (a->nd <= 1 && c);
    if (!ok) {
        PyErr_SetString(PyExc_NotImplementedError, "this reshape of a non-contiguous device "
                                                   "array needs a copy (copy it first)");
        return NULL;
    }
    Py_ssize_t strides[NPY_MAXDIMS];
    contiguous_strides(nd, shape, itemsize(a), order, strides);
    return (PyObject *)view_of(a, nd, shape, strides, a->ptr);
}

static PyObject *
da_reshape(PyObject *self, PyObject *args, PyObject *kwargs)
{
    const char *order_s = "C";
    char order;
    int nd;
    Py_ssize_t shape[NPY_MAXDIMS];
    if (kwargs != NULL) {
        PyObject *o = PyDict_GetItemString(kwargs, "order"); /* borrowed */
        if (o == NULL || PyDict_Size(kwargs) != 1) {
            PyErr_SetString(PyExc_TypeError, "reshape() takes only order= as keyword");
            return NULL;
        }
        if ((order_s = PyUnicode_AsUTF8AndSize(o, NULL)) == NULL) {
            return NULL;
        }
    }
    PyObject *spec = PyTuple_Size(args) == 1 ? PyTuple_GetItem(args, 0) : args;
    if (parse_order(order_s, &order) < 0 || parse_shape_ex(spec, &nd, shape, 1) < 0) {
        return NULL;
    }
    return reshape_to((DeviceArray *)self, nd, shape, order);
}

static PyObject *
da_ravel(PyObject *self, PyObject *args, PyObject *kwargs)
{
    static char *kwlist[] = {"order", NULL};
    const char *order_s = "C";
    char order;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "|s", kwlist, &order_s)
        || parse_order(order_s, &order) < 0) {
        return NULL;
    }
    DeviceArray *a = (DeviceArray *)self;
    Py_ssize_t n = size_of(a->nd, a->shape);
    return reshape_to(a, 1, &n, order);
}

static PyObject *
da_is_c(PyObject *self, PyObject *unused)
{
    return PyBool_FromLong(is_contiguous((DeviceArray *)self, 'C'));
}

static PyObject *
da_is_f(PyObject *self, PyObject *unused)
{
    return PyBool_FromLong(is_contiguous((DeviceArray *)self, 'F'));
}

/* ---- __cuda_array_interface__ ---- */

/* The v3 "stream" entry: 1 for the legacy default stream, else the handle. */
static PyObject *
cai_stream(DeviceArray *a)
{
    return PyLong_FromUnsignedLongLong(a->stream ? (unsigned long long)(size_t)a->stream : 1);
}

static PyObject *
da_cai(PyObject *self, void *closure)
{
    DeviceArray *a = (DeviceArray *)self;
    PyObject *shape = ssize_tuple(a->nd, a->shape);
    PyObject *strides = is_contiguous(a, 'C') ? Py_NewRef(Py_None) : ssize_tuple(a->nd, a->strides);
    PyObject *typestr = PyObject_GetAttrString((PyObject *)a->dtype, "str");
    PyObject *stream = cai_stream(a);
    PyObject *result = NULL;
    unsigned long long ptr = size_of(a->nd, a->shape) ? (unsigned long long)a->ptr : 0;
    if (shape && strides && typestr && stream) {
        result = Py_BuildValue("{s:O,s:O,s:O,s:(KO),s:i,s:O}", "shape", shape, "strides", strides,
                               "typestr", typestr, "data", ptr, a->readonly ? Py_True : Py_False,
                               "version", 3, "stream", stream);
    }
    Py_XDECREF(shape);
    Py_XDECREF(strides);
    Py_XDECREF(typestr);
    Py_XDECREF(stream);
    return result;
}

/* ---- DLPack export ---- */

typedef struct DLExport {
    DLManagedTensor tensor;
    int64_t shape[NPY_MAXDIMS], strides[NPY_MAXDIMS];
} DLExport;

static void
dl_deleter(DLManagedTensor *t)
{
    PyGILState_STATE g = PyGILState_Ensure();
    Py_XDECREF((PyObject *)t->manager_ctx);
    free(t);
    PyGILState_Release(g);
}

static void
dl_capsule_destructor(PyObject *capsule)
{
    /* not consumed (a consumer renames it "used_dltensor") */
    if (PyCapsule_IsValid(capsule, "dltensor")) {
        DLManagedTensor *t = PyCapsule_GetPointer(capsule, "dltensor");
        if (t->deleter != NULL) {
            t->deleter(t);
        }
    }
}

static int
dl_dtype(PyArray_Descr *d, DLDataType *out)
{
    int num = d->type_num, code;
    if (d->byteorder == '>') {
        PyErr_SetString(PyExc_BufferError, "DLPack needs native byte order");
        return -1;
    }
    if (num == NPY_BOOL) {
        code = kDLBool;
    } else if (PyTypeNum_ISSIGNED(num)) {
        code = kDLInt;
    } else if (PyTypeNum_ISUNSIGNED(num)) {
        code = kDLUInt;
    } else if (PyTypeNum_ISFLOAT(num)) {
        code = kDLFloat;
    } else if (PyTypeNum_ISCOMPLEX(num)) {
        code = kDLComplex;
    } else {
        PyErr_SetString(PyExc_BufferError, "this dtype has no DLPack equivalent");
        return -1;
    }
    out->code = (uint8_t)code;
    out->bits = (uint8_t)(PyDataType_ELSIZE(d) * 8);
    out->lanes = 1;
    return 0;
}

int
cuda_device_ordinal(void)
{
    return cuda_drv != NULL ? (int)cuda_device() : 0;
}

/*
 * The consumer's stream argument of __dlpack__: None, -1 (no
 * synchronisation), 1 (legacy default), 2 (per-thread default) or a handle;
 * 0 is not allowed for CUDA.  *wait: whether to synchronise.  0/-1.
 */
static int
dlpack_stream(PyObject *stream, int *wait)
{
    *wait = 1;
    if (stream == Py_None) {
        return 0;
    }
    if (!PyLong_Check(stream) || PyBool_Check(stream)) {
        PyErr_SetString(PyExc_TypeError, "__dlpack__: stream must be None or an int");
        return -1;
    }
    int overflow = 0;
    long long v = PyLong_AsLongLongAndOverflow(stream, &overflow);
    if (v == -1 && PyErr_Occurred()) {
        return -1;
    }
    if (overflow != 0 || v == 0 || v < -1) {
        PyErr_SetString(PyExc_ValueError, "__dlpack__: stream must be None, -1, 1, 2 or a "
                                          "stream handle (0 is not allowed for CUDA)");
        return -1;
    }
    *wait = v != -1;
    return 0;
}

/*
 * Makes work queued on our stream visible to the consumer.  Done
 * conservatively by waiting for our stream; nothing to do without a driver
 * (arrays made by the test constructor).
 */
static int
sync_for_consumer(DeviceArray *a, int wait)
{
    if (cuda_drv == NULL || !wait) {
        return 0;
    }
    return cuda_enter() < 0 ? -1 : cuda_stream_wait(a->stream);
}

static PyObject *
da_dlpack(PyObject *self, PyObject *args, PyObject *kwargs)
{
    static char *kwlist[] = {"stream", "max_version", "dl_device", "copy", NULL};
    DeviceArray *a = (DeviceArray *)self;
    PyObject *stream = Py_None, *max_version = Py_None, *dl_device = Py_None, *copy = Py_None;
    int wait;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "|$OOOO", kwlist, &stream, &max_version,
                                     &dl_device, &copy)
        || dlpack_stream(stream, &wait) < 0) {
        return NULL;
    }
    if (copy == Py_True) {
        PyErr_SetString(PyExc_BufferError, "__dlpack__(copy=True) is not supported");
        return NULL;
    }
    if (dl_device != Py_None) {
        int type, id;
        if (!PyTuple_Check(dl_device) || !PyArg_ParseTuple(dl_device, "ii", &type, &id)) {
            PyErr_Clear();
            PyErr_SetString(PyExc_TypeError,
                            "__dlpack__: dl_device must be a (device type, device id) tuple");
            return NULL;
        }
        if (type != kDLCUDA || id != cuda_device_ordinal()) {
            PyErr_SetString(PyExc_BufferError, "__dlpack__: the array lives on CUDA device "
                                               "memory and cannot be exported to another device");
            return NULL;
        }
    }
    DLDataType dt;
    if (dl_dtype(a->dtype, &dt) < 0 || sync_for_consumer(a, wait) < 0) {
        return NULL;
    }
    DLExport *e = calloc(1, sizeof(DLExport));
    if (e == NULL) {
        return PyErr_NoMemory();
    }
    Py_ssize_t item = itemsize(a);
    for (int i = 0; i < a->nd; i++) {
        if (a->strides[i] % item != 0) {
            free(e);
            PyErr_SetString(PyExc_BufferError, "DLPack strides are in elements; this view's "
                                               "are not a multiple of the item size");
            return NULL;
        }
        e->shape[i] = a->shape[i];
        e->strides[i] = a->strides[i] / item;
    }
    DLTensor *t = &e->tensor.dl_tensor;
    t->data = (void *)(uintptr_t)a->ptr;
    t->device.device_type = kDLCUDA;
    t->device.device_id = cuda_device_ordinal();
    t->ndim = a->nd;
    t->dtype = dt;
    t->shape = e->shape;
    t->strides = e->strides;
    t->byte_offset = 0;
    e->tensor.manager_ctx = Py_NewRef(self);
    e->tensor.deleter = dl_deleter;
    PyObject *cap = PyCapsule_New(&e->tensor, "dltensor", dl_capsule_destructor);
    if (cap == NULL) {
        Py_DECREF(self);
        free(e);
    }
    return cap;
}

static PyObject *
da_dlpack_device(PyObject *self, PyObject *unused)
{
    return Py_BuildValue("(ii)", kDLCUDA, cuda_device_ordinal());
}

/* ---- attributes ---- */

static PyObject *
da_shape(PyObject *self, void *c)
{
    DeviceArray *a = (DeviceArray *)self;
    return ssize_tuple(a->nd, a->shape);
}

static PyObject *
da_strides(PyObject *self, void *c)
{
    DeviceArray *a = (DeviceArray *)self;
    return ssize_tuple(a->nd, a->strides);
}

static PyObject *
da_ndim(PyObject *self, void *c)
{
    return PyLong_FromLong(((DeviceArray *)self)->nd);
}

static PyObject *
da_size(PyObject *self, void *c)
{
    DeviceArray *a = (DeviceArray *)self;
    return PyLong_FromSsize_t(size_of(a->nd, a->shape));
}

static PyObject *
da_nbytes(PyObject *self, void *c)
{
    DeviceArray *a = (DeviceArray *)self;
    return PyLong_FromSsize_t(size_of(a->nd, a->shape) * itemsize(a));
}

static PyObject *
da_itemsize(PyObject *self, void *c)
{
    return PyLong_FromSsize_t(itemsize((DeviceArray *)self));
}

static PyObject *
da_dtype(PyObject *self, void *c)
{
    return Py_NewRef((PyObject *)((DeviceArray *)self)->dtype);
}

static PyObject *
da_ptr(PyObject *self, void *c)
{
    return PyLong_FromUnsignedLongLong(((DeviceArray *)self)->ptr);
}

static PyObject *
da_stream(PyObject *self, void *c)
{
    DeviceArray *a = (DeviceArray *)self;
    if (a->stream_obj != NULL) {
        return Py_NewRef(a->stream_obj);
    }
    return PyLong_FromUnsignedLongLong((unsigned long long)(size_t)a->stream);
}

static PyObject *
da_owner(PyObject *self, void *c)
{
    DeviceArray *a = (DeviceArray *)self;
    return Py_NewRef(a->base ? a->base : Py_None);
}

static PyObject *
da_repr(PyObject *self)
{
    DeviceArray *a = (DeviceArray *)self;
    PyObject *shape = da_shape(self, NULL);
    char ptr[32];
    snprintf(ptr, sizeof(ptr), "0x%llx", (unsigned long long)a->ptr);
    PyObject *r = shape ? PyUnicode_FromFormat("<numbavec.cuda.DeviceNDArray shape=%R "
                                               "dtype=%R ptr=%s>",
                                               shape, a->dtype, ptr)
                        : NULL;
    Py_XDECREF(shape);
    return r;
}

static PyMethodDef da_methods[] = {
    {"copy_to_host", (PyCFunction)(void (*)(void))da_copy_to_host, METH_VARARGS | METH_KEYWORDS,
     "copy_to_host(ary=None, stream=None): a host copy (into ary: only its elements)."},
    {"copy_to_device", (PyCFunction)(void (*)(void))da_copy_to_device, METH_VARARGS | METH_KEYWORDS,
     "copy_to_device(ary, stream=None): fills from ary."},
    {"reshape", (PyCFunction)(void (*)(void))da_reshape, METH_VARARGS | METH_KEYWORDS,
     "reshape(*shape, order='C'): a view (NotImplementedError when a copy is needed)."},
    {"ravel", (PyCFunction)(void (*)(void))da_ravel, METH_VARARGS | METH_KEYWORDS,
     "ravel(order='C'): a 1-d view of a contiguous array."},
    {"is_c_contiguous", da_is_c, METH_NOARGS, "True when C-contiguous."},
    {"is_f_contiguous", da_is_f, METH_NOARGS, "True when Fortran-contiguous."},
    {"__dlpack__", (PyCFunction)(void (*)(void))da_dlpack, METH_VARARGS | METH_KEYWORDS,
     "DLPack export: a 'dltensor' capsule (kDLCUDA)."},
    {"__dlpack_device__", da_dlpack_device, METH_NOARGS, "(kDLCUDA, device id)."},
    {NULL, NULL, 0, NULL},
};

static PyGetSetDef da_getset[] = {
    {"shape", da_shape, NULL, NULL, NULL},
    {"strides", da_strides, NULL, "byte strides", NULL},
    {"ndim", da_ndim, NULL, NULL, NULL},
    {"size", da_size, NULL, NULL, NULL},
    {"nbytes", da_nbytes, NULL, NULL, NULL},
    {"itemsize", da_itemsize, NULL, NULL, NULL},
    {"dtype", da_dtype, NULL, NULL, NULL},
    {"device_pointer", da_ptr, NULL, "the address of element [0, ..., 0]", NULL},
    {"stream", da_stream, NULL, "the stream the array was made on", NULL},
    {"owner", da_owner, NULL, "what keeps the memory alive (None: the array itself)", NULL},
    {"__cuda_array_interface__", da_cai, NULL, "CUDA Array Interface v3", NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

static PyType_Slot da_slots[] = {
    {Py_tp_dealloc, da_dealloc},
    {Py_tp_traverse, da_traverse},
    {Py_tp_clear, da_clear},
    {Py_tp_methods, da_methods},
    {Py_tp_getset, da_getset},
    {Py_tp_repr, da_repr},
    {Py_mp_subscript, da_getitem},
    {Py_mp_length, da_len},
    {Py_tp_doc, "An array in CUDA device memory (numbavec.cuda.to_device, device_array)."},
    {0, NULL},
};

static PyType_Spec da_spec = {
    "numbavec.cuda.DeviceNDArray",
    sizeof(DeviceArray),
    0,
    Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC,
    da_slots,
};

/* ---- module functions ---- */

static int
dtype_arg(PyObject *obj, PyArray_Descr **out)
{
    if (obj == NULL || obj == Py_None) {
        *out = PyArray_DescrFromType(NPY_FLOAT64);
        return *out ? 0 : -1;
    }
    return PyArray_DescrConverter(obj, out) ? 0 : -1;
}

static PyObject *
device_array(PyObject *m, PyObject *args, PyObject *kwargs)
{
    static char *kwlist[] = {"shape", "dtype", "order", "stream", NULL};
    PyObject *shape_o, *dtype_o = Py_None, *stream = Py_None;
    const char *order_s = "C";
    char order;
    int nd;
    Py_ssize_t shape[NPY_MAXDIMS];
    PyArray_Descr *dtype;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "O|OsO", kwlist, &shape_o, &dtype_o, &order_s,
                                     &stream)
        || parse_order(order_s, &order) < 0 || parse_shape(shape_o, &nd, shape) < 0
        || dtype_arg(dtype_o, &dtype) < 0) {
        return NULL;
    }
    return (PyObject *)allocate(dtype, nd, shape, order, stream);
}

/* The order a device copy of host array h gets: F only for F-only arrays. */
static char
host_order(PyArrayObject *h)
{
    return PyArray_NDIM(h) > 1 && PyArray_IS_F_CONTIGUOUS(h) && !PyArray_IS_C_CONTIGUOUS(h) ? 'F'
                                                                                            : 'C';
}

static DeviceArray *
like(PyArrayObject *h, PyObject *stream)
{
    Py_ssize_t shape[NPY_MAXDIMS];
    for (int i = 0; i < PyArray_NDIM(h); i++) {
        shape[i] = PyArray_DIMS(h)[i];
    }
    PyArray_Descr *d = PyArray_DESCR(h);
    Py_INCREF(d);
    return allocate(d, PyArray_NDIM(h), shape, host_order(h), stream);
}

static PyObject *
device_array_like(PyObject *m, PyObject *args, PyObject *kwargs)
{
    static char *kwlist[] = {"ary", "stream", NULL};
    PyObject *ary, *stream = Py_None;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "O|O", kwlist, &ary, &stream)) {
        return NULL;
    }
    if (IS_DEVARRAY(ary)) {
        DeviceArray *a = (DeviceArray *)ary;
        Py_INCREF(a->dtype);
        return (PyObject *)allocate(a->dtype, a->nd, a->shape,
                                    is_contiguous(a, 'F') && !is_contiguous(a, 'C') ? 'F' : 'C',
                                    stream);
    }
    PyObject *h = PyArray_FROM_O(ary);
    if (h == NULL) {
        return NULL;
    }
    PyObject *r = (PyObject *)like((PyArrayObject *)h, stream);
    Py_DECREF(h);
    return r;
}

static PyObject *
to_device(PyObject *m, PyObject *args, PyObject *kwargs)
{
    static char *kwlist[] = {"obj", "stream", "copy", "to", NULL};
    PyObject *obj, *stream = Py_None, *to = Py_None;
    int copy = 1;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "O|OpO", kwlist, &obj, &stream, &copy, &to)) {
        return NULL;
    }
    if (IS_DEVARRAY(obj)) {
        return Py_NewRef(obj);
    }
    PyObject *h = PyArray_FROM_O(obj);
    if (h == NULL) {
        return NULL;
    }
    PyObject *result = NULL;
    DeviceArray *d = NULL;
    if (to != Py_None) {
        if (!IS_DEVARRAY(to)) {
            PyErr_SetString(PyExc_TypeError, "to= must be a device array");
            goto error;
        }
        d = (DeviceArray *)Py_NewRef(to);
    } else if ((d = like((PyArrayObject *)h, stream)) == NULL) {
        goto error;
    }
    if (copy) {
        PyObject *r = PyObject_CallMethod((PyObject *)d, "copy_to_device", "OO", h, stream);
        if (r == NULL) {
            goto error;
        }
        Py_DECREF(r);
    }
    result = (PyObject *)d;
    d = NULL;
error:
    Py_XDECREF(d);
    Py_DECREF(h);
    return result;
}

static void
pinned_free(PyObject *capsule)
{
    void *p = PyCapsule_GetPointer(capsule, "numbavec.pinned");
    if (p != NULL && cuda_drv != NULL && cuda_enter() == 0) {
        cuda_drv->MemFreeHost(p);
    }
    PyErr_Clear();
}

static PyObject *
pinned_array(PyObject *m, PyObject *args, PyObject *kwargs)
{
    static char *kwlist[] = {"shape", "dtype", "order", NULL};
    PyObject *shape_o, *dtype_o = Py_None;
    const char *order_s = "C";
    char order;
    int nd;
    Py_ssize_t shape[NPY_MAXDIMS];
    PyArray_Descr *dtype;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "O|Os", kwlist, &shape_o, &dtype_o, &order_s)
        || parse_order(order_s, &order) < 0 || parse_shape(shape_o, &nd, shape) < 0
        || dtype_arg(dtype_o, &dtype) < 0) {
        return NULL;
    }
    void *p = NULL;
    size_t bytes = (size_t)size_of(nd, shape) * (size_t)PyDataType_ELSIZE(dtype);
    if (cuda_enter() < 0
        || cuda_check(cuda_drv->MemHostAlloc(&p, bytes ? bytes : 1, CU_MEMHOSTALLOC_PORTABLE),
                      "cuMemHostAlloc")
               < 0) {
        Py_DECREF(dtype);
        return NULL;
    }
    PyObject *owner = PyCapsule_New(p, "numbavec.pinned", pinned_free);
    if (owner == NULL) {
        cuda_drv->MemFreeHost(p);
        Py_DECREF(dtype);
        return NULL;
    }
    npy_intp dims[NPY_MAXDIMS];
    for (int i = 0; i < nd; i++) {
        dims[i] = shape[i];
    }
    PyObject *arr = PyArray_NewFromDescr(
        &PyArray_Type, dtype, nd, dims, NULL, p,
        NPY_ARRAY_WRITEABLE | (order == 'F' ? NPY_ARRAY_F_CONTIGUOUS : 0), NULL);
    if (arr == NULL || PyArray_SetBaseObject((PyArrayObject *)arr, owner) < 0) {
        Py_XDECREF(arr);
        Py_DECREF(owner);
        return NULL;
    }
    return arr;
}

/* ---- test hooks and as_cuda_array ---- */

static int
seq_to_ssize(PyObject *seq, int *n, Py_ssize_t *out, const char *what)
{
    PyObject *t = PySequence_Tuple(seq);
    if (t == NULL) {
        return -1;
    }
    Py_ssize_t len = PyTuple_Size(t);
    if (*n >= 0 && len != *n) {
        Py_DECREF(t);
        PyErr_Format(PyExc_ValueError, "__cuda_array_interface__: %s has the wrong length", what);
        return -1;
    }
    if (len > NPY_MAXDIMS) {
        Py_DECREF(t);
        PyErr_SetString(PyExc_ValueError, "too many dimensions");
        return -1;
    }
    *n = (int)len;
    for (Py_ssize_t i = 0; i < len; i++) {
        out[i] = PyLong_AsSsize_t(PyTuple_GetItem(t, i));
        if (out[i] == -1 && PyErr_Occurred()) {
            Py_DECREF(t);
            return -1;
        }
    }
    Py_DECREF(t);
    return 0;
}

/* as_cuda_array(obj): interop.c */
static PyObject *
as_cuda_array(PyObject *m, PyObject *obj)
{
    return cuda_as_array(obj);
}

/* Test hook: an array over `ptr` that is never dereferenced (no driver). */
static PyObject *
test_array(PyObject *m, PyObject *args, PyObject *kwargs)
{
    static char *kwlist[] = {"ptr", "shape", "dtype", "strides", "readonly", NULL};
    unsigned long long ptr;
    PyObject *shape_o, *dtype_o, *strides_o = Py_None;
    int nd, ns = -1, readonly = 0;
    Py_ssize_t shape[NPY_MAXDIMS], strides[NPY_MAXDIMS];
    PyArray_Descr *dtype;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "KOO|Op", kwlist, &ptr, &shape_o, &dtype_o,
                                     &strides_o, &readonly)
        || parse_shape(shape_o, &nd, shape) < 0) {
        return NULL;
    }
    ns = nd;
    if (strides_o != Py_None && seq_to_ssize(strides_o, &ns, strides, "strides") < 0) {
        return NULL;
    }
    if (dtype_arg(dtype_o, &dtype) < 0) {
        return NULL;
    }
    DeviceArray *a = new_array(dtype, nd, shape, strides_o != Py_None ? strides : NULL,
                               (CUdeviceptr)ptr, NULL, NULL, NULL);
    if (a != NULL) {
        a->readonly = readonly;
    }
    return (PyObject *)a;
}

static PyMethodDef da_functions[] = {
    {"_cuda_to_device", (PyCFunction)(void (*)(void))to_device, METH_VARARGS | METH_KEYWORDS,
     "to_device(obj, stream=None, copy=True, to=None)"},
    {"_cuda_device_array", (PyCFunction)(void (*)(void))device_array, METH_VARARGS | METH_KEYWORDS,
     "device_array(shape, dtype=float64, order='C', stream=None)"},
    {"_cuda_device_array_like", (PyCFunction)(void (*)(void))device_array_like,
     METH_VARARGS | METH_KEYWORDS, "device_array_like(ary, stream=None)"},
    {"_cuda_pinned_array", (PyCFunction)(void (*)(void))pinned_array, METH_VARARGS | METH_KEYWORDS,
     "pinned_array(shape, dtype=float64, order='C')"},
    {"_cuda_as_cuda_array", as_cuda_array, METH_O, "as_cuda_array(obj): wraps, no copy"},
    {"_cuda_test_array", (PyCFunction)(void (*)(void))test_array, METH_VARARGS | METH_KEYWORDS,
     "Test hook: _cuda_test_array(ptr, shape, dtype, strides=None, readonly=False)."},
    {NULL, NULL, 0, NULL},
};

int
cuda_devicearray_init(PyObject *module)
{
    cuda_devicearray_type = PyType_FromSpec(&da_spec);
    if (cuda_devicearray_type == NULL
        || PyModule_AddObjectRef(module, "DeviceNDArray", cuda_devicearray_type) < 0
        || PyModule_AddFunctions(module, da_functions) < 0) {
        return -1;
    }
    return 0;
}

/* ---- for cufunc.c ---- */

int
cuda_array_info(PyObject *obj, CudaArrayInfo *info)
{
    if (!IS_DEVARRAY(obj)) {
        PyErr_SetString(PyExc_TypeError, "expected a DeviceNDArray");
        return -1;
    }
    DeviceArray *a = (DeviceArray *)obj;
    info->ptr = a->ptr;
    info->nd = a->nd;
    memcpy(info->shape, a->shape, sizeof(Py_ssize_t) * (size_t)a->nd);
    memcpy(info->strides, a->strides, sizeof(Py_ssize_t) * (size_t)a->nd);
    info->dtype = a->dtype;
    info->readonly = a->readonly;
    return 0;
}

PyObject *
cuda_array_empty(PyArray_Descr *dtype, int nd, const Py_ssize_t *shape, PyObject *stream)
{
    return (PyObject *)allocate(dtype, nd, shape, 'C', stream);
}

PyObject *
cuda_array_wrap(PyArray_Descr *dtype, int nd, const Py_ssize_t *shape, const Py_ssize_t *strides,
                CUdeviceptr ptr, PyObject *owner, int readonly)
{
    DeviceArray *a = new_array(dtype, nd, shape, strides, ptr, owner, NULL, NULL);
    if (a != NULL) {
        a->readonly = readonly;
    }
    return (PyObject *)a;
}

int
cuda_is_device_array(PyObject *obj)
{
    return IS_DEVARRAY(obj);
}
