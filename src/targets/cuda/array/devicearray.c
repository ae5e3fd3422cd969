/*
 * devicearray.c - numbavec.cuda.DeviceNDArray: device memory with a shape.
 *
 * An array is (pointer to element [0,...,0], shape, byte strides, dtype)
 * plus what keeps the memory alive: a root array owns its allocation
 * (stream-ordered: cuda_mem_alloc/cuMemFreeAsync on numbavec's pool, so
 * repeated allocations do not pay cuMemAlloc), a view holds its root in
 * `base`, a wrapped foreign array holds the foreign owner.  Views never
 * copy; strides may be negative.
 *
 * This file is the type: allocation, its slots and getters, indexing and
 * views, and what the cuda ufunc and interop.c use of an array.  Moving
 * data to, from and between devices is devcopy.c; the protocol exports are
 * devexport.c.  array.h is what they share and what other folders see.
 */
#include "targets/cuda/array/array.h"

#include <string.h>

/* ---- construction ---- */

Py_ssize_t
da_elsize(const DaArray *a)
{
    return (Py_ssize_t)PyDataType_ELSIZE(a->dtype);
}

Py_ssize_t
da_nitems(int nd, const Py_ssize_t *shape)
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

int
da_is_contiguous(const DaArray *a, char order)
{
    if (da_nitems(a->nd, a->shape) == 0) {
        return 1;
    }
    Py_ssize_t expect = da_elsize(a);
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
static DaArray *
new_array(PyArray_Descr *dtype, int nd, const Py_ssize_t *shape, const Py_ssize_t *strides,
          CUdeviceptr ptr, PyObject *base, CUstream stream, PyObject *stream_obj)
{
    PyTypeObject *tp = (PyTypeObject *)nv_state.devicearray_type;
    allocfunc alloc = (allocfunc)PyType_GetSlot(tp, Py_tp_alloc);
    DaArray *a = (DaArray *)alloc(tp, 0);
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
        contiguous_strides(nd, shape, da_elsize(a), 'C', a->strides);
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
static DaArray *
view_of(DaArray *a, int nd, const Py_ssize_t *shape, const Py_ssize_t *strides, CUdeviceptr ptr)
{
    Py_INCREF(a->dtype);
    PyObject *owner = a->alloc ? (PyObject *)a : a->base;
    DaArray *v = new_array(a->dtype, nd, shape, strides, ptr, owner, a->stream, a->stream_obj);
    if (v != NULL) {
        v->readonly = a->readonly;
    }
    return v;
}

/* A new array with its own device memory (uninitialised).  Steals dtype. */
DaArray *
da_allocate(PyArray_Descr *dtype, int nd, const Py_ssize_t *shape, char order, PyObject *stream_arg)
{
    CUstream s;
    if (cuda_stream_arg(stream_arg, &s) < 0 || cuda_enter() < 0) {
        Py_DECREF(dtype);
        return NULL;
    }
    Py_ssize_t strides[NPY_MAXDIMS];
    size_t bytes = (size_t)da_nitems(nd, shape) * (size_t)PyDataType_ELSIZE(dtype);
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
    DaArray *a = new_array(dtype, nd, shape, strides, p, NULL, s, stream_arg);
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
    DaArray *a = (DaArray *)self;
    Py_VISIT(a->base);
    Py_VISIT(a->stream_obj);
    Py_VISIT(Py_TYPE(self));
    return 0;
}

static int
da_clear(PyObject *self)
{
    DaArray *a = (DaArray *)self;
    Py_CLEAR(a->base);
    Py_CLEAR(a->stream_obj);
    return 0;
}

static void
da_dealloc(PyObject *self)
{
    DaArray *a = (DaArray *)self;
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

int
da_parse_shape(PyObject *obj, int *nd, Py_ssize_t *shape)
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

int
da_parse_order(const char *order, char *out)
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

PyObject *
da_ssize_tuple(int n, const Py_ssize_t *v)
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

int
da_dtype_arg(PyObject *obj, PyArray_Descr **out)
{
    if (obj == NULL || obj == Py_None) {
        *out = PyArray_DescrFromType(NPY_FLOAT64);
        return *out ? 0 : -1;
    }
    return PyArray_DescrConverter(obj, out) ? 0 : -1;
}

/* ---- views ---- */

/* Full integer indexing gives a host scalar, as NumPy and Numba do. */
static PyObject *
scalar_at(DaArray *v)
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
    DaArray *a = (DaArray *)self;
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
    DaArray *v = view_of(a, out, shape, strides, ptr);
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
    DaArray *a = (DaArray *)self;
    if (a->nd == 0) {
        PyErr_SetString(PyExc_TypeError, "len() of a 0-d device array");
        return -1;
    }
    return a->shape[0];
}

/* reshape(*shape, order='C'): a view when the data need not move. */
static PyObject *
reshape_to(DaArray *a, int nd, Py_ssize_t *shape, char order)
{
    Py_ssize_t known = 1, size = da_nitems(a->nd, a->shape);
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
    int c = da_is_contiguous(a, 'C'), f = da_is_contiguous(a, 'F');
    int ok = order == 'C' ? c || (a->nd <= 1 && f) : f || (a->nd <= 1 && c);
    if (!ok) {
        PyErr_SetString(PyExc_NotImplementedError, "this reshape of a non-contiguous device "
                                                   "array needs a copy (copy it first)");
        return NULL;
    }
    Py_ssize_t strides[NPY_MAXDIMS];
    contiguous_strides(nd, shape, da_elsize(a), order, strides);
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
    if (da_parse_order(order_s, &order) < 0 || parse_shape_ex(spec, &nd, shape, 1) < 0) {
        return NULL;
    }
    return reshape_to((DaArray *)self, nd, shape, order);
}

static PyObject *
da_ravel(PyObject *self, PyObject *args, PyObject *kwargs)
{
    static char *kwlist[] = {"order", NULL};
    const char *order_s = "C";
    char order;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "|s", kwlist, &order_s)
        || da_parse_order(order_s, &order) < 0) {
        return NULL;
    }
    DaArray *a = (DaArray *)self;
    Py_ssize_t n = da_nitems(a->nd, a->shape);
    return reshape_to(a, 1, &n, order);
}

static PyObject *
da_is_c(PyObject *self, PyObject *unused)
{
    return PyBool_FromLong(da_is_contiguous((DaArray *)self, 'C'));
}

static PyObject *
da_is_f(PyObject *self, PyObject *unused)
{
    return PyBool_FromLong(da_is_contiguous((DaArray *)self, 'F'));
}

/* ---- attributes ---- */

static PyObject *
da_shape(PyObject *self, void *c)
{
    DaArray *a = (DaArray *)self;
    return da_ssize_tuple(a->nd, a->shape);
}

static PyObject *
da_strides(PyObject *self, void *c)
{
    DaArray *a = (DaArray *)self;
    return da_ssize_tuple(a->nd, a->strides);
}

static PyObject *
da_ndim(PyObject *self, void *c)
{
    return PyLong_FromLong(((DaArray *)self)->nd);
}

static PyObject *
da_size(PyObject *self, void *c)
{
    DaArray *a = (DaArray *)self;
    return PyLong_FromSsize_t(da_nitems(a->nd, a->shape));
}

static PyObject *
da_nbytes(PyObject *self, void *c)
{
    DaArray *a = (DaArray *)self;
    return PyLong_FromSsize_t(da_nitems(a->nd, a->shape) * da_elsize(a));
}

static PyObject *
da_itemsize(PyObject *self, void *c)
{
    return PyLong_FromSsize_t(da_elsize((DaArray *)self));
}

static PyObject *
da_dtype(PyObject *self, void *c)
{
    return Py_NewRef((PyObject *)((DaArray *)self)->dtype);
}

static PyObject *
da_ptr(PyObject *self, void *c)
{
    return PyLong_FromUnsignedLongLong(((DaArray *)self)->ptr);
}

static PyObject *
da_stream(PyObject *self, void *c)
{
    DaArray *a = (DaArray *)self;
    if (a->stream_obj != NULL) {
        return Py_NewRef(a->stream_obj);
    }
    return PyLong_FromUnsignedLongLong((unsigned long long)(size_t)a->stream);
}

static PyObject *
da_owner(PyObject *self, void *c)
{
    DaArray *a = (DaArray *)self;
    return Py_NewRef(a->base ? a->base : Py_None);
}

static PyObject *
da_repr(PyObject *self)
{
    DaArray *a = (DaArray *)self;
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
    "numbavec.cuda.DeviceNDArray",           sizeof(DaArray), 0,
    Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC, da_slots,
};

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
    return da_as_array(obj);
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
        || da_parse_shape(shape_o, &nd, shape) < 0) {
        return NULL;
    }
    ns = nd;
    if (strides_o != Py_None && seq_to_ssize(strides_o, &ns, strides, "strides") < 0) {
        return NULL;
    }
    if (da_dtype_arg(dtype_o, &dtype) < 0) {
        return NULL;
    }
    DaArray *a = new_array(dtype, nd, shape, strides_o != Py_None ? strides : NULL,
                           (CUdeviceptr)ptr, NULL, NULL, NULL);
    if (a != NULL) {
        a->readonly = readonly;
    }
    return (PyObject *)a;
}

static PyMethodDef da_functions[] = {
    {"_cuda_as_cuda_array", as_cuda_array, METH_O, "as_cuda_array(obj): wraps, no copy"},
    {"_cuda_test_array", (PyCFunction)(void (*)(void))test_array, METH_VARARGS | METH_KEYWORDS,
     "Test hook: _cuda_test_array(ptr, shape, dtype, strides=None, readonly=False)."},
    {NULL, NULL, 0, NULL},
};

int
da_init_module(PyObject *module)
{
    nv_state.devicearray_type = PyType_FromSpec(&da_spec);
    if (nv_state.devicearray_type == NULL
        || PyModule_AddObjectRef(module, "DeviceNDArray", nv_state.devicearray_type) < 0
        || PyModule_AddFunctions(module, da_functions) < 0 || da_copy_init(module) < 0) {
        return -1;
    }
    return 0;
}

/* ---- for the cuda ufunc (cucall.c, cureduce.c) and interop.c ---- */

int
da_info(PyObject *obj, DaInfo *info)
{
    if (!DA_CHECK(obj)) {
        PyErr_SetString(PyExc_TypeError, "expected a DeviceNDArray");
        return -1;
    }
    DaArray *a = (DaArray *)obj;
    info->ptr = a->ptr;
    info->nd = a->nd;
    memcpy(info->shape, a->shape, sizeof(Py_ssize_t) * (size_t)a->nd);
    memcpy(info->strides, a->strides, sizeof(Py_ssize_t) * (size_t)a->nd);
    info->dtype = a->dtype;
    info->readonly = a->readonly;
    /* ours: it owns its allocation, or is a view of an array that does */
    info->foreign =
        a->alloc == 0 && !(a->base != NULL && DA_CHECK(a->base) && ((DaArray *)a->base)->alloc);
    return 0;
}

PyObject *
da_empty(PyArray_Descr *dtype, int nd, const Py_ssize_t *shape, PyObject *stream)
{
    return (PyObject *)da_allocate(dtype, nd, shape, 'C', stream);
}

PyObject *
da_wrap(PyArray_Descr *dtype, int nd, const Py_ssize_t *shape, const Py_ssize_t *strides,
        CUdeviceptr ptr, PyObject *owner, int readonly)
{
    DaArray *a = new_array(dtype, nd, shape, strides, ptr, owner, NULL, NULL);
    if (a != NULL) {
        a->readonly = readonly;
    }
    return (PyObject *)a;
}

int
da_is_device_array(PyObject *obj)
{
    return DA_CHECK(obj);
}
