/*
 * cucall.c - a cuda ufunc's call: f(*inputs, out=None, stream=None), the
 * ufunc's kind (ufunc_kind) of the call skeleton in call.c.
 *
 * It sits between the object (cufunc.c: the loops, compiled, loaded and
 * chosen) and the device (launch through the driver table, staging.c for
 * large host calls).  Per call (all C): classify the operands (Python
 * scalar, NumPy scalar or 0-d, host ndarray, device array through
 * as_cuda_array), let cufunc.c pick the loop, broadcast through zero
 * strides, check out=, then plan: coalesce the dimensions, choose the
 * contiguous or strided entry and 32- or 64-bit index arithmetic, block
 * size from the occupancy API, grid capped at CU_GRID_PER_SM blocks per
 * SM.  Host operands are copied in and the result copied back (synchronous;
 * large unbroadcast calls in chunks through staging.c); with any device
 * operand the result is a device array and the call is asynchronous on
 * `stream`.  Device operands of another dtype are converted by cast
 * kernels; an out= that overlaps an input is written through a temporary.
 * The operands themselves (what an argument is, its extent, its device
 * copies) are operand.c's; the test hooks _plan and _resolve take the same
 * path as far as it goes without a GPU.
 */
#include "targets/cuda/ufunc/ufunc.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* ---- broadcasting and the launch plan ---- */

typedef struct Plan {
    int variant, ndim, nops;
    Py_ssize_t n;
    Py_ssize_t shape[NPY_MAXDIMS];                   /* innermost first */
    Py_ssize_t strides[TS_MAXARGS + 1][NPY_MAXDIMS]; /* innermost first */
    int block, grid;
} Plan;

/* NumPy's broadcast of all array operands (and out) into shape; ValueError. */
static int
broadcast_shape(const CuOperand *ops, int nops, int *nd, Py_ssize_t *shape)
{
    *nd = 0;
    for (int k = 0; k < nops; k++) {
        if (ops[k].nd > *nd) {
            *nd = ops[k].nd;
        }
    }
    for (int d = 0; d < *nd; d++) {
        shape[d] = 1;
    }
    for (int k = 0; k < nops; k++) {
        const CuOperand *o = &ops[k];
        for (int d = 0; d < o->nd; d++) {
            Py_ssize_t *s = &shape[*nd - o->nd + d], v = o->shape[d];
            if (v == *s || v == 1) {
                continue;
            }
            if (*s != 1) {
                PyErr_Format(PyExc_ValueError,
                             "operands could not be broadcast together "
                             "(dimension %d: %zd vs %zd)",
                             d, v, *s);
                return -1;
            }
            *s = v;
        }
    }
    return 0;
}

/* Strides of o over (nd, shape), zero where broadcast, innermost first. */
static void
broadcast_strides(const CuOperand *o, int nd, const Py_ssize_t *shape, Py_ssize_t *out)
{
    for (int d = 0; d < nd; d++) {
        int od = d - (nd - o->nd);
        Py_ssize_t s = 0;
        if (o->what == CU_OP_HOST || o->what == CU_OP_DEVICE) {
            s = od >= 0 && o->shape[od] != 1 ? o->strides[od] : 0;
        }
        out[nd - 1 - d] = shape[d] == 1 ? 0 : s;
    }
}

/* Blocks for n elements: enough for one element each, at most
 * CU_GRID_PER_SM per SM (the grid-stride loop does the rest). */
static Py_ssize_t
grid_for(Py_ssize_t n, int block, int sms)
{
    Py_ssize_t blocks = (n + block - 1) / block;
    Py_ssize_t cap = (Py_ssize_t)CU_GRID_PER_SM * (sms > 0 ? sms : 1);
    return blocks < 1 ? 1 : blocks > cap ? cap : blocks;
}

/*
 * The plan for ops over (nd, shape): drop size-1 dimensions, merge a
 * dimension into the next outer one where every operand allows, then the
 * contiguous entry when one dimension is left and every array operand
 * steps by its item size.  32-bit arithmetic when n plus one grid's worth
 * and every byte extent stay below 2^31.
 */
static int
make_plan(const CuOperand *ops, const int *itemsize, int nops, int nd, const Py_ssize_t *shape,
          int sms, int block, int kdims32, int kdims64, Plan *p)
{
    Py_ssize_t st[TS_MAXARGS + 1][NPY_MAXDIMS], sh[NPY_MAXDIMS];
    p->variant = PTX_C32;
    p->ndim = 0;
    p->nops = nops;
    p->n = 1;
    for (int k = 0; k < nops; k++) {
        broadcast_strides(&ops[k], nd, shape, st[k]);
    }
    for (int d = 0; d < nd; d++) {
        sh[d] = shape[nd - 1 - d];
        p->n *= sh[d];
    }
    int m = 0;
    for (int d = 0; d < nd; d++) {
        if (sh[d] == 1) {
            continue;
        }
        int merge = m > 0;
        for (int k = 0; merge && k < nops; k++) {
            merge = st[k][d] == p->strides[k][m - 1] * p->shape[m - 1];
        }
        if (merge) {
            p->shape[m - 1] *= sh[d];
            continue;
        }
        p->shape[m] = sh[d];
        for (int k = 0; k < nops; k++) {
            p->strides[k][m] = st[k][d];
        }
        m++;
    }
    p->ndim = m;
    int contiguous = m <= 1;
    for (int k = 0; contiguous && k < nops; k++) {
        int array = ops[k].what == CU_OP_HOST || ops[k].what == CU_OP_DEVICE;
        contiguous = !array || m == 0 || p->strides[k][0] == itemsize[k];
    }
    p->block = block > 0 ? block : 1;
    if (p->n < p->block) { /* a small call: whole warps for its elements, no idle ones */
        Py_ssize_t warps = (p->n + 31) / 32 * 32;
        p->block = warps < 32 ? 32 : (int)warps < p->block ? (int)warps : p->block;
    }
    p->grid = (int)grid_for(p->n, p->block, sms);
    int narrow = p->n + (Py_ssize_t)p->grid * p->block < ((Py_ssize_t)1 << 31);
    for (int k = 0; narrow && k < nops; k++) {
        Py_ssize_t ext = 0;
        for (int d = 0; d < m; d++) {
            Py_ssize_t s = p->strides[k][d] < 0 ? -p->strides[k][d] : p->strides[k][d];
            ext += s * (p->shape[d] - 1);
        }
        narrow =
            ext < ((Py_ssize_t)1 << 31) && (Py_ssize_t)itemsize[k] * p->n < ((Py_ssize_t)1 << 31);
    }
    if (contiguous) {
        p->variant = narrow ? PTX_C32 : PTX_C64;
        return 0;
    }
    p->variant = narrow ? PTX_S32 : PTX_S64;
    if (m > (narrow ? kdims32 : kdims64)) {
        PyErr_Format(PyExc_NotImplementedError,
                     "cuda ufunc: %d dimensions that cannot be "
                     "merged; the strided kernel takes %d",
                     m, narrow ? kdims32 : kdims64);
        return -1;
    }
    return 0;
}

static PyObject *
plan_dict(const Plan *p, CuFunc *f, Py_ssize_t loop)
{
    static const char *const names[] = {"c32", "c64", "s32", "s64"};
    PyObject *shape = PyTuple_New(p->ndim), *strides = PyTuple_New(p->nops);
    if (shape == NULL || strides == NULL) {
        Py_XDECREF(shape);
        Py_XDECREF(strides);
        return NULL;
    }
    for (int d = 0; d < p->ndim; d++) {
        PyTuple_SetItem(shape, d, PyLong_FromSsize_t(p->shape[p->ndim - 1 - d]));
    }
    for (int k = 0; k < p->nops; k++) {
        PyObject *t = PyTuple_New(p->ndim);
        for (int d = 0; t && d < p->ndim; d++) {
            PyTuple_SetItem(t, d, PyLong_FromSsize_t(p->strides[k][p->ndim - 1 - d]));
        }
        PyTuple_SetItem(strides, k, t ? t : Py_NewRef(Py_None));
    }
    char sig[TS_STRSIZE];
    ts_signature_str(&f->loops[loop]->sig, sig, sizeof(sig));
    return Py_BuildValue("{s:s,s:n,s:N,s:N,s:i,s:i,s:s}", "kernel", names[p->variant], "n", p->n,
                         "shape", shape, "strides", strides, "block", p->block, "grid", p->grid,
                         "signature", sig);
}

/* ---- the call: the ufunc's kind of call.c's skeleton ---- */

/* A cuda ufunc's call: call.c's part (ops[nin] is out=, when given), then
 * what only a ufunc's call has. */
typedef struct CuUfCall {
    CuCall call;
    CuFunc *f;
    int lazy; /* a signature-less ufunc may compile a loop (a call, not a test hook) */
    int have_out;
    PyObject *out_arg; /* borrowed */
    int nd;            /* the broadcast shape */
    Py_ssize_t shape[NPY_MAXDIMS];
    int sms;           /* the device's SMs (launch_params) */
    int writes_out;    /* the kernel writes into out= itself (place) */
    PyObject *res_dev; /* owned: else the new device array it writes (place) */
    PyObject *value;   /* owned: a staged call's value */
} CuUfCall;

static CuUfCall *
uf(CuCall *call)
{
    return (CuUfCall *)call; /* the first member */
}

/* A host operand (array, scalar, Python number) as a C-contiguous array of
 * kind, converted by NumPy (op->obj itself when it is one already). */
static PyObject *
host_as(const CuOperand *op, TsKind kind)
{
    PyArray_Descr *d = PyArray_DescrFromType(ts_kind_typenum(kind));
    return d ? PyArray_FromAny(op->obj, d, 0, 0, NPY_ARRAY_CARRAY_RO | NPY_ARRAY_FORCECAST, NULL)
             : NULL;
}

/* Python and NumPy scalars, 0-d arrays: the loop type's bytes. */
static int
scalar_words(CuOperand *op, TsKind kind)
{
    PyObject *a = host_as(op, kind);
    if (a == NULL) {
        return -1;
    }
    memset(op->words, 0, sizeof(op->words));
    memcpy(op->words, PyArray_DATA((PyArrayObject *)a), (size_t)ts_itemsize(kind));
    Py_DECREF(a);
    return 0;
}

/* f(*inputs[, out], out=None, stream=None): the operands, out= and stream=. */
static int
ufunc_parse(CuCall *call, PyObject *args, PyObject *kwargs)
{
    CuUfCall *c = uf(call);
    CuFunc *f = c->f;
    Py_ssize_t nargs = PyTuple_Size(args);
    if (nargs != f->nin && nargs != f->nin + 1) {
        PyErr_Format(PyExc_TypeError,
                     "%U() takes from %d to %d positional arguments but %zd "
                     "were given",
                     f->name, f->nin, f->nin + 1, nargs);
        return -1;
    }
    if (nargs == f->nin + 1) {
        c->out_arg = PyTuple_GetItem(args, f->nin);
    }
    if (kwargs != NULL) {
        PyObject *key, *value;
        Py_ssize_t pos = 0;
        while (PyDict_Next(kwargs, &pos, &key, &value)) {
            if (PyUnicode_CompareWithASCIIString(key, "out") == 0) {
                c->out_arg = value;
                if (PyTuple_Check(value)) {
                    if (PyTuple_Size(value) != 1) {
                        PyErr_SetString(PyExc_ValueError, "The 'out' tuple must have exactly "
                                                          "one entry per ufunc output");
                        return -1;
                    }
                    c->out_arg = PyTuple_GetItem(value, 0);
                }
            } else if (PyUnicode_CompareWithASCIIString(key, "stream") == 0) {
                c->call.stream = value;
            } else {
                PyErr_Format(PyExc_TypeError, "%U() got an unexpected keyword argument %R", f->name,
                             key);
                return -1;
            }
        }
    }
    for (int k = 0; k < f->nin; k++) {
        if (cu_classify(PyTuple_GetItem(args, k), &c->call.ops[k]) < 0) {
            return -1;
        }
    }
    if (c->out_arg != Py_None) {
        CuOperand *o = &c->call.ops[f->nin];
        if (cu_classify(c->out_arg, o) < 0) {
            return -1;
        }
        if (o->what == CU_OP_PYSCALAR || (o->what == CU_OP_SCALAR && !PyArray_Check(c->out_arg))) {
            PyErr_SetString(PyExc_TypeError, "return arrays must be of ArrayType");
            return -1;
        }
        if (o->what == CU_OP_SCALAR) {
            o->what = CU_OP_HOST; /* a 0-d out array */
        }
        c->have_out = 1;
    }
    return cuda_stream_arg(c->call.stream, &c->call.s) < 0 ? -1 : 0;
}

/* Device operands of a dtype other than the loop's are cast on the device,
 * by the identity cuda ufunc of that pair: its dtype must be one of ours. */
static int
check_casts(CuUfCall *c)
{
    const TsSignature *sig = &c->f->loops[c->call.loop]->sig;
    for (int k = 0; k < c->call.nin + c->have_out; k++) {
        const CuOperand *op = &c->call.ops[k];
        TsKind want = k < c->call.nin ? sig->args[k].kind : sig->ret.kind, kind;
        if (op->what == CU_OP_DEVICE && !cu_is_kind(op->dtype, want)
            && (ts_kind_from_typenum(op->dtype->type_num, &kind) < 0
                || !PyArray_ISNBO(op->dtype->byteorder))) {
            PyErr_Format(PyExc_TypeError,
                         "cuda ufunc '%U': %s %d has dtype %R, which has no cast to %s on the "
                         "device",
                         c->f->name, k < c->call.nin ? "input" : "output", k, op->dtype,
                         ts_kind_name(want));
            return -1;
        }
    }
    return 0;
}

/* Loop, broadcast shape and out= checks; nothing touches the device. */
static int
prepare(CuUfCall *c, int lazy)
{
    CuFunc *f = c->f;
    if ((c->call.loop = cu_resolve(f, c->call.ops, lazy)) < 0) {
        return -1;
    }
    const TsSignature *sig = &f->loops[c->call.loop]->sig;
    if (broadcast_shape(c->call.ops, c->call.nin + c->have_out, &c->nd, c->shape) < 0) {
        return -1;
    }
    for (int k = 0; k <= c->call.nin; k++) {
        c->call.device |= c->call.ops[k].what == CU_OP_DEVICE;
    }
    if (!c->have_out) {
        return check_casts(c);
    }
    CuOperand *o = &c->call.ops[c->call.nin];
    int same = o->nd == c->nd;
    for (int d = 0; same && d < c->nd; d++) {
        same = o->shape[d] == c->shape[d];
    }
    if (!same) {
        PyErr_SetString(PyExc_ValueError, "non-broadcastable output operand: its shape does "
                                          "not match the broadcast shape of the inputs");
        return -1;
    }
    PyArray_Descr *ret = PyArray_DescrFromType(ts_kind_typenum(sig->ret.kind));
    int castable = ret && PyArray_CanCastTypeTo(ret, o->dtype, NPY_SAME_KIND_CASTING);
    Py_XDECREF(ret);
    if (!castable) {
        PyErr_Format(PyExc_TypeError,
                     "Cannot cast ufunc '%U' output from %s to %R with "
                     "casting rule 'same_kind'",
                     f->name, ts_kind_name(sig->ret.kind), o->dtype);
        return -1;
    }
    if (o->what == CU_OP_DEVICE) {
        DaInfo info;
        if (da_info(o->obj, &info) < 0) {
            return -1;
        }
        if (info.readonly) {
            PyErr_SetString(PyExc_ValueError, "output array is read-only");
            return -1;
        }
    } else if (PyArray_FailUnlessWriteable((PyArrayObject *)o->obj, "output array") < 0) {
        return -1;
    }
    return check_casts(c);
}

/* ---- memory overlap ---- */

/*
 * 1 when writing the output `out` (at pout) may change an element of input
 * `in` (at pin) before another element reads it: their bytes intersect and
 * they are not the same elements in the same order (out= an input exactly
 * is safe: each element is read, then written, by one thread).
 */
static int
overlaps(const CuUfCall *c, const CuOperand *in, uintptr_t pin, const CuOperand *out,
         uintptr_t pout)
{
    uintptr_t ilo, ihi, olo, ohi;
    cu_operand_extent(in, pin, &ilo, &ihi);
    cu_operand_extent(out, pout, &olo, &ohi);
    if (ilo >= ohi || olo >= ihi) {
        return 0;
    }
    if (pin != pout || PyDataType_ELSIZE(in->dtype) != PyDataType_ELSIZE(out->dtype)) {
        return 1;
    }
    Py_ssize_t si[NPY_MAXDIMS], so[NPY_MAXDIMS];
    broadcast_strides(in, c->nd, c->shape, si);
    broadcast_strides(out, c->nd, c->shape, so);
    for (int d = 0; d < c->nd; d++) {
        if (si[d] != so[d]) {
            return 1;
        }
    }
    return 0;
}

/*
 * 1 when the kernel writes into out= itself: a device array of the loop's
 * dtype that no input read in place (a device input of the loop's dtype)
 * overlaps other than element for element.  Else it writes a temporary,
 * converted or copied into out= after the kernel.
 */
static int
writes_out(const CuUfCall *c)
{
    const TsSignature *sig = &c->f->loops[c->call.loop]->sig;
    const CuOperand *o = &c->call.ops[c->call.nin];
    if (!c->have_out || o->what != CU_OP_DEVICE || !cu_is_kind(o->dtype, sig->ret.kind)) {
        return 0;
    }
    for (int k = 0; k < c->call.nin; k++) {
        const CuOperand *op = &c->call.ops[k];
        if (op->what == CU_OP_DEVICE && cu_is_kind(op->dtype, sig->args[k].kind)
            && overlaps(c, op, op->ptr, o, o->ptr)) {
            return 0;
        }
    }
    return 1;
}

/* ---- launching ---- */

/* Parameter storage for one launch. */
typedef struct Params {
    void *ptrs[3 * TS_MAXARGS + 2 + NPY_MAXDIMS * (TS_MAXARGS + 2)];
    CUdeviceptr dptr[TS_MAXARGS + 1];
    long long w64[NPY_MAXDIMS * (TS_MAXARGS + 2) + 1];
    int w32[NPY_MAXDIMS * (TS_MAXARGS + 2) + 1];
} Params;

/* Launches plan p of loop l: input k at din[k] (0: ops[k]'s scalar words).
 * No Python calls (the staged pipeline runs it without the GIL). */
static CUresult
launch_raw(CuLoop *l, const Plan *p, const CUdeviceptr *din, const CuOperand *ops, int nin,
           CUdeviceptr out, CUstream s, Params *pm)
{
    int np = 0, wide = p->variant == PTX_C64 || p->variant == PTX_S64;
    for (int k = 0; k < nin; k++) {
        pm->dptr[k] = din[k];
        pm->ptrs[np++] = &pm->dptr[k];
        pm->ptrs[np++] = (void *)&ops[k].words[0];
        pm->ptrs[np++] = (void *)&ops[k].words[1];
    }
    pm->dptr[nin] = out;
    pm->ptrs[np++] = &pm->dptr[nin];
    int nw = 0;
#define PUSH(v)                                                                                    \
    do {                                                                                           \
        if (wide) {                                                                                \
            pm->w64[nw] = (long long)(v);                                                          \
            pm->ptrs[np++] = &pm->w64[nw++];                                                       \
        } else {                                                                                   \
            pm->w32[nw] = (int)(v);                                                                \
            pm->ptrs[np++] = &pm->w32[nw++];                                                       \
        }                                                                                          \
    } while (0)
    PUSH(p->n);
    if (p->variant >= PTX_S32) {
        int dims = ptx_kernel_dims(nin, wide);
        for (int d = 0; d < dims; d++) {
            PUSH(d < p->ndim ? p->shape[d] : 1);
        }
        for (int k = 0; k <= nin; k++) {
            for (int d = 0; d < dims; d++) {
                PUSH(d < p->ndim ? p->strides[k][d] : 0);
            }
        }
    }
#undef PUSH
    return cuda_drv->LaunchKernel(l->fn[p->variant], (unsigned)p->grid, 1, 1, (unsigned)p->block, 1,
                                  1, 0, s, pm->ptrs, NULL);
}

static int
launch(CuLoop *l, const Plan *p, CuOperand *ops, int nin, CUdeviceptr out, CUstream s)
{
    Params *pm = PyMem_Malloc(sizeof(Params)); /* 44 KB: launch_raw sets what it uses */
    if (pm == NULL) {
        PyErr_NoMemory();
        return -1;
    }
    CUdeviceptr din[TS_MAXARGS];
    for (int k = 0; k < nin; k++) {
        din[k] = ops[k].what == CU_OP_HOST || ops[k].what == CU_OP_DEVICE ? ops[k].ptr : 0;
    }
    CUresult rc = launch_raw(l, p, din, ops, nin, out, s, pm);
    PyMem_Free(pm);
    return cuda_check(rc, "cuLaunchKernel (cuda ufunc)");
}

static int
plan_call(CuUfCall *c, int sms, int block, Plan *p)
{
    const TsSignature *sig = &c->f->loops[c->call.loop]->sig;
    int itemsize[TS_MAXARGS + 1];
    for (int k = 0; k < c->call.nin; k++) {
        itemsize[k] = ts_itemsize(sig->args[k].kind);
    }
    itemsize[c->call.nin] = ts_itemsize(sig->ret.kind);
    return make_plan(c->call.ops, itemsize, c->call.nin + 1, c->nd, c->shape, sms, block,
                     ptx_kernel_dims(c->call.nin, 0), ptx_kernel_dims(c->call.nin, 1), p);
}

/* Plans with the occupancy block of the chosen entry and launches into the
 * device memory of `out` (an operand whose ptr and strides are device's). */
static int
plan_and_launch(CuUfCall *c, CuLoop *l, int sms, const CuOperand *out)
{
    CuOperand *o = &c->call.ops[c->call.nin], keep = *o;
    *o = *out;
    Plan p;
    int rc = plan_call(c, sms, 0, &p);
    if (rc == 0) {
        rc = plan_call(c, sms, l->block[p.variant], &p);
    }
    if (rc == 0) {
        rc = launch(l, &p, c->call.ops, c->call.nin, out->ptr, c->call.s);
    }
    *o = keep;
    return rc;
}

/* ---- host calls in chunks (staging.c) ---- */

/*
 * The staging job of a host call whose array operands all have the call's
 * shape (no broadcasting: a chunk of the output is a chunk of each input),
 * with the host data as it is now; 0 when the call is not of that kind.
 */
static int
stage_job(CuUfCall *c, CudaStaged *job)
{
    const TsSignature *sig = &c->f->loops[c->call.loop]->sig;
    if (c->call.device || c->nd == 0) {
        return 0;
    }
    memset(job, 0, sizeof(*job));
    job->nin = c->call.nin;
    job->nops = c->call.nin + 1;
    job->n = 1;
    for (int d = 0; d < c->nd; d++) {
        job->n *= c->shape[d];
    }
    for (int k = 0; k < c->call.nin; k++) {
        CuOperand *op = &c->call.ops[k];
        if (op->what != CU_OP_HOST) {
            continue;
        }
        int same = op->nd == c->nd;
        for (int d = 0; same && d < c->nd; d++) {
            same = op->shape[d] == c->shape[d];
        }
        if (!same) {
            return 0;
        }
        job->data[k] = PyArray_DATA((PyArrayObject *)op->obj);
        job->unit[k] = ts_itemsize(sig->args[k].kind);
    }
    job->unit[c->call.nin] = ts_itemsize(sig->ret.kind);
    return 1;
}

typedef struct StageCtx {
    CuLoop *l;
    const CuOperand *ops;
    int nin, sms;
    Params *pm;
} StageCtx;

/* One chunk: the contiguous 32-bit entry (a chunk is far below 2^31 bytes). */
static CUresult
stage_launch(void *ctx, const CUdeviceptr *dev, char *aux, CUdeviceptr aux_dev, Py_ssize_t n,
             CUstream s)
{
    (void)aux, (void)aux_dev;
    StageCtx *x = ctx;
    Plan p;
    p.variant = PTX_C32;
    p.ndim = 1;
    p.n = n;
    p.block = x->l->block[PTX_C32];
    p.grid = (int)grid_for(n, p.block, x->sms);
    return launch_raw(x->l, &p, dev, x->ops, x->nin, dev[x->nin], s, x->pm);
}

/* The staged call's result; NULL with an exception, or with *fallback set
 * (and none) when the staging slots could not be allocated. */
static PyObject *
staged_call(CuUfCall *c, CuLoop *l, int sms, CudaStaged *job, int *fallback)
{
    const TsSignature *sig = &l->sig;
    CuOperand *o = &c->call.ops[c->call.nin];
    PyObject *res = NULL, *result = NULL;
    StageCtx x = {l, c->call.ops, c->call.nin, sms, NULL};
    int direct = c->have_out && o->what == CU_OP_HOST;
    for (int k = 0; k < c->call.nin; k++) {
        CuOperand *op = &c->call.ops[k];
        if (op->what != CU_OP_HOST) {
            continue;
        }
        if ((op->dev = host_as(op, sig->args[k].kind)) == NULL) {
            return NULL;
        }
        job->data[k] = PyArray_DATA((PyArrayObject *)op->dev);
        if (direct && op->dev == op->obj) {
            direct = !overlaps(c, op, (uintptr_t)job->data[k], o,
                               (uintptr_t)PyArray_DATA((PyArrayObject *)o->obj));
        }
    }
    if (direct) {
        PyArrayObject *out = (PyArrayObject *)o->obj;
        direct = PyArray_ISCARRAY(out) && PyArray_ISNOTSWAPPED(out)
                 && cu_is_kind(PyArray_DESCR(out), sig->ret.kind);
    }
    if (direct) {
        res = Py_NewRef(o->obj);
    } else {
        PyArray_Descr *d = PyArray_DescrFromType(ts_kind_typenum(sig->ret.kind));
        res = d ? PyArray_Empty(c->nd, c->shape, d, 0) : NULL;
    }
    if (res == NULL || (x.pm = malloc(sizeof(Params))) == NULL) {
        if (res != NULL) {
            PyErr_NoMemory();
        }
        goto done;
    }
    job->data[c->call.nin] = PyArray_DATA((PyArrayObject *)res);
    job->launch = stage_launch;
    job->ctx = &x;
    int rc = cuda_stage_run(job);
    if (rc == 1) { /* no memory for staging: whole arrays, as small calls */
        for (int k = 0; k < c->call.nin; k++) {
            Py_CLEAR(c->call.ops[k].dev);
        }
        *fallback = 1;
    }
    if (rc != 0) {
        goto done;
    }
    if (!c->have_out) {
        result = Py_NewRef(res);
    } else if (direct || PyArray_CopyInto((PyArrayObject *)o->obj, (PyArrayObject *)res) == 0) {
        result = Py_NewRef(c->out_arg);
    }
done:
    free(x.pm);
    Py_XDECREF(res);
    return result;
}

/* ---- the call's steps ---- */

/* The loop, the broadcast shape and the out= checks (prepare). */
static int
ufunc_resolve(CuCall *call)
{
    return prepare(uf(call), uf(call)->lazy);
}

static int
ufunc_load(CuCall *call)
{
    return cu_ensure_loaded(uf(call)->f, uf(call)->f->loops[call->loop], 0);
}

static int
ufunc_stage(CuCall *call, CudaStaged *job)
{
    return stage_job(uf(call), job) && cuda_stage_worth(job);
}

/* What the launches take, staged or not: the device's SMs (for the grid)
 * and the scalar inputs as the loop type's bytes (kernel parameters). */
static int
launch_params(CuUfCall *c)
{
    const TsSignature *sig = &c->f->loops[c->call.loop]->sig;
    if ((c->sms = cu_sm_count()) < 0) {
        return -1;
    }
    for (int k = 0; k < c->call.nin; k++) {
        CuOperand *op = &c->call.ops[k];
        if ((op->what == CU_OP_SCALAR || op->what == CU_OP_PYSCALAR)
            && scalar_words(op, sig->args[k].kind) < 0) {
            return -1;
        }
    }
    return 0;
}

static int
ufunc_staged(CuCall *call, CudaStaged *job)
{
    CuUfCall *c = uf(call);
    int fallback = 0;
    if (launch_params(c) < 0) {
        return -1;
    }
    c->value = staged_call(c, c->f->loops[c->call.loop], c->sms, job, &fallback);
    return c->value != NULL ? 0 : fallback ? 1 : -1;
}

/* Host inputs copied in and device inputs of another dtype cast, on
 * stream=; then where the kernel writes: out= itself, or a new array. */
static int
ufunc_place(CuCall *call)
{
    CuUfCall *c = uf(call);
    const TsSignature *sig = &c->f->loops[c->call.loop]->sig;
    if (launch_params(c) < 0) {
        return -1;
    }
    for (int k = 0; k < c->call.nin; k++) {
        CuOperand *op = &c->call.ops[k];
        TsKind kind = sig->args[k].kind;
        if (op->what == CU_OP_HOST && cu_upload(op, kind, c->call.stream) < 0) {
            return -1;
        }
        if (op->what == CU_OP_DEVICE && op->dev == NULL && !cu_is_kind(op->dtype, kind)
            && cu_cast_input(op, kind, c->call.stream) < 0) {
            return -1;
        }
    }
    if ((c->writes_out = writes_out(c))) {
        return 0;
    }
    PyArray_Descr *rd = PyArray_DescrFromType(ts_kind_typenum(sig->ret.kind));
    c->res_dev = rd ? da_empty(rd, c->nd, c->shape, c->call.stream) : NULL;
    return c->res_dev != NULL ? 0 : -1;
}

/* The new array's values on the host, copied synchronously: a new
 * reference, or NULL. */
static PyObject *
copy_back(CuUfCall *c)
{
    PyObject *host = PyObject_CallMethod(c->res_dev, "copy_to_host", "OO", Py_None, c->call.stream);
    if (host != NULL && cuda_stream_wait(c->call.s) < 0) {
        Py_CLEAR(host);
    }
    return host;
}

/* The kernel into out= or the new array; then an out= of another dtype,
 * or one an input reads, gets the new array converted (or copied) on the
 * device, and a host out= (a device call's too) its values copied back. */
static int
ufunc_launch(CuCall *call)
{
    CuUfCall *c = uf(call);
    CuLoop *l = c->f->loops[c->call.loop];
    CuOperand *o = &c->call.ops[c->call.nin], tmp;
    if (c->writes_out) {
        return plan_and_launch(c, l, c->sms, o);
    }
    cu_operand_reset(&tmp); /* the new array as the kernel's output */
    if (cu_device_operand(&tmp, Py_NewRef(c->res_dev)) < 0) {
        return -1;
    }
    int rc = plan_and_launch(c, l, c->sms, &tmp);
    Py_DECREF(tmp.obj);
    if (rc < 0 || !c->have_out) {
        return rc;
    }
    if (o->what == CU_OP_DEVICE) {
        return cu_device_cast(c->res_dev, o->obj, c->call.stream);
    }
    PyObject *host = copy_back(c);
    /* same_kind was checked in prepare() */
    rc = host != NULL ? PyArray_CopyInto((PyArrayObject *)o->obj, (PyArrayObject *)host) : -1;
    Py_XDECREF(host);
    return rc;
}

/* out= as given, the new device array (a device call), or its values on
 * the host (a scalar for a 0-d result); then the kernel's raise. */
static PyObject *
ufunc_finish(CuCall *call)
{
    CuUfCall *c = uf(call);
    PyObject *r;
    if (c->value != NULL) { /* staged */
        r = c->value;
        c->value = NULL;
    } else if (c->have_out) {
        r = Py_NewRef(c->out_arg);
    } else if (c->call.device) {
        r = Py_NewRef(c->res_dev);
    } else {
        PyObject *host = copy_back(c);
        r = host != NULL && c->nd == 0 ? PyArray_Return((PyArrayObject *)host) : host;
    }
    Py_CLEAR(c->res_dev);
    if (r != NULL && cu_check_raised(c->f->loops[c->call.loop], 0) < 0) {
        Py_CLEAR(r); /* the kernel raised: its exception */
    }
    return r;
}

static void
ufunc_clear(CuCall *call)
{
    Py_CLEAR(uf(call)->res_dev);
    Py_CLEAR(uf(call)->value);
}

static const CuCallKind ufunc_kind = {
    .parse = ufunc_parse,
    .resolve = ufunc_resolve,
    .load = ufunc_load,
    .stage = ufunc_stage,
    .staged = ufunc_staged,
    .place = ufunc_place,
    .launch = ufunc_launch,
    .finish = ufunc_finish,
    .clear = ufunc_clear,
};

/* c empty, for a call of f (lazy: one that may compile a loop). */
static void
ufunc_call_init(CuUfCall *c, CuFunc *f, int lazy)
{
    cu_call_init(&c->call, &ufunc_kind, f->nin, f->nin + 1);
    c->f = f;
    c->lazy = lazy;
    c->have_out = 0;
    c->out_arg = Py_None;
    c->nd = 0;
    c->sms = 0;
    c->writes_out = 0;
    c->res_dev = c->value = NULL;
}

PyObject *
cu_ufunc_call(PyObject *self, PyObject *args, PyObject *kwargs)
{
    CuFunc *f = (CuFunc *)self;
    CuUfCall c;
    ufunc_call_init(&c, f, f->lazy);
    return cu_call_run(&c.call, args, kwargs);
}

PyObject *
cu_hook_kwargs(PyObject *kwargs, int *sms, int *block)
{
    PyObject *kw = kwargs ? PyDict_Copy(kwargs) : PyDict_New(), *v;
    *sms = 132;
    *block = 256;
    if (kw != NULL && (v = PyDict_GetItemString(kw, "sm_count")) != NULL) {
        *sms = (int)PyLong_AsLong(v);
        PyDict_DelItemString(kw, "sm_count");
    }
    if (kw != NULL && (v = PyDict_GetItemString(kw, "block")) != NULL) {
        *block = (int)PyLong_AsLong(v);
        PyDict_DelItemString(kw, "block");
    }
    return kw;
}

/* Test hook: _plan(*args, out=None, sm_count=132, block=256) -> dict (the
 * launch plan; 'staged': elements per chunk of a staged host call, or 0;
 * 'out': where the kernel writes, 'new', 'direct' (out=) or 'temporary'). */
PyObject *
cu_ufunc_plan(PyObject *self, PyObject *args, PyObject *kwargs)
{
    CuFunc *f = (CuFunc *)self;
    int sms, block;
    PyObject *kw = cu_hook_kwargs(kwargs, &sms, &block);
    if (kw == NULL) {
        return NULL;
    }
    CuUfCall c;
    PyObject *r = NULL;
    ufunc_call_init(&c, f, 0);
    if (cu_call_host(&c.call, args, kw) == 0) {
        CudaStaged job;
        Py_ssize_t staged = ufunc_stage(&c.call, &job) ? cuda_stage_chunk(&job) : 0;
        const char *out = !c.have_out || c.call.ops[c.call.nin].what != CU_OP_DEVICE ? "new"
                          : writes_out(&c)                                           ? "direct"
                                                                                     : "temporary";
        /* host inputs as their contiguous device copies would be */
        for (int k = 0; k < c.call.nin; k++) {
            CuOperand *op = &c.call.ops[k];
            if (op->what == CU_OP_HOST) {
                Py_ssize_t s = ts_itemsize(f->loops[c.call.loop]->sig.args[k].kind);
                for (int d = op->nd - 1; d >= 0; d--) {
                    op->strides[d] = s;
                    s *= op->shape[d];
                }
            }
        }
        CuOperand *o = &c.call.ops[c.call.nin];
        if (!(c.have_out && o->what == CU_OP_DEVICE)) {
            Py_ssize_t s = ts_itemsize(f->loops[c.call.loop]->sig.ret.kind);
            o->what = CU_OP_DEVICE;
            o->nd = c.nd;
            for (int d = c.nd - 1; d >= 0; d--) {
                o->shape[d] = c.shape[d];
                o->strides[d] = s;
                s *= c.shape[d];
            }
        }
        Plan p;
        if (plan_call(&c, sms, block, &p) == 0) {
            r = plan_dict(&p, f, c.call.loop);
        }
        PyObject *v = r ? Py_BuildValue("{s:n,s:s}", "staged", staged, "out", out) : NULL;
        if (r != NULL && (v == NULL || PyDict_Update(r, v) < 0)) {
            Py_CLEAR(r);
        }
        Py_XDECREF(v);
    }
    cu_call_clear(&c.call);
    Py_DECREF(kw);
    return r;
}

/* Test hook: _resolve(*args) -> the chosen loop as 'ff->f' (no compiling). */
PyObject *
cu_resolve_hook(PyObject *self, PyObject *args)
{
    CuFunc *f = (CuFunc *)self;
    CuUfCall c;
    ufunc_call_init(&c, f, 0);
    Py_ssize_t i = ufunc_parse(&c.call, args, NULL) < 0 ? -1 : cu_resolve(f, c.call.ops, 0);
    cu_call_clear(&c.call);
    if (i < 0) {
        return NULL;
    }
    PyObject *types = PyObject_GetAttrString(f->resolver, "types");
    PyObject *r = types ? PySequence_GetItem(types, i) : NULL;
    Py_XDECREF(types);
    return r;
}
