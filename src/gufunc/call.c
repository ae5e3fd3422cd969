/*
 * call.c - the inner loop NumPy calls for a gufunc, in C.
 *
 * NumPy hands over the outer loop (all loop dimensions flattened into
 * dims[0]) with the core sizes and strides.  This file:
 *
 *   - makes declared-contiguous arguments ([::1]) contiguous: when such an
 *     argument's last core dimension does not have unit stride, the outer
 *     iterations run one at a time with that argument's core block copied
 *     into a contiguous buffer (and copied back when it is written), so
 *     the kernel never reads with the wrong strides;
 *   - runs the JIT'd body (loops.c) over the outer range through the
 *     target: serially (cpu) or in chunks on the pool (parallel), with the
 *     parallel target's work threshold;
 *   - turns a nonzero status (an index out of bounds) into an exception.
 *
 * Legacy ufunc loops cannot report errors (NumPy checks PyErr_Occurred
 * after a legacy loop only for object dtypes), so each loop is registered
 * as an ArrayMethod whose strided loop returns -1 with the exception set.
 * The legacy tables are published only after that (vectorize.h,
 * VzUfuncSpec.methods), for ufunc.types and NumPy's type resolution, which
 * then finds the registered method.
 */
#include "gufunc/gufunc.h"
#include "host/pool.h"

#include "vectorize/vectorize.h"

#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

/* One call: what the chunks share. */
typedef struct GuCall {
    const GuLoop *gl;
    GuBodyFn body;
    char **args;
    const npy_intp *dims;
    const npy_intp *steps;
    _Atomic int status;
} GuCall;

static void
run_chunk(void *ctx, npy_intp start, npy_intp stop)
{
    GuCall *c = ctx;
    if (atomic_load_explicit(&c->status, memory_order_relaxed) != 0) {
        return;
    }
    int s = c->body(c->args, c->dims, c->steps, start, stop);
    if (s != 0) {
        int expected = 0;
        atomic_compare_exchange_strong(&c->status, &expected, s);
    }
}

/* Estimated nanoseconds of one outer iteration: the kernel's cost per unit
 * of core work times the product of the core sizes. */
static double
call_cost(const GuLoop *gl, const npy_intp *dims)
{
    double work = 1.0;
    for (int ix = 0; ix < gl->layout.ndimnames; ix++) {
        work *= dims[1 + ix] > 1 ? (double)dims[1 + ix] : 1.0;
    }
    return gl->cost_ns * work;
}

/* Outer iterations may run at once unless a written argument is the same
 * block for several of them (an outer step of 0: broadcast). */
static int
split_safe(const GuLoop *gl, const npy_intp *steps, npy_intp n)
{
    for (int k = 0; n > 1 && k < gl->layout.nargs; k++) {
        if (gl->written[k] && steps[k] == 0) {
            return 0;
        }
    }
    return 1;
}

/* ---- [::1] arguments ---- */

/* The core stride of argument k's dimension j in NumPy's steps. */
static npy_intp
core_stride(const GuLayout *L, const npy_intp *steps, int k, int j)
{
    NV_ASSERT(k >= 0 && k < L->nargs && j >= 0 && j < L->ndims[k]);
    int at = L->nargs; /* NumPy's steps: one outer step an argument, then the
                        * core strides of each argument in layout order */
    for (int a = 0; a < k; a++) {
        at += L->ndims[a];
    }
    return steps[at + j];
}

static int
needs_copy(const GuLoop *gl, const npy_intp *dims, const npy_intp *steps, int k)
{
    const GuLayout *L = &gl->layout;
    int c = L->ndims[k];
    if (!gl->contig[k] || c == 0) {
        return 0;
    }
    return core_stride(L, steps, k, c - 1) != gl->itemsize[k] && dims[1 + L->dim[k][c - 1]] > 1;
}

/* Copies the core block at src (strides) to or from the C-ordered dst. */
static char *
copy_block(char *contig, char *strided, const npy_intp *size, const npy_intp *stride, int nd,
           int item, int to_contig)
{
    if (nd == 0) {
        if (to_contig) {
            memcpy(contig, strided, (size_t)item);
        } else {
            memcpy(strided, contig, (size_t)item);
        }
        return contig + item;
    }
    for (npy_intp i = 0; i < size[0]; i++) {
        contig = copy_block(contig, strided + i * stride[0], size + 1, stride + 1, nd - 1, item,
                            to_contig);
    }
    return contig;
}

/*
 * The outer iterations one at a time, the arguments flagged in `copy`
 * passed through contiguous buffers.  Returns the status, or -1 when a
 * buffer cannot be allocated.
 */
static int
run_with_copies(const GuLoop *gl, GuBodyFn body, char **args, const npy_intp *dims,
                const npy_intp *steps, const unsigned char *copy)
{
    const GuLayout *L = &gl->layout;
    char *buf[TS_MAXARGS] = {0};
    char *local[TS_MAXARGS];
    npy_intp size[TS_MAXARGS][TS_MAXDIMS], stride[TS_MAXARGS][TS_MAXDIMS];
    npy_intp lsteps[TS_MAXARGS + GU_MAXCORE];
    int status = 0, at = L->nargs;
    memcpy(lsteps, steps, sizeof(npy_intp) * (size_t)L->nargs);
    for (int k = 0; k < L->nargs; k++) {
        npy_intp bytes = gl->itemsize[k];
        for (int j = L->ndims[k] - 1; j >= 0; j--) {
            size[k][j] = dims[1 + L->dim[k][j]];
            stride[k][j] = steps[at + j];
            lsteps[at + j] = copy[k] ? bytes : steps[at + j];
            bytes *= size[k][j];
        }
        at += L->ndims[k];
        if (copy[k] && (buf[k] = malloc((size_t)(bytes > 0 ? bytes : 1))) == NULL) {
            status = -1;
        }
    }
    for (npy_intp i = 0; status == 0 && i < dims[0]; i++) {
        for (int k = 0; k < L->nargs; k++) {
            local[k] = args[k] + i * steps[k];
            if (copy[k]) {
                copy_block(buf[k], local[k], size[k], stride[k], L->ndims[k], gl->itemsize[k], 1);
            }
        }
        char *call_args[TS_MAXARGS];
        for (int k = 0; k < L->nargs; k++) {
            call_args[k] = copy[k] ? buf[k] : local[k];
        }
        status = body(call_args, dims, lsteps, 0, 1);
        for (int k = 0; k < L->nargs; k++) {
            if (copy[k] && gl->written[k]) {
                copy_block(buf[k], local[k], size[k], stride[k], L->ndims[k], gl->itemsize[k], 0);
            }
        }
    }
    for (int k = 0; k < L->nargs; k++) {
        free(buf[k]);
    }
    return status;
}

/* ---- the loop ---- */

static void
raise_status(const GuLoop *gl, int status)
{
    PyGILState_STATE gil = PyGILState_Ensure();
    cc_raise_status(status);
    PyGILState_Release(gil);
}

/* Runs body over the call; returns the status (-1: no memory for copies). */
static int
run_body(const GuLoop *gl, GuBodyFn body, char **args, const npy_intp *dims, const npy_intp *steps)
{
    unsigned char copy[TS_MAXARGS] = {0};
    int any_copy = 0, status;
    for (int k = 0; k < gl->layout.nargs; k++) {
        any_copy |= copy[k] = (unsigned char)needs_copy(gl, dims, steps, k);
    }
    if (any_copy) {
        status = run_with_copies(gl, body, args, dims, steps, copy);
    } else {
        GuCall c = {.gl = gl, .body = body, .args = args, .dims = dims, .steps = steps};
        atomic_init(&c.status, 0);
        if (split_safe(gl, steps, dims[0])) {
            gl->target->run_range(run_chunk, &c, dims[0], call_cost(gl, dims));
        } else {
            run_chunk(&c, 0, dims[0]);
        }
        status = atomic_load(&c.status);
    }
    return status;
}

/* A call's work for quick code's budget: outer iterations times the
 * sizes of the core dimensions (at least 1 each). */
static long long
call_work(const GuLoop *gl, const npy_intp *dims)
{
    long long work = dims[0];
    for (int i = 0; i < gl->layout.ndimnames && work < TG_QUICK_WORK; i++) {
        work *= dims[1 + i] > 1 ? dims[1 + i] : 1;
    }
    return work;
}

/*
 * Runs the gufunc loop; 0, or -1 with an exception set (taking the GIL).
 * While the whole body's machine code waits to be made, its quick code
 * runs the calls within quick code's budget (tg_quick_take), or, where
 * there is no quick code (a cache, NUMBAVEC_QUICK=0), a contig-only body
 * runs calls whose cores it takes, and gives the others back untouched to
 * the whole body.  Code is made here, in NumPy's thread, never in a
 * worker: making takes the GIL, which NumPy's thread may hold while it
 * waits for the workers.
 */
static int
run_loop(GuLoop *gl, char **args, const npy_intp *dims, const npy_intp *steps)
{
    GuBodyFn body;
    int status = GU_STATUS_GENERAL;
    if (tg_quick_take(&gl->quick, call_work(gl, dims))) {
        if ((body = (GuBodyFn)cc_code_quick_entry(gl->code, 0)) == NULL) {
            return -1;
        }
        double t0 = tg_now_ns();
        status = run_body(gl, body, args, dims, steps);
        tg_quick_ran(&gl->quick, tg_now_ns() - t0);
    } else if (gl->contig_code != NULL && !cc_code_made(gl->code)) {
        if ((body = (GuBodyFn)cc_code_entry(gl->contig_code, 0)) == NULL) {
            return -1; /* with the exception cc_code_entry set */
        }
        status = run_body(gl, body, args, dims, steps);
    }
    if (status == GU_STATUS_GENERAL) {
        body = (GuBodyFn)cc_code_entry(gl->code, 0); /* made or loaded: one load */
        if (body == NULL && tg_quick_instead(&gl->quick)) {
            body = (GuBodyFn)cc_code_quick_entry(gl->code, 0); /* no memory for the other */
        }
        if (body == NULL) {
            return -1;
        }
        status = run_body(gl, body, args, dims, steps);
    }
    if (status != 0) {
        raise_status(gl, status);
        return -1;
    }
    return 0;
}

void
gu_legacy_loop(char **args, npy_intp const *dims, npy_intp const *steps, void *data)
{
    /* only reached if NumPy bypasses the registered ArrayMethod: an error
     * is then left set for the caller to find */
    run_loop(data, args, dims, steps);
}

/* The GuLoop of the loop NumPy resolved: matched by type numbers in the
 * ufunc's legacy tables (a handful of entries). */
static GuLoop *
find_loop(PyArrayMethod_Context *context)
{
    PyUFuncObject *uf = (PyUFuncObject *)context->caller;
    if (uf == NULL) {
        return NULL;
    }
    for (int t = 0; t < uf->ntypes; t++) {
        int same = 1;
        for (int k = 0; same && k < uf->nargs; k++) {
            same = uf->types[t * uf->nargs + k] == context->descriptors[k]->type_num;
        }
        if (same) {
            return uf->data[t];
        }
    }
    return NULL;
}

static int
method_loop(PyArrayMethod_Context *context, char *const *data, const npy_intp *dims,
            const npy_intp *strides, NpyAuxData *NV_UNUSED(aux))
{
    GuLoop *gl = find_loop(context);
    if (gl == NULL) {
        PyGILState_STATE gil = PyGILState_Ensure();
        PyErr_SetString(PyExc_RuntimeError, "numbavec: no compiled loop for these types");
        PyGILState_Release(gil);
        return -1;
    }
    return run_loop(gl, (char **)data, dims, strides);
}

/* NumPy's default get_loop, and the one check a call needs the GIL for
 * (vz_called_by_pandas_blocks): once per call, not per inner loop. */
static int
method_get_loop(PyArrayMethod_Context *context, int NV_UNUSED(aligned),
                int NV_UNUSED(move_references), const npy_intp *NV_UNUSED(strides),
                PyArrayMethod_StridedLoop **out_loop, NpyAuxData **out_aux,
                NPY_ARRAYMETHOD_FLAGS *flags)
{
    *out_loop = vz_called_by_pandas_blocks((PyObject *)context->caller) ? vz_pandas_refused_loop
                                                                        : method_loop;
    *out_aux = NULL;
    *flags = 0; /* no Python in the loop; NumPy checks the FP flags */
    return 0;
}

int
gu_register_method(PyObject *ufunc, int t)
{
    PyUFuncObject *uf = (PyUFuncObject *)ufunc;
    PyArray_DTypeMeta *dtypes[TS_MAXARGS];
    PyType_Slot slots[] = {{NPY_METH_get_loop, (void *)method_get_loop},
                           {NPY_METH_strided_loop, (void *)method_loop},
                           {0, NULL}};
    for (int k = 0; k < uf->nargs; k++) {
        PyArray_Descr *d = PyArray_DescrFromType(uf->types[t * uf->nargs + k]);
        if (d == NULL) {
            return -1;
        }
        dtypes[k] = NPY_DTYPE(d); /* a static type: outlives the descr */
        Py_DECREF(d);
    }
    PyArrayMethod_Spec spec = {
        .name = "numbavec_gufunc_loop",
        .nin = uf->nin,
        .nout = uf->nout,
        .casting = NPY_NO_CASTING,
        .flags = 0,
        .dtypes = dtypes,
        .slots = slots,
    };
    return PyUFunc_AddLoopFromSpec(ufunc, &spec);
}

int
gu_register_methods(PyObject *ufunc, int ntypes)
{
    for (int t = 0; t < ntypes; t++) {
        if (gu_register_method(ufunc, t) < 0) {
            return -1;
        }
    }
    vz_publish_types(ufunc, ntypes);
    return 0;
}
