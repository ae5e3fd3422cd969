/*
 * stream.c - numbavec.cuda.Stream and Event, and how a `stream=` argument
 * becomes a CUstream.
 *
 * A Stream made by stream() owns its CUstream and destroys it when
 * collected; device arrays that were allocated on a stream keep the Stream
 * alive, so stream-ordered frees always have a live stream.  `stream=`
 * accepts None/0 (the legacy default stream), our Stream, a raw int handle
 * (0 .. 2**64 - 1; a bool is refused), or any object with __cuda_stream__()
 * returning (0, handle) (the CUDA Python / CuPy protocol, version 0).
 */
#include "targets/cuda/driver/driver.h"

typedef struct Stream {
    PyObject_HEAD CUstream handle;
    int owned;
} Stream;

typedef struct Event {
    PyObject_HEAD CUevent handle;
} Event;

static void
generic_free(PyObject *self)
{
    PyTypeObject *tp = Py_TYPE(self);
    freefunc free = (freefunc)PyType_GetSlot(tp, Py_tp_free);
    free(self);
    Py_DECREF(tp);
}

/* ---- Stream ---- */

static void
stream_dealloc(PyObject *self)
{
    Stream *s = (Stream *)self;
    if (s->owned && s->handle != NULL && cuda_drv != NULL && cuda_enter() == 0) {
        cuda_drv->StreamDestroy(s->handle); /* pending work still completes */
    }
    PyErr_Clear();
    generic_free(self);
}

int
cuda_stream_wait(CUstream s)
{
    PyThreadState *ts = PyEval_SaveThread();
    CUresult rc = cuda_drv->StreamSynchronize(s);
    PyEval_RestoreThread(ts);
    return cuda_check(rc, "cuStreamSynchronize");
}

static PyObject *
stream_synchronize(PyObject *self, PyObject *unused)
{
    if (cuda_enter() < 0 || cuda_stream_wait(((Stream *)self)->handle) < 0) {
        return NULL;
    }
    Py_RETURN_NONE;
}

static PyObject *
stream_cuda_stream(PyObject *self, PyObject *unused)
{
    return Py_BuildValue("(iK)", 0, (unsigned long long)(size_t)((Stream *)self)->handle);
}

static PyObject *
stream_handle(PyObject *self, void *closure)
{
    return PyLong_FromUnsignedLongLong((unsigned long long)(size_t)((Stream *)self)->handle);
}

static PyObject *
stream_repr(PyObject *self)
{
    return PyUnicode_FromFormat("<numbavec.cuda.Stream handle=%p>", ((Stream *)self)->handle);
}

static PyMethodDef stream_methods[] = {
    {"synchronize", stream_synchronize, METH_NOARGS, "Waits until the stream's work is done."},
    {"__cuda_stream__", stream_cuda_stream, METH_NOARGS, "(0, handle): the CUDA stream protocol."},
    {NULL, NULL, 0, NULL},
};

static PyGetSetDef stream_getset[] = {
    {"handle", stream_handle, NULL, "the CUstream as an int (0: the default stream)", NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

static PyType_Slot stream_slots[] = {
    {Py_tp_dealloc, stream_dealloc},
    {Py_tp_methods, stream_methods},
    {Py_tp_getset, stream_getset},
    {Py_tp_repr, stream_repr},
    {Py_tp_doc, "A CUDA stream (numbavec.cuda.stream())."},
    {0, NULL},
};

static PyType_Spec stream_spec = {
    "numbavec.cuda.Stream", sizeof(Stream), 0, Py_TPFLAGS_DEFAULT, stream_slots,
};

PyObject *
cuda_stream_new(PyObject *module, PyObject *args)
{
    if (cuda_enter() < 0) {
        return NULL;
    }
    Stream *s = PyObject_New(Stream, (PyTypeObject *)nv_state.stream_type);
    if (s == NULL) {
        return NULL;
    }
    s->handle = NULL;
    s->owned = 0;
    if (cuda_check(cuda_drv->StreamCreate(&s->handle, 0), "cuStreamCreate") < 0) {
        Py_DECREF(s);
        return NULL;
    }
    s->owned = 1;
    return (PyObject *)s;
}

/* A raw handle: an int (not a bool) in 0 .. 2**64 - 1.  0/-1. */
static int
handle_arg(PyObject *obj, const char *what, CUstream *out)
{
    if (!PyLong_Check(obj) || PyBool_Check(obj)) {
        PyErr_Format(PyExc_TypeError, "%s: a stream handle is an int, not a bool or another type",
                     what);
        return -1;
    }
    unsigned long long h = PyLong_AsUnsignedLongLong(obj);
    if (h == (unsigned long long)-1 && PyErr_Occurred()) {
        PyErr_Clear();
        PyErr_Format(PyExc_ValueError, "%s: a stream handle is in 0 .. 2**64 - 1", what);
        return -1;
    }
    *out = (CUstream)(size_t)h;
    return 0;
}

/* CuPy's streams (cupy.cuda.Stream, ExternalStream) have no __cuda_stream__
 * yet (cupy/cupy#9401): their handle is .ptr.  1 with *out, 0 when obj is
 * not one (no exception), -1 with an exception. */
static int
cupy_stream(PyObject *obj, CUstream *out)
{
    PyObject *mod = PyObject_GetAttrString((PyObject *)Py_TYPE(obj), "__module__");
    const char *name =
        mod != NULL && PyUnicode_Check(mod) ? PyUnicode_AsUTF8AndSize(mod, NULL) : NULL;
    int cupy = name != NULL && strncmp(name, "cupy.", 5) == 0;
    Py_XDECREF(mod);
    PyErr_Clear();
    PyObject *ptr = cupy ? PyObject_GetAttrString(obj, "ptr") : NULL;
    if (ptr == NULL || !PyLong_Check(ptr)) {
        Py_XDECREF(ptr);
        PyErr_Clear();
        return 0;
    }
    int rc = handle_arg(ptr, "stream=", out);
    Py_DECREF(ptr);
    return rc < 0 ? -1 : 1;
}

int
cuda_stream_arg(PyObject *obj, CUstream *out)
{
    *out = NULL;
    if (obj == NULL || obj == Py_None) {
        return 0;
    }
    if (PyObject_TypeCheck(obj, (PyTypeObject *)nv_state.stream_type)) {
        *out = ((Stream *)obj)->handle;
        return 0;
    }
    if (PyLong_Check(obj)) {
        return handle_arg(obj, "stream=", out);
    }
    PyObject *proto = PyObject_GetAttrString(obj, "__cuda_stream__");
    if (proto == NULL) {
        PyErr_Clear();
        int rc = cupy_stream(obj, out);
        if (rc <= 0) {
            if (rc == 0) {
                PyErr_Format(PyExc_TypeError,
                             "stream= takes a numbavec Stream, an int handle, a CuPy "
                             "stream or an object with __cuda_stream__, not %R",
                             obj);
            }
            return -1;
        }
        return 0;
    }
    PyObject *pair = PyCallable_Check(proto) ? PyObject_CallNoArgs(proto) : Py_NewRef(proto);
    Py_DECREF(proto);
    if (pair == NULL) {
        return -1;
    }
    int rc = -1;
    if (!PyTuple_Check(pair) || PyTuple_Size(pair) != 2 || !PyLong_Check(PyTuple_GetItem(pair, 0))
        || PyBool_Check(PyTuple_GetItem(pair, 0))) {
        PyErr_SetString(PyExc_TypeError,
                        "__cuda_stream__ must return a (version, handle) tuple of ints");
    } else if (PyLong_AsLong(PyTuple_GetItem(pair, 0)) != 0) {
        PyErr_Clear();
        PyErr_SetString(PyExc_ValueError, "__cuda_stream__: only version 0 of the protocol "
                                          "is known");
    } else {
        rc = handle_arg(PyTuple_GetItem(pair, 1), "__cuda_stream__", out);
    }
    Py_DECREF(pair);
    return rc;
}

/* ---- Event ---- */

static void
event_dealloc(PyObject *self)
{
    Event *e = (Event *)self;
    if (e->handle != NULL && cuda_drv != NULL && cuda_enter() == 0) {
        cuda_drv->EventDestroy(e->handle);
    }
    PyErr_Clear();
    generic_free(self);
}

static PyObject *
event_record(PyObject *self, PyObject *args)
{
    PyObject *stream = Py_None;
    CUstream s;
    if (!PyArg_ParseTuple(args, "|O", &stream) || cuda_stream_arg(stream, &s) < 0
        || cuda_enter() < 0
        || cuda_check(cuda_drv->EventRecord(((Event *)self)->handle, s), "cuEventRecord") < 0) {
        return NULL;
    }
    Py_RETURN_NONE;
}

static PyObject *
event_synchronize(PyObject *self, PyObject *unused)
{
    if (cuda_enter() < 0) {
        return NULL;
    }
    CUresult rc;
    Py_BEGIN_ALLOW_THREADS rc = cuda_drv->EventSynchronize(((Event *)self)->handle);
    Py_END_ALLOW_THREADS if (cuda_check(rc, "cuEventSynchronize") < 0)
    {
        return NULL;
    }
    Py_RETURN_NONE;
}

static PyObject *
event_elapsed_time(PyObject *self, PyObject *other)
{
    if (!PyObject_TypeCheck(other, (PyTypeObject *)nv_state.event_type)) {
        PyErr_SetString(PyExc_TypeError, "elapsed_time() takes another Event");
        return NULL;
    }
    float ms = 0.0f;
    if (cuda_enter() < 0
        || cuda_check(
               cuda_drv->EventElapsedTime(&ms, ((Event *)self)->handle, ((Event *)other)->handle),
               "cuEventElapsedTime")
               < 0) {
        return NULL;
    }
    return PyFloat_FromDouble(ms);
}

static PyMethodDef event_methods[] = {
    {"record", event_record, METH_VARARGS, "record(stream=None): records the event."},
    {"synchronize", event_synchronize, METH_NOARGS, "Waits until the event has happened."},
    {"wait", event_synchronize, METH_NOARGS, "Alias of synchronize()."},
    {"elapsed_time", event_elapsed_time, METH_O,
     "elapsed_time(later): milliseconds from this event to `later`."},
    {NULL, NULL, 0, NULL},
};

static PyType_Slot event_slots[] = {
    {Py_tp_dealloc, event_dealloc},
    {Py_tp_methods, event_methods},
    {Py_tp_doc, "A CUDA event for timing and ordering (numbavec.cuda.event())."},
    {0, NULL},
};

static PyType_Spec event_spec = {
    "numbavec.cuda.Event", sizeof(Event), 0, Py_TPFLAGS_DEFAULT, event_slots,
};

PyObject *
cuda_event_new(PyObject *module, PyObject *args)
{
    int timing = 1;
    if (!PyArg_ParseTuple(args, "|p", &timing) || cuda_enter() < 0) {
        return NULL;
    }
    Event *e = PyObject_New(Event, (PyTypeObject *)nv_state.event_type);
    if (e == NULL) {
        return NULL;
    }
    e->handle = NULL;
    if (cuda_check(
            cuda_drv->EventCreate(&e->handle, timing ? CU_EVENT_DEFAULT : CU_EVENT_DISABLE_TIMING),
            "cuEventCreate")
        < 0) {
        Py_DECREF(e);
        return NULL;
    }
    return (PyObject *)e;
}

int
cuda_stream_init_types(PyObject *module)
{
    nv_state.stream_type = PyType_FromSpec(&stream_spec);
    nv_state.event_type = nv_state.stream_type ? PyType_FromSpec(&event_spec) : NULL;
    if (nv_state.event_type == NULL) {
        return -1;
    }
    if (PyModule_AddObjectRef(module, "CudaStream", nv_state.stream_type) < 0
        || PyModule_AddObjectRef(module, "CudaEvent", nv_state.event_type) < 0) {
        return -1;
    }
    return 0;
}
