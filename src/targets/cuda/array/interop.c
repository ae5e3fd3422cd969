/*
 * interop.c - as_cuda_array(): device memory of another library wrapped as
 * a DeviceNDArray without a copy, from __cuda_array_interface__ (versions
 * 0 to 3) or from __dlpack__/__dlpack_device__ (an unversioned "dltensor"
 * capsule).  cuda ufunc calls take foreign device operands through here too.
 * The export side of both protocols is devexport.c.
 *
 * What a foreign object hands over is untrusted.  Every field is checked
 * before anything is built or any driver call is made: its type, its range,
 * and the byte extent it implies (size * itemsize, the reach of the strides
 * from the pointer, alignment) against overflow.  A malformed interface is
 * a TypeError (a wrong type) or a ValueError (a wrong value) naming the
 * field; an exception raised by the object's own attribute or protocol
 * method becomes a TypeError naming it, the original as its __cause__.
 */
#include "targets/cuda/array/array.h"
#include "targets/cuda/array/dlpack.h"

#include <limits.h>
#include <stdio.h>
#include <stdarg.h>
#include <string.h>

#define CAI "__cuda_array_interface__"

/* ---- errors ---- */

/* Raises exc("<where>: <message>"); returns -1.  where names the field. */
static int
bad(PyObject *exc, const char *where, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    PyObject *msg = PyUnicode_FromFormatV(fmt, ap);
    va_end(ap);
    if (msg != NULL) {
        PyErr_Format(exc, "%s: %U", where, msg);
        Py_DECREF(msg);
    }
    return -1;
}

/* What o is, for messages: never o's own repr, which may raise. */
static const char *
kind_of(PyObject *o)
{
    return o == Py_None                   ? "None"
           : PyBool_Check(o)              ? "a bool"
           : PyLong_Check(o)              ? "an int"
           : PyFloat_Check(o)             ? "a float"
           : PyUnicode_Check(o)           ? "a str"
           : PyBytes_Check(o)             ? "a bytes"
           : PyTuple_Check(o)             ? "a tuple"
           : PyList_Check(o)              ? "a list"
           : PyDict_Check(o)              ? "a dict"
           : PyCapsule_CheckExact(o)      ? "a capsule"
           : PyArray_IsScalar(o, Generic) ? "a NumPy scalar"
                                          : "an object of another type";
}

/*
 * The exception that the foreign object's attribute or method `what`
 * raised becomes a TypeError naming it, with the original as __cause__.
 * MemoryError and what is no Exception (KeyboardInterrupt) pass unchanged.
 * Returns -1.
 */
static int
protocol_raised(const char *what)
{
    if (!PyErr_ExceptionMatches(PyExc_Exception) || PyErr_ExceptionMatches(PyExc_MemoryError)) {
        return -1;
    }
    PyObject *type, *value, *tb;
    PyErr_Fetch(&type, &value, &tb);
    PyErr_NormalizeException(&type, &value, &tb);
    if (value != NULL && tb != NULL) {
        PyException_SetTraceback(value, tb);
    }
    PyObject *name = PyObject_GetAttrString(type, "__name__");
    if (name == NULL || !PyUnicode_Check(name)) {
        PyErr_Clear();
        Py_XDECREF(name);
        name = PyUnicode_FromString("an exception");
    }
    if (name != NULL) {
        PyErr_Format(PyExc_TypeError, "as_cuda_array: %s raised %U", what, name);
        Py_DECREF(name);
    }
    PyObject *t2, *v2, *tb2;
    PyErr_Fetch(&t2, &v2, &tb2);
    PyErr_NormalizeException(&t2, &v2, &tb2);
    if (v2 != NULL && value != NULL) {
        PyException_SetCause(v2, value); /* steals value */
        value = NULL;
    }
    PyErr_Restore(t2, v2, tb2);
    Py_XDECREF(type);
    Py_XDECREF(value);
    Py_XDECREF(tb);
    return -1;
}

/* ---- fields ---- */

/* An int of an interface: a Python int (not a bool) or a NumPy integer. */
static int
is_int(PyObject *o)
{
    return (PyLong_Check(o) && !PyBool_Check(o)) || PyArray_IsScalar(o, Integer);
}

/* o as a Py_ssize_t >= min.  0/-1 with TypeError/ValueError naming where. */
static int
ssize_field(PyObject *o, const char *where, Py_ssize_t min, Py_ssize_t *out)
{
    if (!is_int(o)) {
        return bad(PyExc_TypeError, where, "must be an int, got %s", kind_of(o));
    }
    PyObject *i = PyNumber_Index(o); /* a NumPy integer -> int */
    if (i == NULL) {
        PyErr_Clear(); /* np.timedelta64 is an integer without __index__ */
        return bad(PyExc_TypeError, where, "must be an int, got %s", kind_of(o));
    }
    Py_ssize_t v = PyLong_AsSsize_t(i);
    Py_DECREF(i);
    if (v == -1 && PyErr_Occurred()) {
        PyErr_Clear();
        return bad(PyExc_ValueError, where, "is out of range");
    }
    if (v < min) {
        return bad(PyExc_ValueError, where, "must be at least %zd, got %zd", min, v);
    }
    *out = v;
    return 0;
}

/* o as an unsigned 64-bit value (a pointer or a stream handle). */
static int
u64_field(PyObject *o, const char *where, unsigned long long *out)
{
    if (!is_int(o)) {
        return bad(PyExc_TypeError, where, "must be an int, got %s", kind_of(o));
    }
    PyObject *i = PyNumber_Index(o);
    if (i == NULL) {
        PyErr_Clear();
        return bad(PyExc_TypeError, where, "must be an int, got %s", kind_of(o));
    }
    unsigned long long v = PyLong_AsUnsignedLongLong(i);
    Py_DECREF(i);
    if (v == (unsigned long long)-1 && PyErr_Occurred()) {
        PyErr_Clear();
        return bad(PyExc_ValueError, where, "must be in 0 .. 2**64 - 1");
    }
    *out = v;
    return 0;
}

/* The tuple t of ints >= min into out[*n] (n == -1: any length up to
 * NPY_MAXDIMS, else exactly *n). */
static int
ssize_tuple_field(PyObject *t, const char *where, Py_ssize_t min, int *n, Py_ssize_t *out)
{
    if (!PyTuple_Check(t)) {
        return bad(PyExc_TypeError, where, "must be a tuple of ints, got %s", kind_of(t));
    }
    Py_ssize_t len = PyTuple_Size(t);
    if (len > NPY_MAXDIMS) {
        return bad(PyExc_ValueError, where, "has %zd entries; at most %d dimensions", len,
                   NPY_MAXDIMS);
    }
    if (*n >= 0 && len != *n) {
        return bad(PyExc_ValueError, where, "has %zd entries for %d dimensions", len, *n);
    }
    for (Py_ssize_t i = 0; i < len; i++) {
        char item[96];
        snprintf(item, sizeof(item), "%s[%zd]", where, i);
        if (ssize_field(PyTuple_GetItem(t, i), item, min, &out[i]) < 0) {
            return -1;
        }
    }
    *n = (int)len;
    return 0;
}

/* ---- the checks both protocols share ---- */

/* What a foreign object describes, checked field by field. */
typedef struct Foreign {
    int nd, readonly;
    Py_ssize_t shape[NPY_MAXDIMS], strides[NPY_MAXDIMS];
    int has_strides;
    unsigned long long ptr;
    PyArray_Descr *dtype; /* owned */
} Foreign;

/* The alignment a kernel's loads of this dtype need (complex: of a part). */
static Py_ssize_t
alignment_of(PyArray_Descr *d)
{
    Py_ssize_t item = (Py_ssize_t)PyDataType_ELSIZE(d);
    return PyTypeNum_ISCOMPLEX(d->type_num) ? item / 2 : item;
}

/*
 * A non-empty array's memory must be addressable: size * itemsize and the
 * reach of the strides on either side of the pointer fit in Py_ssize_t and
 * in the 64-bit address space, the pointer is not NULL, and the pointer and
 * strides keep every element aligned (a misaligned load is a sticky error
 * that ends the CUDA context).  0/-1 with ValueError naming where.
 */
static int
check_extent(const Foreign *f, const char *where)
{
    Py_ssize_t size = 1, item = (Py_ssize_t)PyDataType_ELSIZE(f->dtype);
    for (int i = 0; i < f->nd; i++) {
        if (f->shape[i] == 0) {
            return 0; /* empty: no element is ever addressed */
        }
    }
    for (int i = 0; i < f->nd; i++) {
        if (__builtin_mul_overflow(size, f->shape[i], &size)) {
            return bad(PyExc_ValueError, where, "the size of the shape overflows");
        }
    }
    Py_ssize_t bytes;
    if (__builtin_mul_overflow(size, item, &bytes)) {
        return bad(PyExc_ValueError, where, "the shape's %zd elements of %zd bytes overflow", size,
                   item);
    }
    if (f->ptr == 0) {
        return bad(PyExc_ValueError, where, "the data pointer is NULL for %zd elements", size);
    }
    Py_ssize_t lo = 0, hi = bytes, align = alignment_of(f->dtype);
    if (f->has_strides) {
        hi = item;
        for (int i = 0; i < f->nd; i++) {
            Py_ssize_t span, s = f->strides[i];
            if (s % align != 0) {
                return bad(PyExc_ValueError, where,
                           "stride %zd is not a multiple of the %zd-byte alignment", s, align);
            }
            if (__builtin_mul_overflow(s, f->shape[i] - 1, &span)
                || __builtin_add_overflow(span < 0 ? lo : hi, span, span < 0 ? &lo : &hi)) {
                return bad(PyExc_ValueError, where, "the reach of the strides overflows");
            }
        }
    }
    if (f->ptr % (unsigned long long)align != 0) {
        return bad(PyExc_ValueError, where, "the data pointer is not %zd-byte aligned", align);
    }
    if (0ULL - (unsigned long long)lo > f->ptr || (unsigned long long)hi > ULLONG_MAX - f->ptr) {
        return bad(PyExc_ValueError, where,
                   "the data pointer, shape and strides reach outside the address space");
    }
    return 0;
}

/* The DeviceNDArray over f's memory, keeping owner alive; consumes f->dtype. */
static PyObject *
wrap(Foreign *f, PyObject *owner)
{
    PyArray_Descr *dtype = f->dtype;
    f->dtype = NULL;
    return da_wrap(dtype, f->nd, f->shape, f->has_strides ? f->strides : NULL, (CUdeviceptr)f->ptr,
                   owner, f->readonly);
}

/* ---- __cuda_array_interface__ ---- */

/* typestr ("<f4", "|b1"): a native bool, integer, float or complex.  The
 * dtype is made from the checked type number, never from the text. */
static int
cai_typestr(PyObject *o, PyArray_Descr **out)
{
    static const char where[] = CAI "['typestr']";
    static const struct {
        char kind;
        int size, typenum;
    } known[] = {
        {'b', 1, NPY_BOOL},      {'i', 1, NPY_INT8},        {'i', 2, NPY_INT16},
        {'i', 4, NPY_INT32},     {'i', 8, NPY_INT64},       {'u', 1, NPY_UINT8},
        {'u', 2, NPY_UINT16},    {'u', 4, NPY_UINT32},      {'u', 8, NPY_UINT64},
        {'f', 2, NPY_FLOAT16},   {'f', 4, NPY_FLOAT32},     {'f', 8, NPY_FLOAT64},
        {'c', 8, NPY_COMPLEX64}, {'c', 16, NPY_COMPLEX128},
    };
    if (!PyUnicode_Check(o)) {
        return bad(PyExc_TypeError, where, "must be a str such as '<f4', got %s", kind_of(o));
    }
    Py_ssize_t len;
    const char *s = PyUnicode_AsUTF8AndSize(o, &len);
    if (s == NULL) {
        PyErr_Clear(); /* lone surrogates */
        return bad(PyExc_ValueError, where, "is not a valid typestr");
    }
    char *end = NULL;
    long size = len >= 3 && len <= 4 && s[2] >= '0' && s[2] <= '9' ? strtol(s + 2, &end, 10) : 0;
    int typenum = -1;
    for (size_t k = 0; end != NULL && *end == '\0' && k < sizeof(known) / sizeof(known[0]); k++) {
        if (known[k].kind == s[1] && known[k].size == size) {
            typenum = known[k].typenum;
        }
    }
    if (typenum < 0 || strchr("<>|=", s[0]) == NULL) {
        return bad(PyExc_ValueError, where,
                   "'%U' is not a bool, integer, float or complex typestr such as '<f4'", o);
    }
#if NPY_BYTE_ORDER == NPY_BIG_ENDIAN
    const char foreign_order = '<';
#else
    const char foreign_order = '>';
#endif
    if (s[0] == foreign_order && size > 1) {
        return bad(PyExc_ValueError, where, "'%U' is not in the native byte order", o);
    }
    *out = PyArray_DescrFromType(typenum);
    return *out ? 0 : -1;
}

/* data: (pointer, read-only flag). */
static int
cai_data(PyObject *o, Foreign *f)
{
    static const char where[] = CAI "['data']";
    if (!PyTuple_Check(o)) {
        return bad(PyExc_TypeError, where, "must be a (pointer, read-only) tuple, got %s",
                   kind_of(o));
    }
    if (PyTuple_Size(o) != 2) {
        return bad(PyExc_ValueError, where, "must have 2 entries, got %zd", PyTuple_Size(o));
    }
    PyObject *ro = PyTuple_GetItem(o, 1);
    if (u64_field(PyTuple_GetItem(o, 0), CAI "['data'][0]", &f->ptr) < 0) {
        return -1;
    }
    if (!PyBool_Check(ro) && !PyArray_IsScalar(ro, Bool)) {
        return bad(PyExc_TypeError, CAI "['data'][1]", "must be a bool, got %s", kind_of(ro));
    }
    f->readonly = ro == Py_True || (PyArray_IsScalar(ro, Bool) && PyObject_IsTrue(ro) == 1);
    return 0;
}

/* version: 0 to 3 (required by every version of the protocol). */
static int
cai_version(PyObject *cai)
{
    PyObject *v = PyDict_GetItemString(cai, "version");
    Py_ssize_t version;
    if (v == NULL) {
        return bad(PyExc_ValueError, CAI, "'version' is missing");
    }
    if (ssize_field(v, CAI "['version']", 0, &version) < 0) {
        return -1;
    }
    if (version > 3) {
        return bad(PyExc_ValueError, CAI "['version']", "must be 0 to 3, got %zd", version);
    }
    return 0;
}

/* stream (v3): None, or the producer's stream: 1 legacy default, 2
 * per-thread default, else a handle; 0 is ambiguous and not allowed. */
static int
cai_stream(PyObject *o, unsigned long long *handle)
{
    *handle = 0;
    if (o == NULL || o == Py_None) {
        return 0;
    }
    if (u64_field(o, CAI "['stream']", handle) < 0) {
        return -1;
    }
    if (*handle == 0) {
        return bad(PyExc_ValueError, CAI "['stream']",
                   "0 is not allowed (use 1 for the legacy default stream)");
    }
    return 0;
}

/* Waits for the producer's stream (when our driver is loaded: without it,
 * nothing of ours can run before the array is used). */
static int
cai_sync(unsigned long long h)
{
    if (h == 0 || cuda_drv == NULL) {
        return 0;
    }
    CUstream s = h <= 2 ? NULL : (CUstream)(size_t)h;
    if (cuda_enter() < 0) {
        return -1;
    }
    return cuda_check(cuda_drv->StreamSynchronize(s), "synchronizing the producer's stream");
}

static int
cai_parse(PyObject *cai, Foreign *f, unsigned long long *stream)
{
    static const char *const required[] = {"shape", "typestr", "data"};
    for (size_t k = 0; k < 3; k++) {
        if (PyDict_GetItemString(cai, required[k]) == NULL) {
            return bad(PyExc_ValueError, CAI, "'%s' is missing", required[k]);
        }
    }
    PyObject *strides = PyDict_GetItemString(cai, "strides");
    PyObject *mask = PyDict_GetItemString(cai, "mask");
    f->nd = -1;
    if (cai_version(cai) < 0
        || ssize_tuple_field(PyDict_GetItemString(cai, "shape"), CAI "['shape']", 0, &f->nd,
                             f->shape)
               < 0
        || cai_typestr(PyDict_GetItemString(cai, "typestr"), &f->dtype) < 0
        || cai_data(PyDict_GetItemString(cai, "data"), f) < 0
        || cai_stream(PyDict_GetItemString(cai, "stream"), stream) < 0) {
        return -1;
    }
    f->has_strides = strides != NULL && strides != Py_None;
    int ns = f->nd;
    if (f->has_strides
        && ssize_tuple_field(strides, CAI "['strides']", PY_SSIZE_T_MIN, &ns, f->strides) < 0) {
        return -1;
    }
    if (mask != NULL && mask != Py_None) {
        return bad(PyExc_ValueError, CAI "['mask']",
                   "must be None: masked arrays are not supported");
    }
    return check_extent(f, CAI);
}

/*
 * The fields of interface (the attribute's value, a dict) in a dict of our
 * own, so that nothing the producer runs while we read them (an __index__,
 * a dict subclass's __getitem__) can free what we hold.  A dict subclass is
 * read through its __getitem__; an error there is a TypeError naming the
 * key.  Unknown keys ("descr") are left out.  New reference.
 */
static PyObject *
cai_snapshot(PyObject *interface)
{
    static const char *const keys[] = {"shape",   "typestr", "data",  "version",
                                       "strides", "mask",    "stream"};
    if (!PyDict_Check(interface)) {
        bad(PyExc_TypeError, CAI, "must be a dict, got %s", kind_of(interface));
        return NULL;
    }
    PyObject *cai = PyDict_New();
    for (size_t k = 0; cai != NULL && k < sizeof(keys) / sizeof(keys[0]); k++) {
        PyObject *v = PyMapping_GetItemString(interface, keys[k]);
        if (v == NULL && PyErr_ExceptionMatches(PyExc_KeyError)) {
            PyErr_Clear(); /* missing */
            continue;
        }
        if (v == NULL) {
            char what[64];
            snprintf(what, sizeof(what), "reading " CAI "['%s']", keys[k]);
            protocol_raised(what);
            Py_CLEAR(cai);
        } else if (PyDict_SetItemString(cai, keys[k], v) < 0) {
            Py_CLEAR(cai);
        }
        Py_XDECREF(v);
    }
    return cai;
}

/* The array that interface describes; obj owns the memory.  New reference. */
static PyObject *
from_cai(PyObject *obj, PyObject *interface)
{
    PyObject *cai = cai_snapshot(interface);
    if (cai == NULL) {
        return NULL;
    }
    Foreign f = {0};
    unsigned long long stream = 0;
    PyObject *result = NULL;
    if (cai_parse(cai, &f, &stream) == 0 && cai_sync(stream) == 0) {
        result = wrap(&f, obj);
    }
    Py_XDECREF(f.dtype);
    Py_DECREF(cai);
    return result;
}

/* ---- __dlpack__ ---- */

static void
dl_owner_free(PyObject *capsule)
{
    DLManagedTensor *t = PyCapsule_GetPointer(capsule, "numbavec.dlpack_owner");
    if (t != NULL && t->deleter != NULL) {
        t->deleter(t);
    }
    PyErr_Clear();
}

static PyArray_Descr *
descr_of_dl(DLDataType dt)
{
    int num = -1;
    int bytes = dt.bits % 8 == 0 ? dt.bits / 8 : 0;
    if (dt.lanes != 1) {
        num = -1;
    } else if (dt.code == kDLBool && bytes == 1) {
        num = NPY_BOOL;
    } else if (dt.code == kDLInt) {
        num = bytes == 1   ? NPY_INT8
              : bytes == 2 ? NPY_INT16
              : bytes == 4 ? NPY_INT32
              : bytes == 8 ? NPY_INT64
                           : -1;
    } else if (dt.code == kDLUInt) {
        num = bytes == 1   ? NPY_UINT8
              : bytes == 2 ? NPY_UINT16
              : bytes == 4 ? NPY_UINT32
              : bytes == 8 ? NPY_UINT64
                           : -1;
    } else if (dt.code == kDLFloat) {
        num = bytes == 2 ? NPY_FLOAT16 : bytes == 4 ? NPY_FLOAT32 : bytes == 8 ? NPY_FLOAT64 : -1;
    } else if (dt.code == kDLComplex) {
        num = bytes == 8 ? NPY_COMPLEX64 : bytes == 16 ? NPY_COMPLEX128 : -1;
    }
    if (num < 0) {
        PyErr_Format(PyExc_TypeError,
                     "DLTensor.dtype (code %d, %d bits, %d lanes) has no NumPy "
                     "equivalent",
                     dt.code, dt.bits, dt.lanes);
        return NULL;
    }
    return PyArray_DescrFromType(num);
}

/* (device type, device id) from obj.__dlpack_device__(): CUDA memory of the
 * device numbavec uses. */
static int
dl_device(PyObject *obj, DLDevice *out)
{
    static const char where[] = "__dlpack_device__()";
    PyObject *meth = PyObject_GetAttrString(obj, "__dlpack_device__");
    if (meth == NULL) {
        if (!PyErr_ExceptionMatches(PyExc_AttributeError)) {
            return protocol_raised("reading __dlpack_device__");
        }
        PyErr_Clear();
        return bad(PyExc_TypeError, "as_cuda_array",
                   "an object with __dlpack__ must have __dlpack_device__ too");
    }
    PyObject *dev = PyObject_CallNoArgs(meth);
    Py_DECREF(meth);
    if (dev == NULL) {
        return protocol_raised(where);
    }
    Py_ssize_t v[2];
    int rc = -1;
    if (!PyTuple_Check(dev) || PyTuple_Size(dev) != 2) {
        bad(PyExc_TypeError, where, "must return a (device type, device id) tuple, got %s",
            kind_of(dev));
    } else if (ssize_field(PyTuple_GetItem(dev, 0), "__dlpack_device__()[0]", 0, &v[0]) == 0
               && ssize_field(PyTuple_GetItem(dev, 1), "__dlpack_device__()[1]", 0, &v[1]) == 0) {
        rc = 0;
    }
    Py_DECREF(dev);
    if (rc < 0) {
        return -1;
    }
    if (v[0] != kDLCUDA && v[0] != kDLCUDAManaged) {
        return bad(PyExc_TypeError, "as_cuda_array",
                   "the object is not in CUDA device memory (DLPack device type %zd); use "
                   "to_device() to copy it",
                   v[0]);
    }
    if (v[1] != cuda_device_ordinal()) {
        return bad(PyExc_ValueError, where, "the array is on CUDA device %zd; numbavec uses %d",
                   v[1], cuda_device_ordinal());
    }
    out->device_type = (int32_t)v[0];
    out->device_id = (int32_t)v[1];
    return 0;
}

/* obj.__dlpack__(stream=1): we consume on the legacy default stream.  A
 * new reference to a "dltensor" capsule (not yet consumed). */
static PyObject *
dl_capsule(PyObject *meth)
{
    static const char where[] = "__dlpack__()";
    PyObject *kw = Py_BuildValue("{s:i}", "stream", 1), *empty = PyTuple_New(0);
    PyObject *cap = kw && empty ? PyObject_Call(meth, empty, kw) : NULL;
    Py_XDECREF(kw);
    Py_XDECREF(empty);
    if (cap == NULL) {
        protocol_raised(where);
        return NULL;
    }
    if (!PyCapsule_CheckExact(cap)) {
        bad(PyExc_TypeError, where, "must return a DLPack capsule, got %s", kind_of(cap));
        Py_DECREF(cap);
        return NULL;
    }
    const char *name = PyCapsule_GetName(cap);
    PyErr_Clear(); /* NULL is a legal name */
    if (name == NULL || strcmp(name, "dltensor") != 0) {
        const char *why = name == NULL                         ? "an unnamed capsule"
                          : strcmp(name, "used_dltensor") == 0 ? "a capsule already consumed"
                          : strcmp(name, "dltensor_versioned") == 0
                              ? "a versioned (DLPack 1.0) capsule, which was not asked for"
                              : "a capsule that is not a DLPack tensor";
        bad(PyExc_ValueError, where, "returned %s (named %s)", why, name ? name : "NULL");
        Py_DECREF(cap);
        return NULL;
    }
    return cap;
}

/* The tensor x (from __dlpack__ on device dev) as f.  0/-1. */
static int
dl_parse(const DLTensor *x, DLDevice dev, Foreign *f)
{
    static const char where[] = "__dlpack__()";
    if (x->device.device_type != dev.device_type || x->device.device_id != dev.device_id) {
        return bad(PyExc_ValueError, where,
                   "the tensor's device (%d, %d) is not __dlpack_device__()'s (%d, %d)",
                   (int)x->device.device_type, (int)x->device.device_id, (int)dev.device_type,
                   (int)dev.device_id);
    }
    if (x->ndim < 0 || x->ndim > NPY_MAXDIMS) {
        return bad(PyExc_ValueError, where, "DLTensor.ndim is %d; 0 to %d are supported",
                   (int)x->ndim, NPY_MAXDIMS);
    }
    if (x->ndim > 0 && x->shape == NULL) {
        return bad(PyExc_ValueError, where, "DLTensor.shape is NULL");
    }
    if ((f->dtype = descr_of_dl(x->dtype)) == NULL) {
        return -1;
    }
    f->nd = x->ndim;
    f->has_strides = x->strides != NULL;
    Py_ssize_t item = (Py_ssize_t)PyDataType_ELSIZE(f->dtype);
    for (int i = 0; i < f->nd; i++) {
        if (x->shape[i] < 0) {
            return bad(PyExc_ValueError, where, "DLTensor.shape[%d] is negative", i);
        }
        f->shape[i] = (Py_ssize_t)x->shape[i];
        if (f->has_strides && __builtin_mul_overflow(x->strides[i], item, &f->strides[i])) {
            return bad(PyExc_ValueError, where, "DLTensor.strides[%d] overflows", i);
        }
    }
    if (__builtin_add_overflow((unsigned long long)(uintptr_t)x->data, x->byte_offset, &f->ptr)) {
        return bad(PyExc_ValueError, where, "DLTensor.data + byte_offset overflows");
    }
    return check_extent(f, where);
}

/* The array obj's __dlpack__ (the bound method meth) exports.  New reference. */
static PyObject *
from_dlpack(PyObject *obj, PyObject *meth)
{
    DLDevice dev = {0, 0};
    if (dl_device(obj, &dev) < 0) {
        return NULL;
    }
    PyObject *cap = dl_capsule(meth);
    if (cap == NULL) {
        return NULL;
    }
    DLManagedTensor *t = PyCapsule_GetPointer(cap, "dltensor");
    Foreign f = {0};
    PyObject *result = NULL, *owner = NULL;
    /* checked before it is consumed: a refused capsule stays the producer's */
    if (t == NULL || dl_parse(&t->dl_tensor, dev, &f) < 0
        || PyCapsule_SetName(cap, "used_dltensor") < 0) {
        goto done;
    }
    owner = PyCapsule_New(t, "numbavec.dlpack_owner", dl_owner_free);
    if (owner == NULL) {
        if (t->deleter != NULL) {
            t->deleter(t);
        }
        goto done;
    }
    result = wrap(&f, owner); /* on failure, owner's release calls the deleter */
done:
    Py_XDECREF(f.dtype);
    Py_XDECREF(owner);
    Py_DECREF(cap);
    return result;
}

/* ---- entry points ---- */

int
da_foreign_array(PyObject *obj, PyObject **out)
{
    *out = NULL;
    if (da_is_device_array(obj)) {
        *out = Py_NewRef(obj);
        return 1;
    }
    PyObject *cai = PyObject_GetAttrString(obj, CAI);
    if (cai != NULL) {
        *out = from_cai(obj, cai);
        Py_DECREF(cai);
        return *out != NULL ? 1 : -1;
    }
    if (!PyErr_ExceptionMatches(PyExc_AttributeError)) {
        return protocol_raised("reading " CAI);
    }
    PyErr_Clear();
    PyObject *dlpack = PyObject_GetAttrString(obj, "__dlpack__");
    if (dlpack == NULL) {
        if (!PyErr_ExceptionMatches(PyExc_AttributeError)) {
            return protocol_raised("reading __dlpack__");
        }
        PyErr_Clear();
        return 0;
    }
    *out = from_dlpack(obj, dlpack);
    Py_DECREF(dlpack);
    return *out != NULL ? 1 : -1;
}

int
da_check_foreign_memory(CUdeviceptr lo, CUdeviceptr hi)
{
    /* cuPointerGetAttribute, unlike cuPointerGetAttributes, fails for an
     * address no allocation holds (freed, or host memory never registered):
     * a kernel reading it would fault and poison the context for good */
    CUdeviceptr start = 0;
    size_t size = 0;
    const CudaDriver *d = cuda_driver();
    if (d == NULL
        || cuda_check(d->PointerGetAttribute(&start, CU_POINTER_ATTRIBUTE_RANGE_START_ADDR, lo),
                      "cuPointerGetAttribute: another library's array is not in device memory "
                      "allocated now (freed, or a host address)")
               < 0
        || cuda_check(d->PointerGetAttribute(&size, CU_POINTER_ATTRIBUTE_RANGE_SIZE, lo),
                      "cuPointerGetAttribute")
               < 0) {
        return -1;
    }
    if (hi - start > size) {
        char msg[160]; /* PyErr_Format has no %llx before Python 3.12 */
        snprintf(msg, sizeof msg,
                 "another library's array spans bytes up to 0x%llx, past the end of its "
                 "allocation [0x%llx, 0x%llx)",
                 (unsigned long long)hi, (unsigned long long)start,
                 (unsigned long long)(start + size));
        PyErr_SetString(PyExc_ValueError, msg);
        return -1;
    }
    return 0;
}

PyObject *
da_as_array(PyObject *obj)
{
    PyObject *array;
    int found = da_foreign_array(obj, &array);
    if (found == 0) {
        bad(PyExc_TypeError, "as_cuda_array",
            "the object (%s) exports neither " CAI " nor __dlpack__", kind_of(obj));
    }
    return array;
}
