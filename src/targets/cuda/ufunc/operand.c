/*
 * operand.c - the operands of a cuda ufunc's or gufunc's call (and of a
 * reduce): what a Python argument is (a Python scalar, a NumPy scalar or
 * 0-d array, a host ndarray, a device array: ours, or another library's
 * through as_cuda_array's checks), the bytes a device operand spans and
 * the check of foreign memory before a launch, and the device copies an
 * operand gets (a host array uploaded, a device array of another dtype
 * cast by the identity cuda ufunc).
 */
#include "targets/cuda/ufunc/ufunc.h"

#include <stdint.h>
#include <string.h>

/* ---- operands ---- */

void
cu_operands_clear(CuOperand *ops, int n)
{
    for (int k = 0; k < n; k++) {
        Py_CLEAR(ops[k].obj);
        Py_CLEAR(ops[k].dev);
    }
}

int
cu_device_operand(CuOperand *op, PyObject *dev)
{
    DaInfo info;
    if (da_info(dev, &info) < 0) {
        Py_DECREF(dev);
        return -1;
    }
    op->what = CU_OP_DEVICE;
    op->obj = dev;
    op->dtype = info.dtype;
    op->nd = info.nd;
    op->foreign = info.foreign;
    op->ptr = info.ptr;
    if (info.nd > 0) { /* a 0-d array may have no shape array at all */
        memcpy(op->shape, info.shape, sizeof(Py_ssize_t) * (size_t)info.nd);
        memcpy(op->strides, info.strides, sizeof(Py_ssize_t) * (size_t)info.nd);
    }
    return 0;
}

static int
host_operand(CuOperand *op, PyObject *arr)
{
    PyArrayObject *a = (PyArrayObject *)arr;
    op->obj = arr;
    op->dtype = PyArray_DESCR(a);
    op->nd = PyArray_NDIM(a);
    op->what = op->nd == 0 ? CU_OP_SCALAR : CU_OP_HOST;
    if (op->nd > 0) { /* NumPy gives 0-d arrays NULL dims and strides */
        memcpy(op->shape, PyArray_DIMS(a), sizeof(Py_ssize_t) * (size_t)op->nd);
        memcpy(op->strides, PyArray_STRIDES(a), sizeof(Py_ssize_t) * (size_t)op->nd);
    }
    return 0;
}

/* An empty operand (shape and strides are left: nd is 0).  The structs are
 * large (NPY_MAXDIMS of each), and a call is microseconds. */
void
cu_operand_reset(CuOperand *op)
{
    op->what = CU_OP_PYSCALAR;
    op->obj = op->dev = NULL;
    op->dtype = NULL;
    op->nd = 0;
    op->foreign = 0;
    op->ptr = 0;
    op->words[0] = op->words[1] = 0;
}

/* Sorts obj into an operand.  0/-1. */
int
cu_classify(PyObject *obj, CuOperand *op)
{
    cu_operand_reset(op);
    /* weak (NEP 50): Python numbers and their subclasses, but not bool and
     * not NumPy's float64/complex128 scalars, which subclass float/complex */
    if (PyLong_CheckExact(obj) || PyFloat_CheckExact(obj) || PyComplex_CheckExact(obj)
        || (!PyBool_Check(obj) && !PyArray_IsScalar(obj, Generic)
            && (PyLong_Check(obj) || PyFloat_Check(obj) || PyComplex_Check(obj)))) {
        op->what = CU_OP_PYSCALAR;
        op->obj = Py_NewRef(obj);
        return 0;
    }
    if (da_is_device_array(obj)) {
        return cu_device_operand(op, Py_NewRef(obj));
    }
    if (!PyArray_Check(obj) && !PyArray_IsScalar(obj, Generic) && !PyBool_Check(obj)) {
        /* another library's device array: checked as as_cuda_array checks it */
        PyObject *dev = NULL;
        int found = da_foreign_array(obj, &dev);
        if (found != 0) {
            return found > 0 ? cu_device_operand(op, dev) : -1;
        }
    }
    PyObject *arr = PyArray_FROM_O(obj);
    return arr ? host_operand(op, arr) : -1;
}

/* 1 when dtype d holds values of kind k as the kernels read them: native
 * byte order, any of NumPy's names for the type (int64 is NPY_LONG and
 * NPY_LONGLONG alike on Linux). */
int
cu_is_kind(PyArray_Descr *d, TsKind k)
{
    TsKind dk;
    return PyArray_ISNBO(d->byteorder) && ts_kind_from_typenum(d->type_num, &dk) == 0 && dk == k;
}

/* ---- memory overlap ---- */

int
cu_extent(uintptr_t ptr, int nd, const Py_ssize_t *shape, const Py_ssize_t *strides,
          Py_ssize_t itemsize, uintptr_t *lo, uintptr_t *hi)
{
    long long below = 0, above = itemsize, span;
    *lo = *hi = ptr;
    for (int d = 0; d < nd; d++) {
        if (shape[d] == 0) {
            return 1;
        }
        long long *side = strides[d] < 0 ? &below : &above;
        if (__builtin_mul_overflow((long long)shape[d] - 1, (long long)strides[d], &span)
            || __builtin_add_overflow(*side, span, side)) {
            return -1;
        }
    }
    unsigned long long back = 0ULL - (unsigned long long)below; /* below <= 0 */
    uintptr_t end;
    if (back > ptr || __builtin_add_overflow(ptr, (unsigned long long)above, &end)) {
        return -1;
    }
    *lo = ptr - back;
    *hi = end;
    NV_ASSERT(*lo <= ptr && ptr <= *hi); /* a view spans its first item */
    return 0;
}

/* The bytes [lo, hi) the elements of op at ptr span (empty for size 0;
 * all addresses when they do not fit one: they meet every other). */
void
cu_operand_extent(const CuOperand *op, uintptr_t ptr, uintptr_t *lo, uintptr_t *hi)
{
    if (cu_extent(ptr, op->nd, op->shape, op->strides, (Py_ssize_t)PyDataType_ELSIZE(op->dtype), lo,
                  hi)
        < 0) {
        *lo = 0;
        *hi = UINTPTR_MAX;
    }
    NV_ASSERT(*lo <= *hi); /* an empty one is [ptr, ptr) */
}

int
cu_check_foreign(const CuOperand *ops, int n)
{
    for (int k = 0; k < n; k++) {
        uintptr_t lo, hi;
        if (ops[k].what == CU_OP_DEVICE && ops[k].foreign) {
            cu_operand_extent(&ops[k], (uintptr_t)ops[k].ptr, &lo, &hi);
            if (hi > lo && da_check_foreign_memory(lo, hi) < 0) {
                return -1;
            }
        }
    }
    return 0;
}

/* ---- device casts ---- */

int
cu_device_cast(PyObject *src, PyObject *dst, PyObject *stream)
{
    DaInfo si, di;
    if (da_info(src, &si) < 0 || da_info(dst, &di) < 0) {
        return -1;
    }
    PyObject *mod = PyImport_ImportModule("numbavec.cuda");
    PyObject *fn = mod ? PyObject_CallMethod(mod, "_cast_ufunc", "OO", si.dtype, di.dtype) : NULL;
    PyObject *args = fn ? PyTuple_Pack(1, src) : NULL;
    PyObject *kw = args ? Py_BuildValue("{s:O,s:O}", "out", dst, "stream", stream) : NULL;
    PyObject *r = kw ? PyObject_Call(fn, args, kw) : NULL;
    Py_XDECREF(mod);
    Py_XDECREF(fn);
    Py_XDECREF(args);
    Py_XDECREF(kw);
    Py_XDECREF(r);
    return r ? 0 : -1;
}

/* Points op at a device copy (op->dev) of its shape and strides. */
static void
use_copy(CuOperand *op, PyObject *dev)
{
    DaInfo info;
    da_info(dev, &info);
    op->dev = dev;
    op->ptr = info.ptr;
    if (op->nd > 0) {
        memcpy(op->strides, info.strides, sizeof(Py_ssize_t) * (size_t)op->nd);
    }
}

/* A device input of another dtype -> a device copy in the loop's. */
int
cu_cast_input(CuOperand *op, TsKind kind, PyObject *stream)
{
    PyArray_Descr *d = PyArray_DescrFromType(ts_kind_typenum(kind));
    PyObject *tmp = d ? da_empty(d, op->nd, op->shape, stream) : NULL;
    if (tmp == NULL || cu_device_cast(op->obj, tmp, stream) < 0) {
        Py_XDECREF(tmp);
        return -1;
    }
    use_copy(op, tmp);
    return 0;
}

PyObject *
cu_to_device(PyObject *obj, TsKind kind, PyObject *stream)
{
    PyArray_Descr *d = PyArray_DescrFromType(ts_kind_typenum(kind));
    PyObject *h =
        d ? PyArray_FromAny(obj, d, 0, 0, NPY_ARRAY_CARRAY_RO | NPY_ARRAY_FORCECAST, NULL) : NULL;
    if (h == NULL) {
        return NULL;
    }
    Py_ssize_t shape[NPY_MAXDIMS];
    int nd = PyArray_NDIM((PyArrayObject *)h);
    if (nd > 0) { /* NumPy gives a 0-d array NULL dims */
        memcpy(shape, PyArray_DIMS((PyArrayObject *)h), sizeof(Py_ssize_t) * (size_t)nd);
    }
    PyArray_Descr *dd = PyArray_DESCR((PyArrayObject *)h);
    Py_INCREF(dd);
    PyObject *dev = da_empty(dd, nd, shape, stream);
    PyObject *r = dev ? PyObject_CallMethod(dev, "copy_to_device", "OO", h, stream) : NULL;
    Py_DECREF(h);
    if (r == NULL) {
        Py_XDECREF(dev);
        return NULL;
    }
    Py_DECREF(r);
    return dev;
}

/* Host arrays -> device copies of the loop's dtype (not broadcast). */
int
cu_upload(CuOperand *op, TsKind kind, PyObject *stream)
{
    PyObject *dev = cu_to_device(op->obj, kind, stream);
    if (dev == NULL) {
        return -1;
    }
    use_copy(op, dev);
    return 0;
}
