/*
 * devcopy.c - the copies of numbavec.cuda.DeviceNDArray: copy_to_host,
 * copy_to_device, and the module functions that make arrays (to_device,
 * device_array, device_array_like, pinned_array).
 *
 * Copies of non-contiguous views move only the viewed elements: trailing
 * dimensions that are contiguous form rows, each outer index is one
 * cuMemcpy2DAsync over the next dimension.  Negative strides are flipped to
 * positive ones and the host side is reversed by NumPy, so gaps in the
 * host array or in device memory are never written.  Copies are queued on
 * the caller's stream; a staging buffer is complete before NumPy reads it.
 * The type itself is devicearray.c.
 */
#include "targets/cuda/array/array.h"

#include <string.h>

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
make_plan(const DaArray *a, Plan *p)
{
    p->ptr = a->ptr;
    p->nd = a->nd;
    p->any_flip = 0;
    p->item = da_elsize(a);
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
    Py_ssize_t size = da_nitems(p->nd, p->shape);
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
same_shape(DaArray *a, PyArrayObject *h)
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

PyObject *
da_copy_to_host(PyObject *self, PyObject *args, PyObject *kwargs)
{
    static char *kwlist[] = {"ary", "stream", NULL};
    DaArray *a = (DaArray *)self;
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
copy_device_to_device(DaArray *a, DaArray *src, CUstream s)
{
    if (!PyArray_EquivTypes(a->dtype, src->dtype) || a->nd != src->nd
        || memcmp(a->shape, src->shape, sizeof(Py_ssize_t) * (size_t)a->nd) != 0) {
        PyErr_SetString(PyExc_TypeError, "copy_to_device: shapes and dtypes differ");
        return NULL;
    }
    int same = memcmp(a->strides, src->strides, sizeof(Py_ssize_t) * (size_t)a->nd) == 0;
    if (!same || !(da_is_contiguous(a, 'C') || da_is_contiguous(a, 'F'))) {
        PyErr_SetString(PyExc_NotImplementedError, "device-to-device copies need both arrays "
                                                   "contiguous with the same layout");
        return NULL;
    }
    size_t bytes = (size_t)(da_nitems(a->nd, a->shape) * da_elsize(a));
    if (cuda_enter() < 0
        || (bytes
            && cuda_check(cuda_drv->MemcpyDtoDAsync(a->ptr, src->ptr, bytes, s),
                          "copying device to device")
                   < 0)) {
        return NULL;
    }
    Py_RETURN_NONE;
}

PyObject *
da_copy_to_device(PyObject *self, PyObject *args, PyObject *kwargs)
{
    static char *kwlist[] = {"ary", "stream", NULL};
    DaArray *a = (DaArray *)self;
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
    if (DA_CHECK(ary)) {
        return copy_device_to_device(a, (DaArray *)ary, s);
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

/* ---- module functions: new device arrays, filled or not ---- */

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
        || da_parse_order(order_s, &order) < 0 || da_parse_shape(shape_o, &nd, shape) < 0
        || da_dtype_arg(dtype_o, &dtype) < 0) {
        return NULL;
    }
    return (PyObject *)da_allocate(dtype, nd, shape, order, stream);
}

/* The order a device copy of host array h gets: F only for F-only arrays. */
static char
host_order(PyArrayObject *h)
{
    return PyArray_NDIM(h) > 1 && PyArray_IS_F_CONTIGUOUS(h) && !PyArray_IS_C_CONTIGUOUS(h) ? 'F'
                                                                                            : 'C';
}

static DaArray *
like(PyArrayObject *h, PyObject *stream)
{
    Py_ssize_t shape[NPY_MAXDIMS];
    for (int i = 0; i < PyArray_NDIM(h); i++) {
        shape[i] = PyArray_DIMS(h)[i];
    }
    PyArray_Descr *d = PyArray_DESCR(h);
    Py_INCREF(d);
    return da_allocate(d, PyArray_NDIM(h), shape, host_order(h), stream);
}

static PyObject *
device_array_like(PyObject *m, PyObject *args, PyObject *kwargs)
{
    static char *kwlist[] = {"ary", "stream", NULL};
    PyObject *ary, *stream = Py_None;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "O|O", kwlist, &ary, &stream)) {
        return NULL;
    }
    if (DA_CHECK(ary)) {
        DaArray *a = (DaArray *)ary;
        Py_INCREF(a->dtype);
        return (PyObject *)da_allocate(
            a->dtype, a->nd, a->shape,
            da_is_contiguous(a, 'F') && !da_is_contiguous(a, 'C') ? 'F' : 'C', stream);
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
    if (DA_CHECK(obj)) {
        return Py_NewRef(obj);
    }
    PyObject *h = PyArray_FROM_O(obj);
    if (h == NULL) {
        return NULL;
    }
    PyObject *result = NULL;
    DaArray *d = NULL;
    if (to != Py_None) {
        if (!DA_CHECK(to)) {
            PyErr_SetString(PyExc_TypeError, "to= must be a device array");
            goto error;
        }
        d = (DaArray *)Py_NewRef(to);
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
        || da_parse_order(order_s, &order) < 0 || da_parse_shape(shape_o, &nd, shape) < 0
        || da_dtype_arg(dtype_o, &dtype) < 0) {
        return NULL;
    }
    void *p = NULL;
    size_t bytes = (size_t)da_nitems(nd, shape) * (size_t)PyDataType_ELSIZE(dtype);
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

static PyMethodDef copy_functions[] = {
    {"_cuda_to_device", (PyCFunction)(void (*)(void))to_device, METH_VARARGS | METH_KEYWORDS,
     "to_device(obj, stream=None, copy=True, to=None)"},
    {"_cuda_device_array", (PyCFunction)(void (*)(void))device_array, METH_VARARGS | METH_KEYWORDS,
     "device_array(shape, dtype=float64, order='C', stream=None)"},
    {"_cuda_device_array_like", (PyCFunction)(void (*)(void))device_array_like,
     METH_VARARGS | METH_KEYWORDS, "device_array_like(ary, stream=None)"},
    {"_cuda_pinned_array", (PyCFunction)(void (*)(void))pinned_array, METH_VARARGS | METH_KEYWORDS,
     "pinned_array(shape, dtype=float64, order='C')"},
    {NULL, NULL, 0, NULL},
};

int
da_copy_init(PyObject *module)
{
    return PyModule_AddFunctions(module, copy_functions);
}
