/*
 * devexport.c - what numbavec.cuda.DeviceNDArray hands to other libraries:
 * __cuda_array_interface__ (v3: it reports the array's stream) and
 * __dlpack__/__dlpack_device__ (a DLManagedTensor capsule "dltensor",
 * kDLCUDA, strides in elements: __dlpack__ waits for the array's stream
 * before handing it out, which is conservative).
 *
 * The import side, as_cuda_array(), is interop.c.  The two stay apart:
 * interop.c reads untrusted objects and checks every field before it
 * builds anything, through the public constructors alone; this file
 * describes arrays of our own and needs the DaArray struct (array.h's
 * part inside array/), which interop.c has no use for.  They share the
 * protocols' definitions (dlpack.h) and no code.
 */
#include "targets/cuda/array/array.h"
#include "targets/cuda/array/dlpack.h"

#include <stdint.h>
#include <stdlib.h>

/* ---- __cuda_array_interface__ ---- */

/* The v3 "stream" entry: 1 for the legacy default stream, else the handle. */
static PyObject *
cai_stream(DaArray *a)
{
    return PyLong_FromUnsignedLongLong(a->stream ? (unsigned long long)(size_t)a->stream : 1);
}

PyObject *
da_cai(PyObject *self, void *closure)
{
    DaArray *a = (DaArray *)self;
    PyObject *shape = da_ssize_tuple(a->nd, a->shape);
    PyObject *strides =
        da_is_contiguous(a, 'C') ? Py_NewRef(Py_None) : da_ssize_tuple(a->nd, a->strides);
    PyObject *typestr = PyObject_GetAttrString((PyObject *)a->dtype, "str");
    PyObject *stream = cai_stream(a);
    PyObject *result = NULL;
    unsigned long long ptr = da_nitems(a->nd, a->shape) ? (unsigned long long)a->ptr : 0;
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
sync_for_consumer(DaArray *a, int wait)
{
    if (cuda_drv == NULL || !wait) {
        return 0;
    }
    return cuda_enter() < 0 ? -1 : cuda_stream_wait(a->stream);
}

PyObject *
da_dlpack(PyObject *self, PyObject *args, PyObject *kwargs)
{
    static char *kwlist[] = {"stream", "max_version", "dl_device", "copy", NULL};
    DaArray *a = (DaArray *)self;
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
    Py_ssize_t item = da_elsize(a);
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

PyObject *
da_dlpack_device(PyObject *self, PyObject *unused)
{
    return Py_BuildValue("(ii)", kDLCUDA, cuda_device_ordinal());
}
