/*
 * cureduce.c - f.reduce on the device for a binary cuda ufunc with an
 * identity or 'reorderable': one block per output element, the reduced
 * axis cut into chunks and reduced in two passes when there are too few
 * outputs to fill the device (the kernel: kernels.c, build_reduce).
 */
#include "targets/cuda/ufunc/ufunc.h"

#include <string.h>

/* One launch of the reduce entry (see kernels.c). */
typedef struct RedPass {
    Py_ssize_t m, kchunk, ktotal, nchunks, rstride;
    int ndim;
    Py_ssize_t shape[NPY_MAXDIMS], strides[NPY_MAXDIMS]; /* innermost first */
    int grid, block;
} RedPass;

typedef struct RedPlan {
    int npasses;
    RedPass pass[2];
} RedPlan;

/*
 * Reducing axis `axis` of (nd, shape, strides): one block per output
 * element; when there are too few outputs to fill the device, the axis is
 * cut into chunks of at least 4 blocks' worth, reduced into a scratch array
 * of m*nchunks partials, which a second pass reduces.
 */
static void
reduce_plan(int nd, const Py_ssize_t *shape, const Py_ssize_t *strides, int axis,
            Py_ssize_t itemsize, int sms, int block, RedPlan *rp)
{
    RedPass *p = &rp->pass[0];
    memset(rp, 0, sizeof(*rp));
    p->ktotal = shape[axis];
    p->rstride = strides[axis];
    p->m = 1;
    for (int d = nd - 1; d >= 0; d--) {
        if (d != axis) {
            p->shape[p->ndim] = shape[d];
            p->strides[p->ndim++] = strides[d];
            p->m *= shape[d];
        }
    }
    p->block = block;
    Py_ssize_t want = (Py_ssize_t)sms * 4, nchunks = 1;
    if (p->m < want && p->ktotal > (Py_ssize_t)block * 8) {
        nchunks = (want + p->m - 1) / p->m;
        Py_ssize_t most = (p->ktotal + (Py_ssize_t)block * 4 - 1) / ((Py_ssize_t)block * 4);
        nchunks = nchunks < most ? nchunks : most;
    }
    p->nchunks = nchunks > 1 ? nchunks : 1;
    p->kchunk = (p->ktotal + p->nchunks - 1) / p->nchunks;
    Py_ssize_t total = p->m * p->nchunks, cap = (Py_ssize_t)CU_GRID_PER_SM * sms;
    p->grid = (int)(total < 1 ? 1 : total < cap ? total : cap);
    rp->npasses = 1;
    if (p->nchunks > 1) {
        RedPass *q = &rp->pass[1];
        q->m = p->m;
        q->ktotal = q->kchunk = p->nchunks;
        q->nchunks = 1;
        q->rstride = itemsize;
        q->ndim = 1;
        q->shape[0] = p->m;
        q->strides[0] = itemsize * p->nchunks;
        q->block = block;
        q->grid = (int)(p->m < cap ? p->m : cap);
        rp->npasses = 2;
    }
}

static PyObject *
red_pass_dict(const RedPass *p)
{
    return Py_BuildValue("{s:n,s:n,s:n,s:n,s:n,s:i,s:i}", "m", p->m, "kchunk", p->kchunk, "ktotal",
                         p->ktotal, "nchunks", p->nchunks, "rstride", p->rstride, "grid", p->grid,
                         "block", p->block);
}

static int
red_launch(CuLoop *l, const RedPass *p, CUdeviceptr in, CUdeviceptr out, Py_ssize_t itemsize,
           CUstream s)
{
    void *ptrs[7 + 2 * PTX_REDUCE_DIMS];
    long long w[5 + 2 * PTX_REDUCE_DIMS];
    CUdeviceptr pin = in, pout = out;
    int np = 0;
    ptrs[np++] = &pin;
    ptrs[np++] = &pout;
    w[0] = p->m;
    w[1] = p->kchunk;
    w[2] = p->ktotal;
    w[3] = p->nchunks;
    w[4] = p->rstride;
    for (int d = 0; d < PTX_REDUCE_DIMS; d++) {
        w[5 + d] = d < p->ndim ? p->shape[d] : 1;
        w[5 + PTX_REDUCE_DIMS + d] = d < p->ndim ? p->strides[d] : 0;
    }
    for (int j = 0; j < 5 + 2 * PTX_REDUCE_DIMS; j++) {
        ptrs[np++] = &w[j];
    }
    (void)itemsize;
    return cuda_check(cuda_drv->LaunchKernel(l->red, (unsigned)p->grid, 1, 1, (unsigned)p->block, 1,
                                             1, (unsigned)cu_reduce_smem(p->block), s, ptrs, NULL),
                      "cuLaunchKernel (cuda ufunc reduce)");
}

typedef struct RedCall {
    CuOperand op;
    Py_ssize_t loop;
    int axis; /* -1: all (the array is flattened) */
    PyObject *stream;
    CUstream s;
} RedCall;

/* The array to reduce in the loop type on the device: a host array's
 * contiguous copy, a device array of another dtype cast. */
static int
reduce_operand(RedCall *rc, TsKind kind)
{
    if (rc->op.what == CU_OP_HOST) {
        return cu_upload(&rc->op, kind, rc->stream);
    }
    return rc->op.what == CU_OP_DEVICE && !cu_is_kind(rc->op.dtype, kind)
               ? cu_cast_input(&rc->op, kind, rc->stream)
               : 0;
}

/* Parses reduce's arguments and checks them: nothing touches the device. */
static int
red_prepare(CuFunc *f, PyObject *args, PyObject *kwargs, RedCall *rc)
{
    static char *kwlist[] = {"array", "axis", "stream", NULL};
    PyObject *array, *axis_o = NULL;
    memset(rc, 0, sizeof(*rc));
    rc->stream = Py_None;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "O|OO", kwlist, &array, &axis_o, &rc->stream)) {
        return -1;
    }
    if (f->nin != 2) {
        PyErr_SetString(PyExc_ValueError, "reduce only supported for binary functions");
        return -1;
    }
    if (!cu_can_reduce(f)) {
        PyErr_Format(PyExc_ValueError,
                     "reduce of '%U' on the GPU needs identity= (a value or "
                     "'reorderable'): the tree reduction reorders operands",
                     f->name);
        return -1;
    }
    if (cuda_stream_arg(rc->stream, &rc->s) < 0 || cu_classify(array, &rc->op) < 0) {
        return -1;
    }
    if (rc->op.what == CU_OP_PYSCALAR || rc->op.nd == 0) {
        PyErr_SetString(PyExc_ValueError, "reduce: cannot reduce a 0-d array or a scalar");
        return -1;
    }
    int nd = rc->op.nd;
    if (axis_o == Py_None) {
        rc->axis = -1;
    } else {
        long ax = axis_o ? PyLong_AsLong(axis_o) : 0;
        if (ax == -1 && PyErr_Occurred()) {
            return -1;
        }
        if (ax < -nd || ax >= nd) {
            PyErr_Format(PyExc_IndexError, "axis %ld is out of bounds for array of dimension %d",
                         ax, nd);
            return -1;
        }
        rc->axis = (int)(ax < 0 ? ax + nd : ax);
    }
    CuOperand pair[2] = {rc->op, rc->op};
    if ((rc->loop = cu_resolve(f, pair, 0)) < 0) {
        return -1;
    }
    if (f->loops[rc->loop]->code.reduce_ptx == NULL) {
        PyErr_Format(PyExc_TypeError, "reduce: loop %zd of '%U' is not (T, T) -> T", rc->loop,
                     f->name);
        return -1;
    }
    TsKind kind;
    if (rc->op.what == CU_OP_DEVICE && !cu_is_kind(rc->op.dtype, f->loops[rc->loop]->sig.ret.kind)
        && (ts_kind_from_typenum(rc->op.dtype->type_num, &kind) < 0
            || !PyArray_ISNBO(rc->op.dtype->byteorder))) {
        PyErr_Format(PyExc_TypeError, "reduce: a device array of dtype %R has no cast to %s",
                     rc->op.dtype, ts_kind_name(f->loops[rc->loop]->sig.ret.kind));
        return -1;
    }
    return 0;
}

/* The (nd, shape, strides, axis) the kernel sees: axis=None flattens. */
static int
red_geometry(RedCall *rc, Py_ssize_t itemsize, int *nd, Py_ssize_t *shape, Py_ssize_t *strides,
             int *axis)
{
    CuOperand *op = &rc->op;
    if (rc->axis >= 0) {
        *nd = op->nd;
        memcpy(shape, op->shape, sizeof(Py_ssize_t) * (size_t)op->nd);
        memcpy(strides, op->strides, sizeof(Py_ssize_t) * (size_t)op->nd);
        *axis = rc->axis;
        return 0;
    }
    Py_ssize_t n = 1, expect = itemsize;
    for (int d = op->nd - 1; d >= 0; d--) {
        if (op->shape[d] != 1 && op->strides[d] != expect) {
            PyErr_SetString(PyExc_NotImplementedError, "reduce(axis=None) of a non-contiguous "
                                                       "device array: copy it first");
            return -1;
        }
        expect *= op->shape[d];
        n *= op->shape[d];
    }
    *nd = 1;
    shape[0] = n;
    strides[0] = itemsize;
    *axis = 0;
    return 0;
}

static PyObject *
red_shape(RedCall *rc)
{
    if (rc->axis < 0) {
        return PyTuple_New(0);
    }
    PyObject *t = PyTuple_New(rc->op.nd - 1);
    for (int d = 0, j = 0; t && d < rc->op.nd; d++) {
        if (d != rc->axis) {
            PyTuple_SetItem(t, j++, PyLong_FromSsize_t(rc->op.shape[d]));
        }
    }
    return t;
}

PyObject *
cu_reduce_plan(PyObject *self, PyObject *args, PyObject *kwargs)
{
    CuFunc *f = (CuFunc *)self;
    int sms, block;
    PyObject *kw = cu_hook_kwargs(kwargs, &sms, &block), *r = NULL;
    if (kw == NULL) {
        return NULL;
    }
    RedCall rc;
    if (red_prepare(f, args, kw, &rc) == 0) {
        Py_ssize_t item = ts_itemsize(f->loops[rc.loop]->sig.ret.kind);
        if (rc.op.what == CU_OP_HOST) {
            Py_ssize_t s = item;
            for (int d = rc.op.nd - 1; d >= 0; d--) {
                rc.op.strides[d] = s;
                s *= rc.op.shape[d];
            }
        }
        int nd, axis;
        Py_ssize_t shape[NPY_MAXDIMS], strides[NPY_MAXDIMS];
        RedPlan rp;
        if (red_geometry(&rc, item, &nd, shape, strides, &axis) == 0) {
            reduce_plan(nd, shape, strides, axis, item, sms, block, &rp);
            r = PyList_New(rp.npasses);
            for (int i = 0; r && i < rp.npasses; i++) {
                PyList_SetItem(r, i, red_pass_dict(&rp.pass[i]));
            }
        }
    }
    cu_operands_clear(&rc.op, 1);
    Py_DECREF(kw);
    return r;
}

/* An empty reduction: the identity everywhere (NumPy's ValueError without one). */
static PyObject *
red_identity(CuFunc *f, RedCall *rc, TsKind kind)
{
    PyObject *identity =
        f->resolver ? PyObject_GetAttrString(f->resolver, "identity") : Py_NewRef(Py_None);
    PyObject *np = NULL, *r = NULL;
    PyObject *shape = red_shape(rc);
    if (identity == NULL || shape == NULL) {
        goto done;
    }
    if (identity == Py_None) {
        PyErr_Format(PyExc_ValueError,
                     "zero-size array to reduction operation %U which has "
                     "no identity",
                     f->name);
        goto done;
    }
    PyArray_Descr *d = PyArray_DescrFromType(ts_kind_typenum(kind));
    np = PyImport_ImportModule("numpy");
    r = np ? PyObject_CallMethod(np, "full", "OOO", shape, identity, (PyObject *)d) : NULL;
    Py_XDECREF(d);
    if (r != NULL && rc->op.what == CU_OP_DEVICE) {
        Py_INCREF(PyArray_DESCR((PyArrayObject *)r));
        PyObject *dev =
            da_empty(PyArray_DESCR((PyArrayObject *)r), PyArray_NDIM((PyArrayObject *)r),
                     PyArray_DIMS((PyArrayObject *)r), rc->stream);
        PyObject *ok = dev ? PyObject_CallMethod(dev, "copy_to_device", "OO", r, rc->stream) : NULL;
        Py_XDECREF(ok);
        Py_DECREF(r);
        r = ok ? dev : NULL;
        if (ok == NULL) {
            Py_XDECREF(dev);
        }
    } else if (r != NULL && PyArray_NDIM((PyArrayObject *)r) == 0) {
        r = PyArray_Return((PyArrayObject *)r);
    }
done:
    Py_XDECREF(identity);
    Py_XDECREF(shape);
    Py_XDECREF(np);
    return r;
}

PyObject *
cu_reduce(PyObject *self, PyObject *args, PyObject *kwargs)
{
    CuFunc *f = (CuFunc *)self;
    RedCall rc;
    PyObject *result = NULL, *res = NULL, *scratch = NULL, *shape = NULL;
    if (red_prepare(f, args, kwargs, &rc) < 0) {
        cu_operands_clear(&rc.op, 1);
        return NULL;
    }
    CuLoop *l = f->loops[rc.loop];
    TsKind kind = l->sig.ret.kind;
    Py_ssize_t item = ts_itemsize(kind);
    int nd, axis, sms;
    Py_ssize_t gshape[NPY_MAXDIMS], gstrides[NPY_MAXDIMS], oshape[NPY_MAXDIMS];
    int ond = 0;
    if (cu_ensure_loaded(f, l, 1) < 0 || cu_check_foreign(&rc.op, 1) < 0
        || (sms = cu_sm_count()) < 0 || reduce_operand(&rc, kind) < 0
        || red_geometry(&rc, item, &nd, gshape, gstrides, &axis) < 0) {
        goto error;
    }
    if (gshape[axis] == 0) {
        result = red_identity(f, &rc, kind);
        goto error;
    }
    for (int d = 0; d < rc.op.nd && rc.axis >= 0; d++) {
        if (d != rc.axis) {
            oshape[ond++] = rc.op.shape[d];
        }
    }
    RedPlan rp;
    reduce_plan(nd, gshape, gstrides, axis, item, sms, l->red_block, &rp);
    PyArray_Descr *d = PyArray_DescrFromType(ts_kind_typenum(kind));
    if (d == NULL || (res = da_empty(d, ond, oshape, rc.stream)) == NULL) {
        goto error;
    }
    DaInfo ri;
    da_info(res, &ri);
    if (rp.pass[0].m > 0) {
        if (rp.npasses == 2) {
            Py_ssize_t n = rp.pass[0].m * rp.pass[0].nchunks;
            PyArray_Descr *sd = PyArray_DescrFromType(ts_kind_typenum(kind));
            DaInfo si;
            if (sd == NULL || (scratch = da_empty(sd, 1, &n, rc.stream)) == NULL) {
                goto error;
            }
            da_info(scratch, &si);
            if (red_launch(l, &rp.pass[0], rc.op.ptr, si.ptr, item, rc.s) < 0
                || red_launch(l, &rp.pass[1], si.ptr, ri.ptr, item, rc.s) < 0) {
                goto error;
            }
        } else if (red_launch(l, &rp.pass[0], rc.op.ptr, ri.ptr, item, rc.s) < 0) {
            goto error;
        }
    }
    if (rc.op.dev == NULL) { /* device in, device out: asynchronous */
        result = res;
        res = NULL;
        goto error;
    }
    PyObject *host = PyObject_CallMethod(res, "copy_to_host", "OO", Py_None, rc.stream);
    if (host != NULL && cuda_stream_wait(rc.s) < 0) {
        Py_CLEAR(host);
    }
    result = host && PyArray_NDIM((PyArrayObject *)host) == 0
                 ? PyArray_Return((PyArrayObject *)host)
                 : host;
error:
    if (result != NULL && cu_check_raised(l, 1) < 0) {
        Py_CLEAR(result); /* the kernel raised: its exception */
    }
    Py_XDECREF(shape);
    Py_XDECREF(scratch);
    Py_XDECREF(res);
    cu_operands_clear(&rc.op, 1);
    return result;
}
