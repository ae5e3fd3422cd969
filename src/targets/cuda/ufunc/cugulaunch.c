/*
 * cugulaunch.c - the device side of a cuda gufunc's call (cugucall.c does
 * the host side: operands, loop choice, dimensions): the descriptor the
 * entry reads (kernels.c), the launch and its status word, and large host
 * calls through the staged pipeline (staging.c), chunked by outer
 * iteration.
 */
#include "targets/cuda/ufunc/ufunc.h"

#include <stdint.h>
#include <string.h>

/* Words of the descriptor kernels.c reads, for lnd loop dimensions. */
static Py_ssize_t
desc_words(const CuGuCall *c, int lnd)
{
    const GuLayout *L = &c->f->layout;
    int A = L->nargs, ncore = 0;
    for (int k = 0; k < A; k++) {
        ncore += L->ndims[k];
    }
    return 2 + lnd + A + (Py_ssize_t)A * lnd + 1 + L->ndimnames + A + ncore + 1;
}

/* The descriptor's word that holds argument k's base pointer. */
static Py_ssize_t
desc_base(int lnd, int k)
{
    return 2 + lnd + k;
}

/*
 * Writes the descriptor into v (desc_words(c, lnd) words): n outer
 * iterations over the loop shape lshape[lnd]; argument k at ptr[k], with
 * loop strides lstride[k * NPY_MAXDIMS + d] (0 where broadcast) and core
 * strides cstride[k * TS_MAXDIMS + j]; flags (bit 0: disjoint()).
 */
static void
fill_desc(const CuGuCall *c, long long *v, Py_ssize_t n, int lnd, const Py_ssize_t *lshape,
          const CUdeviceptr *ptr, const Py_ssize_t *lstride, const Py_ssize_t *cstride,
          long long flags)
{
    const GuLayout *L = &c->f->layout;
    int A = L->nargs;
    Py_ssize_t at = 0;
    v[at++] = n;
    v[at++] = lnd;
    for (int d = 0; d < lnd; d++) {
        v[at++] = lshape[d];
    }
    for (int k = 0; k < A; k++) {
        v[at++] = (long long)ptr[k];
    }
    for (int k = 0; k < A; k++) {
        for (int d = 0; d < lnd; d++) {
            v[at++] = lstride[k * NPY_MAXDIMS + d];
        }
    }
    v[at++] = n;
    for (int ix = 0; ix < L->ndimnames; ix++) {
        v[at++] = c->core[ix];
    }
    for (int k = 0; k < A; k++) {
        v[at++] = 0; /* outer steps: the body runs one iteration at its base */
    }
    for (int k = 0; k < A; k++) {
        for (int j = 0; j < L->ndims[k]; j++) {
            v[at++] = cstride[k * TS_MAXDIMS + j];
        }
    }
    v[at++] = flags;
}

/* 1 when no device array the kernel writes (an output, a written input)
 * spans bytes another argument's spans (cu_extent): then the entry may
 * take the body's copy that keeps each row's loads apart from its stores
 * (kernels.c, disjoint_body).  A written argument met by another (an
 * in-place call, overlapping views), or an extent past the address space,
 * takes the other copy, which reads and writes in the source's order. */
static int
disjoint(const CuGuCall *c, const DaInfo *info)
{
    int A = c->f->layout.nargs, ext[TS_MAXARGS];
    uintptr_t lo[TS_MAXARGS], hi[TS_MAXARGS];
    for (int k = 0; k < A; k++) {
        ext[k] = cu_extent(info[k].ptr, info[k].nd, info[k].shape, info[k].strides,
                           (Py_ssize_t)PyDataType_ELSIZE(info[k].dtype), &lo[k], &hi[k]);
    }
    for (int w = 0; w < A; w++) {
        for (int k = 0; c->f->written[w] && k < A; k++) {
            if (k == w || ext[w] == 1 || ext[k] == 1) {
                continue;
            }
            if (ext[w] < 0 || ext[k] < 0 || (lo[w] < hi[k] && lo[k] < hi[w])) {
                return 0;
            }
        }
    }
    return 1;
}

/* The bytes of cache lines a thread keeps in use while it walks its rows:
 * for each argument, its stride over the innermost loop dimension (one
 * that is not 1) up to a line.  Consecutive threads take consecutive outer
 * indices, so an argument whose rows are a line or more apart has each
 * thread of a warp in a line of its own, which the L1 must keep until the
 * thread has read it (and whose partial writes the memory system must
 * gather: outputs count as inputs do); rows a few bytes apart share their
 * lines across the warp. */
static Py_ssize_t
row_lines(const CuGuCall *c, int lnd, const Py_ssize_t *lshape, const Py_ssize_t *ls)
{
    int d = lnd - 1;
    while (d > 0 && lshape[d] == 1) {
        d--;
    }
    Py_ssize_t bytes = 0;
    for (int k = 0; d >= 0 && k < c->f->layout.nargs; k++) {
        Py_ssize_t s = ls[k * NPY_MAXDIMS + d];
        s = s < 0 ? -s : s;
        bytes += s < CU_L1_LINE ? s : CU_L1_LINE;
    }
    return bytes;
}

/* Argument k's loop strides (right-aligned, 0 where broadcast) and core
 * strides on the device, from info. */
static void
device_strides(const CuGuCall *c, int k, const DaInfo *info, Py_ssize_t *lstride,
               Py_ssize_t *cstride)
{
    int nc = c->f->layout.ndims[k], lnd = info->nd - nc;
    for (int d = 0; d < c->lnd; d++) {
        int e = d - (c->lnd - lnd);
        lstride[d] = e < 0 || info->shape[e] == 1 ? 0 : info->strides[e];
    }
    for (int j = 0; j < nc; j++) {
        cstride[j] = info->strides[lnd + j];
    }
}

/* The descriptor kernels.c reads, as a device array on the call's stream;
 * *lines: row_lines(). */
static PyObject *
descriptor(CuGuCall *c, Py_ssize_t n, const DaInfo *info, Py_ssize_t *lines)
{
    int A = c->f->layout.nargs;
    Py_ssize_t len = desc_words(c, c->lnd);
    Py_ssize_t *ls = PyMem_Calloc((size_t)A * (NPY_MAXDIMS + TS_MAXDIMS), sizeof(Py_ssize_t));
    PyObject *h = ls ? PyArray_SimpleNew(1, &len, NPY_INT64) : PyErr_NoMemory();
    if (h == NULL) {
        PyMem_Free(ls);
        return NULL;
    }
    Py_ssize_t *cs = ls + (size_t)A * NPY_MAXDIMS;
    CUdeviceptr ptr[TS_MAXARGS];
    for (int k = 0; k < A; k++) {
        ptr[k] = info[k].ptr;
        device_strides(c, k, &info[k], ls + k * NPY_MAXDIMS, cs + k * TS_MAXDIMS);
    }
    fill_desc(c, PyArray_DATA((PyArrayObject *)h), n, c->lnd, c->lshape, ptr, ls, cs,
              disjoint(c, info));
    *lines = row_lines(c, c->lnd, c->lshape, ls);
    PyMem_Free(ls);
    PyObject *dev = cu_to_device(h, TS_INT64, c->call.stream);
    Py_DECREF(h);
    return dev;
}

/* Declared [::1] arguments must be so on the device (host copies are). */
static int
check_contig(CuGuCall *c, const DaInfo *info)
{
    const CuGuLoop *l = c->f->loops[c->call.loop];
    for (int k = 0; k < c->call.nops; k++) {
        int nc = c->f->layout.ndims[k];
        if (!l->ksig.args[k].contig || nc == 0) {
            continue;
        }
        Py_ssize_t last = info[k].shape[info[k].nd - 1];
        if (last > 1 && info[k].strides[info[k].nd - 1] != ts_itemsize(l->sig.args[k].kind)) {
            PyErr_Format(PyExc_ValueError,
                         "%s(): argument %d is declared contiguous ([::1]) but its last core "
                         "dimension is strided on the device; pass a contiguous array",
                         cu_gu_name(c), k);
            return -1;
        }
    }
    return 0;
}

int
cu_gu_can_fail(const CuGuCall *c)
{
    const CuGuLoop *l = c->f->loops[c->call.loop];
    return !l->silent && (c->f->kernel->boundscheck || (l->fails & ~(1u << CC_STATUS_INDEX)));
}

/* The device word the kernel stores its status in, zeroed on the call's
 * stream, when the kernel can fail (cu_gu_can_fail): 0 with *status set (NULL
 * when it cannot fail), or -1. */
static int
status_word(CuGuCall *c, PyObject **status)
{
    *status = NULL;
    if (!cu_gu_can_fail(c)) {
        return 0;
    }
    Py_ssize_t one = 1;
    PyObject *zero = PyArray_ZEROS(1, &one, NPY_INT32, 0);
    *status = zero ? cu_to_device(zero, TS_INT32, c->call.stream) : NULL;
    Py_XDECREF(zero);
    return *status != NULL ? 0 : -1;
}

/* The status the kernel stored (waits for the device), raised as the
 * kernel's exception.  0 (none, or no status word) or -1. */
static int
check_status(CuGuCall *c, PyObject *status)
{
    const CuGuLoop *l = c->f->loops[c->call.loop];
    if (status == NULL) {
        return 0;
    }
    PyObject *h = PyObject_CallMethod(status, "copy_to_host", "OO", Py_None, c->call.stream);
    if (h == NULL) {
        return -1;
    }
    int st = *(int *)PyArray_DATA((PyArrayObject *)h);
    Py_DECREF(h);
    if ((st >= CC_STATUS_INDEX && st <= CC_STATUS_ZERO) || st == CC_STATUS_OVERFLOW
        || st == CC_STATUS_UNPACK || st == CC_STATUS_TRUTH || st == CC_STATUS_RESHAPE) {
        cc_raise_status(st);
        return -1;
    }
    if (st >= CC_STATUS_USER && l->raise_sites != NULL
        && st - CC_STATUS_USER < PyTuple_Size(l->raise_sites)) {
        /* the kernel's raise or assert (some thread's, when several) */
        const char *site =
            PyUnicode_AsUTF8AndSize(PyTuple_GetItem(l->raise_sites, st - CC_STATUS_USER), NULL);
        if (site != NULL) {
            cc_raise_site(site);
        }
        return -1;
    }
    if (st != 0) {
        PyErr_Format(PyExc_RuntimeError, "a cuda gufunc kernel failed (status %d)", st);
        return -1;
    }
    return 0;
}

/* Grid and block of a launch of n outer iterations: the occupancy block,
 * whole warps only for small calls (as a cuda ufunc's), at most
 * CU_GRID_PER_SM blocks an SM (grid-stride) -- and, where each thread
 * keeps lines bytes of L1 lines (row_lines), at most CU_GU_L1_ROWS /
 * lines threads an SM, so that the lines of the threads resident on an SM
 * stay in its L1 until they are read: a warp that thrashes it fetches
 * its lines again (on an H100, a batched dot product over 256-byte rows:
 * 0.58 of the copy bandwidth with 32 warps an SM, 0.76 with 8; a (n)->(n)
 * kernel over 256-byte rows, 0.20 -> 0.51). */
static void
geometry(int block, int sms, Py_ssize_t n, Py_ssize_t lines, unsigned *grid_out,
         unsigned *block_out)
{
    Py_ssize_t per_sm = CU_GRID_PER_SM;
    if (n < block) {
        block = (int)((n + 31) / 32 * 32);
    } else if (lines > 0 && CU_GU_L1_ROWS / lines < CU_GU_L1_FREE) {
        Py_ssize_t threads = (CU_GU_L1_ROWS / lines + 16) / 32 * 32; /* whole warps, nearest */
        threads = threads < 32 ? 32 : threads;
        block = block > threads ? (int)threads : block;
        per_sm = threads / block;
    }
    Py_ssize_t grid = (n + block - 1) / block, cap = per_sm * sms;
    *grid_out = (unsigned)(grid > cap ? cap : grid);
    *block_out = (unsigned)block;
}

PyObject *
cu_gu_geometry_py(PyObject *module, PyObject *args)
{
    int block, sms;
    Py_ssize_t n, lines;
    unsigned grid, b;
    if (!PyArg_ParseTuple(args, "iinn:_cuda_gufunc_geometry", &block, &sms, &n, &lines)) {
        return NULL;
    }
    if (block < 32 || block % 32 != 0 || sms < 1 || n < 1 || lines < 0) {
        PyErr_SetString(PyExc_ValueError, "_cuda_gufunc_geometry: out of range");
        return NULL;
    }
    geometry(block, sms, n, lines, &grid, &b);
    return Py_BuildValue("II", grid, b);
}

/* Launches the entry; when the kernel can fail, waits for the status.  0/-1. */
int
cu_gu_launch(CuGuCall *c, Py_ssize_t n)
{
    CuGuFunc *f = c->f;
    CuGuLoop *l = f->loops[c->call.loop];
    DaInfo info[TS_MAXARGS];
    int sms = cu_sm_count(); /* (call.c checked foreign operands after loading) */
    if (sms < 0) {
        return -1;
    }
    for (int k = 0; k < c->call.nops; k++) {
        if (da_info(c->dev[k], &info[k]) < 0) {
            return -1;
        }
        if (k < f->layout.nin && f->written[k] && info[k].readonly) {
            PyErr_Format(PyExc_ValueError,
                         "%s(): input %d is written by the kernel but is "
                         "read-only",
                         cu_gu_name(c), k);
            return -1;
        }
    }
    if (check_contig(c, info) < 0) {
        return -1;
    }
    Py_ssize_t lines = 0;
    PyObject *desc = descriptor(c, n, info, &lines), *status = NULL;
    int rc = -1;
    if (desc == NULL || status_word(c, &status) < 0) {
        goto done;
    }
    DaInfo di, si = {0};
    if (da_info(desc, &di) < 0 || (status && da_info(status, &si) < 0)) {
        goto done;
    }
    unsigned grid, block;
    geometry(l->block, sms, n, lines, &grid, &block);
    CUdeviceptr dp = di.ptr, sp = si.ptr;
    void *params[2] = {&dp, &sp};
    if (cuda_check(
            cuda_drv->LaunchKernel(l->fn, grid, 1, 1, block, 1, 1, 0, c->call.s, params, NULL),
            "cuLaunchKernel (cuda gufunc)")
            < 0
        || check_status(c, status) < 0) {
        goto done;
    }
    rc = 0;
done:
    Py_XDECREF(desc);
    Py_XDECREF(status);
    return rc;
}

/* ---- large host calls in chunks (staging.c) ---- */

/* The bytes [lo, hi) host array a spans. */
static void
host_extent(PyArrayObject *a, uintptr_t *lo, uintptr_t *hi)
{
    *lo = *hi = (uintptr_t)PyArray_DATA(a);
    if (PyArray_SIZE(a) == 0) {
        return;
    }
    for (int d = 0; d < PyArray_NDIM(a); d++) {
        Py_ssize_t s = PyArray_STRIDE(a, d) * (PyArray_DIM(a, d) - 1);
        if (s < 0) {
            *lo += (uintptr_t)s;
        } else {
            *hi += (uintptr_t)s;
        }
    }
    *hi += (uintptr_t)PyArray_ITEMSIZE(a);
}

/* Whether the pipeline may write output k's chunks straight into the host
 * out= given: C-contiguous, aligned, writeable, native, of the loop's
 * dtype, and meeting no other operand (a chunk written early must not be
 * what a later chunk reads). */
static int
writes_directly(const CuGuCall *c, int k)
{
    const TsSignature *sig = &c->f->loops[c->call.loop]->sig;
    PyArrayObject *o = (PyArrayObject *)c->call.ops[k].obj;
    if (!PyArray_ISCARRAY(o) || !PyArray_ISNOTSWAPPED(o)
        || !cu_is_kind(PyArray_DESCR(o), sig->args[k].kind)) {
        return 0;
    }
    uintptr_t lo, hi;
    host_extent(o, &lo, &hi);
    for (int j = 0; j < c->call.nops; j++) {
        const CuOperand *op = &c->call.ops[j];
        uintptr_t jlo, jhi;
        if (j == k || op->obj == NULL || !PyArray_Check(op->obj)) {
            continue;
        }
        host_extent((PyArrayObject *)op->obj, &jlo, &jhi);
        if (jlo < hi && lo < jhi) {
            return 0;
        }
    }
    return 1;
}

/*
 * Whether a host call is staged, and its job (the data pointers come in
 * cu_gu_staged_call): every input is either of the loop shape, chunked by outer
 * iteration (a C-contiguous copy in the loop's dtype, as host calls make
 * anyway), or the same for every iteration (a scalar, a vector every row
 * shares: uploaded whole, once); no input is written by the kernel; there
 * is more than one chunk.  Outputs are chunked into new host arrays, or
 * straight into an out= that allows it (writes_directly).  Other host
 * calls copy whole arrays.
 */
int
cu_gu_stage_plan(CuGuCall *c, Py_ssize_t n, CudaStaged *job)
{
    const GuLayout *L = &c->f->layout;
    const TsSignature *sig = &c->f->loops[c->call.loop]->sig;
    memset(job, 0, sizeof(*job));
    if (c->call.device || n <= 1) {
        return 0;
    }
    job->nops = L->nargs;
    job->nin = L->nin;
    job->n = n;
    for (int k = 0; k < L->nargs; k++) {
        const CuOperand *op = &c->call.ops[k];
        int nc = L->ndims[k];
        Py_ssize_t unit = ts_itemsize(sig->args[k].kind);
        for (int j = 0; j < nc; j++) {
            Py_ssize_t size = c->core[L->dim[k][j]];
            if (size > 0 && unit > PY_SSIZE_T_MAX / size) {
                return 0;
            }
            unit *= size;
        }
        c->whole[k] = c->direct[k] = 0;
        if (k >= L->nin) {
            job->unit[k] = unit;
            c->direct[k] = op->obj != NULL && writes_directly(c, k);
            continue;
        }
        if (c->f->written[k]) {
            return 0;
        }
        int lnd = op->nd - nc, full = op->what == CU_OP_HOST && lnd == c->lnd, same = 1;
        for (int d = 0; d < lnd; d++) {
            full = full && op->shape[d] == c->lshape[d];
            same = same && op->shape[d] == 1;
        }
        if (full) {
            job->unit[k] = unit;
        } else if (same) {
            c->whole[k] = 1;
        } else {
            return 0; /* broadcast along some loop dimensions only */
        }
    }
    job->aux = sizeof(long long) * (size_t)desc_words(c, 1); /* a chunk's descriptor */
    return cuda_stage_worth(job);
}

typedef struct GuStage {
    const CudaStaged *job;
    CUfunction fn;
    int block, sms;
    Py_ssize_t lines; /* row_lines() */
    CUdeviceptr status;
    const long long *tmpl;  /* the descriptor, for a chunk of job->n */
    Py_ssize_t words, n_at; /* its length, the word of the body's n */
} GuStage;

/* One chunk of m outer iterations: its descriptor (the template with the
 * chunk's count and buffers) over, then the entry.  No Python calls. */
static CUresult
stage_launch(void *ctx, const CUdeviceptr *dev, char *aux, CUdeviceptr aux_dev, Py_ssize_t m,
             CUstream s)
{
    const GuStage *x = ctx;
    long long *v = (long long *)aux;
    memcpy(v, x->tmpl, sizeof(long long) * (size_t)x->words);
    v[0] = v[2] = v[x->n_at] = m; /* n, the loop shape (one dimension), the body's n */
    for (int k = 0; k < x->job->nops; k++) {
        if (x->job->unit[k] > 0) {
            v[desc_base(1, k)] = (long long)dev[k];
        }
    }
    CUresult rc = cuda_drv->MemcpyHtoDAsync(aux_dev, aux, sizeof(long long) * (size_t)x->words, s);
    if (rc != CUDA_SUCCESS) {
        return rc;
    }
    unsigned grid, block;
    geometry(x->block, x->sms, m, x->lines, &grid, &block);
    CUdeviceptr dp = aux_dev, sp = x->status;
    void *params[2] = {&dp, &sp};
    return cuda_drv->LaunchKernel(x->fn, grid, 1, 1, block, 1, 1, 0, s, params, NULL);
}

/* Host array k of a staged call (c->res[k]): an input's C-contiguous copy
 * in the loop's dtype (the operand itself when it is one), an output's
 * out= or new array.  0/-1. */
static int
stage_host_array(CuGuCall *c, int k)
{
    const GuLayout *L = &c->f->layout;
    const CuOperand *op = &c->call.ops[k];
    PyArray_Descr *d =
        PyArray_DescrFromType(ts_kind_typenum(c->f->loops[c->call.loop]->sig.args[k].kind));
    if (d == NULL) {
        return -1;
    }
    if (k < L->nin) {
        c->res[k] =
            PyArray_FromAny(op->obj, d, 0, 0, NPY_ARRAY_CARRAY_RO | NPY_ARRAY_FORCECAST, NULL);
    } else if (c->direct[k]) {
        Py_DECREF(d);
        c->res[k] = Py_NewRef(op->obj);
    } else {
        Py_ssize_t shape[NPY_MAXDIMS];
        int nd = c->lnd + L->ndims[k];
        memcpy(shape, c->lshape, sizeof(Py_ssize_t) * (size_t)c->lnd);
        for (int j = 0; j < L->ndims[k]; j++) {
            shape[c->lnd + j] = c->core[L->dim[k][j]];
        }
        c->res[k] = PyArray_Empty(nd, shape, d, 0);
        if (c->res[k] != NULL && op->obj != NULL) {
            c->host[k] = Py_NewRef(op->obj); /* an out= the result is copied into */
        }
    }
    return c->res[k] != NULL ? 0 : -1;
}

/*
 * A host call through the staging pipeline (cu_gu_stage_plan said so).  The
 * kernel sees one loop dimension, the chunk's outer iterations: a chunked
 * argument walks its buffer with its core's size as the loop stride and
 * C-contiguous core strides; an argument uploaded whole has loop stride 0.
 * 0; 1 when the staging slots could not be allocated (nothing is left
 * done: the caller copies whole arrays); -1 with an exception.
 */
int
cu_gu_staged_call(CuGuCall *c, Py_ssize_t n, CudaStaged *job)
{
    const GuLayout *L = &c->f->layout;
    CuGuLoop *l = c->f->loops[c->call.loop];
    int A = L->nargs, rc = -1, sms = cu_sm_count();
    Py_ssize_t words = desc_words(c, 1);
    PyObject *status = NULL;
    Py_ssize_t *ls = PyMem_Calloc((size_t)A * (NPY_MAXDIMS + TS_MAXDIMS), sizeof(Py_ssize_t));
    long long *tmpl = PyMem_Calloc((size_t)words, sizeof(long long));
    if (ls == NULL || tmpl == NULL) {
        PyErr_NoMemory();
        goto done;
    }
    if (sms < 0) {
        goto done;
    }
    Py_ssize_t *cs = ls + (size_t)A * NPY_MAXDIMS;
    CUdeviceptr ptr[TS_MAXARGS] = {0};
    for (int k = 0; k < A; k++) {
        if (c->whole[k]) { /* on the device once, for every chunk */
            DaInfo info;
            c->dev[k] = cu_to_device(c->call.ops[k].obj, l->sig.args[k].kind, c->call.stream);
            if (c->dev[k] == NULL || da_info(c->dev[k], &info) < 0) {
                goto done;
            }
            ptr[k] = info.ptr;
            device_strides(c, k, &info, ls + k * NPY_MAXDIMS, cs + k * TS_MAXDIMS);
            ls[k * NPY_MAXDIMS] = 0;
            continue;
        }
        if (stage_host_array(c, k) < 0) {
            goto done;
        }
        job->data[k] = PyArray_DATA((PyArrayObject *)c->res[k]);
        ls[k * NPY_MAXDIMS] = job->unit[k];
        Py_ssize_t step = ts_itemsize(l->sig.args[k].kind);
        for (int j = L->ndims[k] - 1; j >= 0; j--) { /* C-contiguous, as the buffers are */
            cs[k * TS_MAXDIMS + j] = step;
            step *= c->core[L->dim[k][j]];
        }
    }
    if (status_word(c, &status) < 0) {
        goto done;
    }
    DaInfo si = {0};
    if ((status && da_info(status, &si) < 0)
        || cuda_check(cuda_drv->StreamSynchronize(c->call.s), "cuStreamSynchronize (cuda gufunc)")
               < 0) { /* the uploads and the status word, before the slots' streams use them */
        goto done;
    }
    /* disjoint: each chunked argument has staging buffers of its own, each
     * argument uploaded whole its own copy, and written inputs never stage */
    fill_desc(c, tmpl, n, 1, &n, ptr, ls, cs, 1);
    GuStage x = {job,  l->fn, l->block,           sms, row_lines(c, 1, &n, ls), si.ptr,
                 tmpl, words, desc_base(1, A) + A};
    job->launch = stage_launch;
    job->ctx = &x;
    rc = cuda_stage_run(job);
    if (rc == 1) { /* no memory for staging: the caller copies whole arrays */
        for (int k = 0; k < A; k++) {
            Py_CLEAR(c->dev[k]);
            Py_CLEAR(c->host[k]);
            Py_CLEAR(c->res[k]);
        }
        goto done;
    }
    if (rc < 0 || check_status(c, status) < 0) {
        rc = -1;
        goto done;
    }
    for (int k = L->nin; k < A; k++) {
        if (c->host[k] != NULL
            && PyArray_CopyInto((PyArrayObject *)c->host[k], (PyArrayObject *)c->res[k]) < 0) {
            rc = -1;
            goto done;
        }
    }
    rc = 0;
done:
    Py_XDECREF(status);
    PyMem_Free(ls);
    PyMem_Free(tmpl);
    return rc;
}
